//! ral-ir: the program after checking, in a form a compiler can consume.
//!
//! [`ir`] defines the IR (see its module docs for the design). Lowering from
//! the checked syntax tree, `referenced_names` and the printer behind
//! `ralc --emit=ir` build on it.

pub mod ir;

pub use ir::*;
