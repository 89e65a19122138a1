//! Turn-to-turn environments, the elaboration tables, and checking speed.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use ral_types::{check_source, CaptureSite, HeadRes, TypeEnv};

#[test]
fn a_later_turn_sees_earlier_bindings() {
    let env = TypeEnv::new();
    let (_, first) = check_source(
        "let add = { |x y| return $[$x + $y] }\nlet n = 3",
        "<repl>",
        &env,
    );
    let first = first.unwrap();
    assert!(!first.has_errors());
    let env = env.extend_with(&first);
    let (_, second) = check_source("let a = add 1 $n\nlet b = add 1.5 2.5", "<repl>", &env);
    let second = second.unwrap();
    assert!(!second.has_errors(), "{:?}", second.diagnostics);
    assert_eq!(second.binding_type("a").unwrap(), "Integer");
    assert_eq!(second.binding_type("b").unwrap(), "Float");
}

#[test]
fn a_failed_turn_keeps_only_the_landed_prefix() {
    let env = TypeEnv::new();
    let (_, c) = check_source("let before = 1\nfalse\nlet after = 2", "<repl>", &env);
    let env = env.extend_with_prefix(&c.unwrap(), 1);
    assert!(env.get("before").is_some());
    assert!(env.get("after").is_none());
}

#[test]
fn tables_record_heads_and_captures() {
    let (parsed, c) = check_source("let x = echo hi\nls\necho !{ls}", "<t>", &TypeEnv::new());
    let c = c.unwrap();
    let heads: Vec<&HeadRes> = c.elab.heads.values().collect();
    assert!(heads.iter().any(|h| matches!(h, HeadRes::BaseHandler(_))));
    assert!(heads
        .iter()
        .any(|h| matches!(h, HeadRes::External(n) if n == "ls")));
    let caps: Vec<&CaptureSite> = c.elab.captures.values().collect();
    assert!(caps.contains(&&CaptureSite::LetRhs));
    assert!(caps.contains(&&CaptureSite::Force));
    assert!(parsed.program.stmts.len() == 3);
}

#[test]
fn ten_thousand_lines_check_quickly() {
    let mut src = String::new();
    for i in 0..2500 {
        src.push_str(&format!(
            "let f{i} = {{ |x| return $[$x + {i}] }}\nlet v{i} = f{i} 1\nlet s{i} = \"n $v{i}\"\necho $s{i} | cat\n"
        ));
    }
    let start = Instant::now();
    let (parsed, c) = check_source(&src, "<big>", &TypeEnv::new());
    let elapsed = start.elapsed();
    assert!(!parsed.has_errors());
    assert!(!c.unwrap().has_errors());
    // Generous for debug builds; release is far below a second.
    assert!(elapsed.as_secs() < 10, "took {elapsed:?}");
    eprintln!("10,000 lines: {elapsed:?}");
}
