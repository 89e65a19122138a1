//! Lowering a checked program to the IR.
//!
//! [`lower`] walks the syntax tree once, reading the checker's side tables
//! ([`ral_types::Elaboration`]) for what it decided: head resolution, captures,
//! and the types that fix arithmetic, comparison and index kinds.
//!
//! Name resolution is re-derived here (the checker does not record it per
//! reference yet), following the same rules as the checker:
//!
//! 1. the innermost lexical binding (parameters, `let`s, pattern bindings,
//!    arm payloads); a binding of an enclosing function becomes a capture;
//! 2. `$SCRIPT` when not bound;
//! 3. a session binding (earlier turns; see [`lower_with_session`]);
//! 4. a forward slot (§5.7): the first later named block of the top-level
//!    list (a [`Operand::Global`] naming its definition), or a member of the
//!    local recursive group being lowered ([`Operand::Sibling`]);
//! 5. a builtin.
//!
//! A local recursive group is a run of adjacent `let name = {…}` statements
//! (distinct names) that starts with a block mentioning itself or a later
//! block of the run, and extends over every block such forward mentions
//! reach. The mention test is syntactic (it ignores shadowing inside the
//! member), which can only make a group larger than needed. A forward
//! reference to a block that is *not* adjacent (another statement between)
//! is not lowered yet: it falls through to the session/builtin rules.

use std::collections::HashMap;
use std::sync::Arc;

use ral_syntax::ast::{
    self, Arg, Atom, Entry, ExprKind, Head, HeadClass, Key, ListItem, Pattern, PatternKind,
    Primary, ScopeKind, StageKind, StrPart,
};
use ral_syntax::walk::{self, Visitor};
use ral_syntax::{SourceId, Span};
use ral_types::{builtin_table, BuiltinKind, CaptureSite, Checked, Con, HeadRes, TyView};

use crate::ir::{
    ArithOp, Block, CaptureFrom, CaseArm, CmpOp, Const, Def, DefId, ExecHead, Expr, Func, FuncId,
    IndexKind, InterpPart, LocalId, MapPart, Module, NumKind, Operand, OrdKind, Part, Pat,
    Redirect, RedirectKind, Stmt,
};

/// Lowers a program that checked without errors, with no session bindings.
pub fn lower(program: &ast::Program, checked: &Checked, source: SourceId) -> Module {
    lower_with_session(program, checked, source, &|_| false)
}

/// Lowers a program; `is_session(name)` says whether an earlier turn bound
/// `name` (such a name precedes every definition of this turn, §5.7).
pub fn lower_with_session(
    program: &ast::Program,
    checked: &Checked,
    source: SourceId,
    is_session: &dyn Fn(&str) -> bool,
) -> Module {
    let mut top_forward = HashMap::new();
    let mut next = 0u32;
    for s in &program.stmts {
        if let ast::Stmt::Let(l) = s {
            let mut names = Vec::new();
            pattern_names(&l.pattern, &mut names);
            if let (PatternKind::Bind(n), Some(_)) = (&l.pattern.kind, l.value.as_block_literal()) {
                top_forward.entry(n.text.clone()).or_insert(DefId(next));
            }
            next += names.len() as u32;
        }
    }
    let mut cx = Lower {
        checked,
        is_session,
        funcs: Vec::new(),
        func_env: Vec::new(),
        envs: Vec::new(),
        stack: Vec::new(),
        defs: Vec::new(),
        top_forward,
    };
    let main = cx.open_func(None, None, Vec::new(), program.span);
    let result = cx.stmts(&program.stmts, true);
    cx.close_func(main, Vec::new(), result, false);
    let Lower {
        funcs,
        func_env,
        envs,
        defs,
        ..
    } = cx;
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

/// A function being built.
struct FnB {
    id: FuncId,
    name: Option<String>,
    /// Index into [`Lower::envs`]; `None` for `main`.
    env: Option<usize>,
    n_locals: u32,
    /// name → operand, innermost last.
    scope: Vec<(String, Operand)>,
    stmts: Vec<Stmt>,
    span: Span,
}

struct Lower<'a> {
    checked: &'a Checked,
    is_session: &'a dyn Fn(&str) -> bool,
    funcs: Vec<Option<Func>>,
    func_env: Vec<Option<usize>>,
    /// Capture environments (operands in the maker), shared by a group.
    envs: Vec<Vec<Operand>>,
    stack: Vec<FnB>,
    defs: Vec<Def>,
    top_forward: HashMap<String, DefId>,
}

impl Lower<'_> {
    // ---- functions and blocks ---------------------------------------------

    fn open_func(
        &mut self,
        name: Option<String>,
        env: Option<usize>,
        scope: Vec<(String, Operand)>,
        span: Span,
    ) -> FuncId {
        let id = FuncId(self.funcs.len() as u32);
        self.funcs.push(None);
        self.func_env.push(env);
        self.stack.push(FnB {
            id,
            name,
            env,
            n_locals: 0,
            scope,
            stmts: Vec::new(),
            span,
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
            captures: Vec::new(),
            n_locals: fb.n_locals,
            body,
            span: fb.span,
        };
        if let Some(slot) = self.funcs.get_mut(id.0 as usize) {
            *slot = Some(func);
        }
        let _ = fb.env;
    }

    fn cur(&mut self) -> &mut FnB {
        let n = self.stack.len();
        if n == 0 {
            // Unreachable: `main` is open for the whole walk.
            self.open_func(None, None, Vec::new(), Span::new(0, 0));
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

    fn bind(&mut self, name: &str, op: Operand) {
        self.cur().scope.push((name.to_owned(), op));
    }

    /// Lowers `f` into a nested block of the current function with its own
    /// scope frame.
    fn sub_block(&mut self, f: impl FnOnce(&mut Self) -> Operand) -> Block {
        let saved = std::mem::take(&mut self.cur().stmts);
        let mark = self.cur().scope.len();
        let result = f(self);
        self.cur().scope.truncate(mark);
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

    /// Lowers a block literal to a function; returns it and its environment.
    fn block_func(
        &mut self,
        b: &ast::Block,
        name: Option<String>,
        env: usize,
        scope: Vec<(String, Operand)>,
        capture: bool,
    ) -> FuncId {
        let id = self.open_func(name, Some(env), scope, b.span);
        let mut params = Vec::new();
        for p in &b.params {
            let l = self.new_local();
            params.push(l);
            self.bind_pattern(p, Operand::Local(l), false, p.span);
        }
        let result = self.stmts(&b.body.stmts, false);
        self.close_func(id, params, result, capture);
        id
    }

    fn closure(&mut self, b: &ast::Block, name: Option<String>, capture: bool) -> Operand {
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let func = self.block_func(b, name, env, Vec::new(), capture);
        let captures = self.envs.get(env).cloned().unwrap_or_default();
        self.emit(Expr::MakeClosure { func, captures }, b.span)
    }

    // ---- names ---------------------------------------------------------------

    fn resolve_at(&mut self, depth: usize, name: &str) -> Option<Operand> {
        let fb = self.stack.get(depth)?;
        if let Some((_, op)) = fb.scope.iter().rev().find(|(n, _)| n == name) {
            return Some(op.clone());
        }
        let env = fb.env;
        if depth == 0 {
            return None;
        }
        let outer = self.resolve_at(depth - 1, name)?;
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

    /// Whether `name` has a binding visible here (lexical or session),
    /// without recording a capture.
    fn is_bound(&self, name: &str) -> bool {
        self.stack
            .iter()
            .any(|f| f.scope.iter().any(|(n, _)| n == name))
            || (self.is_session)(name)
    }

    fn var(&mut self, name: &str) -> Operand {
        if let Some(depth) = self.stack.len().checked_sub(1) {
            if let Some(op) = self.resolve_at(depth, name) {
                return op;
            }
        }
        if name == "SCRIPT" {
            return Operand::Script;
        }
        if (self.is_session)(name) {
            return Operand::Global {
                name: name.to_owned(),
                def: None,
            };
        }
        if let Some(def) = self.top_forward.get(name) {
            return Operand::Global {
                name: name.to_owned(),
                def: Some(*def),
            };
        }
        let table = builtin_table();
        if let (Some(b), Some(id)) = (table.get(name), table.id(name)) {
            if b.kind != BuiltinKind::BaseHandler {
                return Operand::Builtin(id);
            }
        }
        Operand::Global {
            name: name.to_owned(),
            def: None,
        }
    }

    fn define(&mut self, name: &str, span: Span, value: Operand, stmt_span: Span) {
        let def = DefId(self.defs.len() as u32);
        self.defs.push(Def {
            id: def,
            name: name.to_owned(),
            span,
        });
        self.emit_void(Expr::Define { def, value }, stmt_span);
        self.bind(
            name,
            Operand::Global {
                name: name.to_owned(),
                def: Some(def),
            },
        );
    }

    // ---- statements ------------------------------------------------------------

    fn stmts(&mut self, stmts: &[ast::Stmt], top: bool) -> Operand {
        let mut last = Operand::Unit;
        let mut i = 0;
        while i < stmts.len() {
            match &stmts[i] {
                ast::Stmt::Let(l) => {
                    if !top {
                        if let Some(n) = group_run(&stmts[i..]) {
                            self.group(&stmts[i..i + n]);
                            i += n;
                            last = Operand::Unit;
                            continue;
                        }
                    }
                    self.let_stmt(l, top);
                    last = Operand::Unit;
                }
                ast::Stmt::Chain(c) => last = self.chain(c),
                ast::Stmt::Error(_) => last = Operand::Unit,
            }
            i += 1;
        }
        last
    }

    fn let_stmt(&mut self, l: &ast::Let, top: bool) {
        let value = match (&l.pattern.kind, l.value.as_block_literal()) {
            (PatternKind::Bind(n), Some(b)) => self.closure(b, Some(n.text.clone()), false),
            _ => {
                if self.checked.elab.captures.get(l.pattern.id) == Some(&CaptureSite::LetRhs) {
                    let b = self.sub_block(|s| s.chain(&l.value));
                    self.emit(Expr::Capture(b), l.value.span)
                } else {
                    self.chain(&l.value)
                }
            }
        };
        self.bind_pattern(&l.pattern, value, top, l.span);
    }

    /// A local recursive group: `lets` are all `let name = {…}`.
    fn group(&mut self, lets: &[ast::Stmt]) {
        let members: Vec<(&ast::Let, &str, &ast::Block)> = lets
            .iter()
            .filter_map(|s| match s {
                ast::Stmt::Let(l) => match (&l.pattern.kind, l.value.as_block_literal()) {
                    (PatternKind::Bind(n), Some(b)) => Some((l, n.text.as_str(), b)),
                    _ => None,
                },
                ast::Stmt::Chain(_) | ast::Stmt::Error(_) => None,
            })
            .collect();
        let bound_before: Vec<bool> = members.iter().map(|m| self.is_bound(m.1)).collect();
        let env = self.envs.len();
        self.envs.push(Vec::new());
        let mut funcs = Vec::new();
        for (k, (_, name, b)) in members.iter().enumerate() {
            let scope = members
                .iter()
                .enumerate()
                .filter(|(j, _)| *j < k || !bound_before[*j])
                .map(|(j, m)| (m.1.to_owned(), Operand::Sibling(j as u32)))
                .collect();
            funcs.push(self.block_func(b, Some((*name).to_owned()), env, scope, false));
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
        for ((_, name, _), d) in members.iter().zip(dsts) {
            self.bind(name, Operand::Local(d));
        }
    }

    fn bind_pattern(&mut self, p: &Pattern, value: Operand, top: bool, span: Span) {
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
                    self.bind(&n.text, op);
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
                        self.bind(&name, Operand::Local(l));
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
                let mut arms = Vec::new();
                for arm in &c.arms {
                    let payload = self.new_local();
                    let body = self.arm_block(&arm.arm, Some(Operand::Local(payload)));
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
    fn arm_block(&mut self, a: &Atom, payload: Option<Operand>) -> Block {
        let b = self.sub_block(|s| {
            if let (Primary::Block(b), true) = (&a.primary, a.indexes.is_empty()) {
                let mut params = b.params.iter();
                if let (Some(p), Some(pat)) = (payload, params.next()) {
                    s.bind_pattern(pat, p, false, pat.span);
                }
                return s.stmts(&b.body.stmts, false);
            }
            let v = s.atom(a);
            match payload {
                Some(p) if !s.is_plain_thunk(a.id) => s.emit(
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

    fn scope_form(&mut self, sc: &ast::ScopeForm, span: Span) -> Operand {
        let expr = match &sc.kind {
            ScopeKind::Try { body, handler } => {
                let body = self.arm_block(body, None);
                let error = self.new_local();
                let handler = self.arm_block(handler, Some(Operand::Local(error)));
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
                let f = self.var(&name);
                self.apply(f, c, true, s.span)
            }
            Some(HeadRes::Builtin(id)) => self.apply(Operand::Builtin(id), c, true, s.span),
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
        let expr = if args.is_empty() {
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
        };
        if c.redirects.is_empty() {
            return self.emit(expr, span);
        }
        let redirects = self.redirects(&c.redirects);
        let body = self.sub_block(|s| s.emit(expr, span));
        self.emit(Expr::Redirected { body, redirects }, span)
    }

    fn redirects(&mut self, rs: &[ast::Redirect]) -> Vec<Redirect> {
        rs.iter()
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
            .collect()
    }

    // ---- atoms -----------------------------------------------------------------

    fn atom(&mut self, a: &Atom) -> Operand {
        let mut v = self.primary(a);
        for ix in &a.indexes {
            let k = &ix.key;
            let plain = if k.indexes.is_empty() {
                match &k.primary {
                    Primary::Word(w) => Some(Ok(w.clone())),
                    Primary::Str(s) => s.as_plain().map(Ok),
                    Primary::Int(i) => Some(Err(*i)),
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
                    | Primary::Error => None,
                }
            } else {
                None
            };
            let (key, kind) = match plain {
                Some(Ok(w)) => (Operand::Const(Const::Str(Arc::from(w))), IndexKind::Dynamic),
                Some(Err(i)) => (Operand::Const(Const::Int(i)), IndexKind::List),
                None => {
                    let kind = match self.con_of(k.id) {
                        Some(Con::Int) => IndexKind::List,
                        Some(Con::String) => IndexKind::Map,
                        _ => IndexKind::Dynamic,
                    };
                    (self.atom(k), kind)
                }
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
        let id = self.open_func(None, Some(env), Vec::new(), a.span);
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
            Primary::Var(n) => self.var(&n.text),
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
                        let mark = self.cur().scope.len();
                        let result = self.stmts(&b.body.stmts, false);
                        self.cur().scope.truncate(mark);
                        return result;
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
                self.closure(b, None, capture)
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
                                Key::Computed(n) => self.var(&n.text),
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

/// Marks calls and forces in tail position of `b` (through `if` and `case`).
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
        | Expr::Chain(_)
        | Expr::Try { .. }
        | Expr::Guard { .. }
        | Expr::Within { .. }
        | Expr::Grant { .. }
        | Expr::Audit { .. }
        | Expr::Redirected { .. }
        | Expr::Pipeline(_)
        | Expr::Capture(_) => {}
    }
}

/// The names a pattern binds, in the order lowering binds them.
fn pattern_names(p: &Pattern, out: &mut Vec<String>) {
    match &p.kind {
        PatternKind::Wildcard | PatternKind::Error => {}
        PatternKind::Bind(n) => out.push(n.text.clone()),
        PatternKind::List { items, rest } => {
            for q in items {
                pattern_names(q, out);
            }
            if let Some(n) = rest {
                if n.text != "_" {
                    out.push(n.text.clone());
                }
            }
        }
        PatternKind::Record { fields } => {
            for f in fields {
                pattern_names(&f.pattern, out);
            }
        }
    }
}

/// The length of the recursive group starting at `stmts[0]`, if it is one.
fn group_run(stmts: &[ast::Stmt]) -> Option<usize> {
    let mut names: Vec<&str> = Vec::new();
    let mut blocks = Vec::new();
    for s in stmts {
        let ast::Stmt::Let(l) = s else { break };
        let (PatternKind::Bind(n), Some(b)) = (&l.pattern.kind, l.value.as_block_literal()) else {
            break;
        };
        if names.contains(&n.text.as_str()) {
            break;
        }
        names.push(&n.text);
        blocks.push(b);
    }
    // The furthest member at or after `k` that member `k` mentions.
    let furthest = |k: usize| -> Option<usize> {
        let b = blocks.get(k)?;
        (k..names.len()).rev().find(|&j| {
            let mut m = Mentions {
                names: names.get(j..=j).unwrap_or_default(),
                found: false,
            };
            m.visit_block(b);
            m.found
        })
    };
    // The group starts here only if the first block refers to itself or a
    // later one; it extends over every member such a reference reaches.
    let mut end = furthest(0)?;
    let mut k = 1;
    while k <= end {
        if let Some(j) = furthest(k) {
            end = end.max(j);
        }
        k += 1;
    }
    Some(end + 1)
}

/// Whether a subtree mentions one of `names` as `$name`, a head or a
/// computed key.
struct Mentions<'a> {
    names: &'a [&'a str],
    found: bool,
}

impl Visitor for Mentions<'_> {
    fn visit_atom(&mut self, atom: &Atom) {
        if let Primary::Var(n) = &atom.primary {
            if self.names.contains(&n.text.as_str()) {
                self.found = true;
            }
        }
        walk::walk_atom(self, atom);
    }
    fn visit_head(&mut self, head: &Head) {
        if let HeadClass::Bare(n) = head.class() {
            if self.names.contains(&n) {
                self.found = true;
            }
        }
        walk::walk_head(self, head);
    }
    fn visit_entry(&mut self, entry: &Entry) {
        if let Entry::Field {
            key: Key::Computed(n),
            ..
        } = entry
        {
            if self.names.contains(&n.text.as_str()) {
                self.found = true;
            }
        }
        walk::walk_entry(self, entry);
    }
}
