//! IR [`Module`] → [`Proto`]s.
//!
//! - **Registers.** Each local has a home ([`crate::regalloc`]): a
//!   register shared with locals whose lives do not overlap, or a slot of
//!   the frame's spill area when more are live at once than the budget
//!   holds. Parameters arrive in `r0..` (the calling convention). The
//!   compiler's temporaries sit above the home registers and are released
//!   in LIFO order (a mark/release pair, debug-asserted); `Proto::n_regs` is
//!   the high-water mark. A call's arguments are the topmost temporaries, so
//!   the callee's window can start at them.
//! - **No size limits.** A run of consecutive registers (arguments, list
//!   items, record fields, captures, interpolation parts) is at most
//!   `MAX_RUN` long; a longer one is built as a list and handed over whole
//!   (`call-spread`, `make-record-list`, `make-closure-list`, chunked
//!   `interp`). When a statement's temporaries do not fit above the homes,
//!   the function is compiled again with a smaller home budget. Constant,
//!   shape, capture and list-pattern indices are 32-bit.
//! - **Moves at last use.** A local read for the last time on every path
//!   ([`regalloc::last_uses`]) is moved out of its register (`move`, or
//!   the `take` flag of the instructions that put a value into a
//!   collection), and a literal built in a temporary is moved into its
//!   destination, so no dead register keeps a second reference to a value
//!   the VM may then update in place (`value.rs`).
//! - **Constants** are deduplicated per proto; Ints that fit `i32` become
//!   immediates.
//! - **Typed ops** where the IR's [`NumKind`]/[`OrdKind`] fix the kind;
//!   generic ones otherwise. `>`/`>=` are `<`/`<=` with swapped operands.
//! - **Globals.** Each of the turn's definitions reserves a scope slot
//!   before anything runs ([`Scope::reserve`]); an earlier turn's name
//!   resolves to its current slot. Code names slots, never strings.
//! - **Recursive groups.** Members share the group's captures; a call to a
//!   sibling from a member is [`Op::CallSibling`], which makes no closure.
//! - A call in tail position is a tail call unless a handler or a capture
//!   of the same function encloses it (the frame must outlive the call then).
//! - Features the VM does not run yet compile to [`Op::Unsupported`] (see
//!   [`crate::exec`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use ral_ir::{
    ArithOp, Block, CaptureFrom, CmpOp, Const, ExecHead, Expr, FuncId, IndexKind, InterpPart,
    MapPart, Module, NumKind, Operand, OrdKind, Part, Pat,
};
use ral_syntax::Span;

use crate::op::{ArithCode, ConstIdx, ExecMode, Feature, Op, Proto, RedirCode, Reg};
use crate::regalloc::{self, Home};
use crate::session::{Scope, SlotId};
use crate::value::{Keys, Value};

/// A module the compiler cannot translate (a lowering bug or a limit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError(pub String);

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CompileError {}

/// The protos of one module. `protos[i]` is program proto `base + i`, and
/// IR function `f` is `protos[f.0]`.
#[derive(Debug)]
pub struct Compiled {
    pub protos: Vec<Proto>,
    /// Program index of `main`.
    pub main: u32,
    /// Program indices of the pipeline-stage protos compiled out of `main`
    /// itself: like `main`, nothing refers to them once it has run.
    pub main_stages: Vec<u32>,
}

/// Compiles `module`, whose protos will be program protos `base..`.
/// Reserves a scope slot for each of its definitions.
pub fn compile_module(
    module: &Module,
    scope: &mut Scope,
    base: u32,
) -> Result<Compiled, CompileError> {
    let def_slots: Vec<SlotId> = module.defs.iter().map(|d| scope.reserve(&d.name)).collect();
    let mut groups: HashMap<u32, Vec<u32>> = HashMap::new();
    for f in &module.funcs {
        scan_groups(&f.body, base, &mut groups);
    }
    let self_defs = self_definitions(module);
    let m = ModCx {
        module,
        scope,
        def_slots,
        groups,
        self_defs,
        base,
        stages: std::cell::RefCell::new(Vec::new()),
    };
    let mut protos = Vec::with_capacity(module.funcs.len());
    for (i, f) in module.funcs.iter().enumerate() {
        if f.id.0 as usize != i {
            return Err(CompileError(format!("function {i} has id {}", f.id.0)));
        }
        protos.push(FnCx::compile(&m, f)?);
    }
    let stages = m.stages.take();
    let first_stage = base as usize + protos.len();
    let main_stages = stages
        .iter()
        .enumerate()
        .filter(|(_, (root, _))| *root == module.main)
        .filter_map(|(i, _)| u32::try_from(first_stage + i).ok())
        .collect();
    protos.extend(stages.into_iter().map(|(_, p)| p));
    Ok(Compiled {
        protos,
        main: base + module.main.0,
        main_stages,
    })
}

/// `def → func` for each top-level `let` of `module` whose value is a
/// capture-free block made by `main` (see [`ModCx::self_defs`]).
fn self_definitions(module: &Module) -> HashMap<u32, u32> {
    let mut made: HashMap<u32, u32> = HashMap::new();
    let mut defs = HashMap::new();
    let Some(main) = module.funcs.get(module.main.0 as usize) else {
        return defs;
    };
    for s in &main.body.stmts {
        match (&s.expr, s.dst) {
            (Expr::MakeClosure { func, captures }, Some(l)) if captures.is_empty() => {
                made.insert(l.0, func.0);
            }
            (
                Expr::Define {
                    def,
                    value: Operand::Local(l),
                },
                _,
            ) => {
                if let Some(f) = made.get(&l.0) {
                    defs.insert(def.0, *f);
                }
            }
            _ => {}
        }
    }
    defs
}

fn scan_groups(block: &Block, base: u32, groups: &mut HashMap<u32, Vec<u32>>) {
    for s in &block.stmts {
        match &s.expr {
            Expr::MakeRecGroup { funcs, .. } => {
                let members: Vec<u32> = funcs.iter().map(|f| base + f.0).collect();
                for f in funcs {
                    groups.insert(f.0, members.clone());
                }
            }
            Expr::If {
                then, otherwise, ..
            } => {
                scan_groups(then, base, groups);
                scan_groups(otherwise, base, groups);
            }
            Expr::Case { arms, .. } => {
                for a in arms {
                    scan_groups(&a.body, base, groups);
                }
            }
            Expr::Chain(bs) | Expr::Pipeline(bs) => {
                for b in bs {
                    scan_groups(b, base, groups);
                }
            }
            Expr::Try { body, handler, .. } => {
                scan_groups(body, base, groups);
                scan_groups(handler, base, groups);
            }
            Expr::Guard { body, cleanup } => {
                scan_groups(body, base, groups);
                scan_groups(cleanup, base, groups);
            }
            Expr::Within { body, .. }
            | Expr::Grant { body, .. }
            | Expr::Audit { body }
            | Expr::Redirected { body, .. }
            | Expr::Capture(body) => scan_groups(body, base, groups),
            Expr::Value(_)
            | Expr::Define { .. }
            | Expr::Destructure { .. }
            | Expr::MakeList(_)
            | Expr::MakeRecord { .. }
            | Expr::MakeMap(_)
            | Expr::MakeVariant { .. }
            | Expr::MakeClosure { .. }
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

struct ModCx<'a> {
    module: &'a Module,
    scope: &'a Scope,
    def_slots: Vec<SlotId>,
    groups: HashMap<u32, Vec<u32>>,
    /// The function each top-level definition of a capture-free block
    /// binds (`def → func`): a call from that function to that
    /// definition's slot is a call to itself.
    self_defs: HashMap<u32, u32>,
    base: u32,
    /// Pipeline stage protos, numbered after the module's functions, with
    /// the function whose body (or a stage of it) they came from.
    stages: std::cell::RefCell<Vec<(FuncId, Proto)>>,
}

#[derive(PartialEq, Eq, Hash)]
enum ConstKey {
    Int(i64),
    Float(u64),
    Str(Arc<str>),
}

struct FnCx<'a, 'm> {
    m: &'a ModCx<'m>,
    proto: Proto,
    /// Where each local lives ([`regalloc`]).
    homes: Vec<Home>,
    /// The spill area, when some locals live there.
    spill: Option<regalloc::SpillArea>,
    next: u16,
    consts: HashMap<ConstKey, u32>,
    /// Enclosing handlers and captures in this function: no tail calls.
    no_tail: u32,
    /// Jump targets patched so far (a peephole never folds across one).
    labels: std::collections::HashSet<u32>,
    /// How many times the function reads each local.
    local_uses: Vec<u32>,
    /// The IR function this code belongs to (a stage inherits its parent's).
    root: FuncId,
    /// Whether this is a pipeline stage's proto (not its function's own).
    is_stage: bool,
    span: Span,
    /// The reads after which no path reads a local again
    /// ([`regalloc::last_uses`]); shared with the function's stages.
    last: std::rc::Rc<regalloc::LastUses>,
    /// The locals the statement being compiled reads for the last time:
    /// [`FnCx::load`] moves them instead of copying.
    moving: Vec<ral_ir::LocalId>,
    /// The fields of the statement's record operand nothing reads again
    /// ([`regalloc::StmtLast::fields`]): indexing takes them out.
    fields: Vec<Arc<str>>,
}

/// Which parts of a pattern's source nothing reads after the pattern, so
/// the instructions that extract them may take them out.
#[derive(Clone, Debug)]
enum Takes {
    All,
    Fields(Vec<Arc<str>>),
}

impl Takes {
    fn all(&self) -> bool {
        matches!(self, Takes::All)
    }

    fn field(&self, k: &str) -> bool {
        match self {
            Takes::All => true,
            Takes::Fields(fs) => fs.iter().any(|f| &**f == k),
        }
    }
}

type R<T> = Result<T, CompileError>;

/// Home-register budgets tried in turn (see [`FnCx::compile`]).
const HOME_BUDGETS: [u16; 3] = [192, 96, 24];

/// The internal error that makes [`FnCx::compile`] retry with a smaller
/// budget; it escapes only if the smallest budget fails too.
const OUT_OF_REGISTERS: &str = "a statement needs more temporary registers than are left";

/// The longest run of consecutive registers an instruction is given
/// (arguments, list items, record fields, captures, interpolation parts);
/// longer ones are built as a list instead.
const MAX_RUN: usize = 32;

/// Registers are numbered by one byte.
const REG_LIMIT: u16 = 256;

fn err<T>(msg: impl Into<String>) -> R<T> {
    Err(CompileError(msg.into()))
}

impl<'a, 'm> FnCx<'a, 'm> {
    /// Compiles `f`, first with the full register budget for its locals'
    /// homes and, if some statement's temporaries do not fit above them,
    /// again with smaller budgets (more locals spill). A function of any
    /// size compiles: at the smallest budget every temporary run is short
    /// and the nesting of blocks is bounded by the parser.
    fn compile(m: &'a ModCx<'m>, f: &ral_ir::Func) -> R<Proto> {
        let mut last = None;
        for budget in HOME_BUDGETS {
            let stages = m.stages.borrow().len();
            match Self::compile_with(m, f, budget) {
                Err(e) if e.0 == OUT_OF_REGISTERS => {
                    // Drop the stage protos of the failed attempt.
                    m.stages.borrow_mut().truncate(stages);
                    last = Some(e);
                }
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| CompileError(OUT_OF_REGISTERS.into())))
    }

    fn compile_with(m: &'a ModCx<'m>, f: &ral_ir::Func, budget: u16) -> R<Proto> {
        let n_params = u16::try_from(f.params.len()).map_err(|_| {
            CompileError(format!(
                "a block of {} parameters (at most 65,535)",
                f.params.len()
            ))
        })?;
        let layout = regalloc::allocate(f, budget);
        let last = std::rc::Rc::new(regalloc::last_uses(f));
        let n_home = layout.n_regs;
        let mut local_uses = vec![0u32; f.n_locals as usize];
        count_block(&f.body, &mut local_uses);
        // Parameters arrive from the caller: never fold a write into one.
        for p in &f.params {
            if let Some(u) = local_uses.get_mut(p.0 as usize) {
                *u = u32::MAX;
            }
        }
        // The names as written, for `<|x y| block>` (§4.9); a function the
        // lowering made has none.
        let params: Vec<String> = (0..f.params.len())
            .map(|i| {
                f.param_names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("p{i}"))
            })
            .collect();
        let mut cx = FnCx {
            m,
            proto: Proto {
                name: f.name.clone().unwrap_or_default(),
                n_params,
                n_locals: u8::try_from(n_home).unwrap_or(u8::MAX),
                n_regs: n_home,
                siblings: m.groups.get(&f.id.0).cloned().unwrap_or_default(),
                params: params.into(),
                ..Proto::default()
            },
            homes: layout.homes,
            spill: layout.spill,
            next: n_home,
            consts: HashMap::new(),
            // A turn's top-level code makes no tail calls: its frame stays,
            // so a failure deeper down is placed at this turn's call (the
            // depth a top-level call saves is one frame).
            no_tail: u32::from(f.id == m.module.main),
            labels: std::collections::HashSet::new(),
            local_uses,
            root: f.id,
            is_stage: false,
            span: f.span,
            last,
            moving: Vec::new(),
            fields: Vec::new(),
        };
        if let Some(area) = cx.spill {
            cx.emit(Op::SpillEnter {
                spill: Reg(area.reg),
                params_from: area.params_from,
                slots: area.slots,
            });
        }
        cx.block_returning(&f.body)?;
        // `r0` is read by `Return` of an arity-0 empty body at least; the
        // arguments arrive in `r[0..n_params]`.
        cx.proto.n_regs = cx.proto.n_regs.max(1).max(n_params);
        cx.proto.clear = clear_list(&cx.proto);
        Ok(cx.proto)
    }

    /// Compiles a non-final pipeline stage as a proto of its own that
    /// shares this function's local layout (the VM copies the locals in
    /// when it starts the stage on its thread); returns its program index.
    fn compile_stage(&mut self, b: &Block) -> R<u32> {
        let mut cx = FnCx {
            m: self.m,
            proto: Proto {
                name: "<pipeline stage>".to_owned(),
                n_params: 0,
                n_locals: self.proto.n_locals,
                n_regs: u16::from(self.proto.n_locals),
                siblings: self.proto.siblings.clone(),
                params: self.proto.params.clone(),
                ..Proto::default()
            },
            homes: self.homes.clone(),
            spill: self.spill,
            next: u16::from(self.proto.n_locals),
            consts: HashMap::new(),
            no_tail: 0,
            labels: std::collections::HashSet::new(),
            local_uses: self.local_uses.clone(),
            root: self.root,
            is_stage: true,
            span: self.span,
            last: self.last.clone(),
            moving: Vec::new(),
            fields: Vec::new(),
        };
        for st in &b.stmts {
            cx.stmt(st)?;
        }
        let mark = cx.next;
        let r = cx.result_reg(b)?;
        cx.emit(Op::Return { src: r });
        cx.release(mark);
        cx.proto.n_regs = cx.proto.n_regs.max(1);
        cx.proto.clear = clear_list(&cx.proto);
        let mut stages = self.m.stages.borrow_mut();
        let index = self.m.base as usize + self.m.module.funcs.len() + stages.len();
        stages.push((self.root, cx.proto));
        u32::try_from(index).map_err(|_| CompileError("too many protos".into()))
    }

    /// Emits the ops that open `redirects` in a fresh IO frame (the caller
    /// emits `IoPop`). `2>&1` goes last, so it means the same wherever it
    /// was written (§7.4).
    fn redirects(&mut self, redirects: &[ral_ir::Redirect]) -> R<()> {
        use ral_ir::RedirectKind as K;
        self.emit(Op::IoPush);
        let mut ordered: Vec<&ral_ir::Redirect> = redirects
            .iter()
            .filter(|r| !matches!(r.kind, K::ErrToOut | K::Dup(_)))
            .collect();
        ordered.extend(
            redirects
                .iter()
                .filter(|r| matches!(r.kind, K::ErrToOut | K::Dup(_))),
        );
        for r in ordered {
            let mark = self.next;
            let (kind, src) = match &r.kind {
                K::Write(o) => (RedirCode::Write, self.operand_reg(o)?),
                K::Stream(o) => (RedirCode::Stream, self.operand_reg(o)?),
                K::Append(o) => (RedirCode::Append, self.operand_reg(o)?),
                K::Read(o) => (RedirCode::Read, self.operand_reg(o)?),
                K::Here(o) => (RedirCode::Here, self.operand_reg(o)?),
                K::ErrToOut => (RedirCode::ErrToOut, Reg(0)),
                K::Dup(m) if *m == r.fd => (RedirCode::Keep, Reg(0)),
                K::Dup(1) if r.fd == 2 => (RedirCode::ErrToOut, Reg(0)),
                K::Dup(m) => {
                    return err(format!("redirect {}>&{m} is not supported", r.fd));
                }
            };
            self.emit(Op::Redir {
                fd: r.fd,
                kind,
                src,
            });
            self.release(mark);
        }
        Ok(())
    }

    // ---- emission helpers ----

    fn emit(&mut self, op: Op) -> usize {
        self.proto.code.push(op);
        self.proto.spans.push(self.span);
        self.proto.code.len() - 1
    }

    fn here(&self) -> u32 {
        self.proto.code.len() as u32
    }

    fn patch(&mut self, at: usize, to: u32) {
        let target = match self.proto.code.get_mut(at) {
            Some(
                Op::Jump { target }
                | Op::JumpIfFalse { target, .. }
                | Op::JumpIfNotLtIntK { target, .. }
                | Op::JumpIfNotLeIntK { target, .. }
                | Op::JumpIfNotGtIntK { target, .. }
                | Op::JumpIfNotGeIntK { target, .. }
                | Op::JumpIfNotLtInt { target, .. }
                | Op::JumpIfNotEqIntK { target, .. }
                | Op::JumpIfNotNeIntK { target, .. }
                | Op::JumpIfNotLeInt { target, .. }
                | Op::JumpIfNotTag { target, .. }
                | Op::PushTry { target, .. }
                | Op::AuditBegin { target, .. }
                | Op::PushChain { target }
                | Op::PushGuard { target },
            ) => target,
            other => {
                debug_assert!(false, "patching a non-jump: {other:?}");
                return;
            }
        };
        *target = to;
        self.labels.insert(to);
    }

    /// Whether the function reads local `l` exactly once (so the one
    /// instruction reading it may take over its write). Parameters never
    /// qualify: their write is the caller's.
    fn single_use(&self, l: ral_ir::LocalId) -> bool {
        self.local_uses.get(l.0 as usize).copied() == Some(1)
    }

    /// Peephole for `copy dst, src` where `src` holds a local read only by
    /// this copy: when a recent instruction wrote `src` and nothing jumps
    /// into the stretch, that instruction writes `dst` directly and the
    /// copy disappears. (While the local lives, nothing else writes its
    /// register, so the most recent write of `src` is its definition.)
    fn fold_copy(&mut self, dst: Reg, src: Reg) -> bool {
        // Look back a few instructions in straight-line code for the one
        // that wrote `src`; what lies between must neither read nor write
        // `dst` (it would see or clobber the early write), and nothing may
        // jump into the stretch.
        let here = self.proto.code.len();
        for back in 1..=4usize {
            let Some(i) = here.checked_sub(back) else {
                return false;
            };
            let entered = (i + 1..=here)
                .any(|pc| u32::try_from(pc).is_ok_and(|pc| self.labels.contains(&pc)));
            if entered {
                return false;
            }
            let writes_src = self
                .proto
                .code
                .get_mut(i)
                .and_then(dst_of)
                .is_some_and(|d| *d == src);
            if writes_src {
                let between_ok = self.proto.code[i + 1..here]
                    .iter()
                    .all(|op| simple_regs(op).is_some_and(|rs| !rs.contains(&Some(dst))));
                if !between_ok {
                    return false;
                }
                if let Some(d) = self.proto.code.get_mut(i).and_then(dst_of) {
                    *d = dst;
                    return true;
                }
                return false;
            }
        }
        false
    }

    /// Emits `if not r[cond] goto 0` (patched later), fusing it with the
    /// comparison that produced `cond` when that Bool is read only here.
    fn branch_if_false(&mut self, cond: Reg, local: Option<ral_ir::LocalId>) -> usize {
        if local.is_some_and(|l| self.single_use(l)) && !self.labels.contains(&self.here()) {
            let fused = match self.proto.code.last() {
                Some(Op::LtIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotLtIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::LeIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotLeIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::GtIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotGtIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::GeIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotGeIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::EqIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotEqIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::NeIntK { dst, lhs, k }) if *dst == cond => Some(Op::JumpIfNotNeIntK {
                    lhs: *lhs,
                    k: *k,
                    target: 0,
                }),
                Some(Op::LtInt { dst, lhs, rhs }) if *dst == cond => Some(Op::JumpIfNotLtInt {
                    lhs: *lhs,
                    rhs: *rhs,
                    target: 0,
                }),
                Some(Op::LeInt { dst, lhs, rhs }) if *dst == cond => Some(Op::JumpIfNotLeInt {
                    lhs: *lhs,
                    rhs: *rhs,
                    target: 0,
                }),
                _ => None,
            };
            if let (Some(op), Some(last)) = (fused, self.proto.code.last_mut()) {
                *last = op;
                return self.proto.code.len() - 1;
            }
        }
        self.emit(Op::JumpIfFalse { cond, target: 0 })
    }

    fn temp(&mut self) -> R<Reg> {
        let r = self.next;
        if r >= REG_LIMIT {
            return err(OUT_OF_REGISTERS);
        }
        self.next += 1;
        self.proto.n_regs = self.proto.n_regs.max(self.next);
        Ok(Reg(r as u8))
    }

    fn temps(&mut self, n: usize) -> R<Reg> {
        let start = Reg(self.next.min(255) as u8);
        for _ in 0..n {
            self.temp()?;
        }
        Ok(start)
    }

    /// Whether `n` consecutive temporaries are to be used (else the values
    /// go through a list).
    fn fits(&self, n: usize) -> bool {
        n <= MAX_RUN && usize::from(self.next) + n < usize::from(REG_LIMIT)
    }

    fn release(&mut self, mark: u16) {
        debug_assert!(mark <= self.next, "temporaries released out of order");
        self.next = mark;
    }

    fn home(&self, l: ral_ir::LocalId) -> R<Home> {
        match self.homes.get(l.0 as usize) {
            Some(Home::Unused) => err(format!("local l{} is used but has no home", l.0)),
            Some(h) => Ok(*h),
            None => err(format!("local l{} out of range", l.0)),
        }
    }

    fn spill_reg(&self) -> R<Reg> {
        match self.spill {
            Some(a) => Ok(Reg(a.reg)),
            None => err("a spilled local in a function with no spill area"),
        }
    }

    /// The register to write local `l` into, and the spill slot to store
    /// it to afterwards ([`FnCx::store_def`]) when it lives there (the
    /// register is then a fresh temporary, released by the caller's mark).
    fn def_reg(&mut self, l: ral_ir::LocalId) -> R<(Reg, Option<u32>)> {
        match self.home(l)? {
            Home::Reg(r) => Ok((Reg(r), None)),
            Home::Spill(i) => Ok((self.temp()?, Some(i))),
            Home::Unused => err(format!("local l{} has no home", l.0)),
        }
    }

    /// Completes a write begun with [`FnCx::def_reg`].
    fn store_def(&mut self, src: Reg, slot: Option<u32>) -> R<()> {
        if let Some(idx) = slot {
            let spill = self.spill_reg()?;
            self.emit(Op::SpillStore { spill, idx, src });
        }
        Ok(())
    }

    fn konst(&mut self, key: ConstKey, value: Value) -> R<ConstIdx> {
        if let Some(k) = self.consts.get(&key) {
            return Ok(ConstIdx(*k));
        }
        let k = u32::try_from(self.proto.consts.len())
            .map_err(|_| CompileError("too many constants".into()))?;
        self.proto.consts.push(value);
        self.consts.insert(key, k);
        Ok(ConstIdx(k))
    }

    fn str_const(&mut self, s: &Arc<str>) -> R<ConstIdx> {
        self.konst(ConstKey::Str(s.clone()), Value::str(&**s))
    }

    // ---- operands ----

    fn load(&mut self, op: &Operand, dst: Reg) -> R<()> {
        let code = match op {
            Operand::Unit => Op::LoadUnit { dst },
            Operand::Const(Const::Bool(value)) => Op::LoadBool { dst, value: *value },
            Operand::Const(Const::Int(n)) => match i32::try_from(*n) {
                Ok(value) => Op::LoadInt { dst, value },
                Err(_) => Op::LoadConst {
                    dst,
                    k: self.konst(ConstKey::Int(*n), Value::Int(*n))?,
                },
            },
            Operand::Const(Const::Float(x)) => Op::LoadConst {
                dst,
                k: self.konst(ConstKey::Float(x.to_bits()), Value::Float(*x))?,
            },
            Operand::Const(Const::Str(s)) => Op::LoadConst {
                dst,
                k: self.str_const(s)?,
            },
            Operand::Local(l) => match self.home(*l)? {
                Home::Reg(r) if Reg(r) == dst => return Ok(()),
                Home::Reg(r) => {
                    if self.single_use(*l) && self.fold_copy(dst, Reg(r)) {
                        return Ok(());
                    }
                    if self.moving.contains(l) {
                        Op::Move { dst, src: Reg(r) }
                    } else {
                        Op::Copy { dst, src: Reg(r) }
                    }
                }
                Home::Spill(idx) => Op::SpillLoad {
                    dst,
                    spill: self.spill_reg()?,
                    idx,
                },
                Home::Unused => return err(format!("local l{} has no home", l.0)),
            },
            Operand::Captured(i) => Op::LoadCapture { dst, idx: *i },
            Operand::Global { name, def } => Op::GetGlobal {
                dst,
                slot: self.global_slot(name, *def)?.0,
            },
            Operand::Sibling(i) => {
                if self.proto.siblings.is_empty() {
                    Op::Unsupported {
                        feature: Feature::NestedSibling,
                    }
                } else {
                    Op::LoadSibling { dst, member: *i }
                }
            }
            Operand::Builtin(id) => Op::LoadBuiltin { dst, id: id.0 },
            Operand::Script => Op::LoadScript { dst },
        };
        self.emit(code);
        Ok(())
    }

    fn global_slot(&self, name: &str, def: Option<ral_ir::DefId>) -> R<SlotId> {
        match def {
            Some(d) => match self.m.def_slots.get(d.0 as usize) {
                Some(s) => Ok(*s),
                None => err(format!("definition d{} out of range", d.0)),
            },
            None => match self.m.scope.lookup(name) {
                Some(s) => Ok(s),
                None => err(format!("`{name}` is not defined in the session")),
            },
        }
    }

    /// The register holding `op`: a local's own register, or a fresh
    /// temporary (released by the caller's mark).
    fn operand_reg(&mut self, op: &Operand) -> R<Reg> {
        if let Operand::Local(l) = op {
            if let Home::Reg(r) = self.home(*l)? {
                return Ok(Reg(r));
            }
        }
        let t = self.temp()?;
        self.load(op, t)?;
        Ok(t)
    }

    /// The register holding `op`, and whether the instruction that reads
    /// it may take the value out (it is a fresh temporary, or a local read
    /// for the last time), so a collection it is put into or spread into
    /// can be the only holder.
    fn operand_owned(&mut self, op: &Operand) -> R<(Reg, bool)> {
        if let Operand::Local(l) = op {
            if let Home::Reg(r) = self.home(*l)? {
                return Ok((Reg(r), self.moving.contains(l)));
            }
        }
        let t = self.temp()?;
        self.load(op, t)?;
        Ok((t, true))
    }

    /// Loads `ops` into consecutive fresh temporaries; returns the first.
    fn consecutive<'o>(&mut self, ops: impl ExactSizeIterator<Item = &'o Operand>) -> R<Reg> {
        let n = ops.len();
        let start = self.temps(n)?;
        for (i, op) in ops.enumerate() {
            self.load(op, Reg(start.0 + i as u8))?;
        }
        Ok(start)
    }

    // ---- statements ----

    fn stmt(&mut self, s: &ral_ir::Stmt) -> R<()> {
        self.span = s.span;
        let mark = self.next;
        let (dst, slot) = match s.dst {
            Some(l) => self.def_reg(l)?,
            None => (self.temp()?, None),
        };
        let (moving, fields) = match self.last.of_stmt(s) {
            Some(l) => (l.moves.clone(), l.fields.clone()),
            None => (Vec::new(), Vec::new()),
        };
        let saved = std::mem::replace(&mut self.moving, moving);
        let saved_fields = std::mem::replace(&mut self.fields, fields);
        let r = self.expr(&s.expr, dst);
        self.moving = saved;
        self.fields = saved_fields;
        r?;
        self.store_def(dst, slot)?;
        self.release(mark);
        Ok(())
    }

    /// Loads interpolation `parts` into the registers from `start` on.
    fn interp_parts(&mut self, parts: &[InterpPart], start: Reg) -> R<()> {
        for (i, p) in parts.iter().enumerate() {
            let r = Reg(start.0 + i as u8);
            match p {
                InterpPart::Text(t) => {
                    let k = self.str_const(t)?;
                    self.emit(Op::LoadConst { dst: r, k });
                }
                InterpPart::Home => {
                    self.emit(Op::LoadHome { dst: r });
                }
                InterpPart::Value(o) => self.load(o, r)?,
            }
        }
        Ok(())
    }

    /// Builds a list of `ops` in a fresh temporary (for runs too long for
    /// consecutive registers); returns its register.
    fn list_of<'o>(&mut self, ops: impl Iterator<Item = &'o Operand>) -> R<Reg> {
        let t = self.temp()?;
        self.emit(Op::MakeList {
            dst: t,
            start: t,
            n: 0,
        });
        for o in ops {
            let mark = self.next;
            let (src, take) = self.operand_owned(o)?;
            self.emit(Op::ListPush { list: t, src, take });
            self.release(mark);
        }
        Ok(t)
    }

    /// Compiles `b` as the end of the function: its statements, then a
    /// return of its result. When the last statement is an `if` or a `case`
    /// whose value is the block's, each branch returns its own result
    /// instead of joining to copy it and return once.
    fn block_returning(&mut self, b: &Block) -> R<()> {
        let (last, init) = match b.stmts.split_last() {
            Some((last, init)) if returns_result(last, &b.result) => (Some(last), init),
            _ => (None, &b.stmts[..]),
        };
        for s in init {
            self.stmt(s)?;
        }
        if let Some(last) = last {
            return self.stmt_returning(last);
        }
        // After a tail call nothing runs, unless a jump lands here.
        let tail_called = matches!(
            self.proto.code.last(),
            Some(
                Op::TailCall { .. }
                    | Op::TailCallGlobal { .. }
                    | Op::TailCallSelf { .. }
                    | Op::TailCallSibling { .. }
                    | Op::TailCallSpread { .. }
            )
        );
        if tail_called && !self.labels.contains(&self.here()) {
            return Ok(());
        }
        let mark = self.next;
        let r = self.result_reg(b)?;
        self.emit(Op::Return { src: r });
        self.release(mark);
        Ok(())
    }

    /// An `if` or `case` statement in return position (see
    /// [`FnCx::block_returning`]): each branch ends the function.
    fn stmt_returning(&mut self, s: &ral_ir::Stmt) -> R<()> {
        self.span = s.span;
        match &s.expr {
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                let mark = self.next;
                let c = self.operand_reg(cond)?;
                self.release(mark);
                let local = match cond {
                    Operand::Local(l) => Some(*l),
                    _ => None,
                };
                let jf = self.branch_if_false(c, local);
                self.block_returning(then)?;
                let else_at = self.here();
                self.patch(jf, else_at);
                self.block_returning(otherwise)
            }
            Expr::Case { scrutinee, arms } => {
                let mark = self.next;
                let s = self.operand_reg(scrutinee)?;
                for arm in arms {
                    let test = self.tag_test(s, &arm.tag)?;
                    let m = self.next;
                    let (p, slot) = self.def_reg(arm.payload)?;
                    self.emit(Op::Payload { dst: p, src: s });
                    self.store_def(p, slot)?;
                    self.release(m);
                    self.block_returning(&arm.body)?;
                    let next = self.here();
                    self.patch(test, next);
                }
                self.emit(Op::NoArm { src: s });
                self.release(mark);
                Ok(())
            }
            _ => err("stmt_returning on a statement that is not an if or a case"),
        }
    }

    /// Emits the test that skips a `case` arm unless `r[s]` is tagged `tag`
    /// (patched later); returns the jump's index.
    fn tag_test(&mut self, s: Reg, tag: &Arc<str>) -> R<usize> {
        let tag = self.str_const(tag)?;
        Ok(match u16::try_from(tag.0) {
            Ok(tag) => self.emit(Op::JumpIfNotTag {
                src: s,
                tag,
                target: 0,
            }),
            Err(_) => {
                let mark = self.next;
                let t = self.temp()?;
                self.emit(Op::TagIs {
                    dst: t,
                    src: s,
                    tag,
                });
                self.release(mark);
                self.emit(Op::JumpIfFalse { cond: t, target: 0 })
            }
        })
    }

    /// Compiles `block`'s statements and moves its result into `dst`.
    fn block(&mut self, b: &Block, dst: Reg) -> R<()> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        let moving = self.result_moves(b);
        let saved = std::mem::replace(&mut self.moving, moving);
        let r = self.load(&b.result, dst);
        self.moving = saved;
        r
    }

    /// The locals reading `b`'s result may move (its result, when that is
    /// the last read of it).
    fn result_moves(&self, b: &Block) -> Vec<ral_ir::LocalId> {
        self.last.of_result(b).into_iter().collect()
    }

    /// The register holding `b`'s result, for a `return` (which takes the
    /// value out of the register in any case).
    fn result_reg(&mut self, b: &Block) -> R<Reg> {
        self.operand_reg(&b.result)
    }

    fn expr(&mut self, e: &Expr, dst: Reg) -> R<()> {
        match e {
            Expr::Value(op) => self.load(op, dst)?,
            Expr::Define { def, value } => {
                let name = match self.m.module.defs.get(def.0 as usize) {
                    Some(d) => Arc::<str>::from(d.name.as_str()),
                    None => return err(format!("definition d{} out of range", def.0)),
                };
                let src = self.operand_reg(value)?;
                let name = self.str_const(&name)?;
                self.emit(Op::Define { src, name });
                self.emit(Op::LoadUnit { dst });
            }
            Expr::Destructure { value, pattern } => {
                let takes = if let Operand::Local(l) = value {
                    if self.moving.contains(l) {
                        Takes::All
                    } else {
                        Takes::Fields(self.fields.clone())
                    }
                } else {
                    // A fresh temporary, dead after the pattern.
                    Takes::All
                };
                let src = self.operand_reg(value)?;
                self.pattern(src, pattern, &takes)?;
                self.emit(Op::LoadUnit { dst });
            }
            Expr::MakeList(parts) => {
                if parts.iter().all(|p| matches!(p, Part::One(_))) && self.fits(parts.len()) {
                    let ops = parts.iter().filter_map(|p| match p {
                        Part::One(o) => Some(o),
                        Part::Spread(_) => None,
                    });
                    let ops: Vec<&Operand> = ops.collect();
                    let n = ops.len() as u8;
                    let start = self.consecutive(ops.into_iter())?;
                    self.emit(Op::MakeList { dst, start, n });
                } else {
                    let t = self.temp()?;
                    self.emit(Op::MakeList {
                        dst: t,
                        start: t,
                        n: 0,
                    });
                    for p in parts {
                        let mark = self.next;
                        match p {
                            Part::One(o) => {
                                let (src, take) = self.operand_owned(o)?;
                                self.emit(Op::ListPush { list: t, src, take });
                            }
                            Part::Spread(o) => {
                                let (src, take) = self.operand_owned(o)?;
                                self.emit(Op::ListExtend { list: t, src, take });
                            }
                        }
                        self.release(mark);
                    }
                    self.emit(Op::Move { dst, src: t });
                }
            }
            Expr::MakeRecord { base: None, fields } => {
                let mut sorted: Vec<&(Arc<str>, Operand)> = fields.iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                // A repeated key keeps its last value (stable sort).
                let mut dedup: Vec<&(Arc<str>, Operand)> = Vec::with_capacity(sorted.len());
                for f in sorted {
                    if dedup.last().is_some_and(|l| l.0 == f.0) {
                        dedup.pop();
                    }
                    dedup.push(f);
                }
                let keys = Keys::new(dedup.iter().map(|f| f.0.to_string()));
                let shape = u32::try_from(self.proto.shapes.len())
                    .map_err(|_| CompileError("too many record shapes".into()))?;
                self.proto.shapes.push(keys);
                if self.fits(dedup.len()) {
                    let start = self.consecutive(dedup.iter().map(|f| &f.1))?;
                    self.emit(Op::MakeRecord { dst, shape, start });
                } else {
                    let list = self.list_of(dedup.iter().map(|f| &f.1))?;
                    self.emit(Op::MakeRecordList { dst, shape, list });
                }
            }
            Expr::MakeRecord {
                base: Some(base),
                fields,
            } => {
                let t = self.temp()?;
                self.load(base, t)?;
                for (k, v) in fields {
                    let mark = self.next;
                    let (src, take) = self.operand_owned(v)?;
                    let key = self.str_const(k)?;
                    self.emit(Op::RecordSet {
                        rec: t,
                        key,
                        src,
                        take,
                    });
                    self.release(mark);
                }
                self.emit(Op::Move { dst, src: t });
            }
            Expr::MakeMap(parts) => {
                let t = self.temp()?;
                self.emit(Op::MapNew { dst: t });
                for p in parts.iter().rev() {
                    if let MapPart::Spread(o) = p {
                        let mark = self.next;
                        let (src, take) = self.operand_owned(o)?;
                        self.emit(Op::MapSpread { map: t, src, take });
                        self.release(mark);
                    }
                }
                for p in parts {
                    if let MapPart::Entry { key, value } = p {
                        let mark = self.next;
                        let key = self.operand_reg(key)?;
                        let (src, take) = self.operand_owned(value)?;
                        self.emit(Op::MapInsert {
                            map: t,
                            key,
                            src,
                            take,
                        });
                        self.release(mark);
                    }
                }
                self.emit(Op::Move { dst, src: t });
            }
            Expr::MakeVariant { tag, payload } => {
                let tag = self.str_const(tag)?;
                match payload {
                    None => {
                        self.emit(Op::MakeTag { dst, tag });
                    }
                    Some(p) => {
                        let payload = self.operand_reg(p)?;
                        self.emit(Op::MakeVariant { dst, tag, payload });
                    }
                }
            }
            Expr::MakeClosure { func, captures } => {
                self.check_captures(*func, captures.len())?;
                let proto = self.m.base + func.0;
                if self.fits(captures.len()) {
                    let n = captures.len() as u8;
                    let start = self.consecutive(captures.iter())?;
                    self.emit(Op::MakeClosure {
                        dst,
                        start,
                        n,
                        proto,
                    });
                } else {
                    let list = self.list_of(captures.iter())?;
                    self.emit(Op::MakeClosureList { dst, list, proto });
                }
            }
            Expr::MakeRecGroup {
                funcs,
                captures,
                dsts,
            } => {
                // Captures in consecutive registers, or in a list.
                let run = if self.fits(captures.len()) {
                    Ok((self.consecutive(captures.iter())?, captures.len() as u8))
                } else {
                    Err(self.list_of(captures.iter())?)
                };
                for (f, d) in funcs.iter().zip(dsts) {
                    self.check_captures(*f, captures.len())?;
                    let mark = self.next;
                    let (d, slot) = self.def_reg(*d)?;
                    let proto = self.m.base + f.0;
                    self.emit(match run {
                        Ok((start, n)) => Op::MakeClosure {
                            dst: d,
                            start,
                            n,
                            proto,
                        },
                        Err(list) => Op::MakeClosureList {
                            dst: d,
                            list,
                            proto,
                        },
                    });
                    self.store_def(d, slot)?;
                    self.release(mark);
                }
                self.emit(Op::LoadUnit { dst });
            }
            Expr::Interp(parts) => {
                if self.fits(parts.len()) {
                    let start = self.temps(parts.len())?;
                    self.interp_parts(parts, start)?;
                    let n = parts.len() as u8;
                    self.emit(Op::Interp { dst, start, n });
                } else {
                    // A long interpolation is joined a chunk at a time: each
                    // chunk's text is appended to what came before.
                    let acc = self.temp()?;
                    let k = self.str_const(&Arc::from(""))?;
                    self.emit(Op::LoadConst { dst: acc, k });
                    for chunk in parts.chunks(MAX_RUN - 1) {
                        let mark = self.next;
                        let start = self.temps(chunk.len() + 1)?;
                        self.emit(Op::Move {
                            dst: start,
                            src: acc,
                        });
                        self.interp_parts(chunk, Reg(start.0 + 1))?;
                        let n = chunk.len() as u8 + 1;
                        self.emit(Op::Interp { dst: acc, start, n });
                        self.release(mark);
                    }
                    self.emit(Op::Move { dst, src: acc });
                }
            }
            Expr::Index { base, key, kind } => {
                // The element may be taken out of its container when
                // nothing reads the container (or that field of it) again.
                let take = matches!(base, Operand::Local(l) if self.moving.contains(l));
                let b = self.operand_reg(base)?;
                match kind {
                    IndexKind::Field(name) => {
                        let take = take || self.fields.iter().any(|f| f == name);
                        let key = self.str_const(name)?;
                        self.emit(Op::IndexField {
                            dst,
                            base: b,
                            key,
                            take,
                        });
                    }
                    IndexKind::List => {
                        let key = self.operand_reg(key)?;
                        self.emit(Op::IndexList {
                            dst,
                            base: b,
                            key,
                            take,
                        });
                    }
                    IndexKind::Map => {
                        let key = self.operand_reg(key)?;
                        self.emit(Op::IndexMap {
                            dst,
                            base: b,
                            key,
                            take,
                        });
                    }
                    IndexKind::Dynamic => {
                        let key = self.operand_reg(key)?;
                        self.emit(Op::IndexDyn {
                            dst,
                            base: b,
                            key,
                            take,
                        });
                    }
                }
            }
            Expr::Arith {
                op: op @ (ArithOp::Add | ArithOp::Sub),
                kind: NumKind::Int,
                lhs,
                rhs: Operand::Const(Const::Int(n)),
            } if imm(*op, *n).is_some() => {
                let lhs = self.operand_reg(lhs)?;
                let k = imm(*op, *n).unwrap_or_default();
                self.emit(Op::AddIntK { dst, lhs, k });
            }
            Expr::Compare {
                op,
                kind: OrdKind::Int,
                lhs,
                rhs: Operand::Const(Const::Int(n)),
            } if i16::try_from(*n).is_ok() => {
                let lhs = self.operand_reg(lhs)?;
                let k = i16::try_from(*n).unwrap_or_default();
                self.emit(match op {
                    CmpOp::Lt => Op::LtIntK { dst, lhs, k },
                    CmpOp::Le => Op::LeIntK { dst, lhs, k },
                    CmpOp::Gt => Op::GtIntK { dst, lhs, k },
                    CmpOp::Ge => Op::GeIntK { dst, lhs, k },
                });
            }
            Expr::Arith { op, kind, lhs, rhs } => {
                let lhs = self.operand_reg(lhs)?;
                let rhs = self.operand_reg(rhs)?;
                let code = match (kind, op) {
                    (NumKind::Int, ArithOp::Add) => Op::AddInt { dst, lhs, rhs },
                    (NumKind::Int, ArithOp::Sub) => Op::SubInt { dst, lhs, rhs },
                    (NumKind::Int, ArithOp::Mul) => Op::MulInt { dst, lhs, rhs },
                    (NumKind::Int, ArithOp::Div) => Op::DivInt { dst, lhs, rhs },
                    (NumKind::Int, ArithOp::Rem) => Op::RemInt { dst, lhs, rhs },
                    (NumKind::Float, ArithOp::Add) => Op::AddFloat { dst, lhs, rhs },
                    (NumKind::Float, ArithOp::Sub) => Op::SubFloat { dst, lhs, rhs },
                    (NumKind::Float, ArithOp::Mul) => Op::MulFloat { dst, lhs, rhs },
                    (NumKind::Float, ArithOp::Div) => Op::DivFloat { dst, lhs, rhs },
                    (NumKind::Float, ArithOp::Rem) => Op::RemFloat { dst, lhs, rhs },
                    (NumKind::Generic, op) => Op::Arith {
                        dst,
                        lhs,
                        rhs,
                        op: match op {
                            ArithOp::Add => ArithCode::Add,
                            ArithOp::Sub => ArithCode::Sub,
                            ArithOp::Mul => ArithCode::Mul,
                            ArithOp::Div => ArithCode::Div,
                            ArithOp::Rem => ArithCode::Rem,
                        },
                    },
                };
                self.emit(code);
            }
            Expr::Neg { kind, operand } => {
                let src = self.operand_reg(operand)?;
                self.emit(match kind {
                    NumKind::Int => Op::NegInt { dst, src },
                    NumKind::Float => Op::NegFloat { dst, src },
                    NumKind::Generic => Op::Neg { dst, src },
                });
            }
            Expr::Not(o) => {
                let src = self.operand_reg(o)?;
                self.emit(Op::Not { dst, src });
            }
            Expr::Compare { op, kind, lhs, rhs } => {
                let a = self.operand_reg(lhs)?;
                let b = self.operand_reg(rhs)?;
                let (lhs, rhs, strict) = match op {
                    CmpOp::Lt => (a, b, true),
                    CmpOp::Le => (a, b, false),
                    CmpOp::Gt => (b, a, true),
                    CmpOp::Ge => (b, a, false),
                };
                self.emit(match (kind, strict) {
                    (OrdKind::Int, true) => Op::LtInt { dst, lhs, rhs },
                    (OrdKind::Int, false) => Op::LeInt { dst, lhs, rhs },
                    (OrdKind::Float, true) => Op::LtFloat { dst, lhs, rhs },
                    (OrdKind::Float, false) => Op::LeFloat { dst, lhs, rhs },
                    (OrdKind::Str, true) => Op::LtStr { dst, lhs, rhs },
                    (OrdKind::Str, false) => Op::LeStr { dst, lhs, rhs },
                    (OrdKind::Generic, true) => Op::Lt { dst, lhs, rhs },
                    (OrdKind::Generic, false) => Op::Le { dst, lhs, rhs },
                });
            }
            Expr::Equal {
                lhs,
                rhs: Operand::Const(Const::Int(n)),
                negate,
            } if i16::try_from(*n).is_ok() => {
                // Equality with an Int literal: the checker made both
                // sides Ints.
                let lhs = self.operand_reg(lhs)?;
                let k = i16::try_from(*n).unwrap_or_default();
                self.emit(if *negate {
                    Op::NeIntK { dst, lhs, k }
                } else {
                    Op::EqIntK { dst, lhs, k }
                });
            }
            Expr::Equal { lhs, rhs, negate } => {
                let lhs = self.operand_reg(lhs)?;
                let rhs = self.operand_reg(rhs)?;
                self.emit(if *negate {
                    Op::Ne { dst, lhs, rhs }
                } else {
                    Op::Eq { dst, lhs, rhs }
                });
            }
            Expr::Call { func, args, tail } => self.call(func, args, *tail, dst)?,
            Expr::CallSpread { func, args, tail } => {
                let tail = *tail && self.no_tail == 0;
                let f = self.operand_reg(func)?;
                let list = self.temp()?;
                self.expr(&Expr::MakeList(args.clone()), list)?;
                self.emit(if tail {
                    Op::TailCallSpread { func: f, list }
                } else {
                    Op::CallSpread { func: f, list, dst }
                });
            }
            Expr::Force { thunk, tail } => self.call(thunk, &[], *tail, dst)?,
            Expr::Exec {
                head,
                args,
                redirects,
            } => {
                if !redirects.is_empty() {
                    self.redirects(redirects)?;
                    self.no_tail += 1;
                }
                let mark = self.next;
                let list = self.temp()?;
                self.expr(&Expr::MakeList(args.clone()), list)?;
                if is_echo(head) {
                    self.emit(Op::Echo { dst, list });
                } else {
                    let (h, mode) = match head {
                        ExecHead::Name(n) | ExecHead::External(n) => {
                            let t = self.temp()?;
                            let k = self.str_const(&Arc::from(n.as_str()))?;
                            self.emit(Op::LoadConst { dst: t, k });
                            let mode = if matches!(head, ExecHead::Name(_)) {
                                ExecMode::Name
                            } else {
                                ExecMode::External
                            };
                            (t, mode)
                        }
                        ExecHead::Base(id) => {
                            let name = ral_types::builtin_table()
                                .entry(*id)
                                .map_or("?", |b| b.name);
                            let t = self.temp()?;
                            let k = self.str_const(&Arc::from(name))?;
                            self.emit(Op::LoadConst { dst: t, k });
                            (t, ExecMode::Name)
                        }
                        ExecHead::Path(o) => (self.operand_reg(o)?, ExecMode::Path),
                    };
                    self.emit(Op::Exec {
                        dst,
                        head: h,
                        args: list,
                        mode,
                    });
                }
                self.release(mark);
                if !redirects.is_empty() {
                    self.no_tail -= 1;
                    self.emit(Op::IoPop);
                }
            }
            Expr::If {
                cond,
                then,
                otherwise,
            } => {
                let mark = self.next;
                let c = self.operand_reg(cond)?;
                self.release(mark);
                let local = match cond {
                    Operand::Local(l) => Some(*l),
                    _ => None,
                };
                let jf = self.branch_if_false(c, local);
                self.block(then, dst)?;
                let jend = self.emit(Op::Jump { target: 0 });
                let else_at = self.here();
                self.patch(jf, else_at);
                self.block(otherwise, dst)?;
                let end = self.here();
                self.patch(jend, end);
            }
            Expr::Case { scrutinee, arms } => {
                let s = self.operand_reg(scrutinee)?;
                let mut ends = Vec::with_capacity(arms.len());
                for arm in arms {
                    let test = self.tag_test(s, &arm.tag)?;
                    let mark = self.next;
                    let (p, slot) = self.def_reg(arm.payload)?;
                    self.emit(Op::Payload { dst: p, src: s });
                    self.store_def(p, slot)?;
                    self.release(mark);
                    self.block(&arm.body, dst)?;
                    ends.push(self.emit(Op::Jump { target: 0 }));
                    let next = self.here();
                    self.patch(test, next);
                }
                self.emit(Op::NoArm { src: s });
                let end = self.here();
                for j in ends {
                    self.patch(j, end);
                }
            }
            Expr::Chain(alts) => {
                let mut ends = Vec::new();
                let n = alts.len();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 == n {
                        self.block(alt, dst)?;
                    } else {
                        let push = self.emit(Op::PushChain { target: 0 });
                        self.no_tail += 1;
                        self.block(alt, dst)?;
                        self.no_tail -= 1;
                        self.emit(Op::PopHandler);
                        ends.push(self.emit(Op::Jump { target: 0 }));
                        let next = self.here();
                        self.patch(push, next);
                    }
                }
                if n == 0 {
                    self.emit(Op::LoadUnit { dst });
                }
                let end = self.here();
                for j in ends {
                    self.patch(j, end);
                }
            }
            Expr::Try {
                body,
                error,
                handler,
            } => {
                // A spilled error local is caught in a temporary held across
                // the body, and stored where the handler starts.
                let mark = self.next;
                let (err_reg, slot) = self.def_reg(*error)?;
                let push = self.emit(Op::PushTry {
                    err: err_reg,
                    target: 0,
                });
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::PopHandler);
                let jend = self.emit(Op::Jump { target: 0 });
                let catch = self.here();
                self.patch(push, catch);
                self.store_def(err_reg, slot)?;
                self.release(mark);
                self.block(handler, dst)?;
                let end = self.here();
                self.patch(jend, end);
            }
            Expr::Capture(body) => {
                self.emit(Op::CaptureBegin);
                let t = self.temp()?;
                self.no_tail += 1;
                self.block(body, t)?;
                self.no_tail -= 1;
                self.emit(Op::CaptureEnd { dst });
            }
            Expr::Guard { body, cleanup } => {
                let push = self.emit(Op::PushGuard { target: 0 });
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::PopHandler);
                let mark = self.next;
                let t = self.temp()?;
                self.block(cleanup, t)?;
                let jend = self.emit(Op::Jump { target: 0 });
                let held = self.here();
                self.patch(push, held);
                self.block(cleanup, t)?;
                self.emit(Op::Reraise);
                self.release(mark);
                let end = self.here();
                self.patch(jend, end);
            }
            Expr::Within { options, body } => {
                let mark = self.next;
                let o = self.operand_reg(options)?;
                self.emit(Op::WithinPush { opts: o });
                self.release(mark);
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::WithinPop);
            }
            Expr::Grant { caps, body } => {
                let mark = self.next;
                let c = self.operand_reg(caps)?;
                self.emit(Op::GrantPush { caps: c });
                self.release(mark);
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::GrantPop);
            }
            Expr::Audit { body } => {
                // Where the scope's observations begin and the error record
                // a failure lands with are held across the body.
                let mark = self.next;
                let m = self.temp()?;
                let e = self.temp()?;
                let push = self.emit(Op::AuditBegin {
                    mark: m,
                    err: e,
                    target: 0,
                });
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::AuditEnd { dst, mark: m });
                let jend = self.emit(Op::Jump { target: 0 });
                let catch = self.here();
                self.patch(push, catch);
                self.emit(Op::AuditFail {
                    dst,
                    mark: m,
                    err: e,
                });
                self.release(mark);
                let end = self.here();
                self.patch(jend, end);
            }
            Expr::Redirected { body, redirects } => {
                self.redirects(redirects)?;
                self.no_tail += 1;
                self.block(body, dst)?;
                self.no_tail -= 1;
                self.emit(Op::IoPop);
            }
            Expr::Pipeline(stages) => {
                let Some((last, rest)) = stages.split_last() else {
                    self.emit(Op::LoadUnit { dst });
                    return Ok(());
                };
                self.emit(Op::PipeBegin);
                for stage in rest {
                    let p = self.compile_stage(stage)?;
                    self.emit(Op::PipeStage { proto: p });
                }
                self.emit(Op::PipeLast);
                self.no_tail += 1;
                self.block(last, dst)?;
                self.no_tail -= 1;
                self.emit(Op::PipeEnd);
            }
        }
        Ok(())
    }

    fn check_captures(&self, f: FuncId, n: usize) -> R<()> {
        match self.m.module.funcs.get(f.0 as usize) {
            Some(func) if func.captures.len() == n => Ok(()),
            Some(func) => err(format!(
                "function f{} captures {} values but is given {n}",
                f.0,
                func.captures.len()
            )),
            None => err(format!("function f{} out of range", f.0)),
        }
    }

    fn call(&mut self, func: &Operand, args: &[Operand], tail: bool, dst: Reg) -> R<()> {
        let tail = tail && self.no_tail == 0;
        if !self.fits(args.len()) {
            // More arguments than a run of registers holds: pass them as a
            // list, as a call with a spread does.
            let f = self.operand_reg(func)?;
            let list = self.list_of(args.iter())?;
            self.emit(if tail {
                Op::TailCallSpread { func: f, list }
            } else {
                Op::CallSpread { func: f, list, dst }
            });
            return Ok(());
        }
        let argc = args.len() as u8;
        match func {
            Operand::Builtin(id) => {
                let name = ral_types::builtin_table().entry(*id).map(|b| b.name);
                if name == Some("exit") && args.len() == 1 {
                    let src = self.operand_reg(&args[0])?;
                    self.emit(Op::Exit { src });
                    return Ok(());
                }
                if let Some(def) = crate::builtins::by_table_id(*id) {
                    if usize::from(def.arity) == args.len() {
                        let builtin = crate::builtins::registry()
                            .iter()
                            .position(|d| d.name == def.name)
                            .and_then(|i| u16::try_from(i).ok())
                            .unwrap_or(u16::MAX);
                        let start = self.consecutive(args.iter())?;
                        self.emit(Op::CallBuiltin {
                            builtin,
                            args: start,
                            argc,
                            dst,
                        });
                        return Ok(());
                    }
                }
            }
            Operand::Sibling(i) if !self.proto.siblings.is_empty() && u16::try_from(*i).is_ok() => {
                let member = u16::try_from(*i).unwrap_or_default();
                let start = self.consecutive(args.iter())?;
                self.emit(if tail {
                    Op::TailCallSibling {
                        member,
                        args: start,
                        argc,
                    }
                } else {
                    Op::CallSibling {
                        member,
                        args: start,
                        argc,
                        dst,
                    }
                });
                return Ok(());
            }
            Operand::Global { name, def } => {
                let slot = self.global_slot(name, *def)?.0;
                let calls_itself = !self.is_stage
                    && usize::from(argc) == usize::from(self.proto.n_params)
                    && def.is_some_and(|d| self.m.self_defs.get(&d.0) == Some(&self.root.0));
                if calls_itself {
                    let start = self.consecutive(args.iter())?;
                    self.emit(if tail {
                        Op::TailCallSelf {
                            slot,
                            args: start,
                            argc,
                        }
                    } else {
                        Op::CallSelf {
                            slot,
                            args: start,
                            argc,
                            dst,
                        }
                    });
                    return Ok(());
                }
                let start = self.consecutive(args.iter())?;
                self.emit(if tail {
                    Op::TailCallGlobal {
                        slot,
                        args: start,
                        argc,
                    }
                } else {
                    Op::CallGlobal {
                        slot,
                        args: start,
                        argc,
                        dst,
                    }
                });
                return Ok(());
            }
            Operand::Unit
            | Operand::Const(_)
            | Operand::Local(_)
            | Operand::Captured(_)
            | Operand::Sibling(_)
            | Operand::Script => {}
        }
        let f = self.operand_reg(func)?;
        let start = self.consecutive(args.iter())?;
        self.emit(if tail {
            Op::TailCall {
                func: f,
                args: start,
                argc,
            }
        } else {
            Op::Call {
                func: f,
                args: start,
                argc,
                dst,
            }
        });
        Ok(())
    }

    /// Binds `pat` from the value in `src`; `takes` says what of the value
    /// nothing reads afterwards (what the extracting instructions may take
    /// out of a value held only by `src`).
    fn pattern(&mut self, src: Reg, pat: &Pat, takes: &Takes) -> R<()> {
        match pat {
            Pat::Wildcard => {}
            Pat::Bind(l) => match self.home(*l)? {
                Home::Reg(r) if Reg(r) == src => {}
                Home::Reg(r) if takes.all() => {
                    self.emit(Op::Move { dst: Reg(r), src });
                }
                Home::Reg(r) => {
                    self.emit(Op::Copy { dst: Reg(r), src });
                }
                Home::Spill(_) | Home::Unused => {
                    let (_, slot) = self.def_reg(*l)?;
                    self.store_def(src, slot)?;
                }
            },
            Pat::List { items, rest } => {
                let n = u32::try_from(items.len())
                    .map_err(|_| CompileError("list pattern too long".into()))?;
                self.emit(Op::MatchList {
                    src,
                    n,
                    rest: rest.is_some(),
                });
                let take = takes.all();
                for (i, p) in items.iter().enumerate() {
                    let mark = self.next;
                    let idx = i as u32;
                    match p {
                        Pat::Wildcard => continue,
                        Pat::Bind(l) => {
                            let (dst, slot) = self.def_reg(*l)?;
                            self.emit(Op::ListAt {
                                dst,
                                src,
                                idx,
                                take,
                            });
                            self.store_def(dst, slot)?;
                        }
                        Pat::List { .. } | Pat::Fields(_) => {
                            let dst = self.temp()?;
                            self.emit(Op::ListAt {
                                dst,
                                src,
                                idx,
                                take,
                            });
                            // The temporary is read by the nested pattern
                            // alone.
                            self.pattern(dst, p, &Takes::All)?;
                        }
                    }
                    self.release(mark);
                }
                if let Some(Some(l)) = rest {
                    let mark = self.next;
                    let (dst, slot) = self.def_reg(*l)?;
                    self.emit(Op::ListFrom { dst, src, from: n });
                    self.store_def(dst, slot)?;
                    self.release(mark);
                }
            }
            Pat::Fields(fields) => {
                // A field named twice is read twice: take neither.
                let distinct = fields
                    .iter()
                    .enumerate()
                    .all(|(i, (k, _))| fields[..i].iter().all(|(j, _)| j != k));
                for (k, p) in fields {
                    let mark = self.next;
                    let key = self.str_const(k)?;
                    let take = distinct && takes.field(k) && !matches!(p, Pat::Wildcard);
                    match p {
                        Pat::Bind(l) => {
                            let (dst, slot) = self.def_reg(*l)?;
                            self.emit(Op::IndexField {
                                dst,
                                base: src,
                                key,
                                take,
                            });
                            self.store_def(dst, slot)?;
                        }
                        Pat::Wildcard | Pat::List { .. } | Pat::Fields(_) => {
                            let dst = self.temp()?;
                            self.emit(Op::IndexField {
                                dst,
                                base: src,
                                key,
                                take,
                            });
                            self.pattern(dst, p, &Takes::All)?;
                        }
                    }
                    self.release(mark);
                }
            }
        }
        Ok(())
    }
}

/// Whether `s` is an `if` or a `case` whose value is the block result
/// `result` (so its branches may return directly).
fn returns_result(s: &ral_ir::Stmt, result: &Operand) -> bool {
    matches!(s.expr, Expr::If { .. } | Expr::Case { .. })
        && s.dst.is_some_and(|d| *result == Operand::Local(d))
}

/// The immediate for `x + n` / `x - n`, if it fits.
fn imm(op: ArithOp, n: i64) -> Option<i16> {
    match op {
        ArithOp::Add => i16::try_from(n).ok(),
        ArithOp::Sub => n.checked_neg().and_then(|m| i16::try_from(m).ok()),
        ArithOp::Mul | ArithOp::Div | ArithOp::Rem => None,
    }
}

/// The registers that may hold a heap value when a frame of `p` returns:
/// its parameters and the destinations of its non-scalar ops. `None` (clear
/// everything) when the code has an op that writes registers in ways this
/// does not follow (patterns, handlers' error records, collections, …).
fn clear_list(p: &Proto) -> Option<Box<[u8]>> {
    if p.n_params > 255 {
        return None;
    }
    let mut regs: Vec<u8> = (0..p.n_params).map(|r| r as u8).collect();
    for op in &p.code {
        match op {
            Op::LoadInt { .. }
            | Op::LoadBool { .. }
            | Op::LoadUnit { .. }
            | Op::AddIntK { .. }
            | Op::LtIntK { .. }
            | Op::LeIntK { .. }
            | Op::GtIntK { .. }
            | Op::GeIntK { .. }
            | Op::EqIntK { .. }
            | Op::NeIntK { .. }
            | Op::JumpIfNotEqIntK { .. }
            | Op::JumpIfNotNeIntK { .. }
            | Op::AddInt { .. }
            | Op::SubInt { .. }
            | Op::MulInt { .. }
            | Op::DivInt { .. }
            | Op::RemInt { .. }
            | Op::AddFloat { .. }
            | Op::SubFloat { .. }
            | Op::MulFloat { .. }
            | Op::DivFloat { .. }
            | Op::RemFloat { .. }
            | Op::LtInt { .. }
            | Op::LeInt { .. }
            | Op::LtFloat { .. }
            | Op::LeFloat { .. }
            | Op::Jump { .. }
            | Op::JumpIfFalse { .. }
            | Op::JumpIfNotLtIntK { .. }
            | Op::JumpIfNotLeIntK { .. }
            | Op::JumpIfNotGtIntK { .. }
            | Op::JumpIfNotGeIntK { .. }
            | Op::JumpIfNotLtInt { .. }
            | Op::JumpIfNotLeInt { .. }
            | Op::Return { .. }
            // Writes only the parameters (listed), and keeps the proto.
            | Op::TailCallSelf { .. } => {}
            Op::Copy { dst, .. }
            | Op::Move { dst, .. }
            | Op::LoadConst { dst, .. }
            | Op::GetGlobal { dst, .. }
            | Op::LoadCapture { dst, .. }
            | Op::CallGlobal { dst, .. }
            | Op::CallSelf { dst, .. } => regs.push(dst.0),
            _ => return None,
        }
    }
    regs.sort_unstable();
    regs.dedup();
    Some(regs.into_boxed_slice())
}

/// Every register a simple straight-line instruction reads or writes, for
/// the copy-folding peephole; `None` for any other instruction.
fn simple_regs(op: &Op) -> Option<[Option<Reg>; 3]> {
    Some(match *op {
        Op::LoadInt { dst, .. }
        | Op::LoadConst { dst, .. }
        | Op::LoadBool { dst, .. }
        | Op::LoadUnit { dst }
        | Op::GetGlobal { dst, .. }
        | Op::LoadCapture { dst, .. } => [Some(dst), None, None],
        Op::Copy { dst, src } | Op::Move { dst, src } => [Some(dst), Some(src), None],
        Op::AddIntK { dst, lhs, .. }
        | Op::LtIntK { dst, lhs, .. }
        | Op::LeIntK { dst, lhs, .. }
        | Op::GtIntK { dst, lhs, .. }
        | Op::GeIntK { dst, lhs, .. }
        | Op::EqIntK { dst, lhs, .. }
        | Op::NeIntK { dst, lhs, .. } => [Some(dst), Some(lhs), None],
        Op::AddInt { dst, lhs, rhs }
        | Op::SubInt { dst, lhs, rhs }
        | Op::MulInt { dst, lhs, rhs }
        | Op::DivInt { dst, lhs, rhs }
        | Op::RemInt { dst, lhs, rhs }
        | Op::AddFloat { dst, lhs, rhs }
        | Op::SubFloat { dst, lhs, rhs }
        | Op::MulFloat { dst, lhs, rhs }
        | Op::DivFloat { dst, lhs, rhs }
        | Op::RemFloat { dst, lhs, rhs }
        | Op::LtInt { dst, lhs, rhs }
        | Op::LeInt { dst, lhs, rhs }
        | Op::LtFloat { dst, lhs, rhs }
        | Op::LeFloat { dst, lhs, rhs } => [Some(dst), Some(lhs), Some(rhs)],
        _ => return None,
    })
}

/// The register an instruction writes and nothing else, for the ops whose
/// destination a peephole may redirect (pure computations and calls, whose
/// result is written when they return).
fn dst_of(op: &mut Op) -> Option<&mut Reg> {
    match op {
        Op::LoadInt { dst, .. }
        | Op::LoadConst { dst, .. }
        | Op::LoadBool { dst, .. }
        | Op::LoadUnit { dst }
        | Op::Copy { dst, .. }
        | Op::Move { dst, .. }
        | Op::GetGlobal { dst, .. }
        | Op::LoadCapture { dst, .. }
        | Op::AddIntK { dst, .. }
        | Op::LtIntK { dst, .. }
        | Op::LeIntK { dst, .. }
        | Op::GtIntK { dst, .. }
        | Op::GeIntK { dst, .. }
        | Op::EqIntK { dst, .. }
        | Op::NeIntK { dst, .. }
        | Op::AddInt { dst, .. }
        | Op::SubInt { dst, .. }
        | Op::MulInt { dst, .. }
        | Op::DivInt { dst, .. }
        | Op::RemInt { dst, .. }
        | Op::AddFloat { dst, .. }
        | Op::SubFloat { dst, .. }
        | Op::MulFloat { dst, .. }
        | Op::DivFloat { dst, .. }
        | Op::RemFloat { dst, .. }
        | Op::LtInt { dst, .. }
        | Op::LeInt { dst, .. }
        | Op::LtFloat { dst, .. }
        | Op::LeFloat { dst, .. }
        | Op::CallGlobal { dst, .. }
        | Op::CallSelf { dst, .. } => Some(dst),
        _ => None,
    }
}

/// Adds one to `uses[l]` for every read of local `l` in `block`, nested
/// blocks included (a pipeline stage's reads count: it copies the locals).
fn count_block(block: &Block, uses: &mut [u32]) {
    for st in &block.stmts {
        count_expr(&st.expr, uses);
    }
    count_operand(&block.result, uses);
}

fn count_operand(op: &Operand, uses: &mut [u32]) {
    if let Operand::Local(l) = op {
        if let Some(u) = uses.get_mut(l.0 as usize) {
            *u = u.saturating_add(1);
        }
    }
}

fn count_parts(parts: &[Part], uses: &mut [u32]) {
    for p in parts {
        match p {
            Part::One(o) | Part::Spread(o) => count_operand(o, uses),
        }
    }
}

fn count_redirects(rs: &[ral_ir::Redirect], uses: &mut [u32]) {
    use ral_ir::RedirectKind as K;
    for r in rs {
        match &r.kind {
            K::Write(o) | K::Stream(o) | K::Append(o) | K::Read(o) | K::Here(o) => {
                count_operand(o, uses)
            }
            K::ErrToOut | K::Dup(_) => {}
        }
    }
}

fn count_expr(e: &Expr, uses: &mut [u32]) {
    let op = |o: &Operand, uses: &mut [u32]| count_operand(o, uses);
    match e {
        Expr::Value(o) | Expr::Not(o) => op(o, uses),
        Expr::Define { value, .. } | Expr::Destructure { value, .. } => op(value, uses),
        Expr::MakeList(parts) => count_parts(parts, uses),
        Expr::MakeRecord { base, fields } => {
            if let Some(b) = base {
                op(b, uses);
            }
            for (_, o) in fields {
                op(o, uses);
            }
        }
        Expr::MakeMap(parts) => {
            for p in parts {
                match p {
                    MapPart::Entry { key, value } => {
                        op(key, uses);
                        op(value, uses);
                    }
                    MapPart::Spread(o) => op(o, uses),
                }
            }
        }
        Expr::MakeVariant { payload, .. } => {
            if let Some(p) = payload {
                op(p, uses);
            }
        }
        Expr::MakeClosure { captures, .. } | Expr::MakeRecGroup { captures, .. } => {
            for c in captures {
                op(c, uses);
            }
        }
        Expr::Interp(parts) => {
            for p in parts {
                match p {
                    InterpPart::Value(o) => op(o, uses),
                    InterpPart::Text(_) | InterpPart::Home => {}
                }
            }
        }
        Expr::Index { base, key, .. } => {
            op(base, uses);
            op(key, uses);
        }
        Expr::Arith { lhs, rhs, .. }
        | Expr::Compare { lhs, rhs, .. }
        | Expr::Equal { lhs, rhs, .. } => {
            op(lhs, uses);
            op(rhs, uses);
        }
        Expr::Neg { operand, .. } => op(operand, uses),
        Expr::Call { func, args, .. } => {
            op(func, uses);
            for a in args {
                op(a, uses);
            }
        }
        Expr::CallSpread { func, args, .. } => {
            op(func, uses);
            count_parts(args, uses);
        }
        Expr::Force { thunk, .. } => op(thunk, uses),
        Expr::Exec {
            head,
            args,
            redirects,
        } => {
            match head {
                ExecHead::Path(o) => op(o, uses),
                ExecHead::Name(_) | ExecHead::Base(_) | ExecHead::External(_) => {}
            }
            count_parts(args, uses);
            count_redirects(redirects, uses);
        }
        Expr::If {
            cond,
            then,
            otherwise,
        } => {
            op(cond, uses);
            count_block(then, uses);
            count_block(otherwise, uses);
        }
        Expr::Case { scrutinee, arms } => {
            op(scrutinee, uses);
            for a in arms {
                count_block(&a.body, uses);
            }
        }
        Expr::Chain(blocks) | Expr::Pipeline(blocks) => {
            for b in blocks {
                count_block(b, uses);
            }
        }
        Expr::Try { body, handler, .. } => {
            count_block(body, uses);
            count_block(handler, uses);
        }
        Expr::Guard { body, cleanup } => {
            count_block(body, uses);
            count_block(cleanup, uses);
        }
        Expr::Within { options, body } => {
            op(options, uses);
            count_block(body, uses);
        }
        Expr::Grant { caps, body } => {
            op(caps, uses);
            count_block(body, uses);
        }
        Expr::Audit { body } | Expr::Capture(body) => count_block(body, uses),
        Expr::Redirected { body, redirects } => {
            count_block(body, uses);
            count_redirects(redirects, uses);
        }
    }
}

/// Whether `head` is the base handler `echo`.
fn is_echo(head: &ExecHead) -> bool {
    match head {
        ExecHead::Base(id) => ral_types::builtin_table()
            .entry(*id)
            .is_some_and(|b| b.name == "echo"),
        ExecHead::Name(_) | ExecHead::External(_) | ExecHead::Path(_) => false,
    }
}

// `CaptureFrom` is the lowering's record of where captures come from; the
// compiler takes the `MakeClosure` operands instead.
const _: Option<CaptureFrom> = None;
