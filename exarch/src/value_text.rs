//! The VALUE section: a ral value as text for the model.
//!
//! A top-level string is its own text and bytes their lossy UTF-8 decoding
//! (strings are payloads the model must match exactly when editing, so
//! they are never quoted or cut here; the section clip bounds them).
//! Everything else prints in ral's own notation: lists `[1, 2]`, records
//! and maps `[a: 1, b: 'two words']` in key order (`[:]` empty), variants
//! `` `tag payload ``, functions `<function>`, handles `<handle N>`, Floats
//! with their point (`3.0`, `1.0e20`). Nested strings are bare words when
//! they read back as the same text and quoted otherwise. A collection that
//! does not fit the width opens one element per line.
//!
//! `ral_host` exposes no value printer yet (the VM's renderer is internal),
//! so this is exarch's own, written against the public [`Value`] enum.

use ral_host::Value;

/// The layout width.
const WIDTH: usize = 100;
/// Deeper nesting prints as `[…]` (also bounds the recursion).
const MAX_DEPTH: usize = 48;

/// The VALUE text of `v`; `None` for `()` (no VALUE section).
pub fn value_text(v: &Value) -> Option<String> {
    match v {
        Value::Unit => None,
        Value::Str(s) => Some(s.as_str().to_owned()),
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::List(_)
        | Value::Record(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => {
            let mut out = String::new();
            layout(&mut out, v, 0, 0);
            Some(out)
        }
    }
}

fn layout(out: &mut String, v: &Value, indent: usize, depth: usize) {
    let col = out.len() - out.rfind('\n').map_or(0, |i| i + 1);
    let mut flat = String::new();
    write_flat(&mut flat, v, depth);
    if col + flat.chars().count() <= WIDTH || depth >= MAX_DEPTH || !opens(v) {
        out.push_str(&flat);
        return;
    }
    let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
    match v {
        Value::List(items) => {
            out.push_str("[\n");
            for item in items.iter() {
                pad(out, indent + 2);
                layout(out, item, indent + 2, depth + 1);
                out.push_str(",\n");
            }
            pad(out, indent);
            out.push(']');
        }
        Value::Record(r) => {
            out.push_str("[\n");
            for (k, val) in r.iter() {
                pad(out, indent + 2);
                write_key(out, k);
                out.push_str(": ");
                layout(out, val, indent + 2, depth + 1);
                out.push_str(",\n");
            }
            pad(out, indent);
            out.push(']');
        }
        Value::Variant(var) => {
            out.push('`');
            out.push_str(&var.tag);
            if let Some(p) = &var.payload {
                out.push(' ');
                layout(out, p, indent, depth + 1);
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

/// Whether a value can open over several lines.
fn opens(v: &Value) -> bool {
    match v {
        Value::List(items) => !items.is_empty(),
        Value::Record(r) => !r.is_empty(),
        Value::Variant(var) => var.payload.as_ref().is_some_and(opens),
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

fn write_flat(out: &mut String, v: &Value, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("[…]");
        return;
    }
    match v {
        Value::Unit => out.push_str("()"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => out.push_str(&n.to_string()),
        Value::Float(x) => out.push_str(&float_text(*x)),
        Value::Str(s) => write_word(out, s),
        Value::Bytes(b) => out.push_str(&format!("<{} bytes>", b.len())),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_flat(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Record(r) => {
            if r.is_empty() {
                out.push_str("[:]");
                return;
            }
            out.push('[');
            for (i, (k, val)) in r.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_key(out, k);
                out.push_str(": ");
                write_flat(out, val, depth + 1);
            }
            out.push(']');
        }
        Value::Variant(var) => {
            out.push('`');
            out.push_str(&var.tag);
            if let Some(p) = &var.payload {
                out.push(' ');
                let paren = matches!(p, Value::Variant(inner) if inner.payload.is_some());
                if paren {
                    out.push('(');
                }
                write_flat(out, p, depth + 1);
                if paren {
                    out.push(')');
                }
            }
        }
        Value::Func(_) => out.push_str("<function>"),
        Value::Handle(h) => out.push_str(&format!("<handle {}>", h.id)),
    }
}

/// A Float with its point kept: plain digits between 1e-4 and 1e16,
/// exponent form outside.
fn float_text(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let a = x.abs();
    if a == 0.0 || (1e-4..1e16).contains(&a) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{x:e}");
        match s.split_once('e') {
            Some((m, e)) if !m.contains('.') => format!("{m}.0e{e}"),
            Some(_) | None => s,
        }
    }
}

fn is_bare(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '+' | '@' | '%')
        })
        && s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '/' || c == '.')
        && !matches!(s, "true" | "false")
}

fn write_key(out: &mut String, k: &str) {
    let ident = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ident {
        out.push_str(k);
    } else {
        write_quoted(out, k);
    }
}

fn write_word(out: &mut String, s: &str) {
    if is_bare(s) {
        out.push_str(s);
    } else {
        write_quoted(out, s);
    }
}

fn write_quoted(out: &mut String, s: &str) {
    if s.contains(|c: char| c.is_control()) {
        out.push('"');
        for c in s.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '$' => out.push_str("\\$"),
                '!' => out.push_str("\\!"),
                '~' if out.ends_with('"') => out.push_str("\\~"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
                c => out.push(c),
            }
        }
        out.push('"');
    } else if s.contains('\'') {
        let mut fence = String::from("#");
        while s.contains(&format!("'{fence}")) {
            fence.push('#');
        }
        out.push_str(&fence);
        out.push('\'');
        out.push_str(s);
        out.push('\'');
        out.push_str(&fence);
    } else {
        out.push('\'');
        out.push_str(s);
        out.push('\'');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(v: Vec<Value>) -> Value {
        Value::List(std::sync::Arc::new(v))
    }

    #[test]
    fn top_level_text_is_raw_and_unit_is_absent() {
        assert_eq!(value_text(&Value::Unit), None);
        assert_eq!(value_text(&Value::str("it's\n")), Some("it's\n".into()));
        assert_eq!(value_text(&Value::Int(42)), Some("42".into()));
        assert_eq!(value_text(&Value::Bool(false)), Some("false".into()));
    }

    #[test]
    fn floats_keep_their_point() {
        assert_eq!(float_text(3.0), "3.0");
        assert_eq!(float_text(0.5), "0.5");
        assert_eq!(float_text(1e20), "1.0e20");
        assert_eq!(float_text(1.5e-7), "1.5e-7");
        assert_eq!(float_text(-0.0), "-0.0");
    }

    #[test]
    fn nested_strings_are_words_or_quoted() {
        let v = list(vec![
            Value::str("plain"),
            Value::str("two words"),
            Value::str("it's"),
            Value::str("a\nb"),
            Value::str("007"),
            Value::str("true"),
        ]);
        assert_eq!(
            value_text(&v).as_deref(),
            Some(r#"[plain, 'two words', #'it's'#, "a\nb", '007', 'true']"#)
        );
    }

    #[test]
    fn wide_lists_open_one_item_per_line() {
        let items: Vec<Value> = (0..30)
            .map(|i| Value::str(format!("item-number-{i}")))
            .collect();
        let text = value_text(&list(items)).unwrap_or_default();
        assert!(text.starts_with("[\n  item-number-0,\n"), "{text}");
        assert!(text.ends_with("  item-number-29,\n]"), "{text}");
    }

    #[test]
    fn variants_parenthesise_nested_payloads() {
        let inner = Value::variant("some", Some(Value::Int(1)));
        let v = Value::variant("ok", Some(inner));
        assert_eq!(value_text(&v).as_deref(), Some("`ok (`some 1)"));
        assert_eq!(
            value_text(&Value::variant("none", None)).as_deref(),
            Some("`none")
        );
    }
}
