//! Golden scripts: every `vm/tests/golden/*.ral` file holds cases of the
//! form
//!
//! ```text
//! #### a descriptive case name
//! <ral program lines>
//! ## STDOUT:
//! <expected stdout lines>
//! ## END
//! ## status: 0
//! ```
//!
//! `## STDOUT:` … `## END` may be left out (no output expected), and so may
//! `## status: N` (default 0). The status is 0 when the program succeeds,
//! the failure's status when it fails at run time, the exit status for
//! `exit n`, and 1 when it does not parse, check or compile. Each case runs
//! on a fresh VM whose standard output is an injected buffer; every case
//! runs, and all mismatches are reported together at the end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Escape, Mobile, RunError, Stdin, Stdout, Vm};

/// One golden case.
#[derive(Debug)]
struct Case {
    name: String,
    /// 1-based line of the `####` header.
    line: usize,
    program: String,
    stdout: String,
    status: i32,
}

/// What running a case produced.
struct Outcome {
    stdout: String,
    status: i32,
    /// Why the status is nonzero, for the report.
    detail: Option<String>,
}

/// Parses a golden file into its cases.
fn parse_cases(text: &str) -> Result<Vec<Case>, String> {
    #[derive(PartialEq)]
    enum State {
        Outside,
        Program,
        Stdout,
        Trailer,
    }
    let mut cases: Vec<Case> = Vec::new();
    let mut state = State::Outside;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        if let Some(name) = line.strip_prefix("#### ") {
            if state == State::Stdout {
                return Err(format!("line {lineno}: `## STDOUT:` without `## END`"));
            }
            cases.push(Case {
                name: name.trim().to_owned(),
                line: lineno,
                program: String::new(),
                stdout: String::new(),
                status: 0,
            });
            state = State::Program;
            continue;
        }
        let Some(case) = cases.last_mut() else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(format!("line {lineno}: text before the first `####` case"));
        };
        match state {
            State::Outside => unreachable!("a case exists once a header was seen"),
            State::Stdout => {
                if line == "## END" {
                    state = State::Trailer;
                } else {
                    case.stdout.push_str(line);
                    case.stdout.push('\n');
                }
            }
            State::Program | State::Trailer => {
                if line == "## STDOUT:" {
                    if state == State::Trailer {
                        return Err(format!("line {lineno}: second `## STDOUT:` in a case"));
                    }
                    state = State::Stdout;
                } else if let Some(n) = line.strip_prefix("## status:") {
                    case.status = n
                        .trim()
                        .parse()
                        .map_err(|_| format!("line {lineno}: bad status `{}`", n.trim()))?;
                    state = State::Trailer;
                } else if line.starts_with("## ") {
                    return Err(format!("line {lineno}: unknown directive `{line}`"));
                } else if state == State::Program {
                    case.program.push_str(line);
                    case.program.push('\n');
                } else if !line.trim().is_empty() {
                    return Err(format!(
                        "line {lineno}: program text after `## STDOUT:`/`## status:`"
                    ));
                }
            }
        }
    }
    if state == State::Stdout {
        return Err("`## STDOUT:` without `## END` at end of file".into());
    }
    Ok(cases)
}

/// A writer into a buffer the test keeps a handle to.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `src` on a fresh VM.
fn run_case(src: &str) -> Outcome {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    if parsed.has_errors() {
        return Outcome {
            stdout: String::new(),
            status: 1,
            detail: Some(format!(
                "parse error: {:?}",
                first_message(&parsed.diagnostics)
            )),
        };
    }
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    if checked.has_errors() {
        return Outcome {
            stdout: String::new(),
            status: 1,
            detail: Some(format!(
                "type error: {:?}",
                first_message(&checked.diagnostics)
            )),
        };
    }
    let module = ral_ir::lower(&parsed.program, &checked, source);
    let sink = Shared::default();
    let mut vm = Vm::new(Mobile::default());
    vm.stdout = Stdout::Writer(Box::new(sink.clone()));
    // Programs the cases start read nothing from the test's terminal.
    vm.stdin = Stdin::Null;
    // temp-dir and temp-file create under TMPDIR: one scratch directory per
    // case, removed when the case ends.
    let scratch = tempfile::tempdir().unwrap();
    vm.mobile.context.env.push((
        "TMPDIR".into(),
        Some(scratch.path().to_str().unwrap().into()),
    ));
    vm.stderr = Stdout::Buffer(Vec::new());
    let source = std::sync::Arc::new(ral_vm::SourceText::new("case.ral", src));
    let result = match vm.load_source(&module, source) {
        Ok(main) => vm.run_main(main).map_err(RunError::Escape),
        Err(e) => Err(RunError::Compile(e)),
    };
    let stdout = String::from_utf8_lossy(&sink.0.lock().unwrap()).into_owned();
    let (status, detail) = match result {
        Ok(_) => (0, None),
        Err(RunError::Compile(e)) => (1, Some(format!("compile error: {e:?}"))),
        Err(RunError::Escape(Escape::Fail(f))) => {
            (f.status, Some(format!("failure: {:?}", f.message)))
        }
        Err(RunError::Escape(Escape::Exit(n))) => (n, Some(format!("exit {n}"))),
    };
    Outcome {
        stdout,
        status,
        detail,
    }
}

/// The first diagnostic's title and line, for the failure report.
fn first_message(diags: &[ral_syntax::Diagnostic]) -> String {
    diags
        .first()
        .map(|d| format!("{} at byte {}", d.message, d.primary.span.start))
        .unwrap_or_default()
}

fn golden_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ral"))
        .collect();
    files.sort();
    files
}

fn indent(text: &str) -> String {
    if text.is_empty() {
        return "    (nothing)\n".into();
    }
    text.lines().map(|l| format!("    |{l}\n")).collect()
}

#[test]
fn golden_scripts() {
    let backstops_before = ral_vm::failure::backstops();
    let files = golden_files();
    assert!(!files.is_empty(), "no golden files found");
    let mut failures = Vec::new();
    let mut total = 0;
    for path in &files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let cases = match parse_cases(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{file}: malformed golden file: {e}\n"));
                continue;
            }
        };
        for case in cases {
            total += 1;
            let got = run_case(&case.program);
            if got.stdout == case.stdout && got.status == case.status {
                continue;
            }
            let mut report = format!("{file}:{} `{}`\n", case.line, case.name);
            if got.stdout != case.stdout {
                report.push_str("  stdout expected:\n");
                report.push_str(&indent(&case.stdout));
                report.push_str("  stdout got:\n");
                report.push_str(&indent(&got.stdout));
            }
            if got.status != case.status {
                report.push_str(&format!(
                    "  status expected {}, got {}\n",
                    case.status, got.status
                ));
            }
            if let Some(d) = got.detail {
                report.push_str(&format!("  ({d})\n"));
            }
            failures.push(report);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} golden cases failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!("{total} golden cases passed");
    // Whatever the checker accepted never reached a run-time kind check:
    // those checks are a backstop behind a sound checker, not a behaviour.
    let fired = ral_vm::failure::backstops() - backstops_before;
    assert_eq!(
        fired, 0,
        "{fired} run-time kind checks fired on checked golden programs"
    );
}

#[test]
fn the_golden_parser_reads_the_format() {
    let text = "#### one\necho a\n## STDOUT:\na\n## END\n\n#### two\nfail [status: 3, message: x]\n## status: 3\n#### three\n()\n";
    let cases = parse_cases(text).unwrap();
    assert_eq!(cases.len(), 3);
    assert_eq!(cases[0].name, "one");
    assert_eq!(cases[0].program, "echo a\n");
    assert_eq!(cases[0].stdout, "a\n");
    assert_eq!(cases[0].status, 0);
    assert_eq!(cases[1].status, 3);
    assert_eq!(cases[1].stdout, "");
    assert_eq!(cases[2].line, 10);
    assert!(parse_cases("#### x\n## STDOUT:\na\n").is_err());
    assert!(parse_cases("echo\n#### x\n").is_err());
}
