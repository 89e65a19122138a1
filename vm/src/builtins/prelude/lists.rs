//! List and map helpers of the prelude (§14.2, §4.7): `get`, `for`,
//! `reduce`, `reverse`, `last`, `take`, `drop`, `take-while`,
//! `drop-while`, `first`, `option-or`, `elem`, `contains`, `nub`, `zip`,
//! `cross`, `flat-map`, `enumerate`, `concat`, `group-by`.
//!
//! Argument order follows the table: functions first for the higher-order
//! ones (`reduce f xs`, `take-while p xs`, `group-by f xs`), the count first
//! for `take n xs` and `drop n xs`, the list first for `for xs f` and
//! `contains xs x`, the value first for `elem x xs`.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

use super::super::pace::{poll_at, Pacer};
use super::super::{arg, int_arg, list_arg, record_arg, str_arg, Ctx};
use super::{
    call1, empty_list, fail, func_arg, list_with_capacity, share_or_copy, truth, MAX_LIST_LEN,
};
use crate::failure::Failure;
use crate::value::{Keys, Record, Value};

/// `get m key default`: the value under `key`, or `default` when `m` has
/// no such key.
pub fn get(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let m = record_arg(args, 0)?;
    let key = str_arg(args, 1)?;
    match m.get(key) {
        Some(v) => Ok(v.clone()),
        None => Ok(arg(args, 2)?.clone()),
    }
}

/// `for xs f`: `each f xs` with the list first. Runs `f` on every element
/// in order for its effects (its output streams to the current output) and
/// returns `()`; stops at the first failing call.
pub fn for_(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let f = func_arg(args, 1)?;
    for x in xs.iter() {
        call1(ctx, f, x)?;
    }
    Ok(Value::Unit)
}

/// `reduce f xs`: a left fold seeded with the first element,
/// `f (… (f x0 x1) …) xn`. A one-element list is that element, and `f` is
/// not called; an empty list fails.
pub fn reduce(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = func_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let Some((first, rest)) = xs.split_first() else {
        return Err(empty_list("reduce"));
    };
    let mut acc = first.clone();
    for x in rest {
        ctx.poll()?;
        let mut pair = [acc, x.clone()];
        acc = ctx.call_owned(f, &mut pair)?;
    }
    Ok(acc)
}

/// `reverse xs`: the elements in reverse order.
pub fn reverse(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    if xs.len() < 2 {
        return Ok(Value::List(xs.clone()));
    }
    let mut out = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().rev().enumerate() {
        poll_at(ctx, i)?;
        out.push(x.clone());
    }
    Ok(Value::list(out))
}

/// `last xs`: the last element; an empty list fails.
pub fn last(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    list_arg(args, 0)?
        .last()
        .cloned()
        .ok_or_else(|| empty_list("last"))
}

/// A count used as a bound on a list of `len` elements: negative is 0,
/// past the end is `len`.
fn bound(n: i64, len: usize) -> usize {
    usize::try_from(n.max(0)).map_or(len, |n| n.min(len))
}

/// `take n xs`: the first `n` elements; all of them when the list is
/// shorter, none when `n` is 0 or negative.
pub fn take(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = int_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let k = bound(n, xs.len());
    share_or_copy(ctx, xs, xs.get(..k).unwrap_or_default())
}

/// `drop n xs`: the elements after the first `n`; none when the list is
/// shorter, all of them when `n` is 0 or negative.
pub fn drop(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = int_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let k = bound(n, xs.len());
    share_or_copy(ctx, xs, xs.get(k..).unwrap_or_default())
}

/// The length of the longest prefix of `xs` that `p` accepts; `p` runs on
/// each element of that prefix and on the first element it refuses.
fn prefix_len(ctx: &mut dyn Ctx, name: &str, p: &Value, xs: &[Value]) -> Result<usize, Failure> {
    for (i, x) in xs.iter().enumerate() {
        if !truth(name, &call1(ctx, p, x)?)? {
            return Ok(i);
        }
    }
    Ok(xs.len())
}

/// `take-while p xs`: the longest prefix whose every element `p` accepts.
pub fn take_while(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let p = func_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let k = prefix_len(ctx, "take-while", p, xs)?;
    share_or_copy(ctx, xs, xs.get(..k).unwrap_or_default())
}

/// `drop-while p xs`: what remains after that prefix.
pub fn drop_while(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let p = func_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let k = prefix_len(ctx, "drop-while", p, xs)?;
    share_or_copy(ctx, xs, xs.get(k..).unwrap_or_default())
}

/// `first p xs`: the first element `p` accepts; `p` runs on elements in
/// order up to that one. Fails when no element satisfies `p` (an empty
/// list included).
pub fn first(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let p = func_arg(args, 0)?;
    for x in list_arg(args, 1)?.iter() {
        if truth("first", &call1(ctx, p, x)?)? {
            return Ok(x.clone());
        }
    }
    Err(fail("first", "no element satisfies the predicate"))
}

/// `option-or default opt`: the payload of `` `just v ``, or `default` for
/// `` `none ``.
pub fn option_or(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let default = arg(args, 0)?;
    let opt = arg(args, 1)?;
    let Value::Variant(v) = opt else {
        return Err(fail(
            "option-or",
            format!("expected an option, got {}", opt.kind_name()),
        ));
    };
    match (&*v.tag, &v.payload) {
        ("just", Some(x)) => Ok(x.clone()),
        ("none", None) => Ok(default.clone()),
        (tag, _) => Err(fail(
            "option-or",
            format!("expected `just with a value or `none, got `{tag}"),
        )),
    }
}

/// Whether `x` is structurally equal (§4.8) to an element of `xs`.
fn member(ctx: &mut dyn Ctx, xs: &[Value], x: &Value) -> Result<bool, Failure> {
    let mut pacer = Pacer::new(ctx);
    let mut found = Some(false);
    for y in xs {
        let go_on = &mut || pacer.go_on();
        found = if go_on() {
            y.equal_while(x, go_on)
        } else {
            None
        };
        if found != Some(false) {
            break;
        }
    }
    pacer.finish_some(found)
}

/// `elem x xs`: whether `x` is in `xs`, by structural equality.
pub fn elem(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let x = arg(args, 0)?;
    Ok(Value::Bool(member(ctx, list_arg(args, 1)?, x)?))
}

/// `contains xs x`: `elem` with the list first.
pub fn contains(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    Ok(Value::Bool(member(ctx, xs, arg(args, 1)?)?))
}

/// Feeds `v` to `h` so that structurally equal values (§4.8) hash alike:
/// `0.0` and `-0.0` are one number, records hash their sorted entries,
/// functions and handles (which compare by identity) their address.
fn hash_value(v: &Value, h: &mut DefaultHasher, go_on: &mut dyn FnMut() -> bool) -> Option<()> {
    if !go_on() {
        return None;
    }
    match v {
        Value::Unit => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Int(n) => (2u8, n).hash(h),
        Value::Float(x) => {
            let x = if *x == 0.0 { 0.0f64 } else { *x };
            (3u8, x.to_bits()).hash(h);
        }
        Value::Str(s) => (4u8, s.as_str()).hash(h),
        Value::Bytes(b) => (5u8, b.as_slice()).hash(h),
        Value::List(xs) => {
            (6u8, xs.len()).hash(h);
            for x in xs.iter() {
                hash_value(x, h, go_on)?;
            }
        }
        Value::Record(r) => {
            (7u8, r.len()).hash(h);
            for (k, x) in r.iter() {
                k.as_str().hash(h);
                hash_value(x, h, go_on)?;
            }
        }
        Value::Variant(var) => {
            (8u8, &*var.tag).hash(h);
            if let Some(p) = &var.payload {
                hash_value(p, h, go_on)?;
            }
        }
        Value::Func(f) => (9u8, Arc::as_ptr(f) as usize).hash(h),
        Value::Handle(x) => (10u8, Arc::as_ptr(x) as usize).hash(h),
    }
    Some(())
}

/// A hasher for keys that are already hashes: passes a `u64` through.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// `nub xs`: `xs` without repeats, keeping each value's first occurrence,
/// in order. Values are compared structurally (§4.8); a hash of each value
/// keeps the work linear.
pub fn nub(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    // Hash -> the last kept value with that hash; `chain[i]` is the kept
    // value with the same hash kept before `out[i]`, if any.
    let mut last: HashMap<u64, usize, BuildHasherDefault<Prehashed>> = HashMap::default();
    let mut chain: Vec<Option<usize>> = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    let mut pacer = Pacer::new(ctx);
    let go_on = &mut || pacer.go_on();
    let mut walked = Some(());
    for x in xs.iter() {
        let mut h = DefaultHasher::new();
        walked = hash_value(x, &mut h, go_on);
        if walked.is_none() {
            break;
        }
        let slot = last.entry(h.finish()).or_insert(usize::MAX);
        let mut at = (*slot != usize::MAX).then_some(*slot);
        let mut dup = Some(false);
        while let Some(i) = at {
            dup = match out.get(i) {
                Some(y) => y.equal_while(x, go_on),
                None => Some(false),
            };
            if dup != Some(false) {
                break;
            }
            at = chain.get(i).copied().flatten();
        }
        match dup {
            Some(true) => continue,
            Some(false) => {}
            None => {
                walked = None;
                break;
            }
        }
        chain.push((*slot != usize::MAX).then_some(*slot));
        *slot = out.len();
        out.push(x.clone());
    }
    pacer.finish_some(walked)?;
    share_or_copy(ctx, xs, &out)
}

/// The record `[left: a, right: b]`, over a shared shape.
fn pair(keys: &Keys, a: &Value, b: &Value) -> Value {
    Value::record(Record::from_parts(keys.clone(), vec![a.clone(), b.clone()]))
}

/// `zip xs ys`: `[left: x_i, right: y_i]` for each position both lists
/// have; the longer list's extra elements are dropped.
pub fn zip(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let ys = list_arg(args, 1)?;
    let keys = Keys::new(["left", "right"]);
    let mut out = Vec::with_capacity(xs.len().min(ys.len()));
    for (i, (x, y)) in xs.iter().zip(ys.iter()).enumerate() {
        poll_at(ctx, i)?;
        out.push(pair(&keys, x, y));
    }
    Ok(Value::list(out))
}

/// `cross xs ys`: `[left: x, right: y]` for every `x` of `xs` and `y` of
/// `ys`, `xs` varying slowest. Fails when the product has more than
/// [`MAX_LIST_LEN`] elements.
pub fn cross(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let ys = list_arg(args, 1)?;
    let n = xs.len().checked_mul(ys.len()).ok_or_else(|| {
        fail(
            "cross",
            format!(
                "the product of {} and {} elements is too large",
                xs.len(),
                ys.len()
            ),
        )
    })?;
    let mut out = list_with_capacity("cross", n)?;
    let keys = Keys::new(["left", "right"]);
    for x in xs.iter() {
        for y in ys.iter() {
            poll_at(ctx, out.len())?;
            out.push(pair(&keys, x, y));
        }
    }
    Ok(Value::list(out))
}

/// Appends the elements of `list` (which must be a List) to `out`, within
/// [`MAX_LIST_LEN`].
fn append(
    ctx: &mut dyn Ctx,
    name: &str,
    out: &mut Vec<Value>,
    list: &Value,
) -> Result<(), Failure> {
    let Value::List(items) = list else {
        return Err(fail(
            name,
            format!("expected a list, got {}", list.kind_name()),
        ));
    };
    let n = out.len().saturating_add(items.len());
    if n > MAX_LIST_LEN {
        return Err(fail(
            name,
            format!("the result would have {n} elements, too many"),
        ));
    }
    out.try_reserve(items.len()).map_err(|_| {
        fail(
            name,
            format!("the result would have {n} elements, too many"),
        )
    })?;
    for run in items.chunks(super::super::pace::POLL_EVERY) {
        ctx.poll()?;
        out.extend_from_slice(run);
    }
    Ok(())
}

/// `flat-map f xs`: the lists `f` returns for each element, concatenated
/// in order.
pub fn flat_map(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = func_arg(args, 0)?;
    let mut out = Vec::new();
    for x in list_arg(args, 1)?.iter() {
        let ys = call1(ctx, f, x)?;
        append(ctx, "flat-map", &mut out, &ys)?;
    }
    Ok(Value::list(out))
}

/// `enumerate xs`: `[index: i, value: x_i]` for each element, counting
/// from 0.
pub fn enumerate(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let keys = Keys::new(["index", "value"]);
    let mut out = Vec::with_capacity(xs.len());
    for (x, i) in xs.iter().zip(0i64..) {
        poll_at(ctx, out.len())?;
        out.push(Value::record(Record::from_parts(
            keys.clone(),
            vec![Value::Int(i), x.clone()],
        )));
    }
    Ok(Value::list(out))
}

/// `concat xss`: the inner lists' elements, in order.
pub fn concat(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xss = list_arg(args, 0)?;
    if let [only] = xss.as_slice() {
        if let Value::List(_) = only {
            return Ok(only.clone());
        }
    }
    let mut out = Vec::new();
    for xs in xss.iter() {
        ctx.poll()?;
        append(ctx, "concat", &mut out, xs)?;
    }
    Ok(Value::list(out))
}

/// `group-by f xs`: a map from each key `f` returns to the elements that
/// gave it, in their original order. `f` runs once per element.
pub fn group_by(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = func_arg(args, 0)?;
    let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for x in list_arg(args, 1)?.iter() {
        let key = call1(ctx, f, x)?;
        let Value::Str(key) = key else {
            return Err(fail(
                "group-by",
                format!(
                    "the key function returned {}, not a String",
                    key.kind_name()
                ),
            ));
        };
        groups
            .entry(Arc::unwrap_or_clone(key))
            .or_default()
            .push(x.clone());
    }
    Ok(Value::record(Record::from_entries(
        groups
            .into_iter()
            .map(|(k, xs)| (k, Value::list(xs)))
            .collect(),
    )))
}

#[cfg(test)]
mod tests {
    use crate::builtins::testing::{call, fails, ints, list, rec, strs, FakeCtx};
    use crate::failure::Failure;
    use crate::value::Value;

    fn int(n: i64) -> Value {
        Value::Int(n)
    }

    fn is_even(ctx: &mut FakeCtx) -> Value {
        ctx.closure(|a| Ok(Value::Bool(matches!(a, [Value::Int(n)] if n % 2 == 0))))
    }

    #[test]
    fn get_falls_back() {
        let m = rec(&[("a", int(1))]);
        assert_eq!(
            call("get", &[m.clone(), Value::str("a"), int(0)]),
            Ok(int(1))
        );
        assert_eq!(call("get", &[m, Value::str("b"), int(0)]), Ok(int(0)));
    }

    #[test]
    fn for_runs_in_order_and_stops_at_a_failure() {
        let mut ctx = FakeCtx::new();
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let log = seen.clone();
        let f = ctx.closure(move |a| {
            log.borrow_mut().extend_from_slice(a);
            match a {
                [Value::Int(3)] => Err(Failure::raised(4, "three")),
                _ => Ok(Value::Unit),
            }
        });
        assert_eq!(ctx.run("for", &[ints(&[1, 2]), f.clone()]), Ok(Value::Unit));
        let err = ctx.run("for", &[ints(&[3, 5]), f]);
        assert_eq!(err.map_err(|e| e.status), Err(4));
        assert_eq!(*seen.borrow(), vec![int(1), int(2), int(3)]);
    }

    #[test]
    fn reduce_folds_from_the_first_element() {
        let mut ctx = FakeCtx::new();
        let sub = ctx.closure(|a| match a {
            [Value::Int(x), Value::Int(y)] => Ok(Value::Int(x - y)),
            _ => Err(Failure::error("bad")),
        });
        assert_eq!(
            ctx.run("reduce", &[sub.clone(), ints(&[10, 3, 2])]),
            Ok(int(5))
        );
        let calls = ctx.calls;
        assert_eq!(ctx.run("reduce", &[sub.clone(), ints(&[7])]), Ok(int(7)));
        assert_eq!(ctx.calls, calls);
        let e = ctx.run("reduce", &[sub, ints(&[])]);
        assert_eq!(
            e.map_err(|f| f.message.clone()),
            Err("reduce: the list is empty".into())
        );
    }

    #[test]
    fn slicing() {
        let xs = ints(&[1, 2, 3]);
        assert_eq!(
            call("reverse", std::slice::from_ref(&xs)),
            Ok(ints(&[3, 2, 1]))
        );
        assert_eq!(call("reverse", &[ints(&[])]), Ok(ints(&[])));
        assert_eq!(call("last", std::slice::from_ref(&xs)), Ok(int(3)));
        assert_eq!(fails("last", &[ints(&[])]), "last: the list is empty");
        for (n, taken, dropped) in [
            (2, &[1, 2][..], &[3][..]),
            (0, &[], &[1, 2, 3]),
            (-4, &[], &[1, 2, 3]),
            (3, &[1, 2, 3], &[]),
            (i64::MAX, &[1, 2, 3], &[]),
        ] {
            assert_eq!(
                call("take", &[int(n), xs.clone()]),
                Ok(ints(taken)),
                "take {n}"
            );
            assert_eq!(
                call("drop", &[int(n), xs.clone()]),
                Ok(ints(dropped)),
                "drop {n}"
            );
        }
    }

    #[test]
    fn predicates_on_prefixes() {
        let mut ctx = FakeCtx::new();
        let even = is_even(&mut ctx);
        let xs = ints(&[2, 4, 5, 6]);
        assert_eq!(
            ctx.run("take-while", &[even.clone(), xs.clone()]),
            Ok(ints(&[2, 4]))
        );
        assert_eq!(
            ctx.run("drop-while", &[even.clone(), xs.clone()]),
            Ok(ints(&[5, 6]))
        );
        assert_eq!(
            ctx.run("take-while", &[even.clone(), ints(&[])]),
            Ok(ints(&[]))
        );
        assert_eq!(
            ctx.run("drop-while", &[even.clone(), ints(&[2])]),
            Ok(ints(&[]))
        );
        let calls = ctx.calls;
        assert_eq!(
            ctx.run("first", &[even.clone(), ints(&[1, 8, 3, 10])]),
            Ok(int(8))
        );
        assert_eq!(ctx.calls, calls + 2);
        let none = ctx.run("first", &[even.clone(), ints(&[1, 3])]);
        assert!(none.is_err_and(|f| f.message.contains("no element satisfies")));
        let not_bool = ctx.closure(|_| Ok(Value::Int(1)));
        let e = ctx.run("take-while", &[not_bool, ints(&[1])]);
        assert!(e.is_err_and(|f| f.message.contains("not a Bool")));
    }

    #[test]
    fn options() {
        let just = Value::variant("just", Some(int(3)));
        let none = Value::variant("none", None);
        assert_eq!(call("option-or", &[int(0), just]), Ok(int(3)));
        assert_eq!(call("option-or", &[int(0), none]), Ok(int(0)));
        let other = Value::variant("some", Some(int(3)));
        assert!(fails("option-or", &[int(0), other]).contains("got `some"));
    }

    #[test]
    fn membership_and_nub() {
        let xs = list(vec![ints(&[1]), ints(&[2]), ints(&[1])]);
        assert_eq!(
            call("elem", &[ints(&[2]), xs.clone()]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            call("contains", &[xs.clone(), ints(&[3])]),
            Ok(Value::Bool(false))
        );
        assert_eq!(call("elem", &[int(1), ints(&[])]), Ok(Value::Bool(false)));
        assert_eq!(call("nub", &[xs]), Ok(list(vec![ints(&[1]), ints(&[2])])));
        assert_eq!(
            call("nub", &[strs(&["b", "a", "b", "c", "a"])]),
            Ok(strs(&["b", "a", "c"]))
        );
        let zeros = list(vec![
            Value::Float(0.0),
            Value::Float(-0.0),
            Value::Float(1.5),
        ]);
        assert_eq!(
            call("nub", &[zeros]),
            Ok(list(vec![Value::Float(0.0), Value::Float(1.5)]))
        );
        let recs = list(vec![
            rec(&[("a", int(1)), ("b", int(2))]),
            rec(&[("b", int(2)), ("a", int(1))]),
        ]);
        let one = rec(&[("a", int(1)), ("b", int(2))]);
        assert_eq!(call("nub", &[recs]), Ok(list(vec![one])));
    }

    #[test]
    fn nub_is_linear_enough() {
        let big = ints(&(0..200_000).map(|i| i % 1000).collect::<Vec<_>>());
        let out = call("nub", &[big]);
        assert_eq!(out, Ok(ints(&(0..1000).collect::<Vec<_>>())));
    }

    #[test]
    fn pairs() {
        let l = |a: Value, b: Value| rec(&[("left", a), ("right", b)]);
        assert_eq!(
            call("zip", &[ints(&[1, 2, 3]), strs(&["a", "b"])]),
            Ok(list(vec![
                l(int(1), Value::str("a")),
                l(int(2), Value::str("b"))
            ]))
        );
        assert_eq!(
            call("cross", &[ints(&[1, 2]), strs(&["a", "b"])]),
            Ok(list(vec![
                l(int(1), Value::str("a")),
                l(int(1), Value::str("b")),
                l(int(2), Value::str("a")),
                l(int(2), Value::str("b")),
            ]))
        );
        assert_eq!(call("cross", &[ints(&[]), ints(&[1])]), Ok(list(vec![])));
        let e = |i: i64, v: &str| rec(&[("index", int(i)), ("value", Value::str(v))]);
        assert_eq!(
            call("enumerate", &[strs(&["x", "y"])]),
            Ok(list(vec![e(0, "x"), e(1, "y")]))
        );
    }

    #[test]
    fn a_huge_cross_fails_cleanly() {
        let big = ints(&(0..20_000).collect::<Vec<_>>());
        assert!(fails("cross", &[big.clone(), big]).contains("too many"));
    }

    #[test]
    fn flattening() {
        let xss = list(vec![ints(&[1, 2]), ints(&[]), ints(&[3])]);
        assert_eq!(call("concat", &[xss]), Ok(ints(&[1, 2, 3])));
        assert_eq!(call("concat", &[list(vec![])]), Ok(list(vec![])));
        let mut ctx = FakeCtx::new();
        let dup = ctx.closure(|a| Ok(Value::list(vec![a[0].clone(), a[0].clone()])));
        assert_eq!(
            ctx.run("flat-map", &[dup, ints(&[1, 2])]),
            Ok(ints(&[1, 1, 2, 2]))
        );
    }

    #[test]
    fn grouping() {
        let mut ctx = FakeCtx::new();
        let parity = ctx.closure(|a| match a {
            [Value::Int(n)] => Ok(Value::str(if n % 2 == 0 { "even" } else { "odd" })),
            _ => Err(Failure::error("bad")),
        });
        assert_eq!(
            ctx.run("group-by", &[parity.clone(), ints(&[1, 2, 3, 4, 5])]),
            Ok(rec(&[("even", ints(&[2, 4])), ("odd", ints(&[1, 3, 5]))]))
        );
        assert_eq!(ctx.run("group-by", &[parity, ints(&[])]), Ok(rec(&[])));
    }
}
