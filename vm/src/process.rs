//! The process runtime: finding, starting and waiting for external
//! programs (spec §6.6–6.8, §7.6, §8.10).
//!
//! - **Lookup.** A bare name is searched in the effective `PATH` (the
//!   context's, so `within [env: [PATH: …]]` applies) once per launch; a
//!   path head (`./x`, `/x`) is used as written, relative to the logical
//!   working directory. A name found nowhere fails with status 127 and
//!   suggestions; a file that cannot be executed fails with 126.
//! - **Streams.** A child's standard streams are real descriptors whenever
//!   the destination is one (a terminal, a file, a pipe), so bytes between
//!   two programs never pass through the interpreter. Only a destination the
//!   kernel cannot write to (a capture buffer, a host's in-memory sink) is
//!   fed by a pump here, reading the child's pipe as it produces (and so
//!   is every stream while an audit trail is open, to copy it). Under
//!   `2>&1` both streams share one descriptor, or one pumped pipe
//!   ([`Plan::WithOut`]), so their bytes keep the order they were written.
//! - **Waiting.** One `poll(2)` loop waits on the child (a pidfd where the
//!   kernel has them) and on the pumped pipes at once, and checks the
//!   cancel flag at least every 50 ms. Cancellation sends `SIGTERM` to the
//!   child's process group, then `SIGKILL` after a grace period, and reaps
//!   it: a cancelled run leaves no child behind.
//! - **Process groups.** A child gets a process group of its own unless
//!   the session lends it the terminal (the caller decides), so that a
//!   cancel reaches everything it started.
//! - **Stops.** A stopped child (SIGTSTP, SIGTTIN, SIGTTOU, `kill -STOP`)
//!   is resumed by the waiter at the next poll slice (§11.6: ral does not
//!   suspend).
//! - **Status.** Exit 0 is success; a nonzero exit is a failure carrying the
//!   command, the status and reason `exited n`; death by signal `s` is
//!   status `128 + s`, reason `signaled s`.
//!
//! - **Confinement.** A launch may carry a prepared OS sandbox
//!   ([`crate::sandbox`]), which starts the child in a process group of its
//!   own, so a confined child is always signalled as a group; a confined
//!   program's failure carries the sandbox's hint.
//!
//! The VM's `unsafe` is here (three libc calls: `poll`, `pidfd_open`
//! through `syscall`, `kill`, each on values this module owns) and in the
//! sandbox's pre-exec hook (`sandbox/linux.rs`).

#![allow(unsafe_code)]

use std::ffi::OsString;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::failure::{Cause, Failure, Reason};
use crate::io::Stream;

/// How long a cancelled child gets between `SIGTERM` and `SIGKILL`.
const KILL_GRACE: Duration = Duration::from_millis(200);
/// The longest the wait loop goes without looking at the cancel flag.
const POLL_SLICE_MS: i32 = 50;

/// Where a child's output stream goes.
pub enum Plan {
    /// Straight to a descriptor (or inherited).
    Direct(Stdio),
    /// Through a pipe this module reads and hands to the deliver callback.
    Pump,
    /// Standard error only, beside a pumped standard output: the same pipe
    /// as standard output (`2>&1` into a capture or an in-memory sink), so
    /// the two streams arrive in the order the program wrote them (§7.4).
    WithOut,
}

/// Everything needed to start one program.
pub struct Launch<'a> {
    /// For messages and the failure's `cmd`.
    pub name: &'a str,
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// The complete environment the child sees.
    pub env: Vec<(String, String)>,
    pub stdin: Stdio,
    pub stdout: Plan,
    pub stderr: Plan,
    pub own_group: bool,
    /// The OS sandbox to start it in ([`crate::sandbox`]); it gives the
    /// child a session, and so a process group, of its own.
    pub sandbox: Option<crate::sandbox::Sandbox>,
}

/// Finds `name` in the `PATH` value `path`: the first directory holding an
/// executable regular file of that name.
pub fn search_path(name: &str, path: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    let path = path?;
    for dir in path.split(':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(dir)
        };
        let dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join(name);
        if is_executable_file(&candidate) {
            return Some(candidate);
        }
    }
    None
}

/// The first regular file named `name` in `PATH` when none of them is
/// executable: such a command exists but cannot be run (status 126,
/// §6.7). Cold: asked only after [`search_path`] found nothing.
pub fn search_path_unrunnable(name: &str, path: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    let path = path?;
    path.split(':').find_map(|dir| {
        let dir = if dir.is_empty() { "." } else { dir };
        let candidate = cwd.join(dir).join(name);
        std::fs::metadata(&candidate)
            .is_ok_and(|m| m.is_file())
            .then_some(candidate)
    })
}

/// The failure for a file found on `PATH` that cannot be executed.
pub fn not_runnable(name: &str, file: &Path) -> Failure {
    let mut f = Failure::new(
        126,
        format!("{name}: {} is not executable", file.display()),
        Reason::NotRunnable,
    );
    f.cmd = Some(name.into());
    f
}

fn is_executable_file(p: &Path) -> bool {
    match std::fs::metadata(p) {
        Ok(m) => m.is_file() && m.permissions().mode() & 0o111 != 0,
        Err(_) => false,
    }
}

/// Up to three executable names in `PATH` closest to `name` (for the
/// "command not found" help). Cold: reads the `PATH` directories.
pub fn suggest(name: &str, path: Option<&str>, extra: &[&str]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    let limit = match name.chars().count() {
        0..=3 => 1,
        4..=7 => 2,
        _ => 3,
    };
    let mut consider = |cand: &str| {
        if cand != name && edit_distance(name, cand) <= limit {
            seen.insert((edit_distance(name, cand), cand.to_owned()));
        }
    };
    for e in extra {
        consider(e);
    }
    if let Some(path) = path {
        for dir in path.split(':').filter(|d| !d.is_empty()) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in rd.flatten() {
                if let Some(n) = entry.file_name().to_str() {
                    consider(n);
                }
            }
        }
    }
    seen.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The failure for a name found nowhere (status 127).
pub fn not_found(name: &str, suggestions: &[String]) -> Failure {
    let mut msg = format!("command not found: {name}");
    if !suggestions.is_empty() {
        msg.push_str(&format!(" (did you mean {}?)", suggestions.join(", ")));
    }
    let mut f = Failure::new(127, msg, Reason::NotFound);
    f.cmd = Some(name.into());
    f
}

/// Starts `launch`, feeds pumped output to `deliver`, and waits for the
/// child while asking `cancelled` whether the run is cancelled. `Ok(())`
/// on exit status 0.
pub fn run(
    launch: Launch<'_>,
    cancelled: &dyn Fn() -> bool,
    cause: &dyn Fn() -> Cause,
    deliver: &mut dyn FnMut(Stream, &[u8]) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let name = launch.name;
    let mut cmd = Command::new(&launch.program);
    cmd.args(&launch.args)
        .current_dir(&launch.cwd)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .env("PWD", &launch.cwd)
        .stdin(launch.stdin);
    let pump_out = matches!(launch.stdout, Plan::Pump);
    let pump_err = matches!(launch.stderr, Plan::Pump);
    // `2>&1` into a pump: one pipe carries both streams, read as output.
    let mut shared: Option<File> = None;
    match (launch.stdout, launch.stderr) {
        (Plan::Pump, Plan::WithOut) => {
            let (r, w) = std::io::pipe().map_err(|e| Failure::error(format!("pipe: {e}")))?;
            let w2 = w
                .try_clone()
                .map_err(|e| Failure::error(format!("dup: {e}")))?;
            cmd.stdout(Stdio::from(w));
            cmd.stderr(Stdio::from(w2));
            shared = Some(File::from(OwnedFd::from(r)));
        }
        (out, err) => {
            cmd.stdout(stdio_for(out)?);
            cmd.stderr(stdio_for(err)?);
        }
    }
    let own_group = launch.own_group || launch.sandbox.is_some();
    if own_group && launch.sandbox.is_none() {
        cmd.process_group(0);
    }
    // The cwd is checked first so a vanished directory is not reported as
    // a missing program.
    if !launch.cwd.is_dir() {
        return Err(Failure::error(format!(
            "{name}: working directory {} does not exist",
            launch.cwd.display()
        )));
    }
    let (spawned, confined) = match launch.sandbox {
        Some(sb) => {
            let (spawned, confined) = sb.spawn(&mut cmd);
            (spawned, Some(confined))
        }
        None => (cmd.spawn(), None),
    };
    // The command holds the parent's copies of the descriptors it was
    // given; a shared pipe's write end must close here, or its reader
    // would never see the end.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let f = spawn_error(name, &launch.program, &e);
            return Err(match &confined {
                Some(c) => c.annotate(f),
                None => f,
            });
        }
    };
    let out = match shared {
        Some(r) => Some(r),
        None if pump_out => child.stdout.take().map(|o| File::from(OwnedFd::from(o))),
        None => None,
    };
    let err = if pump_err {
        child.stderr.take().map(|e| File::from(OwnedFd::from(e)))
    } else {
        None
    };
    let result = wait(&mut child, out, err, cancelled, cause, own_group, deliver);
    let status = match result {
        Ok(status) => status,
        Err(f) => return Err(with_cmd(f, name)),
    };
    // A program sharing ral's terminal receives the terminal's keys itself:
    // its death by Ctrl-C or Ctrl-\ is the user cancelling the run (§8.10,
    // lent-terminal keys), not a failure of the program.
    if !own_group {
        match status.signal() {
            Some(libc::SIGINT) => {
                return Err(with_cmd(Failure::cancelled(Cause::Interrupted), name))
            }
            Some(libc::SIGQUIT) => return Err(with_cmd(Failure::cancelled(Cause::Aborted), name)),
            _ => {}
        }
    }
    match (status_result(name, status), &confined) {
        (Err(f), Some(c)) => Err(c.annotate(f)),
        (r, _) => r,
    }
}

fn with_cmd(mut f: Failure, name: &str) -> Failure {
    if f.cmd.is_none() {
        f.cmd = Some(name.into());
    }
    f
}

/// The failure for a spawn error.
fn spawn_error(name: &str, program: &Path, e: &std::io::Error) -> Failure {
    let mut f = match e.kind() {
        ErrorKind::NotFound => Failure::new(
            127,
            format!("command not found: {}", program.display()),
            Reason::NotFound,
        ),
        ErrorKind::PermissionDenied => Failure::new(
            126,
            format!("{}: permission denied", program.display()),
            Reason::NotRunnable,
        ),
        _ if e.raw_os_error() == Some(libc::ENOEXEC) => Failure::new(
            126,
            format!("{}: not an executable format", program.display()),
            Reason::NotRunnable,
        ),
        _ => Failure::new(
            126,
            format!("{}: cannot run: {e}", program.display()),
            Reason::NotRunnable,
        ),
    };
    f.cmd = Some(name.into());
    f
}

/// Maps an exit status to the command's outcome.
pub fn status_result(name: &str, status: ExitStatus) -> Result<(), Failure> {
    if let Some(code) = status.code() {
        if code == 0 {
            return Ok(());
        }
        let mut f = Failure::new(
            code,
            format!("{name} exited with status {code}"),
            Reason::Exited(code),
        );
        f.cmd = Some(name.into());
        return Err(f);
    }
    let sig = status.signal().unwrap_or(0);
    let mut f = Failure::new(
        128 + sig,
        format!("{name} was killed by signal {sig}{}", signal_name(sig)),
        Reason::Signaled(sig),
    );
    f.cmd = Some(name.into());
    Err(f)
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGQUIT => " (SIGQUIT)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGPIPE => " (SIGPIPE)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

/// A pidfd for `pid`, where the kernel supports them.
fn pidfd(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor
    // or -1; it touches no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
    // SAFETY: `fd` was just returned by the kernel and is owned by no one
    // else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends `sig` to the child's process group (or the child alone).
pub fn signal(pid: u32, group: bool, sig: i32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    let target = if group { -pid } else { pid };
    // SAFETY: kill(2) takes plain integers; a stale pid is harmless (ESRCH).
    unsafe {
        libc::kill(target, sig);
    }
}

/// Terminates and reaps a child after cancellation.
fn terminate(child: &mut Child, group: bool) {
    signal(child.id(), group, libc::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            // The group may hold more than the child.
            if group {
                signal(child.id(), true, libc::SIGKILL);
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(child.id(), group, libc::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// The wait loop (see the module docs).
fn wait(
    child: &mut Child,
    mut out: Option<File>,
    mut err: Option<File>,
    cancelled: &dyn Fn() -> bool,
    cause: &dyn Fn() -> Cause,
    group: bool,
    deliver: &mut dyn FnMut(Stream, &[u8]) -> Result<(), Failure>,
) -> Result<ExitStatus, Failure> {
    let pfd = pidfd(child.id());
    let mut status: Option<ExitStatus> = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if cancelled() {
            terminate(child, group);
            return Err(Failure::cancelled(cause()));
        }
        if status.is_none() {
            match child.try_wait() {
                Ok(Some(s)) => status = Some(s),
                Ok(None) => {}
                Err(e) => return Err(Failure::error(format!("wait: {e}"))),
            }
        }
        if let Some(s) = status {
            if out.is_none() && err.is_none() {
                return Ok(s);
            }
        }
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(3);
        let mut which: Vec<u8> = Vec::with_capacity(3);
        if let Some(o) = &out {
            fds.push(pollfd(o.as_raw_fd()));
            which.push(1);
        }
        if let Some(e) = &err {
            fds.push(pollfd(e.as_raw_fd()));
            which.push(2);
        }
        let timeout = match (&pfd, status) {
            (Some(p), None) => {
                fds.push(pollfd(p.as_raw_fd()));
                which.push(0);
                POLL_SLICE_MS
            }
            // No pidfd: look at the child again soon.
            (None, None) => 10,
            (_, Some(_)) => POLL_SLICE_MS,
        };
        let nfds = libc::nfds_t::try_from(fds.len()).unwrap_or(0);
        // SAFETY: `fds` is a live, correctly sized array of pollfd for the
        // duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), nfds, timeout) };
        if n == 0 && status.is_none() && is_stopped(child.id()) {
            // ral does not suspend (§11.6): whoever waits resumes.
            signal(child.id(), group, libc::SIGCONT);
        }
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            return Err(Failure::error(format!("poll: {e}")));
        }
        for (fd, w) in fds.iter().zip(which.iter()) {
            if fd.revents == 0 {
                continue;
            }
            let (stream, reader): (Stream, Option<&mut dyn Read>) = match w {
                1 => (Stream::Out, out.as_mut().map(|r| r as &mut dyn Read)),
                2 => (Stream::Err, err.as_mut().map(|r| r as &mut dyn Read)),
                _ => continue,
            };
            let Some(reader) = reader else { continue };
            match reader.read(&mut buf) {
                Ok(0) => match w {
                    1 => out = None,
                    _ => err = None,
                },
                Ok(k) => {
                    if let Err(f) = deliver(stream, &buf[..k]) {
                        terminate(child, group);
                        return Err(f);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Failure::error(format!("read: {e}"))),
            }
        }
    }
}

/// Whether process `pid` is stopped (state `T` or `t` in /proc).
fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may itself
    // hold spaces or parentheses.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .is_some_and(|c| c == 'T' || c == 't')
}

fn pollfd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// The `Stdio` of a plan that is not pumped.
fn stdio_for(plan: Plan) -> Result<Stdio, Failure> {
    match plan {
        Plan::Direct(s) => Ok(s),
        Plan::Pump => Ok(Stdio::piped()),
        Plan::WithOut => Err(Failure::error(
            "standard error follows standard output only beside a pumped output",
        )),
    }
}

/// A `Stdio` writing to a duplicate of `file`.
pub fn stdio_of(file: &File) -> Result<Stdio, Failure> {
    file.try_clone()
        .map(Stdio::from)
        .map_err(|e| Failure::error(format!("dup: {e}")))
}

/// A pipe whose read end is handed out and whose write end a thread fills
/// with `bytes` (here strings, §7.5: written concurrently so a large one
/// cannot deadlock against its reader).
pub fn feed(bytes: Vec<u8>) -> Result<File, Failure> {
    let (r, mut w) = std::io::pipe().map_err(|e| Failure::error(format!("pipe: {e}")))?;
    std::thread::Builder::new()
        .name("ral-here".into())
        .spawn(move || {
            use std::io::Write;
            let _ = w.write_all(&bytes);
        })
        .map_err(|e| Failure::error(format!("thread: {e}")))?;
    Ok(File::from(OwnedFd::from(r)))
}

/// An OS pipe as two files (read end, write end).
pub fn pipe() -> Result<(File, File), Failure> {
    let (r, w) = std::io::pipe().map_err(|e| Failure::error(format!("pipe: {e}")))?;
    Ok((File::from(OwnedFd::from(r)), File::from(OwnedFd::from(w))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("git", "git"), 0);
        assert_eq!(edit_distance("gti", "git"), 2);
        assert_eq!(edit_distance("grpe", "grep"), 2);
        assert_eq!(edit_distance("ls", "lsx"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn search_path_finds_sh() {
        let cwd = PathBuf::from("/");
        let found = search_path("sh", Some("/nonexistent:/bin:/usr/bin"), &cwd);
        assert!(found.is_some_and(|p| p.ends_with("sh")));
        assert_eq!(search_path("sh", Some("/nonexistent"), &cwd), None);
        assert_eq!(search_path("sh", None, &cwd), None);
    }
}
