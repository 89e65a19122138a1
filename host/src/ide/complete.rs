//! Completion (spec §15.2): what is being typed at the cursor, and the
//! candidates for it.
//!
//! [`site`] reads the text left of the cursor with the real lexer and
//! decides what the word under the cursor is:
//!
//! - after `$`: a **variable** (live, non-private bindings);
//! - after `$name[` (or `$name[a][`): a **field** of the record the checker
//!   knows `$name` to be (beyond the spec, which completes no fields);
//! - in command position (the first word of a statement, of a pipeline
//!   stage, of a block, or of a `let`'s right-hand side): a **command**:
//!   builtins, prelude, bindings, aliases, reserved words and executables
//!   on `PATH` (after `^`, executables only);
//! - anywhere else, or a command word that looks like a path: a **path**,
//!   relative to ral's logical working directory, `~` meaning home.
//!
//! [`candidates`] then lists and ranks them ([`super::fuzzy`]). A path
//! candidate is written as a ral word: bare where it reads back, quoted
//! where it would not (`'my file.txt'`, `'007'`), with `~/` kept when the
//! rest is bare and spelled out when the word must be quoted (a quoted `~`
//! is not home). A directory ends in `/`, so the next Tab goes inside it.

use std::path::{Path, PathBuf};

use ral_syntax::token::{Token, TokenKind};
use ral_syntax::SourceId;
use ral_types::{Con, Label, Scheme, TyStore, TyView};

use super::fuzzy::rank_by;

/// The reserved words offered in command position.
const KEYWORDS: &[&str] = &[
    "audit", "case", "grant", "guard", "if", "let", "return", "try", "within",
];

/// What kind of word is being completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// A binding after `$`.
    Variable,
    /// A field after `$var[` (and `path` indexes already written).
    Field { var: String, path: Vec<String> },
    /// A command name; `external_only` after `^`.
    Command { external_only: bool },
    /// A file or directory, or an argument of `command` when the word is
    /// one; `quoted` when the word is quoted, in whole or in part.
    Path { quoted: bool },
}

/// The command a word is an argument of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invocation {
    /// The command's name as written (without `^`).
    pub head: String,
    /// The arguments before the word being completed, unquoted (a word
    /// that is not plain text, such as `$x`, is kept as written).
    pub words: Vec<String>,
}

/// Where the completed word starts, what was typed of it, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The byte offset the replacement starts at.
    pub start: usize,
    /// The text typed so far: without its `$`, and unquoted.
    pub typed: String,
    pub want: Want,
    /// For an argument word, the command it belongs to.
    pub command: Option<Invocation>,
}

/// One candidate: the text that replaces the word, and what a list shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub replacement: String,
    pub display: String,
    /// The candidate finishes its word (a command, a flag, a file; not a
    /// directory, which the next completion goes into): a line editor
    /// adds a space after a unique one.
    pub complete: bool,
}

/// What the word being typed may be, for an argument of a command with a
/// completion spec ([`super::specs`]).
pub use super::specs::Offer;

/// What completion may offer, supplied by the host.
pub struct Env<'a> {
    /// Bound names (the session's, and any the host knows are in scope).
    pub bindings: &'a [String],
    /// Alias names.
    pub aliases: &'a [String],
    /// Executables on `PATH` ([`executables`]).
    pub executables: &'a [String],
    /// Builtin and prelude names the host installs.
    pub builtins: &'a [String],
    /// The logical working directory.
    pub cwd: &'a Path,
    /// The home directory, for `~`.
    pub home: Option<&'a Path>,
    /// The field names of `$var` indexed by `path`, when its type is a
    /// known record.
    pub fields: &'a dyn Fn(&str, &[String]) -> Vec<String>,
    /// What an argument of a command may be (its spec, read against the
    /// words before it), with [`Offer::Run`] already run; `None` offers
    /// files.
    pub arguments: Option<&'a Arguments<'a>>,
}

/// What [`Env::arguments`] is: the offers for a word after a command.
pub type Arguments<'a> = dyn Fn(&Invocation, &str) -> Vec<Offer> + 'a;

/// Whether a token is a piece of a word (words are runs of glued pieces:
/// `'dir with space/'file` is one word).
fn word_piece(kind: TokenKind) -> bool {
    matches!(
        kind,
        TokenKind::Word
            | TokenKind::RawString { .. }
            | TokenKind::DqStart
            | TokenKind::DqText
            | TokenKind::DqEscape { valid: true }
            | TokenKind::DqEnd
    )
}

/// The text a run of word pieces stands for, and whether any piece is
/// quoted; `None` when a piece's value cannot be read off its text.
fn unquote(src: &str, pieces: &[Token]) -> Option<(String, bool)> {
    let mut out = String::new();
    let mut quoted = false;
    for t in pieces {
        let text = t.span.text(src);
        match t.kind {
            TokenKind::Word => out.push_str(text),
            TokenKind::RawString { hashes, closed } => {
                quoted = true;
                let fence = usize::from(hashes);
                let inner = text.get(fence + 1..)?;
                let inner = if closed {
                    inner.get(..inner.len().checked_sub(fence + 1)?)?
                } else {
                    inner
                };
                out.push_str(inner);
            }
            TokenKind::DqStart | TokenKind::DqEnd => quoted = true,
            TokenKind::DqText => out.push_str(text),
            TokenKind::DqEscape { valid: true } => match text {
                "\\\\" => out.push('\\'),
                "\\\"" => out.push('"'),
                "\\$" => out.push('$'),
                "\\t" => out.push('\t'),
                _ => return None,
            },
            TokenKind::Whitespace
            | TokenKind::Comment
            | TokenKind::Newline
            | TokenKind::Semi
            | TokenKind::DqEscape { valid: false }
            | TokenKind::Var
            | TokenKind::VarParen
            | TokenKind::ExprOpen
            | TokenKind::Bang
            | TokenKind::Caret
            | TokenKind::Tag
            | TokenKind::Spread
            | TokenKind::LBrace
            | TokenKind::RBrace
            | TokenKind::LBracket
            | TokenKind::RBracket
            | TokenKind::LParen
            | TokenKind::RParen
            | TokenKind::Pipe
            | TokenKind::Question
            | TokenKind::Comma
            | TokenKind::Colon
            | TokenKind::Redirect { .. }
            | TokenKind::Op(_)
            | TokenKind::Amp
            | TokenKind::AmpAmp
            | TokenKind::PipePipe
            | TokenKind::Error => return None,
        }
    }
    Some((out, quoted))
}

/// What is being typed at byte offset `pos` of `line` (see the module docs).
pub fn site(line: &str, pos: usize) -> Site {
    let pos = floor_boundary(line, pos);
    let before = &line[..pos];
    let tokens = ral_syntax::lexer::lex(before, SourceId(0)).tokens;
    let last = tokens
        .last()
        .copied()
        .filter(|t| t.span.end as usize == pos);
    let stage = |n: usize| scan_stage(before, &tokens[..n]);
    let empty = |want, command| Site {
        start: pos,
        typed: String::new(),
        want,
        command,
    };
    let Some(last) = last else {
        // Only an empty line has no token ending at the cursor.
        return empty(
            Want::Command {
                external_only: false,
            },
            None,
        );
    };
    let n = tokens.len() - 1;
    let text = last.span.text(before);
    let start = last.span.start as usize;
    match last.kind {
        TokenKind::Var => Site {
            start: start + 1,
            typed: text[1..].to_owned(),
            want: Want::Variable,
            command: None,
        },
        TokenKind::Error if text == "$" => empty(Want::Variable, None),
        TokenKind::LBracket => match field_chain(before, &tokens) {
            Some((var, path)) => empty(Want::Field { var, path }, None),
            None => empty(Want::Path { quoted: false }, None),
        },
        TokenKind::Word
        | TokenKind::RawString { .. }
        | TokenKind::DqStart
        | TokenKind::DqText
        | TokenKind::DqEscape { valid: true }
        | TokenKind::DqEnd => {
            // The whole word: the glued pieces before this one.
            let mut first = n;
            while first > 0
                && tokens.get(first - 1).is_some_and(|t| {
                    word_piece(t.kind)
                        && tokens
                            .get(first)
                            .is_some_and(|u| t.span.end == u.span.start)
                })
            {
                first -= 1;
            }
            let glued_to = |i: usize, kind: TokenKind| {
                i > 0
                    && tokens.get(i - 1).is_some_and(|t| {
                        t.kind == kind && tokens.get(i).is_some_and(|u| t.span.end == u.span.start)
                    })
            };
            if last.kind == TokenKind::Word && first == n && glued_to(n, TokenKind::LBracket) {
                if let Some((var, path)) = field_chain(before, &tokens[..n]) {
                    return Site {
                        start,
                        typed: text.to_owned(),
                        want: Want::Field { var, path },
                        command: None,
                    };
                }
            }
            let word_start = tokens.get(first).map_or(start, |t| t.span.start as usize);
            let Some((typed, quoted)) = unquote(before, &tokens[first..]) else {
                return empty(Want::Path { quoted: false }, None);
            };
            let caret = glued_to(first, TokenKind::Caret);
            let pathish = typed.contains('/') || typed.starts_with('.') || typed.starts_with('~');
            let scan = stage(first);
            let want = if caret {
                Want::Command {
                    external_only: true,
                }
            } else if scan.at_head && !pathish && !quoted {
                Want::Command {
                    external_only: false,
                }
            } else {
                Want::Path { quoted }
            };
            let command = match want {
                Want::Path { .. } => scan.invocation,
                Want::Variable | Want::Field { .. } | Want::Command { .. } => None,
            };
            Site {
                start: word_start,
                typed,
                want,
                command,
            }
        }
        TokenKind::Caret => empty(
            Want::Command {
                external_only: true,
            },
            None,
        ),
        TokenKind::Whitespace
        | TokenKind::Newline
        | TokenKind::Semi
        | TokenKind::Pipe
        | TokenKind::Question
        | TokenKind::LBrace
        | TokenKind::PipePipe => {
            let scan = stage(tokens.len());
            if scan.at_head {
                empty(
                    Want::Command {
                        external_only: false,
                    },
                    None,
                )
            } else {
                empty(Want::Path { quoted: false }, scan.invocation)
            }
        }
        TokenKind::Comment
        | TokenKind::DqEscape { valid: false }
        | TokenKind::VarParen
        | TokenKind::ExprOpen
        | TokenKind::Bang
        | TokenKind::Tag
        | TokenKind::Spread
        | TokenKind::RBrace
        | TokenKind::RBracket
        | TokenKind::LParen
        | TokenKind::RParen
        | TokenKind::Comma
        | TokenKind::Colon
        | TokenKind::Redirect { .. }
        | TokenKind::Op(_)
        | TokenKind::Amp
        | TokenKind::AmpAmp
        | TokenKind::Error => empty(Want::Path { quoted: false }, None),
    }
}

/// The largest char boundary of `s` at or below `pos`.
fn floor_boundary(s: &str, pos: usize) -> usize {
    let mut p = pos.min(s.len());
    while !s.is_char_boundary(p) {
        p -= 1;
    }
    p
}

/// The stage a word starting after `tokens` belongs to.
struct StageScan {
    /// The word would be the stage's command head.
    at_head: bool,
    /// The command (a plain word, or `^word`) the word is an argument of,
    /// with the arguments before it; `None` after a redirect, whose target
    /// is a path whatever the command.
    invocation: Option<Invocation>,
}

/// Reads the current stage of `tokens`: where it starts (after a newline,
/// `;`, `|`, `?`, `{`, or a `let`'s `=`), its head and its words.
fn scan_stage(src: &str, tokens: &[Token]) -> StageScan {
    let mut words: Vec<(String, bool)> = Vec::new();
    // The glued pieces of the word being read, and where the last ended.
    let mut piece_start: Option<usize> = None;
    let mut after_redirect = false;
    let mut in_let = false;
    let mut caret_head = false;
    let mut depth = 0usize;
    let flush = |words: &mut Vec<(String, bool)>, from: Option<usize>, to: usize| {
        if let Some(f) = from {
            let pieces = tokens.get(f..to).unwrap_or(&[]);
            let word = match unquote(src, pieces) {
                Some((w, _)) => (w, true),
                None => (
                    pieces.iter().map(|t| t.span.text(src)).collect::<String>(),
                    false,
                ),
            };
            words.push(word);
        }
    };
    for (i, t) in tokens.iter().enumerate() {
        let glued = i > 0
            && tokens
                .get(i - 1)
                .is_some_and(|p| p.span.end == t.span.start);
        match t.kind {
            TokenKind::Whitespace | TokenKind::Comment => {
                flush(&mut words, piece_start.take(), i);
            }
            TokenKind::Newline
            | TokenKind::Semi
            | TokenKind::Pipe
            | TokenKind::PipePipe
            | TokenKind::Question
            | TokenKind::LBrace
                if depth == 0 || t.kind == TokenKind::LBrace =>
            {
                piece_start = None;
                words.clear();
                after_redirect = false;
                in_let = false;
                caret_head = false;
                depth = 0;
            }
            TokenKind::LBracket | TokenKind::ExprOpen | TokenKind::LParen => {
                if piece_start.is_none() {
                    piece_start = Some(i);
                }
                depth += 1;
            }
            TokenKind::RBracket | TokenKind::RParen => {
                if piece_start.is_none() {
                    piece_start = Some(i);
                }
                depth = depth.saturating_sub(1);
            }
            _ if depth > 0 => {}
            TokenKind::Redirect { .. } => {
                flush(&mut words, piece_start.take(), i);
                after_redirect = true;
            }
            TokenKind::Caret if words.is_empty() && piece_start.is_none() => caret_head = true,
            kind @ (TokenKind::Word
            | TokenKind::RawString { .. }
            | TokenKind::DqStart
            | TokenKind::DqText
            | TokenKind::DqEscape { .. }
            | TokenKind::DqEnd
            | TokenKind::Var
            | TokenKind::VarParen
            | TokenKind::Bang
            | TokenKind::Caret
            | TokenKind::Tag
            | TokenKind::Spread
            | TokenKind::RBrace
            | TokenKind::Comma
            | TokenKind::Colon
            | TokenKind::Op(_)
            | TokenKind::Amp
            | TokenKind::AmpAmp
            | TokenKind::Error
            | TokenKind::Newline
            | TokenKind::Semi
            | TokenKind::Pipe
            | TokenKind::PipePipe
            | TokenKind::Question
            | TokenKind::LBrace) => {
                let starts_word = piece_start.is_none() || !glued;
                if starts_word {
                    flush(&mut words, piece_start.take(), i);
                    piece_start = Some(i);
                }
                // `let … =` starts a new command position.
                if kind == TokenKind::Word && starts_word {
                    let w = t.span.text(src);
                    if words.is_empty() && w == "let" {
                        in_let = true;
                    } else if in_let && w == "=" {
                        piece_start = None;
                        words.clear();
                        in_let = false;
                        caret_head = false;
                        after_redirect = false;
                    }
                }
            }
        }
    }
    flush(&mut words, piece_start.take(), tokens.len());
    let at_head = words.is_empty() && !in_let;
    let invocation = match words.split_first() {
        Some(((head, true), rest)) if !after_redirect && !in_let && depth == 0 => {
            let plain = caret_head || ral_vm::quote::is_bare_word(head) || is_reserved_word(head);
            plain.then(|| Invocation {
                head: head.clone(),
                words: rest.iter().map(|(w, _)| w.clone()).collect(),
            })
        }
        Some(_) | None => None,
    };
    StageScan {
        at_head,
        invocation,
    }
}

fn is_reserved_word(w: &str) -> bool {
    ral_syntax::ast::is_reserved(w)
}

/// For tokens ending in `$var[` or `$var[a][b][` (glued together), the
/// variable and the indexes written so far.
fn field_chain(src: &str, tokens: &[Token]) -> Option<(String, Vec<String>)> {
    let mut i = tokens.len().checked_sub(1)?;
    if tokens.get(i)?.kind != TokenKind::LBracket {
        return None;
    }
    let mut path = Vec::new();
    loop {
        let cur = *tokens.get(i)?;
        let prev = *tokens.get(i.checked_sub(1)?)?;
        if prev.span.end != cur.span.start {
            return None;
        }
        match prev.kind {
            TokenKind::Var => {
                path.reverse();
                return Some((prev.span.text(src)[1..].to_owned(), path));
            }
            TokenKind::RBracket => {
                let key = *tokens.get(i.checked_sub(2)?)?;
                let open = *tokens.get(i.checked_sub(3)?)?;
                if key.kind != TokenKind::Word
                    || open.kind != TokenKind::LBracket
                    || open.span.end != key.span.start
                    || key.span.end != prev.span.start
                {
                    return None;
                }
                path.push(key.span.text(src).to_owned());
                i -= 3;
            }
            _ => return None,
        }
    }
}

/// The candidates for `site`, ranked.
pub fn candidates(site: &Site, env: &Env<'_>) -> Vec<Candidate> {
    let plain = |names: Vec<String>| -> Vec<Candidate> {
        rank_by(&site.typed, names, String::as_str)
            .into_iter()
            .map(|n| Candidate {
                replacement: n.clone(),
                display: n,
                complete: true,
            })
            .collect()
    };
    match &site.want {
        Want::Variable => {
            let names = env
                .bindings
                .iter()
                .filter(|n| !n.starts_with('_'))
                .cloned()
                .collect();
            rank_by(&site.typed, names, String::as_str)
                .into_iter()
                .map(|n| Candidate {
                    display: format!("${n}"),
                    replacement: n,
                    complete: true,
                })
                .collect()
        }
        Want::Field { var, path } => {
            let fields = (env.fields)(var, path);
            rank_by(&site.typed, fields, String::as_str)
                .into_iter()
                .map(|f| Candidate {
                    replacement: word(&f),
                    display: f,
                    complete: false,
                })
                .collect()
        }
        Want::Command { external_only } => plain(command_names(env, *external_only)),
        Want::Path { quoted } => {
            let offers = match (&site.command, env.arguments) {
                (Some(inv), Some(arguments)) => arguments(inv, &site.typed),
                _ => vec![Offer::Files],
            };
            let mut out = Vec::new();
            let mut words: Vec<super::specs::Word> = Vec::new();
            let (mut files, mut dirs, mut commands) = (false, false, false);
            for o in offers {
                match o {
                    Offer::Words(w) => words.extend(w),
                    Offer::Files => files = true,
                    Offer::Directories => dirs = true,
                    Offer::Commands => commands = true,
                    // The host runs these; one left here offers nothing.
                    Offer::Run(_) => {}
                }
            }
            if !words.is_empty() {
                out.extend(
                    rank_by(&site.typed, words, |w| w.text.as_str())
                        .into_iter()
                        .map(|w| Candidate {
                            replacement: if *quoted {
                                quote_word(&w.text)
                            } else {
                                word(&w.text)
                            },
                            complete: !w.text.ends_with('='),
                            display: if w.description.is_empty() {
                                w.text
                            } else {
                                format!("{}  ({})", w.text, w.description)
                            },
                        }),
                );
            }
            if commands {
                out.extend(plain(command_names(env, false)));
            }
            if files || dirs {
                out.extend(path_candidates(&site.typed, *quoted, env, !files));
            }
            out
        }
    }
}

/// Everything a command word may name.
fn command_names(env: &Env<'_>, external_only: bool) -> Vec<String> {
    let mut names: Vec<String> = env.executables.to_vec();
    if !external_only {
        names.extend(env.builtins.iter().cloned());
        names.extend(env.bindings.iter().filter(|n| !n.starts_with('_')).cloned());
        names.extend(env.aliases.iter().cloned());
        names.extend(KEYWORDS.iter().map(|k| (*k).to_owned()));
    }
    names
}

/// A name as a ral word.
fn word(s: &str) -> String {
    let mut out = String::new();
    ral_vm::quote::write_ral_word(&mut out, s);
    out
}

/// A name as a quoted ral word.
fn quote_word(s: &str) -> String {
    let mut out = String::new();
    ral_vm::quote::write_ral_quoted(&mut out, s, ral_vm::quote::Lines::Literal);
    out
}

/// The files (or only the directories) the typed path may go on to.
fn path_candidates(typed: &str, quoted: bool, env: &Env<'_>, dirs_only: bool) -> Vec<Candidate> {
    let (dir_typed, file) = match typed.rfind('/') {
        Some(i) => typed.split_at(i + 1),
        None if typed == "~" => ("~/", ""),
        None => ("", typed),
    };
    let Some(dir) = expand(dir_typed, env) else {
        return Vec::new();
    };
    let Ok(read) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let hidden = file.starts_with('.');
    let entries: Vec<(String, bool)> = read
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            if name.starts_with('.') && !hidden {
                return None;
            }
            let is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
            if dirs_only && !is_dir {
                return None;
            }
            Some((name, is_dir))
        })
        .collect();
    rank_by(file, entries, |(n, _)| n.as_str())
        .into_iter()
        .map(|(name, is_dir)| {
            let slash = if is_dir { "/" } else { "" };
            let full = format!("{dir_typed}{name}{slash}");
            Candidate {
                replacement: path_word(&full, quoted, env.home),
                display: format!("{name}{slash}"),
                complete: !is_dir,
            }
        })
        .collect()
}

/// The directory a typed directory prefix names.
fn expand(dir_typed: &str, env: &Env<'_>) -> Option<PathBuf> {
    if dir_typed.is_empty() {
        return Some(env.cwd.to_path_buf());
    }
    if let Some(rest) = dir_typed.strip_prefix("~/") {
        return Some(env.home?.join(rest));
    }
    let p = Path::new(dir_typed);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        env.cwd.join(p)
    })
}

/// A path as a ral word (see the module docs).
fn path_word(text: &str, quoted: bool, home: Option<&Path>) -> String {
    let bare = |s: &str| !quoted && (s.is_empty() || ral_vm::quote::is_bare_word(s));
    if let Some(rest) = text.strip_prefix("~/") {
        if bare(rest) {
            return text.to_owned();
        }
        if let Some(h) = home {
            let full = h.join(rest);
            let mut out = String::new();
            ral_vm::quote::write_ral_quoted(
                &mut out,
                &full.to_string_lossy(),
                ral_vm::quote::Lines::Literal,
            );
            return out;
        }
    }
    if bare(text) {
        return text.to_owned();
    }
    let mut out = String::new();
    ral_vm::quote::write_ral_quoted(&mut out, text, ral_vm::quote::Lines::Literal);
    out
}

/// The executables on a `PATH` value: files with an execute bit, sorted,
/// each name once.
pub fn executables(path_var: &str) -> Vec<String> {
    let mut out = Vec::new();
    for dir in path_var.split(':').filter(|d| !d.is_empty()) {
        let Ok(read) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in read.flatten() {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            if is_executable(&e.path()) {
                out.push(name);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file())
}

/// The field labels of a value of type `scheme` indexed by `path`, when
/// that is a record (empty otherwise: a map's keys are data, unknown
/// until run time).
pub fn scheme_fields(scheme: &Scheme, path: &[String]) -> Vec<String> {
    let mut store = TyStore::new();
    let t = store.instantiate(scheme);
    record_fields(&mut store, t, path)
}

/// [`scheme_fields`] for a type in a store.
pub fn record_fields(store: &mut TyStore, mut t: ral_types::Ty, path: &[String]) -> Vec<String> {
    for key in path {
        let Some(fields) = row_of(store, t) else {
            return Vec::new();
        };
        let label = Label::intern(key);
        match fields.iter().find(|(l, _)| *l == label) {
            Some((_, ty)) => t = *ty,
            None => return Vec::new(),
        }
    }
    row_of(store, t)
        .map(|fields| fields.iter().map(|(l, _)| l.as_str().to_owned()).collect())
        .unwrap_or_default()
}

/// The fields of `t` when it is a record.
fn row_of(store: &mut TyStore, t: ral_types::Ty) -> Option<Vec<(Label, ral_types::Ty)>> {
    let t = store.find(t);
    match store.view(t) {
        TyView::Con(Con::Record(row)) => Some(store.row_parts(row).0),
        TyView::Con(_) | TyView::Var(..) => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn at(line: &str) -> Site {
        site(line, line.len())
    }

    fn want(line: &str) -> (String, Want) {
        let s = at(line);
        (s.typed, s.want)
    }

    const CMD: Want = Want::Command {
        external_only: false,
    };
    const PATH: Want = Want::Path { quoted: false };

    #[test]
    fn what_is_being_typed() {
        assert_eq!(want("ech"), ("ech".into(), CMD));
        assert_eq!(want(""), ("".into(), CMD));
        assert_eq!(want("echo fi"), ("fi".into(), PATH));
        assert_eq!(want("echo "), ("".into(), PATH));
        assert_eq!(want("echo $na"), ("na".into(), Want::Variable));
        assert_eq!(want("echo $"), ("".into(), Want::Variable));
        assert_eq!(want("ls | gr"), ("gr".into(), CMD));
        assert_eq!(want("let x = len"), ("len".into(), CMD));
        assert_eq!(want("let x = length $"), ("".into(), Want::Variable));
        assert_eq!(want("let le"), ("le".into(), PATH));
        assert_eq!(want("map { |x| ec"), ("ec".into(), CMD));
        assert_eq!(want("a ? b; ca"), ("ca".into(), CMD));
        assert_eq!(want("echo !{wh"), ("wh".into(), CMD));
        assert_eq!(
            want("^gi"),
            (
                "gi".into(),
                Want::Command {
                    external_only: true
                }
            )
        );
        assert_eq!(want("./scr"), ("./scr".into(), PATH));
        assert_eq!(want("cat ~/Do"), ("~/Do".into(), PATH));
        assert_eq!(
            want("cat 'my fi"),
            ("my fi".into(), Want::Path { quoted: true })
        );
        let field = |var: &str, path: &[&str]| Want::Field {
            var: var.into(),
            path: path.iter().map(|s| (*s).to_owned()).collect(),
        };
        assert_eq!(want("echo $cfg[ho"), ("ho".into(), field("cfg", &[])));
        assert_eq!(want("echo $cfg["), ("".into(), field("cfg", &[])));
        assert_eq!(
            want("echo $cfg[db][po"),
            ("po".into(), field("cfg", &["db"]))
        );
        // A space breaks the index: `$x [` is two arguments.
        assert_eq!(want("echo $cfg [ho").1, PATH);
    }

    #[test]
    fn the_start_is_where_the_word_begins() {
        assert_eq!(at("echo $na").start, 6);
        assert_eq!(at("echo fi").start, 5);
        assert_eq!(at("cat 'my fi").start, 4);
        // In the middle of a line, only the text left of the cursor counts.
        assert_eq!(site("echo $na | wc", 8).typed, "na");
    }

    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ral-ide-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok();
        dir
    }

    fn names(c: Vec<Candidate>) -> Vec<String> {
        c.into_iter().map(|c| c.replacement).collect()
    }

    #[test]
    fn candidates_of_each_kind() {
        let dir = scratch("kinds");
        std::fs::create_dir_all(dir.join("src")).ok();
        std::fs::write(dir.join("my notes.txt"), "").ok();
        std::fs::write(dir.join("007"), "").ok();
        std::fs::write(dir.join(".hidden"), "").ok();
        let bindings = vec![
            "config".to_owned(),
            "count".to_owned(),
            "_private".to_owned(),
        ];
        let fields = |var: &str, path: &[String]| -> Vec<String> {
            match (var, path) {
                ("config", []) => vec!["host".into(), "port".into(), "two words".into()],
                _ => Vec::new(),
            }
        };
        let env = Env {
            bindings: &bindings,
            aliases: &["ll".to_owned()],
            executables: &["cat".to_owned(), "cargo".to_owned()],
            builtins: &["map".to_owned(), "length".to_owned()],
            cwd: &dir,
            home: Some(&dir),
            fields: &fields,
            arguments: None,
        };
        let c = |line: &str| names(candidates(&at(line), &env));
        assert_eq!(c("echo $co"), vec!["config", "count"]);
        assert_eq!(c("echo $_"), Vec::<String>::new());
        assert_eq!(c("ca"), vec!["cargo", "case", "cat"]);
        assert_eq!(c("l"), vec!["length", "let", "ll"]);
        // Fuzzy when no name starts with the text.
        assert_eq!(c("lgth"), vec!["length"]);
        assert_eq!(c("echo $config[p"), vec!["port"]);
        assert_eq!(c("echo $config[t"), vec!["'two words'"]);
        assert_eq!(c("cat s"), vec!["src/"]);
        assert_eq!(c("cat my"), vec!["'my notes.txt'"]);
        assert_eq!(c("cat 00"), vec!["'007'"]);
        assert_eq!(c("cat ."), vec![".hidden"]);
        assert_eq!(c("cat ~/s"), vec!["~/src/"]);
        let quoted_home = format!("'{}/my notes.txt'", dir.display());
        assert_eq!(c("cat ~/my"), vec![quoted_home]);
        assert_eq!(c("cat 'my"), vec!["'my notes.txt'"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn quoted_words_and_the_command_they_belong_to() {
        // A quoted word is read whole and unquoted, and replaced whole.
        let s = at("ls 'dir with space/'");
        assert_eq!((s.start, s.typed.as_str()), (3, "dir with space/"));
        assert_eq!(s.want, Want::Path { quoted: true });
        let s = at("ls 'dir with space/'fi");
        assert_eq!((s.start, s.typed.as_str()), (3, "dir with space/fi"));
        let s = at("cat \"a b/c");
        assert_eq!((s.start, s.typed.as_str()), (4, "a b/c"));
        // The command and the arguments before the word.
        let inv = |line: &str| at(line).command.map(|i| (i.head, i.words));
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(inv("git ch"), Some(("git".into(), vec![])));
        assert_eq!(
            inv("git -C 'my repo' log --"),
            Some(("git".into(), owned(&["-C", "my repo", "log"])))
        );
        assert_eq!(inv("ls | cargo b"), Some(("cargo".into(), vec![])));
        assert_eq!(inv("let x = git "), Some(("git".into(), vec![])));
        assert_eq!(inv("^git ch"), Some(("git".into(), vec![])));
        assert_eq!(inv("if $ok { cd sr"), Some(("cd".into(), vec![])));
        // A redirect's target is a path, whatever the command.
        assert_eq!(inv("git log > ou"), None);
        assert_eq!(inv("echo $cfg [ho"), None);
        // The command word itself has no command.
        assert_eq!(inv("gi"), None);
    }

    #[test]
    fn arguments_come_from_the_spec() {
        let dir = scratch("args");
        std::fs::create_dir_all(dir.join("dir with space/inner")).ok();
        std::fs::write(dir.join("dir with space/file.txt"), "").ok();
        std::fs::create_dir_all(dir.join("src")).ok();
        std::fs::write(dir.join("notes.txt"), "").ok();
        let fields = |_: &str, _: &[String]| Vec::new();
        let arguments =
            |inv: &Invocation, typed: &str| match super::super::specs::shipped(&inv.head) {
                Some(spec) => super::super::specs::offers(spec, &inv.words, typed),
                None => vec![Offer::Files],
            };
        let env = Env {
            bindings: &[],
            aliases: &[],
            executables: &["cargo".to_owned()],
            builtins: &[],
            cwd: &dir,
            home: None,
            fields: &fields,
            arguments: Some(&arguments),
        };
        let c = |line: &str| candidates(&at(line), &env);
        // `cd` offers directories only.
        assert_eq!(names(c("cd ")), vec!["'dir with space/'", "src/"]);
        assert_eq!(
            names(c("ls ")),
            vec!["'dir with space/'", "notes.txt", "src/"]
        );
        // Into a quoted directory just completed.
        assert_eq!(
            names(c("ls 'dir with space/'")),
            vec!["'dir with space/file.txt'", "'dir with space/inner/'"]
        );
        assert_eq!(
            names(c("cd 'dir with space/'")),
            vec!["'dir with space/inner/'"]
        );
        // Subcommands and flags from a shipped spec.
        let git = names(c("git ch"));
        assert_eq!(git, vec!["checkout", "cherry-pick"]);
        assert!(names(c("cargo b")).contains(&"build".to_owned()));
        let flags = names(c("cargo build --rel"));
        assert_eq!(flags, vec!["--release"]);
        // Which candidates finish their word.
        let done: Vec<bool> = c("ls ").iter().map(|c| c.complete).collect();
        assert_eq!(done, vec![false, true, false]);
        assert!(c("git checko").iter().all(|c| c.complete));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fields_of_a_record_scheme() {
        let scheme =
            ral_types::parse_scheme("Returns [host: String, db: [name: String, port: Integer]]")
                .unwrap_or_else(|e| panic!("{e}"));
        // The scheme is a computation; its value is the record.
        let mut store = TyStore::new();
        let t = store.instantiate(&scheme);
        let value = match store.view(store.find_imm(t)) {
            TyView::Con(Con::Returns { value, .. }) => value,
            other @ (TyView::Con(_) | TyView::Var(..)) => panic!("{other:?}"),
        };
        assert_eq!(record_fields(&mut store, value, &[]), vec!["host", "db"]);
        assert_eq!(
            record_fields(&mut store, value, &["db".to_owned()]),
            vec!["name", "port"]
        );
        assert!(record_fields(&mut store, value, &["host".to_owned()]).is_empty());
    }
}
