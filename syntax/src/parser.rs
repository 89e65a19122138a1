//! The parser: tokens to the spanned AST (spec §17.1), with chumsky.
//!
//! Parsing runs in two steps.
//!
//! 1. [`prepare`] drops trivia, marks each token that touches the one before it
//!    (`glued`, which postfix indexing, `^name` and `()` require), drops the
//!    spellings the lexer already refused (`&`, `&&`, `||`), and repairs the
//!    delimiter structure: an unclosed opener gets a virtual closer (and an
//!    `unclosed-delimiter` diagnostic), a closer that closes nothing is dropped
//!    (`mismatched-delimiter`), and a region nested more than 64 deep is
//!    replaced by one error token (`nesting-too-deep`). The chumsky grammar
//!    therefore always sees balanced delimiters, bounded depth, and no trivia.
//! 2. The chumsky grammar builds the tree. Rejections that need no more than
//!    the tokens at hand (`let` after `|`, a newline after `?`, `{ || … }`, a tag
//!    used as a key, …) are pushed as [`Diagnostic`]s into a parser state that
//!    is truncated whenever chumsky backtracks, so an abandoned alternative
//!    never leaves a diagnostic behind. A statement that cannot be read is
//!    skipped to the end of its line (balanced) and becomes [`Stmt::Error`], so
//!    independent errors in one file are all reported.

#![allow(clippy::wildcard_enum_match_arm)] // Token kinds are classified with a fallthrough by design.

use std::fmt;

use chumsky::extra;
use chumsky::input::{Input as _, ValueInput};
use chumsky::inspector::TruncateState;
use chumsky::prelude::*;

use crate::ast::*;
use crate::codes::Code;
use crate::diag::Diagnostic;
use crate::lexer::{decode_escape, EscapeValue};
use crate::span::{SourceId, Span};
use crate::token::{ExprOp, RedirectOp, Token, TokenKind as K};

/// Words that start a stage form other than a command.
const STAGE_KEYWORDS: &[&str] = &[
    "return", "if", "case", "try", "guard", "within", "grant", "audit", "elsif", "else",
];

/// The deepest nesting of delimited forms the parser accepts (spec §3.4).
pub const MAX_NESTING: usize = 64;

/// A token as the grammar sees it: kind, text, and whether it touches the
/// previous non-trivia token.
///
/// The token carries its own span (24 bytes in all; a separate span beside
/// each token made the list 40 bytes a token, the largest thing alive while
/// a big file is parsed): `text` is always a slice of the source, so it
/// starts where the token starts, and the low 31 bits of `end_glued` are
/// where the token ends (bit 31 is `glued`). Start and end differ from the
/// text's only for the error token that stands for a refused region, whose
/// text is empty. Equality and hashing ignore the end, as they ignored the
/// span before.
#[derive(Clone, Copy, Debug)]
pub struct PTok<'s> {
    pub kind: K,
    end_glued: u32,
    pub text: &'s str,
}

const GLUED: u32 = 1 << 31;

impl PartialEq for PTok<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind && self.text == other.text && self.glued() == other.glued()
    }
}

impl Eq for PTok<'_> {}

impl std::hash::Hash for PTok<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        self.text.hash(state);
        self.glued().hash(state);
    }
}

impl<'s> PTok<'s> {
    /// A token of `kind` covering `span` of `src` whose text is `span`'s
    /// text, or empty (an error token, a virtual closer) when `empty`.
    fn new(src: &'s str, kind: K, span: Span, glued: bool, empty: bool) -> PTok<'s> {
        let (start, end) = (span.start as usize, span.end as usize);
        let text = if empty {
            src.get(start..start)
        } else {
            src.get(start..end)
        };
        PTok {
            kind,
            end_glued: span.end.min(GLUED - 1) | if glued { GLUED } else { 0 },
            text: text.unwrap_or_default(),
        }
    }

    /// Whether the token touches the previous non-trivia token.
    pub fn glued(&self) -> bool {
        self.end_glued & GLUED != 0
    }

    /// Where the token ends in the source.
    fn end(&self) -> usize {
        (self.end_glued & !GLUED) as usize
    }

    /// Where the token starts in `src` (its text is a slice of `src`).
    fn start(&self, src: &str) -> usize {
        (self.text.as_ptr() as usize)
            .wrapping_sub(src.as_ptr() as usize)
            .min(src.len())
    }
}

impl fmt::Display for PTok<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            K::Newline => f.write_str("a newline"),
            K::DqStart if self.text.is_empty() => f.write_str("end of string"),
            _ if self.text.is_empty() => f.write_str("end of form"),
            _ => write!(f, "`{}`", self.text),
        }
    }
}

type Extra<'t, Er> = extra::Full<Er, TruncateState<Diagnostic>, SourceId>;

/// The error type the grammar is generic over. The grammar runs first with
/// chumsky's allocation-free [`Cheap`] errors; only a source that has a
/// grammar error is parsed again with [`Rich`] errors to describe it, since
/// building a rich error on every abandoned alternative dominates the cost of
/// parsing well-formed input.
pub trait ParseError<'t, I: chumsky::input::Input<'t>>:
    chumsky::error::Error<'t, I> + chumsky::label::LabelError<'t, I, &'static str> + 't
{
    fn custom(span: SimpleSpan, msg: &'static str) -> Self;
}

impl<'t, I> ParseError<'t, I> for Cheap<SimpleSpan>
where
    I: chumsky::input::Input<'t, Span = SimpleSpan>,
{
    fn custom(span: SimpleSpan, _msg: &'static str) -> Self {
        Cheap::new(span)
    }
}

impl<'t, I> ParseError<'t, I> for Rich<'t, PTok<'t>, SimpleSpan>
where
    I: chumsky::input::Input<'t, Token = PTok<'t>, Span = SimpleSpan>,
{
    fn custom(span: SimpleSpan, msg: &'static str) -> Self {
        Rich::custom(span, msg)
    }
}

/// `v` without spare capacity. The tree keeps every list it is given for
/// the life of the program, and chumsky's `collect` starts a list at four
/// slots, so a one-statement block or a one-argument command carried three
/// empty slots (a third of the tree of a large program).
fn fit<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

fn sp(span: SimpleSpan) -> Span {
    // An empty parse can report its end before its start (the end is the
    // previous token's end); such a span is the point where it starts.
    Span::from_range(span.start..span.end.max(span.start))
}

/// Parses a token stream produced by [`crate::lexer::lex`] over `src`.
///
/// Node ids are numbered in source order before the tree is returned. The
/// tokens are dropped once [`prepare`] has read them, before the grammar
/// builds the tree: both token lists at once were a large share of the peak
/// memory of parsing a big file.
pub fn parse_tokens(src: &str, source: SourceId, tokens: Vec<Token>) -> (Program, Vec<Diagnostic>) {
    let (toks, mut diags) = prepare(src, source, &tokens);
    drop(tokens);
    let toks = toks.as_slice();
    // The grammar reads the token slice; chumsky's span of tokens `i..j`
    // (indices) becomes bytes from the start of token `i` to the end of
    // token `j - 1` (the end of the input past the last token or before the
    // first), as chumsky's split token/span input computed it.
    let eoi = src.len();
    let bytes = move |s: SimpleSpan| -> SimpleSpan {
        let Some(first) = toks.get(s.start) else {
            return SimpleSpan::from(eoi..eoi);
        };
        let end = match s.end.checked_sub(1).and_then(|i| toks.get(i)) {
            Some(last) => last.end(),
            None => eoi,
        };
        SimpleSpan::from(first.start(src)..end)
    };
    // Fast pass with allocation-free errors; a source with a grammar error is
    // parsed again with rich errors to say what went wrong.
    let mut state = TruncateState(Vec::new());
    let fast = top_parser::<_, Cheap<SimpleSpan>>(source)
        .parse_with_state(toks.map_span(bytes), &mut state);
    let output = if fast.has_errors() {
        let mut state = TruncateState(Vec::new());
        let rich = top_parser::<_, Rich<'_, PTok<'_>, SimpleSpan>>(source)
            .parse_with_state(toks.map_span(bytes), &mut state);
        let (output, errors) = rich.into_output_errors();
        diags.extend(state.0);
        for err in errors {
            diags.push(rich_to_diagnostic(&err, source));
        }
        output
    } else {
        diags.extend(state.0);
        fast.into_output()
    };
    let mut program = output.unwrap_or(Program {
        stmts: Vec::new(),
        span: Span::from_range(0..src.len()),
    });
    crate::walk::number_nodes(&mut program);
    (program, diags)
}

type TopExtra<'t, Er> = extra::Full<Er, TruncateState<Diagnostic>, ()>;

fn top_parser<'t, I, Er>(source: SourceId) -> impl Parser<'t, I, Program, TopExtra<'t, Er>>
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    program_parser().with_ctx(source)
}

fn rich_to_diagnostic(err: &Rich<'_, PTok<'_>, SimpleSpan>, source: SourceId) -> Diagnostic {
    let span = sp(*err.span());
    let found = err
        .found()
        .map_or_else(|| "end of input".to_string(), |t| t.to_string());
    match err.reason() {
        chumsky::error::RichReason::Custom(msg) => Diagnostic::new(
            Code::UnexpectedToken,
            source,
            msg.clone(),
            span,
            msg.clone(),
        ),
        chumsky::error::RichReason::ExpectedFound { expected, .. } => {
            let mut names: Vec<String> = expected
                .iter()
                .map(|e| match e {
                    chumsky::error::RichPattern::Label(l) if *l == "=" || is_reserved(l) => {
                        format!("`{l}`")
                    }
                    chumsky::error::RichPattern::Label(l) => l.to_string(),
                    chumsky::error::RichPattern::Token(t) => t.to_string(),
                    chumsky::error::RichPattern::EndOfInput => "end of input".to_string(),
                    chumsky::error::RichPattern::SomethingElse => String::new(),
                    other => other.to_string(),
                })
                .collect();
            names.retain(|n| !n.is_empty());
            names.sort();
            names.dedup();
            let label = match names.len() {
                0 => "not expected here".to_string(),
                1 => format!("expected {}", names.join("")),
                _ => format!("expected one of {}", names.join(", ")),
            };
            let d = Diagnostic::new(
                Code::UnexpectedToken,
                source,
                format!("Unexpected {found}"),
                span,
                label,
            );
            // A `:` before a space ends a word (§3.5); only a bracket or a
            // `case` arm gives it a meaning.
            if err.found().is_some_and(|t| t.kind == K::Colon) {
                d.with_note("`:` before whitespace, a newline, `]` or the end is punctuation (spec §3.5); only a bracket's entries and `case` arms use it")
                    .with_help("quote a word that ends in `:` to keep the colon, as in `'note:'`")
            } else {
                d
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Step 1: trivia, glue and delimiter repair.
// ---------------------------------------------------------------------------

fn closer_for(kind: K) -> Option<K> {
    match kind {
        K::LBrace => Some(K::RBrace),
        K::LBracket | K::ExprOpen => Some(K::RBracket),
        K::LParen => Some(K::RParen),
        K::DqStart => Some(K::DqEnd),
        _ => None,
    }
}

fn is_closer(kind: K) -> bool {
    matches!(kind, K::RBrace | K::RBracket | K::RParen | K::DqEnd)
}

fn delim_name(kind: K) -> &'static str {
    match kind {
        K::LBrace => "`{`",
        K::LBracket => "`[`",
        K::ExprOpen => "`$[`",
        K::LParen => "`(`",
        K::DqStart => "`\"`",
        K::RBrace => "`}`",
        K::RBracket => "`]`",
        K::RParen => "`)`",
        _ => "delimiter",
    }
}

/// The most operators one parenthesis level of `$[...]` may hold. Operator
/// chains fold into left-nested trees, so this bounds tree depth the way
/// [`MAX_NESTING`] bounds delimiters.
pub const MAX_OPERATORS: usize = 128;

/// Tokens being dropped after a limit was hit, until the stack height falls
/// back to `until_height`.
#[derive(Clone, Copy)]
struct Skip {
    until_height: usize,
    /// Whether the closer that ends the skip is kept (its opener was kept).
    keep_closer: bool,
}

/// One open delimiter during [`prepare`].
struct Frame {
    kind: K,
    span: Span,
    /// Operators seen directly inside this frame (expression mode only).
    ops: usize,
}

/// Step 1 (see the module docs). Returns grammar tokens with spans.
pub fn prepare<'s>(
    src: &'s str,
    source: SourceId,
    tokens: &[Token],
) -> (Vec<PTok<'s>>, Vec<Diagnostic>) {
    // Sized for every non-trivia token (virtual closers, rare, may grow
    // it): a list grown by doubling held up to twice what it needed.
    let kept = tokens.iter().filter(|t| !t.kind.is_trivia()).count();
    let mut out: Vec<PTok<'s>> = Vec::with_capacity(kept + 8);
    let mut diags = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut skip: Option<Skip> = None;
    let mut prev_end: Option<u32> = None;
    let mut prev_kind: Option<K> = None;
    // Consecutive prefix forms (tags, unary `-`/`not`), which nest without a
    // delimiter and so count towards the nesting limit.
    let mut prefix_run = 0usize;

    for tok in tokens {
        if tok.kind.is_trivia() {
            prev_end = None;
            continue;
        }
        let glued = prev_end == Some(tok.span.start);
        prev_end = Some(tok.span.end);
        let kind = tok.kind;
        let last_kind = prev_kind.replace(kind);
        match kind {
            K::Amp | K::AmpAmp | K::Error => continue,
            K::PipePipe if last_kind != Some(K::LBrace) => continue,
            _ => {}
        }
        let span = tok.span;
        let ptok = PTok::new(src, kind, span, glued, false);
        let in_expr = matches!(stack.last(), Some(f) if matches!(f.kind, K::ExprOpen | K::LParen));

        if closer_for(kind).is_some() {
            prefix_run = 0;
            stack.push(Frame {
                kind,
                span: tok.span,
                ops: 0,
            });
            if skip.is_none() && stack.len() > MAX_NESTING {
                diags.push(too_deep(
                    source,
                    tok.span,
                    format!("this {} is nesting level {}", delim_name(kind), stack.len()),
                ));
                skip = Some(Skip {
                    until_height: stack.len() - 1,
                    keep_closer: false,
                });
                out.push(PTok::new(src, K::Error, span, glued, true));
            } else if skip.is_none() {
                out.push(ptok);
            }
            continue;
        }

        if is_closer(kind) {
            prefix_run = 0;
            let matches_top = stack.last().and_then(|f| closer_for(f.kind)) == Some(kind);
            if !matches_top {
                let deeper = stack.iter().rposition(|f| closer_for(f.kind) == Some(kind));
                match deeper {
                    Some(pos) if kind != K::DqEnd => {
                        while stack.len() > pos + 1 {
                            if let Some(frame) = stack.pop() {
                                let closer = close_virtually(
                                    &mut diags,
                                    source,
                                    &frame,
                                    tok.span,
                                    &mut skip,
                                    stack.len(),
                                );
                                out.extend(closer.map(|(kind, at)| {
                                    PTok::new(src, kind, Span::point(at), false, true)
                                }));
                            }
                        }
                    }
                    _ => {
                        if skip.is_none() {
                            diags.push(
                                Diagnostic::new(
                                    Code::MismatchedDelimiter,
                                    source,
                                    format!("Unexpected closing {}", delim_name(kind)),
                                    tok.span,
                                    "this closes nothing that is open",
                                )
                                .with_help("remove it, or add the opening delimiter it belongs to"),
                            );
                        }
                        continue;
                    }
                }
            }
            stack.pop();
            match skip {
                None => out.push(ptok),
                Some(sk) if sk.until_height == stack.len() => {
                    if sk.keep_closer {
                        out.push(ptok);
                    }
                    skip = None;
                }
                Some(_) => {}
            }
            continue;
        }

        if skip.is_some() {
            continue;
        }
        let is_prefix = kind == K::Tag
            || (in_expr && (kind == K::Op(ExprOp::Sub) || (kind == K::Word && ptok.text == "not")));
        let is_op = in_expr && matches!(kind, K::Op(_));
        if is_prefix {
            prefix_run += 1;
            if stack.len() + prefix_run > MAX_NESTING {
                if stack.len() + prefix_run == MAX_NESTING + 1 {
                    diags.push(too_deep(
                        source,
                        tok.span,
                        "this prefix form is nested too deep".to_string(),
                    ));
                }
                continue;
            }
        } else {
            prefix_run = 0;
        }
        if is_op {
            if let Some(frame) = stack.last_mut() {
                frame.ops += 1;
                if frame.ops > MAX_OPERATORS {
                    diags.push(
                        Diagnostic::new(
                            Code::NestingTooDeep,
                            source,
                            format!("An expression has more than {MAX_OPERATORS} operators at one level"),
                            tok.span,
                            "one operator too many",
                        )
                        .with_note("Operator chains nest like brackets do, and are bounded for the same reason.")
                        .with_help("bind parts of the expression to names with `let`"),
                    );
                    out.push(ptok);
                    out.push(PTok::new(src, K::Error, span, false, true));
                    skip = Some(Skip {
                        until_height: stack.len() - 1,
                        keep_closer: true,
                    });
                    continue;
                }
            }
        }
        out.push(ptok);
    }
    let end = u32::try_from(src.len()).unwrap_or(u32::MAX);
    while let Some(frame) = stack.pop() {
        let closer = close_virtually(
            &mut diags,
            source,
            &frame,
            Span::point(end),
            &mut skip,
            stack.len(),
        );
        out.extend(closer.map(|(kind, at)| PTok::new(src, kind, Span::point(at), false, true)));
    }
    (out, diags)
}

fn too_deep(source: SourceId, span: Span, label: String) -> Diagnostic {
    Diagnostic::new(
        Code::NestingTooDeep,
        source,
        format!("Forms are nested more than {MAX_NESTING} deep"),
        span,
        label,
    )
    .with_note(format!("ral accepts at most {MAX_NESTING} nested blocks, brackets, strings, expressions and prefix forms."))
    .with_help("bind inner parts to names with `let` to flatten the nesting")
}

/// Closes `frame` with a virtual closer at `at`, reporting it unless it is a
/// string (the lexer reports those) or lies in a region being skipped.
/// Returns the closer to add (its kind and offset), if one is added.
fn close_virtually(
    diags: &mut Vec<Diagnostic>,
    source: SourceId,
    frame: &Frame,
    at: Span,
    skip: &mut Option<Skip>,
    height: usize,
) -> Option<(K, u32)> {
    let close = closer_for(frame.kind)?;
    let skipping_inside = skip.is_some_and(|sk| height > sk.until_height);
    if frame.kind != K::DqStart && !skipping_inside {
        diags.push(
            Diagnostic::new(
                Code::UnclosedDelimiter,
                source,
                format!("Unclosed {}", delim_name(frame.kind)),
                frame.span,
                "opened here and never closed",
            )
            .with_secondary(
                Span::point(at.start),
                format!("expected {} before this", delim_name_close(close)),
            )
            .with_help(format!("add the missing {}", delim_name_close(close))),
        );
    }
    let virtual_closer = (close, at.start);
    match *skip {
        None => Some(virtual_closer),
        Some(sk) if sk.until_height == height => {
            *skip = None;
            sk.keep_closer.then_some(virtual_closer)
        }
        Some(_) => None,
    }
}

fn delim_name_close(kind: K) -> &'static str {
    match kind {
        K::RBrace => "`}`",
        K::RBracket => "`]`",
        K::RParen => "`)`",
        K::DqEnd => "`\"`",
        _ => "closing delimiter",
    }
}

// ---------------------------------------------------------------------------
// Step 2: the grammar.
// ---------------------------------------------------------------------------

fn tok<'t, I, Er>(kind: K) -> impl Parser<'t, I, PTok<'t>, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    any().filter(move |t: &PTok<'t>| t.kind == kind)
}

fn word<'t, I, Er>(text: &'static str) -> impl Parser<'t, I, PTok<'t>, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    any()
        .filter(move |t: &PTok<'t>| t.kind == K::Word && t.text == text)
        .labelled(text)
}

fn nl<'t, I, Er>() -> impl Parser<'t, I, (), Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    tok(K::Newline).repeated().ignored()
}

fn push_diag<'t, 'b, I, Er>(
    e: &mut chumsky::input::MapExtra<'t, 'b, I, Extra<'t, Er>>,
    diag: Diagnostic,
) where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    e.state().0.push(diag);
}

fn source_of<'t, 'b, I, Er>(e: &mut chumsky::input::MapExtra<'t, 'b, I, Extra<'t, Er>>) -> SourceId
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    *e.ctx()
}

fn mk_atom(primary: Primary, span: Span) -> Atom {
    Atom {
        id: NodeId::default(),
        primary,
        indexes: Vec::new(),
        span,
    }
}

/// Classifies a bare word (spec §4.1, §3.6).
fn word_primary(text: &str) -> Primary {
    match text {
        "true" => Primary::Bool(true),
        "false" => Primary::Bool(false),
        _ => match parse_numeral(text) {
            Some(Numeral::Int(n)) => Primary::Int(n),
            Some(Numeral::Float(f)) => Primary::Float(f),
            None => Primary::Word(text.to_string()),
        },
    }
}

/// The content of a single-quoted or hash-fenced string token.
fn raw_content(text: &str, hashes: u8, closed: bool) -> String {
    let open = hashes as usize + 1;
    let close = if closed { hashes as usize + 1 } else { 0 };
    text.get(open..text.len().saturating_sub(close).max(open))
        .unwrap_or("")
        .to_string()
}

/// What can stop a command's argument list.
fn is_arg_start(kind: K) -> bool {
    matches!(
        kind,
        K::Word
            | K::RawString { .. }
            | K::DqStart
            | K::Var
            | K::VarParen
            | K::ExprOpen
            | K::Bang
            | K::Tag
            | K::LBrace
            | K::LBracket
            | K::LParen
            | K::Spread
            | K::Error
    )
}

/// The grammar of a whole program.
///
/// Programs contain atoms (blocks hold programs, atoms hold blocks), so the
/// two parsers are mutually recursive. Both are made with [`recursive`],
/// whose self-handle is weak: the program's definition owns its atom parser,
/// and the atom parser refers back to the program only weakly. (Two
/// `Recursive::declare`d parsers that owned each other formed an `Rc` cycle
/// that leaked the whole grammar, several kilobytes, on every parse.)
fn program_parser<'t, I, Er>() -> impl Parser<'t, I, Program, Extra<'t, Er>>
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    let program = recursive(|program| {
        let atom = recursive(|atom| atom_parser(atom, program.clone()));
        statements_parser(atom)
    });
    program.then_ignore(end())
}

/// Binding patterns.
fn pattern_parser<'t, I, Er>() -> impl Parser<'t, I, Pattern, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    recursive(|pattern| {
        let name_pat =
            tok(K::Word)
                .filter(|t: &PTok<'t>| t.text != "=")
                .map_with(|t: PTok<'t>, e| {
                    let span = sp(e.span());
                    let kind = if t.text == "_" {
                        PatternKind::Wildcard
                    } else if is_identifier(t.text) {
                        PatternKind::Bind(Name::new(t.text, span))
                    } else {
                        let source = source_of(e);
                        push_diag(
                    e,
                    Diagnostic::new(
                        Code::InvalidPattern,
                        source,
                        format!("`{}` is not a pattern", t.text),
                        span,
                        "expected a name, `_`, or a bracketed pattern",
                    )
                    .with_note("A pattern binds names; it cannot test a literal value (spec §5.2).")
                    .with_help("use `if` to compare values, and `case` to choose by tag"),
                );
                        PatternKind::Error
                    };
                    Pattern {
                        id: NodeId::default(),
                        kind,
                        span,
                    }
                });

        let other_pat = any()
            .filter(|t: &PTok<'t>| {
                matches!(t.kind, K::RawString { .. } | K::Var | K::VarParen | K::ExprOpen | K::DqStart | K::LBrace | K::Bang | K::Tag)
            })
            .map_with(|t: PTok<'t>, e| {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::InvalidPattern,
                        source,
                        format!("{t} cannot start a pattern"),
                        span,
                        "expected a name, `_`, or a bracketed pattern",
                    )
                    .with_note("Patterns are structural: names, `_`, list patterns and field patterns (spec §5.2)."),
                );
                Pattern { id: NodeId::default(), kind: PatternKind::Error, span }
            });

        // A key in a field pattern: identifier or quoted string; a tag is refused.
        let pat_key = choice((
            tok(K::Word)
                .filter(|t: &PTok<'t>| is_identifier(t.text))
                .map_with(|t: PTok<'t>, e| Name::new(t.text, sp(e.span()))),
            any()
                .filter(|t: &PTok<'t>| matches!(t.kind, K::RawString { .. }))
                .map_with(|t: PTok<'t>, e| {
                    let (hashes, closed) = match t.kind {
                        K::RawString { hashes, closed } => (hashes, closed),
                        _ => (0, true),
                    };
                    Name::new(raw_content(t.text, hashes, closed), sp(e.span()))
                }),
            tok(K::Tag).map_with(|t: PTok<'t>, e| {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(e, tag_as_key(source, span, t.text));
                Name::new(t.text.trim_start_matches('`'), span)
            }),
        ))
        .then_ignore(tok(K::Colon));

        #[derive(Clone)]
        enum PatItem {
            Pos(Pattern),
            Rest(Option<Name>, Span),
            Field(FieldPattern),
        }

        let rest = tok(K::Spread)
            .ignore_then(tok(K::Word))
            .map_with(|t: PTok<'t>, e| {
                let span = sp(e.span());
                let name_span = Span::new(span.end.saturating_sub(t.text.len() as u32), span.end);
                if t.text == "_" {
                    PatItem::Rest(None, span)
                } else {
                    if !is_identifier(t.text) {
                        let source = source_of(e);
                        push_diag(
                            e,
                            Diagnostic::new(
                                Code::InvalidPattern,
                                source,
                                format!("`{}` cannot name a list tail", t.text),
                                name_span,
                                "expected a name after `...`",
                            ),
                        );
                    }
                    PatItem::Rest(Some(Name::new(t.text, name_span)), span)
                }
            });

        let item = choice((
            pat_key.then(pattern.clone()).map_with(|(key, pattern), e| {
                PatItem::Field(FieldPattern {
                    key,
                    pattern,
                    span: sp(e.span()),
                })
            }),
            rest,
            pattern.clone().map(PatItem::Pos),
        ));

        let bracket = item
            .separated_by(tok(K::Comma))
            .allow_trailing()
            .collect::<Vec<PatItem>>()
            .delimited_by(tok(K::LBracket), tok(K::RBracket))
            .map_with(|items: Vec<PatItem>, e| {
                let span = sp(e.span());
                let source = source_of(e);
                let has_field = items.iter().any(|i| matches!(i, PatItem::Field(_)));
                let mut pos = Vec::new();
                let mut fields = Vec::new();
                let mut rest: Option<Name> = None;
                let mut rest_seen: Option<Span> = None;
                let mut mixed = false;
                for it in items {
                    if let Some(rs) = rest_seen {
                        push_diag(
                            e,
                            Diagnostic::new(Code::InvalidPattern, source, "A list tail must come last", rs, "this `...` tail is not last")
                                .with_note("A rest pattern takes what remains, so nothing can follow it (spec §5.2)."),
                        );
                        rest_seen = None;
                    }
                    match it {
                        PatItem::Pos(p) => {
                            if has_field {
                                mixed = true;
                            }
                            pos.push(p);
                        }
                        PatItem::Field(f) => fields.push(f),
                        PatItem::Rest(name, rs) => {
                            if has_field {
                                mixed = true;
                            }
                            rest = Some(name.unwrap_or_else(|| Name::new("_", rs)));
                            rest_seen = Some(rs);
                        }
                    }
                }
                if mixed {
                    push_diag(
                        e,
                        Diagnostic::new(
                            Code::MixedEntries,
                            source,
                            "A pattern mixes list items and fields",
                            span,
                            "either all entries are `key: pattern`, or none is",
                        ),
                    );
                    return Pattern { id: NodeId::default(), kind: PatternKind::Error, span };
                }
                let kind = if has_field { PatternKind::Record { fields: fit(fields) } } else { PatternKind::List { items: fit(pos), rest } };
                Pattern { id: NodeId::default(), kind, span }
            });

        choice((name_pat, bracket, other_pat))
            .labelled("pattern")
            .boxed()
    })
}

/// One atom (a primary and its postfix indexes), over handles to the atom
/// and program parsers themselves.
fn atom_parser<'t, I, Er, A, Q>(
    atom: A,
    program: Q,
) -> impl Parser<'t, I, Atom, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
    A: Parser<'t, I, Atom, Extra<'t, Er>> + Clone + 't,
    Q: Parser<'t, I, Program, Extra<'t, Er>> + Clone + 't,
{
    let pattern = pattern_parser();

    // ---- strings ------------------------------------------------------------

    let raw_string = any()
        .filter(|t: &PTok<'t>| matches!(t.kind, K::RawString { .. }))
        .map(|t: PTok<'t>| {
            let (hashes, closed) = match t.kind {
                K::RawString { hashes, closed } => (hashes, closed),
                _ => (0, true),
            };
            StrLit {
                quote: Quote::Single { hashes },
                parts: vec![StrPart::Text(raw_content(t.text, hashes, closed))],
            }
        });

    // An index group `[key]` glued to what precedes it.
    let index = tok(K::LBracket)
        .filter(|t: &PTok<'t>| t.glued())
        .ignore_then(atom.clone())
        .then_ignore(tok(K::RBracket))
        .map_with(|key, e| Index {
            key,
            span: sp(e.span()),
        });

    let var = any()
        .filter(|t: &PTok<'t>| matches!(t.kind, K::Var | K::VarParen))
        .map_with(|t: PTok<'t>, e| {
            let span = sp(e.span());
            let name = if t.kind == K::Var {
                t.text.trim_start_matches('$')
            } else {
                t.text.trim_start_matches("$(").trim_end_matches(')')
            };
            (Name::new(name, span), t.kind == K::Var)
        });

    let expr = expr_parser(atom.clone());

    let expr_block = tok(K::ExprOpen)
        .ignore_then(expr.clone())
        .then_ignore(tok(K::RBracket))
        .map_with(|x, e| mk_atom(Primary::Expr(Box::new(x)), sp(e.span())));

    let str_part = choice((
        tok(K::DqText).map(|t: PTok<'t>| (StrPart::Text(t.text.to_string()), true)),
        any()
            .filter(|t: &PTok<'t>| matches!(t.kind, K::DqEscape { .. }))
            .map(|t: PTok<'t>| match decode_escape(t.text) {
                Some(EscapeValue::Char(c)) => (StrPart::Text(c.to_string()), false),
                Some(EscapeValue::LineContinuation) | None => (StrPart::Text(String::new()), false),
            }),
        // `$name[k]…` and `$(name)`: only the former continues into index groups.
        var.then(index.clone().repeated().collect::<Vec<_>>())
            .map_with(|((name, plain), indexes), e| {
                let span = sp(e.span());
                let mut a = mk_atom(Primary::Var(name), span);
                if plain {
                    a.indexes = fit(indexes);
                }
                (StrPart::Splice(a), false)
            }),
        expr_block.clone().map(|a| (StrPart::Splice(a), false)),
        // `!{…}` and `!$name[k]…`.
        tok(K::Bang)
            .ignore_then(choice((
                var.then(index.clone().repeated().collect::<Vec<_>>())
                    .map_with(|((name, _), indexes), e| {
                        let mut a = mk_atom(Primary::Var(name), sp(e.span()));
                        a.indexes = fit(indexes);
                        a
                    }),
                block_parser(pattern.clone(), program.clone())
                    .map_with(|b, e| mk_atom(Primary::Block(Box::new(b)), sp(e.span()))),
            )))
            .map_with(|inner, e| {
                (
                    StrPart::Splice(mk_atom(Primary::Force(Box::new(inner)), sp(e.span()))),
                    false,
                )
            }),
    ));

    let dq_string = tok(K::DqStart)
        .ignore_then(str_part.repeated().collect::<Vec<(StrPart, bool)>>())
        .then_ignore(tok(K::DqEnd))
        .map(|parts| StrLit {
            quote: Quote::Double,
            parts: fit(merge_text(parts)),
        });

    // ---- collections --------------------------------------------------------

    #[derive(Clone)]
    enum Item {
        Pos(Atom),
        Spread(Atom, Span),
        Field(Key, Atom, Span),
    }

    let key = choice((
        // A bare key must be a name; a quoted one may hold any text.
        tok(K::Word).map_with(|t: PTok<'t>, e| {
            let span = sp(e.span());
            if !is_identifier(t.text) {
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::InvalidKey,
                        source,
                        format!("`{}` cannot be a key", t.text),
                        span,
                        "a bare key must be a name",
                    )
                    .with_help(format!("quote it: '{}'", t.text)),
                );
            }
            Ok(Key::Static(Name::new(t.text, span)))
        }),
        raw_string.map_with(|s: StrLit, e| {
            Ok(Key::Static(Name::new(
                s.as_plain().unwrap_or_default(),
                sp(e.span()),
            )))
        }),
        dq_string
            .clone()
            .map_with(|s: StrLit, e| match s.as_plain() {
                Some(text) => Ok(Key::Static(Name::new(text, sp(e.span())))),
                None => Err(sp(e.span())),
            }),
        var.map(|(name, _)| Ok(Key::Computed(name))),
        tok(K::Tag).map_with(|t: PTok<'t>, e| {
            let span = sp(e.span());
            let source = source_of(e);
            push_diag(e, tag_as_key(source, span, t.text));
            Ok(Key::Static(Name::new(t.text.trim_start_matches('`'), span)))
        }),
    ))
    .then_ignore(tok(K::Colon));

    let coll_item = choice((
        key.then(atom.clone()).map_with(|(k, v), e| {
            let span = sp(e.span());
            match k {
                Ok(k) => Item::Field(k, v, span),
                Err(kspan) => {
                    let source = source_of(e);
                    push_diag(
                        e,
                        Diagnostic::new(
                            Code::InvalidKey,
                            source,
                            "An interpolated string cannot be a key",
                            kspan,
                            "this key has a splice",
                        )
                        .with_help("bind the key first and write `$key: value`"),
                    );
                    Item::Field(Key::Static(Name::new("", kspan)), v, span)
                }
            }
        }),
        tok(K::Spread)
            .ignore_then(atom.clone())
            .map_with(|a, e| Item::Spread(a, sp(e.span()))),
        atom.clone().map(Item::Pos),
    ));

    let collection = tok(K::LBracket)
        .ignore_then(tok(K::Colon).then(tok(K::Comma).or_not()).or_not())
        .then(coll_item.separated_by(tok(K::Comma)).allow_trailing().collect::<Vec<Item>>())
        .then_ignore(tok(K::RBracket))
        .map_with(|(map_open, items), e| {
            let span = sp(e.span());
            let source = source_of(e);
            if let Some((_colon, comma)) = map_open {
                if comma.is_none() && !items.is_empty() {
                    let at = items.first().map_or(span, item_span);
                    push_diag(
                        e,
                        Diagnostic::new(Code::UnexpectedToken, source, "Expected `,` after `[:`", at, "a map literal is `[:]` or `[:, key: value, …]`")
                            .with_help("write `[:, ` before the first entry"),
                    );
                }
                let entries = items_to_entries(items, true, e);
                return mk_atom(Primary::Map(entries), span);
            }
            let has_pos = items.iter().any(|i| matches!(i, Item::Pos(_)));
            let has_field = items.iter().any(|i| matches!(i, Item::Field(..)));
            if has_pos && has_field {
                push_diag(
                    e,
                    Diagnostic::new(Code::MixedEntries, source, "A literal mixes list items and keyed entries", span, "either every entry has a key, or none has")
                        .with_note("`[a, b]` is a list and `[a: 1, b: 2]` a record; one literal cannot be both (spec §4.4, §4.5)."),
                );
                return mk_atom(Primary::Error, span);
            }
            if has_field {
                let computed = items.iter().any(|i| matches!(i, Item::Field(Key::Computed(_), _, _)));
                let entries = items_to_entries(items, false, e);
                if computed {
                    mk_atom(Primary::Map(entries), span)
                } else {
                    mk_atom(Primary::Record(entries), span)
                }
            } else {
                let list = items
                    .into_iter()
                    .map(|i| match i {
                        Item::Pos(a) => ListItem::Item(a),
                        Item::Spread(a, s) => ListItem::Spread { value: a, span: s },
                        Item::Field(_, a, _) => ListItem::Item(a),
                    })
                    .collect();
                mk_atom(Primary::List(fit(list)), span)
            }
        });

    fn item_span(i: &Item) -> Span {
        match i {
            Item::Pos(a) => a.span,
            Item::Spread(_, s) | Item::Field(_, _, s) => *s,
        }
    }

    fn items_to_entries<'t, 'b, I, Er>(
        items: Vec<Item>,
        _map: bool,
        e: &mut chumsky::input::MapExtra<'t, 'b, I, Extra<'t, Er>>,
    ) -> Vec<Entry>
    where
        I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
        Er: ParseError<'t, I>,
    {
        let source = source_of(e);
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it {
                Item::Field(key, value, span) => out.push(Entry::Field { key, value, span }),
                Item::Spread(value, span) => out.push(Entry::Spread { value, span }),
                Item::Pos(a) => {
                    push_diag(
                        e,
                        Diagnostic::new(
                            Code::MixedEntries,
                            source,
                            "A map entry needs a key",
                            a.span,
                            "expected `key: value`",
                        ),
                    );
                }
            }
        }
        out
    }

    // ---- primaries and atoms -------------------------------------------------

    let block = block_parser(pattern.clone(), program.clone());

    let word_atom =
        tok(K::Word).map_with(|t: PTok<'t>, e| mk_atom(word_primary(t.text), sp(e.span())));

    let unit = tok(K::LParen)
        .then(tok(K::RParen).filter(|t: &PTok<'t>| t.glued()))
        .map_with(|_, e| mk_atom(Primary::Unit, sp(e.span())));

    let tag = tok(K::Tag).then(atom.clone().or_not()).map_with(
        |(t, payload): (PTok<'t>, Option<Atom>), e| {
            let span = sp(e.span());
            let name_span = Span::new(span.start, span.start + t.text.len() as u32);
            let name = Name::new(t.text.trim_start_matches('`'), name_span);
            mk_atom(
                Primary::Tag {
                    name,
                    payload: payload.map(Box::new),
                },
                span,
            )
        },
    );

    let error_atom = tok(K::Error).map_with(|_, e| mk_atom(Primary::Error, sp(e.span())));

    // `!` force: `!$x[k]` keeps the indexes inside; `!{…}` and other primaries force first.
    let force_inner = choice((
        var.then(index.clone().repeated().collect::<Vec<_>>())
            .map_with(|((name, _), indexes), e| {
                let mut a = mk_atom(Primary::Var(name), sp(e.span()));
                a.indexes = fit(indexes);
                a
            }),
        block
            .clone()
            .map_with(|b, e| mk_atom(Primary::Block(Box::new(b)), sp(e.span()))),
        expr_block.clone(),
        collection.clone(),
        word_atom.clone(),
        raw_string.map_with(|s, e| mk_atom(Primary::Str(s), sp(e.span()))),
        dq_string
            .clone()
            .map_with(|s, e| mk_atom(Primary::Str(s), sp(e.span()))),
    ));
    let force = tok(K::Bang)
        .map_with(|_, e| sp(e.span()))
        .then(force_inner)
        .map_with(|(bang, inner): (Span, Atom), e| {
            if bang.end != inner.span.start {
                let source = source_of(e);
                push_diag(e, stray_bang(source, bang));
            }
            mk_atom(Primary::Force(Box::new(inner)), sp(e.span()))
        });
    let lone_bang = tok(K::Bang).map_with(|_, e| {
        let span = sp(e.span());
        let source = source_of(e);
        push_diag(e, stray_bang(source, span));
        mk_atom(Primary::Error, span)
    });

    let primary = choice((
        word_atom,
        raw_string.map_with(|s, e| mk_atom(Primary::Str(s), sp(e.span()))),
        dq_string.map_with(|s, e| mk_atom(Primary::Str(s), sp(e.span()))),
        var.map_with(|(name, _), e| mk_atom(Primary::Var(name), sp(e.span()))),
        expr_block,
        force,
        tag,
        block
            .clone()
            .map_with(|b, e| mk_atom(Primary::Block(Box::new(b)), sp(e.span()))),
        collection,
        unit,
        error_atom,
        lone_bang,
    ))
    .labelled("a value");

    primary
        .then(index.repeated().collect::<Vec<Index>>())
        .map_with(|(mut a, indexes): (Atom, Vec<Index>), e| {
            if !indexes.is_empty() {
                a.indexes.extend(indexes);
                a.indexes.shrink_to_fit();
                a.span = sp(e.span());
            }
            a
        })
}

/// A program's statements, over a finished atom parser.
fn statements_parser<'t, I, Er, A>(atom: A) -> impl Parser<'t, I, Program, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
    A: Parser<'t, I, Atom, Extra<'t, Er>> + Clone + 't,
{
    let pattern = pattern_parser();

    // ---- redirects -----------------------------------------------------------

    let redirect = any()
        .filter(|t: &PTok<'t>| matches!(t.kind, K::Redirect { .. }))
        .then(atom.clone().or_not())
        .try_map_with(|(t, target): (PTok<'t>, Option<Atom>), e| {
            let span = sp(e.span());
            let K::Redirect { fd, op } = t.kind else {
                return Err(Er::custom(e.span(), "expected a redirect"));
            };
            let default_fd = match op {
                RedirectOp::Read | RedirectOp::Here => 0,
                RedirectOp::Write
                | RedirectOp::Stream
                | RedirectOp::Append
                | RedirectOp::Dup(_) => 1,
            };
            let kind = match (op, target) {
                (RedirectOp::Dup(target), None) => RedirectKind::Dup { target },
                (RedirectOp::Dup(_), Some(_)) => {
                    return Err(Er::custom(
                        e.span(),
                        "`>&N` takes no target after the descriptor",
                    ));
                }
                (_, None) => {
                    let source = source_of(e);
                    push_diag(
                        e,
                        Diagnostic::new(
                            Code::MissingPart,
                            source,
                            format!("`{}` needs a target", t.text),
                            span,
                            "nothing follows this redirect",
                        )
                        .with_help("write the file name or value after it"),
                    );
                    RedirectKind::Write(mk_atom(Primary::Error, span))
                }
                (RedirectOp::Write, Some(a)) => RedirectKind::Write(a),
                (RedirectOp::Stream, Some(a)) => RedirectKind::Stream(a),
                (RedirectOp::Append, Some(a)) => RedirectKind::Append(a),
                (RedirectOp::Read, Some(a)) => RedirectKind::Read(a),
                (RedirectOp::Here, Some(a)) => RedirectKind::Here(a),
            };
            Ok(Redirect {
                fd: fd.unwrap_or(default_fd),
                explicit_fd: fd.is_some(),
                op: kind,
                span,
            })
        })
        .boxed();
    let redirects = redirect.clone().repeated().collect::<Vec<Redirect>>();

    // ---- stages ----------------------------------------------------------------

    // Only a token that can start an argument or a redirect enters the
    // alternatives, so the end of a command costs one failed test, not one
    // per kind of atom.
    let arg_start = any()
        .filter(|t: &PTok<'t>| is_arg_start(t.kind) || matches!(t.kind, K::Redirect { .. }))
        .rewind();
    let arg = arg_start.ignore_then(choice((
        atom.clone().map(|a| Ok(Arg::Atom(a))),
        redirect.clone().map(Err),
        tok(K::Spread)
            .ignore_then(atom.clone())
            .map_with(|value, e| {
                Ok(Arg::Spread {
                    value,
                    span: sp(e.span()),
                })
            }),
    )));

    let caret_head = tok(K::Caret)
        .then(any().filter(|t: &PTok<'t>| t.glued() && is_arg_start(t.kind)).or_not())
        .map_with(|(_, name): (PTok<'t>, Option<PTok<'t>>), e| {
            let span = sp(e.span());
            match name {
                Some(t) if t.kind == K::Word && is_identifier(t.text) => {
                    Head::Caret(Name::new(t.text, Span::new(span.start + 1, span.end)))
                }
                other => {
                    let source = source_of(e);
                    let what = other.map_or("nothing".to_string(), |t| t.to_string());
                    push_diag(
                        e,
                        Diagnostic::new(Code::CaretOperand, source, "`^` takes a plain command name", span, format!("found {what} after `^`"))
                            .with_note("`^name` runs the external program `name`; a path head such as `./tool` already bypasses lookup (spec §6.2).")
                            .with_help("write `^name` with no space, or use the path directly"),
                    );
                    Head::Atom(mk_atom(Primary::Error, span))
                }
            }
        });

    let command = choice((caret_head, atom.clone().map(Head::Atom)))
        .then(arg.repeated().collect::<Vec<Result<Arg, Redirect>>>())
        .map_with(|(head, items): (Head, Vec<Result<Arg, Redirect>>), e| {
            let mut args = Vec::new();
            let mut redirects = Vec::new();
            // No implicit concatenation (spec/deviations.md D9): an argument
            // touching the value before it is refused, not split silently.
            let mut prev_end = Some(head.span().end);
            for it in items {
                match it {
                    Ok(a) => {
                        let span = match &a {
                            Arg::Atom(atom) => atom.span,
                            Arg::Spread { span, .. } => *span,
                        };
                        if prev_end == Some(span.start) {
                            let source = source_of(e);
                            push_diag(e, juxtaposed(source, span));
                        }
                        prev_end = Some(span.end);
                        args.push(a);
                    }
                    Err(r) => {
                        prev_end = None;
                        redirects.push(r);
                    }
                }
            }
            StageKind::Command(Command {
                head,
                args: fit(args),
                redirects: fit(redirects),
            })
        });

    let return_operand = choice((
        tok(K::Spread)
            .ignore_then(atom.clone())
            .map_with(|a: Atom, e| {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::SpreadNotAllowed,
                        source,
                        "`return` cannot spread",
                        span,
                        "`...` forms an argument list, and `return` takes one value",
                    )
                    .with_help("return the list itself: `return $xs`"),
                );
                a
            }),
        atom.clone(),
    ));
    let ret = word("return")
        .ignore_then(return_operand.or_not())
        .then(
            atom.clone()
                .repeated()
                .at_least(1)
                .collect::<Vec<Atom>>()
                .or_not(),
        )
        .map_with(|(value, extra), e| {
            if let Some(extra) = extra {
                let source = source_of(e);
                let first = extra.first().map_or(Span::default(), |a| a.span);
                let last = extra.last().map_or(first, |a| a.span);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::ReturnArity,
                        source,
                        "`return` takes at most one value",
                        first.to(last),
                        "extra values",
                    )
                    .with_help("return a list or a record to return several values"),
                );
            }
            StageKind::Return(value)
        });

    let arm_atom = nl().ignore_then(atom.clone());

    let missing = |what: &'static str, form: &'static str| {
        empty().map_with(
            move |_, e: &mut chumsky::input::MapExtra<'t, '_, I, Extra<'t, Er>>| {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::MissingPart,
                        source,
                        format!("`{form}` is missing its {what}"),
                        span,
                        format!("expected the {what} here"),
                    ),
                );
                mk_atom(Primary::Error, span)
            },
        )
    };

    let if_branch = |kw: &'static str| {
        word(kw)
            .map_with(|_, e| sp(e.span()))
            .then(arm_atom.clone().or(missing("condition", kw)))
            .then(arm_atom.clone().or(missing("body", kw)))
            .map(|((keyword, cond), arm)| IfBranch { cond, arm, keyword })
    };

    let conditional = if_branch("if")
        .then(
            nl().ignore_then(if_branch("elsif"))
                .repeated()
                .collect::<Vec<IfBranch>>(),
        )
        .then(
            nl().ignore_then(word("else"))
                .ignore_then(arm_atom.clone().or(missing("body", "else")))
                .or_not(),
        )
        .map(|((first, rest), else_arm)| {
            let mut branches = vec![first];
            branches.extend(rest);
            branches.shrink_to_fit();
            StageKind::If(Box::new(If { branches, else_arm }))
        });

    #[derive(Clone)]
    enum ArmItem {
        Arm(CaseArm),
        Bad,
    }
    let case_arm = choice((
        tok(K::Tag).then_ignore(tok(K::Colon)).then(atom.clone()).map_with(|(t, arm): (PTok<'t>, Atom), e| {
            let span = sp(e.span());
            let tag = Name::new(t.text.trim_start_matches('`'), Span::new(span.start, span.start + t.text.len() as u32));
            ArmItem::Arm(CaseArm { tag, arm, span })
        }),
        tok(K::Spread).ignore_then(atom.clone()).map_with(|_, e| {
            let span = sp(e.span());
            let source = source_of(e);
            push_diag(
                e,
                Diagnostic::new(Code::CaseArmForm, source, "A `case` arm list cannot spread", span, "a spread hides which tags the `case` handles")
                    .with_note("The arms of a `case` are syntax, one written-out `` `tag: arm `` per tag, so exhaustiveness can be proved (spec §8.3).")
                    .with_help("write each arm out"),
            );
            ArmItem::Bad
        }),
        atom.clone().then(tok(K::Colon).ignore_then(atom.clone()).or_not()).map_with(|(a, _), e| {
            let span = sp(e.span());
            let source = source_of(e);
            let _ = a;
            push_diag(
                e,
                Diagnostic::new(Code::CaseArmForm, source, "A `case` arm is written `` `tag: arm ``", span, "this is not a tag arm")
                    .with_note("Record keys and tags are different alphabets; a `case` arm is keyed by a tag (spec §4.6, §8.3).")
                    .with_help("write the tag with a backtick, e.g. `` `ok: { |v| … } ``"),
            );
            ArmItem::Bad
        }),
    ));
    let case_arms = tok(K::LBracket)
        .ignore_then(tok(K::Colon).then(tok(K::Comma).or_not()).or_not())
        .then(
            case_arm
                .separated_by(tok(K::Comma))
                .allow_trailing()
                .collect::<Vec<ArmItem>>(),
        )
        .then_ignore(tok(K::RBracket))
        .map_with(|(colon, items), e| {
            if colon.is_some() {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(
                        Code::CaseArmForm,
                        source,
                        "A `case` arm list is not a map",
                        span,
                        "remove the `:` after `[`",
                    ),
                );
            }
            let had_bad = items.iter().any(|i| matches!(i, ArmItem::Bad));
            let mut arms: Vec<CaseArm> = items
                .into_iter()
                .filter_map(|i| match i {
                    ArmItem::Arm(a) => Some(a),
                    ArmItem::Bad => None,
                })
                .collect();
            let span = sp(e.span());
            if arms.is_empty() && had_bad {
                // Keep the list non-empty so the already-reported malformed
                // arm is not reported again as an empty `case`.
                let body = Program {
                    stmts: Vec::new(),
                    span,
                };
                let block = Block {
                    id: NodeId::default(),
                    params: Vec::new(),
                    body,
                    span,
                };
                arms.push(CaseArm {
                    tag: Name::new("", span),
                    arm: mk_atom(Primary::Block(Box::new(block)), span),
                    span,
                });
            }
            (fit(arms), span)
        });
    let computed_arms = atom.clone().map_with(|_, e| {
        let span = sp(e.span());
        let source = source_of(e);
        push_diag(
            e,
            Diagnostic::new(Code::CaseArmForm, source, "A `case` needs its arms written out", span, "expected `[`tag: arm, …]` here")
                .with_note("The set of alternatives must be visible to the checker, so an arm table cannot be computed (spec §8.3)."),
        );
        (Vec::new(), span)
    });
    let case = word("case")
        .ignore_then(arm_atom.clone().or(missing("scrutinee", "case")))
        .then(nl().ignore_then(case_arms.or(computed_arms)))
        .map(|(scrutinee, (arms, arms_span))| {
            StageKind::Case(Box::new(Case {
                scrutinee,
                arms,
                arms_span,
            }))
        });

    let scope = |kw: &'static str, two: bool, first: &'static str, second: &'static str| {
        word(kw)
            .map_with(|_, e| sp(e.span()))
            .then(atom.clone().or(missing(first, kw)))
            .then(if two {
                atom.clone()
                    .map(Some)
                    .or(missing(second, kw).map(Some))
                    .boxed()
            } else {
                empty().to(None).boxed()
            })
            .then(redirects.clone())
            .map(move |(((keyword, a), b), redirects)| {
                let b = b.unwrap_or_else(|| mk_atom(Primary::Error, keyword));
                let kind = match kw {
                    "try" => ScopeKind::Try {
                        body: a,
                        handler: b,
                    },
                    "guard" => ScopeKind::Guard {
                        body: a,
                        cleanup: b,
                    },
                    "within" => ScopeKind::Within {
                        options: a,
                        body: b,
                    },
                    "grant" => ScopeKind::Grant { caps: a, body: b },
                    _ => ScopeKind::Audit { body: a },
                };
                StageKind::Scope(Box::new(ScopeForm {
                    kind,
                    keyword,
                    redirects: fit(redirects),
                }))
            })
    };
    let scope_form = choice((
        scope("try", true, "body", "handler"),
        scope("guard", true, "body", "cleanup"),
        scope("within", true, "options", "body"),
        scope("grant", true, "capabilities", "body"),
        scope("audit", false, "body", ""),
    ));

    // Skipping for recovery: a delimited group is skipped whole (separators
    // inside it included); outside groups, skipping stops at a statement
    // separator or a closer.
    let balanced = recursive(|balanced| {
        let group = |open: K, close: K| {
            tok(open)
                .then(balanced.clone().repeated())
                .then(tok(close))
                .ignored()
        };
        choice((
            group(K::LBrace, K::RBrace),
            group(K::LBracket, K::RBracket),
            group(K::ExprOpen, K::RBracket),
            group(K::LParen, K::RParen),
            group(K::DqStart, K::DqEnd),
            any()
                .filter(|t: &PTok<'t>| {
                    !matches!(t.kind, K::RBrace | K::RBracket | K::RParen | K::DqEnd)
                })
                .ignored(),
        ))
    });
    let skip_tok = choice((
        any()
            .filter(|t: &PTok<'t>| {
                matches!(
                    t.kind,
                    K::LBrace | K::LBracket | K::ExprOpen | K::LParen | K::DqStart
                )
            })
            .rewind()
            .ignore_then(balanced),
        any()
            .filter(|t: &PTok<'t>| {
                !matches!(
                    t.kind,
                    K::Newline | K::Semi | K::RBrace | K::RBracket | K::RParen | K::DqEnd
                )
            })
            .ignored(),
    ));

    let stray_else = any()
        .filter(|t: &PTok<'t>| t.kind == K::Word && (t.text == "else" || t.text == "elsif"))
        .then(skip_tok.clone().repeated())
        .map_with(|(t, _), e| {
            let span = sp(e.span());
            let source = source_of(e);
            push_diag(
                e,
                Diagnostic::new(
                    Code::StrayElse,
                    source,
                    format!("`{}` without an `if`", t.text),
                    Span::new(span.start, span.start + t.text.len() as u32),
                    "nothing to continue here",
                )
                .with_note("`elsif` and `else` continue an `if`; they may start the line after the previous branch, but no statement may come between.")
                .with_help("join it to the `if` it belongs to"),
            );
            StageKind::Command(Command { head: Head::Atom(mk_atom(Primary::Error, span)), args: Vec::new(), redirects: Vec::new() })
        });

    // Most stages are commands; try the keyword forms only when the stage
    // starts with a keyword, so an ordinary command does not pay for five
    // failed alternatives.
    let keyword_start = any()
        .filter(|t: &PTok<'t>| t.kind == K::Word && STAGE_KEYWORDS.contains(&t.text))
        .rewind();
    let stage_body = choice((
        keyword_start.ignore_then(choice((ret, conditional, case, scope_form, stray_else))),
        command,
    ))
    .boxed();

    let stage = stage_body.clone().map_with(|kind, e| Stage {
        id: NodeId::default(),
        kind,
        span: sp(e.span()),
    });

    // A stage after `|` or `?`: `let` is refused there.
    let later_stage = word("let")
        .map_with(|t: PTok<'t>, e| {
            let span = sp(e.span());
            let source = source_of(e);
            push_diag(
                e,
                Diagnostic::new(Code::LetInChain, source, "`let` cannot follow `|` or `?`", span, "`let` starts a statement")
                    .with_note("`let` is a statement form; a pipeline or fallback chain is made of commands (spec §3.7).")
                    .with_help("bind the whole chain instead: `let x = a | b`"),
            );
            let _ = t;
        })
        .or_not()
        .then(stage.clone())
        .map(|(_, stage)| stage);

    // A pipeline from its first stage: `|` admits newlines on both sides, and
    // every later stage refuses `let`.
    let pipeline_from = |first: chumsky::Boxed<'t, 't, I, Stage, Extra<'t, Er>>| {
        first
            .then(
                nl().then(tok(K::Pipe))
                    .then(nl())
                    .ignore_then(later_stage.clone())
                    .repeated()
                    .collect::<Vec<Stage>>(),
            )
            .map_with(|(first, rest), e| {
                let mut stages = vec![first];
                stages.extend(rest);
                stages.shrink_to_fit();
                Pipeline {
                    stages,
                    span: sp(e.span()),
                }
            })
    };
    // At the start of a statement `let` is a binding; when the binding cannot
    // be read, that is an error at the point it fails, never a command named
    // `let`.
    let first_stage = any()
        .filter(|t: &PTok<'t>| !(t.kind == K::Word && t.text == "let"))
        .rewind()
        .ignore_then(stage)
        .boxed();
    let pipeline = pipeline_from(first_stage);
    let later_pipeline = pipeline_from(later_stage.clone().boxed());

    let question = tok(K::Newline).or_not().ignore_then(tok(K::Question)).then(
        tok(K::Newline)
            .repeated()
            .at_least(1)
            .map_with(|_, e| {
                let span = sp(e.span());
                let source = source_of(e);
                push_diag(
                    e,
                    Diagnostic::new(Code::NewlineAfterQuestion, source, "A newline cannot follow `?`", span, "the alternative must start on this line")
                        .with_note("`?` may begin the next line, but the alternative after it must be on the same line as the `?` (spec §3.3).")
                        .with_help("move the alternative up onto the `?` line"),
                );
            })
            .or_not(),
    );
    let chain = pipeline
        .then(
            question
                .then(later_pipeline)
                .map(|(_, pipeline)| pipeline)
                .repeated()
                .collect::<Vec<Pipeline>>(),
        )
        .map_with(|(first, rest), e| {
            let mut alternatives = vec![first];
            alternatives.extend(rest);
            alternatives.shrink_to_fit();
            Chain {
                alternatives,
                span: sp(e.span()),
            }
        })
        .boxed();

    let binding = word("let")
        .ignore_then(pattern.clone())
        .then_ignore(word("="))
        .then_ignore(nl())
        .then(chain.clone())
        .map_with(|(pattern, value), e| {
            Stmt::Let(Let {
                pattern,
                value,
                span: sp(e.span()),
            })
        });

    let terminator = choice((
        tok(K::Newline).ignored(),
        tok(K::Semi).ignored(),
        tok(K::RBrace).ignored(),
        end(),
    ))
    .rewind();

    let recovery = skip_tok
        .repeated()
        .at_least(1)
        .map_with(|_, e| Stmt::Error(sp(e.span())));

    let stmt = choice((binding, chain.map(Stmt::Chain)))
        .then_ignore(terminator)
        .recover_with(via_parser(recovery))
        .labelled("a statement");

    let sep = choice((tok(K::Newline), tok(K::Semi)));
    choice((sep.to(None), stmt.map(Some)))
        .repeated()
        .collect::<Vec<Option<Stmt>>>()
        .map_with(|stmts, e| Program {
            stmts: fit(stmts.into_iter().flatten().collect()),
            span: sp(e.span()),
        })
}

fn tag_as_key(source: SourceId, span: Span, text: &str) -> Diagnostic {
    let name = text.trim_start_matches('`');
    Diagnostic::new(Code::TagAsKey, source, format!("The tag `{text}` is used as a key"), span, "a tag cannot key a field")
        .with_note("Tags name alternatives of a variant and keys name fields of a record; the two never meet (spec §4.6).")
        .with_help(format!("write the key as a name, `{name}: …`; a `` `{name}: `` arm belongs in a `case`"))
}

/// Joins adjacent text parts. A string whose source text begins with `~`
/// followed by `/` or by the closing quote begins with the home directory
/// (§4.2); a `~` written as the escape `\~`, or followed by anything else
/// (`"~$x"`, `"~bob"`), is text. `parts` pairs each part with whether it is
/// source text (not an escape or a splice).
fn merge_text(parts: Vec<(StrPart, bool)>) -> Vec<StrPart> {
    let only = parts.len() == 1;
    let mut out: Vec<StrPart> = Vec::with_capacity(parts.len());
    let mut first = true;
    for (part, source) in parts {
        let part = if first {
            first = false;
            match part {
                StrPart::Text(t) if source && ((t == "~" && only) || t.starts_with("~/")) => {
                    out.push(StrPart::Home);
                    StrPart::Text(t[1..].to_string())
                }
                other => other,
            }
        } else {
            part
        };
        match (out.last_mut(), part) {
            (Some(StrPart::Text(prev)), StrPart::Text(t)) => prev.push_str(&t),
            (_, StrPart::Text(t)) if t.is_empty() => {}
            (_, p) => out.push(p),
        }
    }
    out
}

/// `{ program }` or `{ |p …| program }`.
fn block_parser<'t, I, Er, P, Q>(
    pattern: P,
    program: Q,
) -> impl Parser<'t, I, Block, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
    P: Parser<'t, I, Pattern, Extra<'t, Er>> + Clone,
    Q: Parser<'t, I, Program, Extra<'t, Er>> + Clone,
{
    let params = choice((
        tok(K::Pipe)
            .ignore_then(pattern.repeated().at_least(1).collect::<Vec<Pattern>>())
            .then_ignore(tok(K::Pipe)),
        tok(K::Pipe)
            .then(tok(K::Pipe))
            .to(Vec::new())
            .map_with(|v, e| {
                empty_params(e);
                v
            }),
        tok(K::PipePipe).to(Vec::new()).map_with(|v, e| {
            empty_params(e);
            v
        }),
    ));
    tok(K::LBrace)
        .ignore_then(nl().ignore_then(params).or_not())
        .then(program)
        .then_ignore(tok(K::RBrace))
        .map_with(|(params, body), e| Block {
            id: NodeId::default(),
            params: fit(params.unwrap_or_default()),
            body,
            span: sp(e.span()),
        })
}

fn empty_params<'t, 'b, I, Er>(e: &mut chumsky::input::MapExtra<'t, 'b, I, Extra<'t, Er>>)
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
{
    let span = sp(e.span());
    let source = source_of(e);
    push_diag(
        e,
        Diagnostic::new(
            Code::EmptyParams,
            source,
            "A parameter list cannot be empty",
            span,
            "`||` declares no parameter",
        )
        .with_note("A block with no parameters is written without bars (spec §5.4).")
        .with_help("write `{ … }` instead of `{ || … }`"),
    );
}

/// The expression grammar of `$[...]` (spec §17.1): `||` < `&&` < comparisons
/// < `+ -` < `* / %` < unary `-`/`not`, all left-associative.
fn expr_parser<'t, I, Er, A>(atom: A) -> impl Parser<'t, I, Expr, Extra<'t, Er>> + Clone
where
    I: ValueInput<'t, Token = PTok<'t>, Span = SimpleSpan>,
    Er: ParseError<'t, I>,
    A: Parser<'t, I, Atom, Extra<'t, Er>> + Clone + 't,
{
    recursive(move |expr| {
        let mk = |kind: ExprKind, span: Span| Expr {
            id: NodeId::default(),
            kind,
            span,
        };
        let op = |ops: &'static [(ExprOp, BinOp)]| {
            any().filter(move |t: &PTok<'t>| matches!(t.kind, K::Op(o) if ops.iter().any(|(x, _)| *x == o))).map(move |t: PTok<'t>| {
                let K::Op(o) = t.kind else { return BinOp::Add };
                ops.iter().find(|(x, _)| *x == o).map_or(BinOp::Add, |(_, b)| *b)
            })
        };
        let paren = tok(K::LParen)
            .ignore_then(expr.clone())
            .then_ignore(tok(K::RParen))
            .map_with(move |x: Expr, e| mk(ExprKind::Paren(Box::new(x)), sp(e.span())));
        // A negative numeral written directly after `-` is one literal, so
        // `$[-9223372036854775808]` reads the smallest Int.
        let neg_literal = any()
            .filter(|t: &PTok<'t>| t.kind == K::Op(ExprOp::Sub))
            .then(tok(K::Word).filter(|t: &PTok<'t>| t.glued()))
            .try_map(move |(_, w): (PTok<'t>, PTok<'t>), span: SimpleSpan| {
                let text = format!("-{}", w.text);
                match parse_numeral(&text) {
                    Some(Numeral::Int(n)) if parse_numeral(w.text).is_none() => Ok(mk(
                        ExprKind::Atom(mk_atom(Primary::Int(n), sp(span))),
                        sp(span),
                    )),
                    _ => Err(Er::custom(span, "not a negative literal")),
                }
            });
        let operand = recursive(|operand| {
            let unary = choice((
                any()
                    .filter(|t: &PTok<'t>| t.kind == K::Op(ExprOp::Sub))
                    .to(UnOp::Neg),
                tok(K::Word)
                    .filter(|t: &PTok<'t>| t.text == "not")
                    .to(UnOp::Not),
            ))
            .then(operand)
            .map_with(move |(op, x): (UnOp, Expr), e| {
                mk(
                    ExprKind::Unary {
                        op,
                        operand: Box::new(x),
                    },
                    sp(e.span()),
                )
            });
            choice((
                paren,
                neg_literal,
                unary,
                atom.clone()
                    .map_with(move |a: Atom, e| mk(ExprKind::Atom(a), sp(e.span()))),
                any()
                    .filter(|t: &PTok<'t>| t.kind == K::Op(ExprOp::Assign))
                    .try_map(|_, span| {
                        Err(Er::custom(
                            span,
                            "`=` is not an operator; compare with `==`",
                        ))
                    }),
            ))
            .labelled("an operand")
        });
        let fold = move |lhs: Expr, (o, rhs): (BinOp, Expr)| {
            let span = lhs.span.to(rhs.span);
            mk(
                ExprKind::Binary {
                    op: o,
                    lhs: Box::new(lhs),
                    rhs: Box::new(rhs),
                },
                span,
            )
        };
        let product = operand.clone().foldl(
            op(&[
                (ExprOp::Mul, BinOp::Mul),
                (ExprOp::Div, BinOp::Div),
                (ExprOp::Rem, BinOp::Rem),
            ])
            .then(operand)
            .repeated(),
            fold,
        );
        let sum = product.clone().foldl(
            op(&[(ExprOp::Add, BinOp::Add), (ExprOp::Sub, BinOp::Sub)])
                .then(product)
                .repeated(),
            fold,
        );
        let cmp_ops: &'static [(ExprOp, BinOp)] = &[
            (ExprOp::Eq, BinOp::Eq),
            (ExprOp::Ne, BinOp::Ne),
            (ExprOp::Lt, BinOp::Lt),
            (ExprOp::Gt, BinOp::Gt),
            (ExprOp::Le, BinOp::Le),
            (ExprOp::Ge, BinOp::Ge),
        ];
        let cmp = sum.clone().foldl(op(cmp_ops).then(sum).repeated(), fold);
        let and = cmp
            .clone()
            .foldl(op(&[(ExprOp::And, BinOp::And)]).then(cmp).repeated(), fold);
        and.clone()
            .foldl(op(&[(ExprOp::Or, BinOp::Or)]).then(and).repeated(), fold)
            .boxed()
    })
}

fn stray_bang(source: SourceId, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::StrayDollar,
        source,
        "`!` must be directly followed by what it forces",
        span,
        "this `!` forces nothing",
    )
    .with_note("`!` forces a block or a variable holding one: `!{cmd}`, `!$name`. It is not negation; negation is `not` inside `$[...]` (spec §5.3).")
    .with_help("write `!{…}` or `!$name` with no space, or quote the text: '!'")
}

fn juxtaposed(source: SourceId, span: Span) -> Diagnostic {
    Diagnostic::new(
        Code::UnexpectedToken,
        source,
        "Two values are written together",
        span,
        "this touches the value before it",
    )
    .with_note(
        "ral never joins adjacent words, strings or variables; text is built by interpolation.",
    )
    .with_help("write the whole word as one double-quoted string, e.g. \"--out=$file\"")
}
