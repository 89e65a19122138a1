//! The fast path of the dispatch loop.
//!
//! [`Vm::hot`] runs the instructions that straight-line code, arithmetic,
//! branches and ral→ral calls spend their time in. The machine state (`pc`,
//! the window's base, the code, the register file) lives in local variables
//! and the fields it touches are borrowed apart, so the optimiser keeps the
//! state in machine registers; the general loop ([`Vm::step`]), whose arms
//! call into the whole machine, cannot.
//!
//! On anything else — an instruction it does not handle, or an unusual case
//! of one it does (a kind mismatch, an overflow, a call that is not a plain
//! closure entry, a pending cancel, a frame past the depth limit, a return
//! that ends the run) — it saves `pc` pointing *at* that instruction and
//! returns, and [`Vm::step`] runs it in full generality. A fast-path
//! instruction changes nothing before it decides to hand over, so the
//! general path always finds the state the instruction expects, and every
//! failure is raised (and placed) by the general path alone.

use std::sync::atomic::AtomicBool;

use super::window::{is_scalar, Window};
use super::*;

impl Vm {
    /// Runs instructions on the fast path until one must take the general
    /// path (the top frame's `pc` then points at it: `None`), or until the
    /// run's bottom frame returns (`Some` of its value).
    #[inline(never)]
    pub(super) fn hot(&mut self, stop: usize) -> Option<Value> {
        let Vm {
            regs,
            frames,
            mobile,
            max_depth,
            protos,
            ..
        } = self;
        // Nothing on the fast path compiles code, so the table is stable.
        let protos: &Vec<Arc<Proto>> = protos;
        let cancel: &AtomicBool = &mobile.context.cancel;
        let scope = &mobile.scope;
        let max_depth = *max_depth;
        let Some(mut fi) = frames.len().checked_sub(1) else {
            return None;
        };
        let Some(first) = protos.get(frames[fi].proto as usize) else {
            return None;
        };
        let mut proto: &Proto = first;
        let mut code: &[Op] = &proto.code;
        let mut pc = frames[fi].pc as usize;
        let mut win = Window::new(regs, frames[fi].base as usize, usize::from(proto.n_regs));

        // Hands the instruction just fetched to the general path.
        macro_rules! slow {
            () => {{
                frames[fi].pc = (pc - 1) as u32;
                return None;
            }};
        }
        macro_rules! r {
            ($r:expr) => {
                *win.get($r)
            };
        }
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v = $v;
                let old = std::mem::replace(win.get_mut($r), v);
                if is_scalar(&old) {
                    std::mem::forget(old);
                } else {
                    drop(old);
                }
            }};
        }
        macro_rules! set_int {
            ($r:expr, $n:expr) => {{
                let n: i64 = $n;
                if let Value::Int(x) = win.get_mut($r) {
                    *x = n;
                } else {
                    set!($r, Value::Int(n));
                }
            }};
        }
        macro_rules! set_bool {
            ($r:expr, $b:expr) => {{
                let b: bool = $b;
                if let Value::Bool(x) = win.get_mut($r) {
                    *x = b;
                } else {
                    set!($r, Value::Bool(b));
                }
            }};
        }
        macro_rules! int {
            ($r:expr) => {
                match r!($r) {
                    Value::Int(n) => n,
                    _ => slow!(),
                }
            };
        }
        macro_rules! float {
            ($r:expr) => {
                match r!($r) {
                    Value::Float(x) => x,
                    _ => slow!(),
                }
            };
        }
        macro_rules! int_op {
            ($dst:expr, $lhs:expr, $rhs:expr, $m:ident) => {{
                match int!($lhs).$m(int!($rhs)) {
                    Some(n) => set_int!($dst, n),
                    None => slow!(),
                }
            }};
        }
        macro_rules! float_op {
            ($dst:expr, $lhs:expr, $rhs:expr, $op:tt) => {{
                let x = float!($lhs) $op float!($rhs);
                if !x.is_finite() {
                    slow!()
                }
                set!($dst, Value::Float(x));
            }};
        }
        macro_rules! branch_unless {
            ($b:expr, $target:expr) => {{
                if !$b {
                    pc = $target as usize;
                }
            }};
        }
        // Enters closure proto `p` (exact arity) in a new frame whose
        // window starts at `nb`; the caller has saved nothing yet.
        macro_rules! enter {
            ($p:expr, $env:expr, $nb:expr, $dst:expr) => {{
                if frames.len() >= max_depth {
                    slow!()
                }
                let p: u32 = $p;
                let nb: usize = $nb;
                let callee: &Proto = &protos[p as usize];
                win.moved(nb, usize::from(callee.n_regs));
                frames[fi].pc = pc as u32;
                frames.push(Frame {
                    proto: p,
                    pc: 0,
                    base: nb as u32,
                    ret: $dst,
                    env: $env,
                    extra: None,
                });
                fi += 1;
                proto = callee;
                code = &proto.code;
                pc = 0;
            }};
        }
        // Replaces the current frame with closure proto `p`, its arguments
        // moved down to the window's start (constant space).
        macro_rules! tail_enter {
            ($p:expr, $env:expr, $args:expr, $argc:expr) => {{
                let (p, env, args, argc): (u32, Option<Arc<Func>>, Reg, u8) =
                    ($p, $env, $args, $argc);
                let a = usize::from(args.0);
                let all = win.run_mut(Reg(0), a + usize::from(argc));
                for i in 0..usize::from(argc) {
                    // A scalar is copied (its source is a dead temporary);
                    // anything else is moved.
                    let v = match &all[a + i] {
                        Value::Int(n) => Value::Int(*n),
                        Value::Float(x) => Value::Float(*x),
                        Value::Bool(b) => Value::Bool(*b),
                        Value::Unit => Value::Unit,
                        _ => std::mem::take(&mut all[a + i]),
                    };
                    let old = std::mem::replace(&mut all[i], v);
                    if is_scalar(&old) {
                        std::mem::forget(old);
                    }
                }
                let frame = &mut frames[fi];
                // A function calling itself with no environment (a loop)
                // keeps its proto, window and environment as they are.
                if p != frame.proto || env.is_some() || frame.env.is_some() {
                    let callee: &Proto = &protos[p as usize];
                    frame.proto = p;
                    frame.env = env;
                    let base = win.base();
                    win.moved(base, usize::from(callee.n_regs));
                    proto = callee;
                    code = &proto.code;
                }
                pc = 0;
            }};
        }

        loop {
            let at = pc;
            pc += 1;
            // Matching the instruction in place (not a copy of it) lets each
            // arm load only its own operands.
            match code[at] {
                Op::LoadConst { dst, k } => set!(dst, proto.consts[k.0 as usize].clone()),
                Op::LoadInt { dst, value } => set_int!(dst, i64::from(value)),
                Op::LoadUnit { dst } => set!(dst, Value::Unit),
                Op::LoadBool { dst, value } => set_bool!(dst, value),
                Op::Copy { dst, src } => {
                    if let Value::Int(n) = r!(src) {
                        set_int!(dst, n);
                    } else {
                        let v = r!(src).clone();
                        set!(dst, v);
                    }
                }
                Op::Move { dst, src } => {
                    if dst != src {
                        let v = std::mem::take(win.get_mut(src));
                        set!(dst, v);
                    }
                }
                Op::LoadCapture { dst, idx } => {
                    let v = match frames[fi].env.as_deref() {
                        Some(Func::Closure { captures, .. }) => captures.get(idx as usize).cloned(),
                        _ => None,
                    };
                    match v {
                        Some(v) => set!(dst, v),
                        None => slow!(),
                    }
                }
                Op::GetGlobal { dst, slot } => match scope.get(SlotId(slot)) {
                    Some(v) => {
                        let v = v.clone();
                        set!(dst, v);
                    }
                    None => slow!(),
                },

                Op::AddInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_add),
                Op::SubInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_sub),
                Op::MulInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_mul),
                Op::DivInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_div),
                Op::RemInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_rem),
                Op::AddIntK { dst, lhs, k } => match int!(lhs).checked_add(i64::from(k)) {
                    Some(n) => set_int!(dst, n),
                    None => slow!(),
                },
                Op::LtIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) < i64::from(k)),
                Op::LeIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) <= i64::from(k)),
                Op::GtIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) > i64::from(k)),
                Op::GeIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) >= i64::from(k)),
                Op::EqIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) == i64::from(k)),
                Op::NeIntK { dst, lhs, k } => set_bool!(dst, int!(lhs) != i64::from(k)),
                Op::LtInt { dst, lhs, rhs } => set_bool!(dst, int!(lhs) < int!(rhs)),
                Op::LeInt { dst, lhs, rhs } => set_bool!(dst, int!(lhs) <= int!(rhs)),
                Op::AddFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, +),
                Op::SubFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, -),
                Op::MulFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, *),
                Op::DivFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, /),
                Op::RemFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, %),
                Op::LtFloat { dst, lhs, rhs } => set_bool!(dst, float!(lhs) < float!(rhs)),
                Op::LeFloat { dst, lhs, rhs } => set_bool!(dst, float!(lhs) <= float!(rhs)),
                Op::Not { dst, src } => match r!(src) {
                    Value::Bool(b) => set_bool!(dst, !b),
                    _ => slow!(),
                },
                Op::Eq { dst, lhs, rhs } => {
                    let b = match (&r!(lhs), &r!(rhs)) {
                        (Value::Int(a), Value::Int(b)) => a == b,
                        // Containers compare with polls, on the general path.
                        (a, b) if is_container(a) && is_container(b) => slow!(),
                        (a, b) => a.equal(b),
                    };
                    set_bool!(dst, b);
                }
                Op::Ne { dst, lhs, rhs } => {
                    let b = match (&r!(lhs), &r!(rhs)) {
                        (a, b) if is_container(a) && is_container(b) => slow!(),
                        (a, b) => !a.equal(b),
                    };
                    set_bool!(dst, b);
                }

                Op::Jump { target } => {
                    let t = target as usize;
                    if t < pc && cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    pc = t;
                }
                Op::JumpIfFalse { cond, target } => match r!(cond) {
                    Value::Bool(b) => branch_unless!(b, target),
                    _ => slow!(),
                },
                Op::JumpIfNotLtIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) < i64::from(k), target)
                }
                Op::JumpIfNotLeIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) <= i64::from(k), target)
                }
                Op::JumpIfNotGtIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) > i64::from(k), target)
                }
                Op::JumpIfNotGeIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) >= i64::from(k), target)
                }
                Op::JumpIfNotEqIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) == i64::from(k), target)
                }
                Op::JumpIfNotNeIntK { lhs, k, target } => {
                    branch_unless!(int!(lhs) != i64::from(k), target)
                }
                Op::JumpIfNotLtInt { lhs, rhs, target } => {
                    branch_unless!(int!(lhs) < int!(rhs), target)
                }
                Op::JumpIfNotLeInt { lhs, rhs, target } => {
                    branch_unless!(int!(lhs) <= int!(rhs), target)
                }
                Op::JumpIfNotTag { src, tag, target } => {
                    let hit = match (&r!(src), &proto.consts[usize::from(tag)]) {
                        (Value::Variant(v), Value::Str(t)) => *v.tag == ***t,
                        _ => false,
                    };
                    branch_unless!(hit, target);
                }
                Op::Payload { dst, src } => {
                    let v = if let Value::Variant(v) = &r!(src) {
                        v.payload.clone().unwrap_or(Value::Unit)
                    } else {
                        Value::Unit
                    };
                    set!(dst, v);
                }

                Op::IndexField {
                    dst,
                    base: b,
                    key,
                    take,
                } => {
                    let v = if let Value::Str(k) = &proto.consts[key.0 as usize] {
                        win.get_mut(b).field(k, take)
                    } else {
                        None
                    };
                    match v {
                        Some(v) => set!(dst, v),
                        None => slow!(),
                    }
                }
                Op::IndexList {
                    dst,
                    base: b,
                    key,
                    take,
                } => {
                    let i = if let Value::Int(i) = r!(key) {
                        usize::try_from(i).ok()
                    } else {
                        None
                    };
                    match i.and_then(|i| win.get_mut(b).element(i, take)) {
                        Some(v) => set!(dst, v),
                        None => slow!(),
                    }
                }
                Op::MakeList { dst, start, n } => {
                    let items = win.run(start, usize::from(n)).to_vec();
                    set!(dst, Value::list(items));
                }
                Op::MakeRecord { dst, shape, start } => {
                    let keys = proto.shapes[shape as usize].clone();
                    let vals = win.run(start, keys.len()).to_vec();
                    set!(dst, Value::record(Record::from_parts(keys, vals)));
                }

                Op::Call {
                    func,
                    args,
                    argc,
                    dst,
                } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    match closure_entry(&r!(func), argc, protos) {
                        Some((p, env)) => enter!(p, env, win.base() + usize::from(args.0), dst),
                        None => slow!(),
                    }
                }
                Op::CallGlobal {
                    slot,
                    args,
                    argc,
                    dst,
                } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    let entry = scope
                        .get(SlotId(slot))
                        .and_then(|f| closure_entry(f, argc, protos));
                    match entry {
                        Some((p, env)) => enter!(p, env, win.base() + usize::from(args.0), dst),
                        None => slow!(),
                    }
                }
                Op::CallSibling {
                    member,
                    args,
                    argc,
                    dst,
                } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    match proto.siblings.get(usize::from(member)).copied() {
                        Some(p)
                            if protos
                                .get(p as usize)
                                .is_some_and(|q| q.n_params == u16::from(argc)) =>
                        {
                            let env = frames[fi].env.clone();
                            enter!(p, env, win.base() + usize::from(args.0), dst)
                        }
                        _ => slow!(),
                    }
                }
                Op::CallSelf { args, dst, .. } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    let p = frames[fi].proto;
                    enter!(p, None, win.base() + usize::from(args.0), dst)
                }
                Op::TailCallSelf { args, argc, .. } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    if frames[fi].env.is_some() || usize::from(args.0) < usize::from(argc) {
                        let p = frames[fi].proto;
                        tail_enter!(p, None, args, argc)
                    } else {
                        // A loop: the frame keeps its proto and window; only the
                        // arguments move down. An integer over an integer is a
                        // plain store (no drop of the old value, no tag check of
                        // the new one beyond this match).
                        let a = usize::from(args.0);
                        let n = usize::from(argc);
                        let (params, rest) = win.run_mut(Reg(0), a + n).split_at_mut(a);
                        for (d, s) in params.iter_mut().zip(rest.iter_mut()) {
                            match (&mut *d, &mut *s) {
                                (Value::Int(y), Value::Int(x)) => *y = *x,
                                (_, Value::Int(x)) => *d = Value::Int(*x),
                                (_, s) => *d = std::mem::take(s),
                            }
                        }
                        pc = 0;
                    }
                }
                Op::TailCall { func, args, argc } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    match closure_entry(&r!(func), argc, protos) {
                        Some((p, env)) => tail_enter!(p, env, args, argc),
                        None => slow!(),
                    }
                }
                Op::TailCallGlobal { slot, args, argc } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    let entry = scope
                        .get(SlotId(slot))
                        .and_then(|f| closure_entry(f, argc, protos));
                    match entry {
                        Some((p, env)) => tail_enter!(p, env, args, argc),
                        None => slow!(),
                    }
                }
                Op::TailCallSibling { member, args, argc } => {
                    if cancel.load(Ordering::Relaxed) {
                        slow!()
                    }
                    match proto.siblings.get(usize::from(member)).copied() {
                        Some(p)
                            if protos
                                .get(p as usize)
                                .is_some_and(|q| q.n_params == u16::from(argc)) =>
                        {
                            let env = frames[fi].env.clone();
                            tail_enter!(p, env, args, argc)
                        }
                        _ => slow!(),
                    }
                }
                Op::Return { src } => {
                    // With leftover arguments to apply, the general path.
                    if frames[fi].extra.is_some() {
                        slow!()
                    }
                    let v = if let Value::Int(n) = r!(src) {
                        Value::Int(n)
                    } else {
                        std::mem::take(win.get_mut(src))
                    };
                    win.clear(proto);
                    let ret = frames[fi].ret;
                    // A frame with no environment owns nothing: skip its
                    // drop glue.
                    if let Some(f) = frames.pop() {
                        if f.env.is_none() && f.extra.is_none() {
                            std::mem::forget(f);
                        }
                    }
                    // The run's bottom frame: the run's value.
                    if fi == stop {
                        return Some(v);
                    }
                    // The caller ran in this run before, so its proto is in
                    // the snapshot.
                    fi -= 1;
                    let caller = &frames[fi];
                    proto = &protos[caller.proto as usize];
                    code = &proto.code;
                    pc = caller.pc as usize;
                    win.moved(caller.base as usize, usize::from(proto.n_regs));
                    let slot = win.get_mut(ret);
                    if let (Value::Int(x), Value::Int(n)) = (&mut *slot, &v) {
                        *x = *n;
                    } else {
                        *slot = v;
                    }
                }
                _ => slow!(),
            }
        }
    }
}

/// Whether `v` is a list, a record or a variant: values whose equality
/// the fast path leaves to the general one, which polls for cancellation
/// while it compares them.
#[inline(always)]
fn is_container(v: &Value) -> bool {
    matches!(v, Value::List(_) | Value::Record(_) | Value::Variant(_))
}
