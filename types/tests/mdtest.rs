//! Type-checker tests in the mdtest style (STYLE.md §5.4).
//!
//! Every `.ral` file under `tests/accept/` must check with no error; a
//! trailing `#: T` on a `let` line asserts the printed scheme of the name it
//! binds. Every file under `tests/reject/` has `# error[code]` comments; each
//! asserts an error with that code whose primary label starts on that line,
//! and every error must be asserted. All failures are reported together.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use ral_types::{check_source, TypeEnv};

fn files(dir: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ral"))
        .collect();
    out.sort();
    out
}

fn line_of(src: &str, offset: u32) -> usize {
    src[..(offset as usize).min(src.len())]
        .matches('\n')
        .count()
        + 1
}

fn check_file(path: &Path, accept: bool, failures: &mut Vec<String>) {
    let src = std::fs::read_to_string(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let (parsed, checked) = check_source(&src, "<test>", &TypeEnv::new());
    if parsed.has_errors() {
        failures.push(format!("{name}: parse errors: {:?}", parsed.diagnostics));
        return;
    }
    let Some(checked) = checked else { return };
    let errors: Vec<(usize, String, String)> = checked
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            (
                line_of(&src, d.primary.span.start),
                d.code.name().to_owned(),
                d.message.clone(),
            )
        })
        .collect();
    let mut expected: Vec<(usize, String)> = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let lineno = i + 1;
        let mut rest = line;
        while let Some(at) = rest.find("# error[") {
            let tail = &rest[at + 8..];
            if let Some(end) = tail.find(']') {
                expected.push((lineno, tail[..end].to_owned()));
                rest = &tail[end..];
            } else {
                break;
            }
        }
        if let Some(at) = line.find("#: ") {
            let want = line[at + 3..].trim();
            let found = checked
                .bindings
                .iter()
                .rev()
                .find(|b| line_of(&src, b.span.start) == lineno)
                .map(|b| ral_types::print_scheme(&b.scheme, Some(&checked.store)));
            match found {
                Some(t) if t == want => {}
                Some(t) => failures.push(format!(
                    "{name}:{lineno}: expected type `{want}`, found `{t}`"
                )),
                None => failures.push(format!(
                    "{name}:{lineno}: no top-level binding on this line"
                )),
            }
        }
    }
    if accept {
        for (l, c, m) in &errors {
            failures.push(format!("{name}:{l}: unexpected error[{c}]: {m}"));
        }
        return;
    }
    if expected.is_empty() {
        failures.push(format!("{name}: a reject test asserts no error"));
    }
    for (l, c) in &expected {
        if !errors.iter().any(|(el, ec, _)| el == l && ec == c) {
            failures.push(format!("{name}:{l}: expected error[{c}], got {errors:?}"));
        }
    }
    for (l, c, m) in &errors {
        if !expected.iter().any(|(el, ec)| el == l && ec == c) {
            failures.push(format!("{name}:{l}: unasserted error[{c}]: {m}"));
        }
    }
}

#[test]
fn accept_and_reject() {
    let mut failures = Vec::new();
    let accept = files("accept");
    let reject = files("reject");
    for p in &accept {
        check_file(p, true, &mut failures);
    }
    for p in &reject {
        check_file(p, false, &mut failures);
    }
    assert!(!accept.is_empty() && !reject.is_empty());
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
