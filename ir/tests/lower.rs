//! Lowering tests: every corpus program that checks cleanly lowers without
//! panicking and satisfies the IR's structural invariants, and snapshots of
//! the printed IR of small programs (`----- SOURCE` / `----- OUTPUT`).

#![allow(clippy::wildcard_enum_match_arm, clippy::collapsible_match)]

use std::path::{Path, PathBuf};

use ral_ir::{
    print_module, referenced_names, try_lower, Block, Expr, FuncId, InterpPart, LocalId, MapPart,
    Module, Operand, Part, Pat, RedirectKind,
};
use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};

/// Parses, checks and lowers `src`; `None` when it does not check cleanly.
fn lower_src(src: &str) -> Result<Module, String> {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    if parsed.has_errors() {
        return Err(format!("parse errors: {:?}", parsed.diagnostics));
    }
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    if checked.has_errors() {
        let msgs: Vec<String> = checked
            .diagnostics
            .iter()
            .map(|d| d.message.clone())
            .collect();
        return Err(format!("type errors: {msgs:?}"));
    }
    try_lower(&parsed.program, &checked, source).map_err(|e| format!("lowering: {e}"))
}

// ---- invariants ----------------------------------------------------------------

struct Inv<'a> {
    module: &'a Module,
    n_locals: u32,
    n_captures: usize,
    errors: Vec<String>,
    func: u32,
}

impl Inv<'_> {
    fn local(&mut self, l: LocalId) {
        if l.0 >= self.n_locals {
            self.errors.push(format!(
                "f{}: l{} >= n_locals {}",
                self.func, l.0, self.n_locals
            ));
        }
    }
    fn func_id(&mut self, f: FuncId) {
        if !self.module.funcs.iter().any(|g| g.id == f) {
            self.errors
                .push(format!("f{}: no function f{}", self.func, f.0));
        }
    }
    fn op(&mut self, o: &Operand) {
        match o {
            Operand::Local(l) => self.local(*l),
            Operand::Captured(i) => {
                if *i as usize >= self.n_captures {
                    self.errors.push(format!(
                        "f{}: c{i} >= {} captures",
                        self.func, self.n_captures
                    ));
                }
            }
            Operand::Global { def: Some(d), .. } => {
                if !self.module.defs.iter().any(|x| x.id == *d) {
                    self.errors.push(format!("f{}: no def #{}", self.func, d.0));
                }
            }
            _ => {}
        }
    }
    fn parts(&mut self, ps: &[Part]) {
        for p in ps {
            match p {
                Part::One(o) | Part::Spread(o) => self.op(o),
            }
        }
    }
    fn pat(&mut self, p: &Pat) {
        match p {
            Pat::Wildcard => {}
            Pat::Bind(l) => self.local(*l),
            Pat::List { items, rest } => {
                for q in items {
                    self.pat(q);
                }
                if let Some(Some(l)) = rest {
                    self.local(*l);
                }
            }
            Pat::Fields(fs) => {
                for (_, q) in fs {
                    self.pat(q);
                }
            }
        }
    }
    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            if let Some(d) = s.dst {
                self.local(d);
            }
            self.expr(&s.expr);
        }
        self.op(&b.result);
    }
    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Value(o) | Expr::Not(o) | Expr::Neg { operand: o, .. } => self.op(o),
            Expr::Define { def, value } => {
                if !self.module.defs.iter().any(|x| x.id == *def) {
                    self.errors
                        .push(format!("define of missing def #{}", def.0));
                }
                self.op(value);
            }
            Expr::Destructure { value, pattern } => {
                self.op(value);
                self.pat(pattern);
            }
            Expr::MakeList(ps) => self.parts(ps),
            Expr::MakeRecord { base, fields } => {
                if let Some(b) = base {
                    self.op(b);
                }
                for (_, v) in fields {
                    self.op(v);
                }
            }
            Expr::MakeMap(ps) => {
                for p in ps {
                    match p {
                        MapPart::Entry { key, value } => {
                            self.op(key);
                            self.op(value);
                        }
                        MapPart::Spread(o) => self.op(o),
                    }
                }
            }
            Expr::MakeVariant { payload, .. } => {
                if let Some(p) = payload {
                    self.op(p);
                }
            }
            Expr::MakeClosure { func, captures } => {
                self.func_id(*func);
                if let Some(f) = self.module.funcs.iter().find(|g| g.id == *func) {
                    if f.captures.len() != captures.len() {
                        self.errors
                            .push(format!("closure f{} capture count", func.0));
                    }
                }
                for c in captures {
                    self.op(c);
                }
            }
            Expr::MakeRecGroup {
                funcs,
                captures,
                dsts,
            } => {
                for f in funcs {
                    self.func_id(*f);
                }
                for c in captures {
                    self.op(c);
                }
                for d in dsts {
                    self.local(*d);
                }
            }
            Expr::Interp(ps) => {
                for p in ps {
                    if let InterpPart::Value(o) = p {
                        self.op(o);
                    }
                }
            }
            Expr::Index { base, key, .. } => {
                self.op(base);
                self.op(key);
            }
            Expr::Arith { lhs, rhs, .. }
            | Expr::Compare { lhs, rhs, .. }
            | Expr::Equal { lhs, rhs, .. } => {
                self.op(lhs);
                self.op(rhs);
            }
            Expr::Call { func, args, .. } => {
                self.op(func);
                for a in args {
                    self.op(a);
                }
            }
            Expr::CallSpread { func, args, .. } => {
                self.op(func);
                self.parts(args);
            }
            Expr::Force { thunk, .. } => self.op(thunk),
            Expr::Exec {
                head,
                args,
                redirects,
            } => {
                if let ral_ir::ExecHead::Path(o) = head {
                    self.op(o);
                }
                self.parts(args);
                for r in redirects {
                    match &r.kind {
                        RedirectKind::Write(o)
                        | RedirectKind::Stream(o)
                        | RedirectKind::Append(o)
                        | RedirectKind::Read(o)
                        | RedirectKind::Here(o) => self.op(o),
                        RedirectKind::ErrToOut | RedirectKind::Dup(_) => {}
                    }
                }
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                self.op(cond);
                self.block(then);
                self.block(otherwise);
            }
            Expr::Case { scrutinee, arms } => {
                self.op(scrutinee);
                for a in arms {
                    self.local(a.payload);
                    self.block(&a.body);
                }
            }
            Expr::Chain(bs) | Expr::Pipeline(bs) => {
                for b in bs {
                    self.block(b);
                }
            }
            Expr::Try {
                body,
                error,
                handler,
            } => {
                self.block(body);
                self.local(*error);
                self.block(handler);
            }
            Expr::Guard { body, cleanup } => {
                self.block(body);
                self.block(cleanup);
            }
            Expr::Within { options: o, body } | Expr::Grant { caps: o, body } => {
                self.op(o);
                self.block(body);
            }
            Expr::Audit { body } | Expr::Capture(body) => self.block(body),
            Expr::Redirected { body, .. } => self.block(body),
        }
    }
}

fn check_invariants(module: &Module) -> Vec<String> {
    let mut errors = Vec::new();
    for (i, f) in module.funcs.iter().enumerate() {
        if f.id.0 as usize != i {
            errors.push(format!("funcs[{i}] has id f{}", f.id.0));
        }
        let mut inv = Inv {
            module,
            n_locals: f.n_locals,
            n_captures: f.captures.len(),
            errors: Vec::new(),
            func: f.id.0,
        };
        for p in &f.params {
            inv.local(*p);
        }
        inv.block(&f.body);
        errors.extend(inv.errors);
    }
    if !module.funcs.iter().any(|f| f.id == module.main) {
        errors.push("no main".to_owned());
    }
    errors
}

fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["tests/syntax/ok", "examples"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("corpus directory");
        for e in entries {
            let p = e.expect("dir entry").path();
            if p.extension().is_some_and(|x| x == "ral") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn corpus_lowers_with_invariants() {
    let mut lowered = 0;
    let mut failures = Vec::new();
    for path in corpus() {
        let src = std::fs::read_to_string(&path).expect("readable corpus file");
        match lower_src(&src) {
            Err(e) if e.starts_with("lowering: ") => {
                failures.push(format!("{}: {e}", path.display()))
            }
            Ok(module) => {
                lowered += 1;
                for e in check_invariants(&module) {
                    failures.push(format!("{}: {e}", path.display()));
                }
                // The printer and the name walk must not panic either.
                let _ = print_module(&module);
                let _ = referenced_names(&module);
            }
            // A file the checker rejects is not this crate's to lower.
            Err(e) => eprintln!("skipped {}: {e}", path.display()),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(lowered >= 30, "only {lowered} corpus files lowered");
}

// ---- snapshots -------------------------------------------------------------------

fn snap(name: &str, src: &str) {
    let module = match lower_src(src) {
        Ok(m) => m,
        Err(e) => panic!("{name}: {e}"),
    };
    let errors = check_invariants(&module);
    assert!(errors.is_empty(), "{name}: {errors:?}");
    let body = format!(
        "----- SOURCE\n{}\n----- OUTPUT\n{}",
        src.trim_end(),
        print_module(&module)
    );
    insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
        insta::assert_snapshot!(name, body);
    });
}

#[test]
fn snapshot_literals_and_strings() {
    snap(
        "literals_and_strings",
        "let n = 42\nlet f = 1.5\nlet ok = true\nlet w = 'word'\nlet s = \"n is $n at ~ or $[$n + 1]\"\nlet h = ~/bin/x\nlet t = \"~/notes/$w\"\nlet u = ()\n",
    );
}

#[test]
fn snapshot_data() {
    snap(
        "data",
        "let xs = [1, ...[2, 3]]\nlet r = [a: 1, b: 'x']\nlet r2 = [...$r, a: 2]\nlet k = 'key'\nlet m = [$k: 1, other: 2]\nlet m2 = [:, ...$m, z: 3]\nlet v = `some 3\nlet e = `none\nlet i = $xs[0]\nlet j = $r[b]\nlet q = $m[$k]\n",
    );
}

#[test]
fn snapshot_closures_and_captures() {
    snap(
        "closures_and_captures",
        "let base = 10\nlet make = { |a|\n  let inc = { |b| return $[$a + $b + $base] }\n  return $inc\n}\nlet add = { |x y| return $[$x + $y] }\nlet three = add 1 2\nlet g = !{make 1}\n",
    );
}

#[test]
fn snapshot_local_recursion() {
    snap(
        "local_recursion",
        "let parity = { |k|\n  let even = { |n| if $[$n == 0] { return true } else { odd $[$n - 1] } }\n  let odd = { |n| if $[$n == 0] { return false } else { even $[$n - 1] } }\n  even $k\n}\nlet fact = { |n| if $[$n <= 1] { return 1 } else { return $[$n * !{fact $[$n - 1]}] } }\n",
    );
}

#[test]
fn snapshot_patterns() {
    snap(
        "patterns",
        "let [a, b, ...rest] = [1, 2, 3]\nlet [x: p, y: [q, ..._]] = [x: 1, y: [2, 3]]\nlet f = { |[m, n]| return $[$m + $n] }\nlet _ = $a\n",
    );
}

#[test]
fn snapshot_if_and_case() {
    snap(
        "if_and_case",
        "let n = 3\nlet yes = { return 'big' }\nlet size = if $[$n > 10] $yes elsif $[$n > 2] { return 'mid' } else { return 'small' }\nlet v = `some $n\nlet show = { |x| return \"got $x\" }\nlet out = case $v [`some: { |k| return \"k=$k\" }, `none: { return none }]\nlet out2 = case $v [`some: $show, `none: { return none }]\n",
    );
}

#[test]
fn snapshot_fallback_and_scopes() {
    snap(
        "fallback_and_scopes",
        "cat /nope ? echo fallback\ntry { cat /etc/hostname } { |err| echo \"failed: $err[message]\" }\nguard { echo working } { echo cleanup } > out.txt\nwithin [dir: /tmp] { ls }\ngrant [net: false] { echo ambient }\nlet r = audit { echo hi }\n",
    );
}

#[test]
fn snapshot_operators() {
    snap(
        "operators",
        "let a = 1.5\nlet i = 7\nlet s = 'abc'\nlet b = $[$a * 2.0 < 4.0 && not ($a == 1.5)]\nlet c = $[-$i % 3 >= 1 || $s < 'abd']\nlet d = $[$i != 2]\nlet e = $[-$a]\n",
    );
}

#[test]
fn snapshot_commands_and_captures() {
    snap(
        "commands_and_captures",
        "let out = echo hi\nlet n = !{echo x}\n^ls -l > out.txt 2>&1\n./run.sh a b | grep x\nlet f = { |x| echo $x }\nf y 2> err.txt\nlet xs = [a, b]\necho ...$xs\nlet got = map { |x| echo $x } $xs\n",
    );
}

#[test]
fn snapshot_blocks_forward_and_tail() {
    snap(
        "blocks_forward_and_tail",
        "let ping = { |n| if $[$n > 0] { pong $[$n - 1] } else { echo done } }\nlet pong = { |n| ping $n }\nping 3\nlet now = { date }\nnow\nlet l = length [1, 2]\nreturn $SCRIPT\n",
    );
}

#[test]
fn snapshot_local_scopes_and_sibling_captures() {
    snap(
        "local_scopes_and_sibling_captures",
        "let outer = { |k|\n  let step = 1\n  let down = { |n| if $[$n == 0] { return 0 } else { return !{down $[$n - $step]} } }\n  let plain = { |m| return $[$m + $k] }\n  let x = down $k\n  plain $x\n}\nlet y = 2\nlet y = $[$y + 1]\nlet z = $y\n",
    );
}

#[test]
fn snapshot_block_argument_captures() {
    snap(
        "block_argument_captures",
        "let shout = { |x| echo $x }\nlet got = map $shout [a, b]\nlet lit = map { |x| echo $x } [c]\n",
    );
}

#[test]
fn snapshot_forward_references_in_a_block() {
    // `even`/`odd` are one group although `step` stands between them; the
    // group is made after `step`, which `odd` captures. `show` refers to
    // `report`, defined after it: `report` is made first and `show`
    // captures it. The bare `greet` runs before its definition: it is made
    // before that statement.
    snap(
        "forward_references_in_a_block",
        "let run = { |k|\n  let even = { |n| if $[$n == 0] { return true } else { odd $[$n - 1] } }\n  let step = 1\n  let odd = { |n| if $[$n == 0] { return false } else { even $[$n - $step] } }\n  let show = { |b| report $b }\n  greet\n  let report = { |b| echo \"result $b\" }\n  let greet = { echo hello }\n  show !{even $k}\n}\n",
    );
}

#[test]
fn snapshot_forward_reference_run_too_early() {
    // `f` runs before `g` can be made (`g` needs `x`, bound later): the
    // statement sees a closure that fails saying so; the real `f` and `g`
    // are made once `x` is bound.
    snap(
        "forward_reference_run_too_early",
        "let run = {\n  let f = { g }\n  f\n  let x = 5\n  let g = { echo $x }\n  f\n}\n",
    );
}

#[test]
fn snapshot_index_kinds() {
    snap(
        "index_kinds",
        "let r = [a: 1, b: [c: 'deep']]\nlet m = [:, x: 10]\nlet deep = { |rec| return $rec[b][c] }\nlet one = $r[a]\nlet ten = $m[x]\nlet [head, ...rest] = [[a: 1], [a: 2]]\nlet two = $rest[0][a]\nlet v = `some [k: 'p']\nlet p = case $v [`some: { |x| return $x[k] }, `none: { return '' }]\nlet e = try { fail [status: 3, message: boom] } { |err| return $err[status] }\nlet q = !{ return [q: 5] }[q]\nlet key = 'x'\nlet viakey = $m[$key]\nlet second = { |xs| let i = 1; return $xs[$i] }\n",
    );
}
