//! JSON (§7.3): `from-json`, `from-jsonl`, `from-json-at`, `to-json`,
//! `to-jsonl`.
//!
//! # Decoding
//!
//! A small strict parser of RFC 8259, written here rather than taken from
//! `serde_json`: without its `arbitrary_precision` feature `serde_json`
//! turns a whole number beyond `u64` into an `f64` silently and keeps the
//! last of two equal keys, and neither says where in the value it is, while
//! this codec must refuse both and name an RFC 6901 pointer.
//!
//! - The input is strict UTF-8 (a byte order mark is not whitespace), holds
//!   exactly one value, and may be surrounded by JSON whitespace.
//! - `null` is `Unit`; `true`/`false` are Bools; strings are Strings (a lone
//!   UTF-16 surrogate escape is refused: it is not a character).
//! - A number with neither fraction nor exponent is an `Int`; one outside
//!   the `i64` range is an error, never a silent `Float`. A number with a
//!   fraction or an exponent is a `Float` (`1e2` is `100.0`), correctly
//!   rounded; one that overflows to infinity is an error. `-0` is the Int 0
//!   and `-0.0` the Float negative zero.
//! - Arrays are Lists; objects are the record/map carrier, keys sorted.
//!   **A repeated key is an error** naming the object and the key: RFC 8259
//!   leaves the meaning open, and a decoder that silently keeps one of them
//!   disagrees with some other reader of the same file (§7.3: a decoder
//!   never converts; duplicate CSV headers are refused likewise).
//! - Nesting deeper than [`MAX_DEPTH`] is an error rather than a stack
//!   overflow.
//!
//! Decoding never produces a variant: a tagged object (below) decodes to a
//! record. Recognising one where the program uses the value as a variant is
//! the boundary admission's business (§7.3 "Checked boundaries"), which the
//! VM performs after these functions return.
//!
//! # Encoding
//!
//! Compact UTF-8 JSON with no whitespace and no trailing newline (`to-json`
//! is to `to-jsonl` what `to-string` is to `to-line`). `Unit` is `null`;
//! Ints print in decimal and Floats in their canonical spelling (§4.1,
//! [`crate::display::write_float`]), which always keeps a `.0` or a
//! fraction, so a Float reads back as the same Float, exactly. Strings
//! escape `"`, `\` and control characters (`\n`, `\r`, `\t`, `\b`, `\f`,
//! otherwise `\u00XX`) and keep all other characters as UTF-8. Records and
//! maps are objects in sorted key order. `Bytes` are an array of Ints
//! 0–255 (§7.3). A variant is a tagged object: `{"tag":"none"}` for a
//! nullary one and `{"tag":"ok","payload":42}` for one with a payload (its
//! payload encoded by these same rules), so `` `none `` and `` `none () ``
//! stay distinct. Functions, blocks and handles are refused, naming the
//! pointer of the refused value; so is a non-finite Float, which the VM
//! never stores.

use super::lines::{numbered_lines, on_line};
use super::{describe, push_token, the_value_at, CodecError, ErrorKind, Within};
use crate::display::{write_float, write_int};
use crate::value::{Record, Value};

/// The deepest nesting of arrays and objects the decoder accepts.
pub const MAX_DEPTH: usize = 256;

/// The key of a tagged object's tag.
pub const TAG_KEY: &str = "tag";
/// The key of a tagged object's payload.
pub const PAYLOAD_KEY: &str = "payload";

// ---------------------------------------------------------------------------
// Decoding

/// `from-json`: one JSON value.
pub fn decode_json(bytes: &[u8]) -> Result<Value, CodecError> {
    decode_json_while(bytes, &mut || true)
}

/// [`decode_json`] asking `go_on` once per value it reads; when it says
/// no, decoding stops with an error the caller replaces by the reason it
/// said no (a builtin's cancellation, §8.10). The same holds for every
/// `_while` function here.
pub fn decode_json_while(
    bytes: &[u8],
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Value, CodecError> {
    decode_as("from-json", bytes, go_on)
}

/// `from-jsonl`: one JSON value per line by the line rule (§7.3). A blank
/// line (only spaces, tabs and carriage returns) holds no value. An error
/// names its 1-based line.
pub fn decode_jsonl(bytes: &[u8]) -> Result<Value, CodecError> {
    decode_jsonl_while(bytes, &mut || true)
}

/// [`decode_jsonl`] asking `go_on` (see [`decode_json_while`]).
pub fn decode_jsonl_while(
    bytes: &[u8],
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Value, CodecError> {
    let mut out = Vec::new();
    for (n, line) in numbered_lines(bytes) {
        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        out.push(decode_as("from-jsonl", line, go_on).map_err(|e| on_line(e, n))?);
    }
    Ok(Value::list(out))
}

/// `from-json-at tokens`: decodes as [`decode_json`] does, then reads the
/// value at the RFC 6901 reference tokens (already split and unescaped): an
/// object member by exact key, an array element by canonical decimal index.
pub fn decode_json_at<S: AsRef<str>>(bytes: &[u8], tokens: &[S]) -> Result<Value, CodecError> {
    decode_json_at_while(bytes, tokens, &mut || true)
}

/// [`decode_json_at`] asking `go_on` (see [`decode_json_while`]).
pub fn decode_json_at_while<S: AsRef<str>>(
    bytes: &[u8],
    tokens: &[S],
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Value, CodecError> {
    let root = decode_as("from-json-at", bytes, go_on)?;
    select(&root, tokens).cloned()
}

/// The value at `tokens` inside `root`; an unresolved token is an error
/// naming the pointer prefix that did resolve and the object's keys or the
/// array's length.
pub fn select<'v, S: AsRef<str>>(root: &'v Value, tokens: &[S]) -> Result<&'v Value, CodecError> {
    let mut cur = root;
    let mut prefix = String::new();
    for token in tokens {
        let token = token.as_ref();
        let unresolved = |found: String, why: String| {
            CodecError::new(
                "from-json-at",
                ErrorKind::Unresolved,
                prefix.clone(),
                Some(found),
                format!("the reference token `{token}` does not resolve: {why}"),
            )
        };
        let next = match cur {
            Value::Record(r) => r.get(token).ok_or_else(|| {
                let keys = key_list(r);
                unresolved(
                    format!("an object with keys {keys}"),
                    format!("the object at `{prefix}` has no key `{token}`; its keys are {keys}"),
                )
            })?,
            Value::List(items) => canonical_index(token)
                .and_then(|i| items.get(i))
                .ok_or_else(|| {
                    let n = items.len();
                    let why = if canonical_index(token).is_some() {
                        format!("the array at `{prefix}` has length {n}")
                    } else {
                        format!(
                            "the array at `{prefix}` (length {n}) is indexed by canonical \
                             decimals (`0`, `1`, …, no sign or leading zero)"
                        )
                    };
                    unresolved(format!("an array of length {n}"), why)
                })?,
            Value::Unit
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Str(_)
            | Value::Bytes(_)
            | Value::Variant(_)
            | Value::Func(_)
            | Value::Handle(_) => {
                let found = describe(cur);
                let why = format!(
                    "{} is {found}, not an object or an array",
                    the_value_at(&prefix)
                );
                return Err(unresolved(found, why));
            }
        };
        push_token(&mut prefix, token);
        cur = next;
    }
    Ok(cur)
}

/// `token` as an array index: `0` or a decimal without a leading zero.
fn canonical_index(token: &str) -> Option<usize> {
    let canonical = token == "0"
        || (!token.starts_with('0')
            && !token.is_empty()
            && token.bytes().all(|b| b.is_ascii_digit()));
    if canonical {
        token.parse().ok()
    } else {
        None
    }
}

/// An object's keys for a message: `` `a`, `b` ``, at most 20 of them.
fn key_list(r: &Record) -> String {
    const SHOWN: usize = 20;
    if r.is_empty() {
        return "none (it is empty)".to_owned();
    }
    let mut out: Vec<String> = r.keys().take(SHOWN).map(|k| format!("`{k}`")).collect();
    if r.len() > SHOWN {
        out.push(format!("and {} more", r.len() - SHOWN));
    }
    out.join(", ")
}

fn decode_as(
    codec: &'static str,
    bytes: &[u8],
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Value, CodecError> {
    let src = super::text::utf8(codec, bytes)?;
    let mut p = Parser {
        codec,
        src,
        pos: 0,
        path: Vec::new(),
        go_on,
    };
    p.skip_ws();
    if p.peek().is_none() {
        return Err(p.syntax("a JSON value"));
    }
    let v = p.value()?;
    p.skip_ws();
    if p.peek().is_some() {
        return Err(p.syntax("the end of input after the value"));
    }
    Ok(v)
}

/// One step of the path from the root to where the parser is.
enum Seg {
    Index(usize),
    Key(String),
}

struct Parser<'a> {
    codec: &'static str,
    src: &'a str,
    pos: usize,
    path: Vec<Seg>,
    /// Asked once per value; decoding stops when it says no.
    go_on: &'a mut dyn FnMut() -> bool,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn pointer(&self) -> String {
        let mut out = String::new();
        for seg in &self.path {
            match seg {
                Seg::Index(i) => push_token(&mut out, &i.to_string()),
                Seg::Key(k) => push_token(&mut out, k),
            }
        }
        out
    }

    /// `line L, column C` of the current position (columns count
    /// characters), or just the column for one-line input.
    fn position(&self, at: usize) -> String {
        let before = self.src.get(..at).unwrap_or(self.src);
        let line = before.matches('\n').count() + 1;
        let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        if self.src.contains('\n') {
            format!("line {line}, column {col}")
        } else {
            format!("column {col}")
        }
    }

    /// What stands at `at`, for a message.
    fn found_at(&self, at: usize) -> String {
        match self.src.get(at..).and_then(|s| s.chars().next()) {
            None => "the end of input".to_owned(),
            Some(c) if c.is_control() => format!("the control character {:?}", c),
            Some(c) => format!("`{c}`"),
        }
    }

    fn error_at(&self, at: usize, kind: ErrorKind, found: String, what: &str) -> CodecError {
        let ptr = self.pointer();
        let inside = if ptr.is_empty() {
            String::new()
        } else {
            format!(" (inside `{ptr}`)")
        };
        CodecError::new(
            self.codec,
            kind,
            ptr,
            Some(found),
            format!("invalid JSON at {}{inside}: {what}", self.position(at)),
        )
    }

    fn syntax(&self, expected: &str) -> CodecError {
        let found = self.found_at(self.pos);
        let what = format!("expected {expected}, found {found}");
        self.error_at(self.pos, ErrorKind::Syntax, found, &what)
    }

    fn value(&mut self) -> Result<Value, CodecError> {
        if !(self.go_on)() {
            return Err(stopped(self.codec));
        }
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => Ok(Value::str(self.string()?)),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Unit),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) | None => Err(self.syntax("a JSON value")),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, CodecError> {
        if self
            .src
            .get(self.pos..)
            .is_some_and(|s| s.starts_with(word))
        {
            self.pos += word.len();
            Ok(v)
        } else {
            Err(self.syntax("a JSON value (`true`, `false` and `null` are lower case)"))
        }
    }

    fn enter(&self) -> Result<(), CodecError> {
        if self.path.len() >= MAX_DEPTH {
            let what = format!("arrays and objects nest deeper than {MAX_DEPTH} levels");
            return Err(self.error_at(self.pos, ErrorKind::Syntax, "deep nesting".into(), &what));
        }
        Ok(())
    }

    fn array(&mut self) -> Result<Value, CodecError> {
        self.enter()?;
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::list(items));
        }
        loop {
            self.skip_ws();
            self.path.push(Seg::Index(items.len()));
            let item = self.value();
            self.path.pop();
            items.push(item?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::list(items));
                }
                Some(_) | None => return Err(self.syntax("`,` or `]` after an array element")),
            }
        }
    }

    fn object(&mut self) -> Result<Value, CodecError> {
        self.enter()?;
        self.pos += 1;
        let mut entries: Vec<(String, Value)> = Vec::new();
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::record(Record::empty()));
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.syntax("a member name in double quotes"));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.peek() != Some(b':') {
                return Err(self.syntax("`:` after a member name"));
            }
            self.pos += 1;
            self.skip_ws();
            self.path.push(Seg::Key(key));
            let v = self.value();
            let key = match self.path.pop() {
                Some(Seg::Key(k)) => k,
                Some(Seg::Index(_)) | None => String::new(),
            };
            entries.push((key, v?));
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                Some(_) | None => return Err(self.syntax("`,` or `}` after an object member")),
            }
        }
        // Stable: the first of two equal keys stays first.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = entries
            .windows(2)
            .find(|w| matches!(w, [a, b] if a.0 == b.0))
        {
            let key = w.first().map(|e| e.0.clone()).unwrap_or_default();
            let here = self.pointer();
            let mut at = here.clone();
            push_token(&mut at, &key);
            return Err(CodecError::new(
                self.codec,
                ErrorKind::Duplicate,
                at,
                Some(format!("the key `{key}` twice")),
                format!(
                    "the object at `{here}` has the key `{key}` more than once; \
                     JSON leaves its meaning open, so ral refuses it rather than pick one"
                ),
            ));
        }
        Ok(Value::record(Record::from_entries(entries)))
    }

    fn hex4(&mut self) -> Result<u32, CodecError> {
        let digits = self.src.get(self.pos..self.pos + 4);
        match digits.and_then(|d| {
            d.bytes()
                .all(|b| b.is_ascii_hexdigit())
                .then(|| u32::from_str_radix(d, 16).ok())
                .flatten()
        }) {
            Some(n) => {
                self.pos += 4;
                Ok(n)
            }
            None => Err(self.syntax("four hexadecimal digits after `\\u`")),
        }
    }

    fn string(&mut self) -> Result<String, CodecError> {
        let start = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run = self.pos;
            while matches!(self.peek(), Some(b) if b != b'"' && b != b'\\' && b >= 0x20) {
                self.pos += 1;
            }
            out.push_str(self.src.get(run..self.pos).unwrap_or_default());
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let esc = self.pos;
                    self.pos += 1;
                    let c = self.peek();
                    self.pos += 1;
                    match c {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{8}'),
                        Some(b'f') => out.push('\u{c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => out.push(self.unicode_escape(esc)?),
                        Some(_) | None => {
                            self.pos = esc + 1;
                            return Err(self.syntax(
                                "an escape (`\\\"`, `\\\\`, `\\/`, `\\b`, `\\f`, `\\n`, `\\r`, `\\t` or `\\uXXXX`)",
                            ));
                        }
                    }
                }
                Some(_) => {
                    return Err(self.syntax(
                        "a string character (control characters must be escaped, as `\\n`)",
                    ))
                }
                None => {
                    let found = self.found_at(self.pos);
                    let what = format!(
                        "the string opened at {} is not closed",
                        self.position(start)
                    );
                    return Err(self.error_at(self.pos, ErrorKind::Syntax, found, &what));
                }
            }
        }
    }

    /// After `\u`: one escape, or a surrogate pair of them.
    fn unicode_escape(&mut self, esc: usize) -> Result<char, CodecError> {
        let hi = self.hex4()?;
        let code = if (0xD800..0xDC00).contains(&hi) {
            let pair = self
                .src
                .get(self.pos..)
                .is_some_and(|s| s.starts_with("\\u"));
            let lo = if pair {
                self.pos += 2;
                self.hex4()?
            } else {
                0
            };
            if !(0xDC00..0xE000).contains(&lo) {
                return Err(self.lone_surrogate(esc, hi));
            }
            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
        } else {
            hi
        };
        char::from_u32(code).ok_or_else(|| self.lone_surrogate(esc, hi))
    }

    fn lone_surrogate(&self, esc: usize, unit: u32) -> CodecError {
        let found = format!("`\\u{unit:04x}`");
        let what = format!(
            "{found} is a lone UTF-16 surrogate, which is not a character; \
             a String holds only valid Unicode text"
        );
        self.error_at(esc, ErrorKind::Syntax, found, &what)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<Value, CodecError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = self.digits();
        if n == 0 {
            return Err(self.syntax("a digit"));
        }
        if n > 1 && self.src.as_bytes().get(int_start) == Some(&b'0') {
            let found = self.found_at(int_start);
            let what = "a JSON number may not have a leading zero";
            return Err(self.error_at(int_start, ErrorKind::Syntax, found, what));
        }
        let mut float = false;
        if self.peek() == Some(b'.') {
            float = true;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.syntax("a digit after the decimal point"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            float = true;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.syntax("a digit in the exponent"));
            }
        }
        let text = self.src.get(start..self.pos).unwrap_or_default();
        let range = |this: &Self, what: String| {
            this.error_at(
                start,
                ErrorKind::NumberRange,
                format!("the number `{text}`"),
                &what,
            )
        };
        if float {
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(Value::Float(x)),
                Ok(_) | Err(_) => Err(range(
                    self,
                    format!("the number `{text}` is too large for a Float"),
                )),
            }
        } else {
            text.parse::<i64>().map(Value::Int).map_err(|_| {
                range(
                    self,
                    format!(
                        "the whole number `{text}` is outside the Int range ({} to {}); \
                         ral does not round it to a Float (write it as a JSON string to keep \
                         its digits)",
                        i64::MIN,
                        i64::MAX
                    ),
                )
            })
        }
    }
}

// ---------------------------------------------------------------------------
// Encoding

/// `to-json`: the value as compact UTF-8 JSON (see the module docs).
pub fn encode_json(value: &Value) -> Result<Vec<u8>, CodecError> {
    encode_json_while(value, &mut || true)
}

/// [`encode_json`] asking `go_on` once per value it writes (see
/// [`decode_json_while`]).
pub fn encode_json_while(
    value: &Value,
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Vec<u8>, CodecError> {
    let mut out = String::new();
    let mut ptr = String::new();
    write_json(&mut out, value, &mut ptr, "to-json", go_on)?;
    Ok(out.into_bytes())
}

/// `to-jsonl`: each element of a list as `to-json` encodes it, followed by
/// an `LF`. If any element is refused, nothing is returned and the error
/// names its index.
pub fn encode_jsonl(value: &Value) -> Result<Vec<u8>, CodecError> {
    encode_jsonl_while(value, &mut || true)
}

/// [`encode_jsonl`] asking `go_on` (see [`decode_json_while`]).
pub fn encode_jsonl_while(
    value: &Value,
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Vec<u8>, CodecError> {
    let Value::List(items) = value else {
        return Err(CodecError::new(
            "to-jsonl",
            ErrorKind::Unrepresentable,
            String::new(),
            Some(describe(value)),
            format!("expected a list, got {}", describe(value)),
        ));
    };
    let mut out = String::new();
    let mut ptr = String::new();
    for (i, item) in items.iter().enumerate() {
        ptr.clear();
        write_json(&mut out, item, &mut ptr, "to-jsonl", go_on)
            .map_err(|e| e.within(Within::Element(i)))?;
        out.push('\n');
    }
    Ok(out.into_bytes())
}

fn write_json(
    out: &mut String,
    value: &Value,
    ptr: &mut String,
    codec: &'static str,
    go_on: &mut dyn FnMut() -> bool,
) -> Result<(), CodecError> {
    if !go_on() {
        return Err(stopped(codec));
    }
    let refuse = |ptr: &str, why: &str| {
        let found = describe(value);
        CodecError::new(
            codec,
            ErrorKind::Unrepresentable,
            ptr.to_owned(),
            Some(found.clone()),
            format!("{} is {found}, {why}", the_value_at(ptr)),
        )
    };
    match value {
        Value::Unit => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => write_int(out, *n),
        Value::Float(x) => {
            if !x.is_finite() {
                return Err(refuse(ptr, "which JSON cannot represent"));
            }
            write_float(out, *x);
        }
        Value::Str(s) => write_string(out, s),
        Value::Bytes(b) => {
            out.push('[');
            for (i, byte) in b.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_int(out, i64::from(*byte));
            }
            out.push(']');
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                let len = ptr.len();
                push_token(ptr, &i.to_string());
                write_json(out, item, ptr, codec, go_on)?;
                ptr.truncate(len);
            }
            out.push(']');
        }
        Value::Record(r) => {
            out.push('{');
            for (i, (k, v)) in r.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                let len = ptr.len();
                push_token(ptr, k);
                write_json(out, v, ptr, codec, go_on)?;
                ptr.truncate(len);
            }
            out.push('}');
        }
        Value::Variant(v) => {
            out.push_str("{\"");
            out.push_str(TAG_KEY);
            out.push_str("\":");
            write_string(out, &v.tag);
            if let Some(payload) = &v.payload {
                out.push_str(",\"");
                out.push_str(PAYLOAD_KEY);
                out.push_str("\":");
                let len = ptr.len();
                push_token(ptr, PAYLOAD_KEY);
                write_json(out, payload, ptr, codec, go_on)?;
                ptr.truncate(len);
            }
            out.push('}');
        }
        Value::Func(_) | Value::Handle(_) => {
            return Err(refuse(
                ptr,
                "which has no faithful JSON representation (JSON carries data only)",
            ))
        }
    }
    Ok(())
}

/// The error of a codec whose `go_on` said no; the caller reports its own
/// reason instead.
fn stopped(codec: &'static str) -> CodecError {
    CodecError::new(
        codec,
        ErrorKind::Unrepresentable,
        String::new(),
        None,
        "stopped".to_owned(),
    )
}

/// A JSON string literal for `s`.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    let mut run = 0;
    for (i, c) in s.char_indices() {
        let esc = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(s.get(run..i).unwrap_or_default());
        if esc.is_empty() {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push_str(esc);
        }
        run = i + c.len_utf8();
    }
    out.push_str(s.get(run..).unwrap_or_default());
    out.push('"');
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
