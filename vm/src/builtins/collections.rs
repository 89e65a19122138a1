//! Collections and comparison (§14.2): `each`, `map`, `filter`, `fold`,
//! `sort-list`, `sort-list-by`, `range`, `length`, `is-empty`, `keys`,
//! `has`, `equal`, `lt`, `gt`.
//!
//! Higher-order builtins call back through [`Ctx::call`], poll for
//! cancellation once per element, and stop at the first failing callback.
//! The others poll while they build, sort or compare (`pace`), so a large
//! `range`, sort or comparison ends soon after a cancel.

use std::cmp::Ordering;
use std::slice;

use super::pace::{self, poll_at, Pacer};
use super::{arg, int_arg, list_arg, record_arg, str_arg, Ctx};
use crate::failure::Failure;
use crate::value::Value;

/// `each f xs`: runs `f` on every element for its effects; returns `()`.
pub fn each(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?;
    for x in list_arg(args, 1)?.iter() {
        ctx.poll()?;
        ctx.call(f, slice::from_ref(x))?;
    }
    Ok(Value::Unit)
}

/// `map f xs`: the list of `f`'s results.
pub fn map(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let mut out = Vec::with_capacity(xs.len());
    for x in xs.iter() {
        ctx.poll()?;
        out.push(ctx.call(f, slice::from_ref(x))?);
    }
    Ok(Value::list(out))
}

/// `filter p xs`: the elements `p` returns `true` for, in order.
pub fn filter(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let p = arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let mut out = Vec::new();
    for x in xs.iter() {
        ctx.poll()?;
        let keep = ctx.call(p, slice::from_ref(x))?;
        let Value::Bool(keep) = keep else {
            return Err(Failure::error(format!(
                "the predicate returned {}, not a Bool",
                keep.kind_name()
            )));
        };
        if keep {
            out.push(x.clone());
        }
    }
    if out.len() == xs.len() {
        // Everything kept: share the input instead of a copy.
        return Ok(Value::List(xs.clone()));
    }
    Ok(Value::list(out))
}

/// `fold f init xs`: `f (… (f (f init x0) x1) …) xn`, left to right.
pub fn fold(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?;
    let mut acc = arg(args, 1)?.clone();
    for x in list_arg(args, 2)?.iter() {
        ctx.poll()?;
        // The accumulator is handed over, not kept: the callback may be
        // its only holder and update it in place.
        let mut pair = [acc, x.clone()];
        acc = ctx.call_owned(f, &mut pair)?;
    }
    Ok(acc)
}

/// What a sortable list holds.
fn sort_kind(items: &[Value]) -> Result<(), Failure> {
    let Some(first) = items.first() else {
        return Ok(());
    };
    // Numbers compare numerically, an Int with a Float too (only decoded
    // data holds both at one type, §7.3).
    let ok = match first {
        Value::Int(_) | Value::Float(_) => items
            .iter()
            .all(|v| matches!(v, Value::Int(_) | Value::Float(_))),
        Value::Str(_) => items.iter().all(|v| matches!(v, Value::Str(_))),
        Value::Unit
        | Value::Bool(_)
        | Value::Bytes(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Failure::error("can only sort numbers or strings"))
    }
}

fn order(a: &Value, b: &Value) -> Ordering {
    a.compare(b).unwrap_or(Ordering::Equal)
}

/// `sort-list xs`: ascending, stable; numbers numerically, strings
/// lexicographically.
pub fn sort_list(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    sort_kind(xs)?;
    if xs
        .windows(2)
        .all(|w| order(&w[0], &w[1]) != Ordering::Greater)
    {
        return Ok(Value::List(xs.clone()));
    }
    Ok(Value::list(pace::sort_values(ctx, xs, &order)?))
}

/// `sort-list-by f xs`: stable sort by the key `f` gives each element; `f`
/// runs once per element.
pub fn sort_list_by(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let mut keyed = Vec::with_capacity(xs.len());
    for x in xs.iter() {
        ctx.poll()?;
        keyed.push(ctx.call(f, slice::from_ref(x))?);
    }
    sort_kind(&keyed)?;
    let by_key = |i: usize, j: usize| match (keyed.get(i), keyed.get(j)) {
        (Some(a), Some(b)) => order(a, b),
        _ => Ordering::Equal,
    };
    let idx = pace::sort_positions(ctx, xs.len(), &by_key)?;
    Ok(Value::list(
        idx.into_iter().filter_map(|i| xs.get(i).cloned()).collect(),
    ))
}

/// `range start end`: the Ints `start, start+1, …, end-1`; empty when
/// `end <= start`. Built in runs of [`pace::POLL_EVERY`] with a poll
/// before each, so a huge range stops growing as soon as the run is
/// cancelled.
pub fn range(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let start = int_arg(args, 0)?;
    let end = int_arg(args, 1)?;
    if end <= start {
        return Ok(Value::list(Vec::new()));
    }
    let n = usize::try_from(i128::from(end) - i128::from(start))
        .map_err(|_| Failure::error(format!("range {start} {end} is too large")))?;
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| Failure::error(format!("range {start} {end} is too large")))?;
    let mut from = start;
    while from < end {
        ctx.poll()?;
        let run = i64::try_from(pace::POLL_EVERY).unwrap_or(i64::MAX);
        let to = from.saturating_add(run).min(end);
        out.extend((from..to).map(Value::Int));
        from = to;
    }
    Ok(Value::list(out))
}

fn size(v: &Value) -> Result<usize, Failure> {
    match v {
        Value::Str(s) => Ok(if s.is_ascii() {
            s.len()
        } else {
            s.chars().count()
        }),
        Value::Bytes(b) => Ok(b.len()),
        Value::List(xs) => Ok(xs.len()),
        Value::Record(r) => Ok(r.len()),
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => Err(Failure::error(format!("{} has no length", v.kind_name()))),
    }
}

/// `length x`: characters of a String, bytes of Bytes, elements of a List,
/// entries of a map.
pub fn length(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = size(arg(args, 0)?)?;
    Ok(Value::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

/// `is-empty x`.
pub fn is_empty(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let empty = match v {
        Value::Str(s) => s.is_empty(),
        Value::Bytes(b) => b.is_empty(),
        Value::List(xs) => xs.is_empty(),
        Value::Record(r) => r.is_empty(),
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => size(v)? == 0,
    };
    Ok(Value::Bool(empty))
}

/// `keys m`: the keys, sorted (shared, not copied).
pub fn keys(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let r = record_arg(args, 0)?;
    let mut out = Vec::with_capacity(r.len());
    for (i, k) in r.keys().enumerate() {
        poll_at(ctx, i)?;
        out.push(Value::Str(k.clone()));
    }
    Ok(Value::list(out))
}

/// `has m key`.
pub fn has(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let r = record_arg(args, 0)?;
    Ok(Value::Bool(r.has(str_arg(args, 1)?)))
}

/// `equal a b`: structural equality (§4.8), polling while it compares.
pub fn equal(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (a, b) = (arg(args, 0)?, arg(args, 1)?);
    let mut pacer = Pacer::new(ctx);
    let same = a.equal_while(b, &mut || pacer.go_on());
    Ok(Value::Bool(pacer.finish_some(same)?))
}

fn compare(args: &[Value]) -> Result<Ordering, Failure> {
    let a = arg(args, 0)?;
    let b = arg(args, 1)?;
    a.compare(b).ok_or_else(|| {
        Failure::error(format!(
            "cannot order {} and {}",
            a.kind_name(),
            b.kind_name()
        ))
    })
}

/// `lt a b`: `a < b` for two numbers of one kind or two strings.
pub fn lt(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    Ok(Value::Bool(compare(args)? == Ordering::Less))
}

/// `gt a b`: `a > b`.
pub fn gt(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    Ok(Value::Bool(compare(args)? == Ordering::Greater))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, ints, list, rec, strs, FakeCtx};
    use crate::value::Value;

    #[test]
    fn map_filter_fold_each() {
        let mut ctx = FakeCtx::new();
        let double = ctx.closure(|a| match a {
            [Value::Int(n)] => Ok(Value::Int(n * 2)),
            _ => Ok(Value::Unit),
        });
        let even = ctx.closure(|a| Ok(Value::Bool(matches!(a, [Value::Int(n)] if n % 2 == 0))));
        let add = ctx.closure(|a| match a {
            [Value::Int(x), Value::Int(y)] => Ok(Value::Int(x + y)),
            _ => Ok(Value::Unit),
        });
        let xs = ints(&[1, 2, 3, 4]);
        assert_eq!(
            ctx.run("map", &[double.clone(), xs.clone()]),
            Ok(ints(&[2, 4, 6, 8]))
        );
        assert_eq!(
            ctx.run("filter", &[even.clone(), xs.clone()]),
            Ok(ints(&[2, 4]))
        );
        assert_eq!(
            ctx.run("fold", &[add, Value::Int(10), xs.clone()]),
            Ok(Value::Int(20))
        );
        let calls = ctx.calls;
        assert_eq!(
            ctx.run("each", &[double.clone(), xs.clone()]),
            Ok(Value::Unit)
        );
        assert_eq!(ctx.calls, calls + 4);
        assert_eq!(ctx.run("map", &[double, list(vec![])]), Ok(list(vec![])));
    }

    #[test]
    fn callbacks_fail_and_stop() {
        let mut ctx = FakeCtx::new();
        let boom = ctx.closure(|_| Err(crate::Failure::raised(7, "boom")));
        let res = ctx.run("map", &[boom, ints(&[1, 2, 3])]);
        assert_eq!(
            res.map_err(|f| (f.status, f.message.clone())),
            Err((7, "boom".into()))
        );
        assert_eq!(ctx.calls, 1);
        let not_bool = ctx.closure(|_| Ok(Value::Int(1)));
        assert!(ctx.run("filter", &[not_bool, ints(&[1])]).is_err());
    }

    #[test]
    fn builtins_as_callbacks() {
        let mut ctx = FakeCtx::new();
        let upper = ctx.builtin("upper", vec![]);
        assert_eq!(
            ctx.run("map", &[upper, strs(&["a", "b"])]),
            Ok(strs(&["A", "B"]))
        );
    }

    #[test]
    fn sorting() {
        assert_eq!(call("sort-list", &[ints(&[3, 1, 2])]), Ok(ints(&[1, 2, 3])));
        assert_eq!(
            call("sort-list", &[strs(&["b", "B", "a"])]),
            Ok(strs(&["B", "a", "b"]))
        );
        assert_eq!(
            call(
                "sort-list",
                &[list(vec![Value::Float(2.5), Value::Float(-1.0)])]
            ),
            Ok(list(vec![Value::Float(-1.0), Value::Float(2.5)]))
        );
        assert_eq!(call("sort-list", &[list(vec![])]), Ok(list(vec![])));
        // Decoded data can mix the two kinds of number; they sort by value.
        assert_eq!(
            call(
                "sort-list",
                &[list(vec![Value::Float(1.5), Value::Int(1), Value::Int(2)])]
            ),
            Ok(list(vec![Value::Int(1), Value::Float(1.5), Value::Int(2)]))
        );
        assert!(call("sort-list", &[list(vec![Value::Int(1), Value::str("a")])]).is_err());
        assert!(call("sort-list", &[list(vec![Value::Bool(true)])]).is_err());

        let mut ctx = FakeCtx::new();
        let len = ctx.builtin("length", vec![]);
        assert_eq!(
            ctx.run("sort-list-by", &[len, strs(&["ccc", "a", "bb", "d"])]),
            Ok(strs(&["a", "d", "bb", "ccc"]))
        );
    }

    #[test]
    fn ranges() {
        assert_eq!(
            call("range", &[Value::Int(0), Value::Int(3)]),
            Ok(ints(&[0, 1, 2]))
        );
        assert_eq!(
            call("range", &[Value::Int(3), Value::Int(3)]),
            Ok(list(vec![]))
        );
        assert_eq!(
            call("range", &[Value::Int(5), Value::Int(-5)]),
            Ok(list(vec![]))
        );
        assert_eq!(
            call("range", &[Value::Int(i64::MAX - 1), Value::Int(i64::MAX)]),
            Ok(ints(&[i64::MAX - 1]))
        );
        assert!(call("range", &[Value::Int(i64::MIN), Value::Int(i64::MAX)]).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(call("length", &[Value::str("héllo")]), Ok(Value::Int(5)));
        assert_eq!(
            call("length", &[Value::bytes("héllo".into())]),
            Ok(Value::Int(6))
        );
        assert_eq!(call("length", &[ints(&[1, 2])]), Ok(Value::Int(2)));
        assert_eq!(
            call("length", &[rec(&[("a", Value::Unit)])]),
            Ok(Value::Int(1))
        );
        assert!(call("length", &[Value::Int(1)]).is_err());
        assert_eq!(call("is-empty", &[Value::str("")]), Ok(Value::Bool(true)));
        assert_eq!(call("is-empty", &[ints(&[1])]), Ok(Value::Bool(false)));
        assert_eq!(call("is-empty", &[rec(&[])]), Ok(Value::Bool(true)));
        assert_eq!(
            call("is-empty", &[Value::bytes(vec![])]),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn maps() {
        let m = rec(&[("b", Value::Int(2)), ("a", Value::Int(1))]);
        assert_eq!(
            call("keys", std::slice::from_ref(&m)),
            Ok(strs(&["a", "b"]))
        );
        assert_eq!(
            call("has", &[m.clone(), Value::str("a")]),
            Ok(Value::Bool(true))
        );
        assert_eq!(call("has", &[m, Value::str("c")]), Ok(Value::Bool(false)));
    }

    #[test]
    fn comparison() {
        let t = Ok(Value::Bool(true));
        let f = Ok(Value::Bool(false));
        assert_eq!(call("equal", &[ints(&[1, 2]), ints(&[1, 2])]), t);
        // Only decoded data mixes the two; numbers compare numerically.
        assert_eq!(call("equal", &[Value::Int(3), Value::Float(3.0)]), t);
        assert_eq!(call("equal", &[Value::Int(3), Value::Float(3.5)]), f);
        assert_eq!(
            call("lt", &[Value::Int(i64::MAX - 1), Value::Int(i64::MAX)]),
            t
        );
        assert_eq!(call("gt", &[Value::str("b"), Value::str("a")]), t);
        assert_eq!(call("lt", &[Value::Float(1.0), Value::Float(1.0)]), f);
        assert!(call("lt", &[Value::Int(1), Value::str("a")]).is_err());
        assert!(call("gt", &[ints(&[]), ints(&[])]).is_err());
    }
}
