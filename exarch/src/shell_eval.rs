//! One `ral` tool call against the persistent shell: the request exarch
//! builds for [`Shell::run_turn`], the per-call IO frame ([`IoGuard`]), and
//! the reading of the [`TurnReport`] into a [`CallOutcome`].
//!
//! Every call runs with `TurnIo::Capture`, `script_name: "<tool>"`, the
//! call's wall as `turn_limit` and [`DETACHED_LIMIT`] as `detached_limit`.
//!
//! # The IO frame
//!
//! What exarch itself installs for the duration of one call lives in a
//! [`CallFrame`] on the session: the call's event route (where the
//! program's `surface` events go) and its cancel target (what Ctrl-C, a
//! SIGTERM or the run's wall cancels). [`IoGuard`] installs both and its
//! `Drop` clears both, on the normal return and on unwind alike, so a panic
//! mid-call can leave neither a stale route nor a stale cancel target
//! behind (seed 000's hard rule: no hand-written restore epilogue). The
//! shell's own per-turn state (capture buffers, the turn's surface sink,
//! the wall's watchdog) is restored by the host's frame inside `run_turn`.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use ral_host::{
    render_failure, CancelHandle, Capabilities, Cause, Color, EventSink, Reason, Settled, Shell,
    StaticDiagnostics, TurnIo, TurnLifecycle, TurnReport, TurnRequest, Value, STATUS_PANICKED,
};

use ral_host::workers::WorkerStatus;

use crate::bus::{Emitter, Event};
use crate::evidence::Evidence;
use crate::render::value_text;
use crate::render::{CallOutcome, Ending, FailKind, RanCall, StaticFailure};
use crate::tool::RalCall;

/// The lifetime limit of workers a call detaches.
pub const DETACHED_LIMIT: Duration = Duration::from_secs(3600);
/// The script name diagnostics show for a tool call.
pub const SCRIPT_NAME: &str = "<tool>";

/// The per-call state exarch installs; see the module docs.
#[derive(Debug, Default)]
pub struct CallFrame {
    inner: Mutex<FrameState>,
}

#[derive(Debug, Default)]
struct FrameState {
    route: Option<Emitter>,
    cancel: Option<CancelHandle>,
    /// Events that arrived with no call running.
    stray_events: u64,
}

impl CallFrame {
    fn lock(&self) -> MutexGuard<'_, FrameState> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Cancels the running call, if one is; whether one was.
    pub fn cancel_running(&self) -> bool {
        match &self.lock().cancel {
            Some(c) => {
                c.cancel();
                true
            }
            None => false,
        }
    }

    /// Whether a call is installed.
    pub fn is_installed(&self) -> bool {
        let s = self.lock();
        s.route.is_some() || s.cancel.is_some()
    }

    /// Surface events that arrived while no call was running.
    pub fn stray_events(&self) -> u64 {
        self.lock().stray_events
    }

    fn route(&self, ev: Event) {
        let mut s = self.lock();
        match &s.route {
            Some(e) => e.emit(ev),
            None => s.stray_events += 1,
        }
    }
}

/// Installs one call's route and cancel target on a [`CallFrame`]; `Drop`
/// clears them.
#[derive(Debug)]
pub struct IoGuard<'f> {
    frame: &'f CallFrame,
}

impl<'f> IoGuard<'f> {
    /// Installs the frame for one call.
    pub fn install(frame: &'f CallFrame, route: Emitter, cancel: CancelHandle) -> IoGuard<'f> {
        let mut s = frame.lock();
        s.route = Some(route);
        s.cancel = Some(cancel);
        drop(s);
        IoGuard { frame }
    }
}

impl Drop for IoGuard<'_> {
    fn drop(&mut self) {
        let mut s = self.frame.lock();
        s.route = None;
        s.cancel = None;
    }
}

/// The turn's surface sink: routes each event through the session's call
/// frame, so an event emitted after its call ended goes nowhere.
struct AgentSink {
    frame: Arc<CallFrame>,
}

impl EventSink for AgentSink {
    fn emit(&self, ev: &Value) {
        let text = value_text(ev).unwrap_or_else(|| "()".to_owned());
        self.frame.route(Event::Surface(text));
    }
}

/// The call's lifecycle hooks: collect the front end's warnings (the model
/// sees them in STDERR).
struct Hooks<'a> {
    warnings: &'a mut String,
    #[cfg(feature = "fault-injection")]
    panic_after_run: bool,
}

impl TurnLifecycle for Hooks<'_> {
    fn diagnostics(&mut self, warnings: &StaticDiagnostics) {
        self.warnings.push_str(&warnings.render(Color::Never));
    }

    fn after_run(&mut self, _report: &TurnReport) {
        #[cfg(feature = "fault-injection")]
        if self.panic_after_run {
            panic!("exarch fault injection: a panic after the turn ran");
        }
    }
}

/// Per-call options.
#[derive(Clone, Copy, Debug)]
pub struct EvalOptions {
    /// The wall when the call names none.
    pub default_timeout: Duration,
    /// Fault injection: panic in exarch's own hook after the turn ran, so
    /// the panic escapes `run_turn` into the pump (tests only).
    #[cfg(feature = "fault-injection")]
    pub panic_after_run: bool,
}

impl EvalOptions {
    pub fn new(default_timeout: Duration) -> EvalOptions {
        EvalOptions {
            default_timeout,
            #[cfg(feature = "fault-injection")]
            panic_after_run: false,
        }
    }
}

/// Runs one call on `shell` inside an [`IoGuard`] and reads the report:
/// the outcome the model is told about, and the evidence of what the call
/// did (from its audit trail; see [`crate::evidence`]) for the log.
pub fn run_shell(
    shell: &mut Shell,
    frame: &Arc<CallFrame>,
    call: &RalCall,
    opts: &EvalOptions,
    emit: &Emitter,
) -> (CallOutcome, Evidence) {
    let wall = call
        .timeout_secs
        .map_or(opts.default_timeout, Duration::from_secs);
    let before = shell.workers().running_ids();
    let mut warnings = String::new();
    let report = {
        let _guard = IoGuard::install(frame, emit.clone(), shell.cancel_handle());
        let surface: Arc<dyn EventSink> = Arc::new(AgentSink {
            frame: frame.clone(),
        });
        let hooks = Hooks {
            warnings: &mut warnings,
            #[cfg(feature = "fault-injection")]
            panic_after_run: opts.panic_after_run,
        };
        shell.run_turn(
            &call.cmd,
            TurnRequest {
                script_name: SCRIPT_NAME,
                caps: Capabilities::root(),
                turn_limit: Some(wall),
                detached_limit: Some(DETACHED_LIMIT),
                io: TurnIo::Capture,
                surface: Some(surface),
                lifecycle: Box::new(hooks),
                // Every call keeps a trail: the log's evidence of what it
                // ran, wrote and was refused.
                audit: true,
            },
        )
    };
    read_report(shell, report, warnings, wall, &before)
}

/// Turns a report into an outcome (rendering failures against the shell's
/// last source) and the call's evidence.
fn read_report(
    shell: &Shell,
    report: TurnReport,
    warnings: String,
    wall: Duration,
    before: &[String],
) -> (CallOutcome, Evidence) {
    let (result, status, captured, timed_out, trail) = match report {
        TurnReport::Static { diagnostics } => {
            let outcome = CallOutcome::Static(StaticFailure {
                status: diagnostics.status,
                diagnostics: diagnostics.render(Color::Never),
            });
            // Nothing ran, so there is nothing to attest.
            return (outcome, Evidence::default());
        }
        TurnReport::Ran {
            result,
            status,
            captured,
            timed_out,
            trail,
            ..
        } => (
            result,
            status,
            captured.unwrap_or_default(),
            timed_out,
            trail.unwrap_or_default(),
        ),
    };
    let evidence = Evidence::from_trail(&trail);
    drop(trail);
    let (value, ending) = match &result {
        Settled::Ok(v) => (value_text(v), Ending::Value),
        Settled::Exit(_) => (None, Ending::Exit),
        Settled::Failed(f) => {
            let kind = if timed_out {
                FailKind::TimedOut(wall.as_secs().max(1))
            } else if status == STATUS_PANICKED && f.message.starts_with("run panicked") {
                FailKind::Internal
            } else {
                match f.reason {
                    Reason::Cancelled(Cause::Interrupted | Cause::Terminated | Cause::Aborted) => {
                        FailKind::Interrupted
                    }
                    Reason::Cancelled(Cause::TimedOut | Cause::Cancelled | Cause::ReaderGone)
                    | Reason::Exited(_)
                    | Reason::Signaled(_)
                    | Reason::NotFound
                    | Reason::NotRunnable
                    | Reason::Raised => FailKind::Error,
                }
            };
            let diagnostic = render_failure(f, shell, Color::Never);
            (None, Ending::Failed { kind, diagnostic })
        }
    };
    let running_workers = if matches!(ending, Ending::Value) {
        Vec::new()
    } else {
        shell
            .workers()
            .list()
            .into_iter()
            .filter(|w| w.status == WorkerStatus::Running && !before.contains(&w.id))
            .map(|w| {
                let what = if w.description.is_empty() {
                    w.class.to_owned()
                } else {
                    format!("{}: {}", w.class, w.description)
                };
                (w.id, what)
            })
            .collect()
    };
    let outcome = CallOutcome::Ran(RanCall {
        stdout: captured.stdout,
        stderr: captured.stderr,
        warnings,
        value,
        status,
        ending,
        running_workers,
    });
    (outcome, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::{render, Limits};

    fn call(cmd: &str) -> RalCall {
        RalCall {
            cmd: cmd.to_owned(),
            description: None,
            timeout_secs: None,
        }
    }

    fn run(shell: &mut Shell, cmd: &str) -> CallOutcome {
        let frame = Arc::new(CallFrame::default());
        let opts = EvalOptions::new(Duration::from_secs(10));
        run_shell(shell, &frame, &call(cmd), &opts, &Emitter::detached()).0
    }

    #[test]
    fn bindings_persist_and_values_render() {
        let mut shell = Shell::new();
        let r = run(&mut shell, "let n = 41\necho hello");
        assert_eq!(r.status(), 0);
        let r = run(&mut shell, "return $[$n + 1]");
        let text = render(&r, &Limits::default());
        assert_eq!(text, "VALUE:\n42\n\nEXIT: 0");
    }

    #[test]
    fn tool_call_partial_effects_persist_on_error() {
        let mut shell = Shell::new();
        let r = run(
            &mut shell,
            "let before = 1\nfail [status: 3, message: 'boom']\nlet after = 2",
        );
        assert_eq!(r.status(), 3);
        let text = render(&r, &Limits::default());
        assert!(text.contains("boom"), "{text}");
        assert!(text.contains("their bindings are still bound"), "{text}");
        assert_eq!(shell.get("before"), Some(&Value::Int(1)));
        assert_eq!(shell.get("after"), None);
        // The next call reads what landed.
        let r = run(&mut shell, "return $before");
        assert_eq!(render(&r, &Limits::default()), "VALUE:\n1\n\nEXIT: 0");
    }

    #[test]
    fn static_errors_number_as_the_spec_does() {
        let mut shell = Shell::new();
        let parse = run(&mut shell, "let = ");
        assert_eq!(parse.status(), 2);
        let ty = run(&mut shell, "return $undefined_name");
        assert_eq!(ty.status(), 1);
        let text = render(&ty, &Limits::default());
        assert!(
            text.starts_with("ERROR (type error; nothing in this call ran"),
            "{text}"
        );
        assert!(text.ends_with("EXIT: 1"), "{text}");
    }

    #[test]
    fn the_wall_stops_a_call_and_says_so() {
        let mut shell = Shell::new();
        let frame = Arc::new(CallFrame::default());
        let opts = EvalOptions::new(Duration::from_secs(10));
        let mut c = call("let kept = 5\nlet spin = { |n| spin $[$n + 1] }\nspin 0");
        c.timeout_secs = Some(1);
        let started = std::time::Instant::now();
        let (r, _) = run_shell(&mut shell, &frame, &c, &opts, &Emitter::detached());
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(r.status(), 124);
        let text = render(&r, &Limits::default());
        assert!(text.contains("wall of 1s"), "{text}");
        assert_eq!(shell.get("kept"), Some(&Value::Int(5)));
        assert!(!frame.is_installed());
    }

    #[test]
    fn the_frame_routes_surface_events_only_during_its_call() {
        let mut shell = Shell::new();
        let frame = Arc::new(CallFrame::default());
        let opts = EvalOptions::new(Duration::from_secs(10));
        let (tx, rx) = std::sync::mpsc::channel();
        let emit = Emitter::from_sender(tx);
        let (r, _) = run_shell(&mut shell, &frame, &call("surface [card: 1]"), &opts, &emit);
        assert_eq!(r.status(), 0);
        assert_eq!(rx.try_recv().ok(), Some(Event::Surface("[card: 1]".into())));
        assert!(!frame.is_installed());
        assert!(!frame.cancel_running());
    }
}
