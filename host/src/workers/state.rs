//! One worker's shared state: its phase, its byte buffers, its deferred
//! surface events, and the writers its machine's output goes through.
//!
//! A [`Worker`] is shared three ways: the registry's tables, every `Handle`
//! value naming it (the handle's opaque state is an `Arc<Worker>`), and the
//! worker's own thread (which writes its output and settles it). Everything
//! mutable sits behind the one `state` mutex. Lock discipline (see the
//! module docs of `workers`): a worker's lock is never held while the
//! registry's table lock is taken.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ral_vm::audit::Observation;
use ral_vm::{Cause, Failure, Reason, Value};

use super::{WatchStream, WorkerRegistry};

/// Locks `m`, recovering the data if a thread panicked while holding it.
/// Every critical section in this module leaves its data consistent
/// between statements, so a poisoned lock holds usable state.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What kind of birth made a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// `spawn`: buffered output, deferred surface.
    Spawn,
    /// `watch`: output streamed live with a label.
    Watch,
    /// An item of `par`: output discarded (par returns only values).
    Par,
    /// `service`: buffered like `spawn`, with no idle lease and no
    /// backstop (§11.5).
    Service,
}

impl Class {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Spawn => "spawn",
            Class::Watch => "watch",
            Class::Par => "par",
            Class::Service => "service",
        }
    }
}

/// Why a worker was cancelled while it was still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelCause {
    /// `cancel` named its handle.
    Explicit,
    /// `race` observed another handle settle first.
    RaceLoser,
    /// A sibling item of the same `par` failed.
    ParSibling,
    /// The run of the `par` call that owned it was cancelled (an
    /// interrupt, a signal, a wall).
    ParCancelled,
    /// Nothing observed it (`await`, `poll`, `race`) for this long.
    Idle(Duration),
    /// It ran longer than the detached limit since its birth.
    Backstop(Duration),
    /// The session ended.
    Shutdown,
}

impl CancelCause {
    /// A short clause for messages: "cancelled by `cancel`".
    pub(crate) fn clause(self) -> String {
        match self {
            CancelCause::Explicit => "by `cancel`".to_owned(),
            CancelCause::RaceLoser => "by `race`: another handle settled first".to_owned(),
            CancelCause::ParSibling => "by `par`: a sibling item failed".to_owned(),
            CancelCause::ParCancelled => "because its `par` call was cancelled".to_owned(),
            CancelCause::Idle(d) => format!(
                "by the idle lease: nothing awaited or polled it for {}",
                human_duration(d)
            ),
            CancelCause::Backstop(d) => format!(
                "by the detached limit: it ran longer than {}",
                human_duration(d)
            ),
            CancelCause::Shutdown => "because the session ended".to_owned(),
        }
    }

    fn failure_cause(self) -> Cause {
        match self {
            CancelCause::Shutdown => Cause::Terminated,
            CancelCause::Explicit
            | CancelCause::RaceLoser
            | CancelCause::ParSibling
            | CancelCause::ParCancelled
            | CancelCause::Idle(_)
            | CancelCause::Backstop(_) => Cause::Cancelled,
        }
    }
}

/// A duration for messages: whole hours, minutes or seconds when exact,
/// else milliseconds.
pub(crate) fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms != 0 && ms.is_multiple_of(3_600_000) {
        format!("{}h", ms / 3_600_000)
    } else if ms != 0 && ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms != 0 && ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The leases a worker was born under (inherited by its nested spawns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    /// The idle-observation bound.
    pub idle: Option<Duration>,
    /// The absolute backstop since birth (the detached limit).
    pub backstop: Option<Duration>,
}

impl Limits {
    pub(crate) fn armed(self) -> bool {
        self.idle.is_some() || self.backstop.is_some()
    }
}

/// A settled worker's cached result.
pub(crate) struct Settled {
    pub outcome: Result<Value, Failure>,
    pub stdout: Arc<Vec<u8>>,
    pub stderr: Arc<Vec<u8>>,
    /// What the worker observed while its creator's trail was open, handed
    /// once to the first observer of its result (§13.3).
    pub trail: Vec<Observation>,
}

/// Where a worker is in its life. Monotone: `Running` moves once, to
/// `Settled` or `Cancelled`, and never back.
pub(crate) enum Phase {
    Running,
    Settled(Settled),
    /// Cancelled while running; the outcome (if the thread ever produces
    /// one) is discarded.
    Cancelled(CancelCause),
}

/// The mutable part of a worker.
pub(crate) struct State {
    pub phase: Phase,
    /// The worker's thread has ended (it no longer holds a seat).
    pub finished: bool,
    pub stdout: CappedBuf,
    pub stderr: CappedBuf,
    pub surface: SurfaceBuf,
    /// The last `await`/`poll`/`race`/`is-done` that named it (the idle
    /// lease's clock).
    pub last_observed: Instant,
    /// The registry epoch when it settled (the retention clock).
    pub settled_epoch: u64,
}

/// A worker: identity, policy fixed at birth, and its shared state.
pub(crate) struct Worker {
    /// `N` of `wN`.
    pub id: u64,
    /// The owning registry's address (identity only, never dereferenced).
    pub registry: usize,
    pub class: Class,
    pub description: String,
    pub born: Instant,
    /// The worker machine's cancel flag.
    pub cancel: Arc<AtomicBool>,
    /// The cause the worker machine reports when the flag stops it
    /// (`Cause as u8`), stored before the flag is set.
    pub cancel_cause: Arc<AtomicU8>,
    /// How often its flag was raised (a cleanup holds off one, §8.7).
    pub cancel_count: Arc<std::sync::atomic::AtomicU32>,
    pub limits: Limits,
    /// Session binding names the spawned function reads (lease pins).
    pub pins: Vec<String>,
    pub state: Mutex<State>,
}

/// What an observation of a settled worker hands out: the outcome, the
/// bytes, and (the first time only) the surface events to replay.
pub(crate) struct Claim {
    pub outcome: Result<Value, Failure>,
    pub stdout: Arc<Vec<u8>>,
    pub stderr: Arc<Vec<u8>>,
    pub replay: Vec<Value>,
    /// The worker's trail fragment (empty after the first claim).
    pub trail: Vec<Observation>,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u64,
        registry: usize,
        class: Class,
        description: String,
        limits: Limits,
        pins: Vec<String>,
        output_cap: usize,
        surface_cap: usize,
    ) -> Worker {
        let now = Instant::now();
        Worker {
            id,
            registry,
            class,
            description,
            born: now,
            cancel: Arc::new(AtomicBool::new(false)),
            cancel_cause: Arc::new(AtomicU8::new(Cause::Cancelled as u8)),
            cancel_count: Arc::new(std::sync::atomic::AtomicU32::new(0)),
            limits,
            pins,
            state: Mutex::new(State {
                phase: Phase::Running,
                finished: false,
                stdout: CappedBuf::new(output_cap),
                stderr: CappedBuf::new(output_cap),
                surface: SurfaceBuf::new(surface_cap),
                last_observed: now,
                settled_epoch: 0,
            }),
        }
    }

    /// `wN`.
    pub(crate) fn name(&self) -> String {
        format!("w{}", self.id)
    }

    /// Records the thread's result. A worker cancelled meanwhile stays
    /// cancelled and its result is dropped.
    pub(crate) fn settle(
        &self,
        outcome: Result<Value, Failure>,
        trail: Vec<Observation>,
        epoch: u64,
    ) {
        let mut st = lock(&self.state);
        st.finished = true;
        if let Phase::Running = st.phase {
            let stdout = Arc::new(st.stdout.take());
            let stderr = Arc::new(st.stderr.take());
            st.phase = Phase::Settled(Settled {
                outcome,
                stdout,
                stderr,
                trail,
            });
            st.settled_epoch = epoch;
        }
    }

    /// Cancels the worker if it is still running; `true` when it was. A
    /// settled worker keeps its cached outcome.
    pub(crate) fn cancel(&self, cause: CancelCause) -> bool {
        let mut st = lock(&self.state);
        if let Phase::Running = st.phase {
            st.phase = Phase::Cancelled(cause);
            // The bytes can never be observed now; free them.
            st.stdout = CappedBuf::new(st.stdout.cap);
            st.stderr = CappedBuf::new(st.stderr.cap);
            st.surface.discard();
            ral_vm::raise_cancel(
                &self.cancel,
                &self.cancel_cause,
                &self.cancel_count,
                cause.failure_cause(),
            );
            true
        } else {
            false
        }
    }

    /// Whether it is still running (not settled, not cancelled).
    pub(crate) fn is_running(&self) -> bool {
        matches!(lock(&self.state).phase, Phase::Running)
    }

    /// The failure `await` and `poll` raise on a cancelled handle.
    pub(crate) fn cancelled_failure(&self, cause: CancelCause) -> Failure {
        Failure::new(
            cause.failure_cause().status(),
            format!(
                "handle is cancelled: worker {} was cancelled {}; wrap `await` in `try` \
                 when cancellation is expected",
                self.name(),
                cause.clause()
            ),
            Reason::Cancelled(cause.failure_cause()),
        )
    }

    /// The settled result, with the deferred surface events on the first
    /// claim only. Fails on a cancelled handle; `None` while running.
    pub(crate) fn claim(&self) -> Option<Result<Claim, Failure>> {
        let mut st = lock(&self.state);
        let st = &mut *st;
        match &mut st.phase {
            Phase::Running => None,
            Phase::Cancelled(cause) => Some(Err(self.cancelled_failure(*cause))),
            Phase::Settled(s) => {
                let replay = st.surface.take_for_replay(&self.name());
                Some(Ok(Claim {
                    outcome: s.outcome.clone(),
                    stdout: s.stdout.clone(),
                    stderr: s.stderr.clone(),
                    replay,
                    trail: std::mem::take(&mut s.trail),
                }))
            }
        }
    }
}

/// A byte buffer capped at `cap` bytes: at the cap one truncation marker
/// is appended and every later byte is discarded (the writer keeps
/// accepting them, so a chatty producer never blocks).
pub(crate) struct CappedBuf {
    bytes: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl CappedBuf {
    pub(crate) fn new(cap: usize) -> CappedBuf {
        CappedBuf {
            bytes: Vec::new(),
            cap,
            truncated: false,
        }
    }

    /// Appends what fits and, the first time something does not, the
    /// marker.
    pub(crate) fn push(&mut self, data: &[u8]) {
        if self.truncated {
            return;
        }
        let room = self.cap.saturating_sub(self.bytes.len());
        if data.len() <= room {
            self.bytes.extend_from_slice(data);
        } else {
            self.bytes
                .extend_from_slice(data.get(..room).unwrap_or_default());
            self.bytes
                .extend_from_slice(truncation_marker(self.cap).as_bytes());
            self.truncated = true;
        }
    }

    /// A copy of the bytes so far (pending `poll`).
    pub(crate) fn snapshot(&self) -> Vec<u8> {
        self.bytes.clone()
    }

    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.bytes)
    }
}

/// The line appended to a worker buffer that reached its cap.
pub(crate) fn truncation_marker(cap: usize) -> String {
    const MIB: usize = 1024 * 1024;
    let size = if cap >= MIB && cap.is_multiple_of(MIB) {
        format!("{} MiB", cap / MIB)
    } else {
        format!("{cap} bytes")
    };
    format!("\n[ral: worker output truncated at {size}; later output was discarded]\n")
}

/// A detached worker's deferred surface events: at most `cap` kept, the
/// rest counted and reported by one overflow marker event at replay.
pub(crate) struct SurfaceBuf {
    events: Vec<Value>,
    cap: usize,
    dropped: u64,
    replayed: bool,
}

impl SurfaceBuf {
    fn new(cap: usize) -> SurfaceBuf {
        SurfaceBuf {
            events: Vec::new(),
            cap,
            dropped: 0,
            replayed: false,
        }
    }

    /// Buffers one event (or counts it past the cap).
    pub(crate) fn push(&mut self, v: Value) {
        if self.replayed {
            return;
        }
        if self.events.len() < self.cap {
            self.events.push(v);
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    fn discard(&mut self) {
        self.events = Vec::new();
        self.dropped = 0;
        self.replayed = true;
    }

    /// The events to replay, once: the kept ones, then the overflow
    /// marker if any were dropped. Empty on every later call.
    fn take_for_replay(&mut self, worker: &str) -> Vec<Value> {
        if self.replayed {
            return Vec::new();
        }
        self.replayed = true;
        let mut events = std::mem::take(&mut self.events);
        if self.dropped > 0 {
            events.push(overflow_marker(worker, self.dropped));
        }
        events
    }
}

/// The one event standing for a detached worker's dropped surface events:
/// `` `surface-overflow [worker: 'wN', dropped: K] ``.
pub(crate) fn overflow_marker(worker: &str, dropped: u64) -> Value {
    Value::variant(
        "surface-overflow",
        Some(Value::record(ral_vm::Record::from_entries(vec![
            ("worker".to_owned(), Value::str(worker)),
            (
                "dropped".to_owned(),
                Value::Int(i64::try_from(dropped).unwrap_or(i64::MAX)),
            ),
        ]))),
    )
}

/// Which buffer a [`BufferWriter`] fills.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    Out,
    Err,
}

/// A `spawn` worker's standard output or error: appends to its capped
/// buffer. Always reports the whole write as taken (draining past the cap).
pub(crate) struct BufferWriter {
    pub worker: Arc<Worker>,
    pub stream: Stream,
}

impl Write for BufferWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut st = lock(&self.worker.state);
        if let Phase::Running = st.phase {
            match self.stream {
                Stream::Out => st.stdout.push(data),
                Stream::Err => st.stderr.push(data),
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Longest partial line a watch writer holds before emitting it anyway.
const WATCH_LINE_MAX: usize = 64 * 1024;

/// A `watch` worker's standard output or error: frames complete lines as
/// `[label] line` (`[label:err] line`) and hands each to the registry's
/// durable output whole. The partial final line is emitted (with a
/// newline) when the writer is dropped, which the worker thread does
/// before it settles.
pub(crate) struct WatchWriter {
    pub registry: Arc<WorkerRegistry>,
    pub stream: WatchStream,
    pub prefix: Vec<u8>,
    pub line: Vec<u8>,
}

impl WatchWriter {
    pub(crate) fn new(registry: Arc<WorkerRegistry>, stream: WatchStream, label: &str) -> Self {
        let prefix = match stream {
            WatchStream::Stdout => format!("[{label}] "),
            WatchStream::Stderr => format!("[{label}:err] "),
        };
        WatchWriter {
            registry,
            stream,
            prefix: prefix.into_bytes(),
            line: Vec::new(),
        }
    }

    fn emit(&mut self) {
        let mut framed = Vec::with_capacity(self.prefix.len() + self.line.len() + 1);
        framed.extend_from_slice(&self.prefix);
        framed.append(&mut self.line);
        if framed.last() != Some(&b'\n') {
            framed.push(b'\n');
        }
        self.registry.watch_line(self.stream, &framed);
    }
}

impl Write for WatchWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    let (head, tail) = rest.split_at(i + 1);
                    self.line.extend_from_slice(head);
                    self.emit();
                    rest = tail;
                }
                None => {
                    self.line.extend_from_slice(rest);
                    rest = &[];
                    if self.line.len() >= WATCH_LINE_MAX {
                        self.emit();
                    }
                }
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for WatchWriter {
    fn drop(&mut self) {
        if !self.line.is_empty() {
            self.emit();
        }
    }
}
