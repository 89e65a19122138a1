//! Binding leases (seed 002): the baseline seal, the clock, renewal by
//! reference, pins, orphans, the adoption sweep, and the snapshot paired
//! with the notices.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

use std::time::Duration;

use ral_host::*;

fn capture() -> TurnRequest<'static> {
    TurnRequest {
        io: TurnIo::Capture,
        ..TurnRequest::new("<test>")
    }
}

fn ok(shell: &mut Shell, src: &str) {
    let r = shell.run_turn(src, capture());
    assert_eq!(r.status(), 0, "{src}: {r:?}");
}

fn pruned(shell: &mut Shell) -> Vec<String> {
    match shell.prune_idle_bindings() {
        Some((notices, _)) => notices.into_iter().map(|n| n.name).collect(),
        None => Vec::new(),
    }
}

fn is_static(report: &TurnReport) -> bool {
    matches!(report, TurnReport::Static { .. })
}

#[test]
fn an_unarmed_shell_never_prunes() {
    let mut shell = Shell::default();
    ok(&mut shell, "let scratch = 1");
    for _ in 0..20 {
        ok(&mut shell, "return 0");
    }
    assert!(shell.prune_idle_bindings().is_none());
    assert_eq!(shell.get("scratch"), Some(&Value::Int(1)));
    assert_eq!(shell.binding_ledger().epoch(), 0);
}

#[test]
fn the_clock_ticks_once_per_turn_whatever_the_turn_does() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(5));
    ok(&mut shell, "let x = 1");
    assert!(is_static(&shell.run_turn("let y = [", capture())));
    assert!(is_static(&shell.run_turn("return $nothing", capture())));
    shell.run_turn("fail [status: 2, message: 'no']", capture());
    assert_eq!(shell.binding_ledger().epoch(), 4);
    assert_eq!(shell.binding_ledger().last_interest("x"), Some(1));
}

#[test]
fn baseline_names_are_never_pruned() {
    let mut shell = Shell::default();
    ok(&mut shell, "let seeded = 1\nlet shadowed = 'old'");
    shell.arm_binding_lease(BindingLease::idle_turns(1));
    assert!(shell.binding_ledger().is_baseline("seeded"));
    // Rebinding a baseline name keeps it baseline: pruning it would
    // un-shadow the older meaning.
    ok(&mut shell, "let shadowed = 'new'\nlet fresh = 2");
    for _ in 0..5 {
        ok(&mut shell, "return 0");
    }
    assert_eq!(pruned(&mut shell), vec!["fresh"]);
    assert_eq!(shell.get("seeded"), Some(&Value::Int(1)));
    assert_eq!(shell.get("shadowed"), Some(&Value::str("new")));
}

#[test]
fn idle_age_counts_turns_without_interest() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(2));
    ok(&mut shell, "let x = 1");
    ok(&mut shell, "return 0");
    ok(&mut shell, "return 0");
    assert!(shell.prune_idle_bindings().is_none(), "idle 2 is within 2");
    ok(&mut shell, "return 0");
    let (notices, _) = shell.prune_idle_bindings().expect("idle 3");
    assert_eq!(
        notices,
        vec![BindingPruneNotice {
            name: "x".to_owned(),
            idle_turns: 3
        }]
    );
    assert!(format!("{notices:?}").contains("\"x\""));
}

#[test]
fn naming_a_binding_renews_it_and_pruning_removes_its_type() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(2));
    ok(&mut shell, "let used = 1\nlet unused = 2");
    for _ in 0..5 {
        ok(&mut shell, "return $used");
    }
    assert_eq!(pruned(&mut shell), vec!["unused"]);
    assert_eq!(shell.get("used"), Some(&Value::Int(1)));
    assert!(shell.get("unused").is_none());
    assert!(shell.binding_type("unused").is_none());
    // The name is simply unbound now: the ordinary diagnostic.
    assert!(is_static(&shell.run_turn("return $unused", capture())));
    // Rebinding starts a new lease.
    ok(&mut shell, "let unused = 3");
    assert!(shell.prune_idle_bindings().is_none());
}

#[test]
fn a_rebind_renews_the_lease() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(1));
    ok(&mut shell, "let x = 1");
    for i in 0..5 {
        ok(&mut shell, &format!("let x = {i}"));
        assert!(shell.prune_idle_bindings().is_none());
    }
}

#[test]
fn a_used_function_keeps_the_helpers_it_calls() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(1));
    ok(&mut shell, "let helper = { |x| return $[$x + 1] }");
    ok(&mut shell, "let main = { |x| helper $x }\nlet other = 0");
    for _ in 0..4 {
        ok(&mut shell, "main 1");
    }
    assert_eq!(pruned(&mut shell), vec!["other"]);
    let r = shell.run_turn("main 41", capture());
    assert!(
        matches!(
            r,
            TurnReport::Ran {
                result: Settled::Ok(Value::Int(42)),
                ..
            }
        ),
        "{r:?}"
    );
}

#[test]
fn a_front_end_failure_renews_nothing() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(1));
    ok(&mut shell, "let x = 1");
    for _ in 0..3 {
        assert!(is_static(
            &shell.run_turn("return $[$x + 'text']", capture())
        ));
    }
    assert_eq!(pruned(&mut shell), vec!["x"]);
}

#[test]
fn a_binding_that_reaches_running_work_is_pinned() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(0));
    ok(
        &mut shell,
        "let spin = { |n| spin $[$n + 1] }\nlet h = spawn { spin 0 }\nlet box = [job: $h]\nlet plain = 1",
    );
    ok(&mut shell, "return 0");
    // `h` and `box` reach the running handle; `spin` is read by the running
    // worker's code. Only `plain` goes.
    assert_eq!(pruned(&mut shell), vec!["plain"]);
    let box_interest = shell.binding_ledger().last_interest("box");
    ok(&mut shell, "return 0");
    assert!(shell.prune_idle_bindings().is_none());
    assert_eq!(
        shell.binding_ledger().last_interest("box"),
        box_interest,
        "being pinned is not being used"
    );
    // Once the work settles, the pins fall at the next boundary.
    ok(&mut shell, "cancel $h");
    wait_until_stopped(&shell);
    ok(&mut shell, "return 0");
    let mut names = pruned(&mut shell);
    names.sort();
    assert_eq!(names, vec!["box", "h", "spin"]);
}

fn wait_until_stopped(shell: &Shell) {
    for _ in 0..500 {
        if shell.workers().running_ids().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the worker did not stop");
}

#[test]
fn an_orphan_lease_is_dropped_without_a_notice() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(0));
    let before = shell.snapshot();
    ok(&mut shell, "let orphan = 1");
    shell.restore(&before);
    assert!(shell.get("orphan").is_none());
    assert!(shell.binding_ledger().last_interest("orphan").is_some());
    ok(&mut shell, "return 0");
    assert!(shell.prune_idle_bindings().is_none());
    assert_eq!(shell.binding_ledger().last_interest("orphan"), None);
}

#[test]
fn the_adoption_sweep_leases_untracked_names() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(0));
    ok(&mut shell, "let a = 1");
    let with_a = shell.snapshot();
    ok(&mut shell, "return 0");
    assert_eq!(pruned(&mut shell), vec!["a"]);
    // Restoring an older snapshot brings `a` back with no lease: neither
    // baseline nor tracked. The sweep leases it from now, even on a pass
    // that prunes nothing.
    shell.restore(&with_a);
    assert_eq!(shell.binding_ledger().last_interest("a"), None);
    assert!(shell.prune_idle_bindings().is_none());
    let epoch = shell.binding_ledger().epoch();
    assert_eq!(shell.binding_ledger().last_interest("a"), Some(epoch));
    ok(&mut shell, "return 0");
    assert_eq!(pruned(&mut shell), vec!["a"]);
}

#[test]
fn the_snapshot_comes_with_the_notices() {
    let mut shell = Shell::default();
    shell.arm_binding_lease(BindingLease::idle_turns(0));
    ok(&mut shell, "let gone = 1\nlet kept = 2");
    ok(&mut shell, "return $kept");
    let (notices, durable) = shell.prune_idle_bindings().expect("gone is idle");
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].name, "gone");
    // The snapshot is the post-prune session.
    assert!(durable.get("gone").is_none());
    assert_eq!(durable.get("kept"), Some(&Value::Int(2)));
    // A later rollback to it cannot resurrect the pruned name.
    ok(&mut shell, "let later = 3");
    shell.restore(&durable);
    assert!(shell.get("gone").is_none());
    assert!(shell.get("later").is_none());
    assert!(is_static(&shell.run_turn("return $gone", capture())));
    let r = shell.run_turn("return $kept", capture());
    assert_eq!(r.status(), 0, "{r:?}");
}
