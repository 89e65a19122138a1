//! Admission sites: the type a program uses a boundary's result at, frozen
//! for the run time (spec §7.3 "Checked boundaries", §10.3, §17.3).
//!
//! A boundary (a decoder, `use`) gives its result one weak type for the
//! whole unit, which every use of the value fixes. Once the unit is solved
//! the checker freezes that type into an [`AdmitSite`]: a small arena of
//! nodes holding what a run can check of a value without types of its own —
//! each position's head, each free variable's kind, which positions a
//! record must have (and whether it may have more), and cycles as back
//! references. The VM admits the boundary's value against it before the
//! program sees it, and a mismatch names the position (an RFC 6901
//! pointer), what was found, what the program uses it as, and where.
//!
//! The site travels through the IR as text (its [`Display`] form, read back
//! by [`AdmitSite::parse`]), the argument of the hidden builtin `_admit`, so
//! the lowering, the compiler and the bytecode carry it as an ordinary
//! string constant and `ralc --emit=ir` shows it. The text is one node per
//! `;`-separated entry, node 0 the root, children referred to as `#n`:
//!
//! ```text
//! {"size": #1, ..};Int@34
//! ```
//!
//! is an open record (the program reads `size` and allows other fields)
//! whose `size` is an `Int`, used at byte 34 of the unit's source. A free
//! variable is `_` and its kind's head set in hex, `+` when deep, and `~n`
//! when it must agree.
//!
//! **Agreement.** A free variable whose kind admits numbers and text
//! (`comparable`) must get one of the two across the unit: every position of
//! the variable, in every decode of the run, is numbers or every one is
//! text (`~3` names variable 3 of the unit). A `number` variable likewise
//! agrees on `Int` or `Float`, since `+` takes two numbers of one kind.
//! The numbers belong to the unit, not to a site: two sites carry one
//! number exactly when they share the variable, and unrelated decodes
//! never constrain each other.

use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::ty::{Con, HeadSet, Kind, Label, Scheme, Sort, Ty, TyStore, TyView};

/// One node of an [`AdmitSite`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmitNode {
    Unit,
    Bool,
    Int,
    Float,
    String,
    Bytes,
    List(u32),
    Map(u32),
    /// A record: the fields the program uses; `open` when others may exist.
    Record {
        fields: Vec<(Arc<str>, u32)>,
        open: bool,
    },
    /// A variant: the tags the program knows; `open` when others may exist.
    Variant {
        tags: Vec<(Arc<str>, u32)>,
        open: bool,
    },
    /// A function or block (what `use` exports), with the computation
    /// node the program uses it at when the checker knew one. A value is
    /// checked for its head; a module's export is also held to that type
    /// ([`holds`]).
    Func(Option<u32>),
    Handle,
    /// `A -> C` inside a function's type: parameter and result nodes.
    Arrow(u32, u32),
    /// `F_ε A` inside a function's type: the grade (`Some(false)` for
    /// `Returns`, `Some(true)` for a command, `None` when a variable) and
    /// the value node.
    Returns(Option<bool>, u32),
    /// A computation variable inside a function's type.
    CompVar,
    /// A position no use decided: any value whose head the kind admits
    /// (and data all the way down when `deep`); `agree` numbers a variable
    /// whose positions must agree (see the module docs).
    Var {
        heads: HeadSet,
        deep: bool,
        agree: Option<u32>,
    },
}

/// A frozen boundary type: nodes with node 0 the root, and for each node
/// the byte offset (in the unit's source) of the use that fixed it, when
/// the checker knows one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmitSite {
    pub nodes: Vec<AdmitNode>,
    pub uses: Vec<Option<u32>>,
}

impl AdmitSite {
    /// The root node.
    pub fn root(&self) -> u32 {
        0
    }

    /// Node `i`.
    pub fn node(&self, i: u32) -> Option<&AdmitNode> {
        self.nodes.get(i as usize)
    }

    /// Where the use that fixed node `i` is, as a byte offset.
    pub fn use_at(&self, i: u32) -> Option<u32> {
        self.uses.get(i as usize).copied().flatten()
    }

    /// Whether no admission is needed: the root is a variable admitting
    /// every head of data (a decoder's result no use constrained; a
    /// boundary's value is data or, for `use`, any value).
    pub fn admits_anything(&self) -> bool {
        matches!(
            self.nodes.first(),
            Some(AdmitNode::Var { heads, agree: None, .. })
                if heads.and(HeadSet::DATA) == HeadSet::DATA
        )
    }

    /// What a position of node `i` is used as, for a message: "an Int",
    /// "text", "a record with `name`".
    pub fn describe(&self, i: u32) -> String {
        match self.node(i) {
            None => "a value".into(),
            Some(n) => match n {
                AdmitNode::Unit => "`()` (JSON null)".into(),
                AdmitNode::Bool => "a Bool".into(),
                AdmitNode::Int => "an Int".into(),
                AdmitNode::Float => "a Float".into(),
                AdmitNode::String => "text".into(),
                AdmitNode::Bytes => "bytes".into(),
                AdmitNode::List(_) => "a list".into(),
                AdmitNode::Map(_) => "a map".into(),
                AdmitNode::Record { fields, .. } => match fields.first() {
                    Some((k, _)) => format!("a record with `{k}`"),
                    None => "a record".into(),
                },
                AdmitNode::Variant { .. } => "a variant".into(),
                AdmitNode::Func(_) => "a function".into(),
                AdmitNode::Handle => "a handle".into(),
                AdmitNode::Var { heads, deep, .. } => describe_kind(*heads, *deep),
                AdmitNode::Arrow(..) | AdmitNode::Returns(..) | AdmitNode::CompVar => {
                    "a computation".into()
                }
            },
        }
    }

    /// Reads the [`Display`] form back.
    pub fn parse(text: &str) -> Result<AdmitSite, String> {
        let mut nodes = Vec::new();
        let mut uses = Vec::new();
        for (i, entry) in split_top(text, ';').into_iter().enumerate() {
            let mut p = Parser {
                s: entry.as_bytes(),
                at: 0,
            };
            let node = p.node().map_err(|e| format!("node {i}: {e}"))?;
            let at = if p.eat(b'@') { Some(p.number()?) } else { None };
            if p.at != p.s.len() {
                return Err(format!("node {i}: unexpected text at {}", p.at));
            }
            nodes.push(node);
            uses.push(at);
        }
        let n = u32::try_from(nodes.len()).map_err(|_| "too many nodes".to_owned())?;
        if n == 0 {
            return Err("no nodes".into());
        }
        for node in &nodes {
            let ok = match node {
                AdmitNode::List(c) | AdmitNode::Map(c) | AdmitNode::Func(Some(c)) => *c < n,
                AdmitNode::Returns(_, c) => *c < n,
                AdmitNode::Arrow(p, r) => *p < n && *r < n,
                AdmitNode::Record { fields: cs, .. } | AdmitNode::Variant { tags: cs, .. } => {
                    cs.iter().all(|(_, c)| *c < n)
                }
                AdmitNode::Unit
                | AdmitNode::Bool
                | AdmitNode::Int
                | AdmitNode::Float
                | AdmitNode::String
                | AdmitNode::Bytes
                | AdmitNode::Func(None)
                | AdmitNode::Handle
                | AdmitNode::CompVar
                | AdmitNode::Var { .. } => true,
            };
            if !ok {
                return Err("a reference past the last node".into());
            }
        }
        Ok(AdmitSite { nodes, uses })
    }
}

/// A kind in words: "a number", "a number or text", "data".
pub fn describe_kind(heads: HeadSet, deep: bool) -> String {
    for (k, name) in [
        (Kind::NUMBER, "a number"),
        (Kind::COMPARABLE, "a number or text"),
        (Kind::SCALAR, "a scalar (Bool, number or text)"),
        (Kind::SIZED, "text, bytes, a list or a map"),
    ] {
        if k.heads == heads {
            return name.into();
        }
    }
    if deep {
        "data (no functions or handles)".into()
    } else {
        "a value of another kind".into()
    }
}

impl fmt::Display for AdmitSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, node) in self.nodes.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            match node {
                AdmitNode::Unit => f.write_str("Unit")?,
                AdmitNode::Bool => f.write_str("Bool")?,
                AdmitNode::Int => f.write_str("Int")?,
                AdmitNode::Float => f.write_str("Float")?,
                AdmitNode::String => f.write_str("String")?,
                AdmitNode::Bytes => f.write_str("Bytes")?,
                AdmitNode::List(c) => write!(f, "[#{c}]")?,
                AdmitNode::Map(c) => write!(f, "Map #{c}")?,
                AdmitNode::Record { fields, open } => {
                    write_entries(f, '{', '}', fields, *open)?;
                }
                AdmitNode::Variant { tags, open } => write_entries(f, '<', '>', tags, *open)?,
                AdmitNode::Func(None) => f.write_str("Fn")?,
                AdmitNode::Func(Some(c)) => write!(f, "Fn #{c}")?,
                AdmitNode::Handle => f.write_str("Handle")?,
                AdmitNode::Arrow(p, r) => write!(f, "#{p} -> #{r}")?,
                AdmitNode::Returns(grade, v) => {
                    let g = match grade {
                        Some(false) => "Ret",
                        Some(true) => "Cmd",
                        None => "Ret?",
                    };
                    write!(f, "{g} #{v}")?;
                }
                AdmitNode::CompVar => f.write_str("C?")?,
                AdmitNode::Var { heads, deep, agree } => {
                    write!(f, "_{:x}", heads.0)?;
                    if *deep {
                        f.write_str("+")?;
                    }
                    if let Some(a) = agree {
                        write!(f, "~{a}")?;
                    }
                }
            }
            if let Some(at) = self.uses.get(i).copied().flatten() {
                write!(f, "@{at}")?;
            }
        }
        Ok(())
    }
}

fn write_entries(
    f: &mut fmt::Formatter<'_>,
    open_c: char,
    close_c: char,
    entries: &[(Arc<str>, u32)],
    open: bool,
) -> fmt::Result {
    write!(f, "{open_c}")?;
    for (i, (k, c)) in entries.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_quoted(f, k)?;
        write!(f, ": #{c}")?;
    }
    if open {
        if !entries.is_empty() {
            f.write_str(", ")?;
        }
        f.write_str("..")?;
    }
    write!(f, "{close_c}")
}

fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// Splits `text` at `sep` outside double quotes.
fn split_top(text: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut escaped = false;
    for c in text.chars() {
        if quoted {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                quoted = false;
            }
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            if c == '"' {
                quoted = true;
            }
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// Keyed children of a record or variant node.
type Entries = Vec<(Arc<str>, u32)>;

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_str(&mut self, w: &str) -> bool {
        if self.s.get(self.at..self.at + w.len()) == Some(w.as_bytes()) {
            self.at += w.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected `{}` at {}", c as char, self.at))
        }
    }

    fn number(&mut self) -> Result<u32, String> {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        std::str::from_utf8(self.s.get(start..self.at).unwrap_or_default())
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("expected a number at {start}"))
    }

    fn reference(&mut self) -> Result<u32, String> {
        self.expect(b'#')?;
        self.number()
    }

    fn node(&mut self) -> Result<AdmitNode, String> {
        if self.eat_str("Fn") {
            if self.eat(b' ') {
                return Ok(AdmitNode::Func(Some(self.reference()?)));
            }
            return Ok(AdmitNode::Func(None));
        }
        for (w, grade) in [("Ret? ", None), ("Ret ", Some(false)), ("Cmd ", Some(true))] {
            if self.eat_str(w) {
                return Ok(AdmitNode::Returns(grade, self.reference()?));
            }
        }
        if self.eat_str("C?") {
            return Ok(AdmitNode::CompVar);
        }
        if self.peek() == Some(b'#') {
            let p = self.reference()?;
            if !self.eat_str(" -> ") {
                return Err(format!("expected ` -> ` at {}", self.at));
            }
            return Ok(AdmitNode::Arrow(p, self.reference()?));
        }
        for (w, n) in [
            ("Unit", AdmitNode::Unit),
            ("Bool", AdmitNode::Bool),
            ("Int", AdmitNode::Int),
            ("Float", AdmitNode::Float),
            ("String", AdmitNode::String),
            ("Bytes", AdmitNode::Bytes),
            ("Handle", AdmitNode::Handle),
        ] {
            if self.eat_str(w) {
                return Ok(n);
            }
        }
        if self.eat_str("Map ") {
            return Ok(AdmitNode::Map(self.reference()?));
        }
        if self.eat(b'[') {
            let c = self.reference()?;
            self.expect(b']')?;
            return Ok(AdmitNode::List(c));
        }
        if self.eat(b'{') {
            let (fields, open) = self.entries(b'}')?;
            return Ok(AdmitNode::Record { fields, open });
        }
        if self.eat(b'<') {
            let (tags, open) = self.entries(b'>')?;
            return Ok(AdmitNode::Variant { tags, open });
        }
        if self.eat(b'_') {
            let start = self.at;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.at += 1;
            }
            let hex = std::str::from_utf8(self.s.get(start..self.at).unwrap_or_default())
                .map_err(|e| e.to_string())?;
            let heads = u16::from_str_radix(hex, 16).map_err(|e| format!("kind: {e}"))?;
            let deep = self.eat(b'+');
            let agree = if self.eat(b'~') {
                Some(self.number()?)
            } else {
                None
            };
            return Ok(AdmitNode::Var {
                heads: HeadSet(heads),
                deep,
                agree,
            });
        }
        Err(format!("unknown node at {}", self.at))
    }

    fn entries(&mut self, close: u8) -> Result<(Entries, bool), String> {
        let mut out = Vec::new();
        let mut open = false;
        loop {
            if self.eat(close) {
                return Ok((out, open));
            }
            if !out.is_empty() || open {
                self.expect(b',')?;
                self.eat(b' ');
            }
            if self.eat_str("..") {
                open = true;
                continue;
            }
            let key = self.quoted()?;
            self.expect(b':')?;
            self.eat(b' ');
            let c = self.reference()?;
            out.push((Arc::from(key.as_str()), c));
        }
    }

    fn quoted(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err("unterminated key".into()),
                Some(b'"') => {
                    self.at += 1;
                    break;
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = self.peek().ok_or("unterminated escape")?;
                    out.push(c);
                    self.at += 1;
                }
                Some(c) => {
                    out.push(c);
                    self.at += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }
}

/// Freezes the solved value type `t` (see the module docs). `use_at` gives
/// the byte offset of the use that fixed a node, where known. Cycles become
/// back references; a type larger than a few thousand nodes is cut off with
/// unconstrained positions (admission then checks less, never more).
/// `agree` numbers the variables that must agree; the caller keeps it for
/// the whole unit, so every site of the unit numbers one variable alike.
pub(crate) fn freeze(
    store: &TyStore,
    t: Ty,
    use_at: &dyn Fn(Ty) -> Option<u32>,
    agree: &mut FxHashMap<Ty, u32>,
) -> AdmitSite {
    let mut f = Freezer {
        store,
        use_at,
        site: AdmitSite {
            nodes: Vec::new(),
            uses: Vec::new(),
        },
        seen: FxHashMap::default(),
        agree,
    };
    f.node(t);
    f.site
}

const MAX_NODES: usize = 4096;

struct Freezer<'a> {
    store: &'a TyStore,
    use_at: &'a dyn Fn(Ty) -> Option<u32>,
    site: AdmitSite,
    /// Each type node already given an index (shared positions and cycles
    /// refer to it).
    seen: FxHashMap<Ty, u32>,
    /// Agreement numbers of the variables that need one, for the unit.
    agree: &'a mut FxHashMap<Ty, u32>,
}

impl Freezer<'_> {
    fn push(&mut self, n: AdmitNode, at: Option<u32>) -> u32 {
        let i = u32::try_from(self.site.nodes.len()).unwrap_or(u32::MAX);
        self.site.nodes.push(n);
        self.site.uses.push(at);
        i
    }

    fn node(&mut self, t: Ty) -> u32 {
        let t = self.store.find_imm(t);
        if let Some(&i) = self.seen.get(&t) {
            return i;
        }
        let anything = AdmitNode::Var {
            heads: HeadSet::ALL,
            deep: false,
            agree: None,
        };
        if self.site.nodes.len() >= MAX_NODES {
            return self.push(anything, None);
        }
        let at = (self.use_at)(t);
        // Reserve the index first so a cycle back to `t` finds it.
        let i = self.push(AdmitNode::Unit, at);
        self.seen.insert(t, i);
        let node = match self.store.view(t) {
            TyView::Var(v, _) if v.sort != Sort::Value => AdmitNode::CompVar,
            TyView::Var(v, _) => {
                // A `number` or `comparable` variable: its positions must
                // agree (module docs). Wider kinds take any of their heads.
                let heads = v.kind.heads;
                let within = heads.and(Kind::COMPARABLE.heads) == heads;
                let needs = within && (heads.0 & Kind::COMPARABLE.heads.0).count_ones() >= 2;
                let agree = if needs {
                    let n = u32::try_from(self.agree.len()).unwrap_or(u32::MAX);
                    Some(*self.agree.entry(t).or_insert(n))
                } else {
                    None
                };
                AdmitNode::Var {
                    heads,
                    deep: v.kind.deep,
                    agree,
                }
            }
            TyView::Con(c) => match c {
                Con::Unit => AdmitNode::Unit,
                Con::Bool => AdmitNode::Bool,
                Con::Int => AdmitNode::Int,
                Con::Float => AdmitNode::Float,
                Con::String => AdmitNode::String,
                Con::Bytes => AdmitNode::Bytes,
                Con::List(e) => AdmitNode::List(self.node(e)),
                Con::Map(e) => AdmitNode::Map(self.node(e)),
                Con::Record(row) => {
                    let (fields, open) = self.row(row);
                    AdmitNode::Record { fields, open }
                }
                Con::Variant(row) => {
                    let (tags, open) = self.row(row);
                    AdmitNode::Variant { tags, open }
                }
                Con::Thunk(c) => AdmitNode::Func(Some(self.node(c))),
                Con::Handle(_) => AdmitNode::Handle,
                Con::Arrow { param, result } => {
                    let p = self.node(param);
                    AdmitNode::Arrow(p, self.node(result))
                }
                Con::Returns { grade, value } => {
                    let g = match self.store.view(grade) {
                        TyView::Con(Con::Pure) => Some(false),
                        TyView::Con(Con::Write) => Some(true),
                        TyView::Var(..) | TyView::Con(_) => None,
                    };
                    AdmitNode::Returns(g, self.node(value))
                }
                Con::RowEmpty(_) | Con::Row { .. } | Con::Pure | Con::Write | Con::Error => {
                    anything
                }
            },
        };
        if let Some(slot) = self.site.nodes.get_mut(i as usize) {
            *slot = node;
        }
        i
    }

    fn row(&mut self, row: Ty) -> (Vec<(Arc<str>, u32)>, bool) {
        let (fields, tail) = self.store.row_parts(row);
        let open = !matches!(self.store.view(tail), TyView::Con(Con::RowEmpty(_)));
        let mut out = Vec::with_capacity(fields.len());
        for (label, t) in fields {
            let c = self.node(t);
            out.push((Arc::from(label.as_str()), c));
        }
        (out, open)
    }
}

/// One step from a module's record to a position inside one export: a
/// field or map key, or a list index.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    Key(&'a str),
    Index,
}

/// Why an export does not hold: the module's type at the position and the
/// type the program uses it at, both printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub module: String,
    pub program: String,
}

/// Whether a module's export can be used at the type the program gives the
/// function node `node` of `site` (§10.3: each exported function is held to
/// the type the script uses it at). `export` is the export's closed scheme;
/// `path` leads from the export to the position, inside a record or list
/// it holds. The export is instantiated afresh and unified with the
/// program's type, whose free variables stand for what the program left
/// open (its boundary type is weak, so one type serves every use). A path
/// the export's type does not have, or a node with no type, holds: what is
/// not known is not refused.
pub fn holds(
    site: &AdmitSite,
    node: u32,
    export: &Scheme,
    path: &[Step<'_>],
) -> Result<(), Mismatch> {
    let mut store = TyStore::new();
    let mut at = store.instantiate(export);
    for step in path {
        let t = store.find(at);
        at = match (step, store.view(t)) {
            (Step::Key(k), TyView::Con(Con::Record(row))) => {
                let (fields, _) = store.row_parts(row);
                let label = Label::intern(k);
                match fields.iter().find(|(l, _)| *l == label) {
                    Some((_, f)) => *f,
                    None => return Ok(()),
                }
            }
            (Step::Key(_), TyView::Con(Con::Map(e))) | (Step::Index, TyView::Con(Con::List(e))) => {
                e
            }
            (Step::Key(_) | Step::Index, TyView::Var(..) | TyView::Con(_)) => return Ok(()),
        };
    }
    let mut memo = FxHashMap::default();
    let used = thaw(site, node, Sort::Value, &mut store, &mut memo);
    let module = crate::print::TyPrinter::new(&store).ty(at);
    let program = crate::print::TyPrinter::new(&store).ty(used);
    match store.unify(used, at) {
        Ok(()) => Ok(()),
        Err(_) => Err(Mismatch { module, program }),
    }
}

/// The type node `i` of `site` stands for, made in `store` (its variables
/// fresh, one per node, so a shared node is one variable). `sort` is what
/// the position holds; a node that cannot stand there is a fresh variable.
fn thaw(
    site: &AdmitSite,
    i: u32,
    sort: Sort,
    store: &mut TyStore,
    memo: &mut FxHashMap<u32, Ty>,
) -> Ty {
    if let Some(&t) = memo.get(&i) {
        return t;
    }
    let fresh = |store: &mut TyStore| match sort {
        Sort::Value => store.fresh_value(),
        Sort::Row(_) | Sort::Grade | Sort::Comp => store.fresh_comp(),
    };
    let Some(node) = site.node(i).cloned() else {
        return fresh(store);
    };
    let is_comp = matches!(
        node,
        AdmitNode::Arrow(..) | AdmitNode::Returns(..) | AdmitNode::CompVar
    );
    if is_comp != (sort == Sort::Comp) {
        return fresh(store);
    }
    // A placeholder first, so a cycle back to `i` finds a variable that
    // the finished type is then unified with.
    let hole = fresh(store);
    memo.insert(i, hole);
    let t = match node {
        AdmitNode::Unit => store.unit(),
        AdmitNode::Bool => store.bool(),
        AdmitNode::Int => store.int(),
        AdmitNode::Float => store.float(),
        AdmitNode::String => store.string(),
        AdmitNode::Bytes => store.bytes(),
        AdmitNode::List(e) => {
            let e = thaw(site, e, Sort::Value, store, memo);
            store.list(e)
        }
        AdmitNode::Map(e) => {
            let e = thaw(site, e, Sort::Value, store, memo);
            store.map(e)
        }
        AdmitNode::Record { fields, open } | AdmitNode::Variant { tags: fields, open } => {
            let variant = matches!(site.node(i), Some(AdmitNode::Variant { .. }));
            let entries: Vec<(Label, Ty)> = fields
                .iter()
                .map(|(k, c)| (Label::intern(k), thaw(site, *c, Sort::Value, store, memo)))
                .collect();
            let made = match (variant, open) {
                (false, false) => store.record(&entries),
                (false, true) => store.open_record(&entries),
                (true, false) => store.variant(&entries),
                (true, true) => store.open_variant(&entries),
            };
            match made {
                Some(t) => t,
                None => store.fresh_value(),
            }
        }
        AdmitNode::Func(c) => {
            let c = match c {
                Some(c) => thaw(site, c, Sort::Comp, store, memo),
                None => store.fresh_comp(),
            };
            store.thunk(c)
        }
        AdmitNode::Handle => {
            let v = store.fresh_value();
            store.handle(v)
        }
        AdmitNode::Var { heads, deep, .. } => store.fresh_kinded(Kind::new(heads, deep), None),
        AdmitNode::Arrow(p, r) => {
            let p = thaw(site, p, Sort::Value, store, memo);
            let r = thaw(site, r, Sort::Comp, store, memo);
            store.arrow(p, r)
        }
        AdmitNode::Returns(grade, v) => {
            let v = thaw(site, v, Sort::Value, store, memo);
            let g = match grade {
                Some(false) => store.mk(Con::Pure),
                Some(true) => store.mk(Con::Write),
                None => store.fresh_grade(),
            };
            store.returns_graded(g, v)
        }
        AdmitNode::CompVar => store.fresh_comp(),
    };
    // Ties a cycle: the placeholder is the finished type.
    let _ = store.unify(hole, t);
    t
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_reads_back() {
        let site = AdmitSite {
            nodes: vec![
                AdmitNode::Record {
                    fields: vec![(Arc::from("size"), 1), (Arc::from("a \"q\" b"), 2)],
                    open: true,
                },
                AdmitNode::Int,
                AdmitNode::List(3),
                AdmitNode::Var {
                    heads: Kind::COMPARABLE.heads,
                    deep: false,
                    agree: Some(0),
                },
            ],
            uses: vec![None, Some(34), None, Some(7)],
        };
        let text = site.to_string();
        assert_eq!(
            text,
            r#"{"size": #1, "a \"q\" b": #2, ..};Int@34;[#3];_1c~0@7"#
        );
        assert_eq!(AdmitSite::parse(&text), Ok(site));
        let cyclic = AdmitSite::parse("Map #1;[#0]").unwrap();
        assert_eq!(cyclic.nodes, vec![AdmitNode::Map(1), AdmitNode::List(0)]);
        assert!(AdmitSite::parse("[#5]").is_err());
        assert!(AdmitSite::parse("").is_err());
        assert_eq!(
            AdmitSite::parse("_fff+").unwrap().nodes,
            vec![AdmitNode::Var {
                heads: HeadSet::ALL,
                deep: true,
                agree: None
            }]
        );
    }
}
