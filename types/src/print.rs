//! The one type printer.
//!
//! Printed forms follow the spec (§17.3, §17.7): `Returns A`, `Command`,
//! `Integer`, `[A]` for lists, `Map A`, records `[name: String, ..ρ]`,
//! variants `` <`ok A | `err E> ``, thunks `{C}`, functions `A -> C`,
//! `Handle A`, weak variables `_α`, grade variables from `ν ξ ο π` (`ν A` is
//! `F_ν A`), quantifiers `∀α:number ν. …`, recursive types `μα. Map α`.
//!
//! Variables are named in order of first appearance. One [`TyPrinter`] keeps
//! its names across calls, so an expected and a found type printed by the same
//! printer agree on which variable is which. [`crate::sig`] parses this syntax
//! back.
//!
//! The empty closed record (which no literal can build) prints `[·]`; an empty
//! closed variant `<>`; a type already reported as an error `?`.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::hash::Hash;

use crate::ty::{Alphabet, Con, Label, Scheme, SchemeNode, Sort, Ty, TyStore, TyVar, TyView};

const ATOM: u8 = 0;
const APP: u8 = 1;
const ARROW: u8 = 2;

const GREEK: [&str; 18] = [
    "α", "β", "γ", "δ", "ζ", "η", "θ", "ι", "κ", "λ", "ρ", "σ", "τ", "υ", "φ", "χ", "ψ", "ω",
];
const GRADES: [&str; 4] = ["ν", "ξ", "ο", "π"];

/// What the printer sees of a node.
enum View<N> {
    Var { var: TyVar, weak: bool },
    Con(Con<N>),
}

/// A read-only graph of type nodes: a store or a scheme arena.
trait Graph {
    type N: Copy + Eq + Hash;
    fn view(&self, n: Self::N) -> View<Self::N>;
    /// The canonical handle of `n`, so one variable gets one name.
    fn canon(&self, n: Self::N) -> Self::N;
    fn row_fields(&self, con: &Con<Self::N>) -> Vec<(Label, Self::N)>;
}

struct StoreGraph<'s>(&'s TyStore);

impl Graph for StoreGraph<'_> {
    type N = Ty;

    fn view(&self, n: Ty) -> View<Ty> {
        match self.0.view(n) {
            TyView::Var(var, weak) => View::Var { var, weak },
            TyView::Con(con) => View::Con(con),
        }
    }

    fn canon(&self, n: Ty) -> Ty {
        self.0.find_imm(n)
    }

    fn row_fields(&self, con: &Con<Ty>) -> Vec<(Label, Ty)> {
        match con.children().1 {
            Some(range) => self.0.fields(range).to_vec(),
            None => Vec::new(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum SRef {
    Arena(u32),
    Store(Ty),
}

struct SchemeGraph<'s> {
    scheme: &'s Scheme,
    store: Option<&'s TyStore>,
}

impl Graph for SchemeGraph<'_> {
    type N = SRef;

    fn view(&self, n: SRef) -> View<SRef> {
        match n {
            SRef::Store(t) => match self.store {
                Some(store) => match StoreGraph(store).view(t) {
                    View::Var { var, weak } => View::Var { var, weak },
                    View::Con(con) => View::Con(con.map(|k| SRef::Store(store.find_imm(k)), None)),
                },
                None => View::Con(Con::Error),
            },
            SRef::Arena(i) => match self.scheme.node(i) {
                Some(SchemeNode::Var(var)) => View::Var { var, weak: false },
                Some(SchemeNode::Free(t)) => self.view(SRef::Store(t)),
                Some(SchemeNode::Con(con)) => View::Con(con.map(SRef::Arena, None)),
                None => View::Con(Con::Error),
            },
        }
    }

    fn canon(&self, n: SRef) -> SRef {
        match (n, self.store) {
            (SRef::Store(t), Some(store)) => SRef::Store(store.find_imm(t)),
            (SRef::Arena(i), Some(store)) => match self.scheme.node(i) {
                Some(SchemeNode::Free(t)) => SRef::Store(store.find_imm(t)),
                Some(SchemeNode::Var(_) | SchemeNode::Con(_)) | None => n,
            },
            (SRef::Store(_) | SRef::Arena(_), None) => n,
        }
    }

    fn row_fields(&self, con: &Con<SRef>) -> Vec<(Label, SRef)> {
        let Con::Row { fields, tail, .. } = *con else {
            return Vec::new();
        };
        match tail {
            SRef::Arena(_) => self
                .scheme
                .fields(fields)
                .iter()
                .map(|&(l, k)| (l, SRef::Arena(k)))
                .collect(),
            SRef::Store(_) => match self.store {
                Some(store) => store
                    .fields(fields)
                    .iter()
                    .map(|&(l, k)| (l, SRef::Store(store.find_imm(k))))
                    .collect(),
                None => Vec::new(),
            },
        }
    }
}

/// Naming state and cycle detection for one printing session.
struct Printer<G: Graph> {
    graph: G,
    names: HashMap<G::N, String>,
    order: Vec<G::N>,
    next_general: usize,
    next_grade: usize,
    on_path: HashSet<G::N>,
    hits: HashMap<G::N, usize>,
}

impl<G: Graph> Printer<G> {
    fn new(graph: G) -> Self {
        Printer {
            graph,
            names: HashMap::default(),
            order: Vec::new(),
            next_general: 0,
            next_grade: 0,
            on_path: HashSet::default(),
            hits: HashMap::default(),
        }
    }

    fn name(&mut self, n: G::N, grade: bool) -> String {
        if let Some(name) = self.names.get(&n) {
            return name.clone();
        }
        let (list, counter): (&[&str], &mut usize) = if grade {
            (&GRADES, &mut self.next_grade)
        } else {
            (&GREEK, &mut self.next_general)
        };
        let i = *counter;
        *counter += 1;
        let base = list.get(i % list.len()).copied().unwrap_or("α");
        let name = if i < list.len() {
            base.to_owned()
        } else {
            format!("{base}{}", i / list.len())
        };
        self.names.insert(n, name.clone());
        self.order.push(n);
        name
    }

    fn paren(s: String, prec: u8, max: u8) -> String {
        if prec > max {
            format!("({s})")
        } else {
            s
        }
    }

    /// Prints `n` in a context admitting precedence up to `max`.
    fn go(&mut self, n: G::N, max: u8) -> String {
        let n = self.graph.canon(n);
        match self.graph.view(n) {
            View::Var { var, weak } => {
                let name = self.name(n, var.sort == Sort::Grade);
                if weak {
                    format!("_{name}")
                } else {
                    name
                }
            }
            View::Con(con) => {
                let (kids, fields) = con.children();
                let leaf = kids.iter().all(Option::is_none) && fields.is_none();
                if leaf {
                    return self.con(n, con, max);
                }
                if self.on_path.contains(&n) {
                    *self.hits.entry(n).or_insert(0) += 1;
                    return self.name(n, false);
                }
                let before = self.hits.get(&n).copied().unwrap_or(0);
                self.on_path.insert(n);
                let body = self.con(n, con, ARROW);
                self.on_path.remove(&n);
                let after = self.hits.get(&n).copied().unwrap_or(0);
                if after > before {
                    let name = self.name(n, false);
                    Self::paren(format!("μ{name}. {body}"), ARROW, max)
                } else {
                    let prec = self.prec(&con);
                    if prec > max {
                        format!("({body})")
                    } else {
                        body
                    }
                }
            }
        }
    }

    fn prec(&self, con: &Con<G::N>) -> u8 {
        match con {
            Con::Map(_) | Con::Handle(_) => APP,
            Con::Returns { grade, value } => match self.graph.view(*grade) {
                View::Con(Con::Write) => match self.graph.view(*value) {
                    View::Con(Con::Unit) => ATOM,
                    View::Con(_) | View::Var { .. } => APP,
                },
                View::Con(_) | View::Var { .. } => APP,
            },
            Con::Arrow { .. } => ARROW,
            Con::Unit
            | Con::Bool
            | Con::Int
            | Con::Float
            | Con::String
            | Con::Bytes
            | Con::List(_)
            | Con::Record(_)
            | Con::Variant(_)
            | Con::Thunk(_)
            | Con::RowEmpty(_)
            | Con::Row { .. }
            | Con::Pure
            | Con::Write
            | Con::Error => ATOM,
        }
    }

    /// Prints a constructor; parenthesisation against `max` is the caller's
    /// job for non-leaves (they pass `ARROW`).
    fn con(&mut self, n: G::N, con: Con<G::N>, max: u8) -> String {
        let s = match con {
            Con::Unit => "Unit".to_owned(),
            Con::Bool => "Bool".to_owned(),
            Con::Int => "Integer".to_owned(),
            Con::Float => "Float".to_owned(),
            Con::String => "String".to_owned(),
            Con::Bytes => "Bytes".to_owned(),
            Con::Pure => "p".to_owned(),
            Con::Write => "w".to_owned(),
            Con::Error => "?".to_owned(),
            Con::List(a) => format!("[{}]", self.go(a, ARROW)),
            Con::Map(a) => format!("Map {}", self.go(a, ATOM)),
            Con::Handle(a) => format!("Handle {}", self.go(a, ATOM)),
            Con::Thunk(c) => format!("{{{}}}", self.go(c, ARROW)),
            Con::Record(r) => self.row(r, Alphabet::Field),
            Con::Variant(r) => self.row(r, Alphabet::Tag),
            Con::RowEmpty(alpha)
            | Con::Row {
                alphabet: alpha, ..
            } => self.row(n, alpha),
            Con::Returns { grade, value } => match self.graph.view(grade) {
                View::Con(Con::Write) => match self.graph.view(value) {
                    View::Con(Con::Unit) => "Command".to_owned(),
                    View::Con(_) | View::Var { .. } => {
                        format!("Command {}", self.go(value, ATOM))
                    }
                },
                View::Var { var, .. } if var.sort == Sort::Grade => {
                    let g = self.name(grade, true);
                    format!("{g} {}", self.go(value, ATOM))
                }
                View::Con(_) | View::Var { .. } => format!("Returns {}", self.go(value, ATOM)),
            },
            Con::Arrow { param, result } => {
                format!("{} -> {}", self.go(param, APP), self.go(result, ARROW))
            }
        };
        let prec = self.prec(&con);
        Self::paren(s, prec, max)
    }

    fn row(&mut self, row: G::N, alpha: Alphabet) -> String {
        let mut fields = Vec::new();
        let mut cur = self.graph.canon(row);
        let tail = loop {
            match self.graph.view(cur) {
                View::Con(con @ Con::Row { tail, .. }) => {
                    fields.extend(self.graph.row_fields(&con));
                    cur = self.graph.canon(tail);
                    if fields.len() > 100_000 {
                        break None;
                    }
                }
                View::Con(Con::RowEmpty(_)) => break None,
                View::Var { weak, .. } => {
                    let name = self.name(cur, false);
                    break Some(if weak { format!("_{name}") } else { name });
                }
                View::Con(_) => break Some("?".to_owned()),
            }
        };
        let mut parts: Vec<String> = Vec::with_capacity(fields.len() + 1);
        for (label, ty) in fields {
            let label = print_label(label);
            parts.push(match alpha {
                Alphabet::Field => format!("{label}: {}", self.go(ty, ARROW)),
                Alphabet::Tag => match self.graph.view(ty) {
                    View::Con(Con::Unit) => format!("`{label}"),
                    View::Con(_) | View::Var { .. } => format!("`{label} {}", self.go(ty, ATOM)),
                },
            });
        }
        if let Some(tail) = tail {
            parts.push(format!("..{tail}"));
        }
        match alpha {
            Alphabet::Field if parts.is_empty() => "[·]".to_owned(),
            Alphabet::Field => format!("[{}]", parts.join(", ")),
            Alphabet::Tag => format!("<{}>", parts.join(" | ")),
        }
    }
}

/// Prints a label bare when it reads back as one identifier, quoted otherwise.
pub fn print_label(label: Label) -> String {
    let s = label.as_str();
    let mut chars = s.chars();
    let ident = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && !s.ends_with('-');
    if ident {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// Prints types of one store with shared variable names (one per diagnostic).
pub struct TyPrinter<'s> {
    inner: Printer<StoreGraph<'s>>,
}

impl<'s> TyPrinter<'s> {
    /// A printer with no names assigned yet.
    pub fn new(store: &'s TyStore) -> Self {
        TyPrinter {
            inner: Printer::new(StoreGraph(store)),
        }
    }

    /// Prints `ty`, naming new variables after those already named.
    pub fn ty(&mut self, ty: Ty) -> String {
        let root = self.inner.graph.0.find_imm(ty);
        self.inner.go(root, ARROW)
    }
}

/// Prints one store type on its own.
pub fn print_ty(store: &TyStore, ty: Ty) -> String {
    TyPrinter::new(store).ty(ty)
}

/// Prints a scheme, `∀α:comparable ν. …`; `store` resolves the scheme's free
/// (monomorphic) parts and may be `None` for a closed scheme.
pub fn print_scheme(scheme: &Scheme, store: Option<&TyStore>) -> String {
    let mut p = Printer::new(SchemeGraph { scheme, store });
    let body = p.go(SRef::Arena(scheme.root()), ARROW);
    let quantified: HashSet<SRef> = scheme
        .quantified()
        .iter()
        .map(|id| SRef::Arena(id.0))
        .collect();
    for id in scheme.quantified() {
        let grade = scheme.var(*id).is_some_and(|v| v.sort == Sort::Grade);
        p.name(SRef::Arena(id.0), grade);
    }
    // Value, computation and row variables first, then grades (`∀α ν.`).
    let mut order = p.order.clone();
    order.sort_by_key(|n| match n {
        SRef::Arena(i) => scheme
            .node(*i)
            .is_some_and(|n| matches!(n, SchemeNode::Var(v) if v.sort == Sort::Grade)),
        SRef::Store(_) => false,
    });
    let mut binders = Vec::new();
    for n in order {
        if !quantified.contains(&n) {
            continue;
        }
        let SRef::Arena(i) = n else { continue };
        let name = p.name(n, false);
        match scheme.node(i) {
            Some(SchemeNode::Var(v)) if v.kind != crate::ty::Kind::ANY && v.sort == Sort::Value => {
                binders.push(format!("{name}:{}", v.kind));
            }
            Some(_) | None => binders.push(name),
        }
    }
    if binders.is_empty() {
        body
    } else {
        format!("∀{}. {body}", binders.join(" "))
    }
}
