//! Name resolution comes from the checker: lowering follows
//! `Elaboration::names` and reports a use it has no resolution for; session
//! names reach the IR only where the checker resolved a use to the session;
//! forward references to named blocks (spec §5.7) lower inside the block
//! that holds them, and the ones the checker refuses never reach lowering.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

use std::collections::BTreeSet;

use ral_ir::{
    referenced_names, try_lower, try_lower_with_session, Block, Expr, Func, Module, Operand,
};
use ral_syntax::ast::Program;
use ral_syntax::{Code, SourceId, Span};
use ral_types::{check_program, CheckOptions, Checked, TypeEnv};

fn parse(src: &str) -> Program {
    let parsed = ral_syntax::parse(src, SourceId(0));
    assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
    parsed.program
}

fn check(program: &Program, env: &TypeEnv) -> Checked {
    check_program(program, SourceId(0), env, &CheckOptions::default())
}

fn lowered(src: &str, env: &TypeEnv) -> Module {
    let program = parse(src);
    let checked = check(&program, env);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    try_lower(&program, &checked, SourceId(0)).expect("lowers")
}

/// The error codes the checker reports for `src`.
fn rejected(src: &str) -> Vec<Code> {
    let program = parse(src);
    let checked = check(&program, &TypeEnv::new());
    checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| d.code)
        .collect()
}

fn func<'m>(m: &'m Module, name: &str) -> &'m Func {
    m.funcs
        .iter()
        .find(|f| f.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no function named {name}"))
}

/// Every statement of a block and of the blocks nested in it.
fn walk<'b>(b: &'b Block, out: &mut Vec<&'b Expr>) {
    for s in &b.stmts {
        out.push(&s.expr);
        match &s.expr {
            Expr::If {
                then, otherwise, ..
            } => {
                walk(then, out);
                walk(otherwise, out);
            }
            Expr::Capture(b) => walk(b, out),
            _ => {}
        }
    }
}

fn exprs(f: &Func) -> Vec<&Expr> {
    let mut out = Vec::new();
    walk(&f.body, &mut out);
    out
}

/// The session a first turn `src` leaves.
fn session_after(src: &str) -> TypeEnv {
    let program = parse(src);
    let checked = check(&program, &TypeEnv::new());
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    TypeEnv::new().extend_with(&checked)
}

#[test]
fn a_use_without_a_recorded_resolution_is_an_internal_error() {
    let src = "let x = 1\nlet y = $x\n";
    let program = parse(src);
    let mut checked = check(&program, &TypeEnv::new());
    assert!(try_lower(&program, &checked, SourceId(0)).is_ok());
    let at = src.rfind("$x").expect("use") as u32;
    let use_span = Span::new(at, at + 2);
    assert!(
        checked.elab.names.remove(&use_span).is_some(),
        "the checker keys `$x` by its span"
    );
    let err = try_lower(&program, &checked, SourceId(0)).expect_err("no resolution");
    assert_eq!(err.span, use_span);
    assert!(err.message.contains("`x`"), "{err}");
    assert!(err.message.contains("no resolution"), "{err}");
}

#[test]
fn session_names_are_exactly_what_the_checker_resolved_to_the_session() {
    // An earlier turn bound `prior` and a `length` that hides the builtin.
    let env = session_after("let prior = 'p'\nlet length = { |xs| return 0 }\n");
    let src = "let f = { |x| echo $x $prior }\nf $prior\nlet n = $length\nlet m = map $f [1]\nlet k = length [1]\n";
    let m = lowered(src, &env);
    let got: Vec<String> = referenced_names(&m).into_iter().collect();
    // `map` stays a builtin and `f` is this turn's definition.
    assert_eq!(got, ["length", "prior"]);
    // The host's session must know them.
    let program = parse(src);
    let checked = check(&program, &env);
    let knows_both = |n: &str| n == "prior" || n == "length";
    assert!(try_lower_with_session(&program, &checked, SourceId(0), &knows_both).is_ok());
    let knows_prior = |n: &str| n == "prior";
    let err = try_lower_with_session(&program, &checked, SourceId(0), &knows_prior)
        .expect_err("`length` is not in that session");
    assert!(err.message.contains("`length`"), "{err}");
}

#[test]
fn a_binding_of_this_turn_hides_the_session_one() {
    let env = session_after("let prior = 'p'\n");
    let m = lowered("let prior = 'q'\nlet g = { echo $prior }\n", &env);
    assert_eq!(referenced_names(&m), BTreeSet::new());
}

#[test]
fn a_non_adjacent_forward_reference_is_lowered_inside_the_block() {
    // `helper` is two statements after `main`, with a value between that it
    // captures; nothing is read from the session.
    let src = "let run = {\n  let main = { |n| helper $n }\n  let scale = 3\n  let helper = { |n| return $[$n * $scale] }\n  main 2\n}\n";
    let m = lowered(src, &TypeEnv::new());
    assert_eq!(referenced_names(&m), BTreeSet::new());
    let run = func(&m, "run");
    let helper = func(&m, "helper").id;
    let main = func(&m, "main").id;
    // `helper` is made (capturing `scale`) before `main`, which captures it.
    let closures: Vec<_> = exprs(run)
        .into_iter()
        .filter_map(|e| match e {
            Expr::MakeClosure { func, captures } => Some((*func, captures.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(closures.len(), 2, "{closures:?}");
    assert_eq!(closures[0].0, helper);
    assert_eq!(closures[1].0, main);
    assert_eq!(closures[0].1.len(), 1);
    assert_eq!(func(&m, "main").captures.len(), 1);
}

#[test]
fn mutually_recursive_blocks_apart_form_one_group() {
    let src = "let run = { |k|\n  let ping = { |n| if $[$n == 0] { return 'ping' } else { pong $[$n - 1] } }\n  echo between\n  let pong = { |n| if $[$n == 0] { return 'pong' } else { ping $[$n - 1] } }\n  ping $k\n}\n";
    let m = lowered(src, &TypeEnv::new());
    assert_eq!(referenced_names(&m), BTreeSet::new());
    let groups: Vec<_> = exprs(func(&m, "run"))
        .into_iter()
        .filter_map(|e| match e {
            Expr::MakeRecGroup { funcs, .. } => Some(funcs.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        groups,
        [vec![func(&m, "ping").id, func(&m, "pong").id]],
        "one group of both"
    );
    // Each calls the other as a sibling.
    let calls_sibling = |name: &str, i: u32| {
        exprs(func(&m, name))
            .into_iter()
            .any(|e| matches!(e, Expr::Call { func: Operand::Sibling(j), .. } if *j == i))
    };
    assert!(calls_sibling("ping", 1));
    assert!(calls_sibling("pong", 0));
}

#[test]
fn a_block_sees_the_nearest_preceding_definition_first() {
    // §5.7: `f` uses the first `g` (preceding); `h` has no preceding `k`,
    // so it uses the first later one.
    let src = "let run = {\n  let g = { return 'early' }\n  let f = { g }\n  let g = { return 'late' }\n  let h = { k }\n  let k = { return 'k1' }\n  let k = { return 'k2' }\n  return [!{f}, !{h}]\n}\n";
    let m = lowered(src, &TypeEnv::new());
    let run = func(&m, "run");
    let made: Vec<(u32, Vec<Operand>)> = run
        .body
        .stmts
        .iter()
        .filter_map(|s| match &s.expr {
            Expr::MakeClosure { func, captures } => Some((func.0, captures.clone())),
            _ => None,
        })
        .collect();
    let dst_of = |f: u32| {
        run.body
            .stmts
            .iter()
            .find(|s| matches!(&s.expr, Expr::MakeClosure { func, .. } if func.0 == f))
            .and_then(|s| s.dst)
            .map(Operand::Local)
            .expect("made")
    };
    let gs: Vec<u32> = m
        .funcs
        .iter()
        .filter(|f| f.name.as_deref() == Some("g"))
        .map(|f| f.id.0)
        .collect();
    let ks: Vec<u32> = m
        .funcs
        .iter()
        .filter(|f| f.name.as_deref() == Some("k"))
        .map(|f| f.id.0)
        .collect();
    let f_caps = &made
        .iter()
        .find(|(id, _)| *id == func(&m, "f").id.0)
        .expect("f")
        .1;
    let h_caps = &made
        .iter()
        .find(|(id, _)| *id == func(&m, "h").id.0)
        .expect("h")
        .1;
    assert_eq!(f_caps, &vec![dst_of(gs[0])]);
    assert_eq!(h_caps, &vec![dst_of(ks[0])]);
}

#[test]
fn forward_references_the_checker_refuses_never_reach_lowering() {
    // A value is never a forward reference, in a block or at the top.
    let codes = rejected("let run = {\n  let early = $late\n  let late = 1\n  return $early\n}\n");
    assert_eq!(codes, [Code::UnboundName]);
    let codes = rejected("let early = $late\nlet late = 1\n");
    assert_eq!(codes, [Code::UnboundName]);
    // Outside a named block's right-hand side nothing sees a later block:
    // neither a top-level statement nor an inline block in one.
    let codes = rejected("let x = $greet\nlet greet = { echo hi }\n");
    assert_eq!(codes, [Code::UnboundName]);
    let codes =
        rejected("let x = !{\n  let y = $greet\n  let greet = { echo hi }\n  return $y\n}\n");
    assert_eq!(codes, [Code::UnboundName]);
}

#[test]
fn a_block_run_before_it_can_be_made_fails_when_run() {
    // `f` needs `g`, which needs `x`, bound after the statement that runs
    // `f`: that statement gets a closure that fails; the later one the real
    // `f`.
    let src = "let run = {\n  let f = { g }\n  f\n  let x = 5\n  let g = { echo $x }\n  f\n}\n";
    let m = lowered(src, &TypeEnv::new());
    let fs: Vec<&Func> = m
        .funcs
        .iter()
        .filter(|f| f.name.as_deref() == Some("f"))
        .collect();
    assert_eq!(fs.len(), 2);
    let fail = ral_types::builtin_table().id("fail").expect("fail");
    let fails = |f: &Func| {
        exprs(f)
            .into_iter()
            .any(|e| matches!(e, Expr::Call { func: Operand::Builtin(b), .. } if *b == fail))
    };
    assert!(fails(fs[0]));
    assert!(!fails(fs[1]));
    let message = exprs(fs[0])
        .into_iter()
        .find_map(|e| match e {
            Expr::MakeRecord { fields, .. } => fields.iter().find_map(|(k, v)| match v {
                Operand::Const(ral_ir::Const::Str(s)) if &**k == "message" => Some(s.to_string()),
                _ => None,
            }),
            _ => None,
        })
        .expect("a message");
    assert!(message.contains("`f`"), "{message}");
    assert!(message.contains("§5.7"), "{message}");
}

#[test]
fn many_named_blocks_in_one_list_lower_quickly() {
    // A chain of forward references 3,000 blocks long, and a ring.
    let n = 3000;
    let mut src = String::from("let run = {\n");
    for i in 0..n {
        src.push_str(&format!("  let b{i} = {{ |x| b{} $x }}\n", (i + 1) % n));
    }
    src.push_str("  return $b0\n}\n");
    let start = std::time::Instant::now();
    let m = lowered(&src, &TypeEnv::new());
    let groups = exprs(func(&m, "run"))
        .into_iter()
        .filter(|e| matches!(e, Expr::MakeRecGroup { funcs, .. } if funcs.len() == n))
        .count();
    assert_eq!(groups, 1);
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
}
