//! ral-ir: lowering of the checked program to an IR, and `referenced_names`
//! (issue 4). Nothing is implemented yet.
