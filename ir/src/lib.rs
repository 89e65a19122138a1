//! ral-ir: the program after checking, in a form a compiler can consume.
//!
//! [`ir`] defines the IR (see its module docs for the design). [`lower()`]
//! builds it from the checked syntax tree, [`names::referenced_names`] lists
//! the session names a module reads, and [`print::print_module`] is the text
//! form behind `ralc --emit=ir`.

pub mod ir;
pub mod lower;
pub mod names;
pub mod print;

pub use ir::*;
pub use lower::{lower, lower_with_session};
pub use names::referenced_names;
pub use print::print_module;
