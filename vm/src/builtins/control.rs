//! Failure (§8.5, §14.6): `fail`.

use super::{record_arg, Ctx};
use crate::failure::Failure;
use crate::value::Value;

/// `fail [status: n, message: m, …]`: raises a recoverable failure. `status`
/// must be a nonzero Int in the signed 32-bit exit-code range and `message`
/// a String; other fields are ignored, so `fail $err` re-raises a `try`
/// record. Misuse is itself a failure, with status 1, saying what is wrong.
pub fn fail(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let r = record_arg(args, 0)?;
    let status = match r.get("status") {
        Some(Value::Int(n)) => *n,
        Some(v) => {
            return Err(Failure::error(format!(
                "fail: `status` is {}, not an Int",
                v.kind_name()
            )))
        }
        None => return Err(Failure::error("fail: the record has no `status`")),
    };
    let message = match r.get("message") {
        Some(Value::Str(m)) => m,
        Some(v) => {
            return Err(Failure::error(format!(
                "fail: `message` is {}, not a String",
                v.kind_name()
            )))
        }
        None => return Err(Failure::error("fail: the record has no `message`")),
    };
    if status == 0 {
        return Err(Failure::error(
            "fail: status 0 is success; use `return` instead",
        ));
    }
    let status = i32::try_from(status).map_err(|_| {
        Failure::error(format!(
            "fail: status {status} is outside the exit-code range"
        ))
    })?;
    Err(Failure::raised(status, message.as_str()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, rec};
    use crate::failure::Reason;
    use crate::value::Value;

    #[test]
    fn raises_the_record() {
        let err = call(
            "fail",
            &[rec(&[
                ("status", Value::Int(7)),
                ("message", Value::str("unavailable")),
                ("extra", Value::Unit),
            ])],
        );
        let Err(f) = err else {
            panic!("fail succeeded")
        };
        assert_eq!(
            (f.status, f.message.as_str(), f.reason),
            (7, "unavailable", Reason::Raised)
        );
    }

    #[test]
    fn refuses_bad_records() {
        let msg = |entries: &[(&str, Value)]| match call("fail", &[rec(entries)]) {
            Err(f) => (f.status, f.message.clone()),
            Ok(v) => panic!("fail returned {v:?}"),
        };
        let m = || ("message", Value::str("m"));
        assert_eq!(msg(&[("status", Value::Int(0)), m()]).0, 1);
        assert!(msg(&[("status", Value::Int(0)), m()])
            .1
            .contains("status 0"));
        assert!(msg(&[m()]).1.contains("no `status`"));
        assert!(msg(&[("status", Value::Int(2))]).1.contains("no `message`"));
        assert!(msg(&[("status", Value::str("2")), m()])
            .1
            .contains("not an Int"));
        assert!(msg(&[("status", Value::Int(1 << 40)), m()])
            .1
            .contains("exit-code range"));
        assert!(call("fail", &[Value::Int(3)]).is_err());
    }
}

/// `exit n` (and `quit n`) as a value applied at run time: the same escape
/// the compiled `exit` op raises (§8.8), which no `try` or `?` catches.
pub fn exit(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let status = crate::exec::exit_status(super::int_arg(args, 0)?)?;
    match ctx.vm() {
        Some(vm) => Err(vm.request_exit(status)),
        None => Err(Failure::error("exit needs a running machine")),
    }
}

/// `diverges`: the internal name that inhabits every type. Reaching it at
/// run time is a bug in the program's construction, reported as a failure.
pub fn diverges(_: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    Err(Failure::error("reached `diverges`, which has no value"))
}
