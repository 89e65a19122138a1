//! ral-ir: the program after checking, in a form a compiler can consume.
//!
//! [`ir`] defines the IR (see its module docs for the design). [`lower()`]
//! builds it from the checked syntax tree, [`names::referenced_names`] lists
//! the session names a module reads, and [`print::print_module`] is the text
//! form behind `ralc --emit=ir`.
//!
//! Lowering takes every decision from the checker's elaboration tables:
//! what each name use refers to (`Elaboration::names`), how each command
//! head dispatches, where output is captured, and the types that fix the
//! kind of arithmetic, comparison and indexing. It repeats none of the
//! checker's rules, so the two cannot disagree about a program; if the
//! tables and the tree do not fit together, that is a bug in ral, reported
//! by [`try_lower`] as a [`LowerError`]. Lowering assumes a program that
//! checked without errors.
//!
//! A session name appears in the IR only as an [`Operand::Global`] without a
//! definition, and only where the checker resolved the use to the session,
//! so [`referenced_names`] lists exactly the names the turn reads from it.

pub mod ir;
pub mod lower;
pub mod names;
pub mod print;

pub use ir::*;
pub use lower::{lower, lower_with_session, try_lower, try_lower_with_session, LowerError};
pub use names::referenced_names;
pub use print::print_module;
