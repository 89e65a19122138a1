//! The registry and the builtins, driven through a bare machine (parse →
//! check → lower → run), one `run` per turn.
//!
//! Workers that must wait for the test call `_ed-insert 'NAME'`, which these
//! tests register as a gate: it blocks until the test opens gate NAME (or
//! the machine is cancelled). `forever` spins until cancelled.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ral_syntax::SourceId;
use ral_types::{check_source, TypeEnv};
use ral_vm::{Cause, Escape, Failure, Mobile, Reason, RunError, Value, Vm};

use super::state::{truncation_marker, CappedBuf};
use super::*;

/// Long enough for anything these tests wait on; short enough that a bug
/// fails the test rather than hanging it.
const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Gates {
    open: Mutex<HashSet<String>>,
    changed: Condvar,
}

impl Gates {
    fn open(&self, name: &str) {
        self.open.lock().unwrap().insert(name.to_owned());
        self.changed.notify_all();
    }

    fn wait(&self, name: &str, cancel: &AtomicBool) -> Result<Value, Failure> {
        let mut open = self.open.lock().unwrap();
        while !open.contains(name) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Failure::cancelled(Cause::Interrupted));
            }
            open = self
                .changed
                .wait_timeout(open, Duration::from_millis(5))
                .unwrap()
                .0;
        }
        Ok(Value::Unit)
    }
}

struct Session {
    vm: Vm,
    env: TypeEnv,
    reg: Arc<WorkerRegistry>,
    gates: Arc<Gates>,
    events: Arc<Mutex<Vec<Value>>>,
}

const PRELUDE: &str = "let forever = { |n| forever $[$n + 1] }\n\
                       let spin = { |n| if $[$n <= 0] { 0 } else { spin $[$n - 1] } }";

impl Session {
    fn new() -> Session {
        Session::build(true)
    }

    /// A session with the `ral` hosts' builtins, or (`watch: false`) an
    /// agent host's, which lack `watch`.
    fn build(watch: bool) -> Session {
        let mut vm = Vm::new(Mobile::default());
        let reg = Arc::new(WorkerRegistry::new());
        if watch {
            install_worker_builtins(&mut vm, &reg).unwrap();
        } else {
            install_core_worker_builtins(&mut vm, &reg).unwrap();
        }
        let gates = Arc::new(Gates::default());
        let g = gates.clone();
        vm.register_host_builtin(
            "_ed-insert",
            1,
            Arc::new(move |vm: &mut Vm, args: &[Value]| {
                let name = args[0].as_str().unwrap_or_default().to_owned();
                let cancel = vm.mobile.context.cancel.clone();
                g.wait(&name, &cancel)
            }),
        )
        .unwrap();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = events.clone();
        reg.set_turn_surface(Some(Arc::new(move |v: &Value| {
            sink.lock().unwrap().push(v.clone());
        })));
        let mut s = Session {
            vm,
            env: TypeEnv::new(),
            reg,
            gates,
            events,
        };
        s.ok(PRELUDE);
        s
    }

    /// Runs one turn; a static error is a bug in the test.
    fn run(&mut self, src: &str) -> Result<Value, Failure> {
        let (parsed, checked) = check_source(src, "<test>", &self.env);
        let checked = checked.unwrap_or_else(|| panic!("parse error in {src:?}"));
        assert!(!checked.has_errors(), "{src:?}: {:?}", checked.diagnostics);
        let module = ral_ir::lower(&parsed.program, &checked, SourceId(0));
        let result = self.vm.run_module(&module);
        self.env = self.env.extend_with(&checked);
        match result {
            Ok(v) => Ok(v),
            Err(RunError::Escape(Escape::Fail(f))) => Err(f),
            Err(e) => panic!("{src:?}: {e:?}"),
        }
    }

    fn ok(&mut self, src: &str) -> Value {
        match self.run(src) {
            Ok(v) => v,
            Err(f) => panic!("{src:?} failed: {f}"),
        }
    }

    fn fail(&mut self, src: &str) -> Failure {
        match self.run(src) {
            Ok(v) => panic!("{src:?} returned {v:?} instead of failing"),
            Err(f) => f,
        }
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    fn global(&self, name: &str) -> Value {
        self.vm.mobile.scope.get_named(name).cloned().unwrap()
    }

    /// Waits until the worker bound to `name` has settled, without
    /// observing it (a registry listing renews and claims nothing).
    fn wait_settled(&self, name: &str) {
        let Value::Handle(h) = self.global(name) else {
            panic!("{name} is not a handle");
        };
        let w = worker_of(&h).unwrap().clone();
        wait_for(|| lock(&w.state).finished, "the worker to settle");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reg.shutdown();
    }
}

fn wait_for(mut cond: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(2));
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

fn variant(v: &Value) -> (&str, Option<&Value>) {
    let Value::Variant(var) = v else {
        panic!("not a variant: {v:?}")
    };
    (&var.tag, var.payload.as_ref())
}

fn rec(entries: &[(&str, Value)]) -> Value {
    Value::record(ral_vm::Record::from_entries(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    ))
}

// ---- spawn and await ----

#[test]
fn await_returns_the_value_and_the_buffered_output() {
    let mut s = Session::new();
    s.ok("let h = spawn { echo hi; warn 'careful'; return 42 }");
    let r = s.ok("await $h");
    assert_eq!(field(&r, "value"), Value::Int(42));
    assert_eq!(bytes(&field(&r, "stdout")), b"hi\n");
    assert_eq!(bytes(&field(&r, "stderr")), b"careful\n");
    // The worker's bytes never reached the turn's own output.
    assert!(s.vm.take_output().is_empty());
    // Cached: a second await returns the same record.
    let again = s.ok("await $h");
    assert_eq!(again, r);
}

#[test]
fn await_reraises_the_worker_failure() {
    let mut s = Session::new();
    s.ok("let h = spawn { fail [status: 7, message: 'boom'] }");
    let f = s.fail("await $h");
    assert_eq!(f.status, 7);
    assert_eq!(f.message, "boom");
    let status = s.ok("try { let r = await $h; return 0 } { |e| $e[status] }");
    assert_eq!(status, Value::Int(7));
}

#[test]
fn exit_inside_a_worker_fails_its_await() {
    let mut s = Session::new();
    s.ok("let h = spawn { exit 3 }");
    let f = s.fail("await $h");
    assert_eq!(f.status, 3);
    assert!(f.message.contains("exit 3"), "{}", f.message);
}

#[test]
fn handles_are_numbered_w1_w2_and_leave_the_registry_when_awaited() {
    let mut s = Session::new();
    s.ok("let a = spawn { _ed-insert 'a'; return 1 }\nlet b = spawn { _ed-insert 'b'; return 2 }");
    let ids: Vec<String> = s.reg.list().into_iter().map(|i| i.id).collect();
    assert_eq!(ids, ["w1", "w2"]);
    assert!(s
        .reg
        .list()
        .iter()
        .all(|i| i.status == WorkerStatus::Running));
    s.gates.open("a");
    s.gates.open("b");
    s.ok("await $a");
    let ids: Vec<String> = s.reg.list().into_iter().map(|i| i.id).collect();
    assert_eq!(ids, ["w2"]);
}

#[test]
fn detached_worker_cannot_outlive_turn_completion() {
    let mut s = Session::new();
    let started = Instant::now();
    s.ok("let h = spawn { surface [tick: 1]; forever 0 }");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the turn waited for its worker"
    );
    assert_eq!(s.reg.running_ids(), ["w1"]);
    // The next turn runs while the worker still spins, and the worker's
    // surface never reached the turn's sink.
    assert_eq!(s.ok("return 5"), Value::Int(5));
    assert!(s.events().is_empty());
    assert!(s.reg.shutdown(), "a spinning worker must stop on cancel");
    assert!(s.reg.running_ids().is_empty());
}

#[test]
fn an_interrupted_await_leaves_the_worker_running() {
    let mut s = Session::new();
    s.ok("let h = spawn { _ed-insert 'go'; return 9 }");
    let flag = s.vm.mobile.context.cancel.clone();
    let setter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(50));
        flag.store(true, Ordering::Relaxed);
    });
    let f = s.fail("await $h");
    setter.join().unwrap();
    assert_eq!(f.reason, Reason::Cancelled(Cause::Interrupted));
    assert_eq!(s.reg.running_ids(), ["w1"]);
    s.vm.mobile.context.cancel.store(false, Ordering::Relaxed);
    s.gates.open("go");
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(9));
}

#[test]
fn nested_spawn_inside_a_worker() {
    let mut s = Session::new();
    s.ok("let h = spawn { let inner = spawn { return 4 }; let r = await $inner; return $[$r[value] * 10] }");
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(40));
}

// ---- poll, is-done ----

#[test]
fn poll_reports_pending_bytes_then_the_settled_outcome() {
    let mut s = Session::new();
    s.ok("let h = spawn { echo early; _ed-insert 'go'; echo late; return 5 }");
    // Pending bytes are a cumulative snapshot.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let p = s.ok("poll $h");
        let (tag, payload) = variant(&p);
        assert_eq!(tag, "pending");
        if bytes(&field(payload.unwrap(), "stdout")) == b"early\n" {
            break;
        }
        assert!(Instant::now() < deadline);
    }
    assert_eq!(s.ok("is-done $h"), Value::Bool(false));
    s.gates.open("go");
    s.wait_settled("h");
    let p = s.ok("poll $h");
    let (tag, payload) = variant(&p);
    assert_eq!(tag, "settled");
    let payload = payload.unwrap();
    assert_eq!(bytes(&field(payload, "stdout")), b"early\nlate\n");
    assert_eq!(
        field(payload, "outcome"),
        Value::variant("ok", Some(Value::Int(5)))
    );
    assert_eq!(s.ok("is-done $h"), Value::Bool(true));
    // A settled poll observed the result: the entry left the registry.
    assert!(s.reg.list().is_empty());
}

#[test]
fn a_settled_poll_reports_failure_without_raising() {
    let mut s = Session::new();
    s.ok("let h = spawn { fail [status: 6, message: 'nope'] }");
    s.wait_settled("h");
    let p = s.ok("poll $h");
    let (tag, payload) = variant(&p);
    assert_eq!(tag, "settled");
    let outcome = field(payload.unwrap(), "outcome");
    let (otag, err) = variant(&outcome);
    assert_eq!(otag, "err");
    assert_eq!(field(err.unwrap(), "status"), Value::Int(6));
    assert_eq!(field(err.unwrap(), "message"), Value::str("nope"));
}

// ---- cancel, race ----

#[test]
fn cancel_stops_the_worker_and_later_observations_fail() {
    let mut s = Session::new();
    s.ok("let h = spawn { forever 0 }");
    s.ok("cancel $h");
    assert!(s.reg.list().is_empty(), "cancel removes the entry");
    let f = s.fail("await $h");
    assert!(
        f.message.starts_with("handle is cancelled"),
        "{}",
        f.message
    );
    assert_eq!(f.status, 143);
    let f = s.fail("poll $h");
    assert!(
        f.message.starts_with("handle is cancelled"),
        "{}",
        f.message
    );
    wait_for(|| s.reg.seats_taken() == 0, "the cancelled worker to stop");
}

#[test]
fn cancelling_a_settled_handle_keeps_its_outcome() {
    let mut s = Session::new();
    s.ok("let h = spawn { return 3 }");
    s.wait_settled("h");
    s.ok("cancel $h");
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(3));
}

#[test]
fn race_returns_the_first_to_settle_and_cancels_the_rest() {
    let mut s = Session::new();
    s.ok("let slow = spawn { forever 0 }\nlet fast = spawn { echo quick; return 1 }");
    let r = s.ok("race [$slow, $fast]");
    assert_eq!(field(&r, "value"), Value::Int(1));
    assert_eq!(bytes(&field(&r, "stdout")), b"quick\n");
    let f = s.fail("await $slow");
    assert!(f.message.contains("by `race`"), "{}", f.message);
    wait_for(|| s.reg.seats_taken() == 0, "the loser to stop");
}

#[test]
fn race_breaks_ties_by_list_order_and_reraises_a_failed_winner() {
    let mut s = Session::new();
    s.ok("let a = spawn { return 1 }\nlet b = spawn { return 2 }");
    s.wait_settled("a");
    s.wait_settled("b");
    assert_eq!(field(&s.ok("race [$b, $a]"), "value"), Value::Int(2));
    assert_eq!(field(&s.ok("race [$a, $b]"), "value"), Value::Int(1));
    s.ok("let bad = spawn { fail [status: 5, message: 'lost'] }");
    s.wait_settled("bad");
    assert_eq!(s.fail("race [$bad]").status, 5);
}

#[test]
fn race_refuses_an_empty_list_and_all_cancelled_handles() {
    let mut s = Session::new();
    let f = s.fail("race []");
    assert!(f.message.contains("at least one"), "{}", f.message);
    s.ok("let c = spawn { forever 0 }\ncancel $c");
    let f = s.fail("race [$c]");
    assert!(f.message.contains("cancelled"), "{}", f.message);
}

// ---- par ----

#[test]
fn par_keeps_input_order() {
    let mut s = Session::new();
    let v = s.ok("par { |n| spin $n; return $n } [20000, 1, 2, 3] 4");
    let want: Vec<Value> = [20000, 1, 2, 3].into_iter().map(Value::Int).collect();
    assert_eq!(v, Value::list(want.clone()));
    // A non-positive limit runs one worker per item.
    let v = s.ok("par { |n| spin $n; return $n } [20000, 1, 2, 3] 0");
    assert_eq!(v, Value::list(want));
    assert_eq!(s.ok("par { |n| return $n } [] 3"), Value::list(Vec::new()));
}

#[test]
fn par_runs_at_most_n_at_once() {
    let mut s = Session::new();
    let reg = s.reg.clone();
    let gates = s.gates.clone();
    let turn = thread::spawn(move || {
        let v = s.ok("par { |g| _ed-insert $g; return $g } ['p1', 'p2', 'p3', 'p4'] 2");
        (s, v)
    });
    wait_for(|| reg.seats_taken() == 2, "two par workers");
    thread::sleep(Duration::from_millis(50));
    assert_eq!(reg.seats_taken(), 2, "par exceeded its limit");
    // Finishing the second item lets the third start, not a fifth seat.
    gates.open("p2");
    wait_for(|| lock(&reg.inner).next_id == 3, "the third item to start");
    assert_eq!(reg.seats_taken(), 2);
    for g in ["p1", "p3", "p4"] {
        gates.open(g);
    }
    let (s, v) = turn.join().unwrap();
    let want: Vec<Value> = ["p1", "p2", "p3", "p4"]
        .into_iter()
        .map(Value::str)
        .collect();
    assert_eq!(v, Value::list(want));
    drop(s);
}

#[test]
fn par_cancels_siblings_and_reraises_the_first_failure() {
    let mut s = Session::new();
    let f = s.fail(
        "par { |n| if $[$n == 2] { fail [status: 4, message: 'bad item'] } else { forever 0 } } [1, 2, 3] 3",
    );
    assert_eq!(f.status, 4);
    assert_eq!(f.message, "bad item");
    wait_for(|| s.reg.seats_taken() == 0, "the siblings to stop");
    assert!(s.reg.list().is_empty());
}

// ---- surface ----

#[test]
fn surface_on_the_turn_thread_goes_straight_to_the_sink() {
    let mut s = Session::new();
    s.ok("surface [kind: 'note', n: 1]");
    assert_eq!(
        s.events(),
        [rec(&[("kind", Value::str("note")), ("n", Value::Int(1))])]
    );
    // No sink installed: a no-op, not a failure.
    s.reg.set_turn_surface(None);
    s.ok("surface [kind: 'lost']");
    assert_eq!(s.events().len(), 1);
}

#[test]
fn deferred_surface_replays_exactly_once_on_first_await() {
    let mut s = Session::new();
    s.ok("let h = spawn { surface [card: 1]; surface [card: 2]; return 0 }");
    s.wait_settled("h");
    assert!(s.events().is_empty(), "a detached worker emitted directly");
    s.ok("await $h");
    let cards = [
        rec(&[("card", Value::Int(1))]),
        rec(&[("card", Value::Int(2))]),
    ];
    assert_eq!(s.events(), cards);
    s.ok("await $h");
    s.ok("race [$h]");
    assert_eq!(s.events(), cards, "a second observation replayed again");
}

#[test]
fn poll_does_not_replay_the_deferred_surface() {
    let mut s = Session::new();
    s.ok("let h = spawn { surface [card: 1]; return 0 }");
    s.wait_settled("h");
    let p = s.ok("poll $h");
    assert_eq!(variant(&p).0, "settled");
    s.ok("is-done $h");
    assert!(s.events().is_empty(), "poll replayed");
    // The first await still replays, once.
    s.ok("await $h");
    assert_eq!(s.events(), [rec(&[("card", Value::Int(1))])]);
}

#[test]
fn an_unawaited_worker_emits_nothing() {
    let mut s = Session::new();
    s.ok("let h = spawn { surface [card: 1]; return 0 }");
    s.wait_settled("h");
    s.ok("let g = spawn { surface [card: 2]; forever 0 }\ncancel $g");
    s.ok("return ()");
    assert!(s.events().is_empty());
    // A failed worker's surface is replayed by the await that re-raises.
    s.ok("let bad = spawn { surface [card: 3]; fail [status: 2, message: 'x'] }");
    s.fail("await $bad");
    assert_eq!(s.events(), [rec(&[("card", Value::Int(3))])]);
}

#[test]
fn the_deferred_buffer_is_bounded_with_one_overflow_marker() {
    let mut s = Session::new();
    s.reg.set_surface_cap(3);
    s.ok("let h = spawn { map { |i| surface [i: $i] } [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]; return 0 }");
    s.ok("await $h");
    let got = s.events();
    assert_eq!(got.len(), 4);
    assert_eq!(got[2], rec(&[("i", Value::Int(3))]));
    assert_eq!(
        got[3],
        Value::variant(
            "surface-overflow",
            Some(rec(&[
                ("dropped", Value::Int(7)),
                ("worker", Value::str("w1"))
            ]))
        )
    );
}

#[test]
fn nested_worker_surface_replays_through_its_awaiter() {
    let mut s = Session::new();
    s.ok("let outer = spawn { let inner = spawn { surface [from: 'inner']; return 1 }; await $inner; surface [from: 'outer']; return 2 }");
    s.wait_settled("outer");
    assert!(s.events().is_empty());
    s.ok("await $outer");
    assert_eq!(
        s.events(),
        [
            rec(&[("from", Value::str("inner"))]),
            rec(&[("from", Value::str("outer"))])
        ]
    );
}

#[test]
fn par_replays_item_surfaces_in_input_order() {
    let mut s = Session::new();
    s.ok("par { |n| spin $n; surface [n: $n]; return $n } [20000, 1, 2] 3");
    let got: Vec<Value> = s.events().iter().map(|e| field(e, "n")).collect();
    assert_eq!(got, [20000, 1, 2].map(Value::Int));
}

// ---- watch ----

#[test]
fn watch_streams_labelled_lines_after_its_turn_returned() {
    let mut s = Session::new();
    let lines: Arc<Mutex<Vec<(WatchStream, String)>>> = Arc::default();
    let out = lines.clone();
    s.reg
        .set_watch_output(Some(Arc::new(move |stream: WatchStream, line: &[u8]| {
            out.lock()
                .unwrap()
                .push((stream, String::from_utf8_lossy(line).into_owned()));
        })));
    s.ok("let w = watch 'build' { echo one; _ed-insert 'go'; echo two; warn 'hmm'; to-string 'partial'; return 7 }");
    // The turn has returned; the worker is still streaming.
    wait_for(|| lines.lock().unwrap().len() == 1, "the first line");
    assert_eq!(
        lines.lock().unwrap()[0],
        (WatchStream::Stdout, "[build] one\n".to_owned())
    );
    s.gates.open("go");
    s.wait_settled("w");
    assert_eq!(
        *lines.lock().unwrap(),
        [
            (WatchStream::Stdout, "[build] one\n".to_owned()),
            (WatchStream::Stdout, "[build] two\n".to_owned()),
            (WatchStream::Stderr, "[build:err] hmm\n".to_owned()),
            (WatchStream::Stdout, "[build] partial\n".to_owned()),
        ]
    );
    // Its completion buffers are empty: the bytes were streamed.
    let r = s.ok("await $w");
    assert_eq!(field(&r, "value"), Value::Int(7));
    assert!(bytes(&field(&r, "stdout")).is_empty());
    assert!(bytes(&field(&r, "stderr")).is_empty());
    let f = s.fail("watch 'two\nlines' { return 1 }");
    assert!(f.message.contains("one line"), "{}", f.message);
}

#[test]
fn the_core_set_leaves_watch_out() {
    let mut s = Session::build(false);
    let f = s.fail("watch 'w' { return 1 }");
    assert!(f.message.contains("watch"), "{}", f.message);
    assert!(s.reg.list().is_empty());
    assert_eq!(
        field(&s.ok("await !{spawn { return 1 }}"), "value"),
        Value::Int(1)
    );
}

// ---- output cap ----

#[test]
fn worker_output_is_capped_with_one_truncation_marker() {
    let mut s = Session::new();
    s.reg.set_output_cap(10);
    s.ok("let h = spawn { echo '0123456789abcdef'; echo more; warn short; return 0 }");
    let r = s.ok("await $h");
    let mut want = b"0123456789".to_vec();
    want.extend_from_slice(truncation_marker(10).as_bytes());
    assert_eq!(bytes(&field(&r, "stdout")), want);
    assert_eq!(bytes(&field(&r, "stderr")), b"short\n");
}

#[test]
fn the_default_cap_is_16_mib() {
    let mut buf = CappedBuf::new(OUTPUT_CAP);
    let chunk = vec![b'x'; 1024 * 1024];
    for _ in 0..17 {
        buf.push(&chunk);
    }
    buf.push(b"after");
    let bytes = buf.snapshot();
    let marker = truncation_marker(OUTPUT_CAP);
    assert!(marker.contains("16 MiB"), "{marker}");
    assert_eq!(bytes.len(), OUTPUT_CAP + marker.len());
    assert!(bytes.ends_with(marker.as_bytes()));
}

// ---- policy: cap, leases, retention, shutdown ----

#[test]
fn the_worker_cap_reserves_seats_and_refuses_past_it() {
    let mut s = Session::new();
    s.reg.set_worker_cap(Some(1));
    s.ok("let a = spawn { _ed-insert 'a'; return 1 }");
    let f = s.fail("spawn { return 2 }");
    assert!(f.message.contains("worker seats"), "{}", f.message);
    assert_eq!(f.cmd.as_deref(), Some("spawn"));
    s.gates.open("a");
    s.wait_settled("a");
    // A settled result holds no seat.
    wait_for(|| s.reg.seats_taken() == 0, "the seat to free");
    s.ok("let b = spawn { return 2 }");
    assert_eq!(field(&s.ok("await $b"), "value"), Value::Int(2));
}

#[test]
fn par_shares_the_cap_instead_of_failing() {
    let mut s = Session::new();
    s.reg.set_worker_cap(Some(2));
    let v = s.ok("par { |n| return $[$n * 2] } [1, 2, 3, 4, 5] 5");
    assert_eq!(v, Value::list([2, 4, 6, 8, 10].map(Value::Int).to_vec()));
}

#[test]
fn an_unobserved_worker_is_reaped_by_the_idle_lease() {
    let mut s = Session::new();
    s.reg.set_idle_lease(Some(Duration::from_millis(40)));
    s.ok("let h = spawn { forever 0 }");
    wait_for(
        || !s.reg.take_reap_notices().is_empty() || s.reg.list().is_empty(),
        "a reap",
    );
    let f = s.fail("await $h");
    assert!(f.message.contains("idle lease"), "{}", f.message);
    wait_for(|| s.reg.seats_taken() == 0, "the reaped worker to stop");
}

#[test]
fn waiting_renews_the_idle_lease() {
    let mut s = Session::new();
    s.reg.set_idle_lease(Some(Duration::from_millis(150)));
    s.ok("let h = spawn { _ed-insert 'go'; return 1 }");
    let gates = s.gates.clone();
    let opener = thread::spawn(move || {
        thread::sleep(Duration::from_millis(500));
        gates.open("go");
    });
    // The await waits longer than the idle bound, renewing as it waits.
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(1));
    opener.join().unwrap();
    assert!(s.reg.take_reap_notices().is_empty());
}

#[test]
fn the_detached_limit_is_an_absolute_backstop() {
    let mut s = Session::new();
    s.reg.set_detached_limit(Some(Duration::from_millis(60)));
    s.ok("let h = spawn { forever 0 }");
    let mut notices = Vec::new();
    let deadline = Instant::now() + PATIENCE;
    while notices.is_empty() {
        // Observation postpones nothing here.
        let _ = s.run("poll $h");
        notices = s.reg.take_reap_notices();
        assert!(Instant::now() < deadline, "never reaped");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(notices[0].worker, "w1");
    assert_eq!(
        notices[0].reason,
        ReapReason::Backstop(Duration::from_millis(60))
    );
    assert!(notices[0].to_string().contains("detached limit"));
    let f = s.fail("await $h");
    assert!(f.message.contains("detached limit"), "{}", f.message);
    // A worker's nested spawns inherit its limits, not the registry's
    // setting of the moment.
    let hour = Duration::from_secs(3600);
    s.reg.set_detached_limit(Some(hour));
    s.ok("let outer = spawn { _ed-insert 'nest'; let inner = spawn { forever 0 }; return $inner }");
    s.reg.set_detached_limit(None);
    s.gates.open("nest");
    s.wait_settled("outer");
    let inner = field(&s.ok("await $outer"), "value");
    let Value::Handle(inner) = inner else {
        panic!("not a handle")
    };
    assert_eq!(inner.id, 3);
    assert_eq!(worker_of(&inner).unwrap().limits.backstop, Some(hour));
}

#[test]
fn unclaimed_results_leave_the_registry_after_the_retention_bound() {
    let mut s = Session::new();
    s.reg.set_retention(Some(2));
    s.ok("let h = spawn { return 8 }");
    s.wait_settled("h");
    s.reg.tick();
    assert_eq!(s.reg.list().len(), 1);
    s.reg.tick();
    assert!(s.reg.list().is_empty());
    let notices = s.reg.take_reap_notices();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].reason, ReapReason::Retention(2));
    // The handle still holds its result.
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(8));
}

#[test]
fn shutdown_cancels_every_worker_within_its_grace() {
    let mut s = Session::new();
    s.ok(
        "let a = spawn { forever 0 }\nlet b = spawn { forever 0 }\nlet c = watch 'w' { forever 0 }",
    );
    assert_eq!(s.reg.running_ids().len(), 3);
    let started = Instant::now();
    assert!(s.reg.shutdown());
    assert!(started.elapsed() < SHUTDOWN_GRACE);
    assert_eq!(s.reg.seats_taken(), 0);
    let f = s.fail("spawn { return 1 }");
    assert!(f.message.contains("session is ending"), "{}", f.message);
    let f = s.fail("await $a");
    assert!(f.message.contains("session ended"), "{}", f.message);
}

// ---- pins ----

#[test]
fn running_workers_pin_the_session_names_they_read() {
    let mut s = Session::new();
    s.ok("let helper = { |x| return $[$x + 1] }\nlet unrelated = 5\nlet base = 10");
    s.ok("let h = spawn { _ed-insert 'go'; helper $base }");
    assert_eq!(s.reg.pinned_names(), ["base", "helper"]);
    let Value::Handle(h) = s.global("h") else {
        panic!()
    };
    assert!(handle_is_running(&h));
    s.gates.open("go");
    s.wait_settled("h");
    assert!(!handle_is_running(&h));
    assert!(s.reg.pinned_names().is_empty());
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(11));
}

#[test]
fn pins_follow_globals_through_other_functions() {
    let mut s = Session::new();
    s.ok("let deep = 3\nlet mid = { |x| return $[$x * $deep] }\nlet top = { |x| mid $x }");
    s.ok("let h = spawn { _ed-insert 'go'; top 2 }");
    assert_eq!(s.reg.pinned_names(), ["deep", "mid", "top"]);
    s.gates.open("go");
    assert_eq!(field(&s.ok("await $h"), "value"), Value::Int(6));
}

// ---- external programs ----

#[test]
fn a_worker_captures_its_programs_output_and_cancel_reaches_them() {
    let mut s = Session::new();
    s.ok("let h = spawn { printf 'from a program' }");
    let r = s.ok("await $h");
    assert_eq!(bytes(&field(&r, "stdout")), b"from a program");
    s.ok("let slow = spawn { sleep 30 }");
    thread::sleep(Duration::from_millis(100));
    assert_eq!(s.reg.running_ids(), ["w2"], "the program is not running");
    let started = Instant::now();
    s.ok("cancel $slow");
    wait_for(|| s.reg.seats_taken() == 0, "the sleeping program to die");
    assert!(started.elapsed() < Duration::from_secs(5));
}
