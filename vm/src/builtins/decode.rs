//! The decoders and line readers (§7.3, §14.5): they read the current
//! standard input, so they need the machine ([`Ctx::vm`]).
//!
//! - `from-bytes`, `from-string`, `from-line`, `from-lines`, `from-json`,
//!   `from-jsonl`, `from-json-at`, `from-csv` read all of their input and
//!   decode it with the pure codecs of [`crate::codec`].
//! - `each-line`, `map-lines`, `filter-lines`, `fold-lines` read one line at
//!   a time (bounded memory, whatever the input's size), by the one line
//!   rule of §7.3: LF or CRLF ends a line, a lone CR is text, the last line
//!   may be unterminated. Lines must be UTF-8.

use std::io::{BufRead, BufReader};

use super::pace::{self, Pacer};
use super::{arg, list_arg, Ctx};
use crate::codec::{csv, json, lines, text};
use crate::failure::Failure;
use crate::value::Value;

fn no_vm() -> Failure {
    Failure::error("reading standard input needs a running machine")
}

fn input(ctx: &mut dyn Ctx) -> Result<Vec<u8>, Failure> {
    ctx.vm().ok_or_else(no_vm)?.read_input()
}

/// `from-bytes`: all input as bytes.
pub fn from_bytes(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    Ok(text::decode_bytes(&input(ctx)?))
}

/// `from-string`: all input as strict UTF-8.
pub fn from_string(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    Ok(text::decode_string(&input(ctx)?)?)
}

/// `from-line`: all input minus one final newline.
pub fn from_line(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    Ok(lines::decode_line(&input(ctx)?)?)
}

/// `from-lines`: the input's lines (`lines::decode_lines`, with polls).
pub fn from_lines(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let bytes = input(ctx)?;
    let mut out = Vec::new();
    for (i, line) in lines::split_lines_bytes(&bytes).enumerate() {
        pace::poll_at(ctx, i)?;
        out.push(match lines::replace_per_byte(line) {
            std::borrow::Cow::Borrowed(s) => Value::str(s),
            std::borrow::Cow::Owned(s) => Value::str(s),
        });
    }
    Ok(Value::list(out))
}

/// `from-json`: one JSON value.
pub fn from_json(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let bytes = input(ctx)?;
    let mut pacer = Pacer::new(ctx);
    let v = json::decode_json_while(&bytes, &mut || pacer.go_on());
    pacer.finish(v)
}

/// `from-jsonl`: one JSON value per non-blank line.
pub fn from_jsonl(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let bytes = input(ctx)?;
    let mut pacer = Pacer::new(ctx);
    let v = json::decode_jsonl_while(&bytes, &mut || pacer.go_on());
    pacer.finish(v)
}

/// `from-json-at tokens`: the value at an RFC 6901 path.
pub fn from_json_at(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let tokens: Vec<String> = list_arg(args, 0)?
        .iter()
        .map(crate::display::to_text)
        .collect();
    let bytes = input(ctx)?;
    let mut pacer = Pacer::new(ctx);
    let v = json::decode_json_at_while(&bytes, &tokens, &mut || pacer.go_on());
    pacer.finish(v)
}

/// `from-csv`: header-keyed maps of text.
pub fn from_csv(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let bytes = input(ctx)?;
    let mut pacer = Pacer::new(ctx);
    let v = csv::decode_csv_while(&bytes, &mut || pacer.go_on());
    pacer.finish(v)
}

/// Calls `f` on each input line, stopping early when it returns `false`.
fn for_each_line(
    ctx: &mut dyn Ctx,
    who: &str,
    f: &mut dyn FnMut(&mut dyn Ctx, String) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let reader = ctx.vm().ok_or_else(no_vm)?.input();
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        buf.clear();
        let k = match reader.read_until(b'\n', &mut buf) {
            Ok(k) => k,
            Err(e) => {
                let who = format!("{who}: ");
                return Err(match ctx.vm() {
                    Some(vm) => vm.read_error(&who, e),
                    None => Failure::error(format!("{who}read: {e}")),
                });
            }
        };
        if k == 0 {
            return Ok(());
        }
        n += 1;
        let line = lines::strip_one_newline_bytes(&buf);
        let line = std::str::from_utf8(line).map_err(|e| {
            Failure::error(format!(
                "{who}: line {n} is not valid UTF-8 (at byte {})",
                e.valid_up_to()
            ))
        })?;
        ctx.poll()?;
        f(ctx, line.to_owned())?;
    }
}

/// `each-line f`: runs `f` on every line for its effects.
pub fn each_line(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?.clone();
    for_each_line(ctx, "each-line", &mut |ctx, line| {
        ctx.call(&f, &[Value::str(line)]).map(|_| ())
    })?;
    Ok(Value::Unit)
}

/// `map-lines f`: writes `f line` for every line, one per line.
pub fn map_lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?.clone();
    for_each_line(ctx, "map-lines", &mut |ctx, line| {
        let v = ctx.call(&f, &[Value::str(line)])?;
        ctx.write(&lines::encode_line(&v))
    })?;
    Ok(Value::Unit)
}

/// `filter-lines p`: writes the lines `p` accepts.
pub fn filter_lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?.clone();
    for_each_line(ctx, "filter-lines", &mut |ctx, line| {
        let keep = ctx.call(&f, &[Value::str(line.as_str())])?;
        match keep {
            Value::Bool(true) => {
                let mut l = line;
                l.push('\n');
                ctx.write(l.as_bytes())
            }
            Value::Bool(false) => Ok(()),
            other => Err(Failure::error(format!(
                "filter-lines: the predicate returned a {}, not a Bool",
                other.kind_name()
            ))),
        }
    })?;
    Ok(Value::Unit)
}

/// `fold-lines f init`: a left fold over the lines.
pub fn fold_lines(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let f = arg(args, 0)?.clone();
    let mut acc = arg(args, 1)?.clone();
    for_each_line(ctx, "fold-lines", &mut |ctx, line| {
        let prev = std::mem::take(&mut acc);
        acc = ctx.call_owned(&f, &mut [prev, Value::str(line)])?;
        Ok(())
    })?;
    Ok(acc)
}

/// `_admit door site value` (hidden): `value` admitted against the site the
/// checker froze for a boundary call (see [`crate::admit`]), or the door's
/// failure naming where it does not fit.
pub fn admit(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let door = super::str_arg(args, 0)?.to_owned();
    let site = super::str_arg(args, 1)?.to_owned();
    let value = super::arg(args, 2)?.clone();
    let vm = ctx
        .vm()
        .ok_or_else(|| Failure::error("_admit needs a running machine"))?;
    vm.admit_value(&door, &site, &value)?;
    Ok(value)
}
