//! The Linux backend: Landlock for the file hierarchy, executables, TCP
//! and signal/abstract-socket scoping; seccomp for the deny-set and for
//! `net: false`; `setsid`, `close_range` and `RLIMIT_CORE` for the rest.
//!
//! Everything that allocates or reads the filesystem happens first
//! ([`prepare`]): the plan's rules are opened (never through a symbolic
//! link, `openat2` with `RESOLVE_NO_SYMLINKS`) and added to a Landlock
//! ruleset, and the seccomp program is compiled once per process.
//!
//! With the namespace layer the launch is `ns.rs`'s (through `fork` and
//! its hook); otherwise one of two launches ([`spawn`]):
//!
//! - **From a confined thread** (the usual case, ral has no controlling
//!   terminal): a short-lived thread enters the Landlock domain and the
//!   seccomp program itself (both are per thread without their
//!   all-threads flags, as is `no_new_privs`) and starts the program with
//!   the standard library's spawn, which is a `vfork`-style clone: the child
//!   inherits the thread's confinement and ral's address space is never
//!   copied. A `fork` would copy it and the child's `exec` tear it down
//!   again, which is most of what a confined launch would otherwise cost.
//!   The child gets a process group of its own; it cannot have a
//!   controlling terminal, since ral has none and the child leads no
//!   session. Its core-dump limit is set right after it starts.
//! - **Through `fork`** when ral has a controlling terminal: the child calls
//!   `setsid` (leaving the terminal) between `fork` and `exec` and then
//!   confines itself ([`install`]), a hook that only makes system calls.
//!
//! One seccomp program ([`super::bpf`], built once per process for each
//! [`Variant`]):
//! - **kill** (`SIGSYS`): `ptrace`, `bpf`, module loading, `kexec_*`,
//!   `reboot`, `swapon`/`swapoff`, the keyrings, `userfaultfd`,
//!   `open_by_handle_at`, the mount family;
//! - **EPERM**: `unshare` and `clone` asking for a new user namespace,
//!   `setns`, `ioctl(TIOCSTI)`, `sethostname`, `setdomainname`,
//!   `fanotify_init`, `mknod`/`mknodat` of a device;
//! - **ENOSYS** under a restricted `exec`: `memfd_create` without
//!   `MFD_NOEXEC_SEAL` (an anonymous file `fexecve` could run); on the
//!   floor alone (no namespaces, [`Variant::floor`]): SysV IPC, POSIX
//!   message queues, `inotify_add_watch`;
//! - **ENOSYS**: `clone3` (its flags live in memory seccomp cannot read;
//!   the C library falls back to `clone`, which the EPERM program sees),
//!   and under `net: false` `io_uring_setup` (io_uring can open sockets
//!   without a system call seccomp sees);
//! - **EACCES** under `net: false`: `socket` in every family, so no TCP,
//!   UDP, raw or Unix socket can be made (`socketpair` stays: a pair
//!   reaches nothing outside);
//! - on x86-64, any system call numbered in the x32 range gets ENOSYS, so
//!   the x32 entry points cannot slip past the numbers above.
//!
//! The program validates the architecture first and kills a process that
//! enters through another one (32-bit `int 0x80`).

#![allow(unsafe_code)]

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use super::bpf::{self, Action, ArgTest, Entry, Insn};
use super::plan::{Plan, Rights, EXEC, READ, WRITE};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope, ABI,
};

/// What the running kernel offers, probed once.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// The Landlock ABI (`Unsupported` without Landlock).
    pub landlock: ABI,
    /// Seccomp filters with the kill-process action.
    pub seccomp: bool,
    /// `close_range` with `CLOSE_RANGE_CLOEXEC` (Linux 5.11).
    pub close_range: bool,
}

impl Kernel {
    /// The running kernel's features.
    pub fn probe() -> Kernel {
        Kernel {
            landlock: landlock_abi(),
            seccomp: seccomp_available(),
            close_range: close_range_available(),
        }
    }

    /// The Landlock ABI as a number (0 without Landlock).
    pub fn landlock_abi(&self) -> i32 {
        self.landlock as i32
    }
}

/// The running kernel, probed on first use.
pub fn kernel() -> &'static Kernel {
    static KERNEL: OnceLock<Kernel> = OnceLock::new();
    KERNEL.get_or_init(Kernel::probe)
}

/// The highest Landlock ABI the kernel supports and this build knows.
fn landlock_abi() -> ABI {
    const DESCENDING: [ABI; 10] = [
        ABI::V10,
        ABI::V9,
        ABI::V8,
        ABI::V7,
        ABI::V6,
        ABI::V5,
        ABI::V4,
        ABI::V3,
        ABI::V2,
        ABI::V1,
    ];
    for abi in DESCENDING {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(Ruleset::create);
        if created.is_ok() {
            return abi;
        }
    }
    ABI::Unsupported
}

fn seccomp_available() -> bool {
    let action: u32 = libc::SECCOMP_RET_KILL_PROCESS;
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 through the pointer,
    // which points at a live local for the duration of the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    rc == 0
}

fn close_range_available() -> bool {
    // An empty range at the top of the descriptor space: nothing to close,
    // so the call only says whether the kernel knows the flag.
    // SAFETY: close_range takes integers and touches no memory.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            libc::c_uint::MAX,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    rc == 0
}

/// Which rows a launch's seccomp program carries beyond the deny-set every
/// confined program runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// `net: false`: no sockets, no io_uring.
    pub offline: bool,
    /// A restricted `exec`: no executable anonymous file (`memfd_create`
    /// without `MFD_NOEXEC_SEAL`), which `fexecve` could run although no
    /// grant admits it.
    pub exec: bool,
    /// No namespaces beneath (the Landlock-and-seccomp floor alone): no
    /// SysV IPC or POSIX message queues (the host's, with no ipc
    /// namespace), no inotify or fanotify marks (which would report names
    /// and timings of directories outside the grant, with no mount view to
    /// hide them).
    pub floor: bool,
}

impl Variant {
    fn index(self) -> usize {
        usize::from(self.offline) | usize::from(self.exec) << 1 | usize::from(self.floor) << 2
    }
}

/// The compiled programs, one per [`Variant`], built on first use.
fn program(v: Variant) -> Result<&'static [Insn], String> {
    static PROGRAMS: [OnceLock<Result<Vec<Insn>, String>>; 8] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    match PROGRAMS
        .get(v.index())
        .ok_or("no such seccomp program")?
        .get_or_init(|| build_program(v))
    {
        Ok(p) => Ok(p.as_slice()),
        Err(e) => Err(e.clone()),
    }
}

fn build_program(v: Variant) -> Result<Vec<Insn>, String> {
    let arch = bpf::audit_arch().ok_or("no seccomp program for this architecture")?;
    let x32 = cfg!(target_arch = "x86_64");
    let kill = |nr| Entry {
        nr,
        test: None,
        action: Action::Kill,
    };
    let errno = |nr, e| Entry {
        nr,
        test: None,
        action: Action::Errno(e),
    };
    let newuser = u32::try_from(libc::CLONE_NEWUSER).map_err(|e| e.to_string())?;
    let with_newuser = |nr| Entry {
        nr,
        test: Some(ArgTest {
            index: 0,
            mask: newuser,
            value: newuser,
        }),
        action: Action::Errno(libc::EPERM),
    };
    // A device node: (mode & 0o120000) == 0o020000 holds for S_IFCHR and
    // S_IFBLK and no other file type.
    let device = |nr, index| Entry {
        nr,
        test: Some(ArgTest {
            index,
            mask: 0o120000,
            value: 0o020000,
        }),
        action: Action::Errno(libc::EPERM),
    };
    #[allow(clippy::unnecessary_cast)]
    let tiocsti = libc::TIOCSTI as u32;
    let mut rows = vec![
        kill(libc::SYS_ptrace),
        kill(libc::SYS_bpf),
        kill(libc::SYS_init_module),
        kill(libc::SYS_finit_module),
        kill(libc::SYS_delete_module),
        kill(libc::SYS_kexec_load),
        kill(libc::SYS_kexec_file_load),
        kill(libc::SYS_reboot),
        kill(libc::SYS_swapon),
        kill(libc::SYS_swapoff),
        kill(libc::SYS_add_key),
        kill(libc::SYS_request_key),
        kill(libc::SYS_keyctl),
        kill(libc::SYS_userfaultfd),
        kill(libc::SYS_open_by_handle_at),
        kill(libc::SYS_mount),
        kill(libc::SYS_umount2),
        kill(libc::SYS_pivot_root),
        kill(libc::SYS_fsopen),
        kill(libc::SYS_fsconfig),
        kill(libc::SYS_fsmount),
        kill(libc::SYS_fspick),
        kill(libc::SYS_move_mount),
        kill(libc::SYS_open_tree),
        kill(libc::SYS_mount_setattr),
        with_newuser(libc::SYS_unshare),
        with_newuser(libc::SYS_clone),
        errno(libc::SYS_setns, libc::EPERM),
        Entry {
            nr: libc::SYS_ioctl,
            test: Some(ArgTest {
                index: 1,
                mask: u32::MAX,
                value: tiocsti,
            }),
            action: Action::Errno(libc::EPERM),
        },
        errno(libc::SYS_clone3, libc::ENOSYS),
        // The host's identity.
        errno(libc::SYS_sethostname, libc::EPERM),
        errno(libc::SYS_setdomainname, libc::EPERM),
        // Device nodes (Landlock refuses them too, where it is present).
        device(libc::SYS_mknodat, 2),
        // fanotify reports the names of files in any directory it marks.
        errno(libc::SYS_fanotify_init, libc::EPERM),
    ];
    #[cfg(target_arch = "x86_64")]
    rows.push(device(libc::SYS_mknod, 1));
    if v.exec {
        let seal = u32::try_from(libc::MFD_NOEXEC_SEAL).map_err(|e| e.to_string())?;
        rows.push(Entry {
            nr: libc::SYS_memfd_create,
            test: Some(ArgTest {
                index: 1,
                mask: seal,
                value: 0,
            }),
            action: Action::Errno(libc::ENOSYS),
        });
    }
    if v.floor {
        for nr in [
            libc::SYS_shmget,
            libc::SYS_shmat,
            libc::SYS_shmctl,
            libc::SYS_msgget,
            libc::SYS_msgsnd,
            libc::SYS_msgrcv,
            libc::SYS_msgctl,
            libc::SYS_semget,
            libc::SYS_semop,
            libc::SYS_semtimedop,
            libc::SYS_semctl,
            libc::SYS_mq_open,
            libc::SYS_mq_unlink,
        ] {
            rows.push(errno(nr, libc::ENOSYS));
        }
        rows.push(errno(libc::SYS_inotify_add_watch, libc::ENOSYS));
    }
    if v.offline {
        rows.push(errno(libc::SYS_socket, libc::EACCES));
        rows.push(errno(libc::SYS_io_uring_setup, libc::ENOSYS));
    }
    bpf::program(arch, x32, &rows).ok_or_else(|| "the seccomp program is too large".to_owned())
}

/// The guarantees the kernel must provide for `plan`; the first one it
/// lacks, as the refusal's words.
pub fn missing(plan: &Plan<'_>, k: &Kernel) -> Option<String> {
    let arch = bpf::audit_arch().is_some();
    if !k.seccomp {
        return Some("seccomp filters (the deny-set every confined program runs under)".to_owned());
    }
    if plan.net_off && !arch {
        return Some(format!(
            "a seccomp socket filter for this architecture ({}), which `net: false` needs",
            std::env::consts::ARCH
        ));
    }
    if !k.close_range {
        return Some(
            "close_range with CLOSE_RANGE_CLOEXEC (Linux 5.11), which keeps ral's descriptors \
             from reaching the program"
                .to_owned(),
        );
    }
    if plan.fs && (k.landlock as i32) < (ABI::V3 as i32) {
        return Some(format!(
            "Landlock ABI 3 (Linux 6.2), which restricting file reads and writes needs; this \
             kernel has {}",
            abi_words(k.landlock)
        ));
    }
    if plan.exec && k.landlock == ABI::Unsupported {
        return Some(
            "Landlock (Linux 5.13), which restricting the programs that may run needs".to_owned(),
        );
    }
    None
}

fn abi_words(abi: ABI) -> String {
    if abi == ABI::Unsupported {
        "no Landlock".to_owned()
    } else {
        format!("Landlock ABI {}", abi as i32)
    }
}

/// What one confined launch installs in its child.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
    program: &'static [Insn],
    /// The namespace layer, where the kernel lets ral build it.
    view: Option<super::ns::View>,
}

impl Prepared {
    /// Adds the namespace layer (see `sandbox/ns.rs`).
    pub fn with_view(mut self, view: super::ns::View) -> Prepared {
        self.view = Some(view);
        self
    }
}

/// The Landlock rights `plan` gives the fresh `/proc` of a view (the
/// envelope's read), 0 when file access is not handled.
pub fn proc_rights(plan: &Plan<'_>, k: &Kernel) -> u64 {
    if plan.fs {
        access(READ, k.landlock, true).bits()
    } else {
        0
    }
}

/// The access rights a [`Rights`] set stands for under `abi`.
fn access(rights: Rights, abi: ABI, is_dir: bool) -> BitFlags<AccessFs> {
    let mut a = BitFlags::<AccessFs>::EMPTY;
    if rights & READ != 0 {
        a |= AccessFs::ReadFile | AccessFs::ReadDir;
    }
    if rights & WRITE != 0 {
        // Device ioctls are not a write of the grant's sense; they stay
        // unhandled.
        // Making a device node is never a right a grant gives (root could
        // otherwise make a raw disk or /dev/kmsg inside a writable tree).
        a |= AccessFs::from_write(abi)
            & !(AccessFs::IoctlDev | AccessFs::MakeChar | AccessFs::MakeBlock);
    }
    if rights & EXEC != 0 {
        a |= AccessFs::Execute;
    }
    if is_dir {
        a
    } else {
        a & AccessFs::from_file(abi)
    }
}

/// Builds the child's confinement for `plan` (see the module docs).
pub fn prepare(plan: &Plan<'_>, k: &Kernel, floor: bool) -> Result<Prepared, String> {
    let abi = k.landlock;
    let mut handled = BitFlags::<AccessFs>::EMPTY;
    if plan.fs {
        handled |= access(READ | WRITE, abi, true);
    }
    if plan.exec {
        handled |= AccessFs::Execute;
    }
    // Device nodes are refused in every confined launch: handled, and no
    // rule grants them.
    if abi != ABI::Unsupported {
        handled |= AccessFs::MakeChar | AccessFs::MakeBlock;
    }
    let net = if plan.net_off {
        AccessNet::from_all(abi)
    } else {
        BitFlags::EMPTY
    };
    let mut scope = Scope::from_all(abi);
    if !plan.net_off {
        // Abstract Unix sockets are network in the sense of `net`.
        scope &= !Scope::AbstractUnixSocket;
    }
    let ruleset = if handled.is_empty() && net.is_empty() && scope.is_empty() {
        None
    } else {
        let mut rs = Ruleset::default().set_compatibility(CompatLevel::HardRequirement);
        if !handled.is_empty() {
            rs = rs.handle_access(handled).map_err(|e| e.to_string())?;
        }
        if !net.is_empty() {
            rs = rs.handle_access(net).map_err(|e| e.to_string())?;
        }
        if !scope.is_empty() {
            rs = rs.scope(scope).map_err(|e| e.to_string())?;
        }
        let mut created = rs.create().map_err(|e| e.to_string())?;
        if plan.fs || plan.exec {
            for rule in plan.rules().map_err(|e| e.to_string())? {
                let rights = access(rule.rights, abi, rule.is_dir) & handled;
                if rights.is_empty() {
                    continue;
                }
                let Some(fd) = open_no_links(&rule.path)? else {
                    continue;
                };
                created = created
                    .add_rule(PathBeneath::new(fd, rights))
                    .map_err(|e| format!("{}: {e}", rule.path.display()))?;
            }
        }
        Some(created)
    };
    let program = program(Variant {
        offline: plan.net_off,
        exec: plan.exec,
        floor,
    })?;
    Ok(Prepared {
        ruleset,
        program,
        view: None,
    })
}

/// Opens `path` for a rule without following any symbolic link on the
/// way; `None` when it no longer exists.
fn open_no_links(path: &Path) -> Result<Option<OwnedFd>, String> {
    use rustix::fs::{openat2, Mode, OFlags, ResolveFlags, CWD};
    match openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(rustix::io::Errno::LOOP) => Err(format!(
            "{} passes through a symbolic link now, so it is not the path the grant named",
            path.display()
        )),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Whether launches take the `fork` path (see the module docs): ral has a
/// controlling terminal, or a test asked for it.
fn fork_path() -> bool {
    static HAS_TTY: OnceLock<bool> = OnceLock::new();
    FORCE_FORK.load(std::sync::atomic::Ordering::Relaxed)
        || *HAS_TTY.get_or_init(|| {
            use rustix::fs::{open, Mode, OFlags};
            open(
                "/dev/tty",
                OFlags::RDONLY | OFlags::NOCTTY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .is_ok()
        })
}

static FORCE_FORK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every launch take the `fork` path, so tests without a terminal
/// exercise it too.
pub fn force_fork_path(force: bool) {
    FORCE_FORK.store(force, std::sync::atomic::Ordering::Relaxed);
}

/// Starts `cmd` confined by `prepared` (see the module docs), in a process
/// group of its own.
pub fn spawn(prepared: Prepared, cmd: &mut Command) -> std::io::Result<std::process::Child> {
    if fork_path() || prepared.view.is_some() {
        install(prepared, cmd);
        return cmd.spawn();
    }
    cmd.process_group(0);
    let Prepared {
        ruleset, program, ..
    } = prepared;
    std::thread::scope(|scope| {
        let launcher = std::thread::Builder::new()
            .name("ral-confine".to_owned())
            .stack_size(256 * 1024)
            .spawn_scoped(scope, move || -> std::io::Result<std::process::Child> {
                confine_this_thread(ruleset, program)?;
                let child = cmd.spawn()?;
                no_core_dumps(child.id());
                Ok(child)
            })?;
        launcher
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the sandbox's launcher panicked")))
    })
}

/// Confines the calling thread (only it: none of the calls below asks for
/// all threads).
fn confine_this_thread(ruleset: Option<RulesetCreated>, program: &[Insn]) -> std::io::Result<()> {
    // The descriptor table is the process's: every descriptor above
    // standard error becomes close-on-exec for ral as a whole, which
    // changes nothing for ral (it never execs, and starts no program that
    // expects to inherit one) and keeps them all from the child.
    // SAFETY: close_range takes integers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: prctl with integer arguments; no_new_privs is per thread.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if let Some(rs) = ruleset {
        rs.restrict_self()
            .map_err(|e| std::io::Error::other(format!("landlock: {e}")))?;
    }
    bpf::install(program)
}

/// Sets a started child's core-dump limit to zero.
fn no_core_dumps(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    let none = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads the struct, which lives on this stack; a child
    // that has already exited makes it fail harmlessly.
    unsafe {
        libc::prlimit(pid, libc::RLIMIT_CORE, &none, std::ptr::null_mut());
    }
}

/// Installs `prepared` on `cmd`: the child, between `fork` and `exec`,
/// leaves ral's session and terminal, drops core dumps, marks every
/// descriptor above 2 close-on-exec, and enters the Landlock domain and the
/// seccomp programs. The caller must not also ask for a process group
/// (`setsid` makes the child the leader of its own).
pub fn install(prepared: Prepared, cmd: &mut Command) {
    let Prepared {
        ruleset,
        program,
        view,
    } = prepared;
    if let Some(mut view) = view {
        // The namespace layer: the launcher F builds the view and starts
        // the program beneath it (sandbox/ns.rs). A command it cannot
        // describe (a NUL byte) fails at spawn, as it would unconfined.
        let finished = view.finish(cmd);
        let fd: Option<OwnedFd> = ruleset.and_then(Into::into);
        let hook = move || -> std::io::Result<()> {
            if let Err(why) = &finished {
                let _ = why;
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            }
            use std::os::fd::AsRawFd;
            let floor = super::ns::Floor {
                ruleset: fd.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                program,
            };
            super::ns::hook(&view, &floor)
        };
        // SAFETY: the hook runs in the forked child, which is single
        // threaded, and only makes system calls on data built here
        // (sandbox/ns.rs).
        unsafe {
            cmd.pre_exec(hook);
        }
        return;
    }
    let mut ruleset = ruleset;
    let hook = move || -> std::io::Result<()> {
        // SAFETY (the whole hook): it runs in the child after fork, where
        // only async-signal-safe operations are allowed. Everything it
        // touches was built by the parent before the fork; it allocates
        // nothing and takes no lock, and each call below is a plain system
        // call on integers or on memory the closure owns.
        //
        // A new session: no controlling terminal, and a process group of
        // its own so a cancel reaches everything it starts.
        // SAFETY: setsid takes no arguments.
        if unsafe { libc::setsid() } < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct, which lives on this stack.
        if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: close_range takes integers; CLOEXEC closes nothing now,
        // so the standard library's exec-error pipe keeps working.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: prctl with integer arguments.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if let Some(rs) = ruleset.take() {
            // The success path of restrict_self is two system calls
            // (PR_SET_NO_NEW_PRIVS again, landlock_restrict_self).
            rs.restrict_self()
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
        }
        bpf::install(program)
    };
    // SAFETY: see the hook's comment: it is async-signal-safe.
    unsafe {
        cmd.pre_exec(hook);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::caps::{decode, DecodeEnv};
    use crate::sandbox::plan::Envelope;
    use crate::value::{Record, Value};
    use std::sync::Arc;

    fn layer(field: &str, v: Value) -> Arc<crate::caps::Layer> {
        let var = |k: &str| std::env::var(k).ok();
        let cwd = Path::new("/");
        let r = Value::record(Record::from_entries(vec![(field.to_owned(), v)]));
        Arc::new(decode(&r, &DecodeEnv { cwd, var: &var }).unwrap())
    }

    #[test]
    fn a_kernel_without_what_a_grant_needs_is_named_in_the_refusal() {
        let fs = vec![layer(
            "fs",
            Value::record(Record::from_entries(vec![(
                "read".to_owned(),
                Value::list(vec![Value::str("/")]),
            )])),
        )];
        let env = Envelope::default();
        let plan = Plan::new(&fs, &env, Vec::new());
        let full = Kernel {
            landlock: ABI::V7,
            seccomp: true,
            close_range: true,
        };
        assert_eq!(missing(&plan, &full), None);
        let old = Kernel {
            landlock: ABI::V2,
            ..full
        };
        let why = missing(&plan, &old).unwrap();
        assert!(
            why.contains("Landlock ABI 3") && why.contains("ABI 2"),
            "{why}"
        );
        let none = Kernel {
            landlock: ABI::Unsupported,
            ..full
        };
        let exec = vec![layer(
            "exec",
            Value::record(Record::from_entries(vec![(
                "true".to_owned(),
                Value::str("allow"),
            )])),
        )];
        let plan = Plan::new(&exec, &env, Vec::new());
        assert!(missing(&plan, &none)
            .unwrap()
            .contains("Landlock (Linux 5.13)"));
        let net = vec![layer("net", Value::Bool(false))];
        let plan = Plan::new(&net, &env, Vec::new());
        assert_eq!(missing(&plan, &none), None);
        let no_seccomp = Kernel {
            seccomp: false,
            ..full
        };
        assert!(missing(&plan, &no_seccomp).unwrap().contains("seccomp"));
        let no_close = Kernel {
            close_range: false,
            ..full
        };
        assert!(missing(&plan, &no_close).unwrap().contains("close_range"));
    }
}
