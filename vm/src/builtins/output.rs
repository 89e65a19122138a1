//! Encoders that need only the current byte channel (§7.3): `to-string`,
//! `to-line`, `to-lines`, `to-bytes`, `ints-to-bytes`. Each builds its whole
//! output first and writes it with one [`Ctx::write`], so a failure writes
//! nothing. `ral` writes `LF` alone.

use super::{arg, list_arg, wrong, Ctx};
use crate::display::write_text;
use crate::failure::Failure;
use crate::value::Value;

/// `to-string x`: writes the text form.
pub fn to_string(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let v = arg(args, 0)?;
    if let Value::Str(s) = v {
        ctx.write(s.as_bytes())?;
    } else {
        let mut out = String::new();
        write_text(&mut out, v);
        ctx.write(out.as_bytes())?;
    }
    Ok(Value::Unit)
}

/// `to-line x`: writes the text form and a line feed.
pub fn to_line(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let mut out = String::new();
    write_text(&mut out, arg(args, 0)?);
    out.push('\n');
    ctx.write(out.as_bytes())?;
    Ok(Value::Unit)
}

/// `to-lines xs`: writes each element's text form followed by a line feed
/// (`to-lines []` writes nothing).
pub fn to_lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let xs = list_arg(args, 0)?;
    let mut out = String::new();
    for x in xs.iter() {
        write_text(&mut out, x);
        out.push('\n');
    }
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

#[cfg(test)]
mod tests {
    use super::super::testing::{ints, strs, FakeCtx};
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
}
