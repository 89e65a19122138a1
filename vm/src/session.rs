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
//! # Context
//!
//! The dynamic context as plain data. Only the cancel flag is live in this
//! step; cwd, environment overrides, the handler stack and the capability
//! stack are placeholders the host and runtime issues fill in.

use std::collections::HashMap;
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

    /// Drops reservations that were never filled (a run that failed before
    /// reaching them); their slots stay empty.
    pub fn clear_reservations(&mut self) {
        self.pending.clear();
    }

    /// Binds `name` to `value`: THE top-level write. Fills the oldest
    /// reservation for `name` if there is one, else a fresh slot, and points
    /// the name at it.
    pub fn install(&mut self, name: &str, value: Value) -> SlotId {
        let slot = match self.pending.iter().position(|(n, _)| n == name) {
            Some(i) => {
                let (_, slot) = self.pending.remove(i);
                if let Some(cell) = Arc::make_mut(&mut self.slots).get_mut(slot.0 as usize) {
                    *cell = Some(value);
                }
                slot
            }
            None => self.push_slot(Some(value)),
        };
        Arc::make_mut(&mut self.names).insert(name.to_owned(), slot);
        slot
    }

    /// Unbinds `name` and empties its slot (a lease expiring). Code holding
    /// the slot then fails with "not defined".
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let slot = Arc::make_mut(&mut self.names).remove(name)?;
        Arc::make_mut(&mut self.slots)
            .get_mut(slot.0 as usize)
            .and_then(Option::take)
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
}
