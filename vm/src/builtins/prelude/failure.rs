//! Recovery helpers of the prelude (§8.6, §8.7, §14.6): `attempt`,
//! `succeeds`, `retry`.
//!
//! Each runs a block (a thunk, called with no arguments) and looks at
//! whether it failed, as `try` does: the block's output streams to the
//! current output whatever happens, and bytes written before a failure
//! stay written. Only ordinary failures are absorbed. An `exit` inside the
//! block is a control escape that no handler catches (§8.8), and a
//! cancellation is sticky (§8.10): both pass straight through.

use super::super::{int_arg, Ctx};
use super::{fail, func_arg};
use crate::failure::{Failure, Reason};
use crate::value::Value;

/// Whether `f`, as [`Ctx::call`] returned it, is the stand-in the VM uses
/// to carry an `exit` out through a builtin: a fresh `exit` failure that
/// never unwound through a frame, so it has no source span. (A `fail` in a
/// block that says the same has a span by the time it leaves the block.)
/// Whether a block's failure may be absorbed: not an `exit` on its way
/// out ([`Ctx::exiting`]), not a cancellation.
fn recoverable(ctx: &dyn Ctx, f: &Failure) -> bool {
    !matches!(f.reason, Reason::Cancelled(_)) && !ctx.exiting()
}

/// Runs `block`: its value, or the ordinary failure it ended with; an
/// escape or cancellation is the outer error.
fn run(ctx: &mut dyn Ctx, block: &Value) -> Result<Result<Value, Failure>, Failure> {
    ctx.poll()?;
    match ctx.call(block, &[]) {
        Ok(v) => Ok(Ok(v)),
        Err(f) if recoverable(ctx, &f) => Ok(Err(f)),
        Err(f) => Err(f),
    }
}

/// `attempt block`: runs the block and returns `()`, whether it succeeded
/// or failed; its value is discarded.
pub fn attempt(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let block = func_arg(args, 0)?;
    let _ = run(ctx, block)?;
    Ok(Value::Unit)
}

/// `succeeds block`: runs the block; `true` when it returned a value,
/// `false` when it failed.
pub fn succeeds(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let block = func_arg(args, 0)?;
    Ok(Value::Bool(run(ctx, block)?.is_ok()))
}

/// `retry n block`: runs the block up to `n` times, until a run succeeds,
/// and returns that run's value. When all `n` runs fail, the last run's
/// failure is raised unchanged. Runs follow one another at once; `n` must
/// be at least 1.
pub fn retry(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = int_arg(args, 0)?;
    let block = func_arg(args, 1)?;
    if n < 1 {
        return Err(fail(
            "retry",
            format!("the number of attempts must be at least 1, got {n}"),
        ));
    }
    let mut left = n;
    loop {
        match run(ctx, block)? {
            Ok(v) => return Ok(v),
            Err(f) if left <= 1 => return Err(f),
            Err(_) => left -= 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use crate::builtins::testing::{fails, FakeCtx};
    use crate::failure::{Cause, Failure};
    use crate::value::Value;

    /// A block that fails with status 3 on its first `failures` runs and
    /// then returns how many runs it took; `runs` counts them.
    fn flaky(ctx: &mut FakeCtx, failures: i64) -> (Value, Rc<Cell<i64>>) {
        let runs = Rc::new(Cell::new(0));
        let seen = runs.clone();
        let block = ctx.closure(move |_| {
            seen.set(seen.get() + 1);
            if seen.get() <= failures {
                Err(Failure::raised(3, format!("run {} failed", seen.get())))
            } else {
                Ok(Value::Int(seen.get()))
            }
        });
        (block, runs)
    }

    #[test]
    fn attempt_and_succeeds() {
        let mut ctx = FakeCtx::new();
        let (bad, runs) = flaky(&mut ctx, 1);
        assert_eq!(
            ctx.run("attempt", std::slice::from_ref(&bad)),
            Ok(Value::Unit)
        );
        assert_eq!(
            ctx.run("attempt", std::slice::from_ref(&bad)),
            Ok(Value::Unit)
        );
        assert_eq!(runs.get(), 2);
        let (once, _) = flaky(&mut ctx, 1);
        assert_eq!(
            ctx.run("succeeds", std::slice::from_ref(&once)),
            Ok(Value::Bool(false))
        );
        assert_eq!(ctx.run("succeeds", &[once]), Ok(Value::Bool(true)));
    }

    #[test]
    fn retry_stops_at_the_first_success() {
        let mut ctx = FakeCtx::new();
        let (block, runs) = flaky(&mut ctx, 2);
        assert_eq!(ctx.run("retry", &[Value::Int(5), block]), Ok(Value::Int(3)));
        assert_eq!(runs.get(), 3);
    }

    #[test]
    fn retry_raises_the_last_failure() {
        let mut ctx = FakeCtx::new();
        let (block, runs) = flaky(&mut ctx, 10);
        let e = ctx.run("retry", &[Value::Int(3), block.clone()]);
        assert_eq!(
            e.map_err(|f| (f.status, f.message.clone())),
            Err((3, "run 3 failed".into()))
        );
        assert_eq!(runs.get(), 3);
        let e = ctx.run("retry", &[Value::Int(1), block]);
        assert!(e.is_err_and(|f| f.message == "run 4 failed"));
    }

    #[test]
    fn retry_needs_a_positive_count() {
        let mut ctx = FakeCtx::new();
        let (block, runs) = flaky(&mut ctx, 0);
        for n in [0, -3] {
            let e = ctx.run("retry", &[Value::Int(n), block.clone()]);
            assert!(e.is_err_and(|f| f.message.contains("at least 1")));
        }
        assert_eq!(runs.get(), 0);
        assert!(fails("retry", &[Value::Int(0), Value::Unit]).contains("a function"));
    }

    #[test]
    fn escapes_and_cancellation_pass_through() {
        let mut ctx = FakeCtx::new();
        let exit = ctx.closure(|_| Err(Failure::error("exit")));
        let cancelled = ctx.closure(|_| Err(Failure::cancelled(Cause::Interrupted)));
        for block in [exit, cancelled] {
            assert!(ctx.run("attempt", std::slice::from_ref(&block)).is_err());
            assert!(ctx.run("succeeds", std::slice::from_ref(&block)).is_err());
            let calls = ctx.calls;
            assert!(ctx.run("retry", &[Value::Int(3), block]).is_err());
            assert_eq!(ctx.calls, calls + 1, "no second run after an escape");
        }
    }
}
