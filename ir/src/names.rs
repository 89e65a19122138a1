//! The session names a module reads.
//!
//! [`referenced_names`] walks every function of a module and collects each
//! [`Operand::Global`] with no definition of this turn: the names the host
//! must look up in the session before running the module. The walk matches
//! every IR enum exhaustively with no wildcard arm, so a new IR shape is a
//! compile error here rather than a silently missed reference.

use std::collections::BTreeSet;

use crate::ir::{
    Block, CaptureFrom, Const, ExecHead, Expr, Func, InterpPart, MapPart, Module, Operand, Part,
    Pat, Redirect, RedirectKind,
};

/// Every session name (`Global { def: None }`) the module reads.
pub fn referenced_names(module: &Module) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for f in &module.funcs {
        func(f, &mut out);
    }
    out
}

fn func(f: &Func, out: &mut BTreeSet<String>) {
    let Func {
        id: _,
        name: _,
        params: _,
        param_names: _,
        captures,
        n_locals: _,
        body,
        span: _,
    } = f;
    for c in captures {
        match c {
            CaptureFrom::Local(_) | CaptureFrom::Captured(_) | CaptureFrom::Sibling(_) => {}
        }
    }
    block(body, out);
}

fn block(b: &Block, out: &mut BTreeSet<String>) {
    for s in &b.stmts {
        expr(&s.expr, out);
    }
    operand(&b.result, out);
}

fn operand(o: &Operand, out: &mut BTreeSet<String>) {
    match o {
        Operand::Global { name, def: None } => {
            out.insert(name.clone());
        }
        Operand::Global { def: Some(_), .. } => {}
        Operand::Const(c) => match c {
            Const::Bool(_) | Const::Int(_) | Const::Float(_) | Const::Str(_) => {}
        },
        Operand::Unit
        | Operand::Local(_)
        | Operand::Captured(_)
        | Operand::Sibling(_)
        | Operand::Builtin(_)
        | Operand::Script => {}
    }
}

fn parts(ps: &[Part], out: &mut BTreeSet<String>) {
    for p in ps {
        match p {
            Part::One(o) | Part::Spread(o) => operand(o, out),
        }
    }
}

fn pat(p: &Pat) {
    // Patterns bind locals only; walked so a new pattern shape is noticed.
    match p {
        Pat::Wildcard | Pat::Bind(_) => {}
        Pat::List { items, rest: _ } => items.iter().for_each(pat),
        Pat::Fields(fields) => fields.iter().for_each(|(_, q)| pat(q)),
    }
}

fn redirects(rs: &[Redirect], out: &mut BTreeSet<String>) {
    for r in rs {
        match &r.kind {
            RedirectKind::Write(o)
            | RedirectKind::Stream(o)
            | RedirectKind::Append(o)
            | RedirectKind::Read(o)
            | RedirectKind::Here(o) => operand(o, out),
            RedirectKind::ErrToOut | RedirectKind::Dup(_) => {}
        }
    }
}

fn expr(e: &Expr, out: &mut BTreeSet<String>) {
    match e {
        Expr::Value(o) | Expr::Not(o) => operand(o, out),
        Expr::Define { def: _, value } => operand(value, out),
        Expr::Destructure { value, pattern } => {
            operand(value, out);
            pat(pattern);
        }
        Expr::MakeList(ps) => parts(ps, out),
        Expr::MakeRecord { base, fields } => {
            if let Some(b) = base {
                operand(b, out);
            }
            for (_, v) in fields {
                operand(v, out);
            }
        }
        Expr::MakeMap(ps) => {
            for p in ps {
                match p {
                    MapPart::Entry { key, value } => {
                        operand(key, out);
                        operand(value, out);
                    }
                    MapPart::Spread(o) => operand(o, out),
                }
            }
        }
        Expr::MakeVariant { tag: _, payload } => {
            if let Some(p) = payload {
                operand(p, out);
            }
        }
        Expr::MakeClosure { func: _, captures } => captures.iter().for_each(|o| operand(o, out)),
        Expr::MakeRecGroup {
            funcs: _,
            captures,
            dsts: _,
        } => captures.iter().for_each(|o| operand(o, out)),
        Expr::Interp(ps) => {
            for p in ps {
                match p {
                    InterpPart::Text(_) | InterpPart::Home => {}
                    InterpPart::Value(o) => operand(o, out),
                }
            }
        }
        Expr::Index { base, key, kind: _ } => {
            operand(base, out);
            operand(key, out);
        }
        Expr::Arith {
            op: _,
            kind: _,
            lhs,
            rhs,
        }
        | Expr::Compare {
            op: _,
            kind: _,
            lhs,
            rhs,
        }
        | Expr::Equal {
            lhs,
            rhs,
            negate: _,
        } => {
            operand(lhs, out);
            operand(rhs, out);
        }
        Expr::Neg {
            kind: _,
            operand: o,
        } => operand(o, out),
        Expr::Call {
            func,
            args,
            tail: _,
        } => {
            operand(func, out);
            args.iter().for_each(|o| operand(o, out));
        }
        Expr::CallSpread {
            func,
            args,
            tail: _,
        } => {
            operand(func, out);
            parts(args, out);
        }
        Expr::Force { thunk, tail: _ } => operand(thunk, out),
        Expr::Exec {
            head,
            args,
            redirects: rs,
        } => {
            match head {
                ExecHead::Name(_) | ExecHead::Base(_) | ExecHead::External(_) => {}
                ExecHead::Path(o) => operand(o, out),
            }
            parts(args, out);
            redirects(rs, out);
        }
        Expr::If {
            cond,
            then,
            otherwise,
        } => {
            operand(cond, out);
            block(then, out);
            block(otherwise, out);
        }
        Expr::Case { scrutinee, arms } => {
            operand(scrutinee, out);
            for arm in arms {
                block(&arm.body, out);
            }
        }
        Expr::Chain(bs) | Expr::Pipeline(bs) => bs.iter().for_each(|b| block(b, out)),
        Expr::Try {
            body,
            error: _,
            handler,
        } => {
            block(body, out);
            block(handler, out);
        }
        Expr::Guard { body, cleanup } => {
            block(body, out);
            block(cleanup, out);
        }
        Expr::Within { options: o, body } | Expr::Grant { caps: o, body } => {
            operand(o, out);
            block(body, out);
        }
        Expr::Audit { body } | Expr::Capture(body) => block(body, out),
        Expr::Redirected {
            body,
            redirects: rs,
        } => {
            block(body, out);
            redirects(rs, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ral_syntax::{SourceId, Span};

    use super::*;
    use crate::ir::{
        ArithOp, CaseArm, CmpOp, DefId, FuncId, IndexKind, LocalId, NumKind, OrdKind, Stmt,
    };

    fn g(name: &str) -> Operand {
        Operand::Global {
            name: name.to_owned(),
            def: None,
        }
    }

    fn blk(result: Operand) -> Block {
        Block {
            stmts: Vec::new(),
            result,
        }
    }

    /// A module whose `main` runs `exprs` in order.
    fn module(exprs: Vec<Expr>) -> Module {
        let stmts = exprs
            .into_iter()
            .map(|expr| Stmt {
                dst: None,
                expr,
                span: Span::new(0, 0),
            })
            .collect();
        Module {
            source: SourceId(0),
            funcs: vec![Func {
                id: FuncId(0),
                name: None,
                params: Vec::new(),
                param_names: Vec::new(),
                captures: Vec::new(),
                n_locals: 1,
                body: Block {
                    stmts,
                    result: Operand::Unit,
                },
                span: Span::new(0, 0),
            }],
            main: FuncId(0),
            defs: Vec::new(),
        }
    }

    fn names(exprs: Vec<Expr>) -> Vec<String> {
        referenced_names(&module(exprs)).into_iter().collect()
    }

    fn l0() -> Operand {
        Operand::Local(LocalId(0))
    }

    #[test]
    fn session_globals_only() {
        let this_turn = Operand::Global {
            name: "mine".to_owned(),
            def: Some(DefId(0)),
        };
        assert_eq!(
            names(vec![
                Expr::Value(this_turn),
                Expr::Value(g("x")),
                Expr::Value(Operand::Const(Const::Int(1))),
                Expr::Value(Operand::Script),
            ]),
            ["x"]
        );
    }

    #[test]
    fn block_results_and_other_functions() {
        let mut m = module(Vec::new());
        m.funcs[0].body.result = g("r");
        let mut f = m.funcs[0].clone();
        f.id = FuncId(1);
        f.captures = vec![CaptureFrom::Local(LocalId(0))];
        f.body.result = g("inner");
        m.funcs.push(f);
        let got: Vec<String> = referenced_names(&m).into_iter().collect();
        assert_eq!(got, ["inner", "r"]);
    }

    #[test]
    fn define_and_destructure() {
        assert_eq!(
            names(vec![
                Expr::Define {
                    def: DefId(0),
                    value: g("a"),
                },
                Expr::Destructure {
                    value: g("b"),
                    pattern: Pat::List {
                        items: vec![Pat::Bind(LocalId(0)), Pat::Fields(Vec::new())],
                        rest: Some(None),
                    },
                },
            ]),
            ["a", "b"]
        );
    }

    #[test]
    fn data_constructors() {
        assert_eq!(
            names(vec![
                Expr::MakeList(vec![Part::One(g("a")), Part::Spread(g("b"))]),
                Expr::MakeRecord {
                    base: Some(g("c")),
                    fields: vec![(Arc::from("k"), g("d"))],
                },
                Expr::MakeMap(vec![
                    MapPart::Entry {
                        key: g("e"),
                        value: g("f"),
                    },
                    MapPart::Spread(g("h")),
                ]),
                Expr::MakeVariant {
                    tag: Arc::from("t"),
                    payload: Some(g("i")),
                },
            ]),
            ["a", "b", "c", "d", "e", "f", "h", "i"]
        );
    }

    #[test]
    fn closures_and_groups() {
        assert_eq!(
            names(vec![
                Expr::MakeClosure {
                    func: FuncId(0),
                    captures: vec![g("a")],
                },
                Expr::MakeRecGroup {
                    funcs: vec![FuncId(0)],
                    captures: vec![g("b"), Operand::Sibling(0)],
                    dsts: vec![LocalId(0)],
                },
            ]),
            ["a", "b"]
        );
    }

    #[test]
    fn interp_and_index() {
        assert_eq!(
            names(vec![
                Expr::Interp(vec![
                    InterpPart::Text(Arc::from("x")),
                    InterpPart::Home,
                    InterpPart::Value(g("a")),
                ]),
                Expr::Index {
                    base: g("b"),
                    key: g("c"),
                    kind: IndexKind::Dynamic,
                },
            ]),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn operators() {
        assert_eq!(
            names(vec![
                Expr::Arith {
                    op: ArithOp::Add,
                    kind: NumKind::Int,
                    lhs: g("a"),
                    rhs: g("b"),
                },
                Expr::Neg {
                    kind: NumKind::Float,
                    operand: g("c"),
                },
                Expr::Not(g("d")),
                Expr::Compare {
                    op: CmpOp::Lt,
                    kind: OrdKind::Str,
                    lhs: g("e"),
                    rhs: l0(),
                },
                Expr::Equal {
                    lhs: l0(),
                    rhs: g("f"),
                    negate: true,
                },
            ]),
            ["a", "b", "c", "d", "e", "f"]
        );
    }

    #[test]
    fn application() {
        assert_eq!(
            names(vec![
                Expr::Call {
                    func: g("a"),
                    args: vec![g("b")],
                    tail: false,
                },
                Expr::CallSpread {
                    func: g("c"),
                    args: vec![Part::Spread(g("d"))],
                    tail: true,
                },
                Expr::Force {
                    thunk: g("e"),
                    tail: false,
                },
            ]),
            ["a", "b", "c", "d", "e"]
        );
    }

    #[test]
    fn exec_heads_args_and_redirects() {
        assert_eq!(
            names(vec![
                Expr::Exec {
                    head: ExecHead::Path(g("p")),
                    args: vec![Part::One(g("a"))],
                    redirects: vec![
                        Redirect {
                            fd: 1,
                            kind: RedirectKind::Write(g("w")),
                        },
                        Redirect {
                            fd: 0,
                            kind: RedirectKind::Here(g("h")),
                        },
                        Redirect {
                            fd: 2,
                            kind: RedirectKind::ErrToOut,
                        },
                    ],
                },
                // A command name is not a session read.
                Expr::Exec {
                    head: ExecHead::Name("ls".to_owned()),
                    args: Vec::new(),
                    redirects: Vec::new(),
                },
            ]),
            ["a", "h", "p", "w"]
        );
    }

    #[test]
    fn branching() {
        assert_eq!(
            names(vec![
                Expr::If {
                    cond: g("c"),
                    then: blk(g("t")),
                    otherwise: blk(g("o")),
                },
                Expr::Case {
                    scrutinee: g("s"),
                    arms: vec![CaseArm {
                        tag: Arc::from("ok"),
                        payload: LocalId(0),
                        body: blk(g("arm")),
                    }],
                },
                Expr::Chain(vec![blk(g("x")), blk(g("y"))]),
            ]),
            ["arm", "c", "o", "s", "t", "x", "y"]
        );
    }

    #[test]
    fn scopes() {
        assert_eq!(
            names(vec![
                Expr::Try {
                    body: blk(g("a")),
                    error: LocalId(0),
                    handler: blk(g("b")),
                },
                Expr::Guard {
                    body: blk(g("c")),
                    cleanup: blk(g("d")),
                },
                Expr::Within {
                    options: g("e"),
                    body: blk(g("f")),
                },
                Expr::Grant {
                    caps: g("h"),
                    body: blk(g("i")),
                },
                Expr::Audit { body: blk(g("j")) },
            ]),
            ["a", "b", "c", "d", "e", "f", "h", "i", "j"]
        );
    }

    #[test]
    fn redirected_pipeline_capture() {
        assert_eq!(
            names(vec![
                Expr::Redirected {
                    body: blk(g("a")),
                    redirects: vec![Redirect {
                        fd: 1,
                        kind: RedirectKind::Append(g("b")),
                    }],
                },
                Expr::Pipeline(vec![blk(g("c")), blk(g("d"))]),
                Expr::Capture(blk(g("e"))),
            ]),
            ["a", "b", "c", "d", "e"]
        );
    }

    #[test]
    fn lowered_program_reads() {
        // An earlier turn made `prior` and a session `length` (hiding the
        // builtin); the checker resolves this turn's names against that
        // session, and the lowering follows the checker.
        let opts = ral_types::CheckOptions::default();
        let first = ral_syntax::parse(
            "let prior = 'p'\nlet length = { |xs| return 0 }\n",
            SourceId(0),
        );
        let first_checked = ral_types::check_program(
            &first.program,
            SourceId(0),
            &ral_types::TypeEnv::new(),
            &opts,
        );
        assert!(!first_checked.has_errors());
        let env = ral_types::TypeEnv::new().extend_with(&first_checked);
        let src = "let f = { |x| echo $x $prior }\nf $prior\nlet n = $length\nlet m = map $f [1]";
        let parsed = ral_syntax::parse(src, SourceId(0));
        let checked = ral_types::check_program(&parsed.program, SourceId(0), &env, &opts);
        assert!(!checked.has_errors());
        let session = |n: &str| n == "prior" || n == "length";
        let m = crate::lower::lower_with_session(&parsed.program, &checked, SourceId(0), &session);
        let got: Vec<String> = referenced_names(&m).into_iter().collect();
        // `map` stays a builtin and `f` is this turn's definition.
        assert_eq!(got, ["length", "prior"]);
    }
}
