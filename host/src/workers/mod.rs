//! Session workers (spec §11): the per-shell [`WorkerRegistry`] and the
//! builtins over it (`spawn`, `await`, `poll`, `race`, `cancel`, `par`,
//! `is-done`, `watch`) plus `surface`, installed by
//! [`install_worker_builtins`] (or, without `watch`, by
//! [`install_core_worker_builtins`]); and the agent forms of §11.5
//! (`service`, `service-handle`, `detach`), installed on request by
//! [`install_agent_forms`] (see [`AgentForms`]).
//!
//! # Completion is a control-flow fact
//!
//! A worker runs on its own `std::thread` over a forked machine
//! ([`ral_vm::Vm::fork`]: the program, a snapshot of the session, its own
//! cancel flag). The turn that spawned it keeps no reference the worker
//! could hold up: the worker gets no turn sink, no turn output, and nothing
//! the turn waits on is ever signalled by a worker. Only `await`, `race`
//! and `par` wait, and only when the program asks them to; their waits
//! also watch the *caller's* cancel flag, so interrupting or timing out a
//! turn interrupts the wait and never the worker (§11.1). A detached worker
//! therefore cannot delay `run_turn`'s return, by construction.
//!
//! A worker's machine reads no terminal input (`Stdin::Null`), starts its
//! external programs in process groups of their own, and carries its own
//! cancellation cause. A worker that fails, calls `exit N` or panics
//! settles with a failure that `await` re-raises (status `N` for `exit N`,
//! 1 for `exit 0`, since a failure's status is nonzero; `worker wN
//! panicked: …` for a panic); `poll` reports it as `` `err ``.
//!
//! # The surface
//!
//! `surface v` on the turn's own thread goes straight to the turn's sink
//! ([`WorkerRegistry::set_turn_surface`], installed by the host at turn
//! entry and cleared at exit; no sink, no effect). Inside a worker it goes
//! to that worker's bounded buffer instead (at most
//! [`SURFACE_EVENT_CAP`] events; past that one `` `surface-overflow ``
//! marker event counts the dropped ones). The first `await` of the handle
//! (or the `race` it wins, or the `par` that collects it) replays the
//! buffer through the caller's *current* sink — the turn's sink on the turn
//! thread, the caller's own buffer inside another worker — and marks it
//! replayed: `poll` never replays, a second `await` never replays again,
//! and a worker nobody awaits emits nothing. Which sink is current is
//! decided by a thread-local naming the worker a thread runs, so
//! same-thread evaluation inherits the turn's sink.
//!
//! # The registry
//!
//! Every birth gets a stable `wN` id and an entry (description, class,
//! birth time, state, handle). An entry leaves when `await`, a settled
//! `poll` or `is-done`, or `race` observes its result; when `cancel` names
//! it; when a lease reaps it; or when the retention policy drops an
//! unclaimed settled result (§11.4). The handle value keeps the worker's
//! cached result alive regardless, so leaving the registry never changes
//! what a later `await` returns.
//!
//! Host policy, all off by default (the `ral` hosts arm none):
//! - a live-worker cap ([`WorkerRegistry::set_worker_cap`]): admission
//!   reserves the seat under the table lock before the thread exists, so
//!   concurrent births cannot overshoot; only running workers hold seats;
//! - an idle-observation lease ([`WorkerRegistry::set_idle_lease`]) and an
//!   absolute backstop, the detached limit
//!   ([`WorkerRegistry::set_detached_limit`]). Both are fixed at birth and
//!   inherited by nested spawns (a per-turn decision that flows into the
//!   work the turn started). `await`/`poll`/`race` renew the idle clock,
//!   and a continuing wait renews it on every wake-up; nothing postpones
//!   the backstop. A reaper thread runs while some running worker has a
//!   lease; a reap cancels the worker and records a [`ReapNotice`];
//! - retention of unclaimed settled results for a number of turns
//!   ([`WorkerRegistry::set_retention`], counted by
//!   [`WorkerRegistry::tick`]).
//!
//! Each `spawn` worker's stdout and stderr are buffers capped at
//! [`OUTPUT_CAP`] (16 MiB) with one truncation marker; the writer keeps
//! accepting bytes past the cap and discards them. `watch` streams framed
//! lines (`[label] …`, `[label:err] …`) to the session's durable output
//! ([`WorkerRegistry::set_watch_output`], the process streams by default)
//! and leaves its completion buffers empty.
//!
//! # Agent forms
//!
//! - `service description block` is a `spawn` worker (buffered output,
//!   deferred surface) born with no idle lease and no backstop whatever
//!   the policy says, so neglect never reaps it; its nested spawns inherit
//!   that. It still takes a seat under the cap, is listed (class
//!   `service`) with its description, and ends on `cancel`, shutdown or
//!   process exit. `service-handle wN` hands back the handle of a service
//!   still in the registry (running, or settled and unobserved).
//! - `detach description command args…` (a base handler: one argument
//!   list) starts a program in a new session with its standard streams on
//!   `/dev/null`, in the caller's logical directory and environment, and
//!   returns the receipt `[pid: Int, desc: String]`; the process is never
//!   registered and no teardown reaches it (see `detach.rs`). It is
//!   refused when a grant layer says `detach: false`, when the session's
//!   birth budget ([`WorkerRegistry::detach_births`]) is spent (only
//!   successful births count; shared by every worker of the session, never
//!   replenished), when the command names a head a handler or base handler
//!   would intercept (`^name` or a path runs the program itself), and when
//!   the exec grant does not admit the program.
//!
//! # Teardown
//!
//! [`WorkerRegistry::shutdown`] cancels every running worker and waits a
//! bounded time for their threads to stop. Cancellation is the worker
//! machine's cancel flag: the loop polls it at calls, backward jumps and
//! builtin entry, and the process runtime watches it while an external
//! program runs (every 50 ms at most) and terminates the program's process
//! group: `SIGTERM` to the group, a grace of 200 ms, then `SIGKILL` to the
//! group, and the program is reaped. Worker machines always start their
//! programs in process groups of their own, so this reaches everything a
//! worker started and nothing else. Detached processes are in sessions of
//! their own and are never signalled.
//!
//! # Locks
//!
//! Three mutexes: the registry table (`inner`), each worker's `state`, and
//! the settle generation (`settle_gen`, paired with a condvar every settle
//! and cancel notifies). Allowed nestings: `inner → worker`,
//! `settle_gen → worker`, `settle_gen → inner`. Nothing takes `inner` or
//! `settle_gen` while holding a worker's lock, and nothing takes
//! `settle_gen` while holding `inner`. Host callbacks (the turn sink, the
//! watch output) are always called with no lock held, except the
//! watch-line lock that serialises framed lines. The watch-line lock is
//! taken before the table lock (never after), so replacing the watch
//! output waits for a line in flight. The detach ledger's lock is a leaf:
//! held across one process birth, with no other lock taken under it.

mod agent;
mod builtins;
mod detach;
mod pins;
mod state;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use ral_vm::audit::Observation;
use ral_vm::{Escape, Failure, Handle, Stdin, Stdout, Value, Vm};

pub use agent::{install_agent_forms, AgentForms, DETACH_BIRTHS};
pub use builtins::{install_core_worker_builtins, install_worker_builtins};
pub use pins::handle_is_running;
pub use state::CancelCause;

use state::{lock, BufferWriter, Class, Limits, Phase, Stream, WatchWriter, Worker};

/// Each `spawn` worker's stdout and stderr buffer cap (§11.3).
pub const OUTPUT_CAP: usize = 16 * 1024 * 1024;

/// The most surface events a detached worker keeps for replay.
pub const SURFACE_EVENT_CAP: usize = 1024;

/// How long [`WorkerRegistry::shutdown`] waits by default for cancelled
/// workers to stop.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How often a blocked `await`/`race`/`par` wakes to look at its caller's
/// cancel flag (and renew the idle leases of what it waits on).
const WAIT_SLICE: Duration = Duration::from_millis(20);

/// A worker thread's stack. The machine keeps ral frames on the heap; the
/// Rust stack only carries nested builtin callbacks (at most 200 deep).
const WORKER_STACK: usize = 16 * 1024 * 1024;

/// The current turn's structured-event sink.
pub type TurnSurface = Arc<dyn Fn(&Value) + Send + Sync>;

/// Where `watch` lines go: each call is one complete framed line (prefix
/// and final newline included).
pub type WatchOutput = Arc<dyn Fn(WatchStream, &[u8]) + Send + Sync>;

/// Which stream a watched line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchStream {
    Stdout,
    Stderr,
}

/// Why a lease or the retention policy removed a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReapReason {
    /// Running, and unobserved for longer than the idle lease.
    Idle(Duration),
    /// Running for longer than the detached limit since birth.
    Backstop(Duration),
    /// Settled and unclaimed for this many turns.
    Retention(u64),
}

/// A record of one reap, for the host to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReapNotice {
    /// `wN`.
    pub worker: String,
    /// What the worker was (`spawn`, `watch 'build'`, …).
    pub description: String,
    pub reason: ReapReason,
}

impl fmt::Display for ReapNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            ReapReason::Idle(d) => write!(
                f,
                "worker {} ({}) was cancelled: nothing awaited or polled it for {}",
                self.worker,
                self.description,
                state::human_duration(d)
            ),
            ReapReason::Backstop(d) => write!(
                f,
                "worker {} ({}) was cancelled: it ran longer than the detached limit of {}",
                self.worker,
                self.description,
                state::human_duration(d)
            ),
            ReapReason::Retention(turns) => write!(
                f,
                "the result of worker {} ({}) was dropped: unclaimed for {turns} turns",
                self.worker, self.description
            ),
        }
    }
}

/// A worker's state as a listing shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerStatus {
    Running,
    Settled,
    Cancelled,
}

/// One registry entry, as [`WorkerRegistry::list`] reports it.
#[derive(Clone, Debug)]
pub struct WorkerInfo {
    /// `wN`.
    pub id: String,
    pub description: String,
    /// `spawn`, `watch`, `par` or `service`.
    pub class: &'static str,
    pub started: Instant,
    pub status: WorkerStatus,
}

/// Why a birth was refused.
#[derive(Debug)]
enum BirthError {
    Cap(usize),
    ShutDown,
    Thread(String),
}

impl BirthError {
    fn into_failure(self, cmd: &str) -> Failure {
        let msg = match self {
            BirthError::Cap(cap) => format!(
                "cannot start a worker: all {cap} worker seats are taken; \
                 await or cancel a running worker first"
            ),
            BirthError::ShutDown => "cannot start a worker: the session is ending".to_owned(),
            BirthError::Thread(e) => format!("cannot start a worker thread: {e}"),
        };
        Failure::error(msg).with_cmd(&Arc::from(cmd))
    }
}

/// What a birth is.
enum Birth<'a> {
    Spawn,
    /// `defer`: a spawn whose body runs under `audit` (§14).
    Defer,
    Watch(&'a str),
    Par,
    /// A service, with its description.
    Service(&'a str),
}

/// The outcome of waiting on some workers.
enum Waited {
    /// The worker at this index settled (the first in list order).
    Settled(usize),
    /// The worker at this index is cancelled (only when cancellations
    /// stop the wait).
    Cancelled(usize),
    /// None of them is running or settled.
    NoneLive,
    /// The caller's own cancel flag was set: the wait fails with the
    /// cause the caller's run was cancelled with (a SIGTERM's
    /// `terminated`, not always `interrupted`; §8.10).
    CallerCancelled,
}

#[derive(Clone)]
struct Policy {
    cap: Option<usize>,
    idle: Option<Duration>,
    detached_limit: Option<Duration>,
    retention: Option<u64>,
    output_cap: usize,
    surface_cap: usize,
    shutdown_grace: Duration,
}

struct Inner {
    next_id: u64,
    /// The registry proper: running workers and unclaimed settled ones.
    entries: BTreeMap<u64, Arc<Worker>>,
    /// Workers whose thread has not ended: the seats.
    threads: BTreeMap<u64, Arc<Worker>>,
    policy: Policy,
    turn_surface: Option<TurnSurface>,
    watch_output: Option<WatchOutput>,
    epoch: u64,
    notices: Vec<ReapNotice>,
    shut_down: bool,
    reaper: bool,
}

/// The session's `detach` births: the budget and how many succeeded.
#[derive(Clone, Copy, Debug, Default)]
struct DetachLedger {
    budget: u32,
    births: u32,
}

/// A shell's workers: see the module docs.
pub struct WorkerRegistry {
    inner: Mutex<Inner>,
    settle_gen: Mutex<u64>,
    settled: Condvar,
    watch_lock: Mutex<()>,
    detach: Mutex<DetachLedger>,
}

impl Default for WorkerRegistry {
    fn default() -> Self {
        WorkerRegistry::new()
    }
}

impl fmt::Debug for WorkerRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = lock(&self.inner);
        f.debug_struct("WorkerRegistry")
            .field("entries", &inner.entries.len())
            .field("running", &inner.threads.len())
            .finish()
    }
}

thread_local! {
    /// The worker this thread runs, if it is a worker thread.
    static CURRENT: RefCell<Option<Arc<Worker>>> = const { RefCell::new(None) };
}

fn current_worker() -> Option<Arc<Worker>> {
    CURRENT.with(|c| c.borrow().clone())
}

impl WorkerRegistry {
    /// An empty registry with no cap, no leases and no retention bound.
    pub fn new() -> WorkerRegistry {
        WorkerRegistry {
            inner: Mutex::new(Inner {
                next_id: 0,
                entries: BTreeMap::new(),
                threads: BTreeMap::new(),
                policy: Policy {
                    cap: None,
                    idle: None,
                    detached_limit: None,
                    retention: None,
                    output_cap: OUTPUT_CAP,
                    surface_cap: SURFACE_EVENT_CAP,
                    shutdown_grace: SHUTDOWN_GRACE,
                },
                turn_surface: None,
                watch_output: None,
                epoch: 0,
                notices: Vec::new(),
                shut_down: false,
                reaper: false,
            }),
            settle_gen: Mutex::new(0),
            settled: Condvar::new(),
            watch_lock: Mutex::new(()),
            detach: Mutex::new(DetachLedger::default()),
        }
    }

    fn key(&self) -> usize {
        self as *const WorkerRegistry as usize
    }

    /// The worker the current thread runs, if it belongs to this registry.
    fn current(&self) -> Option<Arc<Worker>> {
        current_worker().filter(|w| w.registry == self.key())
    }

    /// Installs (at turn entry) or clears (at exit) the current turn's
    /// surface sink.
    pub fn set_turn_surface(&self, sink: Option<TurnSurface>) {
        lock(&self.inner).turn_surface = sink;
    }

    /// The absolute backstop for workers born from now on: a worker
    /// running longer than this since its birth is cancelled and reported
    /// ([`ReapReason::Backstop`]). `None` (the default) never reaps.
    /// Workers spawned by a worker inherit their parent's limit.
    pub fn set_detached_limit(&self, limit: Option<Duration>) {
        lock(&self.inner).policy.detached_limit = limit;
    }

    /// The idle-observation lease for workers born from now on: a running
    /// worker that no `await`, `poll`, `race` or `is-done` named for this
    /// long is cancelled and reported ([`ReapReason::Idle`]).
    pub fn set_idle_lease(&self, idle: Option<Duration>) {
        lock(&self.inner).policy.idle = idle;
    }

    /// Caps the running workers (`None`: no cap). Settled results do not
    /// hold seats.
    pub fn set_worker_cap(&self, cap: Option<usize>) {
        lock(&self.inner).policy.cap = cap;
    }

    /// Drops unclaimed settled results from the registry after this many
    /// [`tick`](Self::tick)s (`None`: kept until observed).
    pub fn set_retention(&self, turns: Option<u64>) {
        lock(&self.inner).policy.retention = turns;
    }

    /// The stdout/stderr cap of workers born from now on ([`OUTPUT_CAP`]
    /// by default).
    pub fn set_output_cap(&self, bytes: usize) {
        lock(&self.inner).policy.output_cap = bytes;
    }

    /// The deferred-surface cap of workers born from now on
    /// ([`SURFACE_EVENT_CAP`] by default).
    pub fn set_surface_cap(&self, events: usize) {
        lock(&self.inner).policy.surface_cap = events;
    }

    /// How long [`shutdown`](Self::shutdown) waits ([`SHUTDOWN_GRACE`] by
    /// default).
    pub fn set_shutdown_grace(&self, grace: Duration) {
        lock(&self.inner).policy.shutdown_grace = grace;
    }

    /// Where `watch` lines go (`None`: the process's stdout and stderr).
    /// Waits for a line being written to finish; once it returns, no line
    /// goes to the previous output. (So `out` must not call it.)
    /// [`crate::Shell::set_stdout`] and [`crate::Shell::set_stderr`] call
    /// it to follow the ambient streams; the last call wins.
    pub fn set_watch_output(&self, out: Option<WatchOutput>) {
        let _serial = lock(&self.watch_lock);
        lock(&self.inner).watch_output = out;
    }

    /// The `detach` ledger: `(births, budget)`, the successful births so
    /// far and how many the session allows (0 of 0 when `detach` was never
    /// installed).
    pub fn detach_births(&self) -> (u32, u32) {
        let d = *lock(&self.detach);
        (d.births, d.budget)
    }

    /// Sets the `detach` budget; the births already made still count.
    fn set_detach_budget(&self, budget: u32) {
        lock(&self.detach).budget = budget;
    }

    /// Runs `birth` as one `detach` birth under the budget: refused (with
    /// the budget) when it is spent; counted only when `birth` succeeds.
    /// The ledger stays locked across the birth, so concurrent births
    /// cannot overshoot.
    fn detach_birth<T>(&self, birth: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
        let mut ledger = lock(&self.detach);
        if ledger.births >= ledger.budget {
            return Err(Failure::error(format!(
                "the session's detach budget is spent: {} of {} births used, and it is not \
                 replenished; use `service` or `spawn` for work the session may own",
                ledger.births, ledger.budget
            )));
        }
        let out = birth()?;
        ledger.births = ledger.births.saturating_add(1);
        Ok(out)
    }

    /// The handle of the service `id` (`wN`) while it is in the registry.
    fn service_handle(&self, id: &str) -> Result<Value, Failure> {
        let n = id
            .strip_prefix('w')
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|_| !id.starts_with("w+"))
            .ok_or_else(|| {
                Failure::error(format!(
                    "`{id}` is not a worker id: ids look like `w3` (see the host's listing)"
                ))
            })?;
        let w = lock(&self.inner).entries.get(&n).cloned();
        match w {
            Some(w) if w.class == Class::Service => Ok(handle_value(&w)),
            Some(w) => Err(Failure::error(format!(
                "worker {id} is a `{}` worker, not a service: only services are recovered by id",
                w.class.name()
            ))),
            None => Err(Failure::error(format!(
                "no service {id} in this session: no worker has that id, or it was awaited, \
                 cancelled or reaped"
            ))),
        }
    }

    /// Advances the registry's turn clock (the host calls it once per
    /// turn) and reaps what the leases and the retention bound say.
    pub fn tick(&self) {
        lock(&self.inner).epoch += 1;
        self.sweep();
    }

    /// Reaps expired leases and retained results now.
    pub fn sweep(&self) {
        let now = Instant::now();
        let mut reaped = false;
        {
            let mut inner = lock(&self.inner);
            let epoch = inner.epoch;
            let retention = inner.policy.retention;
            let mut verdicts: Vec<(u64, ReapReason)> = Vec::new();
            let mut gone: Vec<u64> = Vec::new();
            for (id, w) in &inner.entries {
                let st = lock(&w.state);
                match st.phase {
                    Phase::Running => {
                        if let Some(limit) = w.limits.backstop {
                            if now.saturating_duration_since(w.born) >= limit {
                                verdicts.push((*id, ReapReason::Backstop(limit)));
                                continue;
                            }
                        }
                        if let Some(idle) = w.limits.idle {
                            if now.saturating_duration_since(st.last_observed) >= idle {
                                verdicts.push((*id, ReapReason::Idle(idle)));
                            }
                        }
                    }
                    Phase::Settled(_) => {
                        if let Some(turns) = retention {
                            if epoch.saturating_sub(st.settled_epoch) >= turns {
                                verdicts.push((*id, ReapReason::Retention(turns)));
                            }
                        }
                    }
                    Phase::Cancelled(_) => gone.push(*id),
                }
            }
            for id in gone {
                inner.entries.remove(&id);
            }
            for (id, reason) in verdicts {
                let Some(w) = inner.entries.remove(&id) else {
                    continue;
                };
                match reason {
                    ReapReason::Idle(d) => {
                        w.cancel(CancelCause::Idle(d));
                    }
                    ReapReason::Backstop(d) => {
                        w.cancel(CancelCause::Backstop(d));
                    }
                    ReapReason::Retention(_) => {}
                }
                inner.notices.push(ReapNotice {
                    worker: w.name(),
                    description: w.description.clone(),
                    reason,
                });
                reaped = true;
            }
        }
        if reaped {
            self.notify();
        }
    }

    /// The reap notices recorded since the last call.
    pub fn take_reap_notices(&self) -> Vec<ReapNotice> {
        std::mem::take(&mut lock(&self.inner).notices)
    }

    /// The registry's entries in id order. A pure observation: it renews
    /// no lease and claims no result.
    pub fn list(&self) -> Vec<WorkerInfo> {
        let inner = lock(&self.inner);
        inner
            .entries
            .values()
            .map(|w| {
                let status = match lock(&w.state).phase {
                    Phase::Running => WorkerStatus::Running,
                    Phase::Settled(_) => WorkerStatus::Settled,
                    Phase::Cancelled(_) => WorkerStatus::Cancelled,
                };
                WorkerInfo {
                    id: w.name(),
                    description: w.description.clone(),
                    class: w.class.name(),
                    started: w.born,
                    status,
                }
            })
            .collect()
    }

    /// The ids of the workers still running (for the interactive shell's
    /// warning before teardown).
    pub fn running_ids(&self) -> Vec<String> {
        let inner = lock(&self.inner);
        inner
            .threads
            .values()
            .filter(|w| w.is_running())
            .map(|w| w.name())
            .collect()
    }

    /// How many worker threads hold seats (running, or cancelled and not
    /// yet stopped).
    pub fn seats_taken(&self) -> usize {
        lock(&self.inner).threads.len()
    }

    /// The session binding names that running workers' functions read
    /// (sorted, deduplicated), for the binding lease's pins.
    ///
    /// Each name was computed at the worker's birth from the spawned
    /// function value: every session slot its code (and the code of the
    /// closures it makes and the globals it reads, transitively) reads,
    /// mapped back to the names bound to those slots at that moment. A
    /// name rebound since still counts (conservative). A function graph
    /// too large to walk pins every bound name. The worker itself runs on
    /// a snapshot of the session, so pruning a name never breaks it; the
    /// pin keeps the name of running work visible to the user.
    pub fn pinned_names(&self) -> Vec<String> {
        let inner = lock(&self.inner);
        let mut names: Vec<String> = inner
            .threads
            .values()
            .filter(|w| w.is_running())
            .flat_map(|w| w.pins.iter().cloned())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Ends the session's work: refuses further births, cancels every
    /// running worker, and waits at most the shutdown grace for their
    /// threads to stop. Returns whether all stopped in time. Idempotent.
    pub fn shutdown(&self) -> bool {
        let (workers, grace) = {
            let mut inner = lock(&self.inner);
            inner.shut_down = true;
            let workers: Vec<Arc<Worker>> = inner.threads.values().cloned().collect();
            inner.entries.retain(|_, w| !w.is_running());
            (workers, inner.policy.shutdown_grace)
        };
        for w in &workers {
            w.cancel(CancelCause::Shutdown);
            // Also stops a worker cancelled earlier that is still winding
            // down (a cleanup holding that cancellation off included).
            w.cancel_count
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            w.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.notify();
        let deadline = Instant::now() + grace;
        let mut gen = lock(&self.settle_gen);
        loop {
            if lock(&self.inner).threads.is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            gen = match self.settled.wait_timeout(gen, deadline - now) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// Wakes every waiter (a worker settled or was cancelled).
    fn notify(&self) {
        let mut gen = lock(&self.settle_gen);
        *gen = gen.wrapping_add(1);
        self.settled.notify_all();
    }

    /// Emits `v` to the current sink: the running worker's deferred
    /// buffer on a worker thread, else the turn's sink (if any).
    fn emit_surface(&self, v: &Value) {
        if let Some(w) = self.current() {
            lock(&w.state).surface.push(v.clone());
            return;
        }
        let sink = lock(&self.inner).turn_surface.clone();
        if let Some(sink) = sink {
            sink(v);
        }
    }

    /// Writes one framed watch line to the durable output, whole.
    fn watch_line(&self, stream: WatchStream, line: &[u8]) {
        // The line lock first: the output read under it is the one
        // `set_watch_output` cannot replace until this line is written.
        let _serial = lock(&self.watch_lock);
        let out = lock(&self.inner).watch_output.clone();
        match out {
            Some(out) => out(stream, line),
            None => {
                // Nowhere to report a failed write to the terminal: the
                // line is dropped, as a closed terminal drops it.
                let _ = match stream {
                    WatchStream::Stdout => {
                        let mut o = std::io::stdout().lock();
                        o.write_all(line).and_then(|()| o.flush())
                    }
                    WatchStream::Stderr => std::io::stderr().lock().write_all(line),
                };
            }
        }
    }

    /// Removes an entry from the registry (its result was observed).
    fn forget(&self, id: u64) {
        lock(&self.inner).entries.remove(&id);
    }

    /// Cancels `w` (if running) and removes its entry.
    fn cancel_worker(&self, w: &Worker, cause: CancelCause) {
        w.cancel(cause);
        self.forget(w.id);
        self.notify();
    }

    /// Starts a worker running `func args` on a fork of `vm`.
    fn spawn(
        self: &Arc<Self>,
        vm: &Vm,
        birth: Birth<'_>,
        func: Value,
        args: Vec<Value>,
    ) -> Result<Arc<Worker>, BirthError> {
        let pins = pins::referenced_names(vm, &func, &args);
        let parent = self.current();
        let (worker, start_reaper) = {
            let mut inner = lock(&self.inner);
            if inner.shut_down {
                return Err(BirthError::ShutDown);
            }
            if let Some(cap) = inner.policy.cap {
                if inner.threads.len() >= cap {
                    return Err(BirthError::Cap(cap));
                }
            }
            inner.next_id += 1;
            let id = inner.next_id;
            let limits = match (&birth, &parent) {
                // Exempt from neglect-based reaping, wherever it is born.
                (Birth::Service(_), _) => Limits::default(),
                (_, Some(p)) => p.limits,
                (_, None) => Limits {
                    idle: inner.policy.idle,
                    backstop: inner.policy.detached_limit,
                },
            };
            let (class, description) = match birth {
                Birth::Spawn => (Class::Spawn, describe_spawn(vm, &func)),
                Birth::Defer => (
                    Class::Spawn,
                    describe_spawn(vm, &func).replacen("spawn", "defer", 1),
                ),
                Birth::Watch(label) => (Class::Watch, format!("watch '{label}'")),
                Birth::Par => (Class::Par, "par item".to_owned()),
                Birth::Service(desc) => (Class::Service, desc.to_owned()),
            };
            let w = Arc::new(Worker::new(
                id,
                self.key(),
                class,
                description,
                limits,
                pins,
                inner.policy.output_cap,
                inner.policy.surface_cap,
            ));
            inner.entries.insert(id, w.clone());
            inner.threads.insert(id, w.clone());
            let start_reaper = limits.armed() && !inner.reaper;
            if start_reaper {
                inner.reaper = true;
            }
            (w, start_reaper)
        };
        if start_reaper {
            self.start_reaper();
        }
        let mut machine = vm.fork(worker.cancel.clone());
        // A worker reads no terminal input (§11.1), puts its external
        // programs in process groups of its own so a cancel reaches all of
        // them, and reports its own cancellation cause, not its creator's.
        machine.stdin = Stdin::Null;
        machine.own_process_groups = true;
        machine.cancel_cause = worker.cancel_cause.clone();
        machine.cancel_count = worker.cancel_count.clone();
        let audited = matches!(birth, Birth::Defer);
        if let Birth::Service(_) = birth {
            // A service outlives the trail its creator had open: it keeps
            // no fragment nobody would ever collect.
            machine.drop_trail();
        }
        match birth {
            Birth::Spawn | Birth::Defer | Birth::Service(_) => {
                machine.stdout = Stdout::Writer(Box::new(BufferWriter {
                    worker: worker.clone(),
                    stream: Stream::Out,
                }));
                machine.stderr = Stdout::Writer(Box::new(BufferWriter {
                    worker: worker.clone(),
                    stream: Stream::Err,
                }));
            }
            Birth::Watch(label) => {
                machine.stdout = Stdout::Writer(Box::new(WatchWriter::new(
                    self.clone(),
                    WatchStream::Stdout,
                    label,
                )));
                machine.stderr = Stdout::Writer(Box::new(WatchWriter::new(
                    self.clone(),
                    WatchStream::Stderr,
                    label,
                )));
            }
            Birth::Par => {
                machine.stdout = Stdout::Writer(Box::new(std::io::sink()));
                machine.stderr = Stdout::Writer(Box::new(std::io::sink()));
            }
        }
        let registry = self.clone();
        let w = worker.clone();
        let started = thread::Builder::new()
            .name(format!("ral-{}", worker.name()))
            .stack_size(WORKER_STACK)
            .spawn(move || run_worker(&registry, &w, machine, func, args, audited));
        if let Err(e) = started {
            worker.cancel(CancelCause::Shutdown);
            {
                let mut inner = lock(&self.inner);
                inner.entries.remove(&worker.id);
                inner.threads.remove(&worker.id);
            }
            return Err(BirthError::Thread(e.to_string()));
        }
        Ok(worker)
    }

    /// Records a worker's result (and the observations it made under its
    /// creator's trail) and gives its seat back.
    fn finish(&self, w: &Worker, outcome: Result<Value, Failure>, trail: Vec<Observation>) {
        let epoch = lock(&self.inner).epoch;
        w.settle(outcome, trail, epoch);
        lock(&self.inner).threads.remove(&w.id);
        self.notify();
    }

    /// Waits until one of `ws` settles (list order breaks ties). A
    /// cancelled worker is skipped, or stops the wait when
    /// `stop_on_cancelled`. Each wake-up renews the idle leases of the
    /// workers waited on. `caller` is the waiting machine's cancel flag.
    fn wait_any(
        &self,
        ws: &[Arc<Worker>],
        caller: &ral_vm::CancelProbe,
        stop_on_cancelled: bool,
    ) -> Waited {
        let mut gen = lock(&self.settle_gen);
        loop {
            let now = Instant::now();
            let mut live = false;
            for (i, w) in ws.iter().enumerate() {
                let mut st = lock(&w.state);
                st.last_observed = now;
                match st.phase {
                    Phase::Settled(_) => return Waited::Settled(i),
                    Phase::Running => live = true,
                    Phase::Cancelled(_) if stop_on_cancelled => return Waited::Cancelled(i),
                    Phase::Cancelled(_) => {}
                }
            }
            if !live {
                return Waited::NoneLive;
            }
            if caller.is_set() {
                return Waited::CallerCancelled;
            }
            gen = match self.settled.wait_timeout(gen, WAIT_SLICE) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    /// Starts the lease reaper (the caller set `inner.reaper`). It runs
    /// while some running worker has a lease and the registry lives.
    fn start_reaper(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        let started = thread::Builder::new()
            .name("ral-worker-reaper".to_owned())
            .spawn(move || loop {
                let Some(registry) = weak.upgrade() else {
                    return;
                };
                let Some(period) = registry.reaper_period() else {
                    return;
                };
                registry.sweep();
                drop(registry);
                thread::sleep(period);
            });
        if started.is_err() {
            // Leases are still enforced at every `tick`.
            lock(&self.inner).reaper = false;
        }
    }

    /// How long the reaper sleeps, or `None` (and the reaper flag cleared)
    /// when no running worker has a lease.
    fn reaper_period(&self) -> Option<Duration> {
        let mut inner = lock(&self.inner);
        let shortest = if inner.shut_down {
            None
        } else {
            inner
                .threads
                .values()
                .flat_map(|w| [w.limits.idle, w.limits.backstop])
                .flatten()
                .min()
        };
        match shortest {
            Some(d) => Some((d / 8).clamp(Duration::from_millis(5), Duration::from_secs(1))),
            None => {
                inner.reaper = false;
                None
            }
        }
    }
}

/// A description for a `spawn` entry: the spawned function's name when it
/// has one.
fn describe_spawn(vm: &Vm, func: &Value) -> String {
    if let Value::Func(f) = func {
        if let ral_vm::Func::Closure { proto, .. } = &**f {
            if let Some(p) = vm.proto(*proto) {
                if !p.name.is_empty() {
                    return format!("spawn {}", p.name);
                }
            }
        }
    }
    "spawn".to_owned()
}

/// The body of a worker thread.
fn run_worker(
    registry: &WorkerRegistry,
    w: &Arc<Worker>,
    mut vm: Vm,
    func: Value,
    args: Vec<Value>,
    audited: bool,
) {
    CURRENT.with(|c| *c.borrow_mut() = Some(w.clone()));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if audited {
            vm.audit_call(func, args)
        } else {
            vm.call_value(func, args)
        }
    }));
    // The worker's fragment of its creator's trail, for whoever observes
    // its result (§13.3).
    let trail = vm.take_trail();
    // Dropping the machine drops its writers: a watch worker's partial
    // final line goes out before the handle reads as settled.
    drop(vm);
    let outcome = match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(Escape::Fail(f))) => Err(f),
        Ok(Err(Escape::Exit(n))) => Err(Failure::raised(
            if n == 0 { 1 } else { n },
            format!("worker {} called `exit {n}`", w.name()),
        )),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(Failure::error(format!(
                "worker {} panicked: {msg}",
                w.name()
            )))
        }
    };
    registry.finish(w, outcome, trail);
    CURRENT.with(|c| *c.borrow_mut() = None);
}

/// The worker behind a handle value.
fn worker_of(h: &Handle) -> Option<&Arc<Worker>> {
    h.state.downcast_ref::<Arc<Worker>>()
}

/// A handle value for `w`.
fn handle_value(w: &Arc<Worker>) -> Value {
    Value::Handle(Arc::new(Handle {
        id: w.id,
        state: Box::new(w.clone()),
    }))
}

/// A worker failure re-raised at the observing site: its status, reason,
/// message and command are kept; its source location belonged to the
/// worker's run (possibly another turn's text) and is dropped so the
/// failure is located at the `await`.
fn reraise(mut f: Failure) -> Failure {
    f.span = None;
    f.trace.clear();
    f
}
