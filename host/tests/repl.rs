//! The interactive surface of spec §15 through a real terminal (a pty):
//! completion of a binding, a command, a path and a field; colour;
//! history hints and recall after a restart; the rc file; plugins' hooks
//! and keybindings (the shipped example plugins among them); the minimal
//! frontend. Every step waits for what the screen shows, never a fixed
//! sleep.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rexpect::session::{spawn_command, PtySession};

/// What rexpect shows for `text`: it reads a byte at a time and makes
/// each byte a `char`, so UTF-8 arrives as Latin-1.
fn seen(text: &str) -> String {
    text.bytes().map(char::from).collect()
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-repl-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).unwrap();
    std::fs::create_dir_all(dir.join("cfg/ral/plugins")).unwrap();
    dir
}

/// `ral` in a terminal with `dir/home` as home and working directory and
/// `dir/cfg` as the configuration directory; colour unless `plain`.
fn start(dir: &Path, plain: bool, env: &[(&str, &str)]) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
    cmd.env("TERM", "xterm")
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env("HOME", dir.join("home"))
        .env_remove("NO_COLOR")
        .env_remove("RAL_INTERACTIVE_MODE")
        .current_dir(dir.join("home"));
    if plain {
        cmd.env("NO_COLOR", "1");
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    spawn_command(cmd, Some(15_000)).expect("ral starts in a pty")
}

fn wait(p: &mut PtySession, want: &str) {
    p.exp_string(&seen(want))
        .unwrap_or_else(|e| panic!("no {want:?} on the screen: {e}"));
}

/// Types `keys` (Tab and other keys included) and waits for `want`.
fn keys(p: &mut PtySession, keys: &str, want: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
    wait(p, want);
}

const PROMPT: &str = "❯ ";

#[test]
fn completion_colour_and_hints() {
    let dir = scratch("complete");
    std::fs::write(dir.join("home/data file.txt"), "hello-from-the-file\n").unwrap();
    let mut p = start(&dir, false, &[]);
    wait(&mut p, PROMPT);
    keys(&mut p, "let config = [host: db, port: 5432]\r", PROMPT);
    keys(&mut p, "let counter = 7\r", PROMPT);
    // A field of a record the checker knows.
    keys(&mut p, "echo $config[po\t", "port");
    keys(&mut p, "]\r", "5432");
    // A binding made at an earlier prompt.
    keys(&mut p, "return $coun\t", "counter");
    keys(&mut p, "\r", "=> ");
    wait(&mut p, "7");
    // A command: a builtin by a unique prefix.
    keys(&mut p, "lengt\t", "length");
    keys(&mut p, " [1, 2, 3]\r", "3");
    // A path from the working directory, quoted because it has a space.
    keys(&mut p, "cat dat\t", "'data file.txt'");
    keys(&mut p, "\r", "hello-from-the-file");
    // Colour from the lexer: a command head in bold blue, a string green.
    keys(&mut p, "echo 'x'", "\x1b[32m'x'");
    p.send("\x15").unwrap(); // Ctrl-U clears the line.
                             // A hint from history, in grey, after the typed text.
    keys(&mut p, "cat 'da", "\x1b[90mta file.txt'");
    p.send("\x15").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn the_command_head_is_coloured_by_whether_it_resolves() {
    let dir = scratch("colour");
    let mut p = start(&dir, false, &[]);
    wait(&mut p, PROMPT);
    keys(&mut p, "echo", "\x1b[1;34mecho");
    p.send("\x15").unwrap();
    keys(
        &mut p,
        "no-such-command-here",
        "\x1b[31mno-such-command-here",
    );
    p.send("\x15").unwrap();
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn history_is_recalled_after_a_restart() {
    let dir = scratch("history");
    let mut p = start(&dir, true, &[]);
    wait(&mut p, PROMPT);
    keys(&mut p, "echo remembered-entry\r", "remembered-entry");
    wait(&mut p, PROMPT);
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
    let history = std::fs::read_to_string(dir.join("cfg/ral/history")).unwrap();
    assert!(history.contains("echo remembered-entry"), "{history}");

    let mut p = start(&dir, true, &[]);
    wait(&mut p, PROMPT);
    // Up recalls the last session's entry.
    keys(&mut p, "\x1b[A", "echo remembered-entry");
    keys(&mut p, "\r", "remembered-entry");
    wait(&mut p, PROMPT);
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn the_rc_file_configures_the_session() {
    let dir = scratch("rc");
    std::fs::write(
        dir.join("cfg/ral/rc"),
        "let root = '/srv/work'\n\
         return [\n\
             bindings: [work: $root, double: { |n| return $[$n * 2] }],\n\
             env: [RAL_FROM_RC: 'set-by-rc'],\n\
             aliases: [hi: { |args| echo 'hi from the rc' }],\n\
             theme: [value_prefix: 'RESULT: ', value_color: none],\n\
             prompt: { return 'rc-prompt> ' },\n\
             startup: { echo 'startup ran' },\n\
         ]\n",
    )
    .unwrap();
    let mut p = start(&dir, true, &[]);
    wait(&mut p, "startup ran");
    wait(&mut p, "rc-prompt> ");
    keys(&mut p, "return $work\r", "RESULT: '/srv/work'");
    keys(&mut p, "double 21\r", "RESULT: 42");
    keys(&mut p, "hi\r", "hi from the rc");
    keys(&mut p, "printenv RAL_FROM_RC\r", "set-by-rc");
    wait(&mut p, "rc-prompt> ");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn plugins_hooks_keybindings_and_the_examples() {
    let dir = scratch("plugins");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins");
    for name in ["autosuggest.ral", "jump.ral"] {
        std::fs::copy(examples.join(name), dir.join("cfg/ral/plugins").join(name)).unwrap();
    }
    std::fs::write(
        dir.join("cfg/ral/plugins/announce.ral"),
        "return [\n\
             name: announce,\n\
             hooks: [\n\
                 pre-exec: { |e| echo \"about to run: $e[src]\" },\n\
                 prompt: { |p| return \"(announce) $p\" },\n\
             ],\n\
             keybindings: [[key: 'ctrl-g', handler: { |e| _ed-insert 'echo from-a-key' }]],\n\
         ]\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("home/projects/alpha")).unwrap();
    std::fs::write(
        dir.join("cfg/ral/rc"),
        "return [plugins: [announce: [:], autosuggest: [:], jump: [:]]]\n",
    )
    .unwrap();
    let mut p = start(&dir, true, &[]);
    // The prompt hook transformed the prompt.
    wait(&mut p, "(announce) ~ ");
    // The pre-exec hook fires before the entry runs.
    keys(&mut p, "echo first\r", "about to run: echo first");
    wait(&mut p, "first");
    // A keybinding inserts at the cursor.
    keys(&mut p, "\x07", "from-a-key");
    keys(&mut p, "\r", "about to run: echo from-a-key");
    // autosuggest: ghost text from history, taken with Right.
    keys(&mut p, "echo fir", "st");
    keys(&mut p, "\x1b[C\r", "about to run: echo first");
    // jump: chpwd remembers, `j` goes back.
    keys(&mut p, "cd projects/alpha\r", "(announce) ~/projects/alpha");
    keys(&mut p, "cd ~\r", "(announce) ~ ");
    keys(&mut p, "j alph\r", "(announce) ~/projects/alpha");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

#[test]
fn a_prompt_that_reads_user_works_without_user_set() {
    // `user` answers the account database when the environment has no
    // `USER` (deviations.md S11), so a prompt built on it keeps working.
    let dir = scratch("prompt-user");
    std::fs::write(
        dir.join("cfg/ral/rc"),
        "return [prompt: { return \"[!{user}]> \" }]\n",
    )
    .unwrap();
    let name = Command::new("id").arg("-un").output().unwrap();
    let name = String::from_utf8(name.stdout).unwrap();
    let mut cmd_env = start_without(&dir, "USER");
    wait(&mut cmd_env, &format!("[{}]> ", name.trim()));
    keys(&mut cmd_env, "echo fine\r", "fine");
    wait(&mut cmd_env, &format!("[{}]> ", name.trim()));
    cmd_env.send_control('d').unwrap();
    let rest = cmd_env.exp_eof().unwrap();
    assert!(!rest.contains("prompt failed"), "{rest}");
}

#[test]
fn a_failing_prompt_warns_once_and_falls_back() {
    // A prompt block that fails reports it once; the same failure at the
    // next prompts falls back to the plain prompt quietly.
    let dir = scratch("prompt-fails");
    std::fs::write(
        dir.join("cfg/ral/rc"),
        "return [prompt: { fail [status: 1, message: 'no prompt today'] }]\n",
    )
    .unwrap();
    let mut p = start(&dir, true, &[]);
    let mut seen_text = p.exp_string(&seen(PROMPT)).unwrap();
    for i in 0..3 {
        keys(&mut p, &format!("echo entry-{i}\r"), &format!("entry-{i}"));
        seen_text.push_str(&p.exp_string(&seen(PROMPT)).unwrap());
    }
    p.send_control('d').unwrap();
    seen_text.push_str(&p.exp_eof().unwrap());
    assert_eq!(
        seen_text.matches("no prompt today").count(),
        1,
        "{seen_text}"
    );
}

/// `ral` in a terminal as [`start`] makes it, with `var` removed from its
/// environment.
fn start_without(dir: &Path, var: &str) -> PtySession {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
    cmd.env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env("HOME", dir.join("home"))
        .env_remove("RAL_INTERACTIVE_MODE")
        .env_remove(var)
        .current_dir(dir.join("home"));
    spawn_command(cmd, Some(15_000)).expect("ral starts in a pty")
}

#[test]
fn the_minimal_frontend() {
    let dir = scratch("minimal");
    let mut p = start(&dir, false, &[("RAL_INTERACTIVE_MODE", "minimal")]);
    wait(&mut p, PROMPT);
    keys(&mut p, "let f = { |x|\r", "> ");
    keys(&mut p, "return $[$x + 1] }\r", PROMPT);
    keys(&mut p, "f 41\r", "=> ");
    wait(&mut p, "42");
    p.send_control('d').unwrap();
    p.exp_eof().unwrap();
}

/// A misspelled rc key refuses the file before it runs; the shell starts
/// with the defaults (on a pipe: the minimal frontend, no terminal).
#[test]
fn a_misspelled_rc_key_refuses_the_file_before_it_runs() {
    use std::io::Write;
    let dir = scratch("rc-refused");
    let marker = dir.join("ran");
    std::fs::write(
        dir.join("cfg/ral/rc"),
        format!(
            "echo ran > '{}'\nlet extra = [surfase: minimal, bell: true]\nreturn [...$extra, bell: false]\n",
            marker.display()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ral"))
        .arg("-i")
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env("HOME", dir.join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"return still-a-shell\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`surfase` is not a key of the rc file"),
        "{stderr}"
    );
    assert!(!marker.exists(), "the refused rc file ran");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "=> 'still-a-shell'\n");
    assert_eq!(out.status.code(), Some(0));
}

/// `help` lists what this shell installs, in sorted sections: the REPL's
/// plugin commands are there, exarch's forms and `_` names are not; a
/// batch `ral` has no `load-plugin`.
#[test]
fn help_lists_the_installed_surface() {
    use std::io::Write;
    let dir = scratch("help");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(["-i", "--norc"])
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env("HOME", dir.join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"help\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let builtins = text.find("Builtins:\n").expect("a Builtins section");
    let prelude = text.find("Prelude:\n").expect("a Prelude section");
    assert!(builtins < prelude, "{text}");
    assert!(text.contains("  load-plugin "), "{text}");
    assert!(text.contains("  map "), "{text}");
    assert!(!text.contains("_ed-"), "{text}");
    assert!(!text.contains("service-handle"), "{text}");
    // Sorted within a section.
    let section: Vec<&str> = text[builtins..prelude]
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut sorted = section.clone();
    sorted.sort_unstable();
    assert_eq!(section, sorted);
    // --norc read nothing and wrote no skeleton.
    assert!(!dir.join("cfg/ral/rc").exists());

    let batch = Command::new(env!("CARGO_BIN_EXE_ral"))
        .args(["-c", "help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&batch.stdout);
    assert!(text.contains("Builtins:"), "{text}");
    assert!(!text.contains("load-plugin"), "{text}");
}
