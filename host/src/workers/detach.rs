//! Starting a process the session gives away (`detach`, spec §11.5).
//!
//! One fork, whose child calls `setsid(2)` before it executes the program:
//! the survivor leads a new session and a new process group, has no
//! controlling terminal, and reads and writes `/dev/null`. Nothing the
//! session does reaches it: worker teardown signals only the process
//! groups of worker programs, a terminal's signals go to its foreground
//! group, and no cancel flag watches it.
//!
//! It stays this process's child for one purpose, reaping: a small thread
//! waits for it, so a survivor that ends while the host lives does not
//! linger as a zombie. When the host exits it is reparented like any
//! orphan. (The spec's double fork hands the grandchild to init at once;
//! a second fork here would need `unsafe` fork code in the host, and the
//! new session already gives the survival the spec asks for. The single
//! `unsafe` is the pre-exec hook below.)
//!
//! The receipt's pid is the program's own: the child `exec`s in place.
//!
//! Under a grant that restricts `fs`, `exec` or `net`, the survivor is
//! born inside the OS sandbox of that moment ([`ral_vm::sandbox`]) and keeps
//! it for its whole life; later grants cannot widen it.

use std::io::ErrorKind;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ral_vm::{Failure, Reason};

/// The reaper thread's stack: it only waits.
const REAPER_STACK: usize = 64 * 1024;

/// What to start.
pub(crate) struct Survivor<'a> {
    /// The command as written (for messages).
    pub name: &'a str,
    /// The file that runs.
    pub program: PathBuf,
    pub args: &'a [String],
    /// The logical working directory of the caller.
    pub cwd: PathBuf,
    /// The caller's whole environment (loader variables already removed
    /// when it is confined).
    pub env: Vec<(String, String)>,
    /// The OS sandbox of the grants at birth (§11.5, §12.6): the survivor
    /// keeps it for life. Its hook also makes the new session.
    pub sandbox: Option<ral_vm::sandbox::Sandbox>,
}

/// Starts `s` in a session of its own; its pid.
pub(crate) fn launch(s: Survivor<'_>) -> Result<u32, Failure> {
    if !s.cwd.is_dir() {
        return Err(Failure::error(format!(
            "cannot detach {}: the working directory {} does not exist",
            s.name,
            s.cwd.display()
        )));
    }
    let mut cmd = Command::new(&s.program);
    cmd.args(s.args)
        .current_dir(&s.cwd)
        .env_clear()
        .envs(s.env.iter().map(|(k, v)| (k, v)))
        .env("PWD", &s.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match s.sandbox {
        // The sandbox's hook calls setsid itself, before it confines.
        Some(sb) => drop(sb.install(&mut cmd)),
        None => new_session(&mut cmd),
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| spawn_error(s.name, &s.program, &e))?;
    let pid = child.id();
    let reaper = std::thread::Builder::new()
        .name(format!("ral-detached-{pid}"))
        .stack_size(REAPER_STACK)
        .spawn(move || {
            // Its status is unrecoverable by design (§11.5); waiting only
            // releases the process table entry.
            let _ = child.wait();
        });
    // Without a reaper thread the survivor still runs; if it ends before
    // the host, it stays a zombie until the host exits.
    drop(reaper);
    Ok(pid)
}

/// Makes the child call `setsid(2)` between fork and exec.
#[allow(unsafe_code)]
fn new_session(cmd: &mut Command) {
    // SAFETY: the hook runs in the forked child, where only
    // async-signal-safe work is allowed. It makes one raw system call,
    // setsid(2), through rustix (no allocation, no lock, no shared
    // state), and converts its error number into an `io::Error`, which
    // for an OS error allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
}

/// The failure for a program that could not be started.
// `ErrorKind` is non-exhaustive: every other kind is "cannot start".
#[allow(clippy::wildcard_enum_match_arm)]
fn spawn_error(name: &str, program: &Path, e: &std::io::Error) -> Failure {
    let (status, reason, what) = match e.kind() {
        ErrorKind::NotFound => (127, Reason::NotFound, "command not found".to_owned()),
        ErrorKind::PermissionDenied => (126, Reason::NotRunnable, "permission denied".to_owned()),
        _ => (126, Reason::NotRunnable, format!("cannot start it: {e}")),
    };
    let mut f = Failure::new(
        status,
        format!("cannot detach {name} ({}): {what}", program.display()),
        reason,
    );
    f.cmd = Some("detach".into());
    f
}
