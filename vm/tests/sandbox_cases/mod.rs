//! The escape cases, shared by `sandbox_ns.rs` (the namespace layer over
//! Landlock and seccomp, ral's usual confinement), `sandbox.rs` (Landlock
//! and seccomp alone, launched from a confined thread) and
//! `sandbox_fork.rs` (the same floor through `fork` and a pre-exec hook);
//! each root sets `FORK_PATH` and `FLOOR`.
//!
//! The OS sandbox (spec §12.10–§12.11) against escape attempts: every
//! attempt a confined program might make to reach past its grant, each
//! beside a control that shows the allowed path works, so a refusal is the
//! sandbox's and not a broken tool.
//!
//! The attempts run real programs (`sh`, `cat`, `ln`) and the
//! `ral-sandbox-probe` helper (this crate's test binary, which makes one
//! connection, read or system call and says what happened). Landlock and
//! seccomp confine root too, so these hold when the tests run as root.
//!
//! The kernel features these tests need are checked first by a test that
//! *fails* when one is missing: the machines this suite runs on have them,
//! and a silent skip would hide a sandbox that no longer confines anything.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Mobile, RunError, Stdin, Stdout, Value, Vm};

mod guard;
mod kernel;

const PROBE: &str = env!("CARGO_BIN_EXE_ral-sandbox-probe");

/// A workspace (`ws/`, with `ws/file` holding "inside") beside a secret
/// (`outside/secret` holding "secret"), all real paths.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("ws")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        std::fs::write(root.join("ws/file"), "inside\n").unwrap();
        std::fs::write(root.join("outside/secret"), "secret\n").unwrap();
        Tree { _dir: dir, root }
    }

    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }
}

/// What a run printed and how it ended.
struct Ran {
    stdout: String,
    stderr: String,
    result: Result<Value, RunError>,
}

impl Ran {
    fn ok(&self) -> bool {
        self.result.is_ok()
    }

    fn status(&self) -> i32 {
        match &self.result {
            Ok(_) => 0,
            Err(RunError::Escape(ral_vm::Escape::Fail(f))) => f.status,
            Err(other) => panic!("unexpected outcome {other:?}"),
        }
    }

    fn message(&self) -> String {
        match &self.result {
            Err(RunError::Escape(ral_vm::Escape::Fail(f))) => {
                format!("{} / hint: {:?}", f.message, f.hint)
            }
            other => format!("{other:?}"),
        }
    }
}

/// Held for reading by every run and for writing by the descriptor test:
/// a confined launch from a thread marks every descriptor of the test
/// process close-on-exec, which would race with that test's control.
static DESCRIPTORS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Runs `src` (a script) with the logical directory at `cwd`.
fn run_in(cwd: &Path, src: &str) -> Ran {
    let _shared = DESCRIPTORS.read().unwrap_or_else(|e| e.into_inner());
    run_unlocked(cwd, src)
}

fn run_unlocked(cwd: &Path, src: &str) -> Ran {
    ral_vm::sandbox::force_fork_path(super::FORK_PATH);
    ral_vm::sandbox::force_floor(super::FLOOR);
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    assert!(!parsed.has_errors(), "parse errors in {src:?}");
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    assert!(
        !checked.has_errors(),
        "type errors in {src:?}: {:?}",
        checked.diagnostics
    );
    let module = ral_ir::lower(&parsed.program, &checked, source);
    let mut vm = Vm::new(Mobile::default());
    vm.stdin = Stdin::Null;
    vm.stderr = Stdout::Buffer(Vec::new());
    vm.mobile.context.cwd = Some(cwd.to_path_buf());
    let result = vm.run_module(&module);
    let text = |s: &Stdout| match s {
        Stdout::Buffer(b) => String::from_utf8_lossy(b).into_owned(),
        Stdout::Inherit | Stdout::Writer(_) => String::new(),
    };
    Ran {
        stdout: text(&vm.stdout),
        stderr: text(&vm.stderr),
        result,
    }
}

/// The directory of the probe binary (real), for grants that must let the
/// test run it.
fn probe_dir() -> String {
    Path::new(PROBE)
        .canonicalize()
        .unwrap()
        .parent()
        .unwrap()
        .display()
        .to_string()
}

#[cfg(target_os = "linux")]
#[test]
fn the_kernel_has_what_the_sandbox_needs() {
    let k = ral_vm::sandbox::kernel();
    assert!(
        k.landlock_abi() >= 6,
        "this machine's kernel should have Landlock ABI 6 or later (it has {}); the escape \
         tests below rely on it",
        k.landlock_abi()
    );
    assert!(k.seccomp, "seccomp filters are missing");
    assert!(k.close_range, "close_range(CLOSE_RANGE_CLOEXEC) is missing");
}

#[test]
fn a_read_outside_the_read_prefixes_is_refused_directly() {
    let t = Tree::new();
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:']]]";
    let control = run_in(&t.ws(), &format!("{grant} {{ cat file }}"));
    assert!(control.ok(), "{}", control.message());
    assert_eq!(control.stdout, "inside\n");
    let escape = run_in(
        &t.ws(),
        &format!("{grant} {{ cat {} }}", t.p("outside/secret")),
    );
    assert!(!escape.ok());
    assert!(!escape.stdout.contains("secret"), "{}", escape.stdout);
    // Refused by Landlock, or not there at all in the namespace layer's
    // filesystem view.
    assert!(
        escape.stderr.contains("Permission denied")
            || (ral_vm::sandbox::namespaces() && escape.stderr.contains("No such file")),
        "{}",
        escape.stderr
    );
    // The failure says the sandbox was there.
    assert!(
        escape.message().contains("OS sandbox"),
        "{}",
        escape.message()
    );
}

#[test]
fn a_read_through_a_symlink_inside_the_workspace_is_refused() {
    let t = Tree::new();
    std::os::unix::fs::symlink(t.root.join("outside/secret"), t.ws().join("leak")).unwrap();
    std::os::unix::fs::symlink(t.ws().join("file"), t.ws().join("fine")).unwrap();
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:']]]";
    let control = run_in(&t.ws(), &format!("{grant} {{ cat fine }}"));
    assert_eq!(control.stdout, "inside\n", "{}", control.message());
    let escape = run_in(&t.ws(), &format!("{grant} {{ cat leak }}"));
    assert!(!escape.ok());
    assert!(!escape.stdout.contains("secret"), "{}", escape.stdout);
    // A link made by the confined program itself leads nowhere either.
    let made = run_in(
        &t.ws(),
        &format!(
            "{grant} {{ sh -c 'ln -s {} made && cat made' }}",
            t.p("outside/secret")
        ),
    );
    assert!(!made.ok());
    assert!(!made.stdout.contains("secret"), "{}", made.stdout);
}

#[test]
fn a_grandchild_shell_reads_no_more_than_its_parent() {
    let t = Tree::new();
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:']]]";
    let control = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c \"sh -c 'cat file'\" }}"),
    );
    assert_eq!(control.stdout, "inside\n", "{}", control.message());
    let escape = run_in(
        &t.ws(),
        &format!(
            "{grant} {{ sh -c \"sh -c 'cat {}'\" }}",
            t.p("outside/secret")
        ),
    );
    assert!(!escape.ok());
    assert!(!escape.stdout.contains("secret"), "{}", escape.stdout);
}

#[test]
fn a_write_outside_the_write_prefixes_is_refused() {
    let t = Tree::new();
    let grant = "grant [fs: [read: ['/'], write: ['cwd:']]]";
    let control = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'echo x > made; mkdir d; echo y > d/f' }}"),
    );
    assert!(control.ok(), "{}", control.message());
    assert!(t.ws().join("d/f").exists());
    let target = t.root.join("outside/f");
    let escape = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'echo x > {}' }}", target.display()),
    );
    assert!(!escape.ok());
    assert!(!target.exists(), "the write landed");
    // Truncation and removal are writes too.
    let trunc = run_in(
        &t.ws(),
        &format!("{grant} {{ truncate -s 0 {} }}", t.p("outside/secret")),
    );
    assert!(!trunc.ok());
    let rm = run_in(
        &t.ws(),
        &format!("{grant} {{ rm {} }}", t.p("outside/secret")),
    );
    assert!(!rm.ok());
    assert_eq!(
        std::fs::read_to_string(t.root.join("outside/secret")).unwrap(),
        "secret\n"
    );
}

#[test]
fn a_deny_carve_out_holds_against_a_child() {
    let t = Tree::new();
    std::fs::create_dir_all(t.ws().join("keys")).unwrap();
    std::fs::create_dir_all(t.ws().join("src")).unwrap();
    std::fs::write(t.ws().join("keys/k"), "key\n").unwrap();
    let grant = "grant [fs: [read: ['cwd:'], write: ['cwd:'], deny: ['cwd:keys']]]";
    // The directory holding the carve-out keeps its other entries (new
    // names directly beside the carve-out are the documented limit).
    let control = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'cat file; echo z > src/new; cat src/new; echo w > file' }}"),
    );
    assert_eq!(control.stdout, "inside\nz\n", "{}", control.message());
    let escape = run_in(&t.ws(), &format!("{grant} {{ cat keys/k }}"));
    assert!(!escape.ok());
    assert!(!escape.stdout.contains("key"), "{}", escape.stdout);
}

#[test]
fn an_admitted_shell_cannot_start_an_unadmitted_program() {
    let t = Tree::new();
    let control = run_in(
        &t.ws(),
        "grant [exec: [sh: 'allow', cat: 'allow']] { sh -c 'cat file' }",
    );
    assert_eq!(control.stdout, "inside\n", "{}", control.message());
    let escape = run_in(
        &t.ws(),
        "grant [exec: [sh: 'allow', cat: 'allow']] { sh -c 'ls /' }",
    );
    assert!(!escape.ok());
    assert!(escape.stdout.is_empty(), "{}", escape.stdout);
    assert!(
        escape.stderr.contains("Permission denied"),
        "{}",
        escape.stderr
    );
    // Through a copy of an admitted program under another name: the kernel
    // judges the file's path, not its contents.
    let copy = run_in(
        &t.ws(),
        "grant [exec: [sh: 'allow', cp: 'allow'], fs: [read: ['/'], write: ['cwd:']]] { sh -c 'cp /bin/sh ./mysh && ./mysh -c \"echo escaped\"' }",
    );
    assert!(!copy.ok());
    assert!(!copy.stdout.contains("escaped"), "{}", copy.stdout);
}

#[test]
fn a_vetoed_name_in_an_admitted_directory_cannot_run_from_a_child() {
    let t = Tree::new();
    let control = run_in(
        &t.ws(),
        "grant [exec: ['path:': 'allow', tac: 'deny']] { sh -c 'cat file' }",
    );
    assert_eq!(control.stdout, "inside\n", "{}", control.message());
    let escape = run_in(
        &t.ws(),
        "grant [exec: ['path:': 'allow', cat: 'deny']] { sh -c 'cat file' }",
    );
    assert!(!escape.ok());
    assert!(escape.stdout.is_empty(), "{}", escape.stdout);
}

/// Accepts one connection or datagram within a short wait.
fn received_tcp(l: &TcpListener) -> bool {
    l.set_nonblocking(true).unwrap();
    for _ in 0..40 {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = String::new();
            s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let _ = s.read_to_string(&mut buf);
            return buf == "probe";
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    false
}

#[test]
fn no_tcp_connection_to_a_local_listener_under_net_false() {
    let t = Tree::new();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let control = run_in(
        &t.ws(),
        &format!("grant [net: true] {{ {PROBE} tcp {addr} }}"),
    );
    assert_eq!(control.stdout, "ok\n", "{}", control.message());
    assert!(received_tcp(&l), "the control connection did not arrive");
    let escape = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} tcp {addr} }}"),
    );
    assert!(!escape.ok());
    assert!(escape.stdout.starts_with("refused:"), "{}", escape.stdout);
    assert!(!received_tcp(&l), "a connection arrived under net: false");
    // A grandchild shell gets no further.
    let nested = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ sh -c 'sh -c \"{PROBE} tcp {addr}\"' }}"),
    );
    assert!(!nested.ok());
    assert!(!received_tcp(&l));
}

#[test]
fn no_udp_datagram_leaves_under_net_false() {
    let t = Tree::new();
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let addr = s.local_addr().unwrap();
    let mut buf = [0u8; 16];
    let control = run_in(&t.ws(), &format!("{PROBE} udp {addr}"));
    assert_eq!(control.stdout, "ok\n", "{}", control.message());
    assert_eq!(s.recv(&mut buf).ok(), Some(5));
    let escape = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} udp {addr} }}"),
    );
    assert!(!escape.ok());
    assert!(escape.stdout.starts_with("refused:"), "{}", escape.stdout);
    assert!(
        s.recv(&mut buf).is_err(),
        "a datagram arrived under net: false"
    );
}

#[test]
fn no_unix_socket_to_the_host_under_net_false() {
    let t = Tree::new();
    let path = t.root.join("host.sock");
    let l = UnixListener::bind(&path).unwrap();
    l.set_nonblocking(true).unwrap();
    let control = run_in(&t.ws(), &format!("{PROBE} unix {}", path.display()));
    assert_eq!(control.stdout, "ok\n", "{}", control.message());
    assert!(l.accept().is_ok());
    let escape = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} unix {} }}", path.display()),
    );
    assert!(!escape.ok());
    assert!(escape.stdout.starts_with("refused:"), "{}", escape.stdout);
    assert!(
        l.accept().is_err(),
        "a Unix connection arrived under net: false"
    );
}

#[test]
fn loader_injection_variables_do_not_reach_a_confined_child() {
    let t = Tree::new();
    let show = "sh -c 'echo \"[$LD_PRELOAD][$LD_AUDIT][$LD_LIBRARY_PATH][$KEEP]\"'";
    let env =
        "within [env: [LD_PRELOAD: '', LD_AUDIT: 'a', LD_LIBRARY_PATH: '/nowhere', KEEP: 'k']]";
    let control = run_in(&t.ws(), &format!("{env} {{ {show} }}"));
    assert_eq!(
        control.stdout,
        "[][a][/nowhere][k]\n",
        "{}",
        control.message()
    );
    let confined = run_in(
        &t.ws(),
        &format!("{env} {{ grant [fs: [read: ['/'], write: []]] {{ {show} }} }}"),
    );
    assert_eq!(confined.stdout, "[][][][k]\n", "{}", confined.message());
}

#[test]
fn the_deny_set_refuses_user_namespaces_and_kills_ptrace() {
    let t = Tree::new();
    let control = run_in(&t.ws(), &format!("{PROBE} ptrace"));
    assert_eq!(control.stdout, "ok\n", "{}", control.message());
    let escape = run_in(&t.ws(), &format!("grant [net: false] {{ {PROBE} ptrace }}"));
    // Killed by SIGSYS: 128 + 31.
    assert_eq!(escape.status(), 159, "{}", escape.message());
    assert!(
        escape.message().contains("deny-set"),
        "{}",
        escape.message()
    );
    // clone3 is refused with ENOSYS, so the C library's threads fall back
    // to clone and still start.
    let threads = run_in(&t.ws(), &format!("grant [net: false] {{ {PROBE} thread }}"));
    assert_eq!(threads.stdout, "ok 7\n", "{}", threads.message());
    let userns = run_in(&t.ws(), &format!("grant [net: false] {{ {PROBE} userns }}"));
    assert!(!userns.ok());
    assert!(
        userns.stdout.contains("Operation not permitted"),
        "{}",
        userns.stdout
    );
}

#[test]
fn a_confined_child_has_no_controlling_terminal_and_no_stray_descriptors() {
    let t = Tree::new();
    let exclusive = DESCRIPTORS.write().unwrap_or_else(|e| e.into_inner());
    // A descriptor ral holds without close-on-exec.
    let f = std::fs::File::open(t.ws().join("file")).unwrap();
    let fd = {
        use std::os::fd::AsRawFd;
        f.as_raw_fd()
    };
    rustix::io::fcntl_setfd(&f, rustix::io::FdFlags::empty()).unwrap();
    let control = run_unlocked(&t.ws(), &format!("{PROBE} fd {fd}"));
    assert_eq!(control.stdout, "open\n", "{}", control.message());
    let confined = run_unlocked(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} fd {fd} }}"),
    );
    assert_eq!(
        confined.stdout,
        "refused: closed\n",
        "{}",
        confined.message()
    );
    drop(f);
    drop(exclusive);
    // A process group of its own; through fork, a session of its own too
    // (on the thread path ral has no terminal, so neither has the child).
    let ids = |src: &str| -> Vec<i64> {
        let r = run_in(&t.ws(), src);
        r.stdout
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect()
    };
    let confined = ids(&format!("grant [net: false] {{ {PROBE} sid }}"));
    let plain = ids(&format!("{PROBE} sid"));
    if ral_vm::sandbox::namespaces() {
        // Pid 2 of its own pid namespace, under the launcher that leads
        // the session and the group, which lie outside the namespace.
        assert_eq!(confined, [0, 0, 2], "{confined:?}");
        return;
    }
    assert_eq!(confined[1], confined[2], "not a group leader: {confined:?}");
    if super::FORK_PATH {
        assert_eq!(
            confined[0], confined[2],
            "not a session leader: {confined:?}"
        );
    } else {
        assert_eq!(confined[0], plain[0], "{confined:?} {plain:?}");
    }
}

#[test]
fn an_admitted_directory_under_a_broader_write_prefix_is_read_only() {
    let t = Tree::new();
    std::fs::create_dir_all(t.ws().join("tools")).unwrap();
    std::fs::create_dir_all(t.ws().join("src")).unwrap();
    let grant = "grant [exec: ['cwd:tools/': 'allow', 'path:': 'allow'], fs: [read: ['/'], write: ['cwd:']]]";
    let control = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'echo x > src/made; echo y > file' }}"),
    );
    assert!(control.ok(), "{}", control.message());
    assert!(t.ws().join("src/made").exists());
    let escape = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'printf \"#!/bin/sh\\necho authored\\n\" > tools/new' }}"),
    );
    assert!(!escape.ok(), "{}", escape.stdout);
    assert!(!t.ws().join("tools/new").exists());
}

#[test]
fn a_probe_under_a_restricted_fs_still_starts() {
    // The envelope (loader, libraries, /proc) lets a program outside the
    // system directories start once its own directory is readable.
    let t = Tree::new();
    let grant = format!(
        "grant [fs: [read: ['cwd:', '{}'], write: ['cwd:']]]",
        probe_dir()
    );
    let ok = run_in(&t.ws(), &format!("{grant} {{ {PROBE} read file }}"));
    assert_eq!(ok.stdout, "inside\n", "{}", ok.message());
    let refused = run_in(
        &t.ws(),
        &format!("{grant} {{ {PROBE} read {} }}", t.p("outside/secret")),
    );
    assert!(refused.stdout.starts_with("refused:"), "{}", refused.stdout);
}

/// Every case above again as an unprivileged user, when the suite runs as
/// root (as CI does): this test binary re-runs itself under `setpriv`
/// (util-linux) as `nobody`, so the sandbox is shown to hold where the
/// user has no privilege to lose and, on the namespace layer, builds its
/// view inside an unprivileged user namespace.
#[test]
fn every_case_holds_for_an_unprivileged_user_too() {
    if std::env::var_os("RAL_SANDBOX_AS_USER").is_some() {
        return;
    }
    // SAFETY: geteuid takes no arguments.
    #[allow(unsafe_code)]
    let root = unsafe { libc::geteuid() == 0 };
    if !root {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // The unprivileged user's own temporary directory.
    std::fs::set_permissions(
        scratch.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args(["sandbox_cases::", "--test-threads=2"])
        .env("RAL_SANDBOX_AS_USER", "1")
        .env("TMPDIR", scratch.path())
        .env("HOME", scratch.path())
        .output()
        .expect("setpriv (util-linux) runs the suite as nobody");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "as nobody:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("test result: ok"), "{text}");
}
