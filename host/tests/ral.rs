//! The `ral` binary end to end: statuses, stdout and rendered failures.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

fn ral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("ral runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn script(name: &str, src: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-host-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, src).unwrap();
    path
}

#[test]
fn a_script_prints_with_echo() {
    let path = script("echo.ral", "let n = $[2 + 3]\necho \"n=$n\"\necho done\n");
    let out = ral(&[path.to_str().unwrap(), "ignored", "args"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "n=5\ndone\n");
}

#[test]
fn arguments_after_code_do_not_change_the_output() {
    let plain = ral(&["-c", "echo hello"]);
    let with_args = ral(&["-c", "echo hello", "a", "-c", "b"]);
    assert_eq!(plain.status.code(), Some(0));
    assert_eq!(with_args.status.code(), Some(0));
    assert_eq!(text(&plain.stdout), "hello\n");
    assert_eq!(text(&with_args.stdout), "hello\n");
}

#[test]
fn a_type_error_exits_1_and_runs_nothing() {
    let out = ral(&["-c", "echo before\necho $[1 + 'a']"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("kind-mismatch"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_parse_error_exits_2() {
    let out = ral(&["-c", "let = ("]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(!out.stderr.is_empty());
}

#[test]
fn an_unreadable_file_exits_1() {
    let out = ral(&["/nonexistent/ral/script.ral"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("ral: cannot read /nonexistent/ral/script.ral: "),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_uncaught_failure_reports_site_and_trace() {
    let path = script(
        "fail.ral",
        "let f = { |x| fail [status: 7, message: 'boom'] }\nlet y = f 1\necho after\n",
    );
    let out = ral(&[path.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(err.contains("runtime-failure"), "{err}");
    assert!(err.contains("boom"), "{err}");
    assert!(err.contains("in function `f` called at 2:9"), "{err}");
}

#[test]
fn exit_sets_the_status() {
    let out = ral(&["-c", "exit 4"]);
    assert_eq!(out.status.code(), Some(4));
    let out = ral(&["-c", "exit 300"]);
    assert_eq!(out.status.code(), Some(255));
}

#[test]
fn a_final_false_exits_1() {
    assert_eq!(ral(&["-c", "false"]).status.code(), Some(1));
    assert_eq!(ral(&["-c", "true"]).status.code(), Some(0));
}

#[test]
fn unsupported_features_fail_honestly() {
    let out = ral(&["-c", "ls"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("runtime-failure"), "{err}");
    assert!(err.contains("not supported by this VM yet"), "{err}");
}
