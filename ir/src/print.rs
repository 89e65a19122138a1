//! The text form of a module, for `ralc --emit=ir` and snapshots.
//!
//! One section per function (`main` first, then by id):
//!
//! ```text
//! func f1 name=add arity=2 captures=[l0] locals=5
//!   params l0 l1
//!   l2 = add.int l0 l1
//!   => l2
//! ```
//!
//! One statement per line, `lN = expr` or `_ = expr`; nested blocks are
//! indented under their statement and end with `=> result`. Operands print
//! as `l3` (local), `c0` (captured), `s1` (sibling), `g:name` / `g:name#def2`
//! (session / this turn's definition), `b:map` (builtin), `$SCRIPT`, `()`, and
//! constants as literals (`"text"`, `42`, `1.5`, `true`).

use std::fmt::Write;

use ral_types::builtin_table;

use crate::ir::{
    ArithOp, Block, CaptureFrom, CmpOp, Const, ExecHead, Expr, Func, IndexKind, InterpPart,
    MapPart, Module, NumKind, Operand, OrdKind, Part, Pat, Redirect, RedirectKind,
};

/// The module as text.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    if !m.defs.is_empty() {
        let defs: Vec<String> = m
            .defs
            .iter()
            .map(|d| format!("{}#def{}", d.name, d.id.0))
            .collect();
        let _ = writeln!(out, "defs {}", defs.join(" "));
    }
    let mut order: Vec<&Func> = m.funcs.iter().filter(|f| f.id == m.main).collect();
    order.extend(m.funcs.iter().filter(|f| f.id != m.main));
    for (i, f) in order.into_iter().enumerate() {
        if i > 0 || !m.defs.is_empty() {
            out.push('\n');
        }
        func(f, f.id == m.main, &mut out);
    }
    out
}

fn func(f: &Func, main: bool, out: &mut String) {
    let caps: Vec<String> = f
        .captures
        .iter()
        .map(|c| match c {
            CaptureFrom::Local(l) => format!("l{}", l.0),
            CaptureFrom::Captured(i) => format!("c{i}"),
            CaptureFrom::Sibling(i) => format!("s{i}"),
        })
        .collect();
    let name = match (&f.name, main) {
        (_, true) => " main".to_owned(),
        (Some(n), false) => format!(" name={n}"),
        (None, false) => String::new(),
    };
    let _ = writeln!(
        out,
        "func f{}{name} arity={} captures=[{}] locals={}",
        f.id.0,
        f.params.len(),
        caps.join(" "),
        f.n_locals
    );
    if !f.params.is_empty() {
        let ps: Vec<String> = f.params.iter().map(|l| format!("l{}", l.0)).collect();
        let _ = writeln!(out, "  params {}", ps.join(" "));
    }
    block(&f.body, 1, out);
}

fn indent(depth: usize, out: &mut String) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn block(b: &Block, depth: usize, out: &mut String) {
    for s in &b.stmts {
        indent(depth, out);
        match s.dst {
            Some(l) => {
                let _ = write!(out, "l{} = ", l.0);
            }
            None => out.push_str("_ = "),
        }
        expr(&s.expr, depth, out);
    }
    indent(depth, out);
    let _ = writeln!(out, "=> {}", op(&b.result));
}

/// A labelled nested block.
fn sub(label: &str, b: &Block, depth: usize, out: &mut String) {
    indent(depth + 1, out);
    let _ = writeln!(out, "{label}:");
    block(b, depth + 2, out);
}

fn op(o: &Operand) -> String {
    match o {
        Operand::Unit => "()".to_owned(),
        Operand::Const(c) => match c {
            Const::Bool(b) => b.to_string(),
            Const::Int(i) => i.to_string(),
            Const::Float(f) => format!("{f:?}"),
            Const::Str(s) => format!("{:?}", &**s),
        },
        Operand::Local(l) => format!("l{}", l.0),
        Operand::Captured(i) => format!("c{i}"),
        Operand::Global { name, def: None } => format!("g:{name}"),
        Operand::Global { name, def: Some(d) } => format!("g:{name}#def{}", d.0),
        Operand::Sibling(i) => format!("s{i}"),
        Operand::Builtin(id) => match builtin_table().entry(*id) {
            Some(b) => format!("b:{}", b.name),
            None => format!("b:#{}", id.0),
        },
        Operand::Script => "$SCRIPT".to_owned(),
    }
}

fn ops(os: &[Operand]) -> String {
    os.iter().map(op).collect::<Vec<_>>().join(" ")
}

fn parts(ps: &[Part]) -> String {
    ps.iter()
        .map(|p| match p {
            Part::One(o) => op(o),
            Part::Spread(o) => format!("...{}", op(o)),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn pat(p: &Pat) -> String {
    match p {
        Pat::Wildcard => "_".to_owned(),
        Pat::Bind(l) => format!("l{}", l.0),
        Pat::List { items, rest } => {
            let mut v: Vec<String> = items.iter().map(pat).collect();
            match rest {
                None => {}
                Some(None) => v.push("..._".to_owned()),
                Some(Some(l)) => v.push(format!("...l{}", l.0)),
            }
            format!("[{}]", v.join(", "))
        }
        Pat::Fields(fs) => {
            let v: Vec<String> = fs.iter().map(|(k, q)| format!("{k}: {}", pat(q))).collect();
            format!("[{}]", v.join(", "))
        }
    }
}

fn num(k: NumKind) -> &'static str {
    match k {
        NumKind::Int => "int",
        NumKind::Float => "float",
        NumKind::Generic => "num",
    }
}

fn redirects(rs: &[Redirect]) -> String {
    rs.iter()
        .map(|r| match &r.kind {
            RedirectKind::Write(o) => format!(" {}>{}", r.fd, op(o)),
            RedirectKind::Stream(o) => format!(" {}>~{}", r.fd, op(o)),
            RedirectKind::Append(o) => format!(" {}>>{}", r.fd, op(o)),
            RedirectKind::Read(o) => format!(" {}<{}", r.fd, op(o)),
            RedirectKind::Here(o) => format!(" {}<<{}", r.fd, op(o)),
            RedirectKind::ErrToOut => " 2>&1".to_owned(),
            RedirectKind::Dup(t) => format!(" {}>&{t}", r.fd),
        })
        .collect()
}

fn tail(t: bool) -> &'static str {
    if t {
        " tail"
    } else {
        ""
    }
}

fn expr(e: &Expr, depth: usize, out: &mut String) {
    let line = match e {
        Expr::Value(o) => op(o),
        Expr::Define { def, value } => format!("define #def{} {}", def.0, op(value)),
        Expr::Destructure { value, pattern } => {
            format!("destructure {} {}", op(value), pat(pattern))
        }
        Expr::MakeList(ps) => format!("list [{}]", parts(ps)),
        Expr::MakeRecord { base, fields } => {
            let mut v: Vec<String> = base.iter().map(|b| format!("...{}", op(b))).collect();
            v.extend(fields.iter().map(|(k, o)| format!("{k}: {}", op(o))));
            format!("record [{}]", v.join(", "))
        }
        Expr::MakeMap(ps) => {
            let v: Vec<String> = ps
                .iter()
                .map(|p| match p {
                    MapPart::Entry { key, value } => format!("{}: {}", op(key), op(value)),
                    MapPart::Spread(o) => format!("...{}", op(o)),
                })
                .collect();
            format!("map [{}]", v.join(", "))
        }
        Expr::MakeVariant { tag, payload } => match payload {
            Some(p) => format!("variant `{tag} {}", op(p)),
            None => format!("variant `{tag}"),
        },
        Expr::MakeClosure { func, captures } => {
            format!("closure f{} [{}]", func.0, ops(captures))
        }
        Expr::MakeRecGroup {
            funcs,
            captures,
            dsts,
        } => {
            let fs: Vec<String> = funcs.iter().map(|f| format!("f{}", f.0)).collect();
            let ds: Vec<String> = dsts.iter().map(|l| format!("l{}", l.0)).collect();
            format!(
                "recgroup [{}] [{}] -> [{}]",
                fs.join(" "),
                ops(captures),
                ds.join(" ")
            )
        }
        Expr::Interp(ps) => {
            let v: Vec<String> = ps
                .iter()
                .map(|p| match p {
                    InterpPart::Text(t) => format!("{:?}", &**t),
                    InterpPart::Home => "~".to_owned(),
                    InterpPart::Value(o) => op(o),
                })
                .collect();
            format!("interp [{}]", v.join(" "))
        }
        Expr::Index { base, key, kind } => {
            let k = match kind {
                IndexKind::List => "list".to_owned(),
                IndexKind::Field(f) => format!("field({f})"),
                IndexKind::Map => "map".to_owned(),
                IndexKind::Dynamic => "dyn".to_owned(),
            };
            format!("index.{k} {} {}", op(base), op(key))
        }
        Expr::Arith {
            op: o,
            kind,
            lhs,
            rhs,
        } => {
            let name = match o {
                ArithOp::Add => "add",
                ArithOp::Sub => "sub",
                ArithOp::Mul => "mul",
                ArithOp::Div => "div",
                ArithOp::Rem => "rem",
            };
            format!("{name}.{} {} {}", num(*kind), op(lhs), op(rhs))
        }
        Expr::Neg { kind, operand } => format!("neg.{} {}", num(*kind), op(operand)),
        Expr::Not(o) => format!("not {}", op(o)),
        Expr::Compare {
            op: o,
            kind,
            lhs,
            rhs,
        } => {
            let name = match o {
                CmpOp::Lt => "lt",
                CmpOp::Gt => "gt",
                CmpOp::Le => "le",
                CmpOp::Ge => "ge",
            };
            let k = match kind {
                OrdKind::Int => "int",
                OrdKind::Float => "float",
                OrdKind::Str => "str",
                OrdKind::Generic => "any",
            };
            format!("{name}.{k} {} {}", op(lhs), op(rhs))
        }
        Expr::Equal { lhs, rhs, negate } => {
            let name = if *negate { "ne" } else { "eq" };
            format!("{name} {} {}", op(lhs), op(rhs))
        }
        Expr::Call {
            func,
            args,
            tail: t,
        } => {
            format!("call {} ({}){}", op(func), ops(args), tail(*t))
        }
        Expr::CallSpread {
            func,
            args,
            tail: t,
        } => {
            format!("call {} ({}){}", op(func), parts(args), tail(*t))
        }
        Expr::Force { thunk, tail: t } => format!("force {}{}", op(thunk), tail(*t)),
        Expr::Exec {
            head,
            args,
            redirects: rs,
        } => {
            let h = match head {
                ExecHead::Name(n) => format!("name:{n}"),
                ExecHead::Base(id) => op(&Operand::Builtin(*id)).replacen("b:", "base:", 1),
                ExecHead::External(n) => format!("^{n}"),
                ExecHead::Path(o) => format!("path:{}", op(o)),
            };
            format!("exec {h} ({}){}", parts(args), redirects(rs))
        }
        Expr::If {
            cond,
            then,
            otherwise,
        } => {
            let _ = writeln!(out, "if {}", op(cond));
            sub("then", then, depth, out);
            sub("else", otherwise, depth, out);
            return;
        }
        Expr::Case { scrutinee, arms } => {
            let _ = writeln!(out, "case {}", op(scrutinee));
            for arm in arms {
                sub(
                    &format!("`{} l{}", arm.tag, arm.payload.0),
                    &arm.body,
                    depth,
                    out,
                );
            }
            return;
        }
        Expr::Chain(bs) => {
            let _ = writeln!(out, "chain");
            for b in bs {
                sub("alt", b, depth, out);
            }
            return;
        }
        Expr::Pipeline(bs) => {
            let _ = writeln!(out, "pipeline");
            for b in bs {
                sub("stage", b, depth, out);
            }
            return;
        }
        Expr::Try {
            body,
            error,
            handler,
        } => {
            let _ = writeln!(out, "try");
            sub("body", body, depth, out);
            sub(&format!("handler l{}", error.0), handler, depth, out);
            return;
        }
        Expr::Guard { body, cleanup } => {
            let _ = writeln!(out, "guard");
            sub("body", body, depth, out);
            sub("cleanup", cleanup, depth, out);
            return;
        }
        Expr::Within { options, body } => {
            let _ = writeln!(out, "within {}", op(options));
            sub("body", body, depth, out);
            return;
        }
        Expr::Grant { caps, body } => {
            let _ = writeln!(out, "grant {}", op(caps));
            sub("body", body, depth, out);
            return;
        }
        Expr::Audit { body } => {
            let _ = writeln!(out, "audit");
            sub("body", body, depth, out);
            return;
        }
        Expr::Redirected {
            body,
            redirects: rs,
        } => {
            let _ = writeln!(out, "redirected{}", redirects(rs));
            sub("body", body, depth, out);
            return;
        }
        Expr::Capture(body) => {
            let _ = writeln!(out, "capture");
            sub("body", body, depth, out);
            return;
        }
    };
    let _ = writeln!(out, "{line}");
}
