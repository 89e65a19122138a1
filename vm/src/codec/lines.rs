//! The line rule of §7.3, stated once.
//!
//! - A line terminator is `LF` or `CRLF`; the `CR` of a `CRLF` belongs to
//!   the terminator, and only that one `CR` does.
//! - A lone `CR` is ordinary text, mid-line or at the end of input.
//! - The final line need not be terminated; an empty input has no lines.
//! - Each line strips its own terminator, so mixed endings are fine.
//!
//! Every line reader splits by [`split_lines`] (or [`split_lines_bytes`]):
//! `from-lines`, `from-jsonl`, `fold-lines`, `lines`. Capture, `from-line`
//! and `ask` do not split; they remove at most one final terminator with
//! [`strip_one_newline`]. ral writes `LF` alone ([`encode_lines`],
//! [`encode_line`]).

use std::borrow::Cow;

use super::{CodecError, ErrorKind, Within};
use crate::display::write_text;
use crate::value::Value;

/// The lines of `text` by the line rule.
pub fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(body) => body.strip_suffix('\r').unwrap_or(body),
            None => line,
        })
}

/// The lines of `bytes` by the line rule. `LF` is one byte that never
/// occurs inside a multi-byte UTF-8 sequence, so splitting before decoding
/// is exact.
pub fn split_lines_bytes(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|line| match line.strip_suffix(b"\n") {
            Some(body) => body.strip_suffix(b"\r").unwrap_or(body),
            None => line,
        })
}

/// `text` without one final `LF` or `CRLF`, if it has one: capture's and
/// `from-line`'s rule. `"a\r\n\r\n"` becomes `"a\r\n"`; `"a\r"` stays.
pub fn strip_one_newline(text: &str) -> &str {
    match text.strip_suffix('\n') {
        Some(body) => body.strip_suffix('\r').unwrap_or(body),
        None => text,
    }
}

/// [`strip_one_newline`] on bytes.
pub fn strip_one_newline_bytes(bytes: &[u8]) -> &[u8] {
    match bytes.strip_suffix(b"\n") {
        Some(body) => body.strip_suffix(b"\r").unwrap_or(body),
        None => bytes,
    }
}

/// `from-lines`: the lines of `bytes`, each decoded as UTF-8 with every
/// byte that is not part of a valid sequence replaced by one U+FFFD (§7.3).
/// Total: it never fails.
pub fn decode_lines(bytes: &[u8]) -> Value {
    Value::list(
        split_lines_bytes(bytes)
            .map(|line| match replace_per_byte(line) {
                Cow::Borrowed(s) => Value::str(s),
                Cow::Owned(s) => Value::str(s),
            })
            .collect(),
    )
}

/// `bytes` as UTF-8, one U+FFFD for each byte of an invalid or truncated
/// sequence (unlike `String::from_utf8_lossy`, which replaces a maximal
/// invalid prefix by one character).
pub fn replace_per_byte(bytes: &[u8]) -> Cow<'_, str> {
    let mut rest = match std::str::from_utf8(bytes) {
        Ok(s) => return Cow::Borrowed(s),
        Err(_) => bytes,
    };
    let mut out = String::with_capacity(bytes.len() + 8);
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                return Cow::Owned(out);
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                // `good` was just validated; the fallback is never taken.
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                let n = e.error_len().unwrap_or(bad.len()).max(1);
                for _ in 0..n.min(bad.len()) {
                    out.push('\u{fffd}');
                }
                rest = bad.get(n..).unwrap_or_default();
            }
        }
    }
}

/// `from-line`: strict UTF-8, then one final `LF` or `CRLF` removed.
pub fn decode_line(bytes: &[u8]) -> Result<Value, CodecError> {
    let text = super::text::utf8("from-line", bytes)?;
    Ok(Value::str(strip_one_newline(text)))
}

/// `to-line`: the value's text form and an `LF`.
pub fn encode_line(value: &Value) -> Vec<u8> {
    let mut out = String::new();
    write_text(&mut out, value);
    out.push('\n');
    out.into_bytes()
}

/// `to-lines`: each element's text form followed by an `LF`; `to-lines []`
/// writes nothing and `to-lines [""]` one `LF`. Refuses a non-list.
pub fn encode_lines(value: &Value) -> Result<Vec<u8>, CodecError> {
    let Value::List(items) = value else {
        return Err(CodecError::new(
            "to-lines",
            ErrorKind::Unrepresentable,
            String::new(),
            Some(super::describe(value)),
            format!("expected a list, got {}", super::describe(value)),
        ));
    };
    let mut out = String::new();
    for item in items.iter() {
        write_text(&mut out, item);
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// The 1-based line number of each line of `bytes`, with the line.
pub(crate) fn numbered_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    split_lines_bytes(bytes)
        .enumerate()
        .map(|(i, line)| (i + 1, line))
}

/// Places an error on a 1-based line.
pub(crate) fn on_line(e: CodecError, line: usize) -> CodecError {
    e.within(Within::Line(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strs(xs: &[&str]) -> Value {
        Value::list(xs.iter().map(|s| Value::str(*s)).collect())
    }

    /// Every row of the table in §7.3, through every splitter.
    #[test]
    fn the_spec_table() {
        let table: &[(&str, &[&str])] = &[
            ("", &[]),
            ("a", &["a"]),
            ("a\n", &["a"]),
            ("\n", &[""]),
            ("a\n\n", &["a", ""]),
            ("\n\na", &["", "", "a"]),
            ("a\r\nb\nc\r\n", &["a", "b", "c"]),
            ("a\r\n\r\nb", &["a", "", "b"]),
            ("a\rb\n", &["a\rb"]),
            ("a\r", &["a\r"]),
            ("a\r\r\n", &["a\r"]),
        ];
        for (input, want) in table {
            let got: Vec<&str> = split_lines(input).collect();
            assert_eq!(&got, want, "split_lines {input:?}");
            let got: Vec<&[u8]> = split_lines_bytes(input.as_bytes()).collect();
            let want_bytes: Vec<&[u8]> = want.iter().map(|s| s.as_bytes()).collect();
            assert_eq!(got, want_bytes, "split_lines_bytes {input:?}");
            assert_eq!(decode_lines(input.as_bytes()), strs(want), "{input:?}");
        }
    }

    #[test]
    fn from_lines_replaces_invalid_utf8_per_line() {
        assert_eq!(decode_lines(b"ok\n\xffx\r\n"), strs(&["ok", "\u{fffd}x"]));
    }

    #[test]
    fn one_replacement_per_bad_byte() {
        // A truncated three-byte sequence is two bad bytes, not one.
        assert_eq!(replace_per_byte(b"a\xe2\x82b"), "a\u{fffd}\u{fffd}b");
        assert_eq!(replace_per_byte(b"\xff\xfe"), "\u{fffd}\u{fffd}");
        assert_eq!(replace_per_byte(b"end\xe2\x82"), "end\u{fffd}\u{fffd}");
        assert_eq!(replace_per_byte("é€".as_bytes()), "é€");
        assert_eq!(replace_per_byte(b"\xc3\xa9\xc3"), "é\u{fffd}");
    }

    #[test]
    fn strip_one_removes_at_most_one_terminator() {
        assert_eq!(strip_one_newline("a\r\n\r\n"), "a\r\n");
        assert_eq!(strip_one_newline("a\r"), "a\r");
        assert_eq!(strip_one_newline("a\n\n"), "a\n");
        assert_eq!(strip_one_newline("a\r\n"), "a");
        assert_eq!(strip_one_newline(""), "");
        assert_eq!(strip_one_newline_bytes(b"x\r\n"), b"x");
        assert_eq!(strip_one_newline_bytes(b"x\r"), b"x\r");
    }

    #[test]
    fn from_line_is_strict() {
        assert_eq!(decode_line(b"hi\r\n"), Ok(Value::str("hi")));
        assert_eq!(decode_line(b""), Ok(Value::str("")));
        let e = decode_line(b"a\xff\n").err();
        assert_eq!(e.map(|e| e.kind), Some(ErrorKind::Utf8));
    }

    #[test]
    fn to_lines_and_to_line_write_lf_alone() {
        assert_eq!(encode_lines(&strs(&[])), Ok(Vec::new()));
        assert_eq!(encode_lines(&strs(&[""])), Ok(b"\n".to_vec()));
        assert_eq!(encode_lines(&strs(&["a", "b c"])), Ok(b"a\nb c\n".to_vec()));
        assert_eq!(
            encode_lines(&Value::list(vec![Value::Int(1), Value::Float(2.0)])),
            Ok(b"1\n2.0\n".to_vec())
        );
        assert!(encode_lines(&Value::Int(1)).is_err());
        assert_eq!(encode_line(&Value::str("x")), b"x\n");
        assert_eq!(encode_line(&Value::Unit), b"()\n");
    }

    proptest! {
        /// `from-lines` inverts `to-lines` on lists of strings in which no
        /// element contains `LF` or ends with `CR` (§7.3).
        #[test]
        fn lines_round_trip(xs in proptest::collection::vec("[a-z \t\r\u{e9}\u{1F600}]{0,8}", 0..8)) {
            let xs: Vec<String> = xs.into_iter().filter(|s| !s.ends_with('\r')).collect();
            let v = Value::list(xs.iter().map(|s| Value::str(s.as_str())).collect());
            let bytes = encode_lines(&v).unwrap_or_default();
            prop_assert_eq!(decode_lines(&bytes), v);
        }
    }
}
