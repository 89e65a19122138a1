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
    /// A file or directory; `quoted` when the word is an unclosed `'…`.
    Path { quoted: bool },
}

/// Where the completed word starts, what was typed of it, and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The byte offset the replacement starts at.
    pub start: usize,
    /// The text typed so far, without its `$` or opening quote.
    pub typed: String,
    pub want: Want,
}

/// One candidate: the text that replaces the word, and what a list shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub replacement: String,
    pub display: String,
}

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
    let head_at = |n: usize| command_position(before, &tokens[..n]);
    let empty = |want| Site {
        start: pos,
        typed: String::new(),
        want,
    };
    let Some(last) = last else {
        // Only an empty line has no token ending at the cursor.
        return empty(Want::Command {
            external_only: false,
        });
    };
    let n = tokens.len() - 1;
    let text = last.span.text(before);
    let start = last.span.start as usize;
    match last.kind {
        TokenKind::Var => Site {
            start: start + 1,
            typed: text[1..].to_owned(),
            want: Want::Variable,
        },
        TokenKind::Error if text == "$" => empty(Want::Variable),
        TokenKind::LBracket => match field_chain(before, &tokens) {
            Some((var, path)) => empty(Want::Field { var, path }),
            None => empty(Want::Path { quoted: false }),
        },
        TokenKind::Word => {
            let glued_lbracket = n > 0
                && tokens.get(n - 1).is_some_and(|t| {
                    t.kind == TokenKind::LBracket && t.span.end == last.span.start
                });
            if glued_lbracket {
                if let Some((var, path)) = field_chain(before, &tokens[..n]) {
                    return Site {
                        start,
                        typed: text.to_owned(),
                        want: Want::Field { var, path },
                    };
                }
            }
            let caret = n > 0
                && tokens
                    .get(n - 1)
                    .is_some_and(|t| t.kind == TokenKind::Caret && t.span.end == last.span.start);
            let pathish = text.contains('/') || text.starts_with('.') || text.starts_with('~');
            let want = if caret {
                Want::Command {
                    external_only: true,
                }
            } else if head_at(n) && !pathish {
                Want::Command {
                    external_only: false,
                }
            } else {
                Want::Path { quoted: false }
            };
            Site {
                start,
                typed: text.to_owned(),
                want,
            }
        }
        TokenKind::RawString {
            hashes: 0,
            closed: false,
        } => Site {
            start,
            typed: text[1..].to_owned(),
            want: Want::Path { quoted: true },
        },
        TokenKind::Caret => empty(Want::Command {
            external_only: true,
        }),
        TokenKind::Whitespace
        | TokenKind::Newline
        | TokenKind::Semi
        | TokenKind::Pipe
        | TokenKind::Question
        | TokenKind::LBrace
        | TokenKind::PipePipe => {
            if head_at(tokens.len()) {
                empty(Want::Command {
                    external_only: false,
                })
            } else {
                empty(Want::Path { quoted: false })
            }
        }
        TokenKind::Comment
        | TokenKind::RawString { .. }
        | TokenKind::DqStart
        | TokenKind::DqText
        | TokenKind::DqEscape { .. }
        | TokenKind::DqEnd
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
        | TokenKind::Error => empty(Want::Path { quoted: false }),
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

/// Whether a word starting after `tokens` would be a command head.
fn command_position(src: &str, tokens: &[Token]) -> bool {
    let mut head = true;
    let mut in_let = false;
    for t in tokens {
        match t.kind {
            TokenKind::Whitespace | TokenKind::Comment => {}
            TokenKind::Newline
            | TokenKind::Semi
            | TokenKind::Pipe
            | TokenKind::PipePipe
            | TokenKind::Question
            | TokenKind::LBrace => {
                head = true;
                in_let = false;
            }
            TokenKind::Word => {
                let w = t.span.text(src);
                if head {
                    head = false;
                    in_let = w == "let";
                } else if in_let && w == "=" {
                    head = true;
                    in_let = false;
                }
            }
            TokenKind::RawString { .. }
            | TokenKind::DqStart
            | TokenKind::DqText
            | TokenKind::DqEscape { .. }
            | TokenKind::DqEnd
            | TokenKind::Var
            | TokenKind::VarParen
            | TokenKind::ExprOpen
            | TokenKind::Bang
            | TokenKind::Caret
            | TokenKind::Tag
            | TokenKind::Spread
            | TokenKind::RBrace
            | TokenKind::LBracket
            | TokenKind::RBracket
            | TokenKind::LParen
            | TokenKind::RParen
            | TokenKind::Comma
            | TokenKind::Colon
            | TokenKind::Redirect { .. }
            | TokenKind::Op(_)
            | TokenKind::Amp
            | TokenKind::AmpAmp
            | TokenKind::Error => head = false,
        }
    }
    head
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
                })
                .collect()
        }
        Want::Command { external_only } => {
            let mut names: Vec<String> = env.executables.to_vec();
            if !external_only {
                names.extend(env.builtins.iter().cloned());
                names.extend(env.bindings.iter().filter(|n| !n.starts_with('_')).cloned());
                names.extend(env.aliases.iter().cloned());
                names.extend(KEYWORDS.iter().map(|k| (*k).to_owned()));
            }
            plain(names)
        }
        Want::Path { quoted } => path_candidates(&site.typed, *quoted, env),
    }
}

/// A name as a ral word.
fn word(s: &str) -> String {
    let mut out = String::new();
    ral_vm::quote::write_ral_word(&mut out, s);
    out
}

fn path_candidates(typed: &str, quoted: bool, env: &Env<'_>) -> Vec<Candidate> {
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
    fn fields_of_a_record_scheme() {
        let scheme =
            ral_types::parse_scheme("Returns [host: String, db: [name: String, port: Integer]]")
                .unwrap_or_else(|e| panic!("{e}"));
        // The scheme is a computation; its value is the record.
        let mut store = TyStore::new();
        let t = store.instantiate(&scheme);
        let value = match store.view(store.find_imm(t)) {
            TyView::Con(Con::Returns { value, .. }) => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(record_fields(&mut store, value, &[]), vec!["host", "db"]);
        assert_eq!(
            record_fields(&mut store, value, &["db".to_owned()]),
            vec!["name", "port"]
        );
        assert!(record_fields(&mut store, value, &["host".to_owned()]).is_empty());
    }
}
