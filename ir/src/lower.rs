//! Lowering a checked program to the IR.
//!
//! [`try_lower`] walks the syntax tree once and reads everything the checker
//! decided from its side tables ([`ral_types::Elaboration`]): what every name
//! use refers to, how each command head dispatches, where captures go, and
//! the types that fix arithmetic, comparison and index kinds. It repeats none
//! of the checker's rules.
//!
//! # Names
//!
//! The checker records every name use's resolution (`Elaboration::names`,
//! keyed by the span of the `$name`, bare head or computed key), and that
//! record is the only source of truth for what a name refers to:
//!
//! - `Local { binder }` and `Forward { binder }` name the binding by the span
//!   of its binder (a pattern name, a parameter, a named block's name). Each
//!   function being built maps binder spans to the operand holding the value
//!   (a local, a top-level definition, a recursive-group member); a binding
//!   of an enclosing function becomes a capture. Spans are unique per
//!   binding, so shadowing needs no bookkeeping here.
//! - `Session` is an [`Operand::Global`] read by name; `Builtin` an
//!   [`Operand::Builtin`]; `Script` is `$SCRIPT`.
//!
//! A use with no recorded resolution, or whose binder is not in scope where
//! it is used, means the checker and the lowering disagree: that is a bug,
//! reported as a [`LowerError`] (and a debug assertion in [`lower`]), never a
//! guess.
//!
//! # Named blocks (spec §5.7)
//!
//! At the top level a named block is a definition like any other; a forward
//! reference to it is a [`Operand::Global`] naming that definition, which
//! the VM reads when the reference runs.
//!
//! In a local statement list (a block body), a `let name = {…}` is a value
//! made by a closure, and closure creation has no effects, so lowering
//! chooses where each one is made. The named blocks of the list and the
//! references between them (the checker's resolutions, forward or not) form
//! a graph; each strongly connected component is made as one unit: a
//! [`Expr::MakeRecGroup`] when its members refer to each other or one refers
//! to itself (one shared capture environment, [`Operand::Sibling`] inside),
//! a plain closure otherwise. A unit is made at its first member's position,
//! moved earlier when a statement or another unit reads it sooner (a forward
//! reference), and later when something it captures is bound only further
//! down (a block referring to a later block that uses a later value); units
//! made at the same place come in dependency order. A statement that reads a
//! named block before that block can be made (it needs a value bound later)
//! sees a closure that fails with a clear message when run, as reading a
//! top-level definition that has not run does.
//!
//! # Index kinds
//!
//! `$c[k]` lowers to [`IndexKind::List`] for an Int key, and to
//! [`IndexKind::Field`] or [`IndexKind::Map`] when the container's type is
//! known to be a record or a map: from the checker's type of the binding
//! (block parameters from the block's recorded type, `let` bindings from
//! their right-hand side's stage type, destructured through the pattern,
//! `case` payloads from the scrutinee's variant), of a `$[…]` expression or
//! of a forced block's result, stepped through earlier keys of the same
//! chain. A computed key follows its own type. Anything else is
//! [`IndexKind::Dynamic`].

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;

use ral_syntax::ast::{
    self, Arg, Atom, Entry, ExprKind, Head, HeadClass, Key, ListItem, Pattern, PatternKind,
    Primary, ScopeKind, StageKind, StrPart,
};
use ral_syntax::{SourceId, Span};
use ral_types::{builtin_table, CaptureSite, Checked, Con, HeadRes, NameRes, Ty, TyView};

use crate::ir::{
    ArithOp, Block, CaptureFrom, CaseArm, CmpOp, Const, Def, DefId, ExecHead, Expr, Func, FuncId,
    IndexKind, InterpPart, LocalId, MapPart, Module, NumKind, Operand, OrdKind, Part, Pat,
    Redirect, RedirectKind, Stmt,
};

/// The checker's tables and the syntax tree disagree. This is a bug in ral,
/// never an error in the program being lowered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerError {
    /// Where in the source the disagreement showed.
    pub span: Span,
    pub message: String,
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "internal lowering error at {}..{}: {}",
            self.span.start, self.span.end, self.message
        )
    }
}

impl std::error::Error for LowerError {}

/// Lowers a program that checked without errors.
///
/// An internal inconsistency ([`LowerError`]) is a debug assertion; in a
/// release build the module returned fails with the internal error's message
/// when it runs, so nothing runs on a wrong lowering. Prefer [`try_lower`]
/// where the error can be reported.
pub fn lower(program: &ast::Program, checked: &Checked, source: SourceId) -> Module {
    or_failing(source, try_lower(program, checked, source))
}

/// [`lower`], and checks that every session name the module reads is one
/// `is_session` knows (the checker's environment and the host's session
/// must agree).
pub fn lower_with_session(
    program: &ast::Program,
    checked: &Checked,
    source: SourceId,
    is_session: &dyn Fn(&str) -> bool,
) -> Module {
    or_failing(
        source,
        try_lower_with_session(program, checked, source, is_session),
    )
}

/// [`try_lower`], then the session check of [`lower_with_session`].
pub fn try_lower_with_session(
    program: &ast::Program,
    checked: &Checked,
    source: SourceId,
    is_session: &dyn Fn(&str) -> bool,
) -> Result<Module, LowerError> {
    let module = try_lower(program, checked, source)?;
    if let Some(name) = crate::names::referenced_names(&module)
        .into_iter()
        .find(|n| !is_session(n))
    {
        return Err(LowerError {
            span: program.span,
            message: format!(
                "the checker resolved `{name}` to the session, which does not bind it"
            ),
        });
    }
    Ok(module)
}

fn or_failing(source: SourceId, r: Result<Module, LowerError>) -> Module {
    match r {
        Ok(m) => m,
        Err(e) => {
            debug_assert!(false, "{e}");
            failing_module(source, &e)
        }
    }
}

/// A module whose `main` fails with the internal error's message.
fn failing_module(source: SourceId, e: &LowerError) -> Module {
    let span = e.span;
    let (record, call) = (LocalId(0), LocalId(1));
    let body = Block {
        stmts: vec![
            Stmt {
                dst: Some(record),
                expr: fail_record(&e.to_string()),
                span,
            },
            Stmt {
                dst: Some(call),
                expr: Expr::Call {
                    func: fail_builtin(),
                    args: vec![Operand::Local(record)],
                    tail: true,
                },
                span,
            },
        ],
        result: Operand::Local(call),
    };
    Module {
        source,
        funcs: vec![Func {
            id: FuncId(0),
            name: None,
            params: Vec::new(),
            param_names: Vec::new(),
            captures: Vec::new(),
            n_locals: 2,
            body,
            span,
        }],
        main: FuncId(0),
        defs: Vec::new(),
    }
}

/// `fail`, which every builtin table has (the VM's registry is checked
/// against it); a table without it would make the call fail anyway.
fn fail_builtin() -> Operand {
    builtin_table()
        .id("fail")
        .map_or(Operand::Unit, Operand::Builtin)
}

/// The error record `fail` raises: status 1 and `message`.
fn fail_record(message: &str) -> Expr {
    Expr::MakeRecord {
        base: None,
        fields: vec![
            (
                Arc::from("message"),
                Operand::Const(Const::Str(Arc::from(message))),
            ),
            (Arc::from("status"), Operand::Const(Const::Int(1))),
        ],
    }
}

/// Lowers a program that checked without errors, or says where the
/// checker's tables and the tree disagree.
pub fn try_lower(
    program: &ast::Program,
    checked: &Checked,
    source: SourceId,
) -> Result<Module, LowerError> {
    let mut uses: Vec<(Span, Span)> = checked
        .elab
        .names
        .iter()
        .filter_map(|(u, r)| match r {
            NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b } => Some((*u, *b)),
            NameRes::Local { binder: None }
            | NameRes::Session
            | NameRes::Builtin(_)
            | NameRes::Script => None,
        })
        .collect();
    uses.sort_unstable_by_key(|(u, _)| (u.start, u.end));
    let mut cx = Lower::new(checked, uses);
    let main = cx.open_func(None, None, program.span);
    cx.predeclare_top(&program.stmts);
    let result = cx.top_stmts(&program.stmts);
    cx.close_func(main, Vec::new(), result, false);
    if let Some(e) = cx.error.take() {
        return Err(e);
    }
    Ok(cx.finish(source, main))
}

fn capture_from(op: &Operand) -> Option<CaptureFrom> {
    match op {
        Operand::Local(l) => Some(CaptureFrom::Local(*l)),
        Operand::Captured(i) => Some(CaptureFrom::Captured(*i)),
        Operand::Sibling(i) => Some(CaptureFrom::Sibling(*i)),
        Operand::Unit
        | Operand::Const(_)
        | Operand::Global { .. }
        | Operand::Builtin(_)
        | Operand::Script => None,
    }
}

/// What the checker's types say about a binding's value.
#[derive(Clone, Copy, Debug)]
enum Known {
    /// Its type in the checker's store.
    Ty(Ty),
    /// The error record of a `try` handler (a record with fixed fields).
    TryError,
}

/// A function being built.
struct FnB {
    id: FuncId,
    name: Option<String>,
    n_locals: u32,
    /// Binder span → the operand holding that binding's value here.
    scope: HashMap<Span, Operand>,
    /// For a member of a recursive group: the members' binders, each with
    /// its index in the group (shared by all members).
    siblings: Option<Rc<HashMap<Span, u32>>>,
    stmts: Vec<Stmt>,
    span: Span,
    /// The parameters as written, for [`Func::param_names`].
    param_names: Vec<String>,
}

struct Lower<'a> {
    checked: &'a Checked,
    /// Every name use bound in this unit, as (use, binder), by use position.
    uses: Vec<(Span, Span)>,
    funcs: Vec<Option<Func>>,
    func_env: Vec<Option<usize>>,
    /// Capture environments (operands in the maker), shared by a group.
    envs: Vec<Vec<Operand>>,
    stack: Vec<FnB>,
    defs: Vec<Def>,
    /// What is known of each binding's value, by binder span.
    binder_tys: HashMap<Span, Known>,
    /// The first internal inconsistency found.
    error: Option<LowerError>,
}

/// How the named blocks of a local statement list are made (module docs).
struct Plan {
    /// Units made just before statement `i` runs (`at[len]`: after the
    /// last), each after the units it needs.
    at: Vec<Vec<Unit>>,
    /// Whether statement `i` is a named block (made by a unit instead).
    named: Vec<bool>,
    /// Named blocks (statement indices) that statement `i` reads before
    /// they can be made.
    early: Vec<Vec<usize>>,
}

/// Named blocks made together.
struct Unit {
    /// Statement indices, in source order.
    members: Vec<usize>,
    /// Whether members refer to each other or one to itself.
    recursive: bool,
}

impl<'a> Lower<'a> {
    fn new(checked: &'a Checked, uses: Vec<(Span, Span)>) -> Self {
        Lower {
            checked,
            uses,
            funcs: Vec::new(),
            func_env: Vec::new(),
            envs: Vec::new(),
            stack: Vec::new(),
            defs: Vec::new(),
            binder_tys: HashMap::new(),
            error: None,
        }
    }

    /// Assembles the module: every function, with its capture list read
    /// from its environment.
    fn finish(self, source: SourceId, main: FuncId) -> Module {
        let Lower {
            funcs,
            func_env,
            envs,
            defs,
            ..
        } = self;
        let funcs = funcs
            .into_iter()
            .zip(func_env)
            .filter_map(|(f, env)| {
                let mut f = f?;
                if let Some(e) = env {
                    f.captures = envs
                        .get(e)
                        .map(|ops| ops.iter().filter_map(capture_from).collect())
                        .unwrap_or_default();
                }
                Some(f)
            })
            .collect();
        Module {
            source,
            funcs,
            main,
            defs,
        }
    }

    /// Records the first internal inconsistency; lowering carries on with
    /// `()` so every other part is still walked.
    fn internal(&mut self, span: Span, message: String) -> Operand {
        if self.error.is_none() {
            self.error = Some(LowerError { span, message });
        }
        Operand::Unit
    }

    // ---- functions and blocks ---------------------------------------------

    fn open_func(&mut self, name: Option<String>, env: Option<usize>, span: Span) -> FuncId {
        let id = FuncId(self.funcs.len() as u32);
        self.funcs.push(None);
        self.func_env.push(env);
        self.stack.push(FnB {
            id,
            name,
            n_locals: 0,
            scope: HashMap::new(),
            siblings: None,
            stmts: Vec::new(),
            span,
            param_names: Vec::new(),
        });
        id
    }

    fn close_func(&mut self, id: FuncId, params: Vec<LocalId>, result: Operand, capture: bool) {
        let result = if capture {
            let stmts = std::mem::take(&mut self.cur().stmts);
            let span = self.cur().span;
            self.emit(Expr::Capture(Block { stmts, result }), span)
        } else {
            result
        };
        let Some(fb) = self.stack.pop() else { return };
        let mut body = Block {
            stmts: fb.stmts,
            result,
        };
        mark_tail(&mut body);
        let func = Func {
            id: fb.id,
            name: fb.name,
            params,
            param_names: fb.param_names,
            captures: Vec::new(),
            n_locals: fb.n_locals,
            body,
            span: fb.span,
        };
        if let Some(slot) = self.funcs.get_mut(id.0 as usize) {
            *slot = Some(func);
        }
    }

    fn cur(&mut self) -> &mut FnB {
        if self.stack.is_empty() {
            // Unreachable: `main` is open for the whole walk.
            self.open_func(None, None, Span::new(0, 0));
        }
        let n = self.stack.len();
        &mut self.stack[n - 1]
    }

    fn new_local(&mut self) -> LocalId {
        let f = self.cur();
        let l = LocalId(f.n_locals);
        f.n_locals += 1;
        l
    }

    fn emit(&mut self, expr: Expr, span: Span) -> Operand {
        let l = self.new_local();
        self.cur().stmts.push(Stmt {
            dst: Some(l),
            expr,
            span,
        });
        Operand::Local(l)
    }

    fn emit_void(&mut self, expr: Expr, span: Span) {
        self.cur().stmts.push(Stmt {
            dst: None,
            expr,
            span,
        });
    }

    /// Makes the binding with binder `binder` hold `op` in this function.
    fn bind(&mut self, binder: Span, op: Operand) {
        self.cur().scope.insert(binder, op);
    }

    /// Lowers `f` into a nested block of the current function.
    fn sub_block(&mut self, f: impl FnOnce(&mut Self) -> Operand) -> Block {
        let saved = std::mem::take(&mut self.cur().stmts);
        let result = f(self);
        let stmts = std::mem::replace(&mut self.cur().stmts, saved);
        Block { stmts, result }
    }

    /// Wraps `b` in a capture when the checker put one at `id` as a join arm.
    fn join_arm(&mut self, id: ast::NodeId, b: Block, span: Span) -> Block {
        if self.checked.elab.captures.get(id) == Some(&CaptureSite::JoinArm) {
            let l = self.new_local();
            Block {
                stmts: vec![Stmt {
                    dst: Some(l),
                    expr: Expr::Capture(b),
                    span,
                }],
                result: Operand::Local(l),
            }
        } else {
            b
        }
    }

    /// Lowers a block literal to a function over environment `env`, whose
    /// scope starts as `scope`. `thunk` is the block's type, if recorded.
    fn block_func(
        &mut self,
        b: &ast::Block,
        name: Option<String>,
        env: usize,
        siblings: Option<Rc<HashMap<Span, u32>>>,
        thunk: Option<Ty>,
        capture: bool,
    ) -> FuncId {
        let id = self.open_func(name, Some(env), b.span);
        self.cur().siblings = siblings;
        self.cur().param_names = b.params.iter().map(pattern_text).collect();
        let tys = self.param_tys(thunk, b.params.len());
        let mut params = Vec::new();
        for (p, t) in b.params.iter().zip(tys) {
            let l = self.new_local();
            params.push(l);
            self.bind_pattern(p, Operand::Local(l), false, p.span, t.map(Known::Ty));
        }
        let result = self.stmts(&b.body.stmts, false);
        self.close_func(id, params, result, capture);
        id
    }

    fn closure(
        &mut self,
        b: &ast::Block,
        name: Option<String>,
        thunk: Option<Ty>,
        capture: bool,
    ) -> Operand {
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let func = self.block_func(b, name, env, None, thunk, capture);
        let captures = self.envs.get(env).cloned().unwrap_or_default();
        self.emit(Expr::MakeClosure { func, captures }, b.span)
    }

    /// Emits `fail [message: …, status: 1]` in the current function.
    fn fail_with(&mut self, message: &str, span: Span) -> Operand {
        let record = self.emit(fail_record(message), span);
        self.emit(
            Expr::Call {
                func: fail_builtin(),
                args: vec![record],
                tail: false,
            },
            span,
        )
    }

    // ---- names ---------------------------------------------------------------

    /// The operand for binder `binder` as seen from function `depth`,
    /// capturing it through every function in between.
    fn resolve_at(&mut self, depth: usize, binder: Span) -> Option<Operand> {
        let fb = self.stack.get(depth)?;
        if let Some(op) = fb.scope.get(&binder) {
            return Some(op.clone());
        }
        if let Some(j) = fb.siblings.as_ref().and_then(|s| s.get(&binder)) {
            return Some(Operand::Sibling(*j));
        }
        if depth == 0 {
            return None;
        }
        let env = self.func_env.get(fb.id.0 as usize).copied().flatten();
        let outer = self.resolve_at(depth - 1, binder)?;
        match outer {
            Operand::Local(_) | Operand::Captured(_) | Operand::Sibling(_) => {
                let ops = self.envs.get_mut(env?)?;
                let i = match ops.iter().position(|o| *o == outer) {
                    Some(i) => i,
                    None => {
                        ops.push(outer);
                        ops.len() - 1
                    }
                };
                Some(Operand::Captured(i as u32))
            }
            Operand::Unit
            | Operand::Const(_)
            | Operand::Global { .. }
            | Operand::Builtin(_)
            | Operand::Script => Some(outer),
        }
    }

    /// A name use (`$name`, a bare head bound to a value, a computed key),
    /// as the checker resolved it.
    fn name_use(&mut self, name: &str, span: Span) -> Operand {
        match self.checked.elab.names.get(&span).copied() {
            Some(NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b }) => {
                let found = match self.stack.len().checked_sub(1) {
                    Some(depth) => self.resolve_at(depth, b),
                    None => None,
                };
                match found {
                    Some(op) => op,
                    None => self.internal(
                        span,
                        format!(
                            "`{name}` refers to a binding that is not in scope where it is used"
                        ),
                    ),
                }
            }
            Some(NameRes::Session) => Operand::Global {
                name: name.to_owned(),
                def: None,
            },
            Some(NameRes::Builtin(id)) => Operand::Builtin(id),
            Some(NameRes::Script) => Operand::Script,
            Some(NameRes::Local { binder: None }) => self.internal(
                span,
                format!("`{name}` refers to a binding with no binder to lower it from"),
            ),
            None => self.internal(
                span,
                format!("the checker recorded no resolution for this use of `{name}`"),
            ),
        }
    }

    /// The name uses bound in this unit whose use lies within `span`.
    fn uses_within(&self, span: Span) -> &[(Span, Span)] {
        let from = self.uses.partition_point(|(u, _)| u.start < span.start);
        let to = self.uses.partition_point(|(u, _)| u.start < span.end);
        self.uses.get(from..to.max(from)).unwrap_or_default()
    }

    fn define(&mut self, name: &str, binder: Span, value: Operand, stmt_span: Span) {
        let def = DefId(self.defs.len() as u32);
        self.defs.push(Def {
            id: def,
            name: name.to_owned(),
            span: binder,
            entry: self.checked.closed_entry(name, binder).cloned(),
        });
        self.emit_void(Expr::Define { def, value }, stmt_span);
        let op = Operand::Global {
            name: name.to_owned(),
            def: Some(def),
        };
        if let Some(prior) = self.cur().scope.get(&binder) {
            if *prior != op {
                self.internal(
                    binder,
                    format!("`{name}` was numbered as a different definition before lowering"),
                );
            }
        }
        self.bind(binder, op);
    }

    /// Binds every top-level named block to its definition up front, so a
    /// forward reference to it (§5.7) names that definition.
    fn predeclare_top(&mut self, stmts: &[ast::Stmt]) {
        let mut next = 0u32;
        for s in stmts {
            let ast::Stmt::Let(l) = s else { continue };
            if let Some((n, _)) = named_block(l) {
                let op = Operand::Global {
                    name: n.text.clone(),
                    def: Some(DefId(next)),
                };
                self.bind(n.span, op);
            }
            let mut binders = Vec::new();
            pattern_binders(&l.pattern, &mut binders);
            next += binders.len() as u32;
        }
    }

    // ---- statements ------------------------------------------------------------

    fn stmts(&mut self, stmts: &[ast::Stmt], top: bool) -> Operand {
        if top {
            self.top_stmts(stmts)
        } else {
            self.local_stmts(stmts)
        }
    }

    /// The top-level list: every statement in order; each `let` installs
    /// its bindings as it lands (§5.6).
    fn top_stmts(&mut self, stmts: &[ast::Stmt]) -> Operand {
        let mut last = Operand::Unit;
        for s in stmts {
            last = self.stmt(s, true);
        }
        last
    }

    fn stmt(&mut self, s: &ast::Stmt, top: bool) -> Operand {
        match s {
            ast::Stmt::Let(l) => {
                self.let_stmt(l, top);
                Operand::Unit
            }
            ast::Stmt::Chain(c) => self.chain(c),
            ast::Stmt::Error(_) => Operand::Unit,
        }
    }

    /// A block body's list: named blocks are made where [`Lower::plan`]
    /// puts them, everything else in order.
    fn local_stmts(&mut self, stmts: &[ast::Stmt]) -> Operand {
        let Some(plan) = self.plan(stmts) else {
            let mut last = Operand::Unit;
            for s in stmts {
                last = self.stmt(s, false);
            }
            return last;
        };
        let Plan {
            mut at,
            named,
            early,
        } = plan;
        let mut poisoned = HashSet::new();
        let mut last = Operand::Unit;
        for (i, s) in stmts.iter().enumerate() {
            for unit in at.get_mut(i).map(std::mem::take).unwrap_or_default() {
                self.make_unit(stmts, &unit);
            }
            for &k in early.get(i).map(Vec::as_slice).unwrap_or_default() {
                if poisoned.insert(k) {
                    self.poison(stmts, k);
                }
            }
            if named.get(i) == Some(&true) {
                last = Operand::Unit;
                continue;
            }
            last = self.stmt(s, false);
        }
        for unit in at
            .get_mut(stmts.len())
            .map(std::mem::take)
            .unwrap_or_default()
        {
            self.make_unit(stmts, &unit);
        }
        last
    }

    /// Where the named blocks of a local list are made; `None` when it has
    /// none. See the module docs.
    fn plan(&self, stmts: &[ast::Stmt]) -> Option<Plan> {
        let n = stmts.len();
        let mut node_at: Vec<Option<usize>> = vec![None; n];
        let mut nodes: Vec<usize> = Vec::new();
        let mut node_of: HashMap<Span, usize> = HashMap::new();
        let mut value_at: HashMap<Span, usize> = HashMap::new();
        for (i, s) in stmts.iter().enumerate() {
            let ast::Stmt::Let(l) = s else { continue };
            match named_block(l) {
                Some((name, _)) => {
                    node_of.insert(name.span, nodes.len());
                    node_at[i] = Some(nodes.len());
                    nodes.push(i);
                }
                None => {
                    let mut binders = Vec::new();
                    pattern_binders(&l.pattern, &mut binders);
                    for (_, b) in binders {
                        value_at.insert(b, i);
                    }
                }
            }
        }
        if nodes.is_empty() {
            return None;
        }
        let m = nodes.len();
        // Edges: node → the named blocks of this list it refers to.
        let mut edges: Vec<Vec<usize>> = vec![Vec::new(); m];
        let mut self_ref = vec![false; m];
        // The earliest position a node can be made at, from the values of
        // this list it captures.
        let mut after = vec![0usize; m];
        // The statements (not named blocks) that read each node.
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); m];
        for (i, s) in stmts.iter().enumerate() {
            for &(_, binder) in self.uses_within(s.span()) {
                let target = node_of.get(&binder).copied();
                match (node_at[i], target) {
                    (Some(k), Some(j)) if j == k => self_ref[k] = true,
                    (Some(k), Some(j)) => edges[k].push(j),
                    (Some(k), None) => {
                        if let Some(&v) = value_at.get(&binder) {
                            after[k] = after[k].max(v + 1);
                        }
                    }
                    (None, Some(j)) => readers[j].push(i),
                    (None, None) => {}
                }
            }
        }
        let comps = sccs(&edges);
        let mut comp_of = vec![0usize; m];
        for (c, comp) in comps.iter().enumerate() {
            for &k in comp {
                comp_of[k] = c;
            }
        }
        // Deps come first in `comps`: the earliest position of each unit.
        let mut earliest = vec![0usize; comps.len()];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); comps.len()];
        for (c, comp) in comps.iter().enumerate() {
            let mut e = 0;
            for &k in comp {
                e = e.max(after[k]);
                for &j in &edges[k] {
                    let d = comp_of[j];
                    if d != c {
                        e = e.max(earliest[d]);
                        dependents[d].push(c);
                    }
                }
            }
            earliest[c] = e;
        }
        // Dependents come last: where each unit is made. A unit is never
        // later than a unit that needs it, since that one's earliest
        // position is at least this one's.
        let mut place = vec![0usize; comps.len()];
        for c in (0..comps.len()).rev() {
            let comp = &comps[c];
            let mut latest = comp.iter().map(|&k| nodes[k]).min().unwrap_or(0);
            for &k in comp {
                if let Some(&q) = readers[k].iter().min() {
                    latest = latest.min(q);
                }
            }
            for &d in &dependents[c] {
                latest = latest.min(place[d]);
            }
            place[c] = earliest[c].max(latest);
        }
        let mut at: Vec<Vec<Unit>> = (0..=n).map(|_| Vec::new()).collect();
        let mut early: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (c, comp) in comps.iter().enumerate() {
            let mut members: Vec<usize> = comp.iter().map(|&k| nodes[k]).collect();
            members.sort_unstable();
            let recursive = comp.len() > 1 || comp.iter().any(|&k| self_ref[k]);
            for &k in comp {
                for &q in &readers[k] {
                    if q < place[c] {
                        early[q].push(nodes[k]);
                    }
                }
            }
            if let Some(slot) = at.get_mut(place[c]) {
                slot.push(Unit { members, recursive });
            }
        }
        let named = node_at.iter().map(Option::is_some).collect();
        Some(Plan { at, named, early })
    }

    /// Makes the named blocks of `unit` (statement indices into `stmts`).
    fn make_unit(&mut self, stmts: &[ast::Stmt], unit: &Unit) {
        let members: Vec<(&ast::Let, &ast::Name, &ast::Block)> = unit
            .members
            .iter()
            .filter_map(|&i| match stmts.get(i) {
                Some(ast::Stmt::Let(l)) => named_block(l).map(|(n, b)| (l, n, b)),
                Some(ast::Stmt::Chain(_) | ast::Stmt::Error(_)) | None => None,
            })
            .collect();
        if !unit.recursive {
            for (l, n, b) in members {
                let thunk = self.block_ty(&l.value);
                let v = self.closure(b, Some(n.text.clone()), thunk, false);
                self.bind(n.span, v);
            }
            return;
        }
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let siblings: Rc<HashMap<Span, u32>> = Rc::new(
            members
                .iter()
                .enumerate()
                .map(|(j, m)| (m.1.span, j as u32))
                .collect(),
        );
        let mut funcs = Vec::new();
        for (l, n, b) in &members {
            let thunk = self.block_ty(&l.value);
            funcs.push(self.block_func(
                b,
                Some(n.text.clone()),
                env,
                Some(Rc::clone(&siblings)),
                thunk,
                false,
            ));
        }
        let dsts: Vec<LocalId> = members.iter().map(|_| self.new_local()).collect();
        let captures = self.envs.get(env).cloned().unwrap_or_default();
        let span = Span::new(
            members.first().map_or(0, |m| m.0.span.start),
            members.last().map_or(0, |m| m.0.span.end),
        );
        self.emit_void(
            Expr::MakeRecGroup {
                funcs,
                captures,
                dsts: dsts.clone(),
            },
            span,
        );
        for ((_, n, _), d) in members.iter().zip(dsts) {
            self.bind(n.span, Operand::Local(d));
        }
    }

    /// Binds the named block at `stmts[i]`, read before it can be made, to
    /// a closure that fails saying so.
    fn poison(&mut self, stmts: &[ast::Stmt], i: usize) {
        let Some(ast::Stmt::Let(l)) = stmts.get(i) else {
            return;
        };
        let Some((n, _)) = named_block(l) else { return };
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let func = self.open_func(Some(n.text.clone()), Some(env), l.span);
        let message = format!(
            "block `{}` runs before a later block definition it refers to has been made (§5.7)",
            n.text
        );
        let result = self.fail_with(&message, l.span);
        self.close_func(func, Vec::new(), result, false);
        let v = self.emit(
            Expr::MakeClosure {
                func,
                captures: Vec::new(),
            },
            l.span,
        );
        self.bind(n.span, v);
    }

    fn let_stmt(&mut self, l: &ast::Let, top: bool) {
        if let Some((n, b)) = named_block(l) {
            let thunk = self.block_ty(&l.value);
            let value = self.closure(b, Some(n.text.clone()), thunk, false);
            self.bind_pattern(&l.pattern, value, top, l.span, None);
            return;
        }
        let captured = self.checked.elab.captures.get(l.pattern.id) == Some(&CaptureSite::LetRhs);
        let (value, known) = if captured {
            let b = self.sub_block(|s| s.chain(&l.value));
            (self.emit(Expr::Capture(b), l.value.span), None)
        } else {
            let known = self.chain_value_ty(&l.value).map(Known::Ty);
            (self.chain(&l.value), known)
        };
        self.bind_pattern(&l.pattern, value, top, l.span, known);
    }

    fn bind_pattern(
        &mut self,
        p: &Pattern,
        value: Operand,
        top: bool,
        span: Span,
        known: Option<Known>,
    ) {
        self.note_types(p, known);
        match &p.kind {
            PatternKind::Wildcard | PatternKind::Error => {}
            PatternKind::Bind(n) => {
                if top {
                    self.define(&n.text, n.span, value, span);
                } else {
                    let op = match value {
                        Operand::Local(_) => value,
                        other @ (Operand::Unit
                        | Operand::Const(_)
                        | Operand::Captured(_)
                        | Operand::Global { .. }
                        | Operand::Sibling(_)
                        | Operand::Builtin(_)
                        | Operand::Script) => self.emit(Expr::Value(other), n.span),
                    };
                    self.bind(n.span, op);
                }
            }
            PatternKind::List { .. } | PatternKind::Record { .. } => {
                let mut binds = Vec::new();
                let pattern = self.pat(p, &mut binds);
                self.emit_void(Expr::Destructure { value, pattern }, span);
                for (name, l, nspan) in binds {
                    if top {
                        self.define(&name, nspan, Operand::Local(l), span);
                    } else {
                        self.bind(nspan, Operand::Local(l));
                    }
                }
            }
        }
    }

    fn pat(&mut self, p: &Pattern, binds: &mut Vec<(String, LocalId, Span)>) -> Pat {
        match &p.kind {
            PatternKind::Wildcard | PatternKind::Error => Pat::Wildcard,
            PatternKind::Bind(n) => {
                let l = self.new_local();
                binds.push((n.text.clone(), l, n.span));
                Pat::Bind(l)
            }
            PatternKind::List { items, rest } => {
                let items = items.iter().map(|q| self.pat(q, binds)).collect();
                let rest = rest.as_ref().map(|n| {
                    if n.text == "_" {
                        None
                    } else {
                        let l = self.new_local();
                        binds.push((n.text.clone(), l, n.span));
                        Some(l)
                    }
                });
                Pat::List { items, rest }
            }
            PatternKind::Record { fields } => Pat::Fields(
                fields
                    .iter()
                    .map(|f| (Arc::from(f.key.text.as_str()), self.pat(&f.pattern, binds)))
                    .collect(),
            ),
        }
    }

    // ---- what the checker's types say ------------------------------------------

    fn view(&self, t: Ty) -> TyView {
        let store = &self.checked.store;
        store.view(store.find_imm(t))
    }

    /// The recorded type of the block literal a `let` binds, if any.
    fn block_ty(&self, c: &ast::Chain) -> Option<Ty> {
        let atom = block_head_atom(c)?;
        self.checked.elab.atom_types.get(atom.id).copied()
    }

    /// The parameter types of a block of type `thunk`, `n` of them (`None`
    /// where unknown).
    fn param_tys(&self, thunk: Option<Ty>, n: usize) -> Vec<Option<Ty>> {
        let mut out = Vec::with_capacity(n);
        let mut comp = match thunk.map(|t| self.view(t)) {
            Some(TyView::Con(Con::Thunk(c))) => Some(c),
            Some(TyView::Con(_) | TyView::Var(..)) | None => None,
        };
        for _ in 0..n {
            match comp.map(|c| self.view(c)) {
                Some(TyView::Con(Con::Arrow { param, result })) => {
                    out.push(Some(param));
                    comp = Some(result);
                }
                Some(TyView::Con(_) | TyView::Var(..)) | None => {
                    out.push(None);
                    comp = None;
                }
            }
        }
        out
    }

    /// The value a `let` right-hand side (not captured) produces, from the
    /// type of its one pipeline's last stage.
    fn chain_value_ty(&self, c: &ast::Chain) -> Option<Ty> {
        let [p] = c.alternatives.as_slice() else {
            return None;
        };
        let last = p.stages.last()?;
        let t = *self.checked.elab.stage_types.get(last.id)?;
        match self.view(t) {
            TyView::Con(Con::Returns { value, .. }) => Some(value),
            TyView::Con(_) | TyView::Var(..) => None,
        }
    }

    /// The type of field `label` of a record type's row.
    fn field_ty(&self, row: Ty, label: &str) -> Option<Ty> {
        let (fields, _) = self.checked.store.row_parts(row);
        fields
            .into_iter()
            .find(|(l, _)| l.as_str() == label)
            .map(|(_, t)| t)
    }

    /// Records what `known` says about each name `p` binds.
    fn note_types(&mut self, p: &Pattern, known: Option<Known>) {
        let Some(known) = known else { return };
        match &p.kind {
            PatternKind::Wildcard | PatternKind::Error => {}
            PatternKind::Bind(n) => {
                self.binder_tys.insert(n.span, known);
            }
            PatternKind::List { items, rest } => {
                let Known::Ty(t) = known else { return };
                let elem = match self.view(t) {
                    TyView::Con(Con::List(e)) => Some(Known::Ty(e)),
                    TyView::Con(_) | TyView::Var(..) => None,
                };
                for q in items {
                    self.note_types(q, elem);
                }
                if let Some(r) = rest {
                    if r.text != "_" {
                        self.binder_tys.insert(r.span, known);
                    }
                }
            }
            PatternKind::Record { fields } => {
                let Known::Ty(t) = known else { return };
                match self.view(t) {
                    TyView::Con(Con::Map(e)) => {
                        for f in fields {
                            self.note_types(&f.pattern, Some(Known::Ty(e)));
                        }
                    }
                    TyView::Con(Con::Record(row)) => {
                        for f in fields {
                            let ft = self.field_ty(row, &f.key.text).map(Known::Ty);
                            self.note_types(&f.pattern, ft);
                        }
                    }
                    TyView::Con(_) | TyView::Var(..) => {}
                }
            }
        }
    }

    /// What is known of the value of an atom's primary (before its keys).
    fn primary_known(&self, a: &Atom) -> Option<Known> {
        match &a.primary {
            Primary::Var(n) => match self.checked.elab.names.get(&n.span)? {
                NameRes::Local { binder: Some(b) } => self.binder_tys.get(b).copied(),
                NameRes::Local { binder: None }
                | NameRes::Forward { .. }
                | NameRes::Session
                | NameRes::Builtin(_)
                | NameRes::Script => None,
            },
            Primary::Expr(e) => self
                .checked
                .elab
                .atom_types
                .get(e.id)
                .copied()
                .map(Known::Ty),
            Primary::Force(inner) => {
                if self.checked.elab.captures.get(a.id) == Some(&CaptureSite::Force) {
                    return None;
                }
                let t = *self.checked.elab.atom_types.get(inner.id)?;
                let TyView::Con(Con::Thunk(c)) = self.view(t) else {
                    return None;
                };
                match self.view(c) {
                    TyView::Con(Con::Returns { value, .. }) => Some(Known::Ty(value)),
                    TyView::Con(_) | TyView::Var(..) => None,
                }
            }
            Primary::Word(_)
            | Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Str(_)
            | Primary::Tag { .. }
            | Primary::Block(_)
            | Primary::List(_)
            | Primary::Record(_)
            | Primary::Map(_)
            | Primary::Error => None,
        }
    }

    /// How `container[key]` reads, and what is known of the element.
    fn index_kind(&self, container: Option<Known>, key: &IndexKey) -> (IndexKind, Option<Known>) {
        let con = match container {
            Some(Known::Ty(t)) => match self.view(t) {
                TyView::Con(c) => Some(c),
                TyView::Var(..) => None,
            },
            Some(Known::TryError) => {
                return match key {
                    IndexKey::Label(k) => (IndexKind::Field(Arc::from(k.as_str())), None),
                    IndexKey::Int(_) | IndexKey::Computed(_) => (IndexKind::Dynamic, None),
                };
            }
            None => None,
        };
        match (key, con) {
            (IndexKey::Int(_), Some(Con::List(e))) => (IndexKind::List, Some(Known::Ty(e))),
            // The checker made the container a list.
            (IndexKey::Int(_), _) => (IndexKind::List, None),
            (IndexKey::Label(_), Some(Con::Map(e))) => (IndexKind::Map, Some(Known::Ty(e))),
            (IndexKey::Label(k), Some(Con::Record(row))) => match self.field_ty(row, k) {
                Some(ft) => (IndexKind::Field(Arc::from(k.as_str())), Some(Known::Ty(ft))),
                None => (IndexKind::Dynamic, None),
            },
            (IndexKey::Label(_), _) => (IndexKind::Dynamic, None),
            (IndexKey::Computed(_), Some(Con::List(e))) => (IndexKind::List, Some(Known::Ty(e))),
            (IndexKey::Computed(_), Some(Con::Map(e))) => (IndexKind::Map, Some(Known::Ty(e))),
            (IndexKey::Computed(k), _) => match self.con_of(*k) {
                Some(Con::Int) => (IndexKind::List, None),
                Some(Con::String) => (IndexKind::Map, None),
                _ => (IndexKind::Dynamic, None),
            },
        }
    }

    // ---- chains, pipelines, stages -------------------------------------------

    fn chain(&mut self, c: &ast::Chain) -> Operand {
        if let [p] = c.alternatives.as_slice() {
            return self.pipeline(p);
        }
        let mut blocks = Vec::new();
        for p in &c.alternatives {
            let b = self.sub_block(|s| s.pipeline(p));
            let b = match p.stages.last() {
                Some(last) => self.join_arm(last.id, b, p.span),
                None => b,
            };
            blocks.push(b);
        }
        self.emit(Expr::Chain(blocks), c.span)
    }

    fn pipeline(&mut self, p: &ast::Pipeline) -> Operand {
        if let [s] = p.stages.as_slice() {
            return self.stage(s);
        }
        let blocks = p
            .stages
            .iter()
            .map(|s| self.sub_block(|cx| cx.stage(s)))
            .collect();
        self.emit(Expr::Pipeline(blocks), p.span)
    }

    fn stage(&mut self, s: &ast::Stage) -> Operand {
        match &s.kind {
            StageKind::Return(a) => match a {
                Some(a) => self.atom(a),
                None => Operand::Unit,
            },
            StageKind::If(f) => self.if_chain(f, 0, s.span),
            StageKind::Case(c) => {
                let scrutinee = self.atom(&c.scrutinee);
                let tags = self.variant_tags(c.scrutinee.id);
                let mut arms = Vec::new();
                for arm in &c.arms {
                    let payload = self.new_local();
                    let known = tags
                        .iter()
                        .find(|(l, _)| l.as_str() == arm.tag.text)
                        .map(|(_, t)| Known::Ty(*t));
                    let body = self.arm_block(&arm.arm, Some((Operand::Local(payload), known)));
                    arms.push(CaseArm {
                        tag: Arc::from(arm.tag.text.as_str()),
                        payload,
                        body,
                    });
                }
                self.emit(Expr::Case { scrutinee, arms }, s.span)
            }
            StageKind::Scope(sc) => {
                if sc.redirects.is_empty() {
                    self.scope_form(sc, s.span)
                } else {
                    let redirects = self.redirects(&sc.redirects);
                    let body = self.sub_block(|cx| cx.scope_form(sc, s.span));
                    self.emit(Expr::Redirected { body, redirects }, s.span)
                }
            }
            StageKind::Command(c) => self.command(s, c),
        }
    }

    fn if_chain(&mut self, f: &ast::If, i: usize, span: Span) -> Operand {
        let Some(br) = f.branches.get(i) else {
            return Operand::Unit;
        };
        let cond = self.atom(&br.cond);
        let then = self.arm_block(&br.arm, None);
        let otherwise = if i + 1 < f.branches.len() {
            self.sub_block(|s| s.if_chain(f, i + 1, span))
        } else if let Some(e) = &f.else_arm {
            self.arm_block(e, None)
        } else {
            Block {
                stmts: Vec::new(),
                result: Operand::Unit,
            }
        };
        self.emit(
            Expr::If {
                cond,
                then,
                otherwise,
            },
            span,
        )
    }

    /// An arm of `if`/`case`/a scope form: a block literal inline (its first
    /// parameter bound to `payload`), otherwise a name or value forced (or
    /// applied to `payload`).
    fn arm_block(&mut self, a: &Atom, payload: Option<(Operand, Option<Known>)>) -> Block {
        let b = self.sub_block(|s| {
            if let (Primary::Block(b), true) = (&a.primary, a.indexes.is_empty()) {
                if payload.is_none() && !b.params.is_empty() {
                    // An arm that is a function (`if $c { |x| … } else
                    // { |x| … }`): forcing it in place yields the function
                    // itself (§8.2, §17.6), which the form returns.
                    let thunk = s.checked.elab.atom_types.get(a.id).copied();
                    return s.closure(b, None, thunk, false);
                }
                let mut params = b.params.iter();
                if let (Some((p, known)), Some(pat)) = (payload, params.next()) {
                    s.bind_pattern(pat, p, false, pat.span, known);
                }
                return s.stmts(&b.body.stmts, false);
            }
            let v = s.atom(a);
            match payload {
                Some((p, _)) if !s.is_plain_thunk(a.id) => s.emit(
                    Expr::Call {
                        func: v,
                        args: vec![p],
                        tail: false,
                    },
                    a.span,
                ),
                Some(_) | None => s.emit(
                    Expr::Force {
                        thunk: v,
                        tail: false,
                    },
                    a.span,
                ),
            }
        });
        self.join_arm(a.id, b, a.span)
    }

    /// Whether the atom's type is a thunk of a plain computation (no arrow).
    fn is_plain_thunk(&self, id: ast::NodeId) -> bool {
        let store = &self.checked.store;
        let Some(t) = self.checked.elab.atom_types.get(id) else {
            return false;
        };
        if let TyView::Con(Con::Thunk(c)) = store.view(store.find_imm(*t)) {
            return matches!(
                store.view(store.find_imm(c)),
                TyView::Con(Con::Returns { .. })
            );
        }
        false
    }

    /// The tags of the variant type of atom `id`, with their payload types.
    fn variant_tags(&self, id: ast::NodeId) -> Vec<(ral_types::Label, Ty)> {
        let Some(t) = self.checked.elab.atom_types.get(id) else {
            return Vec::new();
        };
        match self.view(*t) {
            TyView::Con(Con::Variant(row)) => self.checked.store.row_parts(row).0,
            TyView::Con(_) | TyView::Var(..) => Vec::new(),
        }
    }

    fn scope_form(&mut self, sc: &ast::ScopeForm, span: Span) -> Operand {
        let expr = match &sc.kind {
            ScopeKind::Try { body, handler } => {
                let body = self.arm_block(body, None);
                let error = self.new_local();
                let handler = self.arm_block(
                    handler,
                    Some((Operand::Local(error), Some(Known::TryError))),
                );
                Expr::Try {
                    body,
                    error,
                    handler,
                }
            }
            ScopeKind::Guard { body, cleanup } => {
                let body = self.arm_block(body, None);
                let cleanup = self.arm_block(cleanup, None);
                Expr::Guard { body, cleanup }
            }
            ScopeKind::Within { options, body } => {
                let options = self.atom(options);
                let body = self.arm_block(body, None);
                Expr::Within { options, body }
            }
            ScopeKind::Grant { caps, body } => {
                let caps = self.atom(caps);
                let body = self.arm_block(body, None);
                Expr::Grant { caps, body }
            }
            ScopeKind::Audit { body } => {
                let body = self.arm_block(body, None);
                Expr::Audit { body }
            }
        };
        self.emit(expr, span)
    }

    fn command(&mut self, s: &ast::Stage, c: &ast::Command) -> Operand {
        let head = self.checked.elab.heads.get(s.id).cloned();
        match head {
            Some(HeadRes::BaseHandler(id)) => self.exec(ExecHead::Base(id), c, s.span),
            Some(HeadRes::External(name)) => {
                let head = match c.head.class() {
                    HeadClass::Caret(_) => ExecHead::External(name),
                    HeadClass::Bare(_) | HeadClass::Path(_) | HeadClass::Value => {
                        ExecHead::Name(name)
                    }
                };
                self.exec(head, c, s.span)
            }
            Some(HeadRes::Path(p)) => {
                let op = self.word(&p, c.head.span());
                self.exec(ExecHead::Path(op), c, s.span)
            }
            Some(HeadRes::Binding(name)) => {
                let f = self.name_use(&name, c.head.span());
                self.apply(f, c, true, s.span)
            }
            Some(HeadRes::Builtin(id)) => {
                // A door applied short of its arguments is a door value:
                // the wrapper admits when the rest arrive (§7.3).
                let partial = self
                    .checked
                    .elab
                    .boundaries
                    .get(s.id)
                    .is_some_and(|b| c.args.len() < b.arity);
                if partial {
                    let door = self.admitting_wrapper(Operand::Builtin(id), s.id, c.head.span());
                    return self.apply(door, c, true, s.span);
                }
                let v = self.apply(Operand::Builtin(id), c, true, s.span);
                self.admit(s, v)
            }
            Some(HeadRes::Value) | None if !c.redirects.is_empty() => {
                // A redirect attaches to the whole command, its head
                // included (§7.4, §17.2 `redirect M redirects`): a forced
                // head (`!{ echo hi } > f`, `!$b < in`) runs inside the
                // redirect scope. The arguments and the targets are values,
                // evaluated first.
                let args = self.args(c);
                let redirects = self.redirects(&c.redirects);
                let span = s.span;
                let body = self.sub_block(|cx| {
                    let v = match &c.head {
                        Head::Atom(a) => cx.atom(a),
                        Head::Caret(n) => cx.word(&n.text, n.span),
                    };
                    if args.is_empty() {
                        v
                    } else {
                        let expr = application(v, args, false);
                        cx.emit(expr, span)
                    }
                });
                self.emit(Expr::Redirected { body, redirects }, s.span)
            }
            Some(HeadRes::Value) | None => {
                let v = match &c.head {
                    Head::Atom(a) => self.atom(a),
                    Head::Caret(n) => self.word(&n.text, n.span),
                };
                if c.args.is_empty() && c.redirects.is_empty() {
                    v
                } else {
                    self.apply(v, c, false, s.span)
                }
            }
        }
    }

    /// A boundary call's value admitted against the type the program uses
    /// it at (§7.3, §17.3): `_admit door site v`, when the checker froze a
    /// site for stage `s`.
    fn admit(&mut self, s: &ast::Stage, v: Operand) -> Operand {
        self.admit_at(s.id, v, s.span)
    }

    /// `_admit door site v` for the site the checker froze at node `id`.
    fn admit_at(&mut self, id: ast::NodeId, v: Operand, span: Span) -> Operand {
        let Some(b) = self.checked.elab.boundaries.get(id) else {
            return v;
        };
        let Some(admit) = ral_types::builtin_table().id("_admit") else {
            return v;
        };
        let door = Operand::Const(Const::Str(Arc::from(b.door)));
        let site = Operand::Const(Const::Str(Arc::from(b.site.to_string())));
        self.emit(
            Expr::Call {
                func: Operand::Builtin(admit),
                args: vec![door, site, v],
                tail: false,
            },
            span,
        )
    }

    /// A door reached as a value (`$from-json`, `from-json-at` short of
    /// its argument): `{|x1 … xn| _admit door site (door x1 … xn)}`, so
    /// every call of the value, wherever it was bound, passed or stored,
    /// admits its result against the type the unit uses it at (§7.3). The
    /// door is a builtin, so the wrapper captures nothing.
    fn admitting_wrapper(&mut self, door: Operand, id: ast::NodeId, span: Span) -> Operand {
        let Some(arity) = self.checked.elab.boundaries.get(id).map(|b| b.arity) else {
            return door;
        };
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let func = self.open_func(None, Some(env), span);
        let params: Vec<LocalId> = (0..arity).map(|_| self.new_local()).collect();
        let expr = if params.is_empty() {
            Expr::Force {
                thunk: door,
                tail: false,
            }
        } else {
            Expr::Call {
                func: door,
                args: params.iter().map(|l| Operand::Local(*l)).collect(),
                tail: false,
            }
        };
        let v = self.emit(expr, span);
        let result = self.admit_at(id, v, span);
        self.close_func(func, params, result, false);
        let captures = self.envs.get(env).cloned().unwrap_or_default();
        self.emit(Expr::MakeClosure { func, captures }, span)
    }

    fn args(&mut self, c: &ast::Command) -> Vec<Part> {
        c.args
            .iter()
            .map(|a| match a {
                Arg::Atom(a) => Part::One(self.atom(a)),
                Arg::Spread { value, .. } => Part::Spread(self.atom(value)),
            })
            .collect()
    }

    fn exec(&mut self, head: ExecHead, c: &ast::Command, span: Span) -> Operand {
        let args = self.args(c);
        let redirects = self.redirects(&c.redirects);
        self.emit(
            Expr::Exec {
                head,
                args,
                redirects,
            },
            span,
        )
    }

    /// Applies `f` to the command's arguments; with none, forces it when
    /// `force` (a named head) or returns it.
    fn apply(&mut self, f: Operand, c: &ast::Command, force: bool, span: Span) -> Operand {
        let args = self.args(c);
        let expr = application(f, args, force);
        if c.redirects.is_empty() {
            return self.emit(expr, span);
        }
        let redirects = self.redirects(&c.redirects);
        let body = self.sub_block(|s| s.emit(expr, span));
        self.emit(Expr::Redirected { body, redirects }, span)
    }

    /// The redirects with their targets evaluated in written order (§7.4:
    /// targets are evaluated before any file opens), listed in the one
    /// fixed order their files open in: standard input, output, error.
    fn redirects(&mut self, rs: &[ast::Redirect]) -> Vec<Redirect> {
        let mut out: Vec<Redirect> = rs
            .iter()
            .map(|r| {
                let kind = match &r.op {
                    ast::RedirectKind::Write(a) => RedirectKind::Write(self.atom(a)),
                    ast::RedirectKind::Stream(a) => RedirectKind::Stream(self.atom(a)),
                    ast::RedirectKind::Append(a) => RedirectKind::Append(self.atom(a)),
                    ast::RedirectKind::Read(a) => RedirectKind::Read(self.atom(a)),
                    ast::RedirectKind::Here(a) => RedirectKind::Here(self.atom(a)),
                    ast::RedirectKind::Dup { target } => {
                        if r.fd == 2 && *target == 1 {
                            RedirectKind::ErrToOut
                        } else {
                            RedirectKind::Dup(*target)
                        }
                    }
                };
                Redirect { fd: r.fd, kind }
            })
            .collect();
        out.sort_by_key(|r| r.fd);
        out
    }

    // ---- atoms -----------------------------------------------------------------

    fn atom(&mut self, a: &Atom) -> Operand {
        let mut known = if a.indexes.is_empty() {
            None
        } else {
            self.primary_known(a)
        };
        let mut v = self.primary(a);
        if matches!(a.primary, Primary::Var(_)) && self.checked.elab.boundaries.get(a.id).is_some()
        {
            v = self.admitting_wrapper(v, a.id, a.span);
        }
        for ix in &a.indexes {
            let k = &ix.key;
            let key = if k.indexes.is_empty() {
                match &k.primary {
                    Primary::Word(w) => IndexKey::Label(w.clone()),
                    Primary::Str(s) => match s.as_plain() {
                        Some(t) => IndexKey::Label(t),
                        None => IndexKey::Computed(k.id),
                    },
                    Primary::Int(i) => IndexKey::Int(*i),
                    Primary::Float(_)
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
                    | Primary::Error => IndexKey::Computed(k.id),
                }
            } else {
                IndexKey::Computed(k.id)
            };
            let (kind, elem) = self.index_kind(known, &key);
            known = elem;
            let key = match key {
                IndexKey::Label(w) => Operand::Const(Const::Str(Arc::from(w))),
                IndexKey::Int(i) => Operand::Const(Const::Int(i)),
                IndexKey::Computed(_) => self.atom(k),
            };
            v = self.emit(Expr::Index { base: v, key, kind }, ix.span);
        }
        let block_literal = matches!(a.primary, Primary::Block(_)) && a.indexes.is_empty();
        if !block_literal && self.checked.elab.captures.get(a.id) == Some(&CaptureSite::BlockArg) {
            return self.capturing_wrapper(v, a);
        }
        v
    }

    /// `{|x1 … xn| capture (f x1 … xn)}` for a block argument `f` that is
    /// not a literal but whose output the checker said becomes its value.
    fn capturing_wrapper(&mut self, f: Operand, a: &Atom) -> Operand {
        let arity = self.arity_of(a.id);
        let env = self.envs.len();
        let inner = match f {
            Operand::Local(_) | Operand::Captured(_) | Operand::Sibling(_) => {
                self.envs.push(vec![f]);
                Operand::Captured(0)
            }
            other @ (Operand::Unit
            | Operand::Const(_)
            | Operand::Global { .. }
            | Operand::Builtin(_)
            | Operand::Script) => {
                self.envs.push(Vec::new());
                other
            }
        };
        let id = self.open_func(None, Some(env), a.span);
        let params: Vec<LocalId> = (0..arity).map(|_| self.new_local()).collect();
        let expr = if params.is_empty() {
            Expr::Force {
                thunk: inner,
                tail: false,
            }
        } else {
            Expr::Call {
                func: inner,
                args: params.iter().map(|l| Operand::Local(*l)).collect(),
                tail: false,
            }
        };
        let result = self.emit(expr, a.span);
        self.close_func(id, params, result, true);
        let captures = self.envs.get(env).cloned().unwrap_or_default();
        self.emit(Expr::MakeClosure { func: id, captures }, a.span)
    }

    /// How many arguments the thunk-typed atom `id` takes.
    fn arity_of(&self, id: ast::NodeId) -> usize {
        let store = &self.checked.store;
        let Some(t) = self.checked.elab.atom_types.get(id) else {
            return 0;
        };
        let TyView::Con(Con::Thunk(mut c)) = store.view(store.find_imm(*t)) else {
            return 0;
        };
        let mut n = 0;
        while let TyView::Con(Con::Arrow { result, .. }) = store.view(store.find_imm(c)) {
            n += 1;
            c = result;
        }
        n
    }

    fn con_of(&self, id: ast::NodeId) -> Option<Con<ral_types::Ty>> {
        let store = &self.checked.store;
        let t = self.checked.elab.atom_types.get(id)?;
        match store.view(store.find_imm(*t)) {
            TyView::Con(c) => Some(c),
            TyView::Var(..) => None,
        }
    }

    fn word(&mut self, w: &str, span: Span) -> Operand {
        match ast::home_rest(w) {
            Some(rest) => {
                let mut parts = vec![InterpPart::Home];
                if !rest.is_empty() {
                    parts.push(InterpPart::Text(Arc::from(rest)));
                }
                self.emit(Expr::Interp(parts), span)
            }
            None => Operand::Const(Const::Str(Arc::from(w))),
        }
    }

    fn primary(&mut self, a: &Atom) -> Operand {
        match &a.primary {
            Primary::Word(w) => self.word(w, a.span),
            Primary::Int(i) => Operand::Const(Const::Int(*i)),
            Primary::Float(f) => Operand::Const(Const::Float(*f)),
            Primary::Bool(b) => Operand::Const(Const::Bool(*b)),
            Primary::Unit | Primary::Error => Operand::Unit,
            Primary::Str(s) => {
                if let Some(t) = s.as_plain() {
                    return Operand::Const(Const::Str(Arc::from(t)));
                }
                let parts = s
                    .parts
                    .iter()
                    .map(|p| match p {
                        StrPart::Text(t) => InterpPart::Text(Arc::from(t.as_str())),
                        StrPart::Home => InterpPart::Home,
                        StrPart::Splice(x) => InterpPart::Value(self.atom(x)),
                    })
                    .collect();
                self.emit(Expr::Interp(parts), a.span)
            }
            Primary::Var(n) => self.name_use(&n.text, n.span),
            Primary::Expr(e) => self.expr(e),
            Primary::Force(inner) => {
                // `!{ … }` forces a block it has just written: lower the body
                // in place, in a scope of its own, instead of making a
                // closure only to call it once.
                if let (Primary::Block(b), true) = (&inner.primary, inner.indexes.is_empty()) {
                    if b.params.is_empty() {
                        let captured =
                            self.checked.elab.captures.get(a.id) == Some(&CaptureSite::Force);
                        if captured {
                            let body = self.sub_block(|s| s.stmts(&b.body.stmts, false));
                            return self.emit(Expr::Capture(body), a.span);
                        }
                        return self.stmts(&b.body.stmts, false);
                    }
                }
                let thunk = self.atom(inner);
                let force = Expr::Force { thunk, tail: false };
                if self.checked.elab.captures.get(a.id) == Some(&CaptureSite::Force) {
                    let b = self.sub_block(|s| s.emit(force, a.span));
                    self.emit(Expr::Capture(b), a.span)
                } else {
                    self.emit(force, a.span)
                }
            }
            Primary::Tag { name, payload } => {
                let payload = payload.as_ref().map(|p| self.atom(p));
                self.emit(
                    Expr::MakeVariant {
                        tag: Arc::from(name.text.as_str()),
                        payload,
                    },
                    a.span,
                )
            }
            Primary::Block(b) => {
                let capture = self.checked.elab.captures.get(a.id) == Some(&CaptureSite::BlockArg);
                let thunk = self.checked.elab.atom_types.get(a.id).copied();
                self.closure(b, None, thunk, capture)
            }
            Primary::List(items) => {
                let parts = items
                    .iter()
                    .map(|it| match it {
                        ListItem::Item(x) => Part::One(self.atom(x)),
                        ListItem::Spread { value, .. } => Part::Spread(self.atom(value)),
                    })
                    .collect();
                self.emit(Expr::MakeList(parts), a.span)
            }
            Primary::Record(entries) => {
                let mut base = None;
                let mut fields = Vec::new();
                for en in entries {
                    match en {
                        Entry::Field { key, value, .. } => {
                            let k = match key {
                                Key::Static(n) | Key::Computed(n) => n.text.as_str(),
                            };
                            let v = self.atom(value);
                            fields.push((Arc::from(k), v));
                        }
                        Entry::Spread { value, .. } => base = Some(self.atom(value)),
                    }
                }
                self.emit(Expr::MakeRecord { base, fields }, a.span)
            }
            Primary::Map(entries) => {
                let mut parts = Vec::new();
                for en in entries {
                    match en {
                        Entry::Field { key, value, .. } => {
                            let key = match key {
                                Key::Static(n) => {
                                    Operand::Const(Const::Str(Arc::from(n.text.as_str())))
                                }
                                Key::Computed(n) => self.name_use(&n.text, n.span),
                            };
                            let value = self.atom(value);
                            parts.push(MapPart::Entry { key, value });
                        }
                        Entry::Spread { value, .. } => {
                            parts.push(MapPart::Spread(self.atom(value)))
                        }
                    }
                }
                self.emit(Expr::MakeMap(parts), a.span)
            }
        }
    }

    fn num_kind(&self, id: ast::NodeId) -> NumKind {
        match self.con_of(id) {
            Some(Con::Int) => NumKind::Int,
            Some(Con::Float) => NumKind::Float,
            _ => NumKind::Generic,
        }
    }

    fn expr(&mut self, e: &ast::Expr) -> Operand {
        match &e.kind {
            ExprKind::Atom(a) => self.atom(a),
            ExprKind::Paren(x) => self.expr(x),
            ExprKind::Unary { op, operand } => {
                let v = self.expr(operand);
                match op {
                    ast::UnOp::Neg => {
                        let kind = self.num_kind(operand.id);
                        self.emit(Expr::Neg { kind, operand: v }, e.span)
                    }
                    ast::UnOp::Not => self.emit(Expr::Not(v), e.span),
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let l = self.expr(lhs);
                if matches!(op, ast::BinOp::And | ast::BinOp::Or) {
                    let rhs_block = self.sub_block(|s| s.expr(rhs));
                    let short = Block {
                        stmts: Vec::new(),
                        result: Operand::Const(Const::Bool(*op == ast::BinOp::Or)),
                    };
                    let (then, otherwise) = if *op == ast::BinOp::And {
                        (rhs_block, short)
                    } else {
                        (short, rhs_block)
                    };
                    return self.emit(
                        Expr::If {
                            cond: l,
                            then,
                            otherwise,
                        },
                        e.span,
                    );
                }
                let r = self.expr(rhs);
                let arith = |op| Expr::Arith {
                    op,
                    kind: self.num_kind(lhs.id),
                    lhs: l.clone(),
                    rhs: r.clone(),
                };
                let ord = match self.con_of(lhs.id) {
                    Some(Con::Int) => OrdKind::Int,
                    Some(Con::Float) => OrdKind::Float,
                    Some(Con::String) => OrdKind::Str,
                    _ => OrdKind::Generic,
                };
                let cmp = |op| Expr::Compare {
                    op,
                    kind: ord,
                    lhs: l.clone(),
                    rhs: r.clone(),
                };
                let expr = match op {
                    ast::BinOp::Add => arith(ArithOp::Add),
                    ast::BinOp::Sub => arith(ArithOp::Sub),
                    ast::BinOp::Mul => arith(ArithOp::Mul),
                    ast::BinOp::Div => arith(ArithOp::Div),
                    ast::BinOp::Rem => Expr::Arith {
                        op: ArithOp::Rem,
                        kind: NumKind::Int,
                        lhs: l.clone(),
                        rhs: r.clone(),
                    },
                    ast::BinOp::Lt => cmp(CmpOp::Lt),
                    ast::BinOp::Gt => cmp(CmpOp::Gt),
                    ast::BinOp::Le => cmp(CmpOp::Le),
                    ast::BinOp::Ge => cmp(CmpOp::Ge),
                    ast::BinOp::Eq | ast::BinOp::Ne | ast::BinOp::And | ast::BinOp::Or => {
                        Expr::Equal {
                            lhs: l.clone(),
                            rhs: r.clone(),
                            negate: *op == ast::BinOp::Ne,
                        }
                    }
                };
                self.emit(expr, e.span)
            }
        }
    }
}

/// `f` applied to `args` (a spread among them makes a [`Expr::CallSpread`]);
/// with no arguments, `f` forced when `force` (a named head) or returned.
fn application(f: Operand, args: Vec<Part>, force: bool) -> Expr {
    if args.is_empty() {
        if force {
            Expr::Force {
                thunk: f,
                tail: false,
            }
        } else {
            Expr::Value(f)
        }
    } else if args.iter().all(|p| matches!(p, Part::One(_))) {
        Expr::Call {
            func: f,
            args: args
                .into_iter()
                .filter_map(|p| match p {
                    Part::One(o) => Some(o),
                    Part::Spread(_) => None,
                })
                .collect(),
            tail: false,
        }
    } else {
        Expr::CallSpread {
            func: f,
            args,
            tail: false,
        }
    }
}

/// Marks calls and forces in tail position of `b`: through `if` and `case`
/// arms, the last alternative of a `?` chain (the earlier ones' handlers are
/// gone when it runs) and a `try` handler (the body's handler is gone too);
/// spec §5.7. The compiler still declines a tail call inside a frame that
/// must outlive it (a handler, a capture, a scope).
fn mark_tail(b: &mut Block) {
    let result = b.result.clone();
    let Some(last) = b.stmts.last_mut() else {
        return;
    };
    if last.dst.map(Operand::Local) != Some(result) {
        return;
    }
    match &mut last.expr {
        Expr::Call { tail, .. } | Expr::CallSpread { tail, .. } | Expr::Force { tail, .. } => {
            *tail = true;
        }
        Expr::If {
            then, otherwise, ..
        } => {
            mark_tail(then);
            mark_tail(otherwise);
        }
        Expr::Case { arms, .. } => {
            for arm in arms {
                mark_tail(&mut arm.body);
            }
        }
        Expr::Chain(alts) => {
            if let Some(last) = alts.last_mut() {
                mark_tail(last);
            }
        }
        Expr::Try { handler, .. } => mark_tail(handler),
        Expr::Value(_)
        | Expr::Define { .. }
        | Expr::Destructure { .. }
        | Expr::MakeList(_)
        | Expr::MakeRecord { .. }
        | Expr::MakeMap(_)
        | Expr::MakeVariant { .. }
        | Expr::MakeClosure { .. }
        | Expr::MakeRecGroup { .. }
        | Expr::Interp(_)
        | Expr::Index { .. }
        | Expr::Arith { .. }
        | Expr::Neg { .. }
        | Expr::Not(_)
        | Expr::Compare { .. }
        | Expr::Equal { .. }
        | Expr::Exec { .. }
        | Expr::Guard { .. }
        | Expr::Within { .. }
        | Expr::Grant { .. }
        | Expr::Audit { .. }
        | Expr::Redirected { .. }
        | Expr::Pipeline(_)
        | Expr::Capture(_) => {}
    }
}

/// A key as it decides an index: an Int literal, a written label, or a
/// computed key atom (by id).
enum IndexKey {
    Int(i64),
    Label(String),
    Computed(ast::NodeId),
}

/// The name and block of a `let name = {…}` (a named block, §5.7).
/// A parameter pattern as written, for a closure's text form: `x`, `_`,
/// `[a, b, ...rest]`, `[host: h]`.
fn pattern_text(p: &Pattern) -> String {
    match &p.kind {
        PatternKind::Wildcard => "_".into(),
        PatternKind::Bind(n) => n.text.clone(),
        PatternKind::List { items, rest } => {
            let mut parts: Vec<String> = items.iter().map(pattern_text).collect();
            if let Some(r) = rest {
                parts.push(format!("...{}", r.text));
            }
            format!("[{}]", parts.join(", "))
        }
        PatternKind::Record { fields } => {
            let parts: Vec<String> = fields
                .iter()
                .map(|f| format!("{}: {}", f.key.text, pattern_text(&f.pattern)))
                .collect();
            format!("[{}]", parts.join(", "))
        }
        PatternKind::Error => "?".into(),
    }
}

fn named_block(l: &ast::Let) -> Option<(&ast::Name, &ast::Block)> {
    match (&l.pattern.kind, l.value.as_block_literal()) {
        (PatternKind::Bind(n), Some(b)) => Some((n, b)),
        _ => None,
    }
}

/// The head atom of a chain that is a block literal (see
/// [`ast::Chain::as_block_literal`]): the atom the checker typed.
fn block_head_atom(c: &ast::Chain) -> Option<&Atom> {
    c.as_block_literal()?;
    let stage = c.alternatives.first()?.stages.first()?;
    match &stage.kind {
        StageKind::Command(cmd) => match &cmd.head {
            Head::Atom(a) => Some(a),
            Head::Caret(_) => None,
        },
        StageKind::Return(_) | StageKind::If(_) | StageKind::Case(_) | StageKind::Scope(_) => None,
    }
}

/// The names a pattern binds with their binder spans, in the order lowering
/// binds them (and numbers top-level definitions).
fn pattern_binders(p: &Pattern, out: &mut Vec<(String, Span)>) {
    match &p.kind {
        PatternKind::Wildcard | PatternKind::Error => {}
        PatternKind::Bind(n) => out.push((n.text.clone(), n.span)),
        PatternKind::List { items, rest } => {
            for q in items {
                pattern_binders(q, out);
            }
            if let Some(n) = rest {
                if n.text != "_" {
                    out.push((n.text.clone(), n.span));
                }
            }
        }
        PatternKind::Record { fields } => {
            for f in fields {
                pattern_binders(&f.pattern, out);
            }
        }
    }
}

/// The strongly connected components of a graph given as `edges[v]` = the
/// nodes `v` needs, each listed after every component it needs (Tarjan's
/// order), members sorted. Iterative, so a long chain of blocks cannot
/// exhaust the stack.
fn sccs(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut out = Vec::new();
    let mut next = 0usize;
    // (node, how many of its edges have been followed)
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        work.push((root, 0));
        while let Some(&(v, followed)) = work.last() {
            if let Some(&w) = edges[v].get(followed) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index[w] == UNSEEN {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                comp.sort_unstable();
                out.push(comp);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::sccs;

    /// The position of the component holding `v`.
    fn comp_of(comps: &[Vec<usize>], v: usize) -> usize {
        comps
            .iter()
            .position(|c| c.contains(&v))
            .unwrap_or(usize::MAX)
    }

    #[test]
    fn components_come_after_what_they_need() {
        // 0 → 1 ⇄ 2 → 3, 4 → 4, 5 alone.
        let edges = vec![vec![1], vec![2], vec![1, 3], vec![], vec![4], vec![]];
        let comps = sccs(&edges);
        let mut sorted = comps.clone();
        sorted.sort();
        assert_eq!(sorted, vec![vec![0], vec![1, 2], vec![3], vec![4], vec![5]]);
        assert!(comp_of(&comps, 3) < comp_of(&comps, 1));
        assert!(comp_of(&comps, 1) < comp_of(&comps, 0));
    }

    #[test]
    fn a_long_chain_and_a_long_ring_need_no_deep_stack() {
        let n = 200_000;
        let chain: Vec<Vec<usize>> = (0..n)
            .map(|i| if i + 1 < n { vec![i + 1] } else { vec![] })
            .collect();
        let comps = sccs(&chain);
        assert_eq!(comps.len(), n);
        assert_eq!(comps.first(), Some(&vec![n - 1]));
        let ring: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        let comps = sccs(&ring);
        assert_eq!(comps.len(), 1);
        assert_eq!(comps[0].len(), n);
    }
}
