//! Tokens: the interface between the lexer and the parser.
//!
//! A token is a [`TokenKind`] and a [`Span`]; its text is always the source
//! slice under the span, so tokens own nothing. The lexer emits every byte of
//! the source as exactly one token, trivia included, so the spans of
//! [`crate::lexer::lex`]'s output tile the source: concatenating the token
//! texts gives back the input byte for byte. The parser drops trivia.
//!
//! Which spelling becomes which token depends on the lexical mode set by the
//! innermost open delimiter (spec §3.4, §3.5, §17.1):
//!
//! | mode | entered by | newline | `,` | operators |
//! |---|---|---|---|---|
//! | command | top level, `{`, `!{` | [`TokenKind::Newline`] | word character | none |
//! | bracket | `[` | whitespace | [`TokenKind::Comma`] | none |
//! | expression | `$[`, `(` inside it | whitespace | [`TokenKind::Comma`] | [`TokenKind::Op`] |
//! | string | `"` | text | text | none |

use crate::span::Span;

/// One token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

impl Token {
    pub fn new(kind: TokenKind, span: Span) -> Token {
        Token { kind, span }
    }

    /// The source text of this token.
    pub fn text(self, src: &str) -> &str {
        self.span.text(src)
    }
}

/// The kind of a token. Text is recovered from the span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TokenKind {
    // ---- trivia (dropped by the parser) ----
    /// Spaces and tabs; in bracket and expression mode, newlines too.
    Whitespace,
    /// `#` to the end of the line, newline excluded.
    Comment,

    // ---- separators ----
    /// A line ending in command mode.
    Newline,
    /// `;`
    Semi,

    // ---- words ----
    /// A bare word (spec §3.5). Numerals, `true`, `false`, reserved words,
    /// `~`-words and paths are all words here; the parser classifies them.
    Word,
    /// A single-quoted string, plain (`'…'`, `hashes == 0`) or hash-fenced
    /// (`#'…'#`, `##'…'##`, …). `closed` is false when the input ended first.
    RawString {
        hashes: u8,
        closed: bool,
    },

    // ---- double-quoted strings ----
    /// The opening `"`.
    DqStart,
    /// A run of literal text inside `"…"`, no escapes (newlines included).
    DqText,
    /// One backslash escape inside `"…"`, e.g. `\n`, `\u{1F600}`, or a
    /// backslash-newline. `valid` is false for an unknown or malformed escape
    /// (the lexer has already reported it).
    DqEscape {
        valid: bool,
    },
    /// The closing `"`.
    DqEnd,

    // ---- sigils ----
    /// `$name`.
    Var,
    /// `$(name)`.
    VarParen,
    /// `$[`, opening expression mode; closed by [`TokenKind::RBracket`].
    ExprOpen,
    /// `!` (force, spec §5.3).
    Bang,
    /// `^` (caret head, spec §6.2).
    Caret,
    /// `` `name `` (a tag, spec §4.6).
    Tag,
    /// `...` where a word could start (spread, spec §3.5).
    Spread,

    // ---- delimiters and punctuation ----
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    LParen,
    RParen,
    /// `|`
    Pipe,
    /// `?` where a word could start.
    Question,
    /// `,` in bracket and expression mode.
    Comma,
    /// `:` before whitespace, a newline, `]`, `,` or the end of input.
    Colon,

    // ---- redirects (command mode) ----
    /// A redirect operator with its optional explicit descriptor, e.g. `2>`,
    /// `>>`, `2>&1`, `<<`. `fd` is the written descriptor (saturated at 255).
    Redirect {
        fd: Option<u8>,
        op: RedirectOp,
    },

    // ---- expression mode ----
    /// An operator inside `$[...]`.
    Op(ExprOp),

    // ---- refused spellings, kept as tokens so parsing can go on ----
    /// A lone `&` where a word could start.
    Amp,
    /// `&&` outside `$[...]`.
    AmpAmp,
    /// `||` outside `$[...]`.
    PipePipe,
    /// Bytes that start no token (already reported by the lexer).
    Error,
}

impl TokenKind {
    /// Whether the parser skips this token.
    pub fn is_trivia(self) -> bool {
        matches!(self, TokenKind::Whitespace | TokenKind::Comment)
    }
}

/// The operator of a redirect token (spec §7.4, §7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RedirectOp {
    /// `>`: replace the file atomically.
    Write,
    /// `>~`: truncate and stream.
    Stream,
    /// `>>`: append.
    Append,
    /// `<`: read standard input from a file.
    Read,
    /// `<<`: here string.
    Here,
    /// `>&N`: duplicate onto descriptor `N` (saturated at 255).
    Dup(u8),
}

/// An operator spelling inside `$[...]` (spec §17.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExprOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Or,
    /// A lone `=`, which is no operator; the parser suggests `==`.
    Assign,
}

impl ExprOp {
    pub fn spelling(self) -> &'static str {
        match self {
            ExprOp::Add => "+",
            ExprOp::Sub => "-",
            ExprOp::Mul => "*",
            ExprOp::Div => "/",
            ExprOp::Rem => "%",
            ExprOp::Eq => "==",
            ExprOp::Ne => "!=",
            ExprOp::Lt => "<",
            ExprOp::Gt => ">",
            ExprOp::Le => "<=",
            ExprOp::Ge => ">=",
            ExprOp::And => "&&",
            ExprOp::Or => "||",
            ExprOp::Assign => "=",
        }
    }
}
