//! Strings and text (§14.3, §7.3): `upper`, `lower`, `dedent`, `slice`,
//! `intercalate`, `string-replace`, `lines`, `str`.

use super::pace::{self, poll_at};
use super::{arg, int_arg, list_arg, str_arg, Ctx};
use crate::failure::Failure;
use crate::value::Value;

/// `upper s`: Unicode upper case.
pub fn upper(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    map_pieces(ctx, str_arg(args, 0)?, str::to_uppercase)
}

/// `lower s`: Unicode lower case.
pub fn lower(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    map_pieces(ctx, str_arg(args, 0)?, str::to_lowercase)
}

/// `f` applied to `s` piece by piece ([`pace::pieces`]), with a poll
/// before each piece.
fn map_pieces(ctx: &mut dyn Ctx, s: &str, f: fn(&str) -> String) -> Result<Value, Failure> {
    let mut out = String::with_capacity(s.len());
    for piece in pace::pieces(s) {
        ctx.poll()?;
        out.push_str(&f(piece));
    }
    Ok(Value::str(out))
}

/// The leading spaces and tabs of a line.
fn indentation(line: &str) -> &str {
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// `dedent s`: removes the longest run of leading spaces and tabs common to
/// every non-blank line (compared character for character, so a tab and a
/// space never match). A blank line (only spaces, tabs and a `CR`) does not
/// vote, and loses its whitespace, keeping only its line terminator. Line
/// terminators and everything after the indentation are untouched.
pub fn dedent(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let s = str_arg(args, 0)?;
    let is_blank = |line: &str| line.trim_matches([' ', '\t', '\r', '\n']).is_empty();
    let mut common: Option<&str> = None;
    for (i, line) in s.split_inclusive('\n').enumerate() {
        poll_at(ctx, i)?;
        if is_blank(line) {
            continue;
        }
        let ind = indentation(line);
        common = Some(match common {
            None => ind,
            Some(c) => {
                let n = c
                    .bytes()
                    .zip(ind.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                &c[..n]
            }
        });
    }
    let cut = common.map_or(0, str::len);
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split_inclusive('\n').enumerate() {
        poll_at(ctx, i)?;
        if is_blank(line) {
            let body = line.trim_end_matches('\n');
            let body = body.strip_suffix('\r').map_or("", |_| "\r");
            out.push_str(body);
            if line.ends_with('\n') {
                out.push('\n');
            }
        } else {
            out.push_str(line.get(cut..).unwrap_or(line));
        }
    }
    Ok(Value::str(out))
}

/// `slice s start end`: the characters at positions `start` (inclusive) to
/// `end` (exclusive), counting from 0. It fails unless
/// `0 <= start <= end <= length s`.
pub fn slice(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let s = str_arg(args, 0)?;
    let start = int_arg(args, 1)?;
    let end = int_arg(args, 2)?;
    let out_of_range = || {
        Failure::error(format!(
            "slice {start} {end} is out of range for a string of {} characters",
            s.chars().count()
        ))
    };
    let (Ok(from), Ok(to)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(out_of_range());
    };
    if from > to {
        return Err(out_of_range());
    }
    let byte = |n: usize| {
        if s.is_ascii() {
            (n <= s.len()).then_some(n)
        } else {
            s.char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(s.len()))
                .nth(n)
        }
    };
    match (byte(from), byte(to)) {
        (Some(a), Some(b)) => Ok(Value::str(s.get(a..b).ok_or_else(out_of_range)?)),
        _ => Err(out_of_range()),
    }
}

/// `intercalate sep xs`: the strings of `xs` joined by `sep`.
pub fn intercalate(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let sep = str_arg(args, 0)?;
    let xs = list_arg(args, 1)?;
    let mut total = sep.len() * xs.len().saturating_sub(1);
    for x in xs.iter() {
        total += x.as_str().map_or(0, str::len);
    }
    let mut out = String::with_capacity(total);
    for (i, x) in xs.iter().enumerate() {
        poll_at(ctx, i)?;
        if i > 0 {
            out.push_str(sep);
        }
        let s = x.as_str().ok_or_else(|| {
            Failure::error(format!("element {i} is {}, not a String", x.kind_name()))
        })?;
        out.push_str(s);
    }
    Ok(Value::str(out))
}

/// `string-replace from to s`: `s` with its one occurrence of `from`
/// replaced by `to`. It fails when `from` is empty, does not occur, or
/// occurs more than once (occurrences counted overlapping, so `aa` in
/// `aaa` is two: the replacement must be unambiguous).
pub fn string_replace(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let from = str_arg(args, 0)?;
    let to = str_arg(args, 1)?;
    let s = str_arg(args, 2)?;
    if from.is_empty() {
        return Err(Failure::error("the text to replace is empty"));
    }
    let Some(at) = s.find(from) else {
        return Err(Failure::error(format!(
            "{from:?} does not occur in the text"
        )));
    };
    let step = from.chars().next().map_or(1, char::len_utf8);
    let mut count = 1;
    let mut pos = at + step;
    while let Some(i) = s.get(pos..).and_then(|rest| rest.find(from)) {
        poll_at(ctx, count)?;
        count += 1;
        pos += i + step;
    }
    if count > 1 {
        return Err(Failure::error(format!(
            "{from:?} occurs {count} times; exactly one is required"
        )));
    }
    let mut out = String::with_capacity(s.len() - from.len() + to.len());
    pace::push_str(ctx, &mut out, &s[..at])?;
    pace::push_str(ctx, &mut out, to)?;
    pace::push_str(ctx, &mut out, &s[at + from.len()..])?;
    Ok(Value::str(out))
}

/// The line rule of §7.3 lives with the codecs; `lines` on a string uses
/// the same one.
pub use crate::codec::lines::split_lines;

/// `lines s`: the lines of `s` by the line rule.
pub fn lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let mut out = Vec::new();
    for (i, line) in split_lines(str_arg(args, 0)?).enumerate() {
        poll_at(ctx, i)?;
        out.push(Value::str(line));
    }
    Ok(Value::list(out))
}

/// `str x`: the text conversion (§4.9). A string is returned as is.
pub fn str(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    if let Value::Str(_) = v {
        return Ok(v.clone());
    }
    Ok(Value::str(pace::text_of(ctx, v)?))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fails, ints, rec, strs};
    use crate::value::Value;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn case() {
        assert_eq!(call("upper", &[s("straße")]), Ok(s("STRASSE")));
        assert_eq!(call("lower", &[s("ÀB")]), Ok(s("àb")));
    }

    #[test]
    fn dedenting() {
        assert_eq!(
            call("dedent", &[s("    a\n      b\n    c\n")]),
            Ok(s("a\n  b\nc\n"))
        );
        assert_eq!(call("dedent", &[s("\n  a\n\n  b")]), Ok(s("\na\n\nb")));
        assert_eq!(call("dedent", &[s("  a\n   \n  b")]), Ok(s("a\n\nb")));
        assert_eq!(call("dedent", &[s("\ta\n  b")]), Ok(s("\ta\n  b")));
        assert_eq!(call("dedent", &[s("  a\r\n  b\r\n")]), Ok(s("a\r\nb\r\n")));
        assert_eq!(call("dedent", &[s("")]), Ok(s("")));
        assert_eq!(call("dedent", &[s("x")]), Ok(s("x")));
    }

    #[test]
    fn slicing() {
        let x = || s("héllo");
        let sl = |a: i64, b: i64| call("slice", &[x(), Value::Int(a), Value::Int(b)]);
        assert_eq!(sl(1, 3), Ok(s("él")));
        assert_eq!(sl(0, 5), Ok(s("héllo")));
        assert_eq!(sl(5, 5), Ok(s("")));
        assert_eq!(
            call("slice", &[s("abc"), Value::Int(1), Value::Int(3)]),
            Ok(s("bc"))
        );
        assert!(fails("slice", &[x(), Value::Int(2), Value::Int(9)]).contains("out of range"));
        assert!(fails("slice", &[x(), Value::Int(-1), Value::Int(2)]).contains("out of range"));
        assert!(fails("slice", &[x(), Value::Int(3), Value::Int(2)]).contains("out of range"));
        assert!(fails("slice", &[s("abc"), Value::Int(0), Value::Int(4)]).contains("3 characters"));
    }

    #[test]
    fn joining() {
        assert_eq!(
            call("intercalate", &[s(", "), strs(&["a", "b", "c"])]),
            Ok(s("a, b, c"))
        );
        assert_eq!(call("intercalate", &[s(", "), strs(&[])]), Ok(s("")));
        assert!(call("intercalate", &[s(""), ints(&[1])]).is_err());
    }

    #[test]
    fn replacing() {
        let r = |f: &str, t: &str, x: &str| call("string-replace", &[s(f), s(t), s(x)]);
        assert_eq!(r("world", "ral", "hello world"), Ok(s("hello ral")));
        assert_eq!(r("é", "e", "café!"), Ok(s("cafe!")));
        assert!(fails("string-replace", &[s("x"), s("y"), s("abc")]).contains("does not occur"));
        assert!(fails("string-replace", &[s("a"), s("b"), s("banana")]).contains("3 times"));
        assert!(fails("string-replace", &[s("aa"), s("b"), s("aaa")]).contains("2 times"));
        assert!(fails("string-replace", &[s(""), s("b"), s("a")]).contains("empty"));
    }

    #[test]
    fn line_rule() {
        let l = |x: &str| call("lines", &[s(x)]);
        assert_eq!(l(""), Ok(strs(&[])));
        assert_eq!(l("a"), Ok(strs(&["a"])));
        assert_eq!(l("a\n"), Ok(strs(&["a"])));
        assert_eq!(l("\n"), Ok(strs(&[""])));
        assert_eq!(l("a\n\n"), Ok(strs(&["a", ""])));
        assert_eq!(l("\n\na"), Ok(strs(&["", "", "a"])));
        assert_eq!(l("a\r\nb\nc\r\n"), Ok(strs(&["a", "b", "c"])));
        assert_eq!(l("a\r\n\r\nb"), Ok(strs(&["a", "", "b"])));
        assert_eq!(l("a\rb\n"), Ok(strs(&["a\rb"])));
        assert_eq!(l("a\r"), Ok(strs(&["a\r"])));
        assert_eq!(l("a\r\r\n"), Ok(strs(&["a\r"])));
    }

    #[test]
    fn text_conversion() {
        assert_eq!(call("str", &[Value::Int(-7)]), Ok(s("-7")));
        assert_eq!(call("str", &[Value::Float(1e300)]), Ok(s("1.0e300")));
        assert_eq!(call("str", &[s("x y")]), Ok(s("x y")));
        assert_eq!(call("str", &[rec(&[("a", ints(&[1]))])]), Ok(s("[a: [1]]")));
    }
}
