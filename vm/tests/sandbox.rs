//! The OS sandbox against escape attempts, launching from a confined
//! thread (the path ral takes without a controlling terminal). The cases
//! are in `sandbox_cases/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

const FORK_PATH: bool = false;

mod sandbox_cases;
