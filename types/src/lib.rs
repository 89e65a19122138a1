//! ral-types: the static checker's foundation (issue 3).
//!
//! # Representation
//!
//! Types live in a [`TyStore`], an arena of nodes addressed by the `u32`
//! newtype [`Ty`]. A node is a union-find *link*, an unbound *variable*
//! ([`TyVar`]: sort, kind, kind provenance) or a *constructor* ([`Con`]) whose
//! children are again `Ty`s. Binding a variable overwrites its node with a
//! link, so there is no substitution to apply; [`TyStore::find`] (with path
//! compression) reads the current solution.
//!
//! * **Sorts.** One arena holds value types, computation types (`F_ε A`,
//!   `A -> C`), rows (two alphabets: record fields and variant tags, which
//!   never unify) and grades (`p`, `w`). Each variable carries its [`Sort`].
//! * **Rows** are Rémy rows: a `Row` node holds one or more `(label, type)`
//!   pairs (in written order, in a side pool) and a tail, which is another row,
//!   the empty row or a row variable. Unification flattens and sorts both
//!   sides, unifies common labels and extends open tails with the rest, so
//!   label order never matters.
//! * **Kinds** are a head set plus a *deep* bit ([`Kind`]); variables meet
//!   kinds on union, and binding checks the head (and imposes `data` below a
//!   deep kind, caching the check on constructor nodes).
//! * **Recursive types** are cycles in the graph. Unification memoises
//!   constructor pairs behind data edges, so it terminates on cycles; a binding
//!   is refused when it would close a cycle reaching the variable through non-
//!   data edges only ([`UnifyError::Infinite`]).
//! * **Levels** give let-generalisation in time proportional to the new part of
//!   a type: variables record the `let` depth they were made at, constructor
//!   nodes an upper bound of the levels below them, and walks stop at nodes
//!   already low enough. **Weak** is level 0, so it is inherited by unification
//!   and never generalised.
//! * **Schemes** ([`Scheme`]) are small closed arenas, so the builtin table can
//!   be built once for the process and instantiation is one linear copy;
//!   monomorphic parts of a generalised type stay shared with the store. A
//!   scheme is immutable once built: a one-node scheme is held inline, a
//!   larger one behind an `Arc`, so copies of it share one arena.
//! * **Memory.** A store node is packed into 16 bytes (see `ty.rs`), and a
//!   store only grows: the elaboration tables keep a type for every atom
//!   and stage of the unit. The tables ([`NodeMap`], [`SpanMap`] and the
//!   checker's provenance) are sorted lists sized by their entries, not by
//!   the number of nodes in the program, and the store and the large
//!   tables are reserved from the size of the source so that they do not
//!   grow by copying (see `ARCHITECTURE.md`, the checker, for measured
//!   figures).
//!
//! [`print`] is the one printer, [`sig`] parses the same syntax back, and
//! [`builtins`] is the table of every builtin and prelude signature.

pub mod admit;
pub mod builtins;
pub mod check;
pub mod env;
mod infer;
pub mod print;
pub mod sig;
pub mod ty;

pub use admit::{AdmitNode, AdmitSite};
pub use builtins::{builtin_table, Builtin, BuiltinId, BuiltinKind, BuiltinTable, Layer};
pub use check::{
    check_program, check_source, Boundary, CaptureSite, CheckOptions, Checked, Elaboration,
    HeadRes, NameRes, NodeMap, SpanMap, TopBinding,
};
pub use env::{EnvEntry, TypeEnv};
pub use print::{print_scheme, print_ty, TyPrinter};
pub use sig::{parse_scheme, SigError};
pub use ty::{
    Alphabet, Con, HeadSet, Kind, Label, Provenance, Scheme, SchemeNode, Side, Snapshot, Sort, Ty,
    TyStore, TyVar, TyVarId, TyView, UnifyError, TOP_LEVEL, WEAK_LEVEL,
};

#[cfg(test)]
mod tests;
