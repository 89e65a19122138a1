//! Encoders that need only the current byte channel (§7.3): `to-string`,
//! `to-line`, `to-lines`, `to-bytes`, `ints-to-bytes`, `to-json`,
//! `to-jsonl`, `to-csv` (the pure encoding is in [`crate::codec`]). Each builds its whole
//! output first and writes it with one [`Ctx::write`], so a failure writes
//! nothing. `ral` writes `LF` alone.

use super::pace::{poll_at, text_of, Pacer};
use super::{arg, list_arg, wrong, Ctx};
use crate::codec::{csv, json};
use crate::failure::Failure;
use crate::value::Value;

/// `to-string x`: writes the text form.
pub fn to_string(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    if let Value::Str(s) = v {
        ctx.write(s.as_bytes())?;
    } else {
        let text = text_of(ctx, v)?;
        ctx.write(text.as_bytes())?;
    }
    Ok(Value::Unit)
}

/// `to-line x`: writes the text form and a line feed.
pub fn to_line(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let mut text = text_of(ctx, arg(args, 0)?)?;
    text.push('\n');
    ctx.write(text.as_bytes())?;
    Ok(Value::Unit)
}

/// `to-lines xs`: writes each element's text form followed by a line feed
/// (`to-lines []` writes nothing).
pub fn to_lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    // `lines::encode_lines`, element by element with polls.
    let mut out = String::new();
    let mut pacer = Pacer::new(ctx);
    let mut done = Some(());
    for x in xs.iter() {
        done = crate::display::write_text_while(&mut out, x, &mut || pacer.go_on());
        if done.is_none() {
            break;
        }
        out.push('\n');
    }
    pacer.finish_some(done)?;
    if !out.is_empty() {
        ctx.write(out.as_bytes())?;
    }
    Ok(Value::Unit)
}

/// `to-bytes b`: writes the bytes unchanged.
pub fn to_bytes(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let Value::Bytes(b) = v else {
        return Err(wrong("Bytes", v));
    };
    ctx.write(b)?;
    Ok(Value::Unit)
}

/// `ints-to-bytes ns`: writes the bytes numbered by a list of Ints 0-255;
/// any other element fails, naming its index, before anything is written.
pub fn ints_to_bytes(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let mut out = Vec::with_capacity(xs.len());
    for (i, x) in xs.iter().enumerate() {
        poll_at(ctx, i)?;
        let Value::Int(n) = x else {
            return Err(Failure::error(format!(
                "element {i} is {}, not an Int",
                x.kind_name()
            )));
        };
        out.push(
            u8::try_from(*n).map_err(|_| {
                Failure::error(format!("element {i} is {n}, not a byte (0 to 255)"))
            })?,
        );
    }
    ctx.write(&out)?;
    Ok(Value::Unit)
}

/// `to-json x`: writes `x` as JSON; a function or handle inside it fails,
/// naming its pointer, before anything is written.
pub fn to_json(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let mut pacer = Pacer::new(ctx);
    let out = json::encode_json_while(v, &mut || pacer.go_on());
    let out = pacer.finish(out)?;
    ctx.write(&out)?;
    Ok(Value::Unit)
}

/// `to-jsonl xs`: writes each element as one line of JSON; writes nothing
/// if any element is refused, naming its index.
pub fn to_jsonl(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    let mut pacer = Pacer::new(ctx);
    let out = json::encode_jsonl_while(v, &mut || pacer.go_on());
    let out = pacer.finish(out)?;
    if !out.is_empty() {
        ctx.write(&out)?;
    }
    Ok(Value::Unit)
}

/// `to-csv rows`: writes a list of maps of text as CSV, or nothing if a row
/// is refused.
pub fn to_csv(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let out = csv::encode_csv(arg(args, 0)?)?;
    if !out.is_empty() {
        ctx.write(&out)?;
    }
    Ok(Value::Unit)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{ints, list, rec, strs, FakeCtx};
    use crate::value::Value;

    #[test]
    fn writes() {
        let mut ctx = FakeCtx::new();
        let ok = Ok(Value::Unit);
        assert_eq!(ctx.run("to-string", &[Value::str("a")]), ok);
        assert_eq!(ctx.run("to-line", &[Value::Float(2.0)]), ok);
        assert_eq!(ctx.run("to-lines", &[strs(&["x", ""])]), ok);
        assert_eq!(ctx.run("to-lines", &[strs(&[])]), ok);
        assert_eq!(ctx.run("to-string", &[ints(&[1, 2])]), ok);
        assert_eq!(ctx.run("to-bytes", &[Value::bytes(vec![0, 255])]), ok);
        assert_eq!(ctx.run("ints-to-bytes", &[ints(&[104, 105])]), ok);
        assert_eq!(ctx.out, b"a2.0\nx\n\n[1, 2]\x00\xffhi".to_vec());
        let before = ctx.out.len();
        assert!(ctx.run("ints-to-bytes", &[ints(&[1, 256])]).is_err());
        assert!(ctx.run("ints-to-bytes", &[ints(&[-1])]).is_err());
        assert_eq!(ctx.out.len(), before);
    }

    #[test]
    fn data_encoders() {
        let mut ctx = FakeCtx::new();
        let ok = Ok(Value::Unit);
        let row = rec(&[("a", Value::str("x,y")), ("b", Value::str("2"))]);
        assert_eq!(ctx.run("to-json", &[rec(&[("n", Value::Float(1.0))])]), ok);
        assert_eq!(ctx.run("to-jsonl", &[ints(&[1, 2])]), ok);
        assert_eq!(ctx.run("to-csv", &[list(vec![row])]), ok);
        assert_eq!(ctx.out, b"{\"n\":1.0}1\n2\na,b\n\"x,y\",2\n".to_vec());
        let before = ctx.out.len();
        let f = ctx.closure(|_| Ok(Value::Unit));
        let failure = ctx.run("to-jsonl", &[list(vec![Value::Int(1), f])]);
        assert_eq!(
            failure.map_err(|f| (f.status, f.to_string())),
            Err((
                1,
                "to-jsonl: element 1: the top-level value is a function (`<|x| block>`), \
                 which has no faithful JSON representation (JSON carries data only)"
                    .to_owned()
            ))
        );
        assert_eq!(ctx.out.len(), before);
    }
}
