//! What a value's code can read from the session: the global slots named
//! by the code of every closure reachable from a set of root values
//! (closures they are or hold, the closures their code makes, recursive
//! group siblings, pipeline-stage protos, constants). Hosts use it for
//! binding leases (renewal through a used function's helpers) and for
//! pinning the bindings running work reads.
//!
//! The instruction knowledge (which ops read a slot, which name a proto)
//! lives in [`Op::global_slot`] and [`Op::proto_ref`], next to the ops.

use std::collections::HashSet;

use crate::exec::Vm;
use crate::session::SlotId;
use crate::value::{Func, Value};

/// The global slots the code reachable from `roots` reads. With `follow`,
/// the values in those slots are walked too (transitively: what a running
/// worker can reach); without, the walk stops at the slots. `None` when
/// more than `budget` values and instructions would be visited.
pub fn global_slots<'v>(
    vm: &'v Vm,
    roots: impl IntoIterator<Item = &'v Value>,
    follow: bool,
    budget: usize,
) -> Option<HashSet<SlotId>> {
    let mut slots: HashSet<SlotId> = HashSet::new();
    let mut seen_protos: HashSet<u32> = HashSet::new();
    let mut values: Vec<&'v Value> = roots.into_iter().collect();
    let mut protos: Vec<u32> = Vec::new();
    let mut budget = budget;
    let mut enqueue = |p: u32, protos: &mut Vec<u32>| {
        if seen_protos.insert(p) {
            protos.push(p);
        }
    };
    loop {
        if let Some(v) = values.pop() {
            budget = budget.checked_sub(1)?;
            match v {
                Value::Func(f) => func_parts(f, &mut values, &mut |p| enqueue(p, &mut protos)),
                Value::List(items) => values.extend(items.iter()),
                Value::Record(r) => values.extend(r.values()),
                Value::Variant(var) => values.extend(var.payload.as_ref()),
                Value::Unit
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::Str(_)
                | Value::Bytes(_)
                | Value::Handle(_) => {}
            }
        } else if let Some(p) = protos.pop() {
            let Some(proto) = vm.proto(p) else { continue };
            budget = budget.checked_sub(proto.code.len() + 1)?;
            for op in &proto.code {
                if let Some(s) = op.global_slot() {
                    let slot = SlotId(s);
                    if slots.insert(slot) && follow {
                        if let Some(v) = vm.mobile.scope.get(slot) {
                            values.push(v);
                        }
                    }
                }
                if let Some(q) = op.proto_ref() {
                    enqueue(q, &mut protos);
                }
            }
            for s in &proto.siblings {
                enqueue(*s, &mut protos);
            }
            values.extend(proto.consts.iter());
        } else {
            return Some(slots);
        }
    }
}

/// Pushes what a function value holds: its captures and applied
/// arguments; reports the protos it runs.
fn func_parts<'v>(f: &'v Func, values: &mut Vec<&'v Value>, proto: &mut dyn FnMut(u32)) {
    match f {
        Func::Closure {
            proto: p, captures, ..
        } => {
            values.extend(captures.iter());
            proto(*p);
        }
        Func::Partial { head, applied } => {
            func_parts(head, values, proto);
            values.extend(applied.iter());
        }
        Func::Builtin { applied, .. } => values.extend(applied.iter()),
    }
}
