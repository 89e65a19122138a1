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
//! cancellation inside loops. Every builtin that can run long polls while
//! it works, through the helpers of `pace` (§8.10).

use std::sync::{Arc, OnceLock};

use crate::failure::Failure;
use crate::value::{Record, Value};

pub mod ambient;
pub mod arith;
pub mod collections;
pub mod control;
pub mod decode;
pub mod fs;
pub mod numbers;
pub mod output;
pub(crate) mod pace;
pub mod prelude;
pub mod quoting;
pub mod re;
pub mod session;
pub mod strings;

#[cfg(test)]
pub(crate) mod testing;

/// What a builtin may ask of the VM.
pub trait Ctx {
    /// Applies a function value to arguments and runs it to its value.
    /// A command body's output is captured as a String, as `map` requires
    /// (§14.2); a failure propagates.
    fn call(&mut self, func: &Value, args: &[Value]) -> Result<Value, Failure>;

    /// [`Ctx::call`] that may take the arguments out of `args` (leaving
    /// `()`), so a value the builtin hands on (`fold`'s accumulator) is
    /// not kept alive by the builtin too and the callee can update it in
    /// place. The default copies.
    fn call_owned(&mut self, func: &Value, args: &mut [Value]) -> Result<Value, Failure> {
        self.call(func, args)
    }

    /// Writes bytes to the current standard output channel.
    fn write(&mut self, bytes: &[u8]) -> Result<(), Failure>;

    /// Whether the failure [`Ctx::call`] just returned is an `exit` on its
    /// way out of the program, which no builtin may absorb (§8.8).
    fn exiting(&self) -> bool {
        false
    }

    /// Checks for cancellation (§8.10); loops call it through
    /// `pace::poll_at` and walkers through `pace::Pacer`.
    fn poll(&mut self) -> Result<(), Failure> {
        Ok(())
    }

    /// The logical working directory (`cwd`, relative paths, §10.2).
    fn cwd(&self) -> std::path::PathBuf {
        std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/"))
    }

    /// Environment variable `name` as the current context sees it (scoped
    /// `within [env: …]` overlays on top of the process environment).
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    /// The effective environment, sorted by name, without `PWD` and
    /// `OLDPWD` (§10.2).
    fn environment(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, _)| k != "PWD" && k != "OLDPWD")
            .collect();
        v.sort();
        v
    }

    /// The program's arguments (`args`, §10.1).
    fn args(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether the active grants (§12.3) allow ral itself to read or write
    /// `path` (absolute); file builtins call it before touching a file.
    /// A denial is recorded when an audit trail is open (§12.7).
    fn check_fs(&mut self, _op: crate::caps::FsOp, _path: &std::path::Path) -> Result<(), Failure> {
        Ok(())
    }

    /// [`Ctx::check_fs`] on a real path a walk produced ([`crate::walk`]),
    /// judged as given.
    fn check_fs_real(
        &mut self,
        _op: crate::caps::FsOp,
        _real: &std::path::Path,
    ) -> Result<(), Failure> {
        Ok(())
    }

    /// Whether some grant restricts `fs`, so that file builtins walk their
    /// paths ([`crate::walk`]) rather than hand them to the kernel.
    fn restricts_fs(&self) -> bool {
        false
    }

    /// The whole machine, for the builtins that act on the session or the
    /// process runtime (`cd`, decoders, workers); `None` in unit-test
    /// contexts.
    fn vm(&mut self) -> Option<&mut crate::Vm> {
        None
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
    // §10.2 ambient reads, §14.4 paths and filesystem queries, `warn` of
    // §14.6, and the prelude's `file-empty` (`ambient.rs`, `fs.rs`)
    def("env", 0, ambient::env),
    def("cwd", 0, ambient::cwd),
    def("home", 0, ambient::home),
    def("user", 0, ambient::user),
    def("nproc", 0, ambient::nproc),
    def("args", 0, ambient::args),
    def("warn", 1, ambient::warn),
    def("absolute-path", 1, fs::absolute_path),
    def("resolve-path", 1, fs::resolve_path),
    def("abbreviate-home", 1, fs::abbreviate_home),
    def("list-dir", 1, fs::list_dir),
    def("file-info", 1, fs::file_info),
    def("glob", 1, fs::glob),
    def("exists", 1, fs::exists),
    def("is-file", 1, fs::is_file),
    def("is-dir", 1, fs::is_dir),
    def("is-link", 1, fs::is_link),
    def("is-readable", 1, fs::is_readable),
    def("is-writable", 1, fs::is_writable),
    def("temp-dir", 0, fs::temp_dir),
    def("temp-file", 0, fs::temp_file),
    def("file-empty", 1, fs::file_empty),
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
    def("exit", 1, control::exit),
    def("quit", 1, control::exit),
    def("diverges", 0, control::diverges),
    // §7.3, §14.5 decoders and line readers (they read standard input)
    def("from-bytes", 0, decode::from_bytes),
    def("from-string", 0, decode::from_string),
    def("from-line", 0, decode::from_line),
    def("from-lines", 0, decode::from_lines),
    def("from-json", 0, decode::from_json),
    def("_admit", 3, decode::admit),
    def("from-jsonl", 0, decode::from_jsonl),
    def("from-json-at", 1, decode::from_json_at),
    def("from-csv", 0, decode::from_csv),
    def("each-line", 1, decode::each_line),
    def("map-lines", 1, decode::map_lines),
    def("filter-lines", 1, decode::filter_lines),
    def("fold-lines", 2, decode::fold_lines),
    // §14.6, §10.2, §9.5 session state and the terminal
    def("cd", 1, session::cd),
    def("alias", 2, session::alias),
    def("unalias", 1, session::unalias),
    def("use", 1, session::use_),
    def("ask", 1, session::ask),
    def("help", 1, session::help),
    def("explain", 1, session::explain),
    def("clear", 0, session::clear),
    def("reset", 0, session::reset),
    // prelude (§14.2-§14.6), implemented natively: `prelude/`
    def("get", 3, prelude::lists::get),
    def("for", 2, prelude::lists::for_),
    def("reduce", 2, prelude::lists::reduce),
    def("reverse", 1, prelude::lists::reverse),
    def("last", 1, prelude::lists::last),
    def("take", 2, prelude::lists::take),
    def("drop", 2, prelude::lists::drop),
    def("take-while", 2, prelude::lists::take_while),
    def("drop-while", 2, prelude::lists::drop_while),
    def("first", 2, prelude::lists::first),
    def("option-or", 2, prelude::lists::option_or),
    def("elem", 2, prelude::lists::elem),
    def("contains", 2, prelude::lists::contains),
    def("nub", 1, prelude::lists::nub),
    def("zip", 2, prelude::lists::zip),
    def("cross", 2, prelude::lists::cross),
    def("flat-map", 2, prelude::lists::flat_map),
    def("enumerate", 1, prelude::lists::enumerate),
    def("concat", 1, prelude::lists::concat),
    def("group-by", 2, prelude::lists::group_by),
    def("sum", 1, prelude::numbers::sum),
    def("max", 2, prelude::numbers::max),
    def("min", 2, prelude::numbers::min),
    def("maximum", 1, prelude::numbers::maximum),
    def("minimum", 1, prelude::numbers::minimum),
    def("median", 1, prelude::numbers::median),
    def("median-by", 2, prelude::numbers::median_by),
    def("words", 1, prelude::text::words),
    def("from-words", 1, prelude::text::from_words),
    def("indent", 2, prelude::text::indent),
    def("repeat", 2, prelude::text::repeat),
    def("pad-left", 2, prelude::text::pad_left),
    def("pad-right", 2, prelude::text::pad_right),
    def("styled", 2, prelude::text::styled),
    def("bytes-to-string", 1, prelude::text::bytes_to_string),
    def("line-count", 1, prelude::paths::line_count),
    def("extension", 1, prelude::paths::extension),
    def("attempt", 1, prelude::failure::attempt),
    def("succeeds", 1, prelude::failure::succeeds),
    def("retry", 2, prelude::failure::retry),
    def("commands", 1, prelude::report::commands),
    def("succeeded", 1, prelude::report::succeeded),
];

/// Core and prelude names of the table that the host implements (the
/// worker registry of `ral-host` registers them with
/// [`crate::Vm::register_host_builtin`]); its tests check that it does.
pub const HOST_PROVIDED: &[&str] = &[
    "spawn", "await", "poll", "race", "cancel", "par", "is-done", "surface", "defer",
];

/// Base handlers the VM runs as commands rather than values (`echo`,
/// [`crate::runtime`]'s dispatch).
pub const BASE_HANDLERS: &[&str] = &["echo"];

/// Core and prelude names not implemented yet. The parity test requires
/// this list to be exactly what is missing, so implementing one fails it
/// until the name is removed here.
pub const NOT_YET: &[&str] = &[];

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
        // One table lookup per registry entry (start-up builds this).
        let table = ral_types::builtin_table();
        let mut index = vec![None; table.iter().count()];
        for (i, d) in REGISTRY.iter().enumerate() {
            if let (Some(id), Ok(i)) = (table.id(d.name), u16::try_from(i)) {
                if let Some(slot) = index.get_mut(usize::from(id.0)) {
                    *slot = Some(i);
                }
            }
        }
        index
    });
    index
        .get(usize::from(id.0))
        .copied()
        .flatten()
        .and_then(|i| REGISTRY.get(usize::from(i)))
}

// ---- argument access (a backstop behind the checker) ----

pub(crate) fn wrong(expected: &str, got: &Value) -> Failure {
    crate::failure::note_backstop();
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
        let scheme = b.scheme();
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

    /// The other direction: every core and prelude name of the table runs
    /// somewhere — this registry, the host's worker registry
    /// ([`HOST_PROVIDED`], checked by ral-host's tests), or dispatch as a
    /// base handler — except exactly the names [`NOT_YET`] admits to.
    #[test]
    fn every_core_and_prelude_name_is_implemented() {
        use ral_types::Layer;
        let mut missing: Vec<&str> = ral_types::builtin_table()
            .iter()
            .filter(|b| matches!(b.layer, Layer::Core | Layer::Prelude))
            .map(|b| b.name)
            .filter(|n| lookup(n).is_none())
            .filter(|n| !HOST_PROVIDED.contains(n) && !BASE_HANDLERS.contains(n))
            .collect();
        missing.sort_unstable();
        let mut want = NOT_YET.to_vec();
        want.sort_unstable();
        assert_eq!(missing, want, "unimplemented core/prelude names");
        for n in HOST_PROVIDED.iter().chain(BASE_HANDLERS) {
            assert!(ral_types::builtin_table().get(n).is_some(), "{n}");
            assert!(lookup(n).is_none(), "{n} is listed as provided elsewhere");
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
