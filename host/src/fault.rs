//! Fault injection (cargo feature `fault-injection`, off by default): the
//! `__panic` builtin, which panics inside evaluation, so tests can reach
//! [`crate::Shell::run_turn`]'s panic checkpoint. The checker knows the name
//! only in a build with the feature (ral-types' row of the same name), so a
//! normal build can neither type nor run it.

use ral_vm::Vm;

/// Registers `__panic` on `vm` (a no-op without the feature).
#[cfg(feature = "fault-injection")]
pub(crate) fn install(vm: &mut Vm) {
    use std::sync::Arc;
    // The table row and this registration come from the same feature, so a
    // refusal is a build inconsistency; the shell then simply lacks the
    // builtin and a test naming it fails loudly on "not available".
    let _ = vm.register_host_builtin(
        "__panic",
        0,
        Arc::new(|_vm, _args| panic!("__panic: a fault injected by the test")),
    );
}

/// Registers nothing: the feature is off.
#[cfg(not(feature = "fault-injection"))]
pub(crate) fn install(_vm: &mut Vm) {}
