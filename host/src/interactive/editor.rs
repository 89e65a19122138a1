//! The editor interface (`_ed-*`, spec §15.7): what a plugin handler may
//! read and change of the line being edited.
//!
//! The host copies the buffer and cursor in before a handler runs
//! ([`super::Interactive::keybinding`], [`super::Interactive::buffer_change`])
//! and reads them back after; the builtins act on that copy. Calling one
//! with no handler running (at an ordinary prompt) is an error, and a batch
//! host never installs them. Offsets a plugin sees or gives are in Unicode
//! characters; the copy keeps byte offsets.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use base64::Engine;
use ral_vm::{Failure, Value, Vm};

use super::{byte_offset, char_offset, record, strings, Interactive};
use crate::Shell;

/// The handler running now.
#[derive(Clone, Debug)]
pub(super) struct Active {
    pub plugin: String,
    /// A `buffer-change` hook (no `_ed-tui` there).
    pub buffer_change: bool,
}

/// The editor as handlers see it.
#[derive(Debug, Default)]
pub(super) struct EditorState {
    pub text: String,
    /// A byte offset into `text`.
    pub cursor: usize,
    pub keymap: String,
    /// Oldest first.
    pub history: Arc<Vec<String>>,
    pub ghost: Option<String>,
    /// `[start, end, style]` in characters.
    pub highlights: Vec<(usize, usize, String)>,
    /// Buffers `_ed-push` stashed, restored at the next prompts.
    pub pushed: Vec<String>,
    pub accept: bool,
    pub active: Option<Active>,
    /// `_ed-tui` nesting.
    pub tui: u32,
    /// What `buffer-change` last saw.
    pub last_text: Option<(String, usize)>,
}

/// The display state plugins set: ghost text and highlight spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EditorView {
    pub ghost: Option<String>,
    /// `(start, end, style)` in characters.
    pub highlights: Vec<(usize, usize, String)>,
}

impl EditorState {
    pub fn view(&self) -> EditorView {
        EditorView {
            ghost: self.ghost.clone(),
            highlights: self.highlights.clone(),
        }
    }
}

type Imp = fn(&Interactive, &mut Vm, &[Value]) -> Result<Value, Failure>;

pub(super) fn install(inter: &Arc<Interactive>, shell: &mut Shell) -> Result<(), String> {
    let table: [(&str, u8, Imp); 18] = [
        ("_ed-get", 0, get),
        ("_ed-text", 0, text),
        ("_ed-cursor", 0, cursor),
        ("_ed-keymap", 0, keymap),
        ("_ed-lbuffer", 0, lbuffer),
        ("_ed-set", 1, set),
        ("_ed-set-lbuffer", 1, set_lbuffer),
        ("_ed-insert", 1, insert),
        ("_ed-push", 0, push),
        ("_ed-accept", 0, accept),
        ("_ed-history", 2, history),
        ("_ed-parse", 0, parse),
        ("_ed-ghost", 1, ghost),
        ("_ed-highlight", 1, highlight),
        ("_ed-state", 2, state),
        ("_ed-tui", 1, tui),
        ("_ed-clipboard", 1, clipboard),
        ("_ed-hyperlink", 2, hyperlink),
    ];
    for (name, arity, imp) in table {
        let i = inter.clone();
        let cmd: Arc<str> = Arc::from(name);
        shell.register_host_builtin(
            name,
            arity,
            Arc::new(move |vm: &mut Vm, args: &[Value]| {
                imp(&i, vm, args).map_err(|f| f.with_cmd(&cmd))
            }),
        )?;
    }
    Ok(())
}

/// The active handler's editor, or the error for a call outside one.
fn editor<'a>(inter: &'a Interactive) -> Result<std::sync::MutexGuard<'a, super::State>, Failure> {
    let st = inter.lock();
    if st.editor.active.is_none() {
        return Err(Failure::error(
            "the editor interface is only available inside a plugin handler",
        ));
    }
    Ok(st)
}

fn str_arg(args: &[Value], i: usize) -> Result<String, Failure> {
    match args.get(i) {
        Some(Value::Str(s)) => Ok(s.to_string()),
        Some(other) => Err(Failure::error(format!(
            "argument {} must be a String, not {}",
            i + 1,
            other.kind_name()
        ))),
        None => Err(Failure::error(format!("missing argument {}", i + 1))),
    }
}

fn int_arg(args: &[Value], i: usize) -> Result<i64, Failure> {
    match args.get(i) {
        Some(Value::Int(n)) => Ok(*n),
        Some(other) => Err(Failure::error(format!(
            "argument {} must be an Integer, not {}",
            i + 1,
            other.kind_name()
        ))),
        None => Err(Failure::error(format!("missing argument {}", i + 1))),
    }
}

fn get(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    let st = editor(inter)?;
    let ed = &st.editor;
    Ok(record(vec![
        ("text", Value::str(ed.text.as_str())),
        ("cursor", Value::Int(char_offset(&ed.text, ed.cursor))),
        ("keymap", Value::str(ed.keymap.as_str())),
    ]))
}

fn text(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    Ok(Value::str(editor(inter)?.editor.text.as_str()))
}

fn cursor(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    let st = editor(inter)?;
    Ok(Value::Int(char_offset(&st.editor.text, st.editor.cursor)))
}

fn keymap(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    Ok(Value::str(editor(inter)?.editor.keymap.as_str()))
}

fn lbuffer(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    let st = editor(inter)?;
    let ed = &st.editor;
    Ok(Value::str(ed.text.get(..ed.cursor).unwrap_or("")))
}

/// `_ed-set [text: `keep | `set S, cursor: `keep | `set N]`.
fn set(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let Some(Value::Record(r)) = args.first() else {
        return Err(Failure::error("expected [text: …, cursor: …]"));
    };
    let field = |name: &str| -> Result<Option<Value>, Failure> {
        match r.get(name) {
            Some(Value::Variant(v)) if &*v.tag == "keep" => Ok(None),
            Some(Value::Variant(v)) if &*v.tag == "set" => v
                .payload
                .clone()
                .map(Some)
                .ok_or_else(|| Failure::error(format!("`set for {name} needs a value"))),
            _ => Err(Failure::error(format!("{name} must be `keep or `set"))),
        }
    };
    let new_text = field("text")?;
    let new_cursor = field("cursor")?;
    let mut st = editor(inter)?;
    let ed = &mut st.editor;
    if let Some(Value::Str(t)) = new_text {
        ed.text = t.to_string();
        ed.cursor = ed.cursor.min(ed.text.len());
        while !ed.text.is_char_boundary(ed.cursor) {
            ed.cursor -= 1;
        }
    }
    if let Some(Value::Int(n)) = new_cursor {
        ed.cursor = byte_offset(&ed.text, n);
    }
    Ok(Value::Unit)
}

fn set_lbuffer(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let left = str_arg(args, 0)?;
    let mut st = editor(inter)?;
    let ed = &mut st.editor;
    let right = ed.text.get(ed.cursor..).unwrap_or("").to_owned();
    ed.cursor = left.len();
    ed.text = left + &right;
    Ok(Value::Unit)
}

fn insert(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let s = str_arg(args, 0)?;
    let mut st = editor(inter)?;
    let ed = &mut st.editor;
    ed.text.insert_str(ed.cursor, &s);
    ed.cursor += s.len();
    Ok(Value::Unit)
}

fn push(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    let mut st = editor(inter)?;
    let ed = &mut st.editor;
    let text = std::mem::take(&mut ed.text);
    ed.cursor = 0;
    ed.pushed.push(text);
    Ok(Value::Unit)
}

fn accept(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    editor(inter)?.editor.accept = true;
    Ok(Value::Unit)
}

/// `_ed-history prefix limit`: newest first; a limit of 0 means all.
fn history(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let prefix = str_arg(args, 0)?;
    let limit = usize::try_from(int_arg(args, 1)?.max(0)).unwrap_or(usize::MAX);
    let st = editor(inter)?;
    let mut out: Vec<String> = Vec::new();
    for h in st.editor.history.iter().rev() {
        if h.starts_with(&prefix) && !out.contains(h) {
            out.push(h.clone());
            if limit != 0 && out.len() >= limit {
                break;
            }
        }
    }
    Ok(strings(&out.into_iter().rev().collect::<Vec<_>>()))
}

/// `_ed-parse`: the simple command at the cursor as
/// `[words, current, offset]`.
fn parse(inter: &Interactive, _: &mut Vm, _: &[Value]) -> Result<Value, Failure> {
    let st = editor(inter)?;
    let (words, current, offset) = command_words(&st.editor.text, st.editor.cursor);
    Ok(record(vec![
        (
            "words",
            Value::list(words.into_iter().map(Value::str).collect()),
        ),
        ("current", Value::Int(current)),
        ("offset", Value::Int(offset)),
    ]))
}

/// The words of the simple command around byte `cursor` of `text` (see
/// `_ed-parse`): words are runs of tokens with no space between them;
/// separators (newline, `;`, `|`, `?`, braces) end a command. An empty
/// word is spliced in when the cursor sits in whitespace. A buffer the
/// lexer refuses has no words.
pub(super) fn command_words(text: &str, cursor: usize) -> (Vec<String>, i64, i64) {
    use ral_syntax::token::TokenKind as T;
    let lexed = ral_syntax::lexer::lex(text, ral_syntax::SourceId(0));
    if !lexed.diagnostics.is_empty() {
        return (Vec::new(), 0, 0);
    }
    // The command's words as byte ranges.
    let mut words: Vec<(usize, usize)> = Vec::new();
    let mut done = false;
    for t in &lexed.tokens {
        let (s, e) = (t.span.start as usize, t.span.end as usize);
        let sep = matches!(
            t.kind,
            T::Newline | T::Semi | T::Pipe | T::Question | T::LBrace | T::RBrace | T::PipePipe
        );
        if sep {
            if s >= cursor {
                done = true;
            } else {
                words.clear();
            }
            continue;
        }
        if done {
            break;
        }
        if matches!(t.kind, T::Whitespace | T::Comment) {
            continue;
        }
        match words.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => words.push((s, e)),
        }
    }
    let current = words.iter().position(|(s, e)| *s <= cursor && cursor <= *e);
    let (current, offset) = match current {
        Some(i) => (i, words[i].0),
        None => {
            let i = words.iter().take_while(|(s, _)| *s < cursor).count();
            words.insert(i, (cursor, cursor));
            (i, cursor)
        }
    };
    let texts = words
        .iter()
        .map(|(s, e)| text.get(*s..*e).unwrap_or("").to_owned())
        .collect();
    (
        texts,
        i64::try_from(current).unwrap_or(0),
        char_offset(text, offset),
    )
}

fn ghost(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let g = str_arg(args, 0)?;
    editor(inter)?.editor.ghost = (!g.is_empty()).then_some(g);
    Ok(Value::Unit)
}

fn highlight(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let Some(Value::List(items)) = args.first() else {
        return Err(Failure::error("expected a list of [start, end, style]"));
    };
    let mut spans = Vec::new();
    for item in items.iter() {
        let Value::Record(r) = item else {
            return Err(Failure::error("each span must be [start, end, style]"));
        };
        let int = |k: &str| match r.get(k) {
            Some(Value::Int(n)) => Ok(usize::try_from(*n).unwrap_or(0)),
            _ => Err(Failure::error(format!("a span's {k} must be an Integer"))),
        };
        let style = match r.get("style") {
            Some(Value::Str(s)) => s.to_string(),
            _ => return Err(Failure::error("a span's style must be a String")),
        };
        spans.push((int("start")?, int("end")?, style));
    }
    editor(inter)?.editor.highlights = spans;
    Ok(Value::Unit)
}

/// `_ed-state default updater`: the plugin's cell (or `default`), passed
/// through `updater`, stored and returned.
fn state(inter: &Interactive, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let default = args.first().cloned().unwrap_or(Value::Unit);
    let updater = args
        .get(1)
        .cloned()
        .ok_or_else(|| Failure::error("missing argument 2"))?;
    let plugin = match &editor(inter)?.editor.active {
        Some(a) => a.plugin.clone(),
        None => return Err(Failure::error("no plugin handler is running")),
    };
    let current = {
        let st = inter.lock();
        match st
            .plugins
            .iter()
            .find(|p| p.name == plugin)
            .map(|p| &p.state)
        {
            Some(Value::Unit) | None => default,
            Some(v) => v.clone(),
        }
    };
    let next = vm.call_value(updater, vec![current]).map_err(|e| match e {
        ral_vm::Escape::Fail(f) => f,
        ral_vm::Escape::Exit(n) => Failure::error(format!("the updater exited with status {n}")),
    })?;
    let mut st = inter.lock();
    if let Some(p) = st.plugins.iter_mut().find(|p| p.name == plugin) {
        p.state = next.clone();
    }
    Ok(next)
}

/// `_ed-tui block`: runs the block with its standard output captured
/// while the terminal stays available to interactive children; returns
/// `[output, status]`, a failure as data. Nested calls and calls from
/// `buffer-change` are status 1.
fn tui(inter: &Interactive, vm: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let block = args
        .first()
        .cloned()
        .ok_or_else(|| Failure::error("missing argument 1"))?;
    let refused = {
        let mut st = editor(inter)?;
        let in_hook = st.editor.active.as_ref().is_some_and(|a| a.buffer_change);
        if in_hook || st.editor.tui > 0 {
            Some(if in_hook {
                "_ed-tui is not available inside buffer-change"
            } else {
                "_ed-tui cannot be nested"
            })
        } else {
            st.editor.tui += 1;
            None
        }
    };
    if let Some(msg) = refused {
        return Ok(record(vec![
            ("output", Value::str(msg)),
            ("status", Value::Int(1)),
        ]));
    }
    let saved = std::mem::replace(&mut vm.stdout, ral_vm::Stdout::Buffer(Vec::new()));
    let ran = vm.call_value(block, Vec::new());
    let out = match std::mem::replace(&mut vm.stdout, saved) {
        ral_vm::Stdout::Buffer(b) => b,
        ral_vm::Stdout::Inherit | ral_vm::Stdout::Writer(_) => Vec::new(),
    };
    inter.lock().editor.tui -= 1;
    let (output, status) = match ran {
        Ok(_) => {
            let text = String::from_utf8_lossy(&out).into_owned();
            let text = text.strip_suffix('\n').map(str::to_owned).unwrap_or(text);
            (text, 0)
        }
        Err(ral_vm::Escape::Fail(f)) => (f.message.clone(), i64::from(f.status)),
        Err(ral_vm::Escape::Exit(n)) => (format!("exit {n}"), i64::from(n)),
    };
    Ok(record(vec![
        ("output", Value::str(output)),
        ("status", Value::Int(status)),
    ]))
}

/// `_ed-clipboard text`: an OSC 52 write to the terminal; whether it was
/// emitted.
fn clipboard(inter: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let text = str_arg(args, 0)?;
    drop(editor(inter)?);
    let tty = std::fs::OpenOptions::new().write(true).open("/dev/tty");
    let Ok(mut tty) = tty else {
        return Ok(Value::Bool(false));
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    let sent = write!(tty, "\x1b]52;c;{b64}\x07").and_then(|()| tty.flush());
    Ok(Value::Bool(sent.is_ok()))
}

/// `_ed-hyperlink uri text`: an OSC 8 link where standard output is a
/// terminal and colour is allowed; the plain text otherwise.
fn hyperlink(_: &Interactive, _: &mut Vm, args: &[Value]) -> Result<Value, Failure> {
    let uri = str_arg(args, 0)?;
    let text = str_arg(args, 1)?;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    if no_color || !std::io::stdout().is_terminal() || uri.contains(|c: char| c.is_control()) {
        return Ok(Value::str(text));
    }
    Ok(Value::str(format!(
        "\x1b]8;;{uri}\x1b\\{text}\x1b]8;;\x1b\\"
    )))
}
