//! An incremental Server-Sent Events parser (the `text/event-stream`
//! framing both providers stream in).
//!
//! Bytes go in as they arrive, in chunks of any size; complete events come
//! out. Lines end at LF, CRLF or a lone CR; a blank line dispatches the
//! event; `data:` lines accumulate joined by LF; `event:` names the event;
//! lines starting with `:` are comments (keep-alives); other fields (`id`,
//! `retry`) are ignored. A line is decoded as UTF-8 only once it is
//! complete, so a multi-byte character split across chunks is whole.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` for the default `message` type.
    pub event: Option<String>,
    /// The `data:` lines joined with LF.
    pub data: String,
}

/// The parser state between chunks.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous chunk ended on CR: a following LF belongs to it.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// Ends the stream: an event whose blank line never came is dispatched
    /// (servers that close right after the last `data:` line).
    pub fn finish(&mut self) -> Option<SseEvent> {
        if !self.line.is_empty() {
            let mut out = Vec::new();
            self.end_line(&mut out);
        }
        self.dispatch()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.is_empty() {
            if let Some(ev) = self.dispatch() {
                out.push(ev);
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.feed(c));
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn events_split_anywhere_reassemble() {
        let text =
            "event: a\ndata: {\"x\":\"é\"}\n\n: ping\n\nevent: b\r\ndata: 1\r\ndata: 2\r\n\r\n";
        let whole = all(&[text.as_bytes()]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("a".into()),
                    data: "{\"x\":\"é\"}".into()
                },
                SseEvent {
                    event: Some("b".into()),
                    data: "1\n2".into()
                },
            ]
        );
        // Byte by byte, including through the two-byte é and the CRLFs.
        let bytes = text.as_bytes();
        let pieces: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(all(&pieces), whole);
    }

    #[test]
    fn lone_cr_ends_lines_and_a_missing_blank_line_still_dispatches() {
        assert_eq!(
            all(&[b"data: x\r\rdata: [DONE]"]),
            vec![
                SseEvent {
                    event: None,
                    data: "x".into()
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        assert_eq!(all(&[b": keepalive\nid: 4\nretry: 10\n\n"]), vec![]);
        assert_eq!(
            all(&[b"data\n\n"]),
            vec![SseEvent {
                event: None,
                data: String::new()
            }]
        );
    }
}
