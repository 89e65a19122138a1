//! The signature language: type schemes written as text.
//!
//! The syntax is the printer's ([`crate::print`]), with ASCII spellings
//! accepted beside the Greek ones, so a printed scheme parses back:
//!
//! ```text
//! scheme  ::= ("forall" | "∀") binder+ "." comp | comp
//! binder  ::= var (":" kind)?
//! kind    ::= kname ("+" kname)* | "(" Head ("|" Head)* ")" ("+data")?
//! comp    ::= value "->" comp          a function
//!           | "Returns" atom           F_p A
//!           | "Command"                F_w Unit
//!           | var atom                 F_ν A, ν a grade variable
//!           | var                      a computation variable
//!           | ("mu" | "μ") var "." comp | "(" comp ")"
//! value   ::= ("List" | "Map" | "Handle") atom | Alias atom* | ("mu" | "μ") var "." value | atom
//! atom    ::= Unit | Bool | Int | Integer | Float | String | Bytes | var | Alias
//!           | "[" value "]"                          a list
//!           | "[" field ("," field)* ("," ".." var)? "]" | "[" ".." var "]" | "[·]"   a record
//!           | "<" tag ("|" tag)* ("|" ".." var)? ">" | "<" ".." var ">" | "<>"        a variant
//!           | "{" comp "}" | "(" value ")"
//! field   ::= label ":" value            label: identifier or 'quoted'
//! tag     ::= "`" ident atom?            no payload means Unit
//! ```
//!
//! A variable's sort is decided by where it is first used (a value, a
//! computation, a grade before an atom, a row after `..`), and every later
//! use must agree. Every variable must be bound by the `forall`; a kind is
//! allowed on value variables only. Capitalised aliases ([`STANDARD_ALIASES`])
//! expand in place, so the printer shows them expanded.

use std::fmt;

use crate::ty::{
    Alphabet, Con, HeadSet, Kind, Label, Scheme, SchemeBuilder, SchemeNode, Sort, TyVar, TyVarId,
};

/// A named abbreviation in signatures, e.g. `Error` or `Report a`.
#[derive(Clone, Copy, Debug)]
pub struct Alias {
    /// The capitalised name.
    pub name: &'static str,
    /// Parameter names (value variables).
    pub params: &'static [&'static str],
    /// The expansion, a value type in the signature language.
    pub body: &'static str,
}

/// The aliases the builtin table uses (§8.6, §13.3, §17.7).
pub const STANDARD_ALIASES: &[Alias] = &[
    Alias {
        name: "Site",
        params: &[],
        body: "<`just [script: String, line: Integer, col: Integer] | `none>",
    },
    Alias {
        name: "Cause",
        params: &[],
        body: "<`interrupted | `cancelled | `timed-out | `terminated | `aborted | `reader-gone>",
    },
    Alias {
        name: "Reason",
        params: &[],
        body: "<`exited Integer | `signaled Integer | `cancelled Cause | `not-found \
               | `not-runnable | `raised>",
    },
    Alias {
        name: "Error",
        params: &[],
        body: "[cmd: String, status: Integer, reason: Reason, message: String, site: Site]",
    },
    Alias {
        name: "Option",
        params: &["a"],
        body: "<`just a | `none>",
    },
    Alias {
        name: "Outcome",
        params: &["a"],
        body: "<`ok a | `err Error>",
    },
    Alias {
        name: "CommandObs",
        params: &[],
        body: "[argv: [String], status: Integer, origin: String, stdout: Bytes, stderr: Bytes, error: String]",
    },
    Alias {
        name: "Observation",
        params: &[],
        body: "[site: Site, start: Integer, end: Integer, principal: String, what: \
               <`command CommandObs \
               | `write [path: String, mode: String, outcome: String, new_bytes: Option Bytes, old_bytes: Option Bytes] \
               | `read [path: String] \
               | `grep [scope: String, pattern: String] \
               | `check [resource: String, decision: String, fields: Map String] \
               | `worker [id: Integer, cmd: String, class: String] \
               | `act [verb: String, subject: Option String, payload: String, refused: Bool]>]",
    },
    Alias {
        name: "Report",
        params: &["a"],
        body: "[outcome: Outcome a, trail: [Observation]]",
    },
    Alias {
        name: "Await",
        params: &["a"],
        body: "[value: a, stdout: Bytes, stderr: Bytes]",
    },
    Alias {
        name: "FileInfo",
        params: &[],
        body: "[name: String, path: String, type: String, size: Integer, modified: Integer, \
               accessed: Integer, created: Integer, readonly: Bool, target: Option String]",
    },
];

/// Why a signature does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigError {
    /// Byte offset into the signature text (or the alias body, for errors there).
    pub offset: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for SigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for SigError {}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Quoted(String),
    Tag(String),
    Arrow,
    Forall,
    Mu,
    Dot,
    DotDot,
    Colon,
    Comma,
    Bar,
    Plus,
    LBrack,
    RBrack,
    LBrace,
    RBrace,
    LAngle,
    RAngle,
    LParen,
    RParen,
    Middot,
}

fn is_ident_start(c: char) -> bool {
    (c.is_alphabetic() || c == '_') && c != 'μ'
}

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, SigError> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut i = 0;
    let err = |offset: usize, message: &str| SigError {
        offset,
        message: message.to_owned(),
    };
    while let Some(&(at, c)) = chars.get(i) {
        let next = chars.get(i + 1).map(|&(_, c)| c);
        i += 1;
        let tok = match c {
            c if c.is_whitespace() => continue,
            '-' if next == Some('>') => {
                i += 1;
                Tok::Arrow
            }
            '→' => Tok::Arrow,
            '∀' => Tok::Forall,
            'μ' => Tok::Mu,
            '.' if next == Some('.') => {
                i += 1;
                Tok::DotDot
            }
            '.' => Tok::Dot,
            ':' => Tok::Colon,
            ',' => Tok::Comma,
            '|' => Tok::Bar,
            '+' => Tok::Plus,
            '[' => Tok::LBrack,
            ']' => Tok::RBrack,
            '{' => Tok::LBrace,
            '}' => Tok::RBrace,
            '<' => Tok::LAngle,
            '>' => Tok::RAngle,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '·' => Tok::Middot,
            '\'' => {
                let mut s = String::new();
                loop {
                    let Some(&(_, c)) = chars.get(i) else {
                        return Err(err(at, "unclosed quoted label"));
                    };
                    i += 1;
                    match c {
                        '\'' => break,
                        '\\' => {
                            if let Some(&(_, e)) = chars.get(i) {
                                s.push(e);
                                i += 1;
                            }
                        }
                        c => s.push(c),
                    }
                }
                Tok::Quoted(s)
            }
            '`' => {
                let mut s = String::new();
                while let Some(&(_, c)) = chars.get(i) {
                    if c.is_alphanumeric() || c == '_' || c == '-' {
                        s.push(c);
                        i += 1;
                    } else {
                        break;
                    }
                }
                if s.is_empty() {
                    return Err(err(at, "a tag needs a name"));
                }
                Tok::Tag(s)
            }
            c if is_ident_start(c) => {
                let mut s = String::from(c);
                while let Some(&(_, c)) = chars.get(i) {
                    let after = chars.get(i + 1).map(|&(_, c)| c);
                    let ok = c.is_alphanumeric()
                        || c == '_'
                        || (c == '-'
                            && after != Some('>')
                            && after.is_some_and(char::is_alphanumeric));
                    if !ok || c == 'μ' {
                        break;
                    }
                    s.push(c);
                    i += 1;
                }
                match s.as_str() {
                    "forall" => Tok::Forall,
                    "mu" => Tok::Mu,
                    _ => Tok::Ident(s),
                }
            }
            _ => return Err(err(at, &format!("unexpected character `{c}`"))),
        };
        out.push((tok, at));
    }
    Ok(out)
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    /// A `forall` variable, created at its first use.
    Var { node: Option<u32>, kind: Kind },
    /// A name standing for an existing node (a μ binder or an alias parameter).
    Bound { node: u32, sort: Sort },
}

const TYPE_NAMES: &[&str] = &[
    "Unit", "Bool", "Int", "Integer", "Float", "String", "Bytes", "List", "Map", "Handle",
    "Returns", "Command",
];

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end: usize,
    out: &'a mut SchemeBuilder,
    scope: Vec<(String, Slot)>,
    aliases: &'a [Alias],
    depth: usize,
}

type Res<T> = Result<T, SigError>;

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn peek2(&self) -> Option<&Tok> {
        self.toks.get(self.pos + 1).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn err<T>(&self, message: impl Into<String>) -> Res<T> {
        Err(SigError {
            offset: self.offset(),
            message: message.into(),
        })
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|(t, _)| t.clone());
        self.pos += 1;
        t
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Res<()> {
        if self.peek() == Some(&tok) {
            self.pos += 1;
            Ok(())
        } else {
            self.err(format!("expected {what}"))
        }
    }

    fn con(&mut self, con: Con<u32>) -> u32 {
        self.out.push(SchemeNode::Con(con))
    }

    fn lookup(&self, name: &str) -> Option<(usize, Slot)> {
        self.scope
            .iter()
            .enumerate()
            .rev()
            .find(|(_, (n, _))| n == name)
            .map(|(i, (_, s))| (i, *s))
    }

    fn is_var(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }

    fn alias(&self, name: &str) -> Option<Alias> {
        self.aliases.iter().find(|a| a.name == name).copied()
    }

    /// Resolves a variable use at `sort`.
    fn var(&mut self, name: &str, sort: Sort) -> Res<u32> {
        let Some((i, slot)) = self.lookup(name) else {
            return self.err(format!("unbound type variable `{name}`"));
        };
        match slot {
            Slot::Bound { node, sort: s } if s == sort => Ok(node),
            Slot::Bound { sort: s, .. } => {
                self.err(format!("`{name}` is a {s} but is used as a {sort}"))
            }
            Slot::Var {
                node: Some(node), ..
            } => match self.out.node(node) {
                Some(SchemeNode::Var(v)) if v.sort == sort => Ok(node),
                Some(SchemeNode::Var(v)) => {
                    self.err(format!("`{name}` is a {} but is used as a {sort}", v.sort))
                }
                Some(_) | None => self.err("internal: variable node lost"),
            },
            Slot::Var { node: None, kind } => {
                if sort != Sort::Value && kind != Kind::ANY {
                    return self.err(format!("`{name}` has a kind but is used as a {sort}"));
                }
                let node = self.out.push(SchemeNode::Var(TyVar {
                    sort,
                    kind,
                    origin: None,
                }));
                self.out.quantified.push(TyVarId(node));
                if let Some(entry) = self.scope.get_mut(i) {
                    entry.1 = Slot::Var {
                        node: Some(node),
                        kind,
                    };
                }
                Ok(node)
            }
        }
    }

    fn scheme(&mut self) -> Res<u32> {
        if self.peek() == Some(&Tok::Forall) {
            self.pos += 1;
            while let Some(Tok::Ident(name)) = self.peek().cloned() {
                self.pos += 1;
                let kind = if self.peek() == Some(&Tok::Colon) {
                    self.pos += 1;
                    self.kind()?
                } else {
                    Kind::ANY
                };
                if self.lookup(&name).is_some() {
                    return self.err(format!("`{name}` is bound twice"));
                }
                self.scope.push((name, Slot::Var { node: None, kind }));
            }
            self.expect(Tok::Dot, "`.` after the quantified variables")?;
        }
        let root = self.comp()?;
        if let Some((name, _)) = self
            .scope
            .iter()
            .find(|(_, s)| matches!(s, Slot::Var { node: None, .. }))
        {
            return self.err(format!("`{name}` is quantified but never used"));
        }
        Ok(root)
    }

    fn kind(&mut self) -> Res<Kind> {
        let mut kind = Kind::ANY;
        loop {
            let part = match self.bump() {
                Some(Tok::Ident(name)) => match Kind::NAMED.iter().find(|(_, n)| *n == name) {
                    Some((k, _)) => *k,
                    None => return self.err(format!("unknown kind `{name}`")),
                },
                Some(Tok::LParen) => {
                    let mut heads = HeadSet(0);
                    loop {
                        let Some(Tok::Ident(name)) = self.bump() else {
                            return self.err("expected a head name");
                        };
                        let name = if name == "Int" { "Integer" } else { &name };
                        match HeadSet::NAMES.iter().find(|(_, n)| *n == name) {
                            Some((h, _)) => heads = heads.or(*h),
                            None => return self.err(format!("unknown head `{name}`")),
                        }
                        match self.bump() {
                            Some(Tok::Bar) => continue,
                            Some(Tok::RParen) => break,
                            Some(_) | None => return self.err("expected `|` or `)`"),
                        }
                    }
                    Kind::new(heads, false)
                }
                Some(_) | None => return self.err("expected a kind"),
            };
            kind = kind.meet(part);
            if self.peek() == Some(&Tok::Plus) {
                self.pos += 1;
            } else {
                break;
            }
        }
        if kind.is_empty() {
            return self.err("empty kind");
        }
        Ok(kind)
    }

    fn starts_atom(tok: Option<&Tok>) -> bool {
        matches!(
            tok,
            Some(Tok::Ident(_) | Tok::LBrack | Tok::LBrace | Tok::LAngle | Tok::LParen)
        )
    }

    fn binder(&mut self, sort: Sort) -> Res<u32> {
        self.pos += 1;
        let Some(Tok::Ident(name)) = self.bump() else {
            return self.err("expected a name after `μ`");
        };
        self.expect(Tok::Dot, "`.` after the μ binder")?;
        let node = self.out.push(SchemeNode::Con(Con::Error));
        self.scope.push((name, Slot::Bound { node, sort }));
        let body = if sort == Sort::Comp {
            self.comp()
        } else {
            self.value()
        };
        self.scope.pop();
        let body = body?;
        match self.out.node(body) {
            Some(n @ SchemeNode::Con(_)) => {
                self.out.set(node, n);
                Ok(node)
            }
            Some(_) | None => self.err("a μ type must be a constructor"),
        }
    }

    fn comp(&mut self) -> Res<u32> {
        match self.peek().cloned() {
            Some(Tok::Mu) => self.binder(Sort::Comp),
            Some(Tok::Ident(name)) if name == "Returns" => {
                self.pos += 1;
                let value = self.atom()?;
                let grade = self.con(Con::Pure);
                Ok(self.con(Con::Returns { grade, value }))
            }
            Some(Tok::Ident(name)) if name == "Command" => {
                self.pos += 1;
                let grade = self.con(Con::Write);
                let value = self.con(Con::Unit);
                Ok(self.con(Con::Returns { grade, value }))
            }
            Some(Tok::Ident(name)) if self.is_var(&name) && self.peek2() != Some(&Tok::Arrow) => {
                self.pos += 1;
                if Self::starts_atom(self.peek()) {
                    let grade = self.var(&name, Sort::Grade)?;
                    let value = self.atom()?;
                    Ok(self.con(Con::Returns { grade, value }))
                } else {
                    self.var(&name, Sort::Comp)
                }
            }
            Some(Tok::LParen) => {
                let save = self.pos;
                let save_len = self.out.nodes.len();
                self.pos += 1;
                if let Ok(c) = self.comp() {
                    if self.peek() == Some(&Tok::RParen) && self.peek2() != Some(&Tok::Arrow) {
                        self.pos += 1;
                        return Ok(c);
                    }
                }
                // Not a parenthesised computation: reparse as a parameter.
                self.pos = save;
                self.out.nodes.truncate(save_len);
                self.out.quantified.retain(|q| (q.0 as usize) < save_len);
                for (_, slot) in &mut self.scope {
                    if let Slot::Var {
                        node: Some(n),
                        kind,
                    } = *slot
                    {
                        if n as usize >= save_len {
                            *slot = Slot::Var { node: None, kind };
                        }
                    }
                }
                self.function()
            }
            Some(_) | None => self.function(),
        }
    }

    fn function(&mut self) -> Res<u32> {
        let param = self.value()?;
        self.expect(
            Tok::Arrow,
            "`->` (a value here must be a function's parameter)",
        )?;
        let result = self.comp()?;
        Ok(self.con(Con::Arrow { param, result }))
    }

    fn value(&mut self) -> Res<u32> {
        match self.peek().cloned() {
            Some(Tok::Mu) => self.binder(Sort::Value),
            Some(Tok::Ident(name)) if !self.is_var(&name) => match name.as_str() {
                "List" | "Map" | "Handle" => {
                    self.pos += 1;
                    let a = self.atom()?;
                    Ok(self.con(match name.as_str() {
                        "List" => Con::List(a),
                        "Map" => Con::Map(a),
                        _ => Con::Handle(a),
                    }))
                }
                _ => match self.alias(&name) {
                    Some(alias) if !alias.params.is_empty() => {
                        self.pos += 1;
                        self.expand(alias)
                    }
                    Some(_) | None => self.atom(),
                },
            },
            Some(_) | None => self.atom(),
        }
    }

    fn expand(&mut self, alias: Alias) -> Res<u32> {
        let mut args = Vec::new();
        for _ in alias.params {
            args.push(self.atom()?);
        }
        if self.depth > 32 {
            return self.err("aliases nest too deeply");
        }
        let toks = lex(alias.body)?;
        let scope = alias
            .params
            .iter()
            .zip(args)
            .map(|(p, node)| {
                (
                    (*p).to_owned(),
                    Slot::Bound {
                        node,
                        sort: Sort::Value,
                    },
                )
            })
            .collect();
        let mut sub = Parser {
            end: alias.body.len(),
            toks,
            pos: 0,
            out: &mut *self.out,
            scope,
            aliases: self.aliases,
            depth: self.depth + 1,
        };
        let node = sub.value()?;
        if sub.pos != sub.toks.len() {
            return sub.err(format!("trailing input in alias `{}`", alias.name));
        }
        Ok(node)
    }

    fn atom(&mut self) -> Res<u32> {
        match self.bump() {
            Some(Tok::Ident(name)) => {
                if self.is_var(&name) {
                    return self.var(&name, Sort::Value);
                }
                let con = match name.as_str() {
                    "Unit" => Con::Unit,
                    "Bool" => Con::Bool,
                    "Int" | "Integer" => Con::Int,
                    "Float" => Con::Float,
                    "String" => Con::String,
                    "Bytes" => Con::Bytes,
                    _ => {
                        if let Some(alias) = self.alias(&name) {
                            if alias.params.is_empty() {
                                return self.expand(alias);
                            }
                            self.pos -= 1;
                            return self
                                .err(format!("alias `{name}` takes arguments; parenthesise it"));
                        }
                        self.pos -= 1;
                        return if TYPE_NAMES.contains(&name.as_str()) {
                            self.err(format!("`{name}` needs parentheses here"))
                        } else {
                            self.err(format!("unknown type or unbound variable `{name}`"))
                        };
                    }
                };
                Ok(self.con(con))
            }
            Some(Tok::LParen) => {
                let v = self.value()?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(v)
            }
            Some(Tok::LBrace) => {
                let c = self.comp()?;
                self.expect(Tok::RBrace, "`}`")?;
                Ok(self.con(Con::Thunk(c)))
            }
            Some(Tok::LBrack) => self.bracket(),
            Some(Tok::LAngle) => self.variant(),
            Some(_) | None => {
                self.pos = self.pos.saturating_sub(1);
                self.err("expected a type")
            }
        }
    }

    fn label(&mut self) -> Option<Label> {
        match self.peek().cloned() {
            Some(Tok::Ident(s) | Tok::Quoted(s)) if self.peek2() == Some(&Tok::Colon) => {
                self.pos += 2;
                Some(Label::intern(&s))
            }
            Some(_) | None => None,
        }
    }

    fn tail(&mut self, alpha: Alphabet) -> Res<u32> {
        self.expect(Tok::DotDot, "`..`")?;
        let Some(Tok::Ident(name)) = self.bump() else {
            return self.err("expected a row variable after `..`");
        };
        self.var(&name, Sort::Row(alpha))
    }

    fn row(&mut self, alpha: Alphabet, fields: Vec<(Label, u32)>, tail: Option<u32>) -> Res<u32> {
        for (i, (l, _)) in fields.iter().enumerate() {
            if fields.iter().take(i).any(|(m, _)| m == l) {
                return self.err(format!("`{l}` appears twice"));
            }
        }
        let tail = match tail {
            Some(t) => t,
            None => self.con(Con::RowEmpty(alpha)),
        };
        if fields.is_empty() {
            return Ok(tail);
        }
        let range = self.out.push_fields(&fields);
        Ok(self.con(Con::Row {
            alphabet: alpha,
            fields: range,
            tail,
        }))
    }

    fn bracket(&mut self) -> Res<u32> {
        if self.peek() == Some(&Tok::Middot) {
            self.pos += 1;
            self.expect(Tok::RBrack, "`]`")?;
            let row = self.row(Alphabet::Field, Vec::new(), None)?;
            return Ok(self.con(Con::Record(row)));
        }
        let is_record = self.peek() == Some(&Tok::DotDot)
            || (matches!(self.peek(), Some(Tok::Ident(_) | Tok::Quoted(_)))
                && self.peek2() == Some(&Tok::Colon));
        if !is_record {
            let elem = self.value()?;
            self.expect(Tok::RBrack, "`]`")?;
            return Ok(self.con(Con::List(elem)));
        }
        let mut fields = Vec::new();
        let mut tail = None;
        loop {
            if self.peek() == Some(&Tok::DotDot) {
                tail = Some(self.tail(Alphabet::Field)?);
                break;
            }
            let Some(label) = self.label() else {
                return self.err("expected `label: type` or `..ρ`");
            };
            fields.push((label, self.value()?));
            if self.peek() == Some(&Tok::Comma) {
                self.pos += 1;
            } else {
                break;
            }
        }
        self.expect(Tok::RBrack, "`]`")?;
        let row = self.row(Alphabet::Field, fields, tail)?;
        Ok(self.con(Con::Record(row)))
    }

    fn variant(&mut self) -> Res<u32> {
        let mut tags = Vec::new();
        let mut tail = None;
        if self.peek() != Some(&Tok::RAngle) {
            loop {
                if self.peek() == Some(&Tok::DotDot) {
                    tail = Some(self.tail(Alphabet::Tag)?);
                    break;
                }
                let Some(Tok::Tag(name)) = self.bump() else {
                    self.pos -= 1;
                    return self.err("expected a `tag or `..ρ`");
                };
                let payload = if Self::starts_atom(self.peek()) {
                    self.atom()?
                } else {
                    self.con(Con::Unit)
                };
                tags.push((Label::intern(&name), payload));
                if self.peek() == Some(&Tok::Bar) {
                    self.pos += 1;
                } else {
                    break;
                }
            }
        }
        self.expect(Tok::RAngle, "`>`")?;
        let row = self.row(Alphabet::Tag, tags, tail)?;
        Ok(self.con(Con::Variant(row)))
    }
}

/// Parses a scheme using [`STANDARD_ALIASES`].
pub fn parse_scheme(src: &str) -> Result<Scheme, SigError> {
    parse_scheme_with(src, STANDARD_ALIASES)
}

/// Parses a scheme with the given aliases.
pub fn parse_scheme_with(src: &str, aliases: &[Alias]) -> Result<Scheme, SigError> {
    let mut out = SchemeBuilder::default();
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
        end: src.len(),
        out: &mut out,
        scope: Vec::new(),
        aliases,
        depth: 0,
    };
    let root = p.scheme()?;
    if p.pos != p.toks.len() {
        return p.err("trailing input");
    }
    Ok(out.finish(root))
}
