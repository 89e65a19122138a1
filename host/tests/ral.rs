//! The `ral` binary end to end: modes, arguments, statuses, stdout and
//! rendered failures (spec §10.1, §16), Ctrl-C (§8.10), and the REPL, both
//! fed on a pipe (`ral -i`) and driven through a pseudo-terminal (§15.1,
//! §15.2).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ral_command(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
    cmd.args(args).env("NO_COLOR", "1");
    cmd
}

/// Runs `ral ARGS` with standard input closed (not a terminal, so a bare
/// `ral` reads an empty program).
fn ral(args: &[&str]) -> Output {
    ral_command(args)
        .stdin(Stdio::null())
        .output()
        .expect("ral runs")
}

/// Runs `ral ARGS` with `input` on standard input.
fn ral_with_stdin(args: &[&str], input: &str) -> Output {
    let mut child = ral_command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ral starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .or_else(|e| {
            // ral refused the command line before reading its input.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                Ok(())
            } else {
                Err(e)
            }
        })
        .unwrap();
    child.wait_with_output().expect("ral runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory for this test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-cli-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn script(test: &str, name: &str, src: &str) -> PathBuf {
    let path = scratch(test).join(name);
    std::fs::write(&path, src).unwrap();
    path
}

// ---------------------------------------------------------------- batch

#[test]
fn a_script_prints_with_echo() {
    let path = script(
        "echo",
        "echo.ral",
        "let n = $[2 + 3]\necho \"n=$n\"\necho done\n",
    );
    let out = ral(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "n=5\ndone\n");
}

#[test]
fn an_empty_program_exits_0() {
    let out = ral(&["-c", ""]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn arguments_reach_args() {
    // Three arguments, `b c` one of them (the text conversion writes it
    // raw inside the list, §4.9).
    let out = ral(&[
        "-c",
        "let a = args\necho !{length $a} $a\necho $a[2]",
        "a",
        "-c",
        "b c",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "3 [a, -c, b c]\nb c\n");

    let path = script(
        "args",
        "args.ral",
        "let [first, ...rest] = args\necho $first\necho !{length $rest}\n",
    );
    let out = ral(&[path.to_str().unwrap(), "--force", "x", "y"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "--force\n2\n");

    // `--` ends ral's options; the script is not among its own arguments.
    let out = ral(&["--", path.to_str().unwrap(), "only"]);
    assert_eq!(text(&out.stdout), "only\n0\n", "{}", text(&out.stderr));
}

#[test]
fn without_arguments_args_is_empty() {
    let out = ral(&["-c", "echo !{length !{args}}"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "0\n");
}

#[test]
fn script_names_the_file_and_only_a_file() {
    let path = script("script", "where.ral", "echo $SCRIPT\n");
    let out = ral(&[path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}\n", path.display()));

    // `-c` and standard input have no script path: a compile-time error.
    for out in [
        ral(&["-c", "echo $SCRIPT"]),
        ral_with_stdin(&["-s"], "echo $SCRIPT\n"),
    ] {
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty());
        assert!(
            text(&out.stderr).contains("script-outside-file"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[test]
fn the_program_can_come_from_standard_input() {
    let prog = "let x = 6\necho $[$x * 7]\n";
    for args in [&["-s"][..], &[][..], &["-"][..], &["-i", "-s"][..]] {
        let out = ral_with_stdin(args, prog);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), "42\n", "{args:?}");
    }
    // A script positional wins over -s: standard input is left alone.
    let path = script("stdin", "file.ral", "echo from-file\n");
    let out = ral_with_stdin(&["-s", path.to_str().unwrap()], "echo from-stdin\n");
    assert_eq!(text(&out.stdout), "from-file\n", "{}", text(&out.stderr));
}

#[test]
fn check_parses_and_checks_without_running() {
    let dir = scratch("check");
    let marker = dir.join("ran");
    let path = dir.join("prog.ral");
    std::fs::write(
        &path,
        format!("echo checked > '{}'\necho $SCRIPT\n", marker.display()),
    )
    .unwrap();
    for flag in ["-n", "--check"] {
        let out = ral(&[flag, path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    assert!(!marker.exists(), "--check ran the program");

    let out = ral(&["-n", "-c", "echo $[1 + 'a']"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("kind-mismatch"),
        "{}",
        text(&out.stderr)
    );

    let out = ral(&["-n", "-c", "let = ("]);
    assert_eq!(out.status.code(), Some(2));

    // It needs a script or -c.
    let out = ral_with_stdin(&["-n"], "echo hi\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--check needs"),
        "{}",
        text(&out.stderr)
    );
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
fn bad_command_lines_exit_2() {
    for args in [&["--frobnicate"][..], &["-c"][..]] {
        let out = ral(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains("usage:"),
            "{}",
            text(&out.stderr)
        );
    }
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_refused_with_status_2() {
    use std::os::unix::ffi::OsStrExt;
    let out = ral_command(&["-c", "echo ran"])
        .arg(std::ffi::OsStr::from_bytes(b"caf\xe9"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("not valid UTF-8"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn help_and_version() {
    let out = ral(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stdout).contains("-c CODE [ARG...]"),
        "{}",
        text(&out.stdout)
    );
    let out = ral(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("ral {}\n", env!("CARGO_PKG_VERSION"))
    );
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
        "fail",
        "fail.ral",
        "let f = { |x| fail [status: 7, message: 'boom'] }\nlet y = f 1\necho after\n",
    );
    let out = ral(&[path.to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(7), "{err}");
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(err.contains("runtime-failure"), "{err}");
    assert!(err.contains("boom"), "{err}");
    // The failing site, then the call that led there.
    assert!(err.contains("fail.ral:1:15"), "{err}");
    assert!(err.contains("in function `f` called at 2:9"), "{err}");
    assert!(!err.to_lowercase().contains("roll"), "{err}");
}

#[test]
fn output_before_a_failure_is_kept() {
    let out = ral(&["-c", "echo one\nfail [status: 300, message: big]\necho two"]);
    assert_eq!(text(&out.stdout), "one\n");
    // Statuses are clamped to what a process can exit with.
    assert_eq!(out.status.code(), Some(255), "{}", text(&out.stderr));
}

#[test]
fn a_blocks_2_to_1_reaches_the_programs_inside_it() {
    // §7.4: `2>&1` on a block sends standard error wherever the block's
    // standard output goes, for every command inside it, also one whose
    // own standard output is redirected elsewhere. Here the block's
    // standard output is ral's own, a real descriptor.
    let dir = scratch("block-err-to-out");
    let out = ral_command(&[
        "-c",
        "!{ sh -c 'echo oops >&2; echo kept' > out.txt } 2>&1\necho after",
    ])
    .current_dir(&dir)
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "oops\nafter\n");
    assert_eq!(text(&out.stderr), "");
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "kept\n"
    );
}

#[test]
fn user_answers_the_account_database_without_user() {
    // §10.2 reads `USER` from the effective environment; without one the
    // account database names the effective user (deviations.md S11), and
    // an override still decides.
    let name = Command::new("id").arg("-un").output().unwrap();
    let name = text(&name.stdout);
    let out = ral_command(&[
        "-c",
        "echo !{user}\nwithin [env: [USER: builder]] { echo !{user} }",
    ])
    .env_remove("USER")
    .stdin(Stdio::null())
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}builder\n", name));
}

#[test]
fn exit_sets_the_status() {
    let out = ral(&["-c", "exit 4"]);
    assert_eq!(out.status.code(), Some(4));
    let out = ral(&["-c", "exit 300"]);
    assert_eq!(out.status.code(), Some(255));
    let out = ral(&["-c", "echo a\nexit 3\necho b"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(text(&out.stdout), "a\n");
}

/// Issue 11 item 23 (§8.8, §16.3; spec/evaluation.md §3): `exit` takes any
/// status of the signed 32-bit range and the process status is that status
/// clamped to 0..=255; a status outside the range is an ordinary failure.
#[test]
fn exit_statuses_are_clamped_and_out_of_range_ones_refused() {
    let out = ral(&["-c", "exit -2"]);
    assert_eq!(out.status.code(), Some(0));
    let out = ral(&["-c", "exit 2147483647"]);
    assert_eq!(out.status.code(), Some(255));
    let out = ral(&["-c", "echo a\nexit 2147483648\necho b"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "a\n");
    assert!(
        text(&out.stderr).contains("outside the signed exit-code range"),
        "{}",
        text(&out.stderr)
    );
    let out = ral(&["-c", "quit -9999999999"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_final_false_exits_1() {
    assert_eq!(ral(&["-c", "false"]).status.code(), Some(1));
    assert_eq!(ral(&["-c", "true"]).status.code(), Some(0));
    assert_eq!(ral(&["-c", "false\ntrue"]).status.code(), Some(0));
}

#[test]
fn a_failed_command_exits_with_its_status() {
    let out = ral(&["-c", "sh -c 'exit 5'"]);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
}

/// Waits for `child` at most `limit`.
fn wait_for(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "ral did not stop within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(unix)]
#[test]
fn ctrl_c_cancels_a_batch_run_with_status_130() {
    // A ral loop (the VM's poll) and an external command (its teardown).
    for prog in [
        "echo started\nlet spin = { |n| spin $[$n + 1] }\nspin 0",
        "echo started\nsleep 30\necho never",
    ] {
        let mut child = ral_command(&["-c", prog])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until the program runs, so the interrupt lands mid-run.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 8];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        assert_eq!(&first, b"started\n");
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = wait_for(&mut child, Duration::from_secs(10));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(130), "{prog}: {err}");
        assert!(err.contains("interrupted"), "{err}");
    }
}

#[cfg(unix)]
#[test]
fn a_third_interrupt_ends_a_batch_run_at_once() {
    // The program ignores TERM and INT, so the run's teardown waits out its
    // grace period; three interrupts in a row do not wait for it.
    // (Its standard error goes elsewhere, so ral's is closed when ral
    // exits; the program itself is left to end on its own.)
    let mut child = ral_command(&[
        "-c",
        "echo started\nsh -c 'trap \"\" TERM INT; sleep 5' 2> /dev/null",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 8];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // Sent from this process and spaced out a little: an interrupt sent
    // while the previous one is still pending merges with it (standard
    // signals do not queue), and three `kill` processes started back to
    // back on a loaded machine can all land before ral runs its handler.
    // All three still arrive well inside the teardown's grace period.
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    for _ in 0..3 {
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
    let status = wait_for(&mut child, Duration::from_secs(10));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("exiting without waiting"), "{err}");
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigquit_cancel_a_batch_run_with_their_statuses() {
    for (signal, want, word) in [("-TERM", 143, "terminated"), ("-QUIT", 131, "aborted")] {
        let mut child = ral_command(&["-c", "echo started\nsleep 30\necho never"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 8];
        std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = wait_for(&mut child, Duration::from_secs(10));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(want), "{signal}: {err}");
        assert!(err.contains(word), "{signal}: {err}");
    }
}

// ------------------------------------------------------- REPL on a pipe

/// `ral -i` with `input` on a pipe: the REPL without a line editor (the
/// minimal frontend), its configuration (and the rc skeleton it writes on
/// first start) under `state`.
fn repl_on_a_pipe(test: &str, input: &str) -> (Output, PathBuf) {
    let state = scratch(test);
    let mut child = ral_command(&["-i"])
        .env("XDG_CONFIG_HOME", &state)
        .env("HOME", &state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    (child.wait_with_output().unwrap(), state)
}

#[test]
fn an_alias_from_an_earlier_entry_is_typed_as_an_alias() {
    // §6.6, §17.3: a bare head has one class, decided by the order the run
    // dispatches in; an alias the session holds makes it an arm, whose
    // arguments are rendered by the text conversion, so a record is no
    // refusal. After `unalias` the head is an external again.
    let (out, _) = repl_on_a_pipe(
        "repl-alias-class",
        "alias tell { |args| echo ...$args }\n\
         tell 2.5 [k: 1]\n\
         unalias tell\n\
         tell [k: 1]\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(stdout, "2.5 [k: 1]\n", "{stderr}");
    assert!(stderr.contains("external-argument"), "{stderr}");
}

#[test]
fn repl_entries_share_one_session() {
    let (out, state) = repl_on_a_pipe(
        "repl-session",
        "let x = 40\n\
         return $[$x + 2]\n\
         let f = { |y|\n\
           return $[$y * 3]\n\
         }\n\
         f 5\n\
         echo printed\n\
         let kept = 1; fail [status: 3, message: 'nope']\n\
         return $kept\n\
         return [host: 'db', ports: [1, 2]]\n\
         return #'it's'#\n\
         let s = 'open\n\
         string'\n\
         return $s\n\
         cd /\n\
         return !{cwd}\n\
         return ()\n\
         return !{echo raw | from-bytes}\n",
    );
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stdout,
        "=> 42\n\
         => 15\n\
         printed\n\
         => 1\n\
         => [host: 'db', ports: [1, 2]]\n\
         => #'it's'#\n\
         => \"open\\nstring\"\n\
         => '/'\n\
         raw\n",
        "{stderr}"
    );
    // The failure is reported, and nothing claims its binding was undone.
    assert!(stderr.contains("nope"), "{stderr}");
    assert!(!stderr.to_lowercase().contains("roll"), "{stderr}");
    // The first start wrote the rc skeleton and said where.
    assert!(stderr.contains("created"), "{stderr}");
    assert!(state.join("ral/rc").is_file());
}

#[test]
fn repl_reports_errors_and_keeps_going() {
    let (out, _) = repl_on_a_pipe(
        "repl-errors",
        "let = 3\n\
         echo $[1 + 'a']\n\
         return $undefined\n\
         return ok\n",
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(text(&out.stdout), "=> 'ok'\n", "{stderr}");
    assert!(stderr.contains("kind-mismatch"), "{stderr}");
    assert!(stderr.matches("Error").count() >= 3, "{stderr}");
}

#[test]
fn repl_exit_ends_the_session_with_its_status() {
    let (out, _) = repl_on_a_pipe("repl-exit", "echo a\nexit 6\necho b\n");
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(text(&out.stdout), "a\n");
}

#[test]
fn repl_script_and_args_are_not_available() {
    let (out, _) = repl_on_a_pipe("repl-script", "echo $SCRIPT\necho !{length !{args}}\n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("script-outside-file"), "{stderr}");
    assert_eq!(text(&out.stdout), "0\n", "{stderr}");
}

// ------------------------------------------- REPL in a pseudo-terminal

#[cfg(unix)]
mod terminal {
    use super::*;
    use rexpect::session::{spawn_command, PtySession};

    /// What rexpect shows for `text`: it reads the terminal a byte at a
    /// time and makes each byte a `char`, so UTF-8 arrives as Latin-1.
    fn seen(text: &str) -> String {
        text.bytes().map(char::from).collect()
    }

    /// The end of every prompt (`❯ `), as rexpect sees it.
    fn prompt() -> String {
        seen("❯ ")
    }

    fn start(state: &std::path::Path, dir: &std::path::Path) -> PtySession {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
        cmd.env("NO_COLOR", "1")
            .env("TERM", "xterm")
            .env("XDG_CONFIG_HOME", state)
            .env("HOME", dir)
            .current_dir(dir);
        let mut p = spawn_command(cmd, Some(10_000)).expect("ral starts in a pty");
        p.exp_string(&prompt()).expect("a first prompt");
        p
    }

    /// Sends one entry and waits for `want` in what follows.
    fn entry(p: &mut PtySession, line: &str, want: &str) {
        p.send_line(line).unwrap();
        p.exp_string(want)
            .unwrap_or_else(|e| panic!("after {line:?}, no {want:?}: {e}"));
    }

    #[test]
    fn the_repl_in_a_terminal() {
        let state = scratch("pty-state");
        let home = scratch("pty-home");
        std::fs::create_dir_all(home.join("sub")).unwrap();
        let mut p = start(&state, &home);

        // The prompt abbreviates the home directory; cd persists.
        entry(&mut p, "cd sub", &seen("~/sub ❯ "));
        entry(&mut p, "let x = 40", &prompt());
        entry(&mut p, "return $[$x + 2]", "=> 42");

        // An open brace continues the entry on the next line.
        p.send_line("let f = { |y|").unwrap();
        p.send_line("return $[$y * 3] }").unwrap();
        entry(&mut p, "f 5", "=> 15");

        // Ctrl-C at the prompt abandons the line: `gone` is never bound.
        // (The editor drops what was typed ahead of an interrupt, as a
        // terminal does, so each step waits for the screen.)
        p.exp_string(&prompt()).unwrap();
        p.send("let gone = 1").unwrap();
        p.flush().unwrap();
        // The editor redraws only what changed, so the line's end is what
        // shows that all of it arrived.
        p.exp_string("= 1").unwrap();
        p.send_control('c').unwrap();
        p.exp_string(&prompt()).unwrap();
        entry(&mut p, "return $gone", "unbound-name");
        entry(&mut p, "return after-ctrl-c", "=> 'after-ctrl-c'");

        // Ctrl-C while an entry runs cancels that entry only.
        p.send_line("sleep 30").unwrap();
        std::thread::sleep(Duration::from_millis(500));
        p.send_control('c').unwrap();
        p.exp_string("interrupted").unwrap();
        p.exp_string(&prompt()).unwrap();
        entry(&mut p, "return $x", "=> 40");

        // A failed entry keeps what landed before it, and says nothing else.
        entry(
            &mut p,
            "let kept = 7; fail [status: 3, message: nope]",
            "Error: nope",
        );
        entry(&mut p, "return $kept", "=> 7");

        // Ctrl-D on an empty line ends the session cleanly. (Sent once the
        // editor shows its prompt again: a ^D that arrives while the
        // terminal is still in cooked mode is the line discipline's, and
        // the editor never sees it.)
        p.exp_string(&prompt()).unwrap();
        p.send_control('d').unwrap();
        p.exp_eof().unwrap();
        // rexpect does not re-export nix's `WaitStatus`; its form is
        // `Exited(Pid(N), status)`.
        let status = format!("{:?}", p.process().wait().unwrap());
        assert!(
            status.starts_with("Exited(") && status.ends_with(", 0)"),
            "ral ended with {status}"
        );
        let history = std::fs::read_to_string(state.join("ral/history")).unwrap();
        assert!(history.contains("return $[$x + 2]"), "{history}");
        assert!(!history.contains("let gone"), "{history}");
    }
}
