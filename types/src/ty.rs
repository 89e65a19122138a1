//! The type representation: a union-find graph of type nodes.
//!
//! Every type the checker handles is a [`Ty`], a `u32` handle to a node of a
//! [`TyStore`]. A node is one of three things:
//!
//! * a *link* to another node (union-find forwarding; [`TyStore::find`]
//!   follows links and compresses paths),
//! * an unbound *variable* ([`TyVar`]: its [`Sort`], its [`Kind`] and the
//!   provenance of that kind), or
//! * a *constructor* ([`Con`]) whose children are again `Ty` handles.
//!
//! Binding a variable turns its node into a link, so a substitution is never
//! applied: reading a type through `find` always sees the current solution.
//! Because children are handles, the graph may be cyclic, which is how the
//! equi-recursive types of the spec (`μβ. Map β`) are represented; the printer
//! finds the cycles. A binding is refused when it would close a cycle that
//! crosses no data edge (see [`Con::is_data_edge`]).
//!
//! Levels implement let-generalisation (Rémy's ranks, as in OCaml): every
//! variable records the `let` depth at which it was created, a constructor
//! node an upper bound of the levels below it, and binding a variable lowers
//! the levels of what it is bound to. A variable is **weak** exactly when its
//! level is [`WEAK_LEVEL`] (0): lower than any level a `let` generalises at, so
//! the mark is inherited by unification for free and never generalised.
//! Grade variables are never weak: lowering clamps them to [`TOP_LEVEL`].
//!
//! A [`Scheme`] is a small closed arena of its own, not nodes of a store: it
//! can outlive the store (the builtin table, session bindings carried into the
//! next run) and instantiation is one linear copy. A scheme produced by
//! [`TyStore::generalize`] may point back into its store at monomorphic parts
//! ([`SchemeNode::Free`]); such a scheme is only meaningful with that store.
//!
//! **Representation.** The store holds each node packed in 16 bytes
//! (`Packed`): a large unit has millions of nodes, and their size was the
//! largest part of the checker's memory. The methods read and write the
//! decoded `Node` (`node`, `set`, `push`); `find` and level reads look at the
//! packed words directly. Two limits come with the packing, both far beyond
//! real programs: a level is below 2^31, and one row node holds at most
//! 2^24 − 1 fields ([`TyStore::row`] chains longer rows, which are the same
//! row to every reader, since rows are read through their tails).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::fmt;
use std::sync::{OnceLock, RwLock};

// ---------------------------------------------------------------------------
// Handles, labels, sorts
// ---------------------------------------------------------------------------

/// A handle to a node of a [`TyStore`]: a type, possibly a variable.
///
/// Handles are only meaningful for the store that made them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ty(u32);

impl Ty {
    /// The node's position in its store; stable for the store's life.
    pub fn index(self) -> u32 {
        self.0
    }
}

/// Identity of a quantified variable inside a [`Scheme`] (its arena index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TyVarId(pub u32);

/// An interned record-field or variant-tag name.
///
/// Labels are interned process-wide, so schemes built in one place (the
/// builtin table) use the same labels as every store. Which alphabet a label
/// belongs to is decided by the row that holds it, never by the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(u32);

struct Interner {
    names: Vec<&'static str>,
    ids: HashMap<&'static str, u32>,
}

fn interner() -> &'static RwLock<Interner> {
    static INTERNER: OnceLock<RwLock<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        RwLock::new(Interner {
            names: Vec::new(),
            ids: HashMap::default(),
        })
    })
}

impl Label {
    /// Interns `name`. Each distinct name is leaked once, for the life of the process.
    pub fn intern(name: &str) -> Label {
        {
            let read = interner().read().unwrap_or_else(|e| e.into_inner());
            if let Some(&id) = read.ids.get(name) {
                return Label(id);
            }
        }
        let mut write = interner().write().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = write.ids.get(name) {
            return Label(id);
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        let id = write.names.len() as u32;
        write.names.push(leaked);
        write.ids.insert(leaked, id);
        Label(id)
    }

    /// The label's text.
    pub fn as_str(self) -> &'static str {
        let read = interner().read().unwrap_or_else(|e| e.into_inner());
        read.names.get(self.0 as usize).copied().unwrap_or("?")
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two label alphabets. Record labels and variant tags never unify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Alphabet {
    /// Record field labels (`[name: String]`).
    Field,
    /// Variant tags (`` <`ok A | `err E> ``).
    Tag,
}

/// The syntactic category of a type or variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sort {
    /// A value type `A`.
    Value,
    /// A computation type `C`.
    Comp,
    /// A row over the given alphabet.
    Row(Alphabet),
    /// A grade ε ∈ {p, w}.
    Grade,
}

impl fmt::Display for Sort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Sort::Value => "value type",
            Sort::Comp => "computation type",
            Sort::Row(Alphabet::Field) => "record row",
            Sort::Row(Alphabet::Tag) => "variant row",
            Sort::Grade => "grade",
        })
    }
}

/// A contiguous run of `(label, child)` pairs in the owner's field pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldRange {
    start: u32,
    len: u32,
}

impl FieldRange {
    /// The number of fields in the run.
    pub fn len(self) -> usize {
        self.len as usize
    }

    /// Whether the run is empty.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

// ---------------------------------------------------------------------------
// Constructors
// ---------------------------------------------------------------------------

/// A type constructor with children of type `T` (`Ty` in a store, arena
/// indices in a [`Scheme`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Con<T> {
    /// `Unit`.
    Unit,
    /// `Bool`.
    Bool,
    /// `Int` (printed `Integer`).
    Int,
    /// `Float`.
    Float,
    /// `String`.
    String,
    /// `Bytes`.
    Bytes,
    /// `List A`, printed `[A]`.
    List(T),
    /// `Map A`: string keys, homogeneous values.
    Map(T),
    /// `Record ρ` over a field row.
    Record(T),
    /// `Variant ρ` over a tag row.
    Variant(T),
    /// `U C`, printed `{C}`: a suspended computation.
    Thunk(T),
    /// `Handle A`: a worker handle.
    Handle(T),
    /// `F_ε A`: printed `Returns A` (ε = p), `Command` (ε = w, A = Unit), `ν A`.
    Returns {
        /// The grade (sort [`Sort::Grade`]).
        grade: T,
        /// The value produced (sort [`Sort::Value`]).
        value: T,
    },
    /// `A -> C`.
    Arrow {
        /// The parameter (a value type).
        param: T,
        /// The result (a computation type).
        result: T,
    },
    /// The empty row `·`.
    RowEmpty(Alphabet),
    /// `l1: A1, …, ln: An, ρ`: one or more fields in written order, then a tail row.
    Row {
        /// The alphabet of the labels.
        alphabet: Alphabet,
        /// The fields, in the owner's pool.
        fields: FieldRange,
        /// The rest of the row.
        tail: T,
    },
    /// Grade `p`: the result is a value.
    Pure,
    /// Grade `w`: the result is the output.
    Write,
    /// A type already reported as wrong; unifies with everything.
    Error,
}

impl<T: Copy> Con<T> {
    /// The sort of types with this constructor at the head.
    pub fn sort(&self) -> Sort {
        match self {
            Con::Unit
            | Con::Bool
            | Con::Int
            | Con::Float
            | Con::String
            | Con::Bytes
            | Con::List(_)
            | Con::Map(_)
            | Con::Record(_)
            | Con::Variant(_)
            | Con::Thunk(_)
            | Con::Handle(_)
            | Con::Error => Sort::Value,
            Con::Returns { .. } | Con::Arrow { .. } => Sort::Comp,
            Con::RowEmpty(a) | Con::Row { alphabet: a, .. } => Sort::Row(*a),
            Con::Pure | Con::Write => Sort::Grade,
        }
    }

    /// The head bit of a value constructor, for kind checks.
    pub fn head(&self) -> Option<HeadSet> {
        Some(match self {
            Con::Unit => HeadSet::UNIT,
            Con::Bool => HeadSet::BOOL,
            Con::Int => HeadSet::INT,
            Con::Float => HeadSet::FLOAT,
            Con::String => HeadSet::STRING,
            Con::Bytes => HeadSet::BYTES,
            Con::List(_) => HeadSet::LIST,
            Con::Map(_) => HeadSet::MAP,
            Con::Record(_) => HeadSet::RECORD,
            Con::Variant(_) => HeadSet::VARIANT,
            Con::Thunk(_) => HeadSet::THUNK,
            Con::Handle(_) => HeadSet::HANDLE,
            Con::Returns { .. }
            | Con::Arrow { .. }
            | Con::RowEmpty(_)
            | Con::Row { .. }
            | Con::Pure
            | Con::Write
            | Con::Error => return None,
        })
    }

    /// Children other than row fields, each with whether the edge to it is a
    /// *data* edge. Row fields (always data edges) are read from the pool.
    ///
    /// Data edges are list and map elements and row fields; a cycle must cross
    /// one. `U`, `->`, `F`, `Handle`, a record's or variant's row and a row's
    /// tail are not data edges, so `ρ = (l: A, ρ)` and `α = {α}` are refused.
    pub fn children(&self) -> ([Option<(T, bool)>; 2], Option<FieldRange>) {
        match *self {
            Con::Unit
            | Con::Bool
            | Con::Int
            | Con::Float
            | Con::String
            | Con::Bytes
            | Con::Pure
            | Con::Write
            | Con::Error
            | Con::RowEmpty(_) => ([None, None], None),
            Con::List(t) | Con::Map(t) => ([Some((t, true)), None], None),
            Con::Record(t) | Con::Variant(t) | Con::Thunk(t) | Con::Handle(t) => {
                ([Some((t, false)), None], None)
            }
            Con::Returns { grade, value } => ([Some((grade, false)), Some((value, false))], None),
            Con::Arrow { param, result } => ([Some((param, false)), Some((result, false))], None),
            Con::Row { fields, tail, .. } => ([Some((tail, false)), None], Some(fields)),
        }
    }

    /// Rebuilds the constructor with children mapped by `f` (fields excluded:
    /// the caller supplies the new range).
    pub fn map<U>(&self, mut f: impl FnMut(T) -> U, fields: Option<FieldRange>) -> Con<U> {
        match *self {
            Con::Unit => Con::Unit,
            Con::Bool => Con::Bool,
            Con::Int => Con::Int,
            Con::Float => Con::Float,
            Con::String => Con::String,
            Con::Bytes => Con::Bytes,
            Con::List(t) => Con::List(f(t)),
            Con::Map(t) => Con::Map(f(t)),
            Con::Record(t) => Con::Record(f(t)),
            Con::Variant(t) => Con::Variant(f(t)),
            Con::Thunk(t) => Con::Thunk(f(t)),
            Con::Handle(t) => Con::Handle(f(t)),
            Con::Returns { grade, value } => Con::Returns {
                grade: f(grade),
                value: f(value),
            },
            Con::Arrow { param, result } => Con::Arrow {
                param: f(param),
                result: f(result),
            },
            Con::RowEmpty(a) => Con::RowEmpty(a),
            Con::Row {
                alphabet,
                fields: old,
                tail,
            } => Con::Row {
                alphabet,
                fields: fields.unwrap_or(old),
                tail: f(tail),
            },
            Con::Pure => Con::Pure,
            Con::Write => Con::Write,
            Con::Error => Con::Error,
        }
    }
}

// ---------------------------------------------------------------------------
// Kinds
// ---------------------------------------------------------------------------

/// A set of value-type heads, as a bit set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HeadSet(pub u16);

impl HeadSet {
    /// `Unit`.
    pub const UNIT: HeadSet = HeadSet(1 << 0);
    /// `Bool`.
    pub const BOOL: HeadSet = HeadSet(1 << 1);
    /// `Int`.
    pub const INT: HeadSet = HeadSet(1 << 2);
    /// `Float`.
    pub const FLOAT: HeadSet = HeadSet(1 << 3);
    /// `String`.
    pub const STRING: HeadSet = HeadSet(1 << 4);
    /// `Bytes`.
    pub const BYTES: HeadSet = HeadSet(1 << 5);
    /// `List`.
    pub const LIST: HeadSet = HeadSet(1 << 6);
    /// `Map`.
    pub const MAP: HeadSet = HeadSet(1 << 7);
    /// `Record`.
    pub const RECORD: HeadSet = HeadSet(1 << 8);
    /// `Variant`.
    pub const VARIANT: HeadSet = HeadSet(1 << 9);
    /// `U` (thunks).
    pub const THUNK: HeadSet = HeadSet(1 << 10);
    /// `Handle`.
    pub const HANDLE: HeadSet = HeadSet(1 << 11);
    /// Every head.
    pub const ALL: HeadSet = HeadSet((1 << 12) - 1);
    /// Every head but `U` and `Handle`.
    pub const DATA: HeadSet = HeadSet(Self::ALL.0 & !(Self::THUNK.0 | Self::HANDLE.0));
    /// The heads without children.
    pub const NULLARY: HeadSet = HeadSet(0b11_1111);

    /// Heads in both sets.
    pub const fn and(self, other: HeadSet) -> HeadSet {
        HeadSet(self.0 & other.0)
    }

    /// Heads in either set.
    pub const fn or(self, other: HeadSet) -> HeadSet {
        HeadSet(self.0 | other.0)
    }

    /// Whether every head of `other` is in `self`.
    pub const fn contains(self, other: HeadSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The heads with their printed names, in a fixed order.
    pub const NAMES: [(HeadSet, &'static str); 12] = [
        (HeadSet::UNIT, "Unit"),
        (HeadSet::BOOL, "Bool"),
        (HeadSet::INT, "Integer"),
        (HeadSet::FLOAT, "Float"),
        (HeadSet::STRING, "String"),
        (HeadSet::BYTES, "Bytes"),
        (HeadSet::LIST, "List"),
        (HeadSet::MAP, "Map"),
        (HeadSet::RECORD, "Record"),
        (HeadSet::VARIANT, "Variant"),
        (HeadSet::THUNK, "Thunk"),
        (HeadSet::HANDLE, "Handle"),
    ];
}

/// The kind of a value variable: the heads it admits and whether the demand
/// is *deep* (every component must be data too). A row variable uses only
/// `deep`, which it passes on to fields added later.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kind {
    /// Admissible heads.
    pub heads: HeadSet,
    /// Whether components are constrained to `data` as well.
    pub deep: bool,
}

impl Kind {
    /// Every head, shallow: the unconstrained kind.
    pub const ANY: Kind = Kind::new(HeadSet::ALL, false);
    /// `Int`, `Float`: arithmetic.
    pub const NUMBER: Kind = Kind::new(HeadSet::INT.or(HeadSet::FLOAT), false);
    /// `Int`, `Float`, `String`: ordering.
    pub const COMPARABLE: Kind =
        Kind::new(HeadSet::INT.or(HeadSet::FLOAT).or(HeadSet::STRING), false);
    /// `Bool`, `Int`, `Float`, `String`: interpolation.
    pub const SCALAR: Kind = Kind::new(
        HeadSet::BOOL
            .or(HeadSet::INT)
            .or(HeadSet::FLOAT)
            .or(HeadSet::STRING),
        false,
    );
    /// `String`, `Bytes`, `List`, `Map`: `length`, `is-empty`.
    pub const SIZED: Kind = Kind::new(
        HeadSet::STRING
            .or(HeadSet::BYTES)
            .or(HeadSet::LIST)
            .or(HeadSet::MAP),
        false,
    );
    /// Every head but `U` and `Handle`, recursively: equality, `str`, encoders.
    pub const DATA: Kind = Kind::new(HeadSet::DATA, true);

    /// The named kinds with their printed names.
    pub const NAMED: [(Kind, &'static str); 6] = [
        (Kind::ANY, "any"),
        (Kind::NUMBER, "number"),
        (Kind::COMPARABLE, "comparable"),
        (Kind::SCALAR, "scalar"),
        (Kind::SIZED, "sized"),
        (Kind::DATA, "data"),
    ];

    /// A kind in normal form: a deep kind admits only data heads, and a kind
    /// whose heads are all nullary is shallow (there is nothing below them).
    pub const fn new(heads: HeadSet, deep: bool) -> Kind {
        let heads = if deep {
            heads.and(HeadSet::DATA)
        } else {
            heads
        };
        let deep = deep && !HeadSet::NULLARY.contains(heads);
        Kind { heads, deep }
    }

    /// The meet: heads both admit, deep if either is. May be empty.
    pub const fn meet(self, other: Kind) -> Kind {
        Kind::new(self.heads.and(other.heads), self.deep || other.deep)
    }

    /// Whether no type has this kind.
    pub const fn is_empty(self) -> bool {
        self.heads.is_empty()
    }

    /// Whether the head `head` is admitted.
    pub const fn admits(self, head: HeadSet) -> bool {
        self.heads.contains(head)
    }

    /// The one nullary constructor this kind admits, if it admits exactly one
    /// head and that head is nullary; a variable of such a kind is bound to it.
    pub fn singleton<T: Copy>(self) -> Option<Con<T>> {
        if self.heads.0.count_ones() != 1 || !HeadSet::NULLARY.contains(self.heads) {
            return None;
        }
        Some(match self.heads {
            HeadSet::UNIT => Con::Unit,
            HeadSet::BOOL => Con::Bool,
            HeadSet::INT => Con::Int,
            HeadSet::FLOAT => Con::Float,
            HeadSet::STRING => Con::String,
            HeadSet::BYTES => Con::Bytes,
            HeadSet(_) => return None,
        })
    }

    /// The spec's name for this kind, when it has one.
    pub fn name(self) -> Option<&'static str> {
        Kind::NAMED
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, name)| *name)
    }
}

impl fmt::Display for Kind {
    /// A named kind prints its name; `k+data` is a named kind made deep;
    /// anything else lists its heads, `(Integer|String)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.name() {
            return f.write_str(name);
        }
        if self.deep {
            if let Some((_, name)) = Kind::NAMED
                .iter()
                .find(|(k, _)| k.meet(Kind::DATA) == *self)
            {
                return write!(f, "{name}+data");
            }
        }
        f.write_str("(")?;
        let mut first = true;
        for (head, name) in HeadSet::NAMES {
            if self.heads.contains(head) {
                if !first {
                    f.write_str("|")?;
                }
                first = false;
                f.write_str(name)?;
            }
        }
        f.write_str(")")?;
        if self.deep {
            f.write_str("+data")?;
        }
        Ok(())
    }
}

/// Where a kind constraint came from, as an index the inference engine
/// assigns (e.g. into its table of spans); carried for `T0074`, which cites
/// both uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Provenance(pub u32);

/// An unbound variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TyVar {
    /// What the variable stands for.
    pub sort: Sort,
    /// Its kind; only `deep` matters for rows, and comp/grade variables are `ANY`.
    pub kind: Kind,
    /// The use that first constrained `kind`, if any.
    pub origin: Option<Provenance>,
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Which side of a unification a fact belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The first argument of [`TyStore::unify`]: what the context demands.
    Expected,
    /// The second argument: what the term has.
    Found,
}

impl Side {
    fn flip(self) -> Side {
        match self {
            Side::Expected => Side::Found,
            Side::Found => Side::Expected,
        }
    }
}

/// Why two types do not unify. Types are handles into the store, to be printed
/// (with one [`crate::print::TyPrinter`], so names agree) when reported.
///
/// Unification is not transactional: bindings made before the failure stay,
/// which only refines types the diagnostic mentions. Use
/// [`TyStore::snapshot`] to probe without committing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnifyError {
    /// The innermost pair of constructors that differ, e.g. `Integer` vs
    /// `String`, `Command` vs `Returns String`, `[A]` vs `Map A`, a record vs
    /// a variant.
    Mismatch {
        /// The expected type at the point of disagreement.
        expected: Ty,
        /// The found type at the point of disagreement.
        found: Ty,
    },
    /// One row has a label the other row, which is closed, lacks: a missing
    /// record field, an unknown field, or a tag a closed variant cannot carry.
    MissingLabel {
        /// The label.
        label: Label,
        /// Whether it is a record field or a variant tag.
        alphabet: Alphabet,
        /// The side whose row lacks the label.
        missing_on: Side,
        /// The closed row lacking the label.
        row: Ty,
        /// The type of the label on the side that has it.
        field: Ty,
    },
    /// A kinded variable was bound to a type its kind does not admit, e.g.
    /// `+` (kind `number`) applied to a `String`.
    KindViolation {
        /// The variable's kind.
        kind: Kind,
        /// Where the kind came from.
        origin: Option<Provenance>,
        /// The side the variable was on.
        var_on: Side,
        /// The type it was to be bound to.
        found: Ty,
    },
    /// Two kinded variables with no head in common met (`T0074`).
    KindConflict {
        /// The kind on the expected side.
        expected: Kind,
        /// Where it came from.
        expected_origin: Option<Provenance>,
        /// The kind on the found side.
        found: Kind,
        /// Where it came from.
        found_origin: Option<Provenance>,
    },
    /// A deep `data` demand (equality, `str`, an encoder) reached a thunk or a
    /// handle, at any depth.
    NotData {
        /// The offending thunk or handle type.
        found: Ty,
        /// Where the data demand came from.
        origin: Option<Provenance>,
    },
    /// Binding `var` to `ty` would make an infinite type whose cycle crosses no
    /// data edge: self-application, a function returning itself, `ρ = (l, ρ)`.
    Infinite {
        /// The variable.
        var: Ty,
        /// The type containing it.
        ty: Ty,
    },
    /// Types of different sorts met; an inference-engine bug, not a user error.
    SortMismatch {
        /// The expected sort.
        expected: Sort,
        /// The found sort.
        found: Sort,
    },
}

impl UnifyError {
    fn flipped(self) -> UnifyError {
        match self {
            UnifyError::Mismatch { expected, found } => UnifyError::Mismatch {
                expected: found,
                found: expected,
            },
            UnifyError::MissingLabel {
                label,
                alphabet,
                missing_on,
                row,
                field,
            } => UnifyError::MissingLabel {
                label,
                alphabet,
                missing_on: missing_on.flip(),
                row,
                field,
            },
            UnifyError::KindViolation {
                kind,
                origin,
                var_on,
                found,
            } => UnifyError::KindViolation {
                kind,
                origin,
                var_on: var_on.flip(),
                found,
            },
            UnifyError::KindConflict {
                expected,
                expected_origin,
                found,
                found_origin,
            } => UnifyError::KindConflict {
                expected: found,
                expected_origin: found_origin,
                found: expected,
                found_origin: expected_origin,
            },
            UnifyError::SortMismatch { expected, found } => UnifyError::SortMismatch {
                expected: found,
                found: expected,
            },
            e @ (UnifyError::NotData { .. } | UnifyError::Infinite { .. }) => e,
        }
    }
}

// ---------------------------------------------------------------------------
// The store
// ---------------------------------------------------------------------------

/// The level of weak variables: below every generalisation level.
pub const WEAK_LEVEL: u32 = 0;
/// The level of a unit's top level; a top-level `let` generalises above it.
pub const TOP_LEVEL: u32 = 1;

#[derive(Clone, Copy, Debug)]
enum Term {
    Link(Ty),
    Var(TyVar),
    /// `data` caches that every component has been checked to be data.
    Con {
        con: Con<Ty>,
        data: bool,
    },
}

/// A node as the store's methods read and write it; [`Packed`] is how it
/// is held.
#[derive(Clone, Copy, Debug)]
struct Node {
    term: Term,
    /// Variables: the let depth. Constructors: an upper bound of the levels below.
    level: u32,
}

/// A node as the store holds it: four words, 16 bytes (a [`Node`] is 24).
/// A large program's store has millions of nodes, and their size was the
/// largest part of the checker's memory, so the node is packed by hand:
///
/// ```text
///  a, b   payload: a link's target; a variable's provenance (in a);
///         a constructor's children (a row: a = first field, b = tail)
///  c      bits 24..32: the tag (TAG_*); bits 0..24: a variable's kind and
///         sort (VAR_*), or a row's field count
///  d      bits 0..31: the level; bit 31: a constructor's `data` mark
/// ```
///
/// A row node holds at most [`MAX_ROW_FIELDS`] fields; [`TyStore::row`]
/// chains longer rows, which mean the same type.
#[derive(Clone, Copy, Debug)]
struct Packed {
    a: u32,
    b: u32,
    c: u32,
    d: u32,
}

const _: () = assert!(std::mem::size_of::<Packed>() == 16);

/// The most fields one row node holds (a 24-bit count).
const MAX_ROW_FIELDS: usize = 0x00FF_FFFF;
const LOW24: u32 = 0x00FF_FFFF;
const DATA_BIT: u32 = 1 << 31;

const TAG_LINK: u32 = 0;
const TAG_VAR: u32 = 1;
const TAG_VAR_ORIGIN: u32 = 2;
const TAG_UNIT: u32 = 3;
const TAG_BOOL: u32 = 4;
const TAG_INT: u32 = 5;
const TAG_FLOAT: u32 = 6;
const TAG_STRING: u32 = 7;
const TAG_BYTES: u32 = 8;
const TAG_LIST: u32 = 9;
const TAG_MAP: u32 = 10;
const TAG_RECORD: u32 = 11;
const TAG_VARIANT: u32 = 12;
const TAG_THUNK: u32 = 13;
const TAG_HANDLE: u32 = 14;
const TAG_RETURNS: u32 = 15;
const TAG_ARROW: u32 = 16;
const TAG_ROW_EMPTY_FIELD: u32 = 17;
const TAG_ROW_EMPTY_TAG: u32 = 18;
const TAG_ROW_FIELD: u32 = 19;
const TAG_ROW_TAG: u32 = 20;
const TAG_PURE: u32 = 21;
const TAG_WRITE: u32 = 22;
const TAG_ERROR: u32 = 23;

/// A variable's kind and sort in 20 bits: heads in bits 0..16, deep in
/// bit 16, the sort in bits 17..20.
const VAR_DEEP: u32 = 1 << 16;
const VAR_SORT_SHIFT: u32 = 17;

impl Packed {
    /// The target, if the node is a link (without decoding the rest).
    #[inline]
    fn link(self) -> Option<Ty> {
        (self.c >> 24 == TAG_LINK).then_some(Ty(self.a))
    }

    /// The level (without decoding the rest).
    #[inline]
    fn level(self) -> u32 {
        self.d & !DATA_BIT
    }

    fn new(node: Node) -> Packed {
        let Node { term, level } = node;
        debug_assert!(level < DATA_BIT, "level {level} out of range");
        let (tag, a, b, low, data) = match term {
            Term::Link(t) => (TAG_LINK, t.0, 0, 0, false),
            Term::Var(v) => {
                let sort = match v.sort {
                    Sort::Value => 0,
                    Sort::Comp => 1,
                    Sort::Row(Alphabet::Field) => 2,
                    Sort::Row(Alphabet::Tag) => 3,
                    Sort::Grade => 4,
                };
                let low = u32::from(v.kind.heads.0)
                    | if v.kind.deep { VAR_DEEP } else { 0 }
                    | sort << VAR_SORT_SHIFT;
                match v.origin {
                    Some(Provenance(p)) => (TAG_VAR_ORIGIN, p, 0, low, false),
                    None => (TAG_VAR, 0, 0, low, false),
                }
            }
            Term::Con { con, data } => {
                let (tag, a, b, low) = match con {
                    Con::Unit => (TAG_UNIT, 0, 0, 0),
                    Con::Bool => (TAG_BOOL, 0, 0, 0),
                    Con::Int => (TAG_INT, 0, 0, 0),
                    Con::Float => (TAG_FLOAT, 0, 0, 0),
                    Con::String => (TAG_STRING, 0, 0, 0),
                    Con::Bytes => (TAG_BYTES, 0, 0, 0),
                    Con::List(t) => (TAG_LIST, t.0, 0, 0),
                    Con::Map(t) => (TAG_MAP, t.0, 0, 0),
                    Con::Record(t) => (TAG_RECORD, t.0, 0, 0),
                    Con::Variant(t) => (TAG_VARIANT, t.0, 0, 0),
                    Con::Thunk(t) => (TAG_THUNK, t.0, 0, 0),
                    Con::Handle(t) => (TAG_HANDLE, t.0, 0, 0),
                    Con::Returns { grade, value } => (TAG_RETURNS, grade.0, value.0, 0),
                    Con::Arrow { param, result } => (TAG_ARROW, param.0, result.0, 0),
                    Con::RowEmpty(Alphabet::Field) => (TAG_ROW_EMPTY_FIELD, 0, 0, 0),
                    Con::RowEmpty(Alphabet::Tag) => (TAG_ROW_EMPTY_TAG, 0, 0, 0),
                    Con::Row {
                        alphabet,
                        fields,
                        tail,
                    } => {
                        debug_assert!(fields.len() <= MAX_ROW_FIELDS);
                        let tag = match alphabet {
                            Alphabet::Field => TAG_ROW_FIELD,
                            Alphabet::Tag => TAG_ROW_TAG,
                        };
                        (tag, fields.start, tail.0, fields.len & LOW24)
                    }
                    Con::Pure => (TAG_PURE, 0, 0, 0),
                    Con::Write => (TAG_WRITE, 0, 0, 0),
                    Con::Error => (TAG_ERROR, 0, 0, 0),
                };
                (tag, a, b, low, data)
            }
        };
        Packed {
            a,
            b,
            c: tag << 24 | low,
            d: level | if data { DATA_BIT } else { 0 },
        }
    }

    fn get(self) -> Node {
        let Packed { a, b, c, d } = self;
        let low = c & LOW24;
        let level = d & !DATA_BIT;
        let data = d & DATA_BIT != 0;
        let con = |con: Con<Ty>| Term::Con { con, data };
        let term = match c >> 24 {
            TAG_LINK => Term::Link(Ty(a)),
            tag @ (TAG_VAR | TAG_VAR_ORIGIN) => {
                let sort = match low >> VAR_SORT_SHIFT {
                    0 => Sort::Value,
                    1 => Sort::Comp,
                    2 => Sort::Row(Alphabet::Field),
                    3 => Sort::Row(Alphabet::Tag),
                    _ => Sort::Grade,
                };
                Term::Var(TyVar {
                    sort,
                    kind: Kind {
                        heads: HeadSet(low as u16),
                        deep: low & VAR_DEEP != 0,
                    },
                    origin: (tag == TAG_VAR_ORIGIN).then_some(Provenance(a)),
                })
            }
            TAG_UNIT => con(Con::Unit),
            TAG_BOOL => con(Con::Bool),
            TAG_INT => con(Con::Int),
            TAG_FLOAT => con(Con::Float),
            TAG_STRING => con(Con::String),
            TAG_BYTES => con(Con::Bytes),
            TAG_LIST => con(Con::List(Ty(a))),
            TAG_MAP => con(Con::Map(Ty(a))),
            TAG_RECORD => con(Con::Record(Ty(a))),
            TAG_VARIANT => con(Con::Variant(Ty(a))),
            TAG_THUNK => con(Con::Thunk(Ty(a))),
            TAG_HANDLE => con(Con::Handle(Ty(a))),
            TAG_RETURNS => con(Con::Returns {
                grade: Ty(a),
                value: Ty(b),
            }),
            TAG_ARROW => con(Con::Arrow {
                param: Ty(a),
                result: Ty(b),
            }),
            TAG_ROW_EMPTY_FIELD => con(Con::RowEmpty(Alphabet::Field)),
            TAG_ROW_EMPTY_TAG => con(Con::RowEmpty(Alphabet::Tag)),
            tag @ (TAG_ROW_FIELD | TAG_ROW_TAG) => con(Con::Row {
                alphabet: if tag == TAG_ROW_FIELD {
                    Alphabet::Field
                } else {
                    Alphabet::Tag
                },
                fields: FieldRange { start: a, len: low },
                tail: Ty(b),
            }),
            TAG_PURE => con(Con::Pure),
            TAG_WRITE => con(Con::Write),
            _ => con(Con::Error),
        };
        Node { term, level }
    }
}

/// A point [`TyStore::rollback_to`] can return to.
#[derive(Debug)]
#[must_use]
pub struct Snapshot {
    nodes: usize,
    fields: usize,
    undo: usize,
    level: u32,
}

/// What a type node is, read through `find`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TyView {
    /// An unbound variable, and whether it is weak.
    Var(TyVar, bool),
    /// A constructor.
    Con(Con<Ty>),
}

/// The arena of type nodes for one compilation unit, with the current level.
#[derive(Debug)]
pub struct TyStore {
    nodes: Vec<Packed>,
    fields: Vec<(Label, Ty)>,
    level: u32,
    /// Scratch for [`TyStore::reaches_without_data`]: the nodes it visited.
    visited: HashSet<Ty>,
    undo: Vec<(Ty, Packed)>,
    snapshots: u32,
    seen: HashSet<(Ty, Ty)>,
    common: [Ty; 9],
}

impl Default for TyStore {
    fn default() -> Self {
        Self::new()
    }
}

impl TyStore {
    /// An empty store at [`TOP_LEVEL`].
    pub fn new() -> TyStore {
        TyStore::with_capacity(1024, 0)
    }

    /// An empty store with room for `nodes` nodes and `fields` row fields.
    /// A store that grows by doubling copies all its nodes each time, and
    /// for a large unit those copies miss the cache on both ends.
    pub fn with_capacity(nodes: usize, fields: usize) -> TyStore {
        let mut store = TyStore {
            nodes: Vec::with_capacity(nodes.max(16)),
            fields: Vec::with_capacity(fields),
            level: TOP_LEVEL,
            visited: HashSet::default(),
            undo: Vec::new(),
            snapshots: 0,
            seen: HashSet::default(),
            common: [Ty(0); 9],
        };
        let cons = [
            Con::Unit,
            Con::Bool,
            Con::Int,
            Con::Float,
            Con::String,
            Con::Bytes,
            Con::Pure,
            Con::Write,
            Con::Error,
        ];
        for (i, con) in cons.into_iter().enumerate() {
            let ty = store.push(Term::Con { con, data: true }, WEAK_LEVEL);
            if let Some(slot) = store.common.get_mut(i) {
                *slot = ty;
            }
        }
        store
    }

    fn push(&mut self, term: Term, level: u32) -> Ty {
        let ty = Ty(self.nodes.len() as u32);
        self.nodes.push(Packed::new(Node { term, level }));
        ty
    }

    fn node(&self, t: Ty) -> Node {
        self.nodes[t.0 as usize].get()
    }

    fn set(&mut self, t: Ty, term: Term, level: u32) {
        let slot = &mut self.nodes[t.0 as usize];
        if self.snapshots > 0 {
            self.undo.push((t, *slot));
        }
        *slot = Packed::new(Node { term, level });
    }

    /// The number of nodes allocated so far.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether no node has been allocated (never true: constants are preallocated).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    // ---- levels -----------------------------------------------------------

    /// The current level: fresh variables are created at it.
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Enters the right-hand side of a `let` (one level deeper).
    pub fn enter_level(&mut self) {
        self.level += 1;
    }

    /// Leaves it; [`TyStore::generalize`] then quantifies what lies deeper.
    pub fn exit_level(&mut self) {
        self.level = self.level.saturating_sub(1).max(TOP_LEVEL);
    }

    // ---- construction -----------------------------------------------------

    fn fresh(&mut self, sort: Sort, kind: Kind, origin: Option<Provenance>, level: u32) -> Ty {
        self.push(Term::Var(TyVar { sort, kind, origin }), level)
    }

    /// A fresh value variable of kind `any`.
    pub fn fresh_value(&mut self) -> Ty {
        self.fresh(Sort::Value, Kind::ANY, None, self.level)
    }

    /// A fresh value variable of the given kind, constrained at `origin`.
    pub fn fresh_kinded(&mut self, kind: Kind, origin: Option<Provenance>) -> Ty {
        if let Some(con) = kind.singleton() {
            return self.mk(con);
        }
        self.fresh(Sort::Value, kind, origin, self.level)
    }

    /// A fresh weak value variable (a boundary's or a computed index's).
    pub fn fresh_weak(&mut self) -> Ty {
        self.fresh(Sort::Value, Kind::ANY, None, WEAK_LEVEL)
    }

    /// A fresh computation variable.
    pub fn fresh_comp(&mut self) -> Ty {
        self.fresh(Sort::Comp, Kind::ANY, None, self.level)
    }

    /// A fresh row variable over `alphabet`.
    pub fn fresh_row(&mut self, alphabet: Alphabet) -> Ty {
        self.fresh(Sort::Row(alphabet), Kind::ANY, None, self.level)
    }

    /// A fresh grade variable.
    pub fn fresh_grade(&mut self) -> Ty {
        self.fresh(Sort::Grade, Kind::ANY, None, self.level)
    }

    /// A fresh variable of the given sort.
    pub fn fresh_of(&mut self, sort: Sort) -> Ty {
        self.fresh(sort, Kind::ANY, None, self.level)
    }

    /// A node for `con`. Nullary constructors are shared.
    pub fn mk(&mut self, con: Con<Ty>) -> Ty {
        let shared = match con {
            Con::Unit => Some(0),
            Con::Bool => Some(1),
            Con::Int => Some(2),
            Con::Float => Some(3),
            Con::String => Some(4),
            Con::Bytes => Some(5),
            Con::Pure => Some(6),
            Con::Write => Some(7),
            Con::Error => Some(8),
            Con::List(_)
            | Con::Map(_)
            | Con::Record(_)
            | Con::Variant(_)
            | Con::Thunk(_)
            | Con::Handle(_)
            | Con::Returns { .. }
            | Con::Arrow { .. }
            | Con::RowEmpty(_)
            | Con::Row { .. } => None,
        };
        if let Some(ty) = shared.and_then(|i: usize| self.common.get(i).copied()) {
            return ty;
        }
        let level = self.level_bound(&con);
        self.push(Term::Con { con, data: false }, level)
    }

    /// A node for `con` that is never shared, so a side table can say where
    /// this occurrence of the type came from (diagnostic provenance).
    pub fn mk_unshared(&mut self, con: Con<Ty>) -> Ty {
        let level = self.level_bound(&con);
        let data = matches!(
            con,
            Con::Unit | Con::Bool | Con::Int | Con::Float | Con::String | Con::Bytes
        );
        self.push(Term::Con { con, data }, level)
    }

    /// Whether `t` is one of the shared nullary nodes [`TyStore::mk`] returns.
    pub fn is_shared(&self, t: Ty) -> bool {
        self.common.contains(&t)
    }

    fn level_bound(&self, con: &Con<Ty>) -> u32 {
        let (kids, fields) = con.children();
        let mut level = WEAK_LEVEL;
        for (t, _) in kids.into_iter().flatten() {
            level = level.max(self.level_at(self.find_imm(t)));
        }
        if let Some(range) = fields {
            for &(_, t) in &self.fields[range.range()] {
                level = level.max(self.level_at(self.find_imm(t)));
            }
        }
        level
    }

    /// `Unit`.
    pub fn unit(&mut self) -> Ty {
        self.mk(Con::Unit)
    }
    /// `Bool`.
    pub fn bool(&mut self) -> Ty {
        self.mk(Con::Bool)
    }
    /// `Int`.
    pub fn int(&mut self) -> Ty {
        self.mk(Con::Int)
    }
    /// `Float`.
    pub fn float(&mut self) -> Ty {
        self.mk(Con::Float)
    }
    /// `String`.
    pub fn string(&mut self) -> Ty {
        self.mk(Con::String)
    }
    /// `Bytes`.
    pub fn bytes(&mut self) -> Ty {
        self.mk(Con::Bytes)
    }
    /// The error type.
    pub fn error(&mut self) -> Ty {
        self.mk(Con::Error)
    }
    /// `List elem`.
    pub fn list(&mut self, elem: Ty) -> Ty {
        self.mk(Con::List(elem))
    }
    /// `Map elem`.
    pub fn map(&mut self, elem: Ty) -> Ty {
        self.mk(Con::Map(elem))
    }
    /// `{comp}`.
    pub fn thunk(&mut self, comp: Ty) -> Ty {
        self.mk(Con::Thunk(comp))
    }
    /// `Handle value`.
    pub fn handle(&mut self, value: Ty) -> Ty {
        self.mk(Con::Handle(value))
    }
    /// `param -> result`.
    pub fn arrow(&mut self, param: Ty, result: Ty) -> Ty {
        self.mk(Con::Arrow { param, result })
    }
    /// `F_grade value`.
    pub fn returns_graded(&mut self, grade: Ty, value: Ty) -> Ty {
        self.mk(Con::Returns { grade, value })
    }
    /// `Returns value` (`F_p`).
    pub fn returns(&mut self, value: Ty) -> Ty {
        let grade = self.mk(Con::Pure);
        self.returns_graded(grade, value)
    }
    /// `Command` (`F_w Unit`).
    pub fn command(&mut self) -> Ty {
        let grade = self.mk(Con::Write);
        let unit = self.unit();
        self.returns_graded(grade, unit)
    }

    /// The row `fields, tail`; `tail` is a row of the same alphabet. Returns
    /// `None` when a label repeats.
    pub fn row(&mut self, alphabet: Alphabet, fields: &[(Label, Ty)], tail: Ty) -> Option<Ty> {
        for (i, (l, _)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(m, _)| m == l) {
                return None;
            }
        }
        // One node per MAX_ROW_FIELDS fields (a row node's count has 24
        // bits); a chain of row nodes is the same row.
        let mut row = tail;
        for chunk in fields.chunks(MAX_ROW_FIELDS).rev() {
            let start = self.fields.len() as u32;
            self.fields.extend_from_slice(chunk);
            let range = FieldRange {
                start,
                len: chunk.len() as u32,
            };
            row = self.mk(Con::Row {
                alphabet,
                fields: range,
                tail: row,
            });
        }
        Some(row)
    }

    /// The closed record `[fields]`, `None` on a repeated label.
    pub fn record(&mut self, fields: &[(Label, Ty)]) -> Option<Ty> {
        let empty = self.mk(Con::RowEmpty(Alphabet::Field));
        let row = self.row(Alphabet::Field, fields, empty)?;
        Some(self.mk(Con::Record(row)))
    }

    /// The open record `[fields, ..ρ]` with a fresh row variable `ρ`.
    pub fn open_record(&mut self, fields: &[(Label, Ty)]) -> Option<Ty> {
        let tail = self.fresh_row(Alphabet::Field);
        let row = self.row(Alphabet::Field, fields, tail)?;
        Some(self.mk(Con::Record(row)))
    }

    /// The closed variant `<tags>`, `None` on a repeated tag.
    pub fn variant(&mut self, tags: &[(Label, Ty)]) -> Option<Ty> {
        let empty = self.mk(Con::RowEmpty(Alphabet::Tag));
        let row = self.row(Alphabet::Tag, tags, empty)?;
        Some(self.mk(Con::Variant(row)))
    }

    /// The open variant `<tags | ..ρ>` with a fresh row variable.
    pub fn open_variant(&mut self, tags: &[(Label, Ty)]) -> Option<Ty> {
        let tail = self.fresh_row(Alphabet::Tag);
        let row = self.row(Alphabet::Tag, tags, tail)?;
        Some(self.mk(Con::Variant(row)))
    }

    // ---- reading ----------------------------------------------------------

    /// The representative of `t`, compressing the path to it.
    pub fn find(&mut self, t: Ty) -> Ty {
        let root = self.find_imm(t);
        let mut cur = t;
        while cur != root {
            let packed = self.nodes[cur.0 as usize];
            let Some(next) = packed.link() else { break };
            if next != root {
                self.set(cur, Term::Link(root), packed.level());
            }
            cur = next;
        }
        root
    }

    /// The representative of `t`, without compressing (for `&self` readers).
    pub fn find_imm(&self, t: Ty) -> Ty {
        let mut cur = t;
        while let Some(next) = self.nodes[cur.0 as usize].link() {
            cur = next;
        }
        cur
    }

    /// The level of node `t` itself (not of its representative).
    fn level_at(&self, t: Ty) -> u32 {
        self.nodes[t.0 as usize].level()
    }

    /// What `t` currently is.
    pub fn view(&self, t: Ty) -> TyView {
        let root = self.find_imm(t);
        let node = self.node(root);
        match node.term {
            Term::Var(v) => TyView::Var(v, node.level == WEAK_LEVEL && v.sort != Sort::Grade),
            Term::Con { con, .. } => TyView::Con(con),
            Term::Link(_) => TyView::Con(Con::Error),
        }
    }

    /// The fields of a row node's range.
    pub fn fields(&self, range: FieldRange) -> &[(Label, Ty)] {
        &self.fields[range.range()]
    }

    /// Whether `t` is an unbound weak variable.
    pub fn is_weak(&self, t: Ty) -> bool {
        matches!(self.view(t), TyView::Var(_, true))
    }

    /// The level of `t`'s representative.
    pub fn level_of(&self, t: Ty) -> u32 {
        self.level_at(self.find_imm(t))
    }

    /// The sort of `t`.
    pub fn sort_of(&self, t: Ty) -> Sort {
        match self.view(t) {
            TyView::Var(v, _) => v.sort,
            TyView::Con(c) => c.sort(),
        }
    }

    /// The fields of a row, flattened across extension links, and its final
    /// tail (an unbound row variable or an empty row), in written order.
    pub fn row_parts(&self, row: Ty) -> (Vec<(Label, Ty)>, Ty) {
        let mut out = Vec::new();
        let mut cur = self.find_imm(row);
        let mut steps = 0usize;
        while let TyView::Con(Con::Row { fields, tail, .. }) = self.view(cur) {
            out.extend_from_slice(self.fields(fields));
            cur = self.find_imm(tail);
            steps += 1;
            if steps > self.nodes.len() {
                break;
            }
        }
        (out, cur)
    }

    /// Lowers every variable in `t` to at most `level`, so a `let` deeper
    /// than `level` does not generalise it.
    pub fn lower_to(&mut self, t: Ty, level: u32) {
        self.lower(t, level);
    }

    /// Makes every variable in `t` weak (a boundary's result, §17.3).
    pub fn make_weak(&mut self, t: Ty) {
        self.lower(t, WEAK_LEVEL);
    }

    /// Sets `t`'s grade variable, if `t` is one, or checks its grade; used by
    /// the join and `let` rules. Same as unifying with `Pure`/`Write`.
    pub fn set_grade(&mut self, grade: Ty, write: bool) -> Result<(), UnifyError> {
        let g = self.mk(if write { Con::Write } else { Con::Pure });
        self.unify(grade, g)
    }

    // ---- snapshots --------------------------------------------------------

    /// Starts recording changes so they can be undone (e.g. to probe a join).
    pub fn snapshot(&mut self) -> Snapshot {
        self.snapshots += 1;
        Snapshot {
            nodes: self.nodes.len(),
            fields: self.fields.len(),
            undo: self.undo.len(),
            level: self.level,
        }
    }

    /// Undoes every change since `snap`, which must be the innermost open one.
    pub fn rollback_to(&mut self, snap: Snapshot) {
        while self.undo.len() > snap.undo {
            if let Some((t, node)) = self.undo.pop() {
                if let Some(slot) = self.nodes.get_mut(t.0 as usize) {
                    *slot = node;
                }
            }
        }
        self.nodes.truncate(snap.nodes);
        self.fields.truncate(snap.fields);
        self.level = snap.level;
        self.snapshots = self.snapshots.saturating_sub(1);
    }

    /// Keeps every change since `snap`.
    pub fn commit(&mut self, snap: Snapshot) {
        self.snapshots = self.snapshots.saturating_sub(1);
        if self.snapshots == 0 {
            self.undo.clear();
        } else {
            debug_assert!(self.undo.len() >= snap.undo);
        }
    }

    // ---- unification ------------------------------------------------------

    /// Makes `expected` and `found` equal, or says why they cannot be.
    ///
    /// Constructor pairs reached through data edges are remembered for the
    /// duration of the call, so cyclic types unify coinductively and shared
    /// subgraphs are visited once.
    pub fn unify(&mut self, expected: Ty, found: Ty) -> Result<(), UnifyError> {
        self.seen.clear();
        let res = self.unify_inner(expected, found);
        self.seen.clear();
        res
    }

    fn unify_inner(&mut self, a: Ty, b: Ty) -> Result<(), UnifyError> {
        let a = self.find(a);
        let b = self.find(b);
        if a == b {
            return Ok(());
        }
        match (self.node(a).term, self.node(b).term) {
            (Term::Var(va), Term::Var(vb)) => self.union_vars(a, va, b, vb),
            (Term::Var(va), Term::Con { con, .. }) => self.bind(a, va, b, con, Side::Expected),
            (Term::Con { con, .. }, Term::Var(vb)) => self.bind(b, vb, a, con, Side::Found),
            (Term::Con { con: ca, .. }, Term::Con { con: cb, .. }) => self.unify_cons(a, ca, b, cb),
            (Term::Link(_), _) | (_, Term::Link(_)) => Ok(()),
        }
    }

    fn union_vars(&mut self, a: Ty, va: TyVar, b: Ty, vb: TyVar) -> Result<(), UnifyError> {
        if va.sort != vb.sort {
            return Err(UnifyError::SortMismatch {
                expected: va.sort,
                found: vb.sort,
            });
        }
        let kind = va.kind.meet(vb.kind);
        if va.sort == Sort::Value && kind.is_empty() {
            return Err(UnifyError::KindConflict {
                expected: va.kind,
                expected_origin: va.origin,
                found: vb.kind,
                found_origin: vb.origin,
            });
        }
        let level = self.level_at(a).min(self.level_at(b));
        let origin = va.origin.or(vb.origin);
        self.set(b, Term::Link(a), level);
        if va.sort == Sort::Value {
            if let Some(con) = kind.singleton() {
                let ty = self.mk(con);
                self.set(a, Term::Link(ty), level);
                return Ok(());
            }
        }
        self.set(
            a,
            Term::Var(TyVar {
                sort: va.sort,
                kind,
                origin,
            }),
            level,
        );
        Ok(())
    }

    /// Binds variable `v` (node `var`) to the constructor node `ty`.
    fn bind(
        &mut self,
        var: Ty,
        v: TyVar,
        ty: Ty,
        con: Con<Ty>,
        var_on: Side,
    ) -> Result<(), UnifyError> {
        if matches!(con, Con::Error) {
            let level = self.level_at(var);
            self.set(var, Term::Link(ty), level);
            return Ok(());
        }
        let sort = con.sort();
        if sort != v.sort {
            let err = UnifyError::SortMismatch {
                expected: v.sort,
                found: sort,
            };
            return Err(if var_on == Side::Expected {
                err
            } else {
                err.flipped()
            });
        }
        if let Some(head) = con.head() {
            if !v.kind.admits(head) {
                if v.kind.deep && !HeadSet::DATA.contains(head) {
                    return Err(UnifyError::NotData {
                        found: ty,
                        origin: v.origin,
                    });
                }
                return Err(UnifyError::KindViolation {
                    kind: v.kind,
                    origin: v.origin,
                    var_on,
                    found: ty,
                });
            }
        }
        if self.reaches_without_data(ty, var) {
            return Err(UnifyError::Infinite { var, ty });
        }
        if v.kind.deep {
            self.impose_data(ty, v.origin)?;
        }
        let level = self.level_at(var);
        self.lower(ty, level);
        self.set(var, Term::Link(ty), level);
        Ok(())
    }

    fn unify_cons(&mut self, a: Ty, ca: Con<Ty>, b: Ty, cb: Con<Ty>) -> Result<(), UnifyError> {
        let mismatch = UnifyError::Mismatch {
            expected: a,
            found: b,
        };
        match (ca, cb) {
            (Con::Error, _) | (_, Con::Error) => Ok(()),
            (Con::List(x), Con::List(y)) | (Con::Map(x), Con::Map(y)) => {
                if !self.seen.insert((a, b)) {
                    return Ok(());
                }
                self.unify_inner(x, y)
            }
            (Con::Record(x), Con::Record(y)) | (Con::Variant(x), Con::Variant(y)) => {
                if !self.seen.insert((a, b)) {
                    return Ok(());
                }
                self.unify_inner(x, y)
            }
            (Con::Thunk(x), Con::Thunk(y)) | (Con::Handle(x), Con::Handle(y)) => {
                self.unify_inner(x, y)
            }
            (
                Con::Returns {
                    grade: g1,
                    value: v1,
                },
                Con::Returns {
                    grade: g2,
                    value: v2,
                },
            ) => {
                // A grade disagreement is reported on the whole `F`, which prints
                // as `Command` against `Returns A`.
                match self.unify_inner(g1, g2) {
                    Err(UnifyError::Mismatch { .. }) => return Err(mismatch),
                    Err(e) => return Err(e),
                    Ok(()) => {}
                }
                self.unify_inner(v1, v2)
            }
            (
                Con::Arrow {
                    param: p1,
                    result: r1,
                },
                Con::Arrow {
                    param: p2,
                    result: r2,
                },
            ) => {
                self.unify_inner(p1, p2)?;
                self.unify_inner(r1, r2)
            }
            (Con::RowEmpty(x), Con::RowEmpty(y)) if x == y => Ok(()),
            (Con::RowEmpty(x) | Con::Row { alphabet: x, .. }, Con::Row { alphabet: y, .. })
            | (Con::Row { alphabet: x, .. }, Con::RowEmpty(y))
                if x == y =>
            {
                if !self.seen.insert((a, b)) {
                    return Ok(());
                }
                self.unify_rows(a, b)
            }
            (Con::Unit, Con::Unit)
            | (Con::Bool, Con::Bool)
            | (Con::Int, Con::Int)
            | (Con::Float, Con::Float)
            | (Con::String, Con::String)
            | (Con::Bytes, Con::Bytes)
            | (Con::Pure, Con::Pure)
            | (Con::Write, Con::Write) => Ok(()),
            (x, y) if x.sort() != y.sort() => Err(UnifyError::SortMismatch {
                expected: x.sort(),
                found: y.sort(),
            }),
            (_, _) => Err(mismatch),
        }
    }

    /// Unifies two rows regardless of label order (Rémy): common labels unify
    /// pointwise, each side's extra labels extend the other side's open tail.
    fn unify_rows(&mut self, a: Ty, b: Ty) -> Result<(), UnifyError> {
        let alphabet = match self.sort_of(a) {
            Sort::Row(alpha) => alpha,
            Sort::Value | Sort::Comp | Sort::Grade => Alphabet::Field,
        };
        let (mut fa, ta) = self.row_parts(a);
        let (mut fb, tb) = self.row_parts(b);
        fa.sort_by_key(|(l, _)| *l);
        fb.sort_by_key(|(l, _)| *l);
        let mut only_a = Vec::new();
        let mut only_b = Vec::new();
        let mut common = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < fa.len() || j < fb.len() {
            match (fa.get(i).copied(), fb.get(j).copied()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    common.push((x.1, y.1));
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    only_a.push(x);
                    i += 1;
                }
                (Some(_), Some(y)) | (None, Some(y)) => {
                    only_b.push(y);
                    j += 1;
                }
                (Some(x), None) => {
                    only_a.push(x);
                    i += 1;
                }
                (None, None) => break,
            }
        }
        for (x, y) in common {
            self.unify_inner(x, y)?;
        }
        let ta = self.find(ta);
        let tb = self.find(tb);
        let a_open = matches!(self.node(ta).term, Term::Var(_));
        let b_open = matches!(self.node(tb).term, Term::Var(_));
        let missing = |on: Side, row: Ty, (label, field): (Label, Ty)| UnifyError::MissingLabel {
            label,
            alphabet,
            missing_on: on,
            row,
            field,
        };
        if let Some(&extra) = only_b.first() {
            if !a_open || (ta == tb) {
                return Err(missing(Side::Expected, a, extra));
            }
        }
        if let Some(&extra) = only_a.first() {
            if !b_open || (ta == tb) {
                return Err(missing(Side::Found, b, extra));
            }
        }
        match (a_open, b_open) {
            (true, true) if ta != tb => {
                let rest = self.fresh_of(Sort::Row(alphabet));
                let (lvl, deep) = self.row_tail_info(ta, tb);
                if let Term::Var(v) = self.node(rest).term {
                    let kind = Kind::new(v.kind.heads, deep);
                    self.set(rest, Term::Var(TyVar { kind, ..v }), lvl);
                }
                let ext_a = self.row(alphabet, &only_b, rest).unwrap_or(rest);
                self.unify_inner(ta, ext_a)?;
                let ext_b = self.row(alphabet, &only_a, rest).unwrap_or(rest);
                self.unify_inner(tb, ext_b)
            }
            (true, false) => {
                let ext = self.row(alphabet, &only_b, tb).unwrap_or(tb);
                self.unify_inner(ta, ext)
            }
            (false, true) => {
                let ext = self.row(alphabet, &only_a, ta).unwrap_or(ta);
                self.unify_inner(tb, ext)
            }
            (true, true) | (false, false) => Ok(()),
        }
    }

    fn row_tail_info(&self, ta: Ty, tb: Ty) -> (u32, bool) {
        let (na, nb) = (self.node(ta), self.node(tb));
        let deep = |n: Node| matches!(n.term, Term::Var(v) if v.kind.deep);
        (na.level.min(nb.level), deep(na) || deep(nb))
    }

    /// Whether `target` is reachable from `from` along non-data edges only.
    fn reaches_without_data(&mut self, from: Ty, target: Ty) -> bool {
        self.visited.clear();
        let mut stack = vec![from];
        while let Some(t) = stack.pop() {
            let t = self.find(t);
            if t == target {
                return true;
            }
            if !self.visited.insert(t) {
                continue;
            }
            if let Term::Con { con, .. } = self.node(t).term {
                let (kids, _) = con.children();
                for (kid, data) in kids.into_iter().flatten() {
                    if !data {
                        stack.push(kid);
                    }
                }
            }
        }
        false
    }

    /// Lowers every level below `t` to at most `level` (grade variables to at
    /// most [`TOP_LEVEL`] when `level` is weak), stopping where levels are low enough.
    fn lower(&mut self, t: Ty, level: u32) {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            let t = self.find(t);
            let node = self.node(t);
            match node.term {
                Term::Var(v) => {
                    let target = if v.sort == Sort::Grade {
                        level.max(TOP_LEVEL)
                    } else {
                        level
                    };
                    if node.level > target {
                        self.set(t, node.term, target);
                    }
                }
                Term::Con { con, .. } => {
                    if node.level <= level {
                        continue;
                    }
                    self.set(t, node.term, level);
                    let (kids, fields) = con.children();
                    stack.extend(kids.into_iter().flatten().map(|(k, _)| k));
                    if let Some(range) = fields {
                        stack.extend(self.fields[range.range()].iter().map(|(_, k)| *k));
                    }
                }
                Term::Link(_) => {}
            }
        }
    }

    /// Imposes the deep `data` kind on everything below `t`.
    fn impose_data(&mut self, t: Ty, origin: Option<Provenance>) -> Result<(), UnifyError> {
        let mut stack = vec![t];
        while let Some(t) = stack.pop() {
            let t = self.find(t);
            let node = self.node(t);
            match node.term {
                Term::Var(v) => match v.sort {
                    Sort::Value => {
                        let kind = v.kind.meet(Kind::DATA);
                        if kind.is_empty() {
                            return Err(UnifyError::KindConflict {
                                expected: Kind::DATA,
                                expected_origin: origin,
                                found: v.kind,
                                found_origin: v.origin,
                            });
                        }
                        let origin = v.origin.or(origin);
                        if let Some(con) = kind.singleton() {
                            let ty = self.mk(con);
                            self.set(t, Term::Link(ty), node.level);
                        } else {
                            self.set(t, Term::Var(TyVar { kind, origin, ..v }), node.level);
                        }
                    }
                    Sort::Row(_) => {
                        let kind = Kind {
                            heads: v.kind.heads,
                            deep: true,
                        };
                        self.set(t, Term::Var(TyVar { kind, ..v }), node.level);
                    }
                    Sort::Comp | Sort::Grade => {}
                },
                Term::Con { con, data } => {
                    if data {
                        continue;
                    }
                    if matches!(con, Con::Thunk(_) | Con::Handle(_)) {
                        return Err(UnifyError::NotData { found: t, origin });
                    }
                    self.set(t, Term::Con { con, data: true }, node.level);
                    let (kids, fields) = con.children();
                    stack.extend(kids.into_iter().flatten().map(|(k, _)| k));
                    if let Some(range) = fields {
                        stack.extend(self.fields[range.range()].iter().map(|(_, k)| *k));
                    }
                }
                Term::Link(_) => {}
            }
        }
        Ok(())
    }

    /// Gives the variable `t` is the origin `origin` if its kind is
    /// constrained and no use has been recorded for it yet (a builtin's
    /// kinded parameter carries none of its own): what a boundary's
    /// admission names as the line of the use (§7.3).
    pub fn note_origin(&mut self, t: Ty, origin: Provenance) {
        let r = self.find(t);
        let node = self.node(r);
        if let Term::Var(v) = node.term {
            if v.origin.is_none() && v.sort == Sort::Value && v.kind != Kind::ANY {
                self.set(
                    r,
                    Term::Var(TyVar {
                        origin: Some(origin),
                        ..v
                    }),
                    node.level,
                );
            }
        }
    }

    /// Constrains `t` to `kind` (from an operator or builtin at `origin`).
    /// Same as unifying `t` with a fresh variable of that kind.
    pub fn constrain(
        &mut self,
        t: Ty,
        kind: Kind,
        origin: Option<Provenance>,
    ) -> Result<(), UnifyError> {
        let v = self.fresh(Sort::Value, kind, origin, self.level);
        self.unify(v, t)
    }

    // ---- generalisation ---------------------------------------------------

    /// Quantifies the variables of `t` deeper than the current level (call
    /// after [`TyStore::exit_level`]). Weak variables are never quantified.
    pub fn generalize(&mut self, t: Ty) -> Scheme {
        let level = self.level;
        let mut ex = Exporter {
            store: self,
            level,
            out: SchemeBuilder::default(),
            memo: HashMap::default(),
        };
        let root = ex.export(t);
        ex.out.finish(root)
    }

    /// A fresh instance of `scheme` at the current level.
    pub fn instantiate(&mut self, scheme: &Scheme) -> Ty {
        if scheme.quantified().is_empty() {
            if let Some(SchemeNode::Free(t)) = scheme.node(scheme.root()) {
                return t;
            }
        }
        let level = self.level;
        // Pass 1: one store node per non-free arena node; free leaves map to
        // their own store node.
        let mut next = self.nodes.len() as u32;
        let map: Vec<Ty> = scheme
            .nodes()
            .iter()
            .map(|n| match n {
                SchemeNode::Free(t) => *t,
                SchemeNode::Var(_) | SchemeNode::Con(_) => {
                    next += 1;
                    Ty(next - 1)
                }
            })
            .collect();
        let lookup = |i: u32| map.get(i as usize).copied().unwrap_or(Ty(0));
        // Pass 2: fill them in, in the same order; cycles need no special care.
        for node in scheme.nodes() {
            let term = match node {
                SchemeNode::Free(_) => continue,
                SchemeNode::Var(v) => Term::Var(*v),
                SchemeNode::Con(con) => {
                    let fields = con.children().1.map(|range| {
                        let start = self.fields.len() as u32;
                        for &(l, k) in scheme.fields(range) {
                            self.fields.push((l, lookup(k)));
                        }
                        FieldRange {
                            start,
                            len: range.len,
                        }
                    });
                    Term::Con {
                        con: con.map(lookup, fields),
                        data: false,
                    }
                }
            };
            self.nodes.push(Packed::new(Node { term, level }));
        }
        lookup(scheme.root())
    }
}

struct Exporter<'a> {
    store: &'a mut TyStore,
    level: u32,
    out: SchemeBuilder,
    memo: HashMap<Ty, u32>,
}

impl Exporter<'_> {
    fn export(&mut self, t: Ty) -> u32 {
        let t = self.store.find(t);
        if let Some(&i) = self.memo.get(&t) {
            return i;
        }
        let node = self.store.node(t);
        if node.level <= self.level {
            return self.leaf(t, SchemeNode::Free(t));
        }
        match node.term {
            Term::Var(v) => {
                let i = self.leaf(t, SchemeNode::Var(v));
                self.out.quantified.push(TyVarId(i));
                i
            }
            Term::Con { con, .. } => {
                let i = self.leaf(t, SchemeNode::Free(t));
                let fields = con.children().1.map(|range| {
                    let pairs: Vec<(Label, Ty)> = self.store.fields(range).to_vec();
                    let kids: Vec<(Label, u32)> = pairs
                        .into_iter()
                        .map(|(l, k)| (l, self.export(k)))
                        .collect();
                    self.out.push_fields(&kids)
                });
                let con = con.map(|k| self.export(k), fields);
                if let Some(slot) = self.out.nodes.get_mut(i as usize) {
                    *slot = SchemeNode::Con(con);
                }
                i
            }
            Term::Link(_) => self.leaf(t, SchemeNode::Free(t)),
        }
    }

    fn leaf(&mut self, t: Ty, node: SchemeNode) -> u32 {
        let i = self.out.nodes.len() as u32;
        self.out.nodes.push(node);
        self.memo.insert(t, i);
        i
    }
}

// ---------------------------------------------------------------------------
// Schemes
// ---------------------------------------------------------------------------

/// A node of a [`Scheme`]'s arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemeNode {
    /// A quantified variable (every `Var` node is quantified).
    Var(TyVar),
    /// A monomorphic part shared with the store the scheme came from.
    Free(Ty),
    /// A constructor over arena indices.
    Con(Con<u32>),
}

/// A type scheme `∀ᾱ. body`: a closed arena whose `Var` nodes are the
/// quantified variables. Cycles are arena back references.
///
/// A scheme is immutable once built and cheap to clone: a one-node scheme
/// (every lambda-bound name, every monomorphic `let`) is held inline, and a
/// larger one is shared behind an `Arc`, so the copies the checker keeps
/// (the scope, the unit's bindings) share one arena. The crate builds one
/// with a `SchemeBuilder`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scheme(SchemeRepr);

#[derive(Clone, Debug, PartialEq, Eq)]
enum SchemeRepr {
    /// One node, no fields, nothing quantified, rooted at that node.
    One([SchemeNode; 1]),
    /// Anything larger.
    Many(std::sync::Arc<SchemeBody>),
}

#[derive(Debug, PartialEq, Eq)]
struct SchemeBody {
    nodes: Box<[SchemeNode]>,
    fields: Box<[(Label, u32)]>,
    quantified: Box<[TyVarId]>,
    root: u32,
}

/// A scheme under construction: its arena, fields and quantified
/// variables, growable; [`SchemeBuilder::finish`] freezes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SchemeBuilder {
    pub(crate) nodes: Vec<SchemeNode>,
    pub(crate) fields: Vec<(Label, u32)>,
    pub(crate) quantified: Vec<TyVarId>,
}

impl SchemeBuilder {
    pub(crate) fn push_fields(&mut self, fields: &[(Label, u32)]) -> FieldRange {
        let start = self.fields.len() as u32;
        self.fields.extend_from_slice(fields);
        FieldRange {
            start,
            len: fields.len() as u32,
        }
    }

    pub(crate) fn push(&mut self, node: SchemeNode) -> u32 {
        let i = self.nodes.len() as u32;
        self.nodes.push(node);
        i
    }

    pub(crate) fn set(&mut self, i: u32, node: SchemeNode) {
        if let Some(slot) = self.nodes.get_mut(i as usize) {
            *slot = node;
        }
    }

    /// An arena node.
    pub(crate) fn node(&self, i: u32) -> Option<SchemeNode> {
        self.nodes.get(i as usize).copied()
    }

    /// The finished scheme with body `root`.
    pub(crate) fn finish(self, root: u32) -> Scheme {
        if let ([node], true, true, 0) = (
            self.nodes.as_slice(),
            self.fields.is_empty(),
            self.quantified.is_empty(),
            root,
        ) {
            return Scheme(SchemeRepr::One([*node]));
        }
        Scheme(SchemeRepr::Many(std::sync::Arc::new(SchemeBody {
            nodes: self.nodes.into_boxed_slice(),
            fields: self.fields.into_boxed_slice(),
            quantified: self.quantified.into_boxed_slice(),
            root,
        })))
    }
}

impl Scheme {
    /// The monomorphic scheme of a store type (a lambda-bound name).
    pub fn mono(t: Ty) -> Scheme {
        Scheme(SchemeRepr::One([SchemeNode::Free(t)]))
    }

    /// The arena.
    pub(crate) fn nodes(&self) -> &[SchemeNode] {
        match &self.0 {
            SchemeRepr::One(node) => node,
            SchemeRepr::Many(body) => &body.nodes,
        }
    }

    /// The quantified variables, in order of first appearance.
    pub fn quantified(&self) -> &[TyVarId] {
        match &self.0 {
            SchemeRepr::One(_) => &[],
            SchemeRepr::Many(body) => &body.quantified,
        }
    }

    /// The variable behind a quantified id.
    pub fn var(&self, id: TyVarId) -> Option<TyVar> {
        match self.node(id.0) {
            Some(SchemeNode::Var(v)) => Some(v),
            Some(SchemeNode::Free(_) | SchemeNode::Con(_)) | None => None,
        }
    }

    /// The root node of the body.
    pub fn root(&self) -> u32 {
        match &self.0 {
            SchemeRepr::One(_) => 0,
            SchemeRepr::Many(body) => body.root,
        }
    }

    /// An arena node.
    pub fn node(&self, i: u32) -> Option<SchemeNode> {
        self.nodes().get(i as usize).copied()
    }

    /// The fields of a row node of this arena.
    pub fn fields(&self, range: FieldRange) -> &[(Label, u32)] {
        match &self.0 {
            SchemeRepr::One(_) => &[],
            SchemeRepr::Many(body) => body.fields.get(range.range()).unwrap_or(&[]),
        }
    }

    /// Whether the scheme refers to no store (so it can outlive one).
    pub fn is_closed(&self) -> bool {
        !self
            .nodes()
            .iter()
            .any(|n| matches!(n, SchemeNode::Free(_)))
    }

    /// Flattened fields and final tail of an arena row.
    pub(crate) fn row_parts(&self, row: u32) -> (Vec<(Label, u32)>, u32) {
        let mut out = Vec::new();
        let mut cur = row;
        for _ in 0..=self.nodes().len() {
            match self.node(cur) {
                Some(SchemeNode::Con(Con::Row { fields, tail, .. })) => {
                    out.extend_from_slice(self.fields(fields));
                    cur = tail;
                }
                Some(_) | None => break,
            }
        }
        (out, cur)
    }

    /// Equality up to renaming of quantified variables, field order and
    /// sharing: the two bodies denote the same regular tree.
    pub fn alpha_eq(&self, other: &Scheme) -> bool {
        let mut pairs: HashSet<(u32, u32)> = HashSet::default();
        let mut left: HashMap<u32, u32> = HashMap::default();
        let mut right: HashMap<u32, u32> = HashMap::default();
        let mut stack = vec![(self.root(), other.root())];
        while let Some((x, y)) = stack.pop() {
            if !pairs.insert((x, y)) {
                continue;
            }
            match (self.node(x), other.node(y)) {
                (Some(SchemeNode::Var(a)), Some(SchemeNode::Var(b))) => {
                    if a != b
                        || *left.entry(x).or_insert(y) != y
                        || *right.entry(y).or_insert(x) != x
                    {
                        return false;
                    }
                }
                (Some(SchemeNode::Free(a)), Some(SchemeNode::Free(b))) => {
                    if a != b {
                        return false;
                    }
                }
                (Some(SchemeNode::Con(a)), Some(SchemeNode::Con(b))) => {
                    if let (Con::Row { alphabet: p, .. }, Con::Row { alphabet: q, .. }) = (a, b) {
                        if p != q {
                            return false;
                        }
                        let (mut fa, ta) = self.row_parts(x);
                        let (mut fb, tb) = other.row_parts(y);
                        if fa.len() != fb.len() {
                            return false;
                        }
                        fa.sort_by_key(|(l, _)| *l);
                        fb.sort_by_key(|(l, _)| *l);
                        for ((la, ka), (lb, kb)) in fa.into_iter().zip(fb) {
                            if la != lb {
                                return false;
                            }
                            stack.push((ka, kb));
                        }
                        stack.push((ta, tb));
                        continue;
                    }
                    let unit_a = a.map(|_| (), None);
                    let unit_b = b.map(|_| (), None);
                    if unit_a != unit_b {
                        return false;
                    }
                    let (ka, _) = a.children();
                    let (kb, _) = b.children();
                    for (p, q) in ka.into_iter().zip(kb) {
                        if let (Some((p, _)), Some((q, _))) = (p, q) {
                            stack.push((p, q));
                        }
                    }
                }
                (Some(_), Some(_)) | (None, _) | (_, None) => return false,
            }
        }
        true
    }
}

#[cfg(test)]
mod packed_tests {
    use super::*;

    fn roundtrip(term: Term, level: u32) {
        let back = Packed::new(Node { term, level }).get();
        assert_eq!(format!("{:?}", back.term), format!("{term:?}"));
        assert_eq!(back.level, level);
    }

    #[test]
    fn every_term_survives_packing() {
        let t = Ty(7);
        let u = Ty(u32::MAX - 1);
        let fields = FieldRange {
            start: 123_456,
            len: MAX_ROW_FIELDS as u32,
        };
        let cons = [
            Con::Unit,
            Con::Bool,
            Con::Int,
            Con::Float,
            Con::String,
            Con::Bytes,
            Con::List(t),
            Con::Map(u),
            Con::Record(t),
            Con::Variant(u),
            Con::Thunk(t),
            Con::Handle(u),
            Con::Returns { grade: t, value: u },
            Con::Arrow {
                param: u,
                result: t,
            },
            Con::RowEmpty(Alphabet::Field),
            Con::RowEmpty(Alphabet::Tag),
            Con::Row {
                alphabet: Alphabet::Field,
                fields,
                tail: u,
            },
            Con::Row {
                alphabet: Alphabet::Tag,
                fields,
                tail: t,
            },
            Con::Pure,
            Con::Write,
            Con::Error,
        ];
        for level in [WEAK_LEVEL, TOP_LEVEL, 9, DATA_BIT - 1] {
            roundtrip(Term::Link(u), level);
            for con in cons {
                roundtrip(Term::Con { con, data: false }, level);
                roundtrip(Term::Con { con, data: true }, level);
            }
            let sorts = [
                Sort::Value,
                Sort::Comp,
                Sort::Row(Alphabet::Field),
                Sort::Row(Alphabet::Tag),
                Sort::Grade,
            ];
            for sort in sorts {
                for (kind, _) in Kind::NAMED {
                    for origin in [None, Some(Provenance(0)), Some(Provenance(u32::MAX))] {
                        roundtrip(Term::Var(TyVar { sort, kind, origin }), level);
                    }
                }
                let odd = Kind {
                    heads: HeadSet(u16::MAX),
                    deep: true,
                };
                roundtrip(
                    Term::Var(TyVar {
                        sort,
                        kind: odd,
                        origin: None,
                    }),
                    level,
                );
            }
        }
    }
}
