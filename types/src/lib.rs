//! ral-types: name resolution, elaboration and type inference (issue 3).
//!
//! Nothing is implemented yet; this crate exists so the workspace has the
//! layout the architecture fixes.
