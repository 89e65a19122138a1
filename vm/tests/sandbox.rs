//! The OS sandbox against escape attempts, Landlock and seccomp alone (the
//! floor, as on a system without user namespaces), launching from a
//! confined thread (the path ral takes there without a controlling
//! terminal). The cases are in `sandbox_cases/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

const FORK_PATH: bool = false;
const FLOOR: bool = true;

mod sandbox_cases;
