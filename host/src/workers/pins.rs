//! What running work keeps a claim on: the session names a spawned
//! function reads (for [`super::WorkerRegistry::pinned_names`]) and whether
//! a handle is running work ([`handle_is_running`], the predicate the
//! binding lease's `pins_running_work` walk takes).

use std::collections::HashSet;

use ral_vm::op::Op;
use ral_vm::{Func, Handle, SlotId, Value, Vm};

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
            .filter(|n| scope.lookup(n).is_some_and(|s| slots.contains(&s.0)))
            .map(str::to_owned)
            .collect(),
        None => scope.names().map(str::to_owned).collect(),
    };
    names.sort_unstable();
    names
}

/// The global slots reachable from `func` and `args`; `None` past the
/// budget.
fn referenced_slots(vm: &Vm, func: &Value, args: &[Value]) -> Option<HashSet<u32>> {
    let mut slots: HashSet<u32> = HashSet::new();
    let mut seen_protos: HashSet<u32> = HashSet::new();
    let mut values: Vec<Value> = Vec::with_capacity(args.len() + 1);
    values.push(func.clone());
    values.extend(args.iter().cloned());
    let mut protos: Vec<u32> = Vec::new();
    let mut budget = WALK_BUDGET;
    loop {
        if let Some(v) = values.pop() {
            budget = budget.checked_sub(1)?;
            match v {
                Value::Func(f) => match &*f {
                    Func::Closure {
                        proto, captures, ..
                    } => {
                        values.extend(captures.iter().cloned());
                        if seen_protos.insert(*proto) {
                            protos.push(*proto);
                        }
                    }
                    Func::Builtin { applied, .. } => values.extend(applied.iter().cloned()),
                    Func::Partial { head, applied } => {
                        values.push(Value::Func(head.clone()));
                        values.extend(applied.iter().cloned());
                    }
                },
                Value::List(items) => values.extend(items.iter().cloned()),
                Value::Record(r) => values.extend(r.values().iter().cloned()),
                Value::Variant(var) => values.extend(var.payload.iter().cloned()),
                Value::Unit
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::Str(_)
                | Value::Bytes(_)
                | Value::Handle(_) => {}
            }
        } else if let Some(p) = protos.pop() {
            let Some(proto) = vm.proto(p) else {
                continue;
            };
            budget = budget.checked_sub(proto.code.len() + 1)?;
            for op in &proto.code {
                let slot = global_slot(op);
                if let Some(slot) = slot {
                    if slots.insert(slot) {
                        if let Some(v) = vm.mobile.scope.get(SlotId(slot)) {
                            values.push(v.clone());
                        }
                    }
                }
                if let Op::MakeClosure { proto, .. } = op {
                    if seen_protos.insert(*proto) {
                        protos.push(*proto);
                    }
                }
            }
            for s in &proto.siblings {
                if seen_protos.insert(*s) {
                    protos.push(*s);
                }
            }
            values.extend(proto.consts.iter().cloned());
        } else {
            return Some(slots);
        }
    }
}

/// The session slot an instruction reads, if it reads one.
// Every other instruction works on registers, constants and captures; an
// instruction added later that reads a session slot must be listed here.
#[allow(clippy::wildcard_enum_match_arm)]
fn global_slot(op: &Op) -> Option<u32> {
    match op {
        Op::GetGlobal { slot, .. }
        | Op::CallGlobal { slot, .. }
        | Op::TailCallGlobal { slot, .. } => Some(*slot),
        _ => None,
    }
}
