//! Parse-time validation over the finished tree.
//!
//! The parser builds the AST permissively; the rejections the spec assigns to
//! parse time but that need a whole form in view are made here, in one walk:
//!
//! - linear patterns: a name bound twice in one `let` pattern or one block
//!   parameter (§5.2, §5.4, §17.1) — `duplicate-binding`;
//! - a reserved word bound as a name (§3.6) — `reserved-name`;
//! - a record update's spread must lead, and there is one (§4.5) —
//!   `misplaced-spread`;
//! - one static key twice in a literal or record pattern (§4.5, §5.2) —
//!   `duplicate-key`;
//! - one stream bound twice by a redirect list, `1>&2`, other duplications
//!   than `2>&1`, and a bare word after `<<` (§7.4, §7.5) — `redirect-twice`,
//!   `redirect-to-stderr`, `bad-descriptor`, `bare-here-string`;
//! - `if`/`case` arms are block literals or `$name` (§8.2, §8.3, §17.1) —
//!   `invalid-arm`; a `case` has arms, each tag once — `empty-case`,
//!   `duplicate-arm`;
//! - a bare non-numeral word under `-`, arithmetic or ordering in `$[...]`
//!   (§17.1) — `bare-word-arithmetic`;
//! - `within` and `grant` options are written in the form's own bracket with
//!   known names (§9.1, §12.1) — `scope-option`, `spread-not-allowed`.
//!
//! Validation only reports; it never changes the tree and never panics.

use crate::ast::{
    is_identifier, is_reserved, parse_numeral, Atom, Block, Case, Entry, Expr, ExprKind, If, Key,
    Let, ListItem, Name, Pattern, PatternKind, Primary, Program, Redirect, RedirectKind, ScopeKind,
    Stage, StageKind, UnOp,
};
use crate::codes::Code;
use crate::diag::Diagnostic;
use crate::span::{SourceId, Span};
use crate::walk::{self, Visitor};

/// The option names `within` accepts (§9.1).
pub const WITHIN_OPTIONS: &[&str] = &["dir", "env", "handlers", "handler"];

/// The capability fields `grant` accepts (§12.1).
pub const GRANT_FIELDS: &[&str] = &["exec", "fs", "net", "detach", "editor", "shell"];

/// Reports every parse-time rejection in `program` that needs a whole form in
/// view. Diagnostics come out in walk order; [`crate::parse`] sorts them.
pub fn validate(program: &Program, source: SourceId) -> Vec<Diagnostic> {
    let mut v = Validator {
        source,
        diags: Vec::new(),
    };
    v.visit_program(program);
    v.diags
}

struct Validator {
    source: SourceId,
    diags: Vec<Diagnostic>,
}

fn stream_name(fd: u8) -> &'static str {
    match fd {
        0 => "standard input",
        1 => "standard output",
        2 => "standard error",
        _ => "this descriptor",
    }
}

fn redirect_spelling(r: &Redirect) -> String {
    let fd = if r.explicit_fd {
        r.fd.to_string()
    } else {
        String::new()
    };
    let op = match &r.op {
        RedirectKind::Write(_) => ">".to_string(),
        RedirectKind::Stream(_) => ">~".to_string(),
        RedirectKind::Append(_) => ">>".to_string(),
        RedirectKind::Read(_) => "<".to_string(),
        RedirectKind::Here(_) => "<<".to_string(),
        RedirectKind::Dup { target } => format!(">&{target}"),
    };
    format!("{fd}{op}")
}

/// Whether an atom may stand as an `if`/`case` arm: a block literal or a bare
/// `$name` (§17.1).
fn is_arm(atom: &Atom) -> bool {
    atom.indexes.is_empty() && matches!(atom.primary, Primary::Block(_) | Primary::Var(_))
}

/// Collects the names a pattern binds, in source order. `_` binds nothing.
fn bound_names<'a>(pattern: &'a Pattern, out: &mut Vec<&'a Name>) {
    match &pattern.kind {
        PatternKind::Wildcard | PatternKind::Error => {}
        PatternKind::Bind(name) => {
            if name.text != "_" {
                out.push(name);
            }
        }
        PatternKind::List { items, rest } => {
            for item in items {
                bound_names(item, out);
            }
            if let Some(rest) = rest {
                if rest.text != "_" {
                    out.push(rest);
                }
            }
        }
        PatternKind::Record { fields } => {
            for field in fields {
                bound_names(&field.pattern, out);
            }
        }
    }
}

impl Validator {
    fn push(&mut self, d: Diagnostic) {
        self.diags.push(d);
    }

    fn diag(&self, code: Code, message: impl Into<String>, span: Span, label: &str) -> Diagnostic {
        Diagnostic::new(code, self.source, message, span, label)
    }

    // ---- patterns ----

    /// Linearity of one whole pattern (a `let` pattern or one parameter).
    fn check_linear(&mut self, pattern: &Pattern) {
        let mut names = Vec::new();
        bound_names(pattern, &mut names);
        for (i, name) in names.iter().enumerate() {
            let first = names
                .get(..i)
                .and_then(|earlier| earlier.iter().find(|n| n.text == name.text));
            if let Some(first) = first {
                let d = self
                    .diag(
                        Code::DuplicateBinding,
                        format!("`{}` is bound twice in one pattern", name.text),
                        name.span,
                        "bound again here",
                    )
                    .with_secondary(first.span, "first bound here")
                    .with_note(
                        "A pattern binds all its names at once, so each name may appear in it only once.",
                    )
                    .with_help(format!(
                        "rename one of them, or write `_` where the value is not needed (`{}2`)",
                        name.text
                    ));
                self.push(d);
            }
        }
    }

    fn check_reserved_binding(&mut self, name: &Name) {
        if is_reserved(&name.text) {
            let d = self
                .diag(
                    Code::ReservedName,
                    format!("`{}` is a reserved word and cannot be bound", name.text),
                    name.span,
                    "reserved word",
                )
                .with_note(
                    "The words if, elsif, else, let, return, case, within, grant, try, guard, audit, true and false are reserved and never name a binding.",
                )
                .with_help(format!("choose another name, such as `{}_`", name.text));
            self.push(d);
        }
    }

    // ---- keys and spreads ----

    /// One static key twice among `keys`.
    fn check_duplicate_keys<'a>(&mut self, keys: impl Iterator<Item = &'a Name>, what: &str) {
        let mut seen: Vec<&Name> = Vec::new();
        for key in keys {
            if let Some(first) = seen.iter().find(|k| k.text == key.text) {
                let d = self
                    .diag(
                        Code::DuplicateKey,
                        format!("the key `{}` is written twice in one {what}", key.text),
                        key.span,
                        "written again here",
                    )
                    .with_secondary(first.span, "first written here")
                    .with_note(format!("Each key of a {what} is written at most once."))
                    .with_help("remove one of the two entries, or rename one key");
                self.push(d);
            } else {
                seen.push(key);
            }
        }
    }

    fn static_keys(entries: &[Entry]) -> impl Iterator<Item = &Name> {
        entries.iter().filter_map(|e| match e {
            Entry::Field {
                key: Key::Static(name),
                ..
            } => Some(name),
            Entry::Field {
                key: Key::Computed(_),
                ..
            }
            | Entry::Spread { .. } => None,
        })
    }

    /// A record update has one spread and it leads (§4.5).
    fn check_record_spreads(&mut self, entries: &[Entry]) {
        let mut first_spread: Option<Span> = None;
        for (i, entry) in entries.iter().enumerate() {
            let Entry::Spread { span, .. } = entry else {
                continue;
            };
            if let Some(first) = first_spread {
                let d = self
                    .diag(
                        Code::MisplacedSpread,
                        "a record update has a second spread",
                        *span,
                        "second spread",
                    )
                    .with_secondary(first, "the record being updated")
                    .with_note(
                        "A record update `[...$r, k: v]` copies one record and replaces some of its fields; it has exactly one spread, written first.",
                    )
                    .with_help("update one record at a time: `let s = [...$r, k: v]`, then `[...$s, …]`");
                self.push(d);
            } else if i != 0 {
                let first_field = entries.first().map(entry_span).unwrap_or(*span);
                let d = self
                    .diag(
                        Code::MisplacedSpread,
                        "the spread in a record update must come first",
                        *span,
                        "spread after a field",
                    )
                    .with_secondary(first_field, "a field is written before it")
                    .with_note(
                        "A record update `[...$r, k: v]` starts with the record it copies; the fields after it replace that record's fields.",
                    )
                    .with_help("move the spread to the front of the bracket");
                self.push(d);
                first_spread = Some(*span);
            } else {
                first_spread = Some(*span);
            }
        }
    }

    /// Checks a record or map literal's own rules (not its children).
    fn check_collection(&mut self, atom: &Atom) {
        match &atom.primary {
            Primary::Record(entries) => {
                self.check_record_spreads(entries);
                self.check_duplicate_keys(Self::static_keys(entries), "record");
            }
            Primary::Map(entries) => {
                self.check_duplicate_keys(Self::static_keys(entries), "map");
            }
            Primary::Word(_)
            | Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Str(_)
            | Primary::Var(_)
            | Primary::Expr(_)
            | Primary::Force(_)
            | Primary::Tag { .. }
            | Primary::Block(_)
            | Primary::List(_)
            | Primary::Error => {}
        }
    }

    // ---- arms ----

    fn check_arm(&mut self, arm: &Atom, form: &str, related: Span, related_text: &str) {
        if is_arm(arm) || matches!(arm.primary, Primary::Error) {
            return;
        }
        let d = self
            .diag(
                Code::InvalidArm,
                format!("this `{form}` arm is neither a block nor a name"),
                arm.span,
                "not a block literal or `$name`",
            )
            .with_secondary(related, related_text)
            .with_note(
                "An arm is a block literal `{ … }` or a `$name` holding one; any other atom would be evaluated before the form chose its arm.",
            )
            .with_help("bind it first and name it: `let arm = …`, then write `$arm` here");
        self.push(d);
    }

    fn check_if(&mut self, form: &If) {
        for branch in &form.branches {
            self.check_arm(&branch.arm, "if", branch.keyword, "in this branch");
        }
        if let Some(arm) = &form.else_arm {
            let kw = form.branches.first().map(|b| b.keyword).unwrap_or(arm.span);
            self.check_arm(arm, "else", kw, "of this `if`");
        }
    }

    fn check_case(&mut self, form: &Case) {
        if form.arms.is_empty() {
            let d = self
                .diag(
                    Code::EmptyCase,
                    "this `case` has no arms",
                    form.arms_span,
                    "empty arm list",
                )
                .with_secondary(form.scrutinee.span, "the value being matched")
                .with_note("A `case` lists one arm per tag it handles, and needs at least one.")
                .with_help("write an arm for each tag: ``case $v [`ok: { |x| … }]``");
            self.push(d);
        }
        let mut seen: Vec<&Name> = Vec::new();
        for arm in &form.arms {
            if let Some(first) = seen.iter().find(|t| t.text == arm.tag.text) {
                let d = self
                    .diag(
                        Code::DuplicateArm,
                        format!("the tag `{}` has two arms", arm.tag.text),
                        arm.tag.span,
                        "named again here",
                    )
                    .with_secondary(first.span, "first arm for it")
                    .with_note("A `case` names each tag at most once, so which arm runs is never in doubt.")
                    .with_help("merge the two arms into one, or remove one");
                self.push(d);
            } else {
                seen.push(&arm.tag);
            }
            self.check_arm(&arm.arm, "case", arm.tag.span, "for this tag");
        }
    }

    // ---- redirects ----

    fn check_redirects(&mut self, redirects: &[Redirect]) {
        let mut bound: [Option<Span>; 3] = [None; 3];
        for r in redirects {
            if let RedirectKind::Dup { target } = r.op {
                match (r.fd, target) {
                    (2, 1) => {}
                    (1, 2) => {
                        let d = self
                            .diag(
                                Code::RedirectToStderr,
                                format!("`{}` is refused", redirect_spelling(r)),
                                r.span,
                                "sends standard output to standard error",
                            )
                            .with_note(
                                "ral keeps a command's output and its diagnostics apart: standard output is never merged into standard error. `2>&1` merges the other way.",
                            )
                            .with_help("write diagnostics with `warn` instead, e.g. `warn 'message'`");
                        self.push(d);
                        continue;
                    }
                    (fd, target) => {
                        let d = self
                            .diag(
                                Code::BadDescriptor,
                                format!("`{fd}>&{target}` is not a redirect ral accepts"),
                                r.span,
                                "unsupported duplication",
                            )
                            .with_note(
                                "The only descriptor duplication is `2>&1`, which sends standard error where standard output goes.",
                            )
                            .with_help("write `2>&1`, or redirect the stream to a file");
                        self.push(d);
                        continue;
                    }
                }
            }
            if let RedirectKind::Here(target) = &r.op {
                if matches!(
                    target.primary,
                    Primary::Word(_) | Primary::Int(_) | Primary::Float(_) | Primary::Bool(_)
                ) {
                    let d = self
                        .diag(
                            Code::BareHereString,
                            "a here string takes a value, not a bare word",
                            target.span,
                            "bare word",
                        )
                        .with_secondary(r.span, "this here string")
                        .with_note(
                            "`<<` feeds a value to standard input; a bare word there is almost always a forgotten quote or `$`.",
                        )
                        .with_help("quote it: `<< 'text'`, or write `$name` for a variable");
                    self.push(d);
                }
            }
            let Some(slot) = bound.get_mut(usize::from(r.stream())) else {
                continue;
            };
            if let Some(first) = *slot {
                let stream = stream_name(r.stream());
                let d = Diagnostic::new(
                    Code::RedirectTwice,
                    self.source,
                    format!("{stream} is redirected twice; which one do you mean?"),
                    r.span,
                    "redirected again here",
                )
                .with_secondary(first, "first redirected here")
                .with_note(
                    "A redirect list binds each of standard input, output and error at most once; `<` and `<<` both bind standard input, and `2>&1` binds standard error.",
                )
                .with_help("keep one of the two redirects and remove the other");
                self.push(d);
            } else {
                *slot = Some(r.span);
            }
        }
    }

    // ---- expressions ----

    fn check_bare_operand(&mut self, operand: &Expr, op: &str, op_span: Span) {
        let mut e = operand;
        while let ExprKind::Paren(inner) = &e.kind {
            e = inner;
        }
        let ExprKind::Atom(atom) = &e.kind else {
            return;
        };
        let Primary::Word(w) = &atom.primary else {
            return;
        };
        if parse_numeral(w).is_some() {
            return;
        }
        let help = if is_identifier(w) {
            format!("did you mean `${w}`?")
        } else {
            "write a number, or a `$name` holding one".to_string()
        };
        let d = self
            .diag(
                Code::BareWordArithmetic,
                format!("the bare word `{w}` cannot be used with `{op}`"),
                atom.span,
                "a bare word is a string",
            )
            .with_secondary(op_span, "this operator wants numbers")
            .with_note(
                "Inside `$[...]` a bare word that is not a numeral is text, as everywhere, so arithmetic, negation and ordering can never accept it.",
            )
            .with_help(help);
        self.push(d);
    }

    fn check_expr(&mut self, expr: &Expr) {
        match &expr.kind {
            ExprKind::Unary { op, operand } => match op {
                UnOp::Neg => self.check_bare_operand(operand, "-", expr.span),
                UnOp::Not => {}
            },
            ExprKind::Binary { op, lhs, rhs } => {
                if op.is_arithmetic_or_ordering() {
                    // The operator sits between its operands.
                    let op_span = Span::new(lhs.span.end, rhs.span.start.max(lhs.span.end));
                    self.check_bare_operand(lhs, op.spelling(), op_span);
                    self.check_bare_operand(rhs, op.spelling(), op_span);
                }
            }
            ExprKind::Atom(_) | ExprKind::Paren(_) => {}
        }
    }

    // ---- within / grant ----

    /// Checks an options bracket and walks it; returns nothing. The bracket's
    /// own record rules are judged here rather than as a record literal.
    fn options(&mut self, atom: &Atom, form: &str, keyword: Span) {
        let accepted = if form == "within" {
            WITHIN_OPTIONS
        } else {
            GRANT_FIELDS
        };
        let list = accepted
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let what = if form == "within" {
            "options"
        } else {
            "capability fields"
        };
        let bracket_note = format!(
            "`{form}` takes its {what} written in its own bracket, `[name: value, …]`; the values may be computed but the names are syntax. `[]` sets nothing."
        );
        if !atom.indexes.is_empty() {
            let d = self
                .diag(
                    Code::ScopeOption,
                    format!("`{form}` {what} must be written in the form's own bracket"),
                    atom.span,
                    "an indexed value, not a bracket",
                )
                .with_secondary(keyword, format!("this `{form}`"))
                .with_note(bracket_note)
                .with_help(format!(
                    "write the {what} out: `{form} [{}: …] {{ … }}`",
                    accepted.first().copied().unwrap_or("name")
                ));
            self.push(d);
            self.visit_atom(atom);
            return;
        }
        match &atom.primary {
            Primary::Record(entries) => {
                self.check_duplicate_keys(Self::static_keys(entries), &format!("`{form}` bracket"));
                for entry in entries {
                    match entry {
                        Entry::Spread { value, span } => {
                            let d = self
                                .diag(
                                    Code::SpreadNotAllowed,
                                    format!("`{form}` {what} cannot be spread in"),
                                    *span,
                                    "spread",
                                )
                                .with_secondary(keyword, format!("this `{form}`"))
                                .with_note(bracket_note.clone())
                                .with_help(format!("write each of the {what} out by name"));
                            self.push(d);
                            self.visit_atom(value);
                        }
                        Entry::Field { key, value, .. } => {
                            let name = match key {
                                Key::Static(n) | Key::Computed(n) => n,
                            };
                            if !accepted.contains(&name.text.as_str()) {
                                let d = self
                                    .diag(
                                        Code::ScopeOption,
                                        format!("`{}` is not one of `{form}`'s {what}", name.text),
                                        name.span,
                                        "unknown name",
                                    )
                                    .with_secondary(keyword, format!("this `{form}`"))
                                    .with_note(format!("`{form}` accepts exactly {list}."))
                                    .with_help(match closest(&name.text, accepted) {
                                        Some(s) => format!("did you mean `{s}`?"),
                                        None => format!("use one of {list}"),
                                    });
                                self.push(d);
                            }
                            if form == "within" && name.text == "handlers" {
                                self.handlers(value);
                            } else {
                                self.visit_atom(value);
                            }
                        }
                    }
                }
            }
            Primary::List(items) if items.is_empty() => {}
            Primary::List(items) if items.iter().all(|i| matches!(i, ListItem::Spread { .. })) => {
                // `[...$o]` reads as a list; what was meant is a spread of options.
                for item in items {
                    if let ListItem::Spread { value, span } = item {
                        let d = self
                            .diag(
                                Code::SpreadNotAllowed,
                                format!("`{form}` {what} cannot be spread in"),
                                *span,
                                "spread",
                            )
                            .with_secondary(keyword, format!("this `{form}`"))
                            .with_note(bracket_note.clone())
                            .with_help(format!("write each of the {what} out by name"));
                        self.push(d);
                        self.visit_atom(value);
                    }
                }
            }
            Primary::Error => {}
            Primary::Map(_) => {
                let d = self
                    .diag(
                        Code::ScopeOption,
                        format!("a map cannot give `{form}` its {what}"),
                        atom.span,
                        "a map: its keys are data",
                    )
                    .with_secondary(keyword, format!("this `{form}`"))
                    .with_note(bracket_note)
                    .with_help(format!(
                        "write static names and drop any `:,` or `$key`: `{form} [{}: …] {{ … }}`, or `{form} [] {{ … }}` for none",
                        accepted.first().copied().unwrap_or("name")
                    ));
                self.push(d);
                self.visit_atom(atom);
            }
            Primary::Word(_)
            | Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Str(_)
            | Primary::Var(_)
            | Primary::Expr(_)
            | Primary::Force(_)
            | Primary::Tag { .. }
            | Primary::Block(_)
            | Primary::List(_) => {
                let d = self
                    .diag(
                        Code::ScopeOption,
                        format!("`{form}` {what} must be written in the form's own bracket"),
                        atom.span,
                        "not an options bracket",
                    )
                    .with_secondary(keyword, format!("this `{form}`"))
                    .with_note(bracket_note)
                    .with_help(format!(
                        "write them out, e.g. `{form} [{}: $value] {{ … }}`; to choose options at run time, put the condition around the whole form",
                        accepted.first().copied().unwrap_or("name")
                    ));
                self.push(d);
                self.visit_atom(atom);
            }
        }
    }

    /// `handlers:` must be written out: its labels are the command names the
    /// handlers bind (§9.1).
    fn handlers(&mut self, value: &Atom) {
        if let (Primary::Record(entries), true) = (&value.primary, value.indexes.is_empty()) {
            // Written out: judge it here (spreads are refused outright, not
            // as a misplaced record update), then walk its children only.
            for entry in entries {
                if let Entry::Spread { span, .. } = entry {
                    let d = self
                        .diag(
                            Code::SpreadNotAllowed,
                            "handlers cannot be spread in",
                            *span,
                            "spread",
                        )
                        .with_note(
                            "The labels of `handlers` are the command names it binds in the body, so each is written out.",
                        )
                        .with_help("write each handler out: `handlers: [git: { |args| … }]`");
                    self.push(d);
                }
            }
            self.check_duplicate_keys(Self::static_keys(entries), "`handlers` table");
            walk::walk_atom(self, value);
            return;
        }
        let written_out = value.indexes.is_empty()
            && match &value.primary {
                Primary::List(items) => items.is_empty(),
                Primary::Error => true,
                Primary::Word(_)
                | Primary::Int(_)
                | Primary::Float(_)
                | Primary::Bool(_)
                | Primary::Unit
                | Primary::Str(_)
                | Primary::Var(_)
                | Primary::Expr(_)
                | Primary::Force(_)
                | Primary::Tag { .. }
                | Primary::Block(_)
                | Primary::Record(_)
                | Primary::Map(_) => false,
            };
        if !written_out {
            let d = self
                .diag(
                    Code::ScopeOption,
                    "`handlers` must be written out",
                    value.span,
                    "not a handler table written in place",
                )
                .with_note(
                    "The labels of `handlers` are the command names it binds in the body, so they are syntax: a table built elsewhere, or a map, cannot stand there.",
                )
                .with_help("write each handler out: `handlers: [git: { |args| … }]`");
            self.push(d);
        }
        self.visit_atom(value);
    }
}

/// The accepted name closest to `word` by edit distance, if any is close.
fn closest<'a>(word: &str, accepted: &[&'a str]) -> Option<&'a str> {
    accepted
        .iter()
        .map(|a| (edit_distance(word, a), *a))
        .filter(|(d, a)| *d <= 2 && *d < a.len())
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = cur.get(j).copied().unwrap_or(0) + 1;
            cur.push(sub.min(del).min(ins));
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

fn entry_span(entry: &Entry) -> Span {
    match entry {
        Entry::Field { span, .. } | Entry::Spread { span, .. } => *span,
    }
}

impl Visitor for Validator {
    fn visit_let(&mut self, binding: &Let) {
        self.check_linear(&binding.pattern);
        walk::walk_let(self, binding);
    }

    fn visit_block(&mut self, block: &Block) {
        // Each parameter is its own pattern: a later parameter may repeat an
        // earlier one's name (§5.4).
        for param in &block.params {
            self.check_linear(param);
        }
        walk::walk_block(self, block);
    }

    fn visit_pattern(&mut self, pattern: &Pattern) {
        match &pattern.kind {
            PatternKind::Bind(name) => self.check_reserved_binding(name),
            PatternKind::List { rest, .. } => {
                if let Some(rest) = rest {
                    self.check_reserved_binding(rest);
                }
            }
            PatternKind::Record { fields } => {
                self.check_duplicate_keys(fields.iter().map(|f| &f.key), "record pattern");
            }
            PatternKind::Wildcard | PatternKind::Error => {}
        }
        walk::walk_pattern(self, pattern);
    }

    fn visit_stage(&mut self, stage: &Stage) {
        match &stage.kind {
            StageKind::If(form) => self.check_if(form),
            StageKind::Case(form) => self.check_case(form),
            StageKind::Scope(form) => {
                let options = match &form.kind {
                    ScopeKind::Within { options, body } => Some((options, body, "within")),
                    ScopeKind::Grant { caps, body } => Some((caps, body, "grant")),
                    ScopeKind::Try { .. } | ScopeKind::Guard { .. } | ScopeKind::Audit { .. } => {
                        None
                    }
                };
                self.check_redirects(&form.redirects);
                if let Some((options, body, name)) = options {
                    self.options(options, name, form.keyword);
                    self.visit_atom(body);
                    for r in &form.redirects {
                        self.visit_redirect(r);
                    }
                    return;
                }
            }
            StageKind::Command(command) => self.check_redirects(&command.redirects),
            StageKind::Return(_) => {}
        }
        walk::walk_stage(self, stage);
    }

    fn visit_atom(&mut self, atom: &Atom) {
        self.check_collection(atom);
        walk::walk_atom(self, atom);
    }

    /// Walks an expression tree with an explicit stack rather than through
    /// [`walk::walk_expr`], so a long operator chain cannot exhaust the stack.
    fn visit_expr(&mut self, expr: &Expr) {
        let mut stack = vec![expr];
        while let Some(e) = stack.pop() {
            self.check_expr(e);
            match &e.kind {
                ExprKind::Atom(atom) => self.visit_atom(atom),
                ExprKind::Unary { operand, .. } => stack.push(operand),
                ExprKind::Binary { lhs, rhs, .. } => {
                    stack.push(rhs);
                    stack.push(lhs);
                }
                ExprKind::Paren(inner) => stack.push(inner),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::*;
    use crate::walk::build::*;

    fn codes(p: &Program) -> Vec<(Code, Span)> {
        validate(p, SourceId(0))
            .into_iter()
            .map(|d| (d.code, d.primary.span))
            .collect()
    }

    fn let_stmt(pattern: Pattern, value: Atom) -> Stmt {
        let span = pattern.span.to(value.span);
        let value = chain_of(stage(
            StageKind::Command(Command {
                head: Head::Atom(value),
                args: Vec::new(),
                redirects: Vec::new(),
            }),
            span,
        ));
        Stmt::Let(Let {
            pattern,
            value,
            span,
        })
    }

    fn list_pat(items: Vec<Pattern>, rest: Option<Name>, span: Span) -> Pattern {
        pat(PatternKind::List { items, rest }, span)
    }

    fn field(key: &str, start: u32, value: Atom) -> Entry {
        let kspan = sp(start, start + u32::try_from(key.len()).unwrap_or(0));
        Entry::Field {
            key: Key::Static(Name::new(key, kspan)),
            span: kspan.to(value.span),
            value,
        }
    }

    fn spread(value: Atom) -> Entry {
        let span = sp(value.span.start.saturating_sub(3), value.span.end);
        Entry::Spread { value, span }
    }

    fn int(n: i64, start: u32) -> Atom {
        atom(Primary::Int(n), sp(start, start + 1))
    }

    fn just(a: Atom) -> Program {
        let span = a.span;
        program(vec![command(a, Vec::new(), Vec::new(), span)])
    }

    fn expr(kind: ExprKind, span: Span) -> Expr {
        Expr {
            id: NodeId(0),
            kind,
            span,
        }
    }

    fn eatom(a: Atom) -> Expr {
        let span = a.span;
        expr(ExprKind::Atom(a), span)
    }

    fn dollar(e: Expr) -> Program {
        let span = sp(e.span.start.saturating_sub(2), e.span.end + 1);
        just(atom(Primary::Expr(Box::new(e)), span))
    }

    fn echo_with(redirects: Vec<Redirect>) -> Program {
        program(vec![command(
            word("echo", 0),
            Vec::new(),
            redirects,
            sp(0, 40),
        )])
    }

    #[test]
    fn clean_program_has_no_diagnostics() {
        let p = program(vec![
            let_stmt(bind("x", 4), int(1, 8)),
            command(
                word("echo", 10),
                vec![Arg::Atom(var("x", 15))],
                Vec::new(),
                sp(10, 17),
            ),
        ]);
        assert!(codes(&p).is_empty());
    }

    #[test]
    fn duplicate_binding_in_let_pattern() {
        // let [a, [b, a]] = …
        let p = program(vec![let_stmt(
            list_pat(
                vec![
                    bind("a", 5),
                    list_pat(vec![bind("b", 9), bind("a", 12)], None, sp(8, 14)),
                ],
                None,
                sp(4, 15),
            ),
            var("v", 18),
        )]);
        assert_eq!(codes(&p), [(Code::DuplicateBinding, sp(12, 13))]);
    }

    #[test]
    fn duplicate_binding_through_rest_and_record() {
        // let [k: xs, ...xs] — not a real mix, but the names collide
        let rec = pat(
            PatternKind::Record {
                fields: vec![FieldPattern {
                    key: Name::new("k", sp(5, 6)),
                    pattern: bind("xs", 8),
                    span: sp(5, 10),
                }],
            },
            sp(4, 11),
        );
        let p = program(vec![let_stmt(
            list_pat(vec![rec], Some(Name::new("xs", sp(16, 18))), sp(3, 19)),
            var("v", 22),
        )]);
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::DuplicateBinding);
        assert_eq!(d[0].primary.span, sp(16, 18));
        assert_eq!(d[0].secondary[0].span, sp(8, 10));
    }

    #[test]
    fn wildcards_never_collide() {
        let p = program(vec![let_stmt(
            list_pat(
                vec![
                    pat(PatternKind::Wildcard, sp(5, 6)),
                    pat(PatternKind::Wildcard, sp(8, 9)),
                ],
                Some(Name::new("_", sp(14, 15))),
                sp(4, 16),
            ),
            var("v", 19),
        )]);
        assert!(codes(&p).is_empty());
    }

    #[test]
    fn parameters_may_repeat_each_other_but_not_themselves() {
        // { |x x| … } is fine; { |[y, y]| … } is not
        let ok = just(block(
            Vec::new(),
            vec![bind("x", 3), bind("x", 5)],
            sp(0, 10),
        ));
        assert!(codes(&ok).is_empty());
        let bad = just(block(
            Vec::new(),
            vec![list_pat(vec![bind("y", 4), bind("y", 7)], None, sp(3, 9))],
            sp(0, 12),
        ));
        assert_eq!(codes(&bad), [(Code::DuplicateBinding, sp(7, 8))]);
    }

    #[test]
    fn reserved_names_cannot_be_bound() {
        let p = program(vec![let_stmt(bind("if", 4), int(1, 9))]);
        assert_eq!(codes(&p), [(Code::ReservedName, sp(4, 6))]);
        let param = just(block(Vec::new(), vec![bind("true", 3)], sp(0, 12)));
        assert_eq!(codes(&param), [(Code::ReservedName, sp(3, 7))]);
        let rest = program(vec![let_stmt(
            list_pat(Vec::new(), Some(Name::new("case", sp(8, 12))), sp(4, 13)),
            var("v", 16),
        )]);
        assert_eq!(codes(&rest), [(Code::ReservedName, sp(8, 12))]);
    }

    #[test]
    fn record_spread_must_lead_and_be_single() {
        // [a: 1, ...$r]
        let late = just(atom(
            Primary::Record(vec![field("a", 1, int(1, 4)), spread(var("r", 10))]),
            sp(0, 13),
        ));
        assert_eq!(codes(&late), [(Code::MisplacedSpread, sp(7, 12))]);
        // [...$r, ...$s, a: 1]
        let twice = just(atom(
            Primary::Record(vec![
                spread(var("r", 4)),
                spread(var("s", 11)),
                field("a", 15, int(1, 18)),
            ]),
            sp(0, 20),
        ));
        assert_eq!(codes(&twice), [(Code::MisplacedSpread, sp(8, 13))]);
        // maps and lists spread anywhere
        let map = just(atom(
            Primary::Map(vec![field("a", 3, int(1, 6)), spread(var("m", 12))]),
            sp(0, 15),
        ));
        assert!(codes(&map).is_empty());
        let list = just(atom(
            Primary::List(vec![
                ListItem::Item(int(1, 1)),
                ListItem::Spread {
                    value: var("xs", 7),
                    span: sp(4, 10),
                },
            ]),
            sp(0, 11),
        ));
        assert!(codes(&list).is_empty());
    }

    #[test]
    fn duplicate_keys_in_records_maps_and_patterns() {
        let rec = just(atom(
            Primary::Record(vec![field("a", 1, int(1, 4)), field("a", 7, int(2, 10))]),
            sp(0, 12),
        ));
        assert_eq!(codes(&rec), [(Code::DuplicateKey, sp(7, 8))]);
        let map = just(atom(
            Primary::Map(vec![
                Entry::Field {
                    key: Key::Computed(Name::new("k", sp(4, 5))),
                    value: int(1, 7),
                    span: sp(3, 8),
                },
                field("b", 10, int(1, 13)),
                field("b", 15, int(2, 18)),
            ]),
            sp(0, 20),
        ));
        assert_eq!(codes(&map), [(Code::DuplicateKey, sp(15, 16))]);
        let fp = |k: &str, at: u32, name: &str| FieldPattern {
            key: Name::new(k, sp(at, at + 1)),
            pattern: bind(name, at + 3),
            span: sp(at, at + 4),
        };
        let pattern = program(vec![let_stmt(
            pat(
                PatternKind::Record {
                    fields: vec![fp("a", 5, "x"), fp("a", 10, "y")],
                },
                sp(4, 16),
            ),
            var("v", 19),
        )]);
        assert_eq!(codes(&pattern), [(Code::DuplicateKey, sp(10, 11))]);
    }

    #[test]
    fn one_stream_bound_twice() {
        let p = echo_with(vec![
            redirect(1, RedirectKind::Write(word("a", 7)), sp(5, 8)),
            redirect(1, RedirectKind::Append(word("b", 12)), sp(9, 13)),
        ]);
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::RedirectTwice);
        assert_eq!(d[0].primary.span, sp(9, 13));
        assert_eq!(d[0].secondary[0].span, sp(5, 8));
        // `<` and `<<` both bind stdin; `2>&1` binds stderr
        let stdin = echo_with(vec![
            redirect(0, RedirectKind::Read(word("f", 7)), sp(5, 8)),
            redirect(0, RedirectKind::Here(var("s", 12)), sp(9, 14)),
        ]);
        assert_eq!(codes(&stdin), [(Code::RedirectTwice, sp(9, 14))]);
        let stderr = echo_with(vec![
            redirect(2, RedirectKind::Write(word("e", 8)), sp(5, 9)),
            redirect(2, RedirectKind::Dup { target: 1 }, sp(10, 14)),
        ]);
        assert_eq!(codes(&stderr), [(Code::RedirectTwice, sp(10, 14))]);
        // distinct streams are fine
        let fine = echo_with(vec![
            redirect(1, RedirectKind::Write(word("o", 7)), sp(5, 8)),
            redirect(2, RedirectKind::Dup { target: 1 }, sp(9, 13)),
            redirect(0, RedirectKind::Read(word("i", 16)), sp(14, 17)),
        ]);
        assert!(codes(&fine).is_empty());
    }

    #[test]
    fn redirect_twice_on_scope_forms() {
        let body = block(Vec::new(), Vec::new(), sp(6, 8));
        let p = program(vec![stmt(stage(
            StageKind::Scope(Box::new(ScopeForm {
                kind: ScopeKind::Audit { body },
                keyword: sp(0, 5),
                redirects: vec![
                    redirect(1, RedirectKind::Write(word("a", 11)), sp(9, 12)),
                    redirect(1, RedirectKind::Write(word("b", 15)), sp(13, 16)),
                ],
            })),
            sp(0, 16),
        ))]);
        assert_eq!(codes(&p), [(Code::RedirectTwice, sp(13, 16))]);
    }

    #[test]
    fn stdout_to_stderr_is_refused() {
        let mut explicit = redirect(1, RedirectKind::Dup { target: 2 }, sp(5, 9));
        explicit.explicit_fd = true;
        assert_eq!(
            codes(&echo_with(vec![explicit])),
            [(Code::RedirectToStderr, sp(5, 9))]
        );
        let short = redirect(1, RedirectKind::Dup { target: 2 }, sp(5, 8));
        assert_eq!(
            codes(&echo_with(vec![short])),
            [(Code::RedirectToStderr, sp(5, 8))]
        );
    }

    #[test]
    fn other_duplications_are_bad_descriptors() {
        for (fd, target) in [(2, 2), (0, 1), (1, 1)] {
            let r = redirect(fd, RedirectKind::Dup { target }, sp(5, 9));
            assert_eq!(
                codes(&echo_with(vec![r])),
                [(Code::BadDescriptor, sp(5, 9))],
                "{fd}>&{target}"
            );
        }
    }

    #[test]
    fn here_string_needs_a_value() {
        let p = echo_with(vec![redirect(
            0,
            RedirectKind::Here(word("hello", 8)),
            sp(5, 13),
        )]);
        assert_eq!(codes(&p), [(Code::BareHereString, sp(8, 13))]);
        let n = echo_with(vec![redirect(0, RedirectKind::Here(int(5, 8)), sp(5, 9))]);
        assert_eq!(codes(&n), [(Code::BareHereString, sp(8, 9))]);
        let quoted = echo_with(vec![redirect(
            0,
            RedirectKind::Here(atom(
                Primary::Str(StrLit {
                    quote: Quote::Single { hashes: 0 },
                    parts: vec![StrPart::Text("hello".into())],
                }),
                sp(8, 15),
            )),
            sp(5, 15),
        )]);
        assert!(codes(&quoted).is_empty());
    }

    fn if_stage(arm: Atom, else_arm: Option<Atom>) -> Program {
        program(vec![stmt(stage(
            StageKind::If(Box::new(If {
                branches: vec![IfBranch {
                    cond: var("c", 3),
                    arm,
                    keyword: sp(0, 2),
                }],
                else_arm,
            })),
            sp(0, 40),
        ))])
    }

    #[test]
    fn if_arms_are_blocks_or_names() {
        let ok = if_stage(block(Vec::new(), Vec::new(), sp(6, 10)), Some(var("e", 16)));
        assert!(codes(&ok).is_empty());
        let bad = if_stage(word("echo", 6), None);
        assert_eq!(codes(&bad), [(Code::InvalidArm, sp(6, 10))]);
        let mut indexed = var("arms", 16);
        indexed.indexes.push(Index {
            key: word("a", 22),
            span: sp(21, 24),
        });
        indexed.span = sp(16, 24);
        let bad_else = if_stage(var("t", 6), Some(indexed));
        assert_eq!(codes(&bad_else), [(Code::InvalidArm, sp(16, 24))]);
        // a forced block is run before the form chooses
        let forced = if_stage(
            atom(
                Primary::Force(Box::new(block(Vec::new(), Vec::new(), sp(7, 10)))),
                sp(6, 10),
            ),
            None,
        );
        assert_eq!(codes(&forced), [(Code::InvalidArm, sp(6, 10))]);
    }

    fn case_stage(arms: Vec<CaseArm>) -> Program {
        program(vec![stmt(stage(
            StageKind::Case(Box::new(Case {
                scrutinee: var("v", 5),
                arms,
                arms_span: sp(8, 40),
            })),
            sp(0, 40),
        ))])
    }

    fn arm(tag: &str, at: u32, body: Atom) -> CaseArm {
        let span = sp(at, body.span.end);
        CaseArm {
            tag: Name::new(tag, sp(at, at + 1 + u32::try_from(tag.len()).unwrap_or(0))),
            arm: body,
            span,
        }
    }

    #[test]
    fn case_needs_arms() {
        assert_eq!(
            codes(&case_stage(Vec::new())),
            [(Code::EmptyCase, sp(8, 40))]
        );
    }

    #[test]
    fn case_tags_are_distinct() {
        let p = case_stage(vec![
            arm("ok", 9, block(Vec::new(), Vec::new(), sp(14, 17))),
            arm("ok", 19, var("h", 24)),
        ]);
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::DuplicateArm);
        assert_eq!(d[0].primary.span, sp(19, 22));
        assert_eq!(d[0].secondary[0].span, sp(9, 12));
    }

    #[test]
    fn case_arms_are_blocks_or_names() {
        let p = case_stage(vec![arm("ok", 9, word("echo", 14))]);
        assert_eq!(codes(&p), [(Code::InvalidArm, sp(14, 18))]);
    }

    #[test]
    fn bare_word_in_arithmetic() {
        // $[x + 1]
        let e = expr(
            ExprKind::Binary {
                op: BinOp::Add,
                lhs: Box::new(eatom(word("x", 2))),
                rhs: Box::new(eatom(int(1, 6))),
            },
            sp(2, 7),
        );
        let d = validate(&dollar(e), SourceId(0));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::BareWordArithmetic);
        assert_eq!(d[0].primary.span, sp(2, 3));
        assert_eq!(d[0].help.as_deref(), Some("did you mean `$x`?"));
        // -(n), and ordering
        let neg = expr(
            ExprKind::Unary {
                op: UnOp::Neg,
                operand: Box::new(expr(
                    ExprKind::Paren(Box::new(eatom(word("n", 4)))),
                    sp(3, 6),
                )),
            },
            sp(2, 6),
        );
        assert_eq!(codes(&dollar(neg)), [(Code::BareWordArithmetic, sp(4, 5))]);
        let lt = expr(
            ExprKind::Binary {
                op: BinOp::Lt,
                lhs: Box::new(eatom(var("a", 2))),
                rhs: Box::new(eatom(word("b", 7))),
            },
            sp(2, 8),
        );
        assert_eq!(codes(&dollar(lt)), [(Code::BareWordArithmetic, sp(7, 8))]);
    }

    #[test]
    fn long_operator_chains_do_not_exhaust_the_stack() {
        // $[x + x + … + x] with 20 000 operators: a left spine, not nesting.
        let n = 20_000u32;
        let mut e = eatom(word("x", 2));
        for i in 1..=n {
            let at = 2 + 4 * i;
            e = expr(
                ExprKind::Binary {
                    op: BinOp::Add,
                    lhs: Box::new(e),
                    rhs: Box::new(eatom(word("x", at))),
                },
                sp(2, at + 1),
            );
        }
        let mut p = dollar(e);
        crate::walk::number_nodes(&mut p);
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), n as usize + 1);
        assert!(d.iter().all(|d| d.code == Code::BareWordArithmetic));
        // The derived `Drop` of `Expr` recurses once per operator and would
        // overflow here; that is the AST's to fix, not this pass's.
        std::mem::forget(p);
    }

    #[test]
    fn bare_words_are_fine_under_equality_and_not() {
        let eq = expr(
            ExprKind::Binary {
                op: BinOp::Eq,
                lhs: Box::new(eatom(var("a", 2))),
                rhs: Box::new(eatom(word("yes", 8))),
            },
            sp(2, 11),
        );
        assert!(codes(&dollar(eq)).is_empty());
        let not = expr(
            ExprKind::Unary {
                op: UnOp::Not,
                operand: Box::new(eatom(word("x", 6))),
            },
            sp(2, 7),
        );
        assert!(codes(&dollar(not)).is_empty());
    }

    fn scope(kind: ScopeKind) -> Program {
        program(vec![stmt(stage(
            StageKind::Scope(Box::new(ScopeForm {
                kind,
                keyword: sp(0, 6),
                redirects: Vec::new(),
            })),
            sp(0, 60),
        ))])
    }

    fn within(options: Atom) -> Program {
        scope(ScopeKind::Within {
            options,
            body: block(Vec::new(), Vec::new(), sp(50, 52)),
        })
    }

    #[test]
    fn within_accepts_its_four_options() {
        let handlers = atom(
            Primary::Record(vec![field(
                "git",
                30,
                block(Vec::new(), vec![bind("args", 37)], sp(35, 45)),
            )]),
            sp(29, 46),
        );
        let p = within(atom(
            Primary::Record(vec![
                field("dir", 8, var("d", 13)),
                field("env", 16, var("e", 21)),
                field("handlers", 19, handlers),
                field("handler", 47, var("h", 48)),
            ]),
            sp(7, 49),
        ));
        assert!(codes(&p).is_empty());
        let empty = within(atom(Primary::List(Vec::new()), sp(7, 9)));
        assert!(codes(&empty).is_empty());
    }

    #[test]
    fn within_unknown_option() {
        let p = within(atom(
            Primary::Record(vec![field("dri", 8, var("d", 13))]),
            sp(7, 16),
        ));
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].code, Code::ScopeOption);
        assert_eq!(d[0].primary.span, sp(8, 11));
        assert_eq!(d[0].help.as_deref(), Some("did you mean `dir`?"));
    }

    #[test]
    fn within_options_must_be_written_out() {
        assert_eq!(
            codes(&within(var("opts", 7))),
            [(Code::ScopeOption, sp(7, 12))]
        );
        let map = atom(Primary::Map(Vec::new()), sp(7, 10));
        assert_eq!(codes(&within(map)), [(Code::ScopeOption, sp(7, 10))]);
        let spread_in = atom(
            Primary::Record(vec![spread(var("o", 11)), field("dir", 15, var("d", 20))]),
            sp(7, 23),
        );
        assert_eq!(
            codes(&within(spread_in)),
            [(Code::SpreadNotAllowed, sp(8, 13))]
        );
        let twice = atom(
            Primary::Record(vec![
                field("dir", 8, var("a", 13)),
                field("dir", 16, var("b", 21)),
            ]),
            sp(7, 24),
        );
        assert_eq!(codes(&within(twice)), [(Code::DuplicateKey, sp(16, 19))]);
        let only_spread = atom(
            Primary::List(vec![ListItem::Spread {
                value: var("o", 11),
                span: sp(8, 13),
            }]),
            sp(7, 14),
        );
        assert_eq!(
            codes(&within(only_spread)),
            [(Code::SpreadNotAllowed, sp(8, 13))]
        );
        let table = atom(
            Primary::Record(vec![field("handlers", 8, var("t", 18))]),
            sp(7, 21),
        );
        assert_eq!(codes(&within(table)), [(Code::ScopeOption, sp(18, 20))]);
    }

    #[test]
    fn grant_fields() {
        let caps = |entries: Vec<Entry>| {
            scope(ScopeKind::Grant {
                caps: atom(Primary::Record(entries), sp(6, 40)),
                body: block(Vec::new(), Vec::new(), sp(50, 52)),
            })
        };
        let ok = caps(vec![
            field("exec", 7, var("e", 13)),
            field("net", 16, atom(Primary::Bool(false), sp(21, 26))),
        ]);
        assert!(codes(&ok).is_empty());
        let bad = caps(vec![field(
            "network",
            7,
            atom(Primary::Bool(false), sp(16, 21)),
        )]);
        assert_eq!(codes(&bad), [(Code::ScopeOption, sp(7, 14))]);
        let bundle = scope(ScopeKind::Grant {
            caps: var("p", 6),
            body: block(Vec::new(), Vec::new(), sp(50, 52)),
        });
        assert_eq!(codes(&bundle), [(Code::ScopeOption, sp(6, 8))]);
    }

    #[test]
    fn nested_forms_are_checked() {
        // { let if = 1 } inside a list inside a command argument
        let inner = block(
            vec![let_stmt(bind("if", 10), int(1, 15))],
            Vec::new(),
            sp(5, 18),
        );
        let p = program(vec![command(
            word("f", 0),
            vec![Arg::Atom(atom(
                Primary::List(vec![ListItem::Item(inner)]),
                sp(2, 20),
            ))],
            Vec::new(),
            sp(0, 20),
        )]);
        assert_eq!(codes(&p), [(Code::ReservedName, sp(10, 12))]);
    }

    #[test]
    fn every_diagnostic_explains_itself() {
        let p = program(vec![
            let_stmt(
                list_pat(vec![bind("a", 5), bind("a", 8)], None, sp(4, 10)),
                var("v", 13),
            ),
            command(
                word("echo", 20),
                Vec::new(),
                vec![
                    redirect(1, RedirectKind::Dup { target: 2 }, sp(25, 28)),
                    redirect(0, RedirectKind::Here(word("x", 32)), sp(29, 33)),
                ],
                sp(20, 33),
            ),
        ]);
        let d = validate(&p, SourceId(0));
        assert_eq!(d.len(), 3);
        for diag in d {
            assert!(!diag.message.is_empty());
            assert!(!diag.notes.is_empty(), "{:?} has no note", diag.code);
            assert!(diag.help.is_some(), "{:?} has no help", diag.code);
        }
    }

    #[test]
    fn through_the_parser() {
        // Every rule once more, from source text through the real parser.
        let cases: &[(&str, Code)] = &[
            ("let [a, a] = x", Code::DuplicateBinding),
            ("let if = 1", Code::ReservedName),
            ("echo [a: 1, ...$r]", Code::MisplacedSpread),
            ("echo [...$r, ...$s, a: 1]", Code::MisplacedSpread),
            ("echo { |x| { |[y, y]| 1 } }", Code::DuplicateBinding),
            ("let [...if] = $x", Code::ReservedName),
            ("echo [:, a: 1, a: 2]", Code::DuplicateKey),
            ("let [a: x, a: y] = $r", Code::DuplicateKey),
            ("cat < a << 'b'", Code::RedirectTwice),
            ("echo hi 2> e 2>&1", Code::RedirectTwice),
            ("try { a } { |e| b } > x > y", Code::RedirectTwice),
            ("echo hi 1>&2", Code::RedirectToStderr),
            ("echo hi 2>&2", Code::BadDescriptor),
            ("echo hi >&1", Code::BadDescriptor),
            ("cat << 5", Code::BareHereString),
            ("if $c { a } else echo", Code::InvalidArm),
            ("if $c { a } elsif $d $x[a]", Code::InvalidArm),
            ("case $v [`a: echo]", Code::InvalidArm),
            ("case $v []", Code::EmptyCase),
            ("echo $[-y]", Code::BareWordArithmetic),
            ("within $o { pwd }", Code::ScopeOption),
            ("within [:, dir: 'x'] { pwd }", Code::ScopeOption),
            ("within [handlers: $t] { pwd }", Code::ScopeOption),
            ("within [...$o] { pwd }", Code::SpreadNotAllowed),
            ("within [...$o, dir: 'x'] { pwd }", Code::SpreadNotAllowed),
            ("grant [network: false] { pwd }", Code::ScopeOption),
            ("echo [a: 1, a: 2]", Code::DuplicateKey),
            ("echo hi > a > b", Code::RedirectTwice),
            ("echo hi >&2", Code::RedirectToStderr),
            ("cat << hello", Code::BareHereString),
            ("if $c echo", Code::InvalidArm),
            ("case $v [`a: {}, `a: {}]", Code::DuplicateArm),
            ("echo $[x + 1]", Code::BareWordArithmetic),
            ("within [dri: 'x'] { pwd }", Code::ScopeOption),
        ];
        let clean = [
            "echo { |x x| $x }",
            "echo [:, a: 1, ...$m]",
            "echo [...$r, a: 1]",
            "echo hi > o 2>&1 < i",
            "echo $[a == b]",
            "echo $[not x]",
            "within [] { pwd }",
            "within [dir: $d, env: [A: 1], handlers: [git: { |a| echo }], handler: $h] { pwd }",
            "grant [net: false, fs: $f] { pwd }",
            "if $c { a } elsif $d $e else { b }",
            "case $v [`a: $h, `b: { |x| $x }]",
        ];
        for (src, code) in cases {
            let parsed = crate::parse(src, SourceId(0));
            assert!(
                parsed.diagnostics.iter().any(|d| d.code == *code),
                "{src}: expected {code}, got {:?}",
                parsed.diagnostics
            );
        }
        for src in clean {
            let parsed = crate::parse(src, SourceId(0));
            assert!(
                parsed.diagnostics.is_empty(),
                "{src}: expected no diagnostics, got {:?}",
                parsed.diagnostics
            );
        }
    }
}
