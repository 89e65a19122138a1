//! The running frame's register window, read and written without bounds
//! checks: the one place the VM uses `unsafe` for speed.
//!
//! Measured first (callgrind on `fib 25`, after the fast path had its own
//! loop): bounds checks on register indices and re-reads of the register
//! vector's pointer and length were 27% of all instructions executed. The
//! fast path ([`super::hot`]) reads and writes registers through a
//! [`Window`] instead.
//!
//! # Why it is sound
//!
//! - **Every index is in the window.** A window covers exactly the `n_regs`
//!   registers of the running proto, and every register an instruction
//!   names, and every run of registers it reads, is below `n_regs`: the VM
//!   checks that of every proto before it loads it ([`Proto::verify`]), and
//!   the fast path only runs instructions of loaded protos. Debug builds
//!   assert the index at every access as well (the test suite runs them).
//! - **The window is inside the vector.** [`Window::new`] and
//!   [`Window::moved`] grow the vector to `base + len` before taking the
//!   pointer, so `base + len <= regs.len()` whenever the pointer is used.
//! - **The pointer stays valid.** The window holds the only borrow of the
//!   vector for as long as it lives, and the vector is only resized by
//!   [`Window::moved`], which takes the pointer afresh after growing it.
//! - **No aliasing.** Element references come out of `&self`/`&mut self`
//!   methods, so the borrow checker keeps a `&mut Value` from coexisting
//!   with any other reference into the window.

#![allow(unsafe_code)]

use crate::op::{Proto, Reg};
use crate::value::Value;

/// `regs[base..base + len]`, the running frame's registers.
pub(super) struct Window<'a> {
    regs: &'a mut Vec<Value>,
    /// `regs.as_mut_ptr() + base`, taken after the last resize.
    ptr: *mut Value,
    base: usize,
    len: usize,
}

impl<'a> Window<'a> {
    /// The window of `len` registers from `base`, growing `regs` to hold it.
    #[inline]
    pub fn new(regs: &'a mut Vec<Value>, base: usize, len: usize) -> Window<'a> {
        let mut w = Window {
            regs,
            ptr: std::ptr::null_mut(),
            base,
            len,
        };
        w.moved(base, len);
        w
    }

    /// Moves the window to `len` registers from `base` (a call or a return),
    /// growing the vector when it is too short.
    #[inline]
    pub fn moved(&mut self, base: usize, len: usize) {
        let end = base + len;
        if self.regs.len() < end {
            self.regs.resize(end, Value::Unit);
        }
        self.base = base;
        self.len = len;
        // SAFETY: `base + len <= regs.len()` (just ensured), so `base` is at
        // most the length and the offset pointer is within the allocation
        // or one past its end. It is taken after the last resize.
        self.ptr = unsafe { self.regs.as_mut_ptr().add(base) };
    }

    /// Where the window starts in the register vector.
    #[inline(always)]
    pub fn base(&self) -> usize {
        self.base
    }

    /// Register `r`.
    #[inline(always)]
    pub fn get(&self, r: Reg) -> &Value {
        let i = usize::from(r.0);
        debug_assert!(i < self.len, "r{i} outside a window of {}", self.len);
        // SAFETY: `i < len` (the proto was verified: every register operand
        // is below its `n_regs`, which is `len`), and `base + len` is within
        // the vector (module docs).
        unsafe { &*self.ptr.add(i) }
    }

    /// Register `r`, to write.
    #[inline(always)]
    pub fn get_mut(&mut self, r: Reg) -> &mut Value {
        let i = usize::from(r.0);
        debug_assert!(i < self.len, "r{i} outside a window of {}", self.len);
        // SAFETY: as in `get`; `&mut self` makes the reference unique.
        unsafe { &mut *self.ptr.add(i) }
    }

    /// Registers `start..start + n`.
    #[inline(always)]
    pub fn run(&self, start: Reg, n: usize) -> &[Value] {
        let i = usize::from(start.0);
        debug_assert!(
            i + n <= self.len,
            "r{i}+{n} outside a window of {}",
            self.len
        );
        // SAFETY: `start + n <= len` (verified for every run an instruction
        // reads: call arguments, literal items, record fields), within the
        // vector as in `get`.
        unsafe { std::slice::from_raw_parts(self.ptr.add(i), n) }
    }

    /// Registers `start..start + n`, to write.
    #[inline(always)]
    pub fn run_mut(&mut self, start: Reg, n: usize) -> &mut [Value] {
        let i = usize::from(start.0);
        debug_assert!(
            i + n <= self.len,
            "r{i}+{n} outside a window of {}",
            self.len
        );
        // SAFETY: as in `run`; `&mut self` makes the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i), n) }
    }

    /// Drops the heap values a returning frame of `proto` left in the
    /// window (see `clear_window`).
    #[inline(always)]
    pub fn clear(&mut self, proto: &Proto) {
        let len = self.len;
        let all = self.run_mut(Reg(0), len);
        match &proto.clear {
            Some(list) => {
                for &i in list.iter() {
                    if let Some(r) = all.get_mut(usize::from(i)) {
                        if !is_scalar(r) {
                            *r = Value::Unit;
                        }
                    }
                }
            }
            None => {
                for r in all {
                    if !is_scalar(r) {
                        *r = Value::Unit;
                    }
                }
            }
        }
    }
}

/// Whether `v` holds no resource (so dropping it can be skipped).
#[inline(always)]
pub(super) fn is_scalar(v: &Value) -> bool {
    matches!(
        v,
        Value::Unit | Value::Bool(_) | Value::Int(_) | Value::Float(_)
    )
}
