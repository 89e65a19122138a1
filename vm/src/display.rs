//! Printing values: canonical numbers (§4.1), the text conversion (§4.9,
//! `str`, `to-string`, `echo`), and the interactive value renderer (§4.9,
//! §15.1).
//!
//! # Numbers
//!
//! An Int prints in plain decimal (there is no `-0` Int). A Float prints the
//! shortest decimal that reads back as the same double, always with a
//! decimal point: plain digits when `1e-4 <= |x| < 1e16` (`0.0001`,
//! `123.5`, `1000000000000000.0`), exponent form otherwise (`1.0e16`,
//! `1.5e300`, `1.0e-5`), the mantissa keeping its point (deviations.md
//! D16). Zero is `0.0`; negative zero is `-0.0`, so printing and reading
//! back is the identity on every finite double, sign of zero included
//! (`equal` still finds `0.0` and `-0.0` equal). Every printed number is a
//! numeral of §4.1. NaN and the infinities never occur in a value; should
//! one reach the printer it prints `nan`, `inf` or `-inf`, which are words.
//!
//! # Text conversion
//!
//! A string is its text, bytes their lossy UTF-8 decoding, `()` is `()`,
//! numbers and Bools their canonical spelling. Strings are written without
//! quotes at every depth (§4.9): `echo ['a b', c]` prints `[a b, c]`, and a
//! key is its text too. The conversion is readable, total on data and not
//! a serialization: quoting is the interactive renderer's business (below),
//! and `to-json` or `ral-quote` are the forms that read back. Lists are
//! `[1, 2]`, records and maps `[a: 1, b: 2]` in sorted key order, the empty
//! map `[:]`, variants `` `tag `` or `` `tag payload `` (a payload that is
//! itself a variant with a payload is parenthesised), functions
//! `<|x y| block>` (`<block>` with no parameters), partially applied
//! builtins `<builtin name>`, handles `<handle N>`.
//!
//! Every text a program sees goes through this one conversion: `echo`,
//! `str`, `to-string`, `to-line`, `to-lines`, interpolation, the argument
//! lists handlers, aliases and base handlers receive, and the scalars an
//! external program's arguments are made of (§6.6).
//!
//! # Interactive renderer
//!
//! [`render`] differs from the text conversion in three ways. Strings are
//! always quoted (single quotes, a hash fence when the text has a `'`,
//! double quotes with escapes for control characters and line feeds), and
//! `Unit` is `()`. Bytes show as `<N bytes>` (a host writes raw bytes
//! itself, §15.1). Collections are laid out to a width: a collection whose
//! one-line form fits in the columns left at its indentation stays on one
//! line; otherwise it opens, puts one element per line indented by two
//! spaces with a trailing comma, and closes at its own indentation:
//!
//! ```text
//! [
//!   host: 'db.example',
//!   ports: [5432, 5433],
//! ]
//! ```
//!
//! Elision, always marked with `…`: a non-empty collection nested deeper
//! than [`RenderOptions::max_depth`] shows as `[… 3 items]` or
//! `[… 3 entries]`, and a string stored directly under a key whose length
//! exceeds [`RenderOptions::max_field_chars`] keeps that many characters and
//! then shows `…(+N chars)` after its closing quote. Lists are never
//! shortened element-wise and top-level strings never at all (§4.9).
//!
//! # String styles
//!
//! The REPL shows strings quoted ([`StringStyle::Quoted`]), so `'007'` and
//! `007` look different at the prompt. A host that hands values to a reader
//! who must match text exactly (exarch's VALUE section) asks for
//! [`StringStyle::Words`] instead: a top-level string or bytes value is its
//! own text, unquoted and never cut, and a string inside a collection is a
//! ral word (bare where that reads back, quoted otherwise, so `'b c'` and
//! `'007'` stay unambiguous), as are bytes inside one. The layout and elision rules are the
//! same in both styles; there is one printer.

use std::fmt::Write;

use crate::quote::{write_ral_quoted, write_ral_word, Lines};
use crate::value::{Func, Record, Value, Variant};

/// The smallest magnitude printed in plain digits (inclusive).
pub const PLAIN_MIN: f64 = 1e-4;
/// The magnitude from which floats print in exponent form.
pub const PLAIN_MAX: f64 = 1e16;

/// Appends the canonical spelling of an Int.
pub fn write_int(out: &mut String, n: i64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Appends the canonical spelling of a Float (see the module docs).
pub fn write_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("nan");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        return;
    }
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0.0" } else { "0.0" });
        return;
    }
    let start = out.len();
    if (PLAIN_MIN..PLAIN_MAX).contains(&x.abs()) {
        // `Display` for f64 is the shortest round-trip decimal, never in
        // exponent form.
        let _ = write!(out, "{x}");
        if !out[start..].contains('.') {
            out.push_str(".0");
        }
    } else {
        // `LowerExp` without a precision is the shortest round-trip
        // mantissa: `1e300`, `1.5e-7`.
        let _ = write!(out, "{x:e}");
        if let Some(e) = out[start..].find('e') {
            if !out[start..start + e].contains('.') {
                out.insert_str(start + e, ".0");
            }
        }
    }
}

/// The canonical spelling of a Float.
pub fn float_to_string(x: f64) -> String {
    let mut out = String::new();
    write_float(&mut out, x);
    out
}

/// The text conversion of a value (§4.9): what `str`, `to-string` and
/// `echo` write.
pub fn to_text(value: &Value) -> String {
    let mut out = String::new();
    write_text(&mut out, value);
    out
}

/// Appends the text conversion of a value.
pub fn write_text(out: &mut String, value: &Value) {
    let _ = write_text_while(out, value, &mut || true);
}

/// [`write_text`] that asks `go_on` once per value it converts and gives
/// up (`None`, leaving `out` incomplete) when it says no: a value that
/// shares its parts can stand for far more text than memory holds, so a
/// builtin converting one polls for cancellation here (§8.10).
pub fn write_text_while(
    out: &mut String,
    value: &Value,
    go_on: &mut dyn FnMut() -> bool,
) -> Option<()> {
    match value {
        Value::Str(s) => out.push_str(s),
        Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(b)),
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => return write_nested(out, value, go_on),
    }
    Some(())
}

fn write_nested(out: &mut String, value: &Value, go_on: &mut dyn FnMut() -> bool) -> Option<()> {
    if !go_on() {
        return None;
    }
    match value {
        Value::Unit => out.push_str("()"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => write_int(out, *n),
        Value::Float(x) => write_float(out, *x),
        Value::Str(s) => out.push_str(s),
        Value::Bytes(b) => out.push_str(&String::from_utf8_lossy(b)),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_nested(out, item, go_on)?;
            }
            out.push(']');
        }
        Value::Record(r) => {
            if r.is_empty() {
                out.push_str("[:]");
                return Some(());
            }
            out.push('[');
            for (i, (k, v)) in r.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(k);
                out.push_str(": ");
                write_nested(out, v, go_on)?;
            }
            out.push(']');
        }
        Value::Variant(v) => write_variant(out, v, go_on)?,
        Value::Func(f) => write_func(out, f),
        Value::Handle(h) => {
            let _ = write!(out, "<handle {}>", h.id);
        }
    }
    Some(())
}

/// A string inside a collection, in the renderer's `Words` style: a ral
/// word on one line.
fn write_word(out: &mut String, s: &str) {
    if s.contains('\n') {
        write_ral_quoted(out, s, Lines::Escaped);
    } else {
        write_ral_word(out, s);
    }
}

fn write_variant(out: &mut String, v: &Variant, go_on: &mut dyn FnMut() -> bool) -> Option<()> {
    out.push('`');
    out.push_str(&v.tag);
    if let Some(p) = &v.payload {
        out.push(' ');
        let paren = matches!(p, Value::Variant(inner) if inner.payload.is_some());
        if paren {
            out.push('(');
        }
        write_nested(out, p, go_on)?;
        if paren {
            out.push(')');
        }
    }
    Some(())
}

fn write_func(out: &mut String, f: &Func) {
    match f {
        Func::Closure { params, .. } => {
            if params.is_empty() {
                out.push_str("<block>");
            } else {
                out.push_str("<|");
                out.push_str(&params.join(" "));
                out.push_str("| block>");
            }
        }
        Func::Builtin { id, .. } => {
            let name = ral_types::builtin_table()
                .entry(ral_types::BuiltinId(*id))
                .map_or("?", |b| b.name);
            let _ = write!(out, "<builtin {name}>");
        }
        Func::Partial { head, .. } => write_func(out, head),
    }
}

/// How [`render`] spells strings (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StringStyle {
    /// Always quoted; bytes as `<N bytes>` (the REPL).
    #[default]
    Quoted,
    /// A top-level string or bytes value as its text; nested ones as ral
    /// words, bare where they read back.
    Words,
}

/// Options for [`render`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// The columns available.
    pub width: usize,
    /// Collections nested deeper than this are elided.
    pub max_depth: usize,
    /// A string directly under a key keeps at most this many characters.
    pub max_field_chars: usize,
    /// How strings are spelled.
    pub strings: StringStyle,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            width: 80,
            max_depth: 6,
            max_field_chars: 200,
            strings: StringStyle::Quoted,
        }
    }
}

/// The interactive rendering of a value (see the module docs).
pub fn render(value: &Value, opts: &RenderOptions) -> String {
    let mut out = String::new();
    match (opts.strings, value) {
        (StringStyle::Words, Value::Str(s)) => out.push_str(s),
        (StringStyle::Words, Value::Bytes(b)) => out.push_str(&String::from_utf8_lossy(b)),
        _ => render_into(&mut out, value, 0, 0, opts),
    }
    out
}

/// Whether a value lays out over several lines when it does not fit.
fn is_collection(value: &Value) -> bool {
    match value {
        Value::List(items) => !items.is_empty(),
        Value::Record(r) => !r.is_empty(),
        Value::Variant(v) => v.payload.as_ref().is_some_and(is_collection),
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::Func(_)
        | Value::Handle(_) => false,
    }
}

/// Renders `value` whose first line starts at column `col` and whose
/// continuation lines are indented by `indent`.
fn render_into(out: &mut String, value: &Value, indent: usize, depth: usize, opts: &RenderOptions) {
    let col = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
    let mut flat = String::new();
    write_flat(&mut flat, value, depth, opts);
    if !is_collection(value) || depth >= opts.max_depth || col + flat.chars().count() <= opts.width
    {
        out.push_str(&flat);
        return;
    }
    let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
    match value {
        Value::List(items) => {
            out.push_str("[\n");
            for item in items.iter() {
                pad(out, indent + 2);
                render_into(out, item, indent + 2, depth + 1, opts);
                out.push_str(",\n");
            }
            pad(out, indent);
            out.push(']');
        }
        Value::Record(r) => {
            out.push_str("[\n");
            for (k, v) in r.iter() {
                pad(out, indent + 2);
                write_word(out, k);
                out.push_str(": ");
                render_field(out, v, indent + 2, depth + 1, opts);
                out.push_str(",\n");
            }
            pad(out, indent);
            out.push(']');
        }
        Value::Variant(v) => {
            out.push('`');
            out.push_str(&v.tag);
            if let Some(p) = &v.payload {
                out.push(' ');
                render_into(out, p, indent, depth, opts);
            }
        }
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::Func(_)
        | Value::Handle(_) => out.push_str(&flat),
    }
}

fn render_field(out: &mut String, v: &Value, indent: usize, depth: usize, opts: &RenderOptions) {
    if let Value::Str(s) = v {
        write_field_string(out, s, opts);
    } else {
        render_into(out, v, indent, depth, opts);
    }
}

/// A string stored directly under a key, shortened past the limit.
fn write_field_string(out: &mut String, s: &str, opts: &RenderOptions) {
    match s.char_indices().nth(opts.max_field_chars) {
        Some((cut, _)) => {
            let rest = s[cut..].chars().count();
            write_string(out, &s[..cut], opts);
            let _ = write!(out, "…(+{rest} chars)");
        }
        None => write_string(out, s, opts),
    }
}

/// A string inside a rendered value, in the options' style.
fn write_string(out: &mut String, s: &str, opts: &RenderOptions) {
    match opts.strings {
        StringStyle::Quoted => write_ral_quoted(out, s, Lines::Escaped),
        StringStyle::Words => write_word(out, s),
    }
}

/// The one-line rendering, with depth and field elision applied.
fn write_flat(out: &mut String, value: &Value, depth: usize, opts: &RenderOptions) {
    match value {
        Value::Str(s) => write_string(out, s, opts),
        Value::Bytes(b) => match opts.strings {
            StringStyle::Quoted => {
                let _ = write!(out, "<{} bytes>", b.len());
            }
            StringStyle::Words => write_word(out, &String::from_utf8_lossy(b)),
        },
        Value::List(items) => {
            if depth >= opts.max_depth && !items.is_empty() {
                let _ = write!(out, "[… {} items]", items.len());
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_flat(out, item, depth + 1, opts);
            }
            out.push(']');
        }
        Value::Record(r) => write_flat_record(out, r, depth, opts),
        Value::Variant(v) => {
            out.push('`');
            out.push_str(&v.tag);
            if let Some(p) = &v.payload {
                out.push(' ');
                let paren = matches!(p, Value::Variant(inner) if inner.payload.is_some());
                if paren {
                    out.push('(');
                }
                write_flat(out, p, depth, opts);
                if paren {
                    out.push(')');
                }
            }
        }
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Func(_)
        | Value::Handle(_) => {
            let _ = write_nested(out, value, &mut || true);
        }
    }
}

fn write_flat_record(out: &mut String, r: &Record, depth: usize, opts: &RenderOptions) {
    if r.is_empty() {
        out.push_str("[:]");
        return;
    }
    if depth >= opts.max_depth {
        let _ = write!(out, "[… {} entries]", r.len());
        return;
    }
    out.push('[');
    for (i, (k, v)) in r.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_word(out, k);
        out.push_str(": ");
        if let Value::Str(s) = v {
            write_field_string(out, s, opts);
        } else {
            write_flat(out, v, depth + 1, opts);
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Record;
    use proptest::prelude::*;
    use ral_syntax::ast::{parse_numeral, Numeral};
    use std::sync::Arc;

    fn f(x: f64) -> String {
        float_to_string(x)
    }

    #[test]
    fn canonical_floats() {
        assert_eq!(f(3.0), "3.0");
        assert_eq!(f(0.5), "0.5");
        assert_eq!(f(1.5), "1.5");
        assert_eq!(f(-2.25), "-2.25");
        assert_eq!(f(1e300), "1.0e300");
        assert_eq!(f(1.5e300), "1.5e300");
        assert_eq!(f(0.0), "0.0");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(1e-4), "0.0001");
        assert_eq!(f(9.9e-5), "9.9e-5");
        assert_eq!(f(1e15), "1000000000000000.0");
        assert_eq!(f(9999999999999998.0), "9999999999999998.0");
        assert_eq!(f(1e16), "1.0e16");
        assert_eq!(f(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(f(f64::MAX), "1.7976931348623157e308");
        assert_eq!(f(f64::MIN_POSITIVE), "2.2250738585072014e-308");
        assert_eq!(f(5e-324), "5.0e-324");
        assert_eq!(f(f64::NAN), "nan");
    }

    #[test]
    fn canonical_ints() {
        let mut s = String::new();
        write_int(&mut s, i64::MIN);
        assert_eq!(s, "-9223372036854775808");
        assert_eq!(to_text(&Value::Int(0)), "0");
    }

    fn reads_back(printed: &str, x: f64) {
        match parse_numeral(printed) {
            Some(Numeral::Float(y)) => assert_eq!(y.to_bits(), x.to_bits(), "{printed}"),
            other => panic!("{printed} read back as {other:?}"),
        }
    }

    proptest! {
        #[test]
        fn every_finite_float_round_trips(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assume!(x.is_finite());
            reads_back(&f(x), x);
        }

        #[test]
        fn ordinary_floats_round_trip(x in -1e20f64..1e20) {
            reads_back(&f(x), x);
        }

        #[test]
        fn every_int_round_trips(n in any::<i64>()) {
            let printed = to_text(&Value::Int(n));
            prop_assert_eq!(parse_numeral(&printed), Some(Numeral::Int(n)));
        }
    }

    fn rec(entries: &[(&str, Value)]) -> Value {
        Value::record(Record::from_entries(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        ))
    }

    #[test]
    fn text_conversion() {
        assert_eq!(to_text(&Value::str("hi there")), "hi there");
        assert_eq!(to_text(&Value::Unit), "()");
        assert_eq!(to_text(&Value::Bool(true)), "true");
        assert_eq!(to_text(&Value::Float(3.0)), "3.0");
        assert_eq!(to_text(&Value::bytes(vec![b'a', 0xff])), "a\u{fffd}");
        assert_eq!(to_text(&Value::list(vec![1.into(), 2.into()])), "[1, 2]");
        assert_eq!(to_text(&Value::list(vec![])), "[]");
        assert_eq!(
            to_text(&Value::list(vec![
                "a".into(),
                "b c".into(),
                "007".into(),
                "x\ny".into()
            ])),
            "[a, b c, 007, x\ny]"
        );
        assert_eq!(
            to_text(&rec(&[("b", 2.into()), ("a", 1.into())])),
            "[a: 1, b: 2]"
        );
        assert_eq!(to_text(&Value::record(Record::empty())), "[:]");
        assert_eq!(
            to_text(&rec(&[("two words", Value::Unit)])),
            "[two words: ()]"
        );
        assert_eq!(
            to_text(&Value::variant("just", Some("a b".into()))),
            "`just a b"
        );
        assert_eq!(to_text(&Value::variant("none", None)), "`none");
        assert_eq!(to_text(&Value::variant("just", Some(5.into()))), "`just 5");
        assert_eq!(
            to_text(&Value::variant(
                "ok",
                Some(Value::variant("just", Some(1.into())))
            )),
            "`ok (`just 1)"
        );
        let closure = Func::Closure {
            proto: 0,
            captures: Box::new([]),
            params: Arc::from(vec!["x".to_owned(), "y".to_owned()]),
        };
        assert_eq!(to_text(&Value::Func(Arc::new(closure))), "<|x y| block>");
        let block = Func::Closure {
            proto: 0,
            captures: Box::new([]),
            params: Arc::from(Vec::<String>::new()),
        };
        assert_eq!(to_text(&Value::Func(Arc::new(block))), "<block>");
        let id = ral_types::builtin_table().id("map").map_or(0, |id| id.0);
        let builtin = Func::Builtin {
            id,
            applied: Box::new([]),
        };
        assert_eq!(to_text(&Value::Func(Arc::new(builtin))), "<builtin map>");
    }

    #[test]
    fn renderer_small_values() {
        let o = RenderOptions::default();
        assert_eq!(render(&Value::Unit, &o), "()");
        assert_eq!(render(&Value::str("hi"), &o), "'hi'");
        assert_eq!(render(&Value::str("it's"), &o), "#'it's'#");
        assert_eq!(render(&Value::str("a\nb"), &o), "\"a\\nb\"");
        assert_eq!(render(&Value::bytes(vec![1, 2]), &o), "<2 bytes>");
        assert_eq!(
            render(&Value::list(vec!["a".into(), 1.into()]), &o),
            "['a', 1]"
        );
    }

    #[test]
    fn renderer_breaks_to_width() {
        let o = RenderOptions {
            width: 24,
            ..RenderOptions::default()
        };
        let v = rec(&[
            ("host", "db.example".into()),
            ("ports", Value::list(vec![5432.into(), 5433.into()])),
        ]);
        assert_eq!(
            render(&v, &o),
            "[\n  host: 'db.example',\n  ports: [5432, 5433],\n]"
        );
        let long = Value::list((0..12).map(Value::Int).collect());
        assert_eq!(
            render(&Value::list(vec![long]), &o),
            "[\n  [\n    0,\n    1,\n    2,\n    3,\n    4,\n    5,\n    6,\n    7,\n    8,\n    9,\n    10,\n    11,\n  ],\n]"
        );
    }

    #[test]
    fn renderer_elides_and_marks() {
        let o = RenderOptions {
            width: 200,
            max_depth: 2,
            max_field_chars: 5,
            strings: StringStyle::Quoted,
        };
        let deep = Value::list(vec![Value::list(vec![Value::list(vec![
            1.into(),
            2.into(),
        ])])]);
        assert_eq!(render(&deep, &o), "[[[… 2 items]]]");
        let r = rec(&[("k", "abcdefgh".into())]);
        assert_eq!(render(&r, &o), "[k: 'abcde'…(+3 chars)]");
        // A top-level string is never shortened.
        assert_eq!(render(&Value::str("abcdefgh"), &o), "'abcdefgh'");
    }

    #[test]
    fn words_style_quotes_nested_strings_as_ral_words() {
        let o = RenderOptions {
            width: 100,
            strings: StringStyle::Words,
            ..RenderOptions::default()
        };
        // A top-level string is its text: unquoted, line feeds kept.
        assert_eq!(render(&Value::str("it's\n"), &o), "it's\n");
        assert_eq!(render(&Value::bytes(b"raw".to_vec()), &o), "raw");
        assert_eq!(render(&Value::Int(42), &o), "42");
        let v = Value::list(vec![
            "plain".into(),
            "two words".into(),
            "it's".into(),
            "a\nb".into(),
            "007".into(),
            "true".into(),
        ]);
        assert_eq!(
            render(&v, &o),
            r#"[plain, 'two words', #'it's'#, "a\nb", '007', 'true']"#
        );
        assert_eq!(
            render(&rec(&[("name", "db one".into()), ("port", 5.into())]), &o),
            "[name: 'db one', port: 5]"
        );
        // Too wide: one element per line, at the same layout as Quoted.
        let items: Vec<Value> = (0..30)
            .map(|i| Value::str(format!("item-number-{i}")))
            .collect();
        let text = render(&Value::list(items), &o);
        assert!(text.starts_with("[\n  item-number-0,\n"), "{text}");
        assert!(text.ends_with("  item-number-29,\n]"), "{text}");
    }
}
