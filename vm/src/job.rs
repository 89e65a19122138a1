//! Jobs and pipeline edges: the process group a command or a pipeline's
//! externals run in, the terminal lent to it, and the cut of a dead edge
//! (spec §7.6, §8.10, §11.6, §16.8).
//!
//! - **The terminal lease** ([`Terminal`]). A host that may lend the
//!   terminal (the interactive session, a foreground batch run at a
//!   terminal) acquires the controlling terminal when ral's process group
//!   is its foreground group. Without a lease (no terminal, a background
//!   run, workers, embedding hosts) nothing here touches a terminal.
//! - **Jobs** ([`Job`]). Each pipeline, and each command run outside one,
//!   is a job. Its external programs share one process group: the first
//!   member to start creates it and the others join it (one that starts
//!   after every member has gone creates it again). Where the job goes:
//!   - with a lease and its final output on the terminal, the group is
//!     lent the terminal: each member makes its group the foreground group
//!     between `fork` and `exec` (with `SIGTTOU` blocked), and ral takes
//!     the terminal back when the last running member is reaped. Ctrl-C,
//!     Ctrl-\ and a hangup then reach the programs only; ral judges by how
//!     they ended ([`Job::key_cause`]): death by the key is that key's
//!     cancellation, anything else (a program that caught it and carried
//!     on, or exited) is the program's own outcome;
//!   - with a lease and other output (a capture, a file), in ral's own
//!     process group, so the programs can still read the terminal and the
//!     key reaches ral and them at once;
//!   - without a lease, in a group of their own, so a cancel reaches
//!     everything they started.
//!
//!   ral never suspends: a stopped member is resumed by its waiter (§11.6).
//! - **Edges** ([`Edge`]). Every interior `|` is an OS pipe, and ral holds
//!   a duplicate of its read end until the stage writing it is joined, so
//!   no writer ever meets a broken pipe. When the stage reading an edge
//!   ends, the edge is dead: ral discards the bytes pending in it, then
//!   reads it itself, and the first byte written after that is the cue to
//!   kill the external programs writing it (`SIGKILL`); such a program
//!   keeps no failure (it reports `reader-gone`, which the pipeline
//!   forgives). A ral-written stage's own write to a dead edge raises the
//!   break at that write instead (status 141, observable by `try`).
//!
//! The `unsafe` here: the `pre_exec` hook that joins the group and takes
//! the terminal in the child, the thread signal mask around `tcsetpgrp`,
//! and `poll(2)` on the edge's read end.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rustix::process::Pid;

use crate::failure::Cause;

/// The controlling terminal, leased by a host that may lend it to the
/// programs it runs in the foreground.
#[derive(Debug)]
pub struct Terminal {
    tty: OwnedFd,
    /// ral's own process group, the foreground group when the lease began.
    shell: Pid,
}

impl Terminal {
    /// The controlling terminal, when there is one and ral's process
    /// group is its foreground group (a run started in the background, or
    /// with no terminal, may lend nothing, §16.3).
    pub fn acquire() -> Option<Arc<Terminal>> {
        use rustix::fs::{Mode, OFlags};
        let tty = rustix::fs::open(
            "/dev/tty",
            OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let shell = rustix::process::getpgrp();
        if rustix::termios::tcgetpgrp(&tty).ok()? != shell {
            return None;
        }
        Some(Arc::new(Terminal { tty, shell }))
    }

    /// Whether `fd` is this terminal (a process's standard output, say):
    /// the foreground group can be read only through the controlling
    /// terminal, so a descriptor it can be read through is one.
    pub fn is(&self, fd: BorrowedFd<'_>) -> bool {
        rustix::termios::tcgetpgrp(fd).is_ok()
    }

    /// The terminal's foreground process group.
    fn foreground(&self) -> Option<Pid> {
        rustix::termios::tcgetpgrp(&self.tty).ok()
    }

    /// Makes `group` the foreground group. ral may not be in the
    /// foreground when it does (taking the terminal back), so `SIGTTOU` is
    /// blocked in this thread for the call.
    fn give(&self, group: Pid) {
        with_ttou_blocked(|| {
            let _ = rustix::termios::tcsetpgrp(&self.tty, group);
        });
    }

    /// Takes the terminal back from `group` if it still holds it (a shell
    /// that moved ral to the background meanwhile keeps it).
    fn take_back(&self, group: Pid) {
        if self.foreground() == Some(group) {
            self.give(self.shell);
        }
    }
}

/// Runs `f` with `SIGTTOU` blocked in the calling thread.
fn with_ttou_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: the sets are local, initialised by sigemptyset before use;
    // pthread_sigmask changes the calling thread's mask only, and the old
    // mask is put back before returning.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        let r = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

/// Where a job's programs run (see the module docs).
#[derive(Debug)]
enum Place {
    /// A process group of their own.
    Own,
    /// ral's own process group.
    Shell,
    /// A process group of their own, lent this terminal while they run.
    Lent(Arc<Terminal>),
}

/// A pipeline, or a command outside one: its programs' process group.
#[derive(Debug)]
pub struct Job {
    place: Place,
    state: Mutex<JobState>,
}

#[derive(Debug, Default)]
struct JobState {
    /// The group's id while it exists.
    group: Option<Pid>,
    /// Members started whose end has not been seen.
    live: usize,
    /// The member that founded the group, ended but not reaped (a process
    /// descriptor of it): its zombie keeps the group joinable until the
    /// job ends, so members that start after it join the same group.
    founder: Option<OwnedFd>,
}

/// How a member was started.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    /// The process group to signal for the member (`None`: the member
    /// shares ral's group, so only the member itself is signalled).
    pub group: Option<u32>,
    /// Whether the terminal was lent to the member's group.
    pub lent: bool,
    /// Whether it founded the group: its waiter observes its end without
    /// reaping it ([`peek_exit`]) and hands it to [`Job::keep_founder`].
    pub founder: bool,
}

impl Job {
    /// A job run under the lease `lease` (if the host holds one) whose
    /// final output goes to that terminal (`to_terminal`).
    pub fn new(lease: Option<&Arc<Terminal>>, to_terminal: bool) -> Arc<Job> {
        let place = match lease {
            None => Place::Own,
            Some(t) if to_terminal => Place::Lent(t.clone()),
            Some(_) => Place::Shell,
        };
        Arc::new(Job {
            place,
            state: Mutex::new(JobState::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, JobState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts `cmd` as a member of the job: in the job's group (created by
    /// the first member), and with the terminal when the job is lent it
    /// and ral holds the foreground (or the job already does).
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<(Child, Member)> {
        let terminal = match &self.place {
            Place::Shell => {
                let child = cmd.spawn()?;
                self.lock().live += 1;
                return Ok((
                    child,
                    Member {
                        group: None,
                        lent: false,
                        founder: false,
                    },
                ));
            }
            Place::Own => None,
            Place::Lent(t) => Some(t),
        };
        // Held across the spawn, so two stages starting at once agree on
        // the group.
        let mut st = self.lock();
        let lend = terminal.filter(|t| {
            let fg = t.foreground();
            fg == Some(t.shell) || (fg.is_some() && fg == st.group)
        });
        // The group to join, read by the child's hook (0: a new one).
        let target = Arc::new(AtomicI32::new(
            st.group.map_or(0, |g| g.as_raw_nonzero().get()),
        ));
        match lend {
            Some(t) => {
                let tty = t.tty.as_raw_fd();
                let target = target.clone();
                // SAFETY: the hook runs in the child between fork and exec
                // and makes only async-signal-safe system calls (setpgid,
                // getpgrp, sigprocmask, ioctl through tcsetpgrp); it
                // allocates nothing and touches no lock.
                unsafe {
                    cmd.pre_exec(move || join_and_take(target.load(Ordering::Relaxed), tty));
                }
            }
            None => {
                cmd.process_group(target.load(Ordering::Relaxed));
            }
        }
        let spawned = match cmd.spawn() {
            // The group is gone (its members all ended since): found it
            // anew.
            Err(e) if st.group.is_some() && is_gone(&e) => {
                st.group = None;
                target.store(0, Ordering::Relaxed);
                if lend.is_none() {
                    cmd.process_group(0);
                }
                cmd.spawn()
            }
            r => r,
        };
        let child = spawned?;
        let founder = st.group.is_none();
        let group = match st.group {
            Some(g) => g,
            None => {
                let g = i32::try_from(child.id())
                    .ok()
                    .and_then(Pid::from_raw)
                    .ok_or_else(|| io::Error::other("a child without a pid"))?;
                st.group = Some(g);
                g
            }
        };
        st.live += 1;
        if let Some(t) = lend {
            // Also from this side: the child may not have reached its hook
            // on another path, and a second call changes nothing.
            t.give(group);
        }
        Ok((
            child,
            Member {
                group: u32::try_from(group.as_raw_nonzero().get()).ok(),
                lent: lend.is_some(),
                founder,
            },
        ))
    }

    /// Whether the job is lent the terminal.
    pub fn is_lent(&self) -> bool {
        matches!(self.place, Place::Lent(_))
    }

    /// A member was reaped; after the last one the terminal comes back.
    pub fn reaped(&self) {
        let mut st = self.lock();
        st.live = st.live.saturating_sub(1);
        if st.live > 0 {
            return;
        }
        if let (Place::Lent(t), Some(g)) = (&self.place, st.group) {
            t.take_back(g);
        }
        // Nothing of ours holds the group any more: the next member founds
        // a new one rather than join an id that may be reused.
        if st.founder.is_none() {
            st.group = None;
        }
    }

    /// Keeps the ended, unreaped founder of the group (its process
    /// descriptor) until the job ends, which reaps it.
    pub fn keep_founder(&self, pidfd: OwnedFd) {
        self.lock().founder = Some(pidfd);
    }

    /// The cancellation a member's end reports, when a terminal ral lent
    /// (or shares with it) made it (§8.10): death by Ctrl-C is the
    /// interrupt, by Ctrl-\ the abort, by a hangup (lent only) session
    /// termination. `None`: the status is the program's own outcome.
    pub fn key_cause(&self, member: Member, status: ExitStatus) -> Option<Cause> {
        let shares = matches!(self.place, Place::Shell);
        match status.signal()? {
            libc::SIGINT if member.lent || shares => Some(Cause::Interrupted),
            libc::SIGQUIT if member.lent || shares => Some(Cause::Aborted),
            libc::SIGHUP if member.lent => Some(Cause::Terminated),
            _ => None,
        }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let mut st = self.lock();
        if let (Place::Lent(t), Some(g)) = (&self.place, st.group) {
            t.take_back(g);
        }
        if let Some(fd) = st.founder.take() {
            // It has ended (its end was observed): this only releases its
            // process table entry.
            let _ = rustix::process::waitid(
                rustix::process::WaitId::PidFd(fd.as_fd()),
                rustix::process::WaitIdOptions::EXITED,
            );
        }
    }
}

/// The exit of the child behind `pidfd`, if it has ended, observed
/// without reaping it.
pub fn peek_exit(pidfd: BorrowedFd<'_>) -> io::Result<Option<ExitStatus>> {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    let Some(st) = waitid(WaitId::PidFd(pidfd), options)? else {
        return Ok(None);
    };
    // The raw wait status std decodes: the code in the second byte, or
    // the signal with the core-dump bit.
    let raw = match (st.exit_status(), st.terminating_signal()) {
        (Some(code), _) => (code & 0xff) << 8,
        (None, Some(sig)) => sig | if st.dumped() { 0x80 } else { 0 },
        (None, None) => return Ok(None),
    };
    Ok(Some(ExitStatus::from_raw(raw)))
}

/// The child's hook of a lent job: joins group `group` (0: founds one)
/// and makes it the terminal's foreground group.
fn join_and_take(group: i32, tty: i32) -> io::Result<()> {
    // SAFETY: plain system calls on integers and a local signal set (see
    // the call site); no memory of the parent is touched.
    unsafe {
        if libc::setpgid(0, group) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
        libc::tcsetpgrp(tty, libc::getpgrp());
        libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    Ok(())
}

/// Whether a spawn failed because the group to join no longer exists.
fn is_gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EPERM | libc::ESRCH))
}

/// An interior pipeline edge as ral watches it (see the module docs).
#[derive(Debug)]
pub struct Edge {
    /// ral's duplicate of the read end, until the writing stage is joined.
    read: Mutex<Option<File>>,
    dead: AtomicBool,
    retired: AtomicBool,
    writers: Mutex<Vec<Arc<Writer>>>,
    drainer: Mutex<Option<JoinHandle<()>>>,
}

/// An external program writing an edge.
#[derive(Debug)]
pub struct Writer {
    pid: i32,
    /// A process descriptor, so the kill cannot reach a recycled pid.
    pidfd: Option<OwnedFd>,
    cut: AtomicBool,
}

impl Writer {
    /// Whether ral cut this writer and its end is that cut: it was killed
    /// (by the kill ral sent) rather than ending on its own account, whose
    /// status, once recorded, stands (§7.6).
    pub fn was_cut(&self, status: ExitStatus) -> bool {
        self.cut.load(Ordering::SeqCst) && status.signal() == Some(libc::SIGKILL)
    }

    fn kill(&self) {
        self.cut.store(true, Ordering::SeqCst);
        let sent = self.pidfd.as_ref().is_some_and(|fd| {
            rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL).is_ok()
        });
        if !sent {
            // SAFETY: kill(2) on a plain pid; the member is still
            // registered, so not yet reaped, so the pid is still its own.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            }
        }
    }
}

impl Edge {
    /// An edge whose read end is `read` (ral keeps a duplicate of it).
    pub fn new(read: &File) -> io::Result<Arc<Edge>> {
        Ok(Arc::new(Edge {
            read: Mutex::new(Some(read.try_clone()?)),
            dead: AtomicBool::new(false),
            retired: AtomicBool::new(false),
            writers: Mutex::new(Vec::new()),
            drainer: Mutex::new(None),
        }))
    }

    /// Whether the stage reading the edge has ended.
    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    /// Registers a program writing the edge (pid `pid`, just started and
    /// not yet reaped).
    pub fn register(&self, pid: u32) -> Arc<Writer> {
        let raw = i32::try_from(pid).unwrap_or(0);
        let pidfd = Pid::from_raw(raw).and_then(|p| {
            rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok()
        });
        let w = Arc::new(Writer {
            pid: raw,
            pidfd,
            cut: AtomicBool::new(false),
        });
        lock(&self.writers).push(w.clone());
        w
    }

    /// Forgets a writer (before its waiter reports it).
    pub fn unregister(&self, w: &Arc<Writer>) {
        lock(&self.writers).retain(|x| !Arc::ptr_eq(x, w));
    }

    /// The stage reading the edge has ended: the edge is dead, and ral
    /// starts reading it itself.
    pub fn reader_ended(self: &Arc<Self>) {
        if self.dead.swap(true, Ordering::SeqCst) {
            return;
        }
        let Some(file) = lock(&self.read).take() else {
            return;
        };
        let edge = self.clone();
        let started = std::thread::Builder::new()
            .name("ral-edge".into())
            .stack_size(64 * 1024)
            .spawn(move || edge.drain(file));
        if let Ok(h) = started {
            *lock(&self.drainer) = Some(h);
        }
    }

    /// The stage writing the edge has been joined: ral lets go of it.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        drop(lock(&self.read).take());
        let drainer = lock(&self.drainer).take();
        if let Some(h) = drainer {
            let _ = h.join();
        }
    }

    /// Reads the dead edge: what is pending now was owed to the reader that
    /// left and is discarded; any byte after that kills the writers.
    fn drain(&self, mut file: File) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut pending = rustix::io::ioctl_fionread(&file).unwrap_or(0);
        while pending > 0 {
            let want = usize::try_from(pending).unwrap_or(buf.len()).min(buf.len());
            match file.read(buf.get_mut(..want).unwrap_or_default()) {
                Ok(0) => return,
                Ok(n) => pending = pending.saturating_sub(n as u64),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
        while !self.retired.load(Ordering::SeqCst) {
            if !readable(file.as_fd(), 50) {
                continue;
            }
            match file.read(&mut buf) {
                // Every writer has closed it.
                Ok(0) => return,
                Ok(_) => {
                    for w in lock(&self.writers).iter() {
                        w.kill();
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `fd` is readable (or at its end) within `ms` milliseconds.
fn readable(fd: BorrowedFd<'_>, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd for the duration of the call, on a
    // descriptor the caller holds open.
    let n = unsafe { libc::poll(&mut pfd, 1, ms) };
    n > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    #[test]
    fn pipeline_members_share_one_group_that_is_not_ours() {
        let job = Job::new(None, false);
        let (mut a, ma) = job
            .spawn(Command::new("sleep").arg("5").stdin(Stdio::null()))
            .unwrap();
        let (mut b, mb) = job
            .spawn(Command::new("sleep").arg("5").stdin(Stdio::null()))
            .unwrap();
        let pgid = |pid: u32| {
            rustix::process::getpgid(Pid::from_raw(i32::try_from(pid).unwrap()))
                .unwrap()
                .as_raw_nonzero()
                .get()
        };
        assert_eq!(ma.group, Some(a.id()));
        assert_eq!(mb.group, Some(a.id()));
        assert_eq!(pgid(a.id()), pgid(b.id()));
        assert_ne!(
            pgid(a.id()),
            rustix::process::getpgrp().as_raw_nonzero().get()
        );
        let _ = a.kill();
        let _ = b.kill();
        let _ = a.wait();
        let _ = b.wait();
        job.reaped();
        job.reaped();
        // Every member gone: the next one founds a group of its own.
        let (mut c, mc) = job.spawn(&mut Command::new("true")).unwrap();
        assert_eq!(mc.group, Some(c.id()));
        let _ = c.wait();
    }

    #[test]
    fn a_dead_edge_keeps_what_was_pending_away_and_kills_the_next_writer() {
        let (r, w) = std::io::pipe().unwrap();
        let r = File::from(OwnedFd::from(r));
        let edge = Edge::new(&r).unwrap();
        drop(r);
        // A writer that ignores SIGPIPE and writes forever.
        let mut child = Command::new("sh")
            .args(["-c", "trap '' PIPE; while :; do echo y; done"])
            .stdout(Stdio::from(w))
            .spawn()
            .unwrap();
        let writer = edge.register(child.id());
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        edge.reader_ended();
        let status = child.wait().unwrap();
        assert!(writer.was_cut(status), "{status:?}");
        assert!(start.elapsed() < Duration::from_secs(5));
        edge.unregister(&writer);
        edge.retire();
    }

    #[test]
    fn a_writer_that_never_writes_again_is_not_cut() {
        let (r, mut w) = std::io::pipe().unwrap();
        let r = File::from(OwnedFd::from(r));
        let edge = Edge::new(&r).unwrap();
        drop(r);
        w.write_all(b"pending\n").unwrap();
        let mut child = Command::new("sh")
            .args(["-c", "exit 3"])
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let writer = edge.register(child.id());
        edge.reader_ended();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(3));
        assert!(!writer.was_cut(status));
        drop(w);
        edge.retire();
    }
}
