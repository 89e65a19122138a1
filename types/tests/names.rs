//! The checker records how every name use resolved, so lowering never
//! repeats the lookup rules (spec §5.1, §5.7, §6.3).

use ral_syntax::ast::{Atom, Primary};
use ral_syntax::walk::{self, Visitor};
use ral_syntax::{SourceId, Span};
use ral_types::{check_program, CheckOptions, NameRes, TypeEnv};

/// Every `$name` use in a program, with its span.
struct Uses(Vec<(String, Span)>);

impl Visitor for Uses {
    fn visit_atom(&mut self, atom: &Atom) {
        if let Primary::Var(n) = &atom.primary {
            self.0.push((n.text.clone(), n.span));
        }
        walk::walk_atom(self, atom);
    }
}

fn resolutions(src: &str, env: &TypeEnv) -> Vec<(String, Span, Option<NameRes>)> {
    let parsed = ral_syntax::parse(src, SourceId(0));
    assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
    let checked = check_program(
        &parsed.program,
        SourceId(0),
        env,
        &CheckOptions { is_script: true },
    );
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let mut uses = Uses(Vec::new());
    uses.visit_program(&parsed.program);
    uses.0
        .into_iter()
        .map(|(name, span)| {
            let res = checked.elab.names.get(&span).copied();
            (name, span, res)
        })
        .collect()
}

fn span_of(src: &str, needle: &str, nth: usize) -> Span {
    let at = src
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .expect("needle");
    Span::from_range(at..at + needle.len())
}

#[test]
fn every_use_is_resolved_to_its_binder() {
    let src = "let rate = 10\n\
               let add = { |n| $[$n + $rate] }\n\
               let rate = 20\n\
               let r = add $rate\n\
               let m = $map\n\
               echo $SCRIPT\n";
    let res = resolutions(src, &TypeEnv::new());
    assert_eq!(res.len(), 5, "{res:?}");
    for (name, _, r) in &res {
        assert!(r.is_some(), "`${name}` has no recorded resolution");
    }
    // `$n` is the parameter; the first `$rate` is the first binding, the
    // second `$rate` (after the shadowing `let`) the second one.
    let bars = span_of(src, "|n|", 0);
    let n_param = Span::new(bars.start + 1, bars.start + 2);
    assert_eq!(
        res[0].2,
        Some(NameRes::Local {
            binder: Some(n_param)
        })
    );
    let first_rate = span_of(src, "rate", 0);
    assert_eq!(
        res[1].2,
        Some(NameRes::Local {
            binder: Some(first_rate)
        })
    );
    let second_rate = span_of(src, "rate", 2);
    assert_eq!(
        res[2].2,
        Some(NameRes::Local {
            binder: Some(second_rate)
        })
    );
    let map_id = ral_types::builtin_table()
        .id("map")
        .expect("map is a builtin");
    assert_eq!(res[3].2, Some(NameRes::Builtin(map_id)));
    assert_eq!(res[4].2, Some(NameRes::Script));
}

#[test]
fn forward_and_self_references_name_their_definition() {
    let src = "let even = { |n| if $[$n == 0] { true } else { odd $[$n - 1] } }\n\
               let odd = { |n| if $[$n == 0] { false } else { even $[$n - 1] } }\n\
               let twice = { |f x| $f !{$f $x} }\n\
               let again = $twice\n";
    let parsed = ral_syntax::parse(src, SourceId(0));
    let checked = check_program(
        &parsed.program,
        SourceId(0),
        &TypeEnv::new(),
        &CheckOptions::default(),
    );
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    // The bare head `odd` inside `even` is a forward reference to `odd`'s definition.
    let odd_use = span_of(src, "odd", 0);
    let odd_def = span_of(src, "odd", 1);
    assert_eq!(
        checked.elab.names.get(&odd_use),
        Some(&NameRes::Forward { binder: odd_def })
    );
    // `even` inside `odd` refers back to the earlier definition.
    let even_use = span_of(src, "even", 1);
    let even_def = span_of(src, "even", 0);
    assert!(
        matches!(
            checked.elab.names.get(&even_use),
            Some(NameRes::Local { binder: Some(b) } | NameRes::Forward { binder: b }) if *b == even_def
        ),
        "{:?}",
        checked.elab.names.get(&even_use)
    );
    let twice_use = span_of(src, "$twice", 0);
    assert_eq!(
        checked.elab.names.get(&twice_use),
        Some(&NameRes::Local {
            binder: Some(span_of(src, "twice", 0))
        })
    );
}

#[test]
fn earlier_turns_resolve_to_the_session() {
    let first = "let base = 'x'\n";
    let parsed = ral_syntax::parse(first, SourceId(0));
    let checked = check_program(
        &parsed.program,
        SourceId(0),
        &TypeEnv::new(),
        &CheckOptions::default(),
    );
    let env = TypeEnv::new().extend_with(&checked);
    let res = resolutions("echo $base\n", &env);
    assert_eq!(res[0].2, Some(NameRes::Session));
}
