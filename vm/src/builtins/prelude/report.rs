//! Readers of an audit report (§13.3, §14): `commands` and `succeeded`.
//!
//! A report is `[outcome: <`ok a | `err Error>, trail: [Observation]]`;
//! the checker has fixed that shape, so what is checked here is only the
//! backstop behind it.

use super::super::{arg, wrong, Ctx};
use crate::failure::Failure;
use crate::value::Value;

/// The report argument and its `key` field.
fn field<'a>(args: &'a [Value], key: &str) -> Result<&'a Value, Failure> {
    let v = arg(args, 0)?;
    match v {
        Value::Record(r) => r.get(key).ok_or_else(|| wrong("an audit report", v)),
        other => Err(wrong("an audit report", other)),
    }
}

/// `commands report`: the payloads of the trail's `` `command ``
/// observations, in trail order.
pub fn commands(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let trail = match field(args, "trail")? {
        Value::List(items) => items,
        other => return Err(wrong("a trail list", other)),
    };
    let payloads = trail
        .iter()
        .filter_map(|obs| match obs {
            Value::Record(o) => match o.get("what") {
                Some(Value::Variant(w)) if &*w.tag == "command" => w.payload.clone(),
                _ => None,
            },
            _ => None,
        })
        .collect();
    Ok(Value::list(payloads))
}

/// `succeeded report`: whether the outcome is `` `ok ``.
pub fn succeeded(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    match field(args, "outcome")? {
        Value::Variant(v) => Ok(Value::Bool(&*v.tag == "ok")),
        other => Err(wrong("an outcome variant", other)),
    }
}
