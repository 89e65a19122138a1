//! The OS sandbox against escape attempts, Landlock and seccomp alone (the
//! floor), launching through `fork` and a pre-exec hook (the path ral
//! takes there with a controlling terminal). The cases are in
//! `sandbox_cases/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

const FORK_PATH: bool = true;
const FLOOR: bool = true;

mod sandbox_cases;
