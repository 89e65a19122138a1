//! The namespace layer of a confined launch (spec/capabilities.md section
//! 4): where the kernel lets ral make namespaces, each confined program
//! runs in new mount, pid, ipc and uts namespaces (and a new network
//! namespace under `net: false`), inside a new user namespace unless ral
//! runs as root, with a filesystem view built from the grant
//! ([`super::plan::Plan::view`]): the paths the grant shows bound at their
//! own paths, read-only unless writable, `nosuid` and `nodev` everywhere,
//! `noexec` wherever `exec` admits nothing, deny carve-outs masked, a
//! fresh `/proc` of the new pid namespace and a minimal `/dev`. Landlock
//! and seccomp are applied beneath it as before.
//!
//! # The launch
//!
//! The standard library's spawn forks the launcher `F` (a copy of ral that
//! will never `exec`) and runs [`hook`] in it after setting up the child's
//! standard streams, process group and directory. `F`:
//!
//! 1. `unshare`s the namespaces (one call; the others are owned by the new
//!    user namespace) and writes its own one-line id maps;
//! 2. makes every mount private, mounts a tmpfs on the staging directory,
//!    `pivot_root`s into it (the old root stays at `/oldroot`), mounts a
//!    second tmpfs at `/newroot` and binds each view entry from
//!    `/oldroot/P` to `/newroot/P`, setting its attributes recursively
//!    (`mount_setattr`);
//! 3. `clone`s `S`, pid 1 of the new pid namespace, sharing `F`'s (private)
//!    memory, and waits.
//!
//! `S` mounts the new `/proc` (while the host's is still visible, as the
//! kernel requires in a user namespace), `pivot_root`s into `/newroot`,
//! detaches everything else, enters the working directory, and `clone`s
//! (`CLONE_VM | CLONE_VFORK`) the program `P`, pid 2, which drops what it
//! must (root: the capabilities that act on the host), enters the Landlock
//! domain and the seccomp program, and `execve`s. `S` stays as the
//! namespace's init: it reaps, and when `P` ends it reports `P`'s status
//! to `F` through a pipe and exits, which ends everything left in the
//! namespace. `F` closes the standard library's exec-error pipe once `P`
//! has `exec`ed (so the parent's spawn returns), ignores the signals a
//! cancel sends the group (the program receives them itself), waits for
//! `S` (so nothing the program left running outlives the command), and
//! ends the way `P` ended: the same exit status or the same signal. So the parent sees one child, `F`, with the program's outcome,
//! and a signal to the group reaches the program.
//!
//! A failed `execve` is sent back to `F`, which returns it from the hook:
//! the parent's spawn fails with that error, as for an unconfined launch.
//!
//! Everything the hook touches is built before the fork ([`View`]); it
//! only makes system calls.

#![allow(unsafe_code)]

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::plan::{ViewAccess, ViewEntry};

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;
const MOUNT_ATTR_NOEXEC: u64 = 0x8;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// `struct landlock_path_beneath_attr` (linux/landlock.h), packed.
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

/// `struct mount_attr` (linux/mount.h).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// The staging directory a launcher mounts its tmpfs on: it must exist,
/// and nothing is bound from beneath it (the tmpfs moves away from it
/// before the binds are taken).
fn staging() -> Option<&'static CString> {
    static STAGING: OnceLock<Option<CString>> = OnceLock::new();
    STAGING
        .get_or_init(|| {
            ["/tmp", "/mnt", "/var/tmp", "/run"]
                .into_iter()
                .find(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
                .and_then(|d| CString::new(d).ok())
        })
        .as_ref()
}

/// The root directory's symbolic links (`/bin -> usr/bin` on a merged
/// `/usr`), recreated in a view's root so programs find them.
fn root_links() -> &'static [(CString, CString)] {
    static LINKS: OnceLock<Vec<(CString, CString)>> = OnceLock::new();
    LINKS.get_or_init(|| {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir("/") else {
            return out;
        };
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_symlink()) {
                continue;
            }
            let Ok(target) = std::fs::read_link(e.path()) else {
                continue;
            };
            let at = Path::new("/newroot").join(e.file_name());
            if let (Ok(t), Ok(a)) = (
                CString::new(target.as_os_str().as_bytes()),
                CString::new(at.as_os_str().as_bytes()),
            ) {
                out.push((t, a));
            }
        }
        out
    })
}

/// Whether this process can build the namespace layer: root, or a user
/// allowed to create user namespaces, probed once by a forked child that
/// tries (some kernels and container runtimes refuse it).
pub fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        // The process's own environment (not a grant's `within`) may turn
        // the layer off: for measuring the floor, and for a system where
        // namespaces misbehave. Whoever sets it starts ral, and could as
        // well start the program unconfined.
        if std::env::var_os("RAL_SANDBOX_NAMESPACES").is_some_and(|v| v == "0") {
            return false;
        }
        if staging().is_none() {
            return false;
        }
        let flags = namespace_flags(false) | if is_root() { 0 } else { libc::CLONE_NEWUSER };
        // SAFETY: the child makes two system calls (unshare, _exit) and
        // touches no memory; the parent waits for it.
        unsafe {
            let pid = libc::fork();
            if pid == 0 {
                let rc = libc::unshare(flags);
                libc::_exit(if rc == 0 { 0 } else { 1 });
            }
            if pid < 0 {
                return false;
            }
            let mut status = 0;
            if libc::waitpid(pid, &mut status, 0) != pid {
                return false;
            }
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
        }
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments.
    unsafe { libc::geteuid() == 0 }
}

fn namespace_flags(offline: bool) -> libc::c_int {
    libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | if offline { libc::CLONE_NEWNET } else { 0 }
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{} holds a NUL byte", p.display()))
}

fn under_root(root: &str, p: &Path) -> Result<CString, String> {
    let mut s = root.as_bytes().to_vec();
    if p != Path::new("/") {
        s.extend_from_slice(p.as_os_str().as_bytes());
    }
    CString::new(s).map_err(|_| format!("{} holds a NUL byte", p.display()))
}

/// One step `F` takes to build the view.
enum Step {
    /// `mkdir`, an existing directory being fine.
    Mkdir(CString),
    /// An empty file to mount on.
    Touch(CString),
    Symlink(CString, CString),
    Tmpfs(CString, u64),
    /// Bind `src` on `dst` (recursively), then set `attr` on it and
    /// everything beneath. `optional`: a missing source or mount point
    /// skips it.
    Bind {
        src: CString,
        dst: CString,
        attr: u64,
        optional: bool,
    },
    /// Set `attr` on the mount at a path and everything beneath, clearing
    /// `clear`.
    Attr(CString, u64, u64),
}

/// The devices a view's `/dev` holds.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

/// A launch's prepared namespace layer.
pub struct View {
    flags: libc::c_int,
    /// The one-line id maps, for a user namespace.
    maps: Option<(Vec<u8>, Vec<u8>)>,
    root: bool,
    /// The Landlock rights of the fresh `/proc` (0: file access is not
    /// handled).
    proc_rule: u64,
    /// Whether `/` itself is bound (then the root is not the view's tmpfs).
    binds_root: bool,
    /// The view is the host's hierarchy changed in place (no pivot).
    in_place: bool,
    staging: CString,
    steps: Vec<Step>,
    /// Set at install: the working directory inside, the program, its
    /// arguments and environment.
    cwd: CString,
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    envp_ptrs: Vec<*const libc::c_char>,
    /// Stacks for `S` and `P`.
    stack: Vec<u8>,
}

// SAFETY: the raw pointers point into `argv` and `envp`, which the View
// owns and never changes after `finish`; the View moves as a whole.
unsafe impl Send for View {}
unsafe impl Sync for View {}

const STACK: usize = 128 * 1024;

impl View {
    /// Prepares the view of `entries` (see [`super::plan::Plan::view`]);
    /// `fs` says whether the grant restricts the file hierarchy (then the
    /// view has its own `/dev`), `offline` whether it has a network.
    pub fn new(
        entries: &[ViewEntry],
        fs: bool,
        offline: bool,
        proc_rule: u64,
    ) -> Result<View, String> {
        let staging = staging().ok_or("no staging directory")?.clone();
        let root = is_root();
        let mut flags = namespace_flags(offline);
        let maps = if root {
            None
        } else {
            flags |= libc::CLONE_NEWUSER;
            // SAFETY: getuid and getgid take no arguments.
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            Some((
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            ))
        };
        let in_place = !fs;
        if in_place {
            // Without a restricted `fs` the view is the whole hierarchy:
            // it is changed where it stands (no root to build, nothing to
            // pivot or detach), `nosuid` everywhere, `noexec` but for
            // what `exec` admits.
            let mut steps = Vec::new();
            let everywhere = entries
                .iter()
                .find(|e| e.path == Path::new("/"))
                .map_or(true, |e| e.exec);
            let mut attr = MOUNT_ATTR_NOSUID;
            if !everywhere {
                attr |= MOUNT_ATTR_NOEXEC;
            }
            steps.push(Step::Attr(c("/")?, attr, 0));
            for e in entries.iter().filter(|e| e.path != Path::new("/")) {
                let p = cstr(&e.path)?;
                steps.push(Step::Bind {
                    src: p.clone(),
                    dst: p.clone(),
                    attr: 0,
                    optional: true,
                });
                let (set, clear) = if e.exec {
                    (MOUNT_ATTR_NOSUID, MOUNT_ATTR_NOEXEC)
                } else {
                    (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0)
                };
                steps.push(Step::Attr(p, set, clear));
            }
            return Ok(View {
                flags,
                maps,
                root,
                proc_rule,
                binds_root: true,
                in_place,
                staging,
                steps,
                cwd: CString::default(),
                program: CString::default(),
                argv: Vec::new(),
                envp: Vec::new(),
                argv_ptrs: Vec::new(),
                envp_ptrs: Vec::new(),
                stack: Vec::new(),
            });
        }
        let mut steps = Vec::new();
        steps.push(Step::Mkdir(c("/newroot")?));
        steps.push(Step::Tmpfs(
            c("/newroot")?,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        ));
        let binds_root = entries.iter().any(|e| e.path == Path::new("/"));
        if !binds_root {
            for (target, at) in root_links() {
                steps.push(Step::Symlink(target.clone(), at.clone()));
            }
        }
        steps.push(Step::Touch(c("/newroot/.ral-empty")?));
        let mut bound: Vec<&Path> = Vec::new();
        for e in entries {
            let inside = bound.iter().any(|b| crate::caps::under(&e.path, b));
            let dst = under_root("/newroot", &e.path)?;
            if !inside {
                mkdir_parents(&e.path, &mut steps)?;
                steps.push(if e.is_dir {
                    Step::Mkdir(dst.clone())
                } else {
                    Step::Touch(dst.clone())
                });
            }
            let mut attr = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
            if !e.exec {
                attr |= MOUNT_ATTR_NOEXEC;
            }
            match e.access {
                ViewAccess::ReadOnly => attr |= MOUNT_ATTR_RDONLY,
                ViewAccess::ReadWrite => {}
                ViewAccess::Masked => {
                    attr |= MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC;
                    if e.is_dir {
                        steps.push(Step::Tmpfs(dst, attr));
                    } else {
                        steps.push(Step::Bind {
                            src: c("/newroot/.ral-empty")?,
                            dst,
                            attr,
                            optional: true,
                        });
                    }
                    continue;
                }
            }
            steps.push(Step::Bind {
                src: under_root("/oldroot", &e.path)?,
                dst,
                attr,
                optional: true,
            });
            if e.is_dir {
                bound.push(&e.path);
            }
        }
        if fs {
            steps.push(Step::Mkdir(c("/newroot/dev")?));
            steps.push(Step::Tmpfs(
                c("/newroot/dev")?,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
            ));
            for d in DEVICES {
                let dst = c(&format!("/newroot/dev/{d}"))?;
                steps.push(Step::Touch(dst.clone()));
                steps.push(Step::Bind {
                    src: c(&format!("/oldroot/dev/{d}"))?,
                    dst,
                    attr: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                    optional: true,
                });
            }
            for (name, target) in [
                ("fd", "/proc/self/fd"),
                ("stdin", "/proc/self/fd/0"),
                ("stdout", "/proc/self/fd/1"),
                ("stderr", "/proc/self/fd/2"),
            ] {
                steps.push(Step::Symlink(
                    c(target)?,
                    c(&format!("/newroot/dev/{name}"))?,
                ));
            }
        }
        steps.push(Step::Mkdir(c("/newroot/proc")?));
        Ok(View {
            flags,
            maps,
            root,
            proc_rule,
            binds_root,
            in_place,
            staging,
            steps,
            cwd: CString::default(),
            program: CString::default(),
            argv: Vec::new(),
            envp: Vec::new(),
            argv_ptrs: Vec::new(),
            envp_ptrs: Vec::new(),
            stack: Vec::new(),
        })
    }

    /// Completes the view for one command: its working directory (made in
    /// the view when nothing shown holds it, so the program starts where
    /// it was asked to, finding nothing there), program, arguments and
    /// environment.
    pub fn finish(&mut self, cmd: &std::process::Command) -> Result<(), String> {
        let cwd = cmd
            .get_current_dir()
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let cwd = crate::caps::real(&cwd);
        if !self.in_place {
            let mut steps = Vec::new();
            mkdir_parents(&cwd, &mut steps)?;
            steps.push(Step::Mkdir(under_root("/newroot", &cwd)?));
            // Made before the mounts would hide it; a mount on a shown
            // ancestor makes these fail harmlessly (they are optional).
            let at = self.steps.len().min(2);
            self.steps.splice(at..at, steps);
        }
        self.cwd = cstr(&cwd)?;
        self.program = CString::new(cmd.get_program().as_bytes())
            .map_err(|_| "the program's name holds a NUL byte".to_owned())?;
        self.argv = std::iter::once(cmd.get_program())
            .chain(cmd.get_args())
            .map(|a| CString::new(a.as_bytes()))
            .collect::<Result<_, _>>()
            .map_err(|_| "an argument holds a NUL byte".to_owned())?;
        self.envp = cmd
            .get_envs()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .map(|(k, v)| {
                let mut s = k.as_bytes().to_vec();
                s.push(b'=');
                s.extend_from_slice(v.as_bytes());
                CString::new(s)
            })
            .collect::<Result<_, _>>()
            .map_err(|_| "an environment variable holds a NUL byte".to_owned())?;
        self.argv_ptrs = self.argv.iter().map(|a| a.as_ptr()).collect();
        self.argv_ptrs.push(std::ptr::null());
        self.envp_ptrs = self.envp.iter().map(|a| a.as_ptr()).collect();
        self.envp_ptrs.push(std::ptr::null());
        self.stack = vec![0u8; 2 * STACK];
        Ok(())
    }
}

fn c(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s} holds a NUL byte"))
}

/// The `mkdir` steps for every ancestor of `p` under `/newroot`.
fn mkdir_parents(p: &Path, steps: &mut Vec<Step>) -> Result<(), String> {
    let mut acc = PathBuf::from("/");
    let comps: Vec<&OsStr> = p
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n),
            _ => None,
        })
        .collect();
    for n in comps.iter().take(comps.len().saturating_sub(1)) {
        acc.push(n);
        steps.push(Step::Mkdir(under_root("/newroot", &acc)?));
    }
    Ok(())
}

/// What the hook needs from the confinement beneath the view: the
/// Landlock ruleset's descriptor (-1 for none) and the seccomp program.
pub struct Floor<'a> {
    pub ruleset: libc::c_int,
    pub program: &'a [super::bpf::Insn],
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

fn write_file(path: &[u8], data: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated by the callers; `data` is a live
    // slice.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 {
            return Err(last_error());
        }
    }
    Ok(())
}

fn set_attr(path: &CString, attr: u64) -> std::io::Result<()> {
    set_attr_clear(path, attr, 0)
}

fn set_attr_clear(path: &CString, attr: u64, clear: u64) -> std::io::Result<()> {
    let a = MountAttr {
        attr_set: attr,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads the path and the struct, both live.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &a as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        Err(last_error())
    } else {
        Ok(())
    }
}

fn run_steps(steps: &[Step]) -> std::io::Result<()> {
    for s in steps {
        // SAFETY (each call): the paths are NUL-terminated strings the
        // View owns.
        match s {
            Step::Mkdir(p) => {
                let rc = unsafe { libc::mkdir(p.as_ptr(), 0o755) };
                // An existing directory, or one under a read-only mount
                // (its optional mount is then skipped), is fine.
                let _ = rc;
            }
            Step::Touch(p) => {
                let fd = unsafe {
                    libc::open(
                        p.as_ptr(),
                        libc::O_RDONLY | libc::O_CREAT | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                        0o444,
                    )
                };
                if fd >= 0 {
                    unsafe { libc::close(fd) };
                }
            }
            Step::Symlink(target, at) => {
                let _ = unsafe { libc::symlink(target.as_ptr(), at.as_ptr()) };
            }
            Step::Tmpfs(p, attr) => {
                check(unsafe {
                    libc::mount(
                        c"ral".as_ptr(),
                        p.as_ptr(),
                        c"tmpfs".as_ptr(),
                        0,
                        c"mode=0755".as_ptr().cast(),
                    )
                })?;
                set_attr(p, *attr)?;
            }
            Step::Bind {
                src,
                dst,
                attr,
                optional,
            } => {
                let rc = unsafe {
                    libc::mount(
                        src.as_ptr(),
                        dst.as_ptr(),
                        std::ptr::null(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    )
                };
                if rc < 0 {
                    let e = last_error();
                    let missing = matches!(
                        e.raw_os_error(),
                        Some(libc::ENOENT | libc::ENOTDIR | libc::EROFS)
                    );
                    if *optional && missing {
                        continue;
                    }
                    return Err(e);
                }
                if *attr != 0 {
                    set_attr(dst, *attr)?;
                }
            }
            Step::Attr(p, set, clear) => set_attr_clear(p, *set, *clear)?,
        }
    }
    Ok(())
}

/// The capabilities a confined root keeps (file ownership and access,
/// its own identity, signals within its domain): every other one, which
/// acts on the host (raw I/O, modules, time, network administration,
/// device nodes, mounts, tracing, …), leaves the bounding set.
const ROOT_KEEPS: &[u32] = &[
    0,  // CHOWN
    1,  // DAC_OVERRIDE
    2,  // DAC_READ_SEARCH
    3,  // FOWNER
    4,  // FSETID
    5,  // KILL
    6,  // SETGID
    7,  // SETUID
    10, // NET_BIND_SERVICE
    29, // AUDIT_WRITE
    31, // SETFCAP
];

/// What `S` and `P` share with `F`: the view, the floor, and the pipes.
struct Shared<'a> {
    view: &'a View,
    floor: *const Floor<'static>,
    /// P's exec-error pipe (write end) and S's status pipe (write end).
    exec_w: libc::c_int,
    status_w: libc::c_int,
    pid_p: libc::pid_t,
}

/// The hook `F` runs (see the module docs). Never returns on success: `F`
/// ends as the program ended.
pub fn hook(view: &View, floor: &Floor<'_>) -> std::io::Result<()> {
    // SAFETY (the whole function): it runs in the forked child `F`, which
    // is single-threaded; everything it reads was built before the fork,
    // and it makes only system calls.
    unsafe {
        check(libc::setsid())?;
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check(libc::setrlimit(libc::RLIMIT_CORE, &none))?;
        check(libc::unshare(view.flags))?;
        if let Some((uid_map, gid_map)) = &view.maps {
            write_file(b"/proc/self/setgroups\0", b"deny")?;
            write_file(b"/proc/self/uid_map\0", uid_map)?;
            write_file(b"/proc/self/gid_map\0", gid_map)?;
        }
        check(libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        if !view.in_place {
            check(libc::mount(
                c"ral".as_ptr(),
                view.staging.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                c"mode=0755".as_ptr().cast(),
            ))?;
            check(libc::chdir(view.staging.as_ptr()))?;
            check(libc::mkdir(c"oldroot".as_ptr(), 0o755))?;
            check(libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c"oldroot".as_ptr()) as i32)?;
            check(libc::chdir(c"/".as_ptr()))?;
        }
        run_steps(&view.steps)?;
        let mut exec_pipe = [0; 2];
        check(libc::pipe2(exec_pipe.as_mut_ptr(), libc::O_CLOEXEC))?;
        let mut status_pipe = [0; 2];
        check(libc::pipe2(status_pipe.as_mut_ptr(), libc::O_CLOEXEC))?;
        let mut shared = Shared {
            view,
            floor: (floor as *const Floor<'_>).cast(),
            exec_w: exec_pipe[1],
            status_w: status_pipe[1],
            pid_p: 0,
        };
        let top = view.stack.as_ptr().add(STACK) as *mut libc::c_void;
        let s = libc::clone(
            init,
            top,
            libc::CLONE_VM | libc::SIGCHLD,
            (&mut shared as *mut Shared<'_>).cast(),
        );
        if s < 0 {
            return Err(last_error());
        }
        libc::close(exec_pipe[1]);
        libc::close(status_pipe[1]);
        // The program's exec: EOF once it has exec'd, else its errno.
        let mut errno_buf = [0u8; 4];
        let n = read_full(exec_pipe[0], &mut errno_buf);
        libc::close(exec_pipe[0]);
        if n == 4 {
            let mut st = 0;
            libc::waitpid(s, &mut st, 0);
            return Err(std::io::Error::from_raw_os_error(i32::from_ne_bytes(
                errno_buf,
            )));
        }
        // Success: the parent's spawn may return. Close everything but the
        // status pipe (the standard library's error pipe among them).
        let keep = status_pipe[0];
        if keep > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
        // The relay keeps none of the program's streams either, so a pipe
        // ends when the program's end of it does.
        for fd in 0..3 {
            libc::close(fd);
        }
        for sig in [
            libc::SIGTERM,
            libc::SIGINT,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // `S` reports the program's status and exits, which ends the
        // namespace and everything left in it: `F` waits for that, so
        // nothing the program started outlives the command.
        let mut st = 0;
        while libc::waitpid(s, &mut st, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        let mut buf = [0u8; 4];
        let status = if read_full(keep, &mut buf) == 4 {
            i32::from_ne_bytes(buf)
        } else {
            st
        };
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            1
        });
    }
}

/// Closes every descriptor from 3 up except those in `keep` (negative
/// entries are ignored).
fn close_except(keep: &mut [libc::c_int; 3]) {
    keep.sort_unstable();
    let mut from: libc::c_int = 3;
    for &k in keep.iter() {
        if k < from {
            continue;
        }
        if k > from {
            // SAFETY: close_range takes integers.
            unsafe {
                libc::syscall(libc::SYS_close_range, from as u32, (k - 1) as u32, 0u32);
            }
        }
        from = k + 1;
    }
    // SAFETY: as above.
    unsafe {
        libc::syscall(libc::SYS_close_range, from as u32, u32::MAX, 0u32);
    }
}

unsafe fn read_full(fd: libc::c_int, buf: &mut [u8]) -> usize {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: reads into the live remainder of `buf`.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().add(got).cast(), buf.len() - got) };
        if n > 0 {
            got += n as usize;
        } else if n == 0 || unsafe { *libc::__errno_location() } != libc::EINTR {
            break;
        }
    }
    got
}

/// `S`: pid 1 of the new pid namespace (see the module docs).
extern "C" fn init(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Shared` on `F`'s stack, which outlives `S`'s
    // use of it (F waits for S); S makes only system calls.
    unsafe {
        let sh = &mut *(arg as *mut Shared<'_>);
        let view = sh.view;
        // The init never execs: it keeps only its pipes and what the
        // program needs (its streams and the Landlock ruleset), not the
        // copies of every descriptor of ral the fork gave it, which would
        // otherwise stay open for the program's whole life.
        close_except(&mut [sh.exec_w, sh.status_w, (*sh.floor).ruleset]);
        for sig in 1..65 {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
        let fail = |sh: &Shared<'_>| -> libc::c_int {
            let e = *libc::__errno_location();
            let b = e.to_ne_bytes();
            libc::write(sh.exec_w, b.as_ptr().cast(), 4);
            libc::_exit(127)
        };
        let proc_at = if view.in_place {
            c"/proc"
        } else {
            c"/newroot/proc"
        };
        if libc::mount(
            c"proc".as_ptr(),
            proc_at.as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) < 0
        {
            // A runtime that masks parts of /proc forbids a new one: the
            // host's (without its other processes' memory, which the
            // Landlock domain's ptrace rule refuses) stands in.
            // In place, the host's is already there.
            if !view.in_place
                && libc::mount(
                    c"/oldroot/proc".as_ptr(),
                    c"/newroot/proc".as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ) < 0
            {
                return fail(sh);
            }
        }
        if !view.in_place
            && (libc::chdir(c"/newroot".as_ptr()) < 0
                || libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) < 0
                || libc::umount2(c".".as_ptr(), libc::MNT_DETACH) < 0
                || libc::chdir(c"/".as_ptr()) < 0)
        {
            return fail(sh);
        }
        // The view's root itself, when it is the view's own tmpfs, is
        // read-only (a bound `/` keeps the attributes set on it).
        if !view.binds_root {
            libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT
                    | libc::MS_BIND
                    | libc::MS_RDONLY
                    | libc::MS_NOSUID
                    | libc::MS_NODEV,
                std::ptr::null(),
            );
        }
        if libc::chdir(view.cwd.as_ptr()) < 0 {
            return fail(sh);
        }
        let top = view.stack.as_ptr().add(2 * STACK) as *mut libc::c_void;
        let p = libc::clone(
            program,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        );
        if p < 0 {
            return fail(sh);
        }
        sh.pid_p = p;
        libc::close(sh.exec_w);
        // The init keeps none of the program's streams.
        for fd in 0..3 {
            libc::close(fd);
        }
        if (*sh.floor).ruleset >= 0 {
            libc::close((*sh.floor).ruleset);
        }
        // The init dies with its launcher, and the namespace with it.
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        // The namespace's init: reap everything; when the program ends,
        // report how and end the namespace.
        loop {
            let mut st = 0;
            let w = libc::waitpid(-1, &mut st, libc::WUNTRACED);
            if w > 0 && libc::WIFSTOPPED(st) {
                // ral does not suspend (§11.6): whoever waits resumes.
                libc::kill(w, libc::SIGCONT);
                continue;
            }
            if w == p {
                let b = st.to_ne_bytes();
                libc::write(sh.status_w, b.as_ptr().cast(), 4);
                libc::_exit(0);
            }
            if w < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(1);
            }
        }
    }
}

/// `P`: confines itself and becomes the program.
extern "C" fn program(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: as for `init`; `P` shares S's memory until it execs, and S
    // is suspended meanwhile (CLONE_VFORK).
    unsafe {
        let sh = &mut *(arg as *mut Shared<'_>);
        let view = sh.view;
        let fail = |sh: &Shared<'_>| -> libc::c_int {
            let e = *libc::__errno_location();
            let b = e.to_ne_bytes();
            libc::write(sh.exec_w, b.as_ptr().cast(), 4);
            libc::_exit(127)
        };
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) < 0
        {
            return fail(sh);
        }
        if view.root {
            for cap in 0..64u32 {
                if !ROOT_KEEPS.contains(&cap) {
                    libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
                }
            }
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail(sh);
        }
        let floor = &*sh.floor;
        if floor.ruleset >= 0 {
            if view.proc_rule != 0 {
                // The fresh /proc is not the inode the parent's rules
                // name: it is granted here, as the envelope grants the
                // host's.
                let fd = libc::open(c"/proc".as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
                if fd < 0 {
                    return fail(sh);
                }
                let attr = PathBeneath {
                    allowed_access: view.proc_rule,
                    parent_fd: fd,
                };
                if libc::syscall(
                    libc::SYS_landlock_add_rule,
                    floor.ruleset,
                    1, // LANDLOCK_RULE_PATH_BENEATH
                    &attr as *const PathBeneath,
                    0,
                ) < 0
                {
                    return fail(sh);
                }
                libc::close(fd);
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, floor.ruleset, 0) < 0 {
                return fail(sh);
            }
        }
        if super::bpf::install(floor.program).is_err() {
            return fail(sh);
        }
        libc::execve(
            view.program.as_ptr(),
            view.argv_ptrs.as_ptr(),
            view.envp_ptrs.as_ptr(),
        );
        fail(sh)
    }
}
