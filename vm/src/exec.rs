//! The dispatch loop.
//!
//! # Frames and calls
//!
//! All registers of all frames live in one `Vec<Value>`; a [`Frame`] is a
//! window `regs[base..base + n_regs]` plus its proto, saved `pc`, the
//! caller register that receives its result, the running closure (`env`,
//! whose captures `LoadCapture` reads) and any arguments still to apply
//! when it returns (over-application, §5.4). A call's arguments are the
//! caller's topmost temporaries, and the callee's window starts at them, so
//! a ral→ral call copies nothing: it pushes a `Frame` and the same loop
//! carries on (no Rust recursion). A tail call overwrites the current
//! frame's window and proto in place, so tail recursion runs in constant
//! memory. Returning clears the callee's window (so values die promptly and
//! unshared buffers stay unshared) and writes the result into the caller.
//!
//! The hot paths avoid refcount traffic: a closure without captures is
//! entered with no environment at all, a call whose head is a session
//! binding ([`Op::CallGlobal`]) reads the slot in place, a temporary head is
//! moved rather than cloned, and scalar register writes overwrite the
//! payload in place when the register already holds that kind (building a
//! whole 16-byte `Value` and storing it costs a store-forwarding stall).
//!
//! Depth is bounded by [`Vm::max_depth`] frames: exceeding it is an
//! ordinary failure ("recursion depth limit … exceeded"), never a stack
//! overflow.
//!
//! Application follows §5.4: fewer arguments than a closure takes build a
//! [`Func::Partial`]; more apply the result to the rest (kept on the frame,
//! and merged when a frame with leftovers tail-calls); builtins accumulate
//! in [`Func::Builtin`] until their arity is reached.
//!
//! Builtins that call back into ral (`map`, `fold`, …) do so through
//! [`Ctx::call`], which runs a *nested* instance of the loop on the same
//! frame stack until the called function returns. That nesting is Rust
//! recursion, bounded by [`MAX_NESTED_RUNS`]; ral→ral calls never nest.
//!
//! # Failures
//!
//! A failing op leaves the loop with `Err`; [`Vm::run_loop`] unwinds to the
//! innermost handler installed by `PushTry`/`PushChain` that belongs to the
//! current run (frames, handlers and capture buffers are truncated to what
//! they were when it was installed), writes the `try` error record, and
//! re-enters. With no handler the failure leaves the run. `exit` is an
//! [`Escape::Exit`], which no handler catches. Cancellation (the context's
//! cancel flag) is polled at backward jumps, calls and builtin entry.
//!
//! # `audit`
//!
//! `AuditBegin` installs a handler as `PushTry` does and opens a trail
//! scope (remembering where its observations begin in a register);
//! `AuditEnd` closes it with the body's value, and a failure unwinding to
//! the handler lands on `AuditFail` with the `try` record. The observations
//! themselves are made by the doors ([`crate::audit`]).
//!
//! # Not yet supported
//!
//! A recursive-group member referenced from a function outside the group,
//! which the lowering does not produce, compiles to [`Op::Unsupported`],
//! which fails with a message naming the feature. There is no fuel accounting (STYLE §3.9); the cancel
//! flag is the only stop point. The process runtime, redirects, pipelines,
//! `within`, `grant` and `use` are in [`crate::runtime`].

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;

use crate::builtins::{by_table_id, registry, Ctx};
use crate::compile::{compile_module, CompileError};
use crate::failure::{Cause, Failure, Reason};
use crate::op::{ArithCode, Op, Proto, Reg};
use crate::session::{Mobile, SlotId};
use crate::value::{Func, Record, Value};
use ral_syntax::Span;

mod hot;
mod window;

/// How deep builtin callbacks may nest runs of the loop.
pub const MAX_NESTED_RUNS: usize = 200;

/// What leaves a run other than a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Escape {
    /// A failure no handler caught.
    Fail(Failure),
    /// `exit n`: ends the program; not caught by `try` or `?`.
    Exit(i32),
}

impl From<Failure> for Escape {
    fn from(f: Failure) -> Escape {
        Escape::Fail(f)
    }
}

/// Why a module did not produce a value.
#[derive(Debug, PartialEq)]
pub enum RunError {
    Compile(CompileError),
    Escape(Escape),
}

/// Where standard output goes when nothing captures it.
pub enum Stdout {
    /// The process's standard output.
    Inherit,
    /// A buffer the host reads with [`Vm::take_output`].
    Buffer(Vec<u8>),
    /// Any writer the host injects (a pipe, a file, a shared test buffer).
    Writer(Box<dyn std::io::Write + Send>),
}

impl std::fmt::Debug for Stdout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stdout::Inherit => f.write_str("Inherit"),
            Stdout::Buffer(b) => f.debug_tuple("Buffer").field(&b.len()).finish(),
            Stdout::Writer(_) => f.write_str("Writer(..)"),
        }
    }
}

#[derive(Debug)]
struct Frame {
    proto: u32,
    pc: u32,
    base: u32,
    ret: Reg,
    env: Option<Arc<Func>>,
    /// Arguments left over from an over-application, applied to the
    /// frame's result (boxed once more so the frame stays small).
    extra: Option<Box<Vec<Value>>>,
}

// Frames are pushed and popped on every call: keep them to half a line.
const _: () = assert!(std::mem::size_of::<Frame>() <= 32);

#[derive(Debug)]
struct Handler {
    /// `frames.len()` when installed (the owner is `frames[frame - 1]`).
    frame: usize,
    target: u32,
    err: Option<Reg>,
    /// A `guard`: the failure is held for `Reraise`.
    guard: bool,
    depth: Depths,
}

/// The heights of the dynamic stacks, restored when a failure unwinds.
#[derive(Clone, Copy, Debug)]
struct Depths {
    io: usize,
    pipes: usize,
    withins: usize,
    grants: usize,
    stash: usize,
    /// Open audit trails ([`Vm::observing`]).
    audits: usize,
}

/// A failure a `guard` holds while its cleanup runs, and the
/// cancellation count the cleanup holds off: `Some` when the failure is
/// the run's own cancellation.
struct Held {
    failure: Failure,
    hold: Option<u32>,
}

/// Whether a run is cancelled, asked from outside the machine ([`Vm::cancel_probe`]).
#[derive(Clone, Debug)]
pub struct CancelProbe {
    flag: Arc<std::sync::atomic::AtomicBool>,
    count: Arc<AtomicU32>,
    hold: Option<u32>,
}

impl CancelProbe {
    /// A probe of `flag` alone (nothing held off).
    pub fn of_flag(flag: Arc<std::sync::atomic::AtomicBool>) -> CancelProbe {
        CancelProbe {
            flag,
            count: Arc::new(AtomicU32::new(0)),
            hold: None,
        }
    }

    /// Whether the run is cancelled (see [`Vm::cancelled`]).
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
            && self
                .hold
                .is_none_or(|h| self.count.load(Ordering::SeqCst) != h)
    }
}

/// Raises a cancellation (§8.10) on `flag`: `cause` becomes the cause in
/// force unless a graver one already is (causes escalate and never
/// downgrade), and `count` counts it, so a `guard`'s cleanup holding off
/// an earlier cancellation sees this one. Only atomic operations: a
/// signal handler may call it.
pub fn raise_cancel(flag: &AtomicBool, cause_cell: &AtomicU8, count: &AtomicU32, cause: Cause) {
    if flag.load(Ordering::SeqCst) {
        cause_cell.fetch_max(cause as u8, Ordering::SeqCst);
    } else {
        cause_cell.store(cause as u8, Ordering::SeqCst);
    }
    count.fetch_add(1, Ordering::SeqCst);
    flag.store(true, Ordering::SeqCst);
}

/// Where a child's standard input comes from when nothing redirects it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stdin {
    /// The process's standard input.
    Inherit,
    /// Nothing (`/dev/null`): agents and other hosts with no terminal.
    Null,
}

/// The virtual machine: the session, the program's protos, and the
/// machine state of the run in progress.
pub struct Vm {
    /// The session state (scope and context).
    pub mobile: Mobile,
    /// The frame limit.
    pub max_depth: usize,
    /// `$SCRIPT`.
    pub script: Arc<String>,
    /// The program's arguments (`args`).
    pub args: Arc<[String]>,
    /// Where uncaptured output goes.
    pub stdout: Stdout,
    /// Where diagnostics (`warn`, external programs' standard error) go.
    pub stderr: Stdout,
    /// Builtins the host provides (`surface`, workers, …), by table id.
    host_builtins: Arc<Vec<Option<HostBuiltin>>>,
    protos: Arc<Vec<Arc<Proto>>>,
    regs: Vec<Value>,
    frames: Vec<Frame>,
    handlers: Vec<Handler>,
    /// The IO stack (captures, redirects, the final stage's input).
    pub(crate) io: Vec<crate::io::IoFrame>,
    pub(crate) pipes: Vec<crate::runtime::PipeRun>,
    pub(crate) withins: Vec<crate::runtime::WithinSave>,
    /// The capability layers in force (§12): the host's base layers, then
    /// one per enclosing `grant`. Checks fold the whole stack.
    pub grants: Vec<Arc<crate::caps::Layer>>,
    /// Failures held by `guard` handlers for `Reraise`, each with the
    /// cancellation its cleanup holds off.
    stash: Vec<Held>,
    /// The cancellation held off where this machine was forked (a pipeline
    /// stage started inside a `guard`'s cleanup).
    base_hold: Option<u32>,
    /// The first proto of the current top-level turn's code.
    turn_base: u32,
    /// Protos to retire once their `main` has run (see [`Vm::retire`]).
    run_once: Vec<(u32, Vec<u32>)>,
    /// The empty proto retired entries point at.
    tombstone: Arc<Proto>,
    /// The files `use` is loading, outermost first (cycle detection and
    /// relative resolution, §10.4).
    pub(crate) use_chain: Vec<std::path::PathBuf>,
    /// How many of `grants` the host installed (never popped by a run).
    pub base_grants: usize,
    /// Handler frames hidden while one of their handlers runs (§9.6).
    pub(crate) masked: Vec<usize>,
    /// Standard input when nothing redirects it.
    pub stdin: Stdin,
    /// The terminal the host leased, which a job writing to it is lent
    /// ([`crate::job`]); `None`: programs run in process groups of their
    /// own and nothing touches a terminal (a worker, an embedding host, a
    /// run with no terminal or in the background).
    pub terminal: Option<Arc<crate::job::Terminal>>,
    /// The job a pipeline stage's programs belong to (set on the machines
    /// of non-final stages; the final stage's is its pipeline's).
    pub(crate) job: Option<Arc<crate::job::Job>>,
    /// The pipeline edge this stage machine writes, and the address of
    /// the file its IO frame writes it through.
    pub(crate) out_edge: Option<(usize, Arc<crate::job::Edge>)>,
    /// The pipeline edge this stage machine reads: dead when it ends.
    pub(crate) in_edge: Option<Arc<crate::job::Edge>>,
    /// ral's own reads of the inherited standard input see its end at
    /// once (a first stage of a pipeline lent the terminal, §7.6).
    pub(crate) terminal_eof: bool,
    /// Why the cancel flag was set (the host stores it before setting the
    /// flag); `Cause as u8`, read when a cancelled run reports.
    pub cancel_cause: Arc<std::sync::atomic::AtomicU8>,
    /// How many times the cancel flag was raised ([`raise_cancel`]): a
    /// `guard`'s cleanup holds off the cancellation in force when it
    /// started, and a further one ends it (§8.7, §8.10).
    pub cancel_count: Arc<AtomicU32>,
    scratch: Vec<Value>,
    nested: usize,
    pending_exit: Option<i32>,
    /// The sources of the loaded code: `(first proto, source)`, by first
    /// proto, each covering the protos up to the next entry's (see
    /// [`Vm::load_source`]); failures get their `site` from it.
    sources: Arc<Vec<(u32, Arc<crate::failure::SourceText>)>>,
    /// The session's type environment as of the start of the running
    /// top-level code (a host sets it each turn); with [`Vm::def_types`]'s
    /// landed entries it is what a `use` is checked against and what
    /// `explain` reports (§17.8, §14.1).
    pub types: ral_types::TypeEnv,
    /// The schemes of the definitions of the code loaded since the
    /// top-level load, with the slots they land in: a definition is in the
    /// session's environment once its slot is filled.
    def_types: Vec<(SlotId, String, ral_types::EnvEntry)>,
    /// Admission sites parsed from their text ([`crate::admit`]).
    site_cache: crate::admit::SiteCache,
    /// What the `number` and `comparable` positions of the run's decodes
    /// agreed on (§7.3); cleared at each top-level load.
    agreements: crate::admit::Agreements,
    /// The closed schemes of the exports of the module `use` loaded last,
    /// taken by the admission that follows that `use` (§10.3: each
    /// exported function is held to the type the program uses it at).
    pub(crate) use_exports: Option<Arc<[(String, ral_types::Scheme)]>>,
    /// The observations of the open audit trails ([`crate::audit`]).
    pub(crate) trail: Vec<crate::audit::Observation>,
    /// How many audit trails are open (scopes and a host's run trails).
    pub(crate) audits: usize,
    /// How many of `audits` a host opened ([`Vm::open_trail`]); a run's
    /// end leaves those open.
    pub(crate) base_audits: usize,
    /// The shell principal observations are recorded under (§13.3); empty
    /// unless a host names one.
    pub principal: Arc<str>,
}

/// A host builtin's implementation: it gets the whole machine (the
/// session, the output sinks, [`Vm::fork`]).
pub type HostFn = Arc<dyn Fn(&mut Vm, &[Value]) -> Result<Value, Failure> + Send + Sync>;

#[derive(Clone)]
struct HostBuiltin {
    arity: u8,
    func: HostFn,
}

/// Whether an application pushed a frame or produced its value at once.
enum Applied {
    Pushed,
    Value(Value),
}

/// Where an application's frame goes.
#[derive(Clone, Copy)]
enum Mode {
    /// A new frame with its window at `base`, result to caller's `ret`.
    Push { base: usize, ret: Reg },
    /// Replace the current frame.
    Tail,
}

impl Vm {
    /// A machine over `mobile` with no program loaded.
    pub fn new(mobile: Mobile) -> Vm {
        Vm {
            mobile,
            max_depth: 100_000,
            script: Arc::new(String::new()),
            args: Arc::from(Vec::new()),
            stdout: Stdout::Buffer(Vec::new()),
            stderr: Stdout::Inherit,
            host_builtins: Arc::new(Vec::new()),
            protos: Arc::new(Vec::new()),
            regs: Vec::new(),
            frames: Vec::new(),
            handlers: Vec::new(),
            io: Vec::new(),
            pipes: Vec::new(),
            withins: Vec::new(),
            grants: Vec::new(),
            base_grants: 0,
            use_chain: Vec::new(),
            turn_base: 0,
            run_once: Vec::new(),
            tombstone: Arc::new(Proto::default()),
            stash: Vec::new(),
            base_hold: None,
            masked: Vec::new(),
            stdin: Stdin::Inherit,
            terminal: None,
            job: None,
            out_edge: None,
            in_edge: None,
            terminal_eof: false,
            cancel_cause: Arc::new(std::sync::atomic::AtomicU8::new(Cause::Interrupted as u8)),
            cancel_count: Arc::new(AtomicU32::new(0)),
            scratch: Vec::new(),
            nested: 0,
            pending_exit: None,
            sources: Arc::new(Vec::new()),
            types: ral_types::TypeEnv::new(),
            def_types: Vec::new(),
            site_cache: crate::admit::SiteCache::default(),
            agreements: crate::admit::Agreements::default(),
            use_exports: None,
            trail: Vec::new(),
            audits: 0,
            base_audits: 0,
            principal: Arc::from(""),
        }
    }

    /// A machine for running this program's function values on another
    /// thread (workers, pipeline stages): it shares the protos and host
    /// builtins, starts from a snapshot of the session, and has its own
    /// cancel flag and a buffered standard output.
    pub fn fork(&self, cancel: Arc<std::sync::atomic::AtomicBool>) -> Vm {
        let mut mobile = self.mobile.clone();
        mobile.context.cancel = cancel;
        Vm {
            mobile,
            max_depth: self.max_depth,
            script: self.script.clone(),
            args: self.args.clone(),
            stdout: Stdout::Buffer(Vec::new()),
            stderr: Stdout::Inherit,
            host_builtins: self.host_builtins.clone(),
            protos: self.protos.clone(),
            regs: Vec::new(),
            frames: Vec::new(),
            handlers: Vec::new(),
            io: Vec::new(),
            pipes: Vec::new(),
            withins: Vec::new(),
            grants: self.grants.clone(),
            base_grants: self.grants.len(),
            use_chain: self.use_chain.clone(),
            turn_base: self.turn_base,
            run_once: Vec::new(),
            tombstone: self.tombstone.clone(),
            stash: Vec::new(),
            base_hold: self.hold(),
            masked: Vec::new(),
            stdin: self.stdin,
            // A fork is a worker unless a pipeline makes it a stage (and
            // gives it the lease back): nothing it starts sits where the
            // terminal reaches it (§8.10).
            terminal: None,
            job: None,
            out_edge: None,
            in_edge: None,
            terminal_eof: false,
            cancel_cause: self.cancel_cause.clone(),
            cancel_count: self.cancel_count.clone(),
            scratch: Vec::new(),
            nested: 0,
            pending_exit: None,
            sources: self.sources.clone(),
            types: self.types.clone(),
            def_types: self.def_types.clone(),
            site_cache: crate::admit::SiteCache::default(),
            agreements: self.agreements.clone(),
            use_exports: None,
            // Work forked while a trail is open records a fragment of its
            // own, which whoever joins it merges back (§13.3).
            trail: Vec::new(),
            audits: usize::from(self.observing()),
            base_audits: usize::from(self.observing()),
            principal: self.principal.clone(),
        }
    }

    /// Records an `exit n` on its way out of the program and returns the
    /// failure that carries it past builtins (the loop turns it into
    /// [`Escape::Exit`]).
    pub(crate) fn request_exit(&mut self, status: i32) -> Failure {
        self.pending_exit = Some(status);
        Failure::error("exit")
    }

    /// How many more arguments a function value takes before it runs
    /// (`None` for a value that is not a function).
    pub fn arity_of(&self, v: &Value) -> Option<usize> {
        let Value::Func(f) = v else {
            return None;
        };
        match &**f {
            Func::Closure { proto, .. } => self
                .protos
                .get(*proto as usize)
                .map(|p| usize::from(p.n_params)),
            Func::Partial { head, applied } => self
                .arity_of(&Value::Func(head.clone()))
                .map(|n| n.saturating_sub(applied.len())),
            Func::Builtin { id, applied } => {
                let id = ral_types::BuiltinId(*id);
                let n = match by_table_id(id) {
                    Some(def) => usize::from(def.arity),
                    None => usize::from(
                        self.host_builtins
                            .get(usize::from(id.0))
                            .and_then(Option::as_ref)?
                            .arity,
                    ),
                };
                Some(n.saturating_sub(applied.len()))
            }
        }
    }

    /// Whether `name` runs here: the VM's registry or a host builtin.
    pub fn has_builtin(&self, name: &str) -> bool {
        match ral_types::builtin_table().id(name) {
            Some(id) => {
                by_table_id(id).is_some()
                    || self
                        .host_builtins
                        .get(usize::from(id.0))
                        .is_some_and(Option::is_some)
            }
            None => false,
        }
    }

    /// Installs the implementation of a builtin the host provides. `name`
    /// must be in `ral_types::builtin_table()` (so the checker knows its
    /// type) and not implemented by this crate's registry.
    pub fn register_host_builtin(
        &mut self,
        name: &str,
        arity: u8,
        func: HostFn,
    ) -> Result<(), String> {
        let table = ral_types::builtin_table();
        let Some(id) = table.id(name) else {
            return Err(format!("`{name}` is not in the builtin table"));
        };
        if by_table_id(id).is_some() {
            return Err(format!("`{name}` is already implemented by the VM"));
        }
        let v = Arc::make_mut(&mut self.host_builtins);
        let i = usize::from(id.0);
        if v.len() <= i {
            v.resize(i + 1, None);
        }
        v[i] = Some(HostBuiltin { arity, func });
        Ok(())
    }

    /// The logical working directory: the context's, else the process's.
    pub fn cwd(&self) -> std::path::PathBuf {
        match &self.mobile.context.cwd {
            Some(d) => d.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("/")),
        }
    }

    /// The effective environment (process environment with the context's
    /// overrides), sorted, without `PWD` and `OLDPWD`.
    pub fn environment(&self) -> Vec<(String, String)> {
        // Variables whose name or value is not UTF-8 are absent (§16.6).
        let mut map: std::collections::BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        for (k, v) in &self.mobile.context.env {
            match v {
                Some(v) => {
                    map.insert(k.clone(), v.clone());
                }
                None => {
                    map.remove(k);
                }
            }
        }
        map.remove("PWD");
        map.remove("OLDPWD");
        map.into_iter().collect()
    }

    /// Removes a host builtin registered earlier (a host that does not
    /// provide that form after all). Unknown names are ignored.
    pub fn unregister_host_builtin(&mut self, name: &str) {
        if let Some(id) = ral_types::builtin_table().id(name) {
            if let Some(slot) = Arc::make_mut(&mut self.host_builtins).get_mut(usize::from(id.0)) {
                *slot = None;
            }
        }
    }

    /// Writes to the current standard error (through redirects).
    pub fn write_err(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.write_stream(crate::io::Stream::Err, bytes)
    }

    /// The buffered output so far (with [`Stdout::Buffer`]).
    pub fn take_output(&mut self) -> Vec<u8> {
        match &mut self.stdout {
            Stdout::Buffer(b) => std::mem::take(b),
            Stdout::Inherit | Stdout::Writer(_) => Vec::new(),
        }
    }

    /// Program proto `i`.
    pub fn proto(&self, i: u32) -> Option<&Proto> {
        self.protos.get(i as usize).map(|p| &**p)
    }

    /// [`Vm::load`], knowing the source the module was written in (its
    /// name and normalised text), so a failure in its code gets a `site`
    /// (§8.6). Without one a failure's site is `` `none ``.
    pub fn load_source(
        &mut self,
        module: &ral_ir::Module,
        source: Arc<crate::failure::SourceText>,
    ) -> Result<u32, CompileError> {
        let base = u32::try_from(self.protos.len()).unwrap_or(u32::MAX);
        let main = self.load(module)?;
        let sources = Arc::make_mut(&mut self.sources);
        // Protos past the table's end were retired and their indices are
        // reused from `base` on.
        sources.retain(|(first, _)| *first < base);
        sources.push((base, source));
        Ok(main)
    }

    /// Admits a boundary's `value` against the site `site` (its text), for
    /// `_admit` (see [`crate::admit`]); a refusal is a failure of `door`.
    pub(crate) fn admit_value(
        &mut self,
        door: &str,
        site: &str,
        value: &Value,
    ) -> Result<(), Failure> {
        let site = self.site_cache.get(site)?;
        let source = self.frames.last().and_then(|fr| {
            let i = self
                .sources
                .partition_point(|(first, _)| *first <= fr.proto);
            i.checked_sub(1).and_then(|i| self.sources.get(i)).cloned()
        });
        let unit = source.as_ref().map_or(0, |(first, _)| *first);
        let exports = match door {
            "use" => self.use_exports.take(),
            _ => None,
        };
        let Err(r) =
            crate::admit::admit(&site, value, unit, &mut self.agreements, exports.as_deref())
        else {
            return Ok(());
        };
        let line = match (r.use_at, &source) {
            (Some(at), Some((_, src))) => format!(" (line {})", src.site(at).line),
            _ => String::new(),
        };
        let message = match (door, r.pointer.as_str(), &r.missing) {
            // A module's public bindings are its record's fields (§10.3).
            ("use", "", Some(name)) => format!(
                "use: the module has no public binding `{name}`, but this program reads it{line}"
            ),
            ("use", p, _) if p.matches('/').count() == 1 => format!(
                "use: the module's `{}` is {}, but this program {}{line}",
                p.trim_start_matches('/'),
                r.found,
                r.expected
            ),
            ("use", p, _) if !p.is_empty() => {
                let rest = p.trim_start_matches('/');
                let (name, inner) = rest.split_once('/').unwrap_or((rest, ""));
                format!(
                    "use: the module's `{name}` holds at `/{inner}` {}, but this program {}{line}",
                    r.found, r.expected
                )
            }
            (_, "", _) => format!(
                "the value is {}, but this program {}{line}",
                r.found, r.expected
            ),
            (_, p, _) => format!(
                "the value at `{p}` is {}, but this program {}{line}",
                r.found, r.expected
            ),
        };
        let mut f = Failure::error(message);
        f.cmd = Some(door.into());
        Err(f)
    }

    /// The session's type environment now: [`Vm::types`] and the
    /// definitions of the running code that have landed.
    pub fn session_types(&self) -> ral_types::TypeEnv {
        let mut env = self.types.clone();
        for (slot, name, entry) in &self.def_types {
            if self.mobile.scope.get(*slot).is_some() {
                env.insert(name, entry.clone());
            }
        }
        env
    }

    /// How many definition types are recorded (to drop a module's again).
    pub(crate) fn def_types_len(&self) -> usize {
        self.def_types.len()
    }

    pub(crate) fn truncate_def_types(&mut self, n: usize) {
        self.def_types.truncate(n);
    }

    /// Stamps `f` with the site of the instruction the innermost frame is
    /// executing, unless it has one.
    #[cold]
    fn stamp_site(&self, f: &mut Failure) {
        if f.site.is_some() {
            return;
        }
        f.site = self.current_site();
    }

    /// The site of the instruction the innermost frame is executing (its
    /// saved `pc` is one past it), when its source is known.
    #[cold]
    pub fn current_site(&self) -> Option<crate::failure::Site> {
        let fr = self.frames.last()?;
        let span = self
            .protos
            .get(fr.proto as usize)
            .and_then(|p| p.spans.get((fr.pc as usize).checked_sub(1)?))?;
        let i = self
            .sources
            .partition_point(|(first, _)| *first <= fr.proto);
        let (_, src) = i.checked_sub(1).and_then(|i| self.sources.get(i))?;
        Some(src.site(span.start))
    }

    /// Compiles `module` into the program (reserving slots for its
    /// definitions) and returns its `main` proto.
    pub fn load(&mut self, module: &ral_ir::Module) -> Result<u32, CompileError> {
        let base =
            u32::try_from(self.protos.len()).map_err(|_| CompileError("too many protos".into()))?;
        let compiled = match compile_module(module, &mut self.mobile.scope, base) {
            Ok(c) => c,
            Err(e) => {
                self.mobile.scope.clear_reservations();
                return Err(e);
            }
        };
        // The fast path trusts what `verify` checks (see `exec/window.rs`).
        if let Some(e) = compiled.protos.iter().find_map(|p| p.verify().err()) {
            self.mobile.scope.clear_reservations();
            return Err(CompileError(format!(
                "the compiler produced invalid code: {e}"
            )));
        }
        if self.frames.is_empty() {
            // A top-level load: this turn's code starts here (see `locate`).
            self.turn_base = base;
            self.def_types.clear();
            self.agreements.clear();
        }
        let reserved = self.mobile.scope.reservations();
        let slots = reserved
            .get(reserved.len().saturating_sub(module.defs.len())..)
            .unwrap_or_default();
        for (d, (_, slot)) in module.defs.iter().zip(slots) {
            if let Some(e) = &d.entry {
                self.def_types.push((*slot, d.name.clone(), e.clone()));
            }
        }
        Arc::make_mut(&mut self.protos).extend(compiled.protos.into_iter().map(Arc::new));
        let mut once = compiled.main_stages;
        once.push(compiled.main);
        self.run_once.push((compiled.main, once));
        Ok(compiled.main)
    }

    /// Drops the code of a `main` that has run (and its own pipeline
    /// stages): no value can refer to it, so a long session's proto table
    /// does not grow by a turn's top-level code per turn. Retired entries
    /// at the end of the table are removed, so a session of turns that
    /// define no functions keeps a table of constant size. Only at top
    /// level (`truncate`): a run in progress holds a snapshot of the table
    /// and must never see an index reused under it.
    pub(crate) fn retire(&mut self, main: u32, truncate: bool) {
        let Some(i) = self.run_once.iter().position(|(m, _)| *m == main) else {
            return;
        };
        let (_, once) = self.run_once.swap_remove(i);
        let tomb = self.tombstone.clone();
        let table = Arc::make_mut(&mut self.protos);
        for p in once {
            if let Some(slot) = table.get_mut(p as usize) {
                *slot = tomb.clone();
            }
        }
        while truncate && table.last().is_some_and(|p| Arc::ptr_eq(p, &tomb)) {
            table.pop();
        }
    }

    /// How many protos the program holds (retired ones included).
    pub fn proto_count(&self) -> usize {
        self.protos.len()
    }

    /// Compiles and runs a top-level module. Definitions land as their
    /// statements complete; on failure what landed stays (§5.6).
    pub fn run_module(&mut self, module: &ral_ir::Module) -> Result<Value, RunError> {
        let main = self.load(module).map_err(RunError::Compile)?;
        self.run_main(main).map_err(RunError::Escape)
    }

    /// Runs program proto `main` (arity 0, no captures) to its value.
    pub fn run_main(&mut self, main: u32) -> Result<Value, Escape> {
        let stop = self.frames.len();
        let base = self.top();
        let result = match self.push_frame(main, None, Vec::new(), base, Reg(0)) {
            Ok(()) => self.run_loop(stop),
            Err(e) => Err(e.into()),
        };
        self.mobile.scope.clear_reservations();
        if stop == 0 {
            self.frames.clear();
            self.retire(main, true);
            self.handlers.clear();
            self.clear_dynamic();
            self.regs.clear();
        }
        result
    }

    /// Applies `func` to `args` and runs it to its value (a nested run).
    pub fn call_value(&mut self, func: Value, args: Vec<Value>) -> Result<Value, Escape> {
        if self.nested >= MAX_NESTED_RUNS {
            return Err(Failure::error(format!(
                "builtin callbacks nested more than {MAX_NESTED_RUNS} deep"
            ))
            .into());
        }
        let stop = self.frames.len();
        let base = self.top();
        match self.apply(func, args, Mode::Push { base, ret: Reg(0) })? {
            Applied::Value(v) => Ok(v),
            Applied::Pushed => {
                self.nested += 1;
                let r = self.run_loop(stop);
                self.nested -= 1;
                r
            }
        }
    }

    /// A builtin's callback to a closure taking exactly `args.len()`
    /// arguments (`map`, `filter`, `fold`, handlers): pushes its frame above
    /// the current one with the arguments in place, and returns the frame
    /// count to run down to. `None` for anything else (partial or
    /// over-application, builtins), which takes the general path.
    fn enter_exact(&mut self, func: &Value, args: &[Value]) -> Option<Result<usize, Failure>> {
        self.enter_exact_with(func, args.len(), |slots| {
            for (slot, a) in slots.iter_mut().zip(args) {
                *slot = a.clone();
            }
        })
    }

    /// [`Vm::enter_exact`] taking the arguments out of `args` (they are
    /// left `()` when the frame is pushed; untouched otherwise).
    fn enter_exact_owned(
        &mut self,
        func: &Value,
        args: &mut [Value],
    ) -> Option<Result<usize, Failure>> {
        let n = args.len();
        self.enter_exact_with(func, n, |slots| {
            for (slot, a) in slots.iter_mut().zip(args.iter_mut()) {
                *slot = std::mem::take(a);
            }
        })
    }

    fn enter_exact_with(
        &mut self,
        func: &Value,
        argc: usize,
        fill: impl FnOnce(&mut [Value]),
    ) -> Option<Result<usize, Failure>> {
        let Value::Func(arc) = func else {
            return None;
        };
        let Func::Closure {
            proto, captures, ..
        } = &**arc
        else {
            return None;
        };
        let n_regs = match self.protos.get(*proto as usize) {
            Some(p) if usize::from(p.n_params) == argc => usize::from(p.n_regs),
            _ => return None,
        };
        if self.nested >= MAX_NESTED_RUNS {
            return Some(Err(Failure::error(format!(
                "builtin callbacks nested more than {MAX_NESTED_RUNS} deep"
            ))));
        }
        if self.frames.len() >= self.max_depth {
            return Some(Err(depth_exceeded(self.max_depth)));
        }
        let stop = self.frames.len();
        let base = self.top();
        let need = base + n_regs.max(argc);
        if self.regs.len() < need {
            self.regs.resize(need, Value::Unit);
        }
        fill(&mut self.regs[base..base + argc]);
        self.frames.push(Frame {
            proto: *proto,
            pc: 0,
            base: base as u32,
            ret: Reg(0),
            env: (!captures.is_empty()).then(|| arc.clone()),
            extra: None,
        });
        Some(Ok(stop))
    }

    /// The first register above the current frame's window.
    fn top(&self) -> usize {
        match self.frames.last() {
            Some(f) => {
                f.base as usize
                    + self
                        .protos
                        .get(f.proto as usize)
                        .map_or(0, |p| usize::from(p.n_regs))
            }
            None => 0,
        }
    }

    fn push_frame(
        &mut self,
        proto: u32,
        env: Option<Arc<Func>>,
        args: Vec<Value>,
        base: usize,
        ret: Reg,
    ) -> Result<(), Failure> {
        if self.frames.len() >= self.max_depth {
            return Err(depth_exceeded(self.max_depth));
        }
        let n_regs = self
            .protos
            .get(proto as usize)
            .map_or(0, |p| usize::from(p.n_regs));
        if self.regs.len() < base + n_regs.max(args.len()) {
            self.regs.resize(base + n_regs.max(args.len()), Value::Unit);
        }
        for (i, a) in args.into_iter().enumerate() {
            self.regs[base + i] = a;
        }
        self.frames.push(Frame {
            proto,
            pc: 0,
            base: base as u32,
            ret,
            env,
            extra: None,
        });
        Ok(())
    }

    /// Runs until the frame count drops back to `stop`, unwinding failures
    /// to this run's handlers.
    fn run_loop(&mut self, stop: usize) -> Result<Value, Escape> {
        loop {
            match self.dispatch(stop) {
                Ok(v) => return Ok(v),
                Err(Escape::Fail(mut f)) => {
                    if let Some(status) = self.pending_exit.take() {
                        self.abandon(stop);
                        return Err(Escape::Exit(status));
                    }
                    self.stamp_site(&mut f);
                    if !self.unwind(&mut f, stop) {
                        if stop == 0 {
                            // Leaving the machine's bottom run: the
                            // pipelines it was in finish here.
                            self.settle_pipes(0, &mut f);
                        }
                        let f = self.locate(f);
                        self.abandon(stop);
                        return Err(Escape::Fail(f));
                    }
                }
                Err(exit @ Escape::Exit(_)) => {
                    self.abandon(stop);
                    return Err(exit);
                }
            }
        }
    }

    /// Stamps an escaping failure with the span of the failing instruction
    /// and the call trace of the live frames (innermost first), unless an
    /// inner run already did. Each frame's saved `pc` is one past the
    /// instruction it was executing.
    #[cold]
    fn locate(&self, mut f: Failure) -> Failure {
        if f.span.is_some() {
            return f;
        }
        let site = |fr: &Frame| -> Option<Span> {
            let p = self.protos.get(fr.proto as usize)?;
            let at = (fr.pc as usize).checked_sub(1)?;
            p.spans.get(at).copied()
        };
        // Spans index the source of the turn that compiled them; a host
        // renders against the current turn's. So the failure is placed at
        // the innermost frame of the current turn's code (when the failing
        // operation is in a function an earlier turn defined, that is the
        // call in this turn that led there), and the trace lists only call
        // sites in this turn's code.
        let current = |fr: &Frame| fr.proto >= self.turn_base;
        let innermost = self.frames.iter().rposition(current);
        f.span = innermost.and_then(|i| self.frames.get(i)).and_then(site);
        let upto = innermost.map_or(0, |i| i + 1);
        let frames = &self.frames[..upto.min(self.frames.len())];
        // The call sites to report, innermost first; a deep stack (a
        // runaway recursion) keeps both ends and counts the middle.
        let sites: Vec<&[Frame]> = frames
            .windows(2)
            .rev()
            .filter(|w| current(&w[0]) && site(&w[0]).is_some())
            .collect();
        let keep = crate::failure::TRACE_KEEP;
        let elided = sites.len().saturating_sub(2 * keep);
        f.trace_elided = elided;
        f.trace = sites
            .iter()
            .enumerate()
            .filter(|(i, _)| elided == 0 || *i < keep || *i >= keep + elided)
            .filter_map(|(_, w)| {
                let span = site(&w[0])?;
                let name = self
                    .protos
                    .get(w[1].proto as usize)
                    .map(|p| p.name.clone())
                    .filter(|n| !n.is_empty());
                Some((name, span))
            })
            .collect();
        f
    }

    fn depths(&self) -> Depths {
        Depths {
            io: self.io.len(),
            pipes: self.pipes.len(),
            withins: self.withins.len(),
            grants: self.grants.len(),
            stash: self.stash.len(),
            audits: self.audits,
        }
    }

    /// Pops the dynamic stacks back to `d`: redirect and capture frames are
    /// dropped (an uncommitted atomic write is removed), pipelines are
    /// abandoned, `within` contexts are restored innermost first.
    fn restore_depths(&mut self, d: Depths) {
        self.drop_io_to(d.io);
        self.abandon_pipes(d.pipes);
        while self.withins.len() > d.withins {
            if let Some(save) = self.withins.pop() {
                self.restore_within(save);
            }
        }
        self.grants.truncate(d.grants);
        self.stash.truncate(d.stash);
        // After the writes above settled: they belong to the scopes left.
        self.audits = d.audits;
    }

    fn clear_dynamic(&mut self) {
        self.restore_depths(Depths {
            io: 0,
            pipes: 0,
            withins: 0,
            grants: self.base_grants,
            stash: 0,
            audits: self.base_audits,
        });
        self.masked.clear();
    }

    /// The cause a cancelled run reports: what the host stored before it
    /// set the cancel flag (a signal's own cause, a wall's `timed-out`).
    pub fn cancel_cause(&self) -> Cause {
        cause_of(self.cancel_cause.load(Ordering::Relaxed))
    }

    /// Runs program proto `proto` as a bottom frame with `args` in its
    /// first registers and `env` as its closure (pipeline stages).
    pub(crate) fn run_proto_with(
        &mut self,
        proto: u32,
        args: Vec<Value>,
        env: Option<Arc<Func>>,
    ) -> Result<Value, Escape> {
        let stop = self.frames.len();
        let base = self.top();
        let result = match self.push_frame(proto, env, args, base, Reg(0)) {
            Ok(()) => self.run_loop(stop),
            Err(e) => Err(e.into()),
        };
        result
    }

    /// Drops this run's frames and handlers after an escape.
    fn abandon(&mut self, stop: usize) {
        self.frames.truncate(stop);
        while self.handlers.last().is_some_and(|h| h.frame > stop) {
            self.handlers.pop();
        }
    }

    /// Transfers control to the innermost handler of this run; false if
    /// there is none.
    #[cold]
    fn unwind(&mut self, failure: &mut Failure, stop: usize) -> bool {
        while let Some(h) = self.handlers.pop() {
            if h.frame <= stop {
                self.handlers.push(h);
                return false;
            }
            if h.frame > self.frames.len() {
                continue;
            }
            // The run's own cancellation is never recovered by `try` or `?`
            // (§8.4, §8.6): it passes them by, and only a `guard`'s cleanup
            // runs on its way out. (A failure that merely reports a
            // cancelled handle, with this run not cancelled, is ordinary.)
            let own_cancel = matches!(failure.reason, Reason::Cancelled(_)) && self.cancelled();
            if !h.guard && own_cancel {
                continue;
            }
            self.frames.truncate(h.frame);
            self.settle_pipes(h.depth.pipes, failure);
            self.restore_depths(h.depth);
            if h.guard {
                // The cleanup runs with the run's cancellation held off,
                // so its commands run; a further one still ends it (§8.7).
                let hold = own_cancel.then(|| self.cancel_count.load(Ordering::SeqCst));
                self.stash.push(Held {
                    failure: failure.clone(),
                    hold,
                });
            }
            let Some(frame) = self.frames.last_mut() else {
                return false;
            };
            frame.pc = h.target;
            if let Some(err) = h.err {
                let i = frame.base as usize + usize::from(err.0);
                if let Some(slot) = self.regs.get_mut(i) {
                    *slot = error_record(failure);
                }
            }
            return true;
        }
        false
    }

    /// Finishes the current frame with `value`. `Some` when that ends the
    /// run.
    #[inline]
    fn do_return(&mut self, mut value: Value, stop: usize) -> Result<Option<Value>, Escape> {
        loop {
            let Some(frame) = self.frames.last_mut() else {
                return Ok(Some(value));
            };
            if let Some(extra) = frame.extra.take() {
                match self.apply(value, *extra, Mode::Tail)? {
                    Applied::Pushed => return Ok(None),
                    Applied::Value(v) => {
                        value = v;
                        continue;
                    }
                }
            }
            let Some(frame) = self.frames.pop() else {
                return Ok(Some(value));
            };
            let base = frame.base as usize;
            if let Some(p) = self.protos.get(frame.proto as usize).cloned() {
                clear_window(&mut self.regs, base, &p);
            }
            if self.frames.len() <= stop {
                return Ok(Some(value));
            }
            if let Some(caller) = self.frames.last() {
                let i = caller.base as usize + usize::from(frame.ret.0);
                if let Some(slot) = self.regs.get_mut(i) {
                    if let (Value::Int(x), Value::Int(n)) = (&mut *slot, &value) {
                        *x = *n;
                    } else {
                        *slot = value;
                    }
                }
            }
            return Ok(None);
        }
    }

    /// Applies a function value (§5.4): the general path.
    fn apply(&mut self, func: Value, mut args: Vec<Value>, mode: Mode) -> Result<Applied, Escape> {
        let Value::Func(f) = func else {
            return Err(Failure::error(format!("cannot apply {}", func.kind_name())).into());
        };
        match &*f {
            Func::Closure { proto, .. } => {
                let p = *proto;
                let n = self
                    .protos
                    .get(p as usize)
                    .map_or(0, |p| usize::from(p.n_params));
                if args.len() < n {
                    if args.is_empty() {
                        return Ok(Applied::Value(Value::Func(f)));
                    }
                    return Ok(Applied::Value(Value::Func(Arc::new(Func::Partial {
                        head: f,
                        applied: args.into_boxed_slice(),
                    }))));
                }
                let rest = if args.len() > n {
                    Some(args.split_off(n))
                } else {
                    None
                };
                self.enter(p, Some(f), args, rest, mode)?;
                Ok(Applied::Pushed)
            }
            Func::Partial { head, applied } => {
                let mut all = applied.to_vec();
                all.append(&mut args);
                self.apply(Value::Func(head.clone()), all, mode)
            }
            Func::Builtin { id, applied } => {
                let Some(def) = by_table_id(ral_types::BuiltinId(*id)) else {
                    return self.apply_host_builtin(*id, applied, args, mode);
                };
                let mut all = applied.to_vec();
                all.append(&mut args);
                let arity = usize::from(def.arity);
                if all.len() < arity {
                    return Ok(Applied::Value(Value::Func(Arc::new(Func::Builtin {
                        id: *id,
                        applied: all.into_boxed_slice(),
                    }))));
                }
                let rest = all.split_off(arity);
                self.poll_cancel()?;
                let v = (def.func)(self, &all).map_err(|e| self.builtin_err(e))?;
                if rest.is_empty() {
                    Ok(Applied::Value(v))
                } else {
                    self.apply(v, rest, mode)
                }
            }
        }
    }

    /// Applies a builtin the host registered (cold: host builtins are
    /// effects such as `surface` or `spawn`, never inner-loop arithmetic).
    #[cold]
    fn apply_host_builtin(
        &mut self,
        id: u16,
        applied: &[Value],
        mut args: Vec<Value>,
        mode: Mode,
    ) -> Result<Applied, Escape> {
        let Some(hb) = self
            .host_builtins
            .get(usize::from(id))
            .and_then(Option::as_ref)
            .cloned()
        else {
            return Err(unavailable_builtin(id).into());
        };
        let mut all = applied.to_vec();
        all.append(&mut args);
        let arity = usize::from(hb.arity);
        if all.len() < arity {
            return Ok(Applied::Value(Value::Func(Arc::new(Func::Builtin {
                id,
                applied: all.into_boxed_slice(),
            }))));
        }
        let rest = all.split_off(arity);
        self.poll_cancel()?;
        let v = (hb.func)(self, &all).map_err(|e| self.builtin_err(e))?;
        if rest.is_empty() {
            Ok(Applied::Value(v))
        } else {
            self.apply(v, rest, mode)
        }
    }

    /// Enters closure proto `p` (exact arity) per `mode`.
    fn enter(
        &mut self,
        p: u32,
        env: Option<Arc<Func>>,
        args: Vec<Value>,
        rest: Option<Vec<Value>>,
        mode: Mode,
    ) -> Result<(), Failure> {
        match mode {
            Mode::Push { base, ret } => {
                self.push_frame(p, env, args, base, ret)?;
                if let Some(f) = self.frames.last_mut() {
                    f.extra = rest.map(Box::new);
                }
            }
            Mode::Tail => {
                let n_regs = self
                    .protos
                    .get(p as usize)
                    .map_or(0, |p| usize::from(p.n_regs));
                let Some(f) = self.frames.last_mut() else {
                    return Err(Failure::error("tail call with no frame"));
                };
                let base = f.base as usize;
                f.proto = p;
                f.pc = 0;
                f.env = env;
                if let Some(mut rest) = rest {
                    if let Some(old) = f.extra.take() {
                        rest.extend(*old);
                    }
                    f.extra = Some(Box::new(rest));
                }
                if self.regs.len() < base + n_regs.max(args.len()) {
                    self.regs.resize(base + n_regs.max(args.len()), Value::Unit);
                }
                for (i, a) in args.into_iter().enumerate() {
                    self.regs[base + i] = a;
                }
            }
        }
        Ok(())
    }

    /// Appends the text conversion of `v` (§4.9), polling for cancellation
    /// while it converts a collection (a value sharing its parts can stand
    /// for far more text than memory holds).
    fn write_text_polled(&self, out: &mut String, v: &Value) -> Result<(), Failure> {
        if let Value::Str(t) = v {
            out.push_str(t);
            return Ok(());
        }
        let mut steps: usize = 0;
        let mut go_on = || {
            steps = steps.wrapping_add(1);
            steps % crate::builtins::pace::POLL_EVERY != 0 || !self.cancelled()
        };
        match crate::display::write_text_while(out, v, &mut go_on) {
            Some(()) => Ok(()),
            None => self.poll_cancel(),
        }
    }

    /// What `echo` writes for its argument list: each item in the text
    /// conversion, separated by single spaces, then a newline (§14.6).
    fn echo_line(&self, list: &Value) -> Result<String, Failure> {
        let Value::List(items) = list else {
            return Err(kind_error("a List of arguments", list));
        };
        let mut line = String::new();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            self.write_text_polled(&mut line, item)?;
        }
        line.push('\n');
        Ok(line)
    }

    /// Structural equality for `==` and `!=`, polling for cancellation
    /// while it compares containers (§8.10: two values sharing their parts
    /// can hold far more leaves than memory).
    fn equal_polled(&self, a: &Value, b: &Value) -> Result<bool, Failure> {
        let mut steps: usize = 0;
        let mut go_on = || {
            steps = steps.wrapping_add(1);
            steps % crate::builtins::pace::POLL_EVERY != 0 || !self.cancelled()
        };
        match a.equal_while(b, &mut go_on) {
            Some(same) => Ok(same),
            None => self.poll_cancel().map(|()| false),
        }
    }

    #[inline]
    pub(crate) fn poll_cancel(&self) -> Result<(), Failure> {
        if self.cancelled() {
            Err(Failure::cancelled(self.cancel_cause()))
        } else {
            Ok(())
        }
    }

    /// Whether this run is cancelled: the flag is raised, and not only by
    /// the cancellation a `guard`'s cleanup is holding off.
    #[inline]
    pub fn cancelled(&self) -> bool {
        self.mobile.context.cancel.load(Ordering::Relaxed) && self.cancelled_past_hold()
    }

    #[cold]
    fn cancelled_past_hold(&self) -> bool {
        self.hold()
            .is_none_or(|h| self.cancel_count.load(Ordering::SeqCst) != h)
    }

    /// The cancellation count the innermost running cleanup holds off.
    fn hold(&self) -> Option<u32> {
        self.stash
            .iter()
            .rev()
            .find_map(|h| h.hold)
            .or(self.base_hold)
    }

    /// What code running for this machine elsewhere (a wait loop, a
    /// read, another thread) asks to know whether the run is cancelled.
    pub fn cancel_probe(&self) -> CancelProbe {
        CancelProbe {
            flag: self.mobile.context.cancel.clone(),
            count: self.cancel_count.clone(),
            hold: self.hold(),
        }
    }

    #[cold]
    fn builtin_err(&mut self, e: Failure) -> Failure {
        e
    }

    fn take_args(&mut self, start: usize, n: usize) -> Vec<Value> {
        self.regs
            .get_mut(start..start + n)
            .map(|w| w.iter_mut().map(std::mem::take).collect())
            .unwrap_or_default()
    }

    /// The loop proper: the fast path ([`Vm::hot`]) runs until it meets
    /// an instruction it leaves to the general one ([`Vm::step`]), which
    /// runs that one instruction; then the fast path resumes. Returns when
    /// the run's bottom frame returns, or with the failure of an op (after
    /// saving `pc`).
    fn dispatch(&mut self, stop: usize) -> Result<Value, Escape> {
        // The general path runs on a snapshot of the proto table (its arms
        // call into the whole machine, and code compiled during the run,
        // by `use`, extends `self.protos`; a reload refreshes the snapshot
        // when a frame names a proto past it). It is taken the first time
        // the fast path hands over, so a callback that stays on the fast
        // path costs no reference count.
        let mut snapshot: Option<Arc<Vec<Arc<Proto>>>> = None;
        loop {
            if let Some(v) = self.hot(stop) {
                return Ok(v);
            }
            let protos = snapshot.get_or_insert_with(|| self.protos.clone());
            if let Some(v) = self.step(stop, protos)? {
                return Ok(v);
            }
        }
    }

    /// Runs the instruction at the top frame's `pc`, in full generality,
    /// and saves the machine state; `Some` when that ends the run. (The
    /// macros that enter a frame set every piece of the loop state; when the
    /// instruction ends there, some go unread.)
    #[allow(unused_assignments)]
    fn step(
        &mut self,
        stop: usize,
        protos: &mut Arc<Vec<Arc<Proto>>>,
    ) -> Result<Option<Value>, Escape> {
        let mut fi = self.frames.len() - 1;
        if self.frames[fi].proto as usize >= protos.len() {
            *protos = self.protos.clone();
        }
        let mut proto: &Proto = &protos[self.frames[fi].proto as usize];
        let mut code: &[Op] = &proto.code;
        let mut base = self.frames[fi].base as usize;
        let mut pc = self.frames[fi].pc as usize;

        macro_rules! reload {
            () => {{
                fi = self.frames.len() - 1;
                if self.frames[fi].proto as usize >= protos.len() {
                    *protos = self.protos.clone();
                }
                proto = &protos[self.frames[fi].proto as usize];
                code = &proto.code;
                base = self.frames[fi].base as usize;
                pc = self.frames[fi].pc as usize;
            }};
        }
        macro_rules! save {
            () => {
                self.frames[fi].pc = pc as u32
            };
        }
        macro_rules! tri {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(e) => {
                        save!();
                        return Err(e.into());
                    }
                }
            };
        }
        macro_rules! r {
            ($r:expr) => {
                self.regs[base + usize::from($r.0)]
            };
        }
        // Scalars need no drop: skip the out-of-line drop glue for them.
        macro_rules! set {
            ($r:expr, $v:expr) => {{
                let v = $v;
                let slot = &mut self.regs[base + usize::from($r.0)];
                let old = std::mem::replace(slot, v);
                if matches!(
                    old,
                    Value::Unit | Value::Bool(_) | Value::Int(_) | Value::Float(_)
                ) {
                    std::mem::forget(old);
                } else {
                    drop(old);
                }
            }};
        }
        // Hot scalar writes: when the register already holds that kind,
        // overwrite the payload in place. Building a whole `Value` and
        // storing it costs a store-forwarding stall (the tag and payload are
        // written separately, then copied as one 16-byte move).
        macro_rules! set_int {
            ($r:expr, $n:expr) => {{
                let n: i64 = $n;
                if let Value::Int(x) = &mut self.regs[base + usize::from($r.0)] {
                    *x = n;
                } else {
                    set!($r, Value::Int(n));
                }
            }};
        }
        macro_rules! set_bool {
            ($r:expr, $b:expr) => {{
                let b: bool = $b;
                if let Value::Bool(x) = &mut self.regs[base + usize::from($r.0)] {
                    *x = b;
                } else {
                    set!($r, Value::Bool(b));
                }
            }};
        }
        macro_rules! int_op {
            ($dst:expr, $lhs:expr, $rhs:expr, $m:ident, $sym:literal) => {{
                let v = match (&r!($lhs), &r!($rhs)) {
                    (Value::Int(a), Value::Int(b)) => a.$m(*b),
                    (a, b) => tri!(Err(kind_error2("Ints", a, b))),
                };
                match v {
                    Some(n) => set_int!($dst, n),
                    None => tri!(Err(int_error($sym, &r!($lhs), &r!($rhs)))),
                }
            }};
        }
        macro_rules! int_k_cmp {
            ($dst:expr, $lhs:expr, $k:expr, $op:tt) => {{
                let b = if let Value::Int(a) = r!($lhs) {
                    a $op i64::from($k)
                } else {
                    tri!(Err(kind_error("an Int", &r!($lhs))))
                };
                set_bool!($dst, b);
            }};
        }
        macro_rules! float_op {
            ($dst:expr, $lhs:expr, $rhs:expr, $op:tt) => {{
                let v = match (&r!($lhs), &r!($rhs)) {
                    (Value::Float(a), Value::Float(b)) => *a $op *b,
                    (a, b) => tri!(Err(kind_error2("Floats", a, b))),
                };
                set!($dst, tri!(finite(v)));
            }};
        }
        macro_rules! cmp_op {
            ($dst:expr, $lhs:expr, $rhs:expr, $pat:pat, $ord:expr) => {{
                let b = match (&r!($lhs), &r!($rhs)) {
                    $pat => $ord,
                    (a, b) => tri!(Err(kind_error2("comparable values", a, b))),
                };
                set_bool!($dst, b);
            }};
        }
        macro_rules! ret {
            ($v:expr) => {{
                save!();
                match self.do_return($v, stop)? {
                    Some(v) => return Ok(Some(v)),
                    None => reload!(),
                }
            }};
        }
        // Pushes a frame for closure proto `p` (in the snapshot: the
        // caller checked) whose window starts at `nb`, and enters it.
        macro_rules! push_frame {
            ($p:expr, $env:expr, $nb:expr, $dst:expr) => {{
                if self.frames.len() >= self.max_depth {
                    return Err(depth_exceeded(self.max_depth).into());
                }
                let nb: usize = $nb;
                let p: u32 = $p;
                let need = nb + usize::from(protos[p as usize].n_regs);
                if self.regs.len() < need {
                    self.regs.resize(need, Value::Unit);
                }
                self.frames.push(Frame {
                    proto: p,
                    pc: 0,
                    base: nb as u32,
                    ret: $dst,
                    env: $env,
                    extra: None,
                });
                fi += 1;
                proto = &protos[p as usize];
                code = &proto.code;
                base = nb;
                pc = 0;
            }};
        }
        // Reuses the current frame for closure proto `p`.
        macro_rules! tail_enter {
            ($p:expr, $env:expr, $args:expr, $argc:expr) => {{
                let (p, env, args, argc) = ($p, $env, $args, $argc);
                // Arguments move down to the window's start; the
                // frame is reused, so tail recursion holds constant
                // memory.
                let a = base + usize::from(args.0);
                for i in 0..usize::from(argc) {
                    let v = std::mem::take(&mut self.regs[a + i]);
                    let old = std::mem::replace(&mut self.regs[base + i], v);
                    // Scalars need no drop: skip the out-of-line glue.
                    if matches!(
                        old,
                        Value::Unit | Value::Bool(_) | Value::Int(_) | Value::Float(_)
                    ) {
                        std::mem::forget(old);
                    }
                }
                let need = base + usize::from(protos[p as usize].n_regs);
                if self.regs.len() < need {
                    self.regs.resize(need, Value::Unit);
                }
                let frame = &mut self.frames[fi];
                frame.proto = p;
                frame.pc = 0;
                frame.env = env;
                reload!();
            }};
        }
        macro_rules! applied {
            ($a:expr, $tail:expr, $dst:expr) => {{
                match $a {
                    Applied::Pushed => reload!(),
                    Applied::Value(v) => {
                        if $tail {
                            ret!(v)
                        } else {
                            set!($dst, v);
                        }
                    }
                }
            }};
        }

        loop {
            let op = code[pc];
            pc += 1;
            match op {
                Op::LoadConst { dst, k } => {
                    set!(dst, proto.consts[k.0 as usize].clone());
                }
                Op::LoadInt { dst, value } => set_int!(dst, i64::from(value)),
                Op::LoadUnit { dst } => set!(dst, Value::Unit),
                Op::LoadBool { dst, value } => set_bool!(dst, value),
                Op::Copy { dst, src } => {
                    if let Value::Int(n) = r!(src) {
                        set_int!(dst, n);
                    } else {
                        let v = r!(src).clone();
                        set!(dst, v);
                    }
                }
                Op::Move { dst, src } => {
                    if dst != src {
                        let v = std::mem::take(&mut r!(src));
                        set!(dst, v);
                    }
                }
                Op::LoadCapture { dst, idx } => {
                    let v = match self.frames[fi].env.as_deref() {
                        Some(Func::Closure { captures, .. }) => captures.get(idx as usize).cloned(),
                        _ => None,
                    };
                    set!(
                        dst,
                        tri!(v.ok_or_else(|| Failure::error("capture out of range")))
                    );
                }
                Op::LoadSibling { dst, member } => {
                    let v = tri!(self.sibling(&protos, proto, fi, member));
                    set!(dst, v);
                }
                Op::LoadBuiltin { dst, id } => {
                    r!(dst) = Value::Func(Arc::new(Func::Builtin {
                        id,
                        applied: Box::new([]),
                    }));
                }
                Op::LoadScript { dst } => set!(dst, Value::Str(self.script.clone())),
                Op::LoadHome { dst } => {
                    set!(
                        dst,
                        Value::str(self.mobile.context.var("HOME").unwrap_or_default())
                    );
                }
                Op::GetGlobal { dst, slot } => {
                    let v = match self.mobile.scope.get(SlotId(slot)) {
                        Some(v) => v.clone(),
                        None => tri!(Err(self.undefined(slot))),
                    };
                    set!(dst, v);
                }
                Op::Define { src, name } => {
                    let v = r!(src).clone();
                    let Value::Str(name) = &proto.consts[name.0 as usize] else {
                        tri!(Err(Failure::error("definition name is not a string")))
                    };
                    let name = name.clone();
                    self.mobile.scope.install(&name, v);
                }

                Op::AddInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_add, "+"),
                Op::SubInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_sub, "-"),
                Op::MulInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_mul, "*"),
                Op::DivInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_div, "/"),
                Op::RemInt { dst, lhs, rhs } => int_op!(dst, lhs, rhs, checked_rem, "%"),
                Op::AddIntK { dst, lhs, k } => {
                    let v = if let Value::Int(a) = r!(lhs) {
                        a.checked_add(i64::from(k))
                    } else {
                        tri!(Err(kind_error("an Int", &r!(lhs))))
                    };
                    match v {
                        Some(n) => set_int!(dst, n),
                        None => tri!(Err(int_error("+", &r!(lhs), &Value::Int(i64::from(k))))),
                    }
                }
                Op::LtIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, <),
                Op::LeIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, <=),
                Op::GtIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, >),
                Op::GeIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, >=),
                Op::AddFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, +),
                Op::SubFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, -),
                Op::MulFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, *),
                Op::DivFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, /),
                Op::RemFloat { dst, lhs, rhs } => float_op!(dst, lhs, rhs, %),
                Op::Arith { dst, lhs, rhs, op } => {
                    let v = tri!(generic_arith(op, &r!(lhs), &r!(rhs)));
                    set!(dst, v);
                }
                Op::NegInt { dst, src } | Op::Neg { dst, src }
                    if matches!(r!(src), Value::Int(_)) =>
                {
                    let v = if let Value::Int(n) = &r!(src) {
                        n.checked_neg()
                    } else {
                        None
                    };
                    match v {
                        Some(n) => set_int!(dst, n),
                        None => tri!(Err(Failure::error("integer overflow in negation"))),
                    }
                }
                Op::NegFloat { dst, src } | Op::Neg { dst, src }
                    if matches!(r!(src), Value::Float(_)) =>
                {
                    if let Value::Float(x) = r!(src) {
                        set!(dst, Value::Float(-x));
                    }
                }
                Op::NegInt { src, .. } | Op::NegFloat { src, .. } | Op::Neg { src, .. } => {
                    tri!(Err(kind_error("a number", &r!(src))))
                }
                Op::Not { dst, src } => {
                    if let Value::Bool(b) = r!(src) {
                        set_bool!(dst, !b);
                    } else {
                        tri!(Err(kind_error("a Bool", &r!(src))))
                    }
                }
                Op::LtInt { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Int(a), Value::Int(b)), a < b)
                }
                Op::LeInt { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Int(a), Value::Int(b)), a <= b)
                }
                Op::LtFloat { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Float(a), Value::Float(b)), a < b)
                }
                Op::LeFloat { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Float(a), Value::Float(b)), a <= b)
                }
                Op::LtStr { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Str(a), Value::Str(b)), a < b)
                }
                Op::LeStr { dst, lhs, rhs } => {
                    cmp_op!(dst, lhs, rhs, (Value::Str(a), Value::Str(b)), a <= b)
                }
                Op::Lt { dst, lhs, rhs } => {
                    let o = tri!(order(&r!(lhs), &r!(rhs)));
                    set!(dst, Value::Bool(o.is_lt()));
                }
                Op::Le { dst, lhs, rhs } => {
                    let o = tri!(order(&r!(lhs), &r!(rhs)));
                    set!(dst, Value::Bool(o.is_le()));
                }
                Op::Eq { dst, lhs, rhs } => {
                    let b = if let (Value::Int(a), Value::Int(b)) = (&r!(lhs), &r!(rhs)) {
                        *a == *b
                    } else {
                        let (a, b) = (r!(lhs).clone(), r!(rhs).clone());
                        tri!(self.equal_polled(&a, &b))
                    };
                    set_bool!(dst, b);
                }
                Op::Ne { dst, lhs, rhs } => {
                    let (a, b) = (r!(lhs).clone(), r!(rhs).clone());
                    let b = !tri!(self.equal_polled(&a, &b));
                    set_bool!(dst, b);
                }

                Op::Jump { target } => {
                    let t = target as usize;
                    if t < pc {
                        tri!(self.poll_cancel());
                    }
                    pc = t;
                }
                Op::JumpIfFalse { cond, target } => {
                    if let Value::Bool(b) = r!(cond) {
                        if !b {
                            pc = target as usize;
                        }
                    } else {
                        tri!(Err(kind_error("a Bool", &r!(cond))))
                    }
                }
                Op::JumpIfNotLtIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a < i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotLeIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a <= i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotGtIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a > i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotGeIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a >= i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotEqIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a == i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotNeIntK { lhs, k, target } => {
                    if !tri!(int_of(&r!(lhs)).map(|a| a != i64::from(k))) {
                        pc = target as usize;
                    }
                }
                Op::EqIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, ==),
                Op::NeIntK { dst, lhs, k } => int_k_cmp!(dst, lhs, k, !=),
                Op::JumpIfNotLtInt { lhs, rhs, target } => {
                    let b = match (&r!(lhs), &r!(rhs)) {
                        (Value::Int(a), Value::Int(b)) => a < b,
                        (a, b) => tri!(Err(kind_error2("Ints", a, b))),
                    };
                    if !b {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotLeInt { lhs, rhs, target } => {
                    let b = match (&r!(lhs), &r!(rhs)) {
                        (Value::Int(a), Value::Int(b)) => a <= b,
                        (a, b) => tri!(Err(kind_error2("Ints", a, b))),
                    };
                    if !b {
                        pc = target as usize;
                    }
                }
                Op::JumpIfNotTag { src, tag, target } => {
                    let hit = match (&r!(src), &proto.consts[usize::from(tag)]) {
                        (Value::Variant(v), Value::Str(t)) => *v.tag == ***t,
                        _ => false,
                    };
                    if !hit {
                        pc = target as usize;
                    }
                }
                Op::TagIs { dst, src, tag } => {
                    let hit = match (&r!(src), &proto.consts[tag.0 as usize]) {
                        (Value::Variant(v), Value::Str(t)) => *v.tag == ***t,
                        _ => false,
                    };
                    set_bool!(dst, hit);
                }
                Op::Payload { dst, src } => {
                    let v = if let Value::Variant(v) = &r!(src) {
                        v.payload.clone().unwrap_or(Value::Unit)
                    } else {
                        Value::Unit
                    };
                    set!(dst, v);
                }
                Op::NoArm { src } => tri!(Err(no_arm(&r!(src)))),

                Op::MakeList { dst, start, n } => {
                    let s = base + usize::from(start.0);
                    let items = self.regs[s..s + usize::from(n)].to_vec();
                    set!(dst, Value::list(items));
                }
                Op::ListPush { list, src, take } => {
                    let v = take_or_clone(&mut r!(src), take);
                    if let Value::List(items) = &mut r!(list) {
                        Arc::make_mut(items).push(v);
                    } else {
                        tri!(Err(Failure::error("list-push on a non-list")))
                    }
                }
                Op::ListExtend { list, src, take } => {
                    if !matches!(r!(src), Value::List(_)) {
                        tri!(Err(kind_error("a List to spread", &r!(src))))
                    }
                    let more = take_or_clone(&mut r!(src), take);
                    let Value::List(more) = more else {
                        tri!(Err(Failure::error("list-extend of a non-list")))
                    };
                    let Value::List(items) = &mut r!(list) else {
                        tri!(Err(Failure::error("list-extend on a non-list")))
                    };
                    if items.is_empty() {
                        // Spreading into an empty list: the list itself,
                        // unshared if it was.
                        *items = more;
                    } else {
                        let items = Arc::make_mut(items);
                        match Arc::try_unwrap(more) {
                            Ok(more) => items.extend(more),
                            Err(more) => items.extend(more.iter().cloned()),
                        }
                    }
                }
                Op::MakeRecord { dst, shape, start } => {
                    let keys = proto.shapes[shape as usize].clone();
                    let s = base + usize::from(start.0);
                    let vals = self.regs[s..s + keys.len()].to_vec();
                    set!(dst, Value::record(Record::from_parts(keys, vals)));
                }
                Op::MakeRecordList { dst, shape, list } => {
                    let keys = proto.shapes[shape as usize].clone();
                    let vals = match &r!(list) {
                        Value::List(items) if items.len() == keys.len() => items.to_vec(),
                        other => tri!(Err(kind_error("the record's values", other))),
                    };
                    set!(dst, Value::record(Record::from_parts(keys, vals)));
                }
                Op::RecordSet {
                    rec,
                    key,
                    src,
                    take,
                } => {
                    let Value::Str(k) = &proto.consts[key.0 as usize] else {
                        tri!(Err(Failure::error(
                            "record-set with a key that is not text"
                        )))
                    };
                    if !matches!(r!(rec), Value::Record(_)) {
                        tri!(Err(kind_error("a record", &r!(rec))))
                    }
                    let v = take_or_clone(&mut r!(src), take);
                    if let Value::Record(r) = &mut r!(rec) {
                        // In place when this register holds the only
                        // reference; a copy first otherwise.
                        Arc::make_mut(r).insert(k.clone(), v);
                    }
                }
                Op::MapNew { dst } => set!(dst, Value::record(Record::empty())),
                Op::MapSpread { map, src, take } => {
                    if !matches!(r!(src), Value::Record(_)) {
                        tri!(Err(kind_error("a map to spread", &r!(src))))
                    }
                    if !matches!(r!(map), Value::Record(_)) {
                        tri!(Err(kind_error("a map", &r!(map))))
                    }
                    let from = take_or_clone(&mut r!(src), take);
                    if let (Value::Record(m), Value::Record(from)) = (&mut r!(map), from) {
                        if m.is_empty() {
                            // Spreading into an empty map: the map itself,
                            // unshared if it was.
                            *m = from;
                        } else {
                            Arc::make_mut(m).extend_from(&from);
                        }
                    }
                }
                Op::MapInsert {
                    map,
                    key,
                    src,
                    take,
                } => {
                    let Value::Str(k) = &r!(key) else {
                        tri!(Err(kind_error("a String key", &r!(key))))
                    };
                    let k = k.clone();
                    if !matches!(r!(map), Value::Record(_)) {
                        tri!(Err(kind_error("a map", &r!(map))))
                    }
                    let v = take_or_clone(&mut r!(src), take);
                    if let Value::Record(m) = &mut r!(map) {
                        Arc::make_mut(m).insert(k, v);
                    }
                }
                Op::MakeVariant { dst, tag, payload } => {
                    let p = r!(payload).clone();
                    let tag = tri!(const_str(proto, tag.0));
                    set!(dst, Value::variant(tag, Some(p)));
                }
                Op::MakeTag { dst, tag } => {
                    let tag = tri!(const_str(proto, tag.0));
                    set!(dst, Value::variant(tag, None));
                }
                Op::MakeClosure {
                    dst,
                    start,
                    n,
                    proto: p,
                } => {
                    let s = base + usize::from(start.0);
                    let captures: Box<[Value]> = self.regs[s..s + usize::from(n)].into();
                    let params = protos
                        .get(p as usize)
                        .map(|q| q.params.clone())
                        .unwrap_or_else(|| Arc::from(Vec::new()));
                    r!(dst) = Value::Func(Arc::new(Func::Closure {
                        proto: p,
                        captures,
                        params,
                    }));
                }
                Op::MakeClosureList {
                    dst,
                    list,
                    proto: p,
                } => {
                    let captures: Box<[Value]> = match &r!(list) {
                        Value::List(items) => items.as_slice().into(),
                        other => tri!(Err(kind_error("the closure's captures", other))),
                    };
                    let params = protos
                        .get(p as usize)
                        .map(|q| q.params.clone())
                        .unwrap_or_else(|| Arc::from(Vec::new()));
                    set!(
                        dst,
                        Value::Func(Arc::new(Func::Closure {
                            proto: p,
                            captures,
                            params,
                        }))
                    );
                }
                Op::Interp { dst, start, n } => {
                    let s = base + usize::from(start.0);
                    // Sized for the text parts plus a number or two, so
                    // the common `"item-$i"` allocates once.
                    let guess: usize = self.regs[s..s + usize::from(n)]
                        .iter()
                        .map(|v| match v {
                            Value::Str(t) => t.len(),
                            _ => 20,
                        })
                        .sum();
                    let mut out = String::with_capacity(guess);
                    for v in &self.regs[s..s + usize::from(n)] {
                        tri!(self.write_text_polled(&mut out, v));
                    }
                    set!(dst, Value::str(out));
                }

                Op::IndexList {
                    dst,
                    base: b,
                    key,
                    take,
                }
                | Op::IndexDyn {
                    dst,
                    base: b,
                    key,
                    take,
                } if matches!((&r!(b), &r!(key)), (Value::List(_), Value::Int(_))) => {
                    let i = if let Value::Int(i) = r!(key) {
                        usize::try_from(i).ok()
                    } else {
                        None
                    };
                    let v = i.and_then(|i| r!(b).element(i, take));
                    match v {
                        Some(v) => set!(dst, v),
                        None => tri!(Err(index_error(&r!(b), &r!(key)))),
                    }
                }
                Op::IndexMap {
                    dst,
                    base: b,
                    key,
                    take,
                }
                | Op::IndexDyn {
                    dst,
                    base: b,
                    key,
                    take,
                } => {
                    let k = if let Value::Str(k) = &r!(key) {
                        Some(k.clone())
                    } else {
                        None
                    };
                    let v = k.and_then(|k| r!(b).field(&k, take));
                    match v {
                        Some(v) => set!(dst, v),
                        None => tri!(Err(index_error(&r!(b), &r!(key)))),
                    }
                }
                Op::IndexList { base: b, key, .. } => {
                    tri!(Err(index_error(&r!(b), &r!(key))))
                }
                Op::IndexField {
                    dst,
                    base: b,
                    key,
                    take,
                } => {
                    let v = if let Value::Str(k) = &proto.consts[key.0 as usize] {
                        r!(b).field(k, take)
                    } else {
                        None
                    };
                    match v {
                        Some(v) => set!(dst, v),
                        None => tri!(Err(index_error(&r!(b), &proto.consts[key.0 as usize]))),
                    }
                }
                Op::MatchList { src, n, rest } => {
                    let ok = if let Value::List(items) = &r!(src) {
                        items.len() == n as usize || (rest && items.len() > n as usize)
                    } else {
                        false
                    };
                    if !ok {
                        tri!(Err(pattern_error(&r!(src), n, rest)));
                    }
                }
                Op::ListAt {
                    dst,
                    src,
                    idx,
                    take,
                } => {
                    let v = r!(src).element(idx as usize, take);
                    set!(dst, v.unwrap_or_default());
                }
                Op::ListFrom { dst, src, from } => {
                    let v = if let Value::List(items) = &r!(src) {
                        items.get(from as usize..).unwrap_or(&[]).to_vec()
                    } else {
                        Vec::new()
                    };
                    set!(dst, Value::list(v));
                }
                Op::SpillEnter {
                    spill,
                    params_from,
                    slots,
                } => {
                    let mut area = vec![Value::Unit; slots as usize];
                    let from = base + usize::from(params_from);
                    let to = base + usize::from(proto.n_params);
                    if let Some(params) = self.regs.get_mut(from..to) {
                        for (slot, p) in area.iter_mut().zip(params.iter_mut()) {
                            *slot = std::mem::take(p);
                        }
                    }
                    set!(spill, Value::list(area));
                }
                Op::SpillLoad { dst, spill, idx } => {
                    let v = match &r!(spill) {
                        Value::List(items) => items.get(idx as usize).cloned(),
                        _ => None,
                    };
                    set!(
                        dst,
                        tri!(v.ok_or_else(|| Failure::error("spill slot out of range")))
                    );
                }
                Op::SpillStore { spill, idx, src } => {
                    let v = r!(src).clone();
                    let slot = match &mut r!(spill) {
                        Value::List(items) => Arc::make_mut(items).get_mut(idx as usize),
                        _ => None,
                    };
                    match slot {
                        Some(slot) => *slot = v,
                        None => tri!(Err(Failure::error("spill slot out of range"))),
                    }
                }

                Op::Call {
                    func,
                    args,
                    argc,
                    dst,
                } => {
                    tri!(self.poll_cancel());
                    save!();
                    if let Some((p, env)) = closure_entry(&r!(func), argc, &protos) {
                        push_frame!(p, env, base + usize::from(args.0), dst);
                    } else {
                        let f = r!(func).clone();
                        let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                        let mode = Mode::Push {
                            base: base + usize::from(args.0),
                            ret: dst,
                        };
                        let res = self.apply(f, a, mode)?;
                        applied!(res, false, dst);
                    }
                }
                Op::CallGlobal {
                    slot,
                    args,
                    argc,
                    dst,
                } => {
                    tri!(self.poll_cancel());
                    save!();
                    let Some(fv) = self.mobile.scope.get(SlotId(slot)) else {
                        return Err(self.undefined(slot).into());
                    };
                    if let Some((p, env)) = closure_entry(fv, argc, &protos) {
                        push_frame!(p, env, base + usize::from(args.0), dst);
                    } else {
                        let f = fv.clone();
                        let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                        let mode = Mode::Push {
                            base: base + usize::from(args.0),
                            ret: dst,
                        };
                        let res = self.apply(f, a, mode)?;
                        applied!(res, false, dst);
                    }
                }
                Op::CallSpread { func, list, dst } => {
                    tri!(self.poll_cancel());
                    save!();
                    let f = r!(func).clone();
                    let a = tri!(spread_args(&r!(list)));
                    let mode = Mode::Push {
                        base: base + usize::from(list.0),
                        ret: dst,
                    };
                    let res = self.apply(f, a, mode)?;
                    applied!(res, false, dst);
                }
                Op::TailCallSpread { func, list } => {
                    tri!(self.poll_cancel());
                    save!();
                    let f = r!(func).clone();
                    let a = tri!(spread_args(&r!(list)));
                    let res = self.apply(f, a, Mode::Tail)?;
                    applied!(res, true, Reg(0));
                }
                Op::TailCallGlobal { slot, args, argc } => {
                    tri!(self.poll_cancel());
                    save!();
                    let Some(fv) = self.mobile.scope.get(SlotId(slot)) else {
                        return Err(self.undefined(slot).into());
                    };
                    if let Some((p, env)) = closure_entry(fv, argc, &protos) {
                        tail_enter!(p, env, args, argc);
                        break;
                    }
                    let f = fv.clone();
                    let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                    let res = self.apply(f, a, Mode::Tail)?;
                    applied!(res, true, Reg(0));
                }
                Op::CallSelf { args, dst, .. } => {
                    tri!(self.poll_cancel());
                    save!();
                    // The compiler emits it only with all the arguments,
                    // in a function with no environment.
                    let p = self.frames[fi].proto;
                    push_frame!(p, None, base + usize::from(args.0), dst);
                }
                Op::TailCallSelf { args, argc, .. } => {
                    tri!(self.poll_cancel());
                    save!();
                    let p = self.frames[fi].proto;
                    tail_enter!(p, None, args, argc);
                    break;
                }
                Op::TailCall { func, args, argc } => {
                    tri!(self.poll_cancel());
                    save!();
                    if let Some((p, env)) = closure_entry(&r!(func), argc, &protos) {
                        tail_enter!(p, env, args, argc);
                        break;
                    }
                    let f = r!(func).clone();
                    let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                    let res = self.apply(f, a, Mode::Tail)?;
                    applied!(res, true, Reg(0));
                }
                Op::CallBuiltin {
                    builtin,
                    args,
                    argc,
                    dst,
                } => {
                    tri!(self.poll_cancel());
                    save!();
                    let Some(def) = registry().get(usize::from(builtin)) else {
                        return Err(Failure::error("unknown builtin").into());
                    };
                    let mut scratch = std::mem::take(&mut self.scratch);
                    let s = base + usize::from(args.0);
                    scratch.extend(
                        self.regs[s..s + usize::from(argc)]
                            .iter_mut()
                            .map(std::mem::take),
                    );
                    let res = (def.func)(self, &scratch);
                    scratch.clear();
                    self.scratch = scratch;
                    let v = res?;
                    set!(dst, v);
                }
                Op::CallSibling {
                    member,
                    args,
                    argc,
                    dst,
                } => {
                    tri!(self.poll_cancel());
                    save!();
                    let p = tri!(proto
                        .siblings
                        .get(usize::from(member))
                        .copied()
                        .ok_or_else(|| Failure::error("sibling out of range")));
                    if protos[p as usize].n_params == u16::from(argc) {
                        if self.frames.len() >= self.max_depth {
                            return Err(depth_exceeded(self.max_depth).into());
                        }
                        let env = self.frames[fi].env.clone();
                        let nb = base + usize::from(args.0);
                        let need = nb + usize::from(protos[p as usize].n_regs);
                        if self.regs.len() < need {
                            self.regs.resize(need, Value::Unit);
                        }
                        self.frames.push(Frame {
                            proto: p,
                            pc: 0,
                            base: nb as u32,
                            ret: dst,
                            env,
                            extra: None,
                        });
                        reload!();
                    } else {
                        let f = self.sibling(&protos, proto, fi, u32::from(member))?;
                        let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                        let mode = Mode::Push {
                            base: base + usize::from(args.0),
                            ret: dst,
                        };
                        let res = self.apply(f, a, mode)?;
                        applied!(res, false, dst);
                    }
                }
                Op::TailCallSibling { member, args, argc } => {
                    tri!(self.poll_cancel());
                    save!();
                    let f = self.sibling(&protos, proto, fi, u32::from(member))?;
                    let a = self.take_args(base + usize::from(args.0), usize::from(argc));
                    let res = self.apply(f, a, Mode::Tail)?;
                    applied!(res, true, Reg(0));
                }
                Op::Return { src } => {
                    let v = if let Value::Int(n) = r!(src) {
                        Value::Int(n)
                    } else {
                        std::mem::take(&mut r!(src))
                    };
                    // Fast path: no leftover arguments and a caller in this
                    // run; otherwise `do_return` handles it.
                    if fi > stop && self.frames[fi].extra.is_none() {
                        clear_window(&mut self.regs, base, proto);
                        let ret = self.frames[fi].ret;
                        // A frame with no environment and no leftover
                        // arguments owns nothing: skip its drop glue.
                        if let Some(f) = self.frames.pop() {
                            if f.env.is_none() && f.extra.is_none() {
                                std::mem::forget(f);
                            }
                        }
                        // The caller ran in this run before, so its proto
                        // is in the snapshot.
                        fi -= 1;
                        let caller = &self.frames[fi];
                        proto = &protos[caller.proto as usize];
                        code = &proto.code;
                        base = caller.base as usize;
                        pc = caller.pc as usize;
                        let slot = &mut self.regs[base + usize::from(ret.0)];
                        if let (Value::Int(x), Value::Int(n)) = (&mut *slot, &v) {
                            *x = *n;
                        } else {
                            *slot = v;
                        }
                        break;
                    }
                    ret!(v)
                }
                Op::Exit { src } => {
                    save!();
                    let status = match r!(src) {
                        Value::Int(n) => tri!(exit_status(n)),
                        _ => 1,
                    };
                    return Err(Escape::Exit(status));
                }
                Op::PushTry { err, target } => self.handlers.push(Handler {
                    frame: self.frames.len(),
                    target,
                    err: Some(err),
                    guard: false,
                    depth: self.depths(),
                }),
                Op::PushChain { target } => self.handlers.push(Handler {
                    frame: self.frames.len(),
                    target,
                    err: None,
                    guard: false,
                    depth: self.depths(),
                }),
                Op::PushGuard { target } => self.handlers.push(Handler {
                    frame: self.frames.len(),
                    target,
                    err: None,
                    guard: true,
                    depth: self.depths(),
                }),
                Op::Reraise => {
                    let f = self.stash.pop().map_or_else(
                        || Failure::error("reraise with no held failure"),
                        |h| h.failure,
                    );
                    tri!(Err(f))
                }
                Op::PopHandler => {
                    self.handlers.pop();
                }
                Op::CaptureBegin => self.io.push(crate::io::IoFrame::capture()),
                Op::CaptureEnd { dst } => {
                    let bytes = match self.io.pop() {
                        Some(mut f) => match std::mem::take(&mut f.out) {
                            crate::io::Out::Capture(b) => b,
                            _ => Vec::new(),
                        },
                        None => Vec::new(),
                    };
                    let v = tri!(decode_capture(bytes));
                    set!(dst, v);
                }
                Op::Exec {
                    dst,
                    head,
                    args,
                    mode,
                } => {
                    save!();
                    let h = r!(head).clone();
                    let a = r!(args).clone();
                    // A command's value: `()` for programs; what a handler
                    // or a host base handler (`detach`'s receipt) returns.
                    let v = match self.exec_command(mode, &h, &a) {
                        Ok(v) => v,
                        Err(e) => return Err(e),
                    };
                    set!(dst, v);
                }
                Op::IoPush => self.io.push(crate::io::IoFrame::default()),
                Op::Redir { fd, kind, src } => {
                    // An open trail places its observations here.
                    save!();
                    let v = r!(src).clone();
                    tri!(self.redirect(fd, kind, &v));
                }
                Op::IoPop => {
                    save!();
                    tri!(self.io_pop());
                }
                Op::PipeBegin => self.pipe_begin(),
                Op::PipeStage { proto: p } => {
                    let n = usize::from(proto.n_locals);
                    let locals: Vec<Value> = self.regs[base..base + n].to_vec();
                    let env = self.frames[fi].env.clone();
                    tri!(self.pipe_stage(p, locals, env));
                }
                Op::PipeLast => tri!(self.pipe_last()),
                Op::PipeEnd => {
                    save!();
                    tri!(self.pipe_end());
                }
                Op::WithinPush { opts } => {
                    let v = r!(opts).clone();
                    tri!(self.within_push(&v));
                }
                Op::WithinPop => self.within_pop(),
                Op::GrantPush { caps } => {
                    let v = r!(caps).clone();
                    tri!(self.grant_push(&v));
                }
                Op::GrantPop => {
                    self.grants.pop();
                }
                Op::Echo { dst, list } => {
                    if self.mobile.context.handlers.is_empty() {
                        let line = tri!(self.echo_line(&r!(list)));
                        tri!(self.write(line.as_bytes()));
                    } else {
                        // A handler may intercept `echo` (§6.3).
                        save!();
                        let a = r!(list).clone();
                        let h = Value::str("echo");
                        self.exec_command(crate::op::ExecMode::Name, &h, &a)?;
                    }
                    set!(dst, Value::Unit);
                }
                Op::AuditBegin { mark, err, target } => {
                    self.handlers.push(Handler {
                        frame: self.frames.len(),
                        target,
                        err: Some(err),
                        guard: false,
                        depth: self.depths(),
                    });
                    let start = i64::try_from(self.trail.len()).unwrap_or(i64::MAX);
                    set!(mark, Value::Int(start));
                    self.audits += 1;
                }
                Op::AuditEnd { dst, mark } => {
                    self.handlers.pop();
                    self.audits = self.audits.saturating_sub(1);
                    let start = trail_start(&r!(mark));
                    let value = std::mem::take(&mut r!(dst));
                    let report = self.close_scope(start, crate::audit::outcome_ok(value));
                    set!(dst, report);
                }
                Op::AuditFail { dst, mark, err } => {
                    // The unwinder closed the scope (its depth) and put the
                    // error record in `r[err]`.
                    let start = trail_start(&r!(mark));
                    let record = std::mem::take(&mut r!(err));
                    let outcome = Value::variant("err", Some(record));
                    let report = self.close_scope(start, outcome);
                    set!(dst, report);
                }
                Op::Unsupported { feature } => tri!(Err(Failure::error(format!(
                    "{} is not supported by this VM yet",
                    feature.name()
                )))),
            }
            break;
        }
        save!();
        Ok(None)
    }

    /// Member `member` of the running closure's group, as a closure value.
    fn sibling(
        &self,
        protos: &[Arc<Proto>],
        proto: &Proto,
        fi: usize,
        member: u32,
    ) -> Result<Value, Failure> {
        let p = proto
            .siblings
            .get(member as usize)
            .copied()
            .ok_or_else(|| Failure::error("sibling out of range"))?;
        let captures = match self.frames.get(fi).and_then(|f| f.env.as_deref()) {
            Some(Func::Closure { captures, .. }) => captures.clone(),
            _ => Box::new([]),
        };
        let params = protos
            .get(p as usize)
            .map(|q| q.params.clone())
            .unwrap_or_else(|| Arc::from(Vec::new()));
        Ok(Value::Func(Arc::new(Func::Closure {
            proto: p,
            captures,
            params,
        })))
    }

    #[cold]
    fn undefined(&self, slot: u32) -> Failure {
        let name = self
            .mobile
            .scope
            .names()
            .find(|n| self.mobile.scope.lookup(n) == Some(SlotId(slot)));
        match name {
            Some(n) => Failure::error(format!("`{n}` is not defined")),
            None => Failure::error(format!(
                "session binding g{slot} is not defined (not yet run, or removed)"
            )),
        }
    }
}

impl Ctx for Vm {
    fn call(&mut self, func: &Value, args: &[Value]) -> Result<Value, Failure> {
        let result = match self.enter_exact(func, args) {
            Some(Ok(stop)) => {
                self.nested += 1;
                let r = self.run_loop(stop);
                self.nested -= 1;
                r
            }
            Some(Err(f)) => return Err(f),
            None => self.call_value(func.clone(), args.to_vec()),
        };
        match result {
            Ok(v) => Ok(v),
            Err(Escape::Fail(f)) => Err(f),
            Err(Escape::Exit(status)) => {
                // Carried past the builtin, which only knows failures; the
                // loop turns it back into an exit.
                self.pending_exit = Some(status);
                Err(Failure::error("exit"))
            }
        }
    }

    fn call_owned(&mut self, func: &Value, args: &mut [Value]) -> Result<Value, Failure> {
        let result = match self.enter_exact_owned(func, args) {
            Some(Ok(stop)) => {
                self.nested += 1;
                let r = self.run_loop(stop);
                self.nested -= 1;
                r
            }
            Some(Err(f)) => return Err(f),
            None => self.call_value(func.clone(), args.iter_mut().map(std::mem::take).collect()),
        };
        match result {
            Ok(v) => Ok(v),
            Err(Escape::Fail(f)) => Err(f),
            Err(Escape::Exit(status)) => {
                self.pending_exit = Some(status);
                Err(Failure::error("exit"))
            }
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.write_stream(crate::io::Stream::Out, bytes)
    }

    fn poll(&mut self) -> Result<(), Failure> {
        self.poll_cancel()
    }

    fn vm(&mut self) -> Option<&mut Vm> {
        Some(self)
    }

    fn cwd(&self) -> std::path::PathBuf {
        self.cwd()
    }

    fn var(&self, name: &str) -> Option<String> {
        self.mobile.context.var(name)
    }

    fn environment(&self) -> Vec<(String, String)> {
        self.environment()
    }

    fn args(&self) -> Vec<String> {
        self.args.to_vec()
    }

    fn check_fs(&mut self, op: crate::caps::FsOp, path: &std::path::Path) -> Result<(), Failure> {
        Vm::check_fs(self, op, path)
    }

    fn check_fs_real(
        &mut self,
        op: crate::caps::FsOp,
        real: &std::path::Path,
    ) -> Result<(), Failure> {
        Vm::check_fs_real(self, op, real)
    }

    fn restricts_fs(&self) -> bool {
        Vm::restricts_fs(self)
    }

    fn exiting(&self) -> bool {
        self.pending_exit.is_some()
    }
}

/// The value in `slot`: taken out (leaving `()`) when the instruction owns
/// it, else a clone.
#[inline]
fn take_or_clone(slot: &mut Value, take: bool) -> Value {
    if take {
        std::mem::take(slot)
    } else {
        slot.clone()
    }
}

/// The proto to enter and the environment to keep when `f` is a closure
/// taking exactly `argc` arguments. A closure without captures needs no
/// environment, so calling it touches no refcount.
#[inline(always)]
fn closure_entry(f: &Value, argc: u8, protos: &[Arc<Proto>]) -> Option<(u32, Option<Arc<Func>>)> {
    if let Value::Func(arc) = f {
        if let Func::Closure {
            proto, captures, ..
        } = &**arc
        {
            if protos.get(*proto as usize)?.n_params == u16::from(argc) {
                let env = if captures.is_empty() {
                    None
                } else {
                    Some(arc.clone())
                };
                return Some((*proto, env));
            }
        }
    }
    None
}

// ---- cold helpers ----

#[cold]
/// The status of `exit n` (§8.8): any integer of the signed 32-bit
/// exit-code range, carried unchanged to the host (a process host clamps
/// it to 0..=255, §16.3); anything outside is refused with an ordinary
/// failure, as `fail` refuses such a status (§8.5). spec/evaluation.md §3.
pub(crate) fn exit_status(n: i64) -> Result<i32, Failure> {
    i32::try_from(n).map_err(|_| {
        Failure::error(format!(
            "exit: status {n} is outside the signed exit-code range ({} to {})",
            i32::MIN,
            i32::MAX
        ))
    })
}

/// Where an `audit` scope's observations begin, as `AuditBegin` stored
/// it.
fn trail_start(mark: &Value) -> usize {
    match mark {
        Value::Int(n) => usize::try_from(*n).unwrap_or(0),
        _ => 0,
    }
}

fn depth_exceeded(limit: usize) -> Failure {
    Failure::error(format!("recursion depth limit ({limit} frames) exceeded"))
}

#[cold]
fn unavailable_builtin(id: u16) -> Failure {
    let name = ral_types::builtin_table()
        .entry(ral_types::BuiltinId(id))
        .map_or("?", |b| b.name);
    Failure::error(format!("builtin `{name}` is not available in this VM yet"))
}

/// Drops the heap values a returning frame of `proto` left in its window
/// (`regs[base..]`), so they die promptly and unshared buffers stay
/// unshared. Scalars hold no resources and are left in place (a later
/// write of the same kind then overwrites just the payload). Only the
/// registers the compiler found may hold heap values are visited when it
/// could tell ([`Proto::clear`]).
#[inline(always)]
fn clear_window(regs: &mut [Value], base: usize, proto: &Proto) {
    let heap = |r: &Value| {
        !matches!(
            r,
            Value::Unit | Value::Bool(_) | Value::Int(_) | Value::Float(_)
        )
    };
    match &proto.clear {
        Some(list) => {
            for &i in list.iter() {
                if let Some(r) = regs.get_mut(base + usize::from(i)) {
                    if heap(r) {
                        *r = Value::Unit;
                    }
                }
            }
        }
        None => {
            let end = (base + usize::from(proto.n_regs)).min(regs.len());
            if let Some(window) = regs.get_mut(base..end) {
                for r in window {
                    if heap(r) {
                        *r = Value::Unit;
                    }
                }
            }
        }
    }
}

/// The cause stored as `Cause as u8` in [`Vm::cancel_cause`].
pub(crate) fn cause_of(x: u8) -> Cause {
    match x {
        x if x == Cause::ReaderGone as u8 => Cause::ReaderGone,
        x if x == Cause::Cancelled as u8 => Cause::Cancelled,
        x if x == Cause::TimedOut as u8 => Cause::TimedOut,
        x if x == Cause::Terminated as u8 => Cause::Terminated,
        x if x == Cause::Aborted as u8 => Cause::Aborted,
        _ => Cause::Interrupted,
    }
}

/// The Int in a register (a backstop behind the checker).
#[inline(always)]
fn int_of(v: &Value) -> Result<i64, Failure> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(kind_error("an Int", other)),
    }
}

#[cold]
fn kind_error(expected: &str, got: &Value) -> Failure {
    crate::failure::note_backstop();
    Failure::error(format!("expected {expected}, got {}", got.kind_name()))
}

#[cold]
fn kind_error2(expected: &str, a: &Value, b: &Value) -> Failure {
    crate::failure::note_backstop();
    Failure::error(format!(
        "expected {expected}, got {} and {}",
        a.kind_name(),
        b.kind_name()
    ))
}

#[cold]
fn int_error(sym: &str, a: &Value, b: &Value) -> Failure {
    if matches!((sym, b), ("/" | "%", Value::Int(0))) {
        return Failure::error("division by zero");
    }
    Failure::error(format!(
        "integer overflow: {} {sym} {}",
        crate::display::to_text(a),
        crate::display::to_text(b)
    ))
}

fn finite(x: f64) -> Result<Value, Failure> {
    if x.is_finite() {
        Ok(Value::Float(x))
    } else {
        Err(non_finite(x))
    }
}

#[cold]
fn non_finite(x: f64) -> Failure {
    Failure::error(format!("arithmetic produced a non-finite float ({x})"))
}

#[cold]
fn generic_arith(op: ArithCode, a: &Value, b: &Value) -> Result<Value, Failure> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => {
            let (r, sym) = match op {
                ArithCode::Add => (x.checked_add(*y), "+"),
                ArithCode::Sub => (x.checked_sub(*y), "-"),
                ArithCode::Mul => (x.checked_mul(*y), "*"),
                ArithCode::Div => (x.checked_div(*y), "/"),
                ArithCode::Rem => (x.checked_rem(*y), "%"),
            };
            r.map(Value::Int).ok_or_else(|| int_error(sym, a, b))
        }
        (Value::Float(x), Value::Float(y)) => finite(match op {
            ArithCode::Add => x + y,
            ArithCode::Sub => x - y,
            ArithCode::Mul => x * y,
            ArithCode::Div => x / y,
            ArithCode::Rem => x % y,
        }),
        _ => Err(kind_error2("two Ints or two Floats", a, b)),
    }
}

fn order(a: &Value, b: &Value) -> Result<std::cmp::Ordering, Failure> {
    a.compare(b)
        .ok_or_else(|| kind_error2("two Ints, two Floats or two Strings", a, b))
}

fn const_str(proto: &Proto, k: u32) -> Result<Arc<str>, Failure> {
    match proto.consts.get(k as usize) {
        Some(Value::Str(s)) => Ok(Arc::from(s.as_str())),
        _ => Err(Failure::error("tag constant is not a string")),
    }
}

#[cold]
fn no_arm(v: &Value) -> Failure {
    if let Value::Variant(v) = v {
        Failure::error(format!("no case arm for tag `{}", v.tag))
    } else {
        kind_error("a variant", v)
    }
}

#[cold]
fn index_error(base: &Value, key: &Value) -> Failure {
    match (base, key) {
        (Value::List(items), Value::Int(i)) => Failure::error(format!(
            "index {i} out of range for a list of {} items",
            items.len()
        )),
        (Value::Record(_), Value::Str(k)) => Failure::error(format!("no key `{k}`")),
        (b, k) => Failure::error(format!(
            "cannot index {} by {}",
            b.kind_name(),
            k.kind_name()
        )),
    }
}

#[cold]
fn pattern_error(v: &Value, n: u32, rest: bool) -> Failure {
    let want = if rest {
        format!("at least {n} items")
    } else {
        format!("exactly {n} items")
    };
    let got = if let Value::List(items) = v {
        format!("{} items", items.len())
    } else {
        v.kind_name().to_owned()
    };
    Failure::error(format!(
        "pattern mismatch: expected a list of {want}, got {got}"
    ))
}

fn spread_args(list: &Value) -> Result<Vec<Value>, Failure> {
    if let Value::List(items) = list {
        Ok(items.to_vec())
    } else {
        Err(kind_error("a List of arguments", list))
    }
}

fn decode_capture(bytes: Vec<u8>) -> Result<Value, Failure> {
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            let keep = crate::codec::lines::strip_one_newline(&s).len();
            s.truncate(keep);
            Ok(Value::str(s))
        }
        Err(e) => Err(Failure::error(format!(
            "captured output is not valid UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))),
    }
}

/// The record a `try` handler receives (§17.7).
pub fn error_record(f: &Failure) -> Value {
    let reason = match f.reason {
        Reason::Exited(n) => Value::variant("exited", Some(Value::Int(i64::from(n)))),
        Reason::Signaled(n) => Value::variant("signaled", Some(Value::Int(i64::from(n)))),
        Reason::Cancelled(c) => {
            let cause = match c {
                Cause::ReaderGone => "reader-gone",
                Cause::Interrupted => "interrupted",
                Cause::Cancelled => "cancelled",
                Cause::TimedOut => "timed-out",
                Cause::Terminated => "terminated",
                Cause::Aborted => "aborted",
            };
            Value::variant("cancelled", Some(Value::variant(cause, None)))
        }
        Reason::NotFound => Value::variant("not-found", None),
        Reason::NotRunnable => Value::variant("not-runnable", None),
        Reason::Raised => Value::variant("raised", None),
    };
    Value::record(Record::from_entries(vec![
        (
            "cmd".into(),
            Value::str(f.cmd.as_deref().unwrap_or("<runtime>")),
        ),
        ("status".into(), Value::Int(i64::from(f.status))),
        ("reason".into(), reason),
        ("message".into(), Value::str(f.message.as_str())),
        ("site".into(), site_value(f.site.as_ref())),
    ]))
}

/// `` `just [script, line, col] `` or `` `none `` (§8.6).
fn site_value(site: Option<&crate::failure::Site>) -> Value {
    match site {
        Some(s) => Value::variant(
            "just",
            Some(Value::record(Record::from_entries(vec![
                ("script".into(), Value::str(s.script.as_ref())),
                ("line".into(), Value::Int(i64::from(s.line))),
                ("col".into(), Value::Int(i64::from(s.col))),
            ]))),
        ),
        None => Value::variant("none", None),
    }
}
