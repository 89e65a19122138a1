//! The VM on hand-built IR: arithmetic, closures, recursion, tail calls,
//! the depth limit, control flow, data, and the top-level install law.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use ral_ir::{
    ArithOp, Block, CaseArm, CmpOp, Const, Def, DefId, Expr, Func, FuncId, IndexKind, LocalId,
    Module, NumKind, Operand, OrdKind, Part, Pat, Stmt,
};
use ral_syntax::{SourceId, Span};
use ral_vm::{Escape, Mobile, RunError, Value, Vm};

// ---- IR builders ----

fn l(n: u32) -> Operand {
    Operand::Local(LocalId(n))
}
fn int(n: i64) -> Operand {
    Operand::Const(Const::Int(n))
}
fn s(text: &str) -> Operand {
    Operand::Const(Const::Str(Arc::from(text)))
}
fn st(dst: Option<u32>, expr: Expr) -> Stmt {
    Stmt {
        dst: dst.map(LocalId),
        expr,
        span: Span::default(),
    }
}
fn block(stmts: Vec<Stmt>, result: Operand) -> Block {
    Block { stmts, result }
}
fn arith(op: ArithOp, lhs: Operand, rhs: Operand) -> Expr {
    Expr::Arith {
        op,
        kind: NumKind::Int,
        lhs,
        rhs,
    }
}
fn cmp(op: CmpOp, lhs: Operand, rhs: Operand) -> Expr {
    Expr::Compare {
        op,
        kind: OrdKind::Int,
        lhs,
        rhs,
    }
}
fn call(func: Operand, args: Vec<Operand>, tail: bool) -> Expr {
    Expr::Call { func, args, tail }
}
fn global(name: &str, def: u32) -> Operand {
    Operand::Global {
        name: name.into(),
        def: Some(DefId(def)),
    }
}
fn func(id: u32, name: &str, params: Vec<u32>, n_locals: u32, body: Block) -> Func {
    Func {
        id: FuncId(id),
        name: Some(name.into()),
        params: params.into_iter().map(LocalId).collect(),
        param_names: Vec::new(),
        captures: Vec::new(),
        n_locals,
        body,
        span: Span::default(),
    }
}
fn module(funcs: Vec<Func>, main: u32, defs: &[&str]) -> Module {
    Module {
        source: SourceId(0),
        funcs,
        main: FuncId(main),
        defs: defs
            .iter()
            .enumerate()
            .map(|(i, n)| Def {
                id: DefId(i as u32),
                name: (*n).into(),
                span: Span::default(),
                entry: None,
            })
            .collect(),
    }
}
fn define(def: u32, value: Operand) -> Stmt {
    st(
        None,
        Expr::Define {
            def: DefId(def),
            value,
        },
    )
}
fn closure(f: u32, captures: Vec<Operand>) -> Expr {
    Expr::MakeClosure {
        func: FuncId(f),
        captures,
    }
}

fn run(m: &Module) -> (Vm, Result<Value, RunError>) {
    let mut vm = Vm::new(Mobile::default());
    let r = vm.run_module(m);
    (vm, r)
}

fn fail_message(r: Result<Value, RunError>) -> String {
    match r {
        Err(RunError::Escape(Escape::Fail(f))) => f.message.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

// ---- arithmetic ----

#[test]
fn int_arithmetic_and_overflow() {
    // main: l0 = 6 * 7; l1 = l0 - 2; result l1
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), arith(ArithOp::Mul, int(6), int(7))),
                st(Some(1), arith(ArithOp::Sub, l(0), int(2))),
            ],
            l(1),
        ),
    );
    assert_eq!(run(&module(vec![main], 0, &[])).1, Ok(Value::Int(40)));

    let main = func(
        0,
        "main",
        vec![],
        1,
        block(
            vec![st(Some(0), arith(ArithOp::Add, int(i64::MAX), int(1)))],
            l(0),
        ),
    );
    let msg = fail_message(run(&module(vec![main], 0, &[])).1);
    assert!(msg.contains("overflow"), "{msg}");

    let main = func(
        0,
        "main",
        vec![],
        1,
        block(vec![st(Some(0), arith(ArithOp::Div, int(1), int(0)))], l(0)),
    );
    assert_eq!(
        fail_message(run(&module(vec![main], 0, &[])).1),
        "division by zero"
    );
}

#[test]
fn float_non_finite_fails_and_generic_dispatches() {
    let main = func(
        0,
        "main",
        vec![],
        1,
        block(
            vec![st(
                Some(0),
                Expr::Arith {
                    op: ArithOp::Div,
                    kind: NumKind::Float,
                    lhs: Operand::Const(Const::Float(1.0)),
                    rhs: Operand::Const(Const::Float(0.0)),
                },
            )],
            l(0),
        ),
    );
    let msg = fail_message(run(&module(vec![main], 0, &[])).1);
    assert!(msg.contains("non-finite"), "{msg}");

    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(
                    Some(0),
                    Expr::Arith {
                        op: ArithOp::Add,
                        kind: NumKind::Generic,
                        lhs: Operand::Const(Const::Float(1.5)),
                        rhs: Operand::Const(Const::Float(2.0)),
                    },
                ),
                st(
                    Some(1),
                    Expr::Compare {
                        op: CmpOp::Ge,
                        kind: OrdKind::Generic,
                        lhs: l(0),
                        rhs: Operand::Const(Const::Float(3.5)),
                    },
                ),
            ],
            l(1),
        ),
    );
    assert_eq!(run(&module(vec![main], 0, &[])).1, Ok(Value::Bool(true)));
}

// ---- closures and shadowing ----

#[test]
fn closures_capture_by_value_and_shadowing_keeps_old_bindings() {
    // let x = 1; let f = { $x }; let x = 2; [!$f, $x]
    // f1 = { captured 0 }
    let f1 = Func {
        captures: vec![ral_ir::CaptureFrom::Local(LocalId(0))],
        ..func(1, "f", vec![], 0, block(vec![], Operand::Captured(0)))
    };
    let main = func(
        0,
        "main",
        vec![],
        5,
        block(
            vec![
                st(Some(0), Expr::Value(int(1))),
                st(Some(1), closure(1, vec![l(0)])),
                st(Some(2), Expr::Value(int(2))),
                st(
                    Some(3),
                    Expr::Force {
                        thunk: l(1),
                        tail: false,
                    },
                ),
                st(
                    Some(4),
                    Expr::MakeList(vec![Part::One(l(3)), Part::One(l(2))]),
                ),
            ],
            l(4),
        ),
    );
    assert_eq!(
        run(&module(vec![main, f1], 0, &[])).1,
        Ok(Value::list(vec![Value::Int(1), Value::Int(2)]))
    );
}

#[test]
fn global_shadowing_does_not_change_earlier_closures() {
    // let x = 1; let f = { $x }; let x = 2; !$f  →  1
    let f1 = func(1, "f", vec![], 0, block(vec![], global("x", 0)));
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                define(0, int(1)),
                st(Some(0), closure(1, vec![])),
                define(1, l(0)),
                define(2, int(2)),
                st(
                    Some(1),
                    call(
                        Operand::Global {
                            name: "f".into(),
                            def: Some(DefId(1)),
                        },
                        vec![],
                        false,
                    ),
                ),
            ],
            l(1),
        ),
    );
    let (vm, r) = run(&module(vec![main, f1], 0, &["x", "f", "x"]));
    assert_eq!(r, Ok(Value::Int(1)));
    assert_eq!(vm.mobile.scope.get_named("x"), Some(&Value::Int(2)));
}

// ---- recursion ----

/// `fact n = if n <= 1 then 1 else n * fact (n - 1)`, as top-level def 0.
fn fact_module(n: i64) -> Module {
    // f1(l0=n): l1 = n <= 1; if l1 { 1 } else { l2 = n - 1; l3 = fact l2; l4 = n * l3; l4 }
    let fact = func(
        1,
        "fact",
        vec![0],
        5,
        block(
            vec![
                st(Some(1), cmp(CmpOp::Le, l(0), int(1))),
                st(
                    Some(4),
                    Expr::If {
                        cond: l(1),
                        then: block(vec![], int(1)),
                        otherwise: block(
                            vec![
                                st(Some(2), arith(ArithOp::Sub, l(0), int(1))),
                                st(Some(3), call(global("fact", 0), vec![l(2)], false)),
                                st(Some(4), arith(ArithOp::Mul, l(0), l(3))),
                            ],
                            l(4),
                        ),
                    },
                ),
            ],
            l(4),
        ),
    );
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                define(0, l(0)),
                st(Some(1), call(global("fact", 0), vec![int(n)], false)),
            ],
            l(1),
        ),
    );
    module(vec![main, fact], 0, &["fact"])
}

#[test]
fn factorial() {
    assert_eq!(
        run(&fact_module(20)).1,
        Ok(Value::Int(2_432_902_008_176_640_000))
    );
    let msg = fail_message(run(&fact_module(21)).1);
    assert!(msg.contains("overflow"), "{msg}");
}

/// `fib n = if n < 2 then n else fib (n-1) + fib (n-2)`.
fn fib_module(n: i64) -> Module {
    let fib = func(
        1,
        "fib",
        vec![0],
        7,
        block(
            vec![
                st(Some(1), cmp(CmpOp::Lt, l(0), int(2))),
                st(
                    Some(6),
                    Expr::If {
                        cond: l(1),
                        then: block(vec![], l(0)),
                        otherwise: block(
                            vec![
                                st(Some(2), arith(ArithOp::Sub, l(0), int(1))),
                                st(Some(3), call(global("fib", 0), vec![l(2)], false)),
                                st(Some(4), arith(ArithOp::Sub, l(0), int(2))),
                                st(Some(5), call(global("fib", 0), vec![l(4)], false)),
                                st(Some(6), arith(ArithOp::Add, l(3), l(5))),
                            ],
                            l(6),
                        ),
                    },
                ),
            ],
            l(6),
        ),
    );
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                define(0, l(0)),
                st(Some(1), call(global("fib", 0), vec![int(n)], false)),
            ],
            l(1),
        ),
    );
    module(vec![main, fib], 0, &["fib"])
}

#[test]
fn fibonacci() {
    assert_eq!(run(&fib_module(20)).1, Ok(Value::Int(6765)));
}

/// `sum n acc = if n == 0 then acc else sum (n-1) (acc+n)` with a tail call.
fn sum_module(n: i64, tail: bool) -> Module {
    let sum = func(
        1,
        "sum",
        vec![0, 1],
        6,
        block(
            vec![
                st(
                    Some(2),
                    Expr::Equal {
                        lhs: l(0),
                        rhs: int(0),
                        negate: false,
                    },
                ),
                st(
                    Some(5),
                    Expr::If {
                        cond: l(2),
                        then: block(vec![], l(1)),
                        otherwise: block(
                            vec![
                                st(Some(3), arith(ArithOp::Sub, l(0), int(1))),
                                st(Some(4), arith(ArithOp::Add, l(1), l(0))),
                                st(Some(5), call(global("sum", 0), vec![l(3), l(4)], tail)),
                            ],
                            l(5),
                        ),
                    },
                ),
            ],
            l(5),
        ),
    );
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                define(0, l(0)),
                st(Some(1), call(global("sum", 0), vec![int(n), int(0)], false)),
            ],
            l(1),
        ),
    );
    module(vec![main, sum], 0, &["sum"])
}

#[test]
fn tail_recursion_runs_a_million_iterations_in_constant_memory() {
    let mut vm = Vm::new(Mobile::default());
    // A limit far below the iteration count proves no frame accumulates.
    vm.max_depth = 100;
    let r = vm.run_module(&sum_module(1_000_000, true));
    assert_eq!(r, Ok(Value::Int(500_000_500_000)));
}

#[test]
fn deep_non_tail_recursion_hits_the_limit_cleanly() {
    let mut vm = Vm::new(Mobile::default());
    vm.max_depth = 10_000;
    let msg = fail_message(vm.run_module(&sum_module(1_000_000, false)));
    assert!(msg.contains("recursion depth limit"), "{msg}");
    // The same machine still works afterwards.
    assert_eq!(vm.run_module(&sum_module(100, false)), Ok(Value::Int(5050)));
}

#[test]
fn partial_and_over_application() {
    // add = {|a b| a + b}; inc = add 1; [inc 41, add 1 2]
    // over-application: k = {|a| add}  ;  k 0 3 4 = add 3 4 = 7
    let add = func(
        1,
        "add",
        vec![0, 1],
        3,
        block(vec![st(Some(2), arith(ArithOp::Add, l(0), l(1)))], l(2)),
    );
    let k = Func {
        captures: vec![ral_ir::CaptureFrom::Local(LocalId(0))],
        ..func(2, "k", vec![0], 1, block(vec![], Operand::Captured(0)))
    };
    let main = func(
        0,
        "main",
        vec![],
        6,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                st(Some(1), call(l(0), vec![int(1)], false)),
                st(Some(2), call(l(1), vec![int(41)], false)),
                st(Some(3), closure(2, vec![l(0)])),
                st(Some(4), call(l(3), vec![int(0), int(3), int(4)], false)),
                st(
                    Some(5),
                    Expr::MakeList(vec![Part::One(l(2)), Part::One(l(4))]),
                ),
            ],
            l(5),
        ),
    );
    assert_eq!(
        run(&module(vec![main, add, k], 0, &[])).1,
        Ok(Value::list(vec![Value::Int(42), Value::Int(7)]))
    );
}

#[test]
fn recursive_group_members_call_each_other() {
    // even n = n == 0 ? true : odd (n-1);  odd n = n == 0 ? false : even (n-1)
    let member = |id: u32, name: &str, base: bool, other: u32| {
        func(
            id,
            name,
            vec![0],
            4,
            block(
                vec![
                    st(
                        Some(1),
                        Expr::Equal {
                            lhs: l(0),
                            rhs: int(0),
                            negate: false,
                        },
                    ),
                    st(
                        Some(3),
                        Expr::If {
                            cond: l(1),
                            then: block(vec![], Operand::Const(Const::Bool(base))),
                            otherwise: block(
                                vec![
                                    st(Some(2), arith(ArithOp::Sub, l(0), int(1))),
                                    st(Some(3), call(Operand::Sibling(other), vec![l(2)], true)),
                                ],
                                l(3),
                            ),
                        },
                    ),
                ],
                l(3),
            ),
        )
    };
    let main = func(
        0,
        "main",
        vec![],
        3,
        block(
            vec![
                st(
                    None,
                    Expr::MakeRecGroup {
                        funcs: vec![FuncId(1), FuncId(2)],
                        captures: vec![],
                        dsts: vec![LocalId(0), LocalId(1)],
                    },
                ),
                st(Some(2), call(l(0), vec![int(100_001)], false)),
            ],
            l(2),
        ),
    );
    let m = module(
        vec![main, member(1, "even", true, 1), member(2, "odd", false, 0)],
        0,
        &[],
    );
    assert_eq!(run(&m).1, Ok(Value::Bool(false)));
}

// ---- control ----

#[test]
fn case_chain_and_try() {
    // v = `some 5; case v { some x -> x + 1; none _ -> 0 }
    let main = func(
        0,
        "main",
        vec![],
        8,
        block(
            vec![
                st(
                    Some(0),
                    Expr::MakeVariant {
                        tag: Arc::from("some"),
                        payload: Some(int(5)),
                    },
                ),
                st(
                    Some(1),
                    Expr::Case {
                        scrutinee: l(0),
                        arms: vec![
                            CaseArm {
                                tag: Arc::from("none"),
                                payload: LocalId(2),
                                body: block(vec![], int(0)),
                            },
                            CaseArm {
                                tag: Arc::from("some"),
                                payload: LocalId(2),
                                body: block(
                                    vec![st(Some(3), arith(ArithOp::Add, l(2), int(1)))],
                                    l(3),
                                ),
                            },
                        ],
                    },
                ),
                // chain: (1 / 0) ? 7
                st(
                    Some(4),
                    Expr::Chain(vec![
                        block(vec![st(Some(4), arith(ArithOp::Div, int(1), int(0)))], l(4)),
                        block(vec![], int(7)),
                    ]),
                ),
                // try { fail [status: 3, message: "boom"] } { |e| e.status }
                st(
                    Some(7),
                    Expr::Try {
                        body: block(
                            vec![
                                st(
                                    Some(5),
                                    Expr::MakeRecord {
                                        base: None,
                                        fields: vec![
                                            (Arc::from("status"), int(3)),
                                            (Arc::from("message"), s("boom")),
                                        ],
                                    },
                                ),
                                st(
                                    Some(7),
                                    call(
                                        Operand::Builtin(
                                            ral_types::builtin_table().id("fail").unwrap(),
                                        ),
                                        vec![l(5)],
                                        false,
                                    ),
                                ),
                            ],
                            l(7),
                        ),
                        error: LocalId(6),
                        handler: block(
                            vec![st(
                                Some(7),
                                Expr::Index {
                                    base: l(6),
                                    key: Operand::Unit,
                                    kind: IndexKind::Field(Arc::from("status")),
                                },
                            )],
                            l(7),
                        ),
                    },
                ),
            ],
            Operand::Unit,
        ),
    );
    let main = Func {
        body: Block {
            result: l(1),
            ..main.body.clone()
        },
        ..main
    };
    // Run three variants reading each result.
    for (res, want) in [(l(1), 6), (l(4), 7), (l(7), 3)] {
        let mut m = module(vec![main.clone()], 0, &[]);
        m.funcs[0].body.result = res;
        assert_eq!(run(&m).1, Ok(Value::Int(want)));
    }
}

#[test]
fn exit_is_not_caught_by_try() {
    let exit = ral_types::builtin_table().id("exit").unwrap();
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![st(
                Some(1),
                Expr::Try {
                    body: block(
                        vec![st(
                            Some(1),
                            call(Operand::Builtin(exit), vec![int(4)], false),
                        )],
                        l(1),
                    ),
                    error: LocalId(0),
                    handler: block(vec![], int(0)),
                },
            )],
            l(1),
        ),
    );
    assert_eq!(
        run(&module(vec![main], 0, &[])).1,
        Err(RunError::Escape(Escape::Exit(4)))
    );
}

// ---- data ----

#[test]
fn records_lists_indexing_and_destructuring() {
    // r = [b: 2, a: 1]; xs = [10, ...[20, 30]]; [x, ...rest] = xs;
    // result: [r.a, xs[2], x, rest]
    let main = func(
        0,
        "main",
        vec![],
        9,
        block(
            vec![
                st(
                    Some(0),
                    Expr::MakeRecord {
                        base: None,
                        fields: vec![(Arc::from("b"), int(2)), (Arc::from("a"), int(1))],
                    },
                ),
                st(
                    Some(1),
                    Expr::MakeList(vec![Part::One(int(20)), Part::One(int(30))]),
                ),
                st(
                    Some(2),
                    Expr::MakeList(vec![Part::One(int(10)), Part::Spread(l(1))]),
                ),
                st(
                    None,
                    Expr::Destructure {
                        value: l(2),
                        pattern: Pat::List {
                            items: vec![Pat::Bind(LocalId(3))],
                            rest: Some(Some(LocalId(4))),
                        },
                    },
                ),
                st(
                    Some(5),
                    Expr::Index {
                        base: l(0),
                        key: Operand::Unit,
                        kind: IndexKind::Field(Arc::from("a")),
                    },
                ),
                st(
                    Some(6),
                    Expr::Index {
                        base: l(2),
                        key: int(2),
                        kind: IndexKind::List,
                    },
                ),
                st(
                    Some(7),
                    Expr::MakeList(vec![
                        Part::One(l(5)),
                        Part::One(l(6)),
                        Part::One(l(3)),
                        Part::One(l(4)),
                    ]),
                ),
            ],
            l(7),
        ),
    );
    assert_eq!(
        run(&module(vec![main], 0, &[])).1,
        Ok(Value::list(vec![
            Value::Int(1),
            Value::Int(30),
            Value::Int(10),
            Value::list(vec![Value::Int(20), Value::Int(30)]),
        ]))
    );

    // Out of range is a failure.
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), Expr::MakeList(vec![Part::One(int(1))])),
                st(
                    Some(1),
                    Expr::Index {
                        base: l(0),
                        key: int(5),
                        kind: IndexKind::List,
                    },
                ),
            ],
            l(1),
        ),
    );
    let msg = fail_message(run(&module(vec![main], 0, &[])).1);
    assert!(msg.contains("out of range"), "{msg}");
}

#[test]
fn capture_and_builtins_with_callbacks() {
    // xs = map {|x| x * 2} [1, 2, 3]; s = capture { to-lines $xs }
    let dbl = func(
        1,
        "dbl",
        vec![0],
        2,
        block(vec![st(Some(1), arith(ArithOp::Mul, l(0), int(2)))], l(1)),
    );
    let table = ral_types::builtin_table();
    let main = func(
        0,
        "main",
        vec![],
        4,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                st(
                    Some(1),
                    Expr::MakeList(vec![
                        Part::One(int(1)),
                        Part::One(int(2)),
                        Part::One(int(3)),
                    ]),
                ),
                st(
                    Some(2),
                    call(
                        Operand::Builtin(table.id("map").unwrap()),
                        vec![l(0), l(1)],
                        false,
                    ),
                ),
                st(
                    Some(3),
                    Expr::Capture(block(
                        vec![st(
                            None,
                            call(
                                Operand::Builtin(table.id("to-lines").unwrap()),
                                vec![l(2)],
                                false,
                            ),
                        )],
                        Operand::Unit,
                    )),
                ),
            ],
            l(3),
        ),
    );
    assert_eq!(
        run(&module(vec![main, dbl], 0, &[])).1,
        Ok(Value::str("2\n4\n6"))
    );
}

#[test]
fn audit_of_a_value_reports_ok_and_an_empty_trail() {
    let main = func(
        0,
        "main",
        vec![],
        1,
        block(
            vec![st(
                Some(0),
                Expr::Audit {
                    body: block(vec![], Operand::Unit),
                },
            )],
            l(0),
        ),
    );
    let v = run(&module(vec![main], 0, &[])).1.unwrap();
    let Value::Record(r) = v else {
        panic!("not a report: {v:?}")
    };
    assert!(matches!(r.get("outcome"), Some(Value::Variant(o)) if &*o.tag == "ok"));
    assert!(matches!(r.get("trail"), Some(Value::List(t)) if t.is_empty()));
}

// ---- the §5.6 law ----

#[test]
fn a_failed_run_keeps_what_landed() {
    // let x = 1; let y = 1 / 0; let z = 3
    let main = func(
        0,
        "main",
        vec![],
        1,
        block(
            vec![
                define(0, int(1)),
                st(Some(0), arith(ArithOp::Div, int(1), int(0))),
                define(1, l(0)),
                define(2, int(3)),
            ],
            Operand::Unit,
        ),
    );
    let (vm, r) = run(&module(vec![main], 0, &["x", "y", "z"]));
    assert_eq!(fail_message(r), "division by zero");
    assert_eq!(vm.mobile.scope.get_named("x"), Some(&Value::Int(1)));
    assert_eq!(vm.mobile.scope.get_named("y"), None);
    assert_eq!(vm.mobile.scope.get_named("z"), None);
}

#[test]
fn disassembly_names_ops() {
    let mut vm = Vm::new(Mobile::default());
    let main = vm.load(&fib_module(10)).unwrap();
    let text = ral_vm::op::disassemble(vm.proto(main + 1).unwrap());
    assert!(text.starts_with("proto fib  regs="), "{text}");
    assert!(text.contains("lt-int"), "{text}");
    assert!(text.contains("add-int"), "{text}");
    assert!(text.contains("return"), "{text}");
    let _ = vm.run_main(main).unwrap();
}

/// `cargo test --release -p ral-vm --test vm -- --ignored --nocapture`
#[test]
#[ignore = "timing; run in release"]
fn time_fib_30() {
    let mut vm = Vm::new(Mobile::default());
    let main = vm.load(&fib_module(30)).unwrap();
    let t = std::time::Instant::now();
    let r = vm.run_main(main);
    eprintln!("fib(30) = {r:?} in {:?}", t.elapsed());
    assert_eq!(r, Ok(Value::Int(832_040)));
    let mut vm = Vm::new(Mobile::default());
    let main = vm.load(&sum_module(10_000_000, true)).unwrap();
    let t = std::time::Instant::now();
    let r = vm.run_main(main);
    eprintln!("tail sum 10M = {r:?} in {:?}", t.elapsed());
}

#[test]
fn failure_inside_a_builtin_callback_reaches_try() {
    // try { map {|x| x / 0} [1] } {|e| e.status + 10}
    let bad = func(
        1,
        "bad",
        vec![0],
        2,
        block(vec![st(Some(1), arith(ArithOp::Div, l(0), int(0)))], l(1)),
    );
    let map = ral_types::builtin_table().id("map").unwrap();
    let main = func(
        0,
        "main",
        vec![],
        5,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                st(Some(1), Expr::MakeList(vec![Part::One(int(1))])),
                st(
                    Some(4),
                    Expr::Try {
                        body: block(
                            vec![st(
                                Some(4),
                                call(Operand::Builtin(map), vec![l(0), l(1)], false),
                            )],
                            l(4),
                        ),
                        error: LocalId(2),
                        handler: block(
                            vec![
                                st(
                                    Some(3),
                                    Expr::Index {
                                        base: l(2),
                                        key: Operand::Unit,
                                        kind: IndexKind::Field(Arc::from("status")),
                                    },
                                ),
                                st(Some(4), arith(ArithOp::Add, l(3), int(10))),
                            ],
                            l(4),
                        ),
                    },
                ),
            ],
            l(4),
        ),
    );
    assert_eq!(run(&module(vec![main, bad], 0, &[])).1, Ok(Value::Int(11)));
}

#[test]
fn reading_a_definition_that_has_not_run_fails_clearly() {
    // f = { g }; !f; let g = 1   (g is a forward reference)
    let f1 = func(1, "f", vec![], 0, block(vec![], global("g", 0)));
    let main = func(
        0,
        "main",
        vec![],
        2,
        block(
            vec![
                st(Some(0), closure(1, vec![])),
                st(Some(1), call(l(0), vec![], false)),
                define(0, int(1)),
            ],
            l(1),
        ),
    );
    let msg = fail_message(run(&module(vec![main, f1], 0, &["g"])).1);
    assert!(msg.contains("not defined"), "{msg}");
}

/// Hand-built IR can do what the checker forbids: an Int arithmetic op on
/// a String. The VM fails cleanly and counts the backstop the golden
/// harness requires to stay silent on checked programs.
#[test]
fn an_ill_kinded_operand_is_a_counted_backstop_failure() {
    let before = ral_vm::failure::backstops();
    let main = func(
        0,
        "main",
        vec![],
        1,
        block(vec![st(Some(0), arith(ArithOp::Add, int(1), s("x")))], l(0)),
    );
    let msg = fail_message(run(&module(vec![main], 0, &[])).1);
    assert!(msg.contains("expected"), "{msg}");
    assert!(ral_vm::failure::backstops() > before);
}
