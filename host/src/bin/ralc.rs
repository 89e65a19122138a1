//! `ralc`: ral's batch front end. It reads source files, runs the phases that
//! exist so far and reports every diagnostic with [`ral_syntax::render`].
//!
//! ```text
//! ralc --check FILE…        parse every file and report diagnostics
//! ralc --dump-ast FILE      print the syntax tree of one file to stdout
//! ralc --emit=ast FILE      the same as --dump-ast
//! ralc --emit=types FILE    the scheme of each top-level binding
//! ralc --emit=ir FILE       the lowered IR of a file that checked cleanly
//! ralc --emit=bytecode FILE the register bytecode of every compiled proto
//! ```
//!
//! `-` names standard input. Exit statuses follow spec §16.3: 0 when every
//! file is well formed, 1 when a file cannot be read, 2 when a file has a
//! lexical or parse error (including `invalid-utf8`), 2 for a usage error.
//! When several files fail in different ways the highest status wins, so a
//! syntax error (2) outranks an unreadable file (1); every file is still
//! processed and every problem reported. Warnings never change the status.
//!
//! Each mode is an [`Emit`] value, so later phases (`--emit=types`, `ir`,
//! `bytecode`) are added as variants without touching argument parsing.
//!
//! `ralc`'s code path is syntax, types and ir only: it does not
//! use the `ral_host` library or the VM, so it links neither (STYLE §1.1).

use std::ffi::OsString;
use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;

use ral_syntax::render::{render_all, Color};
use ral_syntax::{Code, Diagnostic, Phase, SourceMap, Span};
use ral_types::{CheckOptions, TypeEnv};

// The front end allocates many small nodes; mimalloc is markedly faster at
// that than the system allocator (see the parse bench).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Exit status: success.
const EXIT_OK: u8 = 0;
/// Exit status: a file could not be read, or a type error (spec §16.3).
const EXIT_FAILURE: u8 = 1;
/// Exit status: a lexical or parse error, or bad arguments (spec §16.3).
const EXIT_SYNTAX: u8 = 2;

const USAGE: &str = "\
usage: ralc --check FILE...
       ralc --dump-ast FILE
       ralc --emit=KIND FILE
       ralc --help | --version";

fn help_text() -> String {
    format!(
        "ralc {VERSION}: the ral batch front end

{USAGE}

Modes:
  -n, --check       Parse every FILE and report all diagnostics.
      --dump-ast    Print the syntax tree of FILE to stdout.
      --emit=KIND   Print an intermediate form of FILE to stdout.
                    KIND is one of: {kinds} (bytecode comes with
                    a later phase).
  -h, --help        Print this help.
  -V, --version     Print the version.

FILE may be `-` for standard input. `--` ends the options.

Diagnostics go to standard error, in colour when it is a terminal
and NO_COLOR is unset.

Exit status:
  0  every file is well formed (warnings do not count)
  1  a file could not be read
  1  a file has a type error (and no syntax error)
  2  a file has a lexical or parse error, or the arguments are wrong
When files fail in different ways the highest status wins.
",
        kinds = Emit::available_names()
    )
}

/// What `ralc` prints for a file besides its diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Emit {
    /// `--emit=ast`, also spelt `--dump-ast`: the parsed syntax tree.
    Ast,
    /// `--emit=types`: the inferred scheme of each top-level binding.
    Types,
    /// `--emit=ir`: the lowered IR of a file that checked cleanly.
    Ir,
    /// `--emit=bytecode`: the register bytecode of every proto, with
    /// constants and source lines.
    Bytecode,
}

impl Emit {
    /// Every kind `--emit` accepts now.
    const ALL: &'static [Emit] = &[Emit::Ast, Emit::Types, Emit::Ir, Emit::Bytecode];

    /// Kinds the design promises but no phase produces yet.
    const PLANNED: &'static [&'static str] = &[];

    fn name(self) -> &'static str {
        match self {
            Emit::Ast => "ast",
            Emit::Types => "types",
            Emit::Ir => "ir",
            Emit::Bytecode => "bytecode",
        }
    }

    fn from_name(name: &str) -> Option<Emit> {
        Emit::ALL.iter().copied().find(|e| e.name() == name)
    }

    fn available_names() -> String {
        Emit::ALL
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The one thing a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Report diagnostics only.
    Check,
    /// Report diagnostics and print a form of the single input.
    Emit(Emit),
}

/// A parsed command line.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Command {
    Help,
    Version,
    Run { mode: Mode, files: Vec<String> },
}

/// Parses the arguments after the program name.
///
/// Hand-rolled on purpose: the grammar is small and every error message is
/// ours. Arguments must be UTF-8, as spec §16.1 requires of script arguments.
fn parse_args(args: &[OsString]) -> Result<Command, String> {
    let mut mode: Option<(Mode, String)> = None;
    let mut files = Vec::new();
    let mut only_files = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let arg = arg
            .to_str()
            .ok_or_else(|| format!("argument {arg:?} is not valid UTF-8"))?;
        if only_files || arg == "-" || !arg.starts_with('-') {
            files.push(arg.to_string());
            continue;
        }
        let new_mode = match arg {
            "--" => {
                only_files = true;
                continue;
            }
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "-n" | "--check" => Mode::Check,
            "--dump-ast" => Mode::Emit(Emit::Ast),
            "--emit" => {
                let value = iter
                    .next()
                    .ok_or_else(|| "--emit needs a value, e.g. --emit=ast".to_string())?;
                let value = value
                    .to_str()
                    .ok_or_else(|| format!("--emit value {value:?} is not valid UTF-8"))?;
                Mode::Emit(parse_emit(value)?)
            }
            _ => match arg.strip_prefix("--emit=") {
                Some(value) => Mode::Emit(parse_emit(value)?),
                None => return Err(format!("unknown option '{arg}'")),
            },
        };
        if let Some((old, spelling)) = &mode {
            if *old != new_mode {
                return Err(format!("'{arg}' conflicts with '{spelling}'"));
            }
        }
        mode = Some((new_mode, arg.to_string()));
    }
    let Some((mode, spelling)) = mode else {
        return Err("no mode given; use --check or --dump-ast".to_string());
    };
    if files.is_empty() {
        return Err(format!(
            "'{spelling}' needs at least one FILE (or - for stdin)"
        ));
    }
    if matches!(mode, Mode::Emit(_)) && files.len() > 1 {
        return Err(format!("'{spelling}' takes exactly one FILE"));
    }
    if files.iter().filter(|f| *f == "-").count() > 1 {
        return Err("standard input (-) can be read only once".to_string());
    }
    Ok(Command::Run { mode, files })
}

fn parse_emit(value: &str) -> Result<Emit, String> {
    if let Some(emit) = Emit::from_name(value) {
        return Ok(emit);
    }
    let available = Emit::available_names();
    if Emit::PLANNED.contains(&value) {
        Err(format!(
            "--emit={value} is not implemented yet; available now: {available}"
        ))
    } else {
        Err(format!(
            "unknown --emit kind '{value}'; available now: {available}"
        ))
    }
}

/// The exit status a diagnostic's phase demands (spec §16.3), if it is an error.
fn status_of(diag: &Diagnostic) -> u8 {
    if !diag.is_error() {
        return EXIT_OK;
    }
    match diag.code.phase() {
        Phase::Lex | Phase::Parse => EXIT_SYNTAX,
        Phase::Type | Phase::Runtime => EXIT_FAILURE,
    }
}

/// Reads one input as bytes: a path, or standard input for `-`.
fn read_input(file: &str) -> io::Result<Vec<u8>> {
    if file == "-" {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(file)
    }
}

/// The name a file has in diagnostics.
fn display_name(file: &str) -> &str {
    if file == "-" {
        "<stdin>"
    } else {
        file
    }
}

/// Adds `bytes` to `sources`, or, when they are not UTF-8, adds their lossy
/// decoding and returns the `invalid-utf8` diagnostic pointing at the first
/// bad byte. The prefix before that byte is unchanged by the lossy decoding,
/// so the span is right in the stored text.
fn add_source(
    sources: &mut SourceMap,
    name: &str,
    bytes: &[u8],
) -> (ral_syntax::SourceId, Option<Diagnostic>) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (sources.add(name, text), None),
        Err(err) => {
            let text = String::from_utf8_lossy(bytes);
            let id = sources.add(name, &text);
            let at = err.valid_up_to();
            let bad = err.error_len().unwrap_or(bytes.len().saturating_sub(at));
            // U+FFFD, which replaced the bad bytes, is three bytes long.
            let span = Span::from_range(at..at + 3);
            let diag = Diagnostic::new(
                Code::InvalidUtf8,
                id,
                "Source is not valid UTF-8",
                span,
                format!("invalid UTF-8 sequence of {bad} byte(s) at byte offset {at}"),
            )
            .with_note("ral source text must be UTF-8; the file was not parsed.")
            .with_help("re-encode the file as UTF-8");
            (id, Some(diag))
        }
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

/// Runs `mode` over `files`, writing output and diagnostics, and returns the
/// exit status.
fn run(mode: Mode, files: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let color = stderr_color();
    let mut sources = SourceMap::new();
    let mut status = EXIT_OK;
    for file in files {
        let name = display_name(file);
        let bytes = match read_input(file) {
            Ok(bytes) => bytes,
            Err(e) => {
                let _ = writeln!(err, "ralc: cannot read {name}: {e}");
                status = status.max(EXIT_FAILURE);
                continue;
            }
        };
        let (id, utf8_error) = add_source(&mut sources, name, &bytes);
        if let Some(diag) = utf8_error {
            let _ = write!(err, "{}", render_all(&[diag], &sources, color));
            status = status.max(EXIT_SYNTAX);
            continue;
        }
        let parsed = ral_syntax::parse(sources.text(id), id);
        if !parsed.diagnostics.is_empty() {
            let _ = write!(err, "{}", render_all(&parsed.diagnostics, &sources, color));
        }
        let file_status = parsed.diagnostics.iter().map(status_of).max();
        status = status.max(file_status.unwrap_or(EXIT_OK));
        // Types are checked only for a well-formed file: a tree with error
        // nodes would produce diagnostics about the parser's guesses.
        let checked = (!parsed.has_errors()).then(|| {
            let opts = CheckOptions {
                is_script: file != "-",
            };
            ral_types::check_program(&parsed.program, id, &batch_surface(), &opts)
        });
        if let Some(checked) = &checked {
            if !checked.diagnostics.is_empty() {
                let _ = write!(err, "{}", render_all(&checked.diagnostics, &sources, color));
            }
            let type_status = checked.diagnostics.iter().map(status_of).max();
            status = status.max(type_status.unwrap_or(EXIT_OK));
        }
        match mode {
            Mode::Check => {}
            Mode::Emit(Emit::Types) => {
                if let Some(checked) = &checked {
                    for binding in &checked.bindings {
                        let scheme = ral_types::print_scheme(&binding.scheme, Some(&checked.store));
                        let _ = writeln!(out, "{} : {scheme}", binding.name);
                    }
                }
            }
            Mode::Emit(Emit::Ir) => {
                if let Some(checked) = checked.as_ref().filter(|c| !c.has_errors()) {
                    let module = ral_ir::lower(&parsed.program, checked, id);
                    let _ = write!(out, "{}", ral_ir::print_module(&module));
                }
            }
            Mode::Emit(Emit::Bytecode) => {
                if let Some(checked) = checked.as_ref().filter(|c| !c.has_errors()) {
                    let module = ral_ir::lower(&parsed.program, checked, id);
                    let mut vm = ral_vm::Vm::new(ral_vm::Mobile::default());
                    match vm.load(&module) {
                        Ok(_) => {
                            for i in 0..vm.proto_count() {
                                let Some(p) = u32::try_from(i).ok().and_then(|i| vm.proto(i))
                                else {
                                    continue;
                                };
                                let _ = writeln!(out, "p{i}:");
                                let _ = write!(out, "{}", ral_vm::op::disassemble(p));
                            }
                        }
                        Err(e) => {
                            let _ =
                                writeln!(err, "ralc: {}: cannot compile: {e}", sources.name(id));
                            status = status.max(EXIT_FAILURE);
                        }
                    }
                }
            }
            Mode::Emit(Emit::Ast) => {
                let tree = ral_syntax::dump::dump_program(&parsed.program);
                let newline = if tree.ends_with('\n') { "" } else { "\n" };
                let _ = write!(out, "{tree}{newline}");
            }
        }
    }
    let _ = out.flush();
    let _ = err.flush();
    status
}

/// Reports a panic as a bug in ralc rather than as a bare panic trace
/// (STYLE §4.7).
fn install_bug_hook() {
    std::panic::set_hook(Box::new(|info| {
        let args: Vec<String> = std::env::args().collect();
        eprintln!(
            "ralc: internal error: {info}\n\
             This is a bug in ralc {VERSION}, not in your program; please report it \
             with the input and these arguments: {args:?}"
        );
    }));
}

fn main() -> ExitCode {
    ral_host::declare_main_thread_stack();
    install_bug_hook();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let status = match parse_args(&args) {
        Ok(Command::Help) => {
            print!("{}", help_text());
            EXIT_OK
        }
        Ok(Command::Version) => {
            println!("ralc {VERSION}");
            EXIT_OK
        }
        Ok(Command::Run { mode, files }) => run(
            mode,
            &files,
            &mut io::stdout().lock(),
            &mut io::stderr().lock(),
        ),
        Err(msg) => {
            eprintln!("ralc: {msg}\n{USAGE}\nTry 'ralc --help' for more.");
            EXIT_SYNTAX
        }
    };
    ExitCode::from(status)
}

/// The environment a batch `ral` checks a program against: the builtins a
/// fresh batch shell installs, and no others (§11.5, §16.2).
fn batch_surface() -> TypeEnv {
    static ABSENT: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let absent = ABSENT.get_or_init(|| ral_host::Shell::default().absent_builtins());
    TypeEnv::new().with_absent_builtins(absent.clone())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn files(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn check_takes_many_files() {
        assert_eq!(
            parse_args(&args(&["--check", "a.ral", "-", "b.ral"])),
            Ok(Command::Run {
                mode: Mode::Check,
                files: files(&["a.ral", "-", "b.ral"])
            })
        );
        assert_eq!(
            parse_args(&args(&["a.ral", "-n"])),
            Ok(Command::Run {
                mode: Mode::Check,
                files: files(&["a.ral"])
            })
        );
    }

    #[test]
    fn dump_ast_is_emit_ast() {
        let want = Ok(Command::Run {
            mode: Mode::Emit(Emit::Ast),
            files: files(&["a.ral"]),
        });
        assert_eq!(parse_args(&args(&["--dump-ast", "a.ral"])), want);
        assert_eq!(parse_args(&args(&["--emit=ast", "a.ral"])), want);
        assert_eq!(parse_args(&args(&["--emit", "ast", "a.ral"])), want);
        assert!(parse_args(&args(&["--dump-ast", "a.ral", "b.ral"])).is_err());
    }

    #[test]
    fn emit_names_what_exists() {
        assert!(parse_args(&args(&["--emit=bytecode", "a.ral"])).is_ok());
        assert!(parse_args(&args(&["--emit=types", "a.ral"])).is_ok());
        assert!(parse_args(&args(&["--emit=ir", "a.ral"])).is_ok());
        let err = parse_args(&args(&["--emit=wat", "a.ral"])).unwrap_err();
        assert!(err.contains("unknown --emit kind 'wat'"), "{err}");
        assert!(
            err.contains("available now: ast, types, ir, bytecode"),
            "{err}"
        );
        assert!(parse_args(&args(&["--emit"])).is_err());
    }

    #[test]
    fn usage_errors() {
        assert!(parse_args(&args(&[])).is_err());
        assert!(parse_args(&args(&["a.ral"])).is_err());
        assert!(parse_args(&args(&["--check"])).is_err());
        assert!(parse_args(&args(&["--frobnicate", "a.ral"])).is_err());
        assert!(parse_args(&args(&["--check", "--dump-ast", "a.ral"])).is_err());
        assert!(parse_args(&args(&["--check", "-", "-"])).is_err());
    }

    #[test]
    fn double_dash_ends_options() {
        assert_eq!(
            parse_args(&args(&["--check", "--", "--help"])),
            Ok(Command::Run {
                mode: Mode::Check,
                files: files(&["--help"])
            })
        );
        assert_eq!(parse_args(&args(&["--help", "x"])), Ok(Command::Help));
        assert_eq!(parse_args(&args(&["-V"])), Ok(Command::Version));
    }

    #[test]
    fn only_errors_set_the_status() {
        let mut sources = SourceMap::new();
        let id = sources.add("t.ral", "echo hi\n");
        let diag = Diagnostic::new(Code::ShellAndOr, id, "m", Span::new(0, 4), "l");
        assert_eq!(status_of(&diag), EXIT_SYNTAX);
        let warning = diag.with_severity(ral_syntax::Severity::Warning);
        assert_eq!(status_of(&warning), EXIT_OK);
    }

    #[test]
    fn invalid_utf8_points_at_first_bad_byte() {
        let mut sources = SourceMap::new();
        let (id, diag) = add_source(&mut sources, "t.ral", b"echo \xff hi\n");
        let diag = diag.unwrap();
        assert_eq!(diag.code, Code::InvalidUtf8);
        assert_eq!(diag.span().start, 5);
        assert_eq!(diag.span().text(sources.text(id)), "\u{FFFD}");
        let (_, none) = add_source(&mut sources, "u.ral", b"echo hi\n");
        assert!(none.is_none());
    }
}
