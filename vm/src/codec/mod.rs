//! The explicit codecs of §7.3 as pure functions between bytes and
//! [`Value`]s.
//!
//! - [`json`]: `from-json`, `from-jsonl`, `from-json-at`, `to-json`,
//!   `to-jsonl`.
//! - [`lines`]: the one line rule (`from-lines`, `from-line`, `to-lines`,
//!   `to-line`, and capture's "remove at most one final terminator").
//! - [`csv`]: `from-csv`, `to-csv`.
//! - [`text`]: `from-string`, `from-bytes`, `to-string`.
//!
//! # The boundary with the VM
//!
//! Everything here is a pure function: a decoder takes the whole input as a
//! byte slice and returns a value or a [`CodecError`]; an encoder takes a
//! value and returns the whole output, so a refusal writes nothing. The
//! codecs never read a stream themselves. A decoder's *command form* reads
//! the preceding byte pipe or standard input (§7.3); that read, the 16 MiB
//! capture cap, and the admission of the decoded value against the type the
//! checker gave the boundary (§7.3 "Checked boundaries": the `…, but this
//! script uses it as an Int — line 3` half of a message) belong to the VM,
//! which calls these functions on the bytes it has read. So the decoders are
//! not in the builtin registry yet (`from-json` has arity 0: it takes its
//! input from the stream, not as an argument); the encoders, which take their
//! value as an argument and write through [`crate::Ctx::write`], are.
//!
//! # Errors
//!
//! A [`CodecError`] names the codec, an RFC 6901 pointer into the value (the
//! empty pointer is the whole value), what was found there, the input line
//! or list element when the codec works line by line or element by element,
//! and a message. It converts to a [`Failure`] with status 1 whose `cmd` is
//! the codec, so it displays as `from-json: the value at `/size` is …`.

use std::fmt;
use std::sync::Arc;

use crate::display::{render, RenderOptions};
use crate::failure::Failure;
use crate::value::Value;

pub mod csv;
pub mod json;
pub mod lines;
pub mod text;

/// What went wrong, for callers that branch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input is not valid UTF-8.
    Utf8,
    /// The input is not valid JSON or CSV.
    Syntax,
    /// A JSON whole number outside the `Int` range, or a number outside the
    /// finite `Float` range.
    NumberRange,
    /// A JSON object with a repeated key, or a CSV header with a repeated
    /// name.
    Duplicate,
    /// A CSV record whose field count differs from the header's.
    Width,
    /// A `from-json-at` reference token that does not resolve.
    Unresolved,
    /// A value with no faithful representation in the target format.
    Unrepresentable,
}

/// Where in a line- or element-wise input an error is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Within {
    /// The 1-based input line (`from-jsonl`, `from-csv`).
    Line(usize),
    /// The 0-based list element (`to-jsonl`, `to-csv`).
    Element(usize),
}

/// A codec failure. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecError {
    /// The codec's name, as the program spells it (`from-json`).
    pub codec: &'static str,
    /// What went wrong.
    pub kind: ErrorKind,
    /// An RFC 6901 pointer to the value concerned (`""` is the whole value).
    pub pointer: String,
    /// What was found there, for the message (`text (`'12kB'`)`).
    pub found: Option<String>,
    /// The input line or list element, for line- and element-wise codecs.
    pub within: Option<Within>,
    /// The full explanation, without the codec's name.
    pub message: String,
}

impl CodecError {
    pub(crate) fn new(
        codec: &'static str,
        kind: ErrorKind,
        pointer: String,
        found: Option<String>,
        message: String,
    ) -> CodecError {
        CodecError {
            codec,
            kind,
            pointer,
            found,
            within: None,
            message,
        }
    }

    /// This error, placed within a line or element. Keeps an inner place.
    pub fn within(mut self, place: Within) -> CodecError {
        if self.within.is_none() {
            self.within = Some(place);
        }
        self
    }

    /// This error, renamed to the codec that reported it (`from-jsonl`
    /// reports the `from-json` errors of its lines).
    pub fn as_codec(mut self, codec: &'static str) -> CodecError {
        self.codec = codec;
        self
    }

    /// The message with its place, without the codec's name.
    pub fn detail(&self) -> String {
        match self.within {
            Some(Within::Line(n)) => format!("line {n}: {}", self.message),
            Some(Within::Element(i)) => format!("element {i}: {}", self.message),
            None => self.message.clone(),
        }
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.codec, self.detail())
    }
}

impl std::error::Error for CodecError {}

impl From<CodecError> for Failure {
    fn from(e: CodecError) -> Failure {
        let cmd: Arc<str> = Arc::from(e.codec);
        Failure::error(e.detail()).with_cmd(&cmd)
    }
}

/// Appends one RFC 6901 reference token to `out`: `/`, then the token with
/// `~` written `~0` and `/` written `~1`.
pub fn push_token(out: &mut String, token: &str) {
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
}

/// The RFC 6901 pointer of a path of reference tokens.
pub fn pointer<S: AsRef<str>>(tokens: &[S]) -> String {
    let mut out = String::new();
    for t in tokens {
        push_token(&mut out, t.as_ref());
    }
    out
}

/// `the value at `/a/0`` or, for the empty pointer, `the top-level value`.
pub(crate) fn the_value_at(pointer: &str) -> String {
    if pointer.is_empty() {
        "the top-level value".to_owned()
    } else {
        format!("the value at `{pointer}`")
    }
}

/// The most characters of a value's rendering a message quotes.
const FOUND_CHARS: usize = 40;

/// What a value is, for a message: its kind and a short rendering, as in
/// ``text (`'12kB'`)``.
pub(crate) fn describe(value: &Value) -> String {
    let kind = match value {
        Value::Unit => "unit",
        Value::Bool(_) => "a Bool",
        Value::Int(_) => "an Int",
        Value::Float(_) => "a Float",
        Value::Str(_) => "text",
        Value::Bytes(_) => "bytes",
        Value::List(_) => "a list",
        Value::Record(_) => "a record or map",
        Value::Variant(_) => "a variant",
        Value::Func(_) => "a function",
        Value::Handle(_) => "a handle",
    };
    let opts = RenderOptions {
        width: usize::MAX,
        max_depth: 1,
        max_field_chars: FOUND_CHARS,
        ..RenderOptions::default()
    };
    let shown = render(value, &opts);
    let shown = if shown.chars().count() > FOUND_CHARS {
        let mut cut: String = shown.chars().take(FOUND_CHARS).collect();
        cut.push('…');
        cut
    } else {
        shown
    };
    format!("{kind} (`{shown}`)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_tilde_and_slash() {
        assert_eq!(pointer(&["a/b", "m~n", "", "0"]), "/a~1b/m~0n//0");
        assert_eq!(pointer::<&str>(&[]), "");
    }

    #[test]
    fn failure_has_status_one_and_names_the_codec() {
        let e = CodecError::new(
            "from-json",
            ErrorKind::Syntax,
            String::new(),
            None,
            "bad".into(),
        )
        .within(Within::Line(3));
        let f = Failure::from(e);
        assert_eq!(f.status, 1);
        assert_eq!(f.to_string(), "from-json: line 3: bad");
    }

    #[test]
    fn found_is_kind_and_short_rendering() {
        assert_eq!(describe(&Value::str("12kB")), "text (`'12kB'`)");
        let long = describe(&Value::str("x".repeat(100)));
        assert!(long.ends_with("…`)"), "{long}");
    }
}
