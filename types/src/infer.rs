//! Inference: name resolution, HM with levels, the grade split, captures,
//! joins, pipelines and recursive block groups (spec §5, §6, §8, §17.3–17.7).
//!
//! Statements, chains, pipelines and stages have *computation* types; atoms
//! have *value* types. A block literal `{|p q| body}` is `U (A -> B -> C)`.
//!
//! Known gaps (typed permissively, never a panic): handler arms know the
//! arms of the `within` forms that lexically enclose them and the aliases
//! of the session and of the unit, not those a caller's `within` or an
//! `alias` with a computed name installs at run time (the VM checks those
//! when they are installed); options that are not a record literal,
//! and `grant`'s
//! `exec`/`fs`/`editor`/`shell`, are typed as ordinary values; the block-argument capture
//! of §17.5(2) is applied to one arrow level only; a block that uses a later
//! block definition (§5.7) is monomorphic in it.

use rustc_hash::FxHashMap as HashMap;

use ral_syntax::ast::{
    Arg, Atom, BinOp, Block, Case, Chain, Command, Entry, Expr, ExprKind, Head, HeadClass, If, Key,
    ListItem, NodeId, Pattern, PatternKind, Pipeline, Primary, Program, Redirect, RedirectKind,
    ScopeForm, ScopeKind, Stage, StageKind, Stmt, StrLit, StrPart, UnOp,
};
use ral_syntax::{Code, Diagnostic, SourceId, Span};

use crate::builtins::{builtin_table, BuiltinKind};
use crate::check::{
    CaptureSite, CheckOptions, Checked, Elaboration, HeadRes, NameRes, SortedMap, TopBinding,
};
use crate::env::{EnvEntry, TypeEnv};
use crate::print::TyPrinter;
use crate::ty::{
    Alphabet, Con, HeadSet, Kind, Label, Provenance, Scheme, SchemeBuilder, SchemeNode, Sort, Ty,
    TyStore, TyVar, TyView, UnifyError,
};

/// Where constructor nodes came from, by handle. Provenance is recorded for
/// the node just made, so nearly every insertion is a push onto a sorted
/// list (no hashing, and the entries lie in the order the nodes were made);
/// the rare record for a node made long before goes to a hash map instead,
/// so no insertion moves more than a few entries.
#[derive(Default)]
struct ProvTable {
    recent: SortedMap<Ty, Span>,
    far: HashMap<Ty, Span>,
}

impl ProvTable {
    /// The most entries an insertion into `recent` may move.
    const MAX_MOVED: usize = 64;

    /// Records `span` for the node `t` just made.
    fn insert(&mut self, t: Ty, span: Span) {
        if let Err(span) = self
            .recent
            .insert_if_absent_near_end(t, span, Self::MAX_MOVED)
        {
            self.far.insert(t, span);
        }
    }

    /// Records `span` for `t` unless it has a provenance.
    fn insert_if_absent(&mut self, t: Ty, span: Span) {
        if self.far.contains_key(&t) {
            return;
        }
        if let Err(span) = self
            .recent
            .insert_if_absent_near_end(t, span, Self::MAX_MOVED)
        {
            self.far.insert(t, span);
        }
    }

    fn get(&self, t: Ty) -> Option<&Span> {
        self.recent.get(t).or_else(|| self.far.get(&t))
    }

    fn contains_key(&self, t: Ty) -> bool {
        self.get(t).is_some()
    }
}

/// A forward slot: the block's type variable, the level of the statement
/// list holding it, and the span of its binder.
type ForwardSlot = (Ty, Option<u32>, Span);

/// A name in scope: one entry of the binding stack.
#[derive(Clone, Debug)]
struct Bound<'a> {
    scheme: Scheme,
    span: Option<Span>,
    name: &'a str,
    /// The entry this one hides (its index in the stack), if any.
    shadows: Option<u32>,
}

struct Infer<'a> {
    store: TyStore,
    source: SourceId,
    env: &'a TypeEnv,
    opts: &'a CheckOptions,
    /// name → its innermost entry in `bound`. Names borrow the tree, so
    /// binding one allocates nothing of its own.
    scope: HashMap<&'a str, u32>,
    /// Every binding in scope, innermost last; each entry links to the one
    /// of the same name it hides.
    bound: Vec<Bound<'a>>,
    /// The length of `bound` when each open scope began.
    frames: Vec<usize>,
    /// Forward slots for named blocks later in an enclosing statement list.
    /// Each slot carries the level of the statement list holding it (`None`
    /// for a block's own self-reference, which stays generalisable).
    forward: HashMap<&'a str, Vec<ForwardSlot>>,
    /// Depth of named-block right-hand sides being checked.
    in_block_rhs: u32,
    /// Session entries instantiated this turn for weak bindings.
    weak_cache: HashMap<String, Ty>,
    diags: Vec<Diagnostic>,
    elab: Elaboration,
    /// Where a constructor node came from: the term that made it (literal,
    /// list, record, …), cited as the conflicting use in a mismatch.
    prov: ProvTable,
    /// The spans kind constraints came from, indexed by [`Provenance`].
    origins: Vec<Span>,
    /// Computed indexes whose list/map choice is deferred (§4.7).
    pending_ix: Vec<PendingIndex>,
    /// Written-key reads `$v[l]` on a variable, decided when the `let` that
    /// would generalise the variable ends (§4.7, §17.3).
    pending_labels: Vec<PendingLabel>,
    /// The handler arms the enclosing `within` forms install, innermost
    /// last: a head they name is of class `arm` in their bodies (§17.3).
    arms: Vec<ArmScope>,
    /// The names an alias handles here: the session's when the unit
    /// started, plus those `alias NAME …` installs earlier in the unit,
    /// less those `unalias NAME` removes (in source order, as the run
    /// meets them).
    aliases: rustc_hash::FxHashSet<String>,
    /// Boundary doors: the stage or atom, the door and the door's
    /// instantiated computation type (its arrows, then `Returns` of the
    /// result), frozen into admission sites once the unit is solved.
    boundary_calls: Vec<(NodeId, &'static str, Ty)>,
    /// Uses that fixed a weak position to a constructor with no provenance
    /// of its own (a builtin's parameter type): the line an admission
    /// refusal names.
    boundary_uses: HashMap<Ty, Span>,
}

/// The arms one `within` installs for its body: named arms with their
/// types, and whether it has a catch-all.
#[derive(Debug, Default)]
struct ArmScope {
    named: Vec<(String, Ty)>,
    catch_all: bool,
}

/// A label read on a value-type variable: a map read if the variable becomes
/// a map or its kind admits `Map` and not `Record`, else a record field read.
#[derive(Clone, Copy, Debug)]
struct PendingLabel {
    container: Ty,
    label: Label,
    elem: Ty,
    span: Span,
}

/// A computed index `$c[$k]` not yet known to be a list or a map read.
#[derive(Clone, Copy, Debug)]
struct PendingIndex {
    container: Ty,
    key: Ty,
    elem: Ty,
    span: Span,
    key_span: Span,
}

/// Checks a unit (called on a grown stack by [`crate::check::check_program`]).
pub(crate) fn run(
    program: &Program,
    source: SourceId,
    env: &TypeEnv,
    opts: &CheckOptions,
) -> Checked {
    // Room for the store and the big tables from the size of the source
    // (about what a dense program needs): growing them by doubling copied
    // each one again and again, and at 100,000 lines those copies were a
    // quarter of the checker's cache misses. What a sparser program does not
    // use is never touched, so it costs address space, not memory.
    let bytes = program.span.end.saturating_sub(program.span.start) as usize;
    let mut elab = Elaboration::default();
    elab.atom_types.reserve(bytes / 6);
    elab.stage_types.reserve(bytes / 16);
    let mut prov = ProvTable::default();
    prov.recent.reserve(bytes / 12);
    let mut cx = Infer {
        store: TyStore::with_capacity(bytes / 3, bytes / 12),
        source,
        env,
        opts,
        scope: HashMap::default(),
        bound: Vec::new(),
        frames: vec![0],
        forward: HashMap::default(),
        in_block_rhs: 0,
        weak_cache: HashMap::default(),
        diags: Vec::new(),
        elab,
        prov,
        origins: Vec::new(),
        pending_ix: Vec::new(),
        pending_labels: Vec::new(),
        arms: Vec::new(),
        aliases: env.aliases().iter().cloned().collect(),
        boundary_calls: Vec::new(),
        boundary_uses: HashMap::default(),
    };
    // A top-level statement binds one name, as a rule: room for that many
    // bindings up front spares the two binding lists their growth copies.
    let top = program.stmts.len();
    cx.bound.reserve(top);
    cx.scope.reserve(top);
    let mut bindings = Vec::with_capacity(top);
    let result = cx.stmts(&program.stmts, Some(&mut bindings));
    cx.settle_labels(0, 0);
    cx.finish_indexes();
    cx.freeze_boundaries();
    let mut closed = Vec::with_capacity(bindings.len());
    for b in &bindings {
        let (scheme, weak) = close_scheme(&cx.store, &b.scheme);
        closed.push(EnvEntry { scheme, weak });
    }
    Checked {
        diagnostics: cx.diags,
        bindings,
        closed_bindings: closed,
        elab: cx.elab,
        store: cx.store,
        result,
    }
}

/// What a comp type's result currently is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GradeIs {
    Pure,
    Write,
    Unknown,
}

/// Where a unification happens, to word its diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Plain,
    Interpolation,
    Equality,
}

impl<'a> Infer<'a> {
    // ---- diagnostics --------------------------------------------------------

    fn diag(
        &mut self,
        code: Code,
        title: impl Into<String>,
        span: Span,
        label: impl Into<String>,
    ) -> usize {
        self.diags
            .push(Diagnostic::new(code, self.source, title, span, label));
        self.diags.len() - 1
    }

    fn help(&mut self, i: usize, help: impl Into<String>) {
        if let Some(d) = self.diags.get_mut(i) {
            d.help = Some(help.into());
        }
    }

    fn note(&mut self, i: usize, note: impl Into<String>) {
        if let Some(d) = self.diags.get_mut(i) {
            d.notes.push(note.into());
        }
    }

    fn secondary(&mut self, i: usize, span: Span, text: impl Into<String>) {
        if let Some(d) = self.diags.get_mut(i) {
            d.secondary.push(ral_syntax::Label::new(span, text));
        }
    }

    /// A fresh, unshared node for `con`, made by the term at `span`.
    fn lit(&mut self, con: Con<Ty>, span: Span) -> Ty {
        let t = self.store.mk_unshared(con);
        self.prov.insert(t, span);
        t
    }

    /// Records that the constructor `t` currently is was made at `span`,
    /// unless it already has a provenance (or is a shared node).
    fn mark(&mut self, t: Ty, span: Span) {
        let t = self.store.find(t);
        if self.store.is_shared(t) {
            return;
        }
        if let TyView::Con(_) = self.store.view(t) {
            self.prov.insert_if_absent(t, span);
        }
    }

    /// A provenance token for a kind constraint made at `span`.
    fn origin(&mut self, span: Span) -> Provenance {
        self.origins.push(span);
        Provenance((self.origins.len() - 1) as u32)
    }

    fn origin_span(&self, p: Option<Provenance>) -> Option<Span> {
        p.and_then(|p| self.origins.get(p.0 as usize).copied())
    }

    /// Records `span` as the use that fixed the (weak) position `t` now
    /// is, unless its constructor already has a provenance: what an
    /// admission refusal names as the use (§7.3).
    /// `$door` for a boundary door (`$from-json`, `$use`): the value is a
    /// door too, wherever it goes. Its instance is weak, so every call of
    /// it anywhere in the unit fixes one result type, which is frozen into
    /// the site the value's calls admit against (§7.3: the decoder admits
    /// the value before the program sees it, however it was reached).
    fn note_boundary_value(&mut self, id: NodeId, n: &ral_syntax::ast::Name, t: Ty) {
        let Some(NameRes::Builtin(bid)) = self.elab.names.get(&n.span).cloned() else {
            return;
        };
        let Some(b) = builtin_table().entry(bid) else {
            return;
        };
        if !is_boundary(b) || b.scheme().quantified().is_empty() {
            return;
        }
        let t = self.store.find(t);
        if let TyView::Con(Con::Thunk(comp)) = self.store.view(t) {
            self.boundary_calls.push((id, b.name, comp));
        }
    }

    /// A kinded variable the use left unbound (`length $d` makes the
    /// position `sized`) gets `span` as its origin when it has none, so a
    /// kind refusal names its line too.
    fn note_boundary_use(&mut self, t: Ty, span: Span) {
        let t = self.store.find(t);
        match self.store.view(t) {
            TyView::Con(_) => {
                if !self.prov.contains_key(t) {
                    self.boundary_uses.entry(t).or_insert(span);
                }
            }
            TyView::Var(v, _) => {
                if v.origin.is_none() && v.kind != Kind::ANY {
                    let p = self.origin(span);
                    self.store.note_origin(t, p);
                }
            }
        }
    }

    /// Where the constructor `t` came from, if known.
    fn prov_of(&mut self, t: Ty) -> Option<Span> {
        let t = self.store.find(t);
        self.prov.get(t).copied()
    }

    /// Adds a secondary label at `at` unless it is the primary span.
    fn label_other(&mut self, i: usize, at: Option<Span>, text: impl Into<String>) {
        let Some(at) = at else { return };
        let Some(d) = self.diags.get(i) else { return };
        let p = d.primary.span;
        if at == p || (at.start >= p.start && at.end <= p.end) {
            return;
        }
        if d.secondary.iter().any(|l| l.span == at) {
            return;
        }
        self.secondary(i, at, text);
    }

    fn show(&self, t: Ty) -> String {
        TyPrinter::new(&self.store).ty(t)
    }

    /// Unifies, reporting a failure at `span` (with `what` naming the culprit).
    fn unify_at(&mut self, expected: Ty, found: Ty, span: Span, what: &str) -> bool {
        self.unify_ctx(expected, found, span, what, Ctx::Plain)
    }

    fn unify_ctx(&mut self, expected: Ty, found: Ty, span: Span, what: &str, ctx: Ctx) -> bool {
        let weak = self.store.is_weak(found) || self.store.is_weak(expected);
        match self.store.unify(expected, found) {
            Ok(()) => {
                if weak {
                    self.note_boundary_use(expected, span);
                }
                true
            }
            Err(e) => {
                self.report(e, span, what, ctx);
                false
            }
        }
    }

    fn report(&mut self, e: UnifyError, span: Span, what: &str, ctx: Ctx) {
        match e {
            UnifyError::Mismatch { expected, found } => {
                let (x, f) = {
                    let mut p = TyPrinter::new(&self.store);
                    (p.ty(expected), p.ty(found))
                };
                let i = self.diag(
                    Code::TypeMismatch,
                    format!("{what} has type `{f}` where `{x}` is expected"),
                    span,
                    format!("this is `{f}`"),
                );
                let xp = self.prov_of(expected);
                let fp = self.prov_of(found);
                self.label_other(i, xp, format!("`{x}` comes from here"));
                self.label_other(i, fp, format!("`{f}` comes from here"));
                if x == "Command" && f.starts_with("Returns") {
                    self.help(i, "a command is expected here; write the value's text with `echo`, or bind it with `let`");
                } else if f == "Command" && x.starts_with("Returns") {
                    self.help(i, "a value is expected here; bind the command's output first: `let out = …`, then use `$out`");
                } else if ctx == Ctx::Equality {
                    self.note(i, "equality compares two values of one type; convert one side first (`int`, `float`, `str`)");
                }
            }
            UnifyError::MissingLabel {
                label,
                alphabet,
                field,
                row,
                ..
            } => {
                let f = self.show(field);
                let (code, title, help) = match alphabet {
                    Alphabet::Field => (
                        Code::MissingField,
                        format!("{what} has no field `{label}` where one is needed"),
                        format!("add `{label}: …` to the record, or read a field it has"),
                    ),
                    Alphabet::Tag => (
                        Code::MissingField,
                        format!("tag `{label}` is not one {what} can carry"),
                        format!("remove the arm or value for `{label}`, or add it where the variant is made"),
                    ),
                };
                let i = self.diag(
                    code,
                    title,
                    span,
                    format!("`{label}` has type `{f}` on the other side"),
                );
                let rp = self.prov_of(row);
                self.label_other(i, rp, "this has no such label");
                self.help(i, help);
            }
            UnifyError::KindViolation {
                kind,
                found,
                origin,
                ..
            } => {
                let f = self.show(found);
                let op = self.origin_span(origin);
                let fp = self.prov_of(found);
                if ctx == Ctx::Interpolation {
                    let i = self.diag(
                        Code::InterpolationKind,
                        format!("a `{f}` cannot be interpolated into a string"),
                        span,
                        format!("this is `{f}`"),
                    );
                    self.label_other(i, fp, format!("`{f}` comes from here"));
                    self.help(i, "interpolate a Bool, Int, Float or String; convert other data with `str` first: `!{str $x}`");
                } else {
                    let i = self.diag(
                        Code::KindMismatch,
                        format!("{what} is `{f}`, which is not {kind}"),
                        span,
                        format!("this must be {kind}, but is `{f}`"),
                    );
                    self.label_other(i, op, format!("this needs {kind}"));
                    self.label_other(i, fp, format!("`{f}` comes from here"));
                    self.help(i, "convert the value first (`int`, `float`, `str`), or use an operator that takes this type");
                }
            }
            UnifyError::KindConflict {
                expected,
                found,
                expected_origin,
                found_origin,
            } => {
                let i = self.diag(
                    Code::KindMismatch,
                    format!("{what} would need to be both {expected} and {found}"),
                    span,
                    "no type is both",
                );
                let (eo, fo) = (
                    self.origin_span(expected_origin),
                    self.origin_span(found_origin),
                );
                self.label_other(i, eo, format!("this needs {expected}"));
                self.label_other(i, fo, format!("this needs {found}"));
                self.help(i, "use the value at one kind of type only");
            }
            UnifyError::NotData { found, origin } => {
                let f = self.show(found);
                let i = self.diag(
                    Code::EqualityOnFunction,
                    format!("{what} contains `{f}`, which is not data"),
                    span,
                    "functions and handles cannot be compared, printed or encoded",
                );
                let (op, fp) = (self.origin_span(origin), self.prov_of(found));
                self.label_other(i, op, "this needs data");
                self.label_other(i, fp, format!("`{f}` comes from here"));
                self.help(
                    i,
                    "compare or encode the data the function produces instead",
                );
            }
            UnifyError::Infinite { var, ty } => {
                let (v, t) = {
                    let mut p = TyPrinter::new(&self.store);
                    (p.ty(var), p.ty(ty))
                };
                let i = self.diag(
                    Code::InfiniteType,
                    format!("{what} would need an infinite type `{v} = {t}`"),
                    span,
                    "this use makes the type contain itself",
                );
                self.note(i, "a recursive type must pass through a list, map, record field or variant payload");
            }
            UnifyError::SortMismatch { expected, found } => {
                let i = self.diag(
                    Code::TypeMismatch,
                    format!("{what} is a {found} where a {expected} is expected"),
                    span,
                    "here",
                );
                self.note(i, "a value and a computation were confused");
            }
        }
    }

    // ---- scopes --------------------------------------------------------------

    fn push_frame(&mut self) {
        self.frames.push(self.bound.len());
    }

    fn pop_frame(&mut self) {
        let Some(mark) = self.frames.pop() else {
            return;
        };
        while self.bound.len() > mark {
            let Some(b) = self.bound.pop() else { break };
            match b.shadows {
                Some(i) => {
                    self.scope.insert(b.name, i);
                }
                None => {
                    self.scope.remove(b.name);
                }
            }
        }
    }

    fn bind(&mut self, name: &'a str, scheme: Scheme, span: Option<Span>) {
        let i = self.bound.len() as u32;
        let shadows = self.scope.insert(name, i);
        self.bound.push(Bound {
            scheme,
            span,
            name,
            shadows,
        });
    }

    fn local(&self, name: &str) -> Option<&Bound<'a>> {
        let &i = self.scope.get(name)?;
        self.bound.get(i as usize)
    }

    /// A name's type if it is a binding (local, forward slot or session).
    /// A name's type if it is a binding (local, forward slot or session),
    /// with how it resolved (recorded for lowering, so the IR never repeats
    /// the lookup rules).
    fn lookup_binding(&mut self, name: &str) -> Option<(Ty, NameRes)> {
        // Field borrows, not `self.local`, so the scheme is read in place
        // rather than cloned for every use of a name.
        if let Some(b) = self
            .scope
            .get(name)
            .and_then(|&i| self.bound.get(i as usize))
        {
            let res = NameRes::Local { binder: b.span };
            return Some((self.store.instantiate(&b.scheme), res));
        }
        // A session binding precedes every definition of this unit, so it is
        // the nearest preceding one (§5.7); forward slots come after it.
        if let Some(e) = self.env.get(name) {
            if e.weak {
                if let Some(t) = self.weak_cache.get(name) {
                    return Some((*t, NameRes::Session));
                }
                let t = self.store.instantiate(&e.scheme);
                self.store.make_weak(t);
                self.weak_cache.insert(name.to_owned(), t);
                return Some((t, NameRes::Session));
            }
            return Some((self.store.instantiate(&e.scheme), NameRes::Session));
        }
        // Only with no preceding definition: the first later block definition
        // in an enclosing statement list (§5.7).
        if self.in_block_rhs > 0 {
            if let Some((t, level, binder)) = self.forward.get(name).and_then(|v| v.last()).copied()
            {
                // A block using a later definition is not generalised over it
                // before that definition fixes it: the slot drops to the level
                // of the statement list that holds both.
                if let Some(level) = level {
                    self.store.lower_to(t, level);
                }
                return Some((t, NameRes::Forward { binder }));
            }
        }
        None
    }

    fn suggest(&self, name: &str) -> Option<String> {
        let mut best: Option<(usize, &str)> = None;
        let limit = (name.len() / 3).max(1);
        let locals = self.scope.keys().copied();
        let builtins = builtin_table()
            .iter()
            .filter(|b| b.kind != BuiltinKind::BaseHandler && !self.env.is_absent(b.name))
            .map(|b| b.name);
        for cand in locals.chain(self.env.names()).chain(builtins) {
            if cand == name {
                continue;
            }
            let d = edit_distance(name, cand);
            if d <= limit && best.is_none_or(|(bd, bn)| d < bd || (d == bd && cand < bn)) {
                best = Some((d, cand));
            }
        }
        best.map(|(_, n)| n.to_owned())
    }

    /// The builtin-table row `name`, unless this host omits it (§11.5).
    fn builtin(&self, name: &str) -> Option<(&'static crate::builtins::Builtin, crate::BuiltinId)> {
        let table = builtin_table();
        match (table.get(name), table.id(name)) {
            (Some(b), Some(id)) if !self.env.is_absent(name) => Some((b, id)),
            _ => None,
        }
    }

    /// `$name` in value position.
    fn var(&mut self, name: &str, span: Span) -> Ty {
        if name == "SCRIPT" && self.local(name).is_none() {
            if self.opts.is_script {
                self.elab.names.insert(span, NameRes::Script);
                return self.store.string();
            }
            let i = self.diag(
                Code::ScriptOutsideFile,
                "`$SCRIPT` is read outside a script file",
                span,
                "there is no script path here",
            );
            self.help(
                i,
                "pass the path as an argument instead, or run the program from a file",
            );
            return self.store.error();
        }
        if let Some((t, res)) = self.lookup_binding(name) {
            self.elab.names.insert(span, res);
            return t;
        }
        if let Some((b, id)) = self.builtin(name) {
            if b.kind == BuiltinKind::BaseHandler {
                let i = self.diag(
                    Code::BaseHandlerValue,
                    format!("`${name}` reads a base handler as a value"),
                    span,
                    format!("`{name}` is a command, not a value"),
                );
                self.help(
                    i,
                    format!("wrap it in a block: `{{ |args| {name} ...$args }}`"),
                );
                return self.store.error();
            }
            let c = self.store.instantiate(b.scheme());
            if is_boundary(b) {
                self.store.make_weak(c);
            }
            self.elab.names.insert(span, NameRes::Builtin(id));
            return self.store.thunk(c);
        }
        let i = self.diag(
            Code::UnboundName,
            format!("`${name}` is not bound"),
            span,
            "no binding of this name is in scope",
        );
        match self.suggest(name) {
            Some(s) => self.help(i, format!("did you mean `${s}`?")),
            None => self.help(i, format!("bind it first: `let {name} = …`")),
        }
        self.store.error()
    }

    /// A top-level `let` hiding a prelude function or builtin warns (§5.1).
    fn shadow_warning(diags: &mut Vec<Diagnostic>, source: SourceId, name: &str, span: Span) {
        let Some(b) = builtin_table().get(name) else {
            return;
        };
        let what = match b.kind {
            BuiltinKind::Prelude => "prelude function",
            BuiltinKind::BaseHandler => "base handler",
            BuiltinKind::Builtin | BuiltinKind::Decoder | BuiltinKind::Boundary => "builtin",
        };
        let mut d = Diagnostic::new(
            Code::PreludeShadow,
            source,
            format!("`{name}` hides the {what} of that name"),
            span,
            format!("later uses of `{name}` see this binding"),
        );
        d.help = Some(format!(
            "rename the binding if hiding `{name}` is not meant"
        ));
        diags.push(d);
    }

    // ---- statements ----------------------------------------------------------

    /// Types a statement list; returns the computation type of the last
    /// statement (`Returns Unit` when empty or ending in `let`).
    fn stmts(&mut self, stmts: &'a [Stmt], mut top: Option<&mut Vec<TopBinding>>) -> Ty {
        // Forward slots for named blocks not yet bound (§5.7).
        // A set beside the list keeps this linear in the number of bindings.
        let mut slots: Vec<&'a str> = Vec::new();
        let mut slot_binders: Vec<Span> = Vec::new();
        let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        for s in stmts {
            if let Stmt::Let(l) = s {
                if let (PatternKind::Bind(n), Some(_)) =
                    (&l.pattern.kind, l.value.as_block_literal())
                {
                    if self.local(&n.text).is_none() && seen.insert(n.text.as_str()) {
                        slots.push(n.text.as_str());
                        slot_binders.push(n.span);
                    }
                }
            }
        }
        let mut open: HashMap<&'a str, Ty> = HashMap::default();
        let list_level = self.store.level();
        for (&n, &binder) in slots.iter().zip(&slot_binders) {
            self.store.enter_level();
            let t = self.store.fresh_value();
            self.store.exit_level();
            self.forward
                .entry(n)
                .or_default()
                .push((t, Some(list_level), binder));
            open.insert(n, t);
        }
        let mut last = None;
        for (idx, s) in stmts.iter().enumerate() {
            match s {
                Stmt::Let(l) => {
                    let names = self.let_stmt(l, &mut open);
                    if let Some(out) = top.as_deref_mut() {
                        for (name, _, span) in &names {
                            Self::shadow_warning(&mut self.diags, self.source, name, *span);
                        }
                        for (name, scheme, span) in names {
                            out.push(TopBinding {
                                name: name.to_owned(),
                                scheme,
                                stmt: idx,
                                span,
                            });
                        }
                    }
                    last = None;
                }
                Stmt::Chain(c) => last = Some(self.chain(c)),
                Stmt::Error(_) => {
                    let e = self.store.error();
                    last = Some(e);
                }
            }
        }
        for n in &slots {
            if let Some(v) = self.forward.get_mut(*n) {
                v.pop();
            }
        }
        match last {
            Some(t) => t,
            None => {
                let u = self.store.unit();
                self.store.returns(u)
            }
        }
    }

    /// A `let`; returns the names it bound with their schemes.
    fn let_stmt(
        &mut self,
        l: &'a ral_syntax::ast::Let,
        open: &mut HashMap<&'a str, Ty>,
    ) -> Vec<(&'a str, Scheme, Span)> {
        let named_block = match &l.pattern.kind {
            PatternKind::Bind(n) if l.value.as_block_literal().is_some() => Some(n.text.as_str()),
            PatternKind::Bind(_)
            | PatternKind::Wildcard
            | PatternKind::List { .. }
            | PatternKind::Record { .. }
            | PatternKind::Error => None,
        };
        self.store.enter_level();
        let labels_from = self.pending_labels.len();
        let value = if let Some(name) = named_block {
            let binder = match &l.pattern.kind {
                PatternKind::Bind(n) => n.span,
                PatternKind::Wildcard
                | PatternKind::List { .. }
                | PatternKind::Record { .. }
                | PatternKind::Error => l.pattern.span,
            };
            // Self and forward references see the slot while the block is checked.
            let slot = match open.remove(name) {
                Some(t) => t,
                None => self.store.fresh_value(),
            };
            self.forward
                .entry(name)
                .or_default()
                .push((slot, None, binder));
            self.in_block_rhs += 1;
            let c = self.chain(&l.value);
            self.in_block_rhs -= 1;
            if let Some(v) = self.forward.get_mut(name) {
                v.pop();
            }
            let v = self.let_value(c, l.pattern.id, l.value.span);
            self.unify_at(slot, v, l.value.span, "this block");
            v
        } else {
            let c = self.chain(&l.value);
            self.let_value(c, l.pattern.id, l.value.span)
        };
        // A scalar with no provenance (a builtin's result) gets its own node, so a
        // later conflict can cite this right-hand side as its origin.
        let value = {
            let v = self.store.find(value);
            match self.store.view(v) {
                TyView::Con(
                    con
                    @ (Con::Unit | Con::Bool | Con::Int | Con::Float | Con::String | Con::Bytes),
                ) if !self.prov.contains_key(v) => self.lit(con, l.value.span),
                TyView::Var(..) | TyView::Con(_) => value,
            }
        };
        let mut binds = Vec::new();
        self.pattern(&l.pattern, value, &mut binds);
        let level = self.store.level();
        self.settle_labels(labels_from, level);
        self.store.exit_level();
        let mut out = Vec::new();
        for (name, t, span) in binds {
            let scheme = self.store.generalize(t);
            self.bind(name, scheme.clone(), Some(span));
            out.push((name, scheme, span));
        }
        out
    }

    /// The value a `let` binds for a right-hand side of type `c`, inserting a
    /// capture when `c` is a command (§17.5 (1)).
    fn let_value(&mut self, c: Ty, pat: NodeId, span: Span) -> Ty {
        let c = self.store.find(c);
        match self.store.view(c) {
            TyView::Con(Con::Arrow { .. }) => self.store.thunk(c),
            TyView::Con(Con::Returns { grade, value }) => match self.grade_is(grade) {
                GradeIs::Write => {
                    self.elab.captures.insert(pat, CaptureSite::LetRhs);
                    let u = self.store.unit();
                    self.unify_at(u, value, span, "this command's result");
                    self.store.string()
                }
                GradeIs::Pure => value,
                GradeIs::Unknown => {
                    self.elab.grade_defaults.push(pat);
                    let _ = self.store.set_grade(grade, false);
                    value
                }
            },
            TyView::Con(Con::Error) => self.store.error(),
            TyView::Var(..) | TyView::Con(_) => {
                let v = self.store.fresh_value();
                let r = self.store.returns(v);
                self.unify_at(r, c, span, "this right-hand side");
                v
            }
        }
    }

    fn grade_is(&mut self, g: Ty) -> GradeIs {
        match self.store.view(g) {
            TyView::Con(Con::Pure) => GradeIs::Pure,
            TyView::Con(Con::Write) => GradeIs::Write,
            TyView::Var(..) | TyView::Con(_) => GradeIs::Unknown,
        }
    }

    // ---- patterns ------------------------------------------------------------

    fn pattern(&mut self, p: &'a Pattern, t: Ty, out: &mut Vec<(&'a str, Ty, Span)>) {
        match &p.kind {
            PatternKind::Wildcard | PatternKind::Error => {}
            PatternKind::Bind(n) => {
                self.elab.binders.insert(n.span, t);
                out.push((n.text.as_str(), t, n.span));
            }
            PatternKind::List { items, rest } => {
                let e = self.store.fresh_value();
                let l = self.store.list(e);
                if !self.unify_at(l, t, p.span, "the value this list pattern destructures") {
                    return;
                }
                for it in items {
                    self.pattern(it, e, out);
                }
                if let Some(r) = rest {
                    if r.text != "_" {
                        self.elab.binders.insert(r.span, l);
                        out.push((r.text.as_str(), l, r.span));
                    }
                }
            }
            PatternKind::Record { fields } => {
                // A keyed pattern reads a map's entries when the value is
                // already a map (§5.2); otherwise a record's fields.
                let tf = self.store.find(t);
                if let TyView::Con(Con::Map(e)) = self.store.view(tf) {
                    for f in fields {
                        self.pattern(&f.pattern, e, out);
                    }
                    return;
                }
                let mut tys = Vec::new();
                for f in fields {
                    let v = self.store.fresh_value();
                    tys.push((Label::intern(&f.key.text), v));
                }
                if let Some(r) = self.store.open_record(&tys) {
                    if !self.unify_at(r, t, p.span, "the value this record pattern destructures") {
                        return;
                    }
                }
                for (f, (_, v)) in fields.iter().zip(tys) {
                    self.pattern(&f.pattern, v, out);
                }
            }
        }
    }

    fn bind_params(&mut self, p: &'a Pattern, t: Ty) {
        let mut binds = Vec::new();
        self.pattern(p, t, &mut binds);
        for (n, t, s) in binds {
            self.bind(n, Scheme::mono(t), Some(s));
        }
    }

    // ---- chains, pipelines, stages -------------------------------------------

    fn chain(&mut self, c: &'a Chain) -> Ty {
        let mut arms = Vec::new();
        for p in &c.alternatives {
            let t = self.pipeline(p);
            let id = p.stages.last().map_or(NodeId(0), |s| s.id);
            arms.push((t, id, p.span));
        }
        if arms.len() == 1 {
            return arms[0].0;
        }
        self.join(&arms)
    }

    fn pipeline(&mut self, p: &'a Pipeline) -> Ty {
        let n = p.stages.len();
        let mut last = None;
        for (i, s) in p.stages.iter().enumerate() {
            let t = self.stage(s);
            if n > 1 {
                self.check_stage(s, t, i, n);
            }
            last = Some(t);
        }
        match last {
            Some(t) => t,
            None => self.store.error(),
        }
    }

    /// The pipe rule's side conditions for stage `i` of `n` (§17.4).
    fn check_stage(&mut self, s: &'a Stage, t: Ty, i: usize, n: usize) {
        if i > 0 {
            if let Some(r) = stage_redirects(s).iter().find(|r| {
                r.fd == 0 && matches!(r.op, RedirectKind::Read(_) | RedirectKind::Here(_))
            }) {
                let i = self.diag(
                    Code::PipeStdinRedirect,
                    "a later pipeline stage redirects its standard input",
                    r.span,
                    "this stage already reads the pipe",
                );
                self.help(
                    i,
                    "remove the redirect, or start a new pipeline with this stage first",
                );
            }
        }
        let t = self.store.find(t);
        if let TyView::Con(Con::Arrow { param, .. }) = self.store.view(t) {
            let want = self.show(param);
            let i = self.diag(
                Code::PipeStagePartial,
                "a function still waiting for an argument is used as a pipeline stage",
                s.span,
                format!("this still needs a `{want}`"),
            );
            self.help(
                i,
                "apply it to all its arguments, or wrap it: `{ |x| f $x }` is a value, not a stage",
            );
            return;
        }
        if i + 1 == n {
            return;
        }
        if let StageKind::Command(cmd) = &s.kind {
            if let HeadClass::Bare(name) = cmd.head.class() {
                let is_decoder = self.local(name).is_none()
                    && self.env.get(name).is_none()
                    && builtin_table()
                        .get(name)
                        .is_some_and(|b| b.kind == BuiltinKind::Decoder);
                if is_decoder {
                    let i = self.diag(
                        Code::PipeStageDecoder,
                        format!("the decoder `{name}` feeds a pipe"),
                        s.span,
                        "a decoder reads its input and returns a value; it writes nothing",
                    );
                    self.help(i, format!("move `{name}` to the end of the pipeline"));
                    return;
                }
            }
            if matches!(cmd.head.class(), HeadClass::Value)
                && cmd.args.is_empty()
                && !matches!(
                    cmd.head,
                    Head::Atom(Atom {
                        primary: Primary::Force(_),
                        ..
                    })
                )
            {
                let i = self.diag(
                    Code::PipeStageValue,
                    "a value feeds a pipe",
                    s.span,
                    "a value writes nothing to its output",
                );
                self.help(
                    i,
                    "write it out first: `echo $x | …`, or `to-json $x | …` for data",
                );
                return;
            }
        }
        // Non-final stages are commands: F_ε Unit.
        let g = self.store.fresh_grade();
        let u = self.store.unit();
        let want = self.store.returns_graded(g, u);
        if self.store.unify(want, t).is_err() {
            let f = self.show(t);
            let i = self.diag(
                Code::PipeStageResult,
                format!("a stage of type `{f}` feeds a pipe"),
                s.span,
                "a non-final stage must be a command that writes",
            );
            self.help(
                i,
                "make the stage write its result (`echo`, `to-json`), or move it to the end",
            );
        }
    }

    fn stage(&mut self, s: &'a Stage) -> Ty {
        let t = match &s.kind {
            StageKind::Return(a) => {
                let v = match a {
                    Some(a) => self.atom(a),
                    None => self.store.unit(),
                };
                self.store.returns(v)
            }
            StageKind::If(f) => self.if_form(f),
            StageKind::Case(c) => self.case_form(c),
            StageKind::Scope(sc) => self.scope_form(sc),
            StageKind::Command(c) => self.command(s, c),
        };
        let t = self.redirects(stage_redirects(s), t);
        self.elab.stage_types.insert(s.id, t);
        t
    }

    fn redirects(&mut self, rs: &'a [Redirect], t: Ty) -> Ty {
        let mut out_redirected = false;
        for r in rs {
            match &r.op {
                RedirectKind::Write(a)
                | RedirectKind::Stream(a)
                | RedirectKind::Append(a)
                | RedirectKind::Read(a) => {
                    // A target names a file by its text: a numeral is its
                    // number there too (`> 7` writes the file `7`, §4.1),
                    // so any scalar is a target, as in interpolation.
                    let v = self.atom(a);
                    if let Err(e) = self.store.constrain(v, Kind::SCALAR, None) {
                        self.report(e, a.span, "a redirect target", Ctx::Plain);
                    }
                    if r.fd == 1 && !matches!(r.op, RedirectKind::Read(_)) {
                        out_redirected = true;
                    }
                }
                RedirectKind::Here(a) => {
                    let v = self.atom(a);
                    let _ = self.store.constrain(
                        v,
                        Kind::new(
                            crate::ty::HeadSet::STRING.or(crate::ty::HeadSet::BYTES),
                            false,
                        ),
                        None,
                    );
                }
                RedirectKind::Dup { .. } => {}
            }
        }
        if !out_redirected {
            return t;
        }
        // Redirecting stdout discharges the output: F_ε A becomes F_p A.
        let t = self.store.find(t);
        match self.store.view(t) {
            TyView::Con(Con::Returns { value, .. }) => self.store.returns(value),
            TyView::Con(Con::Arrow { .. }) | TyView::Con(Con::Error) => t,
            TyView::Var(..) | TyView::Con(_) => {
                let g = self.store.fresh_grade();
                let v = self.store.fresh_value();
                let r = self.store.returns_graded(g, v);
                let _ = self.store.unify(r, t);
                self.store.returns(v)
            }
        }
    }

    // ---- commands ------------------------------------------------------------

    fn command(&mut self, s: &'a Stage, c: &'a Command) -> Ty {
        match c.head.class() {
            HeadClass::Caret(name) => {
                self.elab
                    .heads
                    .insert(s.id, HeadRes::External(name.to_owned()));
                self.argv(c, true)
            }
            HeadClass::Path(p) => {
                self.elab.heads.insert(s.id, HeadRes::Path(p.to_owned()));
                self.argv(c, true)
            }
            HeadClass::Bare(name) => self.bare_head(s, c, name),
            HeadClass::Value => {
                self.elab.heads.insert(s.id, HeadRes::Value);
                let Head::Atom(a) = &c.head else {
                    return self.store.error();
                };
                if let (Primary::Force(inner), true) = (&a.primary, a.indexes.is_empty()) {
                    let v = self.atom(inner);
                    let comp = self.force_comp(v, inner.span);
                    return self.apply_args(comp, c, a.span);
                }
                let v = self.atom(a);
                if c.args.is_empty() {
                    return self.store.returns(v);
                }
                let comp = self.expect_thunk(v, a.span, None);
                self.apply_args(comp, c, a.span)
            }
        }
    }

    fn bare_head(&mut self, s: &'a Stage, c: &'a Command, name: &str) -> Ty {
        let span = c.head.span();
        if let Some((v, res)) = self.lookup_binding(name) {
            self.elab.names.insert(span, res);
            self.elab
                .heads
                .insert(s.id, HeadRes::Binding(name.to_owned()));
            let before = self.diags.len();
            let comp = self.expect_thunk(v, span, Some(name));
            if self.diags.len() > before {
                if let Some(at) = self.local(name).and_then(|b| b.span) {
                    self.secondary(before, at, format!("`{name}` is bound here"));
                }
            }
            return self.apply_args(comp, c, span);
        }
        if let Some((b, id)) = self.builtin(name) {
            if b.kind == BuiltinKind::BaseHandler {
                self.elab.heads.insert(s.id, HeadRes::BaseHandler(id));
                self.argv(c, false);
                let t = self.store.instantiate(b.scheme());
                return match self.store.view(t) {
                    TyView::Con(Con::Arrow { result, .. }) => result,
                    TyView::Var(..) | TyView::Con(_) => self.store.command(),
                };
            }
            self.elab.heads.insert(s.id, HeadRes::Builtin(id));
            if name == "fail" {
                self.fail_status(c);
            }
            let comp = self.store.instantiate(b.scheme());
            if is_boundary(b) {
                self.store.make_weak(comp);
            }
            let r = self.apply_args(comp, c, span);
            if name == "alias" {
                self.alias_arm(c);
            }
            if name == "unalias" {
                if let Some(n) = c.args.first().and_then(literal_name) {
                    self.aliases.remove(&n);
                }
            }
            if is_boundary(b) && !b.scheme().quantified().is_empty() {
                // The door's whole type: a call short of its arguments is
                // a door value the lowering wraps like `$door`.
                self.boundary_calls.push((s.id, b.name, comp));
            }
            return r;
        }
        self.elab
            .heads
            .insert(s.id, HeadRes::External(name.to_owned()));
        // A head an enclosing `within` or an alias handles is of class arm,
        // decided in the order the run dispatches in (a binding and a
        // builtin were tried above): the arm receives every argument
        // rendered as text (§6.4, §6.6), so no argument shape is refused
        // here.
        let os = !self.handled(name) && !self.aliases.contains(name);
        self.argv(c, os)
    }

    /// `fail [status: 0, …]` is refused statically (§8.5).
    fn fail_status(&mut self, c: &'a Command) {
        let Some(Arg::Atom(a)) = c.args.first() else {
            return;
        };
        let Primary::Record(entries) = &a.primary else {
            return;
        };
        for e in entries {
            if let Entry::Field {
                key: Key::Static(k),
                value,
                ..
            } = e
            {
                if k.text == "status" && matches!(value.primary, Primary::Int(0)) {
                    let i = self.diag(
                        Code::FailStatusZero,
                        "`fail` is given status 0",
                        value.span,
                        "status 0 means success",
                    );
                    self.help(i, "use a non-zero status such as `status: 1`");
                }
            }
        }
    }

    /// An argument list for an external (`os`) or a base handler.
    fn argv(&mut self, c: &'a Command, os: bool) -> Ty {
        for arg in &c.args {
            let (a, spread) = match arg {
                Arg::Atom(a) => (a, false),
                Arg::Spread { value, .. } => (value, true),
            };
            let mut v = self.atom(a);
            if spread {
                let e = self.store.fresh_value();
                let l = self.store.list(e);
                self.unify_at(l, v, a.span, "a spread argument");
                v = e;
            }
            // A spread's elements are judged at the call, where it is
            // known how many it contributes (an empty one adds none, §6.6).
            if os && !spread {
                let v = self.store.find(v);
                if let TyView::Con(con) = self.store.view(v) {
                    if matches!(
                        con,
                        Con::Bytes
                            | Con::List(_)
                            | Con::Map(_)
                            | Con::Record(_)
                            | Con::Thunk(_)
                            | Con::Handle(_)
                    ) {
                        let f = self.show(v);
                        let i = self.diag(
                            Code::ExternalArgument,
                            format!("an external command is given a `{f}`"),
                            a.span,
                            "operating-system arguments are text",
                        );
                        self.help(
                            i,
                            "spread a list with `...$xs`, or convert the value with `str` first",
                        );
                    }
                }
            }
        }
        self.store.command()
    }

    /// A value used as a command: it must be a thunk; returns its computation.
    fn expect_thunk(&mut self, v: Ty, span: Span, name: Option<&str>) -> Ty {
        let v = self.store.find(v);
        match self.store.view(v) {
            TyView::Con(Con::Thunk(c)) => c,
            TyView::Con(Con::Error) => self.store.error(),
            TyView::Var(..) => {
                let c = self.store.fresh_comp();
                let t = self.store.thunk(c);
                self.unify_at(t, v, span, "this head");
                c
            }
            TyView::Con(_) => {
                let f = self.show(v);
                let (title, help) = match name {
                    Some(n) => (
                        format!("`{n}` is bound to a `{f}`, which cannot be run"),
                        format!("to run the command `{n}`, write `^{n}`; to use the value, write `${n}`"),
                    ),
                    None => (
                        format!("a `{f}` is applied as if it were a function"),
                        "only blocks, functions and builtins can be applied".to_owned(),
                    ),
                };
                let i = self.diag(Code::NotAFunction, title, span, format!("this is `{f}`"));
                self.help(i, help);
                self.store.error()
            }
        }
    }

    fn force_comp(&mut self, v: Ty, span: Span) -> Ty {
        self.expect_thunk(v, span, None)
    }

    /// Applies `comp` to the command's arguments, one at a time.
    fn apply_args(&mut self, mut comp: Ty, c: &'a Command, head_span: Span) -> Ty {
        for (k, arg) in c.args.iter().enumerate() {
            let a = match arg {
                Arg::Atom(a) => a,
                Arg::Spread { value, span } => {
                    let i = self.diag(
                        Code::SpreadIntoValue,
                        "a list is spread into the arguments of a function",
                        *span,
                        "a function takes its arguments one at a time",
                    );
                    self.help(i, "pass the arguments separately, or pass the list itself");
                    let _ = self.atom(value);
                    continue;
                }
            };
            let arg_ty = self.atom(a);
            let mut cf = self.store.find(comp);
            // Over-application (§5.4): arguments left over after a function
            // returns are applied to the function it returned.
            if let TyView::Con(Con::Returns { grade, value }) = self.store.view(cf) {
                let vf = self.store.find(value);
                if let TyView::Con(Con::Thunk(inner)) = self.store.view(vf) {
                    if self.grade_is(grade) != GradeIs::Write {
                        let _ = self.store.set_grade(grade, false);
                        cf = self.store.find(inner);
                    }
                }
            }
            match self.store.view(cf) {
                TyView::Con(Con::Arrow { param, result }) => {
                    self.pass_arg(param, arg_ty, a);
                    comp = result;
                }
                TyView::Con(Con::Error) => return cf,
                TyView::Var(..) => {
                    let r = self.store.fresh_comp();
                    let arr = self.store.arrow(arg_ty, r);
                    self.unify_at(arr, cf, a.span, "this application");
                    comp = r;
                }
                TyView::Con(_) => {
                    let f = self.show(cf);
                    let i = self.diag(
                        Code::Arity,
                        format!("too many arguments: {k} were expected"),
                        a.span,
                        "this argument is extra",
                    );
                    self.secondary(i, head_span, format!("after {k} argument(s) this is `{f}`"));
                    self.help(i, "remove the extra arguments");
                    for rest in c.args.iter().skip(k + 1) {
                        if let Arg::Atom(x) = rest {
                            let _ = self.atom(x);
                        }
                    }
                    return self.store.error();
                }
            }
        }
        comp
    }

    /// Passes one argument, with the block-argument capture of §17.5 (2):
    /// a `U (… -> F_w Unit)` where `U (… -> F_p β)` is wanted captures; and
    /// the zero-cost upcast of §17.5: a `U (… -> F_p Unit)` where
    /// `U (… -> F_w Unit)` is wanted is taken as it is, since a
    /// `()`-producer is a command that writes nothing.
    fn pass_arg(&mut self, param: Ty, arg: Ty, a: &'a Atom) {
        let weak = self.store.is_weak(arg);
        let snap = self.store.snapshot();
        if self.store.unify(param, arg).is_ok() {
            self.store.commit(snap);
            if weak {
                self.note_boundary_use(param, a.span);
            }
            return;
        }
        self.store.rollback_to(snap);
        if let (Some((pg, pv)), Some((ag, av))) = (self.thunk_result(param), self.thunk_result(arg))
        {
            if self.grade_is(pg) == GradeIs::Write && self.grade_is(ag) == GradeIs::Pure {
                let snap = self.store.snapshot();
                let u = self.store.unit();
                let ok = self.store.unify(pv, u).is_ok()
                    && self.store.unify(av, u).is_ok()
                    && self.unify_prefix(param, arg);
                if ok {
                    self.store.commit(snap);
                    return;
                }
                self.store.rollback_to(snap);
            }
            if self.grade_is(ag) == GradeIs::Write && self.grade_is(pg) != GradeIs::Write {
                let snap = self.store.snapshot();
                let s = self.store.string();
                let ok = self.store.set_grade(pg, false).is_ok()
                    && self.store.unify(pv, s).is_ok()
                    && self.unify_prefix(param, arg);
                if ok {
                    self.store.commit(snap);
                    self.elab.captures.insert(a.id, CaptureSite::BlockArg);
                    return;
                }
                self.store.rollback_to(snap);
            }
        }
        self.unify_at(param, arg, a.span, "this argument");
    }

    /// How many parameters a thunk type takes before its result (`None`
    /// when `t` is not yet known to be a thunk).
    fn arrows_of(&mut self, t: Ty) -> Option<usize> {
        let t = self.store.find(t);
        let TyView::Con(Con::Thunk(mut c)) = self.store.view(t) else {
            return None;
        };
        let mut n = 0;
        while n < 64 {
            c = self.store.find(c);
            match self.store.view(c) {
                TyView::Con(Con::Arrow { result, .. }) => {
                    n += 1;
                    c = result;
                }
                TyView::Var(..) | TyView::Con(_) => break,
            }
        }
        Some(n)
    }

    /// For `U (A1 -> … -> F_g B)`, `(g, B)`.
    fn thunk_result(&mut self, t: Ty) -> Option<(Ty, Ty)> {
        let TyView::Con(Con::Thunk(mut c)) = self.store.view(t) else {
            return None;
        };
        for _ in 0..64 {
            match self.store.view(c) {
                TyView::Con(Con::Arrow { result, .. }) => c = result,
                TyView::Con(Con::Returns { grade, value }) => return Some((grade, value)),
                TyView::Var(..) | TyView::Con(_) => return None,
            }
        }
        None
    }

    /// Unifies the parameters of two thunked function types (same arity).
    fn unify_prefix(&mut self, p: Ty, a: Ty) -> bool {
        let (TyView::Con(Con::Thunk(mut x)), TyView::Con(Con::Thunk(mut y))) =
            (self.store.view(p), self.store.view(a))
        else {
            return false;
        };
        loop {
            match (self.store.view(x), self.store.view(y)) {
                (
                    TyView::Con(Con::Arrow {
                        param: p1,
                        result: r1,
                    }),
                    TyView::Con(Con::Arrow {
                        param: p2,
                        result: r2,
                    }),
                ) => {
                    if self.store.unify(p1, p2).is_err() {
                        return false;
                    }
                    x = r1;
                    y = r2;
                }
                (TyView::Con(Con::Returns { .. }), TyView::Con(Con::Returns { .. })) => {
                    return true
                }
                _ => return false,
            }
        }
    }

    // ---- joins ---------------------------------------------------------------

    /// Joins arm computations in program order (§17.6).
    fn join(&mut self, arms: &[(Ty, NodeId, Span)]) -> Ty {
        let mut info = Vec::with_capacity(arms.len());
        for &(t, _, _) in arms {
            let t = self.store.find(t);
            let gv = match self.store.view(t) {
                TyView::Con(Con::Returns { grade, value }) => {
                    let g = self.grade_is(grade);
                    let unit = matches!(self.store.view(value), TyView::Con(Con::Unit));
                    Some((g, unit, grade, value))
                }
                TyView::Var(..) | TyView::Con(_) => None,
            };
            info.push(gv);
        }
        let value_arm = info
            .iter()
            .flatten()
            .find(|(g, unit, _, _)| *g == GradeIs::Pure && !unit)
            .map(|x| x.3);
        if let Some(a) = value_arm {
            let result = self.store.returns(a);
            for (&(t, id, span), gv) in arms.iter().zip(&info) {
                match gv {
                    Some((GradeIs::Write, _, _, v)) => {
                        self.elab.captures.insert(id, CaptureSite::JoinArm);
                        let u = self.store.unit();
                        self.unify_at(u, *v, span, "this branch");
                        let s = self.store.string();
                        if self.store.unify(a, s).is_err() {
                            let f = self.show(a);
                            let i = self.diag(
                                Code::TypeMismatch,
                                format!("a command branch is joined with a branch returning `{f}`"),
                                span,
                                "this branch is a command; its output is a String",
                            );
                            self.help(
                                i,
                                format!(
                                    "make every branch return a `{f}`, or every branch a command"
                                ),
                            );
                        }
                    }
                    Some(_) | None => {
                        self.unify_at(result, t, span, "this branch");
                    }
                }
            }
            return result;
        }
        if info
            .iter()
            .flatten()
            .any(|(g, _, _, _)| *g == GradeIs::Write)
        {
            let result = self.store.command();
            for (&(t, _, span), gv) in arms.iter().zip(&info) {
                match gv {
                    Some((GradeIs::Pure, true, _, _)) => {}
                    Some((_, _, g, v)) => {
                        let _ = self.store.set_grade(*g, true);
                        let u = self.store.unit();
                        self.unify_at(u, *v, span, "this branch");
                    }
                    None => {
                        self.unify_at(result, t, span, "this branch");
                    }
                }
            }
            return result;
        }
        let first = arms[0].0;
        for &(t, _, span) in &arms[1..] {
            self.unify_at(first, t, span, "this branch");
        }
        first
    }

    /// The computation of an `if`/`case` arm: a block literal's body, or a
    /// name's thunk forced; `params` are the payload types a case arm binds.
    fn arm(&mut self, a: &'a Atom, payload: Option<Ty>) -> Ty {
        if let (Primary::Block(b), true) = (&a.primary, a.indexes.is_empty()) {
            self.push_frame();
            let mut params = b.params.iter();
            if let Some(p) = payload {
                match params.next() {
                    Some(pat) => self.bind_params(pat, p),
                    None => {
                        let u = self.store.unit();
                        self.unify_at(u, p, a.span, "this tag's payload");
                    }
                }
            }
            let rest: Vec<&Pattern> = params.collect();
            let mut tys = Vec::new();
            for p in &rest {
                let t = self.store.fresh_value();
                self.bind_params(p, t);
                tys.push(t);
            }
            let mut c = self.stmts(&b.body.stmts, None);
            self.pop_frame();
            for t in tys.into_iter().rev() {
                c = self.store.arrow(t, c);
            }
            let th = self.store.thunk(c);
            self.elab.atom_types.insert(a.id, th);
            return c;
        }
        let v = self.atom(a);
        let c = self.expect_thunk(v, a.span, None);
        let Some(p) = payload else { return c };
        // A `$name` arm (§8.3): a one-argument function of the payload, or a
        // plain block for a nullary tag.
        let cf = self.store.find(c);
        match self.store.view(cf) {
            TyView::Con(Con::Returns { .. }) => {
                let u = self.store.unit();
                self.unify_at(u, p, a.span, "the payload of a plain-block arm");
                cf
            }
            TyView::Con(Con::Arrow { param, result }) => {
                self.unify_at(param, p, a.span, "this arm's parameter");
                let rf = self.store.find(result);
                if let TyView::Con(Con::Arrow { .. }) = self.store.view(rf) {
                    let f = self.show(cf);
                    let i = self.diag(
                        Code::TypeMismatch,
                        format!("a `case` arm takes {f}, a function of more than one argument"),
                        a.span,
                        "a case arm receives exactly one value, the payload",
                    );
                    self.help(
                        i,
                        "wrap it: `{ |x| f $x other }`, or give the arm a one-argument function",
                    );
                    return self.store.error();
                }
                result
            }
            TyView::Con(Con::Error) => cf,
            TyView::Var(..) | TyView::Con(_) => {
                let r = self.store.fresh_comp();
                let arr = self.store.arrow(p, r);
                self.unify_at(arr, c, a.span, "this arm");
                r
            }
        }
    }

    fn cond(&mut self, a: &'a Atom) {
        let v = self.atom(a);
        let b = self.store.bool();
        self.unify_at(b, v, a.span, "this condition");
    }

    fn if_form(&mut self, f: &'a If) -> Ty {
        let mut arms = Vec::new();
        for br in &f.branches {
            self.cond(&br.cond);
            let c = self.arm(&br.arm, None);
            arms.push((c, br.arm.id, br.arm.span));
        }
        match &f.else_arm {
            Some(e) => {
                let c = self.arm(e, None);
                arms.push((c, e.id, e.span));
                self.join(&arms)
            }
            None => {
                let u = self.store.unit();
                self.store.returns(u)
            }
        }
    }

    fn case_form(&mut self, c: &'a Case) -> Ty {
        let scrut = self.atom(&c.scrutinee);
        let mut tags = Vec::new();
        for arm in &c.arms {
            let p = self.store.fresh_value();
            tags.push((Label::intern(&arm.tag.text), p));
        }
        if let Some(closed) = self.store.variant(&tags) {
            if let Err(e) = self.store.unify(closed, scrut) {
                match e {
                    UnifyError::MissingLabel {
                        label,
                        alphabet: Alphabet::Tag,
                        missing_on: crate::ty::Side::Expected,
                        ..
                    } => {
                        let i = self.diag(
                            Code::NonExhaustiveCase,
                            format!("this `case` has no arm for `{label}`"),
                            c.arms_span,
                            format!("add an arm for `{label}`"),
                        );
                        self.secondary(i, c.scrutinee.span, "this value can carry it");
                        self.help(i, format!("add `` `{label}: {{ … }} `` to the arms"));
                    }
                    other @ (UnifyError::Mismatch { .. }
                    | UnifyError::MissingLabel { .. }
                    | UnifyError::KindViolation { .. }
                    | UnifyError::KindConflict { .. }
                    | UnifyError::NotData { .. }
                    | UnifyError::Infinite { .. }
                    | UnifyError::SortMismatch { .. }) => {
                        self.report(other, c.scrutinee.span, "the scrutinee", Ctx::Plain)
                    }
                }
            }
        }
        // The arms are typed after the scrutinee, so a payload conflict is
        // reported at the arm, citing where the payload came from.
        let mut arms = Vec::new();
        for (arm, &(_, p)) in c.arms.iter().zip(&tags) {
            let t = self.arm(&arm.arm, Some(p));
            arms.push((t, arm.arm.id, arm.arm.span));
        }
        if arms.is_empty() {
            return self.store.error();
        }
        self.join(&arms)
    }

    fn scope_form(&mut self, sc: &'a ScopeForm) -> Ty {
        match &sc.kind {
            ScopeKind::Try { body, handler } => {
                let b = self.arm(body, None);
                let err = self.error_record();
                let h = self.arm(handler, Some(err));
                self.join(&[(b, body.id, body.span), (h, handler.id, handler.span)])
            }
            ScopeKind::Guard { body, cleanup } => {
                let b = self.arm(body, None);
                let _ = self.arm(cleanup, None);
                b
            }
            ScopeKind::Within { options, body } => {
                let scope = self.within_options(options);
                self.arms.push(scope);
                let b = self.arm(body, None);
                self.arms.pop();
                b
            }
            ScopeKind::Grant { caps, body } => {
                self.grant_caps(caps);
                self.arm(body, None)
            }
            ScopeKind::Audit { body } => {
                let b = self.arm(body, None);
                let a = self.store.fresh_value();
                let g = self.store.fresh_grade();
                let r = self.store.returns_graded(g, a);
                let _ = self.store.unify(r, b);
                let err = self.error_record();
                let outcome = self
                    .store
                    .variant(&[(Label::intern("ok"), a), (Label::intern("err"), err)]);
                // The trail is `[Observation]` (§13.3, the alias in `sig`).
                let obs = match crate::sig::parse_scheme("Returns Observation") {
                    Ok(sch) => {
                        let r = self.store.instantiate(&sch);
                        match self.store.view(r) {
                            TyView::Con(Con::Returns { value, .. }) => value,
                            TyView::Var(..) | TyView::Con(_) => self.store.fresh_value(),
                        }
                    }
                    Err(_) => self.store.fresh_value(),
                };
                let trail = self.store.list(obs);
                let rec = outcome.and_then(|o| {
                    self.store.record(&[
                        (Label::intern("outcome"), o),
                        (Label::intern("trail"), trail),
                    ])
                });
                match rec {
                    Some(r) => self.store.returns(r),
                    None => self.store.error(),
                }
            }
        }
    }

    /// Freezes each boundary call's result type, now that the unit is
    /// solved, into the site its value is admitted against (§7.3, §17.3).
    /// A call whose result no use constrained needs no admission.
    ///
    /// Agreement numbers are the unit's: one per variable across every
    /// site (the map outlives each freeze), so two decodes share a number
    /// exactly when they share the variable (the program compared them),
    /// and the run keys its agreements by the same numbers (§7.3, §17.3).
    fn freeze_boundaries(&mut self) {
        let mut agree = rustc_hash::FxHashMap::default();
        for (id, door, comp) in std::mem::take(&mut self.boundary_calls) {
            let mut comp = comp;
            let mut arity = 0;
            while let TyView::Con(Con::Arrow { result, .. }) = self.store.view(comp) {
                comp = result;
                arity += 1;
            }
            let value = match self.store.view(comp) {
                TyView::Con(Con::Returns { value, .. }) => value,
                TyView::Var(..) | TyView::Con(_) => continue,
            };
            let store = &self.store;
            let prov = &self.prov;
            let uses = &self.boundary_uses;
            let origins = &self.origins;
            let use_at = |t: Ty| -> Option<u32> {
                let span = match store.view(t) {
                    TyView::Var(v, _) => v.origin.and_then(|p| origins.get(p.0 as usize).copied()),
                    TyView::Con(_) => {
                        let r = store.find_imm(t);
                        prov.get(r).or_else(|| uses.get(&r)).copied()
                    }
                };
                span.map(|s| s.start)
            };
            let site = crate::admit::freeze(store, value, &use_at, &mut agree);
            if !site.admits_anything() {
                self.elab
                    .boundaries
                    .insert(id, crate::check::Boundary { door, arity, site });
            }
        }
    }

    /// Types the options of `within` (§9.1–9.4): `handlers:` arms against
    /// what they stand in for, `handler:` as the catch-all, `dir: String`,
    /// `env: Map scalar`. Options that are not a record literal are typed as
    /// an ordinary value (their keys are checked at run time).
    fn within_options(&mut self, options: &'a Atom) -> ArmScope {
        let mut scope = ArmScope::default();
        let (Primary::Record(entries), true) = (&options.primary, options.indexes.is_empty())
        else {
            let _ = self.atom(options);
            return scope;
        };
        for en in entries {
            let Entry::Field {
                key: Key::Static(k),
                value,
                ..
            } = en
            else {
                self.entry_ordinary(en);
                continue;
            };
            match k.text.as_str() {
                "handlers" => match (&value.primary, value.indexes.is_empty()) {
                    (Primary::Record(arms), true) => {
                        for arm in arms {
                            match arm {
                                Entry::Field {
                                    key: Key::Static(name),
                                    value: v,
                                    ..
                                } => {
                                    let t = self.handler_arm(&name.text, v);
                                    scope.named.push((name.text.clone(), t));
                                }
                                Entry::Field { .. } | Entry::Spread { .. } => {
                                    self.entry_ordinary(arm)
                                }
                            }
                        }
                    }
                    _ => {
                        let _ = self.atom(value);
                    }
                },
                "handler" => {
                    let t = self.atom(value);
                    let s = self.store.string();
                    self.command_arm(t, Some(s), value.span, "this catch-all handler");
                    scope.catch_all = true;
                }
                "dir" => {
                    let t = self.atom(value);
                    let s = self.store.string();
                    self.unify_at(s, t, value.span, "the `dir` option");
                }
                "env" => {
                    // Written out, the overlay is a record literal whose keys
                    // are the variable names (§9.3); its values must be
                    // scalars, which are stringified. Computed, it is a map
                    // of scalars.
                    match (&value.primary, value.indexes.is_empty()) {
                        (Primary::Record(entries), true) => {
                            for en in entries {
                                match en {
                                    Entry::Field { value: v, .. } => {
                                        let t = self.atom(v);
                                        if let Err(e) = self.store.constrain(t, Kind::SCALAR, None)
                                        {
                                            self.report(e, v.span, "this variable", Ctx::Plain);
                                        }
                                    }
                                    Entry::Spread { .. } => self.entry_ordinary(en),
                                }
                            }
                        }
                        _ => {
                            // Computed, it is what the same bracket written
                            // out would be (§9.1, §9.3): a record whose
                            // fields are scalars, or a map of scalars.
                            let t = self.atom(value);
                            let tf = self.store.find(t);
                            if let TyView::Con(Con::Record(row)) = self.store.view(tf) {
                                let (fields, _) = self.store.row_parts(row);
                                for (_, ft) in fields {
                                    if let Err(e) = self.store.constrain(ft, Kind::SCALAR, None) {
                                        self.report(
                                            e,
                                            value.span,
                                            "a variable of `env`",
                                            Ctx::Plain,
                                        );
                                    }
                                }
                            } else {
                                let e = self.store.fresh_kinded(Kind::SCALAR, None);
                                let m = self.store.map(e);
                                self.unify_at(m, t, value.span, "the `env` option");
                            }
                        }
                    }
                }
                _ => {
                    let _ = self.atom(value);
                }
            }
        }
        scope
    }

    /// Types an entry with no rule of its own as an ordinary value.
    fn entry_ordinary(&mut self, en: &'a Entry) {
        match en {
            Entry::Field { key, value, .. } => {
                if let Key::Computed(n) = key {
                    let k = self.var(&n.text, n.span);
                    let s = self.store.string();
                    self.unify_at(s, k, n.span, "a key");
                }
                let _ = self.atom(value);
            }
            Entry::Spread { value, .. } => {
                let _ = self.atom(value);
            }
        }
    }

    /// A named handler arm stands in for the head it names (§17.7
    /// `standsFor`): a base handler at its scheme, a head an enclosing
    /// `within` already gave an arm at that arm's type, and anything else
    /// (an external, and also a binding or a builtin, which resolve before
    /// any handler and so are never reached through it, §9.5) at
    /// `[String] -> Command`. Returns the arm's type.
    fn handler_arm(&mut self, name: &str, arm: &'a Atom) -> Ty {
        let t = self.atom(arm);
        self.stands_in(Some(name), t, arm.span, "this handler arm");
        t
    }

    /// Checks an arm of type `t` against `standsFor(name)` (§17.7); a name
    /// known only at run time stands in for a command.
    fn stands_in(&mut self, name: Option<&str>, t: Ty, span: Span, what: &str) {
        if let Some(name) = name {
            if let Some((b, _)) = self
                .builtin(name)
                .filter(|(b, _)| b.kind == BuiltinKind::BaseHandler)
            {
                let c = self.store.instantiate(b.scheme());
                let th = self.store.thunk(c);
                self.unify_at(th, t, span, what);
                return;
            }
            if let Some(outer) = self.arm_for(name) {
                self.unify_at(outer, t, span, what);
                return;
            }
        }
        self.command_arm(t, None, span, what);
    }

    /// `alias name arm` checks its arm as it installs it (§6.4, §17.7): the
    /// arm stands in for `name` like a `within` arm, so a bare block, a
    /// wrong arity, or an arm returning a value where a command is expected
    /// is refused before anything runs.
    ///
    /// A literal name is handled by an alias from here on: a later bare
    /// head of that name is of class arm (§17.3).
    fn alias_arm(&mut self, c: &'a Command) {
        let name = c.args.first().and_then(literal_name);
        if let (Some(Arg::Atom(arm)), Some(&t)) = (
            c.args.get(1),
            c.args.get(1).and_then(|a| match a {
                Arg::Atom(a) => self.elab.atom_types.get(a.id),
                Arg::Spread { .. } => None,
            }),
        ) {
            self.stands_in(name.as_deref(), t, arm.span, "this alias arm");
        }
        if let Some(n) = name {
            self.aliases.insert(n);
        }
    }

    /// The type of the innermost arm an enclosing `within` installs for
    /// `name`.
    fn arm_for(&self, name: &str) -> Option<Ty> {
        self.arms
            .iter()
            .rev()
            .find_map(|s| s.named.iter().rev().find(|(n, _)| n == name).map(|p| p.1))
    }

    /// Whether a bare head `name` that is no binding and no builtin reaches
    /// a handler here: an enclosing `within` names it or has a catch-all.
    fn handled(&self, name: &str) -> bool {
        self.arm_for(name).is_some() || self.arms.iter().any(|s| s.catch_all)
    }

    /// Checks `t` against `{[String] -> Command}` (with a leading `String`
    /// parameter for the catch-all); an arm returning `()` is upcast to a
    /// command, an arm returning any other value is refused (§17.7).
    fn command_arm(&mut self, t: Ty, lead: Option<Ty>, span: Span, what: &str) {
        let g = self.store.fresh_grade();
        let v = self.store.fresh_value();
        let r = self.store.returns_graded(g, v);
        let s = self.store.string();
        let args = self.store.list(s);
        let mut c = self.store.arrow(args, r);
        if let Some(l) = lead {
            c = self.store.arrow(l, c);
        }
        let th = self.store.thunk(c);
        let written = self.arrows_of(t);
        if !self.unify_at(th, t, span, what) {
            let want = if lead.is_some() { 2 } else { 1 };
            let help = match written {
                Some(0) if want == 1 => Some("an arm takes the command's argument list: write `{ |args| … }`".to_owned()),
                Some(0) => Some("a catch-all takes the command's name and argument list: write `{ |name args| … }`".to_owned()),
                Some(n) if n != want => Some(format!(
                    "this arm takes {n} parameters; {} takes {want}: {}",
                    if want == 1 { "a named arm" } else { "a catch-all" },
                    if want == 1 { "the argument list" } else { "the name and the argument list" }
                )),
                Some(_) | None => None,
            };
            if let Some(h) = help {
                let i = self.diags.len() - 1;
                self.help(i, h);
            }
            return;
        }
        let _ = self.store.set_grade(g, true);
        let u = self.store.unit();
        if !self.unify_at(u, v, span, what) {
            let i = self.diags.len() - 1;
            self.help(
                i,
                "an arm stands in for a command, so its value is what it writes: `echo` the text, or end with `return ()`",
            );
        }
    }

    /// Types the capabilities of `grant` (§12.1): `net` and `detach` are
    /// `Bool`; the other fields (`exec`, `fs`, `editor`, `shell`, …) are typed
    /// as ordinary values and their shapes checked at run time.
    fn grant_caps(&mut self, caps: &'a Atom) {
        let (Primary::Record(entries), true) = (&caps.primary, caps.indexes.is_empty()) else {
            let _ = self.atom(caps);
            return;
        };
        for en in entries {
            match en {
                Entry::Field {
                    key: Key::Static(k),
                    value,
                    ..
                } if k.text == "net" || k.text == "detach" => {
                    let t = self.atom(value);
                    let b = self.store.bool();
                    self.unify_at(b, t, value.span, "this capability");
                }
                Entry::Field { .. } | Entry::Spread { .. } => self.entry_ordinary(en),
            }
        }
    }

    /// The `try` error record (§17.7, deviation I1):
    /// `[cmd: String, status: Int, reason: Reason, message: String,
    /// site: `just [script: String, line: Int, col: Int] | `none]`, with
    /// `Reason` and `Cause` closed variants, so a `case` on them is exhaustive.
    fn error_record(&mut self) -> Ty {
        let s = self.store.string();
        let i = self.store.int();
        let u = self.store.unit();
        let l = Label::intern;
        let cause: Vec<(Label, Ty)> = [
            "interrupted",
            "cancelled",
            "timed-out",
            "terminated",
            "aborted",
            "reader-gone",
        ]
        .iter()
        .map(|n| (l(n), u))
        .collect();
        let cause = self.store.variant(&cause).unwrap_or(u);
        let reason = self
            .store
            .variant(&[
                (l("exited"), i),
                (l("signaled"), i),
                (l("cancelled"), cause),
                (l("not-found"), u),
                (l("not-runnable"), u),
                (l("raised"), u),
            ])
            .unwrap_or(u);
        let loc = self
            .store
            .record(&[(l("script"), s), (l("line"), i), (l("col"), i)])
            .unwrap_or(u);
        let site = self
            .store
            .variant(&[(l("just"), loc), (l("none"), u)])
            .unwrap_or(u);
        self.store
            .record(&[
                (l("cmd"), s),
                (l("status"), i),
                (l("reason"), reason),
                (l("message"), s),
                (l("site"), site),
            ])
            .unwrap_or(s)
    }

    // ---- atoms ---------------------------------------------------------------

    fn atom(&mut self, a: &'a Atom) -> Ty {
        let mut t = self.primary(a);
        if !matches!(a.primary, Primary::Var(_)) {
            self.mark(t, a.span);
        }
        if let Primary::Var(n) = &a.primary {
            self.note_boundary_value(a.id, n, t);
        }
        for ix in &a.indexes {
            t = self.index(t, ix);
        }
        self.elab.atom_types.insert(a.id, t);
        t
    }

    fn primary(&mut self, a: &'a Atom) -> Ty {
        match &a.primary {
            Primary::Word(_) => self.lit(Con::String, a.span),
            Primary::Int(_) => self.lit(Con::Int, a.span),
            Primary::Float(_) => self.lit(Con::Float, a.span),
            Primary::Bool(_) => self.lit(Con::Bool, a.span),
            Primary::Unit => self.lit(Con::Unit, a.span),
            Primary::Str(s) => {
                let _ = self.string(s);
                self.lit(Con::String, a.span)
            }
            Primary::Var(n) => self.var(&n.text, n.span),
            Primary::Expr(e) => self.expr(e),
            Primary::Force(inner) => {
                let v = self.atom(inner);
                let c = self.force_comp(v, inner.span);
                self.value_of(c, a.id, a.span)
            }
            Primary::Tag { name, payload } => {
                let p = match payload {
                    Some(p) => self.atom(p),
                    None => self.store.unit(),
                };
                self.store
                    .open_variant(&[(Label::intern(&name.text), p)])
                    .unwrap_or(p)
            }
            Primary::Block(b) => self.block(b),
            Primary::List(items) => {
                let e = self.store.fresh_value();
                let l = self.store.list(e);
                for it in items {
                    match it {
                        ListItem::Item(x) => {
                            let t = self.atom(x);
                            self.unify_at(e, t, x.span, "this element");
                        }
                        ListItem::Spread { value, .. } => {
                            let t = self.atom(value);
                            self.unify_at(l, t, value.span, "this spread");
                        }
                    }
                }
                l
            }
            Primary::Record(entries) => self.record(entries, a.span),
            Primary::Map(entries) => {
                let e = self.store.fresh_value();
                let m = self.store.map(e);
                for en in entries {
                    match en {
                        Entry::Field { key, value, .. } => {
                            if let Key::Computed(n) = key {
                                let k = self.var(&n.text, n.span);
                                let s = self.store.string();
                                self.unify_at(s, k, n.span, "a map key");
                            }
                            let t = self.atom(value);
                            self.unify_at(e, t, value.span, "this map value");
                        }
                        Entry::Spread { value, .. } => {
                            let t = self.atom(value);
                            self.unify_at(m, t, value.span, "this spread");
                        }
                    }
                }
                m
            }
            Primary::Error => self.store.error(),
        }
    }

    /// The value of a forced computation in value position (captures a command).
    fn value_of(&mut self, c: Ty, id: NodeId, span: Span) -> Ty {
        let c = self.store.find(c);
        match self.store.view(c) {
            TyView::Con(Con::Returns { grade, value }) => match self.grade_is(grade) {
                GradeIs::Write => {
                    self.elab.captures.insert(id, CaptureSite::Force);
                    let u = self.store.unit();
                    self.unify_at(u, value, span, "this command's result");
                    self.store.string()
                }
                GradeIs::Pure | GradeIs::Unknown => {
                    let _ = self.store.set_grade(grade, false);
                    value
                }
            },
            TyView::Con(Con::Arrow { .. }) => self.store.thunk(c),
            TyView::Var(..) | TyView::Con(_) => {
                let v = self.store.fresh_value();
                let r = self.store.returns(v);
                self.unify_at(r, c, span, "this forced block");
                v
            }
        }
    }

    fn record(&mut self, entries: &'a [Entry], span: Span) -> Ty {
        let mut fields = Vec::new();
        let mut base = None;
        for en in entries {
            match en {
                Entry::Field { key, value, .. } => {
                    let t = self.atom(value);
                    let name = match key {
                        Key::Static(n) | Key::Computed(n) => &n.text,
                    };
                    fields.push((Label::intern(name), t));
                }
                Entry::Spread { value, .. } => {
                    let t = self.atom(value);
                    match base {
                        None => base = Some(t),
                        Some(b) => {
                            self.unify_at(b, t, value.span, "this spread");
                        }
                    }
                }
            }
        }
        match base {
            None => self
                .store
                .record(&fields)
                .unwrap_or_else(|| self.store.error()),
            Some(b) => {
                // An update names only fields the base has, and each written
                // field replaces the base's at whatever type it is written;
                // the rest of the row carries over (§4.5).
                let tail = self.store.fresh_row(Alphabet::Field);
                let old: Vec<(Label, Ty)> = fields
                    .iter()
                    .map(|&(l, _)| (l, self.store.fresh_value()))
                    .collect();
                let (Some(base_row), Some(new_row)) = (
                    self.store.row(Alphabet::Field, &old, tail),
                    self.store.row(Alphabet::Field, &fields, tail),
                ) else {
                    return self.store.error();
                };
                let base = self.store.mk(Con::Record(base_row));
                if !self.unify_at(base, b, span, "the record being updated") {
                    return self.lit(Con::Record(new_row), span);
                }
                // Print the result in the base's field order.
                let bf = self.store.find(b);
                let TyView::Con(Con::Record(row)) = self.store.view(bf) else {
                    return self.lit(Con::Record(new_row), span);
                };
                let (mut parts, end) = self.store.row_parts(row);
                for (l, t) in &mut parts {
                    if let Some(&(_, w)) = fields.iter().find(|(m, _)| m == l) {
                        *t = w;
                    }
                }
                match self.store.row(Alphabet::Field, &parts, end) {
                    Some(r) => self.lit(Con::Record(r), span),
                    None => self.lit(Con::Record(new_row), span),
                }
            }
        }
    }

    fn block(&mut self, b: &'a Block) -> Ty {
        self.push_frame();
        let mut tys = Vec::new();
        for p in &b.params {
            let t = self.store.fresh_value();
            self.bind_params(p, t);
            tys.push(t);
        }
        let mut c = self.stmts(&b.body.stmts, None);
        self.pop_frame();
        for t in tys.into_iter().rev() {
            c = self.store.arrow(t, c);
        }
        self.store.thunk(c)
    }

    fn string(&mut self, s: &'a StrLit) -> Ty {
        for part in &s.parts {
            if let StrPart::Splice(a) = part {
                let t = self.atom(a);
                if let Err(e) = self.store.constrain(t, Kind::SCALAR, None) {
                    self.report(e, a.span, "this splice", Ctx::Interpolation);
                }
            }
        }
        self.store.string()
    }

    fn index(&mut self, c: Ty, ix: &'a ral_syntax::ast::Index) -> Ty {
        let key = &ix.key;
        let elem = self.store.fresh_value();
        let static_key = if key.indexes.is_empty() {
            match &key.primary {
                Primary::Word(w) => Some(w.clone()),
                Primary::Str(s) => s.as_plain(),
                Primary::Int(_)
                | Primary::Float(_)
                | Primary::Bool(_)
                | Primary::Unit
                | Primary::Var(_)
                | Primary::Expr(_)
                | Primary::Force(_)
                | Primary::Tag { .. }
                | Primary::Block(_)
                | Primary::List(_)
                | Primary::Record(_)
                | Primary::Map(_)
                | Primary::Error => None,
            }
        } else {
            None
        };
        if let (Primary::Int(_), true) = (&key.primary, key.indexes.is_empty()) {
            let l = self.store.list(elem);
            self.unify_at(l, c, ix.span, "the indexed value");
            return elem;
        }
        let cf = self.store.find(c);
        if let Some(k) = static_key {
            if let TyView::Con(Con::Map(e)) = self.store.view(cf) {
                return e;
            }
            if let TyView::Var(
                TyVar {
                    sort: Sort::Value, ..
                },
                _,
            ) = self.store.view(cf)
            {
                // Record or map follows from the type, never from statement
                // order: decide when the variable's `let` ends (§4.7).
                let level = self.store.level_of(cf);
                self.store.lower_to(elem, level);
                self.pending_labels.push(PendingLabel {
                    container: cf,
                    label: Label::intern(&k),
                    elem,
                    span: ix.span,
                });
                return elem;
            }
            if let Some(r) = self.store.open_record(&[(Label::intern(&k), elem)]) {
                self.unify_at(r, cf, ix.span, "the indexed value");
            }
            return elem;
        }
        // A computed index (§4.7, §17.3): container, key and element types
        // are weak, and the list/map choice waits until one of them is known.
        let k = self.atom(key);
        self.store.make_weak(c);
        self.store.make_weak(k);
        let elem = self.store.fresh_weak();
        let p = PendingIndex {
            container: c,
            key: k,
            elem,
            span: ix.span,
            key_span: key.span,
        };
        if !self.try_index(p) {
            self.pending_ix.push(p);
        }
        elem
    }

    /// Resolves a computed index if its container or key type decides it.
    fn try_index(&mut self, p: PendingIndex) -> bool {
        let cf = self.store.find(p.container);
        let kf = self.store.find(p.key);
        let is_list = match (self.store.view(cf), self.store.view(kf)) {
            (TyView::Con(Con::Error), _) | (_, TyView::Con(Con::Error)) => return true,
            (TyView::Con(Con::List(_)), _) | (_, TyView::Con(Con::Int)) => true,
            (TyView::Con(Con::Map(_)), _) | (_, TyView::Con(Con::String)) => false,
            // Neither a list nor a map: report against the list reading when
            // the key is unknown, the map reading otherwise.
            (TyView::Con(_), _) => matches!(self.store.view(kf), TyView::Var(..)),
            (TyView::Var(..), TyView::Var(..)) => return false,
            // A key that is neither an Int nor a String: the map reading.
            (TyView::Var(..), TyView::Con(_)) => false,
        };
        let (want_c, want_k) = if is_list {
            (self.store.list(p.elem), self.store.int())
        } else {
            (self.store.map(p.elem), self.store.string())
        };
        self.unify_at(want_c, cf, p.span, "the indexed value");
        self.unify_at(want_k, kf, p.key_span, "this key");
        true
    }

    /// Settles the deferred computed indexes at the end of the unit; one
    /// still undecided is `ambiguous-index`.
    /// Decides the label reads pushed since `from` whose container would be
    /// generalised at `level` (all of them when `level` is 0): a map read if
    /// the container is a map or its kind admits `Map` and not `Record`, else
    /// a record field read (§4.7, §17.3).
    fn settle_labels(&mut self, from: usize, level: u32) {
        let mut keep = from;
        for i in from..self.pending_labels.len() {
            let p = self.pending_labels[i];
            let c = self.store.find(p.container);
            if let TyView::Var(v, _) = self.store.view(c) {
                if level > 0 && self.store.level_of(c) < level {
                    self.pending_labels[keep] = p;
                    keep += 1;
                    continue;
                }
                let heads = v.kind.heads;
                if heads.contains(HeadSet::MAP) && !heads.contains(HeadSet::RECORD) {
                    let m = self.store.map(p.elem);
                    self.unify_at(m, c, p.span, "the indexed value");
                    continue;
                }
            }
            if let TyView::Con(Con::Map(e)) = self.store.view(c) {
                self.unify_at(e, p.elem, p.span, "the map value read");
                continue;
            }
            if let Some(r) = self.store.open_record(&[(p.label, p.elem)]) {
                self.unify_at(r, c, p.span, "the indexed value");
            }
        }
        self.pending_labels.truncate(keep);
    }

    fn finish_indexes(&mut self) {
        loop {
            let pending = std::mem::take(&mut self.pending_ix);
            let before = pending.len();
            let mut left = Vec::new();
            for p in pending {
                if !self.try_index(p) {
                    left.push(p);
                }
            }
            let progress = left.len() < before;
            self.pending_ix = left;
            if !progress || self.pending_ix.is_empty() {
                break;
            }
        }
        for p in std::mem::take(&mut self.pending_ix) {
            let i = self.diag(
                Code::AmbiguousIndex,
                "nothing decides whether this index reads a list or a map",
                p.span,
                "the container and the key type are never fixed",
            );
            self.label_other(
                i,
                Some(p.key_span),
                "an `Int` key reads a list, a `String` key a map",
            );
            self.help(
                i,
                "use the value at one container type, or fix the key: `$[$k + 0]` for a list, `\"$k\"` for a map",
            );
        }
    }

    // ---- expressions ---------------------------------------------------------

    fn expr(&mut self, e: &'a Expr) -> Ty {
        let t = match &e.kind {
            ExprKind::Atom(a) => self.atom(a),
            ExprKind::Paren(x) => self.expr(x),
            ExprKind::Unary { op, operand } => {
                let t = self.expr(operand);
                let op_at = Span::new(e.span.start, operand.span.start.max(e.span.start));
                match op {
                    UnOp::Neg => {
                        self.kinded(t, Kind::NUMBER, operand.span, "the operand of `-`", op_at);
                        t
                    }
                    UnOp::Not => {
                        let b = self.lit(Con::Bool, op_at);
                        self.unify_at(b, t, operand.span, "the operand of `not`");
                        b
                    }
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                let r = self.expr(rhs);
                let what = format!("the right operand of `{}`", op.spelling());
                let op_at = Span::new(lhs.span.end, rhs.span.start.max(lhs.span.end));
                match op {
                    BinOp::Or | BinOp::And => {
                        let b = self.lit(Con::Bool, op_at);
                        self.unify_at(
                            b,
                            l,
                            lhs.span,
                            &format!("the left operand of `{}`", op.spelling()),
                        );
                        self.unify_at(b, r, rhs.span, &what);
                        b
                    }
                    BinOp::Eq | BinOp::Ne => {
                        if self.kinded(l, Kind::DATA, lhs.span, "a compared value", op_at) {
                            self.unify_ctx(l, r, rhs.span, &what, Ctx::Equality);
                        }
                        self.store.bool()
                    }
                    BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
                        if self.kinded(l, Kind::COMPARABLE, lhs.span, "an ordered value", op_at)
                            && self.right_kinded(
                                l,
                                r,
                                Kind::COMPARABLE,
                                rhs.span,
                                "an ordered value",
                                op_at,
                            )
                        {
                            self.unify_at(l, r, rhs.span, &what);
                        }
                        self.store.bool()
                    }
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                        if self.kinded(
                            l,
                            Kind::NUMBER,
                            lhs.span,
                            &format!("the left operand of `{}`", op.spelling()),
                            op_at,
                        ) && self.right_kinded(l, r, Kind::NUMBER, rhs.span, &what, op_at)
                        {
                            self.unify_at(l, r, rhs.span, &what);
                        }
                        l
                    }
                    BinOp::Rem => {
                        let i = self.lit(Con::Int, op_at);
                        self.unify_at(i, l, lhs.span, "the left operand of `%`");
                        self.unify_at(i, r, rhs.span, &what);
                        i
                    }
                }
            }
        };
        self.elab.atom_types.insert(e.id, t);
        t
    }

    /// `kinded` for a right operand; on failure also cites the left operand's
    /// type where it came from.
    fn right_kinded(&mut self, l: Ty, r: Ty, k: Kind, span: Span, what: &str, op: Span) -> bool {
        if self.kinded(r, k, span, what, op) {
            return true;
        }
        let lp = self.prov_of(l);
        let ls = self.show(l);
        if let Some(i) = self.diags.len().checked_sub(1) {
            self.label_other(i, lp, format!("the left operand is `{ls}`, from here"));
        }
        false
    }

    fn kinded(&mut self, t: Ty, k: Kind, span: Span, what: &str, op: Span) -> bool {
        let o = self.origin(op);
        match self.store.constrain(t, k, Some(o)) {
            Ok(()) => true,
            Err(e) => {
                self.report(e, span, what, Ctx::Plain);
                false
            }
        }
    }
}

/// The name an argument spells literally (a word or a plain quoted
/// string), as `alias` and `unalias` take it.
fn literal_name(a: &Arg) -> Option<String> {
    let Arg::Atom(n) = a else { return None };
    match (&n.primary, n.indexes.is_empty()) {
        (Primary::Word(w), true) => Some(w.clone()),
        (Primary::Str(s), true) => s.as_plain(),
        _ => None,
    }
}

/// Whether a builtin's result crosses a boundary (a decoder, `use`, a host
/// answer), so its type variables are weak (§17.3, §7.3).
fn is_boundary(b: &crate::builtins::Builtin) -> bool {
    match b.kind {
        BuiltinKind::Decoder | BuiltinKind::Boundary => true,
        BuiltinKind::Builtin | BuiltinKind::Prelude | BuiltinKind::BaseHandler => false,
    }
}

fn stage_redirects(s: &Stage) -> &[Redirect] {
    match &s.kind {
        StageKind::Command(c) => &c.redirects,
        StageKind::Scope(sc) => &sc.redirects,
        StageKind::Return(_) | StageKind::If(_) | StageKind::Case(_) => &[],
    }
}

/// Levenshtein distance, for did-you-mean.
fn edit_distance(a: &str, b: &str) -> usize {
    // Optimal string alignment: insertions, deletions, substitutions and
    // swaps of two adjacent characters each cost one, so `$prot` finds `$port`.
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 0..a.len() {
        cur[0] = i + 1;
        for j in 0..b.len() {
            let sub = prev[j] + usize::from(a[i] != b[j]);
            let mut d = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && a[i] == b[j - 1] && a[i - 1] == b[j] {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// A closed copy of `scheme` (no store references), and whether any variable
/// left free in it was weak or unsolved (see [`EnvEntry::weak`]).
pub(crate) fn close_scheme(store: &TyStore, scheme: &Scheme) -> (Scheme, bool) {
    let mut out = SchemeBuilder::default();
    let mut weak = false;
    let mut memo_arena: HashMap<u32, u32> = HashMap::default();
    let mut memo_store: HashMap<Ty, u32> = HashMap::default();
    enum Job {
        Arena(u32),
        Store(Ty),
    }
    // Allocate every reachable node first (placeholder), then fill in.
    let root = alloc(
        &mut out,
        &mut memo_arena,
        &mut memo_store,
        store,
        scheme,
        Job::Arena(scheme.root()),
        &mut weak,
    );
    return (out.finish(root), weak);

    fn alloc(
        out: &mut SchemeBuilder,
        ma: &mut HashMap<u32, u32>,
        ms: &mut HashMap<Ty, u32>,
        store: &TyStore,
        scheme: &Scheme,
        job: Job,
        weak: &mut bool,
    ) -> u32 {
        let (node, key_a, key_s): (Option<SchemeNode>, Option<u32>, Option<Ty>) = match job {
            Job::Arena(i) => {
                if let Some(&j) = ma.get(&i) {
                    return j;
                }
                match scheme.node(i) {
                    Some(SchemeNode::Free(t)) => {
                        return alloc(out, ma, ms, store, scheme, Job::Store(t), weak);
                    }
                    n => (n, Some(i), None),
                }
            }
            Job::Store(t) => {
                let t = store.find_imm(t);
                if let Some(&j) = ms.get(&t) {
                    return j;
                }
                let n = match store.view(t) {
                    TyView::Var(v, w) => {
                        *weak = true;
                        let _ = w;
                        Some(SchemeNode::Var(v))
                    }
                    TyView::Con(_) => Some(SchemeNode::Free(t)),
                };
                (n, None, Some(t))
            }
        };
        let i = out.push(SchemeNode::Var(crate::ty::TyVar {
            sort: crate::ty::Sort::Value,
            kind: Kind::ANY,
            origin: None,
        }));
        if let Some(a) = key_a {
            ma.insert(a, i);
        }
        if let Some(s) = key_s {
            ms.insert(s, i);
        }
        match node {
            Some(SchemeNode::Var(v)) => {
                out.set(i, SchemeNode::Var(v));
                out.quantified.push(crate::ty::TyVarId(i));
            }
            Some(SchemeNode::Con(con)) => {
                let fields = con.children().1.map(|r| {
                    let kids: Vec<(Label, u32)> = scheme.fields(r).to_vec();
                    let kids: Vec<(Label, u32)> = kids
                        .into_iter()
                        .map(|(l, k)| (l, alloc(out, ma, ms, store, scheme, Job::Arena(k), weak)))
                        .collect();
                    out.push_fields(&kids)
                });
                let con = con.map(
                    |k| alloc(out, ma, ms, store, scheme, Job::Arena(k), weak),
                    fields,
                );
                out.set(i, SchemeNode::Con(con));
            }
            Some(SchemeNode::Free(t)) => {
                let TyView::Con(con) = store.view(t) else {
                    return i;
                };
                let fields = con.children().1.map(|r| {
                    let kids: Vec<(Label, Ty)> = store.fields(r).to_vec();
                    let kids: Vec<(Label, u32)> = kids
                        .into_iter()
                        .map(|(l, k)| (l, alloc(out, ma, ms, store, scheme, Job::Store(k), weak)))
                        .collect();
                    out.push_fields(&kids)
                });
                let con = con.map(
                    |k| alloc(out, ma, ms, store, scheme, Job::Store(k), weak),
                    fields,
                );
                out.set(i, SchemeNode::Con(con));
            }
            None => {}
        }
        i
    }
}

#[cfg(test)]
mod edit_distance_tests {
    use super::edit_distance;

    #[test]
    fn swaps_insertions_and_substitutions_cost_one() {
        assert_eq!(edit_distance("prot", "port"), 1);
        assert_eq!(edit_distance("colur", "colour"), 1);
        assert_eq!(edit_distance("host", "hist"), 1);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("", "ab"), 2);
        assert_eq!(edit_distance("ca", "abc"), 3);
    }
}
