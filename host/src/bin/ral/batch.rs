//! A batch run: one program as one turn on a fresh session (spec §16.2).
//!
//! The program's text is read first (an unreadable script exits 1). `-n`
//! parses and checks it against the same session surface a run would
//! check against, and runs nothing; `--dump-ast` prints the syntax tree to
//! standard error. Otherwise it goes through [`Shell::run_turn`] with the
//! process's streams ([`TurnIo::Inherit`]), Ctrl-C wired to the session's
//! cancel flag, and the report turned into diagnostics and a status.

use std::io::{self, Write};
use std::sync::Arc;

use ral_host::{
    render_failure, Capabilities, Color, Settled, Shell, SourceMap, TurnReport, TurnRequest,
    STATUS_PARSE, STATUS_TYPE,
};
use ral_types::CheckOptions;

use crate::cli::{Action, AuditFormat, Batch, Source};
use crate::interrupt::{Interrupts, Profile};
use crate::{clamp_status, PrintWarnings, EXIT_FAILURE, EXIT_OK};

/// The interrupt that forces a batch run to exit when cooperative
/// cancellation has not ended it.
const FORCE_EXIT_AT: u32 = 3;

/// Runs `batch` under the session ceiling `ceiling` and returns the
/// process's exit status.
pub fn run(batch: Batch, color: Color, ceiling: Capabilities) -> u8 {
    let (name, text) = match read_source(&batch.source) {
        Ok(read) => read,
        Err(msg) => {
            eprintln!("ral: {msg}");
            return EXIT_FAILURE;
        }
    };
    match batch.action {
        Action::DumpAst => dump_ast(&name, &text, color),
        Action::Check => check(&name, &text, color),
        Action::Run => execute(&name, &text, batch.args, color, ceiling, batch.audit),
    }
}

/// The turn's name and text. A script's name is its path (so `$SCRIPT` is
/// bound to it); the synthetic sources are `<-c>` and `<stdin>`, for which
/// `$SCRIPT` is a compile-time error (§10.1).
fn read_source(source: &Source) -> Result<(String, String), String> {
    match source {
        Source::File(path) => match std::fs::read_to_string(path) {
            // The host takes a name starting with `<` to be synthetic; a
            // script whose path starts so is still a script.
            Ok(text) if path.starts_with('<') => Ok((format!("./{path}"), text)),
            Ok(text) => Ok((path.clone(), text)),
            Err(e) => Err(format!("cannot read {path}: {e}")),
        },
        Source::Code(code) => Ok(("<-c>".to_owned(), code.clone())),
        Source::Stdin => io::read_to_string(io::stdin().lock())
            .map(|text| ("<stdin>".to_owned(), text))
            .map_err(|e| format!("cannot read the program from standard input: {e}")),
    }
}

/// `--dump-ast`: the syntax tree on standard error, then any parse
/// diagnostics; status 2 when it did not parse.
fn dump_ast(name: &str, text: &str, color: Color) -> u8 {
    let mut sources = SourceMap::new();
    let id = sources.add(name, text);
    let parsed = ral_syntax::parse(sources.text(id), id);
    let mut err = io::stderr().lock();
    let _ = write!(err, "{}", ral_syntax::dump::dump_program(&parsed.program));
    if !parsed.diagnostics.is_empty() {
        let render = ral_syntax::render::render_all(&parsed.diagnostics, &sources, color);
        let _ = write!(err, "{render}");
    }
    if parsed.has_errors() {
        clamp_status(STATUS_PARSE)
    } else {
        EXIT_OK
    }
}

/// `-n`/`--check`: parse, then check against a fresh session's type
/// environment (the surface a run checks against); nothing runs.
fn check(name: &str, text: &str, color: Color) -> u8 {
    let mut sources = SourceMap::new();
    let id = sources.add(name, text);
    let parsed = ral_syntax::parse(sources.text(id), id);
    let mut diagnostics = parsed.diagnostics;
    let status = if diagnostics.iter().any(|d| d.is_error()) {
        STATUS_PARSE
    } else {
        let shell = Shell::default();
        let opts = CheckOptions {
            is_script: !name.starts_with('<'),
        };
        let mut checked = ral_types::check_program(&parsed.program, id, shell.type_env(), &opts);
        let failed = checked.has_errors();
        diagnostics.append(&mut checked.diagnostics);
        if failed {
            STATUS_TYPE
        } else {
            0
        }
    };
    if !diagnostics.is_empty() {
        let render = ral_syntax::render::render_all(&diagnostics, &sources, color);
        eprint!("{render}");
    }
    clamp_status(status)
}

/// Runs the program as one turn and maps the report to a status. With
/// `audit`, the run keeps a trail and its report goes to standard error as
/// JSON after the run (§13.4); a runtime failure is then reported there
/// rather than as a diagnostic, and the status is the run's own.
fn execute(
    name: &str,
    text: &str,
    args: Vec<String>,
    color: Color,
    ceiling: Capabilities,
    audit: Option<AuditFormat>,
) -> u8 {
    let mut shell = Shell::default();
    shell.set_capability_ceiling(ceiling);
    shell.set_args(Arc::from(args));
    // A foreground run at a terminal lends it to the programs that write
    // to it (§16.3); a background or terminal-less run lends nothing.
    shell.lease_terminal();
    // Without the watcher the default SIGINT disposition still ends the
    // process; the run just loses its cooperative teardown.
    let interrupts = match Interrupts::install(
        shell.cancel_handle(),
        Profile::Batch {
            force_exit_at: FORCE_EXIT_AT,
        },
    ) {
        Ok(i) => Some(i),
        Err(e) => {
            eprintln!("ral: warning: cannot watch for Ctrl-C: {e}");
            None
        }
    };
    let report = shell.run_turn(
        text,
        TurnRequest {
            lifecycle: Box::new(PrintWarnings { color }),
            audit: audit.is_some(),
            ..TurnRequest::new(name)
        },
    );
    // The program's bytes come before the diagnostic about it.
    let _ = io::stdout().flush();
    let mut status = clamp_status(report.status());
    match (&report, audit) {
        (TurnReport::Static { diagnostics }, _) => eprint!("{}", diagnostics.render(color)),
        (TurnReport::Ran { result, trail, .. }, Some(format)) => {
            let json = ral_host::audit::report_json(result, trail.as_deref().unwrap_or_default());
            let text = match format {
                AuditFormat::Compact => serde_json::to_string(&json),
                AuditFormat::Pretty => serde_json::to_string_pretty(&json),
            };
            let written = match text {
                Ok(text) => writeln!(io::stderr().lock(), "{text}"),
                Err(e) => Err(io::Error::other(e)),
            };
            // A report that cannot be written is the run's failure to
            // report, never a panic; a run that failed keeps its status.
            if let Err(e) = written {
                let _ = writeln!(io::stderr(), "ral: cannot write the audit report: {e}");
                if status == EXIT_OK {
                    status = EXIT_FAILURE;
                }
            }
        }
        (
            TurnReport::Ran {
                result: Settled::Failed(f),
                ..
            },
            None,
        ) => eprint!("{}", render_failure(f, &shell, color)),
        (TurnReport::Ran { .. }, None) => {}
    }
    // The shell is dropped, so its workers' process groups are torn down;
    // the handlers stay until the process exits (an interrupt during the
    // teardown still cancels it).
    drop(shell);
    drop(interrupts);
    status
}
