//! What each piece of source is, for colouring: the REPL's highlighter and
//! the language server's semantic tokens both read [`classify`].
//!
//! The tokens are the real lexer's ([`ral_syntax::lexer::lex`]), so the
//! colours can never disagree with how ral reads the line; the parse adds
//! what a token alone cannot say: which words are command heads and which
//! names are being bound. A source that does not parse still gets its
//! tokens coloured (the parser always returns a tree, with error nodes).

use ral_syntax::ast::{
    is_reserved, parse_numeral, Head, HeadClass, Pattern, PatternKind, Primary, Program, Stage,
    StageKind,
};
use ral_syntax::token::TokenKind;
use ral_syntax::walk::{self, Visitor};
use ral_syntax::{SourceId, Span};

/// The kind of a coloured piece of source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// A reserved word (`let`, `if`, `return`, …).
    Keyword,
    /// A bare command head or `^name` (the word names a command).
    Command,
    /// A command head written as a path (`./build.sh`, `~/bin/x`).
    PathCommand,
    /// `$name` or `$(name)`.
    Variable,
    /// A name being bound: a `let` pattern or a block parameter.
    Binder,
    /// A quoted string or a part of one.
    String,
    /// A valid escape inside `"…"`.
    Escape,
    /// A numeral or `true`/`false`.
    Number,
    /// A comment.
    Comment,
    /// An operator: `|`, `?`, `!`, `^`, `...`, redirects, `$[`, arithmetic.
    Operator,
    /// A tag (`` `ok ``).
    Tag,
    /// Something the lexer refused.
    Error,
}

/// One coloured piece: a byte range of the source and its class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub span: Span,
    pub class: Class,
}

/// The classes of `src`'s pieces, in source order; text with no class
/// (whitespace, punctuation, plain argument words) is left out.
pub fn classify(src: &str) -> Vec<Piece> {
    let parsed = ral_syntax::parse(src, SourceId(0));
    classify_parsed(src, &parsed.program)
}

/// [`classify`] for a source already parsed into `program`.
pub fn classify_parsed(src: &str, program: &Program) -> Vec<Piece> {
    let lexed = ral_syntax::lexer::lex(src, SourceId(0));
    let mut marks = Marks::default();
    marks.visit_program(program);
    marks.heads.sort_by_key(|(s, _)| s.start);
    marks.binders.sort_by_key(|s| s.start);
    // An unclosed string is still being typed, not refused.
    let mut refused: Vec<Span> = lexed
        .diagnostics
        .iter()
        .filter(|d| d.code != ral_syntax::Code::UnclosedString)
        .map(|d| d.primary.span)
        .collect();
    refused.sort_by_key(|s| s.start);
    // Tokens come in source order; the refused spans are walked beside them.
    let mut next_refused = 0;
    let mut out = Vec::with_capacity(lexed.tokens.len());
    for t in &lexed.tokens {
        let text = t.span.text(src);
        let class = match t.kind {
            TokenKind::Whitespace
            | TokenKind::Newline
            | TokenKind::Semi
            | TokenKind::LBrace
            | TokenKind::RBrace
            | TokenKind::LBracket
            | TokenKind::RBracket
            | TokenKind::LParen
            | TokenKind::RParen
            | TokenKind::Comma
            | TokenKind::Colon => None,
            TokenKind::Comment => Some(Class::Comment),
            TokenKind::Word => {
                if let Ok(i) = marks
                    .heads
                    .binary_search_by_key(&t.span.start, |(s, _)| s.start)
                {
                    marks.heads.get(i).map(|(_, c)| *c)
                } else if marks
                    .binders
                    .binary_search_by_key(&t.span.start, |s| s.start)
                    .is_ok()
                {
                    Some(Class::Binder)
                } else if text == "true" || text == "false" || parse_numeral(text).is_some() {
                    Some(Class::Number)
                } else if is_reserved(text) {
                    Some(Class::Keyword)
                } else {
                    None
                }
            }
            TokenKind::RawString { .. }
            | TokenKind::DqStart
            | TokenKind::DqText
            | TokenKind::DqEnd => Some(Class::String),
            TokenKind::DqEscape { valid: true } => Some(Class::Escape),
            TokenKind::DqEscape { valid: false } => Some(Class::Error),
            TokenKind::Var | TokenKind::VarParen => Some(Class::Variable),
            TokenKind::ExprOpen
            | TokenKind::Bang
            | TokenKind::Caret
            | TokenKind::Spread
            | TokenKind::Pipe
            | TokenKind::Question
            | TokenKind::Redirect { .. }
            | TokenKind::Op(_) => Some(Class::Operator),
            TokenKind::Tag => Some(Class::Tag),
            // `{||` is the empty parameter list; elsewhere `||` is refused.
            TokenKind::PipePipe => Some(Class::Operator),
            TokenKind::Amp | TokenKind::AmpAmp | TokenKind::Error => Some(Class::Error),
        };
        while refused
            .get(next_refused)
            .is_some_and(|r| r.end <= t.span.start && r.start < t.span.start)
        {
            next_refused += 1;
        }
        let class = if refused
            .get(next_refused..)
            .unwrap_or(&[])
            .iter()
            .take_while(|r| r.start < t.span.end)
            .any(|r| overlaps(*r, t.span))
        {
            Some(Class::Error)
        } else {
            class
        };
        if let Some(class) = class {
            out.push(Piece {
                span: t.span,
                class,
            });
        }
    }
    out
}

fn overlaps(a: Span, b: Span) -> bool {
    a.start < b.end && b.start < a.end
}

/// The head words and binders of a parsed program.
#[derive(Default)]
struct Marks {
    heads: Vec<(Span, Class)>,
    binders: Vec<Span>,
}

impl Marks {
    fn pattern(&mut self, p: &Pattern) {
        match &p.kind {
            PatternKind::Bind(n) => self.binders.push(n.span),
            PatternKind::List { items, rest } => {
                for i in items {
                    self.pattern(i);
                }
                if let Some(r) = rest {
                    self.binders.push(r.span);
                }
            }
            PatternKind::Record { fields } => {
                for f in fields {
                    self.pattern(&f.pattern);
                }
            }
            PatternKind::Wildcard | PatternKind::Error => {}
        }
    }
}

impl Visitor for Marks {
    fn visit_stage(&mut self, stage: &Stage) {
        if let StageKind::Command(cmd) = &stage.kind {
            match (&cmd.head, cmd.head.class()) {
                (Head::Caret(name), _) => self.heads.push((name.span, Class::Command)),
                (Head::Atom(a), HeadClass::Bare(_)) => self.heads.push((a.span, Class::Command)),
                (Head::Atom(a), HeadClass::Path(_)) => {
                    self.heads.push((a.span, Class::PathCommand))
                }
                (Head::Atom(_), HeadClass::Value | HeadClass::Caret(_)) => {}
            }
        }
        walk::walk_stage(self, stage);
    }

    fn visit_pattern(&mut self, pattern: &Pattern) {
        self.pattern(pattern);
    }
}

/// What is wrong in a line being typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A parse error.
    Syntax,
    /// A `$name` bound nowhere: not in the session (`env`), not earlier in
    /// the line.
    Unbound,
}

/// What is wrong in `src` (parsed into `parsed`) while it is being typed,
/// by span: its parse errors, leaving out an unclosed delimiter or string
/// (typing on closes them) and errors at its very end (where the next
/// word goes), and the names the checker finds bound nowhere, checking it
/// against `env`.
pub fn problems(
    src: &str,
    parsed: &ral_syntax::Parsed,
    env: &ral_types::TypeEnv,
) -> Vec<(Span, Problem)> {
    let mut out: Vec<(Span, Problem)> = parsed
        .diagnostics
        .iter()
        .filter(|d| {
            d.severity == ral_syntax::Severity::Error
                && !matches!(
                    d.code,
                    ral_syntax::Code::UnclosedDelimiter | ral_syntax::Code::UnclosedString
                )
                && d.primary.span.start < d.primary.span.end
                && (d.primary.span.start as usize) < src.trim_end().len()
        })
        .map(|d| (d.primary.span, Problem::Syntax))
        .collect();
    // The checker is pure; a bug in it must not end the line editor.
    let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ral_types::check_program(
            &parsed.program,
            SourceId(0),
            env,
            &ral_types::CheckOptions { is_script: false },
        )
    }));
    if let Ok(checked) = checked {
        out.extend(
            checked
                .diagnostics
                .iter()
                .filter(|d| d.code == ral_syntax::Code::UnboundName)
                .map(|d| (d.primary.span, Problem::Unbound)),
        );
    }
    out.sort_by_key(|(s, _)| s.start);
    out
}

/// The bare command heads of `program` with their spans (for callers that
/// want to judge each head, such as the REPL's unknown-command colour).
pub fn heads(program: &Program) -> Vec<(Span, String)> {
    struct H(Vec<(Span, String)>);
    impl Visitor for H {
        fn visit_stage(&mut self, stage: &Stage) {
            if let StageKind::Command(cmd) = &stage.kind {
                if let Head::Atom(a) = &cmd.head {
                    if let (HeadClass::Bare(w), Primary::Word(_)) = (cmd.head.class(), &a.primary) {
                        self.0.push((a.span, w.to_owned()));
                    }
                }
            }
            walk::walk_stage(self, stage);
        }
    }
    let mut h = H(Vec::new());
    h.visit_program(program);
    h.0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn show(src: &str) -> Vec<(String, Class)> {
        classify(src)
            .into_iter()
            .map(|p| (p.span.text(src).to_owned(), p.class))
            .collect()
    }

    #[test]
    fn heads_binders_strings_and_variables() {
        let got = show("let n = length [1, 2]; echo \"n=$n\\n\" | tr a-z A-Z # done");
        let want = [
            ("let", Class::Keyword),
            ("n", Class::Binder),
            ("length", Class::Command),
            ("1", Class::Number),
            ("2", Class::Number),
            ("echo", Class::Command),
            ("\"", Class::String),
            ("n=", Class::String),
            ("$n", Class::Variable),
            ("\\n", Class::Escape),
            ("\"", Class::String),
            ("|", Class::Operator),
            ("tr", Class::Command),
            ("# done", Class::Comment),
        ];
        let want: Vec<(String, Class)> = want.iter().map(|(t, c)| ((*t).to_owned(), *c)).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn params_tags_and_refused_spellings() {
        let got = show("let f = { |x| return `ok $x }; a && b");
        assert!(got.contains(&("x".into(), Class::Binder)), "{got:?}");
        assert!(got.contains(&("`ok".into(), Class::Tag)), "{got:?}");
        assert!(got.contains(&("return".into(), Class::Keyword)), "{got:?}");
        assert!(got.contains(&("&&".into(), Class::Error)), "{got:?}");
    }

    #[test]
    fn problems_while_typing() {
        let show = |src: &str, env: &ral_types::TypeEnv| -> Vec<(String, Problem)> {
            let parsed = ral_syntax::parse(src, SourceId(0));
            problems(src, &parsed, env)
                .into_iter()
                .map(|(s, p)| (s.text(src).to_owned(), p))
                .collect()
        };
        let env = ral_types::TypeEnv::new();
        assert_eq!(
            show("echo $nowhere", &env),
            vec![("$nowhere".to_owned(), Problem::Unbound)]
        );
        assert!(show("let x = 1; echo $x", &env).is_empty());
        // Still being typed: nothing is wrong yet.
        assert!(show("echo [1, 2", &env).is_empty());
        assert!(show("echo 'abc", &env).is_empty());
        assert!(show("let x = ", &env).is_empty());
        let got = show("echo ) done", &env);
        assert_eq!(got, vec![(")".to_owned(), Problem::Syntax)], "{got:?}");
    }

    #[test]
    fn a_path_head_and_an_unparsable_line() {
        let got = show("./run.sh x");
        assert_eq!(got, vec![("./run.sh".to_owned(), Class::PathCommand)]);
        // An unclosed block still colours what is there.
        let got = show("if $ok { echo 'hi");
        assert!(got.contains(&("echo".into(), Class::Command)), "{got:?}");
        assert!(got.contains(&("'hi".into(), Class::String)), "{got:?}");
    }
}
