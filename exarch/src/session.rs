//! The agent's persistent ral session: one [`Shell`] for the whole run,
//! each tool call a turn on it.
//!
//! # A call
//!
//! [`Session::run_turn`] moves the session to [`Phase::RunningCall`],
//! hands `&mut Session` to [`pump`]'s scoped worker, and drives the UI
//! until the worker sets its completion flag. On the worker,
//! [`Session::run_shell`] first refreshes [`Session::durable`] (so it
//! always holds what the completed calls left and never a call mid-way),
//! then runs the call through [`shell_eval::run_shell`]. The one exit of
//! `run_turn` returns the session to [`Phase::ReadyForUser`] and, at that
//! ready boundary, prunes the bindings idle past the lease.
//!
//! # Panics (seed 000)
//!
//! A panic inside evaluation is caught by the host's own checkpoint in
//! `run_turn` (the call fails with `run panicked: …` and the shell is back
//! at the call's start). A panic anywhere else on the worker (the front
//! end, a lifecycle hook, exarch's own rendering) unwinds out of
//! `Shell::run_turn`, through the host's RAII IO frame and exarch's
//! [`shell_eval::IoGuard`], to `pump`'s `catch_unwind`, which returns
//! `Ok(None)`. `run_turn` then reconciles the shell from the durable
//! snapshot (`Shell::restore`: scope, dynamic context and types together,
//! on a clean machine), so the panicking call's grant frames, env and cwd
//! changes and handler-stack mutations are gone while every completed
//! call's bindings and cwd remain, and the session is ready again.
//!
//! # Binding leases (seed 002)
//!
//! The lease is armed with [`BINDING_IDLE_CALLS`] idle calls when the
//! session is assembled and again after [`Session::clear`], right where
//! the first durable snapshot is taken. Pruning happens only at ready
//! boundaries; its notices go to the session log and the user, never to
//! the model, and the snapshot that comes with them becomes the durable
//! one, so no later rollback can resurrect a pruned name.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ral_host::workers::{WatchStream, DETACH_BIRTHS};
use ral_host::{
    AgentForms, BindingLease, BindingPruneNotice, Capabilities, MobileSnapshot, Shell,
    STATUS_PANICKED,
};

use crate::bus::{pump, Drive, Emitter, Event};
use crate::control::Control;
use crate::evidence::Evidence;
use crate::render::{render, CallOutcome, Ending, FailKind, Limits, RanCall};
use crate::shell_eval::{self, CallFrame, EvalOptions};
use crate::tool::RalCall;

/// Calls a top-level binding may go unused before a prune removes it.
pub const BINDING_IDLE_CALLS: u64 = 256;
/// Running workers a session may have at once.
pub const LIVE_WORKER_CAP: usize = 64;
/// A worker nobody observes for this long is reaped.
pub const WORKER_IDLE_LEASE: Duration = Duration::from_secs(3600);
/// Calls an unclaimed settled worker result is kept for.
pub const SETTLED_RETENTION_CALLS: u64 = 256;
/// How long a stopped call may take to return before the driver reports
/// it stuck.
pub const STUCK_GRACE: Duration = Duration::from_secs(5);

/// Where the session is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Between calls: a prompt or a call is admissible.
    ReadyForUser,
    /// A call is running on the pump's worker.
    RunningCall,
}

/// Session policy.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    /// The wall of a call that names no `timeout_secs`.
    pub default_timeout: Duration,
    /// The binding lease bound.
    pub binding_idle_calls: u64,
    /// Result section limits.
    pub limits: Limits,
    /// The capability ceiling every call runs under (the profile and any
    /// `--capabilities` files, [`crate::profiles`]); root by default.
    pub ceiling: Capabilities,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            default_timeout: Duration::from_secs(60),
            binding_idle_calls: BINDING_IDLE_CALLS,
            limits: Limits::default(),
            ceiling: Capabilities::root(),
        }
    }
}

/// What one call produced.
#[derive(Clone, Debug)]
pub struct CallReport {
    pub outcome: CallOutcome,
    /// The tool result string, exactly as the model gets it.
    pub text: String,
    /// Bindings pruned at the ready boundary after the call (for the log
    /// and the user only).
    pub pruned: Vec<BindingPruneNotice>,
    /// Worker reap notices collected at the same boundary.
    pub reaped: Vec<String>,
    /// The call panicked outside evaluation and the shell was reconciled
    /// from the durable snapshot.
    pub recovered_panic: bool,
    pub duration: Duration,
    /// What the call ran, wrote and was refused, for the log (never the
    /// model); `None` when it did not get as far as running.
    pub evidence: Option<Evidence>,
}

/// What the shell holds that a later process cannot: the session's own
/// bindings (with their types), its working directory, and its running
/// workers. The agent logs how it changes (`shell_state`), so a resumed
/// run can tell the model what no longer exists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShellState {
    /// Name and type of each binding the session made, sorted by name.
    pub bindings: Vec<(String, String)>,
    pub cwd: Option<String>,
    /// Id and what each running worker is (`spawn: description`), sorted.
    pub workers: Vec<(String, String)>,
}

/// See the module docs.
pub struct Session {
    shell: Shell,
    /// The names a fresh shell already has (the prelude), which are not
    /// the session's own.
    baseline: std::collections::HashSet<String>,
    /// The session as the completed calls left it; refreshed on the worker
    /// right before each call, replaced by a prune's snapshot, restored
    /// after a panic the pump caught.
    pub durable: MobileSnapshot,
    phase: Phase,
    frame: Arc<CallFrame>,
    cfg: SessionConfig,
    calls: u64,
    #[cfg(feature = "fault-injection")]
    panic_after_run_on_call: Option<u64>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("phase", &self.phase)
            .field("calls", &self.calls)
            .finish_non_exhaustive()
    }
}

/// A fresh shell under `ceiling`, with exarch's worker policy and the agent forms of spec
/// §11.5: `service` (a worker the idle lease and the per-call backstop
/// never reap), `service-handle`, and `detach` with [`DETACH_BIRTHS`]
/// births per session. `watch` is removed (§11.5: a host whose capture
/// ends with each call omits it); should a build still have it, its lines
/// go to exarch's stderr rather than into the headless result.
fn assemble_shell(ceiling: &Capabilities) -> Shell {
    let mut shell = Shell::new();
    shell.set_capability_ceiling(ceiling.clone());
    shell.disable_watch();
    if let Err(e) = shell.enable_agent_forms(AgentForms {
        service: true,
        detach_births: DETACH_BIRTHS,
    }) {
        // The builtin table and the host disagree: a build inconsistency.
        // The session still works; the forms fail as unavailable.
        eprintln!("exarch: the agent forms could not be installed: {e}");
    }
    let workers = shell.workers();
    workers.set_idle_lease(Some(WORKER_IDLE_LEASE));
    workers.set_worker_cap(Some(LIVE_WORKER_CAP));
    workers.set_retention(Some(SETTLED_RETENTION_CALLS));
    workers.set_watch_output(Some(Arc::new(|_stream: WatchStream, line: &[u8]| {
        use std::io::Write;
        // Nowhere to report a failed write to stderr.
        let _ = std::io::stderr().lock().write_all(line);
    })));
    shell
}

impl Session {
    /// Assembles a session: a fresh shell, the binding lease armed, the
    /// first durable snapshot taken.
    pub fn new(cfg: SessionConfig) -> Session {
        let mut shell = assemble_shell(&cfg.ceiling);
        shell.arm_binding_lease(BindingLease::idle_turns(cfg.binding_idle_calls));
        let durable = shell.snapshot();
        Session {
            baseline: shell.names().map(str::to_owned).collect(),
            shell,
            durable,
            phase: Phase::ReadyForUser,
            frame: Arc::new(CallFrame::default()),
            cfg,
            calls: 0,
            #[cfg(feature = "fault-injection")]
            panic_after_run_on_call: None,
        }
    }

    /// `/clear`: a new shell (the old one's workers are torn down as it
    /// drops), the lease re-armed, a new durable snapshot.
    pub fn clear(&mut self) {
        let mut shell = assemble_shell(&self.cfg.ceiling);
        shell.arm_binding_lease(BindingLease::idle_turns(self.cfg.binding_idle_calls));
        self.durable = shell.snapshot();
        self.baseline = shell.names().map(str::to_owned).collect();
        self.shell = shell;
        self.phase = Phase::ReadyForUser;
    }

    /// The session's own bindings, working directory and running workers.
    pub fn state(&self) -> ShellState {
        let mut names: Vec<&str> = self
            .shell
            .names()
            .filter(|n| !self.baseline.contains(*n))
            .collect();
        names.sort_unstable();
        names.dedup();
        let bindings = names
            .into_iter()
            .map(|n| {
                let ty = self.shell.binding_type(n).unwrap_or_default();
                (n.to_owned(), ty)
            })
            .collect();
        let mut workers: Vec<(String, String)> = self
            .shell
            .workers()
            .list()
            .into_iter()
            .filter(|w| w.status == ral_host::workers::WorkerStatus::Running)
            .map(|w| {
                let what = if w.description.is_empty() {
                    w.class.to_owned()
                } else {
                    format!("{}: {}", w.class, w.description)
                };
                (w.id, what)
            })
            .collect();
        workers.sort();
        ShellState {
            bindings,
            cwd: self
                .shell
                .mobile()
                .context
                .cwd
                .as_ref()
                .map(|p| p.display().to_string()),
            workers,
        }
    }

    /// Runs later calls under `ceiling` (a profile switch). The running
    /// shell keeps its bindings; the new ceiling also holds after a clear.
    pub fn set_ceiling(&mut self, ceiling: Capabilities) {
        self.shell.set_capability_ceiling(ceiling.clone());
        self.cfg.ceiling = ceiling;
    }

    /// Where the session is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The shell, to inspect.
    pub fn shell(&self) -> &Shell {
        &self.shell
    }

    /// Calls run so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// The configuration.
    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    /// Fault injection: the `n`th call (1-based) panics in exarch's own
    /// hook after its turn ran, so the panic reaches the pump.
    #[cfg(feature = "fault-injection")]
    pub fn inject_panic_after_run(&mut self, n: u64) {
        self.panic_after_run_on_call = Some(n);
    }

    /// Runs one call; see the module docs.
    pub fn run_turn<D: Drive + ?Sized>(
        &mut self,
        call: &RalCall,
        driver: &mut D,
        ctl: &Control,
    ) -> CallReport {
        let started = Instant::now();
        self.calls += 1;
        self.phase = Phase::RunningCall;
        let frame = self.frame.clone();
        let mut call_driver = CallDriver {
            inner: driver,
            frame: &frame,
            ctl,
            stopped_at: None,
        };
        let s: &mut Session = &mut *self;
        let pumped = pump(&mut call_driver, move |emit: &Emitter| {
            s.run_shell(call, emit)
        });
        let mut recovered_panic = false;
        let mut evidence = None;
        let (outcome, text) = match pumped {
            Ok(Some((outcome, text, ev))) => {
                evidence = Some(ev);
                (outcome, text)
            }
            Ok(None) => {
                recovered_panic = true;
                self.shell.restore(&self.durable);
                self.internal_failure(
                    "internal error: the call panicked outside evaluation; the session was \
                     restored to its state before this call",
                )
            }
            Err(e) => self.internal_failure(&format!(
                "internal error: cannot start the call's worker thread: {e}"
            )),
        };
        self.phase = Phase::ReadyForUser;
        let (pruned, reaped) = self.ready_boundary();
        CallReport {
            outcome,
            text,
            pruned,
            reaped,
            recovered_panic,
            duration: started.elapsed(),
            evidence,
        }
    }

    /// The worker's half of a call: refresh the durable snapshot, run,
    /// render.
    fn run_shell(&mut self, call: &RalCall, emit: &Emitter) -> (CallOutcome, String, Evidence) {
        self.durable = self.shell.snapshot();
        #[allow(unused_mut)]
        let mut opts = EvalOptions::new(self.cfg.default_timeout);
        #[cfg(feature = "fault-injection")]
        {
            opts.panic_after_run = self.panic_after_run_on_call == Some(self.calls);
        }
        let (outcome, evidence) =
            shell_eval::run_shell(&mut self.shell, &self.frame, call, &opts, emit);
        let text = render(&outcome, &self.cfg.limits);
        (outcome, text, evidence)
    }

    fn internal_failure(&self, message: &str) -> (CallOutcome, String) {
        let outcome = CallOutcome::Ran(RanCall {
            stdout: Vec::new(),
            stderr: Vec::new(),
            warnings: String::new(),
            value: None,
            status: STATUS_PANICKED,
            ending: Ending::Failed {
                kind: FailKind::Internal,
                diagnostic: message.to_owned(),
            },
            running_workers: Vec::new(),
        });
        let text = render(&outcome, &self.cfg.limits);
        (outcome, text)
    }

    /// The ready-boundary work: prune idle bindings (installing the
    /// returned snapshot as the durable one in the same step) and collect
    /// worker reap notices.
    fn ready_boundary(&mut self) -> (Vec<BindingPruneNotice>, Vec<String>) {
        let pruned = match self.shell.prune_idle_bindings() {
            Some((notices, snapshot)) => {
                self.durable = snapshot;
                notices
            }
            None => Vec::new(),
        };
        let reaped = self
            .shell
            .workers()
            .take_reap_notices()
            .into_iter()
            .map(|n| n.to_string())
            .collect();
        (pruned, reaped)
    }

    /// `/resources`: what the session holds, as label/value rows (never
    /// shown to the model).
    pub fn resources(&self) -> Vec<(String, String)> {
        let ledger = self.shell.binding_ledger();
        let workers = self.shell.workers().list();
        let running = workers
            .iter()
            .filter(|w| w.status == ral_host::workers::WorkerStatus::Running)
            .count();
        let mut rows = vec![
            ("calls".to_owned(), self.calls.to_string()),
            (
                "bindings".to_owned(),
                format!(
                    "{} bound, {} leased (pruned after {} idle calls)",
                    self.shell.names().count(),
                    ledger.leased(),
                    self.cfg.binding_idle_calls
                ),
            ),
            (
                "workers".to_owned(),
                format!(
                    "{running} running, {} listed (cap {LIVE_WORKER_CAP})",
                    workers.len()
                ),
            ),
        ];
        for w in workers.iter().take(20) {
            rows.push((
                format!("  {}", w.id),
                format!(
                    "{} {:?}, {}s old{}",
                    w.class,
                    w.status,
                    w.started.elapsed().as_secs(),
                    if w.description.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", w.description)
                    }
                ),
            ));
        }
        let (births, budget) = self.shell.workers().detach_births();
        rows.push((
            "detached".to_owned(),
            format!("{births} of {budget} births used (never replenished)"),
        ));
        if self.frame.stray_events() > 0 {
            rows.push((
                "stray events".to_owned(),
                self.frame.stray_events().to_string(),
            ));
        }
        rows
    }
}

/// Wraps the caller's driver for one call: forwards events and ticks, and
/// turns a stop (Ctrl-C, SIGTERM, the run's wall) into a cancel of the
/// running call, re-sent every tick while the stop stands (the cancel is
/// idempotent, and re-sending closes the window before the turn clears its
/// flag at entry). A call still running [`STUCK_GRACE`] after the stop is
/// reported to the driver as stuck.
struct CallDriver<'a, D: Drive + ?Sized> {
    inner: &'a mut D,
    frame: &'a CallFrame,
    ctl: &'a Control,
    stopped_at: Option<Instant>,
}

impl<D: Drive + ?Sized> Drive for CallDriver<'_, D> {
    fn event(&mut self, ev: Event) {
        self.inner.event(ev);
    }

    fn tick(&mut self) {
        self.inner.tick();
        if self.ctl.stop().is_some() {
            self.frame.cancel_running();
            let since = *self.stopped_at.get_or_insert_with(Instant::now);
            let waited = since.elapsed();
            if waited >= STUCK_GRACE {
                self.inner.stuck(waited);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::agent::{Agent, AgentConfig, NullUi};
    use crate::provider::scripted::{Scripted, ScriptedProvider};
    use ral_host::Value;

    fn call(cmd: &str) -> RalCall {
        RalCall {
            cmd: cmd.to_owned(),
            description: None,
            timeout_secs: None,
        }
    }

    #[test]
    fn calls_return_to_ready_and_refresh_the_durable_snapshot() {
        let mut s = Session::new(SessionConfig::default());
        let ctl = Control::default();
        let r = s.run_turn(&call("let a = 1"), &mut (), &ctl);
        assert_eq!(r.outcome.status(), 0);
        assert_eq!(s.phase(), Phase::ReadyForUser);
        // The snapshot was taken before the call: it does not have `a`.
        assert!(s.durable.get("a").is_none());
        let _ = s.run_turn(&call("let b = 2"), &mut (), &ctl);
        assert_eq!(s.durable.get("a"), Some(&Value::Int(1)));
        assert!(s.durable.get("b").is_none());
    }

    #[test]
    fn an_interrupt_cancels_the_running_call_only() {
        let mut s = Session::new(SessionConfig::default());
        let ctl = Control::default();
        let c2 = ctl.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            c2.interrupt();
        });
        let started = Instant::now();
        let r = s.run_turn(
            &call("let kept = 1\nlet spin = { |n| spin $[$n + 1] }\nspin 0"),
            &mut (),
            &ctl,
        );
        let _ = t.join();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(r.outcome.status(), 130, "{}", r.text);
        assert!(r.text.contains("interrupted by the user"), "{}", r.text);
        assert!(r.text.contains("still bound"), "{}", r.text);
        assert!(ctl.take_interrupt());
        // The session goes on, with what landed.
        let r = s.run_turn(&call("return $kept"), &mut (), &ctl);
        assert_eq!(r.text, "VALUE:\n1\n\nEXIT: 0");
    }

    #[test]
    fn idle_bindings_are_pruned_at_ready_boundaries_and_the_model_is_not_told() {
        let mut s = Session::new(SessionConfig {
            binding_idle_calls: 2,
            ..SessionConfig::default()
        });
        let ctl = Control::default();
        let _ = s.run_turn(&call("let scratch = 1\nlet keep = 2"), &mut (), &ctl);
        let mut pruned = Vec::new();
        for _ in 0..4 {
            let r = s.run_turn(&call("return $keep"), &mut (), &ctl);
            assert!(!r.text.contains("scratch"), "{}", r.text);
            pruned.extend(r.pruned);
        }
        assert_eq!(pruned.len(), 1, "{pruned:?}");
        assert_eq!(pruned[0].name, "scratch");
        assert!(s.shell().get("scratch").is_none());
        assert!(s.durable.get("scratch").is_none());
        assert_eq!(s.shell().get("keep"), Some(&Value::Int(2)));
    }

    #[test]
    fn the_state_names_the_sessions_own_bindings_cwd_and_workers() {
        let mut s = Session::new(SessionConfig::default());
        assert_eq!(s.state().bindings, Vec::<(String, String)>::new());
        let dir = tempfile::tempdir().unwrap();
        let ctl = Control::default();
        let r = s.run_turn(
            &call(&format!(
                "let n = 41\nlet h = service 'a sleeper' {{ sleep 30 }}\ncd '{}'",
                dir.path().display()
            )),
            &mut (),
            &ctl,
        );
        assert_eq!(r.outcome.status(), 0, "{}", r.text);
        let st = s.state();
        let names: Vec<&str> = st.bindings.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["h", "n"]);
        assert_eq!(st.bindings[1].1, "Integer");
        assert_eq!(st.workers.len(), 1, "{:?}", st.workers);
        assert!(st.workers[0].1.contains("a sleeper"), "{:?}", st.workers);
        let real = dir.path().canonicalize().unwrap();
        assert!(
            st.cwd.as_deref() == Some(&real.display().to_string())
                || st.cwd.as_deref() == Some(&dir.path().display().to_string()),
            "{:?}",
            st.cwd
        );
        s.clear();
        assert!(s.state().bindings.is_empty());
    }

    #[test]
    fn clear_rebuilds_the_shell_and_rearms_the_lease() {
        let mut s = Session::new(SessionConfig::default());
        let ctl = Control::default();
        let _ = s.run_turn(&call("let x = 1"), &mut (), &ctl);
        s.clear();
        assert!(s.shell().get("x").is_none());
        assert!(s.shell().binding_ledger().is_armed());
        let r = s.run_turn(&call("let y = 3\nreturn $y"), &mut (), &ctl);
        assert_eq!(r.outcome.status(), 0);
        assert!(!s.resources().is_empty());
    }

    /// Seed 000. A scripted run: call 1 binds a name and changes directory;
    /// call 2 panics mid-evaluation (the host's checkpoint catches it);
    /// call 3 panics after its turn ran, in exarch's own hook, so the panic
    /// unwinds out of `run_turn` into the pump and the session reconciles
    /// from its durable snapshot; call 4 runs on the healed shell.
    #[cfg(feature = "fault-injection")]
    #[test]
    fn worker_panic_preserves_completed_bindings_and_clean_context() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = dir.path().canonicalize().unwrap();
        let dir_text = dir_path.to_str().unwrap().to_owned();
        let provider = ScriptedProvider::new([
            Scripted::ral("t1", &format!("let kept = 41\ncd '{dir_text}'")),
            Scripted::ral("t2", "let lost = 1\ncd /\n__panic\nlet never = 2"),
            Scripted::ral("t3", "let also_lost = 3\ncd /"),
            Scripted::ral("t4", "return $[$kept + 1]"),
            Scripted::text("done"),
        ]);
        let mut session = Session::new(SessionConfig::default());
        session.inject_panic_after_run(3);
        let baseline_grants = session.shell().mobile().context.capabilities.len();
        let baseline_handlers = session.shell().mobile().context.handlers.len();
        let ctl = Control::default();
        let mut agent = Agent::new(&provider, session, AgentConfig::default());
        let out = agent.exchange("go", &mut NullUi, &ctl);
        assert_eq!(out.final_text, "done");
        assert!(out.error.is_none(), "{:?}", out.error);

        let results = tool_results(&provider);
        assert_eq!(results.len(), 4, "{results:?}");
        assert!(results[1].contains("run panicked"), "{}", results[1]);
        assert!(results[1].contains("EXIT: 70"), "{}", results[1]);
        assert!(results[2].contains("internal error"), "{}", results[2]);
        assert!(results[2].contains("EXIT: 70"), "{}", results[2]);
        assert_eq!(results[3], "VALUE:\n42\n\nEXIT: 0");

        let session = agent.session();
        assert_eq!(session.phase(), Phase::ReadyForUser);
        let shell = session.shell();
        assert_eq!(shell.get("kept"), Some(&Value::Int(41)));
        for gone in ["lost", "never", "also_lost"] {
            assert!(shell.get(gone).is_none(), "{gone} survived");
            assert!(shell.binding_type(gone).is_none(), "{gone}'s type survived");
        }
        let ctx = &shell.mobile().context;
        assert_eq!(ctx.capabilities.len(), baseline_grants);
        assert_eq!(ctx.handlers.len(), baseline_handlers);
        assert_eq!(ctx.cwd.as_deref(), Some(dir_path.as_path()));
        assert!(!session.frame.is_installed());
    }

    #[cfg(feature = "fault-injection")]
    fn tool_results(p: &ScriptedProvider) -> Vec<String> {
        use crate::message::Block;
        let last = p.requests().pop().unwrap_or_default();
        last.iter()
            .flat_map(|m| m.blocks.iter())
            .filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content.clone()),
                Block::Text(_) | Block::ToolUse { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_scripted_exchange_reads_a_binding_across_calls() {
        let provider = ScriptedProvider::new([
            Scripted::ral("t1", "let n = 41"),
            Scripted::ral("t2", "return $[$n + 1]"),
            Scripted::text("42"),
        ]);
        let ctl = Control::default();
        let mut agent = Agent::new(
            &provider,
            Session::new(SessionConfig::default()),
            AgentConfig::default(),
        );
        let out = agent.exchange("add one", &mut NullUi, &ctl);
        assert_eq!(out.final_text, "42");
        let reqs = provider.requests();
        assert_eq!(reqs.len(), 3);
        let last = reqs.last().unwrap();
        let shown = format!("{last:?}");
        assert!(shown.contains("VALUE:\\n42\\n\\nEXIT: 0"), "{shown}");
    }
}
