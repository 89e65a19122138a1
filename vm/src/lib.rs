//! ral-vm: the register bytecode, its compiler, values and the dispatch loop
//! (issue 4). Nothing is implemented yet.
