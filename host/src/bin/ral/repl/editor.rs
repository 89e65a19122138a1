//! The `readline` frontend (spec §15.2): rustyline, with ral's own
//! completion, colouring, hints, history and plugin keybindings.
//!
//! rustyline (already the REPL's editor) is kept over reedline because its
//! `ConditionalEventHandler` lets host code decide, per key press and with
//! the buffer in view, whether to act or fall through to the editor's own
//! action: exactly a guarded keybinding (§15.6). Its hinter runs after
//! every change, which is where `buffer-change` hooks run, and its file
//! history appends under a lock. What it does, this module does not
//! re-do: line editing, the completion list, the history file, leaving out
//! entries typed with a leading space (`history_ignore_space`), taking a
//! hint (`Cmd::CompleteHint`).
//!
//! - **Completion** ([`ral_host::ide::complete`]): variables after `$`,
//!   record fields after `$name[` from the binding's inferred type,
//!   commands (builtins, prelude, bindings, aliases, keywords, `PATH`),
//!   paths from the logical working directory, read whole when quoted
//!   (`'dir with space/'` then Tab lists that directory); the arguments of
//!   a command from its completion spec ([`external`]: subcommands, flags,
//!   directories only after `cd`, a generator's words, or what its
//!   `--help` lists). Fuzzy, ties alphabetical; Tab extends to the common
//!   prefix and lists the candidates at once; a unique candidate that
//!   finishes its word (not a directory) is followed by a space.
//! - **Colour** ([`ral_host::ide::tokens`], the real lexer): commands blue,
//!   an unknown command red, keywords magenta, strings green, variables
//!   cyan, numbers yellow, comments grey, refused text red underlined;
//!   while typing, a `$name` bound nowhere red and a parse error red
//!   underlined ([`ral_host::ide::tokens::problems`]); a plugin's
//!   `_ed-highlight` spans on top.
//! - **Hints**: a plugin's ghost text (`_ed-ghost`), else the newest
//!   history entry the line is a prefix of, in grey. At the end of the
//!   line Right, End, Ctrl-E and Ctrl-F take it, Alt-F one word of it.
//! - **History**: `history` in the configuration directory (the legacy
//!   `~/.ral_history` when only that exists), appended entry by entry
//!   under rustyline's file lock, consecutive duplicates dropped, entries
//!   typed with a leading space left out. Up and Down search the entries
//!   that start with the text left of the cursor (rustyline's
//!   `HistorySearchBackward`: the cursor stays where the typed text ends,
//!   so Up again goes on with the same prefix); from an empty line they
//!   walk every entry, the cursor at the end ([`HistorySearch`] tells the
//!   two apart). In a multi-line entry they move between its lines first.

use std::borrow::Cow;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ral_host::ide::{self, Class};
use ral_host::interactive::{Key, KeyOutcome};
use rustyline::completion::{Completer, Pair};
use rustyline::config::{BellStyle, CompletionType, EditMode};
use rustyline::error::ReadlineError;
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::{Hinter, HistoryHinter};
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, Helper,
    KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};

use super::external::Arguments;
use super::{is_incomplete, prompt, report, run_entry, Session, Settings, DEFAULT_WIDTH};
use crate::{EXIT_FAILURE, EXIT_OK};

/// The most history entries kept.
const HISTORY_SIZE: usize = 10_000;

type RalEditor = Editor<RalHelper, FileHistory>;

/// Runs the session with the line editor; `Err` when it cannot start.
pub fn run(
    session: &Arc<Session>,
    settings: &Settings,
    config: Option<&Path>,
) -> rustyline::Result<u8> {
    let cfg = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .completion_show_all_if_ambiguous(true)
        .edit_mode(if settings.vi {
            EditMode::Vi
        } else {
            EditMode::Emacs
        })
        .bell_style(if settings.bell {
            BellStyle::Audible
        } else {
            BellStyle::None
        })
        .build();
    let mut editor: RalEditor = Editor::with_config(cfg)?;
    let accepted = Arc::new(Mutex::new(None));
    let may_run = session.shell().capability_ceiling().is_unrestricted();
    let arguments = Arguments::new(
        config.map(Path::to_path_buf),
        super::external::cache_dir(),
        may_run,
    );
    editor.set_helper(Some(RalHelper {
        session: session.clone(),
        hinter: HistoryHinter::new(),
        executables: Mutex::new(None),
        arguments,
    }));
    let mut history = History::open(&mut editor, config);
    let search = Arc::new(Mutex::new(HistorySearch::default()));
    let mut bound: (u64, HashSet<Key>) = (u64::MAX, HashSet::new());
    let keys = KeyContext {
        session: session.clone(),
        accepted: accepted.clone(),
        search: search.clone(),
    };
    for key in EDITOR_KEYS {
        bound.1.insert(*key);
        bind(&mut editor, &keys, *key);
    }
    loop {
        bind_keys(&mut editor, session, &keys, &mut bound);
        let hist: Vec<String> = editor.history().iter().cloned().collect();
        lock(&search).reset(hist.clone());
        let keymap = if settings.vi { "vi" } else { "emacs" };
        session.inter.set_editor_context(Arc::new(hist), keymap);
        let pushed = session.inter.new_line();
        let prompt = prompt(session, settings);
        let read = match &pushed {
            Some(text) => editor.readline_with_initial(&prompt, (text, "")),
            None => editor.readline(&prompt),
        };
        report(session.inter.take_notices());
        if let Some(h) = editor.helper() {
            report(h.arguments.take_notices());
        }
        match read {
            Ok(line) => {
                // A keybinding that rewrote the line and accepted it.
                let entry = lock(&accepted).take().unwrap_or(line);
                if entry.trim().is_empty() {
                    continue;
                }
                history.add(&mut editor, &entry);
                let width = editor
                    .dimensions()
                    .map_or(DEFAULT_WIDTH, |(cols, _)| usize::from(cols));
                if let Some(status) = run_entry(session, settings, &entry, width) {
                    return Ok(status);
                }
            }
            // Ctrl-C at the prompt: the entry is abandoned, a new prompt
            // follows.
            Err(ReadlineError::Interrupted) => {}
            Err(ReadlineError::Eof) => return Ok(EXIT_OK),
            Err(e) => {
                eprintln!("ral: cannot read input: {e}");
                return Ok(EXIT_FAILURE);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The editor's helper: completion, hints, colour, continuation.
struct RalHelper {
    session: Arc<Session>,
    hinter: HistoryHinter,
    /// The executables on `PATH`, for the `PATH` value they came from.
    executables: Mutex<Option<(String, Arc<Vec<String>>)>>,
    /// The arguments of commands (specs, `--help`, generators).
    arguments: Arguments,
}

impl RalHelper {
    fn executables(&self, path: &str) -> Arc<Vec<String>> {
        let mut cache = lock(&self.executables);
        match &*cache {
            Some((p, list)) if p == path => list.clone(),
            _ => {
                let list = Arc::new(ide::executables(path));
                *cache = Some((path.to_owned(), list.clone()));
                list
            }
        }
    }

    /// Whether a bare command head names something that runs.
    fn resolves(&self, name: &str, names: &Names) -> bool {
        names.bindings.iter().any(|n| n == name)
            || names.aliases.iter().any(|n| n == name)
            || names.builtins.iter().any(|n| n == name)
            || self
                .executables(&names.path)
                .binary_search_by(|e| e.as_str().cmp(name))
                .is_ok()
    }

    /// Whether `name` is one of the session's own commands (a binding, an
    /// alias, a builtin), whose `--help` is not a program's.
    fn is_ral_name(&self, name: &str, names: &Names) -> bool {
        names
            .bindings
            .binary_search_by(|n| n.as_str().cmp(name))
            .is_ok()
            || names.aliases.iter().any(|n| n == name)
            || names.builtins.iter().any(|n| n == name)
    }

    fn names(&self) -> Names {
        let shell = self.session.shell();
        let mut bindings: Vec<String> = shell.names().map(str::to_owned).collect();
        bindings.sort();
        Names {
            bindings,
            aliases: shell.alias_names(),
            builtins: builtins(),
            cwd: super::cwd(&shell),
            path: shell.mobile().context.var("PATH").unwrap_or_default(),
        }
    }
}

/// What completion and colouring read of the session.
struct Names {
    bindings: Vec<String>,
    aliases: Vec<String>,
    builtins: Vec<String>,
    cwd: PathBuf,
    path: String,
}

/// The public builtin and prelude names this host installs.
fn builtins() -> Vec<String> {
    ral_types::builtin_table()
        .iter()
        .filter(|b| !b.name.starts_with('_') && b.layer != ral_types::Layer::Exarch)
        .map(|b| b.name.to_owned())
        .collect()
}

impl Completer for RalHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let site = ide::site(line, pos);
        let names = self.names();
        let executables = self.executables(&names.path);
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let session = self.session.clone();
        let fields = move |var: &str, path: &[String]| -> Vec<String> {
            let shell = session.shell();
            shell
                .type_env()
                .get(var)
                .map(|e| ide::scheme_fields(&e.scheme, path))
                .unwrap_or_default()
        };
        let arguments = |inv: &ide::Invocation, typed: &str| {
            let ral_name = self.is_ral_name(&inv.head, &names);
            self.arguments
                .offers(inv, typed, &names.cwd, &names.path, ral_name)
        };
        let env = ide::Env {
            bindings: &names.bindings,
            aliases: &names.aliases,
            executables: &executables,
            builtins: &names.builtins,
            cwd: &names.cwd,
            home: home.as_deref(),
            fields: &fields,
            arguments: Some(&arguments),
        };
        let found = ide::candidates(&site, &env);
        // A unique candidate that finishes its word is followed by a
        // space, unless one is already there.
        let space = found.len() == 1
            && found.iter().all(|c| c.complete)
            && !line
                .get(pos..)
                .unwrap_or("")
                .starts_with(char::is_whitespace);
        let pairs = found
            .into_iter()
            .map(|c| Pair {
                display: c.display,
                replacement: if space {
                    format!("{} ", c.replacement)
                } else {
                    c.replacement
                },
            })
            .collect();
        Ok((site.start, pairs))
    }
}

impl Hinter for RalHelper {
    type Hint = String;

    fn hint(&self, line: &str, pos: usize, ctx: &rustyline::Context<'_>) -> Option<String> {
        {
            let mut shell = self.session.shell();
            let msgs = self.session.inter.buffer_change(&mut shell, line, pos);
            // Shown before the next prompt: printing now would tear the
            // line being edited.
            self.session.inter.note(msgs);
        }
        if let Some(g) = self.session.inter.editor_view().ghost {
            return Some(g);
        }
        self.hinter.hint(line, pos, ctx)
    }
}

/// The SGR code of a class.
fn sgr(class: Class) -> &'static str {
    match class {
        Class::Keyword => "35",
        Class::Command => "1;34",
        Class::PathCommand => "4;34",
        Class::Variable | Class::Binder => "36",
        Class::String => "32",
        Class::Escape => "1;32",
        Class::Number | Class::Tag => "33",
        Class::Comment => "90",
        Class::Operator => "1",
        Class::Error => "4;31",
    }
}

/// The SGR code of a plugin's highlight style.
fn style_sgr(style: &str) -> Option<&'static str> {
    Some(match style {
        "bold" => "1",
        "dim" => "2",
        "underline" => "4",
        "reverse" => "7",
        "red" => "31",
        "green" => "32",
        "yellow" => "33",
        "blue" => "34",
        "magenta" => "35",
        "cyan" => "36",
        "white" => "37",
        "black" => "30",
        _ => return None,
    })
}

/// `line` with ANSI colours; the display width is unchanged.
fn paint(line: &str, pieces: &[(usize, usize, &str)]) -> String {
    let mut out = String::with_capacity(line.len() * 2);
    let mut at = 0;
    for &(s, e, code) in pieces {
        if s < at || e > line.len() || s >= e {
            continue;
        }
        out.push_str(&line[at..s]);
        out.push_str("\x1b[");
        out.push_str(code);
        out.push('m');
        out.push_str(&line[s..e]);
        out.push_str("\x1b[0m");
        at = e;
    }
    out.push_str(&line[at..]);
    out
}

impl Highlighter for RalHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.session.paint || line.is_empty() {
            return Cow::Borrowed(line);
        }
        let names = self.names();
        let parsed = ral_syntax::parse(line, ral_syntax::SourceId(0));
        let mut pieces: Vec<(usize, usize, &str)> = Vec::new();
        for p in ide::tokens::classify_parsed(line, &parsed.program) {
            let (s, e) = (p.span.start as usize, p.span.end as usize);
            let code = match p.class {
                Class::Command => {
                    let word = line.get(s..e).unwrap_or("");
                    if self.resolves(word, &names) || ral_syntax::ast::is_reserved(word) {
                        sgr(Class::Command)
                    } else {
                        "31"
                    }
                }
                c => sgr(c),
            };
            pieces.push((s, e, code));
        }
        // What is wrong so far replaces what it covers: an unbound name in
        // red, a parse error red and underlined.
        let env = self.session.shell().type_env().clone();
        for (span, problem) in ide::tokens::problems(line, &parsed, &env) {
            let (s, e) = (span.start as usize, span.end as usize);
            let code = match problem {
                ide::tokens::Problem::Unbound => "31",
                ide::tokens::Problem::Syntax => "4;31",
            };
            pieces.retain(|(ps, pe, _)| *pe <= s || *ps >= e);
            pieces.push((s, e, code));
        }
        // A plugin's spans (in characters) replace what they cover.
        for (cs, ce, style) in self.session.inter.editor_view().highlights {
            let Some(code) = style_sgr(&style) else {
                continue;
            };
            let byte = |n: usize| line.char_indices().nth(n).map_or(line.len(), |(i, _)| i);
            let (s, e) = (byte(cs), byte(ce));
            pieces.retain(|(ps, pe, _)| *pe <= s || *ps >= e);
            pieces.push((s, e, code));
        }
        pieces.sort_by_key(|(s, _, _)| *s);
        Cow::Owned(paint(line, &pieces))
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.session.paint {
            Cow::Owned(format!("\x1b[90m{hint}\x1b[0m"))
        } else {
            Cow::Borrowed(hint)
        }
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        self.session.paint && kind != CmdKind::MoveCursor
    }
}

impl Validator for RalHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if is_incomplete(ctx.input()) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for RalHelper {}

/// rustyline's spelling of a key.
fn key_event(key: Key) -> KeyEvent {
    let plain = |c: KeyCode| KeyEvent(c, Modifiers::NONE);
    match key {
        Key::Tab => plain(KeyCode::Tab),
        Key::Enter => plain(KeyCode::Enter),
        Key::Escape => plain(KeyCode::Esc),
        Key::Up => plain(KeyCode::Up),
        Key::Down => plain(KeyCode::Down),
        Key::Left => plain(KeyCode::Left),
        Key::Right => plain(KeyCode::Right),
        Key::Home => plain(KeyCode::Home),
        Key::End => plain(KeyCode::End),
        Key::Delete => plain(KeyCode::Delete),
        Key::Backspace => plain(KeyCode::Backspace),
        Key::F(n) => plain(KeyCode::F(n)),
        Key::Char(c) => KeyEvent::new(c, Modifiers::NONE),
        Key::Ctrl(c) => KeyEvent::ctrl(c),
        Key::Alt(c) => KeyEvent::alt(c),
    }
}

/// The keys this editor gives more than rustyline's meaning (see the
/// module docs); a plugin's binding of one is asked first.
const EDITOR_KEYS: &[Key] = &[
    Key::Up,
    Key::Down,
    Key::End,
    Key::Ctrl('e'),
    Key::Ctrl('f'),
    Key::Alt('f'),
];

/// What every key handler shares.
#[derive(Clone)]
struct KeyContext {
    session: Arc<Session>,
    accepted: Arc<Mutex<Option<String>>>,
    search: Arc<Mutex<HistorySearch>>,
}

fn bind(editor: &mut RalEditor, keys: &KeyContext, key: Key) {
    let handler = KeyHandler {
        key,
        keys: keys.clone(),
    };
    editor.bind_sequence(key_event(key), EventHandler::Conditional(Box::new(handler)));
}

/// Binds every key a plugin binds, when the table changed.
fn bind_keys(
    editor: &mut RalEditor,
    session: &Arc<Session>,
    keys: &KeyContext,
    bound: &mut (u64, HashSet<Key>),
) {
    let (epoch, plugin_keys) = session.inter.bound_keys();
    if epoch == bound.0 {
        return;
    }
    bound.0 = epoch;
    for key in plugin_keys {
        if bound.1.insert(key) {
            bind(editor, keys, key);
        }
    }
}

/// One bound key: asks the plugins' table, then this editor's own meaning
/// of the key, else lets rustyline act.
struct KeyHandler {
    key: Key,
    keys: KeyContext,
}

impl ConditionalEventHandler for KeyHandler {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let (line, pos) = (ctx.line().to_owned(), ctx.pos());
        let session = &self.keys.session;
        let outcome: Option<KeyOutcome> = {
            let mut shell = session.shell();
            session.inter.keybinding(&mut shell, self.key, &line, pos)
        };
        if let Some(outcome) = outcome {
            session.inter.note(outcome.reports);
            if outcome.accept {
                *lock(&self.keys.accepted) = Some(outcome.text);
                return Some(Cmd::AcceptLine);
            }
            return Some(edit_command(&line, pos, &outcome.text, outcome.cursor));
        }
        let at_end = pos == line.len();
        let hint = ctx.hint_text().filter(|h| at_end && !h.is_empty());
        match self.key {
            Key::End | Key::Ctrl('e' | 'f') => hint.map(|_| Cmd::CompleteHint),
            Key::Alt('f') => hint.map(|h| Cmd::Insert(1, first_word(h).to_owned())),
            Key::Up => {
                if line.get(..pos).unwrap_or("").contains('\n') {
                    return None;
                }
                Some(lock(&self.keys.search).older(&line))
            }
            Key::Down => {
                if line.get(pos..).unwrap_or("").contains('\n') {
                    return None;
                }
                Some(lock(&self.keys.search).newer(&line))
            }
            Key::Tab
            | Key::Enter
            | Key::Escape
            | Key::Left
            | Key::Right
            | Key::Home
            | Key::Delete
            | Key::Backspace
            | Key::F(_)
            | Key::Char(_)
            | Key::Ctrl(_)
            | Key::Alt(_) => None,
        }
    }
}

/// The first word of a hint, with the blanks before it: what Alt-F takes.
fn first_word(hint: &str) -> &str {
    let blanks = hint.len() - hint.trim_start().len();
    let word = hint[blanks..]
        .find(char::is_whitespace)
        .map_or(hint.len(), |i| blanks + i);
    &hint[..word]
}

/// Whether Up and Down are walking the whole history (they began on an
/// empty line) rather than the entries that start with the typed prefix.
#[derive(Default)]
struct HistorySearch {
    /// The history's entries.
    entries: HashSet<String>,
    /// The walk began on an empty line.
    plain: bool,
}

impl HistorySearch {
    /// A new prompt: the history as it now is, no walk.
    fn reset(&mut self, entries: Vec<String>) {
        self.entries = entries.into_iter().collect();
        self.plain = false;
    }

    /// Up on a line with no line break before the cursor.
    fn older(&mut self, line: &str) -> Cmd {
        if line.is_empty() {
            self.plain = true;
        } else if !(self.plain && self.entries.contains(line)) {
            // Typed or edited text: search by it.
            self.plain = false;
        }
        if self.plain {
            Cmd::PreviousHistory
        } else {
            Cmd::HistorySearchBackward
        }
    }

    /// Down on a line with no line break after the cursor.
    fn newer(&mut self, line: &str) -> Cmd {
        if self.plain && self.entries.contains(line) {
            Cmd::NextHistory
        } else {
            self.plain = false;
            Cmd::HistorySearchForward
        }
    }
}

/// The one editor command that turns `line` (cursor `pos`) into `text`
/// (cursor `cursor`): nothing, a replacement of the text left of the
/// cursor when the right side is unchanged (the cursor lands where the
/// handler put it), else the whole line (the cursor goes to its end).
fn edit_command(line: &str, pos: usize, text: &str, cursor: usize) -> Cmd {
    if line == text && pos == cursor {
        return Cmd::Noop;
    }
    let old_right = line.get(pos..).unwrap_or("");
    match (text.get(cursor..), text.get(..cursor)) {
        (Some(right), Some(left)) if right == old_right => {
            Cmd::Replace(Movement::BeginningOfLine, Some(left.to_owned()))
        }
        _ => Cmd::Replace(Movement::WholeLine, Some(text.to_owned())),
    }
}

/// The history file, when there is a place for one.
struct History {
    path: Option<PathBuf>,
    /// A failure to save is reported once, not after every entry.
    warned: bool,
}

impl History {
    /// Finds the history file and loads what it holds.
    fn open(editor: &mut RalEditor, config: Option<&Path>) -> History {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path = history_path(config, home.as_deref());
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
    fn add(&mut self, editor: &mut RalEditor, entry: &str) {
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

/// `CONFIG/history`, or the legacy `~/.ral_history` when only it exists.
fn history_path(config: Option<&Path>, home: Option<&Path>) -> Option<PathBuf> {
    let current = config.map(|c| c.join("history"));
    let legacy = home
        .filter(|h| h.is_absolute())
        .map(|h| h.join(".ral_history"));
    match (current, legacy) {
        (Some(c), Some(l)) if !c.exists() && l.exists() => Some(l),
        (Some(c), _) => Some(c),
        (None, l) => l,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_command_per_handler_outcome() {
        assert_eq!(edit_command("ab", 1, "ab", 1), Cmd::Noop);
        assert_eq!(
            edit_command("echo x", 5, "echo hi x", 8),
            Cmd::Replace(Movement::BeginningOfLine, Some("echo hi ".into()))
        );
        assert_eq!(
            edit_command("echo x", 5, "ls", 1),
            Cmd::Replace(Movement::WholeLine, Some("ls".into()))
        );
    }

    #[test]
    fn painting_keeps_the_text() {
        let line = "echo $x";
        let painted = paint(line, &[(0, 4, "34"), (5, 7, "36")]);
        assert_eq!(painted, "\x1b[34mecho\x1b[0m \x1b[36m$x\x1b[0m");
    }

    #[test]
    fn history_lives_in_the_configuration_directory() {
        let dir = std::env::temp_dir().join(format!("ral-hist-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok();
        let cfg = dir.join("cfg");
        assert_eq!(
            history_path(Some(&cfg), Some(&dir)),
            Some(cfg.join("history"))
        );
        std::fs::write(dir.join(".ral_history"), "").ok();
        assert_eq!(
            history_path(Some(&cfg), Some(&dir)),
            Some(dir.join(".ral_history"))
        );
        assert_eq!(history_path(None, None), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
