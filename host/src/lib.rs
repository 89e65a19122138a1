//! ral-host: the persistent session and its one door, `Shell::run_turn`
//! (issue 6), and the `ral` and `ralc` binaries. Only `ralc` exists so far.
