//! Running a ral program in-process for the VM's integration tests: parse,
//! check as a script, lower and run on a fresh VM whose standard output is
//! a buffer (the golden harness and the large-program tests share it).

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Escape, Mobile, RunError, Stdin, Stdout, Vm};

/// What running a case produced.
pub struct Outcome {
    pub stdout: String,
    pub status: i32,
    /// Why the status is nonzero, for the report.
    pub detail: Option<String>,
}

/// A writer into a buffer the test keeps a handle to.
#[derive(Clone, Default)]
pub struct Shared(pub Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs `src` as a script on a fresh VM, as the golden harness does.
pub fn run_program(src: &str) -> Outcome {
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
pub fn first_message(diags: &[ral_syntax::Diagnostic]) -> String {
    diags
        .first()
        .map(|d| format!("{} at byte {}", d.message, d.primary.span.start))
        .unwrap_or_default()
}
