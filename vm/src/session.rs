//! The session state the host snapshots: [`Mobile`] = [`Scope`] + [`Context`].
//!
//! # Scope
//!
//! A slot table of top-level values plus a name → slot map. Compiled code
//! names a slot ([`SlotId`]), never a string, so `fib` calling `fib` is an
//! index, not a hash probe. Each definition gets a *fresh* slot and the name
//! is repointed at it, so shadowing never changes what an earlier closure
//! reads. A slot can become empty ([`Scope::remove`], for leases); reading an
//! empty slot is a clear runtime failure.
//!
//! Cloning is `Arc` copy-on-write: both tables sit behind `Arc`s, a snapshot
//! is two refcount bumps, and the first write after a snapshot copies the
//! table once (`Arc::make_mut`). A persistent tree would make the snapshot
//! copy-free at any size, but every global read would then pay a log-factor
//! walk on the hot path; sessions hold hundreds of bindings, not millions,
//! and snapshots happen once per tool call, so the flat table wins.
//!
//! [`Scope::install`] is the one function every top-level write goes through
//! (spec §5.6: each `let` lands as its statement completes, so a failed run
//! keeps what landed). The compiler first [`Scope::reserve`]s an empty,
//! nameless slot per definition of the turn, so code compiled before the
//! definition runs (a forward reference, a closure) can name the slot;
//! `install` then fills the oldest reservation made for that name.
//!
//! # The journal (what a host learns from a run)
//!
//! A host that keeps a session across runs (ral-host's `Shell`) needs two
//! facts the run itself produces: which top-level definitions landed (so
//! the type environment grows by exactly those, and the binding lease
//! ledger stamps them), and which session names were used by code the host
//! never saw (runtime-compiled code, runtime-resolved command heads; lease
//! renewal). A host switches the [`ScopeJournal`] on with
//! [`Scope::record_journal`] and drains it after each run with
//! [`Scope::take_journal`]. `install` appends to it in the same act as the
//! write, so "write a scope entry" and "tell the host" cannot be pulled
//! apart at a call site. With the journal off (the batch runner, tests) an
//! install pays one branch.
//!
//! [`Scope::note_use`] is the entry point for the two renewal seams inside
//! the VM: code compiled while a run is in progress (`source`, `use`) notes
//! every name of its `ral_ir::referenced_names`, and a command head
//! resolved at dispatch time to a session binding notes that one name.
//! It records only when the host asked for uses (an armed lease), so the
//! lookup path stays free of it.
//!
//! # Checkpoints
//!
//! [`Scope::checkpoint`] opens an undo log instead of copying: while it is
//! open, every change to a name and to a slot that existed at the checkpoint
//! is logged, and slots handed out since are simply new.
//! [`Scope::rollback`] replays the log backwards (the panic checkpoint of a
//! host turn); [`Scope::commit`] drops it. A clone (a `Mobile` snapshot) is
//! still two refcount bumps, but the first write after it copies the whole
//! table, which a checkpoint taken at every turn must not cost.
//!
//! # Slot numbers are never reused
//!
//! A host that restores an older snapshot (or rolls a checkpoint back) would
//! otherwise hand out slot numbers that code compiled after the snapshot
//! already names. [`Scope::retire_slots`] pads a restored table with empty
//! slots up to the count the abandoned table reached, so a slot number
//! means one definition for the life of the session.
//!
//! # Context
//!
//! The dynamic context as plain data. Only the cancel flag is live in this
//! step; cwd, environment overrides, the handler stack and the capability
//! stack are placeholders the host and runtime issues fill in.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::value::Value;

/// A slot of the session scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotId(pub u32);

/// The session state a host snapshots before every tool call.
#[derive(Clone, Debug, Default)]
pub struct Mobile {
    pub scope: Scope,
    pub context: Context,
}

/// Top-level bindings: see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    slots: Arc<Vec<Option<Value>>>,
    names: Arc<HashMap<String, SlotId>>,
    /// Slots reserved for this turn's definitions, oldest first.
    pending: Vec<(String, SlotId)>,
    /// What the host asked to be told about; `None` when nobody listens.
    journal: Option<ScopeJournal>,
    /// How to undo the writes since [`Scope::checkpoint`]; `None` when no
    /// checkpoint is open.
    undo: Option<Box<Undo>>,
}

/// The undo log of an open checkpoint (see the module docs).
#[derive(Clone, Debug)]
struct Undo {
    /// The slot count at the checkpoint: every slot at or above it is new.
    slot_len: usize,
    /// The reservations at the checkpoint.
    pending: Vec<(String, SlotId)>,
    /// The changes to names and to slots below `slot_len`, oldest first.
    steps: Vec<UndoStep>,
}

#[derive(Clone, Debug)]
enum UndoStep {
    /// `name` pointed at this slot (or at nothing) before.
    Name(String, Option<SlotId>),
    /// The whole name map before a [`Scope::restore_names`].
    Names(Arc<HashMap<String, SlotId>>),
    /// An old slot held this before.
    Slot(SlotId, Option<Value>),
}

/// What a run did to and with the session scope, for the host (see the
/// module docs). Drained with [`Scope::take_journal`].
#[derive(Clone, Debug, Default)]
pub struct ScopeJournal {
    /// Every [`Scope::install`], in order: the name and the slot it filled.
    pub installs: Vec<(String, SlotId)>,
    /// Session names used by code the host did not compile, or by command
    /// heads resolved at dispatch (see [`Scope::note_use`]).
    pub uses: BTreeSet<String>,
    /// Whether [`Scope::note_use`] records (set while a lease is armed).
    track_uses: bool,
}

impl Scope {
    /// An empty scope.
    pub fn new() -> Scope {
        Scope::default()
    }

    /// The slot `name` is bound to now.
    pub fn lookup(&self, name: &str) -> Option<SlotId> {
        self.names.get(name).copied()
    }

    /// The value in `slot`, if it holds one.
    #[inline]
    pub fn get(&self, slot: SlotId) -> Option<&Value> {
        self.slots
            .get(slot.0 as usize)
            .and_then(|v: &Option<Value>| v.as_ref())
    }

    /// The value bound to `name`.
    pub fn get_named(&self, name: &str) -> Option<&Value> {
        self.lookup(name).and_then(|s| self.get(s))
    }

    /// Reserves an empty slot for a definition of `name` that has not run
    /// yet. This binds nothing: the name still resolves to its old slot
    /// until [`Scope::install`] runs.
    pub fn reserve(&mut self, name: &str) -> SlotId {
        let slot = self.push_slot(None);
        self.pending.push((name.to_owned(), slot));
        slot
    }

    /// The reservations not yet filled, oldest first.
    pub fn reservations(&self) -> &[(String, SlotId)] {
        &self.pending
    }

    /// Drops reservations that were never filled (a run that failed before
    /// reaching them); their slots stay empty.
    pub fn clear_reservations(&mut self) {
        self.pending.clear();
    }

    /// Binds `name` to `value`: THE top-level write. Fills the oldest
    /// reservation for `name` if there is one, else a fresh slot, and points
    /// the name at it. Journals the install when the host listens.
    pub fn install(&mut self, name: &str, value: Value) -> SlotId {
        let slot = match self.pending.iter().position(|(n, _)| n == name) {
            Some(i) => {
                let (_, slot) = self.pending.remove(i);
                if let Some(cell) = Arc::make_mut(&mut self.slots).get_mut(slot.0 as usize) {
                    let old = cell.replace(value);
                    if let Some(u) = &mut self.undo {
                        if (slot.0 as usize) < u.slot_len {
                            u.steps.push(UndoStep::Slot(slot, old));
                        }
                    }
                }
                slot
            }
            None => self.push_slot(Some(value)),
        };
        let before = Arc::make_mut(&mut self.names).insert(name.to_owned(), slot);
        if let Some(u) = &mut self.undo {
            u.steps.push(UndoStep::Name(name.to_owned(), before));
        }
        if let Some(j) = &mut self.journal {
            j.installs.push((name.to_owned(), slot));
        }
        slot
    }

    /// Starts (`Some(track_uses)`) or stops (`None`) journaling; see the
    /// module docs. Starting keeps what is already recorded.
    pub fn record_journal(&mut self, mode: Option<bool>) {
        match mode {
            Some(track_uses) => {
                self.journal
                    .get_or_insert_with(ScopeJournal::default)
                    .track_uses = track_uses;
            }
            None => self.journal = None,
        }
    }

    /// What was journaled since the last call (empty when journaling is
    /// off). Journaling stays on, with the same settings.
    pub fn take_journal(&mut self) -> ScopeJournal {
        match &mut self.journal {
            Some(j) => {
                let track_uses = j.track_uses;
                let mut out = std::mem::take(j);
                j.track_uses = track_uses;
                out.track_uses = track_uses;
                out
            }
            None => ScopeJournal::default(),
        }
    }

    /// Records that `name` was used by code compiled during a run or by a
    /// command head resolved at dispatch (the lease renewal seams). A no-op
    /// unless the host tracks uses; a repeated name costs one set probe
    /// and no allocation.
    pub fn note_use(&mut self, name: &str) {
        if let Some(j) = &mut self.journal {
            if j.track_uses && !j.uses.contains(name) {
                j.uses.insert(name.to_owned());
            }
        }
    }

    /// The number of slots ever handed out (filled, emptied or reserved).
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Pads the slot table with empty slots up to `count`, so numbers a
    /// discarded later table handed out are never handed out again (see
    /// the module docs). Does nothing when the table is already that long.
    pub fn retire_slots(&mut self, count: usize) {
        if self.slots.len() < count {
            Arc::make_mut(&mut self.slots).resize(count, None);
        }
    }

    /// Takes `other`'s name map (an older snapshot of this scope) while
    /// keeping this scope's slots: the names defined since are unbound, but
    /// code compiled against their slots still reads them. `use` runs a
    /// module in the session's table and then hides its names this way, so
    /// the module's functions keep their globals and the caller's scope is
    /// unchanged (§10.3).
    pub fn restore_names(&mut self, other: &Scope) {
        let before = std::mem::replace(&mut self.names, other.names.clone());
        if let Some(u) = &mut self.undo {
            u.steps.push(UndoStep::Names(before));
        }
    }

    /// Sets aside the pending reservations (a module compiled mid-run must
    /// not fill the turn's), to be put back with [`Scope::put_reservations`].
    pub fn take_reservations(&mut self) -> Vec<(String, SlotId)> {
        std::mem::take(&mut self.pending)
    }

    /// Puts back reservations set aside by [`Scope::take_reservations`],
    /// dropping any made since.
    pub fn put_reservations(&mut self, pending: Vec<(String, SlotId)>) {
        self.pending = pending;
    }

    /// Suspends journaling (returning its state) or resumes it with a state
    /// taken earlier: a module's own definitions are not session installs.
    pub fn swap_journal(&mut self, journal: Option<ScopeJournal>) -> Option<ScopeJournal> {
        std::mem::replace(&mut self.journal, journal)
    }

    /// Unbinds `name` and empties its slot (a lease expiring). Code holding
    /// the slot then fails with "not defined".
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let slot = Arc::make_mut(&mut self.names).remove(name)?;
        let old = Arc::make_mut(&mut self.slots)
            .get_mut(slot.0 as usize)
            .and_then(Option::take);
        if let Some(u) = &mut self.undo {
            u.steps.push(UndoStep::Name(name.to_owned(), Some(slot)));
            if (slot.0 as usize) < u.slot_len {
                u.steps.push(UndoStep::Slot(slot, old.clone()));
            }
        }
        old
    }

    /// Opens a checkpoint: from now on every change is logged so that
    /// [`Scope::rollback`] can undo it. O(1): nothing is copied, so the
    /// tables stay unshared and the run's writes copy nothing either.
    /// Replaces a checkpoint already open.
    pub fn checkpoint(&mut self) {
        self.undo = Some(Box::new(Undo {
            slot_len: self.slots.len(),
            pending: self.pending.clone(),
            steps: Vec::new(),
        }));
    }

    /// Closes the open checkpoint, keeping every change.
    pub fn commit(&mut self) {
        self.undo = None;
    }

    /// Undoes every change since [`Scope::checkpoint`] and closes it: names
    /// point where they did, old slots hold what they did, and slots handed
    /// out since are emptied but kept, so their numbers are never reused.
    /// Returns false when no checkpoint was open (nothing changes).
    pub fn rollback(&mut self) -> bool {
        let Some(undo) = self.undo.take() else {
            return false;
        };
        let Undo {
            slot_len,
            pending,
            steps,
        } = *undo;
        for step in steps.into_iter().rev() {
            match step {
                UndoStep::Name(name, Some(slot)) => {
                    Arc::make_mut(&mut self.names).insert(name, slot);
                }
                UndoStep::Name(name, None) => {
                    Arc::make_mut(&mut self.names).remove(&name);
                }
                UndoStep::Names(names) => self.names = names,
                UndoStep::Slot(slot, value) => {
                    if let Some(cell) = Arc::make_mut(&mut self.slots).get_mut(slot.0 as usize) {
                        *cell = value;
                    }
                }
            }
        }
        if self.slots.len() > slot_len {
            if let Some(new) = Arc::make_mut(&mut self.slots).get_mut(slot_len..) {
                new.fill(None);
            }
        }
        self.pending = pending;
        true
    }

    /// The bound names (unordered).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    fn push_slot(&mut self, value: Option<Value>) -> SlotId {
        let slots = Arc::make_mut(&mut self.slots);
        let id = SlotId(u32::try_from(slots.len()).unwrap_or(u32::MAX));
        slots.push(value);
        id
    }
}

/// The dynamic context (placeholders except `cancel`; see the module docs).
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Working directory (`None`: the process's). Filled by the host.
    pub cwd: Option<PathBuf>,
    /// Environment overrides on top of the process environment; `None`
    /// unsets. Filled by the host.
    pub env: Vec<(String, Option<String>)>,
    /// Installed command handlers (`within [handlers: …]`). Runtime issue.
    pub handlers: Vec<Value>,
    /// The capability grant stack. Runtime issue.
    pub capabilities: Vec<Value>,
    /// The grant stack each alias was installed under, by name (§12,
    /// spec/capabilities.md "Code installed under a grant"): an alias runs
    /// under those layers on top of its caller's, so code installed inside
    /// a grant never runs with more authority than that grant gave it.
    pub alias_grants: Vec<(String, Vec<std::sync::Arc<crate::caps::Layer>>)>,
    /// The last status.
    pub last_status: i32,
    /// Set by the host (wall, Ctrl-C) to cancel the running turn; the VM
    /// polls it at backward jumps, calls and builtin entry.
    pub cancel: Arc<AtomicBool>,
}

impl Context {
    /// The value of environment variable `name` as this context sees it.
    pub fn var(&self, name: &str) -> Option<String> {
        match self.env.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => v.clone(),
            None => std::env::var(name).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_fills_reservations_and_shadows() {
        let mut s = Scope::new();
        let a = s.install("x", Value::Int(1));
        let r = s.reserve("x");
        assert_eq!(s.get_named("x"), Some(&Value::Int(1)));
        let snap = s.clone();
        let b = s.install("x", Value::Int(2));
        assert_eq!(b, r);
        assert_ne!(a, b);
        assert_eq!(s.get(a), Some(&Value::Int(1)));
        assert_eq!(s.get_named("x"), Some(&Value::Int(2)));
        assert_eq!(snap.get_named("x"), Some(&Value::Int(1)));
        assert_eq!(s.remove("x"), Some(Value::Int(2)));
        assert_eq!(s.get(b), None);
        assert_eq!(s.lookup("x"), None);
    }

    #[test]
    fn the_journal_records_installs_and_tracked_uses() {
        let mut s = Scope::new();
        s.install("quiet", Value::Int(0));
        s.note_use("quiet");
        assert!(s.take_journal().installs.is_empty());
        s.record_journal(Some(false));
        let a = s.install("a", Value::Int(1));
        s.note_use("a");
        let j = s.take_journal();
        assert_eq!(j.installs, vec![("a".to_owned(), a)]);
        assert!(j.uses.is_empty());
        s.record_journal(Some(true));
        s.note_use("a");
        s.note_use("a");
        let j = s.take_journal();
        assert!(j.installs.is_empty());
        assert_eq!(j.uses.iter().collect::<Vec<_>>(), vec!["a"]);
        s.note_use("b");
        assert_eq!(s.take_journal().uses.len(), 1, "tracking survives a drain");
        s.record_journal(None);
        s.install("c", Value::Int(3));
        assert!(s.take_journal().installs.is_empty());
    }

    #[test]
    fn rollback_undoes_a_run_without_copying() {
        let mut s = Scope::new();
        let a = s.install("a", Value::Int(1));
        s.install("gone", Value::Int(0));
        s.checkpoint();
        let r = s.reserve("b");
        s.install("a", Value::Int(10));
        s.install("b", Value::Int(2));
        s.remove("gone");
        let other = s.clone();
        s.restore_names(&Scope::new());
        s.restore_names(&other);
        let count = s.slot_count();
        assert!(s.rollback());
        assert_eq!(s.lookup("a"), Some(a));
        assert_eq!(s.get_named("a"), Some(&Value::Int(1)));
        assert_eq!(s.get_named("gone"), Some(&Value::Int(0)));
        assert_eq!(s.lookup("b"), None);
        assert_eq!(s.get(r), None);
        assert_eq!(s.slot_count(), count, "new slots are retired, not reused");
        assert_ne!(s.install("c", Value::Int(3)), r);
        assert!(!s.rollback(), "the checkpoint is closed");
        s.checkpoint();
        s.install("d", Value::Int(4));
        s.commit();
        assert!(!s.rollback());
        assert_eq!(s.get_named("d"), Some(&Value::Int(4)));
    }

    #[test]
    fn retired_slot_numbers_are_not_handed_out_again() {
        let mut s = Scope::new();
        s.install("a", Value::Int(1));
        let snap = s.clone();
        let b = s.install("b", Value::Int(2));
        let mut restored = snap;
        restored.retire_slots(s.slot_count());
        let c = restored.install("c", Value::Int(3));
        assert_ne!(b, c);
        assert_eq!(restored.get(b), None);
        assert_eq!(restored.slot_count(), 3);
    }
}
