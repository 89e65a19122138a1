//! Quoting (§14.3): `ral-quote`, `posix-quote`, `posix-split`. The rules
//! live in [`crate::quote`].

use super::{str_arg, Ctx};
use crate::failure::Failure;
use crate::quote::{posix_split as split, write_posix_word, write_ral_word};
use crate::value::Value;

/// `ral-quote s`: one ral word that reads back as `s`.
pub fn ral_quote(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let s = str_arg(args, 0)?;
    let mut out = String::with_capacity(s.len() + 2);
    write_ral_word(&mut out, s);
    Ok(Value::str(out))
}

/// `posix-quote s`: one POSIX shell word that reads back as `s`.
pub fn posix_quote(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let s = str_arg(args, 0)?;
    let mut out = String::with_capacity(s.len() + 2);
    write_posix_word(&mut out, s);
    Ok(Value::str(out))
}

/// `posix-split s`: the POSIX shell words of `s`, without expansion.
pub fn posix_split(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let words = split(str_arg(args, 0)?).map_err(Failure::error)?;
    Ok(Value::list(words.into_iter().map(Value::str).collect()))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fails, strs};
    use crate::value::Value;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn quoting() {
        assert_eq!(call("ral-quote", &[s("007")]), Ok(s("'007'")));
        assert_eq!(call("ral-quote", &[s("plain")]), Ok(s("plain")));
        assert_eq!(call("posix-quote", &[s("a b")]), Ok(s("'a b'")));
        assert_eq!(
            call("posix-split", &[s("--height '40%' -x")]),
            Ok(strs(&["--height", "40%", "-x"]))
        );
        assert!(fails("posix-split", &[s("'oops")]).contains("unterminated"));
    }
}
