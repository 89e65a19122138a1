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

/// A table keyed by [`NodeId`]: the ids present, sorted, beside their
/// values.
///
/// Memory is proportional to the entries, not to the largest id: a table
/// indexed by id held a slot for every node of the program, so the sparse
/// tables (heads, captures, boundaries) cost as much as the dense ones
/// (tens of megabytes for a 100,000-line program). The checker inserts in
/// nearly increasing id order (a node's entry follows those of the nodes
/// inside it, which have larger ids, so an insertion moves at most the
/// entries of one statement's nested forms); lookups are a binary search.
#[derive(Clone, Debug)]
pub struct NodeMap<T> {
    ids: Vec<NodeId>,
    vals: Vec<T>,
}

impl<T> Default for NodeMap<T> {
    fn default() -> Self {
        NodeMap {
            ids: Vec::new(),
            vals: Vec::new(),
        }
    }
}

impl<T> NodeMap<T> {
    /// Sets the entry for `id`, returning the previous one.
    pub fn insert(&mut self, id: NodeId, value: T) -> Option<T> {
        if self.ids.last().is_none_or(|&last| last < id) {
            self.ids.push(id);
            self.vals.push(value);
            return None;
        }
        match self.ids.binary_search(&id) {
            Ok(i) => self
                .vals
                .get_mut(i)
                .map(|slot| std::mem::replace(slot, value)),
            Err(i) => {
                self.ids.insert(i, id);
                self.vals.insert(i, value);
                None
            }
        }
    }

    pub fn get(&self, id: NodeId) -> Option<&T> {
        let i = self.ids.binary_search(&id).ok()?;
        self.vals.get(i)
    }

    pub fn contains_key(&self, id: NodeId) -> bool {
        self.ids.binary_search(&id).is_ok()
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The entries in id order.
    pub fn iter(&self) -> impl Iterator<Item = (NodeId, &T)> {
        self.ids.iter().copied().zip(&self.vals)
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.vals.iter()
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
    pub names: rustc_hash::FxHashMap<Span, NameRes>,
    /// The type of every name a pattern or block parameter binds, keyed by
    /// the span of the name where it is bound (the `binder` of
    /// [`NameRes::Local`] and [`NameRes::Forward`]). A `let`'s entry is the
    /// type before generalisation; read it through [`Checked::store`].
    /// Editors use it (hover on a binder); lowering does not.
    pub binders: rustc_hash::FxHashMap<Span, Ty>,
    /// Let patterns whose right-hand side grade was still a variable and
    /// defaulted to p (the only defaulting point, §17.5).
    pub grade_defaults: Vec<NodeId>,
    /// The boundary calls (a decoder, `use`) whose result the program uses
    /// at a type it decided, by stage id: the door and the frozen type the
    /// value is admitted against before the program sees it (§7.3, §17.3).
    pub boundaries: NodeMap<Boundary>,
}

/// A boundary call's admission site (see [`crate::admit`]).
#[derive(Clone, Debug)]
pub struct Boundary {
    /// The builtin's name (`from-json`, `use`), for messages.
    pub door: &'static str,
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
    /// The same bindings with closed schemes, for [`TypeEnv::extend_with`].
    pub(crate) closed_bindings: Vec<(String, EnvEntry, usize)>,
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
        self.closed_bindings.get(i).map(|(_, e, _)| e)
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
