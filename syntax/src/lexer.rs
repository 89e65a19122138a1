//! The lexer: source text to tokens that tile it (spec §3, §4.1, §4.2, §7.4,
//! §7.5, §17.1).
//!
//! ral's lexical rules depend on the innermost open delimiter, so the lexer is
//! a small driver around one [`logos`] token enum per mode and an explicit mode
//! stack (no recursion, so nesting depth costs heap, not call stack):
//!
//! | frame | pushed by | mode |
//! |---|---|---|
//! | *(empty stack)* | — | command |
//! | [`Frame::Brace`] | `{`, `!{` | command |
//! | [`Frame::Bracket`] | `[`, an index group after a string's `$name` | bracket |
//! | [`Frame::Expr`] | `$[` | expression |
//! | [`Frame::Str`] | `"` | string |
//!
//! A closer pops only the frame it closes; a stray closer is still a token
//! but leaves the stack alone, and the parser reports it (as it reports
//! unclosed delimiters; the lexer reports only unclosed strings). The logos
//! enums recognise the start of every token; the parts that depend on what
//! follows (the extent of a bare word, `:`, raw-string bodies, comments,
//! escapes) are scanned by hand from there.
//!
//! The rules are those of `spec/lexical.md`, with the decisions of
//! `spec/deviations.md`: `:` is a [`TokenKind::Colon`] before an ending in
//! every mode (§3.5), and in bracket mode before `,` too (D3), `$name` takes the whole identifier in every mode (D1), a sign is
//! never part of a numeral word in expression mode (D2), a `!` before
//! whitespace, a closer or the end is a stray sigil (D19), and a
//! backslash-newline escape produces nothing (D17). `||` right after a
//! block's `{` stays one [`TokenKind::PipePipe`] token, unreported; the parser
//! reads it as the empty parameter list.

use logos::Logos;

use crate::codes::Code;
use crate::diag::Diagnostic;
use crate::span::{SourceId, Span};
use crate::token::{ExprOp, RedirectOp, Token, TokenKind};

/// Tokens of one source, tiling it, and the lexical diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Lexes `src` (already normalised, spec §3.1). Never panics; every byte of
/// `src` is covered by exactly one token, in order.
pub fn lex(src: &str, source: SourceId) -> Lexed {
    let mut lexer = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        source,
        tokens: Vec::with_capacity(src.len() / 3 + 4),
        diagnostics: Vec::new(),
        stack: Vec::new(),
    };
    lexer.run();
    Lexed {
        tokens: lexer.tokens,
        diagnostics: lexer.diagnostics,
    }
}

/// What a valid escape token stands for (spec §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscapeValue {
    /// The escape stands for this one character.
    Char(char),
    /// A backslash followed by a newline: both are dropped, joining the two
    /// source lines. Nothing else (such as the next line's indentation) is
    /// removed.
    LineContinuation,
}

/// Decodes the text of one [`TokenKind::DqEscape`] token, backslash included.
/// `None` when the text is not exactly one valid escape.
pub fn decode_escape(text: &str) -> Option<EscapeValue> {
    let rest = text.strip_prefix('\\')?;
    let simple = match rest {
        "n" => Some('\n'),
        "r" => Some('\r'),
        "t" => Some('\t'),
        "\\" => Some('\\'),
        "0" => Some('\0'),
        "e" => Some('\u{1b}'),
        "\"" => Some('"'),
        "$" => Some('$'),
        "!" => Some('!'),
        "~" => Some('~'),
        "\n" => return Some(EscapeValue::LineContinuation),
        _ => None,
    };
    if let Some(c) = simple {
        return Some(EscapeValue::Char(c));
    }
    if let Some(hex) = rest.strip_prefix('x') {
        if hex.len() != 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let value = u8::from_str_radix(hex, 16).ok()?;
        return (value <= 0x7f).then_some(EscapeValue::Char(char::from(value)));
    }
    let hex = rest.strip_prefix("u{")?.strip_suffix('}')?;
    if hex.is_empty() || hex.len() > 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let value = u32::from_str_radix(hex, 16).ok()?;
    char::from_u32(value).map(EscapeValue::Char)
}

// ---------------------------------------------------------------------------
// Token starts, one logos enum per mode.
// ---------------------------------------------------------------------------

/// Command and bracket mode. The two differ only in how the driver maps
/// [`ShellTok::Newline`] and [`ShellTok::Comma`].
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
enum ShellTok {
    #[regex("[ \t]+")]
    Space,
    #[token("\n")]
    Newline,
    /// A run of `#`: a comment, or a hash-fenced raw string when `'` follows.
    #[regex("#+")]
    Hash,
    #[token("'")]
    Quote,
    #[token("\"")]
    DQuote,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token(";")]
    Semi,
    #[token("|")]
    Pipe,
    #[token("||")]
    PipePipe,
    #[token("&")]
    Amp,
    #[token("&&")]
    AmpAmp,
    #[token("?")]
    Question,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("...")]
    Spread,
    #[token("!")]
    Bang,
    #[token("^")]
    Caret,
    #[regex("`[A-Za-z_][A-Za-z0-9_-]*")]
    Tag,
    #[token("`")]
    Backtick,
    #[regex(r"\$[A-Za-z_][A-Za-z0-9_-]*")]
    Var,
    #[regex(r"\$\([A-Za-z_][A-Za-z0-9_-]*\)")]
    VarParen,
    #[token("$[")]
    ExprOpen,
    #[token("$")]
    Dollar,
    /// A redirect operator with its optional descriptor digits.
    #[regex("[0-9]*(>|>>|>~|<|<<|<<<|>&[0-9]*)")]
    Redirect,
    /// The first character of a bare word; the driver scans the rest.
    #[regex(r#"[^ \t\n|{}\[\]$^!<>"'`();#?&:,]"#)]
    Word,
}

/// Expression mode (inside `$[...]`).
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
enum ExprTok {
    #[regex("[ \t\n]+")]
    Space,
    #[regex("#+")]
    Hash,
    #[token("'")]
    Quote,
    #[token("\"")]
    DQuote,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token(";")]
    Semi,
    #[token("|")]
    Pipe,
    #[token("||")]
    Or,
    #[token("&")]
    Amp,
    #[token("&&")]
    And,
    #[token("?")]
    Question,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token("...")]
    Spread,
    #[token("!")]
    Bang,
    #[token("^")]
    Caret,
    #[regex("`[A-Za-z_][A-Za-z0-9_-]*")]
    Tag,
    #[token("`")]
    Backtick,
    #[regex(r"\$[A-Za-z_][A-Za-z0-9_-]*")]
    Var,
    #[regex(r"\$\([A-Za-z_][A-Za-z0-9_-]*\)")]
    VarParen,
    #[token("$[")]
    ExprOpen,
    #[token("$")]
    Dollar,
    #[token("+")]
    Add,
    #[token("-")]
    Sub,
    #[token("*")]
    Mul,
    #[token("/")]
    Div,
    #[token("%")]
    Rem,
    #[token("==")]
    Eq,
    #[token("!=")]
    Ne,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("=")]
    Assign,
    /// The first character of a bare word; the driver scans the rest.
    #[regex(r#"[^ \t\n|{}\[\]$^!<>"'`();#?&:,+\-*/%=]"#)]
    Word,
}

/// Double-quoted string mode.
#[derive(Logos, Clone, Copy, Debug, PartialEq, Eq)]
enum StrTok {
    #[token("\"")]
    End,
    #[token("\\")]
    Backslash,
    #[regex(r"\$[A-Za-z_][A-Za-z0-9_-]*")]
    Var,
    #[regex(r"\$\([A-Za-z_][A-Za-z0-9_-]*\)")]
    VarParen,
    #[token("$[")]
    ExprOpen,
    #[token("!{")]
    BangBrace,
    #[regex(r"!\$[A-Za-z_][A-Za-z0-9_-]*")]
    BangVar,
    #[regex(r#"[^"\\$!]+"#)]
    Text,
    /// A `$` or `!` that opens no splice is text.
    #[token("$")]
    #[token("!")]
    Sigil,
}

// ---------------------------------------------------------------------------
// Bare-word extent tables.
// ---------------------------------------------------------------------------

/// The byte ends the word.
const STOP: u8 = 0;
/// The byte continues the word.
const GO: u8 = 1;
/// `:`: continues the word unless followed by an ending (spec §3.5;
/// spec/deviations.md D3).
const COLON: u8 = 2;

const fn word_table(stops: &[u8], colon: u8) -> [u8; 256] {
    let mut table = [GO; 256];
    let common = b" \t\n|{}[]$^!<>\"'`();";
    let mut i = 0;
    while i < common.len() {
        table[common[i] as usize] = STOP;
        i += 1;
    }
    let mut i = 0;
    while i < stops.len() {
        table[stops[i] as usize] = STOP;
        i += 1;
    }
    table[b':' as usize] = colon;
    table
}

static COMMAND_WORD: [u8; 256] = word_table(b"", COLON);
static BRACKET_WORD: [u8; 256] = word_table(b",", COLON);
static EXPR_WORD: [u8; 256] = word_table(b",+-*/%=&", GO);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Command,
    Bracket,
    Expr,
    Str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Frame {
    /// `{…}` or `!{…}`: command mode.
    Brace,
    /// `[…]`: bracket mode. `str_index` marks an index group after a `$name`
    /// splice inside a string, which may be followed by another group.
    Bracket { str_index: bool },
    /// `$[…]`: expression mode.
    Expr,
    /// `"…"`, opened at byte `open`.
    Str { open: usize },
}

/// A just-reported diagnostic, for adding notes and help.
struct DiagMut<'a>(Option<&'a mut Diagnostic>);

impl DiagMut<'_> {
    fn note(mut self, note: &str) -> Self {
        if let Some(d) = self.0.as_deref_mut() {
            d.notes.push(note.to_string());
        }
        self
    }

    fn help(self, help: impl Into<String>) {
        if let Some(d) = self.0 {
            d.help = Some(help.into());
        }
    }
}

struct Lexer<'s> {
    src: &'s str,
    bytes: &'s [u8],
    pos: usize,
    source: SourceId,
    tokens: Vec<Token>,
    diagnostics: Vec<Diagnostic>,
    stack: Vec<Frame>,
}

fn span(start: usize, end: usize) -> Span {
    Span::from_range(start..end)
}

/// Parses a run of ASCII digits, saturating at 255.
fn saturating_fd(digits: &[u8]) -> u8 {
    let mut value: u32 = 0;
    for &d in digits {
        value = (value * 10 + u32::from(d - b'0')).min(256);
    }
    u8::try_from(value).unwrap_or(u8::MAX)
}

impl<'s> Lexer<'s> {
    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let before = self.pos;
            match self.mode() {
                Mode::Command => self.step_shell(false),
                Mode::Bracket => self.step_shell(true),
                Mode::Expr => self.step_expr(),
                Mode::Str => self.step_str(),
            }
            if self.pos <= before {
                // Defensive: never loop without progress.
                let end = self.char_end(before);
                self.push(TokenKind::Error, before, end);
                self.error(
                    Code::StrayDollar,
                    "unexpected character",
                    span(before, end),
                    "this character starts no token",
                );
                self.pos = end;
            }
        }
        let unclosed: Vec<usize> = self
            .stack
            .iter()
            .filter_map(|f| match f {
                Frame::Str { open } => Some(*open),
                Frame::Brace | Frame::Bracket { .. } | Frame::Expr => None,
            })
            .collect();
        for open in unclosed {
            self.diagnostics.push(
                Diagnostic::new(
                    Code::UnclosedString,
                    self.source,
                    "unclosed double-quoted string",
                    span(open, open + 1),
                    "this string is never closed",
                )
                .with_help("add a closing `\"`"),
            );
        }
    }

    fn mode(&self) -> Mode {
        match self.stack.last() {
            None | Some(Frame::Brace) => Mode::Command,
            Some(Frame::Bracket { .. }) => Mode::Bracket,
            Some(Frame::Expr) => Mode::Expr,
            Some(Frame::Str { .. }) => Mode::Str,
        }
    }

    /// The byte just past the character starting at `at`.
    fn char_end(&self, at: usize) -> usize {
        let step = self
            .src
            .get(at..)
            .and_then(|s| s.chars().next())
            .map_or(1, char::len_utf8);
        (at + step).min(self.bytes.len())
    }

    fn peek(&self, at: usize) -> Option<u8> {
        self.bytes.get(at).copied()
    }

    /// The rest of the source from the current position.
    fn rest(&self) -> &'s str {
        self.src.get(self.pos..).unwrap_or("")
    }

    /// Appends a token; adjacent string text and whitespace merge.
    fn push(&mut self, kind: TokenKind, start: usize, end: usize) {
        if end <= start {
            return;
        }
        let sp = span(start, end);
        if matches!(kind, TokenKind::DqText | TokenKind::Whitespace) {
            if let Some(last) = self.tokens.last_mut() {
                if last.kind == kind && last.span.end == sp.start {
                    last.span.end = sp.end;
                    return;
                }
            }
        }
        self.tokens.push(Token::new(kind, sp));
    }

    /// Emits one token at the current position and moves past it.
    fn emit(&mut self, kind: TokenKind, len: usize) {
        let start = self.pos;
        self.push(kind, start, start + len);
        self.pos = start + len;
    }

    fn error(&mut self, code: Code, message: &str, sp: Span, label: &str) -> DiagMut<'_> {
        self.diagnostics
            .push(Diagnostic::new(code, self.source, message, sp, label));
        DiagMut(self.diagnostics.last_mut())
    }

    fn pop_if(&mut self, want: impl Fn(Frame) -> bool) -> Option<Frame> {
        match self.stack.last() {
            Some(&f) if want(f) => self.stack.pop(),
            _ => None,
        }
    }

    // ---- command and bracket mode ----

    fn step_shell(&mut self, bracket: bool) {
        let start = self.pos;
        let mut lx = ShellTok::lexer(self.rest());
        let (tok, len) = match lx.next() {
            Some(Ok(tok)) => (Some(tok), lx.span().end),
            _ => (None, 0),
        };
        let table = if bracket {
            &BRACKET_WORD
        } else {
            &COMMAND_WORD
        };
        let Some(tok) = tok.filter(|_| len > 0) else {
            let first = self.char_end(start);
            self.word(first, table, false);
            return;
        };
        match tok {
            ShellTok::Space => self.emit(TokenKind::Whitespace, len),
            ShellTok::Newline if bracket => self.emit(TokenKind::Whitespace, len),
            ShellTok::Newline => self.emit(TokenKind::Newline, len),
            ShellTok::Hash => self.hash(len),
            ShellTok::Quote => self.raw_string(0),
            ShellTok::DQuote => self.open_string(),
            ShellTok::LBrace => {
                self.emit(TokenKind::LBrace, len);
                self.stack.push(Frame::Brace);
            }
            ShellTok::RBrace => self.close_brace(),
            ShellTok::LBracket => {
                self.emit(TokenKind::LBracket, len);
                self.stack.push(Frame::Bracket { str_index: false });
            }
            ShellTok::RBracket => self.close_bracket(),
            ShellTok::LParen => self.emit(TokenKind::LParen, len),
            ShellTok::RParen => self.emit(TokenKind::RParen, len),
            ShellTok::Semi => self.emit(TokenKind::Semi, len),
            ShellTok::Pipe => self.emit(TokenKind::Pipe, len),
            ShellTok::PipePipe => self.pipe_pipe(len),
            ShellTok::Amp => self.amp(len),
            ShellTok::AmpAmp => self.amp_amp(len),
            ShellTok::Question => self.emit(TokenKind::Question, len),
            ShellTok::Comma if bracket => self.emit(TokenKind::Comma, len),
            ShellTok::Comma => self.word(start + len, table, false),
            ShellTok::Colon if self.colon_ends(start, bracket) => self.emit(TokenKind::Colon, len),
            ShellTok::Colon => self.word(start + len, table, false),
            ShellTok::Spread => self.emit(TokenKind::Spread, len),
            ShellTok::Bang => self.bang(len),
            ShellTok::Caret => self.emit(TokenKind::Caret, len),
            ShellTok::Tag => self.emit(TokenKind::Tag, len),
            ShellTok::Backtick => self.lone_backtick(len),
            ShellTok::Var => self.emit(TokenKind::Var, len),
            ShellTok::VarParen => self.emit(TokenKind::VarParen, len),
            ShellTok::ExprOpen => self.open_expr(len),
            ShellTok::Dollar => self.stray_dollar(len),
            ShellTok::Redirect => self.redirect(len),
            ShellTok::Word => self.word(start + len, table, false),
        }
    }

    /// A bare word starting at the current position whose first character
    /// ends at `first_end`.
    fn word(&mut self, first_end: usize, table: &[u8; 256], expr: bool) {
        let start = self.pos;
        let mut i = first_end;
        if expr {
            if let Some(end) = self.numeral_with_signed_exponent(start) {
                i = i.max(end);
            }
        }
        let bracket = std::ptr::eq(table, &BRACKET_WORD);
        while let Some(&b) = self.bytes.get(i) {
            match table[usize::from(b)] {
                GO => i += 1,
                COLON if !self.colon_ends(i, bracket) => i += 1,
                _ => break,
            }
        }
        self.push(TokenKind::Word, start, i);
        self.pos = i;
    }

    /// Whether the `:` at `at` is punctuation, a [`TokenKind::Colon`]
    /// (§3.5): when whitespace, a newline, `]` or the end of input follows,
    /// in every mode; in bracket mode also before `,` (deviations.md D3).
    /// In command mode no form takes a `:`, so the parser refuses it there:
    /// `echo total: 5` is written `echo 'total:' 5`.
    fn colon_ends(&self, at: usize, bracket: bool) -> bool {
        match self.peek(at + 1) {
            None | Some(b' ' | b'\t' | b'\n' | b'\r' | b']') => true,
            Some(b',') => bracket,
            Some(_) => false,
        }
    }

    /// A `!` outside a string is a force only when something follows it with
    /// no space; before whitespace, a closer or the end it is a stray sigil
    /// (spec/deviations.md D19).
    fn bang(&mut self, len: usize) {
        let start = self.pos;
        match self.peek(start + len) {
            None | Some(b' ' | b'\t' | b'\n' | b'}' | b']' | b')') => {
                self.emit(TokenKind::Error, len);
                self.error(
                    Code::StrayDollar,
                    "`!` forces nothing",
                    span(start, start + len),
                    "expected a block, a variable or another atom right after `!`",
                )
                .help("write `!{ … }` or `!$name`, or quote a literal `'!'`");
            }
            Some(_) => self.emit(TokenKind::Bang, len),
        }
    }

    /// In expression mode a float numeral keeps its exponent sign: the end of
    /// `1.5e+3` when such a numeral starts at `start` (spec §3.5, §4.1).
    fn numeral_with_signed_exponent(&self, start: usize) -> Option<usize> {
        let digits = |mut i: usize| {
            while self.peek(i).is_some_and(|b| b.is_ascii_digit()) {
                i += 1;
            }
            i
        };
        let int_end = digits(start);
        if self.peek(int_end) != Some(b'.') {
            return None;
        }
        let frac_end = digits(int_end + 1);
        if int_end == start && frac_end == int_end + 1 {
            return None;
        }
        if !matches!(self.peek(frac_end), Some(b'e' | b'E'))
            || !matches!(self.peek(frac_end + 1), Some(b'+' | b'-'))
            || !self.peek(frac_end + 2).is_some_and(|b| b.is_ascii_digit())
        {
            return None;
        }
        Some(digits(frac_end + 2))
    }

    /// `#` at a word start: a hash-fenced raw string or a comment.
    fn hash(&mut self, hashes: usize) {
        if self.peek(self.pos + hashes) == Some(b'\'') {
            self.raw_string(hashes);
            return;
        }
        let end = match self.rest().find('\n') {
            Some(n) => self.pos + n,
            None => self.bytes.len(),
        };
        self.push(TokenKind::Comment, self.pos, end);
        self.pos = end;
    }

    /// A raw string whose opener (`hashes` times `#`, then `'`) starts here.
    fn raw_string(&mut self, hashes: usize) {
        let start = self.pos;
        let body = start + hashes + 1;
        let tail = self.src.get(body..).unwrap_or("");
        let mut close = None;
        let mut from = 0;
        while let Some(q) = tail.get(from..).and_then(|t| t.find('\'')) {
            let quote = from + q;
            let fence = &tail.as_bytes()[quote + 1..];
            if fence.len() >= hashes && fence[..hashes].iter().all(|&b| b == b'#') {
                close = Some(body + quote + 1 + hashes);
                break;
            }
            from = quote + 1;
        }
        let stored = u8::try_from(hashes).unwrap_or(u8::MAX);
        let (end, closed) = match close {
            Some(end) => (end, true),
            None => (self.bytes.len(), false),
        };
        self.push(
            TokenKind::RawString {
                hashes: stored,
                closed,
            },
            start,
            end,
        );
        self.pos = end;
        if !closed {
            let fence = "#".repeat(hashes);
            self.error(
                Code::UnclosedString,
                "unclosed literal string",
                span(start, body),
                "this string is never closed",
            )
            .help(format!("add a closing `'{fence}`"));
        }
    }

    fn open_string(&mut self) {
        let open = self.pos;
        self.emit(TokenKind::DqStart, 1);
        self.stack.push(Frame::Str { open });
    }

    fn open_expr(&mut self, len: usize) {
        self.emit(TokenKind::ExprOpen, len);
        self.stack.push(Frame::Expr);
    }

    fn close_brace(&mut self) {
        self.emit(TokenKind::RBrace, 1);
        self.pop_if(|f| f == Frame::Brace);
    }

    /// `]` closes a bracket or an expression block. After an index group of
    /// a string splice, another adjacent group may follow.
    fn close_bracket(&mut self) {
        self.emit(TokenKind::RBracket, 1);
        let popped = self.pop_if(|f| matches!(f, Frame::Bracket { .. } | Frame::Expr));
        if popped == Some(Frame::Bracket { str_index: true }) {
            self.index_groups();
        }
    }

    /// After `$name` inside a string: an adjacent `[` opens an index group.
    fn index_groups(&mut self) {
        if self.peek(self.pos) == Some(b'[') {
            self.emit(TokenKind::LBracket, 1);
            self.stack.push(Frame::Bracket { str_index: true });
        }
    }

    /// Whether `{` comes right before, with only whitespace between: then
    /// `||` is the empty parameter list `{ || … }`, which the parser reports.
    fn after_lbrace(&self) -> bool {
        self.tokens
            .iter()
            .rev()
            .find(|t| t.kind != TokenKind::Whitespace)
            .is_some_and(|t| t.kind == TokenKind::LBrace)
    }

    fn pipe_pipe(&mut self, len: usize) {
        let start = self.pos;
        let params = self.after_lbrace();
        self.emit(TokenKind::PipePipe, len);
        if !params {
            self.error(
                Code::ShellAndOr,
                "`||` is not ral",
                span(start, start + len),
                "shell `or` is not an operator here",
            )
            .note("ral runs a fallback with `?`: `a ? b` runs `b` only when `a` fails.")
            .help("write `?` instead of `||`");
        }
    }

    fn amp(&mut self, len: usize) {
        let start = self.pos;
        self.emit(TokenKind::Amp, len);
        self.error(
            Code::BackgroundOperator,
            "`&` is not an operator",
            span(start, start + len),
            "ral has no background jobs",
        )
        .note("Concurrent work is started with `spawn`, which returns a handle.")
        .help("use `spawn { … }` to run a block concurrently");
    }

    fn amp_amp(&mut self, len: usize) {
        let start = self.pos;
        self.emit(TokenKind::AmpAmp, len);
        self.error(
            Code::ShellAndOr,
            "`&&` is not ral",
            span(start, start + len),
            "shell `and` is not an operator here",
        )
        .note("Statements separated by `;` or a newline already stop at the first failure.")
        .help("write `;` instead of `&&`");
    }

    fn lone_backtick(&mut self, len: usize) {
        let start = self.pos;
        self.emit(TokenKind::Error, len);
        self.error(
            Code::LoneBacktick,
            "a backtick must start a tag",
            span(start, start + len),
            "expected a tag name right after this backtick",
        )
        .help("write a tag as `` `name ``, or quote a literal backtick: '`'");
    }

    fn stray_dollar(&mut self, len: usize) {
        let start = self.pos;
        self.emit(TokenKind::Error, len);
        self.error(
            Code::StrayDollar,
            "`$` does not start a variable or an expression",
            span(start, start + len),
            "expected a name, `(name)` or `[` after `$`",
        )
        .help("write `$name`, `$(name)` or `$[…]`; quote a literal dollar sign: '$'");
    }

    /// A redirect token: optional descriptor digits, then the operator.
    fn redirect(&mut self, len: usize) {
        let start = self.pos;
        let end = start + len;
        let text = &self.bytes[start..end];
        let ndigits = text.iter().take_while(|b| b.is_ascii_digit()).count();
        let fd = (ndigits > 0).then(|| saturating_fd(&text[..ndigits]));
        let op_text = &text[ndigits..];
        let mut dup_target = None;
        let op = match op_text {
            b">" => RedirectOp::Write,
            b">>" => RedirectOp::Append,
            b">~" => RedirectOp::Stream,
            b"<" => RedirectOp::Read,
            b"<<" | b"<<<" => RedirectOp::Here,
            _ => {
                let target = &op_text[2.min(op_text.len())..];
                let n = (!target.is_empty()).then(|| saturating_fd(target));
                dup_target = Some(n);
                RedirectOp::Dup(n.unwrap_or(u8::MAX))
            }
        };
        self.emit(TokenKind::Redirect { fd, op }, len);
        let fd_span = span(start, start + ndigits);
        let op_start = start + ndigits;
        if op == RedirectOp::Here {
            if fd.is_some_and(|n| n != 0) {
                self.error(
                    Code::BadDescriptor,
                    "a here string can only feed standard input",
                    fd_span,
                    "`<<` redirects descriptor 0 only",
                )
                .help("drop the descriptor: `<< value`");
            }
            if op_text.len() == 3 {
                self.error(
                    Code::HereStringForm,
                    "there is no `<<<` here string",
                    span(op_start, end),
                    "ral's here string is `<<`",
                )
                .help("write `<< value`");
            } else if self
                .peek(end)
                .is_some_and(|b| !matches!(b, b' ' | b'\t' | b'\n'))
            {
                self.error(
                    Code::HereStringForm,
                    "`<<` must be followed by whitespace",
                    span(op_start, end),
                    "a here string is `<< value`",
                )
                .note("`<<` is a here string, not a heredoc delimiter.")
                .help("put a space after `<<`");
            }
        } else if fd.is_some_and(|n| n > 2) {
            self.bad_descriptor(fd_span, "this descriptor");
        }
        match dup_target {
            Some(None) => {
                self.error(
                    Code::BadDescriptor,
                    "`>&` needs a descriptor",
                    span(op_start, end),
                    "expected 0, 1 or 2 after `>&`",
                )
                .help("write `2>&1` to send standard error to standard output");
            }
            Some(Some(n)) if n > 2 => {
                self.bad_descriptor(span(op_start + 2, end), "this target descriptor");
            }
            _ => {}
        }
    }

    fn bad_descriptor(&mut self, sp: Span, what: &str) {
        self.error(
            Code::BadDescriptor,
            "only standard input, output and error can be redirected",
            sp,
            &format!("{what} is not 0, 1 or 2"),
        )
        .note(
            "ral has no numbered descriptors beyond standard input (0), output (1) and error (2).",
        );
    }

    // ---- expression mode ----

    fn step_expr(&mut self) {
        let start = self.pos;
        let mut lx = ExprTok::lexer(self.rest());
        let (tok, len) = match lx.next() {
            Some(Ok(tok)) => (Some(tok), lx.span().end),
            _ => (None, 0),
        };
        let Some(tok) = tok.filter(|_| len > 0) else {
            let first = self.char_end(start);
            self.word(first, &EXPR_WORD, true);
            return;
        };
        let op = |o| TokenKind::Op(o);
        match tok {
            ExprTok::Space => self.emit(TokenKind::Whitespace, len),
            ExprTok::Hash => self.hash(len),
            ExprTok::Quote => self.raw_string(0),
            ExprTok::DQuote => self.open_string(),
            ExprTok::LBrace => {
                self.emit(TokenKind::LBrace, len);
                self.stack.push(Frame::Brace);
            }
            ExprTok::RBrace => self.close_brace(),
            ExprTok::LBracket => {
                self.emit(TokenKind::LBracket, len);
                self.stack.push(Frame::Bracket { str_index: false });
            }
            ExprTok::RBracket => self.close_bracket(),
            ExprTok::LParen => self.emit(TokenKind::LParen, len),
            ExprTok::RParen => self.emit(TokenKind::RParen, len),
            ExprTok::Semi => self.emit(TokenKind::Semi, len),
            ExprTok::Pipe => self.emit(TokenKind::Pipe, len),
            ExprTok::Or => self.emit(op(ExprOp::Or), len),
            ExprTok::Amp => self.amp(len),
            ExprTok::And => self.emit(op(ExprOp::And), len),
            ExprTok::Question => self.emit(TokenKind::Question, len),
            ExprTok::Comma => self.emit(TokenKind::Comma, len),
            ExprTok::Colon => self.word(start + len, &EXPR_WORD, true),
            ExprTok::Spread => self.emit(TokenKind::Spread, len),
            ExprTok::Bang => self.bang(len),
            ExprTok::Caret => self.emit(TokenKind::Caret, len),
            ExprTok::Tag => self.emit(TokenKind::Tag, len),
            ExprTok::Backtick => self.lone_backtick(len),
            ExprTok::Var => self.emit(TokenKind::Var, len),
            ExprTok::VarParen => self.emit(TokenKind::VarParen, len),
            ExprTok::ExprOpen => self.open_expr(len),
            ExprTok::Dollar => self.stray_dollar(len),
            ExprTok::Add => self.emit(op(ExprOp::Add), len),
            ExprTok::Sub => self.emit(op(ExprOp::Sub), len),
            ExprTok::Mul => self.emit(op(ExprOp::Mul), len),
            ExprTok::Div => self.emit(op(ExprOp::Div), len),
            ExprTok::Rem => self.emit(op(ExprOp::Rem), len),
            ExprTok::Eq => self.emit(op(ExprOp::Eq), len),
            ExprTok::Ne => self.emit(op(ExprOp::Ne), len),
            ExprTok::Lt => self.emit(op(ExprOp::Lt), len),
            ExprTok::Gt => self.emit(op(ExprOp::Gt), len),
            ExprTok::Le => self.emit(op(ExprOp::Le), len),
            ExprTok::Ge => self.emit(op(ExprOp::Ge), len),
            ExprTok::Assign => self.emit(op(ExprOp::Assign), len),
            ExprTok::Word => self.word(start + len, &EXPR_WORD, true),
        }
    }

    // ---- string mode ----

    fn step_str(&mut self) {
        let start = self.pos;
        let mut lx = StrTok::lexer(self.rest());
        let (tok, len) = match lx.next() {
            Some(Ok(tok)) => (Some(tok), lx.span().end),
            _ => (None, 0),
        };
        let Some(tok) = tok.filter(|_| len > 0) else {
            let end = self.char_end(start);
            self.push(TokenKind::DqText, start, end);
            self.pos = end;
            return;
        };
        match tok {
            StrTok::End => {
                self.emit(TokenKind::DqEnd, len);
                self.pop_if(|f| matches!(f, Frame::Str { .. }));
            }
            StrTok::Backslash => self.escape(),
            StrTok::Var => {
                self.emit(TokenKind::Var, len);
                self.index_groups();
            }
            StrTok::VarParen => self.emit(TokenKind::VarParen, len),
            StrTok::ExprOpen => self.open_expr(len),
            StrTok::BangBrace => {
                self.emit(TokenKind::Bang, 1);
                self.emit(TokenKind::LBrace, 1);
                self.stack.push(Frame::Brace);
            }
            StrTok::BangVar => {
                self.emit(TokenKind::Bang, 1);
                self.emit(TokenKind::Var, len - 1);
                self.index_groups();
            }
            StrTok::Text | StrTok::Sigil => self.emit(TokenKind::DqText, len),
        }
    }

    /// One backslash escape at the current position (spec §4.2).
    fn escape(&mut self) {
        let start = self.pos;
        let hex_run = |from: usize| {
            let mut i = from;
            while self.peek(i).is_some_and(|b| b.is_ascii_hexdigit()) {
                i += 1;
            }
            i - from
        };
        let (len, problem): (usize, Option<String>) = match self.peek(start + 1) {
            None => (
                1,
                Some("a backslash at the end of the input escapes nothing".into()),
            ),
            Some(b'n' | b'r' | b't' | b'\\' | b'0' | b'e' | b'"' | b'$' | b'!' | b'~' | b'\n') => {
                (2, None)
            }
            Some(b'x') => {
                let n = hex_run(start + 2).min(2);
                if n < 2 {
                    (
                        2 + n,
                        Some("`\\x` takes exactly two hexadecimal digits".into()),
                    )
                } else {
                    let ok = self.peek(start + 2).is_some_and(|b| b <= b'7');
                    let problem = (!ok).then(|| {
                        "`\\x` takes one ASCII byte, 00 to 7F; use `\\u{…}` for other characters"
                            .to_string()
                    });
                    (4, problem)
                }
            }
            Some(b'u') => {
                if self.peek(start + 2) == Some(b'{') {
                    let n = hex_run(start + 3);
                    if self.peek(start + 3 + n) == Some(b'}') {
                        let len = 4 + n;
                        let text = self.src.get(start..start + len).unwrap_or("");
                        let problem = if n == 0 || n > 6 {
                            Some("`\\u{…}` takes one to six hexadecimal digits".to_string())
                        } else if decode_escape(text).is_none() {
                            Some("this is not a Unicode scalar value".to_string())
                        } else {
                            None
                        };
                        (len, problem)
                    } else {
                        (3 + n, Some("`\\u{…}` is missing its closing `}`".into()))
                    }
                } else {
                    (
                        2,
                        Some("write a Unicode escape with braces: `\\u{1F600}`".into()),
                    )
                }
            }
            Some(_) => {
                let end = self.char_end(start + 1);
                (end - start, Some("unknown escape".into()))
            }
        };
        self.emit(
            TokenKind::DqEscape {
                valid: problem.is_none(),
            },
            len,
        );
        if let Some(label) = problem {
            let sp = span(start, start + len);
            let text = self.src.get(start..start + len).unwrap_or("\\");
            let message = format!("invalid escape `{text}` in a double-quoted string");
            self.error(Code::InvalidEscape, &message, sp, &label)
                .note(
                    "The escapes are \\n \\r \\t \\\\ \\0 \\e \\\" \\$ \\! \\~ \\xNN \\u{…} \
                     and a backslash before a line ending.",
                )
                .help(
                    "write `\\\\` for a literal backslash, or use a single-quoted string"
                        .to_string(),
                );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
        lex(src, SourceId(0))
            .tokens
            .into_iter()
            .filter(|t| !t.kind.is_trivia())
            .map(|t| (t.kind, t.text(src)))
            .collect()
    }

    #[test]
    fn redirect_beats_word_start() {
        let k = kinds("2>&1 22x>f");
        assert_eq!(
            k[0].0,
            TokenKind::Redirect {
                fd: Some(2),
                op: RedirectOp::Dup(1)
            }
        );
        assert_eq!(k[1], (TokenKind::Word, "22x"));
        assert_eq!(k[3], (TokenKind::Word, "f"));
    }

    #[test]
    fn fd_saturates() {
        assert_eq!(saturating_fd(b"0"), 0);
        assert_eq!(saturating_fd(b"255"), 255);
        assert_eq!(saturating_fd(b"99999999999999999999"), 255);
    }

    #[test]
    fn decode_escapes() {
        assert_eq!(decode_escape("\\n"), Some(EscapeValue::Char('\n')));
        assert_eq!(decode_escape("\\e"), Some(EscapeValue::Char('\u{1b}')));
        assert_eq!(decode_escape("\\x41"), Some(EscapeValue::Char('A')));
        assert_eq!(decode_escape("\\x80"), None);
        assert_eq!(decode_escape("\\u{1F600}"), Some(EscapeValue::Char('😀')));
        assert_eq!(decode_escape("\\u{D800}"), None);
        assert_eq!(decode_escape("\\u{}"), None);
        assert_eq!(decode_escape("\\u{0000041}"), None);
        assert_eq!(decode_escape("\\\n"), Some(EscapeValue::LineContinuation));
        assert_eq!(decode_escape("\\q"), None);
        assert_eq!(decode_escape("n"), None);
    }
}
