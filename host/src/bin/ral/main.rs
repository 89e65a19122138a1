//! `ral`: the ral shell. A client of the host's one door: every program it
//! runs, batch or interactive, is one [`Shell::run_turn`].
//!
//! ```text
//! ral SCRIPT [ARGS…]       run a script file ($SCRIPT names it)
//! ral -c CODE [ARGS…]      run CODE
//! ral -s                   run the program on standard input
//! ral -n SCRIPT | -n -c CODE
//!                          parse and type-check only
//! ral [-i]                 the interactive session (the REPL)
//! ral --lsp                the language server on stdin/stdout
//! ```
//!
//! - [`cli`]: the command line and mode selection (spec §16.1, §16.6).
//! - [`batch`]: one turn, its diagnostics, and the exit status (§16.2, §16.3).
//! - [`repl`]: the interactive session (§15.1, §15.2).
//! - [`interrupt`]: Ctrl-C as the foreground interrupt (§8.10).
//!
//! `--capabilities a.ral[,b.ral]` loads session capability profiles
//! ([`ral_host::profile`], §12.12) before the session starts; every turn
//! runs below them.
//!
//! Exit statuses (§16.3): 0 on success (1 when the program's final value is
//! `false`, §8.1); 2 for a lexical or parse error, a bad command line
//! (including an argument that is not UTF-8) or a malformed or unreadable
//! capability profile; 1 for a type error or a
//! script that cannot be read; `exit N` exits N; an uncaught failure exits
//! with its status after a `runtime-failure` diagnostic at the failing
//! operation with the ral call trace as notes; Ctrl-C exits 130; a setuid
//! invocation is refused with status 1 before anything else. Every status
//! is clamped to 0..=255.

mod batch;
mod cli;
mod interrupt;
mod repl;

use std::io::{self, IsTerminal};
use std::process::ExitCode;

use ral_host::{Color, StaticDiagnostics, TurnLifecycle};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Exit status: success.
const EXIT_OK: u8 = 0;
/// Exit status: an unreadable script, a type error, or a final `false`.
const EXIT_FAILURE: u8 = 1;
/// Exit status: a lexical or parse error, or a bad command line.
const EXIT_USAGE: u8 = 2;

/// Whether `NO_COLOR` asks for no colour (set and not empty).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Colour for diagnostics: standard error is a terminal and `NO_COLOR` is
/// not set.
fn stderr_color() -> Color {
    if !no_color() && io::stderr().is_terminal() {
        Color::Always
    } else {
        Color::Never
    }
}

/// A status in the signed range, clamped to what a process can exit with.
fn clamp_status(status: i32) -> u8 {
    u8::try_from(status.clamp(0, 255)).unwrap_or(u8::MAX)
}

/// The turn hook both clients use: a turn's warnings (it checked, so it
/// runs) are printed to standard error before it runs.
struct PrintWarnings {
    color: Color,
}

impl TurnLifecycle for PrintWarnings {
    fn diagnostics(&mut self, warnings: &StaticDiagnostics) {
        eprint!("{}", warnings.render(self.color));
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

/// Whether this is a setuid invocation (effective and real user differ).
#[cfg(unix)]
fn is_setuid() -> bool {
    rustix::process::getuid() != rustix::process::geteuid()
}

#[cfg(not(unix))]
fn is_setuid() -> bool {
    false
}

/// The session's capability ceiling from its `--capabilities` profiles
/// (§12.12); a profile that cannot be loaded is reported and the session
/// does not start (status 2, §16.3).
fn ceiling(profiles: &[String]) -> Result<ral_host::Capabilities, u8> {
    ral_host::profile::load_profiles(profiles, stderr_color()).map_err(|report| {
        eprint!("{report}");
        eprintln!("ral: the session did not start: a capability profile was refused");
        EXIT_USAGE
    })
}

fn main() -> ExitCode {
    ral_host::declare_main_thread_stack();
    install_bug_hook();
    // Before the arguments are even read, whatever mode they would name
    // (§16.6).
    if is_setuid() {
        eprintln!("ral: refusing to run setuid (the effective and real user differ)");
        return ExitCode::from(EXIT_FAILURE);
    }
    let args = std::env::args_os().skip(1).collect();
    let status = match cli::parse(args, io::stdin().is_terminal()) {
        Ok(cli::Invocation::Help) => {
            println!("ral {VERSION}, the ral shell\n\n{}", cli::USAGE);
            EXIT_OK
        }
        Ok(cli::Invocation::Version) => {
            println!("ral {VERSION}");
            EXIT_OK
        }
        Ok(cli::Invocation::Batch(b)) => match ceiling(&b.capabilities) {
            Ok(ceiling) => batch::run(b, stderr_color(), ceiling),
            Err(status) => status,
        },
        Ok(cli::Invocation::Repl(opts)) => match ceiling(&opts.capabilities) {
            Ok(ceiling) => repl::run(&opts, stderr_color(), ceiling),
            Err(status) => status,
        },
        Ok(cli::Invocation::Lsp) => ral_host::lsp::serve_stdio(),
        Err(cli::UsageError(msg)) => {
            eprintln!("ral: {msg}\n\n{}", cli::USAGE);
            EXIT_USAGE
        }
    };
    ExitCode::from(status)
}
