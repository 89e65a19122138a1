//! One document's analysis: parse, check, and the queries an editor asks
//! (diagnostics, hover, definition, completion, symbols, semantic tokens).
//!
//! Everything is recomputed from the text on each change: the front end
//! is fast enough (see the README's figure for a 5,000-line file) that
//! caching parts of it would buy little and cost correctness. Offsets are
//! bytes into the normalised text (CRLF read as LF, spec §3.1); [`LineIndex`]
//! converts them to the protocol's UTF-16 line/column positions.

use std::path::Path;

use ral_syntax::ast::{
    Atom, Head, HeadClass, NodeId, Pattern, PatternKind, Primary, Stage, StageKind, Stmt,
};
use ral_syntax::walk::{self, Visitor};
use ral_syntax::{Diagnostic, Parsed, Severity, SourceMap, Span};
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
    pub checked: Option<Checked>,
    sources: SourceMap,
    name: String,
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
    /// The byte range the insertion replaces.
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

impl Analysis {
    /// Parses and checks `text` (as a script file named `name`).
    pub fn new(name: &str, text: &str) -> Analysis {
        let mut sources = SourceMap::new();
        let id = sources.add(name, text);
        let text = sources.text(id).to_owned();
        let parsed = ral_syntax::parse(&text, id);
        let checked = (!parsed.has_errors()).then(|| {
            ral_types::check_program(
                &parsed.program,
                id,
                &TypeEnv::new(),
                &CheckOptions { is_script: true },
            )
        });
        Analysis {
            lines: LineIndex::new(&text),
            text,
            parsed,
            checked,
            sources,
            name: name.to_owned(),
        }
    }

    /// The analysis of this text with the line around `offset` blanked
    /// (spaces, so every other offset stays): while a line is being typed
    /// it usually does not parse, and the rest of the file still has types
    /// to complete from.
    fn without_line(&self, offset: usize) -> Analysis {
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        let mut text = String::with_capacity(self.text.len());
        text.push_str(&self.text[..start]);
        text.extend(std::iter::repeat_n(' ', self.text[start..end].len()));
        text.push_str(&self.text[end..]);
        Analysis::new(&self.name, &text)
    }

    /// Every parse and type diagnostic, errors and warnings.
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        let mut out: Vec<&Diagnostic> = self.parsed.diagnostics.iter().collect();
        if let Some(c) = &self.checked {
            out.extend(c.diagnostics.iter());
        }
        out
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

    /// Whether a diagnostic is an error (else a warning or a note).
    pub fn severity(d: &Diagnostic) -> Severity {
        d.severity
    }

    /// The rendered form of all diagnostics (for logs and tests).
    pub fn render(&self) -> String {
        let all: Vec<Diagnostic> = self.diagnostics().into_iter().cloned().collect();
        ral_syntax::render::render_all(&all, &self.sources, ral_syntax::render::Color::Never)
    }

    fn print(&self, t: Ty) -> Option<String> {
        self.checked
            .as_ref()
            .map(|c| ral_types::print_ty(&c.store, t))
    }

    /// What to show when hovering byte `offset`: the inferred type of the
    /// name or expression there, and a builtin's documentation.
    pub fn hover(&self, offset: usize) -> Option<Hover> {
        let checked = self.checked.as_ref()?;
        let at = |s: &Span| s.start as usize <= offset && offset <= s.end as usize;
        // A name being bound.
        if let Some((span, t)) = checked.elab.binders.iter().find(|(s, _)| at(s)) {
            let name = span.text(&self.text);
            return Some(Hover {
                span: *span,
                text: format!("```ral\n{name} : {}\n```", self.print(*t)?),
            });
        }
        let mut finder = Find {
            offset,
            atom: None,
            head: None,
        };
        finder.visit_program(&self.parsed.program);
        // A command head: a builtin's scheme and doc, a binding's type,
        // an external command.
        if let Some((span, stage_id, name)) = finder.head {
            let text = match checked.elab.heads.get(stage_id) {
                Some(HeadRes::Builtin(id) | HeadRes::BaseHandler(id)) => {
                    let b = ral_types::builtin_table().entry(*id)?;
                    builtin_doc(b)
                }
                Some(HeadRes::Binding(_)) => {
                    let ty = self.binding_type_at(span, &name)?;
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
            let t = checked.elab.atom_types.get(id)?;
            return Some(Hover {
                span,
                text: format!("```ral\n${name} : {}\n```", self.print(*t)?),
            });
        }
        let t = checked.elab.atom_types.get(id)?;
        Some(Hover {
            span,
            text: format!("```ral\n{}\n```", self.print(*t)?),
        })
    }

    /// The printed type of the binding a use at `span` resolved to.
    fn binding_type_at(&self, span: Span, _name: &str) -> Option<String> {
        let checked = self.checked.as_ref()?;
        let binder = match checked.elab.names.get(&span)? {
            NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b } => *b,
            NameRes::Local { binder: None }
            | NameRes::Session
            | NameRes::Builtin(_)
            | NameRes::Script => return None,
        };
        self.print(*checked.elab.binders.get(&binder)?)
    }

    /// Where the name at byte `offset` is bound.
    pub fn definition(&self, offset: usize) -> Option<Span> {
        let checked = self.checked.as_ref()?;
        let (_, res) = checked
            .elab
            .names
            .iter()
            .filter(|(s, _)| s.start as usize <= offset && offset <= s.end as usize)
            .min_by_key(|(s, _)| s.end - s.start)?;
        match res {
            NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b } => Some(*b),
            NameRes::Local { binder: None }
            | NameRes::Session
            | NameRes::Builtin(_)
            | NameRes::Script => None,
        }
    }

    /// The top-level bindings, with their types when the file checks.
    pub fn symbols(&self) -> Vec<Symbol> {
        let mut out = Vec::new();
        for stmt in &self.parsed.program.stmts {
            let Stmt::Let(l) = stmt else { continue };
            let mut names = Vec::new();
            binder_names(&l.pattern, &mut names);
            let function = l.value.as_block_literal().is_some();
            for (name, span) in names {
                let detail = self.checked.as_ref().and_then(|c| {
                    c.bindings
                        .iter()
                        .find(|b| b.span == span)
                        .map(|b| ral_types::print_scheme(&b.scheme, Some(&c.store)))
                });
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

    /// Completions at byte `offset`; paths are relative to `dir`.
    pub fn complete(&self, offset: usize, dir: &Path, executables: &[String]) -> Vec<Completion> {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        if self.checked.is_none() {
            let typed = self.without_line(offset);
            if typed.checked.is_some() {
                return self.complete_with(offset, dir, executables, &typed);
            }
        }
        self.complete_with(offset, dir, executables, self)
    }

    /// Completions at `offset` of this text, with types from `typed` (this
    /// analysis, or [`Analysis::without_line`]'s).
    fn complete_with(
        &self,
        offset: usize,
        dir: &Path,
        executables: &[String],
        typed: &Analysis,
    ) -> Vec<Completion> {
        let site = ide::site(&self.text, offset);
        // Names bound before the cursor whose block encloses it.
        let mut scope = Scope {
            offset,
            names: Vec::new(),
        };
        scope.visit_program(&self.parsed.program);
        let mut bindings: Vec<String> = scope.names.iter().map(|(n, _)| n.clone()).collect();
        bindings.sort();
        bindings.dedup();
        let builtins: Vec<String> = ral_types::builtin_table()
            .iter()
            .filter(|b| !b.name.starts_with('_') && b.layer != ral_types::Layer::Exarch)
            .map(|b| b.name.to_owned())
            .collect();
        let fields = |var: &str, path: &[String]| -> Vec<String> {
            let Some(c) = &typed.checked else {
                return Vec::new();
            };
            let Some((_, span)) = scope.names.iter().rev().find(|(n, _)| n == var) else {
                return Vec::new();
            };
            let Some(t) = c.elab.binders.get(span) else {
                return Vec::new();
            };
            fields_in(c, *t, path)
        };
        let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
        let env = ide::Env {
            bindings: &bindings,
            aliases: &[],
            executables,
            builtins: &builtins,
            cwd: dir,
            home: home.as_deref(),
            fields: &fields,
        };
        let table = ral_types::builtin_table();
        ide::candidates(&site, &env)
            .into_iter()
            .map(|c| {
                let (kind, detail) = match &site.want {
                    ide::Want::Variable => (
                        Class::Variable,
                        typed.type_of_name(&scope.names, &c.replacement),
                    ),
                    ide::Want::Field { .. } => (Class::Binder, None),
                    ide::Want::Path { .. } => (Class::String, None),
                    ide::Want::Command { .. } => match table.get(&c.replacement) {
                        Some(b) => (
                            Class::Command,
                            Some(ral_types::print_scheme(b.scheme(), None)),
                        ),
                        None if bindings.contains(&c.replacement) => (
                            Class::Variable,
                            typed.type_of_name(&scope.names, &c.replacement),
                        ),
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
            .collect()
    }

    fn type_of_name(&self, names: &[(String, Span)], name: &str) -> Option<String> {
        let c = self.checked.as_ref()?;
        let (_, span) = names.iter().rev().find(|(n, _)| n == name)?;
        self.print(*c.elab.binders.get(span)?)
    }

    /// The coloured pieces, split at line ends (editors colour one line
    /// per token).
    pub fn tokens(&self) -> Vec<(Span, Class)> {
        let mut out = Vec::new();
        for p in ide::classify(&self.text) {
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

/// Finds the innermost atom, or the bare command head, at an offset.
struct Find {
    offset: usize,
    /// (span, id, the variable's name when the atom is `$name`).
    atom: Option<(Span, NodeId, Option<String>)>,
    head: Option<(Span, NodeId, String)>,
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
