//! `Shell::run_turn`: the door's classification, the laws of a failed run
//! (spec §5.6: what landed stays), the turn wall, and the IO regimes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ral_host::*;

fn capture() -> TurnRequest<'static> {
    TurnRequest {
        io: TurnIo::Capture,
        ..TurnRequest::new("<test>")
    }
}

/// Runs `src` with captured output and returns the report.
fn turn(shell: &mut Shell, src: &str) -> TurnReport {
    shell.run_turn(src, capture())
}

fn value(report: &TurnReport) -> Value {
    match report {
        TurnReport::Ran {
            result: Settled::Ok(v),
            ..
        } => v.clone(),
        other => panic!("expected a value, got {other:?}"),
    }
}

fn failure(report: &TurnReport) -> Failure {
    match report {
        TurnReport::Ran {
            result: Settled::Failed(f),
            ..
        } => f.clone(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn stdout(report: &TurnReport) -> String {
    match report {
        TurnReport::Ran {
            captured: Some(c), ..
        } => String::from_utf8_lossy(&c.stdout).into_owned(),
        other => panic!("expected captured output, got {other:?}"),
    }
}

fn is_static(report: &TurnReport, status: i32) -> bool {
    matches!(report, TurnReport::Static { diagnostics } if diagnostics.status == status && diagnostics.has_errors())
}

#[test]
fn bindings_and_their_types_persist_across_turns() {
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let x = 20").status(), 0);
    assert_eq!(shell.binding_type("x").as_deref(), Some("Integer"));
    let r = turn(&mut shell, "let f = { |n| return $[$n + $x] }");
    assert_eq!(r.status(), 0);
    assert_eq!(value(&turn(&mut shell, "f 22")), Value::Int(42));
    // The checker sees the session: a misuse is a type error and runs nothing.
    let r = turn(&mut shell, "let y = 1\nf 'text'");
    assert!(is_static(&r, STATUS_TYPE), "{r:?}");
    assert!(shell.get("y").is_none());
}

#[test]
fn session_bindings_are_never_updated_in_place() {
    // Updates in place (value.rs) happen only where the VM holds the only
    // reference; a session binding is held by the scope, so every update
    // of one, in a later turn, in a fold seeded with it, or in a function
    // it is passed to, copies.
    let mut shell = Shell::default();
    let first = turn(
        &mut shell,
        "let m = fold { |acc i| let k = \"k$i\"; [:, ...$acc, $k: $i] } [:] !{range 0 40}\n\
         let r = [a: 1, b: [1, 2]]\n\
         let xs = [1, 2]\n\
         return $m",
    );
    let held = value(&first);
    let grow = turn(
        &mut shell,
        "let m2 = [:, ...$m, new: 1]\n\
         let m3 = fold { |acc i| let k = \"x$i\"; [:, ...$acc, $k: $i] } $m !{range 0 5}\n\
         let add = { |acc| [:, ...$acc, other: 2] }\n\
         let m4 = add $m\n\
         let r2 = [...$r, a: 2]\n\
         let xs2 = [...$xs, 3]\n\
         echo !{length $m2} !{length $m3} !{length $m4} $r2[a] !{length $xs2}",
    );
    assert_eq!(stdout(&grow), "41 45 41 2 3\n");
    let after = turn(
        &mut shell,
        "echo !{length $m} !{has $m new} !{has $m x0} !{has $m other} $r[a] !{length $xs}",
    );
    assert_eq!(stdout(&after), "40 false false false 1 2\n");
    // The value the host was handed is unchanged too.
    let Value::Record(m) = held else {
        panic!("expected a map, got {held:?}")
    };
    assert_eq!(m.len(), 40);
    assert!(!m.has("new") && !m.has("x0") && !m.has("other"));
}

#[test]
fn static_turns_classify_and_render() {
    let mut shell = Shell::default();
    let r = turn(&mut shell, "let x = [1, 2");
    assert!(is_static(&r, STATUS_PARSE), "{r:?}");
    assert_eq!(r.status(), 2);
    let r = turn(&mut shell, "echo $nowhere");
    assert!(is_static(&r, STATUS_TYPE), "{r:?}");
    let TurnReport::Static { diagnostics } = &r else {
        unreachable!()
    };
    let text = diagnostics.render(Color::Never);
    assert!(text.contains("nowhere"), "{text}");
    assert!(text.contains("<test>"), "{text}");
}

#[test]
fn top_level_persists_let_on_error() {
    let mut shell = Shell::default();
    let r = turn(
        &mut shell,
        "let before = 1\nfail [status: 3, message: 'boom']\nlet after = 2",
    );
    let f = failure(&r);
    assert_eq!(r.status(), 3);
    assert_eq!(f.message, "boom");
    assert_eq!(shell.get("before"), Some(&Value::Int(1)));
    assert!(shell.get("after").is_none());
    // The landed binding kept its scheme: the next turn type-checks against
    // it; the one that never landed is unknown to the checker too.
    assert_eq!(value(&turn(&mut shell, "return $before")), Value::Int(1));
    assert!(is_static(&turn(&mut shell, "return $after"), STATUS_TYPE));
    // No text of the report claims a rollback.
    let text = render_failure(&f, &shell, Color::Never);
    assert!(!text.to_lowercase().contains("roll"), "{text}");
}

#[test]
fn exit_keeps_the_bindings_that_landed() {
    let mut shell = Shell::default();
    let r = turn(&mut shell, "let a = 'kept'\nexit 7\nlet b = 1");
    assert!(
        matches!(
            r,
            TurnReport::Ran {
                result: Settled::Exit(7),
                status: 7,
                timed_out: false,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(shell.get("a"), Some(&Value::str("kept")));
    assert!(shell.get("b").is_none());
    assert_eq!(value(&turn(&mut shell, "return $a")), Value::str("kept"));
}

#[test]
fn a_destructuring_let_lands_all_its_names() {
    let mut shell = Shell::default();
    let r = turn(
        &mut shell,
        "let [p, q] = [1, 2]\nlet r = 3\nfail [status: 1, message: 'x']",
    );
    assert_eq!(r.status(), 1);
    assert_eq!(
        value(&turn(&mut shell, "return $[$p + $q + $r]")),
        Value::Int(6)
    );
}

#[test]
fn a_final_false_reports_status_one() {
    let mut shell = Shell::default();
    let r = turn(&mut shell, "return false");
    assert!(
        matches!(
            r,
            TurnReport::Ran {
                result: Settled::Ok(Value::Bool(false)),
                status: 1,
                ..
            }
        ),
        "{r:?}"
    );
}

#[test]
fn mid_script_wall_keeps_the_bindings_that_landed() {
    let mut shell = Shell::default();
    let req = TurnRequest {
        turn_limit: Some(Duration::from_millis(150)),
        ..capture()
    };
    let started = Instant::now();
    let r = shell.run_turn(
        "let before = 1\nlet spin = { |n| spin $[$n + 1] }\nspin 0\nlet after = 2",
        req,
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    let TurnReport::Ran {
        result: Settled::Failed(f),
        status,
        timed_out,
        ..
    } = &r
    else {
        panic!("expected a failed run, got {r:?}");
    };
    assert!(*timed_out);
    assert_eq!(*status, STATUS_TIMED_OUT);
    assert_eq!(f.reason, Reason::Cancelled(Cause::TimedOut));
    assert!(f.span.is_some(), "the wall keeps the site it stopped at");
    assert_eq!(shell.get("before"), Some(&Value::Int(1)));
    assert!(shell.get("spin").is_some());
    assert!(shell.get("after").is_none());
    // The next turn starts with the flag cleared and sees what landed.
    let r = turn(&mut shell, "return $[$before + 1]");
    assert_eq!(value(&r), Value::Int(2));
}

#[test]
fn a_turn_that_beats_its_wall_is_not_timed_out() {
    let mut shell = Shell::default();
    let req = TurnRequest {
        turn_limit: Some(Duration::from_secs(30)),
        ..capture()
    };
    let started = Instant::now();
    let r = shell.run_turn("let x = 1", req);
    assert!(matches!(
        r,
        TurnReport::Ran {
            status: 0,
            timed_out: false,
            ..
        }
    ));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "disarming wakes the wall at once"
    );
}

#[test]
fn a_cancel_handle_interrupts_the_running_turn_only() {
    let mut shell = Shell::default();
    let handle = shell.cancel_handle();
    // A cancel between turns is void: the next turn clears it at entry.
    handle.cancel();
    assert_eq!(turn(&mut shell, "let x = 1").status(), 0);
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        handle.cancel();
    });
    let r = turn(&mut shell, "let spin = { |n| spin $[$n + 1] }\nspin 0");
    canceller.join().unwrap();
    let f = failure(&r);
    assert_eq!(f.reason, Reason::Cancelled(Cause::Interrupted));
    assert_eq!(r.status(), 130);
    assert!(matches!(
        r,
        TurnReport::Ran {
            timed_out: false,
            ..
        }
    ));
}

/// A writer into a shared buffer, to stand in for the REPL's printer.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Counts lifecycle calls.
struct Hooks(Arc<Mutex<Vec<&'static str>>>);

impl TurnLifecycle for Hooks {
    fn before_run(&mut self) {
        self.0.lock().unwrap().push("before");
    }
    fn after_run(&mut self, _report: &TurnReport) {
        self.0.lock().unwrap().push("after");
    }
}

#[test]
fn inherit_and_capture_write_the_same_bytes() {
    let mut shell = Shell::default();
    let out = Shared::default();
    let err = Shared::default();
    shell.set_stdout(Stdout::Writer(Box::new(out.clone())));
    shell.set_stderr(Stdout::Writer(Box::new(err.clone())));
    let src = "let n = 3\necho one $n\nwarn careful\nsh -c 'echo out; echo err >&2'\n\
               echo [1, 2]\nfail [status: 4, message: 'late']";
    let calls = Arc::new(Mutex::new(Vec::new()));

    let inherit = shell.run_turn(
        src,
        TurnRequest {
            lifecycle: Box::new(Hooks(calls.clone())),
            ..TurnRequest::new("<test>")
        },
    );
    let (inherit_out, inherit_err) = (out.take(), err.take());
    let capture = shell.run_turn(
        src,
        TurnRequest {
            io: TurnIo::Capture,
            lifecycle: Box::new(Hooks(calls.clone())),
            ..TurnRequest::new("<test>")
        },
    );
    assert!(!inherit_out.is_empty());
    assert!(!inherit_err.is_empty());
    let TurnReport::Ran {
        captured: Some(c),
        status,
        ..
    } = &capture
    else {
        panic!("expected captured bytes, got {capture:?}");
    };
    assert_eq!(c.stdout, inherit_out);
    assert_eq!(c.stderr, inherit_err);
    assert_eq!(*status, inherit.status());
    assert!(matches!(inherit, TurnReport::Ran { captured: None, .. }));
    assert_eq!(failure(&inherit), failure(&capture));
    assert_eq!(
        *calls.lock().unwrap(),
        vec!["before", "after", "before", "after"]
    );
    // Nothing leaked to the ambient streams during the capture, and they
    // are back in place afterwards.
    assert!(out.take().is_empty() && err.take().is_empty());
    shell.run_turn("echo again", TurnRequest::new("<test>"));
    assert_eq!(out.take(), b"again\n");
}

#[test]
fn a_surface_sink_receives_this_turns_events() {
    let mut shell = Shell::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let surface: SurfaceSink = Arc::new(move |v: &Value| sink.lock().unwrap().push(v.clone()));
    let r = shell.run_turn(
        "surface [kind: 'note', n: 1]",
        TurnRequest {
            surface: Some(surface),
            ..capture()
        },
    );
    assert_eq!(r.status(), 0, "{r:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    // The sink is turn-local: the next turn, without one, emits nowhere.
    let r = turn(&mut shell, "surface [kind: 'note', n: 2]");
    assert_eq!(r.status(), 0);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn script_names_bind_script_only_for_files() {
    let mut shell = Shell::default();
    let r = shell.run_turn(
        "return $SCRIPT",
        TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new("/tmp/job.ral")
        },
    );
    assert_eq!(value(&r), Value::str("/tmp/job.ral"));
    assert!(is_static(&turn(&mut shell, "return $SCRIPT"), STATUS_TYPE));
}

#[test]
fn warnings_reach_the_lifecycle_and_the_turn_runs() {
    struct Warned(Arc<Mutex<usize>>);
    impl TurnLifecycle for Warned {
        fn diagnostics(&mut self, w: &StaticDiagnostics) {
            assert!(!w.has_errors());
            *self.0.lock().unwrap() += w.diagnostics.len();
        }
    }
    let mut shell = Shell::default();
    let count = Arc::new(Mutex::new(0));
    // Hiding a builtin is a warning (`prelude-shadow`), never an error.
    let r = shell.run_turn(
        "let length = 3",
        TurnRequest {
            lifecycle: Box::new(Warned(count.clone())),
            ..capture()
        },
    );
    assert_eq!(r.status(), 0, "{r:?}");
    assert_eq!(*count.lock().unwrap(), 1);
    assert_eq!(shell.get("length"), Some(&Value::Int(3)));
}

#[test]
fn runtime_failures_render_against_the_turns_source() {
    let mut shell = Shell::default();
    let r = turn(&mut shell, "let a = 1\nfail [status: 2, message: 'here']");
    let text = render_failure(&failure(&r), &shell, Color::Never);
    assert!(text.contains("runtime-failure"), "{text}");
    assert!(text.contains("<test>:2"), "{text}");
}

#[test]
fn a_snapshot_restores_scope_and_types_together() {
    let mut shell = Shell::default();
    turn(&mut shell, "let a = 1");
    let snap = shell.snapshot();
    turn(&mut shell, "let b = 2\nlet a = 10");
    shell.restore(&snap);
    assert_eq!(value(&turn(&mut shell, "return $a")), Value::Int(1));
    assert!(is_static(&turn(&mut shell, "return $b"), STATUS_TYPE));
    // New definitions after a restore get slots of their own.
    assert_eq!(turn(&mut shell, "let c = 3").status(), 0);
    assert_eq!(value(&turn(&mut shell, "return $[$a + $c]")), Value::Int(4));
}

#[test]
fn host_bindings_are_typed() {
    let mut donor = Shell::default();
    turn(&mut donor, "let s = 'text'");
    let entry = donor.type_env().get("s").cloned().unwrap();
    let mut shell = Shell::default();
    shell.install_scope_binding("greeting", Value::str("hi"), entry);
    let r = turn(&mut shell, "echo $greeting");
    assert_eq!(stdout(&r), "hi\n");
    assert!(is_static(
        &turn(&mut shell, "return $[$greeting + 1]"),
        STATUS_TYPE
    ));
}

#[test]
fn capabilities_restrict_one_turn_only() {
    let mut shell = Shell::default();
    let no_cd = Capabilities::root().with_layer(Layer {
        chdir: Some(false),
        ..Layer::default()
    });
    assert!(!no_cd.is_root());
    let r = shell.run_turn(
        "cd /",
        TurnRequest {
            caps: no_cd,
            ..capture()
        },
    );
    let f = failure(&r);
    assert!(f.message.contains("denied by grant"), "{}", f.message);
    // The layer left with its turn.
    let r = turn(&mut shell, "cd /");
    assert_eq!(r.status(), 0, "{r:?}");
    // A grant written in ral decodes to the same restriction.
    let record = value(&turn(&mut shell, "return [shell: [chdir: false]]"));
    let caps = Capabilities::root()
        .with_grant(&record, std::path::Path::new("/"))
        .unwrap();
    let r = shell.run_turn("cd /tmp", TurnRequest { caps, ..capture() });
    assert!(failure(&r).message.contains("denied by grant"));
}

#[test]
fn single_command_means_one_external_program() {
    let mut shell = Shell::default();
    let single = |r: &TurnReport| {
        matches!(
            r,
            TurnReport::Ran {
                single_command: true,
                ..
            }
        )
    };
    let r = turn(&mut shell, "sh -c 'exit 3'");
    assert!(single(&r), "{r:?}");
    assert_eq!(r.status(), 3);
    assert!(!single(&turn(&mut shell, "let x = 1")));
    assert!(!single(&turn(&mut shell, "echo hi")));
    assert!(!single(&turn(&mut shell, "sh -c 'exit 0'\nsh -c 'exit 0'")));
}

#[test]
fn the_wall_stops_a_blocking_external_command() {
    let mut shell = Shell::default();
    let started = Instant::now();
    let r = shell.run_turn(
        "let before = 1\nsleep 20\nlet after = 2",
        TurnRequest {
            turn_limit: Some(Duration::from_millis(200)),
            ..capture()
        },
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wall reached `sleep`"
    );
    assert!(
        matches!(
            r,
            TurnReport::Ran {
                timed_out: true,
                status: 124,
                ..
            }
        ),
        "{r:?}"
    );
    assert_eq!(shell.get("before"), Some(&Value::Int(1)));
    assert!(shell.get("after").is_none());
}

#[test]
fn a_failure_inside_an_earlier_turns_function_is_placed_at_this_turns_call() {
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let f = { |x| $[$x / 0] }").status(), 0);
    let r = turn(
        &mut shell,
        "let padding = 'some text to shift offsets'\nlet y = f 3",
    );
    let f = failure(&r);
    let shown = render_failure(&f, &shell, Color::Never);
    assert!(shown.contains("division by zero"), "{shown}");
    // The underline is on this turn's call, line 2, not on an offset of
    // the earlier turn's text.
    assert!(shown.contains(":2:9"), "{shown}");
    assert!(shown.contains("let y = f 3"), "{shown}");
}

#[test]
fn a_failure_in_the_last_statements_call_keeps_this_turns_site() {
    // The last statement's call is not a tail call at top level, so the
    // turn's frame is still there to place the failure.
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let g = { |x| $[$x / 0] }").status(), 0);
    let f = failure(&turn(&mut shell, "let yy = 1; g 2"));
    let shown = render_failure(&f, &shell, Color::Never);
    assert!(shown.contains(":1:13"), "{shown}");
}

/// Issue 11 item 13 (§17.8, §10.3): a module loaded with `use` is checked
/// against the session: the bindings of earlier turns and those of this
/// turn that landed before the `use`.
#[test]
fn a_used_module_sees_the_sessions_earlier_bindings() {
    let dir = std::env::temp_dir().join(format!("ral-turns-use-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let module = dir.join("m.ral");
    std::fs::write(&module, "let total = $[$base + $extra]\n").unwrap();
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let base = 40").status(), 0);
    let src = format!(
        "let extra = 2\nlet m = use '{}'\nreturn $m[total]",
        module.display()
    );
    let r = turn(&mut shell, &src);
    assert_eq!(value(&r), Value::Int(42), "{r:?}");
    // A module reading a name nobody bound does not compile; the turn
    // fails at the `use` with the plain message.
    std::fs::write(&module, "let total = $nowhere\n").unwrap();
    let src = format!("let m = use '{}'", module.display());
    let f = failure(&turn(&mut shell, &src));
    assert_eq!(f.status, 1);
    assert!(f.message.starts_with("use: m.ral:"), "{}", f.message);
    let shown = render_failure(&f, &shell, Color::Never);
    assert!(shown.contains("$nowhere"), "{shown}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 11 item 19 (§8.6): a failure caught by `try` carries its site in
/// the turn's source, also inside a function an earlier turn defined.
#[test]
fn a_caught_failure_has_a_site() {
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let h = { |x| $[$x / 0] }").status(), 0);
    let r = turn(
        &mut shell,
        "let s = try { let v = h 1; return 'ok' } { |e| case $e[site] [`just: { |s| return \"$s[script] $s[line] $s[col]\" }, `none: { return none }] }\nreturn $s",
    );
    assert_eq!(value(&r), Value::str("<test> 1 17"), "{r:?}");
}

/// §11.5: a host form the shell does not install is absent from its base
/// scope: `$watch` is unbound and `watch` as a head is an unknown command.
#[test]
fn an_omitted_host_form_is_an_unknown_name() {
    let mut shell = Shell::default();
    assert_eq!(turn(&mut shell, "let w = $watch").status(), 0);
    shell.disable_watch();
    let r = turn(&mut shell, "let w = $watch");
    assert!(is_static(&r, STATUS_TYPE), "{r:?}");
    let f = failure(&turn(
        &mut shell,
        "within [env: [PATH: '/nonexistent']] { watch x }",
    ));
    assert_eq!(f.status, 127, "{f:?}");
}
