//! Whole-input text and bytes (§7.3, §4.3): `from-string`, `from-bytes`,
//! `to-string`.

use super::{CodecError, ErrorKind};
use crate::display::write_text;
use crate::value::Value;

/// `bytes` as strict UTF-8, or an error for `codec` naming the byte offset
/// of the first invalid sequence and its line.
pub(crate) fn utf8<'a>(codec: &'static str, bytes: &'a [u8]) -> Result<&'a str, CodecError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let line = bytes
            .get(..at)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
            + 1;
        let bad: Vec<String> = bytes
            .get(at..)
            .unwrap_or_default()
            .iter()
            .take(e.error_len().unwrap_or(1).max(1))
            .map(|b| format!("{b:#04x}"))
            .collect();
        let what = if e.error_len().is_none() {
            "a truncated UTF-8 sequence at the end of input"
        } else {
            "an invalid UTF-8 sequence"
        };
        CodecError::new(
            codec,
            ErrorKind::Utf8,
            String::new(),
            Some(bad.join(" ")),
            format!(
                "the input is not valid UTF-8: {what} ({}) at byte {at}, line {line}; \
                 use `from-bytes` for binary data",
                bad.join(" ")
            ),
        )
    })
}

/// `from-string`: all of `bytes` as text; invalid UTF-8 is an error.
pub fn decode_string(bytes: &[u8]) -> Result<Value, CodecError> {
    Ok(Value::str(utf8("from-string", bytes)?))
}

/// `from-bytes`: every byte, unchanged.
pub fn decode_bytes(bytes: &[u8]) -> Value {
    Value::bytes(bytes.to_vec())
}

/// `to-string`: the value's text form (§4.9). A string is its own text and
/// bytes their lossy UTF-8 decoding (to write bytes unchanged, `to-bytes`).
pub fn encode_string(value: &Value) -> Vec<u8> {
    if let Value::Str(s) = value {
        return s.as_bytes().to_vec();
    }
    let mut out = String::new();
    write_text(&mut out, value);
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_string_is_strict() {
        assert_eq!(decode_string(b"a\r\n"), Ok(Value::str("a\r\n")));
        assert_eq!(decode_string(b""), Ok(Value::str("")));
        let Err(e) = decode_string(b"ok\nbad\xc3(") else {
            panic!("accepted invalid UTF-8")
        };
        assert_eq!(e.kind, ErrorKind::Utf8);
        assert!(e.message.contains("byte 6, line 2"), "{}", e.message);
        let Err(e) = decode_string(b"\xe2\x82") else {
            panic!("accepted a truncated sequence")
        };
        assert!(e.message.contains("truncated"), "{}", e.message);
    }

    #[test]
    fn from_bytes_keeps_every_byte() {
        assert_eq!(
            decode_bytes(&[0, 0xff, b'\n']),
            Value::bytes(vec![0, 0xff, b'\n'])
        );
    }

    #[test]
    fn to_string_is_the_text_form() {
        assert_eq!(encode_string(&Value::str("a b")), b"a b");
        assert_eq!(encode_string(&Value::Float(3.0)), b"3.0");
        assert_eq!(
            encode_string(&Value::bytes(vec![b'h', 0xff])),
            "h\u{fffd}".as_bytes()
        );
        let xs = Value::list(vec![Value::Int(1), Value::str("b c")]);
        // §4.9: strings inside a collection are written raw, as at the top.
        assert_eq!(encode_string(&xs), b"[1, b c]");
    }
}
