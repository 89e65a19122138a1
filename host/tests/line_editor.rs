//! The line editor a fish or nushell user expects (spec §15.2,
//! spec/host.md §4.2), through a real terminal: `ral` runs in a pty of 100
//! by 40, and what it writes is fed to a terminal model (`vt100`), so each
//! step reads the screen, the cursor and the colours of cells, as a person
//! would, rather than matching escape codes in the byte stream.
//!
//! Completion continues into a quoted directory it just inserted, a unique
//! command is followed by a space, `cd` offers directories only,
//! subcommands and flags of external programs come from shipped specs and
//! from a cached `--help`; Up searches history by the typed prefix; an
//! entry typed with a leading space is not recorded; a history hint is
//! taken with End, Ctrl-E, Ctrl-F and one word of it with Alt-F; an
//! unbound `$name` and a parse error are marked while typing.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rexpect::session::{spawn_command, PtySession};

const ROWS: u16 = 40;
const COLS: u16 = 100;
const PROMPT: &str = "❯ ";

const UP: &str = "\x1b[A";
const DOWN: &str = "\x1b[B";
const END: &str = "\x1b[F";
const CTRL_E: &str = "\x05";
const CTRL_F: &str = "\x06";
const CTRL_U: &str = "\x15";
const ALT_F: &str = "\x1bf";
const CTRL_L: &str = "\x0c";

fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ral-le-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for d in ["home", "cfg/ral", "cache", "bin"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    dir
}

/// `ral` at a terminal: its pty and the screen it has drawn.
struct Term {
    p: PtySession,
    screen: vt100::Parser,
}

impl Term {
    /// `ral` with `dir/home` as home and working directory, `dir/cfg` and
    /// `dir/cache` as its configuration and cache directories, and
    /// `dir/bin` first on `PATH`.
    fn start(dir: &Path) -> Term {
        let path = format!(
            "{}:{}",
            dir.join("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            &format!("stty cols {COLS} rows {ROWS} && exec \"$0\""),
            env!("CARGO_BIN_EXE_ral"),
        ])
        .env("TERM", "xterm")
        .env("XDG_CONFIG_HOME", dir.join("cfg"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("HOME", dir.join("home"))
        .env("PATH", path)
        .env_remove("NO_COLOR")
        .env_remove("RAL_INTERACTIVE_MODE")
        .current_dir(dir.join("home"));
        let p = spawn_command(cmd, Some(20_000)).expect("ral starts in a pty");
        let mut t = Term {
            p,
            screen: vt100::Parser::new(
                std::num::NonZeroU16::new(ROWS).unwrap(),
                std::num::NonZeroU16::new(COLS).unwrap(),
                0,
            ),
        };
        t.wait_line(|l| l.contains(PROMPT), "the first prompt");
        t
    }

    /// Feeds what `ral` has written so far to the screen.
    fn pump(&mut self) {
        let mut bytes = Vec::new();
        // rexpect hands each byte over as a `char`.
        while let Some(c) = self.p.try_read() {
            bytes.push(u8::try_from(u32::from(c)).unwrap_or(b'?'));
        }
        self.screen.process(&bytes);
    }

    fn send(&mut self, keys: &str) {
        self.p.send(keys).unwrap();
        self.p.flush().unwrap();
    }

    /// The whole screen, one line per row.
    fn contents(&self) -> String {
        self.screen.screen().contents()
    }

    /// The row the cursor is on.
    fn cursor_line(&self) -> String {
        let (row, _) = self.screen.screen().cursor_position();
        self.row(row)
    }

    fn row(&self, row: u16) -> String {
        self.screen
            .screen()
            .rows(0, COLS)
            .nth(usize::from(row))
            .unwrap_or_default()
    }

    /// Waits until `ok` holds of the screen.
    fn wait_screen(&mut self, ok: impl Fn(&str) -> bool, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            self.pump();
            let text = self.contents();
            if ok(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {what}; the screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `ok` holds of the cursor's row.
    fn wait_line(&mut self, ok: impl Fn(&str) -> bool, what: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            self.pump();
            let line = self.cursor_line();
            if ok(&line) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {what} at the cursor; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The cursor's row without a hint (grey text after the cursor).
    fn typed_line(&self) -> String {
        let screen = self.screen.screen();
        let (row, _) = screen.cursor_position();
        (0..COLS)
            .filter_map(|c| screen.cell(row, c))
            .filter(|cell| cell.fgcolor() != vt100::Color::Idx(8))
            .map(|cell| {
                if cell.has_contents() {
                    cell.contents().to_owned()
                } else {
                    " ".to_owned()
                }
            })
            .collect()
    }

    /// Waits until the text after the prompt on the cursor's row, hints
    /// left out, is `want`.
    fn expect_input(&mut self, want: &str) {
        let full = format!("{PROMPT}{want}");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            self.pump();
            if self.typed_line().trim_end().ends_with(full.trim_end()) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {full:?} typed at the cursor; the screen:\n{}",
                self.contents()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs an entry and waits for the next prompt.
    fn enter(&mut self, entry: &str, then: &str) {
        self.send(entry);
        self.send("\r");
        self.wait_screen(|s| s.contains(then), then);
        self.wait_line(
            |l| l.trim_end() == PROMPT.trim_end() || l.ends_with(PROMPT),
            "a prompt",
        );
    }

    /// The cursor's column.
    fn cursor_col(&self) -> u16 {
        self.screen.screen().cursor_position().1
    }

    /// The cell at the cursor's row and `col`.
    fn cell(&self, col: u16) -> (String, vt100::Color, bool) {
        let (row, _) = self.screen.screen().cursor_position();
        let cell = self.screen.screen().cell(row, col).unwrap();
        (cell.contents().to_owned(), cell.fgcolor(), cell.underline())
    }

    /// The column where `text` starts on the cursor's row.
    fn col_of(&self, text: &str) -> u16 {
        let line = self.cursor_line();
        let byte = line
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?} in {line:?}"));
        u16::try_from(line[..byte].chars().count()).unwrap()
    }

    fn quit(mut self) {
        self.send(CTRL_U);
        self.p.send_control('d').unwrap();
        self.p.exp_eof().unwrap();
    }
}

fn write_program(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("bin").join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn completion_goes_into_a_quoted_directory_and_cd_offers_directories() {
    let dir = scratch("quoted");
    std::fs::create_dir_all(dir.join("home/dir with space/inner")).unwrap();
    std::fs::write(dir.join("home/dir with space/alpha.txt"), "").unwrap();
    std::fs::write(dir.join("home/dir with space/beta.txt"), "").unwrap();
    std::fs::create_dir_all(dir.join("home/src")).unwrap();
    std::fs::write(dir.join("home/sample.txt"), "").unwrap();
    let mut t = Term::start(&dir);
    // The directory is quoted; the next Tab lists what is inside it.
    t.send("ls 'dir w\t");
    t.expect_input("ls 'dir with space/'");
    t.send("\t");
    t.wait_screen(
        |s| s.contains("alpha.txt") && s.contains("beta.txt") && s.contains("inner/"),
        "the quoted directory's entries",
    );
    t.send(CTRL_U);
    t.expect_input("");
    // `cd` offers only the directory, so `s` completes to it at once.
    t.send("cd s\t");
    t.expect_input("cd src/");
    t.send(CTRL_U);
    t.send("cd 'dir with space/'\t");
    t.expect_input("cd 'dir with space/inner/'");
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_unique_command_is_followed_by_a_space() {
    let dir = scratch("space");
    let mut t = Term::start(&dir);
    t.send("lengt\t");
    t.expect_input("length ");
    let col = t.col_of("length") + 7;
    assert_eq!(t.cursor_col(), col, "the cursor is after the space");
    t.enter("[1, 2]", "=> 2");
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn subcommands_and_flags_of_external_commands() {
    let dir = scratch("external");
    let mut t = Term::start(&dir);
    // Shipped specs: git and cargo.
    t.send("git ch\t");
    t.wait_screen(
        |s| s.contains("checkout") && s.contains("cherry-pick"),
        "git's subcommands",
    );
    t.expect_input("git che");
    t.send("c\t");
    t.expect_input("git checkout ");
    t.send(CTRL_U);
    t.send("cargo bu\t");
    t.expect_input("cargo build ");
    t.send("--rel\t");
    t.expect_input("cargo build --release ");
    t.send(CTRL_U);
    // Any other program: its `--help`, read once and cached on disk.
    write_program(
        &dir,
        "frob",
        "echo called >> \"$HOME/frob-calls\"\n\
         printf 'Usage: frob [OPTIONS]\\n\\nOptions:\\n  -a, --all        everything\\n      --almost     nearly\\n  -q, --quiet      hush\\n'",
    );
    t.send("frob --al\t");
    t.wait_screen(
        |s| s.contains("--all") && s.contains("--almost"),
        "frob's flags",
    );
    t.send(CTRL_U);
    t.send("frob --q\t");
    t.expect_input("frob --quiet ");
    t.send(CTRL_U);
    let calls = std::fs::read_to_string(dir.join("home/frob-calls")).unwrap();
    assert_eq!(calls.lines().count(), 1, "--help ran once");
    let cached = std::fs::read_dir(dir.join("cache/ral/help"))
        .unwrap()
        .count();
    assert_eq!(cached, 1);
    // And the real `ls`.
    t.send("ls --al\t");
    t.wait_screen(
        |s| s.contains("--all") && s.contains("--almost-all"),
        "ls's flags",
    );
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn up_searches_history_by_the_typed_prefix() {
    let dir = scratch("prefix");
    let mut t = Term::start(&dir);
    t.enter("echo alpha-one", "alpha-one");
    t.enter("echo beta-two", "beta-two");
    t.enter("echo alpha-three", "alpha-three");
    t.send("echo al");
    t.expect_input("echo al");
    t.send(UP);
    t.expect_input("echo alpha-three");
    // The cursor stays after the typed prefix, so Up goes on with it.
    let prefix_end = t.col_of("echo alpha-three") + 7;
    assert_eq!(t.cursor_col(), prefix_end);
    t.send(UP);
    t.expect_input("echo alpha-one");
    t.send(DOWN);
    t.expect_input("echo alpha-three");
    t.send("\r");
    t.wait_screen(|s| s.matches("\nalpha-three").count() == 2, "the entry run");
    t.wait_line(|l| l.ends_with(PROMPT), "a prompt");
    // From an empty line, every entry, newest first, the cursor at the end.
    t.send(UP);
    t.expect_input("echo alpha-three");
    t.send(UP);
    t.expect_input("echo beta-two");
    assert_eq!(t.cursor_col(), t.col_of("echo beta-two") + 13);
    t.send(DOWN);
    t.expect_input("echo alpha-three");
    t.send(DOWN);
    t.expect_input("");
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_entry_typed_with_a_leading_space_is_not_recorded() {
    let dir = scratch("space-history");
    let mut t = Term::start(&dir);
    t.enter("echo kept-entry", "kept-entry");
    t.enter(" echo secret-entry", "secret-entry");
    t.send(UP);
    t.expect_input("echo kept-entry");
    t.quit();
    let history = std::fs::read_to_string(dir.join("cfg/ral/history")).unwrap();
    assert!(history.contains("kept-entry"), "{history}");
    assert!(!history.contains("secret-entry"), "{history}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_hint_is_taken_with_end_ctrl_e_ctrl_f_and_a_word_with_alt_f() {
    let dir = scratch("hints");
    let mut t = Term::start(&dir);
    t.enter("echo hello wide world", "hello wide world");
    for (key, name) in [(END, "End"), (CTRL_E, "Ctrl-E"), (CTRL_F, "Ctrl-F")] {
        t.send(CTRL_L);
        t.wait_screen(|s| !s.contains("hello"), "a cleared screen");
        t.send("echo hel");
        t.wait_line(|l| l.contains("echo hello wide world"), "the hint");
        t.send(key);
        t.send("\r");
        // Taken: the whole line ran, not `echo hel`.
        let screen = t.wait_screen(
            |s| {
                s.lines()
                    .any(|l| matches!(l.trim_end(), "hel" | "hello wide world"))
            },
            &format!("the entry run after {name}"),
        );
        assert!(
            screen.lines().any(|l| l.trim_end() == "hello wide world"),
            "{name} did not take the hint:\n{screen}"
        );
        t.wait_line(|l| l.ends_with(PROMPT), "a prompt");
    }
    // Alt-F takes one word of it.
    t.send(CTRL_L);
    t.wait_screen(|s| !s.contains("hello"), "a cleared screen");
    t.send("echo hel");
    t.wait_line(|l| l.contains("echo hello wide world"), "the hint");
    t.send(ALT_F);
    t.send(ALT_F);
    t.send("\r");
    t.wait_screen(
        |s| s.lines().any(|l| l.trim_end() == "hello wide"),
        "two words of the hint",
    );
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unbound_names_and_parse_errors_are_marked_while_typing() {
    let dir = scratch("marks");
    let mut t = Term::start(&dir);
    t.enter("let known = 1", PROMPT);
    t.send("echo $known $nowhere");
    t.expect_input("echo $known $nowhere");
    let known = t.col_of("$known");
    let nowhere = t.col_of("$nowhere");
    assert_eq!(
        t.cell(known + 1).1,
        vt100::Color::Idx(6),
        "a bound name is cyan"
    );
    let (text, colour, _) = t.cell(nowhere + 1);
    assert_eq!(
        (text.as_str(), colour),
        ("n", vt100::Color::Idx(1)),
        "an unbound one red"
    );
    t.send(CTRL_U);
    t.send("echo ) done");
    t.expect_input("echo ) done");
    let at = t.col_of(")");
    let (text, colour, underline) = t.cell(at);
    assert_eq!(
        (text.as_str(), colour, underline),
        (")", vt100::Color::Idx(1), true)
    );
    // Still being typed is not an error.
    t.send(CTRL_U);
    t.send("echo [1, 2");
    t.expect_input("echo [1, 2");
    let at = t.col_of("[");
    assert!(!t.cell(at).2, "an open bracket is not marked");
    t.quit();
    let _ = std::fs::remove_dir_all(&dir);
}
