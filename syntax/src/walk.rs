//! Traversals over the [`crate::ast`].
//!
//! [`Visitor`] is a read-only visitor: each `visit_*` method defaults to the
//! matching `walk_*` function, which visits every child of the node in source
//! order. A pass overrides the methods it cares about and calls the `walk_*`
//! function from its override to keep descending. The `walk_*` functions match
//! every enum exhaustively, with no wildcard arm, so a new AST shape is a
//! compile error here rather than a silently skipped subtree.
//!
//! [`number_nodes`] gives every [`NodeId`] in a program a unique sequential id
//! in source order; the parser calls it on the finished tree.
//!
//! Both traversals recurse. The parser refuses forms nested more than 64 deep
//! (`nesting-too-deep`), and one level of nesting costs a bounded handful of
//! frames here, so the depth of recursion is bounded by the tree the parser
//! accepts. The one exception is a long operator chain in `$[...]`, which is
//! a deep left spine of [`Expr`] without being nested: [`number_nodes`] walks
//! expressions with an explicit stack, and so does the validator. A pass that
//! relies on the default [`walk_expr`] recurses once per operator.

use crate::ast::{
    Arg, Atom, Block, Case, CaseArm, Chain, Command, Entry, Expr, ExprKind, FieldPattern, Head, If,
    Index, Key, Let, ListItem, NodeId, Pattern, PatternKind, Pipeline, Primary, Program, Redirect,
    RedirectKind, ScopeForm, ScopeKind, Stage, StageKind, Stmt, StrPart,
};

/// One item of a command's tail: an argument or a redirect, which the source
/// may interleave.
#[derive(Clone, Copy, Debug)]
pub enum TailItem<'a> {
    Arg(&'a Arg),
    Redirect(&'a Redirect),
}

impl Command {
    /// Arguments and redirects merged back into source order.
    pub fn tail(&self) -> Vec<TailItem<'_>> {
        let mut out = Vec::with_capacity(self.args.len() + self.redirects.len());
        let (mut a, mut r) = (0, 0);
        loop {
            match (self.args.get(a), self.redirects.get(r)) {
                (Some(arg), Some(red)) => {
                    if arg.span().start <= red.span.start {
                        out.push(TailItem::Arg(arg));
                        a += 1;
                    } else {
                        out.push(TailItem::Redirect(red));
                        r += 1;
                    }
                }
                (Some(arg), None) => {
                    out.push(TailItem::Arg(arg));
                    a += 1;
                }
                (None, Some(red)) => {
                    out.push(TailItem::Redirect(red));
                    r += 1;
                }
                (None, None) => break,
            }
        }
        out
    }
}

/// A read-only visitor over the AST. Every method defaults to the matching
/// `walk_*` function.
pub trait Visitor: Sized {
    fn visit_program(&mut self, program: &Program) {
        walk_program(self, program);
    }
    fn visit_stmt(&mut self, stmt: &Stmt) {
        walk_stmt(self, stmt);
    }
    fn visit_let(&mut self, binding: &Let) {
        walk_let(self, binding);
    }
    fn visit_chain(&mut self, chain: &Chain) {
        walk_chain(self, chain);
    }
    fn visit_pipeline(&mut self, pipeline: &Pipeline) {
        walk_pipeline(self, pipeline);
    }
    fn visit_stage(&mut self, stage: &Stage) {
        walk_stage(self, stage);
    }
    fn visit_if(&mut self, form: &If) {
        walk_if(self, form);
    }
    fn visit_case(&mut self, form: &Case) {
        walk_case(self, form);
    }
    fn visit_case_arm(&mut self, arm: &CaseArm) {
        walk_case_arm(self, arm);
    }
    fn visit_scope(&mut self, form: &ScopeForm) {
        walk_scope(self, form);
    }
    fn visit_command(&mut self, command: &Command) {
        walk_command(self, command);
    }
    fn visit_head(&mut self, head: &Head) {
        walk_head(self, head);
    }
    fn visit_arg(&mut self, arg: &Arg) {
        walk_arg(self, arg);
    }
    fn visit_redirect(&mut self, redirect: &Redirect) {
        walk_redirect(self, redirect);
    }
    fn visit_atom(&mut self, atom: &Atom) {
        walk_atom(self, atom);
    }
    fn visit_index(&mut self, index: &Index) {
        walk_index(self, index);
    }
    fn visit_str_part(&mut self, part: &StrPart) {
        walk_str_part(self, part);
    }
    fn visit_block(&mut self, block: &Block) {
        walk_block(self, block);
    }
    fn visit_list_item(&mut self, item: &ListItem) {
        walk_list_item(self, item);
    }
    fn visit_entry(&mut self, entry: &Entry) {
        walk_entry(self, entry);
    }
    fn visit_expr(&mut self, expr: &Expr) {
        walk_expr(self, expr);
    }
    fn visit_pattern(&mut self, pattern: &Pattern) {
        walk_pattern(self, pattern);
    }
    fn visit_field_pattern(&mut self, field: &FieldPattern) {
        walk_field_pattern(self, field);
    }
}

pub fn walk_program<V: Visitor>(v: &mut V, program: &Program) {
    for stmt in &program.stmts {
        v.visit_stmt(stmt);
    }
}

pub fn walk_stmt<V: Visitor>(v: &mut V, stmt: &Stmt) {
    match stmt {
        Stmt::Let(binding) => v.visit_let(binding),
        Stmt::Chain(chain) => v.visit_chain(chain),
        Stmt::Error(_) => {}
    }
}

pub fn walk_let<V: Visitor>(v: &mut V, binding: &Let) {
    v.visit_pattern(&binding.pattern);
    v.visit_chain(&binding.value);
}

pub fn walk_chain<V: Visitor>(v: &mut V, chain: &Chain) {
    for pipeline in &chain.alternatives {
        v.visit_pipeline(pipeline);
    }
}

pub fn walk_pipeline<V: Visitor>(v: &mut V, pipeline: &Pipeline) {
    for stage in &pipeline.stages {
        v.visit_stage(stage);
    }
}

pub fn walk_stage<V: Visitor>(v: &mut V, stage: &Stage) {
    match &stage.kind {
        StageKind::Return(value) => {
            if let Some(atom) = value {
                v.visit_atom(atom);
            }
        }
        StageKind::If(form) => v.visit_if(form),
        StageKind::Case(form) => v.visit_case(form),
        StageKind::Scope(form) => v.visit_scope(form),
        StageKind::Command(command) => v.visit_command(command),
    }
}

pub fn walk_if<V: Visitor>(v: &mut V, form: &If) {
    for branch in &form.branches {
        v.visit_atom(&branch.cond);
        v.visit_atom(&branch.arm);
    }
    if let Some(arm) = &form.else_arm {
        v.visit_atom(arm);
    }
}

pub fn walk_case<V: Visitor>(v: &mut V, form: &Case) {
    v.visit_atom(&form.scrutinee);
    for arm in &form.arms {
        v.visit_case_arm(arm);
    }
}

pub fn walk_case_arm<V: Visitor>(v: &mut V, arm: &CaseArm) {
    v.visit_atom(&arm.arm);
}

pub fn walk_scope<V: Visitor>(v: &mut V, form: &ScopeForm) {
    match &form.kind {
        ScopeKind::Try { body, handler } => {
            v.visit_atom(body);
            v.visit_atom(handler);
        }
        ScopeKind::Guard { body, cleanup } => {
            v.visit_atom(body);
            v.visit_atom(cleanup);
        }
        ScopeKind::Within { options, body } => {
            v.visit_atom(options);
            v.visit_atom(body);
        }
        ScopeKind::Grant { caps, body } => {
            v.visit_atom(caps);
            v.visit_atom(body);
        }
        ScopeKind::Audit { body } => v.visit_atom(body),
    }
    for redirect in &form.redirects {
        v.visit_redirect(redirect);
    }
}

/// Visits the head, then arguments and redirects in source order.
pub fn walk_command<V: Visitor>(v: &mut V, command: &Command) {
    v.visit_head(&command.head);
    for item in command.tail() {
        match item {
            TailItem::Arg(arg) => v.visit_arg(arg),
            TailItem::Redirect(redirect) => v.visit_redirect(redirect),
        }
    }
}

pub fn walk_head<V: Visitor>(v: &mut V, head: &Head) {
    match head {
        Head::Caret(_) => {}
        Head::Atom(atom) => v.visit_atom(atom),
    }
}

pub fn walk_arg<V: Visitor>(v: &mut V, arg: &Arg) {
    match arg {
        Arg::Atom(atom) | Arg::Spread { value: atom, .. } => v.visit_atom(atom),
    }
}

pub fn walk_redirect<V: Visitor>(v: &mut V, redirect: &Redirect) {
    match &redirect.op {
        RedirectKind::Write(target)
        | RedirectKind::Stream(target)
        | RedirectKind::Append(target)
        | RedirectKind::Read(target)
        | RedirectKind::Here(target) => v.visit_atom(target),
        RedirectKind::Dup { .. } => {}
    }
}

/// Visits the primary's children, then the indexes.
pub fn walk_atom<V: Visitor>(v: &mut V, atom: &Atom) {
    walk_primary(v, &atom.primary);
    for index in &atom.indexes {
        v.visit_index(index);
    }
}

pub fn walk_index<V: Visitor>(v: &mut V, index: &Index) {
    v.visit_atom(&index.key);
}

/// Visits the children of a primary (a primary is not a node of its own).
pub fn walk_primary<V: Visitor>(v: &mut V, primary: &Primary) {
    match primary {
        Primary::Word(_)
        | Primary::Int(_)
        | Primary::Float(_)
        | Primary::Bool(_)
        | Primary::Unit
        | Primary::Var(_)
        | Primary::Error => {}
        Primary::Str(lit) => {
            for part in &lit.parts {
                v.visit_str_part(part);
            }
        }
        Primary::Expr(expr) => v.visit_expr(expr),
        Primary::Force(inner) => v.visit_atom(inner),
        Primary::Tag { payload, .. } => {
            if let Some(payload) = payload {
                v.visit_atom(payload);
            }
        }
        Primary::Block(block) => v.visit_block(block),
        Primary::List(items) => {
            for item in items {
                v.visit_list_item(item);
            }
        }
        Primary::Record(entries) | Primary::Map(entries) => {
            for entry in entries {
                v.visit_entry(entry);
            }
        }
    }
}

pub fn walk_str_part<V: Visitor>(v: &mut V, part: &StrPart) {
    match part {
        StrPart::Text(_) | StrPart::Home => {}
        StrPart::Splice(atom) => v.visit_atom(atom),
    }
}

pub fn walk_block<V: Visitor>(v: &mut V, block: &Block) {
    for param in &block.params {
        v.visit_pattern(param);
    }
    v.visit_program(&block.body);
}

pub fn walk_list_item<V: Visitor>(v: &mut V, item: &ListItem) {
    match item {
        ListItem::Item(atom) | ListItem::Spread { value: atom, .. } => v.visit_atom(atom),
    }
}

pub fn walk_entry<V: Visitor>(v: &mut V, entry: &Entry) {
    match entry {
        Entry::Field { key, value, .. } => {
            match key {
                Key::Static(_) | Key::Computed(_) => {}
            }
            v.visit_atom(value);
        }
        Entry::Spread { value, .. } => v.visit_atom(value),
    }
}

pub fn walk_expr<V: Visitor>(v: &mut V, expr: &Expr) {
    match &expr.kind {
        ExprKind::Atom(atom) => v.visit_atom(atom),
        ExprKind::Unary { operand, .. } => v.visit_expr(operand),
        ExprKind::Binary { lhs, rhs, .. } => {
            v.visit_expr(lhs);
            v.visit_expr(rhs);
        }
        ExprKind::Paren(inner) => v.visit_expr(inner),
    }
}

pub fn walk_pattern<V: Visitor>(v: &mut V, pattern: &Pattern) {
    match &pattern.kind {
        PatternKind::Wildcard | PatternKind::Bind(_) | PatternKind::Error => {}
        PatternKind::List { items, .. } => {
            for item in items {
                v.visit_pattern(item);
            }
        }
        PatternKind::Record { fields } => {
            for field in fields {
                v.visit_field_pattern(field);
            }
        }
    }
}

pub fn walk_field_pattern<V: Visitor>(v: &mut V, field: &FieldPattern) {
    v.visit_pattern(&field.pattern);
}

// ---- numbering ----

/// Gives every [`NodeId`] in `program` (atoms, stages, blocks, expressions,
/// patterns) a unique id, counting up from 0 in source order: a node before
/// its children, children left to right.
pub fn number_nodes(program: &mut Program) {
    let mut n = Numberer { next: 0 };
    n.program(program);
}

/// Mutable pre-order traversal mirroring the `walk_*` functions.
struct Numberer {
    next: u32,
}

impl Numberer {
    fn fresh(&mut self) -> NodeId {
        let id = NodeId(self.next);
        self.next = self.next.saturating_add(1);
        id
    }

    fn program(&mut self, program: &mut Program) {
        for stmt in &mut program.stmts {
            match stmt {
                Stmt::Let(binding) => {
                    self.pattern(&mut binding.pattern);
                    self.chain(&mut binding.value);
                }
                Stmt::Chain(chain) => self.chain(chain),
                Stmt::Error(_) => {}
            }
        }
    }

    fn chain(&mut self, chain: &mut Chain) {
        for pipeline in &mut chain.alternatives {
            for stage in &mut pipeline.stages {
                self.stage(stage);
            }
        }
    }

    fn stage(&mut self, stage: &mut Stage) {
        stage.id = self.fresh();
        match &mut stage.kind {
            StageKind::Return(value) => {
                if let Some(atom) = value {
                    self.atom(atom);
                }
            }
            StageKind::If(form) => {
                for branch in &mut form.branches {
                    self.atom(&mut branch.cond);
                    self.atom(&mut branch.arm);
                }
                if let Some(arm) = &mut form.else_arm {
                    self.atom(arm);
                }
            }
            StageKind::Case(form) => {
                self.atom(&mut form.scrutinee);
                for arm in &mut form.arms {
                    self.atom(&mut arm.arm);
                }
            }
            StageKind::Scope(form) => {
                match &mut form.kind {
                    ScopeKind::Try {
                        body: a,
                        handler: b,
                    }
                    | ScopeKind::Guard {
                        body: a,
                        cleanup: b,
                    }
                    | ScopeKind::Within {
                        options: a,
                        body: b,
                    }
                    | ScopeKind::Grant { caps: a, body: b } => {
                        self.atom(a);
                        self.atom(b);
                    }
                    ScopeKind::Audit { body } => self.atom(body),
                }
                for redirect in &mut form.redirects {
                    self.redirect(redirect);
                }
            }
            StageKind::Command(command) => self.command(command),
        }
    }

    fn command(&mut self, command: &mut Command) {
        match &mut command.head {
            Head::Caret(_) => {}
            Head::Atom(atom) => self.atom(atom),
        }
        // Arguments and redirects live in two vectors; merge them by position
        // so ids follow the source.
        let (mut a, mut r) = (0, 0);
        loop {
            let arg_start = command.args.get(a).map(|arg| arg.span().start);
            let red_start = command.redirects.get(r).map(|red| red.span.start);
            let take_arg = match (arg_start, red_start) {
                (Some(x), Some(y)) => x <= y,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_arg {
                if let Some(arg) = command.args.get_mut(a) {
                    match arg {
                        Arg::Atom(atom) | Arg::Spread { value: atom, .. } => self.atom(atom),
                    }
                }
                a += 1;
            } else {
                if let Some(redirect) = command.redirects.get_mut(r) {
                    self.redirect(redirect);
                }
                r += 1;
            }
        }
    }

    fn redirect(&mut self, redirect: &mut Redirect) {
        match &mut redirect.op {
            RedirectKind::Write(target)
            | RedirectKind::Stream(target)
            | RedirectKind::Append(target)
            | RedirectKind::Read(target)
            | RedirectKind::Here(target) => self.atom(target),
            RedirectKind::Dup { .. } => {}
        }
    }

    fn atom(&mut self, atom: &mut Atom) {
        atom.id = self.fresh();
        match &mut atom.primary {
            Primary::Word(_)
            | Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Var(_)
            | Primary::Error => {}
            Primary::Str(lit) => {
                for part in &mut lit.parts {
                    match part {
                        StrPart::Text(_) | StrPart::Home => {}
                        StrPart::Splice(inner) => self.atom(inner),
                    }
                }
            }
            Primary::Expr(expr) => self.expr(expr),
            Primary::Force(inner) => self.atom(inner),
            Primary::Tag { payload, .. } => {
                if let Some(payload) = payload {
                    self.atom(payload);
                }
            }
            Primary::Block(block) => self.block(block),
            Primary::List(items) => {
                for item in items {
                    match item {
                        ListItem::Item(inner) | ListItem::Spread { value: inner, .. } => {
                            self.atom(inner)
                        }
                    }
                }
            }
            Primary::Record(entries) | Primary::Map(entries) => {
                for entry in entries {
                    match entry {
                        Entry::Field { value, .. } | Entry::Spread { value, .. } => {
                            self.atom(value)
                        }
                    }
                }
            }
        }
        for index in &mut atom.indexes {
            self.atom(&mut index.key);
        }
    }

    fn block(&mut self, block: &mut Block) {
        block.id = self.fresh();
        for param in &mut block.params {
            self.pattern(param);
        }
        self.program(&mut block.body);
    }

    /// Operator chains are not nesting (`$[1 + 1 + … + 1]` is one level deep
    /// for the parser's limit), so expressions use an explicit stack.
    fn expr(&mut self, expr: &mut Expr) {
        let mut stack = vec![expr];
        while let Some(e) = stack.pop() {
            e.id = self.fresh();
            match &mut e.kind {
                ExprKind::Atom(atom) => self.atom(atom),
                ExprKind::Unary { operand, .. } => stack.push(operand),
                ExprKind::Binary { lhs, rhs, .. } => {
                    stack.push(rhs);
                    stack.push(lhs);
                }
                ExprKind::Paren(inner) => stack.push(inner),
            }
        }
    }

    fn pattern(&mut self, pattern: &mut Pattern) {
        pattern.id = self.fresh();
        match &mut pattern.kind {
            PatternKind::Wildcard | PatternKind::Bind(_) | PatternKind::Error => {}
            PatternKind::List { items, .. } => {
                for item in items {
                    self.pattern(item);
                }
            }
            PatternKind::Record { fields } => {
                for field in fields {
                    self.pattern(&mut field.pattern);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod build {
    //! Small constructors for hand-built trees in tests.
    use crate::ast::*;
    use crate::span::Span;

    pub fn sp(start: u32, end: u32) -> Span {
        Span::new(start, end)
    }

    pub fn atom(primary: Primary, span: Span) -> Atom {
        Atom {
            id: NodeId(0),
            primary,
            indexes: Vec::new(),
            span,
        }
    }

    pub fn word(w: &str, start: u32) -> Atom {
        let end = start + u32::try_from(w.len()).unwrap_or(0);
        atom(Primary::Word(w.to_string()), sp(start, end))
    }

    pub fn var(name: &str, start: u32) -> Atom {
        let end = start + 1 + u32::try_from(name.len()).unwrap_or(0);
        atom(
            Primary::Var(Name::new(name, sp(start + 1, end))),
            sp(start, end),
        )
    }

    pub fn block(stmts: Vec<Stmt>, params: Vec<Pattern>, span: Span) -> Atom {
        atom(
            Primary::Block(Box::new(Block {
                id: NodeId(0),
                params,
                body: Program { stmts, span },
                span,
            })),
            span,
        )
    }

    pub fn pat(kind: PatternKind, span: Span) -> Pattern {
        Pattern {
            id: NodeId(0),
            kind,
            span,
        }
    }

    pub fn bind(name: &str, start: u32) -> Pattern {
        let end = start + u32::try_from(name.len()).unwrap_or(0);
        pat(
            PatternKind::Bind(Name::new(name, sp(start, end))),
            sp(start, end),
        )
    }

    pub fn stage(kind: StageKind, span: Span) -> Stage {
        Stage {
            id: NodeId(0),
            kind,
            span,
        }
    }

    pub fn chain_of(stage: Stage) -> Chain {
        let span = stage.span;
        Chain {
            alternatives: vec![Pipeline {
                stages: vec![stage],
                span,
            }],
            span,
        }
    }

    pub fn stmt(stage: Stage) -> Stmt {
        Stmt::Chain(chain_of(stage))
    }

    pub fn command(head: Atom, args: Vec<Arg>, redirects: Vec<Redirect>, span: Span) -> Stmt {
        stmt(stage(
            StageKind::Command(Command {
                head: Head::Atom(head),
                args,
                redirects,
            }),
            span,
        ))
    }

    pub fn program(stmts: Vec<Stmt>) -> Program {
        let span = stmts
            .iter()
            .map(Stmt::span)
            .reduce(Span::to)
            .unwrap_or_default();
        Program { stmts, span }
    }

    pub fn redirect(fd: u8, op: RedirectKind, span: Span) -> Redirect {
        Redirect {
            fd,
            explicit_fd: false,
            op,
            span,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::build::*;
    use super::*;
    use crate::ast::*;

    /// Collects every node id in visiting order.
    #[derive(Default)]
    struct Ids(Vec<u32>);

    impl Visitor for Ids {
        fn visit_stage(&mut self, stage: &Stage) {
            self.0.push(stage.id.0);
            walk_stage(self, stage);
        }
        fn visit_atom(&mut self, atom: &Atom) {
            self.0.push(atom.id.0);
            walk_atom(self, atom);
        }
        fn visit_block(&mut self, block: &Block) {
            self.0.push(block.id.0);
            walk_block(self, block);
        }
        fn visit_expr(&mut self, expr: &Expr) {
            self.0.push(expr.id.0);
            walk_expr(self, expr);
        }
        fn visit_pattern(&mut self, pattern: &Pattern) {
            self.0.push(pattern.id.0);
            walk_pattern(self, pattern);
        }
    }

    fn sample() -> Program {
        // let x = { |y| echo $[1 + $y] > out hi }
        let expr = Expr {
            id: NodeId(0),
            kind: ExprKind::Binary {
                op: BinOp::Add,
                lhs: Box::new(Expr {
                    id: NodeId(0),
                    kind: ExprKind::Atom(atom(Primary::Int(1), sp(23, 24))),
                    span: sp(23, 24),
                }),
                rhs: Box::new(Expr {
                    id: NodeId(0),
                    kind: ExprKind::Atom(var("y", 27)),
                    span: sp(27, 29),
                }),
            },
            span: sp(23, 29),
        };
        let body = command(
            word("echo", 14),
            vec![
                Arg::Atom(atom(Primary::Expr(Box::new(expr)), sp(19, 30))),
                Arg::Atom(word("hi", 37)),
            ],
            vec![redirect(
                1,
                RedirectKind::Write(word("out", 33)),
                sp(31, 36),
            )],
            sp(14, 39),
        );
        let value = chain_of(stage(
            StageKind::Command(Command {
                head: Head::Atom(block(vec![body], vec![bind("y", 11)], sp(8, 41))),
                args: Vec::new(),
                redirects: Vec::new(),
            }),
            sp(8, 41),
        ));
        program(vec![Stmt::Let(Let {
            pattern: bind("x", 4),
            value,
            span: sp(0, 41),
        })])
    }

    #[test]
    fn numbering_is_sequential_in_source_order() {
        let mut p = sample();
        number_nodes(&mut p);
        let mut ids = Ids::default();
        ids.visit_program(&p);
        let expected: Vec<u32> = (0..u32::try_from(ids.0.len()).unwrap_or(0)).collect();
        assert_eq!(ids.0, expected);
        // pattern x, stage, head atom, block, param y, stage, echo, $[..] atom,
        // expr, lhs expr, 1, rhs expr, $y, `out` (redirect before `hi`), hi
        assert_eq!(ids.0.len(), 15);
    }

    #[test]
    fn tail_merges_args_and_redirects_by_position() {
        let p = sample();
        let Some(Stmt::Let(l)) = p.stmts.first() else {
            panic!("expected let")
        };
        let Some(StageKind::Command(c)) = l
            .value
            .alternatives
            .first()
            .and_then(|pl| pl.stages.first())
            .map(|s| &s.kind)
        else {
            panic!("expected command")
        };
        let Head::Atom(Atom {
            primary: Primary::Block(b),
            ..
        }) = &c.head
        else {
            panic!("expected block head")
        };
        let Some(Stmt::Chain(inner)) = b.body.stmts.first() else {
            panic!("expected chain")
        };
        let Some(StageKind::Command(echo)) = inner
            .alternatives
            .first()
            .and_then(|pl| pl.stages.first())
            .map(|s| &s.kind)
        else {
            panic!("expected command")
        };
        let kinds: Vec<&str> = echo
            .tail()
            .iter()
            .map(|t| match t {
                TailItem::Arg(_) => "arg",
                TailItem::Redirect(_) => "redirect",
            })
            .collect();
        assert_eq!(kinds, ["arg", "redirect", "arg"]);
    }

    #[test]
    fn deep_nesting_is_fine() {
        // 64 nested blocks, each holding the next as a command head.
        let mut inner = command(word("x", 200), Vec::new(), Vec::new(), sp(200, 201));
        for i in 0..64u32 {
            let b = block(vec![inner], Vec::new(), sp(100 - i, 300 + i));
            inner = command(b, Vec::new(), Vec::new(), sp(100 - i, 300 + i));
        }
        let mut p = program(vec![inner]);
        number_nodes(&mut p);
        let mut ids = Ids::default();
        ids.visit_program(&p);
        assert_eq!(ids.0.len(), 64 * 3 + 2);
    }
}
