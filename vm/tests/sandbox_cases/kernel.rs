//! What a confined program does itself, beyond reads, writes and
//! launches: the classes Landlock and seccomp alone left open (issue 22),
//! each attempt beside a control that shows the same program works where
//! the grant allows it. The namespace layer holds every class; where the
//! floor alone (Landlock and seccomp, `FLOOR`) holds one only for an
//! unprivileged user or not at all, the case says so and asserts what the
//! floor guarantees (spec/capabilities.md section 6).

use super::*;

fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid() == 0
    }
}

fn ns() -> bool {
    ral_vm::sandbox::namespaces()
}

fn refused(r: &Ran) -> bool {
    !r.ok() && r.stdout.contains("refused")
}

/// Class 5: another process's environment, memory map and auxiliary
/// vector.
#[test]
fn another_processs_environment_is_out_of_reach() {
    let t = Tree::new();
    let me = std::process::id();
    let own = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} read /proc/self/environ }}"),
    );
    assert!(own.ok(), "{}", own.message());
    for what in ["environ", "maps", "auxv"] {
        let escape = run_in(
            &t.ws(),
            &format!("grant [net: false] {{ {PROBE} read /proc/{me}/{what} }}"),
        );
        if ns() || !is_root() {
            assert!(refused(&escape), "{what}: {}", escape.stdout);
        }
    }
    if ns() {
        // Its own pid namespace: the host's processes are not there.
        let table = run_in(
            &t.ws(),
            "grant [net: false] { sh -c 'ls /proc | grep -c \"^[0-9]\"' }",
        );
        let n: u32 = table.stdout.trim().parse().unwrap();
        assert!(n < 10, "{n} processes visible");
    }
}

/// Class 6: attributes of files outside the write grant.
#[test]
fn attributes_outside_the_write_grant_cannot_change() {
    let t = Tree::new();
    let grant = "grant [fs: [read: ['/'], write: ['cwd:']]]";
    let secret = t.p("outside/secret");
    for op in ["chmod", "utimes", "setxattr"] {
        let control = run_in(&t.ws(), &format!("{grant} {{ {PROBE} {op} file }}"));
        assert!(
            control.ok(),
            "{op}: {} {}",
            control.stdout,
            control.message()
        );
        let before = std::fs::metadata(&secret).unwrap().modified().unwrap();
        let escape = run_in(&t.ws(), &format!("{grant} {{ {PROBE} {op} {secret} }}"));
        if ns() {
            assert!(refused(&escape), "{op}: {}", escape.stdout);
            assert!(
                escape.stdout.contains("Read-only"),
                "{op}: {}",
                escape.stdout
            );
            assert_eq!(
                std::fs::metadata(&secret).unwrap().modified().unwrap(),
                before
            );
        }
    }
}

/// Class 7: device nodes.
#[test]
fn no_device_node_can_be_made() {
    let t = Tree::new();
    let grant = "grant [fs: [read: ['/'], write: ['cwd:']]]";
    let control = run_in(&t.ws(), &format!("{grant} {{ mkfifo pipe }}"));
    assert!(control.ok(), "{}", control.message());
    let escape = run_in(&t.ws(), &format!("{grant} {{ {PROBE} mknod dev }}"));
    assert!(refused(&escape), "{}", escape.stdout);
    assert!(!t.ws().join("dev").exists());
    // Also where the grant restricts only the network.
    let offline = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} mknod dev2 }}"),
    );
    assert!(refused(&offline), "{}", offline.stdout);
}

/// Class 8: watching a directory the grant does not show.
#[test]
fn no_inotify_watch_outside_the_grant() {
    let t = Tree::new();
    let grant = format!(
        "grant [fs: [read: ['cwd:', '{}'], write: ['cwd:']]]",
        probe_dir()
    );
    let escape = run_in(
        &t.ws(),
        &format!("{grant} {{ {PROBE} inotify {} }}", t.p("outside")),
    );
    assert!(refused(&escape), "{} {}", escape.stdout, escape.message());
    if ns() {
        let control = run_in(&t.ws(), &format!("{grant} {{ {PROBE} inotify . }}"));
        assert!(control.ok(), "{} {}", control.stdout, control.message());
    }
}

/// Class 9: an anonymous file executed past the `exec` grant.
#[test]
fn an_anonymous_file_cannot_run_past_the_exec_grant() {
    let t = Tree::new();
    let echo = std::fs::canonicalize("/bin/echo").unwrap();
    let echo = echo.display();
    // Control: with no `exec` grant the same program runs.
    let control = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} memfd-exec {echo} ran }}"),
    );
    assert_eq!(control.stdout, "ran\n", "{}", control.message());
    let escape = run_in(
        &t.ws(),
        &format!("grant [exec: ['{PROBE}': 'allow']] {{ {PROBE} memfd-exec {echo} ran }}"),
    );
    assert!(refused(&escape), "{}", escape.stdout);
}

/// Class 10: the explicit loader and `LD_PRELOAD` at a second hop.
#[test]
fn the_loader_maps_only_what_the_exec_grant_admits() {
    let t = Tree::new();
    let sh = std::fs::canonicalize("/bin/sh").unwrap();
    let loader = ral_vm::sandbox::plan::elf_interpreter(&sh).unwrap();
    let loader = loader.display();
    let admit = "exec: [sh: 'allow', cat: 'allow']";
    let control = run_in(
        &t.ws(),
        &format!("grant [{admit}] {{ sh -c '{loader} /bin/cat file' }}"),
    );
    assert_eq!(control.stdout, "inside\n", "{}", control.message());
    let escape = run_in(
        &t.ws(),
        &format!("grant [{admit}] {{ sh -c '{loader} /bin/ls /' }}"),
    );
    // A deny in an admitted directory, passed through the loader.
    let vetoed = run_in(
        &t.ws(),
        &format!(
            "grant [exec: ['path:': 'allow', cat: 'deny']] {{ sh -c '{loader} /bin/cat file' }}"
        ),
    );
    // A library the grant does not admit, preloaded by an admitted
    // program started by an admitted shell.
    let lib = std::fs::canonicalize(format!("/proc/{}/exe", std::process::id())).unwrap();
    let _ = lib;
    let libm = [
        "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6",
    ]
    .into_iter()
    .find(|p| Path::new(p).exists());
    if ns() {
        assert!(
            !escape.ok() && escape.stdout.is_empty(),
            "{}",
            escape.stdout
        );
        assert!(
            !vetoed.ok() && vetoed.stdout.is_empty(),
            "{}",
            vetoed.stdout
        );
        if let Some(libm) = libm {
            std::fs::copy(libm, t.ws().join("evil.so")).unwrap();
            let grant = format!("grant [fs: [read: ['/'], write: ['cwd:']], {admit}]");
            let fine = run_in(
                &t.ws(),
                &format!("{grant} {{ sh -c 'LD_PRELOAD={libm} cat file' }}"),
            );
            assert_eq!(fine.stdout, "inside\n", "{}", fine.message());
            assert!(
                !fine.stderr.contains("cannot be preloaded"),
                "{}",
                fine.stderr
            );
            let evil = run_in(
                &t.ws(),
                &format!("{grant} {{ sh -c 'LD_PRELOAD=./evil.so cat file' }}"),
            );
            assert!(
                evil.stderr.contains("cannot be preloaded"),
                "{}",
                evil.stderr
            );
        }
    }
}

/// Class 11: a `deny` naming a path absent at launch.
#[test]
fn a_denied_path_absent_at_launch_cannot_be_created() {
    let t = Tree::new();
    std::fs::create_dir_all(t.ws().join("sub")).unwrap();
    std::fs::create_dir_all(t.ws().join("open")).unwrap();
    let grant =
        "grant [fs: [read: ['cwd:'], write: ['cwd:'], deny: ['cwd:later', 'cwd:sub/deep/er']]]";
    // Existing files stay writable and other directories take new files;
    // only the directories on the way to the absent name take none.
    let control = run_in(
        &t.ws(),
        &format!("{grant} {{ sh -c 'echo y > file; echo z > open/new; cat file open/new' }}"),
    );
    assert_eq!(control.stdout, "y\nz\n", "{}", control.message());
    for attempt in [
        "echo x > later",
        "mkdir later",
        "mkdir -p sub/deep/er",
        "ln -s file later",
    ] {
        let escape = run_in(&t.ws(), &format!("{grant} {{ sh -c '{attempt}' }}"));
        assert!(!escape.ok(), "{attempt}");
    }
    assert!(!t.ws().join("later").exists());
    assert!(!t.ws().join("sub/deep").exists());
}

/// Class 12: another process's SysV shared memory, and the host's name.
#[test]
fn host_ipc_and_the_host_name_are_out_of_reach() {
    let t = Tree::new();
    let key = 0x5a00_0000 | (std::process::id() & 0xffff) as i32;
    // SAFETY: a private segment of 64 bytes, written and removed here.
    #[allow(unsafe_code)]
    let id = unsafe {
        let id = libc::shmget(key, 64, libc::IPC_CREAT | 0o644);
        assert!(id >= 0, "shmget: {}", std::io::Error::last_os_error());
        let p = libc::shmat(id, std::ptr::null(), 0);
        std::ptr::copy_nonoverlapping(b"hostdata\0".as_ptr(), p.cast::<u8>(), 9);
        libc::shmdt(p);
        id
    };
    let control = run_in(&t.ws(), &format!("{PROBE} shm {key}"));
    let escape = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} shm {key} }}"),
    );
    // SAFETY: removes the segment made above.
    #[allow(unsafe_code)]
    unsafe {
        libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
    }
    assert_eq!(control.stdout, "hostdata\n", "{}", control.message());
    assert!(refused(&escape), "{}", escape.stdout);
    let name = run_in(
        &t.ws(),
        &format!("grant [net: false] {{ {PROBE} hostname }}"),
    );
    assert!(refused(&name), "{}", name.stdout);
    if is_root() {
        // Control: the same call works for root outside a grant (it sets
        // the name to what it already is).
        let control = run_in(&t.ws(), &format!("{PROBE} hostname"));
        assert!(control.ok(), "{}", control.stdout);
    }
}
