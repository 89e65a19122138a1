//! The interactive session (spec §15): a frontend in front of one
//! persistent [`Shell`], every entry one [`Shell::run_turn`].
//!
//! - **Frontends** (§15.2). `readline` (the default) is rustyline with
//!   ral's completion, highlighting, hints, history, plugin keybindings
//!   and ghost text ([`editor`]). `minimal` reads standard input in
//!   canonical mode with a `> ` continuation prompt and none of those; it
//!   is forced by `TERM=dumb`, by `RAL_INTERACTIVE_MODE=minimal`, and by a
//!   standard input that is not a terminal (`ral -i` on a pipe, where no
//!   prompt is printed either). `structural` is not built: asking for it
//!   warns and falls back to `readline`. The flag wins over the rc file.
//! - **Entries.** While the entry has an open `{`, `[` or `(` or an
//!   unterminated string, Enter adds a line; the whole entry is one turn.
//!   Ctrl-C at the prompt abandons the entry; Ctrl-D on an empty line ends
//!   the session with status 0; Ctrl-C while an entry runs cancels that
//!   turn only. `exit N` ends the session with status N.
//! - **Results** (§15.1). `Unit` prints nothing, nor does an entry that was
//!   one external command; bytes are written as they are; any other value
//!   is printed after the theme's prefix (`=> `) by the renderer
//!   (`ral_vm::display::render`), in the theme's colour (yellow) on a
//!   terminal unless `NO_COLOR` is set.
//! - **Startup** (§15.3, [`startup`]): login profiles, then the rc file,
//!   whose result configures the prompt, theme, editor and plugins.
//! - **Hooks** (§15.6): `pre-exec` before an entry, `post-exec` after it,
//!   `chpwd` when it changed the directory, `prompt` on every prompt.
//! - **State.** Bindings and the working directory live in the shell and
//!   persist from entry to entry, including those a failed entry made
//!   before it failed: nothing here says or implies a rollback (seed 004).

mod editor;
mod startup;

use std::io::{self, BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ral_host::interactive::Interactive;
use ral_host::{
    render_failure, Cause, Color, Failure, Reason, Settled, Shell, SourceMap, TurnIo, TurnReport,
    TurnRequest, Value, STATUS_PANICKED,
};
use ral_syntax::Code;
use ral_vm::display::{render, RenderOptions};

use crate::cli::{ReplOptions, Surface};
use crate::interrupt::{Interrupts, Profile};
use crate::{clamp_status, no_color, PrintWarnings, EXIT_FAILURE, EXIT_OK};

/// The name every entry's diagnostics show.
const ENTRY_NAME: &str = "<stdin>";
/// Columns assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;
/// The prompt when a prompt block fails.
const FALLBACK_PROMPT: &str = "❯ ";

/// What the rc file set (spec §15.3), with the defaults.
#[derive(Clone, Debug)]
pub struct Settings {
    pub prompt: Option<Value>,
    pub value_prefix: String,
    /// An SGR colour code, or `None` for no colour.
    pub value_color: Option<&'static str>,
    pub vi: bool,
    pub bell: bool,
    pub surface: Option<Surface>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            prompt: None,
            value_prefix: "=> ".to_owned(),
            value_color: Some("33"),
            vi: false,
            bell: false,
            surface: None,
        }
    }
}

/// The session's shared parts: the frontend's callbacks (completion,
/// hints, keybindings) reach the shell between entries.
pub struct Session {
    pub shell: std::sync::Mutex<Shell>,
    pub inter: Arc<Interactive>,
    pub color: Color,
    /// Whether values and the line are coloured.
    pub paint: bool,
    /// The last failure of the prompt block that was reported: the same
    /// failure again falls back quietly, so a broken prompt warns once
    /// rather than before every prompt.
    pub prompt_failure: std::sync::Mutex<Option<String>>,
}

impl Session {
    pub fn shell(&self) -> std::sync::MutexGuard<'_, Shell> {
        self.shell
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `$XDG_CONFIG_HOME/ral` when that is absolute, else `~/.config/ral`.
pub fn config_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
    let home = std::env::var_os("HOME").map(PathBuf::from);
    config_dir_from(xdg, home)
}

fn config_dir_from(xdg: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    match xdg.filter(|p| p.is_absolute()) {
        Some(x) => Some(x.join("ral")),
        None => Some(
            home.filter(|h| h.is_absolute())?
                .join(".config")
                .join("ral"),
        ),
    }
}

/// Runs the interactive session until Ctrl-D or `exit`; returns the status.
pub fn run(opts: &ReplOptions, color: Color, ceiling: ral_host::Capabilities) -> u8 {
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
    let config = config_dir();
    let inter = Interactive::new(config.clone());
    if let Err(e) = inter.install(&mut shell) {
        eprintln!("ral: warning: plugins are unavailable: {e}");
    }
    let paint = !no_color() && io::stdout().is_terminal();
    let session = Arc::new(Session {
        shell: std::sync::Mutex::new(shell),
        inter,
        color,
        paint,
        prompt_failure: std::sync::Mutex::new(None),
    });
    let mut settings = Settings::default();
    if !opts.norc {
        startup::run(&session, opts.login, config.as_deref(), &mut settings);
    }
    let surface = choose_surface(opts.surface.or(settings.surface));
    match surface {
        Surface::Minimal => minimal(&session, &settings),
        Surface::Readline | Surface::Structural => {
            match editor::run(&session, &settings, config.as_deref()) {
                Ok(status) => status,
                Err(e) => {
                    eprintln!("ral: cannot start the line editor ({e}); using the minimal one");
                    minimal(&session, &settings)
                }
            }
        }
    }
}

/// The frontend to use (see the module docs).
fn choose_surface(wanted: Option<Surface>) -> Surface {
    let forced = std::env::var("RAL_INTERACTIVE_MODE").ok();
    match forced.as_deref() {
        Some("minimal") => return Surface::Minimal,
        Some("readline" | "structural" | "") | None => {}
        Some(other) => eprintln!(
            "ral: warning: RAL_INTERACTIVE_MODE={other} is not minimal, readline or \
             structural; choosing by the terminal"
        ),
    }
    let dumb = std::env::var("TERM").is_ok_and(|t| t == "dumb");
    if dumb || !io::stdin().is_terminal() {
        return Surface::Minimal;
    }
    match wanted.unwrap_or(Surface::Readline) {
        Surface::Structural => {
            eprintln!("ral: warning: this build has no structural surface; using readline");
            Surface::Readline
        }
        s => s,
    }
}

/// The minimal frontend: canonical reads, `> ` for continuation lines.
fn minimal(session: &Session, settings: &Settings) -> u8 {
    let stdin = io::stdin();
    let show = stdin.is_terminal();
    let mut lines = stdin.lock();
    loop {
        if show {
            let p = prompt(session, settings);
            print!("{p}");
            let _ = io::stdout().flush();
        }
        let mut entry = String::new();
        loop {
            let mut line = String::new();
            match lines.read_line(&mut line) {
                Ok(0) if entry.is_empty() => return EXIT_OK,
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("ral: cannot read input: {e}");
                    return EXIT_FAILURE;
                }
            }
            entry.push_str(&line);
            if !is_incomplete(entry.trim_end_matches('\n')) {
                break;
            }
            if show {
                print!("> ");
                let _ = io::stdout().flush();
            }
        }
        let entry = entry.trim_end_matches('\n');
        if entry.trim().is_empty() {
            continue;
        }
        if let Some(status) = run_entry(session, settings, entry, DEFAULT_WIDTH) {
            return status;
        }
    }
}

/// Runs one entry as a turn, with its hooks, and prints its outcome.
/// `Some(status)` when the entry ended the session (`exit`).
pub fn run_entry(session: &Session, settings: &Settings, entry: &str, width: usize) -> Option<u8> {
    let mut shell = session.shell();
    let inter = session.inter.clone();
    report(inter.pre_exec(&mut shell, entry));
    let before = cwd(&shell);
    let turn = shell.run_turn(
        entry,
        TurnRequest {
            lifecycle: Box::new(PrintWarnings {
                color: session.color,
            }),
            ..TurnRequest::new(ENTRY_NAME)
        },
    );
    let _ = io::stdout().flush();
    let mut ended = None;
    let status = turn.status();
    match turn {
        TurnReport::Static { diagnostics } => eprint!("{}", diagnostics.render(session.color)),
        TurnReport::Ran {
            result,
            single_command,
            ..
        } => match result {
            Settled::Ok(value) if !single_command => print_value(&value, settings, session, width),
            Settled::Ok(_) => {}
            Settled::Failed(f) => report_failure(&f, &shell, session.color),
            Settled::Exit(n) => ended = Some(clamp_status(n)),
        },
    }
    report(inter.post_exec(&mut shell, entry, status));
    let after = cwd(&shell);
    if after != before {
        report(inter.chpwd(
            &mut shell,
            &before.display().to_string(),
            &after.display().to_string(),
        ));
    }
    report(inter.take_notices());
    ended
}

/// Prints hook failures and notices.
pub fn report(msgs: Vec<String>) {
    for m in msgs {
        eprintln!("ral: {m}");
    }
}

/// Prints an entry's value (§15.1).
fn print_value(value: &Value, settings: &Settings, session: &Session, width: usize) {
    let mut out = io::stdout().lock();
    let prefix = settings.value_prefix.as_str();
    let prefix_cols = prefix.chars().count();
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
                width: width.saturating_sub(prefix_cols).max(20),
                ..RenderOptions::default()
            };
            let text = render(value, &opts).replace('\n', &format!("\n{:1$}", "", prefix_cols));
            match settings.value_color.filter(|_| session.paint) {
                Some(sgr) => writeln!(out, "{prefix}\x1b[{sgr}m{text}\x1b[0m"),
                None => writeln!(out, "{prefix}{text}"),
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

/// The session's logical working directory.
fn cwd(shell: &Shell) -> PathBuf {
    match &shell.mobile().context.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from("?")),
    }
}

/// The prompt: the rc file's prompt block (its value's display form, or
/// its output when it returns `()`), else the working directory with `~`
/// for home; then the plugins' prompt hooks (§15.3, §15.6).
pub fn prompt(session: &Session, settings: &Settings) -> String {
    let mut shell = session.shell();
    let base = match &settings.prompt {
        None => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            format!("{} ❯ ", abbreviate_home(&cwd(&shell), home.as_deref()))
        }
        Some(block) => {
            let (settled, captured) = shell.call_value(block.clone(), Vec::new(), TurnIo::Capture);
            let mut reported = session
                .prompt_failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match settled {
                Settled::Ok(v) => {
                    *reported = None;
                    match v {
                        Value::Unit => {
                            let out = captured.map(|c| c.stdout).unwrap_or_default();
                            let text = String::from_utf8_lossy(&out).into_owned();
                            text.strip_suffix('\n').map(str::to_owned).unwrap_or(text)
                        }
                        v => ral_vm::display::to_text(&v),
                    }
                }
                Settled::Failed(f) => {
                    // Once per failure: the same failure at the next
                    // prompt falls back quietly.
                    if reported.as_deref() != Some(f.message.as_str()) {
                        eprintln!(
                            "ral: the prompt failed: {}; using `{}` until it works",
                            f.message,
                            FALLBACK_PROMPT.trim_end()
                        );
                        *reported = Some(f.message.clone());
                    }
                    FALLBACK_PROMPT.to_owned()
                }
                Settled::Exit(_) => FALLBACK_PROMPT.to_owned(),
            }
        }
    };
    let inter = session.inter.clone();
    let (p, reports) = inter.prompt(&mut shell, base);
    report(reports);
    p
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
pub fn is_incomplete(src: &str) -> bool {
    let mut sources = SourceMap::new();
    let id = sources.add(ENTRY_NAME, src);
    let parsed = ral_syntax::parse(sources.text(id), id);
    parsed
        .diagnostics
        .iter()
        .any(|d| matches!(d.code, Code::UnclosedDelimiter | Code::UnclosedString))
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
        assert_eq!(
            abbreviate_home(Path::new("/tmp"), Some(Path::new("/"))),
            "/tmp"
        );
    }

    #[test]
    fn the_configuration_directory() {
        assert_eq!(
            config_dir_from(Some("/cfg".into()), Some("/home/ana".into())),
            Some(PathBuf::from("/cfg/ral"))
        );
        assert_eq!(
            config_dir_from(Some("relative".into()), Some("/home/ana".into())),
            Some(PathBuf::from("/home/ana/.config/ral"))
        );
        assert_eq!(config_dir_from(None, None), None);
    }
}
