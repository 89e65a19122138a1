//! Where `ralc --check` spends its time and memory, phase by phase.
//!
//! ```sh
//! cargo run --release -p ral-benches --example check_phases -- FILE
//! cargo run --release -p ral-benches --example check_phases -- FILE --tree
//! ```
//!
//! Runs what `ralc --check` runs (read, parse, check, with mimalloc as the
//! allocator) and prints each phase's wall time and the process's resident
//! set after it (`VmRSS`, and `VmHWM`, its peak so far). `--tree` also
//! prints a census of the syntax tree: how many of each heap allocation it
//! holds and their bytes (what was asked of the allocator, without its
//! rounding), the measure behind `benches/README.md`'s account of the tree.
//! The program must parse; its diagnostics are not printed.

use std::collections::BTreeMap;
use std::mem::size_of;
use std::time::Instant;

use ral_syntax::ast::*;
use ral_syntax::walk::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `VmRSS` and `VmHWM` of this process, in MB.
fn resident() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (kb("VmRSS:") / 1024.0, kb("VmHWM:") / 1024.0)
}

fn phase(name: &str, started: Instant) {
    let (rss, hwm) = resident();
    eprintln!(
        "{name:<8} {:>9.1} ms   rss {rss:>7.1} MB   peak {hwm:>7.1} MB",
        started.elapsed().as_secs_f64() * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: check_phases FILE [--tree]");
        std::process::exit(2);
    };
    let t = Instant::now();
    let src = match std::fs::read_to_string(path) {
        Ok(src) => src,
        Err(e) => {
            eprintln!("check_phases: cannot read {path}: {e}");
            std::process::exit(1);
        }
    };
    phase("read", t);
    let t = Instant::now();
    let parsed = ral_syntax::parse(&src, ral_syntax::SourceId(0));
    phase("parse", t);
    if parsed.has_errors() {
        eprintln!("check_phases: {path} does not parse");
        std::process::exit(1);
    }
    let t = Instant::now();
    let checked = ral_types::check_program(
        &parsed.program,
        ral_syntax::SourceId(0),
        &ral_types::TypeEnv::new(),
        &ral_types::CheckOptions { is_script: true },
    );
    phase("check", t);
    eprintln!(
        "         {} diagnostics, {} type nodes, {} bindings",
        checked.diagnostics.len(),
        checked.store.len(),
        checked.bindings.len()
    );
    let t = Instant::now();
    drop(checked);
    drop(parsed);
    phase("drop", t);
    if args.iter().any(|a| a == "--tree") {
        let parsed = ral_syntax::parse(&src, ral_syntax::SourceId(0));
        let mut census = Census::default();
        census.visit_program(&parsed.program);
        census.print();
    }
}

/// The syntax tree's heap allocations, by what they hold.
#[derive(Default)]
struct Census {
    kinds: BTreeMap<&'static str, (usize, usize)>,
}

impl Census {
    fn add(&mut self, what: &'static str, bytes: usize) {
        let entry = self.kinds.entry(what).or_default();
        entry.0 += 1;
        entry.1 += bytes;
    }

    fn list<T>(&mut self, what: &'static str, v: &[T], capacity: usize) {
        if capacity > 0 || !v.is_empty() {
            self.add(what, capacity.max(v.len()) * size_of::<T>());
        }
    }

    fn text(&mut self, what: &'static str, s: &String) {
        if s.capacity() > 0 {
            self.add(what, s.capacity());
        }
    }

    fn boxed<T>(&mut self, what: &'static str) {
        self.add(what, size_of::<T>());
    }

    fn print(&self) {
        let mut rows: Vec<_> = self.kinds.iter().collect();
        rows.sort_by_key(|(_, (_, bytes))| std::cmp::Reverse(*bytes));
        let total: usize = rows.iter().map(|(_, (_, b))| b).sum();
        eprintln!(
            "syntax tree: {:.1} MB in heap allocations",
            total as f64 / 1e6
        );
        for (what, (n, bytes)) in rows {
            eprintln!(
                "  {what:<18} {n:>9} x {:>5} B  {:>7.1} MB",
                bytes / n.max(&1),
                *bytes as f64 / 1e6
            );
        }
        eprintln!(
            "  (inline sizes: Stmt {} Stage {} Atom {} Expr {} Pattern {} Block {} B)",
            size_of::<Stmt>(),
            size_of::<Stage>(),
            size_of::<Atom>(),
            size_of::<Expr>(),
            size_of::<Pattern>(),
            size_of::<Block>()
        );
    }
}

impl Visitor for Census {
    fn visit_program(&mut self, p: &Program) {
        self.list("[Stmt]", &p.stmts, p.stmts.capacity());
        walk_program(self, p)
    }

    fn visit_chain(&mut self, c: &Chain) {
        self.list("[Pipeline]", &c.alternatives, c.alternatives.capacity());
        walk_chain(self, c)
    }

    fn visit_pipeline(&mut self, p: &Pipeline) {
        self.list("[Stage]", &p.stages, p.stages.capacity());
        walk_pipeline(self, p)
    }

    fn visit_stage(&mut self, s: &Stage) {
        match &s.kind {
            StageKind::If(f) => {
                self.boxed::<If>("If");
                self.list("[IfBranch]", &f.branches, f.branches.capacity());
            }
            StageKind::Case(c) => {
                self.boxed::<Case>("Case");
                self.list("[CaseArm]", &c.arms, c.arms.capacity());
            }
            StageKind::Scope(sc) => {
                self.boxed::<ScopeForm>("ScopeForm");
                self.list("[Redirect]", &sc.redirects, sc.redirects.capacity());
            }
            StageKind::Return(_) | StageKind::Command(_) => {}
        }
        walk_stage(self, s)
    }

    fn visit_command(&mut self, c: &Command) {
        self.list("[Arg]", &c.args, c.args.capacity());
        self.list("[Redirect]", &c.redirects, c.redirects.capacity());
        walk_command(self, c)
    }

    fn visit_atom(&mut self, a: &Atom) {
        self.list("[Index]", &a.indexes, a.indexes.capacity());
        match &a.primary {
            Primary::Word(w) => self.text("word text", w),
            Primary::Str(s) => {
                self.list("[StrPart]", &s.parts, s.parts.capacity());
                for part in &s.parts {
                    if let StrPart::Text(t) = part {
                        self.text("string text", t);
                    }
                }
            }
            Primary::Var(n) => self.text("name text", &n.text),
            Primary::Expr(_) => self.boxed::<Expr>("Expr"),
            Primary::Force(_) => self.boxed::<Atom>("Atom"),
            Primary::Tag { name, payload } => {
                self.text("name text", &name.text);
                if payload.is_some() {
                    self.boxed::<Atom>("Atom");
                }
            }
            Primary::Block(_) => self.boxed::<Block>("Block"),
            Primary::List(items) => self.list("[ListItem]", items, items.capacity()),
            Primary::Record(entries) | Primary::Map(entries) => {
                self.list("[Entry]", entries, entries.capacity());
                for entry in entries {
                    if let Entry::Field {
                        key: Key::Static(n) | Key::Computed(n),
                        ..
                    } = entry
                    {
                        self.text("name text", &n.text);
                    }
                }
            }
            Primary::Int(_)
            | Primary::Float(_)
            | Primary::Bool(_)
            | Primary::Unit
            | Primary::Error => {}
        }
        walk_atom(self, a)
    }

    fn visit_block(&mut self, b: &Block) {
        self.list("[Pattern]", &b.params, b.params.capacity());
        walk_block(self, b)
    }

    fn visit_expr(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Unary { .. } | ExprKind::Paren(_) => self.boxed::<Expr>("Expr"),
            ExprKind::Binary { .. } => {
                self.boxed::<Expr>("Expr");
                self.boxed::<Expr>("Expr");
            }
            ExprKind::Atom(_) => {}
        }
        walk_expr(self, e)
    }

    fn visit_pattern(&mut self, p: &Pattern) {
        match &p.kind {
            PatternKind::Bind(n) => self.text("name text", &n.text),
            PatternKind::List { items, .. } => self.list("[Pattern]", items, items.capacity()),
            PatternKind::Record { fields } => {
                self.list("[FieldPattern]", fields, fields.capacity())
            }
            PatternKind::Wildcard | PatternKind::Error => {}
        }
        walk_pattern(self, p)
    }
}
