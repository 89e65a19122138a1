//! The OS sandbox against escape attempts, launching through `fork` and a
//! pre-exec hook (the path ral takes with a controlling terminal). The
//! cases are in `sandbox_cases/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

const FORK_PATH: bool = true;

mod sandbox_cases;
