//! Unit tests for the representation, the printer, the signature parser and
//! the builtin table.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use crate::builtins::{builtin_table, rows};
use crate::print::{print_scheme, print_ty, TyPrinter};
use crate::sig::parse_scheme;
use crate::ty::*;

fn l(s: &str) -> Label {
    Label::intern(s)
}

fn show(store: &TyStore, t: Ty) -> String {
    print_ty(store, t)
}

// ---- basic unification ------------------------------------------------------

#[test]
fn unify_binds_and_mismatches() {
    let mut s = TyStore::new();
    let a = s.fresh_value();
    let int = s.int();
    let list_a = s.list(a);
    let list_int = s.list(int);
    assert_eq!(s.unify(list_a, list_int), Ok(()));
    assert_eq!(show(&s, a), "Integer");
    let string = s.string();
    let list_str = s.list(string);
    assert_eq!(
        s.unify(list_int, list_str),
        Err(UnifyError::Mismatch {
            expected: int,
            found: string
        })
    );
}

#[test]
fn command_versus_returns_is_reported_on_the_whole_f() {
    let mut s = TyStore::new();
    let cmd = s.command();
    let string = s.string();
    let ret = s.returns(string);
    let err = s.unify(cmd, ret);
    assert_eq!(
        err,
        Err(UnifyError::Mismatch {
            expected: cmd,
            found: ret
        })
    );
    let mut p = TyPrinter::new(&s);
    assert_eq!(p.ty(cmd), "Command");
    assert_eq!(p.ty(ret), "Returns String");
}

// ---- rows ------------------------------------------------------------------------

#[test]
fn rows_unify_in_any_order() {
    let mut s = TyStore::new();
    let (int, string, b) = (s.int(), s.string(), s.bool());
    let r1 = s
        .record(&[(l("a"), int), (l("b"), string), (l("c"), b)])
        .unwrap();
    let x = s.fresh_value();
    let r2 = s
        .record(&[(l("c"), x), (l("a"), int), (l("b"), string)])
        .unwrap();
    assert_eq!(s.unify(r1, r2), Ok(()));
    assert_eq!(show(&s, x), "Bool");
}

#[test]
fn open_rows_extend_each_other() {
    let mut s = TyStore::new();
    let (int, string) = (s.int(), s.string());
    let r1 = s.open_record(&[(l("a"), int)]).unwrap();
    let r2 = s.open_record(&[(l("b"), string)]).unwrap();
    assert_eq!(s.unify(r1, r2), Ok(()));
    let printed = show(&s, r1);
    assert!(
        printed.starts_with("[a: Integer, b: String, .."),
        "{printed}"
    );
    // Both sides now share one row.
    let closed = s.record(&[(l("b"), string), (l("a"), int)]).unwrap();
    assert_eq!(s.unify(r2, closed), Ok(()));
    assert_eq!(show(&s, r1), "[a: Integer, b: String]");
}

#[test]
fn closed_row_reports_the_missing_field() {
    let mut s = TyStore::new();
    let int = s.int();
    let need = s
        .open_record(&[(l("status"), int), (l("message"), int)])
        .unwrap();
    let have = s.record(&[(l("status"), int)]).unwrap();
    match s.unify(need, have) {
        Err(UnifyError::MissingLabel {
            label,
            alphabet: Alphabet::Field,
            missing_on: Side::Found,
            ..
        }) => assert_eq!(label.as_str(), "message"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn tags_and_labels_are_different_alphabets() {
    let mut s = TyStore::new();
    let int = s.int();
    let rec = s.record(&[(l("ok"), int)]).unwrap();
    let var = s.variant(&[(l("ok"), int)]).unwrap();
    assert!(matches!(
        s.unify(rec, var),
        Err(UnifyError::Mismatch { .. })
    ));
    // A field row variable never takes a tag row.
    let rho = s.fresh_row(Alphabet::Field);
    let empty_tags = s.mk(Con::RowEmpty(Alphabet::Tag));
    assert!(matches!(
        s.unify(rho, empty_tags),
        Err(UnifyError::SortMismatch { .. })
    ));
}

#[test]
fn infinite_row_is_refused() {
    let mut s = TyStore::new();
    let int = s.int();
    let rho = s.fresh_row(Alphabet::Field);
    let ext = s.row(Alphabet::Field, &[(l("a"), int)], rho).unwrap();
    assert!(matches!(
        s.unify(rho, ext),
        Err(UnifyError::Infinite { .. })
    ));
}

// ---- kinds ---------------------------------------------------------------------

#[test]
fn plus_on_string_is_a_kind_violation() {
    let mut s = TyStore::new();
    let n = s.fresh_kinded(Kind::NUMBER, Some(Provenance(7)));
    let string = s.string();
    match s.unify(n, string) {
        Err(UnifyError::KindViolation {
            kind,
            origin,
            var_on: Side::Expected,
            ..
        }) => {
            assert_eq!(kind, Kind::NUMBER);
            assert_eq!(origin, Some(Provenance(7)));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn kinds_meet_and_singletons_bind() {
    let mut s = TyStore::new();
    let a = s.fresh_kinded(Kind::COMPARABLE, None);
    let b = s.fresh_kinded(Kind::SIZED, None);
    assert_eq!(s.unify(a, b), Ok(()));
    assert_eq!(show(&s, a), "String");
    let n = s.fresh_kinded(Kind::NUMBER, Some(Provenance(1)));
    let z = s.fresh_kinded(Kind::SIZED, Some(Provenance(2)));
    assert_eq!(
        s.unify(n, z),
        Err(UnifyError::KindConflict {
            expected: Kind::NUMBER,
            expected_origin: Some(Provenance(1)),
            found: Kind::SIZED,
            found_origin: Some(Provenance(2)),
        })
    );
    assert_eq!(Kind::NUMBER.meet(Kind::SCALAR), Kind::NUMBER);
    assert_eq!(Kind::COMPARABLE.meet(Kind::DATA), Kind::COMPARABLE);
    assert_eq!(Kind::SIZED.meet(Kind::DATA).to_string(), "sized+data");
}

#[test]
fn data_equality_rejects_thunks_at_depth() {
    let mut s = TyStore::new();
    let a = s.fresh_kinded(Kind::DATA, Some(Provenance(3)));
    let c = s.fresh_comp();
    let th = s.thunk(c);
    let inner = s.record(&[(l("f"), th)]).unwrap();
    let outer = s.list(inner);
    match s.unify(a, outer) {
        Err(UnifyError::NotData { found, origin }) => {
            assert_eq!(s.find(found), s.find(th));
            assert_eq!(origin, Some(Provenance(3)));
        }
        other => panic!("{other:?}"),
    }
    // Deepness reaches variables below and fields added to an open row later.
    let mut s = TyStore::new();
    let a = s.fresh_kinded(Kind::DATA, None);
    let x = s.fresh_value();
    let rec = s.open_record(&[(l("x"), x)]).unwrap();
    assert_eq!(s.unify(a, rec), Ok(()));
    let h = s.fresh_value();
    let handle = s.handle(h);
    assert!(matches!(
        s.unify(x, handle),
        Err(UnifyError::NotData { .. })
    ));
    let c = s.fresh_comp();
    let th = s.thunk(c);
    let more = s.open_record(&[(l("later"), th)]).unwrap();
    assert!(matches!(
        s.unify(rec, more),
        Err(UnifyError::NotData { .. })
    ));
}

// ---- equi-recursive types -----------------------------------------------------------

#[test]
fn cycles_through_data_edges_are_accepted() {
    let mut s = TyStore::new();
    let a = s.fresh_value();
    let m = s.map(a);
    assert_eq!(s.unify(a, m), Ok(()));
    assert_eq!(show(&s, a), "μα. Map α");
    // Two different unrollings of the same regular tree unify.
    let b = s.fresh_value();
    let mb = s.map(b);
    let mmb = s.map(mb);
    assert_eq!(s.unify(b, mmb), Ok(()));
    assert_eq!(s.unify(a, b), Ok(()));
    let list = s.fresh_value();
    let l1 = s.list(list);
    assert_eq!(s.unify(list, l1), Ok(()));
    assert_eq!(show(&s, list), "μα. [α]");
}

#[test]
fn cycles_through_functions_are_refused() {
    let mut s = TyStore::new();
    // Self-application: α = {α -> β}.
    let a = s.fresh_value();
    let b = s.fresh_comp();
    let arrow = s.arrow(a, b);
    let th = s.thunk(arrow);
    assert!(matches!(s.unify(a, th), Err(UnifyError::Infinite { .. })));
    // A function returning itself: β = Int -> Returns {β}, through F and U only.
    let c = s.fresh_comp();
    let tc = s.thunk(c);
    let rc = s.returns(tc);
    let int = s.int();
    let f = s.arrow(int, rc);
    assert!(matches!(s.unify(c, f), Err(UnifyError::Infinite { .. })));
    // But through a list it is fine: β = Int -> Returns [{β}].
    let d = s.fresh_comp();
    let td = s.thunk(d);
    let ld = s.list(td);
    let rd = s.returns(ld);
    let g = s.arrow(int, rd);
    assert_eq!(s.unify(d, g), Ok(()));
    assert_eq!(show(&s, d), "μα. Integer -> Returns [{α}]");
}

// ---- generalisation ---------------------------------------------------------------

#[test]
fn let_polymorphism() {
    let mut s = TyStore::new();
    // let id = { |x| return $x }
    s.enter_level();
    let x = s.fresh_value();
    let ret = s.returns(x);
    let f = s.arrow(x, ret);
    let th = s.thunk(f);
    s.exit_level();
    let scheme = s.generalize(th);
    assert_eq!(scheme.quantified().len(), 1);
    assert_eq!(print_scheme(&scheme, Some(&s)), "∀α. {α -> Returns α}");
    // Two uses at different types.
    let i1 = s.instantiate(&scheme);
    let i2 = s.instantiate(&scheme);
    let (int, string) = (s.int(), s.string());
    let want1 = {
        let r = s.returns(int);
        let a = s.arrow(int, r);
        s.thunk(a)
    };
    let want2 = {
        let r = s.returns(string);
        let a = s.arrow(string, r);
        s.thunk(a)
    };
    assert_eq!(s.unify(i1, want1), Ok(()));
    assert_eq!(s.unify(i2, want2), Ok(()));
    // The original is untouched.
    assert!(matches!(s.view(x), TyView::Var(..)));
}

#[test]
fn variables_free_in_the_environment_are_not_generalised() {
    let mut s = TyStore::new();
    let outer = s.fresh_value(); // bound by an enclosing lambda at the top level
    s.enter_level();
    let inner = s.fresh_value();
    let pair = s.record(&[(l("a"), outer), (l("b"), inner)]).unwrap();
    s.exit_level();
    let scheme = s.generalize(pair);
    assert_eq!(scheme.quantified().len(), 1);
    let inst = s.instantiate(&scheme);
    let int = s.int();
    let want = s.record(&[(l("a"), int), (l("b"), int)]).unwrap();
    assert_eq!(s.unify(inst, want), Ok(()));
    assert_eq!(show(&s, outer), "Integer");
}

#[test]
fn weak_variables_are_never_generalised_and_spread() {
    let mut s = TyStore::new();
    s.enter_level();
    let w = s.fresh_weak();
    let x = s.fresh_value();
    let lx = s.list(x);
    assert_eq!(s.unify(w, lx), Ok(()));
    s.exit_level();
    assert!(s.is_weak(x), "weakness is inherited through unification");
    let scheme = s.generalize(w);
    assert!(scheme.quantified().is_empty());
    assert_eq!(print_scheme(&scheme, Some(&s)), "[_α]");
    let i1 = s.instantiate(&scheme);
    let int = s.int();
    let li = s.list(int);
    assert_eq!(s.unify(i1, li), Ok(()));
    assert_eq!(show(&s, x), "Integer", "every use shares the weak variable");
    // Grades are never weak.
    let g = s.fresh_grade();
    let v = s.fresh_value();
    let f = s.returns_graded(g, v);
    let t = s.thunk(f);
    s.make_weak(t);
    assert!(s.is_weak(v));
    assert!(!s.is_weak(g));
}

#[test]
fn generalising_a_cyclic_type() {
    let mut s = TyStore::new();
    s.enter_level();
    let a = s.fresh_value();
    let b = s.fresh_value();
    let rec = s.record(&[(l("next"), a), (l("v"), b)]).unwrap();
    let la = s.list(rec);
    assert_eq!(s.unify(a, la), Ok(()));
    s.exit_level();
    let scheme = s.generalize(a);
    assert_eq!(print_scheme(&scheme, Some(&s)), "∀β. μα. [[next: α, v: β]]");
    let i = s.instantiate(&scheme);
    let j = s.instantiate(&scheme);
    assert_eq!(s.unify(i, j), Ok(()));
}

#[test]
fn snapshots_roll_back() {
    let mut s = TyStore::new();
    let a = s.fresh_value();
    let snap = s.snapshot();
    let int = s.int();
    let l1 = s.list(int);
    assert_eq!(s.unify(a, l1), Ok(()));
    s.rollback_to(snap);
    assert!(matches!(s.view(a), TyView::Var(..)));
    let string = s.string();
    assert_eq!(s.unify(a, string), Ok(()));
}

// ---- printer ---------------------------------------------------------------------

#[test]
fn printer_forms() {
    let mut s = TyStore::new();
    let (int, string, unit) = (s.int(), s.string(), s.unit());
    let m = s.map(string);
    let rm = s.returns(m);
    assert_eq!(show(&s, rm), "Returns (Map String)");
    let cmd = s.command();
    let ls = s.list(string);
    let f = s.arrow(ls, cmd);
    assert_eq!(show(&s, f), "[String] -> Command");
    let g = s.fresh_grade();
    let a = s.fresh_value();
    let ga = s.returns_graded(g, a);
    let body = s.thunk(ga);
    let h = s.arrow(int, ga);
    let hh = s.arrow(body, h);
    let mut p = TyPrinter::new(&s);
    assert_eq!(p.ty(hh), "{ν α} -> Integer -> ν α");
    let v = s.variant(&[(l("ok"), int), (l("none"), unit)]).unwrap();
    let hv = s.handle(v);
    assert_eq!(show(&s, hv), "Handle <`ok Integer | `none>");
    let empty = s.record(&[]).unwrap();
    assert_eq!(show(&s, empty), "[·]");
    let w = s.fresh_weak();
    let odd = s.record(&[(l("a b"), w)]).unwrap();
    assert_eq!(show(&s, odd), "['a b': _α]");
    let err = s.error();
    assert_eq!(show(&s, err), "?");
}

#[test]
fn printer_shares_names_across_calls() {
    let mut s = TyStore::new();
    let a = s.fresh_value();
    let b = s.fresh_value();
    let la = s.list(a);
    let mut p = TyPrinter::new(&s);
    assert_eq!(p.ty(b), "α");
    assert_eq!(p.ty(la), "[β]");
    assert_eq!(p.ty(a), "β");
}

#[test]
fn scheme_printing_with_kinds() {
    let sch = parse_scheme("forall a:comparable. [a] -> Returns [a]").unwrap();
    assert_eq!(
        print_scheme(&sch, None),
        "∀α:comparable. [α] -> Returns [α]"
    );
    let retry = parse_scheme("forall a e. Integer -> {e a} -> e a").unwrap();
    assert_eq!(print_scheme(&retry, None), "∀α ν. Integer -> {ν α} -> ν α");
    let rec = parse_scheme("forall r c. [status: Int, message: String, ..r] -> c").unwrap();
    assert_eq!(
        print_scheme(&rec, None),
        "∀α β. [status: Integer, message: String, ..α] -> β"
    );
}

// ---- signature language --------------------------------------------------------

#[test]
fn signatures_reject_bad_input() {
    for bad in [
        "forall a. a -> a",          // a used as a value then as a computation
        "Integer",                   // a bare value is not a computation
        "forall a. Returns b",       // unbound
        "forall a. Returns Integer", // quantified but unused
        "forall c:number. c",        // kind on a computation variable
        "Returns [a: Int, a: Int]",  // repeated label
        "Returns [Integer",          // unclosed
    ] {
        assert!(parse_scheme(bad).is_err(), "{bad} should not parse");
    }
}

#[test]
fn mu_types_parse_and_print() {
    // μ extends as far right as it can, so a μ parameter needs parentheses.
    assert!(parse_scheme("forall a. μb. Map b -> Returns a").is_err());
    let sch = parse_scheme("forall a. (mu b. Map b) -> Returns a").unwrap();
    assert_eq!(print_scheme(&sch, None), "∀β. (μα. Map α) -> Returns β");
    let again = parse_scheme(&print_scheme(&sch, None)).unwrap();
    assert!(sch.alpha_eq(&again));
    let c = parse_scheme("mu f. Integer -> Returns [{f}]").unwrap();
    assert_eq!(print_scheme(&c, None), "μα. Integer -> Returns [{α}]");
}

// ---- the builtin table --------------------------------------------------------

#[test]
fn every_signature_round_trips() {
    for b in builtin_table().iter() {
        let printed = print_scheme(b.scheme(), None);
        let reparsed = parse_scheme(&printed)
            .unwrap_or_else(|e| panic!("{}: `{printed}` does not parse: {e}", b.name));
        assert!(
            b.scheme().alpha_eq(&reparsed),
            "{}: `{}` printed as `{printed}` parses to a different scheme",
            b.name,
            b.sig
        );
        assert_eq!(print_scheme(&reparsed, None), printed, "{}", b.name);
        assert!(b.scheme().is_closed());
    }
}

#[test]
fn table_has_no_duplicates_and_lookup_works() {
    let mut seen = HashSet::new();
    for (name, ..) in rows() {
        assert!(seen.insert(*name), "duplicate builtin `{name}`");
    }
    let table = builtin_table();
    assert_eq!(table.len(), rows().len());
    let map = table.get("map").unwrap();
    assert_eq!(
        print_scheme(map.scheme(), None),
        "∀α β. {α -> Returns β} -> [α] -> Returns [β]"
    );
    assert!(table.get("to-json").unwrap().writes());
    assert!(table.get("echo").unwrap().writes());
    assert!(!table.get("warn").unwrap().writes());
    assert!(table.get("no-such-builtin").is_none());
    let id = table.id("fold").unwrap();
    assert_eq!(table.entry(id).unwrap().name, "fold");
}

#[test]
fn the_spec_names_are_all_present() {
    let table = builtin_table();
    for name in [
        "each",
        "map",
        "filter",
        "fold",
        "sort-list",
        "range",
        "length",
        "equal",
        "lt",
        "gt",
        "from-json",
        "to-json",
        "fold-lines",
        "fail",
        "exit",
        "quit",
        "echo",
        "warn",
        "spawn",
        "await",
        "poll",
        "race",
        "cancel",
        "retry",
        "defer",
        "par",
        "watch",
        "service",
        "detach",
        "_ed-state",
        "use",
        "service-handle",
        "diverges",
    ] {
        assert!(table.get(name).is_some(), "missing `{name}`");
    }
}

#[test]
fn builtin_schemes_instantiate_and_check() {
    let mut s = TyStore::new();
    let table = builtin_table();
    // length "abc" : Returns Integer; length 3 is a kind violation.
    let len = s.instantiate(table.get("length").unwrap().scheme());
    let string = s.string();
    let r = s.fresh_comp();
    let want = s.arrow(string, r);
    assert_eq!(s.unify(len, want), Ok(()));
    assert_eq!(show(&s, r), "Returns Integer");
    let len = s.instantiate(table.get("length").unwrap().scheme());
    let int = s.int();
    let r = s.fresh_comp();
    let want = s.arrow(int, r);
    assert!(matches!(
        s.unify(len, want),
        Err(UnifyError::KindViolation { .. })
    ));
    // `+` on strings, through a `number` scheme.
    let sum = s.instantiate(table.get("sum").unwrap().scheme());
    let ls = s.list(string);
    let r = s.fresh_comp();
    let want = s.arrow(ls, r);
    assert!(matches!(
        s.unify(want, sum),
        Err(UnifyError::KindViolation {
            var_on: Side::Found,
            ..
        })
    ));
    // Each instance is fresh.
    let e1 = s.instantiate(table.get("equal").unwrap().scheme());
    let e2 = s.instantiate(table.get("equal").unwrap().scheme());
    assert_ne!(s.find(e1), s.find(e2));
    // Scheme of every entry instantiates to a computation.
    for b in table.iter() {
        let t = s.instantiate(b.scheme());
        assert_eq!(s.sort_of(t), Sort::Comp, "{}", b.name);
    }
}

#[test]
fn large_chains_are_fast_enough() {
    // A long chain of unifications stays near-linear.
    let mut s = TyStore::new();
    let mut prev = s.fresh_value();
    let first = prev;
    for _ in 0..100_000 {
        let next = s.fresh_value();
        let lp = s.list(prev);
        let ln = s.list(next);
        assert_eq!(s.unify(lp, ln), Ok(()));
        prev = next;
    }
    let int = s.int();
    assert_eq!(s.unify(prev, int), Ok(()));
    assert_eq!(show(&s, first), "Integer");
}

// ---- what editors and hosts read -------------------------------------------

#[test]
fn the_unit_result_and_binder_types_are_recorded() {
    let src =
        "let n = 3\nlet f = { |x y| return $[$x + $y + 1] }\nreturn [edit_mode: vi, bell: false]";
    let (parsed, checked) = crate::check_source(src, "<t>", &crate::TypeEnv::new());
    assert!(!parsed.has_errors());
    let checked = checked.unwrap();
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    assert_eq!(
        show(&checked.store, checked.result),
        "Returns [edit_mode: String, bell: Bool]"
    );
    let at = |name: &str| {
        let start = src.find(name).unwrap() as u32;
        let first = name.split(' ').next().unwrap();
        let span = ral_syntax::Span::new(start, start + first.len() as u32);
        show(&checked.store, checked.elab.binders[&span])
    };
    assert_eq!(at("n ="), "Integer");
    assert_eq!(at("x y"), "Integer");
    assert_eq!(at("f ="), "{Integer -> Integer -> Returns Integer}");
    // A unit ending in a `let` returns Unit.
    let (_, checked) = crate::check_source("let a = 1", "<t>", &crate::TypeEnv::new());
    let checked = checked.unwrap();
    assert_eq!(show(&checked.store, checked.result), "Returns Unit");
}
