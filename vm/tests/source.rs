//! End to end from source: parse, check, lower (`ral_ir::lower`), compile
//! and run. The hand-built IR tests in `vm.rs` pin the VM's own behaviour;
//! these check that it runs what the lowering actually produces.

#![allow(clippy::unwrap_used)]

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Escape, Mobile, RunError, Value, Vm};

fn run(src: &str) -> (Vm, Result<Value, RunError>) {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    assert!(!parsed.has_errors(), "parse errors in {src:?}");
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    assert!(!checked.has_errors(), "type errors in {src:?}");
    let module = ral_ir::lower(&parsed.program, &checked, source);
    let mut vm = Vm::new(Mobile::default());
    let r = vm.run_module(&module);
    (vm, r)
}

fn value(src: &str) -> Value {
    match run(src).1 {
        Ok(v) => v,
        Err(e) => panic!("{src:?} failed: {e:?}"),
    }
}

#[test]
fn recursion_through_a_session_name() {
    let src = "let fib = {|n| if $[$n < 2] { return $n } else { return $[!{fib $[$n - 1]} + !{fib $[$n - 2]}] }}\nfib 20";
    assert_eq!(value(src), Value::Int(6765));
}

#[test]
fn tail_recursion_and_local_mutual_recursion() {
    let src = "let sum = { |n acc| if $[$n == 0] { $acc } else { sum $[$n - 1] $[$acc + $n] } }\nsum 1000000 0";
    assert_eq!(value(src), Value::Int(500_000_500_000));
    let src = "let f = {\n  let even = { |n| if $[$n == 0] { true } else { odd $[$n - 1] } }\n  let odd = { |n| if $[$n == 0] { false } else { even $[$n - 1] } }\n  even 100001\n}\n!$f";
    assert_eq!(value(src), Value::Bool(false));
}

#[test]
fn closures_partial_application_and_callbacks() {
    assert_eq!(
        value("let x = 1\nlet f = { $x }\nlet x = 2\n!$f"),
        Value::Int(1)
    );
    assert_eq!(
        value("let mk = { |x| { |y| $[$x + $y] } }\nlet a = mk 10\na 5"),
        Value::Int(15)
    );
    assert_eq!(
        value("let add = { |a b| $[$a + $b] }\nlet inc = add 1\ninc 41"),
        Value::Int(42)
    );
    assert_eq!(
        value("fold { |a x| $[$a + $x] } 0 [1, 2, 3]"),
        Value::Int(6)
    );
    assert_eq!(
        value("map { |x| $[$x * 2] } [1, 2, 3]"),
        Value::list(vec![Value::Int(2), Value::Int(4), Value::Int(6)])
    );
}

#[test]
fn data_control_and_failure() {
    assert_eq!(value("let r = [a: 1, b: [2, 3]]\n$r[b][1]"), Value::Int(3));
    assert_eq!(value("let [a, b] = [1, 2]\n$[$a + $b]"), Value::Int(3));
    assert_eq!(value("let s = \"x=$[1 + 2]\"\n$s"), Value::str("x=3"));
    assert_eq!(
        value("let v = `some 5\ncase $v [`some: { |x| $x }, `none: { |_| 0 }]"),
        Value::Int(5)
    );
    assert_eq!(value("$[1 / 0] ? 7"), Value::Int(7));
    assert_eq!(
        value("try { fail [status: 3, message: 'boom'] } { |e| $e[status] }"),
        Value::Int(3)
    );
}

#[test]
fn a_failed_turn_keeps_earlier_definitions() {
    let (vm, r) = run("let x = 3\nlet y = $[$x / 0]\nlet z = 4");
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if f.message == "division by zero"),
        "{r:?}"
    );
    assert_eq!(vm.mobile.scope.get_named("x"), Some(&Value::Int(3)));
    assert_eq!(vm.mobile.scope.get_named("z"), None);
}

#[test]
fn a_missing_command_fails_with_127_and_keeps_what_landed() {
    let (vm, r) = run("let x = 1\nno-such-command-ral-test -l\nlet y = 2");
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if f.status == 127
            && f.message.contains("command not found")),
        "{r:?}"
    );
    assert_eq!(vm.mobile.scope.get_named("x"), Some(&Value::Int(1)));
    assert_eq!(vm.mobile.scope.get_named("y"), None);
}

#[test]
fn echo_writes_and_captures() {
    let (mut vm, r) = run("echo a [1, 2] ...[x, 'y z'] 1.50\nlet s = echo hi\n$s");
    assert_eq!(r, Ok(Value::str("hi")));
    assert_eq!(vm.take_output(), b"a [1, 2] x y z 1.5\n");
}

#[test]
fn an_uncaught_failure_carries_its_span_and_call_trace() {
    let src =
        "let g = { |x| $[$x / 0] }\nlet f = { |x| let y = g $x\n $[$y + 1] }\nlet z = f 1\n$z";
    let r = run(src).1;
    let Err(RunError::Escape(Escape::Fail(f))) = r else {
        panic!("{r:?}");
    };
    let text = |s: ral_syntax::Span| &src[s.start as usize..s.end as usize];
    let span = f.span.expect("a span");
    assert_eq!(text(span), "$x / 0", "{f:?}");
    assert_eq!(f.trace.len(), 2, "{f:?}");
    assert_eq!(f.trace[0].0.as_deref(), Some("g"), "{f:?}");
    assert_eq!(text(f.trace[0].1), "g $x", "{f:?}");
    assert_eq!(f.trace[1].0.as_deref(), Some("f"), "{f:?}");
    assert_eq!(text(f.trace[1].1), "f 1", "{f:?}");
}

#[test]
fn a_caught_failure_is_not_located() {
    assert_eq!(
        value("try { fail [status: 3, message: 'boom'] } { |e| $e[status] }"),
        Value::Int(3)
    );
}

#[test]
fn a_long_session_does_not_keep_each_turns_top_level_code() {
    let mut vm = Vm::new(Mobile::default());
    let mut env = TypeEnv::new();
    let mut counts = Vec::new();
    for i in 0..300 {
        let src = if i % 3 == 0 {
            format!("let f{i} = {{ |x| $[$x + {i}] }}")
        } else {
            format!("let x = {i}")
        };
        let source = SourceId(0);
        let parsed = ral_syntax::parse(&src, source);
        let opts = CheckOptions { is_script: false };
        let checked = check_program(&parsed.program, source, &env, &opts);
        assert!(!checked.has_errors(), "{src}");
        env = env.extend_with(&checked);
        let module = ral_ir::lower(&parsed.program, &checked, source);
        vm.run_module(&module).unwrap();
        counts.push(vm.proto_count());
    }
    // A turn that defines a function keeps that function's code (and a
    // retired hole for its main below it); a turn that defines none adds
    // nothing.
    assert!(
        counts[299] <= 2 * 100 + 1,
        "proto table grew to {}",
        counts[299]
    );
    assert_eq!(counts[1], counts[2]);
    let f = vm.mobile.scope.get_named("f297").cloned().unwrap();
    assert_eq!(
        vm.call_value(f, vec![Value::Int(3)]).unwrap(),
        Value::Int(300)
    );
}
