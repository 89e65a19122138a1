//! The interactive session (spec §15.1, §15.2): a line editor in front of
//! one persistent [`Shell`], every entry one [`Shell::run_turn`].
//!
//! - **Input.** rustyline edits the line (Emacs keys) and keeps a history
//!   file under `$XDG_STATE_HOME/ral/history` (or
//!   `~/.local/state/ral/history`), appending each session's new entries
//!   and dropping consecutive duplicates. While the entry has an open `{`,
//!   `[` or `(` or an unterminated string (the parser's `unclosed-delimiter`
//!   and `unclosed-string`), Enter adds a line instead of running it, and
//!   the whole multi-line entry is one turn. Without a terminal (`ral -i`
//!   on a pipe) lines are read plainly, with the same continuation rule.
//! - **Keys.** Ctrl-C at the prompt abandons the entry (all of its lines)
//!   and shows a fresh prompt; Ctrl-D on an empty line ends the session
//!   with status 0. Ctrl-C while an entry runs cancels that turn only (the
//!   `interrupted` failure, status 130), never the session.
//! - **Results.** `Unit` prints nothing, and neither does an entry that was
//!   one external command (its output already went to the terminal).
//!   Bytes are written as they are. Any other value is printed after `=> `
//!   by the interactive renderer (`ral_vm::display::render`), yellow on a
//!   terminal unless `NO_COLOR` is set. Parse and type errors and uncaught
//!   failures are ariadne diagnostics on standard error (an interrupted
//!   entry just says so); `exit N` ends the session with status N.
//! - **State.** Bindings and the working directory live in the shell, so
//!   they persist from entry to entry, including the bindings a failed
//!   entry made before it failed: nothing here says or implies a rollback,
//!   because there is none (seed 004). The prompt shows the working
//!   directory, `~` abbreviating the home directory.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use ral_host::{
    render_failure, Cause, Color, Failure, Reason, Settled, Shell, SourceMap, TurnReport,
    TurnRequest, Value, STATUS_PANICKED,
};
use ral_syntax::Code;
use ral_vm::display::{render, RenderOptions};
use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Editor, Helper};

use crate::interrupt::{Interrupts, Profile};
use crate::{clamp_status, no_color, PrintWarnings, EXIT_FAILURE, EXIT_OK};

/// The name every entry's diagnostics show.
const ENTRY_NAME: &str = "<stdin>";
/// The prefix of a printed value (§15.1).
const VALUE_PREFIX: &str = "=> ";
/// The most history entries kept.
const HISTORY_SIZE: usize = 10_000;
/// Columns assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// Runs the interactive session until Ctrl-D or `exit`; returns the status.
pub fn run(color: Color, ceiling: ral_host::Capabilities) -> u8 {
    let mut shell = Shell::default();
    shell.set_capability_ceiling(ceiling);
    // External programs run in the terminal's foreground process group, so
    // an interactive child (an editor, a pager) can read the terminal and
    // Ctrl-C reaches it directly (spec/deviations.md S5).
    shell.set_own_process_groups(false);
    let _interrupts = match Interrupts::install(shell.cancel_handle(), Profile::Interactive) {
        Ok(i) => Some(i),
        Err(e) => {
            eprintln!("ral: warning: cannot watch for Ctrl-C; it will end the session: {e}");
            None
        }
    };
    let mut editor = match new_editor() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("ral: cannot start the line editor: {e}");
            return EXIT_FAILURE;
        }
    };
    let mut history = History::open(&mut editor);
    let value_color = !no_color() && io::stdout().is_terminal();
    loop {
        let prompt = prompt(&shell);
        match editor.readline(&prompt) {
            Ok(entry) => {
                if entry.trim().is_empty() {
                    continue;
                }
                history.add(&mut editor, &entry);
                let width = editor
                    .dimensions()
                    .map_or(DEFAULT_WIDTH, |(cols, _)| usize::from(cols));
                if let Some(status) = run_entry(&mut shell, &entry, color, value_color, width) {
                    return status;
                }
            }
            // Ctrl-C at the prompt: the entry is abandoned, a new prompt
            // follows.
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => return EXIT_OK,
            Err(e) => {
                eprintln!("ral: cannot read input: {e}");
                return EXIT_FAILURE;
            }
        }
    }
}

/// Runs one entry as a turn and prints its outcome. `Some(status)` when the
/// entry ended the session (`exit`).
fn run_entry(
    shell: &mut Shell,
    entry: &str,
    color: Color,
    value_color: bool,
    width: usize,
) -> Option<u8> {
    let report = shell.run_turn(
        entry,
        TurnRequest {
            lifecycle: Box::new(PrintWarnings { color }),
            ..TurnRequest::new(ENTRY_NAME)
        },
    );
    let _ = io::stdout().flush();
    match report {
        TurnReport::Static { diagnostics } => eprint!("{}", diagnostics.render(color)),
        TurnReport::Ran {
            result,
            single_command,
            ..
        } => match result {
            Settled::Ok(value) if !single_command => print_value(&value, value_color, width),
            Settled::Ok(_) => {}
            Settled::Failed(f) => report_failure(&f, shell, color),
            Settled::Exit(n) => return Some(clamp_status(n)),
        },
    }
    None
}

/// Prints an entry's value (§15.1).
fn print_value(value: &Value, value_color: bool, width: usize) {
    let mut out = io::stdout().lock();
    let _ = match value {
        Value::Unit => Ok(()),
        Value::Bytes(bytes) => {
            let newline = if bytes.ends_with(b"\n") { "" } else { "\n" };
            out.write_all(bytes)
                .and_then(|()| out.write_all(newline.as_bytes()))
        }
        Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => {
            let opts = RenderOptions {
                width: width.saturating_sub(VALUE_PREFIX.len()).max(20),
                ..RenderOptions::default()
            };
            let text =
                render(value, &opts).replace('\n', &format!("\n{:1$}", "", VALUE_PREFIX.len()));
            if value_color {
                writeln!(out, "{VALUE_PREFIX}\x1b[33m{text}\x1b[0m")
            } else {
                writeln!(out, "{VALUE_PREFIX}{text}")
            }
        }
    };
    let _ = out.flush();
}

/// Prints an uncaught failure. The text says what failed and where; it
/// never claims the entry's bindings were undone, because they were not.
/// The one exception is the host's panic checkpoint, which really did put
/// the session back, and says so.
fn report_failure(f: &Failure, shell: &Shell, color: Color) {
    // The user pressed the key: where the run was matters less than that
    // it stopped.
    if f.reason == Reason::Cancelled(Cause::Interrupted) {
        eprintln!("interrupted (status {})", f.status);
        return;
    }
    eprint!("{}", render_failure(f, shell, color));
    if f.status == STATUS_PANICKED && f.message.starts_with("run panicked") {
        eprintln!(
            "note: this is a bug in ral, not in your input; the session is as it was \
             before this entry"
        );
    }
}

/// The prompt: the working directory, `~` for the home directory.
fn prompt(shell: &Shell) -> String {
    let cwd = match &shell.mobile().context.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("?")),
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    format!("{} ❯ ", abbreviate_home(&cwd, home.as_deref()))
}

/// `dir` with a leading `home` written as `~`.
fn abbreviate_home(dir: &Path, home: Option<&Path>) -> String {
    if let Some(home) = home.filter(|h| h.is_absolute() && h.parent().is_some()) {
        if let Ok(rest) = dir.strip_prefix(home) {
            return if rest.as_os_str().is_empty() {
                "~".to_owned()
            } else {
                format!("~/{}", rest.display())
            };
        }
    }
    dir.display().to_string()
}

/// Whether `src` is an entry still being typed: a delimiter or a string is
/// open at its end.
fn is_incomplete(src: &str) -> bool {
    let mut sources = SourceMap::new();
    let id = sources.add(ENTRY_NAME, src);
    let parsed = ral_syntax::parse(sources.text(id), id);
    parsed
        .diagnostics
        .iter()
        .any(|d| matches!(d.code, Code::UnclosedDelimiter | Code::UnclosedString))
}

/// The editor's helper: only the continuation rule.
struct Entry;

impl Validator for Entry {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if is_incomplete(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Completer for Entry {
    type Candidate = String;
}

impl Hinter for Entry {
    type Hint = String;
}

impl Highlighter for Entry {}

impl Helper for Entry {}

fn new_editor() -> rustyline::Result<Editor<Entry, FileHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(Entry));
    Ok(editor)
}

/// The history file, when there is a place for one.
struct History {
    path: Option<PathBuf>,
    /// A failure to save is reported once, not after every entry.
    warned: bool,
}

impl History {
    /// Finds the history file and loads what it holds.
    fn open(editor: &mut Editor<Entry, FileHistory>) -> History {
        let path = history_path(
            std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
            std::env::var_os("HOME").map(PathBuf::from),
        );
        if let Some(p) = path.as_deref().filter(|p| p.exists()) {
            if let Err(e) = editor.load_history(p) {
                eprintln!("ral: warning: cannot read history {}: {e}", p.display());
            }
        }
        History {
            path,
            warned: false,
        }
    }

    /// Records `entry` and appends it to the file at once, so a session
    /// that dies keeps what it typed.
    fn add(&mut self, editor: &mut Editor<Entry, FileHistory>, entry: &str) {
        let _ = editor.add_history_entry(entry);
        let Some(path) = &self.path else { return };
        let saved = match path.parent() {
            Some(dir) => std::fs::create_dir_all(dir).map_err(ReadlineError::from),
            None => Ok(()),
        }
        .and_then(|()| editor.append_history(path));
        if let Err(e) = saved {
            if !self.warned {
                eprintln!(
                    "ral: warning: cannot save history to {}: {e}",
                    path.display()
                );
                self.warned = true;
            }
        }
    }
}

/// `$XDG_STATE_HOME/ral/history` when that is absolute, else
/// `$HOME/.local/state/ral/history`; `None` without either.
fn history_path(xdg_state: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    let base = match xdg_state.filter(|p| p.is_absolute()) {
        Some(state) => state,
        None => home.filter(|h| h.is_absolute())?.join(".local/state"),
    };
    Some(base.join("ral").join("history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_delimiters_and_strings_continue_the_entry() {
        assert!(is_incomplete("let f = {"));
        assert!(is_incomplete("let xs = [1,\n2,"));
        assert!(is_incomplete("echo $[(1 + 2"));
        assert!(is_incomplete("echo 'abc"));
        assert!(is_incomplete("echo \"abc"));
        assert!(!is_incomplete("let f = { echo hi }"));
        assert!(!is_incomplete("echo 'abc'"));
        // An error that more lines cannot fix runs (and is reported).
        assert!(!is_incomplete("let = 3"));
        assert!(!is_incomplete("echo ]"));
    }

    #[test]
    fn home_is_abbreviated() {
        let home = Path::new("/home/ana");
        assert_eq!(abbreviate_home(Path::new("/home/ana"), Some(home)), "~");
        assert_eq!(
            abbreviate_home(Path::new("/home/ana/src/ral"), Some(home)),
            "~/src/ral"
        );
        assert_eq!(
            abbreviate_home(Path::new("/home/anabel"), Some(home)),
            "/home/anabel"
        );
        assert_eq!(abbreviate_home(Path::new("/tmp"), None), "/tmp");
        // A home of `/` abbreviates nothing.
        assert_eq!(
            abbreviate_home(Path::new("/tmp"), Some(Path::new("/"))),
            "/tmp"
        );
    }

    #[test]
    fn history_lives_under_the_state_directory() {
        assert_eq!(
            history_path(Some("/state".into()), Some("/home/ana".into())),
            Some(PathBuf::from("/state/ral/history"))
        );
        assert_eq!(
            history_path(Some("relative".into()), Some("/home/ana".into())),
            Some(PathBuf::from("/home/ana/.local/state/ral/history"))
        );
        assert_eq!(history_path(None, None), None);
    }
}
