//! The command line of `ral` (spec §16.1, §16.2, §16.6): which mode runs,
//! where the program comes from, and which arguments are the program's.
//!
//! Options come first. The first positional is the script, and every token
//! after it is a program argument even if it starts with `-`; after `-c`
//! the next token is the source and every later one an argument. `--` ends
//! the options (`ral -- task.ral --force` is `ral task.ral --force`).
//!
//! Precedence: a script positional wins over `-s` and `-i`, `-c` (which
//! takes its own positional) likewise, `-s` wins over `-i`, and with none
//! of these the REPL runs when standard input is a terminal and a program
//! is read from standard input otherwise.
//!
//! Every argument is text: a token that is not UTF-8 is refused (status 2)
//! rather than altered.

use std::ffi::OsString;

/// Where a batch program comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A script file (`$SCRIPT` names it).
    File(String),
    /// `-c CODE`.
    Code(String),
    /// Standard input, read to end of file (`-s`, `-`, or a bare `ral` whose
    /// standard input is not a terminal).
    Stdin,
}

/// What a batch invocation does with its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Parse, check and run.
    Run,
    /// `-n`/`--check`: parse and check, run nothing.
    Check,
    /// `--dump-ast`: parse and print the syntax tree to standard error.
    DumpAst,
}

/// A batch run: one program, its arguments, what to do with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub source: Source,
    /// The program's `args`.
    pub args: Vec<String>,
    pub action: Action,
    /// `--capabilities` profiles, in order (§12.12).
    pub capabilities: Vec<String>,
    /// `--audit` (and `--pretty`): the run's report as JSON on standard
    /// error after it ends (§13.4).
    pub audit: Option<AuditFormat>,
}

/// How `--audit` writes the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditFormat {
    /// One line.
    Compact,
    /// Indented (`--pretty`).
    Pretty,
}

/// An interactive frontend (spec §15.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Minimal,
    Readline,
    Structural,
}

impl Surface {
    pub fn parse(s: &str) -> Option<Surface> {
        match s {
            "minimal" => Some(Surface::Minimal),
            "readline" => Some(Surface::Readline),
            "structural" => Some(Surface::Structural),
            _ => None,
        }
    }
}

/// How the interactive session starts (spec §15.1, §16.4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplOptions {
    /// `--surface`: wins over the rc file's `surface`.
    pub surface: Option<Surface>,
    /// `-l`/`--login`: read the login profiles first.
    pub login: bool,
    /// `--norc`/`--noprofile`: read no startup file.
    pub norc: bool,
    /// `--capabilities` profiles, in order (§12.12).
    pub capabilities: Vec<String>,
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    Help,
    Version,
    Batch(Batch),
    /// The interactive session.
    Repl(ReplOptions),
    /// `--lsp`: the language server on standard input and output.
    Lsp,
}

/// A command line that names no valid invocation (status 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageError(pub String);

pub const USAGE: &str = "\
usage: ral [OPTIONS] SCRIPT [ARG...]    run a script file
       ral [OPTIONS] -c CODE [ARG...]   run CODE
       ral [OPTIONS] -s                 run the program on standard input
       ral [OPTIONS] [-i]               the interactive session

options:
  -c CODE        run CODE; later tokens are its arguments
  -s             read the program from standard input (wins over -i)
  -i             start the interactive session even without a terminal
  -n, --check    parse and type-check only (needs SCRIPT or -c)
  --audit        after the run, write its audit report (what it ran, wrote
                 and was refused) as JSON to standard error (needs SCRIPT
                 or -c)
  --pretty       indent that report (needs --audit)
  --capabilities A.ral[,B.ral]
                 run the session under these capability profiles (each
                 returns a grant record; repeatable; a bad one exits 2)
  --dump-ast     print the syntax tree to standard error (needs SCRIPT or -c)
  -l, --login    an interactive login session: read /etc/ral/profile and
                 ~/.ral_profile before the rc file
  --norc, --noprofile
                 read no startup file
  --surface minimal|readline|structural
                 the interactive frontend (wins over the rc file's)
  --lsp          the language server, on standard input and output
  -e, -u         accepted and ignored (compatibility)
  -h, --help     print this help
  -V, --version  print the version

With no SCRIPT, -c or -s, ral starts the interactive session when standard
input is a terminal and runs standard input as a program otherwise.";

/// Reads the arguments after the program name. `stdin_is_terminal` decides
/// the bare invocation.
pub fn parse(args: Vec<OsString>, stdin_is_terminal: bool) -> Result<Invocation, UsageError> {
    let mut text = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        match arg.into_string() {
            Ok(s) => text.push(s),
            Err(raw) => {
                return Err(UsageError(format!(
                    "argument {} ({}) is not valid UTF-8; ral arguments are text",
                    i + 1,
                    raw.to_string_lossy()
                )))
            }
        }
    }
    let mut it = text.into_iter();
    let mut force_stdin = false;
    let mut force_repl = false;
    let mut action = Action::Run;
    let mut source = None;
    let mut repl = ReplOptions::default();
    let mut capabilities = Vec::new();
    let mut audit = false;
    let mut pretty = false;
    while let Some(arg) = it.next() {
        if let Some(list) = arg.strip_prefix("--capabilities=") {
            capabilities.extend(profile_list(list)?);
            continue;
        }
        match arg.as_str() {
            "--capabilities" => match it.next() {
                Some(list) => capabilities.extend(profile_list(&list)?),
                None => {
                    return Err(UsageError(
                        "--capabilities needs PROFILE[,PROFILE…]".to_owned(),
                    ))
                }
            },
            "-h" | "--help" => return Ok(Invocation::Help),
            "-V" | "--version" => return Ok(Invocation::Version),
            "-c" => match it.next() {
                Some(code) => {
                    source = Some(Source::Code(code));
                    break;
                }
                None => return Err(UsageError("-c needs CODE".to_owned())),
            },
            "-s" => force_stdin = true,
            "-i" => force_repl = true,
            "-n" | "--check" => action = Action::Check,
            "--dump-ast" => action = Action::DumpAst,
            "--audit" => audit = true,
            "--pretty" => pretty = true,
            // Login and startup files affect only the interactive session;
            // the compatibility flags do nothing.
            "-l" | "--login" => repl.login = true,
            "--norc" | "--noprofile" => repl.norc = true,
            "--surface" => match it.next().as_deref().map(Surface::parse) {
                Some(Some(s)) => repl.surface = Some(s),
                _ => {
                    return Err(UsageError(
                        "--surface needs minimal, readline or structural".to_owned(),
                    ))
                }
            },
            "--lsp" => return Ok(Invocation::Lsp),
            "-e" | "-u" => {}
            "--" => {
                if let Some(file) = it.next() {
                    source = Some(script(file));
                }
                break;
            }
            s if s.starts_with('-') && s != "-" => {
                return Err(UsageError(format!("unknown option {s}")));
            }
            _ => {
                source = Some(script(arg));
                break;
            }
        }
    }
    let rest: Vec<String> = it.collect();
    // `--audit` is a batch option for an explicit script or -c that runs
    // (§13.4); `--pretty` only shapes its report.
    if pretty && !audit {
        return Err(UsageError("--pretty needs --audit".to_owned()));
    }
    if audit {
        match (&source, action) {
            (Some(Source::File(_) | Source::Code(_)), Action::Run) => {}
            (Some(Source::File(_) | Source::Code(_)), Action::Check | Action::DumpAst) => {
                return Err(UsageError(
                    "--audit reports a run, and --check and --dump-ast run nothing".to_owned(),
                ))
            }
            (Some(Source::Stdin) | None, _) => {
                return Err(UsageError(
                    "--audit needs a SCRIPT or -c CODE (not the interactive session or a \
                     program on standard input)"
                        .to_owned(),
                ))
            }
        }
    }
    let audit = audit.then_some(if pretty {
        AuditFormat::Pretty
    } else {
        AuditFormat::Compact
    });
    let source = match source {
        // The inspection flags need a script path or -c: not the REPL,
        // not a program on standard input (§16.2).
        Some(Source::Stdin) | None if action != Action::Run => {
            let flag = match action {
                Action::Check => "--check",
                Action::DumpAst | Action::Run => "--dump-ast",
            };
            return Err(UsageError(format!("{flag} needs a SCRIPT or -c CODE")));
        }
        Some(source) => source,
        None if force_stdin => Source::Stdin,
        None if force_repl || stdin_is_terminal => {
            return Ok(Invocation::Repl(ReplOptions {
                capabilities,
                ..repl
            }))
        }
        None => Source::Stdin,
    };
    Ok(Invocation::Batch(Batch {
        source,
        args: rest,
        action,
        capabilities,
        audit,
    }))
}

/// The profile files of one `--capabilities` value (comma-separated).
fn profile_list(list: &str) -> Result<Vec<String>, UsageError> {
    let files: Vec<String> = list.split(',').map(str::to_owned).collect();
    if files.iter().any(String::is_empty) {
        return Err(UsageError(format!(
            "--capabilities {list:?} names an empty profile"
        )));
    }
    Ok(files)
}

/// A script positional; `-` is standard input.
fn script(path: String) -> Source {
    if path == "-" {
        Source::Stdin
    } else {
        Source::File(path)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn batch(source: Source, args: &[&str], action: Action) -> Result<Invocation, UsageError> {
        Ok(Invocation::Batch(Batch {
            source,
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            action,
            capabilities: Vec::new(),
            audit: None,
        }))
    }

    #[test]
    fn audit_is_for_a_script_or_code_that_runs() {
        let Ok(Invocation::Batch(b)) = parse(os(&["--audit", "--pretty", "-c", "x"]), true) else {
            panic!("not a batch")
        };
        assert_eq!(b.audit, Some(AuditFormat::Pretty));
        let Ok(Invocation::Batch(b)) = parse(os(&["--audit", "s.ral", "--pretty"]), true) else {
            panic!("not a batch")
        };
        assert_eq!(b.audit, Some(AuditFormat::Compact));
        assert_eq!(b.args, ["--pretty"]);
        assert!(parse(os(&["--pretty", "-c", "x"]), true).is_err());
        assert!(parse(os(&["--audit"]), true).is_err());
        assert!(parse(os(&["--audit"]), false).is_err());
        assert!(parse(os(&["--audit", "-s"]), false).is_err());
        assert!(parse(os(&["--audit", "-"]), false).is_err());
        assert!(parse(os(&["--audit", "-n", "s.ral"]), true).is_err());
        assert!(parse(os(&["--audit", "--dump-ast", "-c", "x"]), true).is_err());
    }

    #[test]
    fn everything_after_the_script_is_an_argument() {
        assert_eq!(
            parse(os(&["task.ral", "--force", "-c", "x"]), true),
            batch(
                Source::File("task.ral".into()),
                &["--force", "-c", "x"],
                Action::Run
            )
        );
        assert_eq!(
            parse(os(&["--", "task.ral", "--force"]), true),
            parse(os(&["task.ral", "--force"]), true)
        );
    }

    #[test]
    fn c_takes_the_next_token_whole() {
        assert_eq!(
            parse(os(&["-c", "--version", "a"]), true),
            batch(Source::Code("--version".into()), &["a"], Action::Run)
        );
        assert!(parse(os(&["-c"]), true).is_err());
    }

    #[test]
    fn mode_precedence() {
        // A script wins over -s and -i; -s wins over -i.
        assert_eq!(
            parse(os(&["-s", "-i", "a.ral"]), true),
            batch(Source::File("a.ral".into()), &[], Action::Run)
        );
        assert_eq!(
            parse(os(&["-i", "-s"]), true),
            batch(Source::Stdin, &[], Action::Run)
        );
        let repl = Invocation::Repl(ReplOptions::default());
        assert_eq!(parse(os(&["-i"]), false), Ok(repl.clone()));
        assert_eq!(parse(os(&[]), true), Ok(repl));
        assert_eq!(
            parse(os(&[]), false),
            batch(Source::Stdin, &[], Action::Run)
        );
        assert_eq!(
            parse(os(&["-"]), true),
            batch(Source::Stdin, &[], Action::Run)
        );
    }

    #[test]
    fn check_needs_a_script_or_code() {
        assert_eq!(
            parse(os(&["-n", "a.ral"]), true),
            batch(Source::File("a.ral".into()), &[], Action::Check)
        );
        assert_eq!(
            parse(os(&["--check", "-c", "x"]), false),
            batch(Source::Code("x".into()), &[], Action::Check)
        );
        assert!(parse(os(&["-n"]), true).is_err());
        assert!(parse(os(&["-n"]), false).is_err());
        assert!(parse(os(&["--dump-ast", "-s"]), false).is_err());
        assert!(parse(os(&["-n", "-"]), false).is_err());
    }

    #[test]
    fn compatibility_flags_and_unknown_options() {
        assert_eq!(
            parse(os(&["-e", "-u", "-l", "--norc", "-c", "x"]), true),
            batch(Source::Code("x".into()), &[], Action::Run)
        );
        assert_eq!(
            parse(os(&["--frobnicate"]), true),
            Err(UsageError("unknown option --frobnicate".into()))
        );
        assert_eq!(parse(os(&["-V", "x"]), true), Ok(Invocation::Version));
    }

    #[test]
    fn interactive_options() {
        assert_eq!(
            parse(os(&["--surface", "minimal", "--norc", "-l"]), true),
            Ok(Invocation::Repl(ReplOptions {
                surface: Some(Surface::Minimal),
                login: true,
                norc: true,
                capabilities: Vec::new(),
            }))
        );
        assert!(parse(os(&["--surface", "fancy"]), true).is_err());
        assert!(parse(os(&["--surface"]), true).is_err());
        assert_eq!(parse(os(&["--lsp"]), false), Ok(Invocation::Lsp));
    }

    #[test]
    fn capabilities_take_a_comma_list_and_repeat() {
        let Ok(Invocation::Batch(b)) = parse(
            os(&[
                "--capabilities",
                "a.ral,b.ral",
                "--capabilities=c.ral",
                "s.ral",
                "--capabilities",
            ]),
            true,
        ) else {
            panic!("not a batch")
        };
        assert_eq!(b.capabilities, ["a.ral", "b.ral", "c.ral"]);
        assert_eq!(b.args, ["--capabilities"]);
        assert_eq!(
            parse(os(&["--capabilities", "r.ral"]), true),
            Ok(Invocation::Repl(ReplOptions {
                capabilities: vec!["r.ral".to_owned()],
                ..ReplOptions::default()
            }))
        );
        assert!(parse(os(&["--capabilities"]), true).is_err());
        assert!(parse(os(&["--capabilities", "a.ral,,b.ral", "s.ral"]), true).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_non_utf8_argument_is_refused() {
        use std::os::unix::ffi::OsStringExt;
        let args = vec![
            OsString::from("-c"),
            OsString::from("echo"),
            OsString::from_vec(vec![b'a', 0xff]),
        ];
        let err = parse(args, true).unwrap_err();
        assert!(err.0.contains("argument 3"), "{}", err.0);
    }
}
