//! Text helpers of the prelude (§14.3, §13.3): `words`, `from-words`,
//! `indent`, `repeat`, `pad-left`, `pad-right`, `styled`,
//! `bytes-to-string`.
//!
//! Widths and counts are in characters (Unicode scalar values), as
//! `length` counts them (§4.2). A negative count or width is a failure.

use std::io::IsTerminal;

use super::super::pace::{self, poll_at};
use super::super::{arg, int_arg, list_arg, str_arg, Ctx};
use super::{fail, text_with_capacity};
use crate::failure::Failure;
use crate::value::Value;
use crate::Stdout;

/// `words s`: the maximal runs of non-whitespace characters of `s`, in
/// order. Whitespace is Unicode `White_Space` (spaces, tabs, line endings,
/// …); leading, trailing and repeated whitespace make no empty words.
pub fn words(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let mut out = Vec::new();
    for (i, w) in str_arg(args, 0)?.split_whitespace().enumerate() {
        poll_at(ctx, i)?;
        out.push(Value::str(w));
    }
    Ok(Value::list(out))
}

/// `from-words xs`: the strings joined with single spaces (`""` for an
/// empty list).
pub fn from_words(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let mut parts = Vec::with_capacity(xs.len());
    for x in xs.iter() {
        parts.push(x.as_str().ok_or_else(|| {
            fail(
                "from-words",
                format!("expected strings, got {}", x.kind_name()),
            )
        })?);
    }
    let n = parts
        .iter()
        .map(|p| p.len())
        .sum::<usize>()
        .saturating_add(parts.len());
    let mut out = text_with_capacity("from-words", n)?;
    for (i, p) in parts.into_iter().enumerate() {
        poll_at(ctx, i)?;
        if i > 0 {
            out.push(' ');
        }
        out.push_str(p);
    }
    Ok(Value::str(out))
}

/// A count argument that must not be negative.
fn count(name: &str, what: &str, args: &[Value], i: usize) -> Result<usize, Failure> {
    let n = int_arg(args, i)?;
    usize::try_from(n).map_err(|_| {
        if n < 0 {
            fail(name, format!("the {what} {n} is negative"))
        } else {
            fail(name, format!("the {what} {n} is too large"))
        }
    })
}

/// `indent n s`: `s` with `n` spaces before every line that has any text,
/// lines split by LF (a CRLF line keeps its CR). Empty lines stay empty, so
/// indenting adds no trailing whitespace; line endings are kept as they are.
pub fn indent(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = count("indent", "width", args, 0)?;
    let s = str_arg(args, 1)?;
    if n == 0 || s.is_empty() {
        return Ok(arg(args, 1)?.clone());
    }
    let is_blank = |line: &str| line == "\n" || line == "\r\n";
    let lines = s.split_inclusive('\n').filter(|l| !is_blank(l)).count();
    let size = n
        .checked_mul(lines)
        .and_then(|pad| pad.checked_add(s.len()))
        .unwrap_or(usize::MAX);
    let mut out = text_with_capacity("indent", size)?;
    for (i, line) in s.split_inclusive('\n').enumerate() {
        poll_at(ctx, i)?;
        if !is_blank(line) {
            pace::push_repeated(ctx, &mut out, ' ', n)?;
        }
        out.push_str(line);
    }
    Ok(Value::str(out))
}

/// `repeat n s`: `s` written `n` times; `""` when `n` is 0. A negative
/// count fails, and so does a result over 1 GiB.
pub fn repeat(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let n = count("repeat", "count", args, 0)?;
    let s = str_arg(args, 1)?;
    let size = n.saturating_mul(s.len());
    let mut out = text_with_capacity("repeat", size)?;
    if !s.is_empty() {
        for i in 0..n {
            poll_at(ctx, i)?;
            if s.len() > pace::TEXT_RUN {
                // A long copy polls inside, every quarter megabyte.
                pace::push_str(ctx, &mut out, s)?;
            } else {
                out.push_str(s);
            }
        }
    }
    Ok(Value::str(out))
}

/// Pads `s` with spaces to `width` characters on the left or the right.
fn pad(ctx: &mut dyn Ctx, name: &str, args: &[Value], left: bool) -> Result<Value, Failure> {
    let width = count(name, "width", args, 0)?;
    let s = str_arg(args, 1)?;
    let len = if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    };
    if len >= width {
        return Ok(arg(args, 1)?.clone());
    }
    let fill = width - len;
    let mut out = text_with_capacity(name, s.len().saturating_add(fill))?;
    if !left {
        out.push_str(s);
    }
    pace::push_repeated(ctx, &mut out, ' ', fill)?;
    if left {
        out.push_str(s);
    }
    Ok(Value::str(out))
}

/// `pad-left width s`: `s` right-aligned in `width` characters, spaces
/// before it; unchanged when it is already that wide or wider.
pub fn pad_left(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    pad(ctx, "pad-left", args, true)
}

/// `pad-right width s`: `s` left-aligned in `width` characters, spaces
/// after it; unchanged when it is already that wide or wider.
pub fn pad_right(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    pad(ctx, "pad-right", args, false)
}

/// The styles `styled` knows, with their SGR parameters.
const STYLES: &[(&str, &str)] = &[
    ("reset", "0"),
    ("bold", "1"),
    ("dim", "2"),
    ("red", "31"),
    ("green", "32"),
    ("yellow", "33"),
    ("blue", "34"),
    ("magenta", "35"),
    ("cyan", "36"),
];

/// `text` wrapped in `style`'s escape and a reset when `colour` is on, else
/// `text` itself; an unknown style fails either way, so a typo shows on a
/// terminal-less run too.
pub(crate) fn style_text(style: &str, text: &str, colour: bool) -> Result<String, Failure> {
    let Some((_, code)) = STYLES.iter().find(|(name, _)| *name == style) else {
        let known: Vec<&str> = STYLES.iter().map(|(n, _)| *n).collect();
        return Err(fail(
            "styled",
            format!(
                "unknown style `{style}`; the styles are {}",
                known.join(", ")
            ),
        ));
    };
    if !colour {
        return Ok(text.to_owned());
    }
    Ok(format!("\x1b[{code}m{text}\x1b[0m"))
}

/// Whether `styled` colours: standard output is the process's and a
/// terminal, `NO_COLOR` is unset or empty, and `TERM` is not `dumb`, all
/// as the session's environment sees them. Without a VM (unit tests) it is
/// off.
fn colour_on(ctx: &mut dyn Ctx) -> bool {
    let no_color = ctx.var("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = ctx.var("TERM").is_some_and(|t| t == "dumb");
    if no_color || dumb {
        return false;
    }
    ctx.vm()
        .is_some_and(|vm| matches!(vm.stdout, Stdout::Inherit) && std::io::stdout().is_terminal())
}

/// `styled style text`: `text` in one ANSI style — `reset`, `bold`, `dim`,
/// `red`, `green`, `yellow`, `blue`, `magenta` or `cyan` — followed by a
/// reset, when colour is on (see [`colour_on`]); otherwise `text`
/// unchanged. Any other style name fails.
pub fn styled(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let style = str_arg(args, 0)?;
    let text = str_arg(args, 1)?;
    let colour = colour_on(ctx);
    Ok(Value::str(style_text(style, text, colour)?))
}

/// `bytes-to-string b`: the bytes decoded as strict UTF-8. Invalid UTF-8
/// fails, naming the offset of the first bad byte.
pub fn bytes_to_string(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let Value::Bytes(b) = v else {
        return Err(super::super::wrong("Bytes", v));
    };
    match std::str::from_utf8(b) {
        Ok(s) => Ok(Value::str(s)),
        Err(e) => {
            let at = e.valid_up_to();
            let what = if e.error_len().is_none() {
                "a truncated UTF-8 sequence at the end"
            } else {
                "an invalid UTF-8 sequence"
            };
            let byte = b.get(at).copied().unwrap_or_default();
            Err(fail(
                "bytes-to-string",
                format!("the bytes are not valid UTF-8: {what} at byte {at} ({byte:#04x})"),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::style_text;
    use crate::builtins::testing::{call, fails, strs};
    use crate::value::Value;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn words_and_back() {
        assert_eq!(
            call("words", &[s("  a\tb \n c  ")]),
            Ok(strs(&["a", "b", "c"]))
        );
        assert_eq!(call("words", &[s("   ")]), Ok(strs(&[])));
        assert_eq!(call("words", &[s("x\u{3000}y")]), Ok(strs(&["x", "y"])));
        assert_eq!(
            call("from-words", &[strs(&["a", "b c", ""])]),
            Ok(s("a b c "))
        );
        assert_eq!(call("from-words", &[strs(&[])]), Ok(s("")));
    }

    #[test]
    fn indenting() {
        let i = |n: i64, t: &str| call("indent", &[Value::Int(n), s(t)]);
        assert_eq!(i(2, "a\nb"), Ok(s("  a\n  b")));
        assert_eq!(i(2, "a\n\nb\n"), Ok(s("  a\n\n  b\n")));
        assert_eq!(i(1, "a\r\n\r\nb"), Ok(s(" a\r\n\r\n b")));
        assert_eq!(i(1, " \n"), Ok(s("  \n")));
        assert_eq!(i(0, "a"), Ok(s("a")));
        assert_eq!(i(4, ""), Ok(s("")));
        assert_eq!(
            fails("indent", &[Value::Int(-1), s("a")]),
            "indent: the width -1 is negative"
        );
        assert!(fails("indent", &[Value::Int(1 << 40), s("a")]).contains("1 GiB"));
    }

    #[test]
    fn repeating() {
        let r = |n: i64, t: &str| call("repeat", &[Value::Int(n), s(t)]);
        assert_eq!(r(3, "ab"), Ok(s("ababab")));
        assert_eq!(r(0, "ab"), Ok(s("")));
        assert_eq!(r(i64::MAX, ""), Ok(s("")));
        assert_eq!(
            fails("repeat", &[Value::Int(-2), s("a")]),
            "repeat: the count -2 is negative"
        );
        assert!(fails("repeat", &[Value::Int(i64::MAX), s("ab")]).contains("over the 1 GiB limit"));
    }

    #[test]
    fn padding() {
        let l = |n: i64, t: &str| call("pad-left", &[Value::Int(n), s(t)]);
        let r = |n: i64, t: &str| call("pad-right", &[Value::Int(n), s(t)]);
        assert_eq!(l(5, "ab"), Ok(s("   ab")));
        assert_eq!(r(5, "ab"), Ok(s("ab   ")));
        assert_eq!(l(3, "héé"), Ok(s("héé")));
        assert_eq!(r(4, "héé"), Ok(s("héé ")));
        assert_eq!(l(1, "long"), Ok(s("long")));
        assert_eq!(r(0, ""), Ok(s("")));
        assert!(fails("pad-left", &[Value::Int(-1), s("a")]).contains("negative"));
        assert!(fails("pad-right", &[Value::Int(-1), s("a")]).contains("negative"));
    }

    #[test]
    fn styles() {
        assert_eq!(style_text("red", "x", true), Ok("\x1b[31mx\x1b[0m".into()));
        assert_eq!(style_text("bold", "x", true), Ok("\x1b[1mx\x1b[0m".into()));
        assert_eq!(style_text("red", "x", false), Ok("x".into()));
        assert!(style_text("purple", "x", false)
            .is_err_and(|f| f.message.contains("unknown style `purple`")));
        // Without a VM there is no terminal: the text comes back as it is.
        assert_eq!(call("styled", &[s("cyan"), s("hi")]), Ok(s("hi")));
        assert!(fails("styled", &[s("underline"), s("hi")]).contains("the styles are reset, bold"));
    }

    #[test]
    fn decoding_bytes() {
        assert_eq!(
            call("bytes-to-string", &[Value::bytes("hé".into())]),
            Ok(s("hé"))
        );
        assert_eq!(call("bytes-to-string", &[Value::bytes(vec![])]), Ok(s("")));
        assert_eq!(
            fails("bytes-to-string", &[Value::bytes(vec![b'a', 0xff, b'b'])]),
            "bytes-to-string: the bytes are not valid UTF-8: an invalid UTF-8 sequence at byte 1 (0xff)"
        );
        assert!(fails("bytes-to-string", &[Value::bytes(vec![b'a', 0xc3])]).contains("truncated"));
    }
}
