//! Signals against the `ral` binary (spec §8.10, spec/host.md §2): each
//! test starts a real `ral` process, waits until its program says it has
//! started, sends a signal from outside and checks how the run ends: its
//! status, what it reported, and that it ended promptly. The time limits
//! are generous (the machine is shared); the real latencies are measured
//! by `signal_latency` and quoted in the closing note, not asserted here.

#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// The longest a signalled run may take to end in these tests.
const PROMPT_END: Duration = Duration::from_secs(2);

/// A `ral -c` run in progress.
struct Run {
    child: Child,
    out: BufReader<ChildStdout>,
}

/// Starts `ral -c prog` in `dir` (standard input closed, not a terminal)
/// and waits until the program writes the line `started`.
fn start_in(prog: &str, dir: Option<&std::path::Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ral"));
    cmd.args(["-c", prog])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().expect("ral starts");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "started\n", "{prog}: the program did not start");
    Run { child, out }
}

fn start(prog: &str) -> Run {
    start_in(prog, None)
}

impl Run {
    /// Sends `sig` to the ral process.
    fn send(&self, sig: Signal) {
        let pid = Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        kill_process(pid, sig).unwrap();
    }

    /// Waits for the run to end, at most `limit` after now; its status,
    /// how long it took, its remaining standard output and its standard
    /// error.
    fn finish(mut self, limit: Duration) -> Ended {
        let since = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if since.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("ral did not end within {limit:?} of the signal");
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = since.elapsed();
        let mut out = String::new();
        self.out.read_to_string(&mut out).unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        Ended {
            status,
            took,
            out,
            err,
        }
    }
}

/// How a run ended.
struct Ended {
    status: ExitStatus,
    took: Duration,
    out: String,
    err: String,
}

impl Ended {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }
}

/// The signals a batch run maps, the status each ends it with (§8.10:
/// 128 plus the signal), and the word its report uses.
const CAUSES: [(Signal, i32, &str); 4] = [
    (Signal::INT, 130, "interrupted"),
    (Signal::TERM, 143, "terminated"),
    (Signal::HUP, 143, "terminated"),
    (Signal::QUIT, 131, "aborted"),
];

/// Issue 25 item 11: a signal's cancellation keeps its cause while the
/// program waits in `await`, `par` or `race` (it used to report
/// `interrupted`, 130, for all of them).
#[test]
fn a_signal_keeps_its_cause_while_waiting_on_workers() {
    let waits = [
        "let h = spawn { ^sleep 30 }\necho started\nawait $h",
        "echo started\npar { |x| ^sleep 30 } [1, 2] 2",
        "let a = spawn { ^sleep 30 }\nlet b = spawn { ^sleep 30 }\necho started\nrace [$a, $b]",
    ];
    for prog in waits {
        for (sig, status, word) in CAUSES {
            let run = start(prog);
            // Let the program reach its wait.
            std::thread::sleep(Duration::from_millis(150));
            run.send(sig);
            let end = run.finish(PROMPT_END);
            assert_eq!(end.code(), Some(status), "{sig:?} in {prog:?}: {}", end.err);
            assert!(end.err.contains(word), "{sig:?} in {prog:?}: {}", end.err);
        }
    }
}

/// Two values of 2^40 leaves each, built by doubling (each level shares
/// its two halves), not sharing each other's parts: comparing or
/// converting them would take hours, so only polling ends it.
fn shared_structure() -> String {
    let mut prog = String::from("let a0 = [1]\nlet b0 = [1]\n");
    for i in 1..=40 {
        let j = i - 1;
        prog.push_str(&format!(
            "let a{i} = [$a{j}, $a{j}]\nlet b{i} = [$b{j}, $b{j}]\n"
        ));
    }
    prog
}

/// Issue 20 item 1 (Ctrl-C during long builtin work) and issue 26 item
/// 5 (long pure work obeys signals): every class of long builtin work
/// ends promptly on SIGINT or SIGTERM with the signal's status. Each
/// program prints `started` right before the long work begins; without
/// polling inside the builtin each would run for minutes (or exhaust
/// memory first).
#[test]
fn long_builtin_work_ends_promptly_on_a_signal() {
    let dag = shared_structure();
    let copies = vec!["$base"; 40].join(", ");
    let cases: Vec<(&str, String)> = vec![
        // Building a huge list (the example).
        (
            "range",
            "echo started\nfor !{range 0 1000000000} { |i| return () }".into(),
        ),
        // Sorting 4 million strings.
        (
            "sort-list",
            format!(
                "let base = map {{ |i| \"key-$[$i * 7919 % 100003]\" }} !{{range 0 100000}}\n\
                 let xs = concat [{copies}]\necho started\nlet s = sort-list $xs"
            ),
        ),
        // Structural equality and `==` on shared structure.
        ("equal", format!("{dag}echo started\nequal $a40 $b40")),
        (
            "==",
            format!("{dag}echo started\nlet same = $[$a40 == $b40]"),
        ),
        (
            "contains",
            format!("{dag}echo started\ncontains [$a40] $b40"),
        ),
        ("nub", format!("{dag}echo started\nnub [$a40, $b40]")),
        // The text conversion and the JSON encoder of shared structure.
        ("str", format!("{dag}echo started\nlet s = str $a40")),
        ("echo", format!("{dag}echo started\necho $a40")),
        ("to-json", format!("{dag}echo started\nto-json $a40")),
        // String builders.
        ("repeat", "echo started\nlet s = repeat 1000000000 x".into()),
        (
            "pad-left",
            "echo started\nlet s = pad-left 1000000000 x".into(),
        ),
        // Decoding a large document, and waiting for input that never
        // comes (a pipe whose writer is silent).
        (
            "from-json",
            "let doc = \"[!{repeat 10000000 '1,'}1]\"\necho started\nlet v = from-json << $doc"
                .into(),
        ),
        ("from-line", "echo started\n^sleep 30 | from-line".into()),
    ];
    for (i, (what, prog)) in cases.iter().enumerate() {
        let (sig, status, word) = if i % 2 == 0 {
            (Signal::INT, 130, "interrupted")
        } else {
            (Signal::TERM, 143, "terminated")
        };
        let run = start(prog);
        // Let the work get going.
        std::thread::sleep(Duration::from_millis(300));
        run.send(sig);
        let end = run.finish(PROMPT_END);
        assert_eq!(end.code(), Some(status), "{what}: {}", end.err);
        assert!(end.err.contains(word), "{what}: {}", end.err);
        eprintln!("{what}: ended {:?} after the signal", end.took);
    }
}

/// Issue 20 item 1 (§8.7): `guard { ^sleep 5 } { ^rm lockfile }` sent
/// SIGTERM runs its cleanup's program, so the lock file is gone, and the
/// run still ends with 143 afterwards.
#[test]
fn a_guard_cleanup_runs_its_programs_after_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("lockfile");
    std::fs::write(&lock, "held\n").unwrap();
    let run = start_in(
        "echo started\nguard { ^sleep 5 } { ^rm lockfile; echo cleaned }\necho never",
        Some(dir.path()),
    );
    std::thread::sleep(Duration::from_millis(200));
    run.send(Signal::TERM);
    let end = run.finish(PROMPT_END);
    assert_eq!(end.code(), Some(143), "{}", end.err);
    assert!(!lock.exists(), "the cleanup's rm did not run: {}", end.err);
    assert_eq!(end.out, "cleaned\n");
    assert!(end.err.contains("terminated"), "{}", end.err);
}

/// A further signal during the cleanup ends it, even while the cleanup
/// waits on a program that ignores SIGINT and SIGTERM (it is killed after
/// the grace period).
#[test]
fn a_further_signal_ends_a_guard_cleanup() {
    let dir = tempfile::tempdir().unwrap();
    let lock = dir.path().join("lockfile");
    std::fs::write(&lock, "held\n").unwrap();
    let run = start_in(
        "echo started\nguard { ^sleep 5 } {\n  echo cleaning\n  ^sh -c 'trap \"\" TERM INT; sleep 5'\n  ^rm lockfile\n}",
        Some(dir.path()),
    );
    std::thread::sleep(Duration::from_millis(200));
    run.send(Signal::INT);
    std::thread::sleep(Duration::from_millis(300));
    run.send(Signal::INT);
    let end = run.finish(PROMPT_END);
    assert_eq!(end.code(), Some(130), "{}", end.err);
    assert_eq!(end.out, "cleaning\n");
    assert!(lock.exists(), "the cleanup ran to its end");
}
