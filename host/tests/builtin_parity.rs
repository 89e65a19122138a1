//! The checker's signature table and what runs agree, both directions: the
//! VM's own registry is checked in ral-vm; the names the VM leaves to the
//! host (`ral_vm::builtins::HOST_PROVIDED`) are checked here against what
//! the host's worker registry actually installs, so nothing can be checked
//! as one thing and be missing at run time.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use ral_host::workers::{install_core_worker_builtins, install_worker_builtins, WorkerRegistry};
use ral_vm::{Mobile, Vm};

#[test]
fn the_host_installs_every_name_the_vm_leaves_to_it() {
    let reg = Arc::new(WorkerRegistry::new());
    let mut vm = Vm::new(Mobile::default());
    install_worker_builtins(&mut vm, &reg).unwrap();
    for name in ral_vm::builtins::HOST_PROVIDED {
        assert!(
            vm.has_builtin(name),
            "`{name}` is not installed by the host"
        );
    }
    // `watch` is the `ral` host's form (layer RalHost).
    assert!(vm.has_builtin("watch"));
    reg.shutdown();

    // exarch's set leaves out `watch` but keeps the core.
    let reg = Arc::new(WorkerRegistry::new());
    let mut vm = Vm::new(Mobile::default());
    install_core_worker_builtins(&mut vm, &reg).unwrap();
    for name in ral_vm::builtins::HOST_PROVIDED {
        assert!(vm.has_builtin(name), "`{name}` missing from the core set");
    }
    assert!(!vm.has_builtin("watch"));
    reg.shutdown();
}

#[test]
fn every_installed_name_is_in_the_table() {
    let reg = Arc::new(WorkerRegistry::new());
    let mut vm = Vm::new(Mobile::default());
    install_worker_builtins(&mut vm, &reg).unwrap();
    // Registration itself refuses a name the table lacks; a name the VM
    // already implements is refused too, so the two sides never overlap.
    let f: ral_vm::HostFn = Arc::new(|_, _| Ok(ral_vm::Value::Unit));
    assert!(vm
        .register_host_builtin("no-such-builtin", 0, f.clone())
        .is_err());
    assert!(vm.register_host_builtin("length", 1, f).is_err());
    reg.shutdown();
}

/// Every row of the `ral` host's layer runs in the interactive session:
/// `watch` from the worker registry, `load-plugin`, `unload-plugin` and
/// the `_ed-*` interface from `Interactive` (spec §14.7, §15.7).
#[test]
fn the_interactive_host_installs_every_ral_host_row() {
    let mut shell = ral_host::Shell::new();
    let inter = ral_host::interactive::Interactive::new(None);
    inter.install(&mut shell).unwrap();
    for b in ral_types::builtin_table().iter() {
        if b.layer == ral_types::Layer::RalHost {
            assert!(shell.has_builtin(b.name), "`{}` is not installed", b.name);
        }
    }
    // A shell without the interactive extensions has none of them.
    let batch = ral_host::Shell::new();
    assert!(!batch.has_builtin("load-plugin"));
    assert!(!batch.has_builtin("_ed-text"));
}
