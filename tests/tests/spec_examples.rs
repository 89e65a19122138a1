//! The spec's examples parse and type-check as the spec says, and every
//! diagnostic code has a section in the error catalog.
//!
//! Every fenced block in `spec/*.md` whose info string is `ral` must parse
//! and type-check without errors (as a fresh non-script unit: an empty
//! session, builtins and prelude only). One whose info string is
//! `ral error[CODE]` must be rejected with that code: for a lexical or parse
//! code, the parse reports an error with that code; for a type-phase code,
//! the program parses cleanly and the checker reports exactly one error,
//! of that code. Other blocks (`text`, …) are not ral and are skipped. All
//! failures are collected and reported with file and line.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use ral_syntax::{Code, Phase};
use ral_tests::{check_parse, check_types, files_with_ext, workspace_root};

/// What a fenced block claims about its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Claim {
    /// ```` ```ral ````: parses and type-checks cleanly.
    Parses,
    /// ```` ```ral error[CODE] ````: reports an error with this code name.
    Errors(String),
}

/// One fenced block of ral.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Example {
    /// The 1-based line of the opening fence.
    line: usize,
    claim: Claim,
    text: String,
}

/// Reads the claim an info string makes, or `None` if the block is not ral.
fn claim(info: &str) -> Option<Claim> {
    let info = info.trim();
    if info == "ral" {
        return Some(Claim::Parses);
    }
    let rest = info.strip_prefix("ral")?.trim_start();
    let code = rest.strip_prefix("error[")?.strip_suffix(']')?;
    Some(Claim::Errors(code.trim().to_string()))
}

/// Every ral block in one Markdown document, CommonMark-style: a fence is
/// three or more backticks or tildes, closed by a fence of the same character
/// at least as long.
fn examples(markdown: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize, Option<Example>)> = None;
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence_char = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let fence_len = fence_char.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match &mut open {
            None => {
                if let Some(c) = fence_char.filter(|_| fence_len >= 3) {
                    let info = &trimmed[fence_len * c.len_utf8()..];
                    let example = claim(info).map(|claim| Example {
                        line: i + 1,
                        claim,
                        text: String::new(),
                    });
                    open = Some((c, fence_len, example));
                }
            }
            Some((c, len, example)) => {
                let closes = fence_char == Some(*c)
                    && fence_len >= *len
                    && trimmed[fence_len * c.len_utf8()..].trim().is_empty();
                if closes {
                    if let Some(example) = example.take() {
                        out.push(example);
                    }
                    open = None;
                } else if let Some(example) = example {
                    example.text.push_str(line);
                    example.text.push('\n');
                }
            }
        }
    }
    // A block left open runs to the end of the document, as in CommonMark.
    if let Some((_, _, Some(example))) = open {
        out.push(example);
    }
    out
}

fn spec_dir() -> PathBuf {
    workspace_root().join("spec")
}

#[test]
fn spec_examples_check_as_claimed() {
    let docs = files_with_ext(&spec_dir(), "md");
    assert!(
        !docs.is_empty(),
        "no spec/*.md files found in {}",
        spec_dir().display()
    );
    let mut failures = Vec::new();
    let mut checked = 0;
    for doc in &docs {
        let name = format!("spec/{}", doc.file_name().unwrap().to_string_lossy());
        let markdown = std::fs::read_to_string(doc).unwrap();
        for example in examples(&markdown) {
            checked += 1;
            let at = format!("{name}:{}", example.line);
            let parse = check_parse(&at, &example.text);
            match &example.claim {
                Claim::Parses => {
                    if parse.errors().next().is_some() {
                        failures.push(format!(
                            "{at}: a `ral` block has errors: {}\n{}",
                            parse.error_summary(),
                            parse.rendered()
                        ));
                    } else {
                        let types = check_types(&parse);
                        if types.errors().next().is_some() {
                            failures.push(format!(
                                "{at}: a `ral` block has type errors: {}\n{}",
                                types.summary, types.rendered
                            ));
                        }
                    }
                }
                Claim::Errors(code) => match Code::from_name(code) {
                    None => failures.push(format!("{at}: `ral error[{code}]` names no code")),
                    Some(c) if c.phase() == Phase::Type => {
                        if parse.errors().next().is_some() {
                            failures.push(format!(
                                "{at}: expected type error `{code}`, but the block does not parse: [{}]",
                                parse.error_summary()
                            ));
                        } else {
                            let types = check_types(&parse);
                            let errors: Vec<_> = types.errors().collect();
                            if errors.len() != 1 || errors[0].code != c {
                                failures.push(format!(
                                    "{at}: expected exactly one type error `{code}`, found: [{}]\n{}",
                                    types.summary, types.rendered
                                ));
                            }
                        }
                    }
                    Some(_) => {
                        if !parse.errors().any(|d| d.code.name() == code) {
                            failures.push(format!(
                                "{at}: expected error `{code}`, found: [{}]",
                                parse.error_summary()
                            ));
                        }
                    }
                },
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} spec examples failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// The code a `## …` heading names, if it is one: `## name` or ``## `name` ``,
/// optionally followed by more text.
fn heading_code(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("## ")?.trim();
    let first = rest.split_whitespace().next()?;
    Some(first.trim_matches('`'))
}

#[test]
fn every_code_has_a_catalog_section() {
    let path = spec_dir().join("errors.md");
    let catalog = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the error catalog {} is missing: {e}", path.display()));
    let headings: Vec<&str> = catalog.lines().filter_map(heading_code).collect();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .map(|c| c.name())
        .filter(|name| !headings.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "spec/errors.md has no `## name` section for {} code(s): {}",
        missing.len(),
        missing.join(", ")
    );
}

#[test]
fn fences_are_read() {
    let md =
        "intro\n```ral\necho hi\n```\n\n````ral error[shell-and-or]\na && b\n```\nstill\n````\n\
              ```text\nnot ral\n```\n~~~ral\nlet x = 1\n~~~\n```rust\nfn f() {}\n```\n";
    let found = examples(md);
    assert_eq!(
        found,
        vec![
            Example {
                line: 2,
                claim: Claim::Parses,
                text: "echo hi\n".into()
            },
            Example {
                line: 6,
                claim: Claim::Errors("shell-and-or".into()),
                text: "a && b\n```\nstill\n".into()
            },
            Example {
                line: 14,
                claim: Claim::Parses,
                text: "let x = 1\n".into()
            },
        ]
    );
    assert_eq!(claim("ral error[ x ]"), Some(Claim::Errors("x".into())));
    assert_eq!(claim("ralph"), None);
    assert_eq!(
        heading_code("## `unclosed-string`"),
        Some("unclosed-string")
    );
    assert_eq!(heading_code("## unclosed-string"), Some("unclosed-string"));
    assert_eq!(heading_code("### sub"), None);
}
