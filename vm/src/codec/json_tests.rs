//! Tests of the JSON codec.

use super::*;
use crate::value::{Func, Handle};
use proptest::prelude::*;
use std::sync::Arc;

fn rec(entries: &[(&str, Value)]) -> Value {
    Value::record(Record::from_entries(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    ))
}

fn dec(s: &str) -> Value {
    match decode_json(s.as_bytes()) {
        Ok(v) => v,
        Err(e) => panic!("{s}: {e}"),
    }
}

fn err(s: &str) -> CodecError {
    match decode_json(s.as_bytes()) {
        Ok(v) => panic!("{s} decoded to {v:?}"),
        Err(e) => e,
    }
}

fn enc(v: &Value) -> String {
    match encode_json(v) {
        Ok(b) => String::from_utf8(b).unwrap_or_default(),
        Err(e) => panic!("{v:?}: {e}"),
    }
}

fn lambda() -> Value {
    Value::Func(Arc::new(Func::Closure {
        proto: 0,
        captures: Box::new([]),
        params: Arc::from(vec!["x".to_owned()]),
    }))
}

#[test]
fn scalars() {
    assert_eq!(dec("null"), Value::Unit);
    assert_eq!(dec(" true "), Value::Bool(true));
    assert_eq!(dec("false"), Value::Bool(false));
    assert_eq!(
        dec("\"a\\u00e9\\ud83d\\ude00\\n\\/\""),
        Value::str("aé😀\n/")
    );
}

#[test]
fn numbers_keep_their_kind() {
    assert_eq!(dec("3"), Value::Int(3));
    assert_eq!(dec("-0"), Value::Int(0));
    assert_eq!(dec("2.5"), Value::Float(2.5));
    assert_eq!(dec("3.0"), Value::Float(3.0));
    assert_eq!(dec("1e2"), Value::Float(100.0));
    assert_eq!(dec("1E-2"), Value::Float(0.01));
    assert_eq!(dec("9223372036854775807"), Value::Int(i64::MAX));
    assert_eq!(dec("-9223372036854775808"), Value::Int(i64::MIN));
    let e = err("{\"n\": 9223372036854775808}");
    assert_eq!(e.kind, ErrorKind::NumberRange);
    assert_eq!(e.pointer, "/n");
    assert!(e.message.contains("outside the Int range"), "{e}");
    assert_eq!(err("1e400").kind, ErrorKind::NumberRange);
    for bad in ["01", "-", "1.", ".5", "+1", "1e", "0x10", "NaN", "Infinity"] {
        assert_eq!(err(bad).kind, ErrorKind::Syntax, "{bad}");
    }
    if let Value::Float(z) = dec("-0.0") {
        assert!(z.is_sign_negative());
    } else {
        panic!("-0.0 is not a Float");
    }
}

#[test]
fn objects_sort_keys_and_refuse_duplicates() {
    let v = dec(r#"{"b": [1, {"c": null}], "a": "x"}"#);
    assert_eq!(
        v,
        rec(&[
            ("a", Value::str("x")),
            (
                "b",
                Value::list(vec![Value::Int(1), rec(&[("c", Value::Unit)])])
            )
        ])
    );
    let e = err(r#"{"a": {"k": 1, "j": 2, "k": 3}}"#);
    assert_eq!(e.kind, ErrorKind::Duplicate);
    assert_eq!(e.pointer, "/a/k");
    assert!(
        e.message.contains("the object at `/a` has the key `k`"),
        "{e}"
    );
    assert_eq!(dec("{}"), Value::record(Record::empty()));
    assert_eq!(dec("[]"), Value::list(vec![]));
}

#[test]
fn syntax_errors_say_where() {
    let e = err("{\"a\": [1, 2,]}");
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.pointer, "/a/2");
    assert_eq!(
        e.to_string(),
        "from-json: invalid JSON at column 13 (inside `/a/2`): expected a JSON value, found `]`"
    );
    let e = err("{\n  \"a\": tru\n}");
    assert!(
        e.message.starts_with("invalid JSON at line 2, column 8"),
        "{e}"
    );
    assert!(err("").message.contains("found the end of input"));
    assert!(err("1 2").message.contains("expected the end of input"));
    assert!(err("\"abc").message.contains("not closed"));
    assert!(err("\"a\nb\"").message.contains("control characters"));
    assert!(err("\"\\ud800\"").message.contains("lone UTF-16 surrogate"));
    assert!(err("\"\\udc00x\"")
        .message
        .contains("lone UTF-16 surrogate"));
    assert!(err("\"\\q\"").message.contains("expected an escape"));
    assert_eq!(err("\u{feff}1").kind, ErrorKind::Syntax);
    assert_eq!(
        decode_json(b"\"\xff\"").err().map(|e| e.kind),
        Some(ErrorKind::Utf8)
    );
    let deep = "[".repeat(MAX_DEPTH + 1);
    assert!(err(&deep).message.contains("nest deeper"));
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(decode_json(ok.as_bytes()).is_ok());
}

#[test]
fn encoding() {
    assert_eq!(enc(&Value::Unit), "null");
    assert_eq!(enc(&Value::Float(3.0)), "3.0");
    assert_eq!(enc(&Value::Float(1e300)), "1.0e300");
    assert_eq!(enc(&Value::Float(-0.0)), "-0.0");
    assert_eq!(enc(&Value::Float(0.1)), "0.1");
    assert_eq!(enc(&Value::Int(-7)), "-7");
    assert_eq!(enc(&Value::str("q\"\\\n\t\u{1}é")), r#""q\"\\\n\t\u0001é""#);
    assert_eq!(enc(&Value::bytes(vec![0, 255])), "[0,255]");
    assert_eq!(
        enc(&rec(&[
            ("b", Value::Bool(true)),
            ("a", Value::list(vec![]))
        ])),
        r#"{"a":[],"b":true}"#
    );
    assert_eq!(enc(&Value::variant("none", None)), r#"{"tag":"none"}"#);
    assert_eq!(
        enc(&Value::variant("ok", Some(Value::Int(42)))),
        r#"{"tag":"ok","payload":42}"#
    );
    assert_eq!(
        enc(&Value::variant("none", Some(Value::Unit))),
        r#"{"tag":"none","payload":null}"#
    );
}

#[test]
fn a_tagged_object_decodes_to_a_record() {
    let v = Value::variant("ok", Some(Value::Int(1)));
    let back = decode_json(&encode_json(&v).unwrap_or_default());
    assert_eq!(
        back,
        Ok(rec(&[
            ("payload", Value::Int(1)),
            ("tag", Value::str("ok"))
        ]))
    );
}

#[test]
fn functions_and_handles_are_refused_by_pointer() {
    let v = rec(&[("a", Value::list(vec![Value::Int(1), lambda()]))]);
    let Err(e) = encode_json(&v) else {
        panic!("encoded a function")
    };
    assert_eq!(e.pointer, "/a/1");
    assert_eq!(e.kind, ErrorKind::Unrepresentable);
    assert_eq!(e.found.as_deref(), Some("a function (`<|x| block>`)"));
    assert!(
        e.to_string()
            .starts_with("to-json: the value at `/a/1` is a function (`<|x| block>`), which has"),
        "{e}"
    );
    let h = Value::Handle(Arc::new(Handle {
        id: 3,
        state: Box::new(()),
    }));
    let v = Value::variant("w", Some(rec(&[("a/b", h)])));
    assert_eq!(
        encode_json(&v).err().map(|e| e.pointer),
        Some("/payload/a~1b".into())
    );
    assert!(encode_json(&Value::Float(f64::NAN)).is_err());
}

#[test]
fn jsonl() {
    let input = b"{\"a\": 1}\r\n  \t\r\n\n[2]\n3";
    assert_eq!(
        decode_jsonl(input),
        Ok(Value::list(vec![
            rec(&[("a", Value::Int(1))]),
            Value::list(vec![Value::Int(2)]),
            Value::Int(3)
        ]))
    );
    assert_eq!(decode_jsonl(b""), Ok(Value::list(vec![])));
    let Err(e) = decode_jsonl(b"1\n\n{\"a\": x}\n") else {
        panic!("accepted bad JSON")
    };
    assert_eq!(e.within, Some(Within::Line(3)));
    assert!(
        e.to_string()
            .starts_with("from-jsonl: line 3: invalid JSON at column 7 (inside `/a`)"),
        "{e}"
    );
    assert_eq!(
        decode_jsonl(b"1\n\xff\n").err().map(|e| (e.kind, e.within)),
        Some((ErrorKind::Utf8, Some(Within::Line(2))))
    );

    let xs = Value::list(vec![Value::Int(1), rec(&[("s", Value::str("x"))])]);
    assert_eq!(encode_jsonl(&xs), Ok(b"1\n{\"s\":\"x\"}\n".to_vec()));
    assert_eq!(encode_jsonl(&Value::list(vec![])), Ok(Vec::new()));
    let bad = Value::list(vec![Value::Int(1), Value::Int(2), rec(&[("f", lambda())])]);
    let Err(e) = encode_jsonl(&bad) else {
        panic!("encoded a function")
    };
    assert_eq!(e.within, Some(Within::Element(2)));
    assert!(
        e.to_string()
            .starts_with("to-jsonl: element 2: the value at `/f` is a function"),
        "{e}"
    );
    assert!(encode_jsonl(&Value::Int(1)).is_err());
}

#[test]
fn json_at() {
    let doc = br#"{"a": {"x": [10, 20, {"~/k": true}], "y": 2}, "": 0}"#;
    let at = |tokens: &[&str]| decode_json_at(doc, tokens);
    assert_eq!(at(&["a", "x", "1"]), Ok(Value::Int(20)));
    assert_eq!(at(&["a", "x", "2", "~/k"]), Ok(Value::Bool(true)));
    assert_eq!(at(&[""]), Ok(Value::Int(0)));
    assert!(matches!(at(&[]), Ok(Value::Record(_))));

    let e = at(&["a", "z"]).err();
    let e = e.as_ref();
    assert_eq!(e.map(|e| e.kind), Some(ErrorKind::Unresolved));
    assert_eq!(e.map(|e| e.pointer.as_str()), Some("/a"));
    assert_eq!(
        e.map(ToString::to_string).as_deref(),
        Some(
            "from-json-at: the reference token `z` does not resolve: the object at `/a` \
             has no key `z`; its keys are `x`, `y`"
        )
    );
    let e = at(&["a", "x", "3"]).err().map(|e| e.message);
    assert!(e.is_some_and(|m| m.contains("the array at `/a/x` has length 3")));
    for bad in ["01", "-1", "-", "+1", ""] {
        let e = at(&["a", "x", bad]).err().map(|e| e.message);
        assert!(e.is_some_and(|m| m.contains("canonical")), "{bad}");
    }
    let e = at(&["a", "y", "q"]).err();
    assert_eq!(e.as_ref().map(|e| e.pointer.as_str()), Some("/a/y"));
    assert!(e.is_some_and(|e| e
        .message
        .contains("is an Int (`2`), not an object or an array")));
}

/// JSON-representable values: no variants, bytes, functions or handles,
/// finite floats only.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Unit),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(Value::Float),
        any::<String>().prop_map(Value::str),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| { Value::record(Record::from_entries(m.into_iter().collect())) }),
        ]
    })
}

proptest! {
    #[test]
    fn json_round_trip(v in json_value()) {
        let bytes = encode_json(&v);
        prop_assert!(bytes.is_ok());
        let bytes = bytes.unwrap_or_default();
        prop_assert_eq!(decode_json(&bytes), Ok(v.clone()));
        let mut line = bytes.clone();
        line.push(b'\n');
        prop_assert_eq!(decode_jsonl(&line), Ok(Value::list(vec![v])));
    }

    #[test]
    fn floats_read_back_exactly(x in any::<f64>().prop_filter("finite", |x| x.is_finite())) {
        let bytes = encode_json(&Value::Float(x)).unwrap_or_default();
        match decode_json(&bytes) {
            Ok(Value::Float(y)) => prop_assert_eq!(x.to_bits(), y.to_bits()),
            other => prop_assert!(false, "{:?}", other),
        }
    }

    #[test]
    fn decoding_never_panics(s in any::<Vec<u8>>()) {
        let _ = decode_json(&s);
        let _ = decode_jsonl(&s);
    }

    #[test]
    fn decoding_json_like_text_never_panics(s in "[\\[\\]{}\",:0-9eE.+\\-tfnrul\\\\ \n\r]{0,40}") {
        let _ = decode_json(s.as_bytes());
        let _ = decode_jsonl(s.as_bytes());
        let _ = decode_json_at(s.as_bytes(), &["0", "a"]);
    }
}
