//! The prelude functions of §14.2-§14.6 that need no operating-system
//! service beyond reading a file, implemented natively.
//!
//! The spec describes the prelude as ral code built on the core builtins;
//! here each function is a [`super::BuiltinFn`] with the scheme the
//! checker's table gives it, so it costs one builtin call rather than an
//! interpreted loop. The spec names these functions but says little about
//! their edge cases, so each one's doc comment states the rule this
//! implementation keeps; the summary:
//!
//! - **Empty lists.** A function that must pick or combine elements with no
//!   seed (`reduce`, `last`, `first`, `sum`, `maximum`, `minimum`, `median`,
//!   `median-by`) fails on an empty list, naming itself. `sum` is one of
//!   them: at run time an empty list carries no element kind, so there is no
//!   honest zero to return (`fold` with an explicit `0` or `0.0` is the
//!   total spelling).
//! - **Counts.** `take` and `drop` treat their count as a bound: a negative
//!   count is 0 and a count past the end is the whole list. `repeat`,
//!   `indent`, `pad-left` and `pad-right` refuse a negative count or width,
//!   which can only be a mistake.
//! - **Sizes.** A result that would exceed [`MAX_TEXT_BYTES`] of text or
//!   [`MAX_LIST_LEN`] elements is a failure, never an abort.
//! - **Callbacks** run through [`Ctx::call`]; loops poll for cancellation
//!   once per element and stop at the first failing callback.
//! - **Recovery** (`attempt`, `succeeds`, `retry`) absorbs ordinary
//!   failures only: an `exit` and a cancellation pass through.
//! - **Messages** start with the function's name (`reduce: the list is
//!   empty`), since the name of the failing command is not otherwise in the
//!   message.

use std::sync::Arc;

use super::{arg, Ctx};
use crate::failure::Failure;
use crate::value::Value;

pub mod failure;
pub mod lists;
pub mod numbers;
pub mod paths;
pub mod report;
pub mod text;

/// The largest string a prelude function builds (1 GiB).
pub const MAX_TEXT_BYTES: usize = 1 << 30;

/// The most elements a prelude function puts in one list (2^28).
pub const MAX_LIST_LEN: usize = 1 << 28;

/// A failure of the prelude function `name`.
pub(crate) fn fail(name: &str, message: impl std::fmt::Display) -> Failure {
    Failure::error(format!("{name}: {message}"))
}

/// The failure for an empty list given to `name`.
pub(crate) fn empty_list(name: &str) -> Failure {
    fail(name, "the list is empty")
}

/// A fresh vector for `n` elements, or a failure when `n` is past
/// [`MAX_LIST_LEN`] or cannot be allocated.
pub(crate) fn list_with_capacity(name: &str, n: usize) -> Result<Vec<Value>, Failure> {
    let too_large = || {
        fail(
            name,
            format!("the result would have {n} elements, too many"),
        )
    };
    if n > MAX_LIST_LEN {
        return Err(too_large());
    }
    let mut out = Vec::new();
    out.try_reserve_exact(n).map_err(|_| too_large())?;
    Ok(out)
}

/// A fresh string for `n` bytes, or a failure when `n` is past
/// [`MAX_TEXT_BYTES`] or cannot be allocated.
pub(crate) fn text_with_capacity(name: &str, n: usize) -> Result<String, Failure> {
    let too_large = || {
        fail(
            name,
            format!("the result would be {n} bytes, over the 1 GiB limit"),
        )
    };
    if n > MAX_TEXT_BYTES {
        return Err(too_large());
    }
    let mut out = String::new();
    out.try_reserve_exact(n).map_err(|_| too_large())?;
    Ok(out)
}

/// The Bool a predicate returned, or a failure naming `name`.
pub(crate) fn truth(name: &str, v: &Value) -> Result<bool, Failure> {
    if let Value::Bool(b) = v {
        Ok(*b)
    } else {
        Err(fail(
            name,
            format!("the predicate returned {}, not a Bool", v.kind_name()),
        ))
    }
}

/// The function argument `i` (a backstop: the checker has typed it).
pub(crate) fn func_arg(args: &[Value], i: usize) -> Result<&Value, Failure> {
    let v = arg(args, i)?;
    if matches!(v, Value::Func(_)) {
        Ok(v)
    } else {
        Err(super::wrong("a function", v))
    }
}

/// Calls `f` on one element, polling for cancellation first.
pub(crate) fn call1(ctx: &mut dyn Ctx, f: &Value, x: &Value) -> Result<Value, Failure> {
    ctx.poll()?;
    ctx.call(f, std::slice::from_ref(x))
}

/// A list value sharing `items` when it is the whole input; a part is
/// copied with polls (`pace::copy`).
pub(crate) fn share_or_copy(
    ctx: &mut dyn Ctx,
    whole: &Arc<Vec<Value>>,
    part: &[Value],
) -> Result<Value, Failure> {
    if part.len() == whole.len() {
        Ok(Value::List(whole.clone()))
    } else {
        Ok(Value::list(super::pace::copy(ctx, part)?))
    }
}
