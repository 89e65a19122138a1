//! The panic checkpoint (seeds 000 and 004): `run_turn` restores the
//! session it had at entry only when evaluation panics, and reports
//! `run panicked: …`. Needs the `fault-injection` feature:
//!
//! `cargo test -p ral-host --features fault-injection --test panic`
#![cfg(feature = "fault-injection")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

use ral_host::*;

fn capture() -> TurnRequest<'static> {
    TurnRequest {
        io: TurnIo::Capture,
        ..TurnRequest::new("<test>")
    }
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

#[test]
fn panicking_run_reports_failed_and_rolls_back() {
    let mut shell = Shell::default();
    assert_eq!(shell.run_turn("let kept = 1", capture()).status(), 0);
    let cwd_before = shell.mobile().context.cwd.clone();

    let r = shell.run_turn(
        "let lost = 2\ncd /tmp\necho partial\n__panic\nlet after = 3",
        capture(),
    );
    let TurnReport::Ran {
        result: Settled::Failed(f),
        status,
        timed_out,
        captured,
        ..
    } = &r
    else {
        panic!("expected a failed run, got {r:?}");
    };
    assert!(f.message.starts_with("run panicked: "), "{}", f.message);
    assert!(f.message.contains("fault injected"), "{}", f.message);
    assert_eq!(*status, STATUS_PANICKED);
    assert!(!timed_out);
    // The bytes written before the panic are still reported.
    assert_eq!(
        captured.as_ref().map(|c| c.stdout.as_slice()),
        Some(&b"partial\n"[..])
    );

    // Rolled back to the turn's entry: its binding and its `cd` are gone,
    // the earlier turn's binding stays.
    assert!(shell.get("lost").is_none());
    assert!(shell.get("after").is_none());
    assert_eq!(shell.get("kept"), Some(&Value::Int(1)));
    assert_eq!(shell.mobile().context.cwd, cwd_before);

    // The shell is healthy: the checker agrees with the scope, and new
    // definitions work (including the rolled-back name).
    let r = shell.run_turn("return $lost", capture());
    assert!(matches!(r, TurnReport::Static { .. }), "{r:?}");
    let r = shell.run_turn("let lost = 20\nlet z = 5", capture());
    assert_eq!(r.status(), 0, "{r:?}");
    let r = shell.run_turn("return $[$kept + $lost + $z]", capture());
    assert_eq!(value(&r), Value::Int(26));
}

#[test]
fn a_panic_inside_a_function_unwinds_its_frames() {
    let mut shell = Shell::default();
    shell.run_turn(
        "let deep = { |n| if $[$n == 0] { __panic } else { deep $[$n - 1] } }",
        capture(),
    );
    let r = shell.run_turn("deep 50", capture());
    assert_eq!(r.status(), STATUS_PANICKED);
    // The abandoned frames are gone: a fresh call runs from a clean stack.
    let r = shell.run_turn(
        "let sum = { |n| if $[$n == 0] { return 0 } else { return $[$n + !{sum $[$n - 1]}] } }\nsum 10",
        capture(),
    );
    assert_eq!(value(&r), Value::Int(55));
}

#[test]
fn an_install_rolled_back_by_a_panic_is_an_orphan_lease() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(0));
    let r = shell.run_turn("let ghost = 1\n__panic", capture());
    assert_eq!(r.status(), STATUS_PANICKED);
    assert!(shell.get("ghost").is_none());
    assert!(shell.binding_ledger().last_interest("ghost").is_some());
    shell.run_turn("let other = 2", capture());
    shell.run_turn("return 0", capture());
    // `ghost` is dropped silently (no notice); `other` is pruned.
    let (notices, snap) = shell.prune_idle_bindings().expect("other is idle");
    let names: Vec<&str> = notices.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, vec!["other"]);
    assert!(snap.get("other").is_none());
    assert_eq!(shell.binding_ledger().last_interest("ghost"), None);
}
