//! The contract's home (seed 004): top-level statements of a turn are
//! session writes that land one by one and stay when a later one fails;
//! a block's `let`s are local and never reach the session, but a block's
//! shell-state writes (`cd`, aliases) do (spec §2.6, §5.6, §10.5).
#![allow(clippy::unwrap_used, clippy::wildcard_enum_match_arm)]

use ral_host::*;

fn run(shell: &mut Shell, src: &str) -> TurnReport {
    shell.run_turn(
        src,
        TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new("<test>")
        },
    )
}

fn stdout(report: &TurnReport) -> String {
    match report {
        TurnReport::Ran {
            captured: Some(c), ..
        } => String::from_utf8_lossy(&c.stdout).into_owned(),
        other => panic!("expected captured output, got {other:?}"),
    }
}

#[test]
fn top_level_lets_land_one_by_one_and_stay_after_a_failure() {
    let mut shell = Shell::default();
    let r = run(
        &mut shell,
        "let a = 1\nlet b = 2\nfail [status: 3, message: 'stop']\nlet c = 4",
    );
    assert_eq!(r.status(), 3);
    assert_eq!(shell.get("a"), Some(&Value::Int(1)));
    assert_eq!(shell.get("b"), Some(&Value::Int(2)));
    assert_eq!(shell.get("c"), None);
    // The next turn type-checks against what landed.
    let r = run(&mut shell, "echo $[$a + $b]");
    assert_eq!(stdout(&r), "3\n");
}

#[test]
fn a_blocks_lets_never_reach_the_session_even_when_it_fails() {
    let mut shell = Shell::default();
    let r = run(
        &mut shell,
        "!{ let inner = 5; fail [status: 2, message: 'x'] }",
    );
    assert_eq!(r.status(), 2);
    assert_eq!(shell.get("inner"), None);
    let r = run(&mut shell, "let outer = !{ let inner = 5; $[$inner + 1] }");
    assert_eq!(r.status(), 0);
    assert_eq!(shell.get("outer"), Some(&Value::Int(6)));
    assert_eq!(shell.get("inner"), None);
    // `inner` is unknown to the checker of a later turn, too.
    let r = run(&mut shell, "echo $inner");
    assert!(matches!(r, TurnReport::Static { .. }), "{r:?}");
}

#[test]
fn a_blocks_shell_state_writes_persist_and_within_undoes_them() {
    let mut shell = Shell::default();
    let r = run(
        &mut shell,
        "!{ cd /; alias hi { |args| echo hi from the alias } }",
    );
    assert_eq!(r.status(), 0);
    assert_eq!(stdout(&run(&mut shell, "pwd")), "/\n");
    assert_eq!(stdout(&run(&mut shell, "hi")), "hi from the alias\n");
    let r = run(&mut shell, "within [dir: '/tmp'] { cd /usr }\npwd");
    assert_eq!(stdout(&r), "/\n");
}

#[test]
fn a_failed_turn_keeps_its_effects_on_the_world() {
    // Nothing is rolled back: the landed binding and the written file stay.
    let dir = std::env::temp_dir().join(format!("ral-tlvb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut shell = Shell::default();
    let src = format!(
        "let wrote = '{}/f'\necho kept > $wrote\nsh -c 'exit 7'\nlet never = 1",
        dir.display()
    );
    let r = run(&mut shell, &src);
    assert_eq!(r.status(), 7);
    assert!(shell.get("wrote").is_some());
    assert_eq!(shell.get("never"), None);
    assert_eq!(std::fs::read_to_string(dir.join("f")).unwrap(), "kept\n");
    std::fs::remove_dir_all(&dir).unwrap();
}
