//! Checked arithmetic for `$[...]` (§4.1, §4.8). The compiler emits typed
//! instructions (`AddInt`, `AddFloat`, …) that call these; [`arith`] and
//! [`compare`] are the generic fallbacks for operands whose type inference
//! left polymorphic.
//!
//! Integer overflow, division or remainder by zero, and a float result that
//! is not finite (`1.0e308 * 10.0`, `1.0 / 0.0`) are failures, never wrapped
//! or saturated values. Integer `/` truncates toward zero and `%` takes the
//! sign of the dividend (`-7 / 2` is `-3`, `-7 % 2` is `-1`).

use std::cmp::Ordering;

use crate::display::{float_to_string, write_float};
use crate::failure::Failure;
use crate::value::Value;

/// An arithmetic operator of `$[...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%` (Ints only)
    Rem,
}

impl ArithOp {
    /// The operator's spelling.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Rem => "%",
        }
    }
}

#[cold]
fn int_overflow(op: ArithOp, a: i64, b: i64) -> Failure {
    Failure::error(format!(
        "integer overflow: {a} {} {b} is outside the Int range",
        op.symbol()
    ))
}

#[cold]
fn by_zero(op: ArithOp, a: i64) -> Failure {
    let what = if op == ArithOp::Rem {
        "remainder"
    } else {
        "division"
    };
    Failure::error(format!("{what} by zero: {a} {} 0", op.symbol()))
}

/// `a + b` on Ints.
#[inline]
pub fn add_int(a: i64, b: i64) -> Result<i64, Failure> {
    a.checked_add(b)
        .ok_or_else(|| int_overflow(ArithOp::Add, a, b))
}

/// `a - b` on Ints.
#[inline]
pub fn sub_int(a: i64, b: i64) -> Result<i64, Failure> {
    a.checked_sub(b)
        .ok_or_else(|| int_overflow(ArithOp::Sub, a, b))
}

/// `a * b` on Ints.
#[inline]
pub fn mul_int(a: i64, b: i64) -> Result<i64, Failure> {
    a.checked_mul(b)
        .ok_or_else(|| int_overflow(ArithOp::Mul, a, b))
}

/// `a / b` on Ints, truncating toward zero.
#[inline]
pub fn div_int(a: i64, b: i64) -> Result<i64, Failure> {
    if b == 0 {
        return Err(by_zero(ArithOp::Div, a));
    }
    a.checked_div(b)
        .ok_or_else(|| int_overflow(ArithOp::Div, a, b))
}

/// `a % b` on Ints, with the sign of `a`.
#[inline]
pub fn rem_int(a: i64, b: i64) -> Result<i64, Failure> {
    if b == 0 {
        return Err(by_zero(ArithOp::Rem, a));
    }
    // `i64::MIN % -1` is mathematically 0; `checked_rem` reports overflow.
    Ok(a.checked_rem(b).unwrap_or(0))
}

/// `-a` on Ints.
#[inline]
pub fn neg_int(a: i64) -> Result<i64, Failure> {
    a.checked_neg()
        .ok_or_else(|| Failure::error(format!("integer overflow: -({a}) is outside the Int range")))
}

#[cold]
fn not_finite(op: ArithOp, a: f64, b: f64) -> Failure {
    let mut msg = String::from("float result is not finite: ");
    write_float(&mut msg, a);
    msg.push(' ');
    msg.push_str(op.symbol());
    msg.push(' ');
    write_float(&mut msg, b);
    Failure::error(msg)
}

#[inline]
fn checked_float(op: ArithOp, a: f64, b: f64, r: f64) -> Result<f64, Failure> {
    if r.is_finite() {
        Ok(r)
    } else {
        Err(not_finite(op, a, b))
    }
}

/// `a + b` on Floats.
#[inline]
pub fn add_float(a: f64, b: f64) -> Result<f64, Failure> {
    checked_float(ArithOp::Add, a, b, a + b)
}

/// `a - b` on Floats.
#[inline]
pub fn sub_float(a: f64, b: f64) -> Result<f64, Failure> {
    checked_float(ArithOp::Sub, a, b, a - b)
}

/// `a * b` on Floats.
#[inline]
pub fn mul_float(a: f64, b: f64) -> Result<f64, Failure> {
    checked_float(ArithOp::Mul, a, b, a * b)
}

/// `a / b` on Floats; division by zero is not finite, so it fails.
#[inline]
pub fn div_float(a: f64, b: f64) -> Result<f64, Failure> {
    checked_float(ArithOp::Div, a, b, a / b)
}

/// `-a` on Floats (always finite).
#[inline]
pub fn neg_float(a: f64) -> f64 {
    -a
}

/// The generic `a op b`: two Ints or two Floats (`%` Ints only).
pub fn arith(op: ArithOp, a: &Value, b: &Value) -> Result<Value, Failure> {
    if let (Value::Int(x), Value::Int(y)) = (a, b) {
        let (x, y) = (*x, *y);
        let r = match op {
            ArithOp::Add => add_int(x, y),
            ArithOp::Sub => sub_int(x, y),
            ArithOp::Mul => mul_int(x, y),
            ArithOp::Div => div_int(x, y),
            ArithOp::Rem => rem_int(x, y),
        };
        return r.map(Value::Int);
    }
    if let (Value::Float(x), Value::Float(y)) = (a, b) {
        let (x, y) = (*x, *y);
        let r = match op {
            ArithOp::Add => add_float(x, y),
            ArithOp::Sub => sub_float(x, y),
            ArithOp::Mul => mul_float(x, y),
            ArithOp::Div => div_float(x, y),
            ArithOp::Rem => Err(Failure::error(format!(
                "% takes two Ints, not {} % {}",
                float_to_string(x),
                float_to_string(y)
            ))),
        };
        return r.map(Value::Float);
    }
    Err(Failure::error(format!(
        "{} takes two numbers of one kind, not {} and {}",
        op.symbol(),
        a.kind_name(),
        b.kind_name()
    )))
}

/// The generic ordering behind `<`, `>`, `<=`, `>=` (§4.8).
pub fn compare(a: &Value, b: &Value) -> Result<Ordering, Failure> {
    a.compare(b).ok_or_else(|| {
        Failure::error(format!(
            "cannot order {} and {}",
            a.kind_name(),
            b.kind_name()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg<T: std::fmt::Debug>(r: Result<T, Failure>) -> String {
        match r {
            Err(f) => f.message.clone(),
            Ok(v) => panic!("expected a failure, got {v:?}"),
        }
    }

    #[test]
    fn ints() {
        assert_eq!(add_int(2, 3), Ok(5));
        assert_eq!(sub_int(2, 3), Ok(-1));
        assert_eq!(mul_int(-4, 3), Ok(-12));
        assert_eq!(div_int(-7, 2), Ok(-3));
        assert_eq!(rem_int(-7, 2), Ok(-1));
        assert_eq!(rem_int(i64::MIN, -1), Ok(0));
        assert_eq!(neg_int(5), Ok(-5));
        assert!(msg(add_int(i64::MAX, 1)).contains("integer overflow: 9223372036854775807 + 1"));
        assert!(msg(sub_int(i64::MIN, 1)).contains("overflow"));
        assert!(msg(mul_int(i64::MAX, 2)).contains("overflow"));
        assert!(msg(div_int(i64::MIN, -1)).contains("overflow"));
        assert!(msg(neg_int(i64::MIN)).contains("overflow"));
        assert_eq!(msg(div_int(1, 0)), "division by zero: 1 / 0");
        assert_eq!(msg(rem_int(1, 0)), "remainder by zero: 1 % 0");
    }

    #[test]
    fn floats() {
        assert_eq!(add_float(0.5, 0.25), Ok(0.75));
        assert_eq!(div_float(1.0, 4.0), Ok(0.25));
        assert_eq!(neg_float(1.5), -1.5);
        assert_eq!(
            msg(mul_float(1e308, 10.0)),
            "float result is not finite: 1.0e308 * 10.0"
        );
        assert!(msg(div_float(1.0, 0.0)).contains("not finite"));
        assert!(msg(sub_float(-1e308, 1e308)).contains("not finite"));
    }

    #[test]
    fn generic() {
        assert_eq!(
            arith(ArithOp::Add, &Value::Int(1), &Value::Int(2)),
            Ok(Value::Int(3))
        );
        assert_eq!(
            arith(ArithOp::Mul, &Value::Float(1.5), &Value::Float(2.0)),
            Ok(Value::Float(3.0))
        );
        assert!(
            msg(arith(ArithOp::Rem, &Value::Float(1.0), &Value::Float(2.0))).contains("two Ints")
        );
        assert!(msg(arith(ArithOp::Add, &Value::Int(1), &Value::Float(2.0))).contains("one kind"));
        assert!(msg(arith(ArithOp::Add, &Value::str("a"), &Value::str("b"))).contains("one kind"));
        assert_eq!(compare(&Value::Int(1), &Value::Int(2)), Ok(Ordering::Less));
        assert!(compare(&Value::Int(1), &Value::Bool(true)).is_err());
    }
}
