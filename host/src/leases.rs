//! Binding leases: a host policy that reclaims top-level scratch names an
//! embedder (exarch) has stopped using. A ral binding never expires by
//! itself; a lease is what a host arms on its own shell.
//!
//! # The ledger
//!
//! [`BindingLedger`] lives on the shell's host-local state, beside the
//! worker registry and outside the [`ral_vm::Mobile`] a panic checkpoint
//! restores, so a rollback never rewinds its clock or revives a pruned
//! lease. It has exactly one writer: the thread that holds `&mut Shell`
//! (every turn, install and prune takes `&mut self`), so it needs no lock.
//! An unarmed ledger (the default; the REPL, batch `ral`) costs one branch
//! per turn and never expires anything.
//!
//! # The clock
//!
//! The epoch ticks once per [`crate::Shell::run_turn`], at entry, whether
//! the turn then parses, checks, runs or fails. A binding's lease records
//! the epoch of the last interest in it; it is idle for `epoch - last`
//! turns, and [`crate::Shell::prune_idle_bindings`] removes it once that
//! exceeds the armed [`BindingLease::idle_turns`] bound. Expiry is by idle
//! age, never by creation age.
//!
//! # Interest
//!
//! - **Writing** a name (every top-level install, through the one chokepoint
//!   [`crate::Shell::install_scope_binding`] and the VM's journaled
//!   `Scope::install`) starts or renews its lease.
//! - **Naming** it in code renews it. The reference sets come from
//!   [`ral_ir::referenced_names`] at three seams: (1) the turn's own module,
//!   after it compiled and before it runs; (2) code compiled while a run is
//!   in progress (`source`, `use`), and (3) a command head resolved to a
//!   session binding at dispatch time. Seams 2 and 3 live in the VM and
//!   report through `Scope::note_use` (vm/src/session.rs); the shell drains
//!   them after the run. Lookups themselves are never instrumented.
//! - **Through code**: renewing a name renews, transitively, the session
//!   names its value's code reads. The VM reads a session binding from its
//!   slot when the code runs (it does not copy it into the closure), so a
//!   used function must keep the helpers it calls alive. Each install
//!   records those names once (`global_refs`: the slots the value's code,
//!   and the code of the closures it makes or holds, reads), so renewal
//!   follows names, never code.
//!
//! # What is never pruned
//!
//! The **baseline**: every name bound when the lease is armed (prelude,
//! seeded values, the rc file's bindings), sealed at
//! [`crate::Shell::arm_binding_lease`]. Rebinding a baseline name keeps it
//! baseline, so pruning can never un-shadow an older meaning. A binding
//! whose value structurally reaches running work is **pinned**
//! ([`pins_running_work`]): skipped without renewal, re-examined at every
//! later prune.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ral_vm::{Handle, SlotId, Value, Vm};

/// The policy a host arms: how many turns a binding may go without
/// interest before a prune removes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindingLease {
    idle_turns: u64,
}

impl BindingLease {
    /// A binding idle for more than `n` consecutive turns is pruned at the
    /// next [`crate::Shell::prune_idle_bindings`]. With `n = 0`, anything
    /// the current turn did not touch goes.
    pub fn idle_turns(n: u64) -> BindingLease {
        BindingLease { idle_turns: n }
    }

    /// The bound.
    pub fn max_idle_turns(&self) -> u64 {
        self.idle_turns
    }
}

/// One pruned binding, for the host's transcript (never model-visible).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindingPruneNotice {
    /// The name that is no longer bound.
    pub name: String,
    /// How many turns it had gone without interest.
    pub idle_turns: u64,
}

/// The per-shell lease ledger; see the module docs. Read-only outside the
/// shell.
#[derive(Debug, Default)]
pub struct BindingLedger {
    armed: Option<Box<Armed>>,
}

#[derive(Debug)]
struct Armed {
    lease: BindingLease,
    epoch: u64,
    /// Names sealed at arming: never leased, never pruned.
    baseline: HashSet<String>,
    /// Leased name → the epoch of the last interest in it.
    leases: HashMap<String, u64>,
    /// Name → the session names its value's code reads.
    deps: HashMap<String, Arc<[String]>>,
}

impl BindingLedger {
    /// Whether a lease is armed.
    pub fn is_armed(&self) -> bool {
        self.armed.is_some()
    }

    /// The armed policy.
    pub fn lease(&self) -> Option<BindingLease> {
        self.armed.as_ref().map(|a| a.lease)
    }

    /// Turns since arming (0 when unarmed).
    pub fn epoch(&self) -> u64 {
        self.armed.as_ref().map_or(0, |a| a.epoch)
    }

    /// Whether `name` was sealed as baseline.
    pub fn is_baseline(&self, name: &str) -> bool {
        self.armed
            .as_ref()
            .is_some_and(|a| a.baseline.contains(name))
    }

    /// The epoch of the last interest in leased `name`.
    pub fn last_interest(&self, name: &str) -> Option<u64> {
        self.armed.as_ref()?.leases.get(name).copied()
    }

    /// How many names hold a lease.
    pub fn leased(&self) -> usize {
        self.armed.as_ref().map_or(0, |a| a.leases.len())
    }

    /// Arms `lease`, sealing `visible` as the baseline. Re-arming reseals
    /// and drops every lease held so far.
    pub(crate) fn arm<'a>(&mut self, lease: BindingLease, visible: impl Iterator<Item = &'a str>) {
        self.armed = Some(Box::new(Armed {
            lease,
            epoch: 0,
            baseline: visible.map(str::to_owned).collect(),
            leases: HashMap::new(),
            deps: HashMap::new(),
        }));
    }

    /// One turn began.
    #[inline]
    pub(crate) fn tick(&mut self) {
        if let Some(a) = &mut self.armed {
            a.epoch += 1;
        }
    }

    /// A top-level write of `name`, whose value's code reads `deps`.
    pub(crate) fn note_install(&mut self, name: &str, deps: Vec<String>) {
        let Some(a) = &mut self.armed else { return };
        if deps.is_empty() {
            a.deps.remove(name);
        } else {
            a.deps.insert(name.to_owned(), deps.into());
        }
        if !a.baseline.contains(name) {
            a.leases.insert(name.to_owned(), a.epoch);
        }
    }

    /// Renews every name in `roots` and, transitively, the names their
    /// values' code reads.
    pub(crate) fn renew<'a>(&mut self, roots: impl IntoIterator<Item = &'a str>) {
        let Some(a) = &mut self.armed else { return };
        let mut seen: HashSet<String> = HashSet::new();
        let mut stack: Vec<String> = roots.into_iter().map(str::to_owned).collect();
        while let Some(name) = stack.pop() {
            if seen.contains(&name) {
                continue;
            }
            if let Some(last) = a.leases.get_mut(&name) {
                *last = a.epoch;
            }
            if let Some(deps) = a.deps.get(&name) {
                stack.extend(deps.iter().filter(|d| !seen.contains(*d)).cloned());
            }
            seen.insert(name);
        }
    }

    /// The leased names idle past the bound, in sorted order, with their
    /// idle age.
    pub(crate) fn idle(&self) -> Vec<(String, u64)> {
        let Some(a) = &self.armed else {
            return Vec::new();
        };
        let mut out: Vec<(String, u64)> = a
            .leases
            .iter()
            .map(|(n, last)| (n, a.epoch.saturating_sub(*last)))
            .filter(|(_, idle)| *idle > a.lease.idle_turns)
            .map(|(n, idle)| (n.clone(), idle))
            .collect();
        out.sort();
        out
    }

    /// Drops `name`'s lease (pruned, or an orphan).
    pub(crate) fn forget(&mut self, name: &str) {
        if let Some(a) = &mut self.armed {
            a.leases.remove(name);
            a.deps.remove(name);
        }
    }

    /// Starts a lease for `name` now unless it is baseline or tracked (the
    /// adoption sweep).
    pub(crate) fn adopt(&mut self, name: &str) {
        if let Some(a) = &mut self.armed {
            if !a.baseline.contains(name) && !a.leases.contains_key(name) {
                a.leases.insert(name.to_owned(), a.epoch);
            }
        }
    }
}

/// How many values and instructions [`global_refs`] looks at before it
/// gives up.
const REFS_BUDGET: usize = 1_000_000;

/// The session slots `value`'s code may read ([`ral_vm::reach`]), stopping
/// at the slots themselves (what *they* read is recorded when they were
/// installed). `None` past the budget.
pub(crate) fn global_refs(vm: &Vm, value: &Value) -> Option<HashSet<SlotId>> {
    ral_vm::reach::global_slots(vm, [value], false, REFS_BUDGET)
}

/// Whether `value` structurally reaches a handle whose work is still
/// running (a worker of this process that has not settled or been
/// cancelled). See [`pins_running_work_by`].
pub fn pins_running_work(value: &Value) -> bool {
    pins_running_work_by(value, &crate::workers::handle_is_running)
}

/// Whether `value` structurally reaches a handle for which `is_running`
/// holds. Walks list elements, record and map values
/// and variant payloads with an explicit stack (no recursion, so any depth
/// is safe); never descends into a function value. A handle reachable only
/// through a closure is not "the name of live work", and the worker
/// registry retains every handle itself, so pruning such a name strands
/// nothing.
pub fn pins_running_work_by(value: &Value, is_running: &dyn Fn(&Handle) -> bool) -> bool {
    let mut stack: Vec<&Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Handle(h) => {
                if is_running(h) {
                    return true;
                }
            }
            Value::List(items) => stack.extend(items.iter()),
            Value::Record(r) => stack.extend(r.values()),
            Value::Variant(var) => stack.extend(var.payload.as_ref()),
            Value::Unit
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Str(_)
            | Value::Bytes(_)
            | Value::Func(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn unarmed_ledger_records_nothing() {
        let mut l = BindingLedger::default();
        l.tick();
        l.note_install("x", deps(&[]));
        l.adopt("y");
        assert_eq!(l.epoch(), 0);
        assert_eq!(l.leased(), 0);
        assert!(l.idle().is_empty());
    }

    #[test]
    fn idle_age_is_measured_from_the_last_interest() {
        let mut l = BindingLedger::default();
        l.arm(BindingLease::idle_turns(1), ["base"].into_iter());
        l.tick();
        l.note_install("x", deps(&[]));
        l.note_install("base", deps(&[]));
        assert_eq!(l.last_interest("x"), Some(1));
        assert_eq!(l.last_interest("base"), None, "baseline is never leased");
        l.tick();
        assert!(l.idle().is_empty(), "one idle turn is within the bound");
        l.tick();
        assert_eq!(l.idle(), vec![("x".to_owned(), 2)]);
        l.renew(["x"]);
        assert!(l.idle().is_empty());
    }

    #[test]
    fn renewal_follows_what_the_code_reads() {
        let mut l = BindingLedger::default();
        l.arm(BindingLease::idle_turns(0), std::iter::empty());
        l.tick();
        l.note_install("helper", deps(&[]));
        l.tick();
        l.note_install("main", deps(&["helper", "main"]));
        l.tick();
        l.renew(["main"]);
        assert_eq!(l.last_interest("helper"), Some(3));
        assert_eq!(l.last_interest("main"), Some(3));
    }

    #[test]
    fn the_walk_finds_running_handles_outside_closures_only() {
        let h = Value::Handle(Arc::new(Handle {
            id: 7,
            state: Box::new(()),
        }));
        let running = |h: &Handle| h.id == 7;
        let nested = Value::list(vec![Value::Int(1), Value::variant("job", Some(h.clone()))]);
        assert!(pins_running_work_by(&nested, &running));
        assert!(!pins_running_work_by(&nested, &|_: &Handle| false));
        assert!(!pins_running_work_by(&Value::Int(3), &running));
        assert!(!pins_running_work(&nested), "not a worker of this process");
        // Deep enough to show the walk keeps no Rust stack per level (dropping
        // the value does recurse, which bounds the depth a test can build).
        let mut deep = h;
        for _ in 0..2_000 {
            deep = Value::list(vec![deep]);
        }
        assert!(pins_running_work_by(&deep, &running));
    }
}
