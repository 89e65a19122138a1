//! Regular expressions (§14.3): `re-match`, `re-split`, `re-find-match`,
//! `re-find-matches`, `re-replace`, `re-replace-all`. The pattern comes
//! first, the subject last.
//!
//! The syntax is the `regex` crate's (Perl-like, Unicode-aware, no
//! look-around or back-references), which guarantees matching in time
//! linear in the subject: a pattern cannot hang a script. Replacement text
//! may refer to groups as `$1`, `${1}` or `${name}`; `$$` is a literal `$`.
//!
//! A pattern is compiled once per thread (a program with more distinct
//! patterns than [`CACHE_LIMIT`] recompiles the ones evicted), and the
//! compiled `Regex` itself is kept and shared, never cloned: a `Regex`
//! clone starts with an empty pool of search caches, so each call would
//! build a new lazy DFA cache and learn its states again (two thirds of a
//! log summary's time with one `re-match` per line).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;

use super::pace::poll_at;
use super::{str_arg, Ctx};
use crate::failure::Failure;
use crate::value::Value;

/// How many compiled patterns a thread keeps.
const CACHE_LIMIT: usize = 512;

type Cache = HashMap<String, Arc<Regex>, foldhash::fast::RandomState>;

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The compiled `pattern`, from the cache when it is there.
fn compile(pattern: &str) -> Result<Arc<Regex>, Failure> {
    CACHE.with(|cache| {
        if let Some(re) = cache.borrow().get(pattern) {
            return Ok(re.clone());
        }
        let re = Regex::new(pattern)
            .map_err(|e| Failure::error(format!("invalid regex {pattern:?}: {e}")))?;
        let re = Arc::new(re);
        let mut cache = cache.borrow_mut();
        if cache.len() >= CACHE_LIMIT {
            // Any one entry: a program cycling through more patterns than
            // the limit pays a compile per miss, never more.
            if let Some(old) = cache.keys().next().cloned() {
                cache.remove(&old);
            }
        }
        cache.insert(pattern.to_owned(), re.clone());
        Ok(re)
    })
}

/// `re-match pat s`: whether `pat` matches anywhere in `s`.
pub fn re_match(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    Ok(Value::Bool(re.is_match(str_arg(args, 1)?)))
}

/// `re-split pat s`: the pieces of `s` between matches of `pat`.
pub fn re_split(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    let mut out = Vec::new();
    for (i, part) in re.split(str_arg(args, 1)?).enumerate() {
        poll_at(ctx, i)?;
        out.push(Value::str(part));
    }
    Ok(Value::list(out))
}

/// `re-find-match pat s`: `` `just m `` for the first match, else
/// `` `none ``.
pub fn re_find_match(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    Ok(match re.find(str_arg(args, 1)?) {
        Some(m) => Value::variant("just", Some(Value::str(m.as_str()))),
        None => Value::variant("none", None),
    })
}

/// `re-find-matches pat s`: every non-overlapping match, in order.
pub fn re_find_matches(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    let mut out = Vec::new();
    for (i, m) in re.find_iter(str_arg(args, 1)?).enumerate() {
        poll_at(ctx, i)?;
        out.push(Value::str(m.as_str()));
    }
    Ok(Value::list(out))
}

/// `re-replace pat repl s`: `s` with the first match replaced.
pub fn re_replace(_: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    let repl = str_arg(args, 1)?;
    Ok(Value::str(
        re.replacen(str_arg(args, 2)?, 1, repl).into_owned(),
    ))
}

/// `re-replace-all pat repl s`: `s` with every match replaced.
pub fn re_replace_all(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let re = compile(str_arg(args, 0)?)?;
    let repl = str_arg(args, 1)?;
    let text = str_arg(args, 2)?;
    // `Regex::replace_all` by hand, so the matches are counted and polled.
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, caps) in re.captures_iter(text).enumerate() {
        poll_at(ctx, i)?;
        let Some(m) = caps.get(0) else { continue };
        out.push_str(text.get(last..m.start()).unwrap_or_default());
        caps.expand(repl, &mut out);
        last = m.end();
    }
    out.push_str(text.get(last..).unwrap_or_default());
    Ok(Value::str(out))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{call, fails, strs};
    use crate::value::Value;

    fn s(x: &str) -> Value {
        Value::str(x)
    }

    #[test]
    fn matching() {
        assert_eq!(
            call("re-match", &[s("^a.c$"), s("abc")]),
            Ok(Value::Bool(true))
        );
        assert_eq!(
            call("re-match", &[s("x"), s("abc")]),
            Ok(Value::Bool(false))
        );
        assert_eq!(
            call("re-split", &[s(",\\s*"), s("a, b,c")]),
            Ok(strs(&["a", "b", "c"]))
        );
        assert_eq!(
            call("re-find-match", &[s("[0-9]+"), s("ab 12 34")]),
            Ok(Value::variant("just", Some(s("12"))))
        );
        assert_eq!(
            call("re-find-match", &[s("[0-9]+"), s("none")]),
            Ok(Value::variant("none", None))
        );
        assert_eq!(
            call("re-find-matches", &[s("[0-9]+"), s("ab 12 34")]),
            Ok(strs(&["12", "34"]))
        );
        assert_eq!(
            call("re-replace", &[s("o"), s("0"), s("foo")]),
            Ok(s("f0o"))
        );
        assert_eq!(
            call("re-replace-all", &[s("o"), s("0"), s("foo")]),
            Ok(s("f00"))
        );
        assert_eq!(
            call(
                "re-replace-all",
                &[s("(\\w+)@(\\w+)"), s("$2 at ${1}"), s("me@host")]
            ),
            Ok(s("host at me"))
        );
        assert!(fails("re-match", &[s("("), s("x")]).contains("invalid regex"));
    }

    #[test]
    fn a_pattern_compiles_once_and_keeps_its_regex() {
        // The same compiled pattern (and so the same pool of search
        // caches) comes back for every use, also after other patterns.
        let first = super::compile("^/api/v[0-9]+/").unwrap();
        for i in 0..100 {
            super::compile(&format!("x{i}")).unwrap();
        }
        let again = super::compile("^/api/v[0-9]+/").unwrap();
        assert!(std::sync::Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn cache_survives_many_patterns() {
        for i in 0..40 {
            let pat = format!("a{{{i}}}");
            assert_eq!(call("re-match", &[s(&pat), s("")]), Ok(Value::Bool(i == 0)));
        }
    }
}
