//! [`Shell`]: the persistent session and its one door, [`Shell::run_turn`].
//!
//! # A turn
//!
//! 1. **Entry.** The lease clock and the worker registry's turn clock
//!    tick; the session's cancel flag is cleared (an interrupt that arrived
//!    between turns is void).
//! 2. **Front end.** Parse, check against the session's accumulated
//!    [`TypeEnv`], lower, all on one stack segment. An error returns
//!    [`TurnReport::Static`] (status 2 or 1) and changes nothing else.
//! 3. **Compiling** onto the session's one [`Vm`]. There is one VM for the
//!    life of the session because the closures it holds name its proto
//!    table.
//! 4. **Renewal** (seam 1 of the lease ledger): the module's
//!    [`ral_ir::referenced_names`], once it compiled.
//! 5. **Run**, inside the turn's IO frame and under the turn wall. Each
//!    top-level `let` lands as its statement completes (spec §5.6).
//! 6. **Settle.** The type environment grows by the schemes of exactly the
//!    bindings that landed, read from the scope's install journal, so a
//!    failed turn's landed bindings type-check in the next turn. The
//!    ledger stamps the installs and renews the names the VM reported.
//!
//! # Laws
//!
//! - **A failed run keeps its bindings.** A raise, the wall, `exit`, a
//!   failed command: each leaves every binding that landed, and nothing
//!   reports a rollback. There is no transaction.
//! - **The only rollback is the panic checkpoint.** `run_turn` checkpoints
//!   `(scope, context)` at entry and restores it in exactly one place: the
//!   arm that catches a Rust panic out of compilation or evaluation, which
//!   reports `run panicked: …` (status 70). The scope half is an undo log
//!   (`Scope::checkpoint`), not a copy: a copy-on-write clone would make
//!   the turn's first definition copy the whole slot table and name map,
//!   a cost growing with the session. The context half is a clone (small
//!   vectors). After a panic the machine is rebuilt around the restored
//!   session ([`Vm::fork`] keeps the protos and host builtins and drops
//!   the abandoned frames), and slot numbers the panicking turn handed out
//!   stay retired, never reused.
//! - **Per-turn state restores on unwind.** The turn's stream swap,
//!   surface sink and capability layers are installed by an RAII frame
//!   whose `Drop` puts the shell's own back, and the wall's watchdog is
//!   joined by its `Drop`: no hand-written epilogue a panic could skip.
//! - **The wall.** `turn_limit` arms a watchdog thread that sets the
//!   session's cancel flag (which the VM polls, and which reaches the
//!   external programs it runs). A run it stopped reports the `timed-out`
//!   cause (status 124) and keeps what landed; a run that finished first
//!   is not timed out even if the watchdog fired on its way out.
//! - **Completion is the call returning.** Nothing here waits on a channel
//!   or on workers; the watchdog is joined with a bounded wait (it is
//!   woken at once).

use std::any::Any;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use ral_syntax::ast::{self, StageKind};
use ral_syntax::render::{render, Color};
use ral_syntax::{Code, Diagnostic, SourceId, SourceMap};
use ral_types::{CheckOptions, Checked, EnvEntry, HeadRes, TypeEnv};
use ral_vm::session::ScopeJournal;
use ral_vm::{Cause, Escape, Failure, Mobile, SlotId, Stdout, Value, Vm};

use crate::leases::{
    global_refs, pins_running_work, BindingLease, BindingLedger, BindingPruneNotice,
};
use crate::turn::{
    Capabilities, Captured, Settled, StaticDiagnostics, SurfaceSink, TurnIo, TurnReport,
    TurnRequest, STATUS_PANICKED, STATUS_PARSE, STATUS_TIMED_OUT, STATUS_TYPE,
};
use crate::workers::{
    install_agent_forms, install_worker_builtins, AgentForms, TurnSurface, WatchOutput,
    WatchStream, WorkerRegistry,
};

/// A persistent ral session. `Send`, so a host may drive it from a worker
/// thread; one thread at a time holds `&mut Shell`.
pub struct Shell {
    vm: Vm,
    types: TypeEnv,
    local: LocalState,
    /// The last turn's source, for rendering its runtime failures.
    last_source: Option<(SourceMap, SourceId)>,
    /// The session's capability ceiling (`--capabilities` profiles,
    /// §12.12): permanent layers installed below every turn's own.
    ceiling: Capabilities,
}

/// Host-local state: never part of a snapshot, so a panic rollback does not
/// rewind it.
#[derive(Debug)]
struct LocalState {
    /// Single writer: the thread holding `&mut Shell`.
    bindings: BindingLedger,
    /// Written by worker threads and the reaper too (its own locks).
    workers: Arc<WorkerRegistry>,
    /// The ambient streams `watch` lines share with the machine (see
    /// [`Shell::set_stdout`]); `None` for the process's own.
    ambient_out: Option<SharedSink>,
    ambient_err: Option<SharedSink>,
}

/// An ambient stream the machine and the `watch` output both write to.
type SharedSink = Arc<std::sync::Mutex<Ambient>>;

/// What a host handed [`Shell::set_stdout`] or [`Shell::set_stderr`], held
/// where worker threads can reach it.
enum Ambient {
    Buffer(Vec<u8>),
    Writer(Box<dyn std::io::Write + Send>),
}

impl std::fmt::Debug for Ambient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ambient::Buffer(b) => f.debug_tuple("Buffer").field(&b.len()).finish(),
            Ambient::Writer(_) => f.write_str("Writer(..)"),
        }
    }
}

impl Ambient {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Ambient::Buffer(b) => {
                b.extend_from_slice(bytes);
                Ok(())
            }
            Ambient::Writer(w) => w.write_all(bytes),
        }
    }
}

/// The machine's side of a shared ambient stream.
struct AmbientWriter(SharedSink);

impl std::io::Write for AmbientWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        lock_ambient(&self.0).write_all(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut *lock_ambient(&self.0) {
            Ambient::Buffer(_) => Ok(()),
            Ambient::Writer(w) => w.flush(),
        }
    }
}

/// Locks an ambient stream, recovering it from a writer that panicked.
fn lock_ambient(s: &SharedSink) -> std::sync::MutexGuard<'_, Ambient> {
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `out` as the machine holds it, and the shared sink behind it (`None`
/// for [`Stdout::Inherit`]).
fn share(out: Stdout) -> (Stdout, Option<SharedSink>) {
    let ambient = match out {
        Stdout::Inherit => return (Stdout::Inherit, None),
        Stdout::Buffer(b) => Ambient::Buffer(b),
        Stdout::Writer(w) => Ambient::Writer(w),
    };
    let sink = Arc::new(std::sync::Mutex::new(ambient));
    (
        Stdout::Writer(Box::new(AmbientWriter(sink.clone()))),
        Some(sink),
    )
}

/// What the host handed in, back out of the machine's `held` stream.
fn unshare(held: Stdout, sink: Option<SharedSink>) -> Stdout {
    let Some(sink) = sink else {
        return held;
    };
    drop(held);
    let ambient = std::mem::replace(&mut *lock_ambient(&sink), Ambient::Buffer(Vec::new()));
    match ambient {
        Ambient::Buffer(b) => Stdout::Buffer(b),
        Ambient::Writer(w) => Stdout::Writer(w),
    }
}

/// The session state at one moment: the VM's scope and dynamic context and
/// the checker's type environment, which describe the same bindings and
/// are only ever restored together.
#[derive(Clone, Debug)]
pub struct MobileSnapshot {
    mobile: Mobile,
    types: TypeEnv,
}

impl MobileSnapshot {
    /// The value `name` is bound to in this snapshot.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.mobile.scope.get_named(name)
    }

    /// The scope and context.
    pub fn mobile(&self) -> &Mobile {
        &self.mobile
    }
}

/// Sets the cancel flag of the turn running on a shell (Ctrl-C, a host's
/// own deadline). Cheap to clone, `Send + Sync`. A cancel that arrives
/// between turns is cleared by the next turn's entry.
#[derive(Clone, Debug)]
pub struct CancelHandle {
    flag: Arc<AtomicBool>,
    cause: Arc<std::sync::atomic::AtomicU8>,
    count: Arc<std::sync::atomic::AtomicU32>,
}

impl CancelHandle {
    /// Cancels the running turn: it fails with the `interrupted` cause
    /// (status 130) at the VM's next poll.
    pub fn cancel(&self) {
        self.cancel_with(Cause::Interrupted);
    }

    /// Cancels the running turn with `cause` (`terminated` for SIGTERM or
    /// SIGHUP, 143; `aborted` for SIGQUIT, 131). The cause is stored before
    /// the flag, so the run reports it; a graver cause already in force
    /// stays (causes never downgrade, §8.10). Each call counts as a further
    /// cancellation, which ends a `guard`'s cleanup running with an earlier
    /// one held off. Only atomic operations: a signal handler may call it.
    pub fn cancel_with(&self, cause: Cause) {
        ral_vm::raise_cancel(&self.flag, &self.cause, &self.count, cause);
    }
}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Shell>();
};

impl Default for Shell {
    /// A fresh session: no bindings beyond the builtins, the process's
    /// standard streams as the ambient ones.
    fn default() -> Shell {
        let mut vm = Vm::new(Mobile::default());
        vm.stdout = Stdout::Inherit;
        vm.stderr = Stdout::Inherit;
        vm.mobile.scope.record_journal(Some(false));
        let workers = Arc::new(WorkerRegistry::new());
        // The worker builtins' names are rows of the checker's table that
        // the VM does not implement; a refusal would be a build
        // inconsistency, and the builtins then fail as "not available"
        // when a program calls them.
        let _ = install_worker_builtins(&mut vm, &workers);
        crate::fault::install(&mut vm);
        Shell {
            vm,
            types: TypeEnv::new(),
            local: LocalState {
                bindings: BindingLedger::default(),
                workers,
                ambient_out: None,
                ambient_err: None,
            },
            last_source: None,
            ceiling: Capabilities::root(),
        }
    }
}

impl Shell {
    /// A fresh session (see [`Shell::default`]).
    pub fn new() -> Shell {
        Shell::default()
    }

    /// Runs `src` as one top-level turn; see the module docs for the steps
    /// and laws.
    pub fn run_turn(&mut self, src: &str, mut req: TurnRequest<'_>) -> TurnReport {
        self.local.bindings.tick();
        self.local.workers.tick();
        let cancel = self.vm.mobile.context.cancel.clone();
        cancel.store(false, Ordering::SeqCst);
        self.vm
            .cancel_cause
            .store(Cause::Interrupted as u8, Ordering::SeqCst);

        // The front end, on one stack segment for all three phases (each
        // would otherwise map and unmap a segment of its own when the
        // caller's stack is short, which costs more than the phases).
        let mut sources = SourceMap::new();
        let id = sources.add(req.script_name, src);
        let is_script = !req.script_name.starts_with('<');
        // The surface this shell installs is the one the turn is checked
        // against (§11.5, §16.2).
        let absent = self.absent_builtins();
        if self.types.absent_builtins() != absent.as_slice() {
            self.types = std::mem::take(&mut self.types).with_absent_builtins(absent);
        }
        // So are the session's aliases: a head one handles is of class arm
        // (§17.3).
        let aliases = self.vm.alias_names();
        if self.types.aliases() != aliases.as_slice() {
            self.types = std::mem::take(&mut self.types).with_aliases(aliases);
        }
        let types = &self.types;
        let text = sources.text(id);
        let (parsed, checked, module, warnings) =
            match ral_syntax::with_stack(|| front_end(text, id, is_script, types)) {
                FrontEnd::Refused(diagnostics, status) => {
                    return finish_static(&mut req, diagnostics, sources, id, status);
                }
                FrontEnd::Ready {
                    parsed,
                    checked,
                    module,
                    warnings,
                } => (parsed, checked, module, warnings),
            };
        if !warnings.is_empty() {
            req.lifecycle.diagnostics(&StaticDiagnostics {
                diagnostics: warnings,
                sources: sources.clone(),
                source: id,
                status: 0,
            });
        }
        let single_command = is_single_command(&parsed.program, &checked);
        let turn_refs: Option<Vec<String>> = self
            .local
            .bindings
            .is_armed()
            .then(|| ral_ir::referenced_names(&module).into_iter().collect());

        if self.vm.script.as_str() != req.script_name {
            self.vm.script = Arc::new(req.script_name.to_owned());
        }
        // What a `use` in this turn is checked against, and what `explain`
        // reports: the session's types (the VM adds this turn's as they
        // land).
        self.vm.types = self.types.clone();
        // The panic checkpoint: an undo log on the scope (nothing copied)
        // and the dynamic context (small).
        self.vm.mobile.scope.checkpoint();
        let context = self.vm.mobile.context.clone();
        self.local.workers.set_detached_limit(req.detached_limit);

        // Evaluation, inside the IO frame and under the wall.
        let cancel_count = self.vm.cancel_count.clone();
        let outcome = {
            let frame = IoFrame::install(
                &mut self.vm,
                &self.local.workers,
                &self.ceiling,
                &req.caps,
                req.io,
                req.surface.clone(),
            );
            match req
                .turn_limit
                .map(|d| Watchdog::arm(d, cancel.clone(), cancel_count.clone()))
            {
                Some(Err(e)) => Outcome::Refused(e),
                armed_wall => {
                    let wall = armed_wall.and_then(Result::ok);
                    let mark = req.audit.then(|| frame.vm.open_trail());
                    let outcome = evaluate(
                        frame.vm,
                        &module,
                        Arc::new(ral_vm::SourceText::new(req.script_name, text)),
                        &mut self.local.bindings,
                        turn_refs.as_deref(),
                        &mut req,
                    );
                    let fired = wall.is_some_and(Watchdog::disarm);
                    let trail = mark.map(|m| frame.vm.close_trail(m));
                    let captured = frame.finish();
                    Outcome::Done {
                        outcome,
                        fired,
                        captured,
                        trail,
                    }
                }
            }
        };
        let journal = self.vm.mobile.scope.take_journal();

        let mut trail = req.audit.then(Vec::new);
        let (result, timed_out, captured) = match outcome {
            Outcome::Refused(msg) => {
                self.vm.mobile.scope.commit();
                (Settled::Failed(Failure::error(msg)), false, None)
            }
            Outcome::Done {
                outcome,
                fired,
                captured,
                trail: observed,
            } => {
                if observed.is_some() {
                    trail = observed;
                }
                match outcome {
                    Evaluated::Panicked(payload) => {
                        self.vm.mobile.scope.rollback();
                        self.vm.mobile.context = context;
                        self.reset_machine();
                        // The installs happened and were rolled back: their
                        // ledger entries become orphans the next prune drops.
                        self.note_journal(&journal);
                        let msg = format!("run panicked: {}", panic_message(&*payload));
                        (
                            Settled::Failed(Failure::raised(STATUS_PANICKED, msg)),
                            false,
                            captured,
                        )
                    }
                    Evaluated::Ran(run) => {
                        self.vm.mobile.scope.commit();
                        let landed = landed_statements(&checked, &journal.installs);
                        extend_types(&mut self.types, &checked, landed);
                        self.note_journal(&journal);
                        let (result, timed_out) = settle(run, fired);
                        (result, timed_out, captured)
                    }
                }
            }
        };
        let status = match (&result, timed_out) {
            (_, true) => STATUS_TIMED_OUT,
            (Settled::Ok(Value::Bool(false)), false) => 1,
            (Settled::Ok(_), false) => 0,
            (Settled::Failed(f), false) => f.status,
            (Settled::Exit(n), false) => *n,
        };
        let report = TurnReport::Ran {
            result,
            status,
            single_command,
            captured,
            timed_out,
            trail,
        };
        self.last_source = Some((sources, id));
        req.lifecycle.after_run(&report);
        report
    }

    /// Stamps the journaled installs (with the names each value's code
    /// reads) and renews the names the VM reported used (seams 2 and 3).
    fn note_journal(&mut self, journal: &ScopeJournal) {
        if !self.local.bindings.is_armed() {
            return;
        }
        let scope = &self.vm.mobile.scope;
        let mut by_slot: Option<HashMap<SlotId, &str>> = None;
        for (name, slot) in &journal.installs {
            // An install a panic rolled back has an empty slot: no code.
            let refs = scope.get(*slot).map(|v| global_refs(&self.vm, v));
            let deps: Vec<String> = match refs {
                None => Vec::new(),
                Some(Some(slots)) if slots.is_empty() => Vec::new(),
                Some(Some(slots)) => {
                    let by_slot = by_slot.get_or_insert_with(|| {
                        scope
                            .names()
                            .filter_map(|n| Some((scope.lookup(n)?, n)))
                            .collect()
                    });
                    slots
                        .iter()
                        .filter_map(|s| by_slot.get(s).map(|n| (*n).to_owned()))
                        .collect()
                }
                // Too large to walk: it may read anything bound now.
                Some(None) => scope.names().map(str::to_owned).collect(),
            };
            self.local.bindings.note_install(name, deps);
        }
        self.local
            .bindings
            .renew(journal.uses.iter().map(String::as_str));
    }

    /// Replaces the machine after a panic or a restore: the same session,
    /// protos, host builtins and ambient streams, and no frames (a panic
    /// abandons the loop's frames, handlers and registers mid-flight).
    fn reset_machine(&mut self) {
        let mobile = std::mem::take(&mut self.vm.mobile);
        let mut fresh = self.vm.fork(mobile.context.cancel.clone());
        fresh.mobile = mobile;
        fresh.stdout = std::mem::replace(&mut self.vm.stdout, Stdout::Inherit);
        fresh.stderr = std::mem::replace(&mut self.vm.stderr, Stdout::Inherit);
        fresh
            .mobile
            .scope
            .record_journal(Some(self.local.bindings.is_armed()));
        let _stale = fresh.mobile.scope.take_journal();
        self.vm = fresh;
    }

    /// The install chokepoint for host writes: binds `name` to `value` with
    /// the type `entry` in the session, through the VM scope's one write
    /// path (`Scope::install`), and stamps the lease ledger in the same
    /// act. Writes made by ral code land through the same `Scope::install`
    /// during a run; its journal carries them to the same ledger stamp
    /// when the run settles, before any prune can look. A host seeding its
    /// session does so before arming a lease, so the baseline seal covers
    /// what it binds; a write after arming is leased like any other.
    pub fn install_scope_binding(&mut self, name: &str, value: Value, entry: EnvEntry) {
        self.vm.mobile.scope.install(name, value);
        self.types.insert(name, entry);
        let journal = self.vm.mobile.scope.take_journal();
        self.note_journal(&journal);
    }

    /// The value `name` is bound to in the session.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.vm.mobile.scope.get_named(name)
    }

    /// The printed type scheme of session binding `name`.
    pub fn binding_type(&self, name: &str) -> Option<String> {
        self.types
            .get(name)
            .map(|e| ral_types::print_scheme(&e.scheme, None))
    }

    /// The session's bound names (unordered).
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vm.mobile.scope.names()
    }

    /// The session's type environment.
    pub fn type_env(&self) -> &TypeEnv {
        &self.types
    }

    /// The builtin-table names this shell does not install: host forms of
    /// another host, or ones this host left out (`watch` once
    /// [`Shell::disable_watch`] ran). They are absent from the base scope
    /// (§11.5): the checker resolves them like any unknown name.
    pub fn absent_builtins(&self) -> Vec<&'static str> {
        ral_types::builtin_table()
            .iter()
            .filter(|b| {
                matches!(
                    b.layer,
                    ral_types::Layer::RalHost | ral_types::Layer::Exarch
                ) && !self.vm.has_builtin(b.name)
            })
            .map(|b| b.name)
            .collect()
    }

    /// Sets the session's capability ceiling (§12.12): its layers sit
    /// below every turn's own [`TurnRequest::caps`] and every `grant`, for
    /// the rest of the session, so nothing later can widen it. A host sets
    /// it once, from its session profiles, before the first turn.
    pub fn set_capability_ceiling(&mut self, ceiling: Capabilities) {
        self.ceiling = ceiling;
    }

    /// The session's capability ceiling.
    pub fn capability_ceiling(&self) -> &Capabilities {
        &self.ceiling
    }

    /// The scope and dynamic context.
    pub fn mobile(&self) -> &Mobile {
        &self.vm.mobile
    }

    /// A handle that cancels the running turn from another thread.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle {
            flag: self.vm.mobile.context.cancel.clone(),
            cause: self.vm.cancel_cause.clone(),
            count: self.vm.cancel_count.clone(),
        }
    }

    /// The program's arguments (`args`, §10.1): what a script or `-c`
    /// program was given after its name.
    pub fn set_args(&mut self, args: Arc<[String]>) {
        self.vm.args = args;
    }

    /// Whether external programs get process groups of their own (the
    /// default: a cancel then reaches everything they start). An
    /// interactive host that lends programs the terminal sets `false`, so
    /// they stay in its foreground group and can read the terminal.
    pub fn set_own_process_groups(&mut self, own: bool) {
        self.vm.own_process_groups = own;
    }

    /// Replaces the ambient standard output ([`TurnIo::Inherit`] turns write
    /// there); returns the previous one, as it was handed in (a buffer with
    /// everything written to it since).
    ///
    /// `watch` lines follow the ambient streams: a watch worker's framed
    /// stdout lines go to the ambient standard output and its stderr lines
    /// to the ambient standard error, whichever turn is running (a turn's
    /// capture never holds them, §11.5). To do that the shell keeps a
    /// buffer or writer it is given behind a lock the machine and the
    /// registry's watch output share
    /// ([`WorkerRegistry::set_watch_output`], which this calls; a host
    /// that wants watch lines elsewhere sets that afterwards: the last
    /// call wins). [`Stdout::Inherit`] means the process's own streams for
    /// both.
    pub fn set_stdout(&mut self, out: Stdout) -> Stdout {
        let (held, sink) = share(out);
        let old = std::mem::replace(&mut self.vm.stdout, held);
        let old_sink = std::mem::replace(&mut self.local.ambient_out, sink);
        // Re-pointed first, so no watch line reaches the old sink after
        // it is handed back.
        self.follow_ambient();
        unshare(old, old_sink)
    }

    /// Replaces the ambient standard error; returns the previous one. As
    /// [`Shell::set_stdout`], for `watch` stderr lines.
    pub fn set_stderr(&mut self, err: Stdout) -> Stdout {
        let (held, sink) = share(err);
        let old = std::mem::replace(&mut self.vm.stderr, held);
        let old_sink = std::mem::replace(&mut self.local.ambient_err, sink);
        self.follow_ambient();
        unshare(old, old_sink)
    }

    /// Points the registry's watch output at the ambient streams.
    fn follow_ambient(&self) {
        let (out, err) = (
            self.local.ambient_out.clone(),
            self.local.ambient_err.clone(),
        );
        if out.is_none() && err.is_none() {
            self.local.workers.set_watch_output(None);
            return;
        }
        let output: WatchOutput = Arc::new(move |stream: WatchStream, line: &[u8]| {
            let sink = match stream {
                WatchStream::Stdout => &out,
                WatchStream::Stderr => &err,
            };
            // A failed write has nowhere to be reported (the worker that
            // wrote the line is not waiting on it): the line is dropped.
            let _ = match sink {
                Some(s) => {
                    let mut a = lock_ambient(s);
                    a.write_all(line).and_then(|()| match &mut *a {
                        Ambient::Buffer(_) => Ok(()),
                        Ambient::Writer(w) => w.flush(),
                    })
                }
                None => {
                    use std::io::Write;
                    match stream {
                        WatchStream::Stdout => {
                            let mut o = std::io::stdout().lock();
                            o.write_all(line).and_then(|()| o.flush())
                        }
                        WatchStream::Stderr => std::io::stderr().lock().write_all(line),
                    }
                }
            };
        });
        self.local.workers.set_watch_output(Some(output));
    }

    /// Installs the agent forms `forms` selects (spec §11.5): `service`
    /// and `service-handle`, and `detach` with its birth budget. See
    /// [`AgentForms`]. A shell has none of them until this is called.
    /// Every machine the shell runs (its workers' included) sees them.
    /// An error means the builtin table and the host disagree (a build
    /// inconsistency).
    pub fn enable_agent_forms(&mut self, forms: AgentForms) -> Result<(), String> {
        install_agent_forms(&mut self.vm, &self.local.workers, forms)
    }

    /// Removes `watch` (§11.5): a host whose output capture ends with each
    /// turn (exarch) omits it, because a worker cannot safely keep that
    /// turn's sink. A program that names it then fails as naming a builtin
    /// this host does not provide.
    pub fn disable_watch(&mut self) {
        self.vm.unregister_host_builtin("watch");
    }

    /// The last turn that got past the front end: its source and id, for
    /// rendering a runtime failure with [`runtime_diagnostic`].
    pub fn last_source(&self) -> Option<(&SourceMap, SourceId)> {
        self.last_source.as_ref().map(|(m, id)| (m, *id))
    }

    /// The session as it is now, to restore with [`Shell::restore`].
    pub fn snapshot(&self) -> MobileSnapshot {
        MobileSnapshot {
            mobile: self.vm.mobile.clone(),
            types: self.types.clone(),
        }
    }

    /// Puts the session back to `snap` (a host's own panic recovery):
    /// scope, context and types together, a clean machine, and slot
    /// numbers handed out since retired. The lease ledger is host-local
    /// and is not rewound; entries for names `snap` lacks are orphans the
    /// next prune drops without a notice.
    pub fn restore(&mut self, snap: &MobileSnapshot) {
        let mut mobile = snap.mobile.clone();
        mobile.scope.retire_slots(self.vm.mobile.scope.slot_count());
        self.vm.mobile = mobile;
        self.reset_machine();
        self.types = snap.types.clone();
    }

    /// Arms `lease` on this shell: every name bound now is sealed as
    /// baseline (never pruned), and the lease clock starts at 0. Re-arming
    /// reseals and drops the leases held so far.
    pub fn arm_binding_lease(&mut self, lease: BindingLease) {
        self.local.bindings.arm(lease, self.vm.mobile.scope.names());
        self.vm.mobile.scope.record_journal(Some(true));
    }

    /// The lease ledger, to inspect.
    pub fn binding_ledger(&self) -> &BindingLedger {
        &self.local.bindings
    }

    /// Prunes the bindings idle past the armed lease, at a turn boundary
    /// (it takes `&mut self`, so no turn and no hook can be running). In
    /// sorted name order, each idle lease is:
    ///
    /// - an **orphan** when its name is no longer bound (a panic rolled the
    ///   install back, or a restore did): dropped silently, no notice;
    /// - **pinned** when the bound value structurally reaches running work
    ///   ([`pins_running_work`]): skipped, not renewed, looked at again
    ///   next time;
    /// - otherwise **pruned**: the name and its type leave the session
    ///   together, and a notice records it.
    ///
    /// Then the **adoption sweep** leases, from now, every bound name that
    /// is neither baseline nor tracked. Returns `None` when nothing was
    /// pruned; otherwise the notices together with the post-prune snapshot
    /// (install it as the durable checkpoint, so no later rollback can
    /// resurrect a pruned name). Unarmed: always `None`.
    pub fn prune_idle_bindings(&mut self) -> Option<(Vec<BindingPruneNotice>, MobileSnapshot)> {
        if !self.local.bindings.is_armed() {
            return None;
        }
        let idle = self.local.bindings.idle();
        let pinned_by_code = if idle.is_empty() {
            Vec::new()
        } else {
            self.local.workers.pinned_names()
        };
        let mut notices = Vec::new();
        let mut pruned = Vec::new();
        for (name, idle) in idle {
            match self.vm.mobile.scope.get_named(&name) {
                None => pruned.push((name, None)),
                Some(v) if pins_running_work(v) => {}
                Some(_) if pinned_by_code.binary_search(&name).is_ok() => {}
                Some(_) => pruned.push((name, Some(idle))),
            }
        }
        for (name, idle) in pruned {
            self.local.bindings.forget(&name);
            if let Some(idle_turns) = idle {
                self.vm.mobile.scope.remove(&name);
                notices.push(BindingPruneNotice { name, idle_turns });
            }
        }
        if !notices.is_empty() {
            let kept = TypeEnv::new();
            self.types = self.types.names().fold(kept, |mut env, n| {
                if notices.iter().all(|p| p.name != n) {
                    if let Some(e) = self.types.get(n) {
                        env.insert(n, e.clone());
                    }
                }
                env
            });
        }
        let names: Vec<&str> = self.vm.mobile.scope.names().collect();
        for n in names {
            self.local.bindings.adopt(n);
        }
        if notices.is_empty() {
            None
        } else {
            Some((notices, self.snapshot()))
        }
    }

    /// Applies the function value `func` (a hook, a keybinding handler, a
    /// prompt block the session holds) to `args` and runs it to its value,
    /// between turns. The discipline is a turn's: the cancel flag is
    /// cleared first (so [`CancelHandle::cancel`] stops the call), a panic
    /// puts the session back as it was and reports `run panicked: …`, and
    /// with [`TurnIo::Capture`] the call's output is returned instead of
    /// written to the ambient streams. Nothing is checked (the value is
    /// already typed) and no binding lands (a call makes none).
    pub fn call_value(
        &mut self,
        func: Value,
        args: Vec<Value>,
        io: TurnIo,
    ) -> (Settled<Value>, Option<Captured>) {
        let cancel = self.vm.mobile.context.cancel.clone();
        cancel.store(false, Ordering::SeqCst);
        self.vm
            .cancel_cause
            .store(Cause::Interrupted as u8, Ordering::SeqCst);
        self.vm.mobile.scope.checkpoint();
        let context = self.vm.mobile.context.clone();
        let (ran, captured) = {
            // The session's ceiling confines hooks and handlers too.
            let frame = IoFrame::install(
                &mut self.vm,
                &self.local.workers,
                &self.ceiling,
                &Capabilities::default(),
                io,
                None,
            );
            let ran = catch_unwind(AssertUnwindSafe(|| frame.vm.call_value(func, args)));
            (ran, frame.finish())
        };
        let settled = match ran {
            Ok(run) => {
                self.vm.mobile.scope.commit();
                self.vm.mobile.scope.clear_reservations();
                settle(run, false).0
            }
            Err(payload) => {
                self.vm.mobile.scope.rollback();
                self.vm.mobile.context = context;
                self.reset_machine();
                let msg = format!("run panicked: {}", panic_message(&*payload));
                Settled::Failed(Failure::raised(STATUS_PANICKED, msg))
            }
        };
        (settled, captured)
    }

    /// Sets environment variable `name` for the session (what the rc
    /// file's `env` does, spec §15.3): programs the session starts see
    /// it, and so does `env`.
    pub fn set_env(&mut self, name: &str, value: &str) {
        let env = &mut self.vm.mobile.context.env;
        env.retain(|(n, _)| n != name);
        env.push((name.to_owned(), Some(value.to_owned())));
    }

    /// The names of the session's aliases (`alias`, a plugin's), sorted.
    pub fn alias_names(&self) -> Vec<String> {
        let mut out: Vec<String> = match self.vm.mobile.context.handlers.first() {
            Some(Value::List(items)) if is_alias_frame(items) => match items.first() {
                Some(Value::Record(r)) => r.iter().map(|(k, _)| k.to_string()).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        out.sort();
        out
    }

    /// The function-call depth limit (the rc file's `recursion_limit`,
    /// spec §15.3; 100,000 by default).
    pub fn set_recursion_limit(&mut self, frames: usize) {
        self.vm.max_depth = frames;
    }

    /// Whether `name` runs on this session's machine (the VM's own or a
    /// host builtin installed on it).
    pub fn has_builtin(&self, name: &str) -> bool {
        self.vm.has_builtin(name)
    }

    /// Installs host builtins on the session's machine (and on every
    /// machine it forks): what an interactive host adds (`load-plugin`,
    /// the editor interface). Each `name` must be a row of the builtin
    /// table that the VM does not implement itself.
    pub fn register_host_builtin(
        &mut self,
        name: &str,
        arity: u8,
        func: ral_vm::HostFn,
    ) -> Result<(), String> {
        self.vm.register_host_builtin(name, arity, func)
    }

    /// The shell's worker registry, for host policy (a live-worker cap,
    /// idle leases, retention, where `watch` lines go) and inspection.
    pub fn workers(&self) -> &Arc<WorkerRegistry> {
        &self.local.workers
    }
}

impl Drop for Shell {
    /// Ends the session's work: every running worker is cancelled and
    /// waited for, for a bounded time ([`WorkerRegistry::shutdown`]). A
    /// worker running a program tears down the program's process group
    /// as it stops: `SIGTERM`, a grace of 200 ms, then `SIGKILL`.
    /// Processes started by `detach` are not the session's and keep
    /// running.
    fn drop(&mut self) {
        self.local.workers.shutdown();
    }
}

/// What one turn installs on the machine: the stream swap, the surface
/// sink and the capability layers. `Drop` restores the shell's streams,
/// clears the sink and removes the layers, on the normal path and on
/// unwind alike.
struct IoFrame<'v> {
    vm: &'v mut Vm,
    workers: &'v WorkerRegistry,
    /// The shell's ambient streams while a capture is installed.
    saved: Option<(Stdout, Stdout)>,
    /// The grant stack's length and base count before the turn's layers.
    grants: (usize, usize),
}

impl<'v> IoFrame<'v> {
    fn install(
        vm: &'v mut Vm,
        workers: &'v WorkerRegistry,
        ceiling: &Capabilities,
        caps: &Capabilities,
        io: TurnIo,
        surface: Option<SurfaceSink>,
    ) -> IoFrame<'v> {
        let grants = (vm.grants.len(), vm.base_grants);
        vm.grants.extend(ceiling.layers().iter().cloned());
        vm.grants.extend(caps.layers().iter().cloned());
        vm.base_grants = vm.grants.len();
        let saved = match io {
            TurnIo::Inherit => None,
            TurnIo::Capture => Some((
                std::mem::replace(&mut vm.stdout, Stdout::Buffer(Vec::new())),
                std::mem::replace(&mut vm.stderr, Stdout::Buffer(Vec::new())),
            )),
        };
        let sink: Option<TurnSurface> =
            surface.map(|s| -> TurnSurface { Arc::new(move |v: &Value| s.emit(v)) });
        workers.set_turn_surface(sink);
        IoFrame {
            vm,
            workers,
            saved,
            grants,
        }
    }

    /// Restores the shell's streams and returns what a capture collected.
    fn finish(mut self) -> Option<Captured> {
        let (out, err) = self.saved.take()?;
        let stdout = std::mem::replace(&mut self.vm.stdout, out);
        let stderr = std::mem::replace(&mut self.vm.stderr, err);
        Some(Captured {
            stdout: buffer_bytes(stdout),
            stderr: buffer_bytes(stderr),
        })
    }
}

impl Drop for IoFrame<'_> {
    fn drop(&mut self) {
        self.workers.set_turn_surface(None);
        self.vm.grants.truncate(self.grants.0);
        self.vm.base_grants = self.grants.1;
        if let Some((out, err)) = self.saved.take() {
            self.vm.stdout = out;
            self.vm.stderr = err;
        }
    }
}

fn buffer_bytes(s: Stdout) -> Vec<u8> {
    match s {
        Stdout::Buffer(b) => b,
        Stdout::Inherit | Stdout::Writer(_) => Vec::new(),
    }
}

/// The turn wall: a thread that sets the cancel flag when the limit passes
/// unless it is disarmed first. `Drop` wakes and joins it.
struct Watchdog {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    fired: Arc<AtomicBool>,
}

impl Watchdog {
    fn arm(
        limit: Duration,
        cancel: Arc<AtomicBool>,
        count: Arc<std::sync::atomic::AtomicU32>,
    ) -> Result<Watchdog, String> {
        let (stop, wake) = mpsc::channel::<()>();
        let fired = Arc::new(AtomicBool::new(false));
        let flag = fired.clone();
        let thread = std::thread::Builder::new()
            .name("ral-turn-wall".to_owned())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = wake.recv_timeout(limit) {
                    flag.store(true, Ordering::SeqCst);
                    // Counted, so a cleanup holding off an earlier
                    // cancellation still meets the wall (§8.7).
                    count.fetch_add(1, Ordering::SeqCst);
                    cancel.store(true, Ordering::SeqCst);
                }
            })
            .map_err(|e| format!("cannot start the turn wall: {e}"))?;
        Ok(Watchdog {
            stop: Some(stop),
            thread: Some(thread),
            fired,
        })
    }

    /// Stops the watchdog; whether it fired first.
    fn disarm(mut self) -> bool {
        self.stop_and_join();
        self.fired.load(Ordering::SeqCst)
    }

    fn stop_and_join(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

enum Outcome {
    /// The turn could not be set up (the wall's thread); nothing ran.
    Refused(String),
    Done {
        outcome: Evaluated,
        fired: bool,
        captured: Option<Captured>,
        /// The run's observations, when the request asked for them.
        trail: Option<Vec<ral_vm::audit::Observation>>,
    },
}

enum Evaluated {
    Ran(Result<Value, Escape>),
    Panicked(Box<dyn Any + Send>),
}

/// Compiles and runs the module, catching a panic out of either. Renews
/// the turn's references once it compiled (lease seam 1).
fn evaluate(
    vm: &mut Vm,
    module: &ral_ir::Module,
    source: Arc<ral_vm::SourceText>,
    ledger: &mut BindingLedger,
    refs: Option<&[String]>,
    req: &mut TurnRequest<'_>,
) -> Evaluated {
    let main = match catch_unwind(AssertUnwindSafe(|| vm.load_source(module, source))) {
        Ok(Ok(main)) => main,
        Ok(Err(e)) => {
            let f = Failure::error(format!("cannot compile this turn: {e}"));
            return Evaluated::Ran(Err(Escape::Fail(f)));
        }
        Err(payload) => return Evaluated::Panicked(payload),
    };
    if let Some(refs) = refs {
        ledger.renew(refs.iter().map(String::as_str));
    }
    req.lifecycle.before_run();
    match catch_unwind(AssertUnwindSafe(|| vm.run_main(main))) {
        Ok(run) => Evaluated::Ran(run),
        Err(payload) => Evaluated::Panicked(payload),
    }
}

/// The run's result, and whether the wall stopped it: the watchdog fired
/// and the run did not produce a value or exit. A failure then becomes the
/// `timed-out` cancellation (status 124), keeping its site and trace.
fn settle(run: Result<Value, Escape>, fired: bool) -> (Settled<Value>, bool) {
    match run {
        Ok(v) => (Settled::Ok(v), false),
        Err(Escape::Exit(n)) => (Settled::Exit(n), false),
        Err(Escape::Fail(f)) if fired => {
            let mut timed_out = Failure::cancelled(Cause::TimedOut);
            timed_out.span = f.span;
            timed_out.trace = f.trace.clone();
            timed_out.trace_elided = f.trace_elided;
            (Settled::Failed(timed_out), true)
        }
        Err(Escape::Fail(f)) => (Settled::Failed(f), false),
    }
}

/// What the front end made of a turn's source.
enum FrontEnd {
    /// Parse or type errors (all diagnostics), and the status they mean.
    Refused(Vec<Diagnostic>, i32),
    Ready {
        parsed: ral_syntax::Parsed,
        checked: Box<Checked>,
        module: ral_ir::Module,
        /// Diagnostics that are not errors.
        warnings: Vec<Diagnostic>,
    },
}

/// Parses, checks against the session's `types` and lowers one turn.
fn front_end(text: &str, id: SourceId, is_script: bool, types: &TypeEnv) -> FrontEnd {
    let mut parsed = ral_syntax::parse(text, id);
    if parsed.has_errors() {
        return FrontEnd::Refused(parsed.diagnostics, STATUS_PARSE);
    }
    let opts = CheckOptions { is_script };
    let mut checked = ral_types::check_program(&parsed.program, id, types, &opts);
    let mut diagnostics = std::mem::take(&mut parsed.diagnostics);
    diagnostics.append(&mut checked.diagnostics);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return FrontEnd::Refused(diagnostics, STATUS_TYPE);
    }
    let module =
        ral_ir::lower_with_session(&parsed.program, &checked, id, &|n| types.get(n).is_some());
    FrontEnd::Ready {
        parsed,
        checked: Box::new(checked),
        module,
        warnings: diagnostics,
    }
}

/// Adds the schemes of the bindings made by the first `landed` statements
/// to `types`, in place. (`TypeEnv::extend_with_prefix` builds a new
/// environment from a clone, which copies the whole map while the old one
/// is alive; extending an empty one and inserting the few new entries
/// touches only what the turn bound.)
fn extend_types(types: &mut TypeEnv, checked: &Checked, landed: usize) {
    if !checked.bindings.iter().any(|b| b.stmt < landed) {
        return;
    }
    let delta = TypeEnv::new().extend_with_prefix(checked, landed);
    for name in delta.names() {
        if let Some(entry) = delta.get(name) {
            types.insert(name, entry.clone());
        }
    }
}

/// How many leading top-level statements of the turn landed: the checker
/// lists the turn's bindings in statement order and the VM journaled its
/// installs in the same order, so the first binding without an install is
/// where the run stopped.
fn landed_statements(checked: &Checked, installs: &[(String, SlotId)]) -> usize {
    let mut installed = installs.iter().peekable();
    for b in &checked.bindings {
        match installed.peek() {
            Some((name, _)) if *name == b.name => {
                installed.next();
            }
            Some(_) | None => return b.stmt,
        }
    }
    usize::MAX
}

/// Whether the program is one command naming an external program (so its
/// status is that program's own).
fn is_single_command(program: &ast::Program, checked: &Checked) -> bool {
    let [ast::Stmt::Chain(chain)] = program.stmts.as_slice() else {
        return false;
    };
    let [pipeline] = chain.alternatives.as_slice() else {
        return false;
    };
    let [stage] = pipeline.stages.as_slice() else {
        return false;
    };
    matches!(stage.kind, StageKind::Command(_))
        && matches!(
            checked.elab.heads.get(stage.id),
            Some(HeadRes::External(_) | HeadRes::Path(_))
        )
}

fn finish_static(
    req: &mut TurnRequest<'_>,
    diagnostics: Vec<Diagnostic>,
    sources: SourceMap,
    source: SourceId,
    status: i32,
) -> TurnReport {
    let report = TurnReport::Static {
        diagnostics: StaticDiagnostics {
            diagnostics,
            sources,
            source,
            status,
        },
    };
    req.lifecycle.after_run(&report);
    report
}

/// Whether a handler frame is the alias frame (`alias` marks it with
/// `<aliases>` in its catch-all slot).
fn is_alias_frame(items: &[Value]) -> bool {
    matches!(items.get(1), Some(Value::Str(s)) if s.as_str() == "<aliases>")
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_owned()
    }
}

/// The `runtime-failure` diagnostic for a failure that escaped a turn
/// whose source is `id` in `sources` (see [`Shell::last_source`]): the
/// failing site, and the call trace as notes. `None` when the failure
/// carries no site (render its text instead). A site inside a function an
/// earlier turn defined points into that turn's source, which the shell
/// no longer holds; such a site is not rendered against this one.
pub fn runtime_diagnostic(f: &Failure, sources: &SourceMap, id: SourceId) -> Option<Diagnostic> {
    let span = f.span?;
    let file = sources.get(id)?;
    if span.end as usize > sources.text(id).len() {
        return None;
    }
    let mut diag = Diagnostic::new(Code::RuntimeFailure, id, String::new(), span, &*f.message);
    diag.message = f.to_string();
    for (i, (name, site)) in f.trace.iter().enumerate() {
        if f.trace_elided > 0 && i == ral_vm::failure::TRACE_KEEP {
            diag = diag.with_note(format!("… {} more calls …", f.trace_elided));
        }
        let (line, col) = file.line_col(site.start);
        let note = match name {
            Some(name) => format!("in function `{name}` called at {line}:{col}"),
            None => format!("in a function called at {line}:{col}"),
        };
        diag = diag.with_note(note);
    }
    if let Some(hint) = &f.hint {
        diag = diag.with_help(hint.clone());
    }
    Some(diag)
}

/// A failure as text: the rendered diagnostic when it has a site in the
/// last turn's source, else `error[runtime-failure]: message`. A failure
/// that is a cancellation or a panic says so in its message; nothing here
/// claims a rollback, because a failed run keeps its bindings.
pub fn render_failure(f: &Failure, shell: &Shell, color: Color) -> String {
    let mut out = match shell
        .last_source()
        .and_then(|(sources, id)| Some((runtime_diagnostic(f, sources, id)?, sources)))
    {
        Some((d, sources)) => render(&d, sources, color),
        None => match &f.hint {
            Some(hint) => format!("error[{}]: {f}\nhelp: {hint}\n", Code::RuntimeFailure),
            None => format!("error[{}]: {f}\n", Code::RuntimeFailure),
        },
    };
    // A module's own diagnostics (§10.4) follow the failure's.
    if let Some(detail) = &f.detail {
        out.push_str(detail);
        if !detail.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}
