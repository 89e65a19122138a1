//! The syntax corpus: `tests/syntax/ok/*.ral` must parse without errors and
//! have their token list and syntax tree snapshotted; `tests/syntax/err/*.ral`
//! declare the errors they must produce in `# expect-error: CODE line N`
//! header lines and have their rendered diagnostics snapshotted.
//!
//! Every file is checked and every failure collected before the test fails,
//! so one run lists all broken files. Snapshots live in
//! `tests/tests/snapshots/` and carry their own input (STYLE §5.2); review
//! new ones with `cargo insta review`, never edit them by hand.
#![allow(clippy::unwrap_used)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use ral_syntax::Code;
use ral_tests::{check_parse, files_with_ext, snapshot_body, token_listing, workspace_root};

/// The header directive an error file uses to declare one expected error.
const EXPECT: &str = "# expect-error:";

/// A corpus file, read and named relative to `tests/syntax/`.
struct CorpusFile {
    /// For example `ok/records.ral`; used as the diagnostic source name.
    name: String,
    /// For example `ok__records`; the snapshot name prefix.
    snapshot: String,
    /// The workspace-relative path, recorded in snapshot metadata.
    input_file: String,
    text: String,
}

fn corpus(kind: &str) -> Vec<CorpusFile> {
    let root = workspace_root();
    let dir = root.join("tests").join("syntax").join(kind);
    files_with_ext(&dir, "ral")
        .into_iter()
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            CorpusFile {
                name: format!("{kind}/{stem}.ral"),
                snapshot: format!("{kind}__{stem}"),
                input_file: path
                    .strip_prefix(&root)
                    .unwrap_or(&path)
                    .to_string_lossy()
                    .into_owned(),
                text,
            }
        })
        .collect()
}

/// Asserts one snapshot, turning a mismatch into a returned message instead
/// of a panic so the caller can go on with the other files.
fn snapshot(file: &CorpusFile, suffix: &str, body: &str) -> Result<(), String> {
    let name = format!("{}__{suffix}", file.snapshot);
    let snapshots = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("snapshots");
    let res = catch_unwind(AssertUnwindSafe(|| {
        insta::with_settings!({
            snapshot_path => snapshots.clone(),
            prepend_module_to_snapshot => false,
            input_file => file.input_file.clone(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(name.clone(), body);
        });
    }));
    res.map_err(|_| format!("{}: snapshot `{name}` does not match", file.name))
}

/// Panics with every collected failure, or returns if there is none.
fn report(what: &str, checked: usize, failures: &[String]) {
    let failed_files = failures
        .iter()
        .map(|f| f.split(':').next().unwrap_or(f))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    assert!(
        failures.is_empty(),
        "{failed_files} of {checked} {what} failed ({} problems):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn ok_files_parse_cleanly() {
    let files = corpus("ok");
    let mut failures = Vec::new();
    for file in &files {
        let parse = check_parse(&file.name, &file.text);
        if parse.errors().next().is_some() {
            failures.push(format!(
                "{}: unexpected errors: {}\n{}",
                file.name,
                parse.error_summary(),
                parse.rendered()
            ));
        }
        let tokens = token_listing(parse.text());
        if let Err(e) = snapshot(file, "tokens", &snapshot_body(parse.text(), &tokens)) {
            failures.push(e);
        }
        let ast = ral_syntax::dump::dump_program(&parse.parsed.program);
        if let Err(e) = snapshot(file, "ast", &snapshot_body(parse.text(), &ast)) {
            failures.push(e);
        }
    }
    report("files in tests/syntax/ok", files.len(), &failures);
}

/// One `# expect-error: CODE line N` directive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expected {
    code: Code,
    line: usize,
}

/// Reads the expectations from the leading comment lines of an error file.
fn expectations(text: &str) -> Result<Vec<Expected>, String> {
    let mut expected = Vec::new();
    let mut in_header = true;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        in_header &= line.starts_with('#');
        let Some(rest) = line.trim_start().strip_prefix(EXPECT) else {
            continue;
        };
        if !in_header {
            return Err(format!(
                "line {lineno}: `{EXPECT}` is only read in the header comment lines"
            ));
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        let (code, line) = match words.as_slice() {
            [code, "line", n] => (*code, *n),
            _ => {
                return Err(format!(
                    "line {lineno}: expected `{EXPECT} CODE line N`, found `{line}`"
                ))
            }
        };
        let code = Code::from_name(code)
            .ok_or_else(|| format!("line {lineno}: unknown diagnostic code `{code}`"))?;
        let line = line
            .parse()
            .map_err(|_| format!("line {lineno}: `{line}` is not a line number"))?;
        expected.push(Expected { code, line });
    }
    if expected.is_empty() {
        return Err(format!("no `{EXPECT} CODE line N` header line"));
    }
    Ok(expected)
}

#[test]
fn err_files_report_their_errors() {
    let files = corpus("err");
    let mut failures = Vec::new();
    for file in &files {
        let expected = match expectations(&file.text) {
            Ok(expected) => expected,
            Err(e) => {
                failures.push(format!("{}: {e}", file.name));
                continue;
            }
        };
        let parse = check_parse(&file.name, &file.text);
        let found: Vec<Expected> = parse
            .errors()
            .map(|d| Expected {
                code: d.code,
                line: parse.line_of(d),
            })
            .collect();
        for want in &expected {
            if !found.contains(want) {
                failures.push(format!(
                    "{}: missing error {} on line {} (found: {})",
                    file.name,
                    want.code,
                    want.line,
                    parse.error_summary()
                ));
            }
        }
        for got in &found {
            if !expected.iter().any(|want| want.code == got.code) {
                failures.push(format!(
                    "{}: unexpected error {} on line {} (not in the header)",
                    file.name, got.code, got.line
                ));
            }
        }
        let rendered = parse.rendered();
        if let Err(e) = snapshot(file, "diagnostics", &snapshot_body(parse.text(), &rendered)) {
            failures.push(e);
        }
    }
    report("files in tests/syntax/err", files.len(), &failures);
}

#[test]
fn expectation_headers_are_read() {
    let text = "# expect-error: unclosed-string line 3\n# a comment\n\
                # expect-error: shell-and-or line 1\necho 'x\n";
    assert_eq!(
        expectations(text).unwrap(),
        vec![
            Expected {
                code: Code::UnclosedString,
                line: 3
            },
            Expected {
                code: Code::ShellAndOr,
                line: 1
            },
        ]
    );
    assert!(expectations("echo hi\n").is_err());
    assert!(expectations("# expect-error: no-such-code line 1\n").is_err());
    assert!(expectations("# expect-error: unclosed-string 3\n").is_err());
    assert!(expectations("# expect-error: unclosed-string line x\n").is_err());
    assert!(expectations("echo\n# expect-error: unclosed-string line 1\n").is_err());
}
