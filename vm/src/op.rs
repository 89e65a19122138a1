//! The register bytecode: [`Op`], [`Proto`] and the disassembler.
//!
//! Notation in the variant docs: `r[x]` is register `x` of the current frame,
//! `k[x]` constant `x` of the current proto, `g[x]` session slot `x`.
//! Registers are frame-relative [`Reg`]s; a call's arguments sit in
//! consecutive registers `r[args..args+argc]` and become the callee's
//! `r[0..argc]` (the callee's window starts there, so no copy is made).
//! Jump targets are absolute code indices.
//!
//! Deviation from STYLE §3.3: `r0` is the first parameter, not a pipeline
//! input (pipelines are not compiled yet).

use std::fmt::Write as _;

use ral_syntax::Span;

use crate::value::{Keys, Value};

/// A frame-relative register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Reg(pub u8);

/// An index into the proto's constant pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConstIdx(pub u32);

/// An arithmetic operation of the generic [`Op::Arith`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithCode {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A language feature this VM does not run yet; [`Op::Unsupported`] fails
/// naming it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// External commands and command dispatch (`Exec`).
    Exec,
    Within,
    Grant,
    Pipeline,
    Redirect,
    Guard,
    /// A `Sibling` reference outside the group's own members.
    NestedSibling,
}

impl Feature {
    /// The feature's name for the runtime error.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Exec => "running commands (external programs and command dispatch)",
            Feature::Within => "`within`",
            Feature::Grant => "`grant`",
            Feature::Pipeline => "pipelines",
            Feature::Redirect => "redirects",
            Feature::Guard => "`guard`",
            Feature::NestedSibling => "a recursive-group member referenced from a nested block",
        }
    }
}

/// One instruction. See the module docs for the notation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// `r[dst] := k[k]`.
    LoadConst { dst: Reg, k: ConstIdx },
    /// `r[dst] := value` (an Int immediate).
    LoadInt { dst: Reg, value: i32 },
    /// `r[dst] := ()`.
    LoadUnit { dst: Reg },
    /// `r[dst] := value` (a Bool).
    LoadBool { dst: Reg, value: bool },
    /// `r[dst] := r[src]` (a clone: a refcount bump at most).
    Copy { dst: Reg, src: Reg },
    /// `r[dst] := r[src]`, leaving `()` in `r[src]`: the last read of a
    /// local, or a temporary handed on, so no second reference stays
    /// behind.
    Move { dst: Reg, src: Reg },
    /// `r[dst] := captures[idx]` of the running closure.
    LoadCapture { dst: Reg, idx: u32 },
    /// `r[dst] :=` member `member` of the running closure's recursive group,
    /// made from the running closure's captures.
    LoadSibling { dst: Reg, member: u32 },
    /// `r[dst] :=` the builtin with table id `id`, unapplied.
    LoadBuiltin { dst: Reg, id: u16 },
    /// `r[dst] := $SCRIPT`.
    LoadScript { dst: Reg },
    /// `r[dst] :=` the home directory (`~` in interpolation).
    LoadHome { dst: Reg },
    /// `r[dst] := g[slot]`; an empty slot fails ("not defined").
    GetGlobal { dst: Reg, slot: u32 },
    /// Installs `r[src]` under the name `k[name]` (the §5.6 chokepoint).
    Define { src: Reg, name: ConstIdx },

    /// `r[dst] := r[lhs] + r[rhs]`; Ints; overflow fails.
    AddInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] - r[rhs]`; Ints; overflow fails.
    SubInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] * r[rhs]`; Ints; overflow fails.
    MulInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] / r[rhs]`; Ints, truncating; zero and overflow fail.
    DivInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] % r[rhs]`; Ints, sign of `lhs`; zero fails.
    RemInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] + k` (an immediate; `-` is `+` of the negation);
    /// Ints; overflow fails.
    AddIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] < k` (an immediate); Ints.
    LtIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] <= k` (an immediate); Ints.
    LeIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] > k` (an immediate); Ints.
    GtIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] >= k` (an immediate); Ints.
    GeIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] + r[rhs]`; Floats; a non-finite result fails.
    AddFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] - r[rhs]`; Floats; a non-finite result fails.
    SubFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] * r[rhs]`; Floats; a non-finite result fails.
    MulFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] / r[rhs]`; Floats; a non-finite result fails.
    DivFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] % r[rhs]`; Floats; a non-finite result fails.
    RemFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] op r[rhs]` on two Ints or two Floats, by run-time kind.
    Arith {
        dst: Reg,
        lhs: Reg,
        rhs: Reg,
        op: ArithCode,
    },
    /// `r[dst] := -r[src]`; Int; overflow fails.
    NegInt { dst: Reg, src: Reg },
    /// `r[dst] := -r[src]`; Float.
    NegFloat { dst: Reg, src: Reg },
    /// `r[dst] := -r[src]`; Int or Float by run-time kind.
    Neg { dst: Reg, src: Reg },
    /// `r[dst] := not r[src]`.
    Not { dst: Reg, src: Reg },
    /// `r[dst] := r[lhs] < r[rhs]`; Ints.
    LtInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] <= r[rhs]`; Ints.
    LeInt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] < r[rhs]`; Floats.
    LtFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] <= r[rhs]`; Floats.
    LeFloat { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] < r[rhs]`; Strings by code point.
    LtStr { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] <= r[rhs]`; Strings by code point.
    LeStr { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] < r[rhs]` by run-time kind; incomparable fails.
    Lt { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] <= r[rhs]` by run-time kind; incomparable fails.
    Le { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] == r[rhs]` (structural).
    Eq { dst: Reg, lhs: Reg, rhs: Reg },
    /// `r[dst] := r[lhs] == k` (an Int known to be compared with an Int
    /// literal).
    EqIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] != k` (Ints).
    NeIntK { dst: Reg, lhs: Reg, k: i16 },
    /// `r[dst] := r[lhs] != r[rhs]` (structural).
    Ne { dst: Reg, lhs: Reg, rhs: Reg },

    /// `pc := target`; a backward jump polls for cancellation.
    Jump { target: u32 },
    /// `if not r[cond] then pc := target`.
    JumpIfFalse { cond: Reg, target: u32 },
    /// `if not (r[lhs] < k) then pc := target` (Ints; a fused compare and
    /// branch, emitted when the Bool is used only by the branch).
    JumpIfNotLtIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] <= k) then pc := target` (Ints).
    JumpIfNotLeIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] > k) then pc := target` (Ints).
    JumpIfNotGtIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] >= k) then pc := target` (Ints).
    JumpIfNotGeIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] == k) then pc := target` (Ints).
    JumpIfNotEqIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] != k) then pc := target` (Ints).
    JumpIfNotNeIntK { lhs: Reg, k: i16, target: u32 },
    /// `if not (r[lhs] < r[rhs]) then pc := target` (Ints).
    JumpIfNotLtInt { lhs: Reg, rhs: Reg, target: u32 },
    /// `if not (r[lhs] <= r[rhs]) then pc := target` (Ints).
    JumpIfNotLeInt { lhs: Reg, rhs: Reg, target: u32 },
    /// `if r[src] is not a variant tagged k[tag] then pc := target`. The
    /// tag's constant index is below 65,536 (beyond, the compiler emits
    /// `TagIs` and `JumpIfFalse`).
    JumpIfNotTag { src: Reg, tag: u16, target: u32 },
    /// `r[dst] :=` whether `r[src]` is a variant tagged `k[tag]`.
    TagIs { dst: Reg, src: Reg, tag: ConstIdx },
    /// `r[dst] :=` the payload of variant `r[src]` (`()` if none).
    Payload { dst: Reg, src: Reg },
    /// Fails: no `case` arm matched the tag of `r[src]`.
    NoArm { src: Reg },

    /// `r[dst] := [r[start..start+n]]`.
    MakeList { dst: Reg, start: Reg, n: u8 },
    /// Appends `r[src]` to the list in `r[list]` (in place when unshared);
    /// with `take`, leaves `()` in `r[src]`.
    ListPush { list: Reg, src: Reg, take: bool },
    /// Appends the items of list `r[src]` to the list in `r[list]` (an
    /// empty `r[list]` becomes `r[src]` itself); with `take`, leaves `()`
    /// in `r[src]`.
    ListExtend { list: Reg, src: Reg, take: bool },
    /// `r[dst] :=` record of shape `shapes[shape]` with values
    /// `r[start..start+len]` in sorted key order.
    MakeRecord { dst: Reg, shape: u32, start: Reg },
    /// `r[dst] :=` record of shape `shapes[shape]` whose values are the
    /// items of the list `r[list]`, in sorted key order (a literal with
    /// more fields than fit in consecutive registers).
    MakeRecordList { dst: Reg, shape: u32, list: Reg },
    /// `r[rec] := r[rec]` with field `k[key]` set to `r[src]` (in place
    /// when unshared); with `take`, leaves `()` in `r[src]`.
    RecordSet {
        rec: Reg,
        key: ConstIdx,
        src: Reg,
        take: bool,
    },
    /// `r[dst] := [:]`.
    MapNew { dst: Reg },
    /// `r[map] := r[map]` with every entry of `r[src]` set (later wins; an
    /// empty `r[map]` becomes `r[src]` itself); with `take`, leaves `()` in
    /// `r[src]`.
    MapSpread { map: Reg, src: Reg, take: bool },
    /// `r[map] := r[map]` with key `r[key]` (a String) set to `r[src]` (in
    /// place when unshared); with `take`, leaves `()` in `r[src]`.
    MapInsert {
        map: Reg,
        key: Reg,
        src: Reg,
        take: bool,
    },
    /// `r[dst] := `k[tag] r[payload]`.
    MakeVariant {
        dst: Reg,
        tag: ConstIdx,
        payload: Reg,
    },
    /// `r[dst] := `k[tag]` (no payload).
    MakeTag { dst: Reg, tag: ConstIdx },
    /// `r[dst] :=` closure of program proto `proto` capturing
    /// `r[start..start+n]`.
    MakeClosure {
        dst: Reg,
        start: Reg,
        n: u8,
        proto: u32,
    },
    /// `r[dst] :=` closure of program proto `proto` capturing the items of
    /// the list `r[list]` (more captures than fit in consecutive registers).
    MakeClosureList { dst: Reg, list: Reg, proto: u32 },
    /// `r[dst] :=` the texts of `r[start..start+n]` joined.
    Interp { dst: Reg, start: Reg, n: u8 },

    /// `r[dst] := r[base][r[key]]` on a List by Int; out of range fails.
    /// With `take` (nothing reads that element of `r[base]` again), the
    /// element is taken out of a list held only by `r[base]` instead of
    /// copied; likewise for the other indexing instructions.
    IndexList {
        dst: Reg,
        base: Reg,
        key: Reg,
        take: bool,
    },
    /// `r[dst] := r[base].k[key]`; a missing field fails.
    IndexField {
        dst: Reg,
        base: Reg,
        key: ConstIdx,
        take: bool,
    },
    /// `r[dst] := r[base][r[key]]` on a map by String; a missing key fails.
    IndexMap {
        dst: Reg,
        base: Reg,
        key: Reg,
        take: bool,
    },
    /// `r[dst] := r[base][r[key]]` by the run-time kinds.
    IndexDyn {
        dst: Reg,
        base: Reg,
        key: Reg,
        take: bool,
    },
    /// Fails unless `r[src]` is a List of exactly `n` items (at least `n`
    /// when `rest`).
    MatchList { src: Reg, n: u32, rest: bool },
    /// `r[dst] := r[src][idx]` (shape already checked by `MatchList`);
    /// `take` as for `IndexList`.
    ListAt {
        dst: Reg,
        src: Reg,
        idx: u32,
        take: bool,
    },
    /// `r[dst] := r[src][from..]`.
    ListFrom { dst: Reg, src: Reg, from: u32 },

    /// Function entry of a proto with spilled locals: `r[spill] :=` a list
    /// of `slots` units (the spill area), after moving the parameters
    /// `r[params_from..n_params]` (those past the register budget) into its
    /// first slots, in order.
    SpillEnter {
        spill: Reg,
        params_from: u16,
        slots: u32,
    },
    /// `r[dst] :=` slot `idx` of the spill area `r[spill]`.
    SpillLoad { dst: Reg, spill: Reg, idx: u32 },
    /// Slot `idx` of the spill area `r[spill]` `:= r[src]`.
    SpillStore { spill: Reg, idx: u32, src: Reg },

    /// `r[dst] := r[func](r[args..args+argc])`: a closure pushes a frame;
    /// a builtin runs through the registry; partial and over-application
    /// per §5.4.
    Call {
        func: Reg,
        args: Reg,
        argc: u8,
        dst: Reg,
    },
    /// `r[dst] := g[slot](r[args..args+argc])`: a call whose head is a
    /// session binding (`fib` calling `fib`), without loading it.
    CallGlobal {
        slot: u32,
        args: Reg,
        argc: u8,
        dst: Reg,
    },
    /// `return g[slot](r[args..args+argc])`, reusing the frame.
    TailCallGlobal { slot: u32, args: Reg, argc: u8 },
    /// `r[dst] := g[slot](r[args..args+argc])` where `g[slot]` is the
    /// running function itself: a top-level definition (no captures)
    /// calling itself with all its arguments. Enters the running proto
    /// again without reading the slot (the slot is named for leases).
    CallSelf {
        slot: u32,
        args: Reg,
        argc: u8,
        dst: Reg,
    },
    /// As `CallSelf`, reusing the frame: a loop.
    TailCallSelf { slot: u32, args: Reg, argc: u8 },
    /// `r[dst] := r[func](items of list r[list]...)` (a call with spreads).
    CallSpread { func: Reg, list: Reg, dst: Reg },
    /// `return r[func](items of list r[list]...)`, reusing the frame.
    TailCallSpread { func: Reg, list: Reg },
    /// `return r[func](r[args..args+argc])`, reusing the frame.
    TailCall { func: Reg, args: Reg, argc: u8 },
    /// `r[dst] := registry[builtin](r[args..args+argc])`, the builtin fixed at
    /// compile time (`builtin` indexes the VM registry).
    CallBuiltin {
        builtin: u16,
        args: Reg,
        argc: u8,
        dst: Reg,
    },
    /// `r[dst] :=` group member `member` applied to `r[args..args+argc]`,
    /// sharing the running closure's captures (no closure is built).
    CallSibling {
        member: u16,
        args: Reg,
        argc: u8,
        dst: Reg,
    },
    /// As `CallSibling`, reusing the frame.
    TailCallSibling { member: u16, args: Reg, argc: u8 },
    /// Returns `r[src]` to the caller.
    Return { src: Reg },
    /// Ends the program with status `r[src]`; `try` and `?` do not catch it.
    Exit { src: Reg },

    /// Installs a `try` handler: a failure until the matching `PopHandler`
    /// unwinds here, puts the error record in `r[err]` and jumps to `target`.
    PushTry { err: Reg, target: u32 },
    /// Installs a `?` alternative: a failure jumps to `target`.
    PushChain { target: u32 },
    /// Removes the innermost handler (the body succeeded).
    PopHandler,
    /// Starts capturing output into a fresh buffer.
    CaptureBegin,
    /// `r[dst] :=` the captured bytes as strict UTF-8 with one final newline
    /// removed; restores the previous sink.
    CaptureEnd { dst: Reg },
    /// The base handler `echo` (§14.6): writes the items of the list in
    /// `r[list]`, each in the text conversion, separated by single spaces
    /// and followed by a newline, to the current output sink; `r[dst] := ()`.
    Echo { dst: Reg, list: Reg },
    /// Runs a command (§6.2–6.3): `mode` says how `r[head]` dispatches
    /// ([`ExecMode`]); `r[args]` is the argument list. Output goes to the
    /// current sinks; `r[dst] := ()`.
    Exec {
        dst: Reg,
        head: Reg,
        args: Reg,
        mode: ExecMode,
    },
    /// Pushes an IO frame that redirects nothing yet.
    IoPush,
    /// Redirects stream `fd` of the top IO frame ([`RedirCode`]); `r[src]`
    /// is the path or here string where the kind needs one.
    Redir { fd: u8, kind: RedirCode, src: Reg },
    /// Pops the top IO frame, committing its atomic writes.
    IoPop,
    /// Starts a pipeline.
    PipeBegin,
    /// Starts non-final stage `proto` (a stage proto sharing this frame's
    /// locals) on a thread, writing into a new pipe.
    PipeStage { proto: u32 },
    /// Pushes an IO frame whose input is the last stage's pipe, for the
    /// final stage, which runs inline.
    PipeLast,
    /// Pops the final stage's frame, waits for every stage, and fails with
    /// the first unforgiven failure in launch order.
    PipeEnd,
    /// Enters `within` with the options record `r[opts]` (§9.1).
    WithinPush { opts: Reg },
    /// Leaves the innermost `within`, restoring the context.
    WithinPop,
    /// Enters `grant` with the capability record `r[caps]` (§12).
    GrantPush { caps: Reg },
    /// Leaves the innermost `grant`.
    GrantPop,
    /// Installs a `guard`: a failure until the matching `PopHandler` is
    /// held and control jumps to `target` (the cleanup, then `Reraise`).
    PushGuard { target: u32 },
    /// Fails again with the failure the innermost guard held.
    Reraise,
    /// Opens an `audit` scope (§13.3): installs a handler as `PushTry`
    /// does (a failure puts the error record in `r[err]` and jumps to
    /// `target`) and opens a trail; `r[mark] :=` where its observations
    /// begin.
    AuditBegin { mark: Reg, err: Reg, target: u32 },
    /// Closes the scope `r[mark]` opened, the body having returned `r[dst]`:
    /// removes the handler and `r[dst] :=` the report with `` `ok r[dst] ``.
    AuditEnd { dst: Reg, mark: Reg },
    /// Where a failure of the scope `r[mark]` opened lands: `r[dst] :=` the
    /// report with `` `err r[err] ``.
    AuditFail { dst: Reg, mark: Reg, err: Reg },
    /// Fails: the feature is not supported by this VM yet.
    Unsupported { feature: Feature },
}

/// How an [`Op::Exec`] head dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecMode {
    /// A bare name: handlers, base handler, catch-all, then `PATH`.
    Name,
    /// `^name`: `PATH` only.
    External,
    /// A path head: that file.
    Path,
}

/// What an [`Op::Redir`] does to its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirCode {
    /// `>`: atomic replace on success.
    Write,
    /// `>~`: truncate and stream.
    Stream,
    /// `>>`.
    Append,
    /// `<`.
    Read,
    /// `<<`.
    Here,
    /// `2>&1`.
    ErrToOut,
    /// `N>&N`: no change.
    Keep,
}

const _: () = assert!(std::mem::size_of::<Op>() <= 8);

/// A compiled function.
#[derive(Debug, Default)]
pub struct Proto {
    /// For traces and the disassembly.
    pub name: String,
    /// How many parameters it takes (they arrive in `r[0..n_params]`).
    pub n_params: u16,
    /// Registers `r[0..n_locals]` hold locals; the rest are temporaries
    /// (a call moves a temporary head instead of cloning it).
    pub n_locals: u8,
    /// Register high-water mark.
    pub n_regs: u16,
    pub code: Vec<Op>,
    /// Deduplicated constants.
    pub consts: Vec<Value>,
    /// Record shapes of static record literals.
    pub shapes: Vec<Keys>,
    /// Program proto of each member of the recursive group this function
    /// belongs to (empty if none).
    pub siblings: Vec<u32>,
    /// The registers a return must clear (those that may hold a heap value:
    /// the parameters and what non-scalar ops write), when the compiler
    /// could tell; `None` clears the whole window.
    pub clear: Option<Box<[u8]>>,
    /// Parameter names for display.
    pub params: std::sync::Arc<[String]>,
    /// `spans[pc]` is the source of `code[pc]`; the loop never reads it.
    pub spans: Vec<Span>,
}

impl Proto {
    /// Checks what the fast path of the loop takes on trust: every register
    /// an instruction names, and every run of registers it reads (a call's
    /// arguments, a literal's items, a record's fields), lies inside the
    /// window of `n_regs` registers; every constant and shape index is in
    /// its table; every jump target is an instruction; and the code ends in
    /// an instruction that does not fall through. The VM verifies each proto
    /// when it loads it and refuses one that fails (a compiler bug).
    pub fn verify(&self) -> Result<(), String> {
        let n = usize::from(self.n_regs);
        for (pc, op) in self.code.iter().enumerate() {
            let fail = |what: String| {
                format!("{}: instruction {pc} ({}) {what}", self.name, op.mnemonic())
            };
            let reg = |r: &Reg| {
                if usize::from(r.0) < n {
                    Ok(())
                } else {
                    Err(fail(format!("names r{} of a {n}-register window", r.0)))
                }
            };
            let run = |start: &Reg, len: usize| {
                if usize::from(start.0)
                    .checked_add(len)
                    .is_some_and(|end| end <= n)
                {
                    Ok(())
                } else {
                    Err(fail(format!(
                        "reads {len} registers from r{} of {n}",
                        start.0
                    )))
                }
            };
            let konst = |k: usize| {
                if k < self.consts.len() {
                    Ok(())
                } else {
                    Err(fail(format!("names constant {k} of {}", self.consts.len())))
                }
            };
            let in_shapes = |s: u32| {
                if (s as usize) < self.shapes.len() {
                    Ok(())
                } else {
                    Err(fail(format!("names shape {s} of {}", self.shapes.len())))
                }
            };
            let jump_to = |t: u32| {
                if (t as usize) < self.code.len() {
                    Ok(())
                } else {
                    Err(fail(format!("jumps to {t} of {}", self.code.len())))
                }
            };
            match op {
                Op::LoadConst { dst, k } => {
                    reg(dst)?;
                    konst(k.0 as usize)?;
                }
                Op::LoadInt { dst, .. } => {
                    reg(dst)?;
                }
                Op::LoadUnit { dst } => {
                    reg(dst)?;
                }
                Op::LoadBool { dst, .. } => {
                    reg(dst)?;
                }
                Op::Copy { dst, src } | Op::Move { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::LoadCapture { dst, .. } => {
                    reg(dst)?;
                }
                Op::LoadSibling { dst, .. } => {
                    reg(dst)?;
                }
                Op::LoadBuiltin { dst, .. } => {
                    reg(dst)?;
                }
                Op::LoadScript { dst } => {
                    reg(dst)?;
                }
                Op::LoadHome { dst } => {
                    reg(dst)?;
                }
                Op::GetGlobal { dst, .. } => {
                    reg(dst)?;
                }
                Op::Define { name, src } => {
                    reg(src)?;
                    konst(name.0 as usize)?;
                }
                Op::AddInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::SubInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::MulInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::DivInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::RemInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::AddIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::LtIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::LeIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::GtIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::GeIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::AddFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::SubFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::MulFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::DivFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::RemFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::Arith { dst, lhs, rhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::NegInt { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::NegFloat { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::Neg { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::Not { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::LtInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::LeInt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::LtFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::LeFloat { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::LtStr { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::LeStr { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::Lt { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::Le { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::Eq { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::EqIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::NeIntK { dst, lhs, .. } => {
                    reg(dst)?;
                    reg(lhs)?;
                }
                Op::Ne { dst, lhs, rhs } => {
                    reg(dst)?;
                    reg(lhs)?;
                    reg(rhs)?;
                }
                Op::Jump { target } => {
                    jump_to(*target)?;
                }
                Op::JumpIfFalse { cond, target } => {
                    reg(cond)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotLtIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotLeIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotGtIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotGeIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotEqIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotNeIntK { lhs, target, .. } => {
                    reg(lhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotLtInt { lhs, rhs, target } => {
                    reg(lhs)?;
                    reg(rhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotLeInt { lhs, rhs, target } => {
                    reg(lhs)?;
                    reg(rhs)?;
                    jump_to(*target)?;
                }
                Op::JumpIfNotTag { src, tag, target } => {
                    reg(src)?;
                    konst(usize::from(*tag))?;
                    jump_to(*target)?;
                }
                Op::TagIs { dst, src, tag } => {
                    reg(dst)?;
                    reg(src)?;
                    konst(tag.0 as usize)?;
                }
                Op::Payload { dst, src } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::NoArm { src } => {
                    reg(src)?;
                }
                Op::MakeList { dst, n, start } => {
                    run(start, usize::from(*n))?;
                    reg(dst)?;
                }
                Op::ListPush { list, src, .. } => {
                    reg(list)?;
                    reg(src)?;
                }
                Op::ListExtend { list, src, .. } => {
                    reg(list)?;
                    reg(src)?;
                }
                Op::MakeRecord { dst, shape, start } => {
                    run(
                        start,
                        self.shapes
                            .get(*shape as usize)
                            .map_or(usize::MAX, |k| k.len()),
                    )?;
                    reg(dst)?;
                }
                Op::MakeRecordList { dst, list, shape } => {
                    reg(dst)?;
                    in_shapes(*shape)?;
                    reg(list)?;
                }
                Op::RecordSet { key, rec, src, .. } => {
                    reg(rec)?;
                    konst(key.0 as usize)?;
                    reg(src)?;
                }
                Op::MapNew { dst } => {
                    reg(dst)?;
                }
                Op::MapSpread { map, src, .. } => {
                    reg(map)?;
                    reg(src)?;
                }
                Op::MapInsert { key, map, src, .. } => {
                    reg(map)?;
                    reg(key)?;
                    reg(src)?;
                }
                Op::MakeVariant { dst, payload, tag } => {
                    reg(dst)?;
                    konst(tag.0 as usize)?;
                    reg(payload)?;
                }
                Op::MakeTag { dst, tag } => {
                    reg(dst)?;
                    konst(tag.0 as usize)?;
                }
                Op::MakeClosure { dst, n, start, .. } => {
                    run(start, usize::from(*n))?;
                    reg(dst)?;
                }
                Op::MakeClosureList { dst, list, .. } => {
                    reg(dst)?;
                    reg(list)?;
                }
                Op::Interp { dst, n, start } => {
                    run(start, usize::from(*n))?;
                    reg(dst)?;
                }
                Op::IndexList { base, dst, key, .. } => {
                    reg(dst)?;
                    reg(base)?;
                    reg(key)?;
                }
                Op::IndexField { base, dst, key, .. } => {
                    reg(dst)?;
                    reg(base)?;
                    konst(key.0 as usize)?;
                }
                Op::IndexMap { base, dst, key, .. } => {
                    reg(dst)?;
                    reg(base)?;
                    reg(key)?;
                }
                Op::IndexDyn { base, dst, key, .. } => {
                    reg(dst)?;
                    reg(base)?;
                    reg(key)?;
                }
                Op::MatchList { src, .. } => {
                    reg(src)?;
                }
                Op::ListAt { dst, src, .. } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::ListFrom { dst, src, .. } => {
                    reg(dst)?;
                    reg(src)?;
                }
                Op::SpillEnter { spill, .. } => {
                    reg(spill)?;
                }
                Op::SpillLoad { dst, spill, .. } => {
                    reg(dst)?;
                    reg(spill)?;
                }
                Op::SpillStore { spill, src, .. } => {
                    reg(spill)?;
                    reg(src)?;
                }
                Op::Call {
                    argc,
                    args,
                    dst,
                    func,
                } => {
                    run(args, usize::from(*argc))?;
                    reg(func)?;
                    reg(dst)?;
                }
                Op::CallGlobal {
                    argc, args, dst, ..
                } => {
                    run(args, usize::from(*argc))?;
                    reg(dst)?;
                }
                Op::TailCallGlobal { argc, args, .. } => {
                    run(args, usize::from(*argc))?;
                }
                Op::CallSelf {
                    args, argc, dst, ..
                } => {
                    run(args, usize::from(*argc))?;
                    reg(dst)?;
                }
                Op::TailCallSelf { args, argc, .. } => {
                    run(args, usize::from(*argc))?;
                }
                Op::CallSpread { dst, func, list } => {
                    reg(func)?;
                    reg(list)?;
                    reg(dst)?;
                }
                Op::TailCallSpread { func, list } => {
                    reg(func)?;
                    reg(list)?;
                }
                Op::TailCall { argc, args, func } => {
                    run(args, usize::from(*argc))?;
                    reg(func)?;
                }
                Op::CallBuiltin {
                    argc, args, dst, ..
                } => {
                    run(args, usize::from(*argc))?;
                    reg(dst)?;
                }
                Op::CallSibling {
                    argc, args, dst, ..
                } => {
                    run(args, usize::from(*argc))?;
                    reg(dst)?;
                }
                Op::TailCallSibling { argc, args, .. } => {
                    run(args, usize::from(*argc))?;
                }
                Op::Return { src } => {
                    reg(src)?;
                }
                Op::Exit { src } => {
                    reg(src)?;
                }
                Op::PushTry { err, target } => {
                    reg(err)?;
                    jump_to(*target)?;
                }
                Op::PushChain { target } => {
                    jump_to(*target)?;
                }
                Op::PopHandler => {}
                Op::CaptureBegin => {}
                Op::CaptureEnd { dst } => {
                    reg(dst)?;
                }
                Op::Echo { dst, list } => {
                    reg(dst)?;
                    reg(list)?;
                }
                Op::Exec {
                    args, dst, head, ..
                } => {
                    reg(dst)?;
                    reg(head)?;
                    reg(args)?;
                }
                Op::IoPush => {}
                Op::Redir { src, .. } => {
                    reg(src)?;
                }
                Op::IoPop => {}
                Op::PipeBegin => {}
                Op::PipeStage { .. } => {}
                Op::PipeLast => {}
                Op::PipeEnd => {}
                Op::WithinPush { opts } => {
                    reg(opts)?;
                }
                Op::WithinPop => {}
                Op::GrantPush { caps } => {
                    reg(caps)?;
                }
                Op::GrantPop => {}
                Op::PushGuard { target } => {
                    jump_to(*target)?;
                }
                Op::Reraise => {}
                Op::AuditBegin { mark, err, target } => {
                    reg(mark)?;
                    reg(err)?;
                    jump_to(*target)?;
                }
                Op::AuditEnd { dst, mark } => {
                    reg(dst)?;
                    reg(mark)?;
                }
                Op::AuditFail { dst, mark, err } => {
                    reg(dst)?;
                    reg(mark)?;
                    reg(err)?;
                }
                Op::Unsupported { .. } => {}
            }
        }
        match self.code.last() {
            None
            | Some(
                Op::Return { .. }
                | Op::Jump { .. }
                | Op::TailCall { .. }
                | Op::TailCallGlobal { .. }
                | Op::TailCallSelf { .. }
                | Op::TailCallSibling { .. }
                | Op::TailCallSpread { .. }
                | Op::Exit { .. }
                | Op::NoArm { .. },
            ) => Ok(()),
            Some(other) => Err(format!(
                "{}: the code ends in {}, which falls through",
                self.name,
                other.mnemonic()
            )),
        }
    }
}

impl Op {
    /// The session slot this instruction reads, if it reads one.
    // Every other instruction works on registers, constants, captures and
    // siblings; an instruction added later that reads a session slot must
    // be listed here.
    #[allow(clippy::wildcard_enum_match_arm)]
    pub fn global_slot(&self) -> Option<u32> {
        match self {
            Op::GetGlobal { slot, .. }
            | Op::CallGlobal { slot, .. }
            | Op::TailCallGlobal { slot, .. }
            | Op::CallSelf { slot, .. }
            | Op::TailCallSelf { slot, .. } => Some(*slot),
            _ => None,
        }
    }

    /// The program proto this instruction names (a closure it makes, a
    /// pipeline stage it starts), if any.
    #[allow(clippy::wildcard_enum_match_arm)]
    pub fn proto_ref(&self) -> Option<u32> {
        match self {
            Op::MakeClosure { proto, .. }
            | Op::MakeClosureList { proto, .. }
            | Op::PipeStage { proto } => Some(*proto),
            _ => None,
        }
    }

    /// The instruction's mnemonic.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Op::LoadConst { .. } => "load-const",
            Op::LoadInt { .. } => "load-int",
            Op::LoadUnit { .. } => "load-unit",
            Op::LoadBool { .. } => "load-bool",
            Op::Copy { .. } => "copy",
            Op::Move { .. } => "move",
            Op::LoadCapture { .. } => "load-capture",
            Op::LoadSibling { .. } => "load-sibling",
            Op::LoadBuiltin { .. } => "load-builtin",
            Op::LoadScript { .. } => "load-script",
            Op::LoadHome { .. } => "load-home",
            Op::GetGlobal { .. } => "get-global",
            Op::Define { .. } => "define",
            Op::AddInt { .. } => "add-int",
            Op::SubInt { .. } => "sub-int",
            Op::MulInt { .. } => "mul-int",
            Op::DivInt { .. } => "div-int",
            Op::RemInt { .. } => "rem-int",
            Op::AddIntK { .. } => "add-int-k",
            Op::LtIntK { .. } => "lt-int-k",
            Op::LeIntK { .. } => "le-int-k",
            Op::GtIntK { .. } => "gt-int-k",
            Op::GeIntK { .. } => "ge-int-k",
            Op::AddFloat { .. } => "add-float",
            Op::SubFloat { .. } => "sub-float",
            Op::MulFloat { .. } => "mul-float",
            Op::DivFloat { .. } => "div-float",
            Op::RemFloat { .. } => "rem-float",
            Op::Arith { .. } => "arith",
            Op::NegInt { .. } => "neg-int",
            Op::NegFloat { .. } => "neg-float",
            Op::Neg { .. } => "neg",
            Op::Not { .. } => "not",
            Op::LtInt { .. } => "lt-int",
            Op::LeInt { .. } => "le-int",
            Op::LtFloat { .. } => "lt-float",
            Op::LeFloat { .. } => "le-float",
            Op::LtStr { .. } => "lt-str",
            Op::LeStr { .. } => "le-str",
            Op::Lt { .. } => "lt",
            Op::Le { .. } => "le",
            Op::Eq { .. } => "eq",
            Op::Ne { .. } => "ne",
            Op::Jump { .. } => "jump",
            Op::JumpIfFalse { .. } => "jump-if-false",
            Op::JumpIfNotLtIntK { .. } => "jump-if-not-lt-int-k",
            Op::JumpIfNotLeIntK { .. } => "jump-if-not-le-int-k",
            Op::JumpIfNotGtIntK { .. } => "jump-if-not-gt-int-k",
            Op::JumpIfNotGeIntK { .. } => "jump-if-not-ge-int-k",
            Op::JumpIfNotLtInt { .. } => "jump-if-not-lt-int",
            Op::JumpIfNotEqIntK { .. } => "jump-if-not-eq-int-k",
            Op::JumpIfNotNeIntK { .. } => "jump-if-not-ne-int-k",
            Op::EqIntK { .. } => "eq-int-k",
            Op::NeIntK { .. } => "ne-int-k",
            Op::JumpIfNotLeInt { .. } => "jump-if-not-le-int",
            Op::JumpIfNotTag { .. } => "jump-if-not-tag",
            Op::TagIs { .. } => "tag-is",
            Op::Payload { .. } => "payload",
            Op::NoArm { .. } => "no-arm",
            Op::MakeList { .. } => "make-list",
            Op::ListPush { .. } => "list-push",
            Op::ListExtend { .. } => "list-extend",
            Op::MakeRecord { .. } => "make-record",
            Op::MakeRecordList { .. } => "make-record-list",
            Op::RecordSet { .. } => "record-set",
            Op::MapNew { .. } => "map-new",
            Op::MapSpread { .. } => "map-spread",
            Op::MapInsert { .. } => "map-insert",
            Op::MakeVariant { .. } => "make-variant",
            Op::MakeTag { .. } => "make-tag",
            Op::MakeClosure { .. } => "make-closure",
            Op::MakeClosureList { .. } => "make-closure-list",
            Op::Interp { .. } => "interp",
            Op::IndexList { .. } => "index-list",
            Op::IndexField { .. } => "index-field",
            Op::IndexMap { .. } => "index-map",
            Op::IndexDyn { .. } => "index-dyn",
            Op::MatchList { .. } => "match-list",
            Op::ListAt { .. } => "list-at",
            Op::ListFrom { .. } => "list-from",
            Op::SpillEnter { .. } => "spill-enter",
            Op::SpillLoad { .. } => "spill-load",
            Op::SpillStore { .. } => "spill-store",
            Op::Call { .. } => "call",
            Op::TailCall { .. } => "tail-call",
            Op::CallGlobal { .. } => "call-global",
            Op::TailCallGlobal { .. } => "tail-call-global",
            Op::CallSelf { .. } => "call-self",
            Op::TailCallSelf { .. } => "tail-call-self",
            Op::CallSpread { .. } => "call-spread",
            Op::TailCallSpread { .. } => "tail-call-spread",
            Op::CallBuiltin { .. } => "call-builtin",
            Op::CallSibling { .. } => "call-sibling",
            Op::TailCallSibling { .. } => "tail-call-sibling",
            Op::Return { .. } => "return",
            Op::Exit { .. } => "exit",
            Op::PushTry { .. } => "push-try",
            Op::PushChain { .. } => "push-chain",
            Op::PopHandler => "pop-handler",
            Op::CaptureBegin => "capture-begin",
            Op::CaptureEnd { .. } => "capture-end",
            Op::Echo { .. } => "echo",
            Op::Exec { .. } => "exec",
            Op::IoPush => "io-push",
            Op::Redir { .. } => "redir",
            Op::IoPop => "io-pop",
            Op::PipeBegin => "pipe-begin",
            Op::PipeStage { .. } => "pipe-stage",
            Op::PipeLast => "pipe-last",
            Op::PipeEnd => "pipe-end",
            Op::WithinPush { .. } => "within-push",
            Op::WithinPop => "within-pop",
            Op::GrantPush { .. } => "grant-push",
            Op::GrantPop => "grant-pop",
            Op::PushGuard { .. } => "push-guard",
            Op::AuditBegin { .. } => "audit-begin",
            Op::AuditEnd { .. } => "audit-end",
            Op::AuditFail { .. } => "audit-fail",
            Op::Reraise => "reraise",
            Op::Unsupported { .. } => "unsupported",
        }
    }

    /// The operands as text (`r1, k0`), and a comment naming constants.
    pub fn operands(&self, proto: &Proto) -> (String, String) {
        let r = |r: &Reg| format!("r{}", r.0);
        let range = |s: &Reg, n: u8| format!("r{}..r{}", s.0, u16::from(s.0) + u16::from(n));
        let kc = |k: &ConstIdx| {
            proto
                .consts
                .get(k.0 as usize)
                .map(|v| crate::display::render(v, &Default::default()))
                .unwrap_or_default()
        };
        let bin = |d: &Reg, a: &Reg, b: &Reg| format!("{}, {}, {}", r(d), r(a), r(b));
        // A source the instruction takes out of its register.
        let taken = |take: bool| if take { " (taken)" } else { "" };
        let none = String::new;
        match self {
            Op::LoadConst { dst, k } => (format!("{}, k{}", r(dst), k.0), kc(k)),
            Op::LoadInt { dst, value } => (format!("{}, {value}", r(dst)), none()),
            Op::LoadUnit { dst }
            | Op::LoadScript { dst }
            | Op::LoadHome { dst }
            | Op::MapNew { dst }
            | Op::CaptureEnd { dst } => (r(dst), none()),
            Op::LoadBool { dst, value } => (format!("{}, {value}", r(dst)), none()),
            Op::Copy { dst, src }
            | Op::Move { dst, src }
            | Op::NegInt { dst, src }
            | Op::NegFloat { dst, src }
            | Op::Neg { dst, src }
            | Op::Not { dst, src }
            | Op::Payload { dst, src } => (format!("{}, {}", r(dst), r(src)), none()),
            Op::LoadCapture { dst, idx } => (format!("{}, c{idx}", r(dst)), none()),
            Op::LoadSibling { dst, member } => (format!("{}, sib{member}", r(dst)), none()),
            Op::LoadBuiltin { dst, id } => {
                let name = ral_types::builtin_table()
                    .entry(ral_types::BuiltinId(*id))
                    .map_or("?", |b| b.name);
                (format!("{}, {name}", r(dst)), none())
            }
            Op::GetGlobal { dst, slot } => (format!("{}, g{slot}", r(dst)), none()),
            Op::Define { src, name } => (format!("k{}, {}", name.0, r(src)), kc(name)),
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
            | Op::LeFloat { dst, lhs, rhs }
            | Op::LtStr { dst, lhs, rhs }
            | Op::LeStr { dst, lhs, rhs }
            | Op::Lt { dst, lhs, rhs }
            | Op::Le { dst, lhs, rhs }
            | Op::Eq { dst, lhs, rhs }
            | Op::Ne { dst, lhs, rhs } => (bin(dst, lhs, rhs), none()),
            Op::AddIntK { dst, lhs, k }
            | Op::LtIntK { dst, lhs, k }
            | Op::LeIntK { dst, lhs, k }
            | Op::GtIntK { dst, lhs, k }
            | Op::GeIntK { dst, lhs, k }
            | Op::EqIntK { dst, lhs, k }
            | Op::NeIntK { dst, lhs, k } => (format!("{}, {}, {k}", r(dst), r(lhs)), none()),
            Op::Arith { dst, lhs, rhs, op } => (format!("{}, {op:?}", bin(dst, lhs, rhs)), none()),
            Op::Jump { target } => (format!("@{target}"), none()),
            Op::JumpIfFalse { cond, target } => (format!("{}, @{target}", r(cond)), none()),
            Op::JumpIfNotLtIntK { lhs, k, target }
            | Op::JumpIfNotLeIntK { lhs, k, target }
            | Op::JumpIfNotGtIntK { lhs, k, target }
            | Op::JumpIfNotGeIntK { lhs, k, target }
            | Op::JumpIfNotEqIntK { lhs, k, target }
            | Op::JumpIfNotNeIntK { lhs, k, target } => {
                (format!("{}, {k}, @{target}", r(lhs)), none())
            }
            Op::JumpIfNotLtInt { lhs, rhs, target } | Op::JumpIfNotLeInt { lhs, rhs, target } => {
                (format!("{}, {}, @{target}", r(lhs), r(rhs)), none())
            }
            Op::JumpIfNotTag { src, tag, target } => (
                format!("{}, k{tag}, @{target}", r(src)),
                kc(&ConstIdx(u32::from(*tag))),
            ),
            Op::TagIs { dst, src, tag } => (format!("{}, {}, k{}", r(dst), r(src), tag.0), kc(tag)),
            Op::NoArm { src } | Op::Return { src } | Op::Exit { src } => (r(src), none()),
            Op::MakeList { dst, start, n } | Op::Interp { dst, start, n } => {
                (format!("{}, {}", r(dst), range(start, *n)), none())
            }
            Op::ListPush { list, src, take } | Op::ListExtend { list, src, take } => {
                (format!("{}, {}{}", r(list), r(src), taken(*take)), none())
            }
            Op::MakeRecord { dst, shape, start } => {
                let keys = proto
                    .shapes
                    .get(*shape as usize)
                    .map(|k| {
                        k.as_slice()
                            .iter()
                            .map(|k| k.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    })
                    .unwrap_or_default();
                (format!("{}, shape{shape}, {}", r(dst), r(start)), keys)
            }
            Op::MakeRecordList { dst, shape, list } => {
                (format!("{}, shape{shape}, ...{}", r(dst), r(list)), none())
            }
            Op::RecordSet {
                rec,
                key,
                src,
                take,
            } => (
                format!("{}, k{}, {}{}", r(rec), key.0, r(src), taken(*take)),
                kc(key),
            ),
            Op::MapSpread { map, src, take } => {
                (format!("{}, {}{}", r(map), r(src), taken(*take)), none())
            }
            Op::MapInsert {
                map,
                key,
                src,
                take,
            } => (format!("{}{}", bin(map, key, src), taken(*take)), none()),
            Op::MakeVariant { dst, tag, payload } => {
                (format!("{}, k{}, {}", r(dst), tag.0, r(payload)), kc(tag))
            }
            Op::MakeTag { dst, tag } => (format!("{}, k{}", r(dst), tag.0), kc(tag)),
            Op::MakeClosure {
                dst,
                start,
                n,
                proto: p,
            } => (format!("{}, p{p}, {}", r(dst), range(start, *n)), none()),
            Op::MakeClosureList { dst, list, proto } => {
                (format!("{}, p{proto}, ...{}", r(dst), r(list)), none())
            }
            Op::IndexList {
                dst,
                base,
                key,
                take,
            }
            | Op::IndexMap {
                dst,
                base,
                key,
                take,
            }
            | Op::IndexDyn {
                dst,
                base,
                key,
                take,
            } => (format!("{}{}", bin(dst, base, key), taken(*take)), none()),
            Op::IndexField {
                dst,
                base,
                key,
                take,
            } => (
                format!("{}, {}, k{}{}", r(dst), r(base), key.0, taken(*take)),
                kc(key),
            ),
            Op::MatchList { src, n, rest } => (
                format!("{}, {n}{}", r(src), if *rest { "+" } else { "" }),
                none(),
            ),
            Op::ListAt {
                dst,
                src,
                idx,
                take,
            } => (
                format!("{}, {}, {idx}{}", r(dst), r(src), taken(*take)),
                none(),
            ),
            Op::ListFrom { dst, src, from } => {
                (format!("{}, {}, {from}..", r(dst), r(src)), none())
            }
            Op::SpillEnter {
                spill,
                params_from,
                slots,
            } => (
                format!("{}, {slots} slots, params {params_from}..", r(spill)),
                none(),
            ),
            Op::SpillLoad { dst, spill, idx } => {
                (format!("{}, {}[{idx}]", r(dst), r(spill)), none())
            }
            Op::SpillStore { spill, idx, src } => {
                (format!("{}[{idx}], {}", r(spill), r(src)), none())
            }
            Op::Call {
                func,
                args,
                argc,
                dst,
            } => (
                format!("{}({}) -> {}", r(func), range(args, *argc), r(dst)),
                none(),
            ),
            Op::CallGlobal {
                slot,
                args,
                argc,
                dst,
            } => (
                format!("g{slot}({}) -> {}", range(args, *argc), r(dst)),
                none(),
            ),
            Op::TailCallGlobal { slot, args, argc } => {
                (format!("g{slot}({})", range(args, *argc)), none())
            }
            Op::CallSelf {
                slot,
                args,
                argc,
                dst,
            } => (
                format!("self g{slot}({}) -> {}", range(args, *argc), r(dst)),
                none(),
            ),
            Op::TailCallSelf { slot, args, argc } => {
                (format!("self g{slot}({})", range(args, *argc)), none())
            }
            Op::CallSpread { func, list, dst } => {
                (format!("{}(...{}) -> {}", r(func), r(list), r(dst)), none())
            }
            Op::TailCallSpread { func, list } => (format!("{}(...{})", r(func), r(list)), none()),
            Op::TailCall { func, args, argc } => {
                (format!("{}({})", r(func), range(args, *argc)), none())
            }
            Op::CallBuiltin {
                builtin,
                args,
                argc,
                dst,
            } => {
                let name = crate::builtins::registry()
                    .get(usize::from(*builtin))
                    .map_or("?", |d| d.name);
                (
                    format!("{name}({}) -> {}", range(args, *argc), r(dst)),
                    none(),
                )
            }
            Op::CallSibling {
                member,
                args,
                argc,
                dst,
            } => (
                format!("sib{member}({}) -> {}", range(args, *argc), r(dst)),
                none(),
            ),
            Op::TailCallSibling { member, args, argc } => {
                (format!("sib{member}({})", range(args, *argc)), none())
            }
            Op::PushTry { err, target } => (format!("{}, @{target}", r(err)), none()),
            Op::PushChain { target } => (format!("@{target}"), none()),
            Op::PopHandler | Op::CaptureBegin => (none(), none()),
            Op::Echo { dst, list } => (format!("{}, {}", r(dst), r(list)), none()),
            Op::Exec {
                dst,
                head,
                args,
                mode,
            } => (
                format!("{}, {}, {}, {mode:?}", r(dst), r(head), r(args)),
                none(),
            ),
            Op::Redir { fd, kind, src } => (format!("{fd}, {kind:?}, {}", r(src)), none()),
            Op::IoPush
            | Op::IoPop
            | Op::PipeBegin
            | Op::PipeLast
            | Op::PipeEnd
            | Op::WithinPop
            | Op::GrantPop
            | Op::Reraise => (none(), none()),
            Op::GrantPush { caps } => (r(caps), none()),
            Op::PipeStage { proto } => (format!("p{proto}"), none()),
            Op::WithinPush { opts } => (r(opts), none()),
            Op::PushGuard { target } => (format!("@{target}"), none()),
            Op::AuditBegin { mark, err, target } => {
                (format!("{}, {}, @{target}", r(mark), r(err)), none())
            }
            Op::AuditEnd { dst, mark } => (format!("{}, {}", r(dst), r(mark)), none()),
            Op::AuditFail { dst, mark, err } => {
                (format!("{}, {}, {}", r(dst), r(mark), r(err)), none())
            }
            Op::Unsupported { feature } => (feature.name().to_owned(), none()),
        }
    }
}

/// The listing of one proto in the STYLE §3.10 format.
pub fn disassemble(proto: &Proto) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "proto {}  regs={} consts={}",
        if proto.name.is_empty() {
            "<anon>"
        } else {
            &proto.name
        },
        proto.n_regs,
        proto.consts.len()
    );
    for (pc, op) in proto.code.iter().enumerate() {
        let (operands, comment) = op.operands(proto);
        let mut line = format!("{pc:>4}  {:<13} {operands}", op.mnemonic());
        if !comment.is_empty() {
            while line.len() < 40 {
                line.push(' ');
            }
            let _ = write!(line, " # {comment}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}
