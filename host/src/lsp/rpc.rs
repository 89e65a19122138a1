//! The wire: JSON-RPC 2.0 messages in the Language Server Protocol's
//! framing (`Content-Length: N\r\n\r\n` then N bytes of JSON), read so that
//! no input can end the server.
//!
//! [`Framer`] cuts the byte stream into message bodies. Whatever does not
//! frame (a header line that is not one, a missing or absurd
//! `Content-Length`, a body cut short by the end of input) is reported as
//! [`Frame::Junk`] and skipped up to the next header. A `Content-Length`
//! larger than the body that follows is caught without waiting for bytes
//! that will never come: no valid JSON body contains a raw newline followed
//! by `Content-Length:` (a raw newline is whitespace outside a string and
//! illegal inside one, and `Content-Length` is not a JSON token), so seeing
//! one means the previous header lied, and reading resumes at the new one.
//!
//! [`classify`] turns a body into an [`Incoming`] message or the error reply
//! JSON-RPC prescribes: `-32700` for a body that is not JSON (invalid UTF-8
//! and a lone surrogate escape such as `"\ud800"` included), `-32600` for
//! JSON that is not a request, a notification or a response, with `id`
//! `null` when the id cannot be read.

use std::io::Read;

use serde_json::{json, Value};

/// The JSON-RPC error codes the server sends.
pub mod code {
    pub const PARSE_ERROR: i32 = -32700;
    pub const INVALID_REQUEST: i32 = -32600;
    pub const METHOD_NOT_FOUND: i32 = -32601;
    pub const INVALID_PARAMS: i32 = -32602;
    pub const INTERNAL_ERROR: i32 = -32603;
    pub const SERVER_NOT_INITIALIZED: i32 = -32002;
    pub const REQUEST_CANCELLED: i32 = -32800;
}

/// The largest header block read before it is judged junk.
const MAX_HEADER: usize = 8 * 1024;
/// The largest body accepted; a larger `Content-Length` is refused (a
/// 50,000-line script is about 2 MB).
pub const MAX_BODY: usize = 256 * 1024 * 1024;
/// How much is read from the input at once.
const CHUNK: usize = 64 * 1024;

/// One thing read from the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete message body (not yet known to be JSON).
    Body(Vec<u8>),
    /// Bytes that did not frame; they are skipped up to the next header.
    Junk(&'static str),
    /// The end of the input.
    Eof,
}

/// Cuts a byte stream into message bodies (see the module docs).
pub struct Framer<R> {
    input: R,
    buf: Vec<u8>,
    /// Where unread bytes start in `buf`.
    at: usize,
    eof: bool,
    /// Junk was reported and is being skipped.
    skipping: bool,
}

/// How far a body has been scanned for a header hidden in it.
#[derive(Default)]
struct BodyScan {
    at: usize,
    in_string: bool,
    escaped: bool,
}

impl<R: Read> Framer<R> {
    pub fn new(input: R) -> Framer<R> {
        Framer {
            input,
            buf: Vec::new(),
            at: 0,
            eof: false,
            skipping: false,
        }
    }

    /// The unread bytes.
    fn pending(&self) -> &[u8] {
        self.buf.get(self.at..).unwrap_or(&[])
    }

    /// Reads more input; false at the end of input (or a read error, which
    /// ends the input the same way).
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        if self.at > 0 && self.at * 2 >= self.buf.len() {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + CHUNK, 0);
        loop {
            let read = match self.buf.get_mut(old..) {
                Some(space) => self.input.read(space),
                None => Ok(0),
            };
            match read {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.buf.truncate(old + n);
                    return true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.buf.truncate(old);
                    self.eof = true;
                    return false;
                }
            }
        }
    }

    /// Skips `n` unread bytes.
    fn consume(&mut self, n: usize) {
        self.at = (self.at + n).min(self.buf.len());
    }

    /// The next frame.
    pub fn next_frame(&mut self) -> Frame {
        loop {
            if self.skipping && !self.skip_junk() {
                return Frame::Eof;
            }
            // Blank lines between messages are not junk.
            let blank = self
                .pending()
                .iter()
                .take_while(|b| matches!(b, b'\r' | b'\n'))
                .count();
            self.consume(blank);
            if self.pending().is_empty() {
                if !self.fill() {
                    return Frame::Eof;
                }
                continue;
            }
            match self.header() {
                Header::Length { header_len, body } => {
                    self.consume(header_len);
                    return self.body(body);
                }
                Header::Junk(why) => {
                    self.consume(1);
                    self.skipping = true;
                    return Frame::Junk(why);
                }
                Header::Eof => {
                    let rest = self.pending().len();
                    self.consume(rest);
                    return Frame::Junk("the input ended inside a header");
                }
            }
        }
    }

    /// Skips to the next `Content-Length:`, anywhere; false at the end of
    /// input.
    fn skip_junk(&mut self) -> bool {
        loop {
            let pending = self.pending();
            if let Some(at) = find_header_name(pending) {
                self.consume(at);
                self.skipping = false;
                return true;
            }
            // Keep a tail that may be the start of a header split across
            // reads.
            let drop = pending.len().saturating_sub(HEADER_NAME.len());
            self.consume(drop);
            if !self.fill() {
                let rest = self.pending().len();
                self.consume(rest);
                return false;
            }
        }
    }

    /// Reads the header block at the start of the unread bytes.
    fn header(&mut self) -> Header {
        loop {
            let pending = self.pending();
            let mut i = 0;
            while let Some(nl) = pending
                .get(i..)
                .and_then(|r| r.iter().position(|b| *b == b'\n'))
            {
                let line = pending.get(i..i + nl).unwrap_or(&[]);
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                if line.is_empty() {
                    return parse_header(pending.get(..i).unwrap_or(&[]), i + nl + 1);
                }
                if !is_header_line(line) {
                    return Header::Junk("a line that is not a header");
                }
                i += nl + 1;
            }
            // The partial line must still be able to become a header, so a
            // body sent without one is judged at once.
            if !could_be_header(pending.get(i..).unwrap_or(&[])) {
                return Header::Junk("a line that is not a header");
            }
            if pending.len() > MAX_HEADER {
                return Header::Junk("a header longer than 8 KiB");
            }
            if !self.fill() {
                return Header::Eof;
            }
        }
    }

    /// Reads a body of `len` bytes (the header consumed).
    fn body(&mut self, len: usize) -> Frame {
        let mut scan = BodyScan::default();
        loop {
            let pending = self.pending();
            let avail = pending.get(..pending.len().min(len)).unwrap_or(&[]);
            // A header where JSON cannot have one: the length was too large.
            if let Some(at) = hidden_header(avail, &mut scan, avail.len() == len) {
                self.consume(at);
                return Frame::Junk("a body shorter than its Content-Length");
            }
            if pending.len() >= len {
                let body = avail.to_vec();
                self.consume(len);
                return Frame::Body(body);
            }
            if !self.fill() {
                let rest = self.pending().len();
                self.consume(rest);
                return Frame::Junk("the input ended inside a body");
            }
        }
    }
}

/// What a header block said.
enum Header {
    Length { header_len: usize, body: usize },
    Junk(&'static str),
    Eof,
}

const HEADER_NAME: &[u8] = b"content-length:";

/// Whether `b` at `i` starts `Content-Length:` (any case).
fn header_name_at(b: &[u8], i: usize) -> bool {
    b.get(i..i + HEADER_NAME.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(HEADER_NAME))
}

/// The first `Content-Length:` in `b`, anywhere.
fn find_header_name(b: &[u8]) -> Option<usize> {
    (0..b.len()).find(|&i| header_name_at(b, i))
}

/// Continues scanning a body for `Content-Length:` outside a JSON string
/// (where valid JSON cannot have it); its offset when found. A raw newline
/// cannot be inside a string either, so it ends one: a body whose quotes
/// were damaged is read right again from its next line. `complete` says
/// `b` is the whole body, so its last bytes need not wait for more.
fn hidden_header(b: &[u8], scan: &mut BodyScan, complete: bool) -> Option<usize> {
    while let Some(&c) = b.get(scan.at) {
        if scan.in_string {
            match c {
                _ if scan.escaped => scan.escaped = false,
                b'\\' => scan.escaped = true,
                b'"' => scan.in_string = false,
                b'\n' => scan.in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => scan.in_string = true,
                b'c' | b'C' => {
                    if b.len() < scan.at + HEADER_NAME.len() && !complete {
                        // Wait for the bytes that decide it.
                        return None;
                    }
                    if header_name_at(b, scan.at) {
                        return Some(scan.at);
                    }
                }
                _ => {}
            }
        }
        scan.at += 1;
    }
    None
}

/// Whether `line` (without its newline) reads as `Name: value`.
fn is_header_line(line: &[u8]) -> bool {
    match line.iter().position(|b| *b == b':') {
        Some(colon) => colon > 0 && line.get(..colon).is_some_and(|n| n.iter().all(is_token)),
        None => false,
    }
}

/// Whether an unfinished line can still become a header line.
fn could_be_header(partial: &[u8]) -> bool {
    let name = match partial.iter().position(|b| *b == b':') {
        Some(colon) => partial.get(..colon).unwrap_or(&[]),
        None => partial,
    };
    name.iter().all(is_token) && (!name.is_empty() || partial.is_empty())
}

fn is_token(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'-'
}

/// Reads the header lines in `block`; `len` is the block's length with
/// the blank line that ends it.
fn parse_header(block: &[u8], len: usize) -> Header {
    let mut length = None;
    for line in block.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            continue;
        };
        let (name, value) = line.split_at(colon);
        let value = value.get(1..).unwrap_or(&[]).trim_ascii();
        if name.eq_ignore_ascii_case(b"content-length") {
            let n = std::str::from_utf8(value)
                .ok()
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<usize>().ok());
            match n {
                Some(n) if n > MAX_BODY => return Header::Junk("a Content-Length over 256 MiB"),
                Some(n) if length.is_none_or(|l| l == n) => length = Some(n),
                _ => return Header::Junk("a Content-Length that is not one number"),
            }
        }
    }
    match length {
        Some(body) => Header::Length {
            header_len: len,
            body,
        },
        None => Header::Junk("a header without Content-Length"),
    }
}

/// A request's id: an integer or a string, echoed back as it came.
pub type Id = Value;

/// A message read from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request of ours (the server sends none, so it is
    /// ignored).
    Response,
}

/// Reads one body: the message, or the error reply it earns.
pub fn classify(body: &[u8]) -> Result<Incoming, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        error(
            &Value::Null,
            code::PARSE_ERROR,
            &format!("parse error: {e}"),
        )
    })?;
    let Value::Object(mut obj) = v else {
        let what = if v.is_array() {
            "a batch (the protocol has none)"
        } else {
            "not an object"
        };
        return Err(error(
            &Value::Null,
            code::INVALID_REQUEST,
            &format!("invalid request: {what}"),
        ));
    };
    let id = match obj.remove("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            return Err(error(
                &Value::Null,
                code::INVALID_REQUEST,
                "invalid request: an id is an integer or a string",
            ))
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    let invalid = |why: &str| {
        error(
            &reply_id,
            code::INVALID_REQUEST,
            &format!("invalid request: {why}"),
        )
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) => m,
        Some(_) => return Err(invalid("`method` must be a string")),
        None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
            return Ok(Incoming::Response)
        }
        None => return Err(invalid("no `method`")),
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_))) => p,
        Some(_) => return Err(invalid("`params` must be an object or an array")),
    };
    Ok(match id {
        Some(id) => Incoming::Request { id, method, params },
        None => Incoming::Notification { method, params },
    })
}

/// An error response (serialised, as every outgoing message is: a large
/// answer is written straight from its typed form, never built as a tree
/// of JSON values first).
pub fn error(id: &Id, code: i32, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// A success response whose result is the JSON text `result`.
pub fn response(id: &Id, result: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{result}}}")
}

/// A notification from the server whose params are the JSON text `params`.
pub fn notification(method: &str, params: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":{},\"params\":{params}}}",
        Value::String(method.to_owned())
    )
}

/// Writes one framed message.
pub fn write_message(out: &mut impl std::io::Write, body: &str) -> std::io::Result<()> {
    write!(out, "Content-Length: {}\r\n\r\n", body.len())?;
    out.write_all(body.as_bytes())?;
    out.flush()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn frames(input: &[u8]) -> Vec<Frame> {
        let mut f = Framer::new(input);
        let mut out = Vec::new();
        loop {
            let frame = f.next_frame();
            let end = frame == Frame::Eof;
            out.push(frame);
            if end {
                return out;
            }
        }
    }

    fn msg(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    fn is_body(f: &Frame, want: &str) -> bool {
        matches!(f, Frame::Body(b) if b == want.as_bytes())
    }

    #[test]
    fn well_framed_messages() {
        let mut input = msg("{\"a\":1}");
        input.extend(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n");
        input.extend(msg("[]"));
        let f = frames(&input);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(is_body(&f[0], "{\"a\":1}"));
        assert!(is_body(&f[1], "[]"));
    }

    #[test]
    fn junk_before_a_message_is_skipped() {
        let mut input = b"hello there\r\nmore junk\r\n".to_vec();
        input.extend(msg("{}"));
        let f = frames(&input);
        assert!(matches!(f[0], Frame::Junk(_)), "{f:?}");
        assert!(is_body(&f[1], "{}"), "{f:?}");
        assert_eq!(f[2], Frame::Eof);
    }

    #[test]
    fn a_length_too_large_stops_at_the_next_header() {
        // Messages follow each other with no separator.
        let mut input = b"Content-Length: 5000\r\n\r\n{\"x\":\"Content-Length: 2\"}".to_vec();
        input.extend(msg("{\"y\":2}"));
        let f = frames(&input);
        assert!(matches!(f[0], Frame::Junk(_)), "{f:?}");
        assert!(is_body(&f[1], "{\"y\":2}"), "{f:?}");
        // A damaged quote hides at most the next header: a raw newline
        // ends the string.
        let mut input = b"Content-Length: 5000\r\n\r\n{\"x\":\"1}".to_vec();
        input.extend(msg("{\"y\":2}"));
        input.extend(msg("{\"z\":3}"));
        let f = frames(&input);
        assert!(matches!(f[0], Frame::Junk(_)), "{f:?}");
        assert!(is_body(&f[1], "{\"z\":3}"), "{f:?}");
        // A valid body mentioning the header in a string is whole.
        let f = frames(&msg("{\"t\":\"Content-Length: 3\"}"));
        assert!(is_body(&f[0], "{\"t\":\"Content-Length: 3\"}"), "{f:?}");
    }

    #[test]
    fn a_length_too_small_resyncs() {
        let mut input = b"Content-Length: 3\r\n\r\n{\"x\":1}".to_vec();
        input.extend(msg("{\"y\":2}"));
        let f = frames(&input);
        assert!(is_body(&f[0], "{\"x"), "{f:?}");
        assert!(matches!(f[1], Frame::Junk(_)), "{f:?}");
        assert!(is_body(&f[2], "{\"y\":2}"), "{f:?}");
    }

    #[test]
    fn a_body_without_a_header_is_junk_at_once() {
        // The reader must not wait for a newline that never comes.
        let (r, mut w) = std::io::pipe().unwrap();
        std::io::Write::write_all(&mut w, b"{\"jsonrpc\":\"2.0\"}").unwrap();
        let mut f = Framer::new(r);
        assert!(matches!(f.next_frame(), Frame::Junk(_)));
        std::io::Write::write_all(&mut w, &msg("{}")).unwrap();
        drop(w);
        assert!(is_body(&f.next_frame(), "{}"));
        assert_eq!(f.next_frame(), Frame::Eof);
    }

    #[test]
    fn absurd_and_missing_lengths() {
        for bad in [
            "Content-Length: 99999999999999999999\r\n\r\n",
            "Content-Length: -4\r\n\r\n",
            "Content-Length: 4 4\r\n\r\n",
            "Content-Type: x\r\n\r\n",
        ] {
            let mut input = bad.as_bytes().to_vec();
            input.extend(msg("{}"));
            let f = frames(&input);
            assert!(matches!(f[0], Frame::Junk(_)), "{bad:?}: {f:?}");
            assert!(is_body(&f[1], "{}"), "{bad:?}: {f:?}");
        }
    }

    #[test]
    fn the_end_of_input_inside_a_message() {
        let f = frames(b"Content-Length: 10\r\n\r\n{\"a\"");
        assert!(matches!(f[0], Frame::Junk(_)), "{f:?}");
        assert_eq!(f[1], Frame::Eof);
        let f = frames(b"Content-Len");
        assert!(matches!(f[0], Frame::Junk(_)), "{f:?}");
    }

    #[test]
    fn bodies_are_classified() {
        let ok = classify(br#"{"jsonrpc":"2.0","id":3,"method":"hover","params":{}}"#).unwrap();
        assert!(matches!(ok, Incoming::Request { ref method, .. } if method == "hover"));
        let n = classify(br#"{"jsonrpc":"2.0","method":"exit"}"#).unwrap();
        assert!(matches!(
            n,
            Incoming::Notification {
                params: Value::Null,
                ..
            }
        ));
        let code_of = |b: &[u8]| {
            let e: Value = serde_json::from_str(&classify(b).unwrap_err()).unwrap();
            (e["error"]["code"].as_i64().unwrap(), e["id"].clone())
        };
        assert_eq!(code_of(b"{not json"), (-32700, Value::Null));
        assert_eq!(
            code_of(b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}"),
            (-32700, Value::Null)
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","method":"\ud800"}"#),
            (-32700, Value::Null)
        );
        assert_eq!(code_of(b"[1]"), (-32600, Value::Null));
        assert_eq!(code_of(b"7"), (-32600, Value::Null));
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":1.5,"method":"a"}"#),
            (-32600, Value::Null)
        );
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":4,"method":7}"#),
            (-32600, json!(4))
        );
        assert_eq!(code_of(br#"{"id":4,"method":"a"}"#), (-32600, json!(4)));
        assert_eq!(
            code_of(br#"{"jsonrpc":"2.0","id":"k","method":"a","params":3}"#),
            (-32600, json!("k"))
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":9,"result":null}"#).unwrap(),
            Incoming::Response
        );
    }
}
