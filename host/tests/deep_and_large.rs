//! The `ral` binary on programs of real size and on runaway recursion: a
//! long script runs, and a failure deep in a recursion is reported at a
//! readable length (both ends of the call trace, the middle counted).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::process::{Command, Stdio};

fn run(src: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(["-c", src])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("ral runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_runaway_recursion_reports_both_ends_of_its_trace() {
    let (status, stdout, stderr) = run(
        "let deep = { |n| if $[$n == 0] { return 0 } else { return $[!{deep $[$n - 1]} + 1] } }\n\
         echo !{deep 200000}\n",
    );
    assert_eq!(status, 1, "{stderr}");
    assert_eq!(stdout, "");
    assert!(stderr.contains("recursion depth limit"), "{stderr}");
    assert!(stderr.contains("more calls"), "{stderr}");
    let notes = stderr.matches("in function `deep` called at").count();
    assert_eq!(notes, 2 * ral_vm::failure::TRACE_KEEP, "{stderr}");
    assert!(
        stderr.lines().count() < 80,
        "{} lines",
        stderr.lines().count()
    );
}

#[test]
fn a_two_thousand_line_script_runs() {
    let mut src = String::new();
    let mut want = String::new();
    for i in 0..1000 {
        writeln!(src, "let x{i} = \"item-$[{i} * 2]\"").unwrap();
        writeln!(src, "echo $x{i}").unwrap();
        writeln!(want, "item-{}", i * 2).unwrap();
    }
    let (status, stdout, stderr) = run(&src);
    assert_eq!(status, 0, "{stderr}");
    assert_eq!(stdout, want);
}
