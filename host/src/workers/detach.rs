//! Starting a process the session gives away (`detach`, spec §11.5).
//!
//! A double fork: the child ral starts forks once more and exits at once,
//! and the grandchild calls `setsid(2)` and executes the program. The
//! survivor is reparented to init (or the nearest subreaper) straight
//! away, leads a new session and a new process group, has no controlling
//! terminal, and reads and writes `/dev/null`. Nothing the session does
//! reaches it: worker teardown signals only the process groups of worker
//! programs, a terminal's signals go to its foreground group, no cancel
//! flag watches it, and ral never waits for it (the intermediate child is
//! reaped as soon as it exits).
//!
//! The second fork happens in the `pre_exec` hook of the first child:
//! the grandchild returns from the hook and goes on to `exec` the program
//! (so a program that cannot be executed is still reported by the spawn),
//! while the intermediate child writes the grandchild's pid to a pipe and
//! exits. The receipt's pid is the program's own.
//!
//! Under a grant that restricts `fs`, `exec` or `net`, the survivor is
//! born inside the OS sandbox of that moment ([`ral_vm::sandbox`]) and keeps
//! it for its whole life; later grants cannot widen it. The sandbox's hook
//! runs after the second fork, in the grandchild, and makes the new
//! session itself.

use std::io::{ErrorKind, Read};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ral_vm::{Failure, Reason};

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
    // The grandchild's pid comes back through this pipe (both ends close
    // on exec, so only the intermediate child ever writes it).
    let (mut pid_in, pid_out) = std::io::pipe()
        .map_err(|e| Failure::error(format!("cannot detach {}: pipe: {e}", s.name)))?;
    let sandboxed = s.sandbox.is_some();
    double_fork(&mut cmd, pid_out.as_raw_fd(), !sandboxed);
    if let Some(sb) = s.sandbox {
        // Its hook runs after the second fork, in the grandchild, and
        // calls setsid itself before it confines.
        drop(sb.install(&mut cmd));
    }
    let spawned = cmd.spawn();
    drop(cmd);
    drop(pid_out);
    let mut child = spawned.map_err(|e| spawn_error(s.name, &s.program, &e))?;
    // The intermediate child exits as soon as it has forked.
    let _ = child.wait();
    let mut raw = [0u8; 4];
    pid_in
        .read_exact(&mut raw)
        .map_err(|e| Failure::error(format!("cannot detach {}: no pid came back: {e}", s.name)))?;
    u32::try_from(i32::from_ne_bytes(raw))
        .map_err(|_| Failure::error(format!("cannot detach {}: a bad pid came back", s.name)))
}

/// Makes the child fork again between fork and exec: the grandchild (a
/// new session's leader when `session`) goes on to exec, the child writes
/// its pid to `pid_out` and exits.
#[allow(unsafe_code)]
fn double_fork(cmd: &mut Command, pid_out: i32, session: bool) {
    // SAFETY: the hook runs in the forked child, where only
    // async-signal-safe work is allowed. It makes raw system calls only:
    // clone(2) with just SIGCHLD (a fork that runs none of the C
    // library's fork handlers, which could wait on a lock another thread
    // of the parent held), setsid(2), write(2) of a local buffer and
    // _exit(2). It allocates nothing and touches no shared state; an
    // error number becomes an `io::Error`, which for an OS error
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let pid = libc::syscall(
                libc::SYS_clone,
                libc::c_ulong::from(libc::SIGCHLD as u32),
                0usize,
                0usize,
                0usize,
                0usize,
            );
            match pid {
                n if n < 0 => Err(std::io::Error::last_os_error()),
                0 => {
                    if session {
                        rustix::process::setsid().map_err(std::io::Error::from)?;
                    }
                    Ok(())
                }
                n => {
                    let raw = i32::try_from(n).unwrap_or(0).to_ne_bytes();
                    libc::write(pid_out, raw.as_ptr().cast(), raw.len());
                    libc::_exit(0)
                }
            }
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
