//! The declared tables a host holds files to (spec §15.3, §15.5): the rc
//! file's eleven keys and a plugin manifest's four, each one closed
//! keyset with a type per label, checked twice with the same table.
//!
//! - **Statically**, over the file's *inferred* result ([`check_type`]),
//!   before the file runs: the result's row must be a record whose labels
//!   are all in the table, each at its declared shape; a map (`[:, …]`), a
//!   list (`[]`) or a scalar is refused with the spelling to use. A key
//!   misspelled inside a spread is caught, because the row is the
//!   checker's, not the syntax's. Where the checker knows no type (a
//!   result decoded from JSON), nothing is refused yet.
//! - **Dynamically**, over the value the file produced ([`check_value`]):
//!   the same keyset and shapes, for what the checker could not see.
//!
//! A label is declared at one shape across every table ([`TABLES`]; a test
//! holds the rc and manifest tables to it).

use ral_types::{Con, Label, Ty, TyStore, TyView};
use ral_vm::Value;

/// What a field must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A `String`.
    Str,
    /// A `Bool`.
    Bool,
    /// An `Int`.
    Int,
    /// A block or function taking this many arguments (0: a plain block).
    Block(usize),
    /// A record or a map whose values all have this shape.
    Entries(&'static Shape),
    /// A list of records of this table.
    Records(&'static Table),
    /// Anything.
    Any,
}

/// One declared field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub label: &'static str,
    pub shape: Shape,
    pub required: bool,
}

/// A closed keyset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    /// What the table describes, for messages ("the rc file").
    pub what: &'static str,
    pub fields: &'static [Field],
}

const fn opt(label: &'static str, shape: Shape) -> Field {
    Field {
        label,
        shape,
        required: false,
    }
}

const STR: Shape = Shape::Str;
const ANY: Shape = Shape::Any;
const BLOCK1: Shape = Shape::Block(1);

/// The rc file's result (spec §15.3).
pub const RC: Table = Table {
    what: "the rc file",
    fields: &[
        opt("env", Shape::Entries(&STR)),
        opt("prompt", Shape::Block(0)),
        opt("bindings", Shape::Entries(&ANY)),
        opt("aliases", Shape::Entries(&ANY)),
        opt("edit_mode", Shape::Str),
        opt("bell", Shape::Bool),
        opt("surface", Shape::Str),
        opt("recursion_limit", Shape::Int),
        opt("plugins", Shape::Entries(&ANY)),
        opt("startup", Shape::Block(0)),
        opt("theme", Shape::Entries(&STR)),
    ],
};

/// One keybinding of a manifest.
pub const KEYBINDING: Table = Table {
    what: "a keybinding",
    fields: &[
        Field {
            label: "key",
            shape: Shape::Str,
            required: true,
        },
        Field {
            label: "handler",
            shape: BLOCK1,
            required: true,
        },
        opt("guard", Shape::Str),
    ],
};

/// A plugin manifest (spec §15.5). `aliases` is declared at the rc's
/// shape (one shape per label across tables); the loader refuses an alias
/// that is not a block.
pub const MANIFEST: Table = Table {
    what: "a plugin manifest",
    fields: &[
        Field {
            label: "name",
            shape: Shape::Str,
            required: true,
        },
        opt("hooks", Shape::Entries(&BLOCK1)),
        opt("keybindings", Shape::Records(&KEYBINDING)),
        opt("aliases", Shape::Entries(&ANY)),
    ],
};

/// Every table a host checks files against.
pub const TABLES: &[&Table] = &[&RC, &MANIFEST, &KEYBINDING];

impl Table {
    /// The field declared for `label`.
    pub fn field(&self, label: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.label == label)
    }

    /// The keys, for messages: `env, prompt, …`.
    pub fn keys(&self) -> String {
        self.fields
            .iter()
            .map(|f| f.label)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn unknown(&self, key: &str) -> String {
        format!(
            "`{key}` is not a key of {}; the keys are: {}",
            self.what,
            self.keys()
        )
    }
}

/// What the static check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The result is `()` (nothing to set).
    Unit,
    /// A record that fits the table.
    Fits,
    /// The checker does not know the shape; check the value when it runs.
    Unknown,
}

/// Checks a file's result type `result` (a computation type, as
/// [`ral_types::Checked::result`]) against `table`. `Err` is the message.
pub fn check_type(table: &Table, store: &mut TyStore, result: Ty) -> Result<Verdict, String> {
    let result = store.find(result);
    let value = match store.view(result) {
        TyView::Con(Con::Returns { value, .. }) => value,
        TyView::Var(..) => return Ok(Verdict::Unknown),
        TyView::Con(_) => {
            return Err(format!(
                "{} must end by returning its record, as `return [key: value]`",
                table.what
            ))
        }
    };
    let value = store.find(value);
    match store.view(value) {
        TyView::Var(..) | TyView::Con(Con::Error) => Ok(Verdict::Unknown),
        TyView::Con(Con::Unit) => {
            if let Some(f) = table.fields.iter().find(|f| f.required) {
                Err(format!(
                    "{} returns (), but it must have `{}`",
                    table.what, f.label
                ))
            } else {
                Ok(Verdict::Unit)
            }
        }
        TyView::Con(Con::Record(row)) => {
            record_fits(table, store, row)?;
            Ok(Verdict::Fits)
        }
        TyView::Con(Con::Map(_)) => Err(format!(
            "{} returns a map, whose keys are data; return a record instead: \
             write `[key: value]`, without the leading `:,`",
            table.what
        )),
        TyView::Con(Con::List(_)) => Err(format!(
            "{} returns a list (`[]` is the empty list); return a record, \
             or `()` when there is nothing to set",
            table.what
        )),
        TyView::Con(_) => Err(format!("{} must return a record", table.what)),
    }
}

fn record_fits(table: &Table, store: &mut TyStore, row: Ty) -> Result<(), String> {
    let (fields, tail) = store.row_parts(row);
    for (label, ty) in &fields {
        let Some(field) = table.field(label.as_str()) else {
            return Err(table.unknown(label.as_str()));
        };
        shape_fits(field.shape, store, *ty)
            .map_err(|want| format!("`{}` in {} must be {want}", field.label, table.what))?;
    }
    let closed = matches!(
        store.view(store.find_imm(tail)),
        TyView::Con(Con::RowEmpty(_))
    );
    if closed {
        if let Some(f) = table
            .fields
            .iter()
            .find(|f| f.required && !fields.iter().any(|(l, _)| *l == Label::intern(f.label)))
        {
            return Err(format!("{} must have `{}`", table.what, f.label));
        }
    }
    Ok(())
}

/// Whether a type can have `shape`; `Err` names the shape.
fn shape_fits(shape: Shape, store: &mut TyStore, t: Ty) -> Result<(), String> {
    let t = store.find(t);
    let view = store.view(t);
    let con = match view {
        TyView::Var(..) | TyView::Con(Con::Error) => return Ok(()),
        TyView::Con(c) => c,
    };
    let ok = match (shape, con) {
        (Shape::Any, _)
        | (Shape::Str, Con::String)
        | (Shape::Bool, Con::Bool)
        | (Shape::Int, Con::Int) => true,
        (Shape::Block(n), Con::Thunk(c)) => arity_of(store, c).is_none_or(|a| a == n),
        (Shape::Entries(inner), Con::Map(e)) => shape_fits(*inner, store, e).is_ok(),
        (Shape::Entries(inner), Con::Record(row)) => store
            .row_parts(row)
            .0
            .into_iter()
            .all(|(_, ft)| shape_fits(*inner, store, ft).is_ok()),
        (Shape::Records(table), Con::List(e)) => {
            let e = store.find(e);
            match store.view(e) {
                TyView::Con(Con::Record(row)) => {
                    record_fits(table, store, row)?;
                    true
                }
                TyView::Var(..) | TyView::Con(Con::Error) => true,
                TyView::Con(_) => false,
            }
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(shape_name(shape))
    }
}

/// How many arguments a computation type takes before it returns; `None`
/// when a variable leaves it open.
fn arity_of(store: &mut TyStore, comp: Ty) -> Option<usize> {
    let mut n = 0;
    let mut c = store.find(comp);
    loop {
        match store.view(c) {
            TyView::Con(Con::Arrow { result, .. }) => {
                n += 1;
                c = store.find(result);
            }
            TyView::Var(..) => return None,
            TyView::Con(_) => return Some(n),
        }
    }
}

fn shape_name(shape: Shape) -> String {
    match shape {
        Shape::Str => "a String".into(),
        Shape::Bool => "a Bool".into(),
        Shape::Int => "an Integer".into(),
        Shape::Block(0) => "a block taking no arguments".into(),
        Shape::Block(1) => "a block taking one argument".into(),
        Shape::Block(n) => format!("a block taking {n} arguments"),
        Shape::Entries(inner) => format!("a record of {}", plural(shape_name(*inner))),
        Shape::Records(t) => format!("a list of records ({})", t.keys()),
        Shape::Any => "a value".into(),
    }
}

fn plural(s: String) -> String {
    s.strip_prefix("a ")
        .or_else(|| s.strip_prefix("an "))
        .map_or(s.clone(), |rest| format!("{rest}s"))
}

/// Checks a value a file produced against `table` (see the module docs).
/// `()` is accepted when the table requires nothing.
pub fn check_value(table: &Table, v: &Value) -> Result<(), String> {
    match v {
        Value::Unit => match table.fields.iter().find(|f| f.required) {
            Some(f) => Err(format!(
                "{} returns (), but it must have `{}`",
                table.what, f.label
            )),
            None => Ok(()),
        },
        Value::Record(r) => {
            for (k, val) in r.iter() {
                let Some(field) = table.field(k) else {
                    return Err(table.unknown(k));
                };
                value_fits(field.shape, val)
                    .map_err(|want| format!("`{k}` in {} must be {want}", table.what))?;
            }
            if let Some(f) = table.fields.iter().find(|f| f.required && !r.has(f.label)) {
                return Err(format!("{} must have `{}`", table.what, f.label));
            }
            Ok(())
        }
        Value::List(_) => Err(format!(
            "{} returns a list; return a record, or `()` when there is nothing to set",
            table.what
        )),
        Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_)
        | Value::Variant(_)
        | Value::Func(_)
        | Value::Handle(_) => Err(format!(
            "{} must return a record, not {}",
            table.what,
            v.kind_name()
        )),
    }
}

fn value_fits(shape: Shape, v: &Value) -> Result<(), String> {
    let ok = match (shape, v) {
        (Shape::Any, _)
        | (Shape::Str, Value::Str(_))
        | (Shape::Bool, Value::Bool(_))
        | (Shape::Int, Value::Int(_)) => true,
        (Shape::Block(n), Value::Func(_)) => func_arity(v).is_none_or(|a| a == n),
        (Shape::Entries(inner), Value::Record(r)) => {
            r.iter().all(|(_, x)| value_fits(*inner, x).is_ok())
        }
        (Shape::Records(table), Value::List(items)) => {
            for item in items.iter() {
                check_value(table, item)?;
                if !matches!(item, Value::Record(_)) {
                    return Err(shape_name(shape));
                }
            }
            true
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(shape_name(shape))
    }
}

/// How many arguments a function value still takes, when that is known
/// from the value (a closure's parameters, partial application).
pub fn func_arity(v: &Value) -> Option<usize> {
    let Value::Func(f) = v else { return None };
    fn go(f: &ral_vm::Func) -> Option<usize> {
        match f {
            ral_vm::Func::Closure { params, .. } => Some(params.len()),
            ral_vm::Func::Builtin { .. } => None,
            ral_vm::Func::Partial { head, applied } => go(head)?.checked_sub(applied.len()),
        }
    }
    go(f)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every label is declared at one shape across the tables (§15.3).
    #[test]
    fn one_shape_per_label_across_tables() {
        let mut seen: Vec<(&str, Shape, &str)> = Vec::new();
        for t in TABLES {
            for f in t.fields {
                if let Some((_, shape, other)) = seen.iter().find(|(l, _, _)| *l == f.label) {
                    assert_eq!(
                        *shape, f.shape,
                        "`{}` is declared in {} and {} at different shapes",
                        f.label, other, t.what
                    );
                }
                seen.push((f.label, f.shape, t.what));
            }
        }
    }

    fn verdict(table: &Table, src: &str) -> Result<Verdict, String> {
        let (parsed, checked) = ral_types::check_source(src, "<rc>", &ral_types::TypeEnv::new());
        assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
        let mut checked = checked.unwrap_or_else(|| panic!("checked"));
        assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
        let result = checked.result;
        check_type(table, &mut checked.store, result)
    }

    #[test]
    fn the_rc_keyset_is_checked_on_the_inferred_row() {
        assert_eq!(
            verdict(
                &RC,
                "return [edit_mode: vi, bell: false, env: [EDITOR: vim]]"
            ),
            Ok(Verdict::Fits)
        );
        assert_eq!(verdict(&RC, "return ()"), Ok(Verdict::Unit));
        assert_eq!(verdict(&RC, "let x = 1"), Ok(Verdict::Unit));
        // A misspelling inside a spread is caught: the row is the checker's.
        let e = verdict(
            &RC,
            "let extra = [surfase: 'minimal', env: [:]]\nreturn [...$extra, env: [:]]",
        )
        .unwrap_err();
        assert!(e.contains("`surfase` is not a key of the rc file"), "{e}");
        assert!(e.contains("edit_mode"), "{e}");
        let e = verdict(&RC, "return [:, edit_mde: 'vi']").unwrap_err();
        assert!(e.contains("map"), "{e}");
        let e = verdict(&RC, "return []").unwrap_err();
        assert!(e.contains("list"), "{e}");
        let e = verdict(&RC, "return [bell: 'yes']").unwrap_err();
        assert!(e.contains("`bell` in the rc file must be a Bool"), "{e}");
        let e = verdict(&RC, "return [prompt: { |x| echo $x }]").unwrap_err();
        assert!(e.contains("no arguments"), "{e}");
        let e = verdict(&RC, "return [env: [EDITOR: 3]]").unwrap_err();
        assert!(e.contains("Strings"), "{e}");
        // What the checker cannot type is left to the value check.
        assert_eq!(
            verdict(&RC, "return !{from-json < rc.json}"),
            Ok(Verdict::Unknown)
        );
    }

    #[test]
    fn a_manifest_needs_a_name_and_one_argument_handlers() {
        assert_eq!(
            verdict(
                &MANIFEST,
                "return [name: x, hooks: [pre-exec: { |e| return () }], \
                 keybindings: [[key: 'ctrl-g', handler: { |e| return () }]]]"
            ),
            Ok(Verdict::Fits)
        );
        let e = verdict(&MANIFEST, "return [nam: example]").unwrap_err();
        assert!(e.contains("`nam` is not a key"), "{e}");
        let e = verdict(&MANIFEST, "return ()").unwrap_err();
        assert!(e.contains("must have `name`"), "{e}");
        let e = verdict(&MANIFEST, "return [name: x, hooks: [chpwd: { return () }]]").unwrap_err();
        assert!(e.contains("one argument"), "{e}");
        let e = verdict(
            &MANIFEST,
            "return [name: x, keybindings: [[key: 'ctrl-g', handler: { |e| return () }, gaurd: x]]]",
        )
        .unwrap_err();
        assert!(e.contains("`gaurd` is not a key of a keybinding"), "{e}");
    }

    #[test]
    fn values_meet_the_same_table() {
        let rec = |entries: Vec<(&str, Value)>| {
            Value::record(ral_vm::Record::from_entries(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect(),
            ))
        };
        assert_eq!(
            check_value(&RC, &rec(vec![("bell", Value::Bool(true))])),
            Ok(())
        );
        assert_eq!(check_value(&RC, &Value::Unit), Ok(()));
        let e = check_value(&RC, &rec(vec![("surfase", Value::str("minimal"))])).unwrap_err();
        assert!(e.contains("`surfase`"), "{e}");
        let e = check_value(&RC, &rec(vec![("bell", Value::str("no"))])).unwrap_err();
        assert!(e.contains("Bool"), "{e}");
        let e = check_value(&MANIFEST, &rec(vec![])).unwrap_err();
        assert!(e.contains("`name`"), "{e}");
    }
}
