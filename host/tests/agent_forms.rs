//! The agent forms of spec §11.5 (`service`, `service-handle`, `detach`)
//! through the public host API, the shell's teardown order, and `watch`
//! lines following the ambient streams.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::wildcard_enum_match_arm
)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ral_host::workers::WorkerStatus;
use ral_host::*;

/// Long enough for anything these tests wait on; a bug fails the test
/// instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

const PRELUDE: &str = "let forever = { |n| forever $[$n + 1] }";

fn shell_with(forms: AgentForms) -> Shell {
    let mut shell = Shell::new();
    shell.enable_agent_forms(forms).unwrap();
    value(&mut shell, PRELUDE);
    shell
}

fn shell() -> Shell {
    shell_with(AgentForms::default())
}

fn turn_with(shell: &mut Shell, src: &str, req: TurnRequest<'_>) -> TurnReport {
    shell.run_turn(
        src,
        TurnRequest {
            io: TurnIo::Capture,
            ..req
        },
    )
}

fn value(shell: &mut Shell, src: &str) -> Value {
    match turn_with(shell, src, TurnRequest::new("<test>")) {
        TurnReport::Ran {
            result: Settled::Ok(v),
            ..
        } => v,
        other => panic!("{src:?}: {other:?}"),
    }
}

fn failure(shell: &mut Shell, src: &str) -> Failure {
    failure_with(shell, src, TurnRequest::new("<test>"))
}

fn failure_with(shell: &mut Shell, src: &str, req: TurnRequest<'_>) -> Failure {
    match turn_with(shell, src, req) {
        TurnReport::Ran {
            result: Settled::Failed(f),
            ..
        } => f,
        other => panic!("{src:?}: {other:?}"),
    }
}

fn field(v: &Value, key: &str) -> Value {
    let Value::Record(r) = v else {
        panic!("not a record: {v:?}")
    };
    r.get(key).cloned().unwrap()
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A fresh scratch directory under the system's temporary directory.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ral-agent-forms-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir.canonicalize().unwrap())
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The pid a program wrote to `name`, once it has.
    fn pid(&self, name: &str) -> i32 {
        let p = self.path(name);
        let mut pid = None;
        wait_for(
            || {
                pid = std::fs::read_to_string(&p)
                    .ok()
                    .and_then(|s| s.trim().parse::<i32>().ok());
                pid.is_some()
            },
            "a pid file",
        );
        pid.unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The fields of `/proc/PID/stat` after the command name (state first),
/// or `None` when the process is gone.
fn stat(pid: i32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Running (not gone, not a zombie).
fn alive(pid: i32) -> bool {
    stat(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z"))
}

/// Kills a process a test left running, and waits until it is gone.
struct Survivor(i32);

impl Drop for Survivor {
    fn drop(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.0) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
        let start = Instant::now();
        while alive(self.0) && start.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

fn ral_str(p: &Path) -> String {
    format!("'{}'", p.display())
}

// ---- service ----

#[test]
fn a_service_is_exempt_from_the_idle_lease() {
    let mut shell = shell();
    shell
        .workers()
        .set_idle_lease(Some(Duration::from_millis(30)));
    value(
        &mut shell,
        "let s = service 'the durable one' { forever 0 }\nlet h = spawn { forever 0 }",
    );
    // The ordinary worker is reaped by its lease; the service is not.
    wait_for(
        || {
            shell.workers().sweep();
            shell
                .workers()
                .take_reap_notices()
                .iter()
                .any(|n| n.worker == "w2")
        },
        "the spawn worker's idle reap",
    );
    std::thread::sleep(Duration::from_millis(100));
    shell.workers().sweep();
    assert!(shell.workers().take_reap_notices().is_empty());
    let list = shell.workers().list();
    let svc = list.iter().find(|w| w.id == "w1").unwrap();
    assert_eq!(svc.class, "service");
    assert_eq!(svc.description, "the durable one");
    assert_eq!(svc.status, WorkerStatus::Running);
    value(&mut shell, "cancel $s");
    assert!(shell.workers().list().iter().all(|w| w.id != "w1"));
}

#[test]
fn a_service_is_exempt_from_the_detached_limit() {
    let mut shell = shell();
    let req = || TurnRequest {
        detached_limit: Some(Duration::from_millis(30)),
        ..TurnRequest::new("<test>")
    };
    let src = "let s = service 'server' { forever 0 }\nlet h = spawn { forever 0 }";
    match turn_with(&mut shell, src, req()) {
        TurnReport::Ran {
            result: Settled::Ok(_),
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    wait_for(
        || {
            shell.workers().sweep();
            shell
                .workers()
                .take_reap_notices()
                .iter()
                .any(|n| n.worker == "w2" && n.to_string().contains("detached limit"))
        },
        "the spawn worker's backstop",
    );
    std::thread::sleep(Duration::from_millis(100));
    shell.workers().sweep();
    assert!(shell.workers().take_reap_notices().is_empty());
    assert_eq!(shell.workers().running_ids(), vec!["w1".to_owned()]);
    // A service's own nested spawn inherits the exemption.
    value(
        &mut shell,
        "let inner = service 'parent' { let k = spawn { forever 0 }; forever 0 }",
    );
    wait_for(
        || shell.workers().running_ids().len() == 3,
        "the nested spawn",
    );
    std::thread::sleep(Duration::from_millis(100));
    shell.workers().sweep();
    assert!(shell.workers().take_reap_notices().is_empty());
}

#[test]
fn a_service_takes_a_seat() {
    let mut shell = shell();
    shell.workers().set_worker_cap(Some(1));
    value(&mut shell, "let s = service 'one' { forever 0 }");
    let f = failure(&mut shell, "let h = spawn { return 1 }");
    assert!(f.message.contains("worker seats are taken"), "{f}");
    let f = failure(&mut shell, "let t = service 'two' { return 1 }");
    assert!(f.message.contains("worker seats are taken"), "{f}");
    assert_eq!(f.cmd.as_deref(), Some("service"));
    value(&mut shell, "cancel $s");
}

#[test]
fn a_service_description_is_one_non_empty_line() {
    let mut shell = shell();
    for src in [
        "service '' { return 1 }",
        "service '   ' { return 1 }",
        "service \"two\\nlines\" { return 1 }",
    ] {
        let f = failure(&mut shell, src);
        assert!(
            f.message.contains("non-empty text on one line"),
            "{src}: {f}"
        );
        assert_eq!(f.cmd.as_deref(), Some("service"));
    }
    assert!(shell.workers().list().is_empty());
}

#[test]
fn a_service_ends_on_cancel_and_its_await_says_so() {
    let mut shell = shell();
    value(&mut shell, "let s = service 'x' { forever 0 }");
    value(&mut shell, "cancel $s");
    let f = failure(&mut shell, "await $s");
    assert!(f.message.contains("handle is cancelled"), "{f}");
}

#[test]
fn service_handle_recovers_a_service_by_id() {
    let mut shell = shell();
    value(
        &mut shell,
        "let s = service 'answer' { return 42 }\nlet h = spawn { forever 0 }",
    );
    wait_for(
        || {
            shell
                .workers()
                .list()
                .iter()
                .any(|w| w.id == "w1" && w.status == WorkerStatus::Settled)
        },
        "the service to settle",
    );
    // A fresh binding holds the same worker: awaiting it gets the result.
    let v = value(
        &mut shell,
        "let again = service-handle 'w1'\nlet r = await $again\nreturn $r[value]",
    );
    assert_eq!(v, Value::Int(42));
    // Observed: it left the registry, so the id no longer recovers it.
    let f = failure(&mut shell, "service-handle 'w1'");
    assert!(f.message.contains("no service w1"), "{f}");
    assert_eq!(f.cmd.as_deref(), Some("service-handle"));
    let f = failure(&mut shell, "service-handle 'w2'");
    assert!(f.message.contains("not a service"), "{f}");
    let f = failure(&mut shell, "service-handle 'w99'");
    assert!(f.message.contains("no service w99"), "{f}");
    for bad in ["x1", "w", "w+1", "1"] {
        let f = failure(&mut shell, &format!("service-handle '{bad}'"));
        assert!(f.message.contains("not a worker id"), "{bad}: {f}");
    }
    value(&mut shell, "cancel $h");
}

#[test]
fn a_running_service_is_recovered_and_cancelled_through_its_id() {
    let mut shell = shell();
    value(&mut shell, "let s = service 'server' { forever 0 }");
    value(&mut shell, "let again = service-handle 'w1'\ncancel $again");
    assert!(shell.workers().running_ids().is_empty());
    let f = failure(&mut shell, "await $s");
    assert!(f.message.contains("handle is cancelled"), "{f}");
}

#[test]
fn the_forms_are_absent_until_enabled() {
    // §11.5: a form the host does not install is absent from its base
    // scope, checked and resolved like any unknown command: a block is
    // no argument of a program, and a name no program has is not found.
    let mut shell = Shell::new();
    let r = turn_with(
        &mut shell,
        "service 'x' { return 1 }",
        TurnRequest::new("<test>"),
    );
    assert!(
        matches!(&r, TurnReport::Static { diagnostics } if diagnostics.status == 1),
        "{r:?}"
    );
    let f = failure(&mut shell, "service-handle 'w1'");
    assert_eq!(f.status, 127, "{f}");
    // `detach` is then an ordinary command name, looked up on PATH.
    let f = failure(&mut shell, "detach 'x' true");
    assert_eq!(f.status, 127, "{f}");
    // A zero budget leaves `detach` out too.
    let mut shell = shell_with(AgentForms {
        detach_births: 0,
        ..AgentForms::default()
    });
    let f = failure(&mut shell, "detach 'x' true");
    assert_eq!(f.status, 127, "{f}");
    assert_eq!(shell.workers().detach_births(), (0, 0));
}

// ---- detach ----

#[test]
fn detach_starts_a_survivor_in_a_session_of_its_own() {
    let dir = Scratch::new("survivor");
    let mut shell = shell();
    let src = format!(
        "within [dir: {d}, env: [RAL_DETACH_MARK: 'marked']] {{\n\
         detach 'a sleeper' sh -c 'echo $$ > pid; exec sleep 30'\n\
         }}",
        d = ral_str(&dir.0)
    );
    value(&mut shell, &src);
    let pid = dir.pid("pid");
    let _cleanup = Survivor(pid);
    assert!(alive(pid));
    // The shell wrote its pid and then execs `sleep`: read the process
    // once the exec is done (during it, /proc/PID/environ can read empty).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .as_deref()
        != Some("sleep\n")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the survivor never became sleep"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let fields = stat(pid).unwrap();
    // After the state: ppid, pgrp, session. The double fork (§11.5) has
    // reparented it at once: it is not this process's child.
    assert_ne!(
        fields[1],
        std::process::id().to_string(),
        "reparented away from the session"
    );
    assert_eq!(fields[2], pid.to_string(), "its own process group");
    assert_eq!(fields[3], pid.to_string(), "its own session");
    for fd in 0..3 {
        let target = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap();
        assert_eq!(target, Path::new("/dev/null"), "fd {fd}");
    }
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        dir.0
    );
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    assert!(environ
        .split(|b| *b == 0)
        .any(|kv| kv == b"RAL_DETACH_MARK=marked"));
    assert_eq!(shell.workers().detach_births(), (1, 16));
    // Not a worker: nothing in the registry, nothing for teardown.
    assert!(shell.workers().list().is_empty());
    drop(shell);
    assert!(alive(pid), "the detached process outlives the session");
}

// The receipt reaches the program only once the VM's `Op::Exec` keeps
// the value `exec_command` returns (vm/src/exec.rs sets `()` today); the
// receipt itself is checked at the builtin in `workers::agent`'s tests.
#[test]
fn detach_returns_its_receipt() {
    let dir = Scratch::new("receipt");
    let mut shell = shell();
    let src = format!(
        "within [dir: {d}] {{ detach 'the receipt' sh -c 'echo $$ > pid; exec sleep 30' }}",
        d = ral_str(&dir.0)
    );
    let receipt = value(&mut shell, &src);
    let pid = dir.pid("pid");
    let _cleanup = Survivor(pid);
    assert_eq!(field(&receipt, "pid"), Value::Int(i64::from(pid)));
    assert_eq!(field(&receipt, "desc"), Value::str("the receipt"));
}

#[test]
fn the_birth_budget_counts_only_successful_births() {
    let mut shell = shell_with(AgentForms {
        detach_births: 2,
        ..AgentForms::default()
    });
    let f = failure(&mut shell, "detach 'nothing' ral-no-such-program-here");
    assert_eq!(f.status, 127, "{f}");
    let f = failure(&mut shell, "detach 'no command'");
    assert!(
        f.message.contains("needs a description and a command"),
        "{f}"
    );
    let f = failure(&mut shell, "detach '' true");
    assert!(f.message.contains("non-empty text on one line"), "{f}");
    assert_eq!(shell.workers().detach_births(), (0, 2));
    value(&mut shell, "detach 'first' true");
    // Shared with the session's workers.
    value(
        &mut shell,
        "let h = spawn { detach 'second' true }\nawait $h",
    );
    assert_eq!(shell.workers().detach_births(), (2, 2));
    let f = failure(&mut shell, "detach 'third' true");
    assert!(f.message.contains("budget is spent: 2 of 2"), "{f}");
    assert_eq!(f.cmd.as_deref(), Some("detach"));
    assert_eq!(shell.workers().detach_births(), (2, 2));
    // Enabling again changes the budget, never the births.
    shell
        .enable_agent_forms(AgentForms {
            detach_births: 3,
            ..AgentForms::default()
        })
        .unwrap();
    value(&mut shell, "detach 'third' true");
    assert_eq!(shell.workers().detach_births(), (3, 3));
}

#[test]
fn a_grant_saying_detach_false_refuses_the_birth() {
    let mut shell = shell();
    let f = failure(&mut shell, "grant [detach: false] { detach 'x' true }");
    assert!(f.message.contains("denied by grant: detach"), "{f}");
    // `true` cannot widen an outer `false`.
    let f = failure(
        &mut shell,
        "grant [detach: false] { grant [detach: true] { detach 'x' true } }",
    );
    assert!(f.message.contains("denied by grant: detach"), "{f}");
    // A host layer is a grant layer too, and so are a worker's.
    let caps = Capabilities::root().with_layer(Layer {
        detach: Some(false),
        ..Layer::default()
    });
    let f = failure_with(
        &mut shell,
        "detach 'x' true",
        TurnRequest {
            caps: caps.clone(),
            ..TurnRequest::new("<test>")
        },
    );
    assert!(f.message.contains("denied by grant: detach"), "{f}");
    let f = failure(
        &mut shell,
        "grant [detach: false] { let h = spawn { detach 'x' true }; await $h }",
    );
    assert!(f.message.contains("denied by grant: detach"), "{f}");
    assert_eq!(shell.workers().detach_births(), (0, 16));
    value(&mut shell, "grant [detach: true] { detach 'x' true }");
    assert_eq!(shell.workers().detach_births(), (1, 16));
}

#[test]
fn detach_refuses_a_head_a_handler_would_intercept() {
    let mut shell = shell();
    for src in [
        "within [handlers: [sleep: { |args| echo 'not really' }]] { detach 'x' sleep 1 }",
        "within [handler: { |name args| echo $name }] { detach 'x' sleep 1 }",
        "detach 'x' echo hi",
        "detach 'x' detach 'y' true",
    ] {
        let f = failure(&mut shell, src);
        assert!(f.message.contains("cannot be detached"), "{src}: {f}");
    }
    assert_eq!(shell.workers().detach_births(), (0, 16));
    // `^name` (quoted: it is an argument) and a path run the program.
    value(
        &mut shell,
        "within [handlers: [true: { |args| echo 'not really' }]] { detach 'x' '^true' }",
    );
    value(&mut shell, "detach 'x' '^echo' hi");
    value(&mut shell, "detach 'x' /bin/sh -c 'exit 0'");
    assert_eq!(shell.workers().detach_births(), (3, 16));
}

#[test]
fn an_exec_grant_judges_the_detached_program() {
    let mut shell = shell();
    let f = failure(
        &mut shell,
        "grant [exec: [sh: 'deny']] { detach 'x' sh -c 'exit 0' }",
    );
    assert!(f.message.contains("denied by grant"), "{f}");
    assert_eq!(shell.workers().detach_births(), (0, 16));
}

// ---- teardown ----

#[test]
fn teardown_terms_each_worker_group_then_kills_after_a_grace() {
    let dir = Scratch::new("teardown");
    let mut shell = shell();
    // Each program records the TERM it gets and keeps running, so only a
    // later KILL can end it.
    let program = |tag: &str| {
        format!(
            "sh -c 'trap \"echo term >> {tag}.log\" TERM; echo $$ > {tag}.pid; \
             while true; do sleep 0.02; done'"
        )
    };
    let src = format!(
        "within [dir: {d}] {{\n\
         let h = spawn {{ {spawned} }}\n\
         let s = service 'stubborn' {{ {served} }}\n\
         }}",
        d = ral_str(&dir.0),
        spawned = program("spawned"),
        served = program("served"),
    );
    value(&mut shell, &src);
    let pids = [dir.pid("spawned.pid"), dir.pid("served.pid")];
    let _cleanup: Vec<Survivor> = pids.iter().map(|p| Survivor(*p)).collect();
    assert!(pids.iter().all(|p| alive(*p)));
    let started = Instant::now();
    drop(shell);
    let took = started.elapsed();
    for (pid, tag) in pids.iter().zip(["spawned", "served"]) {
        let log = std::fs::read_to_string(dir.path(&format!("{tag}.log"))).unwrap_or_default();
        assert!(log.contains("term"), "{tag}: TERM came first: {log:?}");
        assert!(
            !alive(*pid),
            "{tag}: KILL ended it by the time drop returned"
        );
    }
    // It outlived the TERM, so the KILL came after the grace.
    assert!(took >= Duration::from_millis(150), "{took:?}");
    assert!(took < PATIENCE, "{took:?}");
}

// ---- watch and the ambient streams ----

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

#[test]
fn watch_lines_follow_the_ambient_writers() {
    let mut shell = Shell::new();
    let (out, err) = (Shared::default(), Shared::default());
    shell.set_stdout(Stdout::Writer(Box::new(out.clone())));
    shell.set_stderr(Stdout::Writer(Box::new(err.clone())));
    // A captured turn: the watch lines still go to the ambient streams.
    value(
        &mut shell,
        "let w = watch 'build' { echo compiling; warn careful; return 1 }\nawait $w",
    );
    assert_eq!(out.text(), "[build] compiling\n");
    assert_eq!(err.text(), "[build:err] careful\n");
    // An inherited turn writes there too, in order with the watch lines.
    match shell.run_turn("echo direct", TurnRequest::new("<test>")) {
        TurnReport::Ran {
            result: Settled::Ok(_),
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(out.text(), "[build] compiling\ndirect\n");
}

#[test]
fn an_ambient_buffer_comes_back_with_the_watch_lines_in_it() {
    let mut shell = Shell::new();
    shell.set_stdout(Stdout::Buffer(Vec::new()));
    match shell.run_turn(
        "echo first\nlet w = watch 'w' { echo second }\nawait $w",
        TurnRequest::new("<test>"),
    ) {
        TurnReport::Ran {
            result: Settled::Ok(_),
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    let Stdout::Buffer(b) = shell.set_stdout(Stdout::Inherit) else {
        panic!("the buffer handed in comes back as a buffer")
    };
    assert_eq!(String::from_utf8(b).unwrap(), "first\n[w] second\n");
    // Back on the process's streams, a new buffer starts empty.
    shell.set_stdout(Stdout::Buffer(Vec::new()));
    let Stdout::Buffer(b) = shell.set_stdout(Stdout::Inherit) else {
        panic!()
    };
    assert!(b.is_empty());
}

#[test]
fn a_host_watch_output_set_after_the_streams_wins() {
    let mut shell = Shell::new();
    let out = Shared::default();
    shell.set_stdout(Stdout::Writer(Box::new(out.clone())));
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = lines.clone();
    shell
        .workers()
        .set_watch_output(Some(Arc::new(move |_s, line: &[u8]| {
            seen.lock()
                .unwrap()
                .push(String::from_utf8_lossy(line).into_owned());
        })));
    value(&mut shell, "let w = watch 'l' { echo x }\nawait $w");
    assert_eq!(*lines.lock().unwrap(), vec!["[l] x\n".to_owned()]);
    assert_eq!(out.text(), "");
}
