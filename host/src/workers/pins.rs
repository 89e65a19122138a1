//! What running work keeps a claim on: the session names a spawned
//! function reads (for [`super::WorkerRegistry::pinned_names`]) and whether
//! a handle is running work ([`handle_is_running`], the predicate the
//! binding lease's `pins_running_work` walk takes).

use std::collections::HashSet;

use ral_vm::{Handle, SlotId, Value, Vm};

use super::state::lock;
use super::{state::Phase, worker_of};

/// How many values and protos a pin walk visits before it gives up and
/// pins every bound name.
const WALK_BUDGET: usize = 1_000_000;

/// Whether `h` names a worker that is still running (not settled, not
/// cancelled). A handle's state only ever moves away from running, so a
/// `false` stays `false`. A handle this module did not make is not running
/// work.
pub fn handle_is_running(h: &Handle) -> bool {
    worker_of(h).is_some_and(|w| matches!(lock(&w.state).phase, Phase::Running))
}

/// The session names bound, in `vm`'s scope, to slots that `func` applied
/// to `args` may read: the slots its code and the code of every closure it
/// can make read, following the values in those slots transitively.
/// Sorted. Every bound name when the walk is too large.
pub(crate) fn referenced_names(vm: &Vm, func: &Value, args: &[Value]) -> Vec<String> {
    let scope = &vm.mobile.scope;
    let mut names: Vec<String> = match referenced_slots(vm, func, args) {
        Some(slots) if slots.is_empty() => return Vec::new(),
        Some(slots) => scope
            .names()
            .filter(|n| scope.lookup(n).is_some_and(|s| slots.contains(&s)))
            .map(str::to_owned)
            .collect(),
        None => scope.names().map(str::to_owned).collect(),
    };
    names.sort_unstable();
    names
}

/// The global slots reachable from `func` and `args`, following the values
/// in those slots ([`ral_vm::reach`]); `None` past the budget.
fn referenced_slots(vm: &Vm, func: &Value, args: &[Value]) -> Option<HashSet<SlotId>> {
    ral_vm::reach::global_slots(vm, std::iter::once(func).chain(args), true, WALK_BUDGET)
}
