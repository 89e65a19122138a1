//! `ral`: runs a ral program on the register VM.
//!
//! ```text
//! ral FILE [ARGS…]       run a script
//! ral -c CODE [ARGS…]    run CODE
//! ```
//!
//! Everything after FILE or CODE is an argument to the program (spec
//! §16.1). The program is parsed, checked (nothing runs if it has a type
//! error), lowered and run with standard output inherited.
//!
//! Exit statuses (spec §16.3): 0 on success (1 when the program's final
//! value is `false`, §8.1); 1 when FILE cannot be read or the program has a
//! type error; 2 for a lexical or parse error or bad arguments; `exit N`
//! exits N; an uncaught failure exits with its status, clamped to 0..=255,
//! after a `runtime-failure` diagnostic at the failing operation with the
//! call trace as notes.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use ral_syntax::render::{render_all, Color};
use ral_syntax::{Code, Diagnostic, SourceId, SourceMap};
use ral_types::{CheckOptions, TypeEnv};
use ral_vm::{Escape, Failure, Mobile, RunError, Stdout, Value, Vm};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Exit status: success.
const EXIT_OK: u8 = 0;
/// Exit status: unreadable file, type error, or a final `false`.
const EXIT_FAILURE: u8 = 1;
/// Exit status: a lexical or parse error, or bad arguments.
const EXIT_SYNTAX: u8 = 2;

const USAGE: &str = "\
usage: ral FILE [ARGS...]
       ral -c CODE [ARGS...]
       ral --help | --version";

/// Where the program text comes from.
enum Input {
    File(String),
    Code(String),
}

enum Command {
    Help,
    Version,
    Run(Input),
}

/// Parses the arguments after the program name. Arguments after FILE or
/// CODE belong to the program; the VM does not expose them yet.
fn parse_args(args: &[OsString]) -> Result<Command, String> {
    let mut it = args.iter().map(|a| a.to_string_lossy().into_owned());
    let Some(first) = it.next() else {
        return Err("no program given".to_owned());
    };
    match first.as_str() {
        "-h" | "--help" => Ok(Command::Help),
        "-V" | "--version" => Ok(Command::Version),
        "-c" => match it.next() {
            Some(code) => Ok(Command::Run(Input::Code(code))),
            None => Err("-c needs CODE".to_owned()),
        },
        "--" => match it.next() {
            Some(file) => Ok(Command::Run(Input::File(file))),
            None => Err("no program given".to_owned()),
        },
        s if s.starts_with('-') && s != "-" => Err(format!("unknown option {s}")),
        _ => Ok(Command::Run(Input::File(first))),
    }
}

fn stderr_color() -> Color {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    if !no_color && io::stderr().is_terminal() {
        Color::Always
    } else {
        Color::Never
    }
}

/// A status in the signed range, clamped to what a process can exit with.
fn clamp_status(status: i32) -> u8 {
    u8::try_from(status.clamp(0, 255)).unwrap_or(u8::MAX)
}

/// The `runtime-failure` diagnostic for a failure that escaped the program.
fn failure_diagnostic(f: &Failure, id: SourceId, sources: &SourceMap) -> Option<Diagnostic> {
    let span = f.span?;
    let file = sources.get(id)?;
    let mut diag = Diagnostic::new(Code::RuntimeFailure, id, String::new(), span, &*f.message);
    // The title is the program's own text: keep it exactly as written rather
    // than in the sentence case of the front end's titles.
    diag.message = f.to_string();
    for (name, site) in &f.trace {
        let (line, col) = file.line_col(site.start);
        let note = match name {
            Some(name) => format!("in function `{name}` called at {line}:{col}"),
            None => format!("in a function called at {line}:{col}"),
        };
        diag = diag.with_note(note);
    }
    Some(diag)
}

/// Runs one program and returns the exit status.
fn run(input: Input, err: &mut dyn Write) -> u8 {
    let color = stderr_color();
    let mut sources = SourceMap::new();
    let (name, text, is_script) = match input {
        Input::File(file) => {
            let read = if file == "-" {
                io::read_to_string(io::stdin().lock())
            } else {
                std::fs::read_to_string(&file)
            };
            match read {
                // Standard input is not a script file (no `$SCRIPT` directory).
                Ok(text) => {
                    let is_script = file != "-";
                    (file, text, is_script)
                }
                Err(e) => {
                    let _ = writeln!(err, "ral: cannot read {file}: {e}");
                    return EXIT_FAILURE;
                }
            }
        }
        Input::Code(code) => ("<-c>".to_owned(), code, false),
    };
    let id = sources.add(name.clone(), &text);
    let parsed = ral_syntax::parse(sources.text(id), id);
    if !parsed.diagnostics.is_empty() {
        let _ = write!(err, "{}", render_all(&parsed.diagnostics, &sources, color));
    }
    if parsed.has_errors() {
        return EXIT_SYNTAX;
    }
    let opts = CheckOptions { is_script };
    let checked = ral_types::check_program(&parsed.program, id, &TypeEnv::new(), &opts);
    if !checked.diagnostics.is_empty() {
        let _ = write!(err, "{}", render_all(&checked.diagnostics, &sources, color));
    }
    if checked.has_errors() {
        return EXIT_FAILURE;
    }
    let module = ral_ir::lower(&parsed.program, &checked, id);
    let mut vm = Vm::new(Mobile::default());
    vm.stdout = Stdout::Inherit;
    vm.script = Arc::new(name);
    let result = vm.run_module(&module);
    let _ = io::stdout().flush();
    match result {
        Ok(Value::Bool(false)) => EXIT_FAILURE,
        Ok(_) => EXIT_OK,
        Err(RunError::Escape(Escape::Exit(status))) => clamp_status(status),
        Err(RunError::Escape(Escape::Fail(f))) => {
            match failure_diagnostic(&f, id, &sources) {
                Some(diag) => {
                    let _ = write!(err, "{}", render_all(&[diag], &sources, color));
                }
                None => {
                    let _ = writeln!(err, "ral: error[{}]: {f}", Code::RuntimeFailure);
                }
            }
            clamp_status(f.status)
        }
        Err(RunError::Compile(e)) => {
            let _ = writeln!(err, "ral: {e}");
            EXIT_FAILURE
        }
    }
}

/// Reports a panic as a bug in ral rather than as a bare panic trace.
fn install_bug_hook() {
    std::panic::set_hook(Box::new(|info| {
        let args: Vec<String> = std::env::args().collect();
        eprintln!(
            "ral: internal error: {info}\n\
             This is a bug in ral {VERSION}, not in your program; please report it \
             with the input and these arguments: {args:?}"
        );
    }));
}

fn main() -> ExitCode {
    install_bug_hook();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let status = match parse_args(&args) {
        Ok(Command::Help) => {
            println!("ral {VERSION}\n\n{USAGE}");
            EXIT_OK
        }
        Ok(Command::Version) => {
            println!("ral {VERSION}");
            EXIT_OK
        }
        Ok(Command::Run(input)) => run(input, &mut io::stderr().lock()),
        Err(msg) => {
            eprintln!("ral: {msg}\n{USAGE}");
            EXIT_SYNTAX
        }
    };
    ExitCode::from(status)
}
