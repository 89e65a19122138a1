//! The OS sandbox against escape attempts with its namespace layer (new
//! user, mount, pid, ipc and uts namespaces and a filesystem view built
//! from the grant, over Landlock and seccomp), the layer ral uses wherever
//! the kernel lets it. The cases are in `sandbox_cases/`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

const FORK_PATH: bool = true;
const FLOOR: bool = false;

mod sandbox_cases;
