//! Numeric and ordering helpers of the prelude (§14.2): `sum`, `max`,
//! `min`, `maximum`, `minimum`, `median`, `median-by`.
//!
//! `sum` adds Ints with overflow checking and Floats with the finiteness
//! check of `$[…]` arithmetic (§4.1), so it fails exactly where the
//! equivalent chain of `+` would. `max`/`min` and `maximum`/`minimum`
//! order numbers numerically and strings lexicographically (§4.8) and
//! prefer the earlier of equal values. `median` is a Float: the middle
//! element, or the mean of the two middle elements of an even-sized list.

use std::cmp::Ordering;
use std::slice;

use super::super::arith::{add_float, add_int};
use super::super::{arg, list_arg, Ctx};
use super::{empty_list, fail, func_arg, list_with_capacity};
use crate::failure::Failure;
use crate::value::Value;

/// `sum xs`: the sum of a list of Ints or of Floats. An empty list fails
/// (at run time it has no number kind to return a zero of); an Int sum
/// outside the Int range and a Float sum that is not finite fail.
pub fn sum(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let Some((first, rest)) = xs.split_first() else {
        return Err(empty_list("sum"));
    };
    let mut acc = first.clone();
    for x in rest {
        ctx.poll()?;
        acc = match (&acc, x) {
            (Value::Int(a), Value::Int(b)) => {
                Value::Int(add_int(*a, *b).map_err(|e| fail("sum", &e.message))?)
            }
            (Value::Float(a), Value::Float(b)) => {
                Value::Float(add_float(*a, *b).map_err(|e| fail("sum", &e.message))?)
            }
            (a, b) => return Err(not_numbers("sum", a, b)),
        };
    }
    if let Value::Int(_) | Value::Float(_) = acc {
        Ok(acc)
    } else {
        Err(fail(
            "sum",
            format!("expected numbers, got {}", acc.kind_name()),
        ))
    }
}

#[cold]
fn not_numbers(name: &str, a: &Value, b: &Value) -> Failure {
    fail(
        name,
        format!(
            "expected numbers of one kind, got {} and {}",
            a.kind_name(),
            b.kind_name()
        ),
    )
}

/// The order of two values of one comparable kind, or a failure naming
/// `name`.
fn order(name: &str, a: &Value, b: &Value) -> Result<Ordering, Failure> {
    a.compare(b).ok_or_else(|| {
        fail(
            name,
            format!("cannot order {} and {}", a.kind_name(), b.kind_name()),
        )
    })
}

/// `max a b`: the larger of two numbers of one kind or two strings; `a`
/// when they are equal.
pub fn max(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (a, b) = (arg(args, 0)?, arg(args, 1)?);
    Ok(if order("max", a, b)? == Ordering::Less {
        b.clone()
    } else {
        a.clone()
    })
}

/// `min a b`: the smaller; `a` when they are equal.
pub fn min(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (a, b) = (arg(args, 0)?, arg(args, 1)?);
    Ok(if order("min", a, b)? == Ordering::Greater {
        b.clone()
    } else {
        a.clone()
    })
}

/// The first element of `xs` that no later element beats: `beats` is
/// `Greater` for `maximum`, `Less` for `minimum`.
fn extreme(ctx: &mut dyn Ctx, name: &str, xs: &[Value], beats: Ordering) -> Result<Value, Failure> {
    let Some((first, rest)) = xs.split_first() else {
        return Err(empty_list(name));
    };
    let mut best = first;
    for x in rest {
        ctx.poll()?;
        if order(name, x, best)? == beats {
            best = x;
        }
    }
    Ok(best.clone())
}

/// `maximum xs`: the largest element (the first of equal ones); an empty
/// list fails.
pub fn maximum(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    extreme(ctx, "maximum", list_arg(args, 0)?, Ordering::Greater)
}

/// `minimum xs`: the smallest element (the first of equal ones); an empty
/// list fails.
pub fn minimum(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    extreme(ctx, "minimum", list_arg(args, 0)?, Ordering::Less)
}

/// A number as a Float (an Int beyond 2^53 rounds to the nearest Float).
fn as_float(name: &str, v: &Value) -> Result<f64, Failure> {
    match v {
        // The conversion is the documented rounding, not an accident.
        #[allow(clippy::cast_precision_loss)]
        Value::Int(n) => Ok(*n as f64),
        Value::Float(x) => Ok(*x),
        Value::Unit
        | Value::Bool(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => Err(fail(
            name,
            format!("expected numbers, got {}", v.kind_name()),
        )),
    }
}

/// The median of `xs` (numbers of one kind), as a Float.
fn median_of(ctx: &mut dyn Ctx, name: &str, xs: &[Value]) -> Result<Value, Failure> {
    let Some(first) = xs.first() else {
        return Err(empty_list(name));
    };
    let same_kind = match first {
        Value::Int(_) => xs.iter().all(|v| matches!(v, Value::Int(_))),
        Value::Float(_) => xs.iter().all(|v| matches!(v, Value::Float(_))),
        Value::Unit
        | Value::Bool(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => false,
    };
    if !same_kind {
        return Err(fail(name, "expected numbers of one kind"));
    }
    // Every Float is finite (§4.1), so the order is total.
    let xs =
        super::super::pace::sort_values(ctx, xs, &|a, b| a.compare(b).unwrap_or(Ordering::Equal))?;
    let mid = xs.len() / 2;
    let hi = as_float(name, xs.get(mid).unwrap_or(&Value::Unit))?;
    if xs.len() % 2 == 1 {
        return Ok(Value::Float(hi));
    }
    let lo = as_float(name, xs.get(mid - 1).unwrap_or(&Value::Unit))?;
    // Halving first keeps the mean of two large finite Floats finite.
    Ok(Value::Float(lo / 2.0 + hi / 2.0))
}

/// `median xs`: the median of a list of Ints or of Floats, as a Float: the
/// middle element of the sorted list, or the mean of the two middle ones
/// when the length is even. An empty list fails.
pub fn median(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    median_of(ctx, "median", list_arg(args, 0)?)
}

/// `median-by f xs`: the median of the numbers `f` gives the elements; `f`
/// runs once per element. An empty list fails.
pub fn median_by(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = func_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let mut keys = list_with_capacity("median-by", xs.len())?;
    for x in xs.iter() {
        ctx.poll()?;
        keys.push(ctx.call(f, slice::from_ref(x))?);
    }
    median_of(ctx, "median-by", &keys)
}

#[cfg(test)]
mod tests {
    use crate::builtins::testing::{call, fails, ints, list, rec, strs, FakeCtx};
    use crate::failure::Failure;
    use crate::value::Value;

    fn floats(xs: &[f64]) -> Value {
        list(xs.iter().copied().map(Value::Float).collect())
    }

    #[test]
    fn sums() {
        assert_eq!(call("sum", &[ints(&[1, 2, 3])]), Ok(Value::Int(6)));
        assert_eq!(call("sum", &[ints(&[-4])]), Ok(Value::Int(-4)));
        assert_eq!(call("sum", &[floats(&[0.5, 0.25])]), Ok(Value::Float(0.75)));
        assert_eq!(fails("sum", &[ints(&[])]), "sum: the list is empty");
        assert!(fails("sum", &[ints(&[i64::MAX, 1])]).starts_with("sum: integer overflow"));
        assert!(fails("sum", &[floats(&[1e308, 1e308])]).contains("not finite"));
        assert!(fails("sum", &[list(vec![Value::Int(1), Value::Float(1.0)])]).contains("one kind"));
        assert!(fails("sum", &[strs(&["a"])]).contains("expected numbers"));
    }

    #[test]
    fn max_and_min() {
        let i = Value::Int;
        assert_eq!(call("max", &[i(3), i(7)]), Ok(i(7)));
        assert_eq!(call("min", &[i(3), i(7)]), Ok(i(3)));
        assert_eq!(
            call("max", &[Value::str("b"), Value::str("a")]),
            Ok(Value::str("b"))
        );
        assert_eq!(
            call("min", &[Value::Float(-0.5), Value::Float(2.0)]),
            Ok(Value::Float(-0.5))
        );
        assert!(fails("max", &[i(1), Value::str("a")]).contains("cannot order"));
        assert_eq!(call("maximum", &[ints(&[3, 9, 2])]), Ok(i(9)));
        assert_eq!(call("minimum", &[ints(&[3, 9, 2])]), Ok(i(2)));
        assert_eq!(
            call("minimum", &[strs(&["pear", "apple"])]),
            Ok(Value::str("apple"))
        );
        assert_eq!(fails("maximum", &[ints(&[])]), "maximum: the list is empty");
        assert_eq!(fails("minimum", &[ints(&[])]), "minimum: the list is empty");
    }

    #[test]
    fn medians() {
        let m = |xs: Value| call("median", &[xs]);
        assert_eq!(m(ints(&[5, 1, 3])), Ok(Value::Float(3.0)));
        assert_eq!(m(ints(&[4, 1, 3, 2])), Ok(Value::Float(2.5)));
        assert_eq!(m(ints(&[7])), Ok(Value::Float(7.0)));
        assert_eq!(m(floats(&[1e308, 1.7e308])), Ok(Value::Float(1.35e308)));
        assert_eq!(
            m(ints(&[i64::MAX, i64::MAX])),
            Ok(Value::Float(9.223372036854776e18))
        );
        assert_eq!(fails("median", &[ints(&[])]), "median: the list is empty");
        assert!(fails("median", &[strs(&["a"])]).contains("numbers"));

        let mut ctx = FakeCtx::new();
        let size = ctx.closure(|a| match a {
            [Value::Record(r)] => r
                .get("size")
                .cloned()
                .ok_or_else(|| Failure::error("no size")),
            _ => Err(Failure::error("bad")),
        });
        let files = list(vec![
            rec(&[("size", Value::Int(10))]),
            rec(&[("size", Value::Int(40))]),
        ]);
        assert_eq!(
            ctx.run("median-by", &[size.clone(), files]),
            Ok(Value::Float(25.0))
        );
        let e = ctx.run("median-by", &[size, list(vec![])]);
        assert!(e.is_err_and(|f| f.message == "median-by: the list is empty"));
    }
}
