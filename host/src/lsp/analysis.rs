//! One document's analysis: parse, check, and the queries an editor asks
//! (diagnostics, hover, definition, completion, symbols, semantic tokens).
//!
//! - **Recovery.** The file is checked even when some of it does not
//!   parse: the parser turns a statement it cannot read into
//!   `Stmt::Error`, which the checker types as unknown (`?`, absorbing any
//!   use), so every statement that parsed is checked and answers hover,
//!   definition and completion, and names bound by good statements stay
//!   visible to later ones. A name an unreadable `let` was binding is not
//!   reported as unbound where it is used after that line: its line
//!   already carries the error.
//! - **`?` for what is already an error** (spec/deviations.md T1). A
//!   binding whose `let` holds an error shows the type `?` (hover, the
//!   symbol list, completion details), and so does every use of it: the
//!   checker's guess for it is not a type anyone should read.
//! - **Cost.** Every query is linear in the file at most: hover and
//!   definition walk only the statement under the cursor, symbols and
//!   completion index the bindings by span and name once.
//!
//! Offsets are bytes into the normalised text (CRLF read as LF, spec §3.1);
//! [`LineIndex`] converts them to the protocol's UTF-16 line/column
//! positions. The server ([`super`]) maps positions of a newer text onto an
//! older analysis.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use ral_syntax::ast::{
    Atom, Head, HeadClass, Let, NodeId, Pattern, PatternKind, Primary, Program, Stage, StageKind,
    Stmt,
};
use ral_syntax::token::TokenKind;
use ral_syntax::walk::{self, Visitor};
use ral_syntax::{Code, Diagnostic, Parsed, Severity, SourceId, SourceMap, Span};
use ral_types::{CheckOptions, Checked, HeadRes, NameRes, Ty, TypeEnv};

use crate::ide::{self, Class};

/// Byte offsets to protocol positions (lines, UTF-16 columns) and back.
#[derive(Debug)]
pub struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The (line, UTF-16 column) of byte `offset` of `text`.
    pub fn position(&self, text: &str, offset: usize) -> (u32, u32) {
        let offset = offset.min(text.len());
        let line = self
            .starts
            .partition_point(|s| *s <= offset)
            .saturating_sub(1);
        let start = self.starts.get(line).copied().unwrap_or(0);
        let col: usize = text
            .get(start..offset)
            .map_or(0, |s| s.chars().map(char::len_utf16).sum());
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(col).unwrap_or(u32::MAX),
        )
    }

    /// The byte offset of (line, UTF-16 column), clamped to the text.
    pub fn offset(&self, text: &str, line: u32, col: u32) -> usize {
        let Some(&start) = self.starts.get(line as usize) else {
            return text.len();
        };
        let end = self
            .starts
            .get(line as usize + 1)
            .map_or(text.len(), |e| e.saturating_sub(1));
        let mut units = 0usize;
        for (i, c) in text.get(start..end).unwrap_or("").char_indices() {
            if units >= col as usize {
                return start + i;
            }
            units += c.len_utf16();
        }
        end
    }
}

/// A document, analysed.
pub struct Analysis {
    pub text: String,
    pub lines: LineIndex,
    pub parsed: Parsed,
    pub checked: Checked,
    /// Parse and type diagnostics, in that order, without the unbound
    /// names an unreadable line explains (see the module docs).
    diagnostics: Vec<Diagnostic>,
    /// Binders of a `let` that holds an error: their type prints `?`.
    poisoned: HashSet<Span>,
    sources: SourceMap,
}

/// What hovering shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hover {
    pub span: Span,
    /// Markdown.
    pub text: String,
}

/// A completion offered at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completion {
    pub label: String,
    pub insert: String,
    pub kind: Class,
    pub detail: Option<String>,
    /// The byte range the insertion replaces (in the text completed).
    pub start: usize,
    pub end: usize,
}

/// A top-level binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub span: Span,
    pub whole: Span,
    pub detail: Option<String>,
    pub function: bool,
}

/// The printed form of a type already reported as an error (T1).
const UNKNOWN: &str = "?";

impl Analysis {
    /// Parses and checks `text` (as a script file named `name`).
    pub fn new(name: &str, text: &str) -> Analysis {
        let mut sources = SourceMap::new();
        let id = sources.add(name, text);
        let text = sources.text(id).to_owned();
        let parsed = ral_syntax::parse(&text, id);
        let checked = ral_types::check_program(
            &parsed.program,
            id,
            &TypeEnv::new(),
            &CheckOptions { is_script: true },
        );
        let unreadable = unreadable_lets(&parsed.program, &text);
        let mut diagnostics = parsed.diagnostics.clone();
        diagnostics.extend(
            checked
                .diagnostics
                .iter()
                .filter(|d| !explained_by(d, &unreadable, &text))
                .cloned(),
        );
        let poisoned = poisoned_binders(&parsed.program, &diagnostics);
        Analysis {
            lines: LineIndex::new(&text),
            text,
            parsed,
            checked,
            diagnostics,
            poisoned,
            sources,
        }
    }

    /// Every parse and type diagnostic, errors and warnings.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// A diagnostic's message with its notes and help, for the editor.
    pub fn message(d: &Diagnostic) -> String {
        let mut m = d.message.clone();
        if !d.primary.text.is_empty() && d.primary.text != d.message {
            m.push_str(": ");
            m.push_str(&d.primary.text);
        }
        for n in &d.notes {
            m.push('\n');
            m.push_str(n);
        }
        if let Some(h) = &d.help {
            m.push_str("\nhelp: ");
            m.push_str(h);
        }
        m
    }

    /// The rendered form of all diagnostics (for logs and tests).
    pub fn render(&self) -> String {
        ral_syntax::render::render_all(
            &self.diagnostics,
            &self.sources,
            ral_syntax::render::Color::Never,
        )
    }

    fn print(&self, t: Ty) -> String {
        ral_types::print_ty(&self.checked.store, t)
    }

    /// The printed type of the binder at `span`.
    fn binder_type(&self, span: Span) -> Option<String> {
        if self.poisoned.contains(&span) {
            return Some(UNKNOWN.to_owned());
        }
        Some(self.print(*self.checked.elab.binders.get(&span)?))
    }

    /// The binder a name use at `span` resolved to.
    fn binder_of(&self, span: Span) -> Option<Span> {
        match self.checked.elab.names.get(&span)? {
            NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b } => Some(*b),
            NameRes::Local { binder: None }
            | NameRes::Session
            | NameRes::Builtin(_)
            | NameRes::Script => None,
        }
    }

    /// The top-level statements whose span touches `offset`.
    fn stmts_at(&self, offset: usize) -> &[Stmt] {
        stmts_at(&self.parsed.program.stmts, offset)
    }

    /// What to show when hovering byte `offset`: the inferred type of the
    /// name or expression there, and a builtin's documentation.
    pub fn hover(&self, offset: usize) -> Option<Hover> {
        let checked = &self.checked;
        let mut finder = Find {
            offset,
            atom: None,
            head: None,
            binder: None,
        };
        for stmt in self.stmts_at(offset) {
            finder.visit_stmt(stmt);
        }
        // A name being bound.
        if let Some(span) = finder.binder {
            let name = span.text(&self.text);
            return Some(Hover {
                span,
                text: format!("```ral\n{name} : {}\n```", self.binder_type(span)?),
            });
        }
        // A command head: a builtin's scheme and doc, a binding's type,
        // an external command.
        if let Some((span, stage_id, name)) = finder.head {
            let text = match checked.elab.heads.get(stage_id) {
                Some(HeadRes::Builtin(id) | HeadRes::BaseHandler(id)) => {
                    let b = ral_types::builtin_table().entry(*id)?;
                    builtin_doc(b)
                }
                Some(HeadRes::Binding(_)) => {
                    let ty = self.binder_type(self.binder_of(span)?)?;
                    format!("```ral\n{name} : {ty}\n```")
                }
                Some(HeadRes::External(n)) => format!("`{n}`: an external command"),
                Some(HeadRes::Path(p)) => format!("`{p}`: runs that file"),
                Some(HeadRes::Value) | None => return None,
            };
            return Some(Hover { span, text });
        }
        let (span, id, var) = finder.atom?;
        if let Some(name) = &var {
            if let Some(NameRes::Builtin(bid)) = checked.elab.names.get(&span) {
                let b = ral_types::builtin_table().entry(*bid)?;
                return Some(Hover {
                    span,
                    text: builtin_doc(b),
                });
            }
            let ty = match self.binder_of(span) {
                Some(b) if self.poisoned.contains(&b) => UNKNOWN.to_owned(),
                _ => self.print(*checked.elab.atom_types.get(id)?),
            };
            return Some(Hover {
                span,
                text: format!("```ral\n${name} : {ty}\n```"),
            });
        }
        let t = checked.elab.atom_types.get(id)?;
        Some(Hover {
            span,
            text: format!("```ral\n{}\n```", self.print(*t)),
        })
    }

    /// Where the name at byte `offset` is bound.
    pub fn definition(&self, offset: usize) -> Option<Span> {
        let mut uses = Uses { offset, best: None };
        for stmt in self.stmts_at(offset) {
            uses.visit_stmt(stmt);
        }
        self.binder_of(uses.best?)
    }

    /// The top-level bindings, with their types.
    pub fn symbols(&self) -> Vec<Symbol> {
        let schemes: HashMap<Span, &ral_types::TopBinding> =
            self.checked.bindings.iter().map(|b| (b.span, b)).collect();
        let mut out = Vec::new();
        for stmt in &self.parsed.program.stmts {
            let Stmt::Let(l) = stmt else { continue };
            let mut names = Vec::new();
            binder_names(&l.pattern, &mut names);
            let function = l.value.as_block_literal().is_some();
            for (name, span) in names {
                let detail = if self.poisoned.contains(&span) {
                    Some(UNKNOWN.to_owned())
                } else {
                    schemes
                        .get(&span)
                        .map(|b| ral_types::print_scheme(&b.scheme, Some(&self.checked.store)))
                };
                out.push(Symbol {
                    name,
                    span,
                    whole: l.span,
                    detail,
                    function,
                });
            }
        }
        out
    }

    /// Completions for `text` (the newest text of the document, which may
    /// be newer than this analysis) at its byte `offset`; `here` is the
    /// matching offset of this analysis' text, the scope the names come
    /// from. Paths are relative to `dir`. At most `limit` candidates are
    /// returned, best first, and whether more were left out.
    pub fn complete(
        &self,
        text: &str,
        offset: usize,
        here: usize,
        dir: &Path,
        executables: &[String],
        limit: usize,
    ) -> (Vec<Completion>, bool) {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let site = ide::site(text, offset);
        // Names bound before the cursor whose block encloses it; the last
        // binding of a name is the one in scope.
        let mut scope = Scope {
            offset: here,
            names: Vec::new(),
        };
        for stmt in &self.parsed.program.stmts {
            let span = stmt.span();
            if span.start as usize >= here {
                break;
            }
            match stmt {
                // A statement the cursor is past binds only its own
                // pattern's names here: its blocks do not enclose it.
                Stmt::Let(l) if (span.end as usize) < here => {
                    binder_names(&l.pattern, &mut scope.names);
                }
                Stmt::Chain(_) | Stmt::Error(_) if (span.end as usize) < here => {}
                Stmt::Let(_) | Stmt::Chain(_) | Stmt::Error(_) => scope.visit_stmt(stmt),
            }
        }
        let mut latest: HashMap<&str, Span> = HashMap::with_capacity(scope.names.len());
        for (n, s) in &scope.names {
            latest.insert(n.as_str(), *s);
        }
        let mut bindings: Vec<String> = latest.keys().map(|n| (*n).to_owned()).collect();
        bindings.sort();
        let builtins: Vec<String> = ral_types::builtin_table()
            .iter()
            .filter(|b| !b.name.starts_with('_') && b.layer != ral_types::Layer::Exarch)
            .map(|b| b.name.to_owned())
            .collect();
        let fields = |var: &str, path: &[String]| -> Vec<String> {
            let Some(span) = latest.get(var) else {
                return Vec::new();
            };
            if self.poisoned.contains(span) {
                return Vec::new();
            }
            let Some(t) = self.checked.elab.binders.get(span) else {
                return Vec::new();
            };
            fields_in(&self.checked, *t, path)
        };
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        // The shipped specs, without running their generators.
        let arguments = |inv: &ide::Invocation, typed: &str| -> Vec<ide::Offer> {
            match ide::specs::shipped(&inv.head) {
                Some(spec) => ide::specs::offers(spec, &inv.words, typed),
                None => vec![ide::Offer::Files],
            }
        };
        let env = ide::Env {
            bindings: &bindings,
            aliases: &[],
            executables,
            builtins: &builtins,
            cwd: dir,
            home: home.as_deref(),
            fields: &fields,
            arguments: Some(&arguments),
        };
        let table = ral_types::builtin_table();
        let mut all = ide::candidates(&site, &env);
        let more = all.len() > limit;
        all.truncate(limit);
        let type_of = |name: &str| latest.get(name).and_then(|s| self.binder_type(*s));
        let items = all
            .into_iter()
            .map(|c| {
                let (kind, detail) = match &site.want {
                    ide::Want::Variable => (Class::Variable, type_of(&c.replacement)),
                    ide::Want::Field { .. } => (Class::Binder, None),
                    ide::Want::Path { .. } => (Class::String, None),
                    ide::Want::Command { .. } => match table.get(&c.replacement) {
                        Some(b) => (
                            Class::Command,
                            Some(ral_types::print_scheme(b.scheme(), None)),
                        ),
                        None if latest.contains_key(c.replacement.as_str()) => {
                            (Class::Variable, type_of(&c.replacement))
                        }
                        None if ral_syntax::ast::is_reserved(&c.replacement) => {
                            (Class::Keyword, None)
                        }
                        None => (Class::Command, Some("external command".to_owned())),
                    },
                };
                Completion {
                    label: c.display,
                    insert: c.replacement,
                    kind,
                    detail,
                    start: site.start,
                    end: offset,
                }
            })
            .collect();
        (items, more)
    }

    /// The coloured pieces, split at line ends (editors colour one line
    /// per token).
    pub fn tokens(&self) -> Vec<(Span, Class)> {
        let mut out = Vec::new();
        for p in ide::tokens::classify_parsed(&self.text, &self.parsed.program) {
            let (mut s, e) = (p.span.start as usize, p.span.end as usize);
            while let Some(nl) = self.text.get(s..e).and_then(|t| t.find('\n')) {
                if nl > 0 {
                    out.push((span(s, s + nl), p.class));
                }
                s += nl + 1;
            }
            if s < e {
                out.push((span(s, e), p.class));
            }
        }
        out
    }
}

fn span(s: usize, e: usize) -> Span {
    Span::new(
        u32::try_from(s).unwrap_or(u32::MAX),
        u32::try_from(e).unwrap_or(u32::MAX),
    )
}

/// The statements of a sorted list whose span touches `offset`.
fn stmts_at(stmts: &[Stmt], offset: usize) -> &[Stmt] {
    let from = stmts.partition_point(|s| (s.span().end as usize) < offset);
    let to = from
        + stmts[from..]
            .iter()
            .take_while(|s| s.span().start as usize <= offset)
            .count();
    stmts.get(from..to).unwrap_or(&[])
}

/// A builtin's hover text: its scheme and its documentation.
fn builtin_doc(b: &ral_types::Builtin) -> String {
    let what = match b.kind {
        ral_types::BuiltinKind::Builtin => "builtin",
        ral_types::BuiltinKind::Prelude => "prelude function",
        ral_types::BuiltinKind::BaseHandler => "base handler",
        ral_types::BuiltinKind::Decoder => "decoder",
        ral_types::BuiltinKind::Boundary => "checked boundary",
    };
    format!(
        "```ral\n{} : {}\n```\n{} ({what})",
        b.name,
        ral_types::print_scheme(b.scheme(), None),
        b.doc
    )
}

/// The field labels of `t` indexed by `path`.
fn fields_in(c: &Checked, t: Ty, path: &[String]) -> Vec<String> {
    // `record_fields` needs a mutable store; the checker's is borrowed, so
    // work on a closed copy of the type.
    let scheme = ral_types::EnvEntry::closed(&c.store, t).scheme;
    let mut store = ral_types::TyStore::new();
    let t = store.instantiate(&scheme);
    ide::complete::record_fields(&mut store, t, path)
}

/// The names each unreadable `let` was binding, with where it starts: a
/// statement the parser gave up on that begins `let NAME` (or a pattern
/// of names) before its `=`.
fn unreadable_lets(program: &Program, text: &str) -> Vec<(usize, String)> {
    struct Errors<'t> {
        text: &'t str,
        out: Vec<(usize, String)>,
    }
    impl Visitor for Errors<'_> {
        fn visit_stmt(&mut self, stmt: &Stmt) {
            if let Stmt::Error(s) = stmt {
                let src = s.text(self.text);
                let toks = ral_syntax::lexer::lex(src, SourceId(0)).tokens;
                let mut words = toks
                    .iter()
                    .filter(|t| !matches!(t.kind, TokenKind::Whitespace | TokenKind::Newline));
                if words
                    .next()
                    .is_some_and(|t| t.kind == TokenKind::Word && t.span.text(src) == "let")
                {
                    for t in words {
                        let w = t.span.text(src);
                        if t.kind == TokenKind::Word && w == "=" {
                            break;
                        }
                        if t.kind == TokenKind::Word && is_name(w) {
                            self.out.push((s.start as usize, w.to_owned()));
                        }
                    }
                }
            }
            walk::walk_stmt(self, stmt);
        }
    }
    let mut e = Errors {
        text,
        out: Vec::new(),
    };
    e.visit_program(program);
    e.out
}

/// Whether `w` can be a binding name (spec §3.6).
fn is_name(w: &str) -> bool {
    let mut chars = w.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !ral_syntax::ast::is_reserved(w)
}

/// Whether `d` reports an unbound name that an unreadable `let` earlier
/// in the file was binding.
fn explained_by(d: &Diagnostic, unreadable: &[(usize, String)], text: &str) -> bool {
    if d.code != Code::UnboundName || unreadable.is_empty() {
        return false;
    }
    let used = d.primary.span.text(text).trim_start_matches('$');
    let used = used
        .strip_prefix('(')
        .and_then(|u| u.strip_suffix(')'))
        .unwrap_or(used);
    unreadable
        .iter()
        .any(|(at, name)| *at <= d.primary.span.start as usize && name == used)
}

/// The binders of every `let` (at any depth) holding an error diagnostic.
fn poisoned_binders(program: &Program, diagnostics: &[Diagnostic]) -> HashSet<Span> {
    struct Lets<'d> {
        errors: &'d [u32],
        out: HashSet<Span>,
    }
    impl Visitor for Lets<'_> {
        fn visit_let(&mut self, l: &Let) {
            let from = self.errors.partition_point(|e| *e < l.span.start);
            if self.errors.get(from).is_some_and(|e| *e < l.span.end) {
                let mut names = Vec::new();
                binder_names(&l.pattern, &mut names);
                self.out.extend(names.into_iter().map(|(_, s)| s));
            }
            walk::walk_let(self, l);
        }
    }
    let mut errors: Vec<u32> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.primary.span.start)
        .collect();
    if errors.is_empty() {
        return HashSet::new();
    }
    errors.sort_unstable();
    let mut lets = Lets {
        errors: &errors,
        out: HashSet::new(),
    };
    lets.visit_program(program);
    lets.out
}

/// Finds the innermost atom, the bare command head, or the binder at an
/// offset.
struct Find {
    offset: usize,
    /// (span, id, the variable's name when the atom is `$name`).
    atom: Option<(Span, NodeId, Option<String>)>,
    head: Option<(Span, NodeId, String)>,
    binder: Option<Span>,
}

impl Find {
    fn covers(&self, s: Span) -> bool {
        s.start as usize <= self.offset && self.offset <= s.end as usize
    }
}

impl Visitor for Find {
    fn visit_stage(&mut self, stage: &Stage) {
        if let StageKind::Command(cmd) = &stage.kind {
            if let (Head::Atom(a), HeadClass::Bare(w)) = (&cmd.head, cmd.head.class()) {
                if self.covers(a.span) {
                    self.head = Some((a.span, stage.id, w.to_owned()));
                }
            }
        }
        walk::walk_stage(self, stage);
    }

    fn visit_atom(&mut self, atom: &Atom) {
        if self.covers(atom.span) {
            let var = match &atom.primary {
                Primary::Var(n) if atom.indexes.is_empty() => Some(n.text.clone()),
                _ => None,
            };
            // Inner atoms are visited after outer ones: the last wins.
            self.atom = Some((atom.span, atom.id, var));
        }
        walk::walk_atom(self, atom);
    }

    fn visit_pattern(&mut self, pattern: &Pattern) {
        let mut names = Vec::new();
        binder_names(pattern, &mut names);
        if let Some((_, s)) = names.into_iter().find(|(_, s)| self.covers(*s)) {
            self.binder = Some(s);
        }
        walk::walk_pattern(self, pattern);
    }
}

/// Finds the narrowest name use (`$name` or a bare head) at an offset.
struct Uses {
    offset: usize,
    best: Option<Span>,
}

impl Uses {
    fn offer(&mut self, s: Span) {
        let covers = s.start as usize <= self.offset && self.offset <= s.end as usize;
        if covers && self.best.is_none_or(|b| s.end - s.start < b.end - b.start) {
            self.best = Some(s);
        }
    }
}

impl Visitor for Uses {
    fn visit_stage(&mut self, stage: &Stage) {
        if let StageKind::Command(cmd) = &stage.kind {
            if let (Head::Atom(a), HeadClass::Bare(_)) = (&cmd.head, cmd.head.class()) {
                self.offer(a.span);
            }
        }
        walk::walk_stage(self, stage);
    }

    fn visit_atom(&mut self, atom: &Atom) {
        if let Primary::Var(n) = &atom.primary {
            self.offer(n.span);
        }
        walk::walk_atom(self, atom);
    }
}

fn binder_names(p: &Pattern, out: &mut Vec<(String, Span)>) {
    match &p.kind {
        PatternKind::Bind(n) => out.push((n.text.clone(), n.span)),
        PatternKind::List { items, rest } => {
            for i in items {
                binder_names(i, out);
            }
            if let Some(r) = rest {
                if r.text != "_" {
                    out.push((r.text.clone(), r.span));
                }
            }
        }
        PatternKind::Record { fields } => {
            for f in fields {
                binder_names(&f.pattern, out);
            }
        }
        PatternKind::Wildcard | PatternKind::Error => {}
    }
}

/// The names in scope at an offset: bound before it, in a block that
/// encloses it.
struct Scope {
    offset: usize,
    names: Vec<(String, Span)>,
}

impl Visitor for Scope {
    fn visit_block(&mut self, block: &ral_syntax::ast::Block) {
        let inside =
            block.span.start as usize <= self.offset && self.offset <= block.span.end as usize;
        if inside {
            walk::walk_block(self, block);
        }
    }

    fn visit_pattern(&mut self, pattern: &Pattern) {
        let mut names = Vec::new();
        binder_names(pattern, &mut names);
        self.names.extend(
            names
                .into_iter()
                .filter(|(_, s)| (s.end as usize) < self.offset),
        );
    }
}
