//! The builtins that need no operating system, one module per family, and
//! their registry.
//!
//! # Calling convention
//!
//! A builtin is a [`BuiltinFn`]: `fn(&mut dyn Ctx, &[Value]) -> Result<Value,
//! Failure>`, called with exactly its arity's worth of arguments once it is
//! fully applied (partial application is a `Func::Builtin` value the VM
//! accumulates). Arguments are borrowed, so the VM can pass a register
//! window without cloning; a builtin clones only what it keeps. The checker
//! has already fixed every argument's type, so the kind checks here are a
//! backstop that fails with a clear message rather than a panic.
//!
//! [`Ctx`] is what a builtin may ask of the VM: call a ral function value
//! (for `map`, `filter`, `fold`, `each`, `sort-list-by`), write to the
//! current byte channel (for the `to-*` encoders), and poll for
//! cancellation inside loops.

use std::sync::{Arc, OnceLock};

use crate::failure::Failure;
use crate::value::{Record, Value};

pub mod arith;
pub mod collections;
pub mod control;
pub mod numbers;
pub mod output;
pub mod quoting;
pub mod re;
pub mod strings;

#[cfg(test)]
pub(crate) mod testing;

/// What a builtin may ask of the VM.
pub trait Ctx {
    /// Applies a function value to arguments and runs it to its value.
    /// A command body's output is captured as a String, as `map` requires
    /// (§14.2); a failure propagates.
    fn call(&mut self, func: &Value, args: &[Value]) -> Result<Value, Failure>;

    /// Writes bytes to the current standard output channel.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Failure>;

    /// Checks for cancellation; loops call it once per element (§8.10).
    fn poll(&mut self) -> Result<(), Failure> {
        Ok(())
    }
}

/// A builtin's implementation.
pub type BuiltinFn = fn(&mut dyn Ctx, &[Value]) -> Result<Value, Failure>;

/// One registered builtin.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinDef {
    /// The spec name, as in `ral_types::builtin_table()`.
    pub name: &'static str,
    /// How many arguments it takes (the arrows of its scheme).
    pub arity: u8,
    /// The implementation.
    pub func: BuiltinFn,
}

const fn def(name: &'static str, arity: u8, func: BuiltinFn) -> BuiltinDef {
    BuiltinDef { name, arity, func }
}

static REGISTRY: &[BuiltinDef] = &[
    // §14.2 collections and comparison
    def("each", 2, collections::each),
    def("map", 2, collections::map),
    def("filter", 2, collections::filter),
    def("fold", 3, collections::fold),
    def("sort-list", 1, collections::sort_list),
    def("sort-list-by", 2, collections::sort_list_by),
    def("range", 2, collections::range),
    def("length", 1, collections::length),
    def("is-empty", 1, collections::is_empty),
    def("keys", 1, collections::keys),
    def("has", 2, collections::has),
    def("equal", 2, collections::equal),
    def("lt", 2, collections::lt),
    def("gt", 2, collections::gt),
    // §14.3 strings
    def("upper", 1, strings::upper),
    def("lower", 1, strings::lower),
    def("dedent", 1, strings::dedent),
    def("slice", 3, strings::slice),
    def("intercalate", 2, strings::intercalate),
    def("string-replace", 3, strings::string_replace),
    def("lines", 1, strings::lines),
    def("str", 1, strings::str),
    // §14.3 regex
    def("re-match", 2, re::re_match),
    def("re-split", 2, re::re_split),
    def("re-find-match", 2, re::re_find_match),
    def("re-find-matches", 2, re::re_find_matches),
    def("re-replace", 3, re::re_replace),
    def("re-replace-all", 3, re::re_replace_all),
    // §14.3 quoting
    def("ral-quote", 1, quoting::ral_quote),
    def("posix-quote", 1, quoting::posix_quote),
    def("posix-split", 1, quoting::posix_split),
    // §14.3 numbers
    def("int", 1, numbers::int),
    def("float", 1, numbers::float),
    def("round", 2, numbers::round),
    def("floor", 1, numbers::floor),
    def("ceil", 1, numbers::ceil),
    def("trunc", 1, numbers::trunc),
    // §7.3, §14.5 encoders (they write through `Ctx::write`)
    def("to-string", 1, output::to_string),
    def("to-line", 1, output::to_line),
    def("to-lines", 1, output::to_lines),
    def("to-bytes", 1, output::to_bytes),
    def("ints-to-bytes", 1, output::ints_to_bytes),
    def("to-json", 1, output::to_json),
    def("to-jsonl", 1, output::to_jsonl),
    def("to-csv", 1, output::to_csv),
    // §14.6 failure
    def("fail", 1, control::fail),
];

/// Every builtin implemented here.
pub fn registry() -> &'static [BuiltinDef] {
    REGISTRY
}

/// The builtin named `name`.
pub fn lookup(name: &str) -> Option<&'static BuiltinDef> {
    REGISTRY.iter().find(|d| d.name == name)
}

/// The builtin with id `id` in `ral_types::builtin_table()`, if implemented
/// here. The index is built once; the VM calls this at load time, never per
/// call.
pub fn by_table_id(id: ral_types::BuiltinId) -> Option<&'static BuiltinDef> {
    static INDEX: OnceLock<Vec<Option<u16>>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        ral_types::builtin_table()
            .iter()
            .map(|b| {
                REGISTRY
                    .iter()
                    .position(|d| d.name == b.name)
                    .and_then(|i| u16::try_from(i).ok())
            })
            .collect()
    });
    index
        .get(usize::from(id.0))
        .copied()
        .flatten()
        .and_then(|i| REGISTRY.get(usize::from(i)))
}

// ---- argument access (a backstop behind the checker) ----

pub(crate) fn wrong(expected: &str, got: &Value) -> Failure {
    Failure::error(format!("expected {expected}, got {}", got.kind_name()))
}

pub(crate) fn arg(args: &[Value], i: usize) -> Result<&Value, Failure> {
    args.get(i)
        .ok_or_else(|| Failure::error(format!("missing argument {}", i + 1)))
}

pub(crate) fn str_arg(args: &[Value], i: usize) -> Result<&str, Failure> {
    let v = arg(args, i)?;
    v.as_str().ok_or_else(|| wrong("a String", v))
}

pub(crate) fn int_arg(args: &[Value], i: usize) -> Result<i64, Failure> {
    let v = arg(args, i)?;
    if let Value::Int(n) = v {
        Ok(*n)
    } else {
        Err(wrong("an Int", v))
    }
}

pub(crate) fn float_arg(args: &[Value], i: usize) -> Result<f64, Failure> {
    let v = arg(args, i)?;
    if let Value::Float(x) = v {
        Ok(*x)
    } else {
        Err(wrong("a Float", v))
    }
}

pub(crate) fn list_arg(args: &[Value], i: usize) -> Result<&Arc<Vec<Value>>, Failure> {
    let v = arg(args, i)?;
    if let Value::List(items) = v {
        Ok(items)
    } else {
        Err(wrong("a List", v))
    }
}

pub(crate) fn record_arg(args: &[Value], i: usize) -> Result<&Record, Failure> {
    let v = arg(args, i)?;
    if let Value::Record(r) = v {
        Ok(r)
    } else {
        Err(wrong("a record or map", v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ral_types::ty::{Con, SchemeNode};

    fn arrows(b: &ral_types::Builtin) -> usize {
        let scheme = &b.scheme;
        let mut cur = scheme.root();
        let mut n = 0;
        while let Some(SchemeNode::Con(Con::Arrow { result, .. })) = scheme.node(cur) {
            n += 1;
            cur = result;
        }
        n
    }

    #[test]
    fn registry_matches_the_signature_table() {
        let table = ral_types::builtin_table();
        for d in registry() {
            let Some(b) = table.get(d.name) else {
                panic!("`{}` is not in the builtin table", d.name);
            };
            assert_eq!(usize::from(d.arity), arrows(b), "arity of `{}`", d.name);
            let id = table.id(d.name).map(|id| id.0);
            assert_eq!(
                id.and_then(|id| by_table_id(ral_types::BuiltinId(id)))
                    .map(|x| x.name),
                Some(d.name)
            );
        }
    }

    #[test]
    fn registry_names_are_unique() {
        let mut names: Vec<&str> = registry().iter().map(|d| d.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
