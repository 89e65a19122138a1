//! Secondary labels: a type or kind error cites the conflicting use.
#![allow(clippy::unwrap_used)]

use ral_types::{check_source, TypeEnv};

/// The (line, code, secondary label lines) of every error in `src`.
fn errors(src: &str) -> Vec<(usize, String, Vec<usize>)> {
    let line = |o: u32| src[..o as usize].matches('\n').count() + 1;
    let (parsed, checked) = check_source(src, "<test>", &TypeEnv::new());
    assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
    checked
        .unwrap()
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            (
                line(d.primary.span.start),
                d.code.name().to_owned(),
                d.secondary.iter().map(|l| line(l.span.start)).collect(),
            )
        })
        .collect()
}

#[test]
fn mismatch_cites_where_the_expected_type_came_from() {
    let e = errors("let x = 1\nlet y = [$x, 'a']\n");
    assert_eq!(e, vec![(2, "type-mismatch".to_owned(), vec![1])]);
}

#[test]
fn builtin_result_is_cited_as_the_origin() {
    let e = errors("let n = length [1]\nlet m = equal $n 'z'\n");
    assert_eq!(e, vec![(2, "type-mismatch".to_owned(), vec![1])]);
}

#[test]
fn argument_mismatch_cites_the_function_body() {
    let e = errors("let f = { |n|\n  return $[$n * 2]\n}\nlet w = f 'q'\n");
    assert_eq!(e, vec![(4, "type-mismatch".to_owned(), vec![2])]);
}

#[test]
fn kind_error_labels_the_operator_and_the_left_operand() {
    let src = "let x = 1\nlet y = $[$x + 'a']\n";
    let (_, checked) = check_source(src, "<test>", &TypeEnv::new());
    let checked = checked.unwrap();
    let d = checked.diagnostics.iter().find(|d| d.is_error()).unwrap();
    assert_eq!(d.code.name(), "kind-mismatch");
    let texts: Vec<&str> = d.secondary.iter().map(|l| l.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("needs number")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("left operand")),
        "{texts:?}"
    );
}

#[test]
fn kind_error_in_a_called_function_labels_the_operator() {
    let e = errors("let f = { |s|\n  return $[$s + 1]\n}\nlet r = f 'a'\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].2.contains(&2), "{e:?}");
}

#[test]
fn top_level_let_hiding_a_prelude_name_warns_only() {
    let src = "let length = { |x| return 0 }\nlet n = length [1]\nlet f = {\n  let map = 1\n  return $map\n}\n";
    let (_, checked) = check_source(src, "<test>", &TypeEnv::new());
    let checked = checked.unwrap();
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let warns: Vec<_> = checked
        .diagnostics
        .iter()
        .filter(|d| d.code.name() == "prelude-shadow")
        .collect();
    assert_eq!(warns.len(), 1, "{warns:?}");
    assert_eq!(warns[0].severity, ral_syntax::Severity::Warning);
    assert_eq!(warns[0].primary.span.start, 4);
}
