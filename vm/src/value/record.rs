//! The record and map carrier (§4.5): unique `String` keys, iterated in
//! sorted order (byte order of UTF-8, which is code point order).
//!
//! # Two representations
//!
//! A [`Record`] is one of two shapes, invisible to a program (iteration,
//! printing, equality and hashing see only the sorted entries):
//!
//! - **Small**: a sorted, shared key array ([`Keys`]) and a parallel value
//!   array. Lookup is a binary search, which beats hashing for the records
//!   programs build from literals. The compiler builds one key array per
//!   record literal and every record the literal makes shares it, so making
//!   a record costs one refcount bump for the keys and one allocation for the
//!   values, and two records of one shape compare keys by pointer. Updating
//!   a field keeps the key array.
//! - **Dictionary**: a map used as a dictionary outgrows the sorted arrays
//!   (inserting a new key into them moves every later entry). Inserting a
//!   new key into a small record of [`SMALL_MAX`] entries, or decoding more
//!   than [`BUILD_SMALL_MAX`] entries at once, makes a [`Dict`]: a hash
//!   index over the entries in insertion order (`indexmap`), so lookup and
//!   insertion take constant expected time at any size, beside a sorted
//!   permutation of the entries for iteration. The permutation is kept
//!   across insertions for the entries it covers and completed lazily: the
//!   entries added since it was last complete are sorted on their own and
//!   merged in the first time something iterates, which costs no more than
//!   the iteration itself (plus the sort of what is new).
//!
//! Equality and every traversal go through the sorted view, so two equal
//! maps are equal whatever their representation, and iteration order never
//! depends on how a map was built.
//!
//! # Updates in place
//!
//! `insert` and `extend_from` take `&mut self`: the VM calls them through
//! `Arc::make_mut` on the value it holds, which updates in place when that
//! reference is the only one (see `compile.rs` on moving a local at its
//! last use) and copies first otherwise, so a value another holder can see
//! never changes.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use indexmap::map::Entry;
use indexmap::IndexMap;

use super::Value;

/// A record key: shared text, so `keys` hands keys out as string values
/// without copying them, and a string value becomes a key without a copy.
pub type Key = Arc<String>;

/// Inserting a new key into a small record that already has this many
/// entries turns it into a dictionary (moving `SMALL_MAX` entries is about
/// what a hash insertion costs).
pub const SMALL_MAX: usize = 16;

/// A record built whole from more entries than this ([`Record::from_entries`]:
/// decoded objects) is a dictionary from the start.
pub const BUILD_SMALL_MAX: usize = 32;

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
        self.binary_search(key).ok()
    }

    /// Whether two key arrays are the same object (two records of one
    /// literal).
    pub fn ptr_eq(&self, other: &Keys) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn binary_search(&self, key: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|k| k.as_str().cmp(key))
    }

    fn same(&self, other: &Keys) -> bool {
        self.ptr_eq(other)
            || (self.0.len() == other.0.len()
                && self.0.iter().zip(other.0.iter()).all(|(a, b)| a == b))
    }
}

/// A record or map: see the module docs.
#[derive(Clone, Debug)]
pub struct Record(Repr);

#[derive(Clone, Debug)]
enum Repr {
    /// Sorted keys and their values in the same order.
    Small { keys: Keys, vals: Vec<Value> },
    /// A hash-indexed dictionary with a sorted view.
    Dict(Box<Dict>),
}

/// A dictionary's key: hashes and compares as its text, so the index can
/// be searched with a `&str`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DKey(Key);

impl Hash for DKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.0.as_str().hash(h);
    }
}

impl Borrow<str> for DKey {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

/// A seeded hasher (a per-process random seed), so keys from untrusted
/// data cannot be chosen to collide.
type Hasher_ = foldhash::fast::RandomState;

#[derive(Clone, Debug)]
struct Dict {
    /// The entries in insertion order, hash-indexed. Nothing is ever
    /// removed (the language has no map removal), so indices are stable.
    map: IndexMap<DKey, Value, Hasher_>,
    /// A permutation of the indices `0..sorted.len()` of `map`, in key
    /// order: the entries that existed when the order was last complete.
    sorted: Vec<u32>,
    /// The complete order, computed on demand when `sorted` does not cover
    /// every entry, and moved into `sorted` by the next insertion.
    full: OnceLock<Box<[u32]>>,
}

impl Dict {
    fn with_capacity(n: usize) -> Dict {
        Dict {
            map: IndexMap::with_capacity_and_hasher(n, Hasher_::default()),
            sorted: Vec::new(),
            full: OnceLock::new(),
        }
    }

    /// A dictionary from entries already sorted and unique.
    fn from_sorted(entries: impl ExactSizeIterator<Item = (Key, Value)>) -> Dict {
        let mut d = Dict::with_capacity(entries.len());
        for (k, v) in entries {
            d.map.insert(DKey(k), v);
        }
        d.sorted = (0..d.map.len() as u32).collect();
        d
    }

    fn key_at(&self, i: u32) -> &str {
        self.map
            .get_index(i as usize)
            .map_or("", |(k, _)| k.0.as_str())
    }

    /// The indices of every entry in key order.
    fn order(&self) -> &[u32] {
        if self.sorted.len() == self.map.len() {
            return &self.sorted;
        }
        self.full.get_or_init(|| {
            let from = self.sorted.len() as u32;
            let mut tail: Vec<u32> = (from..self.map.len() as u32).collect();
            sort_indices(&mut tail, |i| self.key_at(i));
            merge(&self.sorted, &tail, |i| self.key_at(i)).into_boxed_slice()
        })
    }

    fn insert(&mut self, key: Key, value: Value) {
        match self.map.entry(DKey(key)) {
            Entry::Occupied(mut e) => {
                e.insert(value);
            }
            Entry::Vacant(e) => {
                // The complete order (if one was computed) covers every
                // entry so far: keep it as the prefix the new entry follows.
                if let Some(full) = self.full.take() {
                    self.sorted = full.into_vec();
                }
                e.insert(value);
            }
        }
    }
}

/// Sorts `idx` by `key`: by the keys' first eight bytes as one integer
/// first (big-endian, zero-padded, which orders like the bytes), then by
/// the whole key for ties, so most comparisons read no key text.
fn sort_indices<'a>(idx: &mut [u32], key: impl Fn(u32) -> &'a str) {
    let mut pre: Vec<(u64, u32)> = idx.iter().map(|&i| (prefix(key(i)), i)).collect();
    pre.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| key(a.1).cmp(key(b.1))));
    for (slot, (_, i)) in idx.iter_mut().zip(pre) {
        *slot = i;
    }
}

fn prefix(s: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = s.len().min(8);
    b[..n].copy_from_slice(&s.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

/// Merges two index lists, each sorted by `key` (keys are unique).
fn merge<'a>(a: &[u32], b: &[u32], key: impl Fn(u32) -> &'a str) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while let (Some(&x), Some(&y)) = (a.get(i), b.get(j)) {
        if key(x) < key(y) {
            out.push(x);
            i += 1;
        } else {
            out.push(y);
            j += 1;
        }
    }
    out.extend_from_slice(&a[i.min(a.len())..]);
    out.extend_from_slice(&b[j.min(b.len())..]);
    out
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
        Record(Repr::Small { keys, vals })
    }

    /// A record from entries in any order. A repeated key keeps its *last*
    /// value (the computed-key rule of §4.5; the compiler resolves the other
    /// literal precedence rules before it gets here).
    pub fn from_entries(entries: Vec<(String, Value)>) -> Record {
        Record::from_keyed(entries.into_iter().map(|(k, v)| (Arc::new(k), v)).collect())
    }

    /// [`Record::from_entries`] with keys that are already shared text.
    pub fn from_keyed(entries: Vec<(Key, Value)>) -> Record {
        let mut entries = entries;
        // Stable, so among equal keys the later entry stays later.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut keys: Vec<Key> = Vec::with_capacity(entries.len());
        let mut vals: Vec<Value> = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            if keys.last().is_some_and(|last| **last == *k) {
                if let Some(slot) = vals.last_mut() {
                    *slot = v;
                }
            } else {
                keys.push(k);
                vals.push(v);
            }
        }
        if keys.len() > BUILD_SMALL_MAX {
            return Record(Repr::Dict(Box::new(Dict::from_sorted(
                keys.into_iter().zip(vals),
            ))));
        }
        Record(Repr::Small {
            keys: Keys(keys.into()),
            vals,
        })
    }

    /// The empty map.
    pub fn empty() -> Record {
        Record(Repr::Small {
            keys: Keys::empty(),
            vals: Vec::new(),
        })
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.0 {
            Repr::Small { keys, vals } => keys.slot(key).and_then(|i| vals.get(i)),
            Repr::Dict(d) => d.map.get(key),
        }
    }

    /// The value under `key`, to change in place.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        match &mut self.0 {
            Repr::Small { keys, vals } => keys.slot(key).and_then(|i| vals.get_mut(i)),
            Repr::Dict(d) => d.map.get_mut(key),
        }
    }

    /// The stored key equal to `key`, and its value.
    pub fn get_entry(&self, key: &str) -> Option<(&Key, &Value)> {
        match &self.0 {
            Repr::Small { keys, vals } => {
                let i = keys.slot(key)?;
                Some((keys.as_slice().get(i)?, vals.get(i)?))
            }
            Repr::Dict(d) => d.map.get_key_value(key).map(|(k, v)| (&k.0, v)),
        }
    }

    /// Whether `key` is present.
    pub fn has(&self, key: &str) -> bool {
        match &self.0 {
            Repr::Small { keys, .. } => keys.slot(key).is_some(),
            Repr::Dict(d) => d.map.contains_key(key),
        }
    }

    /// The shared key array of a small record (every record of one literal
    /// shares it); `None` for a dictionary.
    pub fn shape(&self) -> Option<&Keys> {
        match &self.0 {
            Repr::Small { keys, .. } => Some(keys),
            Repr::Dict(_) => None,
        }
    }

    /// The keys as a key array: the shared one of a small record, a new
    /// one for a dictionary.
    pub fn key_array(&self) -> Keys {
        match &self.0 {
            Repr::Small { keys, .. } => keys.clone(),
            Repr::Dict(_) => Keys(self.keys().cloned().collect()),
        }
    }

    /// The keys, in sorted order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &Key> {
        self.iter().map(|(k, _)| k)
    }

    /// The values, in key order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> {
        self.iter().map(|(_, v)| v)
    }

    /// Entries in sorted key order.
    pub fn iter(&self) -> Iter<'_> {
        match &self.0 {
            Repr::Small { keys, vals } => {
                Iter(IterRepr::Small(keys.as_slice().iter().zip(vals.iter())))
            }
            Repr::Dict(d) => Iter(IterRepr::Dict {
                order: d.order().iter(),
                map: &d.map,
            }),
        }
    }

    /// Entries in no particular order (cheaper than [`Record::iter`] for a
    /// dictionary whose sorted view is not complete).
    fn iter_any(&self) -> impl Iterator<Item = (&Key, &Value)> {
        let (small, dict) = match &self.0 {
            Repr::Small { keys, vals } => (Some(keys.as_slice().iter().zip(vals.iter())), None),
            Repr::Dict(d) => (None, Some(d.map.iter().map(|(k, v)| (&k.0, v)))),
        };
        small
            .into_iter()
            .flatten()
            .chain(dict.into_iter().flatten())
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Small { vals, .. } => vals.len(),
            Repr::Dict(d) => d.map.len(),
        }
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether this is a dictionary (the hash-indexed representation);
    /// for tests and benches, never for behaviour.
    pub fn is_dict(&self) -> bool {
        matches!(self.0, Repr::Dict(_))
    }

    /// Sets `key` to `value`, in place: an update keeps the shared key
    /// array; a new key into a full small record makes it a dictionary.
    pub fn insert(&mut self, key: Key, value: Value) {
        match &mut self.0 {
            Repr::Small { keys, vals } => match keys.binary_search(key.as_str()) {
                Ok(i) => {
                    if let Some(slot) = vals.get_mut(i) {
                        *slot = value;
                    }
                }
                Err(i) if vals.len() < SMALL_MAX => {
                    let mut ks: Vec<Key> = Vec::with_capacity(keys.len() + 1);
                    ks.extend_from_slice(&keys.as_slice()[..i]);
                    ks.push(key);
                    ks.extend_from_slice(&keys.as_slice()[i..]);
                    *keys = Keys(ks.into());
                    vals.insert(i, value);
                }
                Err(_) => {
                    let old = std::mem::take(vals);
                    let mut d = Dict::from_sorted(keys.as_slice().iter().cloned().zip(old));
                    d.insert(key, value);
                    self.0 = Repr::Dict(Box::new(d));
                }
            },
            Repr::Dict(d) => d.insert(key, value),
        }
    }

    /// [`Record::insert`] with borrowed key text (copied only when the key
    /// is new).
    pub fn insert_str(&mut self, key: &str, value: Value) {
        let stored = self.get_entry(key).map(|(k, _)| k.clone());
        let key = stored.unwrap_or_else(|| Arc::new(key.to_owned()));
        self.insert(key, value);
    }

    /// This record with `key` set to `value` (a copy; see
    /// [`Record::insert`] for the in-place update).
    pub fn with(&self, key: &str, value: Value) -> Record {
        let mut r = self.clone();
        r.insert_str(key, value);
        r
    }

    /// Sets every entry of `other` in this record (`other`'s values win).
    pub fn extend_from(&mut self, other: &Record) {
        if self.is_empty() {
            *self = other.clone();
            return;
        }
        if let (Repr::Small { keys, vals }, Repr::Small { keys: ok, vals: ov }) =
            (&mut self.0, &other.0)
        {
            if keys.same(ok) {
                vals.clone_from(ov);
                return;
            }
            if vals.len() + ov.len() <= SMALL_MAX {
                let (k, v) = merge_small(keys.as_slice(), vals, ok.as_slice(), ov);
                *keys = Keys(k.into());
                *vals = v;
                return;
            }
        }
        for (k, v) in other.iter_any() {
            self.insert(k.clone(), v.clone());
        }
    }

    /// Structural equality, asking `go_on` between containers (see
    /// [`Value::equal_while`]); `None` when it said stop.
    pub(super) fn equal_while(
        &self,
        other: &Record,
        go_on: &mut dyn FnMut() -> bool,
    ) -> Option<bool> {
        if self.len() != other.len() {
            return Some(false);
        }
        match (&self.0, &other.0) {
            (Repr::Small { keys: ak, vals: av }, Repr::Small { keys: bk, vals: bv }) => {
                if !ak.same(bk) {
                    return Some(false);
                }
                for (a, b) in av.iter().zip(bv.iter()) {
                    if !a.equal_while(b, go_on)? {
                        return Some(false);
                    }
                }
                Some(true)
            }
            _ => {
                for (k, v) in self.iter_any() {
                    match other.get(k) {
                        Some(w) if v.equal_while(w, go_on)? => {}
                        _ => return Some(false),
                    }
                }
                Some(true)
            }
        }
    }
}

/// The sorted union of two small records' entries, `b`'s value winning on
/// a shared key.
fn merge_small(ak: &[Key], av: &mut [Value], bk: &[Key], bv: &[Value]) -> (Vec<Key>, Vec<Value>) {
    let mut keys = Vec::with_capacity(ak.len() + bk.len());
    let mut vals = Vec::with_capacity(ak.len() + bk.len());
    let (mut i, mut j) = (0, 0);
    loop {
        let ord = match (ak.get(i), bk.get(j)) {
            (Some(x), Some(y)) => x.as_str().cmp(y.as_str()),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match ord {
            Ordering::Less => {
                keys.push(ak[i].clone());
                vals.push(std::mem::take(&mut av[i]));
                i += 1;
            }
            Ordering::Greater => {
                keys.push(bk[j].clone());
                vals.push(bv[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                keys.push(bk[j].clone());
                vals.push(bv[j].clone());
                i += 1;
                j += 1;
            }
        }
    }
    (keys, vals)
}

/// A record's entries in sorted key order.
pub struct Iter<'a>(IterRepr<'a>);

enum IterRepr<'a> {
    Small(std::iter::Zip<std::slice::Iter<'a, Key>, std::slice::Iter<'a, Value>>),
    Dict {
        order: std::slice::Iter<'a, u32>,
        map: &'a IndexMap<DKey, Value, Hasher_>,
    },
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Key, &'a Value);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Small(it) => it.next(),
            IterRepr::Dict { order, map } => {
                let i = *order.next()?;
                map.get_index(i as usize).map(|(k, v)| (&k.0, v))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Small(it) => it.size_hint(),
            IterRepr::Dict { order, .. } => order.size_hint(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    impl Record {
        /// Structural equality run to the end (the tests never stop it).
        fn equal(&self, other: &Record) -> bool {
            self.equal_while(other, &mut || true) == Some(true)
        }
    }

    fn key(s: &str) -> Key {
        Arc::new(s.to_owned())
    }

    fn entries(r: &Record) -> Vec<(String, i64)> {
        r.iter()
            .map(|(k, v)| {
                let n = if let Value::Int(n) = v { *n } else { -1 };
                (k.to_string(), n)
            })
            .collect()
    }

    #[test]
    fn small_records_become_dictionaries_past_the_limit() {
        let mut r = Record::empty();
        for i in 0..SMALL_MAX {
            r.insert(key(&format!("k{i:03}")), Value::Int(i as i64));
        }
        assert!(!r.is_dict());
        r.insert(key("a"), Value::Int(-1));
        assert!(r.is_dict());
        assert_eq!(r.len(), SMALL_MAX + 1);
        assert_eq!(r.keys().next().map(|k| k.as_str()), Some("a"));
        assert_eq!(r.get("k007"), Some(&Value::Int(7)));
        // Updating keeps the count and the order.
        r.insert(key("k007"), Value::Int(70));
        assert_eq!(r.get("k007"), Some(&Value::Int(70)));
        assert_eq!(r.len(), SMALL_MAX + 1);
    }

    #[test]
    fn decoded_objects_past_the_limit_are_dictionaries_in_order() {
        let n = BUILD_SMALL_MAX + 5;
        let r = Record::from_entries(
            (0..n)
                .rev()
                .map(|i| (format!("x{i}"), Value::Int(i as i64)))
                .collect(),
        );
        assert!(r.is_dict());
        let mut want: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
        want.sort();
        let got: Vec<String> = r.keys().map(|k| k.to_string()).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn representations_compare_equal_on_entries() {
        // Twenty entries: a small record when built whole, a dictionary
        // when inserted one at a time.
        let whole =
            Record::from_entries((0..20).map(|i| (format!("k{i}"), Value::Int(i))).collect());
        let mut grown = Record::empty();
        for i in (0..20).rev() {
            grown.insert(key(&format!("k{i}")), Value::Int(i));
        }
        assert!(!whole.is_dict());
        assert!(grown.is_dict());
        assert!(whole.equal(&grown));
        assert!(grown.equal(&whole));
        assert_eq!(entries(&whole), entries(&grown));
        grown.insert(key("k3"), Value::Int(99));
        assert!(!whole.equal(&grown));
        assert!(!grown.equal(&whole));
    }

    #[derive(Clone, Debug)]
    enum Step {
        Insert(String, i64),
        Lookup(String),
        Iterate,
        /// Keep a copy, change the record, and check the copy is unchanged.
        Fork(String, i64),
        Spread(Vec<(String, i64)>),
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            // Few distinct keys: many updates.
            "[a-d]{1,2}",
            // Many distinct keys, sharing prefixes longer than eight bytes.
            "(prefix-long-)?[a-z0-9]{0,10}",
            // Unicode and the empty key.
            "[éa\u{1F600}]{0,3}",
        ]
    }

    fn step_strategy() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (key_strategy(), any::<i64>()).prop_map(|(k, v)| Step::Insert(k, v)),
            2 => key_strategy().prop_map(Step::Lookup),
            1 => Just(Step::Iterate),
            1 => (key_strategy(), any::<i64>()).prop_map(|(k, v)| Step::Fork(k, v)),
            1 => proptest::collection::vec((key_strategy(), any::<i64>()), 0..40)
                .prop_map(Step::Spread),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// A record behaves as a sorted map (the reference model) under any
        /// sequence of insertions, lookups, iterations, copies and spreads.
        #[test]
        fn record_matches_a_sorted_map(steps in proptest::collection::vec(step_strategy(), 0..300)) {
            let mut r = Record::empty();
            let mut model: BTreeMap<String, i64> = BTreeMap::new();
            for step in steps {
                match step {
                    Step::Insert(k, v) => {
                        r.insert(key(&k), Value::Int(v));
                        model.insert(k, v);
                    }
                    Step::Lookup(k) => {
                        prop_assert_eq!(r.get(&k).cloned(), model.get(&k).map(|v| Value::Int(*v)));
                        prop_assert_eq!(r.has(&k), model.contains_key(&k));
                    }
                    Step::Iterate => {
                        let want: Vec<(String, i64)> =
                            model.iter().map(|(k, v)| (k.clone(), *v)).collect();
                        prop_assert_eq!(entries(&r), want);
                    }
                    Step::Fork(k, v) => {
                        let before = entries(&r);
                        let copy = r.clone();
                        r.insert(key(&k), Value::Int(v));
                        model.insert(k, v);
                        prop_assert_eq!(entries(&copy), before);
                    }
                    Step::Spread(es) => {
                        let other = Record::from_entries(
                            es.iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect(),
                        );
                        let mut m2: BTreeMap<String, i64> = BTreeMap::new();
                        for (k, v) in es {
                            m2.insert(k, v);
                        }
                        r.extend_from(&other);
                        model.extend(m2);
                    }
                }
                prop_assert_eq!(r.len(), model.len());
            }
            let want: Vec<(String, i64)> = model.iter().map(|(k, v)| (k.clone(), *v)).collect();
            prop_assert_eq!(entries(&r), want.clone());
            // The same entries built whole compare equal, whatever the shapes.
            let whole = Record::from_entries(
                want.iter().map(|(k, v)| (k.clone(), Value::Int(*v))).collect(),
            );
            prop_assert!(whole.equal(&r));
            prop_assert!(r.equal(&whole));
        }
    }
}
