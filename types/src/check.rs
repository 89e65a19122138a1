//! The checker's entry points and its result.
//!
//! [`check_program`] types a whole parsed unit against the session's
//! [`TypeEnv`] and returns a [`Checked`]: the diagnostics, the top-level
//! bindings with their schemes, and the elaboration side tables (keyed by
//! [`NodeId`]) that lowering to IR reads. The checker never mutates the tree.

use ral_syntax::ast::{NodeId, Program};
use ral_syntax::{Diagnostic, Parsed, SourceId, Span};

use crate::builtins::BuiltinId;
use crate::env::{EnvEntry, TypeEnv};
use crate::ty::{Scheme, Ty, TyStore};

/// What the host tells the checker about the unit.
#[derive(Clone, Debug, Default)]
pub struct CheckOptions {
    /// The source is a script file, so `$SCRIPT` is bound (to a `String`).
    pub is_script: bool,
}

/// How a command head resolved (spec §6.3), recorded per stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadRes {
    /// A lexical or session binding of this name (forced or applied).
    Binding(String),
    /// A builtin or prelude row of the table, applied as a value.
    Builtin(BuiltinId),
    /// A base handler (`echo`, `detach`): receives the rendered argument list.
    BaseHandler(BuiltinId),
    /// An external or bundled command by name (also every `^name`).
    External(String),
    /// A path head (`./p`, `/usr/bin/x`, `~/bin/t`): run that file.
    Path(String),
    /// An explicit value head (`$f`, `!{…}`, a literal): returned or applied.
    Value,
}

/// Where a capture (`F_w Unit` → `F_p String`, §17.5) was inserted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaptureSite {
    /// The whole right-hand side of the `let` whose *pattern* has this id.
    LetRhs,
    /// A forced atom `!{…}` / `!$b` in value position (the `Force` atom's id).
    Force,
    /// A branch arm (the arm atom's id; for `?`, the id of the alternative's
    /// final stage) whose command output becomes the join's value.
    JoinArm,
    /// A block argument of grade w passed where a value-returning function is
    /// expected (the argument atom's id): its innermost body is captured.
    BlockArg,
}

/// A map kept as its keys, sorted, beside their values: no hashing and no
/// empty buckets, for keys that arrive in nearly increasing order (node ids
/// in the order the checker visits them, type handles as the store hands
/// them out). An insertion past the last key is a push; an earlier one
/// searches back from the end in doubling steps (so its probes stay in the
/// last few cache lines) and moves the entries after it. Lookups are a
/// binary search.
#[derive(Clone, Debug)]
pub(crate) struct SortedMap<K, V> {
    keys: Vec<K>,
    vals: Vec<V>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap {
            keys: Vec::new(),
            vals: Vec::new(),
        }
    }
}

impl<K: Ord + Copy, V> SortedMap<K, V> {
    /// Room for `n` more entries.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
        self.vals.reserve(n);
    }

    /// Where `key` is (`Ok`) or would go (`Err`).
    fn position(&self, key: K) -> Result<usize, usize> {
        let len = self.keys.len();
        if self.keys.last().is_none_or(|&last| last < key) {
            return Err(len);
        }
        let mut step = 1;
        let mut lo = len.saturating_sub(1);
        while lo > 0 && self.keys.get(lo).is_some_and(|&k| k > key) {
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        let window = self.keys.get(lo..).unwrap_or_default();
        window
            .binary_search(&key)
            .map(|i| i + lo)
            .map_err(|i| i + lo)
    }

    /// Sets the entry for `key`, returning the previous one.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.position(key) {
            Ok(i) => self
                .vals
                .get_mut(i)
                .map(|slot| std::mem::replace(slot, value)),
            Err(i) => {
                self.keys.insert(i, key);
                self.vals.insert(i, value);
                None
            }
        }
    }

    /// Sets the entry for `key` (returning the previous one) when that moves
    /// at most `max_moved` entries; otherwise hands `value` back.
    pub(crate) fn insert_near_end(
        &mut self,
        key: K,
        value: V,
        max_moved: usize,
    ) -> Result<Option<V>, V> {
        match self.position(key) {
            Ok(i) => Ok(self
                .vals
                .get_mut(i)
                .map(|slot| std::mem::replace(slot, value))),
            Err(i) if self.keys.len() - i <= max_moved => {
                self.keys.insert(i, key);
                self.vals.insert(i, value);
                Ok(None)
            }
            Err(_) => Err(value),
        }
    }

    /// Sets the entry for `key` unless it has one, when that moves at most
    /// `max_moved` entries; otherwise hands `value` back (for a caller that
    /// keeps such stragglers elsewhere, so no insertion costs more than a
    /// short move).
    pub(crate) fn insert_if_absent_near_end(
        &mut self,
        key: K,
        value: V,
        max_moved: usize,
    ) -> Result<(), V> {
        match self.position(key) {
            Ok(_) => Ok(()),
            Err(i) if self.keys.len() - i <= max_moved => {
                self.keys.insert(i, key);
                self.vals.insert(i, value);
                Ok(())
            }
            Err(_) => Err(value),
        }
    }

    pub(crate) fn get(&self, key: K) -> Option<&V> {
        let i = self.keys.binary_search(&key).ok()?;
        self.vals.get(i)
    }

    pub(crate) fn remove(&mut self, key: K) -> Option<V> {
        let i = self.keys.binary_search(&key).ok()?;
        self.keys.remove(i);
        Some(self.vals.remove(i))
    }

    pub(crate) fn contains_key(&self, key: K) -> bool {
        self.keys.binary_search(&key).is_ok()
    }

    pub(crate) fn len(&self) -> usize {
        self.keys.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.keys.iter().copied().zip(&self.vals)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.vals.iter()
    }
}

/// A [`Span`] ordered by where it starts, then where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SpanKey(Span);

impl PartialOrd for SpanKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for SpanKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.0.start, self.0.end).cmp(&(other.0.start, other.0.end))
    }
}

/// A table keyed by a [`Span`] of the source (a name's use or its binder).
///
/// The checker records these in nearly source order, so they are kept
/// sorted (an insertion is a push, or a short move at the end); the rare
/// entry recorded far out of order goes to a hash map beside the list. A
/// hash map alone scattered a large program's entries over tables of
/// megabytes, and its inserts were a sixth of the checking time of 100,000
/// lines. Iteration visits every entry once, in no promised order.
#[derive(Clone, Debug)]
pub struct SpanMap<V> {
    recent: SortedMap<SpanKey, V>,
    far: rustc_hash::FxHashMap<Span, V>,
}

impl<V> Default for SpanMap<V> {
    fn default() -> Self {
        SpanMap {
            recent: SortedMap::default(),
            far: rustc_hash::FxHashMap::default(),
        }
    }
}

impl<V> SpanMap<V> {
    /// The most entries an insertion into the sorted list may move.
    const MAX_MOVED: usize = 64;

    /// Sets the entry for `span`, returning the previous one.
    pub fn insert(&mut self, span: Span, value: V) -> Option<V> {
        if let Some(slot) = self.far.get_mut(&span) {
            return Some(std::mem::replace(slot, value));
        }
        match self
            .recent
            .insert_near_end(SpanKey(span), value, Self::MAX_MOVED)
        {
            Ok(old) => old,
            Err(value) => self.far.insert(span, value),
        }
    }

    pub fn get(&self, span: &Span) -> Option<&V> {
        self.recent
            .get(SpanKey(*span))
            .or_else(|| self.far.get(span))
    }

    pub fn contains_key(&self, span: &Span) -> bool {
        self.get(span).is_some()
    }

    /// Removes the entry for `span`, returning it.
    pub fn remove(&mut self, span: &Span) -> Option<V> {
        self.recent
            .remove(SpanKey(*span))
            .or_else(|| self.far.remove(span))
    }

    pub fn len(&self) -> usize {
        self.recent.len() + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry once.
    pub fn iter(&self) -> impl Iterator<Item = (&Span, &V)> {
        self.recent
            .keys
            .iter()
            .map(|k| &k.0)
            .zip(&self.recent.vals)
            .chain(&self.far)
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.recent.vals.iter().chain(self.far.values())
    }
}

impl<V> std::ops::Index<&Span> for SpanMap<V> {
    type Output = V;

    /// The entry for `span`; panics when there is none, as a map's index does.
    #[allow(clippy::panic)]
    fn index(&self, span: &Span) -> &V {
        match self.get(span) {
            Some(v) => v,
            None => panic!("no entry for span {}..{}", span.start, span.end),
        }
    }
}

/// A table keyed by [`NodeId`], in id order.
///
/// Memory is proportional to the entries, not to the largest id: a table
/// indexed by id held a slot for every node of the program, so the sparse
/// tables (heads, captures, boundaries) cost as much as the dense ones
/// (tens of megabytes for a 100,000-line program). The checker inserts in
/// nearly increasing id order (a node's entry follows those of the nodes
/// inside it, which have larger ids, so an insertion moves at most the
/// entries of one statement's nested forms).
#[derive(Clone, Debug)]
pub struct NodeMap<T>(SortedMap<NodeId, T>);

impl<T> Default for NodeMap<T> {
    fn default() -> Self {
        NodeMap(SortedMap::default())
    }
}

impl<T> NodeMap<T> {
    /// Room for `n` more entries.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.0.reserve(n);
    }

    /// Sets the entry for `id`, returning the previous one.
    pub fn insert(&mut self, id: NodeId, value: T) -> Option<T> {
        self.0.insert(id, value)
    }

    pub fn get(&self, id: NodeId) -> Option<&T> {
        self.0.get(id)
    }

    pub fn contains_key(&self, id: NodeId) -> bool {
        self.0.contains_key(id)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.len() == 0
    }

    /// The entries in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &T)> {
        self.0.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.0.values()
    }
}

/// How a `$name` or a bare command head resolved (spec §5.1, §5.7, §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRes {
    /// A binding of this unit; `binder` is the span of the name in the
    /// pattern or parameter that bound it (`None` for a synthetic binding).
    Local { binder: Option<Span> },
    /// A block bound later in an enclosing statement list, or a named block's
    /// own name inside its right-hand side (§5.7); `binder` is that
    /// definition's name.
    Forward { binder: Span },
    /// A binding an earlier turn left in the session.
    Session,
    /// A builtin or prelude function (as a value).
    Builtin(BuiltinId),
    /// `$SCRIPT` in a script file.
    Script,
}

/// The elaboration side tables the IR lowering reads.
#[derive(Clone, Debug, Default)]
pub struct Elaboration {
    /// The computation type of every stage (after redirects), by stage id.
    pub stage_types: NodeMap<Ty>,
    /// The value type of every atom the checker typed, by atom id.
    pub atom_types: NodeMap<Ty>,
    /// Captures, keyed as [`CaptureSite`] explains.
    pub captures: NodeMap<CaptureSite>,
    /// How each command stage's head resolved, by stage id.
    pub heads: NodeMap<HeadRes>,
    /// How each name use resolved, keyed by the span of the use (the `$name`
    /// or the bare head): lowering reads this instead of repeating the rules.
    pub names: SpanMap<NameRes>,
    /// The type of every name a pattern or block parameter binds, keyed by
    /// the span of the name where it is bound (the `binder` of
    /// [`NameRes::Local`] and [`NameRes::Forward`]). A `let`'s entry is the
    /// type before generalisation; read it through [`Checked::store`].
    /// Editors use it (hover on a binder); lowering does not.
    pub binders: SpanMap<Ty>,
    /// Let patterns whose right-hand side grade was still a variable and
    /// defaulted to p (the only defaulting point, §17.5).
    pub grade_defaults: Vec<NodeId>,
    /// The boundary doors (a decoder, `use`) whose result the program uses
    /// at a type it decided: the door and the frozen type the value is
    /// admitted against before the program sees it (§7.3, §17.3). Keyed by
    /// the stage of a call written with the door as its head, and by the
    /// atom of a `$door` that reaches the door as a value (bound, passed,
    /// stored or partially applied: every call of that value admits).
    pub boundaries: NodeMap<Boundary>,
}

/// A boundary door's admission site (see [`crate::admit`]).
#[derive(Clone, Debug)]
pub struct Boundary {
    /// The builtin's name (`from-json`, `use`), for messages.
    pub door: &'static str,
    /// How many arguments the door takes before it returns its value (0
    /// for `from-json`, 1 for `from-json-at` and `use`).
    pub arity: usize,
    pub site: crate::admit::AdmitSite,
}

/// One top-level binding and its scheme (may share monomorphic parts with
/// [`Checked::store`]; print with `print_scheme(&s, Some(&checked.store))`).
#[derive(Clone, Debug)]
pub struct TopBinding {
    pub name: String,
    pub scheme: Scheme,
    /// The index of the top-level statement that made it.
    pub stmt: usize,
    /// The span of the bound name.
    pub span: ral_syntax::Span,
}

/// The result of checking one unit.
#[derive(Debug)]
pub struct Checked {
    /// Type-phase diagnostics, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// Top-level bindings in statement order.
    pub bindings: Vec<TopBinding>,
    /// The closed entry of each binding of `bindings` (same order), for
    /// [`TypeEnv::extend_with`].
    pub(crate) closed_bindings: Vec<EnvEntry>,
    /// The side tables.
    pub elab: Elaboration,
    /// The store every `Ty` above lives in.
    pub store: TyStore,
    /// The computation type of the unit as a whole: its final statement's
    /// (`Returns Unit` when that is a `let` or there is none). A host that
    /// holds a file to a contract on its result (the rc file, a plugin
    /// manifest, spec §15.3, §15.5) reads the row from here before the
    /// file runs.
    pub result: Ty,
}

impl Checked {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The closed session entry of the top-level binding of `name` whose
    /// binder is at `span` (what the session environment gets when that
    /// binding lands).
    pub fn closed_entry(&self, name: &str, span: ral_syntax::Span) -> Option<&EnvEntry> {
        let i = self
            .bindings
            .iter()
            .position(|b| b.name == name && b.span == span)?;
        self.closed_bindings.get(i)
    }

    /// The printed scheme of the last top-level binding of `name`.
    pub fn binding_type(&self, name: &str) -> Option<String> {
        self.bindings
            .iter()
            .rev()
            .find(|b| b.name == name)
            .map(|b| crate::print::print_scheme(&b.scheme, Some(&self.store)))
    }
}

/// Checks a parsed unit against the session environment.
pub fn check_program(
    program: &Program,
    source: SourceId,
    env: &TypeEnv,
    opts: &CheckOptions,
) -> Checked {
    ral_syntax::with_stack(|| crate::infer::run(program, source, env, opts))
}

/// Parses and, when parsing found no error, checks `src` (for `ralc --check`).
/// `name` ending in `.ral` or containing `/` is taken to be a script file.
pub fn check_source(src: &str, name: &str, env: &TypeEnv) -> (Parsed, Option<Checked>) {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    if parsed.has_errors() {
        return (parsed, None);
    }
    let opts = CheckOptions {
        is_script: name.ends_with(".ral") || name.contains('/'),
    };
    let checked = check_program(&parsed.program, source, env, &opts);
    (parsed, Some(checked))
}
