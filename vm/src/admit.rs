//! Admission at a checked boundary (spec §7.3 "Checked boundaries", §10.3,
//! §17.3): a decoder's or a module's value is held to the type the program
//! uses it at before the program sees it.
//!
//! The checker freezes that type into a [`ral_types::AdmitSite`] and the
//! lowering passes it, as text, to the hidden builtin `_admit door site
//! value` placed right after the boundary call. Admission walks the value
//! and the site together:
//!
//! - a fixed head must be the value's kind (`Int` refuses `2.5` and `Float`
//!   refuses `3`: a decoder never converts a value to fit its type);
//! - a list or map checks every element, a record every field the program
//!   uses (absent is a refusal) and, when the program's record is closed,
//!   that there is no other;
//! - a free variable admits what its kind admits (and data throughout when
//!   deep); a `number` or `comparable` variable must agree across the run
//!   (every position `Int` or every one `Float` for `number`; numbers or
//!   text for `comparable`), so a second decode compared with the first is
//!   refused there if the two disagree.
//!
//! A refusal is an ordinary failure (status 1) of the door: it names the
//! RFC 6901 pointer of the position, what was found there, what the
//! program uses it as, and the line of that use when the site knows it.
//! Sites are parsed once per text and cached; agreements last for the
//! top-level run.

use std::sync::Arc;

use ral_types::{AdmitNode, AdmitSite, HeadSet};

use crate::failure::Failure;
use crate::value::Value;

/// What a variable's positions have agreed on so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreed {
    Int,
    Float,
    Number,
    Text,
}

impl Agreed {
    fn words(self) -> &'static str {
        match self {
            Agreed::Int => "Ints",
            Agreed::Float => "Floats",
            Agreed::Number => "numbers",
            Agreed::Text => "text",
        }
    }
}

/// The agreements of one run: `(site key, variable) → agreed`, where the
/// site key tells units apart (the load the site's code came from).
pub type Agreements = std::collections::HashMap<(u32, u32), (Agreed, Option<u32>)>;

/// A refusal: where, what was found, what the program wanted (a verb
/// phrase: "uses it as an Int"), the byte offset of the use that wanted
/// it, and the field a record lacked, if that was the trouble.
pub struct Refusal {
    pub pointer: String,
    pub found: String,
    pub expected: String,
    pub use_at: Option<u32>,
    pub missing: Option<String>,
}

/// A module's exports by name with their closed schemes.
pub type Exports = [(String, ral_types::Scheme)];

/// Admits `value` against `site`; `unit` keys the agreements. `exports`
/// are the schemes of the module a `use` just loaded: a function the
/// program reads from it is also held to the type the program uses it at.
pub fn admit(
    site: &AdmitSite,
    value: &Value,
    unit: u32,
    agreements: &mut Agreements,
    exports: Option<&Exports>,
) -> Result<(), Refusal> {
    let mut a = Admit {
        site,
        unit,
        agreements,
        exports,
        path: Vec::new(),
        depth: 0,
    };
    a.check(site.root(), value)
}

/// One step of the path to the position being checked; the pointer is
/// spelled only for a refusal.
#[derive(Clone, Copy)]
enum Seg<'v> {
    Index(usize),
    Key(&'v str),
}

struct Admit<'a, 'v> {
    site: &'a AdmitSite,
    unit: u32,
    agreements: &'a mut Agreements,
    exports: Option<&'a Exports>,
    path: Vec<Seg<'v>>,
    depth: usize,
}

/// Values nested deeper than this are not followed further (a decoded
/// document is finite, but a hand-built cyclic site must not recurse
/// without end on shared structure).
const MAX_DEPTH: usize = 10_000;

impl<'v> Admit<'_, 'v> {
    fn refuse(&self, node: u32, value: &Value, expected: String) -> Refusal {
        Refusal {
            pointer: pointer(&self.path),
            found: describe_value(value),
            expected: format!("uses it as {expected}"),
            use_at: self.site.use_at(node),
            missing: None,
        }
    }

    fn check(&mut self, node: u32, value: &'v Value) -> Result<(), Refusal> {
        self.depth += 1;
        let r = if self.depth > MAX_DEPTH {
            Ok(())
        } else {
            self.check_node(node, value)
        };
        self.depth -= 1;
        r
    }

    fn check_node(&mut self, node: u32, value: &'v Value) -> Result<(), Refusal> {
        let Some(n) = self.site.node(node) else {
            return Ok(());
        };
        let wrong = |a: &Self| Err(a.refuse(node, value, a.site.describe(node)));
        match (n, value) {
            (AdmitNode::Unit, Value::Unit)
            | (AdmitNode::Bool, Value::Bool(_))
            | (AdmitNode::Int, Value::Int(_))
            | (AdmitNode::Float, Value::Float(_))
            | (AdmitNode::String, Value::Str(_))
            | (AdmitNode::Bytes, Value::Bytes(_))
            | (AdmitNode::Func(None), Value::Func(_))
            | (AdmitNode::Handle, Value::Handle(_)) => Ok(()),
            (AdmitNode::Func(Some(_)), Value::Func(_)) => self.export_holds(node),
            (AdmitNode::List(e), Value::List(items)) => {
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    let r = self.check(*e, item);
                    self.path.pop();
                    r?;
                }
                Ok(())
            }
            (AdmitNode::Map(e), Value::Record(r)) => {
                for (k, v) in r.iter() {
                    self.path.push(Seg::Key(k.as_str()));
                    let res = self.check(*e, v);
                    self.path.pop();
                    res?;
                }
                Ok(())
            }
            (AdmitNode::Record { fields, open }, Value::Record(r)) => {
                for (k, c) in fields {
                    match r.get_entry(k) {
                        Some((key, v)) => {
                            self.path.push(Seg::Key(key));
                            let res = self.check(*c, v);
                            self.path.pop();
                            res?;
                        }
                        None => {
                            return Err(Refusal {
                                pointer: pointer(&self.path),
                                found: format!("{} without `{k}`", describe_value(value)),
                                expected: format!("reads `{k}`"),
                                use_at: self.site.use_at(*c).or(self.site.use_at(node)),
                                missing: Some(k.to_string()),
                            })
                        }
                    }
                }
                if !open {
                    if let Some((extra, _)) = r
                        .iter()
                        .find(|(k, _)| !fields.iter().any(|(f, _)| f.as_ref() == k.as_str()))
                    {
                        return Err(Refusal {
                            pointer: pointer(&self.path),
                            found: format!("a record with `{extra}`"),
                            expected: format!(
                                "uses it as a record of exactly {}",
                                fields
                                    .iter()
                                    .map(|(f, _)| format!("`{f}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                            use_at: self.site.use_at(node),
                            missing: None,
                        });
                    }
                }
                Ok(())
            }
            (AdmitNode::Variant { tags, open }, Value::Variant(v)) => {
                match tags.iter().find(|(t, _)| **t == *v.tag) {
                    Some((_, c)) => match &v.payload {
                        Some(p) => self.check(*c, p),
                        None => self.check(*c, &UNIT),
                    },
                    None if *open => Ok(()),
                    None => wrong(self),
                }
            }
            (AdmitNode::Var { heads, deep, agree }, _) => {
                if !heads_admit(*heads, value) {
                    return wrong(self);
                }
                if *deep && !is_data(value) {
                    return Err(self.refuse(node, value, "data (no functions or handles)".into()));
                }
                if let Some(var) = agree {
                    self.agree(node, *heads, *var, value)?;
                }
                Ok(())
            }
            (
                AdmitNode::Unit
                | AdmitNode::Bool
                | AdmitNode::Int
                | AdmitNode::Float
                | AdmitNode::String
                | AdmitNode::Bytes
                | AdmitNode::List(_)
                | AdmitNode::Map(_)
                | AdmitNode::Record { .. }
                | AdmitNode::Variant { .. }
                | AdmitNode::Func(_)
                | AdmitNode::Handle,
                _,
            ) => wrong(self),
            // Computation nodes sit under a function's node; no value
            // reaches them.
            (AdmitNode::Arrow(..) | AdmitNode::Returns(..) | AdmitNode::CompVar, _) => Ok(()),
        }
    }

    /// A function read from a module's exports is held to the type the
    /// program uses it at (§10.3): the module's scheme for the export the
    /// path starts at, followed along the rest of the path, must unify
    /// with the function node's type.
    fn export_holds(&self, node: u32) -> Result<(), Refusal> {
        let (Some(exports), Some(Seg::Key(name))) = (self.exports, self.path.first()) else {
            return Ok(());
        };
        let Some((_, scheme)) = exports.iter().find(|(n, _)| n == name) else {
            return Ok(());
        };
        let steps: Vec<ral_types::admit::Step<'_>> = self
            .path
            .iter()
            .skip(1)
            .map(|s| match s {
                Seg::Key(k) => ral_types::admit::Step::Key(k),
                Seg::Index(_) => ral_types::admit::Step::Index,
            })
            .collect();
        match ral_types::admit::holds(self.site, node, scheme, &steps) {
            Ok(()) => Ok(()),
            Err(m) => Err(Refusal {
                pointer: pointer(&self.path),
                found: format!("`{}`", m.module),
                expected: format!("uses it as `{}`", m.program),
                use_at: self.site.use_at(node),
                missing: None,
            }),
        }
    }

    /// Records or checks what variable `var`'s positions agree on.
    fn agree(&mut self, node: u32, heads: HeadSet, var: u32, value: &Value) -> Result<(), Refusal> {
        let numbers_apart = heads.and(HeadSet::STRING).0 == 0;
        let class = match value {
            Value::Int(_) if numbers_apart => Agreed::Int,
            Value::Float(_) if numbers_apart => Agreed::Float,
            Value::Int(_) | Value::Float(_) => Agreed::Number,
            Value::Str(_) => Agreed::Text,
            Value::Unit
            | Value::Bool(_)
            | Value::Bytes(_)
            | Value::List(_)
            | Value::Record(_)
            | Value::Variant(_)
            | Value::Func(_)
            | Value::Handle(_) => return Ok(()),
        };
        let key = (self.unit, var);
        match self.agreements.get(&key) {
            None => {
                self.agreements.insert(key, (class, self.site.use_at(node)));
                Ok(())
            }
            Some((seen, _)) if *seen == class => Ok(()),
            Some((seen, at)) => Err(Refusal {
                pointer: pointer(&self.path),
                found: describe_value(value),
                expected: format!("uses it with {} from another position", seen.words()),
                use_at: self.site.use_at(node).or(*at),
                missing: None,
            }),
        }
    }
}

/// Whether `value`'s head is one of `heads`.
fn heads_admit(heads: HeadSet, value: &Value) -> bool {
    let h = match value {
        Value::Unit => HeadSet::UNIT,
        Value::Bool(_) => HeadSet::BOOL,
        Value::Int(_) => HeadSet::INT,
        Value::Float(_) => HeadSet::FLOAT,
        Value::Str(_) => HeadSet::STRING,
        Value::Bytes(_) => HeadSet::BYTES,
        Value::List(_) => HeadSet::LIST,
        // The carrier of both; either head admits it.
        Value::Record(_) => HeadSet::MAP.or(HeadSet::RECORD),
        Value::Variant(_) => HeadSet::VARIANT,
        Value::Func(_) => HeadSet::THUNK,
        Value::Handle(_) => HeadSet::HANDLE,
    };
    heads.and(h).0 != 0
}

/// Whether `value` holds no function or handle at any depth.
fn is_data(value: &Value) -> bool {
    match value {
        Value::Unit
        | Value::Bool(_)
        | Value::Int(_)
        | Value::Float(_)
        | Value::Str(_)
        | Value::Bytes(_) => true,
        Value::List(items) => items.iter().all(is_data),
        Value::Record(r) => r.iter().all(|(_, v)| is_data(v)),
        Value::Variant(v) => v.payload.as_ref().is_none_or(is_data),
        Value::Func(_) | Value::Handle(_) => false,
    }
}

/// The payload a nullary tag stands for.
static UNIT: Value = Value::Unit;

/// An RFC 6901 pointer: `/a/0/b`, with `~` and `/` escaped.
fn pointer(path: &[Seg<'_>]) -> String {
    path.iter()
        .map(|p| match p {
            Seg::Index(i) => format!("/{i}"),
            Seg::Key(k) => format!("/{}", k.replace('~', "~0").replace('/', "~1")),
        })
        .collect()
}

/// What a value is, for a message: "text (`'12kB'`)", "an Int (`3`)".
fn describe_value(value: &Value) -> String {
    let shown = || {
        let text = crate::display::to_text(value);
        let text = if text.chars().count() > 40 {
            text.chars().take(37).collect::<String>() + "…"
        } else {
            text
        };
        let mut s = String::new();
        crate::quote::write_ral_quoted(&mut s, &text, crate::quote::Lines::Escaped);
        s
    };
    match value {
        Value::Unit => "null (`()`)".into(),
        Value::Bool(b) => format!("a Bool (`{b}`)"),
        Value::Int(_) => format!("an Int (`{}`)", crate::display::to_text(value)),
        Value::Float(_) => format!("a Float (`{}`)", crate::display::to_text(value)),
        Value::Str(_) => format!("text (`{}`)", shown()),
        Value::Bytes(_) => "bytes".into(),
        Value::List(items) => format!("a list of {}", items.len()),
        Value::Record(_) => "an object".into(),
        Value::Variant(v) => format!("the variant `{}", v.tag),
        Value::Func(_) => "a function".into(),
        Value::Handle(_) => "a handle".into(),
    }
}

/// A site parsed from its text, cached by text.
#[derive(Default)]
pub struct SiteCache {
    sites: std::collections::HashMap<Arc<str>, Arc<AdmitSite>>,
}

impl SiteCache {
    /// The site `text` describes.
    pub fn get(&mut self, text: &str) -> Result<Arc<AdmitSite>, Failure> {
        if let Some(s) = self.sites.get(text) {
            return Ok(s.clone());
        }
        let site = AdmitSite::parse(text)
            .map_err(|e| Failure::error(format!("a malformed admission site: {e}")))?;
        let site = Arc::new(site);
        if self.sites.len() > 4096 {
            self.sites.clear();
        }
        self.sites.insert(Arc::from(text), site.clone());
        Ok(site)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn site(text: &str) -> AdmitSite {
        AdmitSite::parse(text).unwrap()
    }

    fn json(text: &str) -> Value {
        crate::codec::json::decode_json(text.as_bytes()).unwrap()
    }

    fn refusal(s: &str, v: &str) -> Option<(String, String, String)> {
        let mut ag = Agreements::default();
        admit(&site(s), &json(v), 0, &mut ag, None)
            .err()
            .map(|r| (r.pointer, r.found, r.expected))
    }

    #[test]
    fn heads_are_checked_at_their_pointer() {
        assert!(refusal(r#"{"size": #1, ..};Int@3"#, r#"{"size": 4, "x": 1}"#).is_none());
        let (p, f, e) = refusal(r#"{"size": #1, ..};Int@3"#, r#"{"size": "12kB"}"#).unwrap();
        assert_eq!(p, "/size");
        assert_eq!(f, "text (`'12kB'`)");
        assert_eq!(e, "uses it as an Int");
        // A number keeps its kind.
        assert!(refusal("Float", "3").is_some());
        assert!(refusal("Int", "2.5").is_some());
        assert!(refusal("_c", "3").is_none());
        assert!(refusal("_c", "2.5").is_none());
    }

    #[test]
    fn records_lists_and_maps() {
        let (p, _, e) = refusal(r#"{"a": #1, ..};[#2];Int"#, r#"{"a": [1, "x"]}"#).unwrap();
        assert_eq!(p, "/a/1");
        assert_eq!(e, "uses it as an Int");
        let (_, f, _) = refusal(r#"{"b": #1, ..};Int"#, r#"{"a": 1}"#).unwrap();
        assert!(f.contains("without `b`"), "{f}");
        assert!(refusal(r#"{"a": #1};Int"#, r#"{"a": 1, "b": 2}"#).is_some());
        assert!(refusal("Map #1;String", r#"{"a/b": "x", "c": "y"}"#).is_none());
        let (p, ..) = refusal("Map #1;String", r#"{"a/b~": 1}"#).unwrap();
        assert_eq!(p, "/a~1b~0");
    }

    #[test]
    fn comparable_positions_agree_across_decodes() {
        let s = site("_1c~0");
        let mut ag = Agreements::default();
        assert!(admit(&s, &json("1"), 0, &mut ag, None).is_ok());
        assert!(admit(&s, &json("2.5"), 0, &mut ag, None).is_ok());
        assert!(admit(&s, &json("\"x\""), 0, &mut ag, None).is_err());
        // Another unit's variable 0 is another variable.
        assert!(admit(&s, &json("\"x\""), 1, &mut ag, None).is_ok());
        // A number variable agrees on the kind of number.
        let n = site("[#1];_c~0");
        let mut ag = Agreements::default();
        assert!(admit(&n, &json("[1, 2]"), 0, &mut ag, None).is_ok());
        assert!(admit(&n, &json("[3, 2.5]"), 0, &mut ag, None).is_err());
    }

    #[test]
    fn a_deep_variable_refuses_functions() {
        let v = Value::list(vec![Value::Int(1)]);
        let mut ag = Agreements::default();
        assert!(admit(&site("_fff+"), &v, 0, &mut ag, None).is_ok());
    }
}
