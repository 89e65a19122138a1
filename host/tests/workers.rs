//! Workers through the public host API: `Shell::run_turn` with a surface
//! sink, the registry behind `Shell::workers`, and the shell's teardown.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ral_host::workers::{WatchStream, WorkerStatus, SHUTDOWN_GRACE};
use ral_host::*;

/// Long enough for anything these tests wait on; a bug fails the test
/// instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

/// Definitions every test session starts with.
const PRELUDE: &str = "let forever = { |n| forever $[$n + 1] }";

#[derive(Clone, Default)]
struct Events(Arc<Mutex<Vec<Value>>>);

impl Events {
    fn sink(&self) -> SurfaceSink {
        let events = self.0.clone();
        Arc::new(move |v: &Value| events.lock().unwrap().push(v.clone()))
    }

    fn get(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
}

fn shell() -> Shell {
    let mut shell = Shell::default();
    value(&mut shell, PRELUDE, None);
    shell
}

/// Runs one captured turn with `surface` as its sink.
fn turn(shell: &mut Shell, src: &str, surface: Option<SurfaceSink>) -> TurnReport {
    shell.run_turn(
        src,
        TurnRequest {
            io: TurnIo::Capture,
            surface,
            ..TurnRequest::new("<test>")
        },
    )
}

/// The value of a turn that must succeed.
fn value(shell: &mut Shell, src: &str, surface: Option<SurfaceSink>) -> Value {
    match turn(shell, src, surface) {
        TurnReport::Ran {
            result: Settled::Ok(v),
            ..
        } => v,
        other => panic!("{src:?}: {other:?}"),
    }
}

/// The failure of a turn that must fail at run time.
fn failure(shell: &mut Shell, src: &str) -> Failure {
    match turn(shell, src, None) {
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

fn bytes(v: &Value) -> Vec<u8> {
    let Value::Bytes(b) = v else {
        panic!("not bytes: {v:?}")
    };
    b.to_vec()
}

/// `[card: n]`, as the programs surface it.
fn card(n: i64) -> Value {
    Value::record(ral_vm::Record::from_entries(vec![(
        "card".to_owned(),
        Value::Int(n),
    )]))
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
    }
}

/// Waits until no registry entry is running (a listing observes nothing).
fn wait_all_settled(shell: &Shell) {
    let workers = shell.workers().clone();
    wait_for(
        || {
            workers
                .list()
                .iter()
                .all(|i| i.status != WorkerStatus::Running)
        },
        "the workers to settle",
    );
}

#[test]
fn detached_worker_cannot_outlive_turn_completion() {
    let mut shell = shell();
    let events = Events::default();
    let started = Instant::now();
    let report = shell.run_turn(
        "let server = spawn { surface [card: 0]; forever 0 }",
        TurnRequest {
            io: TurnIo::Capture,
            surface: Some(events.sink()),
            turn_limit: Some(Duration::from_secs(30)),
            detached_limit: Some(Duration::from_secs(3600)),
            ..TurnRequest::new("<tool>")
        },
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "run_turn waited for a detached worker"
    );
    assert!(matches!(
        report,
        TurnReport::Ran {
            result: Settled::Ok(_),
            status: 0,
            timed_out: false,
            ..
        }
    ));
    assert_eq!(shell.workers().running_ids(), ["w1"]);
    // The session goes on while the worker runs, and the worker's surface
    // never reached the turn's sink.
    assert_eq!(value(&mut shell, "return 2", None), Value::Int(2));
    assert!(events.get().is_empty());
    // Dropping the shell cancels the worker, within the bounded grace.
    let started = Instant::now();
    drop(shell);
    assert!(started.elapsed() < SHUTDOWN_GRACE);
}

#[test]
fn deferred_surface_replays_exactly_once_on_first_await() {
    let mut shell = shell();
    let spawning = Events::default();
    value(
        &mut shell,
        "let h = spawn { surface [card: 1]; surface [card: 2]; return 7 }",
        Some(spawning.sink()),
    );
    wait_all_settled(&shell);
    let first = Events::default();
    let r = value(&mut shell, "await $h", Some(first.sink()));
    assert_eq!(field(&r, "value"), Value::Int(7));
    assert_eq!(first.get(), [card(1), card(2)]);
    let second = Events::default();
    value(&mut shell, "await $h", Some(second.sink()));
    assert!(second.get().is_empty(), "a second await replayed");
    assert!(spawning.get().is_empty(), "the spawning turn got the cards");
}

#[test]
fn poll_does_not_replay_the_deferred_surface() {
    let mut shell = shell();
    value(
        &mut shell,
        "let h = spawn { surface [card: 3]; return 0 }",
        None,
    );
    wait_all_settled(&shell);
    let polled = Events::default();
    let p = value(&mut shell, "poll $h", Some(polled.sink()));
    let Value::Variant(p) = p else { panic!() };
    assert_eq!(&*p.tag, "settled");
    value(&mut shell, "is-done $h", Some(polled.sink()));
    assert!(polled.get().is_empty(), "poll replayed");
    let awaited = Events::default();
    value(&mut shell, "await $h", Some(awaited.sink()));
    assert_eq!(awaited.get(), [card(3)]);
}

#[test]
fn watch_keeps_streaming_after_its_turn_returned() {
    let mut shell = shell();
    let lines: Arc<Mutex<Vec<(WatchStream, String)>>> = Arc::default();
    let out = lines.clone();
    shell
        .workers()
        .set_watch_output(Some(Arc::new(move |s: WatchStream, line: &[u8]| {
            out.lock()
                .unwrap()
                .push((s, String::from_utf8_lossy(line).into_owned()));
        })));
    value(&mut shell, "let gate = spawn { forever 0 }", None);
    value(
        &mut shell,
        "let w = watch 'srv' { echo up; try { let r = await $gate; return () } { |e| return () }; echo still; return 1 }",
        None,
    );
    wait_for(|| lines.lock().unwrap().len() == 1, "the first line");
    // The watched worker blocks on `gate` until a later turn cancels it;
    // its next line then arrives with no turn running.
    value(&mut shell, "cancel $gate", None);
    wait_for(
        || lines.lock().unwrap().len() == 2,
        "the line after the turn",
    );
    assert_eq!(
        *lines.lock().unwrap(),
        [
            (WatchStream::Stdout, "[srv] up\n".to_owned()),
            (WatchStream::Stdout, "[srv] still\n".to_owned()),
        ]
    );
    let r = value(&mut shell, "await $w", None);
    assert_eq!(field(&r, "value"), Value::Int(1));
    assert!(bytes(&field(&r, "stdout")).is_empty());
}

#[test]
fn worker_bytes_stay_out_of_the_turn_capture() {
    let mut shell = shell();
    let report = turn(&mut shell, "let h = spawn { echo hidden; return 1 }", None);
    let TurnReport::Ran {
        captured: Some(c), ..
    } = report
    else {
        panic!("{report:?}")
    };
    assert!(c.stdout.is_empty());
    let r = value(&mut shell, "await $h", None);
    assert_eq!(bytes(&field(&r, "stdout")), b"hidden\n");
}

#[test]
fn await_reraises_and_race_cancel_par_is_done_behave() {
    let mut shell = shell();
    value(
        &mut shell,
        "let bad = spawn { fail [status: 9, message: 'broke'] }",
        None,
    );
    let f = failure(&mut shell, "await $bad");
    assert_eq!((f.status, f.message.as_str()), (9, "broke"));

    value(
        &mut shell,
        "let slow = spawn { forever 0 }\nlet quick = spawn { return 'won' }",
        None,
    );
    let r = value(&mut shell, "race [$slow, $quick]", None);
    assert_eq!(field(&r, "value"), Value::str("won"));
    let f = failure(&mut shell, "await $slow");
    assert!(
        f.message.starts_with("handle is cancelled"),
        "{}",
        f.message
    );

    value(&mut shell, "let c = spawn { forever 0 }", None);
    assert_eq!(value(&mut shell, "is-done $c", None), Value::Bool(false));
    value(&mut shell, "cancel $c", None);
    assert!(failure(&mut shell, "is-done $c")
        .message
        .starts_with("handle is cancelled"));

    let v = value(
        &mut shell,
        "par { |x| return $[$x * $x] } [1, 2, 3, 4] 2",
        None,
    );
    assert_eq!(v, Value::list([1, 4, 9, 16].map(Value::Int).to_vec()));
    wait_for(
        || shell.workers().seats_taken() == 0,
        "cancelled workers to stop",
    );
}

#[test]
fn worker_output_is_capped_with_one_marker() {
    let mut shell = shell();
    shell.workers().set_output_cap(8);
    value(
        &mut shell,
        "let h = spawn { echo 'abcdefghijkl'; echo 'more'; return 0 }",
        None,
    );
    let out = bytes(&field(&value(&mut shell, "await $h", None), "stdout"));
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with("abcdefgh\n[ral: worker output truncated"),
        "{text}"
    );
    assert_eq!(text.matches("truncated").count(), 1);
    assert!(!text.contains("more"));
}

#[test]
fn the_worker_cap_refuses_a_birth_past_it() {
    let mut shell = shell();
    shell.workers().set_worker_cap(Some(1));
    value(&mut shell, "let a = spawn { forever 0 }", None);
    let f = failure(&mut shell, "spawn { return 1 }");
    assert!(f.message.contains("worker seats"), "{}", f.message);
    value(&mut shell, "cancel $a", None);
    wait_for(|| shell.workers().seats_taken() == 0, "the seat to free");
    value(&mut shell, "let b = spawn { return 1 }", None);
}

#[test]
fn the_detached_limit_of_a_turn_reaps_its_workers() {
    let mut shell = shell();
    let report = shell.run_turn(
        "let h = spawn { forever 0 }",
        TurnRequest {
            detached_limit: Some(Duration::from_millis(50)),
            ..TurnRequest::new("<tool>")
        },
    );
    assert_eq!(report.status(), 0);
    let workers = shell.workers().clone();
    let mut notices = Vec::new();
    wait_for(
        || {
            notices.extend(workers.take_reap_notices());
            !notices.is_empty()
        },
        "the backstop",
    );
    assert_eq!(notices[0].worker, "w1");
    let f = failure(&mut shell, "await $h");
    assert!(f.message.contains("detached limit"), "{}", f.message);
}
