//! The vocabulary of one turn: what a host asks for ([`TurnRequest`]) and
//! what it gets back ([`TurnReport`]).
//!
//! Everything here is plain data or a synchronous trait. No runtime type
//! (an async executor, a channel) appears: a host that lives in an async
//! world bridges at its own [`EventSink`] implementation, and turn
//! completion is [`crate::Shell::run_turn`] returning, a control-flow fact
//! no background worker can delay.
//!
//! The report is flat so a host matches it once: [`TurnReport::Static`]
//! when the source did not parse or check (nothing ran, no binding
//! changed), [`TurnReport::Ran`] otherwise, with the bytes and the
//! time-out flag only where they mean something.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ral_syntax::render::{render_all, Color};
use ral_syntax::{Diagnostic, SourceId, SourceMap};
use ral_vm::audit::Observation;
use ral_vm::caps::{decode, DecodeEnv, Layer};
use ral_vm::{Failure, Value};

/// Exit status of a turn whose source did not parse (spec §16.3).
pub const STATUS_PARSE: i32 = 2;
/// Exit status of a turn whose source did not type-check (spec §16.3).
pub const STATUS_TYPE: i32 = 1;
/// Exit status of a turn stopped by its wall (the `timed-out` cause, §8.10).
pub const STATUS_TIMED_OUT: i32 = 124;
/// Exit status of a turn whose evaluation panicked: an internal error
/// (`EX_SOFTWARE` of sysexits), distinct from every status a ral program
/// can produce by failing.
pub const STATUS_PANICKED: i32 = 70;

/// Where a turn's standard output and standard error go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TurnIo {
    /// The session's ambient streams ([`crate::Shell::set_stdout`],
    /// [`crate::Shell::set_stderr`]; the process's own by default). The
    /// report's `captured` is `None`.
    #[default]
    Inherit,
    /// Fresh buffers for this turn only, returned in the report's
    /// `captured`. The bytes are the ones `Inherit` would have written.
    Capture,
}

/// The structured-event surface: the `surface` builtin emits to the current
/// turn's sink. Synchronous and runtime-agnostic: the host decides whether
/// `emit` prints, drops, coalesces or crosses a channel. It must not block
/// for long (it runs on the evaluating thread).
pub trait EventSink: Send + Sync {
    /// One event, as the ral value the program surfaced.
    fn emit(&self, ev: &Value);
}

/// No sink: every event is dropped.
impl EventSink for () {
    fn emit(&self, _ev: &Value) {}
}

/// A function is a sink.
impl<F: Fn(&Value) + Send + Sync> EventSink for F {
    fn emit(&self, ev: &Value) {
        self(ev)
    }
}

/// A turn-local sink. A turn holds it only while it runs; detached workers
/// never receive it (they buffer and replay through the awaiting turn's).
pub type SurfaceSink = Arc<dyn EventSink>;

/// Hooks around one turn. Every method has a default that does nothing;
/// `()` is the hook set that does nothing at all.
///
/// Order, for a turn that runs: [`TurnLifecycle::diagnostics`] (only when
/// parsing or checking produced warnings), [`TurnLifecycle::before_run`],
/// the run, [`TurnLifecycle::after_run`] with the report that
/// `run_turn` then returns. A [`TurnReport::Static`] turn calls only
/// [`TurnLifecycle::after_run`]. The hooks never get the shell: nothing a
/// hook does can install or prune a binding mid-turn.
///
/// A panic in a hook is the host's own and is not caught; the turn's IO
/// frame still restores the shell's streams and surface on the way out.
pub trait TurnLifecycle {
    /// Warnings of a turn that is about to run (its errors, if any, are in
    /// the [`TurnReport::Static`] instead).
    fn diagnostics(&mut self, _warnings: &StaticDiagnostics) {}
    /// The turn parsed and checked; evaluation starts next.
    fn before_run(&mut self) {}
    /// The turn is over; `report` is what `run_turn` returns.
    fn after_run(&mut self, _report: &TurnReport) {}
}

impl TurnLifecycle for () {}

/// What the program may do: a stack of capability layers (spec §12), empty
/// for the unrestricted profile. For one turn, [`crate::Shell::run_turn`]
/// installs them as the machine's base grant layers (below every `grant`
/// the program opens; workers the turn spawns inherit them) and removes
/// them when the turn ends. Every check intersects all layers, so adding a
/// layer can only take permissions away.
#[derive(Clone, Debug, Default)]
pub struct Capabilities {
    layers: Vec<Arc<Layer>>,
}

impl Capabilities {
    /// Everything the process itself may do (the REPL's and batch `ral`'s
    /// profile): no layer.
    pub fn root() -> Capabilities {
        Capabilities { layers: Vec::new() }
    }

    /// Whether no layer restricts anything (the root profile): a host may
    /// then run programs of its own accord, as the REPL's completion does
    /// to read a command's `--help`.
    pub fn is_unrestricted(&self) -> bool {
        self.layers.is_empty()
    }

    /// This profile further restricted by `layer` (built in Rust: its
    /// fields are public, e.g. `Layer { chdir: Some(false), ..Layer::default() }`).
    pub fn with_layer(mut self, layer: Layer) -> Capabilities {
        self.layers.push(Arc::new(layer));
        self
    }

    /// This profile further restricted by a `grant` record written in ral
    /// (`[exec: [...], fs: [...], shell: [chdir: false]]`), decoded with
    /// paths relative to `cwd` and the process environment, as `grant`
    /// decodes it.
    pub fn with_grant(self, record: &Value, cwd: &Path) -> Result<Capabilities, Failure> {
        let var = |name: &str| std::env::var(name).ok();
        let layer = decode(record, &DecodeEnv { cwd, var: &var })?;
        Ok(self.with_layer(layer))
    }

    /// Whether this is the unrestricted profile.
    pub fn is_root(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers, outermost first.
    pub fn layers(&self) -> &[Arc<Layer>] {
        &self.layers
    }

    /// What these layers let a started program do, in a few words (the
    /// OS sandbox's own summary; empty when nothing confines).
    pub fn describe(&self) -> String {
        ral_vm::sandbox::describe(&self.layers)
    }
}

/// One turn's policy. Build it with [`TurnRequest::new`] and set the fields
/// that differ:
///
/// ```
/// use ral_host::*;
/// use std::time::Duration;
/// let req = TurnRequest {
///     turn_limit: Some(Duration::from_secs(30)),
///     io: TurnIo::Capture,
///     ..TurnRequest::new("<tool>")
/// };
/// assert_eq!(req.script_name, "<tool>");
/// ```
pub struct TurnRequest<'a> {
    /// The name diagnostics show for this source. A name that does not
    /// start with `<` is taken to be a script file: `$SCRIPT` is bound to
    /// it. Use `<stdin>`, `<-c>`, `<tool>` and the like otherwise.
    pub script_name: &'a str,
    /// What the program may do.
    pub caps: Capabilities,
    /// The turn wall: after this long the foreground run is cancelled, the
    /// report says `timed_out: true` and status 124, and the bindings that
    /// landed stay. `None`: no wall.
    pub turn_limit: Option<Duration>,
    /// The lifetime limit of workers this turn detaches. `None`: none.
    pub detached_limit: Option<Duration>,
    /// Where standard output and standard error go.
    pub io: TurnIo,
    /// The structured-event sink for this turn; `None` drops events.
    pub surface: Option<SurfaceSink>,
    /// Hooks around the turn.
    pub lifecycle: Box<dyn TurnLifecycle + 'a>,
    /// Keep an audit trail for the whole run (spec §13.3, §13.4): every
    /// command, write, read and denial it makes is observed, and the
    /// report's `trail` carries them. `false`: no trail, and the run pays
    /// nothing for one.
    pub audit: bool,
}

impl<'a> TurnRequest<'a> {
    /// The REPL's and batch runner's policy: root capabilities, no limits,
    /// inherited streams, no surface, no hooks.
    pub fn new(script_name: &'a str) -> TurnRequest<'a> {
        TurnRequest {
            script_name,
            caps: Capabilities::root(),
            turn_limit: None,
            detached_limit: None,
            io: TurnIo::Inherit,
            surface: None,
            lifecycle: Box::new(()),
            audit: false,
        }
    }
}

impl std::fmt::Debug for TurnRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnRequest")
            .field("script_name", &self.script_name)
            .field("caps", &self.caps)
            .field("turn_limit", &self.turn_limit)
            .field("detached_limit", &self.detached_limit)
            .field("io", &self.io)
            .field("surface", &self.surface.as_ref().map(|_| ".."))
            .field("audit", &self.audit)
            .finish_non_exhaustive()
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled<T> {
    /// It produced a value.
    Ok(T),
    /// A failure no handler caught: raised, a failed command, a cancellation
    /// (the wall, an interrupt), or `run panicked: …` when evaluation hit an
    /// internal error (the only case that rolled the session back).
    Failed(Failure),
    /// `exit N`.
    Exit(i32),
}

impl<T> Settled<T> {
    /// Whether the run produced a value.
    pub fn is_ok(&self) -> bool {
        matches!(self, Settled::Ok(_))
    }
}

/// The bytes a [`TurnIo::Capture`] turn wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The parse or type diagnostics of a turn, with the source they point
/// into, so a client renders them with [`ral_syntax::render`] (or
/// [`StaticDiagnostics::render`]).
#[derive(Clone, Debug)]
pub struct StaticDiagnostics {
    /// In the order found. For a [`TurnReport::Static`] at least one is an
    /// error.
    pub diagnostics: Vec<Diagnostic>,
    /// The turn's source, under its script name.
    pub sources: SourceMap,
    /// The turn's source in `sources`.
    pub source: SourceId,
    /// 2 when parsing failed, 1 when checking failed (spec §16.3); 0 for
    /// warnings only.
    pub status: i32,
}

impl StaticDiagnostics {
    /// Every diagnostic rendered (ariadne), separated by blank lines.
    pub fn render(&self, color: Color) -> String {
        render_all(&self.diagnostics, &self.sources, color)
    }

    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The outcome of one turn.
#[derive(Clone, Debug)]
pub enum TurnReport {
    /// The source did not parse or check; nothing ran and the session is
    /// unchanged (except that the lease clock ticked).
    Static { diagnostics: StaticDiagnostics },
    /// The source ran. Every binding whose statement completed stays, however
    /// the run ended (spec §5.6); only a panic (`run panicked: …`) rolled
    /// the session back to the turn's start.
    Ran {
        /// How the run ended.
        result: Settled<Value>,
        /// The exit status: 0 for a value (1 for a final `false`, §8.1), the
        /// failure's status, `N` for `exit N`, 124 for the wall, 70 for a
        /// panic.
        status: i32,
        /// The source was one command naming an external program, so
        /// `status` is that program's own.
        single_command: bool,
        /// The bytes, for [`TurnIo::Capture`].
        captured: Option<Captured>,
        /// The turn wall stopped the run.
        timed_out: bool,
        /// The run's observations in settlement order, for a request with
        /// [`TurnRequest::audit`]; `None` otherwise.
        trail: Option<Vec<Observation>>,
    },
}

impl TurnReport {
    /// The exit status either way.
    pub fn status(&self) -> i32 {
        match self {
            TurnReport::Static { diagnostics } => diagnostics.status,
            TurnReport::Ran { status, .. } => *status,
        }
    }
}
