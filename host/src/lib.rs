//! ral-host: the persistent ral session and its one door.
//!
//! An embedder (the REPL, batch `ral`, exarch) writes `use ral_host::*;`,
//! makes a [`Shell`] and calls [`Shell::run_turn`] with a [`TurnRequest`]
//! for every piece of source; it gets a [`TurnReport`] back. That is the
//! whole contract:
//!
//! ```
//! use ral_host::*;
//! let mut shell = Shell::default();
//! let report = shell.run_turn("let x = 1", TurnRequest::new("<stdin>"));
//! assert_eq!(report.status(), 0);
//! let report = shell.run_turn("return $[$x + 1]", TurnRequest::new("<stdin>"));
//! let TurnReport::Ran { result: Settled::Ok(v), .. } = report else { panic!() };
//! assert_eq!(v, Value::Int(2));
//! ```
//!
//! - [`turn`]: the request and report vocabulary; synchronous, no runtime
//!   types.
//! - [`shell`]: [`Shell`], the turn's steps, the laws (a failed run keeps
//!   its bindings; the only rollback is the panic checkpoint), the IO frame
//!   and the turn wall.
//! - [`leases`]: the binding lease ledger an embedder may arm.
//! - [`interactive`]: plugins, hooks, keybindings and the editor
//!   interface (`load-plugin`, `_ed-*`) an interactive host installs.
//! - [`ide`]: what editors need (colouring from the real lexer, completion
//!   sites and candidates, fuzzy ranking), for the REPL and `ral --lsp`.
//! - [`profile`]: session capability profiles (`--capabilities`, §12.12),
//!   loaded into the ceiling a [`Shell`] keeps below every turn.
//! - [`audit`]: a run's audit report as JSON (`ral --audit`, exarch's
//!   evidence), from the trail a [`TurnRequest`] with `audit` keeps.
//! - [`workers`]: the per-shell worker registry and the worker builtins
//!   (`spawn`, `await`, …, `surface`) every shell installs, and the agent
//!   forms (`service`, `service-handle`, `detach`) a host installs with
//!   [`Shell::enable_agent_forms`].
//!
//! Cargo feature `fault-injection` (off by default) adds the `__panic`
//! builtin so tests can reach the panic checkpoint.

pub mod audit;
mod fault;
pub mod ide;
pub mod interactive;
pub mod leases;
pub mod lsp;
pub mod profile;
pub mod shell;
pub mod turn;
pub mod workers;

pub use leases::{
    pins_running_work, pins_running_work_by, BindingLease, BindingLedger, BindingPruneNotice,
};
pub use shell::{render_failure, runtime_diagnostic, CancelHandle, MobileSnapshot, Shell};
pub use turn::{
    Capabilities, Captured, EventSink, Settled, StaticDiagnostics, SurfaceSink, TurnIo,
    TurnLifecycle, TurnReport, TurnRequest, STATUS_PANICKED, STATUS_PARSE, STATUS_TIMED_OUT,
    STATUS_TYPE,
};

pub use workers::{AgentForms, WorkerRegistry};

pub use ral_syntax::render::Color;
pub use ral_syntax::{Diagnostic, SourceId, SourceMap};
pub use ral_types::EnvEntry;
pub use ral_vm::audit::{Observation, What};
pub use ral_vm::caps::Layer;
/// The one value printer (`ral_vm::display`): the REPL's renderer, and with
/// [`StringStyle::Words`] the text a host shows a reader who must match
/// strings exactly.
pub use ral_vm::display::{render as render_value, RenderOptions, StringStyle};
pub use ral_vm::{Cause, Failure, Handle, Mobile, Reason, Stdout, Value};

/// Declares the main thread's stack to the front end
/// ([`ral_syntax::declare_stack`]): the process's stack limit, or 8 MiB
/// when it is unlimited or unknown. The `ral` and `ralc` binaries call it
/// first thing in `main`, so no turn asks the system where the stack ends.
pub fn declare_main_thread_stack() {
    const DEFAULT: u64 = 8 * 1024 * 1024;
    #[cfg(unix)]
    let size = rustix::process::getrlimit(rustix::process::Resource::Stack)
        .current
        .unwrap_or(DEFAULT);
    #[cfg(not(unix))]
    let size = DEFAULT;
    ral_syntax::declare_stack(usize::try_from(size.min(1 << 30)).unwrap_or(usize::MAX));
}
