//! A run's audit report as JSON (spec §13.4; our spec/audit.md).
//!
//! A host that asked for a run's trail ([`crate::TurnRequest::audit`]) gets
//! the observations in [`crate::TurnReport::Ran`]'s `trail`; this module
//! turns them, with the run's outcome, into the report a reader outside
//! ral consumes: `ral --audit` prints it, exarch logs parts of it.
//!
//! The projection is for reading, not for reading back: bytes become text
//! (invalid UTF-8 replaced), `()` and non-finite floats become `null`, a
//! variant becomes `{"tag": …, "payload": …}` (no `payload` when it has
//! none), records and maps become objects, and what has no data form (a
//! function, a handle) becomes a descriptive string.

use ral_vm::audit::{report, Observation};
pub use ral_vm::audit::{CheckObs, CommandObs, Origin, WriteMode, WriteObs, WriteOutcome};
use ral_vm::Value;
use serde_json::{Map, Number, Value as Json};

use crate::turn::Settled;

/// The value `v` as JSON, by the projection above.
pub fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Unit => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(n) => Json::Number(Number::from(*n)),
        Value::Float(f) => Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::Str(s) => Json::String(s.as_str().to_owned()),
        Value::Bytes(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::List(items) => Json::Array(items.iter().map(value_to_json).collect()),
        Value::Record(r) => Json::Object(
            r.iter()
                .map(|(k, v)| (k.as_str().to_owned(), value_to_json(v)))
                .collect::<Map<String, Json>>(),
        ),
        Value::Variant(var) => {
            let mut obj = Map::new();
            obj.insert("tag".to_owned(), Json::String(var.tag.to_string()));
            if let Some(p) = &var.payload {
                obj.insert("payload".to_owned(), value_to_json(p));
            }
            Json::Object(obj)
        }
        Value::Func(_) => Json::String(format!("<{}>", ral_vm::display::to_text(v))),
        Value::Handle(h) => Json::String(format!("<handle w{}>", h.id)),
    }
}

/// The run's outcome (§13.4): `` `ok `` of its value, `` `ok () `` for an
/// `exit` at the root (an escape, not a failure), `` `err `` of the error
/// record `try` would have received.
pub fn run_outcome(result: &Settled<Value>) -> Value {
    match result {
        Settled::Ok(v) => ral_vm::audit::outcome_ok(v.clone()),
        Settled::Exit(_) => ral_vm::audit::outcome_ok(Value::Unit),
        Settled::Failed(f) => ral_vm::audit::outcome_err(f),
    }
}

/// The whole report — `outcome` and `trail` — as JSON.
pub fn report_json(result: &Settled<Value>, trail: &[Observation]) -> Json {
    value_to_json(&report(run_outcome(result), trail))
}

/// One observation as JSON (what exarch keeps of each).
pub fn observation_json(o: &Observation) -> Json {
    value_to_json(&o.to_value())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use ral_vm::{Failure, Record};

    #[test]
    fn the_projection_favours_reading() {
        let v = Value::record(Record::from_entries(vec![
            ("b".into(), Value::bytes(vec![b'o', b'k', 0xff])),
            ("u".into(), Value::Unit),
            ("v".into(), Value::variant("none", None)),
            ("w".into(), Value::variant("just", Some(Value::Int(3)))),
            ("l".into(), Value::list(vec![Value::Float(1.5)])),
        ]));
        let j = value_to_json(&v);
        assert_eq!(j["b"], Json::String("ok\u{fffd}".into()));
        assert_eq!(j["u"], Json::Null);
        assert_eq!(j["v"], serde_json::json!({"tag": "none"}));
        assert_eq!(j["w"], serde_json::json!({"tag": "just", "payload": 3}));
        assert_eq!(j["l"], serde_json::json!([1.5]));
    }

    #[test]
    fn an_exit_at_the_root_is_ok_unit() {
        let j = report_json(&Settled::Exit(3), &[]);
        assert_eq!(
            j,
            serde_json::json!({"outcome": {"tag": "ok", "payload": null}, "trail": []})
        );
        let f = Failure::raised(4, "broke");
        let j = report_json(&Settled::Failed(f), &[]);
        assert_eq!(j["outcome"]["tag"], "err");
        assert_eq!(j["outcome"]["payload"]["status"], 4);
        assert_eq!(j["outcome"]["payload"]["message"], "broke");
        assert_eq!(j["outcome"]["payload"]["reason"]["tag"], "raised");
    }
}
