//! The AST printer behind `ralc --dump-ast` and the parser's snapshots.
//!
//! One node per line, two spaces of indentation per level, the node's kind
//! first, then its salient data (names and strings quoted with `{:?}`,
//! operators, redirect descriptors, the head's class), then `@start..end`.
//! Node ids are not printed, so renumbering never churns a snapshot.
//!
//! A chain of one pipeline and a pipeline of one stage print as that stage
//! alone; `chain` and `pipeline` lines appear only when there is a `?` or a
//! `|`. An atom in a role prints on one line as `role <atom>`, e.g.
//! `arg word "hi" @5..7`, with its children indented beneath.
//!
//! ```text
//! command @0..7
//!   head bare "echo" @0..4
//!   arg word "hi" @5..7
//! ```

use std::fmt::Write as _;

use crate::ast::{
    Arg, Atom, Block, Chain, Entry, Expr, ExprKind, Head, HeadClass, Key, ListItem, Pattern,
    PatternKind, Primary, Program, Quote, Redirect, RedirectKind, ScopeKind, Stage, StageKind,
    Stmt, StrLit, StrPart, UnOp,
};
use crate::span::Span;
use crate::walk::TailItem;

/// Prints `program` as an indented tree, one statement per top-level line.
pub fn dump_program(program: &Program) -> String {
    let mut p = Printer { out: String::new() };
    p.stmts(&program.stmts, 0);
    p.out
}

struct Printer {
    out: String,
}

impl Printer {
    fn line(&mut self, depth: usize, text: &str, span: Span) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        let _ = writeln!(self.out, " @{}..{}", span.start, span.end);
    }

    fn stmts(&mut self, stmts: &[Stmt], depth: usize) {
        for stmt in stmts {
            self.stmt(stmt, depth);
        }
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) {
        match stmt {
            Stmt::Let(binding) => {
                self.line(depth, "let", binding.span);
                self.pattern("pattern ", &binding.pattern, depth + 1);
                self.chain(&binding.value, depth + 1);
            }
            Stmt::Chain(chain) => self.chain(chain, depth),
            Stmt::Error(span) => self.line(depth, "error", *span),
        }
    }

    fn chain(&mut self, chain: &Chain, depth: usize) {
        let inner = if chain.alternatives.len() == 1 {
            depth
        } else {
            self.line(depth, "chain", chain.span);
            depth + 1
        };
        for pipeline in &chain.alternatives {
            let stage_depth = if pipeline.stages.len() == 1 {
                inner
            } else {
                self.line(inner, "pipeline", pipeline.span);
                inner + 1
            };
            for stage in &pipeline.stages {
                self.stage(stage, stage_depth);
            }
        }
    }

    fn stage(&mut self, stage: &Stage, depth: usize) {
        let d = depth + 1;
        match &stage.kind {
            StageKind::Return(value) => {
                self.line(depth, "return", stage.span);
                if let Some(atom) = value {
                    self.atom("value ", atom, d);
                }
            }
            StageKind::If(form) => {
                self.line(depth, "if", stage.span);
                for (i, branch) in form.branches.iter().enumerate() {
                    let kw = if i == 0 { "branch if" } else { "branch elsif" };
                    self.line(d, kw, branch.keyword);
                    self.atom("cond ", &branch.cond, d + 1);
                    self.atom("arm ", &branch.arm, d + 1);
                }
                if let Some(arm) = &form.else_arm {
                    self.atom("else ", arm, d);
                }
            }
            StageKind::Case(form) => {
                self.line(depth, "case", stage.span);
                self.atom("scrutinee ", &form.scrutinee, d);
                self.line(d, &format!("arms {}", form.arms.len()), form.arms_span);
                for arm in &form.arms {
                    self.line(d + 1, &format!("arm `{}", arm.tag.text), arm.span);
                    self.atom("", &arm.arm, d + 2);
                }
            }
            StageKind::Scope(form) => {
                let (kw, parts): (&str, Vec<(&str, &Atom)>) = match &form.kind {
                    ScopeKind::Try { body, handler } => {
                        ("try", vec![("body ", body), ("handler ", handler)])
                    }
                    ScopeKind::Guard { body, cleanup } => {
                        ("guard", vec![("body ", body), ("cleanup ", cleanup)])
                    }
                    ScopeKind::Within { options, body } => {
                        ("within", vec![("options ", options), ("body ", body)])
                    }
                    ScopeKind::Grant { caps, body } => {
                        ("grant", vec![("caps ", caps), ("body ", body)])
                    }
                    ScopeKind::Audit { body } => ("audit", vec![("body ", body)]),
                };
                self.line(depth, kw, stage.span);
                for (role, atom) in parts {
                    self.atom(role, atom, d);
                }
                for redirect in &form.redirects {
                    self.redirect(redirect, d);
                }
            }
            StageKind::Command(command) => {
                self.line(depth, "command", stage.span);
                match &command.head {
                    Head::Caret(name) => {
                        self.line(d, &format!("head caret {:?}", name.text), name.span)
                    }
                    Head::Atom(atom) => match command.head.class() {
                        HeadClass::Bare(w) => {
                            self.line(d, &format!("head bare {w:?}"), atom.span);
                            self.indexes(atom, d + 1);
                        }
                        HeadClass::Path(w) => {
                            self.line(d, &format!("head path {w:?}"), atom.span);
                            self.indexes(atom, d + 1);
                        }
                        HeadClass::Caret(w) => {
                            self.line(d, &format!("head caret {w:?}"), atom.span)
                        }
                        HeadClass::Value => self.atom("head value ", atom, d),
                    },
                }
                for item in command.tail() {
                    match item {
                        TailItem::Arg(Arg::Atom(atom)) => self.atom("arg ", atom, d),
                        TailItem::Arg(Arg::Spread { value, span }) => {
                            self.line(d, "spread", *span);
                            self.atom("", value, d + 1);
                        }
                        TailItem::Redirect(redirect) => self.redirect(redirect, d),
                    }
                }
            }
        }
    }

    fn redirect(&mut self, redirect: &Redirect, depth: usize) {
        let (op, target) = match &redirect.op {
            RedirectKind::Write(t) => (">".to_string(), Some(t)),
            RedirectKind::Stream(t) => (">~".to_string(), Some(t)),
            RedirectKind::Append(t) => (">>".to_string(), Some(t)),
            RedirectKind::Read(t) => ("<".to_string(), Some(t)),
            RedirectKind::Here(t) => ("<<".to_string(), Some(t)),
            RedirectKind::Dup { target } => (format!(">&{target}"), None),
        };
        let explicit = if redirect.explicit_fd {
            " explicit"
        } else {
            ""
        };
        self.line(
            depth,
            &format!("redirect {op} fd={}{explicit}", redirect.fd),
            redirect.span,
        );
        if let Some(target) = target {
            self.atom("", target, depth + 1);
        }
    }

    /// Prints `atom` as `role <kind and data> @span`, children beneath.
    fn atom(&mut self, role: &str, atom: &Atom, depth: usize) {
        let d = depth + 1;
        let head = match &atom.primary {
            Primary::Word(w) => format!("word {w:?}"),
            Primary::Int(n) => format!("int {n}"),
            Primary::Float(f) => format!("float {f:?}"),
            Primary::Bool(b) => format!("bool {b}"),
            Primary::Unit => "unit".to_string(),
            Primary::Str(lit) => str_head(lit),
            Primary::Var(name) => format!("var {:?}", name.text),
            Primary::Expr(_) => "expr".to_string(),
            Primary::Force(_) => "force".to_string(),
            Primary::Tag { name, .. } => format!("tag `{}", name.text),
            Primary::Block(block) => block_head(block),
            Primary::List(items) => format!("list {}", items.len()),
            Primary::Record(entries) => format!("record {}", entries.len()),
            Primary::Map(entries) => format!("map {}", entries.len()),
            Primary::Error => "error".to_string(),
        };
        self.line(depth, &format!("{role}{head}"), atom.span);
        match &atom.primary {
            Primary::Word(_)
            | Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Var(_)
            | Primary::Error => {}
            Primary::Str(lit) => {
                if lit.as_plain().is_none() || lit.parts.len() > 1 {
                    for part in &lit.parts {
                        match part {
                            StrPart::Text(t) => {
                                self.line(d, &format!("text {t:?}"), atom.span);
                            }
                            StrPart::Home => self.line(d, "home", atom.span),
                            StrPart::Splice(inner) => self.atom("splice ", inner, d),
                        }
                    }
                }
            }
            Primary::Expr(expr) => self.expr(expr, d),
            Primary::Force(inner) => self.atom("", inner, d),
            Primary::Tag { payload, .. } => {
                if let Some(payload) = payload {
                    self.atom("payload ", payload, d);
                }
            }
            Primary::Block(block) => {
                for param in &block.params {
                    self.pattern("param ", param, d);
                }
                self.stmts(&block.body.stmts, d);
            }
            Primary::List(items) => {
                for item in items {
                    match item {
                        ListItem::Item(inner) => self.atom("item ", inner, d),
                        ListItem::Spread { value, span } => {
                            self.line(d, "spread", *span);
                            self.atom("", value, d + 1);
                        }
                    }
                }
            }
            Primary::Record(entries) | Primary::Map(entries) => {
                for entry in entries {
                    match entry {
                        Entry::Field { key, value, span } => {
                            let key = match key {
                                Key::Static(n) => format!("field {:?}", n.text),
                                Key::Computed(n) => format!("field ${}", n.text),
                            };
                            self.line(d, &key, *span);
                            self.atom("", value, d + 1);
                        }
                        Entry::Spread { value, span } => {
                            self.line(d, "spread", *span);
                            self.atom("", value, d + 1);
                        }
                    }
                }
            }
        }
        self.indexes(atom, d);
    }

    fn indexes(&mut self, atom: &Atom, depth: usize) {
        for index in &atom.indexes {
            self.line(depth, "index", index.span);
            self.atom("", &index.key, depth + 1);
        }
    }

    /// An explicit stack: a long operator chain is a deep left spine.
    fn expr(&mut self, expr: &Expr, depth: usize) {
        let mut stack = vec![(expr, depth)];
        while let Some((e, depth)) = stack.pop() {
            let d = depth + 1;
            match &e.kind {
                ExprKind::Atom(atom) => self.atom("", atom, depth),
                ExprKind::Unary { op, operand } => {
                    let op = match op {
                        UnOp::Neg => "-",
                        UnOp::Not => "not",
                    };
                    self.line(depth, &format!("unary {op}"), e.span);
                    stack.push((operand, d));
                }
                ExprKind::Binary { op, lhs, rhs } => {
                    self.line(depth, &format!("binary {}", op.spelling()), e.span);
                    stack.push((rhs, d));
                    stack.push((lhs, d));
                }
                ExprKind::Paren(inner) => {
                    self.line(depth, "paren", e.span);
                    stack.push((inner, d));
                }
            }
        }
    }

    fn pattern(&mut self, role: &str, pattern: &Pattern, depth: usize) {
        let d = depth + 1;
        match &pattern.kind {
            PatternKind::Wildcard => self.line(depth, &format!("{role}wildcard"), pattern.span),
            PatternKind::Bind(name) => {
                self.line(depth, &format!("{role}bind {:?}", name.text), pattern.span)
            }
            PatternKind::List { items, rest } => {
                self.line(depth, &format!("{role}list {}", items.len()), pattern.span);
                for item in items {
                    self.pattern("", item, d);
                }
                if let Some(rest) = rest {
                    self.line(d, &format!("rest {:?}", rest.text), rest.span);
                }
            }
            PatternKind::Record { fields } => {
                self.line(
                    depth,
                    &format!("{role}record {}", fields.len()),
                    pattern.span,
                );
                for field in fields {
                    self.line(d, &format!("field {:?}", field.key.text), field.span);
                    self.pattern("", &field.pattern, d + 1);
                }
            }
            PatternKind::Error => self.line(depth, &format!("{role}error"), pattern.span),
        }
    }
}

fn str_head(lit: &StrLit) -> String {
    let quote = match lit.quote {
        Quote::Single { hashes: 0 } => "single".to_string(),
        Quote::Single { hashes } => format!("single#{hashes}"),
        Quote::Double => "double".to_string(),
    };
    match (&lit.as_plain(), lit.parts.len()) {
        (Some(text), 0 | 1) => format!("str {quote} {text:?}"),
        _ => format!("str {quote} parts {}", lit.parts.len()),
    }
}

fn block_head(block: &Block) -> String {
    if block.params.is_empty() {
        "block".to_string()
    } else {
        format!("block params {}", block.params.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::*;
    use crate::walk::build::*;

    #[test]
    fn simple_command() {
        let p = program(vec![command(
            word("echo", 0),
            vec![Arg::Atom(word("hi", 5))],
            Vec::new(),
            sp(0, 7),
        )]);
        assert_eq!(
            dump_program(&p),
            "command @0..7\n  head bare \"echo\" @0..4\n  arg word \"hi\" @5..7\n"
        );
    }

    #[test]
    fn let_with_block_expression_and_redirects() {
        // let f = { |[a, ...r]| echo $[-$a * 2] 2>&1 > out }
        let e = Expr {
            id: NodeId(0),
            kind: ExprKind::Binary {
                op: BinOp::Mul,
                lhs: Box::new(Expr {
                    id: NodeId(0),
                    kind: ExprKind::Unary {
                        op: UnOp::Neg,
                        operand: Box::new(Expr {
                            id: NodeId(0),
                            kind: ExprKind::Atom(var("a", 30)),
                            span: sp(30, 32),
                        }),
                    },
                    span: sp(29, 32),
                }),
                rhs: Box::new(Expr {
                    id: NodeId(0),
                    kind: ExprKind::Atom(atom(Primary::Int(2), sp(35, 36))),
                    span: sp(35, 36),
                }),
            },
            span: sp(29, 36),
        };
        let mut dup = redirect(2, RedirectKind::Dup { target: 1 }, sp(38, 42));
        dup.explicit_fd = true;
        let body = command(
            word("echo", 22),
            vec![Arg::Atom(atom(Primary::Expr(Box::new(e)), sp(27, 37)))],
            vec![
                dup,
                redirect(1, RedirectKind::Write(word("out", 45)), sp(43, 48)),
            ],
            sp(22, 48),
        );
        let param = pat(
            PatternKind::List {
                items: vec![bind("a", 12)],
                rest: Some(Name::new("r", sp(18, 19))),
            },
            sp(11, 20),
        );
        let value = chain_of(stage(
            StageKind::Command(Command {
                head: Head::Atom(block(vec![body], vec![param], sp(8, 50))),
                args: Vec::new(),
                redirects: Vec::new(),
            }),
            sp(8, 50),
        ));
        let p = program(vec![Stmt::Let(Let {
            pattern: bind("f", 4),
            value,
            span: sp(0, 50),
        })]);
        let expected = "\
let @0..50
  pattern bind \"f\" @4..5
  command @8..50
    head value block params 1 @8..50
      param list 1 @11..20
        bind \"a\" @12..13
        rest \"r\" @18..19
      command @22..48
        head bare \"echo\" @22..26
        arg expr @27..37
          binary * @29..36
            unary - @29..32
              var \"a\" @30..32
            int 2 @35..36
        redirect >&1 fd=2 explicit @38..42
        redirect > fd=1 @43..48
          word \"out\" @45..48
";
        assert_eq!(dump_program(&p), expected);
    }

    #[test]
    fn control_forms_and_collections() {
        let cond = var("c", 3);
        let arm = block(Vec::new(), Vec::new(), sp(6, 8));
        let if_stage = stage(
            StageKind::If(Box::new(If {
                branches: vec![IfBranch {
                    cond,
                    arm,
                    keyword: sp(0, 2),
                }],
                else_arm: Some(var("e", 14)),
            })),
            sp(0, 16),
        );
        let case = stage(
            StageKind::Case(Box::new(Case {
                scrutinee: var("v", 22),
                arms: vec![CaseArm {
                    tag: Name::new("ok", sp(26, 29)),
                    arm: var("h", 31),
                    span: sp(26, 33),
                }],
                arms_span: sp(25, 34),
            })),
            sp(17, 34),
        );
        let pipeline = Stmt::Chain(Chain {
            alternatives: vec![
                Pipeline {
                    stages: vec![if_stage, case],
                    span: sp(0, 34),
                },
                Pipeline {
                    stages: vec![stage(
                        StageKind::Return(Some(atom(
                            Primary::Record(vec![Entry::Field {
                                key: Key::Static(Name::new("k", sp(45, 46))),
                                value: atom(
                                    Primary::Str(StrLit {
                                        quote: Quote::Double,
                                        parts: vec![
                                            StrPart::Text("x ".into()),
                                            StrPart::Splice(var("y", 50)),
                                        ],
                                    }),
                                    sp(47, 53),
                                ),
                                span: sp(45, 53),
                            }]),
                            sp(44, 54),
                        ))),
                        sp(37, 54),
                    )],
                    span: sp(37, 54),
                },
            ],
            span: sp(0, 54),
        });
        let expected = "\
chain @0..54
  pipeline @0..34
    if @0..16
      branch if @0..2
        cond var \"c\" @3..5
        arm block @6..8
      else var \"e\" @14..16
    case @17..34
      scrutinee var \"v\" @22..24
      arms 1 @25..34
        arm `ok @26..33
          var \"h\" @31..33
  return @37..54
    value record 1 @44..54
      field \"k\" @45..53
        str double parts 2 @47..53
          text \"x \" @47..53
          splice var \"y\" @50..52
";
        assert_eq!(dump_program(&program(vec![pipeline])), expected);
    }

    #[test]
    fn long_operator_chains_print() {
        let n = 5_000u32;
        let leaf = |at: u32| Expr {
            id: NodeId(0),
            kind: ExprKind::Atom(atom(Primary::Int(1), sp(at, at + 1))),
            span: sp(at, at + 1),
        };
        let mut e = leaf(2);
        for i in 1..=n {
            e = Expr {
                id: NodeId(0),
                kind: ExprKind::Binary {
                    op: BinOp::Add,
                    lhs: Box::new(e),
                    rhs: Box::new(leaf(2 + 4 * i)),
                },
                span: sp(2, 3 + 4 * i),
            };
        }
        let p = program(vec![command(
            atom(Primary::Expr(Box::new(e)), sp(0, 4 * n + 4)),
            Vec::new(),
            Vec::new(),
            sp(0, 4 * n + 4),
        )]);
        // command, head, n binaries, n + 1 leaves
        assert_eq!(dump_program(&p).lines().count(), 2 * n as usize + 3);
        // The derived `Drop` of `Expr` recurses once per operator.
        std::mem::forget(p);
    }

    #[test]
    fn every_primary_prints() {
        let items = vec![
            ListItem::Item(word("w", 1)),
            ListItem::Item(atom(Primary::Int(-3), sp(1, 2))),
            ListItem::Item(atom(Primary::Float(1.5), sp(1, 2))),
            ListItem::Item(atom(Primary::Bool(true), sp(1, 2))),
            ListItem::Item(atom(Primary::Unit, sp(1, 2))),
            ListItem::Item(atom(
                Primary::Force(Box::new(block(Vec::new(), Vec::new(), sp(2, 4)))),
                sp(1, 4),
            )),
            ListItem::Item(atom(
                Primary::Tag {
                    name: Name::new("some", sp(1, 6)),
                    payload: Some(Box::new(atom(Primary::Int(1), sp(7, 8)))),
                },
                sp(1, 8),
            )),
            ListItem::Item(atom(Primary::Map(Vec::new()), sp(1, 4))),
            ListItem::Item(atom(Primary::Error, sp(1, 2))),
            ListItem::Spread {
                value: var("xs", 12),
                span: sp(9, 15),
            },
        ];
        let mut indexed = var("m", 20);
        indexed.indexes.push(Index {
            key: word("k", 23),
            span: sp(22, 25),
        });
        let p = program(vec![
            command(
                word("f", 0),
                vec![
                    Arg::Atom(atom(Primary::List(items), sp(0, 16))),
                    Arg::Spread {
                        value: indexed,
                        span: sp(17, 25),
                    },
                ],
                Vec::new(),
                sp(0, 25),
            ),
            Stmt::Error(sp(26, 27)),
        ]);
        let out = dump_program(&p);
        for needle in [
            "word \"w\"",
            "int -3",
            "float 1.5",
            "bool true",
            "unit",
            "force",
            "tag `some",
            "payload int 1",
            "map 0",
            "item error",
            "spread @9..15",
            "index @22..25",
            "error @26..27",
        ] {
            assert!(out.contains(needle), "missing {needle:?} in\n{out}");
        }
    }
}
