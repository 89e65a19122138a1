//! CSV (§7.3): `from-csv`, `to-csv`.
//!
//! Written here rather than with the `csv` crate: the dialect needed is
//! small (RFC 4180 plus the line rule), the crate is not in the lockfile,
//! and its lenient defaults (a stray quote inside an unquoted field is
//! kept, ragged rows are an option) would each need turning off, while this
//! codec must refuse them with the line and the pointer.
//!
//! # Decoding
//!
//! - The input is strict UTF-8. A record ends at `LF` or `CRLF`, as in the
//!   line rule; a lone `CR` is text, and the last record need not be
//!   terminated. No other bytes are changed: no trimming, no BOM removal.
//! - Fields are separated by `,`. A field that starts with `"` is quoted:
//!   it runs to the next lone `"`, a doubled `""` stands for one `"`, and
//!   commas, `CR` and `LF` inside it are kept verbatim. After the closing
//!   quote comes `,`, a record end, or the end of input. A `"` inside an
//!   unquoted field is refused (it is almost always a mangled file).
//! - The first record is the header; a repeated header name is refused. An
//!   input with no records decodes to `[]`.
//! - A blank line (an empty record, unquoted) holds no record; `""` on its
//!   own line is a record with one empty field.
//! - Every other record must have as many fields as the header, and becomes
//!   a map from header name to `String`. Every map of one decode shares one
//!   key array.
//!
//! Errors name the 1-based line a record starts on and, where a value is
//! concerned, the pointer into the result (`/2` is the third map).
//!
//! # Encoding
//!
//! A list of maps of text. The columns are the first map's keys in sorted
//! order (the order every map iterates in); every map must have exactly
//! those keys and only `String` values, or nothing is written and the error
//! names the element and key. The header and each record end in `LF`. A
//! field is quoted when it holds `,`, `"`, `CR` or `LF`, or when it is the
//! only column and empty (a blank line would hold no record), with `"`
//! doubled. `to-csv []` writes nothing; a first map with no keys is
//! refused, having no columns. `from-csv` inverts `to-csv`.

use super::{describe, push_token, CodecError, ErrorKind, Within};
use crate::value::{Keys, Record, Value};

const FROM: &str = "from-csv";
const TO: &str = "to-csv";

/// One parsed record: the line it starts on and its fields.
struct Row {
    line: usize,
    fields: Vec<String>,
    blank: bool,
}

fn syntax(line: usize, message: String) -> CodecError {
    CodecError::new(FROM, ErrorKind::Syntax, String::new(), None, message)
        .within(Within::Line(line))
}

/// Splits `src` into records of fields, asking `go_on` once per record
/// (see [`decode_csv_while`]).
fn parse(src: &str, go_on: &mut dyn FnMut() -> bool) -> Result<Vec<Row>, CodecError> {
    let bytes = src.as_bytes();
    let text = |a: usize, b: usize| src.get(a..b).unwrap_or_default();
    let mut rows = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < bytes.len() {
        if !go_on() {
            return Err(CodecError::new(
                FROM,
                ErrorKind::Syntax,
                String::new(),
                None,
                "stopped".to_owned(),
            ));
        }
        let start_line = line;
        let mut fields = Vec::new();
        let mut quoted_any = false;
        loop {
            if bytes.get(i) == Some(&b'"') {
                quoted_any = true;
                let open_line = line;
                i += 1;
                let mut field = String::new();
                loop {
                    let Some(q) = bytes
                        .get(i..)
                        .and_then(|r| r.iter().position(|&b| b == b'"'))
                    else {
                        return Err(syntax(
                            open_line,
                            "a quoted field is not closed before the end of input".to_owned(),
                        ));
                    };
                    let part = text(i, i + q);
                    line += part.matches('\n').count();
                    field.push_str(part);
                    i += q + 1;
                    if bytes.get(i) == Some(&b'"') {
                        field.push('"');
                        i += 1;
                    } else {
                        break;
                    }
                }
                fields.push(field);
            } else {
                let end = bytes
                    .get(i..)
                    .and_then(|r| r.iter().position(|&b| b == b',' || b == b'\n'))
                    .map_or(bytes.len(), |n| i + n);
                let mut field = text(i, end);
                if bytes.get(end) == Some(&b'\n') {
                    field = field.strip_suffix('\r').unwrap_or(field);
                }
                if field.contains('"') {
                    return Err(syntax(
                        line,
                        format!(
                            "field {} has a `\"` but does not start with one; quote the whole \
                             field and double the quotes inside it",
                            fields.len() + 1
                        ),
                    ));
                }
                fields.push(field.to_owned());
                i = end;
            }
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b'\n') => {
                    i += 1;
                    line += 1;
                    break;
                }
                Some(b'\r') if bytes.get(i + 1) == Some(&b'\n') => {
                    i += 2;
                    line += 1;
                    break;
                }
                None => break,
                Some(_) => {
                    return Err(syntax(
                        line,
                        format!(
                            "field {} has text after its closing quote; expected `,` or the \
                             end of the line",
                            fields.len()
                        ),
                    ))
                }
            }
        }
        let blank =
            !quoted_any && fields.len() == 1 && fields.first().is_some_and(String::is_empty);
        rows.push(Row {
            line: start_line,
            fields,
            blank,
        });
    }
    Ok(rows)
}

/// `from-csv`: a list of maps from header name to `String`.
pub fn decode_csv(bytes: &[u8]) -> Result<Value, CodecError> {
    decode_csv_while(bytes, &mut || true)
}

/// [`decode_csv`] asking `go_on` once per record; when it says no,
/// decoding stops with an error the caller replaces by the reason it said
/// no (a builtin's cancellation, §8.10).
pub fn decode_csv_while(
    bytes: &[u8],
    go_on: &mut dyn FnMut() -> bool,
) -> Result<Value, CodecError> {
    let src = super::text::utf8(FROM, bytes)?;
    let mut rows = parse(src, go_on)?.into_iter().filter(|r| !r.blank);
    let Some(header) = rows.next() else {
        return Ok(Value::list(Vec::new()));
    };
    let names = header.fields;
    let mut sorted: Vec<usize> = (0..names.len()).collect();
    sorted.sort_by(|&a, &b| names.get(a).cmp(&names.get(b)));
    let dup = sorted.windows(2).find_map(|w| match w {
        [a, b] if names.get(*a) == names.get(*b) => names.get(*a),
        _ => None,
    });
    if let Some(name) = dup {
        let mut ptr = String::new();
        push_token(&mut ptr, name);
        return Err(CodecError::new(
            FROM,
            ErrorKind::Duplicate,
            ptr,
            Some(format!("the header `{name}` twice")),
            format!("the header names `{name}` more than once; map keys must be unique"),
        )
        .within(Within::Line(header.line)));
    }
    let keys = Keys::new(names.iter().cloned());
    let mut out = Vec::new();
    for row in rows {
        if row.fields.len() != names.len() {
            let mut ptr = String::new();
            push_token(&mut ptr, &out.len().to_string());
            return Err(CodecError::new(
                FROM,
                ErrorKind::Width,
                ptr,
                Some(format!("{} fields", row.fields.len())),
                format!(
                    "the record has {} fields, but the header (line {}) has {}",
                    row.fields.len(),
                    header.line,
                    names.len()
                ),
            )
            .within(Within::Line(row.line)));
        }
        let mut fields: Vec<Option<String>> = row.fields.into_iter().map(Some).collect();
        let vals = sorted
            .iter()
            .map(|&c| Value::str(fields.get_mut(c).and_then(Option::take).unwrap_or_default()))
            .collect();
        out.push(Value::record(Record::from_parts(keys.clone(), vals)));
    }
    Ok(Value::list(out))
}

fn refuse(i: Option<usize>, ptr: String, found: Option<String>, message: String) -> CodecError {
    let e = CodecError::new(TO, ErrorKind::Unrepresentable, ptr, found, message);
    match i {
        Some(i) => e.within(Within::Element(i)),
        None => e,
    }
}

/// `to-csv`: a list of maps of text as CSV (see the module docs).
pub fn encode_csv(value: &Value) -> Result<Vec<u8>, CodecError> {
    let Value::List(items) = value else {
        let found = describe(value);
        let message = format!("expected a list of maps of text, got {found}");
        return Err(refuse(None, String::new(), Some(found), message));
    };
    let mut out = String::new();
    let mut columns: Option<Keys> = None;
    for (i, item) in items.iter().enumerate() {
        let mut ptr = String::new();
        push_token(&mut ptr, &i.to_string());
        let Value::Record(r) = item else {
            let found = describe(item);
            let message = format!("expected a map of text, got {found}");
            return Err(refuse(Some(i), ptr, Some(found), message));
        };
        let cols = match &columns {
            Some(cols) => cols,
            None => {
                if r.is_empty() {
                    let message = "the first map has no keys, so there are no columns".to_owned();
                    return Err(refuse(Some(i), ptr, None, message));
                }
                let names: Vec<&str> = r.keys().map(|k| k.as_str()).collect();
                write_record(&mut out, &names);
                columns.insert(r.key_array())
            }
        };
        if let Some(extra) = r.keys().find(|k| cols.slot(k).is_none()) {
            let message = format!("the map has the key `{extra}`, which is not a column");
            return Err(refuse(Some(i), ptr, None, message));
        }
        let mut fields = Vec::with_capacity(cols.len());
        for col in cols.as_slice() {
            let mut at = ptr.clone();
            push_token(&mut at, col);
            match r.get(col) {
                Some(Value::Str(s)) => fields.push(s.as_str()),
                Some(v) => {
                    let found = describe(v);
                    let message = format!("the value at `{at}` is {found}, not text");
                    return Err(refuse(Some(i), at, Some(found), message));
                }
                None => {
                    let message = format!("the map has no key `{col}`, a column of the first map");
                    return Err(refuse(Some(i), ptr, None, message));
                }
            }
        }
        write_record(&mut out, &fields);
    }
    Ok(out.into_bytes())
}

fn write_record(out: &mut String, fields: &[&str]) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let quote = f.contains([',', '"', '\n', '\r']) || (fields.len() == 1 && f.is_empty());
        if quote {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn map(entries: &[(&str, &str)]) -> Value {
        Value::record(Record::from_entries(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::str(*v)))
                .collect(),
        ))
    }

    fn dec(s: &str) -> Value {
        match decode_csv(s.as_bytes()) {
            Ok(v) => v,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    fn err(s: &str) -> CodecError {
        match decode_csv(s.as_bytes()) {
            Ok(v) => panic!("{s:?} decoded to {v:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn decodes_header_keyed_maps() {
        assert_eq!(
            dec("name,age\r\nAda,36\nGrace,85"),
            Value::list(vec![
                map(&[("name", "Ada"), ("age", "36")]),
                map(&[("name", "Grace"), ("age", "85")]),
            ])
        );
        assert_eq!(dec(""), Value::list(vec![]));
        assert_eq!(dec("a,b\n"), Value::list(vec![]));
        assert_eq!(
            dec("a,b\n,\n"),
            Value::list(vec![map(&[("a", ""), ("b", "")])])
        );
    }

    #[test]
    fn quoted_fields() {
        assert_eq!(
            dec("a,b\n\"x, y\",\"say \"\"hi\"\"\"\n\"line\r\nbreak\",\"\"\n"),
            Value::list(vec![
                map(&[("a", "x, y"), ("b", "say \"hi\"")]),
                map(&[("a", "line\r\nbreak"), ("b", "")]),
            ])
        );
        assert_eq!(dec("a\n\n\"\"\n\n"), Value::list(vec![map(&[("a", "")])]));
        assert_eq!(dec("a\nx\r\n"), Value::list(vec![map(&[("a", "x")])]));
        assert_eq!(dec("a\nx\r"), Value::list(vec![map(&[("a", "x\r")])]));
    }

    #[test]
    fn refusals_name_the_line() {
        let e = err("a,b,a\n1,2,3\n");
        assert_eq!(
            (e.kind, e.within),
            (ErrorKind::Duplicate, Some(Within::Line(1)))
        );
        assert_eq!(
            e.to_string(),
            "from-csv: line 1: the header names `a` more than once; map keys must be unique"
        );
        let e = err("a,b\n1,2\n\"x\ny\",2\n3\n");
        assert_eq!(
            (e.kind, e.within),
            (ErrorKind::Width, Some(Within::Line(5)))
        );
        assert_eq!(e.pointer, "/2");
        let e = err("a\n\"open\n");
        assert_eq!(e.within, Some(Within::Line(2)));
        assert!(e.message.contains("not closed"));
        assert!(err("a\nx\"y\n").message.contains("does not start with one"));
        assert!(err("a\n\"x\"y\n")
            .message
            .contains("after its closing quote"));
        assert_eq!(
            decode_csv(b"a\n\xff\n").err().map(|e| e.kind),
            Some(ErrorKind::Utf8)
        );
    }

    #[test]
    fn encodes() {
        let rows = Value::list(vec![
            map(&[("b", "2"), ("a", "x,y")]),
            map(&[("a", "q\""), ("b", "l\nm")]),
        ]);
        let out = encode_csv(&rows);
        assert_eq!(
            out.as_deref(),
            Ok(&b"a,b\n\"x,y\",2\n\"q\"\"\",\"l\nm\"\n"[..])
        );
        assert_eq!(decode_csv(&out.unwrap_or_default()), Ok(rows));
        assert_eq!(encode_csv(&Value::list(vec![])), Ok(Vec::new()));
        let one = Value::list(vec![map(&[("", "")])]);
        let out = encode_csv(&one).unwrap_or_default();
        assert_eq!(out, b"\"\"\n\"\"\n");
        assert_eq!(decode_csv(&out), Ok(one));
    }

    #[test]
    fn encoding_refuses_ragged_or_non_text_rows() {
        let e = encode_csv(&Value::list(vec![map(&[("a", "1")]), map(&[("b", "2")])])).err();
        assert_eq!(e.as_ref().map(|e| e.within), Some(Some(Within::Element(1))));
        let e = encode_csv(&Value::list(vec![
            map(&[("a", "1"), ("b", "2")]),
            map(&[("a", "1")]),
        ]))
        .err();
        assert!(e.is_some_and(|e| e.message.contains("no key `b`")));
        let bad = Value::record(Record::from_entries(vec![("n".into(), Value::Int(1))]));
        let e = encode_csv(&Value::list(vec![bad])).err();
        assert_eq!(e.as_ref().map(|e| e.pointer.as_str()), Some("/0/n"));
        assert!(e.is_some_and(|e| e.message.contains("is an Int (`1`), not text")));
        assert!(encode_csv(&Value::list(vec![map(&[])])).is_err());
        assert!(encode_csv(&Value::Int(1)).is_err());
    }

    proptest! {
        #[test]
        fn csv_round_trip(
            cols in proptest::collection::btree_set("[a-z,\" \r\n]{0,4}", 1..4),
            cells in proptest::collection::vec("[a-z,\" \r\n]{0,4}", 0..12),
        ) {
            let cols: Vec<String> = cols.into_iter().collect();
            let rows: Vec<Value> = cells
                .chunks_exact(cols.len())
                .map(|c| Value::record(Record::from_entries(
                    cols.iter().cloned().zip(c.iter().map(|s| Value::str(s.as_str()))).collect(),
                )))
                .collect();
            let v = Value::list(rows);
            let out = encode_csv(&v);
            prop_assert!(out.is_ok());
            prop_assert_eq!(decode_csv(&out.unwrap_or_default()), Ok(v));
        }
    }
}
