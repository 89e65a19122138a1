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
//! iterating in sorted order. It is a sorted *struct of arrays*: a shared,
//! sorted key array ([`Keys`]) and a parallel value array. Lookup is a binary
//! search, which beats hashing for the small records programs build. The key
//! array is itself behind an `Arc`, so the compiler builds it once per record
//! literal and every record the literal creates shares it: making a record
//! costs one refcount bump for the keys and one allocation for the values,
//! whatever its width (the 300,000-record workload), and two records of one
//! shape compare keys by pointer.
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

/// A record key: shared text, so `keys` hands keys out as string values
/// without copying them.
pub type Key = Arc<String>;

/// A sorted, duplicate-free array of keys, shared by every record of one
/// shape.
#[derive(Clone, Debug)]
pub struct Keys(Arc<[Key]>);

impl Keys {
    /// Keys from names in any order; sorts them and drops repeats.
    pub fn new(names: impl IntoIterator<Item = impl Into<String>>) -> Keys {
        let mut keys: Vec<Key> = names.into_iter().map(|n| Arc::new(n.into())).collect();
        keys.sort_unstable();
        keys.dedup();
        Keys(keys.into())
    }

    /// The empty key array (`[:]`).
    pub fn empty() -> Keys {
        Keys(Arc::from(Vec::new()))
    }

    /// The keys, sorted.
    pub fn as_slice(&self) -> &[Key] {
        &self.0
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The slot of `key`, by binary search.
    pub fn slot(&self, key: &str) -> Option<usize> {
        self.0.binary_search_by(|k| k.as_str().cmp(key)).ok()
    }

    fn same(&self, other: &Keys) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.len() == other.0.len()
                && self.0.iter().zip(other.0.iter()).all(|(a, b)| a == b))
    }
}

/// A record or map: sorted keys and their values in the same order.
#[derive(Clone, Debug)]
pub struct Record {
    keys: Keys,
    vals: Box<[Value]>,
}

impl Record {
    /// A record over a prepared shape; `vals[i]` belongs to `keys[i]`. The
    /// compiler uses this for record literals with static keys, sharing one
    /// `Keys` across every record the literal makes.
    ///
    /// Extra values are dropped and missing ones read as `()`; both are
    /// compiler bugs, caught by a debug assertion.
    pub fn from_parts(keys: Keys, vals: Vec<Value>) -> Record {
        debug_assert_eq!(keys.len(), vals.len(), "record shape mismatch");
        let mut vals = vals;
        vals.resize_with(keys.len(), Value::default);
        Record {
            keys,
            vals: vals.into_boxed_slice(),
        }
    }

    /// A record from entries in any order. A repeated key keeps its *last*
    /// value (the computed-key rule of §4.5; the compiler resolves the other
    /// literal precedence rules before it gets here).
    pub fn from_entries(entries: Vec<(String, Value)>) -> Record {
        let mut entries = entries;
        // Stable, so among equal keys the later entry stays later.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut keys: Vec<Key> = Vec::with_capacity(entries.len());
        let mut vals: Vec<Value> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            if keys.last().is_some_and(|last| **last == k) {
                if let Some(slot) = vals.last_mut() {
                    *slot = v;
                }
            } else {
                keys.push(Arc::new(k));
                vals.push(v);
            }
        }
        Record {
            keys: Keys(keys.into()),
            vals: vals.into_boxed_slice(),
        }
    }

    /// The empty map.
    pub fn empty() -> Record {
        Record {
            keys: Keys::empty(),
            vals: Box::new([]),
        }
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.slot(key).and_then(|i| self.vals.get(i))
    }

    /// The stored key equal to `key`, and its value.
    pub fn get_entry(&self, key: &str) -> Option<(&str, &Value)> {
        let i = self.keys.slot(key)?;
        Some((self.keys.as_slice().get(i)?.as_str(), self.vals.get(i)?))
    }

    /// Whether `key` is present.
    pub fn has(&self, key: &str) -> bool {
        self.keys.slot(key).is_some()
    }

    /// The key array (shared).
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// The values, in key order.
    pub fn values(&self) -> &[Value] {
        &self.vals
    }

    /// Entries in sorted key order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&Key, &Value)> {
        self.keys.as_slice().iter().zip(self.vals.iter())
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.vals.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }

    /// This record with `key` set to `value`: an update keeps the shared
    /// key array; an insertion builds a new one.
    pub fn with(&self, key: &str, value: Value) -> Record {
        match self.keys.binary_search(key) {
            Ok(i) => {
                let mut vals = self.vals.to_vec();
                if let Some(slot) = vals.get_mut(i) {
                    *slot = value;
                }
                Record {
                    keys: self.keys.clone(),
                    vals: vals.into_boxed_slice(),
                }
            }
            Err(i) => {
                let mut keys = self.keys.as_slice().to_vec();
                keys.insert(i, Arc::new(key.to_owned()));
                let mut vals = self.vals.to_vec();
                vals.insert(i, value);
                Record {
                    keys: Keys(keys.into()),
                    vals: vals.into_boxed_slice(),
                }
            }
        }
    }

    fn equal_while(&self, other: &Record, go_on: &mut dyn FnMut() -> bool) -> Option<bool> {
        if self.vals.len() != other.vals.len() || !self.keys.same(&other.keys) {
            return Some(false);
        }
        for (a, b) in self.vals.iter().zip(other.vals.iter()) {
            if !a.equal_while(b, go_on)? {
                return Some(false);
            }
        }
        Some(true)
    }
}

impl Keys {
    fn binary_search(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|k| k.as_str().cmp(key))
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
        assert!(Arc::ptr_eq(&u.keys().0, &keys.0));
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
