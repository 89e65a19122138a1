//! The session's accumulated bindings, carried from one checked turn to the next.
//!
//! A [`TypeEnv`] maps a name to a *closed* [`Scheme`] (one that refers to no
//! store), so it outlives the store of the turn that produced it and is cheap
//! to clone (one `Arc`). The builtin table is not copied in: lookups fall back
//! to [`crate::builtin_table`] after the session bindings, so an empty env is
//! "seeded from the builtin table" at no cost.
//!
//! **Failed turns.** A turn's [`crate::Checked::bindings`] lists every
//! top-level binding in statement order. A host whose run failed part-way
//! calls [`TypeEnv::extend_with_prefix`] with the number of top-level
//! statements that completed; the bindings those statements made those bindings keep the schemes the checker gave them (the
//! checker typed the whole unit, so each landed binding's scheme is already
//! the one its later uses were checked against).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use crate::check::Checked;
use crate::ty::Scheme;

/// One session binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvEntry {
    /// The closed scheme.
    pub scheme: Scheme,
    /// Whether the binding's type had weak (unit-monomorphic) residuals when it
    /// was closed; such a binding is instantiated once per turn and made weak
    /// again, so every use in that turn shares one type.
    pub weak: bool,
}

impl EnvEntry {
    /// The entry for a value of type `t` in `store`, for a host that binds
    /// a value a checked unit produced (a field of the rc file's result,
    /// spec §15.3): `t` generalised at the store's current level and
    /// closed, so it outlives the store.
    pub fn of_type(store: &mut crate::ty::TyStore, t: crate::ty::Ty) -> EnvEntry {
        let scheme = store.generalize(t);
        let (scheme, weak) = crate::infer::close_scheme(store, &scheme);
        EnvEntry { scheme, weak }
    }
}

impl EnvEntry {
    /// The entry for type `t` as it stands in `store`, nothing generalised
    /// (its free variables are left weak): for a reader that only needs a
    /// copy that outlives a borrowed store (an editor listing a record's
    /// fields).
    pub fn closed(store: &crate::ty::TyStore, t: crate::ty::Ty) -> EnvEntry {
        let (scheme, weak) = crate::infer::close_scheme(store, &Scheme::mono(t));
        EnvEntry { scheme, weak }
    }
}

/// The session environment: name → scheme, persistent across turns.
#[derive(Clone, Debug, Default)]
pub struct TypeEnv {
    names: Arc<HashMap<String, EnvEntry>>,
    /// Builtin-table names this host does not install (§11.5, §15): they
    /// are absent from the base scope, so the checker resolves them like
    /// any unknown name (a bare head is an external command).
    absent: Arc<Vec<&'static str>>,
    /// The names the session's aliases handle when the turn starts: a bare
    /// head of one of them that no binding or builtin claims is of class
    /// arm (§6.3, §9.5, §17.3), so its arguments are rendered as text.
    aliases: Arc<Vec<String>>,
}

impl TypeEnv {
    /// The environment with only the builtins (which are looked up on demand).
    pub fn new() -> TypeEnv {
        TypeEnv::default()
    }

    /// The session binding for `name`, if any (builtins are not included).
    pub fn get(&self, name: &str) -> Option<&EnvEntry> {
        self.names.get(name)
    }

    /// Every session name (for did-you-mean suggestions).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.keys().map(String::as_str)
    }

    /// The number of session bindings.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no session bindings.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// This environment for a host that does not install the builtin-table
    /// names `absent` (host forms such as `watch`, `service`, `detach`).
    pub fn with_absent_builtins(mut self, absent: Vec<&'static str>) -> TypeEnv {
        self.absent = Arc::new(absent);
        self
    }

    /// Whether the host omits builtin `name`.
    pub fn is_absent(&self, name: &str) -> bool {
        self.absent.contains(&name)
    }

    /// The builtin names the host omits.
    pub fn absent_builtins(&self) -> &[&'static str] {
        &self.absent
    }

    /// This environment for a session whose aliases handle `names` (sorted
    /// or not; what the run's alias frame holds when the turn starts).
    pub fn with_aliases(mut self, mut names: Vec<String>) -> TypeEnv {
        names.sort();
        names.dedup();
        self.aliases = Arc::new(names);
        self
    }

    /// The names the session's aliases handle.
    pub fn aliases(&self) -> &[String] {
        &self.aliases
    }

    /// Whether a session alias handles `name`.
    pub fn is_alias(&self, name: &str) -> bool {
        self.aliases
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
    }

    /// Binds one name (used by hosts that define names themselves).
    pub fn insert(&mut self, name: impl Into<String>, entry: EnvEntry) {
        Arc::make_mut(&mut self.names).insert(name.into(), entry);
    }

    /// This environment plus every top-level binding of a successful turn.
    pub fn extend_with(&self, checked: &Checked) -> TypeEnv {
        self.extend_with_prefix(checked, usize::MAX)
    }

    /// This environment plus the bindings made by the first `landed` top-level
    /// statements of a turn
    /// (a failed run keeps the bindings made before the failure, §5.6).
    pub fn extend_with_prefix(&self, checked: &Checked, landed: usize) -> TypeEnv {
        let mut out = self.clone();
        let map = Arc::make_mut(&mut out.names);
        for (binding, entry) in checked.bindings.iter().zip(&checked.closed_bindings) {
            if binding.stmt < landed {
                map.insert(binding.name.clone(), entry.clone());
            }
        }
        out
    }
}
