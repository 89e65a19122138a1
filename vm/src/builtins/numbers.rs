//! Number conversions (§14.3, §4.1): `int`, `float`, `round`, `floor`,
//! `ceil`, `trunc`.
//!
//! `int` and `float` take a number or a string. A string is trimmed of
//! surrounding whitespace (captured output such as `wc -l`'s often carries
//! some) and then read as a numeral of §4.1; `float` also accepts any other
//! decimal spelling Rust reads (`1e6`), provided the value is finite.
//! `int` of a Float truncates toward zero, as `trunc` does; a value outside
//! the Int range fails. `float` rejects NaN and the infinities, whatever
//! their spelling.

use super::{arg, float_arg, int_arg, Ctx};
use crate::display::float_to_string;
use crate::failure::Failure;
use crate::value::Value;
use ral_syntax::ast::{parse_numeral, Numeral};

/// The Int `x` rounds to by `how` (already applied), or a failure naming
/// the original value.
fn float_to_int(rounded: f64, original: f64) -> Result<i64, Failure> {
    // 2^63 is exact as an f64; every finite double in [-2^63, 2^63) fits.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if rounded.is_finite() && (-LIMIT..LIMIT).contains(&rounded) {
        Ok(rounded as i64)
    } else {
        Err(Failure::error(format!(
            "{} is out of the Int range",
            float_to_string(original)
        )))
    }
}

/// `int x`.
pub fn int(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    match arg(args, 0)? {
        Value::Int(n) => Ok(Value::Int(*n)),
        Value::Float(x) => Ok(Value::Int(float_to_int(x.trunc(), *x)?)),
        Value::Str(s) => match parse_numeral(s.trim()) {
            Some(Numeral::Int(n)) => Ok(Value::Int(n)),
            Some(Numeral::Float(x)) => Ok(Value::Int(float_to_int(x.trunc(), x)?)),
            None => Err(Failure::error(format!("{:?} is not a number", s.as_str()))),
        },
        v @ (Value::Unit
        | Value::Bool(_)
        | Value::Bytes(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_)) => Err(Failure::error(format!(
            "cannot convert {} to an Int",
            v.kind_name()
        ))),
    }
}

/// `float x`.
pub fn float(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    match arg(args, 0)? {
        Value::Int(n) => Ok(Value::Float(*n as f64)),
        Value::Float(x) => finite(*x, || float_to_string(*x)),
        Value::Str(s) => {
            let t = s.trim();
            match parse_numeral(t) {
                Some(Numeral::Int(n)) => Ok(Value::Float(n as f64)),
                Some(Numeral::Float(x)) => Ok(Value::Float(x)),
                None => match t.parse::<f64>() {
                    Ok(x) => finite(x, || format!("{t:?}")),
                    Err(_) => Err(Failure::error(format!("{:?} is not a number", s.as_str()))),
                },
            }
        }
        v @ (Value::Unit
        | Value::Bool(_)
        | Value::Bytes(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_)) => Err(Failure::error(format!(
            "cannot convert {} to a Float",
            v.kind_name()
        ))),
    }
}

fn finite(x: f64, shown: impl FnOnce() -> String) -> Result<Value, Failure> {
    if x.is_finite() {
        Ok(Value::Float(x))
    } else {
        Err(Failure::error(format!(
            "{} is not a finite number",
            shown()
        )))
    }
}

/// `round x places`: `x` rounded to `places` (0 to 308) decimal places,
/// halves away from zero, as a Float.
///
/// The rounding is decided on the exact decimal expansion of the double,
/// so it is exact: `round 0.125 2` is `0.13` (0.125 is a true half), and
/// `round 1.005 2` is `1.0`, because the double nearest 1.005 lies below
/// it.
pub fn round(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let x = float_arg(args, 0)?;
    let places = int_arg(args, 1)?;
    let places = usize::try_from(places)
        .ok()
        .filter(|p| *p <= 308)
        .ok_or_else(|| Failure::error(format!("round takes 0 to 308 places, not {places}")))?;
    Ok(Value::Float(round_half_away(x, places)))
}

/// Rounds on the exact decimal expansion (every finite double has at most
/// 1074 fractional digits, so `{:.1074}` is exact).
fn round_half_away(x: f64, places: usize) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let exact = format!("{:.1074}", x.abs());
    let Some(dot) = exact.find('.') else {
        return x;
    };
    let keep_end = dot + 1 + places;
    let round_up = exact.as_bytes().get(keep_end).is_some_and(|d| *d >= b'5');
    let mut digits: Vec<u8> = exact
        .as_bytes()
        .get(..keep_end)
        .unwrap_or_default()
        .to_vec();
    if round_up {
        let mut carry = true;
        for d in digits.iter_mut().rev() {
            match *d {
                b'.' => {}
                b'9' => *d = b'0',
                _ => {
                    *d += 1;
                    carry = false;
                    break;
                }
            }
        }
        if carry {
            digits.insert(0, b'1');
        }
    }
    if digits.last() == Some(&b'.') {
        digits.pop();
    }
    let magnitude = std::str::from_utf8(&digits)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(x.abs());
    magnitude.copysign(x)
}

/// `floor x`: the greatest Int not above `x`.
pub fn floor(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let x = float_arg(args, 0)?;
    Ok(Value::Int(float_to_int(x.floor(), x)?))
}

/// `ceil x`: the least Int not below `x`.
pub fn ceil(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let x = float_arg(args, 0)?;
    Ok(Value::Int(float_to_int(x.ceil(), x)?))
}

/// `trunc x`: `x` rounded toward zero.
pub fn trunc(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let x = float_arg(args, 0)?;
    Ok(Value::Int(float_to_int(x.trunc(), x)?))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fails};
    use crate::value::Value;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn to_int() {
        assert_eq!(call("int", &[Value::Int(4)]), Ok(Value::Int(4)));
        assert_eq!(call("int", &[Value::Float(-3.9)]), Ok(Value::Int(-3)));
        assert_eq!(call("int", &[s("007")]), Ok(Value::Int(7)));
        assert_eq!(call("int", &[s("  42\n")]), Ok(Value::Int(42)));
        assert_eq!(call("int", &[s("2.5")]), Ok(Value::Int(2)));
        assert_eq!(
            call("int", &[s("-9223372036854775808")]),
            Ok(Value::Int(i64::MIN))
        );
        assert!(fails("int", &[s("x")]).contains("not a number"));
        assert!(fails("int", &[s("9223372036854775808")]).contains("not a number"));
        assert!(fails("int", &[Value::Float(1e19)]).contains("out of the Int range"));
        assert!(call("int", &[Value::Bool(true)]).is_err());
    }

    #[test]
    fn to_float() {
        assert_eq!(call("float", &[Value::Int(3)]), Ok(Value::Float(3.0)));
        assert_eq!(call("float", &[s("1.50")]), Ok(Value::Float(1.5)));
        assert_eq!(call("float", &[s("2")]), Ok(Value::Float(2.0)));
        assert_eq!(call("float", &[s("1e6")]), Ok(Value::Float(1e6)));
        assert!(fails("float", &[s("NaN")]).contains("not a finite number"));
        assert!(fails("float", &[s("inf")]).contains("not a finite number"));
        assert!(fails("float", &[s("-infinity")]).contains("not a finite number"));
        assert!(fails("float", &[s("1e400")]).contains("not a finite number"));
        assert!(fails("float", &[Value::Float(f64::NAN)]).contains("not a finite number"));
        assert!(fails("float", &[s("abc")]).contains("not a number"));
    }

    #[test]
    fn rounding() {
        let r = |x: f64, p: i64| call("round", &[Value::Float(x), Value::Int(p)]);
        assert_eq!(r(2.5, 0), Ok(Value::Float(3.0)));
        assert_eq!(r(-2.5, 0), Ok(Value::Float(-3.0)));
        assert_eq!(r(0.125, 2), Ok(Value::Float(0.13)));
        assert_eq!(r(1.005, 2), Ok(Value::Float(1.0)));
        assert_eq!(r(1.23449, 3), Ok(Value::Float(1.234)));
        assert_eq!(r(2.71851, 3), Ok(Value::Float(2.719)));
        assert_eq!(r(9.99, 1), Ok(Value::Float(10.0)));
        assert_eq!(r(0.4, 0), Ok(Value::Float(0.0)));
        assert_eq!(r(1e300, 2), Ok(Value::Float(1e300)));
        assert_eq!(r(5e-324, 308), Ok(Value::Float(0.0)));
        assert!(fails("round", &[Value::Float(1.0), Value::Int(309)]).contains("0 to 308"));
        assert!(fails("round", &[Value::Float(1.0), Value::Int(-1)]).contains("0 to 308"));
    }

    #[test]
    fn integral_parts() {
        let f = |name: &str, x: f64| call(name, &[Value::Float(x)]);
        assert_eq!(f("floor", -1.5), Ok(Value::Int(-2)));
        assert_eq!(f("ceil", -1.5), Ok(Value::Int(-1)));
        assert_eq!(f("trunc", -1.5), Ok(Value::Int(-1)));
        assert_eq!(f("floor", 2.0), Ok(Value::Int(2)));
        assert_eq!(f("ceil", 1e-300), Ok(Value::Int(1)));
        assert!(fails("floor", &[Value::Float(9.3e18)]).contains("out of the Int range"));
        assert!(fails("ceil", &[Value::Float(-1e300)]).contains("out of the Int range"));
        assert_eq!(
            f("trunc", -9.223_372_036_854_776e18),
            Ok(Value::Int(i64::MIN))
        );
    }
}
