//! Interrupts and the terminal through a real pseudo-terminal (spec §7.6,
//! §8.10, §11.6, §16.8): a program writing to the terminal runs in a
//! process group of its own that holds the terminal while it runs, so
//! Ctrl-C reaches it and not ral, and ral judges by how it ended; the
//! externals of one pipeline share one group; ral takes the terminal back
//! after. Each test drives `ral` (a `-c` run at a terminal, or the REPL)
//! in a pty and waits for what the screen shows, never a fixed sleep
//! except to let a key land while a program runs.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rexpect::process::WaitStatus;
use rexpect::session::{spawn_command, PtySession};

/// A Python program that catches Ctrl-C, says so, takes half a second and
/// ends normally (the example).
const CATCHER: &str = "import time\n\
try:\n    print('sleeping', flush=True)\n    time.sleep(5)\n    print('woke', flush=True)\n\
except KeyboardInterrupt:\n    print('caught', flush=True)\n    time.sleep(0.5)\n    print('done', flush=True)\n";

/// A fresh directory holding the catcher, a home and a configuration
/// directory.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-tty-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::create_dir_all(dir.join("cfg/ral")).unwrap();
    std::fs::write(dir.join("catch.py"), CATCHER).unwrap();
    dir
}

/// `ral ARGS` in a pty, in `dir`.
fn ral(dir: &Path, args: &[&str]) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
    cmd.args(args)
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env("HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env_remove("RAL_INTERACTIVE_MODE")
        .current_dir(dir);
    spawn_command(cmd, Some(15_000)).expect("ral starts in a pty")
}

/// Waits for `want` on the screen; what came before it. (rexpect reads a
/// byte at a time and makes each byte a `char`, so UTF-8 arrives as
/// Latin-1.)
fn wait(p: &mut PtySession, want: &str) -> String {
    let seen: String = want.bytes().map(char::from).collect();
    p.exp_string(&seen)
        .unwrap_or_else(|e| panic!("no {want:?} on the screen: {e}"))
}

/// Lets a key land while the program runs, then presses Ctrl-`key`.
fn press(p: &mut PtySession, key: char) {
    std::thread::sleep(Duration::from_millis(300));
    p.send_control(key).unwrap();
}

/// Everything up to the end of output, and ral's exit status.
fn finish(mut p: PtySession) -> (String, i32) {
    let rest = p.exp_eof().expect("ral ends");
    match p.process().wait().unwrap() {
        WaitStatus::Exited(_, code) => (rest, code),
        other => panic!("ral did not exit normally: {other:?}"),
    }
}

/// A shell command that prints `label`, its process group, its session
/// (ral leads the pty's session, so this is ral's own pid and process
/// group) and the terminal's foreground group.
fn groups(label: &str) -> String {
    format!("^sh -c 'read -r _ _ _ _ g s _ t _ < /proc/$$/stat; echo \"{label} $g $s $t\"'")
}

/// The three numbers after `label ` in `text`: group, ral's group, the
/// foreground group.
fn read_groups(text: &str, label: &str) -> (i32, i32, i32) {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{label} ")))
        .unwrap_or_else(|| panic!("no {label} line in {text:?}"));
    let mut it = line.split_whitespace().map(|n| n.parse::<i32>().unwrap());
    (it.next().unwrap(), it.next().unwrap(), it.next().unwrap())
}

#[test]
fn a_program_that_catches_ctrl_c_has_handled_it() {
    let dir = scratch("catch");
    let mut p = ral(&dir, &["-c", "^python3 catch.py; echo after"]);
    wait(&mut p, "sleeping");
    press(&mut p, 'c');
    wait(&mut p, "caught");
    wait(&mut p, "done");
    wait(&mut p, "after");
    let (rest, status) = finish(p);
    assert_eq!(status, 0, "{rest}");
    assert!(!rest.contains("interrupted"), "{rest}");
}

#[test]
fn a_program_killed_by_ctrl_c_cancels_the_run_and_try_cannot_recover_it() {
    let dir = scratch("killed");
    // The markers are computed, so the diagnostic quoting the source
    // cannot show them.
    let mut p = ral(
        &dir,
        &[
            "-c",
            "echo started\ntry { ^sleep 5 } { |e| echo $[6 * 7] }\necho $[6 * 8]",
        ],
    );
    wait(&mut p, "started");
    press(&mut p, 'c');
    let (rest, status) = finish(p);
    assert_eq!(status, 130, "{rest}");
    assert!(rest.contains("interrupted"), "{rest}");
    assert!(!rest.contains("42") && !rest.contains("48"), "{rest}");
}

#[test]
fn ctrl_backslash_on_a_lent_terminal_aborts_the_run() {
    let dir = scratch("quit");
    let mut p = ral(&dir, &["-c", "echo started\n^sleep 5\necho $[6 * 7]"]);
    wait(&mut p, "started");
    press(&mut p, '\\');
    let (rest, status) = finish(p);
    assert_eq!(status, 131, "{rest}");
    assert!(rest.contains("aborted") && !rest.contains("42"), "{rest}");
}

#[test]
fn a_stopped_program_is_resumed() {
    let dir = scratch("stop");
    let mut p = ral(&dir, &["-c", "echo started\n^sleep 1\necho after"]);
    wait(&mut p, "started");
    press(&mut p, 'z');
    wait(&mut p, "after");
    let (rest, status) = finish(p);
    assert_eq!(status, 0, "{rest}");
}

#[test]
fn a_pipeline_shares_one_group_that_holds_the_terminal_and_ral_takes_it_back() {
    let dir = scratch("groups");
    let prog = format!(
        "{} | ^sh -c 'cat; read -r _ _ _ _ g s _ t _ < /proc/$$/stat; echo \"second $g $s $t\"'\n\
         let c = {}\necho $c\n{}",
        groups("first"),
        groups("capture"),
        groups("alone"),
    );
    let p = ral(&dir, &["-c", &prog]);
    let (out, status) = finish(p);
    assert_eq!(status, 0, "{out}");
    let (g1, shell, t1) = read_groups(&out, "first");
    let (g2, _, t2) = read_groups(&out, "second");
    assert_eq!(g1, g2, "the stages share one group: {out}");
    assert_ne!(g1, shell, "ral is not in the pipeline's group: {out}");
    assert_eq!((t1, t2), (g1, g1), "the pipeline holds the terminal: {out}");
    // A capture runs in ral's own group, and ral holds the terminal again.
    assert_eq!(read_groups(&out, "capture"), (shell, shell, shell), "{out}");
    // A later command gets a group of its own and the terminal.
    let (g3, _, t3) = read_groups(&out, "alone");
    assert_ne!(g3, shell, "{out}");
    assert_ne!(g3, g1, "{out}");
    assert_eq!(t3, g3, "{out}");
}

#[test]
fn a_first_ral_stage_on_a_lent_pipeline_reads_the_end_of_input() {
    let dir = scratch("eof");
    let p = ral(
        &dir,
        &["-c", "!{ let l = from-line; echo \"got [$l]\" } | ^cat"],
    );
    let (out, status) = finish(p);
    assert_eq!(status, 0, "{out}");
    assert!(out.contains("got []"), "{out}");
}

#[test]
fn the_session_lends_the_terminal_and_takes_it_back() {
    let dir = scratch("repl");
    let mut p = ral(&dir, &["--norc"]);
    wait(&mut p, "❯ ");
    // The catcher handles the key; the rest of the entry runs (the marker
    // is computed, so the echoed entry cannot match it).
    p.send_line("^python3 catch.py; echo $[6 * 7]").unwrap();
    wait(&mut p, "sleeping");
    press(&mut p, 'c');
    wait(&mut p, "caught");
    wait(&mut p, "done");
    wait(&mut p, "42");
    wait(&mut p, "❯ ");
    // A program that dies of the key cancels its entry only.
    p.send_line("^sleep 5; echo $[6 * 8]").unwrap();
    press(&mut p, 'c');
    let seen = wait(&mut p, "interrupted");
    assert!(!seen.contains("48"), "{seen}");
    wait(&mut p, "❯ ");
    // The session has its terminal back: the editor reads the next entry.
    p.send_line("echo $[6 * 9]").unwrap();
    wait(&mut p, "54");
    wait(&mut p, "❯ ");
    p.send_control('d').unwrap();
    let (rest, status) = finish(p);
    assert_eq!(status, 0, "{rest}");
}
