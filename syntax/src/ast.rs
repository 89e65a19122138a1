//! The spanned abstract syntax tree (spec §17.1).
//!
//! The tree keeps every distinction later phases need: how a head was spelt
//! (bare name, path, `^name`, value), whether a string was quoted, which
//! splices an interpolated string holds, redirect operators with their
//! descriptors, and an exact [`Span`] on every node. Nodes that the checker
//! annotates (atoms, stages, blocks, expressions, patterns) carry a [`NodeId`],
//! unique within one parsed program, so later phases keep side tables keyed by
//! it instead of mutating the tree.
//!
//! The parser builds this tree permissively; the rejections the spec assigns to
//! parse time but that need a whole form in view (a name bound twice in one
//! pattern, a repeated redirect stream, a non-arm atom after `if`, …) are made
//! by [`crate::validate`] over the finished tree.

use crate::span::Span;

/// Identifies an annotatable node within one program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeId(pub u32);

/// A name as written: a binding, a parameter, a tag, a field, a command.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Name {
    pub text: String,
    pub span: Span,
}

impl Name {
    pub fn new(text: impl Into<String>, span: Span) -> Name {
        Name {
            text: text.into(),
            span,
        }
    }
}

/// A whole program, block body or file: statements in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub stmts: Vec<Stmt>,
    pub span: Span,
}

/// A statement: a binding or a `?`-chain of pipelines (spec §3.7).
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Let(Let),
    Chain(Chain),
    /// A statement the parser could not read; its errors are already reported.
    Error(Span),
}

impl Stmt {
    pub fn span(&self) -> Span {
        match self {
            Stmt::Let(l) => l.span,
            Stmt::Chain(c) => c.span,
            Stmt::Error(span) => *span,
        }
    }
}

/// `let pattern = chain`.
#[derive(Clone, Debug, PartialEq)]
pub struct Let {
    pub pattern: Pattern,
    pub value: Chain,
    pub span: Span,
}

/// `pipeline ? pipeline ? …` (spec §8.4). One pipeline means no `?`.
#[derive(Clone, Debug, PartialEq)]
pub struct Chain {
    pub alternatives: Vec<Pipeline>,
    pub span: Span,
}

impl Chain {
    /// The block literal this chain consists of, if that is all it is: one
    /// pipeline of one command whose head is an unindexed `{…}` with no
    /// arguments or redirects. A `let` with such a right-hand side binds a
    /// named block, which may be referred to before it (spec §5.7).
    pub fn as_block_literal(&self) -> Option<&Block> {
        let [pipeline] = self.alternatives.as_slice() else {
            return None;
        };
        let [stage] = pipeline.stages.as_slice() else {
            return None;
        };
        let StageKind::Command(cmd) = &stage.kind else {
            return None;
        };
        if !cmd.args.is_empty() || !cmd.redirects.is_empty() {
            return None;
        }
        match &cmd.head {
            Head::Atom(Atom {
                primary: Primary::Block(b),
                indexes,
                ..
            }) if indexes.is_empty() => Some(b),
            Head::Atom(_) | Head::Caret(_) => None,
        }
    }
}

/// `stage | stage | …` (spec §7). One stage means no `|`.
#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub stages: Vec<Stage>,
    pub span: Span,
}

/// One pipeline stage.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub id: NodeId,
    pub kind: StageKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StageKind {
    /// `return atom?` (spec §5.5).
    Return(Option<Atom>),
    /// `if c arm (elsif c arm)* (else arm)?` (spec §8.2).
    If(Box<If>),
    /// `case scrutinee [`tag: arm, …]` (spec §8.3).
    Case(Box<Case>),
    /// `try`, `guard`, `within`, `grant`, `audit` with their redirects.
    Scope(Box<ScopeForm>),
    /// A command: head, arguments and redirects.
    Command(Command),
}

/// `if` with its `elsif` branches and optional `else`.
#[derive(Clone, Debug, PartialEq)]
pub struct If {
    /// The `if` branch followed by every `elsif` branch, in order.
    pub branches: Vec<IfBranch>,
    pub else_arm: Option<Atom>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IfBranch {
    pub cond: Atom,
    pub arm: Atom,
    /// The span of the `if` or `elsif` keyword.
    pub keyword: Span,
}

/// `case scrutinee [arms]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    pub scrutinee: Atom,
    pub arms: Vec<CaseArm>,
    /// The span of the bracketed arm list.
    pub arms_span: Span,
}

/// `` `tag: arm ``.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseArm {
    pub tag: Name,
    pub arm: Atom,
    pub span: Span,
}

/// A scoped control form (spec §8.6, §8.7, §9.1, §12, §13.3).
#[derive(Clone, Debug, PartialEq)]
pub struct ScopeForm {
    pub kind: ScopeKind,
    /// The span of the keyword.
    pub keyword: Span,
    pub redirects: Vec<Redirect>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ScopeKind {
    /// `try body handler`.
    Try { body: Atom, handler: Atom },
    /// `guard body cleanup`.
    Guard { body: Atom, cleanup: Atom },
    /// `within options body`.
    Within { options: Atom, body: Atom },
    /// `grant capabilities body`.
    Grant { caps: Atom, body: Atom },
    /// `audit body`.
    Audit { body: Atom },
}

/// `head (argument | redirect)*`.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub head: Head,
    pub args: Vec<Arg>,
    pub redirects: Vec<Redirect>,
}

/// The head of a command (spec §6.2).
#[derive(Clone, Debug, PartialEq)]
pub enum Head {
    /// `^name`: external lookup, skipping bindings and handlers.
    Caret(Name),
    /// Any atom. [`Head::class`] tells a bare name, a path and a value apart.
    Atom(Atom),
}

/// How a head dispatches, decided by its spelling alone (spec §6.2, §17.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadClass<'a> {
    /// A plain identifier: ordinary name dispatch (§6.3).
    Bare(&'a str),
    /// A word containing `/`, or a `~/` word: run that file directly.
    Path(&'a str),
    /// `^name`.
    Caret(&'a str),
    /// Anything else is a value, applied to the arguments if there are any.
    Value,
}

impl Head {
    pub fn class(&self) -> HeadClass<'_> {
        match self {
            Head::Caret(name) => HeadClass::Caret(&name.text),
            Head::Atom(atom) => match (&atom.primary, atom.indexes.is_empty()) {
                (Primary::Word(w), true) if is_identifier(w) && !is_reserved(w) => {
                    HeadClass::Bare(w)
                }
                (Primary::Word(w), true) if w.contains('/') && w != "/" || w.starts_with("~/") => {
                    HeadClass::Path(w)
                }
                _ => HeadClass::Value,
            },
        }
    }

    pub fn span(&self) -> Span {
        match self {
            Head::Caret(name) => name.span,
            Head::Atom(atom) => atom.span,
        }
    }
}

/// A command argument.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Atom(Atom),
    /// `...atom` (spec §6.6); `span` covers the marker and the atom.
    Spread {
        value: Atom,
        span: Span,
    },
}

impl Arg {
    /// The span of the whole argument, spread marker included.
    pub fn span(&self) -> Span {
        match self {
            Arg::Atom(atom) => atom.span,
            Arg::Spread { span, .. } => *span,
        }
    }
}

/// A redirect (spec §7.4, §7.5). Descriptors are already defaulted: `fd` is
/// 0 for input redirects and 1 for output redirects unless written.
#[derive(Clone, Debug, PartialEq)]
pub struct Redirect {
    pub fd: u8,
    /// Whether the descriptor was written explicitly (`2>`, `1>`).
    pub explicit_fd: bool,
    pub op: RedirectKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RedirectKind {
    /// `> target`: atomic replace.
    Write(Atom),
    /// `>~ target`: truncate and stream.
    Stream(Atom),
    /// `>> target`: append.
    Append(Atom),
    /// `< target`.
    Read(Atom),
    /// `<< value`.
    Here(Atom),
    /// `>&N`: send `fd` where descriptor `target` goes.
    Dup { target: u8 },
}

impl Redirect {
    /// The stream this redirect binds: 0, 1 or 2.
    pub fn stream(&self) -> u8 {
        self.fd
    }
}

/// `primary index*` with adjacent `[k]` groups.
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub id: NodeId,
    pub primary: Primary,
    pub indexes: Vec<Index>,
    pub span: Span,
}

/// `[key]` written directly after its target.
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    pub key: Atom,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Primary {
    /// A bare word that is not a numeral, `true` or `false` (spec §3.5).
    /// `~` and `~/…` words keep their tilde; [`home_rest`] splits it off.
    Word(String),
    /// An integer numeral (spec §4.1).
    Int(i64),
    /// A float numeral (spec §4.1); always finite.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `()`.
    Unit,
    /// A quoted string.
    Str(StrLit),
    /// `$name` or `$(name)`.
    Var(Name),
    /// `$[ expression ]`.
    Expr(Box<Expr>),
    /// `!atom`: `!$x[k]` forces the indexed field (the inner atom keeps the
    /// indexes); `!{…}[k]` forces the block and the outer atom indexes it.
    Force(Box<Atom>),
    /// `` `name `` with an optional payload atom.
    Tag {
        name: Name,
        payload: Option<Box<Atom>>,
    },
    /// `{ … }` or `{ |p q| … }`.
    Block(Box<Block>),
    /// A list literal, `[]` included.
    List(Vec<ListItem>),
    /// A literal whose entries all have static keys (spec §4.5).
    Record(Vec<Entry>),
    /// `[:]`, `[:, …]`, or a literal with a computed key.
    Map(Vec<Entry>),
    /// A primary the parser could not read; already reported.
    Error,
}

/// Splits a `~` or `~/rest` word into its rest (`""` or `"/rest"`); `None` for
/// any other word (spec §3.5).
pub fn home_rest(word: &str) -> Option<&str> {
    if word == "~" || word.starts_with("~/") {
        word.get(1..)
    } else {
        None
    }
}

/// A quoted string literal.
#[derive(Clone, Debug, PartialEq)]
pub struct StrLit {
    pub quote: Quote,
    /// Literal text and splices in order; adjacent text is merged.
    pub parts: Vec<StrPart>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    /// `'…'` or a hash-fenced `#'…'#` with `hashes` fences.
    Single { hashes: u8 },
    /// `"…"`.
    Double,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StrPart {
    /// Literal text, escapes decoded.
    Text(String),
    /// The home directory, from a leading `~/` or a whole `"~"` (spec §4.2).
    Home,
    /// `$name[k]…`, `$(name)`, `$[…]`, `!{…}` or `!$name[k]…`.
    Splice(Atom),
}

impl StrLit {
    /// The literal text if the string has no splice and no home prefix.
    pub fn as_plain(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                StrPart::Text(t) => out.push_str(t),
                StrPart::Home | StrPart::Splice(_) => return None,
            }
        }
        Some(out)
    }
}

/// `{ program }` or `{ |p1 p2 …| program }`. A block with several parameters
/// means the curried `{|p1| {|p2| …}}` (spec §17.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    pub id: NodeId,
    pub params: Vec<Pattern>,
    pub body: Program,
    pub span: Span,
}

/// An item of a list literal.
#[derive(Clone, Debug, PartialEq)]
pub enum ListItem {
    Item(Atom),
    Spread { value: Atom, span: Span },
}

/// An entry of a record or map literal.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry {
    Field { key: Key, value: Atom, span: Span },
    Spread { value: Atom, span: Span },
}

/// A key in a literal or pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// A bare name or a plain quoted string.
    Static(Name),
    /// `$name` (maps only).
    Computed(Name),
}

impl Key {
    pub fn span(&self) -> Span {
        match self {
            Key::Static(n) | Key::Computed(n) => n.span,
        }
    }
}

/// An expression inside `$[...]` (spec §17.1).
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub id: NodeId,
    pub kind: ExprKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Atom(Atom),
    Unary {
        op: UnOp,
        operand: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `( expression )`; kept so spans and printing follow the source.
    Paren(Box<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

impl BinOp {
    pub fn spelling(self) -> &'static str {
        match self {
            BinOp::Or => "||",
            BinOp::And => "&&",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Gt => ">",
            BinOp::Le => "<=",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
        }
    }

    /// Whether the operator wants numbers (arithmetic) or ordered operands.
    pub fn is_arithmetic_or_ordering(self) -> bool {
        matches!(
            self,
            BinOp::Lt
                | BinOp::Gt
                | BinOp::Le
                | BinOp::Ge
                | BinOp::Add
                | BinOp::Sub
                | BinOp::Mul
                | BinOp::Div
                | BinOp::Rem
        )
    }
}

/// A binding pattern (spec §5.2).
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern {
    pub id: NodeId,
    pub kind: PatternKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PatternKind {
    /// `_`.
    Wildcard,
    /// `name`.
    Bind(Name),
    /// `[p, q, ...rest]`; `rest` is `Some` when a `...name` tail is written
    /// (`...​_` discards the tail).
    List {
        items: Vec<Pattern>,
        rest: Option<Name>,
    },
    /// `[key: p, …]`.
    Record { fields: Vec<FieldPattern> },
    /// A pattern the parser could not read; already reported.
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FieldPattern {
    pub key: Name,
    pub pattern: Pattern,
    pub span: Span,
}

/// The reserved words of spec §3.6.
pub const RESERVED: &[&str] = &[
    "if", "elsif", "else", "let", "return", "case", "within", "grant", "try", "guard", "audit",
    "true", "false",
];

pub fn is_reserved(word: &str) -> bool {
    RESERVED.contains(&word)
}

/// An identifier: an ASCII letter or `_`, then letters, digits, `_` or `-`
/// (spec §3.6).
pub fn is_identifier(word: &str) -> bool {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Reads a word as a numeral (spec §4.1). `None` means the word is text: not
/// numeral-shaped, or out of range for its kind.
pub fn parse_numeral(word: &str) -> Option<Numeral> {
    let bytes = word.as_bytes();
    let mut i = 0;
    if matches!(bytes.first(), Some(b'+' | b'-')) {
        i = 1;
    }
    let digits = |from: usize| {
        bytes
            .get(from..)
            .map_or(0, |s| s.iter().take_while(|b| b.is_ascii_digit()).count())
    };
    let int_digits = digits(i);
    i += int_digits;
    let mut is_float = false;
    if bytes.get(i) == Some(&b'.') {
        let frac = digits(i + 1);
        if int_digits == 0 && frac == 0 {
            return None;
        }
        is_float = true;
        i += 1 + frac;
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            let mut j = i + 1;
            if matches!(bytes.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            let exp = digits(j);
            if exp == 0 {
                return None;
            }
            i = j + exp;
        }
    } else if int_digits == 0 {
        return None;
    }
    if i != bytes.len() {
        return None;
    }
    if is_float {
        let value: f64 = word.parse().ok()?;
        value.is_finite().then_some(Numeral::Float(value))
    } else {
        word.parse::<i64>().ok().map(Numeral::Int)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Numeral {
    Int(i64),
    Float(f64),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerals_follow_the_grammar() {
        assert_eq!(parse_numeral("007"), Some(Numeral::Int(7)));
        assert_eq!(parse_numeral("+5"), Some(Numeral::Int(5)));
        assert_eq!(parse_numeral("-0"), Some(Numeral::Int(0)));
        assert_eq!(parse_numeral(".5"), Some(Numeral::Float(0.5)));
        assert_eq!(parse_numeral("2."), Some(Numeral::Float(2.0)));
        assert_eq!(parse_numeral("1.5e+3"), Some(Numeral::Float(1500.0)));
        assert_eq!(parse_numeral("1e6"), None);
        assert_eq!(parse_numeral("1_000"), None);
        assert_eq!(parse_numeral("0x10"), None);
        assert_eq!(parse_numeral("."), None);
        assert_eq!(parse_numeral("-"), None);
        assert_eq!(
            parse_numeral("9223372036854775807"),
            Some(Numeral::Int(i64::MAX))
        );
        assert_eq!(parse_numeral("9223372036854775808"), None);
        assert_eq!(
            parse_numeral("-9223372036854775808"),
            Some(Numeral::Int(i64::MIN))
        );
        assert_eq!(parse_numeral("1.8e308"), None);
        assert_eq!(parse_numeral("1.0e"), None);
        assert_eq!(parse_numeral("3.10"), Some(Numeral::Float(3.1)));
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("add-rate"));
        assert!(is_identifier("_x9"));
        assert!(!is_identifier("9x"));
        assert!(!is_identifier("-x"));
        assert!(!is_identifier("a.b"));
    }
}
