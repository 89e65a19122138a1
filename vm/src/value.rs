//! Runtime values (spec §4).
//!
//! # Layout
//!
//! [`Value`] is a 16-byte enum: an 8-byte tag word and an 8-byte payload.
//! `Unit`, `Bool`, `Int` and `Float` live unboxed in the payload; every other
//! kind is one *thin* `Arc` pointer to immutable heap data. Thin matters: an
//! `Arc<str>` or `Arc<[Value]>` is a fat pointer (pointer + length, 16
//! bytes), which would push the enum to 24 bytes and every register, list
//! element and record field with it. So strings are `Arc<String>`, bytes
//! `Arc<Vec<u8>>` and lists `Arc<Vec<Value>>`: the `String`/`Vec` header is a
//! sized type, the `Arc` points at it, and the price is one extra indirection
//! on access. The header buys something back: when a builtin or the VM holds
//! the only reference, `Arc::unwrap_or_clone` hands back the buffer itself, so
//! appending or sorting in place needs no copy.
//!
//! Everything behind an `Arc` is immutable once shared, so `Value` is
//! `Send + Sync` (workers and ral-written pipeline stages run on other
//! threads) and `clone` is a refcount bump, never a deep copy.
//!
//! # Records and maps
//!
//! Records and maps are one carrier, [`Record`] (§4.5): unique `String` keys
//! iterating in sorted order. A record is either small (a shared, sorted key
//! array and a parallel value array, searched by bisection: what record
//! literals build) or a dictionary (a hash index over the entries beside a
//! lazily completed sorted view: what a map grown key by key becomes). See
//! [`record`](self::record) for the representations and when each is used.
//!
//! # Updates in place
//!
//! Values are immutable to a program, but the VM may update a value behind
//! an `Arc` it holds the only reference to (`Arc::make_mut`): nothing else
//! can observe the change. The compiler moves a local out of its register at
//! its last use, so a fold that grows a map, a list or a record hands the
//! only reference from step to step and each step costs amortised O(1).
//!
//! # Equality and ordering (§4.8)
//!
//! [`Value::equal`] is structural on data. `Int` and `Float` are never equal
//! to each other (the checker keeps them apart; at run time they simply
//! differ). Records compare key-value pairs, which the sorted layout makes
//! independent of construction order. Functions and handles have no equality
//! in the language; at run time they compare by identity, which the checker
//! never lets a program observe. [`Value::compare`] orders numbers of one kind
//! (full `i64` precision, no detour through `f64`) and strings
//! lexicographically by code point.

use std::any::Any;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

mod record;

pub use record::{Iter as RecordIter, Key, Keys, Record, BUILD_SMALL_MAX, SMALL_MAX};

/// A runtime value. See the module docs for the layout.
#[derive(Clone, Debug, Default)]
pub enum Value {
    /// `()`, the one value carrying no information.
    #[default]
    Unit,
    /// `true` or `false`.
    Bool(bool),
    /// A signed 64-bit integer.
    Int(i64),
    /// A finite IEEE 754 double (the VM never stores NaN or an infinity).
    Float(f64),
    /// Unicode text.
    Str(Arc<String>),
    /// An arbitrary byte sequence.
    Bytes(Arc<Vec<u8>>),
    /// An ordered sequence of values.
    List(Arc<Vec<Value>>),
    /// A record or a map: the same runtime carrier (§4.5).
    Record(Arc<Record>),
    /// A tag with an optional payload (§4.6).
    Variant(Arc<Variant>),
    /// A block, a function, or a partially applied builtin.
    Func(Arc<Func>),
    /// A reference to concurrent work (§11).
    Handle(Arc<Handle>),
}

const _: () = assert!(std::mem::size_of::<Value>() <= 16);

impl Value {
    /// A string value.
    pub fn str(text: impl Into<String>) -> Value {
        Value::Str(Arc::new(text.into()))
    }

    /// A bytes value.
    pub fn bytes(bytes: Vec<u8>) -> Value {
        Value::Bytes(Arc::new(bytes))
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// A record or map value.
    pub fn record(record: Record) -> Value {
        Value::Record(Arc::new(record))
    }

    /// A variant value.
    pub fn variant(tag: impl Into<Arc<str>>, payload: Option<Value>) -> Value {
        Value::Variant(Arc::new(Variant {
            tag: tag.into(),
            payload,
        }))
    }

    /// The name of this value's kind, for messages (`a String`, `an Int`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Unit => "a Unit",
            Value::Bool(_) => "a Bool",
            Value::Int(_) => "an Int",
            Value::Float(_) => "a Float",
            Value::Str(_) => "a String",
            Value::Bytes(_) => "Bytes",
            Value::List(_) => "a List",
            Value::Record(_) => "a record or map",
            Value::Variant(_) => "a variant",
            Value::Func(_) => "a function",
            Value::Handle(_) => "a handle",
        }
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        if let Value::Str(s) = self {
            Some(s.as_str())
        } else {
            None
        }
    }

    /// Element `i` of a list: taken out (leaving `()`) when `take` and
    /// this is the list's only reference, else a copy. `None` when this is
    /// not a list or `i` is out of range.
    pub fn element(&mut self, i: usize, take: bool) -> Option<Value> {
        let Value::List(items) = self else {
            return None;
        };
        if take {
            if let Some(items) = Arc::get_mut(items) {
                return items.get_mut(i).map(std::mem::take);
            }
        }
        items.get(i).cloned()
    }

    /// The value under `key` of a record or map: taken out (leaving `()`)
    /// when `take` and this is the record's only reference, else a copy.
    /// `None` when this is not a record or has no such key.
    pub fn field(&mut self, key: &str, take: bool) -> Option<Value> {
        let Value::Record(r) = self else {
            return None;
        };
        if take {
            if let Some(r) = Arc::get_mut(r) {
                return r.get_mut(key).map(std::mem::take);
            }
        }
        r.get(key).cloned()
    }

    /// Structural equality on data (§4.8). Functions and handles, which the
    /// checker never lets a program compare, compare by identity.
    pub fn equal(&self, other: &Value) -> bool {
        self.equal_while(other, &mut || true).unwrap_or(false)
    }

    /// [`Value::equal`] that asks `go_on` before each pair of containers
    /// it compares and gives up (`None`) when it says no: two values that
    /// share their parts can hold far more leaves than memory, so a caller
    /// polls for cancellation here (§8.10). Shared parts compare equal at
    /// once.
    pub fn equal_while(&self, other: &Value, go_on: &mut dyn FnMut() -> bool) -> Option<bool> {
        Some(match (self, other) {
            (Value::Unit, Value::Unit) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            // Only decoded data can put an Int and a Float at one type
            // (§7.3); numbers compare numerically (§4.8).
            (Value::Int(a), Value::Float(b)) | (Value::Float(b), Value::Int(a)) => {
                int_float_cmp(*a, *b) == Ordering::Equal
            }
            (Value::Str(a), Value::Str(b)) => Arc::ptr_eq(a, b) || a == b,
            (Value::Bytes(a), Value::Bytes(b)) => Arc::ptr_eq(a, b) || a == b,
            (Value::List(a), Value::List(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Some(true);
                }
                if a.len() != b.len() {
                    return Some(false);
                }
                if !go_on() {
                    return None;
                }
                for (x, y) in a.iter().zip(b.iter()) {
                    if !x.equal_while(y, go_on)? {
                        return Some(false);
                    }
                }
                true
            }
            (Value::Record(a), Value::Record(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Some(true);
                }
                if !go_on() {
                    return None;
                }
                a.equal_while(b, go_on)?
            }
            (Value::Variant(a), Value::Variant(b)) => {
                if Arc::ptr_eq(a, b) {
                    return Some(true);
                }
                if !go_on() {
                    return None;
                }
                a.tag == b.tag
                    && match (&a.payload, &b.payload) {
                        (None, None) => true,
                        (Some(x), Some(y)) => x.equal_while(y, go_on)?,
                        (None, Some(_)) | (Some(_), None) => false,
                    }
            }
            (Value::Func(a), Value::Func(b)) => Arc::ptr_eq(a, b),
            (Value::Handle(a), Value::Handle(b)) => Arc::ptr_eq(a, b),
            (
                Value::Unit
                | Value::Bool(_)
                | Value::Int(_)
                | Value::Float(_)
                | Value::Str(_)
                | Value::Bytes(_)
                | Value::List(_)
                | Value::Record(_)
                | Value::Variant(_)
                | Value::Func(_)
                | Value::Handle(_),
                _,
            ) => false,
        })
    }

    /// Ordering (§4.8): defined for two numbers or two Strings; `None` for
    /// anything else. Numbers compare exactly, an Int and a Float by value
    /// (only decoded data mixes them, §7.3); strings lexicographically by
    /// code point (byte order of UTF-8).
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        if let (Value::Int(a), Value::Int(b)) = (self, other) {
            Some(a.cmp(b))
        } else if let (Value::Float(a), Value::Float(b)) = (self, other) {
            a.partial_cmp(b)
        } else if let (Value::Int(a), Value::Float(b)) = (self, other) {
            Some(int_float_cmp(*a, *b))
        } else if let (Value::Float(a), Value::Int(b)) = (self, other) {
            Some(int_float_cmp(*b, *a).reverse())
        } else if let (Value::Str(a), Value::Str(b)) = (self, other) {
            Some(a.as_str().cmp(b.as_str()))
        } else {
            None
        }
    }
}

/// `a` against `b` exactly, with no rounding of `a` to a float.
fn int_float_cmp(a: i64, b: f64) -> Ordering {
    // 2^63 as a float; every float at or past it is above every Int.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if b >= LIMIT {
        return Ordering::Less;
    }
    if b < -LIMIT {
        return Ordering::Greater;
    }
    let whole = b.trunc();
    // In range, so the conversion is exact.
    let w = whole as i64;
    a.cmp(&w)
        .then_with(|| 0.0f64.partial_cmp(&(b - whole)).unwrap_or(Ordering::Equal))
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.equal(other)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::str(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::str(s)
    }
}

/// A tag with an optional payload.
#[derive(Clone, Debug)]
pub struct Variant {
    /// The tag, without its backtick.
    pub tag: Arc<str>,
    /// The payload; `None` for a nullary variant.
    pub payload: Option<Value>,
}

/// A function value.
#[derive(Clone, Debug)]
pub enum Func {
    /// A ral block or function: a compiled prototype and its captures.
    /// (The compiler fills these in; this is the placeholder shape.)
    Closure {
        /// Index of the prototype in the program's prototype table.
        proto: u32,
        /// Captured values, in the prototype's capture order.
        captures: Box<[Value]>,
        /// Parameter names, for display (`<|x y| block>`).
        params: Arc<[String]>,
    },
    /// A builtin applied to fewer arguments than its arity.
    Builtin {
        /// The builtin's id in `ral_types::builtin_table()`.
        id: u16,
        /// The arguments supplied so far.
        applied: Box<[Value]>,
    },
    /// A ral closure applied to fewer arguments than it takes (§5.4); the VM
    /// prepends `applied` when the rest arrive.
    Partial {
        /// The closure being applied (a [`Func::Closure`]).
        head: Arc<Func>,
        /// The arguments supplied so far.
        applied: Box<[Value]>,
    },
}

/// A handle to concurrent work. Opaque here: the runtime hangs its worker
/// state on `state` and recovers it by downcasting.
pub struct Handle {
    /// A session-unique worker id.
    pub id: u64,
    /// The runtime's state for the worker.
    pub state: Box<dyn Any + Send + Sync>,
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle").field("id", &self.id).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn value_is_small_send_and_sync() {
        send_sync::<Value>();
        assert_eq!(std::mem::size_of::<Value>(), 16);
    }

    #[test]
    fn numbers_compare_numerically() {
        // The checker keeps Int and Float apart; only decoded data puts
        // both at one type, and there numbers compare numerically (§4.8,
        // §7.3).
        assert_eq!(Value::Int(3), Value::Float(3.0));
        assert_ne!(Value::Int(3), Value::Float(3.5));
        assert_eq!(Value::Float(0.0), Value::Float(-0.0));
        // No rounding: 2^53 + 1 is not the float 2^53.
        let big = (1i64 << 53) + 1;
        assert_ne!(Value::Int(big), Value::Float((1u64 << 53) as f64));
        assert_eq!(
            Value::Int(big).compare(&Value::Float((1u64 << 53) as f64)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Int(i64::MAX).compare(&Value::Float(9.3e18)),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Int(i64::MIN).compare(&Value::Float(-9.3e18)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            Value::Float(-0.5).compare(&Value::Int(0)),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Int(-1).compare(&Value::Float(-0.5)),
            Some(Ordering::Less)
        );
    }

    #[test]
    fn records_ignore_construction_order() {
        let a = Record::from_entries(vec![("b".into(), Value::Int(2)), ("a".into(), 1.into())]);
        let b = Record::from_entries(vec![("a".into(), Value::Int(1)), ("b".into(), 2.into())]);
        assert_eq!(Value::record(a.clone()), Value::record(b));
        let keys: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b"]);
        let c = Record::from_entries(vec![("a".into(), Value::Int(1)), ("c".into(), 2.into())]);
        assert_ne!(Value::record(a), Value::record(c));
    }

    #[test]
    fn repeated_key_keeps_the_last_value() {
        let r = Record::from_entries(vec![
            ("k".into(), Value::Int(1)),
            ("j".into(), Value::Int(0)),
            ("k".into(), Value::Int(2)),
        ]);
        assert_eq!(r.len(), 2);
        assert_eq!(r.get("k"), Some(&Value::Int(2)));
    }

    #[test]
    fn shared_shape_and_updates() {
        let keys = Keys::new(["port", "host"]);
        let r = Record::from_parts(keys.clone(), vec![Value::str("db"), Value::Int(5432)]);
        assert_eq!(r.get("host"), Some(&Value::str("db")));
        assert_eq!(r.get("nope"), None);
        let u = r.with("port", Value::Int(1));
        assert!(u.shape().is_some_and(|k| k.ptr_eq(&keys)));
        // The original is unchanged.
        assert_eq!(r.get("port"), Some(&Value::Int(5432)));
        assert_eq!(u.get("port"), Some(&Value::Int(1)));
        let i = r.with("a", Value::Unit);
        let names: Vec<&str> = i.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["a", "host", "port"]);
    }

    #[test]
    fn ordering_is_exact_and_typed() {
        let big = Value::Int(i64::MAX);
        let smaller = Value::Int(i64::MAX - 1);
        assert_eq!(big.compare(&smaller), Some(Ordering::Greater));
        assert_eq!(
            Value::str("a").compare(&Value::str("b")),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::str("Z").compare(&Value::str("a")),
            Some(Ordering::Less)
        );
        assert_eq!(
            Value::Int(1).compare(&Value::Float(1.5)),
            Some(Ordering::Less)
        );
        assert_eq!(Value::Bool(true).compare(&Value::Bool(false)), None);
    }

    #[test]
    fn variants_compare_tag_and_payload() {
        assert_eq!(
            Value::variant("ok", Some(Value::Int(1))),
            Value::variant("ok", Some(Value::Int(1)))
        );
        assert_ne!(
            Value::variant("ok", None),
            Value::variant("ok", Some(Value::Unit))
        );
        assert_ne!(Value::variant("ok", None), Value::variant("err", None));
    }
}
