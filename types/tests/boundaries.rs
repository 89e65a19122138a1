//! Admission sites (spec §7.3, §17.3): what the checker freezes for a
//! boundary call once the unit is solved.
#![allow(clippy::unwrap_used)]

use ral_types::{check_source, AdmitSite, TypeEnv};

/// The site text of every boundary call of `src`, in stage order.
fn sites(src: &str) -> Vec<String> {
    let (parsed, checked) = check_source(src, "<test>", &TypeEnv::new());
    assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
    let checked = checked.unwrap();
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    checked
        .elab
        .boundaries
        .values()
        .map(|b| {
            let text = b.site.to_string();
            assert_eq!(AdmitSite::parse(&text).as_ref(), Ok(&b.site));
            format!("{} {text}", b.door)
        })
        .collect()
}

/// The site without its use offsets.
fn shape(site: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in site.chars() {
        if c == '@' {
            skip = true;
            continue;
        }
        if skip && c.is_ascii_digit() {
            continue;
        }
        skip = false;
        out.push(c);
    }
    out
}

#[test]
fn a_field_read_and_an_addition_freeze_an_open_record_of_an_int() {
    let s = sites("let d = from-json << '{}'\nlet n = $[$d[size] + 1]\n");
    assert_eq!(s.len(), 1);
    assert_eq!(shape(&s[0]), r#"from-json {"size": #1, ..};Int"#);
    // The Int was fixed at the addition, on line 2.
    assert!(s[0].contains("Int@"), "{}", s[0]);
}

#[test]
fn an_unconstrained_result_needs_no_site() {
    assert!(sites("let d = from-json << '{}'\necho 'ok'\n").is_empty());
    assert!(sites("let d = from-json << '[]'\nlet n = length $d\n").len() == 1);
}

#[test]
fn comparison_makes_an_agreeing_variable() {
    let s = sites("let a = from-json << '[]'\nlet b = from-json << '[]'\necho $[$a[0] < $b[0]]\n");
    assert_eq!(s.len(), 2);
    for site in &s {
        assert!(shape(site).ends_with("[#1];_1c~0"), "{site}");
    }
}

#[test]
fn a_closed_record_and_a_use() {
    let s = sites("let d = from-json << '{}'\necho $[$d == [a: 1]]\n");
    assert_eq!(shape(&s[0]), r#"from-json {"a": #1};Int"#);
    // A function keeps the type the program uses it at (§10.3): an
    // `Integer` parameter, a value of a kind nothing fixed.
    let s = sites("let m = use 'm.ral'\necho !{$m[f] 1}\n");
    assert_eq!(
        shape(&s[0]),
        r#"use {"f": #1, ..};Fn #2;#3 -> #4;Int;Ret #5;_fff"#
    );
}

#[test]
fn unrelated_decodes_number_their_variables_apart() {
    // Agreement numbers are the unit's (§7.3): two comparisons of two
    // unrelated pairs of decodes are two variables.
    let s = sites(
        "let a = from-json << '[]'\nlet b = from-json << '[]'\necho $[$a[0] < $a[1]] $[$b[0] < $b[1]]\n",
    );
    assert_eq!(s.len(), 2);
    assert!(shape(&s[0]).ends_with("[#1];_1c~0"), "{}", s[0]);
    assert!(shape(&s[1]).ends_with("[#1];_1c~1"), "{}", s[1]);
}
