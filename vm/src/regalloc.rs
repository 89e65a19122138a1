//! Where each local of a function lives while it runs: its *home*.
//!
//! The IR gives a function one flat set of locals, the A-normal form's
//! temporaries included, so a script of a thousand lines has thousands of
//! them, while an instruction names a register in one byte. Locals
//! therefore share registers, and the few that find none live in a spill
//! area.
//!
//! - **Liveness.** The body is walked in exactly the order the compiler
//!   emits it, and each statement gets a number. A local is live from its
//!   first mention to its last. A function's control flow is structured
//!   and acyclic (iteration is recursion, never a backward jump), so the
//!   emission order is a topological order of every path through it: once
//!   the walk is past a local's last mention, no path reads it again, and
//!   its register may hold another local.
//! - **No sharing within a statement.** A statement mentions its operands
//!   and its destination at its own number, and a statement with nested
//!   blocks mentions them again at the number of its last nested statement.
//!   So an instruction never writes a register that holds an operand it
//!   (or a later instruction of the same statement) still reads; a pattern
//!   that binds several locals from one list can never overwrite the list.
//! - **Where a nested block writes.** A `case` arm's payload is mentioned at
//!   the arm's start and a `try`'s error record at the handler's start, where
//!   they are written. A pipeline stage's body is walked where the stage
//!   starts: the stage runs on a copy of the locals taken then.
//! - **Linear scan.** Intervals are taken by start; parameters are pinned to
//!   `r0..` (the calling convention puts the arguments there). When no home
//!   register is free, the live interval that ends last (the new one
//!   included; pinned parameters never) is moved to a slot of the spill
//!   area: a list the frame keeps in one reserved register, read and
//!   written with `spill-load`/`spill-store`, made by `spill-enter` at
//!   function entry. Slots are reused like registers.
//! - **Last uses.** [`last_uses`] finds the reads after which no path
//!   through the function reads the local again, so the compiler can move
//!   the value out of its register instead of copying it (a copy would
//!   keep a second reference alive and defeat the in-place updates of
//!   `value.rs`). It walks the body backwards, keeping the set of locals
//!   some later statement reads. The two arms of an `if` and the arms of a
//!   `case` are exclusive: each is walked from the set after the statement,
//!   and the set before it is their union (undone and redone from a log,
//!   so the cost is the number of reads times the nesting depth). Every
//!   other nested block runs in sequence with what follows it: a `?`
//!   chain's alternatives, a `try`'s handler and a `guard`'s cleanup can
//!   run after a failure anywhere in the body, and a pipeline's stages are
//!   walked as if in turn (a non-final stage runs on a copy of the locals,
//!   so moving there never touches the function's own registers). A
//!   record read only by field (`$r[name]`, a record pattern) is tracked
//!   per field, so a field no later code reads can be taken out of it
//!   while its other fields are still read.
//! - **Budget.** Home registers come from `0..budget`; the compiler's
//!   temporaries sit above them, up to register 255. If the temporaries of
//!   some statement do not fit, the compiler retries the function with a
//!   smaller budget (`compile.rs`), so no statement, local, argument or
//!   capture count is ever refused.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use ral_ir::{
    Block, ExecHead, Expr, Func, IndexKind, InterpPart, LocalId, MapPart, Operand, Part, Pat, Stmt,
};

/// Where a local lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Home {
    /// In a register of the frame.
    Reg(u8),
    /// In a slot of the frame's spill area.
    Spill(u32),
    /// Never mentioned by the code (nothing reads or writes it).
    Unused,
}

/// The spill area of a function whose locals do not all fit in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpillArea {
    /// The register holding the area (a list).
    pub reg: u8,
    /// How many slots it has.
    pub slots: u32,
    /// Parameters from this index on arrive past the register budget and
    /// are moved into slots `0..` at entry.
    pub params_from: u16,
}

/// The homes of one function's locals.
#[derive(Debug)]
pub(crate) struct Layout {
    /// `homes[l]` is local `l`'s home.
    pub homes: Vec<Home>,
    /// Registers `0..n_regs` are homes (and the spill register); the
    /// compiler's temporaries start here.
    pub n_regs: u16,
    pub spill: Option<SpillArea>,
}

/// The layout of `f` with home registers taken from `0..budget`
/// (`budget` is at least 2 and at most 255).
pub(crate) fn allocate(f: &Func, budget: u16) -> Layout {
    let intervals = live_intervals(f);
    let first = scan(f, &intervals, budget, None);
    if first.spill.is_none() {
        return first;
    }
    // Something spilled: reserve the last home register for the area and
    // scan again (more may spill now; the area holds them all).
    let reg = budget - 1;
    scan(f, &intervals, reg, Some(reg as u8))
}

/// First and last mention of each local (`u32::MAX, 0` if none).
struct Intervals {
    first: Vec<u32>,
    last: Vec<u32>,
}

fn live_intervals(f: &Func) -> Intervals {
    let n = f.n_locals as usize;
    let mut w = Walk {
        pos: 0,
        first: vec![u32::MAX; n],
        last: vec![0; n],
    };
    for p in &f.params {
        w.at(*p, 0);
    }
    w.block(&f.body);
    Intervals {
        first: w.first,
        last: w.last,
    }
}

fn scan(f: &Func, iv: &Intervals, budget: u16, spill_reg: Option<u8>) -> Layout {
    let n = f.n_locals as usize;
    let mut homes = vec![Home::Unused; n];
    // Parameters keep the registers they arrive in when they fit the
    // budget; otherwise the first half of the budget's worth do and the
    // rest are moved to the spill area at entry.
    let n_params = f.params.len();
    let pinned = if n_params < usize::from(budget) {
        n_params
    } else {
        usize::from(budget / 2)
    };
    let mut free_slots: BinaryHeap<Reverse<u32>> = BinaryHeap::new();
    let mut n_slots: u32 = 0;
    let mut take_slot = |free_slots: &mut BinaryHeap<Reverse<u32>>| match free_slots.pop() {
        Some(Reverse(s)) => s,
        None => {
            n_slots += 1;
            n_slots - 1
        }
    };
    let mut is_param = vec![false; n];
    // Active intervals by end, and which registers are in use.
    let mut active: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
    let mut used = vec![false; usize::from(budget)];
    let mut max_reg: u16 = 0;
    for (i, p) in f.params.iter().enumerate() {
        let l = p.0 as usize;
        if l >= n {
            continue;
        }
        is_param[l] = true;
        if i < pinned {
            homes[l] = Home::Reg(i as u8);
            if let Some(u) = used.get_mut(i) {
                *u = true;
            }
            max_reg = max_reg.max(i as u16 + 1);
        } else {
            homes[l] = Home::Spill(take_slot(&mut free_slots));
        }
        active.push(Reverse((iv.last[l], l as u32)));
    }
    let params_from = pinned as u16;
    let mut order: Vec<u32> = (0..n as u32)
        .filter(|&l| iv.first[l as usize] != u32::MAX && !is_param[l as usize])
        .collect();
    order.sort_by_key(|&l| (iv.first[l as usize], l));
    for l in order {
        let li = l as usize;
        let start = iv.first[li];
        // Free what ended before this interval starts.
        while let Some(Reverse((end, m))) = active.peek().copied() {
            if end >= start {
                break;
            }
            active.pop();
            match homes[m as usize] {
                Home::Reg(r) => used[usize::from(r)] = false,
                Home::Spill(s) => free_slots.push(Reverse(s)),
                Home::Unused => {}
            }
        }
        if let Some(r) = used.iter().position(|u| !u) {
            used[r] = true;
            homes[li] = Home::Reg(r as u8);
            max_reg = max_reg.max(r as u16 + 1);
        } else {
            // Spill whichever live interval ends last (never a pinned
            // parameter): the one that would hold a register longest.
            let victim = active
                .iter()
                .map(|Reverse((end, m))| (*end, *m))
                .filter(|(_, m)| {
                    !is_param[*m as usize] && matches!(homes[*m as usize], Home::Reg(_))
                })
                .max();
            match victim {
                Some((end, m)) if end > iv.last[li] => {
                    homes[li] = homes[m as usize];
                    homes[m as usize] = Home::Spill(take_slot(&mut free_slots));
                }
                _ => homes[li] = Home::Spill(take_slot(&mut free_slots)),
            }
        }
        active.push(Reverse((iv.last[li], l)));
    }
    let spill = (n_slots > 0).then(|| SpillArea {
        reg: spill_reg.unwrap_or(budget as u8),
        slots: n_slots,
        params_from,
    });
    let n_regs = match spill {
        Some(s) => max_reg.max(u16::from(s.reg) + 1),
        None => max_reg,
    };
    Layout {
        homes,
        n_regs,
        spill,
    }
}

/// The liveness walk: statement numbers in emission order.
struct Walk {
    pos: u32,
    first: Vec<u32>,
    last: Vec<u32>,
}

impl Walk {
    fn at(&mut self, l: LocalId, p: u32) {
        let i = l.0 as usize;
        if let (Some(f), Some(z)) = (self.first.get_mut(i), self.last.get_mut(i)) {
            *f = (*f).min(p);
            *z = (*z).max(p);
        }
    }

    fn op(&mut self, o: &Operand, p: u32) {
        if let Operand::Local(l) = o {
            self.at(*l, p);
        }
    }

    fn tick(&mut self) -> u32 {
        self.pos += 1;
        self.pos
    }

    fn block(&mut self, b: &Block) {
        for s in &b.stmts {
            let p = self.tick();
            self.direct(&s.expr, p);
            if let Some(d) = s.dst {
                self.at(d, p);
            }
            self.nested(&s.expr);
            let end = self.pos;
            if end != p {
                self.direct(&s.expr, end);
                if let Some(d) = s.dst {
                    self.at(d, end);
                }
            }
        }
        let p = self.tick();
        self.op(&b.result, p);
    }

    fn pat(&mut self, pat: &Pat, p: u32) {
        match pat {
            Pat::Wildcard => {}
            Pat::Bind(l) => self.at(*l, p),
            Pat::List { items, rest } => {
                for i in items {
                    self.pat(i, p);
                }
                if let Some(Some(l)) = rest {
                    self.at(*l, p);
                }
            }
            Pat::Fields(fields) => {
                for (_, q) in fields {
                    self.pat(q, p);
                }
            }
        }
    }

    fn parts(&mut self, parts: &[Part], p: u32) {
        for x in parts {
            match x {
                Part::One(o) | Part::Spread(o) => self.op(o, p),
            }
        }
    }

    fn redirects(&mut self, rs: &[ral_ir::Redirect], p: u32) {
        use ral_ir::RedirectKind as K;
        for r in rs {
            match &r.kind {
                K::Write(o) | K::Stream(o) | K::Append(o) | K::Read(o) | K::Here(o) => {
                    self.op(o, p)
                }
                K::ErrToOut | K::Dup(_) => {}
            }
        }
    }

    /// The statement's own operands and the locals it binds directly.
    fn direct(&mut self, e: &Expr, p: u32) {
        match e {
            Expr::Value(o) | Expr::Not(o) => self.op(o, p),
            Expr::Define { value, .. } => self.op(value, p),
            Expr::Destructure { value, pattern } => {
                self.op(value, p);
                self.pat(pattern, p);
            }
            Expr::MakeList(parts) => self.parts(parts, p),
            Expr::MakeRecord { base, fields } => {
                if let Some(b) = base {
                    self.op(b, p);
                }
                for (_, o) in fields {
                    self.op(o, p);
                }
            }
            Expr::MakeMap(parts) => {
                for x in parts {
                    match x {
                        MapPart::Entry { key, value } => {
                            self.op(key, p);
                            self.op(value, p);
                        }
                        MapPart::Spread(o) => self.op(o, p),
                    }
                }
            }
            Expr::MakeVariant { payload, .. } => {
                if let Some(o) = payload {
                    self.op(o, p);
                }
            }
            Expr::MakeClosure { captures, .. } => {
                for c in captures {
                    self.op(c, p);
                }
            }
            Expr::MakeRecGroup { captures, dsts, .. } => {
                for c in captures {
                    self.op(c, p);
                }
                for d in dsts {
                    self.at(*d, p);
                }
            }
            Expr::Interp(parts) => {
                for x in parts {
                    match x {
                        InterpPart::Value(o) => self.op(o, p),
                        InterpPart::Text(_) | InterpPart::Home => {}
                    }
                }
            }
            Expr::Index { base, key, .. } => {
                self.op(base, p);
                self.op(key, p);
            }
            Expr::Arith { lhs, rhs, .. }
            | Expr::Compare { lhs, rhs, .. }
            | Expr::Equal { lhs, rhs, .. } => {
                self.op(lhs, p);
                self.op(rhs, p);
            }
            Expr::Neg { operand, .. } => self.op(operand, p),
            Expr::Call { func, args, .. } => {
                self.op(func, p);
                for a in args {
                    self.op(a, p);
                }
            }
            Expr::CallSpread { func, args, .. } => {
                self.op(func, p);
                self.parts(args, p);
            }
            Expr::Force { thunk, .. } => self.op(thunk, p),
            Expr::Exec {
                head,
                args,
                redirects,
            } => {
                match head {
                    ExecHead::Path(o) => self.op(o, p),
                    ExecHead::Name(_) | ExecHead::Base(_) | ExecHead::External(_) => {}
                }
                self.parts(args, p);
                self.redirects(redirects, p);
            }
            Expr::If { cond, .. } => self.op(cond, p),
            Expr::Case { scrutinee, .. } => self.op(scrutinee, p),
            Expr::Within { options, .. } => self.op(options, p),
            Expr::Grant { caps, .. } => self.op(caps, p),
            Expr::Redirected { redirects, .. } => self.redirects(redirects, p),
            Expr::Chain(_)
            | Expr::Pipeline(_)
            | Expr::Try { .. }
            | Expr::Guard { .. }
            | Expr::Audit { .. }
            | Expr::Capture(_) => {}
        }
    }

    /// The statement's nested blocks, in emission order.
    fn nested(&mut self, e: &Expr) {
        match e {
            Expr::If {
                then, otherwise, ..
            } => {
                self.block(then);
                self.block(otherwise);
            }
            Expr::Case { arms, .. } => {
                for a in arms {
                    let p = self.tick();
                    self.at(a.payload, p);
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
                let p = self.tick();
                self.at(*error, p);
                self.block(handler);
            }
            Expr::Guard { body, cleanup } => {
                // The cleanup is emitted twice: after the body, and where a
                // failure lands.
                self.block(body);
                self.block(cleanup);
                self.block(cleanup);
            }
            Expr::Within { body, .. }
            | Expr::Grant { body, .. }
            | Expr::Audit { body }
            | Expr::Redirected { body, .. }
            | Expr::Capture(body) => self.block(body),
            Expr::Value(_)
            | Expr::Define { .. }
            | Expr::Destructure { .. }
            | Expr::MakeList(_)
            | Expr::MakeRecord { .. }
            | Expr::MakeMap(_)
            | Expr::MakeVariant { .. }
            | Expr::MakeClosure { .. }
            | Expr::MakeRecGroup { .. }
            | Expr::Interp(_)
            | Expr::Index { .. }
            | Expr::Arith { .. }
            | Expr::Neg { .. }
            | Expr::Not(_)
            | Expr::Compare { .. }
            | Expr::Equal { .. }
            | Expr::Call { .. }
            | Expr::CallSpread { .. }
            | Expr::Force { .. }
            | Expr::Exec { .. } => {}
        }
    }
}

/// The reads of locals that are last on every path from them (see the
/// module docs), by statement and by block result.
#[derive(Debug, Default)]
pub(crate) struct LastUses {
    /// A statement without nested blocks (by address) → what it reads for
    /// the last time.
    stmts: HashMap<usize, StmtLast>,
    /// A block (by address) → its result, when that read is the last.
    results: HashMap<usize, Option<LocalId>>,
}

/// What one statement reads for the last time.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StmtLast {
    /// Locals read for the last time, each read exactly once by the
    /// statement: their value may be moved out of the register.
    pub moves: Vec<LocalId>,
    /// The fields of the statement's record operand (an `Index` base or a
    /// destructured value) that no later code reads, from a record read
    /// nowhere else in the statement: each may be taken out of a record
    /// held by no one else.
    pub fields: Vec<Arc<str>>,
}

impl LastUses {
    /// What statement `s` reads for the last time.
    pub(crate) fn of_stmt(&self, s: &Stmt) -> Option<&StmtLast> {
        self.stmts.get(&(s as *const Stmt as usize))
    }

    /// The result local of `b`, when reading it is its last use.
    pub(crate) fn of_result(&self, b: &Block) -> Option<LocalId> {
        self.results
            .get(&(b as *const Block as usize))
            .copied()
            .flatten()
    }
}

/// The last uses of `f`'s locals.
pub(crate) fn last_uses(f: &Func) -> LastUses {
    let mut w = Back {
        live: vec![Live::Dead; f.n_locals as usize],
        log: Vec::new(),
        out: LastUses::default(),
    };
    w.block(&f.body);
    w.out
}

/// How the code after a point reads a local.
#[derive(Clone, Debug, PartialEq)]
enum Live {
    /// Not at all.
    Dead,
    /// Only through these fields (`$r[name]`, record patterns).
    Fields(Vec<Arc<str>>),
    /// As a whole.
    Whole,
}

impl Live {
    fn join(&self, other: &Live) -> Live {
        match (self, other) {
            (Live::Whole, _) | (_, Live::Whole) => Live::Whole,
            (Live::Dead, x) | (x, Live::Dead) => x.clone(),
            (Live::Fields(a), Live::Fields(b)) => {
                let mut u = a.clone();
                u.extend(b.iter().filter(|f| !a.contains(f)).cloned());
                Live::Fields(u)
            }
        }
    }

    /// Whether field `f` is read later.
    fn reads_field(&self, f: &str) -> bool {
        match self {
            Live::Dead => false,
            Live::Fields(fs) => fs.iter().any(|g| &**g == f),
            Live::Whole => true,
        }
    }
}

/// One read of a local by a statement.
enum Access {
    Whole,
    /// The fields of a record: an `Index` by field name, or a record
    /// pattern's top-level fields (each named once).
    Fields(Vec<Arc<str>>),
}

/// The backward walk of [`last_uses`].
struct Back {
    /// How the code after the current point reads each local.
    live: Vec<Live>,
    /// Each change to `live`, with the state it replaced (to undo an
    /// exclusive arm's).
    log: Vec<(u32, Live)>,
    out: LastUses,
}

impl Back {
    fn state(&self, l: LocalId) -> &Live {
        self.live.get(l.0 as usize).unwrap_or(&Live::Whole)
    }

    fn set(&mut self, l: LocalId, new: Live) {
        if let Some(x) = self.live.get_mut(l.0 as usize) {
            if *x != new {
                let old = std::mem::replace(x, new);
                self.log.push((l.0, old));
            }
        }
    }

    fn read(&mut self, l: LocalId, a: &Access) {
        let new = match a {
            Access::Whole => Live::Whole,
            Access::Fields(fs) => self.state(l).join(&Live::Fields(fs.clone())),
        };
        self.set(l, new);
    }

    fn block(&mut self, b: &Block) {
        if let Operand::Local(l) = &b.result {
            let last = (*self.state(*l) == Live::Dead).then_some(*l);
            // A block compiled twice (a `guard`'s cleanup) is walked twice:
            // its result moves only if it is last both times.
            let key = b as *const Block as usize;
            let v = match self.out.results.get(&key) {
                Some(prev) if *prev != last => None,
                _ => last,
            };
            self.out.results.insert(key, v);
            self.read(*l, &Access::Whole);
        }
        for s in b.stmts.iter().rev() {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let mut reads: Vec<(LocalId, Access)> = Vec::new();
        accesses(&s.expr, &mut |l, a| reads.push((l, a)));
        if has_nested(&s.expr) {
            // What the statement reads it reads before its blocks run; it
            // moves nothing itself.
            self.nested(&s.expr);
            for (l, a) in &reads {
                self.read(*l, a);
            }
            return;
        }
        let once = |l: LocalId| reads.iter().filter(|(m, _)| *m == l).count() == 1;
        let mut last = StmtLast::default();
        for (l, a) in &reads {
            if !once(*l) {
                continue;
            }
            match a {
                Access::Whole if *self.state(*l) == Live::Dead => last.moves.push(*l),
                Access::Whole => {}
                Access::Fields(fs) => last.fields.extend(
                    fs.iter()
                        .filter(|f| !self.state(*l).reads_field(f))
                        .cloned(),
                ),
            }
        }
        let key = s as *const Stmt as usize;
        let last = match self.out.stmts.get(&key) {
            // Walked before (a `guard`'s cleanup): keep what both agree on.
            Some(prev) => StmtLast {
                moves: last
                    .moves
                    .into_iter()
                    .filter(|l| prev.moves.contains(l))
                    .collect(),
                fields: last
                    .fields
                    .into_iter()
                    .filter(|f| prev.fields.contains(f))
                    .collect(),
            },
            None => last,
        };
        self.out.stmts.insert(key, last);
        for (l, a) in &reads {
            self.read(*l, a);
        }
    }

    /// Blocks of which exactly one runs: each is walked from the state
    /// after the statement, and the state before it is the join of theirs.
    fn exclusive<'b>(&mut self, blocks: impl Iterator<Item = &'b Block>) {
        let mark = self.log.len();
        let mut joined: HashMap<u32, Live> = HashMap::new();
        for b in blocks {
            self.block(b);
            // Where the arm left each local it changed, then undo the arm
            // (newest change first).
            let mut arm: HashMap<u32, Live> = HashMap::new();
            for (l, _) in self.log.get(mark..).unwrap_or_default() {
                if let Some(now) = self.live.get(*l as usize) {
                    arm.entry(*l).or_insert_with(|| now.clone());
                }
            }
            while self.log.len() > mark {
                let Some((l, old)) = self.log.pop() else {
                    break;
                };
                if let Some(x) = self.live.get_mut(l as usize) {
                    *x = old;
                }
            }
            for (l, v) in arm {
                let e = joined.entry(l).or_insert(Live::Dead);
                *e = e.join(&v);
            }
        }
        for (l, v) in joined {
            let new = self.state(LocalId(l)).join(&v);
            self.set(LocalId(l), new);
        }
    }

    fn nested(&mut self, e: &Expr) {
        match e {
            Expr::If {
                then, otherwise, ..
            } => self.exclusive([then, otherwise].into_iter()),
            Expr::Case { arms, .. } => self.exclusive(arms.iter().map(|a| &a.body)),
            Expr::Chain(bs) | Expr::Pipeline(bs) => {
                for b in bs.iter().rev() {
                    self.block(b);
                }
            }
            Expr::Try { body, handler, .. } => {
                self.block(handler);
                self.block(body);
            }
            Expr::Guard { body, cleanup } => {
                // Compiled twice: after the body, and where a failure lands.
                self.block(cleanup);
                self.block(cleanup);
                self.block(body);
            }
            Expr::Within { body, .. }
            | Expr::Grant { body, .. }
            | Expr::Audit { body }
            | Expr::Redirected { body, .. }
            | Expr::Capture(body) => self.block(body),
            Expr::Value(_)
            | Expr::Define { .. }
            | Expr::Destructure { .. }
            | Expr::MakeList(_)
            | Expr::MakeRecord { .. }
            | Expr::MakeMap(_)
            | Expr::MakeVariant { .. }
            | Expr::MakeClosure { .. }
            | Expr::MakeRecGroup { .. }
            | Expr::Interp(_)
            | Expr::Index { .. }
            | Expr::Arith { .. }
            | Expr::Neg { .. }
            | Expr::Not(_)
            | Expr::Compare { .. }
            | Expr::Equal { .. }
            | Expr::Call { .. }
            | Expr::CallSpread { .. }
            | Expr::Force { .. }
            | Expr::Exec { .. } => {}
        }
    }
}

/// Whether `e` has blocks of its own.
fn has_nested(e: &Expr) -> bool {
    match e {
        Expr::If { .. }
        | Expr::Case { .. }
        | Expr::Chain(_)
        | Expr::Pipeline(_)
        | Expr::Try { .. }
        | Expr::Guard { .. }
        | Expr::Within { .. }
        | Expr::Grant { .. }
        | Expr::Audit { .. }
        | Expr::Redirected { .. }
        | Expr::Capture(_) => true,
        Expr::Value(_)
        | Expr::Define { .. }
        | Expr::Destructure { .. }
        | Expr::MakeList(_)
        | Expr::MakeRecord { .. }
        | Expr::MakeMap(_)
        | Expr::MakeVariant { .. }
        | Expr::MakeClosure { .. }
        | Expr::MakeRecGroup { .. }
        | Expr::Interp(_)
        | Expr::Index { .. }
        | Expr::Arith { .. }
        | Expr::Neg { .. }
        | Expr::Not(_)
        | Expr::Compare { .. }
        | Expr::Equal { .. }
        | Expr::Call { .. }
        | Expr::CallSpread { .. }
        | Expr::Force { .. }
        | Expr::Exec { .. } => false,
    }
}

/// Every local `e` reads directly (not in its nested blocks), once per
/// mention, with how it reads it.
fn accesses(e: &Expr, f: &mut impl FnMut(LocalId, Access)) {
    // A record read by field: `$r[name]`, or a record pattern whose
    // top-level fields are named once each.
    if let Expr::Index {
        base: Operand::Local(l),
        key,
        kind: IndexKind::Field(name),
    } = e
    {
        f(*l, Access::Fields(vec![name.clone()]));
        if let Operand::Local(k) = key {
            f(*k, Access::Whole);
        }
        return;
    }
    if let Expr::Destructure {
        value: Operand::Local(l),
        pattern: Pat::Fields(fields),
    } = e
    {
        {
            let names: Vec<Arc<str>> = fields.iter().map(|(n, _)| n.clone()).collect();
            let distinct = names
                .iter()
                .enumerate()
                .all(|(i, n)| !names[..i].contains(n));
            let access = if distinct {
                Access::Fields(names)
            } else {
                Access::Whole
            };
            f(*l, access);
            return;
        }
    }
    let mut op = |o: &Operand| {
        if let Operand::Local(l) = o {
            f(*l, Access::Whole);
        }
    };
    match e {
        Expr::Value(o) | Expr::Not(o) => op(o),
        Expr::Define { value, .. } | Expr::Destructure { value, .. } => op(value),
        Expr::MakeList(parts) => {
            for p in parts {
                match p {
                    Part::One(o) | Part::Spread(o) => op(o),
                }
            }
        }
        Expr::MakeRecord { base, fields } => {
            if let Some(b) = base {
                op(b);
            }
            for (_, o) in fields {
                op(o);
            }
        }
        Expr::MakeMap(parts) => {
            for p in parts {
                match p {
                    MapPart::Entry { key, value } => {
                        op(key);
                        op(value);
                    }
                    MapPart::Spread(o) => op(o),
                }
            }
        }
        Expr::MakeVariant { payload, .. } => {
            if let Some(o) = payload {
                op(o);
            }
        }
        Expr::MakeClosure { captures, .. } | Expr::MakeRecGroup { captures, .. } => {
            for c in captures {
                op(c);
            }
        }
        Expr::Interp(parts) => {
            for p in parts {
                match p {
                    InterpPart::Value(o) => op(o),
                    InterpPart::Text(_) | InterpPart::Home => {}
                }
            }
        }
        Expr::Index { base, key, .. } => {
            op(base);
            op(key);
        }
        Expr::Arith { lhs, rhs, .. }
        | Expr::Compare { lhs, rhs, .. }
        | Expr::Equal { lhs, rhs, .. } => {
            op(lhs);
            op(rhs);
        }
        Expr::Neg { operand, .. } => op(operand),
        Expr::Call { func, args, .. } => {
            op(func);
            for a in args {
                op(a);
            }
        }
        Expr::CallSpread { func, args, .. } => {
            op(func);
            for p in args {
                match p {
                    Part::One(o) | Part::Spread(o) => op(o),
                }
            }
        }
        Expr::Force { thunk, .. } => op(thunk),
        Expr::Exec {
            head,
            args,
            redirects,
        } => {
            if let ExecHead::Path(o) = head {
                op(o);
            }
            for p in args {
                match p {
                    Part::One(o) | Part::Spread(o) => op(o),
                }
            }
            redirect_reads(redirects, &mut op);
        }
        Expr::If { cond, .. } => op(cond),
        Expr::Case { scrutinee, .. } => op(scrutinee),
        Expr::Within { options, .. } => op(options),
        Expr::Grant { caps, .. } => op(caps),
        Expr::Redirected { redirects, .. } => redirect_reads(redirects, &mut op),
        Expr::Chain(_)
        | Expr::Pipeline(_)
        | Expr::Try { .. }
        | Expr::Guard { .. }
        | Expr::Audit { .. }
        | Expr::Capture(_) => {}
    }
}

fn redirect_reads(rs: &[ral_ir::Redirect], op: &mut impl FnMut(&Operand)) {
    use ral_ir::RedirectKind as K;
    for r in rs {
        match &r.kind {
            K::Write(o) | K::Stream(o) | K::Append(o) | K::Read(o) | K::Here(o) => op(o),
            K::ErrToOut | K::Dup(_) => {}
        }
    }
}
