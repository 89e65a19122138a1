//! The process runtime end to end: cancellation reaching a blocking
//! external, memory staying flat while bytes stream between programs, the
//! capture limit, and pipelines that would deadlock if stages ran one
//! after the other.
//!
//! Timing here only bounds hangs (a cancelled `sleep 30` must come back in
//! seconds, not 30); no test asserts speed.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Cause, Escape, Mobile, Reason, RunError, Stdin, Stdout, Value, Vm};

fn compile(src: &str) -> ral_ir::Module {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    assert!(!parsed.has_errors(), "parse errors in {src:?}");
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    assert!(!checked.has_errors(), "type errors in {src:?}");
    ral_ir::lower(&parsed.program, &checked, source)
}

fn machine() -> Vm {
    let mut vm = Vm::new(Mobile::default());
    vm.stdin = Stdin::Null;
    vm.stderr = Stdout::Buffer(Vec::new());
    vm
}

fn run(src: &str) -> (Vm, Result<Value, RunError>) {
    let module = compile(src);
    let mut vm = machine();
    let r = vm.run_module(&module);
    (vm, r)
}

#[test]
fn cancel_reaches_a_blocking_external_and_keeps_what_landed() {
    let module = compile("let before = 1\nsleep 30\nlet after = 2");
    let mut vm = machine();
    let flag = vm.mobile.context.cancel.clone();
    vm.cancel_cause
        .store(Cause::TimedOut as u8, Ordering::Relaxed);
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let start = Instant::now();
    let r = vm.run_module(&module);
    setter.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "cancel took {:?}",
        start.elapsed()
    );
    match r {
        Err(RunError::Escape(Escape::Fail(f))) => {
            assert_eq!(f.reason, Reason::Cancelled(Cause::TimedOut));
            assert_eq!(f.status, 124);
        }
        other => panic!("expected a cancellation, got {other:?}"),
    }
    assert_eq!(vm.mobile.scope.get_named("before"), Some(&Value::Int(1)));
    assert_eq!(vm.mobile.scope.get_named("after"), None);
}

#[test]
fn cancel_reaches_every_stage_of_a_pipeline() {
    let module = compile("sleep 30 | sleep 30 | cat");
    let mut vm = machine();
    let flag = vm.mobile.context.cancel.clone();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let start = Instant::now();
    let r = vm.run_module(&module);
    setter.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if matches!(f.reason, Reason::Cancelled(_))),
        "{r:?}"
    );
}

#[test]
fn a_ral_stage_streams_without_deadlock() {
    // 2 MB from a ral stage is far past a pipe's buffer: the stages must
    // run at the same time.
    let src = "let line = !{ intercalate '' !{map { |_| 'x' } !{range 0 1000}} }\n\
               let n = !{ each { |_| echo $line } !{range 0 2000} } | wc -c | tr -d ' '\n$n";
    let (_, r) = run(src);
    assert_eq!(r.unwrap(), Value::str("2002000"));
}

#[test]
fn capture_fails_past_its_limit_and_flushes_what_it_held() {
    // §7.2: a capture that reaches the cap fails rather than bind a
    // prefix, and the bytes it buffered are flushed to the sink it
    // replaced (here the session's standard output) before the failure
    // goes on.
    let module = compile("let x = head -c 20000000 /dev/zero\nlength $x");
    let mut vm = machine();
    vm.stdout = Stdout::Buffer(Vec::new());
    let r = vm.run_module(&module);
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if f.message.contains("16 MiB")),
        "{r:?}"
    );
    let flushed = match std::mem::replace(&mut vm.stdout, Stdout::Inherit) {
        Stdout::Buffer(b) => b,
        other => panic!("{other:?}"),
    };
    let cap = 16 << 20;
    // Everything up to the chunk that would have crossed the cap.
    assert!(
        flushed.len() <= cap && flushed.len() > cap - (1 << 20),
        "flushed {} bytes",
        flushed.len()
    );
    assert!(flushed.iter().all(|&b| b == 0));
}

#[test]
fn standard_error_of_programs_reaches_the_error_sink() {
    let (mut vm, r) = run("sh -c 'echo to-err >&2'");
    r.unwrap();
    match std::mem::replace(&mut vm.stderr, Stdout::Inherit) {
        Stdout::Buffer(b) => assert_eq!(b, b"to-err\n"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_redirect_of_a_failing_block_leaves_no_temporary_file() {
    let dir = std::env::temp_dir().join(format!("ral-redir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("f.txt");
    std::fs::write(&target, "old\n").unwrap();
    let src = format!(
        "let s = try {{ sh -c 'echo new; exit 3' > '{}'; 0 }} {{ |e| $e[status] }}\n$s",
        target.display()
    );
    let (_, r) = run(&src);
    assert_eq!(r.unwrap(), Value::Int(3));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "temporary file left behind");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn try_and_fallback_do_not_recover_a_cancellation_but_guard_cleans_up() {
    let module = compile(
        "let before = 1\nguard { try { sleep 30 } { |e| echo caught } ? echo fallback } { echo cleanup }\nlet after = 2",
    );
    let mut vm = machine();
    let out = ral_vm::SharedBuf::default();
    vm.stdout = Stdout::Writer(Box::new(out.clone()));
    let flag = vm.mobile.context.cancel.clone();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, Ordering::Relaxed);
    });
    let r = vm.run_module(&module);
    setter.join().unwrap();
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if matches!(f.reason, Reason::Cancelled(_))),
        "{r:?}"
    );
    assert_eq!(String::from_utf8(out.take()).unwrap(), "cleanup\n");
    assert_eq!(vm.mobile.scope.get_named("before"), Some(&Value::Int(1)));
    assert_eq!(vm.mobile.scope.get_named("after"), None);
}

/// Raises a cancellation with `cause` on `vm`'s flag after `after`, as a
/// host's signal handler does.
fn cancel_later(vm: &Vm, after: Duration, cause: Cause) -> std::thread::JoinHandle<()> {
    let flag = vm.mobile.context.cancel.clone();
    let cell = vm.cancel_cause.clone();
    let count = vm.cancel_count.clone();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        ral_vm::raise_cancel(&flag, &cell, &count, cause);
    })
}

/// §8.7: a cleanup runs after a cancelled body with that cancellation held
/// off: its programs, builtins and loops run (they used to be refused as
/// "terminated" at once), and the run still ends cancelled afterwards.
#[test]
fn a_cleanup_runs_its_programs_with_the_cancellation_held_off() {
    let module = compile(
        "guard { sleep 30 } {\n  sh -c 'echo from-a-program'\n  echo !{length [1, 2]}\n  for [3, 4] { |i| echo $i }\n}\necho never",
    );
    let mut vm = machine();
    let out = ral_vm::SharedBuf::default();
    vm.stdout = Stdout::Writer(Box::new(out.clone()));
    let setter = cancel_later(&vm, Duration::from_millis(300), Cause::Terminated);
    let r = vm.run_module(&module);
    setter.join().unwrap();
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if f.reason == Reason::Cancelled(Cause::Terminated)),
        "{r:?}"
    );
    assert_eq!(
        String::from_utf8(out.take()).unwrap(),
        "from-a-program\n2\n3\n4\n"
    );
}

/// A further cancellation ends a cleanup that holds off an earlier one, also
/// one waiting on a program, and the graver cause stays in force.
#[test]
fn a_further_cancellation_ends_a_cleanup() {
    let module =
        compile("guard { sleep 30 } { echo cleaning; sleep 30; echo never }\necho never either");
    let mut vm = machine();
    let out = ral_vm::SharedBuf::default();
    vm.stdout = Stdout::Writer(Box::new(out.clone()));
    let first = cancel_later(&vm, Duration::from_millis(200), Cause::Terminated);
    let second = cancel_later(&vm, Duration::from_millis(600), Cause::Interrupted);
    let start = Instant::now();
    let r = vm.run_module(&module);
    first.join().unwrap();
    second.join().unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        matches!(&r, Err(RunError::Escape(Escape::Fail(f))) if f.reason == Reason::Cancelled(Cause::Terminated)),
        "{r:?}"
    );
    assert_eq!(String::from_utf8(out.take()).unwrap(), "cleaning\n");
}
