//! The VM's contact with the operating system: command dispatch,
//! redirects, pipelines and `within` (spec §6.2–6.8, §7, §9).
//!
//! The dispatch loop ([`crate::exec`]) decodes the ops and calls the
//! methods here; these run on the machine's IO stack ([`crate::io`]) and
//! the process runtime ([`crate::process`]).
//!
//! # Command dispatch (§6.3)
//!
//! A bare head that is not a binding (the checker and lowering settled that)
//! is looked up, in order: named handlers of the `within` frames, innermost
//! first, skipping masked frames; the base handlers (`echo`, then any base
//! handler row of the builtin table the host registered with
//! [`Vm::register_host_builtin`], such as exarch's `detach`); catch-all
//! handlers, innermost first; then `PATH`. A handler runs with its whole
//! frame masked (§9.6), so a handler for `git` that runs `git` reaches the
//! next frame out, or the program. Handlers get the arguments rendered to
//! text as one `[String]`; a catch-all also gets the name. The command's
//! value is the handler's (a base handler such as `detach` returns a
//! record; the checker holds every arm for it to the same scheme), `()` for
//! `echo` and a program. [`Vm::intercepts`] says whether a bare name would
//! be taken by a handler or a base handler rather than reach `PATH`.
//!
//! # Pipelines (§7.1, §7.6)
//!
//! Every `|` is an OS pipe. A non-final stage runs on a thread of its own,
//! on a fork of this machine ([`crate::Vm::fork`]) sharing the cancel flag,
//! with its output on the pipe's write end; an external program inside it
//! is started on the real descriptors, so bytes between two programs never
//! pass through the interpreter. The final stage runs inline with the last
//! pipe as its input, and the pipeline's value is its value. When it is
//! done every stage is waited for; the first failure in launch order wins,
//! except that a non-final stage cut off because its reader went away
//! (`SIGPIPE`, or `reader-gone` for a ral stage) is forgiven. A failure of
//! the final stage settles the pipeline on its way out
//! ([`Vm::settle_pipes`], called by the unwinder): the input is closed,
//! every stage joined, and an earlier stage's failure replaces it. A
//! stage's shell-state changes stay with it (§9.7): a non-final stage's in
//! its fork, the final stage's undone from the context saved when it
//! started.
//!
//! # Audit doors (§13.3, §12.7; spec/audit.md)
//!
//! While a trail is open ([`crate::Vm::observing`]) a program launch is a
//! `command` observation (its output streams pumped and copied as they go
//! to their destinations), a redirect's write is watched by its IO frame
//! and observed when the frame is popped ([`Vm::io_pop`]) or dropped by a
//! failure ([`Vm::drop_io_to`]), a `<` is a `read`, every exec and fs
//! denial a `check`, and entering a `grant` may flag a writable admitted
//! directory. A pipeline stage's fragment is merged when it is joined.
//!
//! # `within` (§9.1–9.3)
//!
//! All options are evaluated and validated against the incoming context
//! before any is installed; then the environment overlay, the directory and
//! the handler frame go in, and [`crate::Vm`] restores exactly the saved
//! context when the scope ends, normally or by a failure (unwinding pops
//! `within` saves with the handler it lands on). A scope with `dir` undoes
//! a `cd` made inside; one without leaves the directory alone (§9.2).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::audit::{
    now_us, CommandObs, Observation, Origin, Retained, What, WriteMode, WriteObs, WriteOutcome,
};
use crate::display::to_text;
use crate::exec::{Escape, Stdin, Stdout, Vm};
use crate::failure::{Cause, Failure, Reason};
use crate::io::{self, In, IoFrame, Out, Pending, SharedBuf, Stream, Target};
use crate::op::{ExecMode, RedirCode};
use crate::process::{self, Launch, Plan};
use crate::value::{Func, Record, Value};

/// A pipeline being run: its stage threads and the read end of the last
/// pipe (the next stage's input).
pub(crate) struct PipeRun {
    stages: Vec<Stage>,
    /// The edge each non-final stage writes, in launch order.
    edges: Vec<Arc<crate::job::Edge>>,
    /// The job the pipeline's programs belong to (one process group).
    job: Arc<crate::job::Job>,
    next_input: Option<File>,
    /// Set when the final stage starts: the shell state it may change and
    /// the IO depth below its input frame.
    last: Option<LastStage>,
    /// How long the trail was when the pipeline began: the stages'
    /// fragments are merged into what follows in settlement order.
    trail_mark: usize,
}

/// What the final stage, which runs on the caller's machine, must not
/// leave behind: a stage's state changes are private to it (§7.1, §9.7).
struct LastStage {
    context: crate::session::Context,
    /// `handlers_len` of every enclosing `within` (an `alias` made inside
    /// the stage shifts them when it creates the alias frame).
    within_lens: Vec<usize>,
    masked: Vec<usize>,
    /// `io.len()` before the stage's input frame was pushed.
    io_depth: usize,
}

struct Stage {
    /// The stage's outcome and the observations it made (§13.3).
    thread: JoinHandle<(Result<(), Failure>, Vec<Observation>)>,
    /// The stage's standard error when it could not be a descriptor.
    err: Option<SharedBuf>,
}

/// What `within` replaced, to put back.
pub(crate) struct WithinSave {
    /// The working directory before a `dir` option replaced it; `None`
    /// when the scope has no `dir`, which leaves the directory alone, so a
    /// `cd` inside it persists (§9.2).
    cwd: Option<Option<PathBuf>>,
    env_len: usize,
    handlers_len: usize,
}

/// A handler frame installed by `within`: named handlers and an optional
/// catch-all. Stored in `Context::handlers` as a two-element list
/// `[named record, catch-all or ()]`.
fn handler_frame(named: Value, catch_all: Value) -> Value {
    Value::list(vec![named, catch_all])
}

fn frame_parts(v: &Value) -> (Option<&Record>, Option<&Value>) {
    let Value::List(items) = v else {
        return (None, None);
    };
    let named = match items.first() {
        Some(Value::Record(r)) => Some(&**r),
        _ => None,
    };
    let catch = match items.get(1) {
        Some(f @ Value::Func(_)) => Some(f),
        _ => None,
    };
    (named, catch)
}

/// Whether a handler frame is the alias frame (its catch-all slot holds
/// the marker `builtins::session` puts there).
fn is_alias_frame(v: &Value) -> bool {
    matches!(v, Value::List(items) if matches!(items.get(1), Some(Value::Str(s)) if s.as_str() == crate::builtins::session::ALIAS_FRAME))
}

/// The base handlers this VM implements.
const BASE_HANDLERS: &[&str] = &["echo"];

impl Vm {
    // ---- output ----

    /// Writes to stream `s` wherever it currently goes.
    pub(crate) fn write_stream(&mut self, s: Stream, bytes: &[u8]) -> Result<(), Failure> {
        let target = io::resolve(&self.io, s);
        self.write_target(&target, bytes)
    }

    fn write_target(&mut self, target: &Target, bytes: &[u8]) -> Result<(), Failure> {
        match target {
            Target::Capture(i, s) => io::append_capture(&mut self.io, *i, *s, bytes),
            Target::File(f) => {
                // A ral-written stage's own write to a dead edge raises
                // the break at that write (§7.6).
                if self.edge_of(target).is_some_and(|e| e.is_dead()) {
                    return Err(Failure::cancelled(Cause::ReaderGone));
                }
                io::write_file(f, bytes)
            }
            Target::Base(Stream::Out) => write_base(&mut self.stdout, Stream::Out, bytes),
            Target::Base(Stream::Err) => write_base(&mut self.stderr, Stream::Err, bytes),
        }
    }

    /// The pipeline edge `target` is, when it is the one this stage
    /// machine writes.
    fn edge_of(&self, target: &Target) -> Option<&Arc<crate::job::Edge>> {
        match (target, &self.out_edge) {
            (Target::File(f), Some((addr, edge))) if Arc::as_ptr(f) as usize == *addr => Some(edge),
            _ => None,
        }
    }

    /// The job a program started now belongs to: the running pipeline's,
    /// else one of its own, lent the terminal when the host leased one and
    /// the program's output is that terminal.
    fn current_job(&self, out: &Target) -> Arc<crate::job::Job> {
        if let Some(run) = self.pipes.last() {
            return run.job.clone();
        }
        if let Some(job) = &self.job {
            return job.clone();
        }
        crate::job::Job::new(self.terminal.as_ref(), self.to_terminal(out))
    }

    /// Whether output sent to `out` reaches the leased terminal.
    fn to_terminal(&self, out: &Target) -> bool {
        use std::os::fd::AsFd;
        match (out, &self.terminal) {
            (Target::Base(Stream::Out), Some(t)) => {
                matches!(self.stdout, Stdout::Inherit) && t.is(std::io::stdout().as_fd())
            }
            _ => false,
        }
    }

    /// A descriptor for `target` where it has one (a file, or an inherited
    /// standard stream).
    fn target_fd(&self, target: &Target) -> Result<Option<File>, Failure> {
        let dup = |f: std::os::fd::BorrowedFd<'_>| {
            f.try_clone_to_owned()
                .map(File::from)
                .map_err(|e| Failure::error(format!("dup: {e}")))
        };
        match target {
            Target::File(f) => f
                .try_clone()
                .map(Some)
                .map_err(|e| Failure::error(format!("dup: {e}"))),
            Target::Base(Stream::Out) => match self.stdout {
                Stdout::Inherit => dup(std::io::stdout().as_fd()).map(Some),
                Stdout::Buffer(_) | Stdout::Writer(_) => Ok(None),
            },
            Target::Base(Stream::Err) => match self.stderr {
                Stdout::Inherit => dup(std::io::stderr().as_fd()).map(Some),
                Stdout::Buffer(_) | Stdout::Writer(_) => Ok(None),
            },
            Target::Capture(..) => Ok(None),
        }
    }

    /// The child's plan for output stream `s`; `teed` pumps it whatever
    /// its destination (an open trail copies the bytes).
    ///
    /// A stream whose destination is an inherited base sink gets that
    /// sink's descriptor: inherited as it is when the stream is the sink's
    /// own, a duplicate of the other one when a `2>&1` below sent it there
    /// (standard error under a block's `2>&1`, with the command's own
    /// standard output redirected elsewhere, §7.4).
    fn plan(&self, s: Stream, teed: bool) -> Result<(Plan, Target), Failure> {
        let target = io::resolve(&self.io, s);
        let plan = match &target {
            _ if teed => Plan::Pump,
            Target::Base(b) => match self.target_fd(&target)? {
                Some(_) if *b == s => Plan::Direct(Stdio::inherit()),
                Some(fd) => Plan::Direct(Stdio::from(fd)),
                None => Plan::Pump,
            },
            Target::File(f) => Plan::Direct(process::stdio_of(f)?),
            Target::Capture(..) => Plan::Pump,
        };
        Ok((plan, target))
    }

    /// The child's standard input.
    fn stdin_plan(&self) -> Result<Stdio, Failure> {
        match io::resolve_input(&self.io) {
            Some(f) => process::stdio_of(&f),
            None => Ok(match self.stdin {
                Stdin::Inherit => Stdio::inherit(),
                Stdin::Null => Stdio::null(),
            }),
        }
    }

    /// The current standard input as a reader (the decoders and line
    /// readers, §7.3): a redirect's file or a pipe, else the machine's
    /// base input. Every read waits with polls of the cancel flag
    /// ([`crate::waiting`]), so a silent writer cannot hold a cancelled
    /// run; [`Vm::read_error`] turns such a wait into the cancellation.
    pub fn input(&self) -> Box<dyn Read> {
        use std::os::fd::AsRawFd;
        let cancel = self.cancel_probe();
        match io::resolve_input(&self.io) {
            Some(f) => Box::new(crate::waiting::Polled {
                fd: f.as_raw_fd(),
                inner: crate::waiting::ArcFile(f),
                cancel,
            }),
            None if self.terminal_eof => Box::new(std::io::empty()),
            None => match self.stdin {
                Stdin::Inherit => Box::new(crate::waiting::Polled {
                    fd: libc::STDIN_FILENO,
                    inner: std::io::stdin(),
                    cancel,
                }),
                Stdin::Null => Box::new(std::io::empty()),
            },
        }
    }

    /// A failed read of the standard input as the run's failure: a wait
    /// the cancel flag ended is the run's cancellation.
    pub fn read_error(&self, who: &str, e: std::io::Error) -> Failure {
        if crate::waiting::is_cancelled(&e) {
            if let Err(f) = self.poll_cancel() {
                return f;
            }
        }
        Failure::error(format!("{who}read: {e}"))
    }

    /// Reads all of the current standard input (the decoders, §7.3).
    pub fn read_input(&mut self) -> Result<Vec<u8>, Failure> {
        let mut buf = Vec::new();
        self.input()
            .read_to_end(&mut buf)
            .map_err(|e| self.read_error("", e))?;
        Ok(buf)
    }

    // ---- commands ----

    /// Runs a command head with its argument list (see the module docs);
    /// the command's value.
    pub(crate) fn exec_command(
        &mut self,
        mode: ExecMode,
        head: &Value,
        args: &Value,
    ) -> Result<Value, Escape> {
        let Value::List(items) = args else {
            return Err(Failure::error("command arguments are not a list").into());
        };
        match mode {
            ExecMode::Name => {
                let name = head.as_str().unwrap_or_default().to_owned();
                self.dispatch_name(&name, items)
            }
            ExecMode::External => {
                let name = head.as_str().unwrap_or_default().to_owned();
                let rendered = render_os_args(&name, items)?;
                self.run_external_named(&name, rendered)
                    .map(|()| Value::Unit)
                    .map_err(Escape::from)
            }
            ExecMode::Path => {
                let path = crate::display::to_text(head);
                let rendered = render_os_args(&path, items)?;
                let full = self.expand_path(&path)?;
                self.run_program(&path, full, rendered)
                    .map(|()| Value::Unit)
                    .map_err(Escape::from)
            }
        }
    }

    /// The names the session's aliases handle, sorted (the checker types a
    /// bare head of one of them as an arm, §17.3).
    pub fn alias_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .mobile
            .context
            .handlers
            .iter()
            .filter(|f| is_alias_frame(f))
            .filter_map(|f| frame_parts(f).0)
            .flat_map(|r| r.iter().map(|(k, _)| k.to_string()))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Whether dispatching the bare head `name` here would reach a handler
    /// (a named arm or a catch-all of an unmasked frame, aliases included)
    /// or a base handler, rather than a program found on `PATH`: the
    /// refusal test of `detach` (§11.5, §9.4).
    pub fn intercepts(&self, name: &str) -> bool {
        let frames = &self.mobile.context.handlers;
        let handled = frames.iter().enumerate().any(|(i, frame)| {
            if self.masked.contains(&i) {
                return false;
            }
            let (named, catch_all) = frame_parts(frame);
            catch_all.is_some() || named.is_some_and(|r| r.get(name).is_some())
        });
        handled || BASE_HANDLERS.contains(&name) || self.host_base_handler(name).is_some()
    }

    /// What `explain name` says about where `name` resolves (§14.1,
    /// §15.4), in the lookup order of §6.3: a session binding, a builtin
    /// or prelude row, the named handlers (`within` arms and aliases,
    /// innermost first), a base handler, a catch-all, a program on `PATH`.
    /// The first that a bare head would reach is what it resolves to; the
    /// ones it hides are listed under `shadows:`. `None` when nothing
    /// answers to the name.
    pub fn describe_name(&self, name: &str) -> Option<String> {
        let mut found: Vec<String> = Vec::new();
        let types = self.session_types();
        if let Some(entry) = types.get(name) {
            found.push(format!(
                "{name} : {}
  a session binding",
                ral_types::print_scheme(&entry.scheme, None)
            ));
        } else if self.mobile.scope.get_named(name).is_some() {
            found.push(format!(
                "{name}
  a session binding (its type is not known here)"
            ));
        }
        let table = ral_types::builtin_table();
        if let Some(b) = table.get(name) {
            let kind = match b.kind {
                ral_types::BuiltinKind::Builtin => "builtin",
                ral_types::BuiltinKind::Prelude => "prelude function",
                ral_types::BuiltinKind::Decoder => "decoder",
                ral_types::BuiltinKind::BaseHandler => "base handler",
                ral_types::BuiltinKind::Boundary => "checked boundary",
            };
            let installed = if self.has_builtin(name) || BASE_HANDLERS.contains(&name) {
                ""
            } else {
                " (not installed in this host)"
            };
            let entry = format!(
                "{name} : {}
  {}
  a {kind}{installed}",
                ral_types::print_scheme(b.scheme(), None),
                b.doc
            );
            // A base handler answers after the named handlers (§6.3).
            if b.kind != ral_types::BuiltinKind::BaseHandler {
                found.push(entry);
            }
        }
        let frames = &self.mobile.context.handlers;
        for frame in frames.iter().rev() {
            let (named, _) = frame_parts(frame);
            if let Some(arm) = named.and_then(|r| r.get(name)) {
                let what = if is_alias_frame(frame) {
                    "an alias"
                } else {
                    "a handler of an enclosing `within`"
                };
                found.push(format!(
                    "{name} : {{[String] -> Command}}
  {what}: {}",
                    to_text(arm)
                ));
            }
        }
        if let Some(b) = table
            .get(name)
            .filter(|b| b.kind == ral_types::BuiltinKind::BaseHandler)
        {
            found.push(format!(
                "{name} : {}
  {}
  a base handler",
                ral_types::print_scheme(b.scheme(), None),
                b.doc
            ));
        }
        if let Some(frame) = frames
            .iter()
            .rev()
            .find(|f| !is_alias_frame(f) && frame_parts(f).1.is_some())
        {
            if let (_, Some(h)) = frame_parts(frame) {
                found.push(format!(
                    "{name} : {{String -> [String] -> Command}}
  the catch-all handler of an enclosing `within`: {}",
                    to_text(h)
                ));
            }
        }
        let path = self.mobile.context.var("PATH");
        if let Some(p) = process::search_path(name, path.as_deref(), &self.cwd()) {
            found.push(format!(
                "{name} : Command
  the program {}",
                p.display()
            ));
        } else if let Some(p) = process::search_path_unrunnable(name, path.as_deref(), &self.cwd())
        {
            found.push(format!(
                "{name}
  a file on PATH that is not executable: {}",
                p.display()
            ));
        }
        let (first, rest) = found.split_first()?;
        let mut out = format!(
            "{first}
"
        );
        if !rest.is_empty() {
            out.push_str(
                "  shadows:
",
            );
            for r in rest {
                let head = r.lines().next().unwrap_or_default();
                let what = r.lines().last().unwrap_or_default().trim();
                out.push_str(&format!(
                    "    {what} ({head})
"
                ));
            }
        }
        Some(out)
    }

    /// The table id of `name` when it is a base handler the host
    /// registered (not one this VM implements).
    fn host_base_handler(&self, name: &str) -> Option<u16> {
        let table = ral_types::builtin_table();
        let b = table.get(name)?;
        let registered = b.kind == ral_types::BuiltinKind::BaseHandler
            && !BASE_HANDLERS.contains(&name)
            && self.has_builtin(name);
        registered.then(|| table.id(name).map(|id| id.0)).flatten()
    }

    /// Dispatches a bare name (§6.3). A handler, an alias or a base
    /// handler receives the arguments rendered by the total text
    /// conversion (§6.4, §6.6), as `echo` writes them; only a program gets
    /// the narrower operating-system rendering, judged here at the call.
    fn dispatch_name(&mut self, name: &str, items: &[Value]) -> Result<Value, Escape> {
        let text_list = || Value::list(items.iter().map(|v| Value::str(to_text(v))).collect());
        let frames = self.mobile.context.handlers.clone();
        // Named handlers, innermost first.
        for (i, frame) in frames.iter().enumerate().rev() {
            if self.masked.contains(&i) {
                continue;
            }
            if let (Some(named), _) = frame_parts(frame) {
                if let Some(h) = named.get(name) {
                    if is_alias_frame(frame) {
                        return self.run_alias(i, name, h.clone(), vec![text_list()]);
                    }
                    return self.run_handler(i, h.clone(), vec![text_list()]);
                }
            }
        }
        if BASE_HANDLERS.contains(&name) {
            let args: Vec<String> = items.iter().map(to_text).collect();
            return self
                .base_handler(name, &args)
                .map(|()| Value::Unit)
                .map_err(Escape::from);
        }
        if let Some(id) = self.host_base_handler(name) {
            // A base handler takes its arguments as one list (§11.5).
            let handler = Value::Func(Arc::new(Func::Builtin {
                id,
                applied: Box::new([]),
            }));
            return self.call_value(handler, vec![text_list()]);
        }
        for (i, frame) in frames.iter().enumerate().rev() {
            if self.masked.contains(&i) {
                continue;
            }
            if let (_, Some(h)) = frame_parts(frame) {
                return self.run_handler(i, h.clone(), vec![Value::str(name), text_list()]);
            }
        }
        let args = render_os_args(name, items)?;
        self.run_external_named(name, args)
            .map(|()| Value::Unit)
            .map_err(Escape::from)
    }

    /// Runs alias `name` (frame `i`) under the grant stack it was installed
    /// under, pushed on top of the caller's (nested grants intersect, so it
    /// can only narrow), and pops those layers again however it ends.
    fn run_alias(
        &mut self,
        i: usize,
        name: &str,
        h: Value,
        args: Vec<Value>,
    ) -> Result<Value, Escape> {
        let kept = self
            .mobile
            .context
            .alias_grants
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, layers)| layers.clone());
        let Some(layers) = kept else {
            return self.run_handler(i, h, args);
        };
        let depth = self.grants.len();
        self.grants.extend(layers);
        let r = self.run_handler(i, h, args);
        self.grants.truncate(depth);
        r
    }

    /// Runs a handler of frame `i` with that frame masked; its value.
    fn run_handler(&mut self, i: usize, h: Value, args: Vec<Value>) -> Result<Value, Escape> {
        self.masked.push(i);
        let r = self.call_value(h, args);
        self.masked.pop();
        r
    }

    fn base_handler(&mut self, name: &str, args: &[String]) -> Result<(), Failure> {
        match name {
            "echo" => {
                let mut line = args.join(" ");
                line.push('\n');
                self.write_stream(Stream::Out, line.as_bytes())
            }
            _ => Err(Failure::error(format!("no base handler `{name}`"))),
        }
    }

    fn run_external_named(&mut self, name: &str, args: Vec<String>) -> Result<(), Failure> {
        let cwd = self.cwd();
        let path = self.mobile.context.var("PATH");
        match process::search_path(name, path.as_deref(), &cwd) {
            Some(program) => self.run_program(name, program, args),
            None => {
                let start = now_us();
                let f = if let Some(file) =
                    process::search_path_unrunnable(name, path.as_deref(), &cwd)
                {
                    process::not_runnable(name, &file)
                } else {
                    let names: Vec<&str> = ral_types::builtin_table()
                        .iter()
                        .map(|b| b.name)
                        .filter(|n| !n.starts_with('_'))
                        .collect();
                    let sugg = process::suggest(name, path.as_deref(), &names);
                    process::not_found(name, &sugg)
                };
                let result = Err(f);
                if self.observing() {
                    self.observe_command(start, name, &args, &result, Tee::default());
                }
                result
            }
        }
    }

    /// A path as every path builtin resolves it (`builtins::fs::resolve`:
    /// the `~` and `xdg:` sigils, relative paths against the logical cwd).
    pub(crate) fn expand_path(&self, p: &str) -> Result<PathBuf, Failure> {
        crate::builtins::fs::resolve(self, p).map_err(|m| Failure::error(format!("{p}: {m}")))
    }

    fn run_program(
        &mut self,
        name: &str,
        program: PathBuf,
        args: Vec<String>,
    ) -> Result<(), Failure> {
        if !self.observing() {
            return self.launch(name, program, args, None);
        }
        // Under an open trail (§13.3) the command is observed: its argv,
        // its outcome, and a copy of its output streams.
        let start = now_us();
        let mut tee = Tee::default();
        let result = self.launch(name, program, args.clone(), Some(&mut tee));
        self.observe_command(start, name, &args, &result, tee);
        result
    }

    /// Records a command observation for `name args`, which ran from
    /// `start` and ended with `result`.
    fn observe_command(
        &mut self,
        start: i64,
        name: &str,
        args: &[String],
        result: &Result<(), Failure>,
        tee: Tee,
    ) {
        let mut argv = Vec::with_capacity(args.len() + 1);
        argv.push(name.to_owned());
        argv.extend(args.iter().cloned());
        let (status, error) = match result {
            Ok(()) => (0, String::new()),
            Err(f) => (f.status, f.message.clone()),
        };
        self.observe_here(
            start,
            What::Command(Box::new(CommandObs {
                argv,
                status,
                origin: Origin::External,
                stdout: tee.out.into_bytes(),
                stderr: tee.err.into_bytes(),
                error,
            })),
        );
    }

    /// Starts `program` as `name` with `args` on the current streams and
    /// waits for it. With `tee`, both output streams are pumped so their
    /// bytes are copied there on their way (§13.3).
    fn launch(
        &mut self,
        name: &str,
        program: PathBuf,
        args: Vec<String>,
        mut tee: Option<&mut Tee>,
    ) -> Result<(), Failure> {
        self.poll_cancel()?;
        if !self.grants.is_empty() && program.exists() {
            if let Err(mut f) = crate::caps::check_exec(&self.grants, name, &program, &args) {
                f.cmd = Some(name.into());
                self.observe_exec_denial(name, &program, &args, &f);
                return Err(f);
            }
        }
        // The second layer (§12.10): confined by the kernel when a layer
        // restricts fs, exec or net; refused when the kernel cannot.
        let sandbox = crate::sandbox::prepare(&self.grants, name, &program)?;
        let mut env = self.environment();
        if sandbox.is_some() {
            crate::sandbox::scrub_env(&mut env);
        }
        let teed = tee.is_some();
        let (out_plan, out_target) = self.plan(Stream::Out, teed)?;
        let (err_plan, err_target) =
            if io::same_target(&out_target, &io::resolve(&self.io, Stream::Err)) {
                // `2>&1`: standard error is standard output's own descriptor,
                // or the same pumped pipe, so order of writes is kept (§7.4).
                let plan = match (teed, self.target_fd(&out_target)?) {
                    (false, Some(f)) => Plan::Direct(Stdio::from(f)),
                    (true, _) | (false, None) => Plan::WithOut,
                };
                (plan, out_target.clone())
            } else {
                self.plan(Stream::Err, teed)?
            };
        let edge = self
            .edge_of(&out_target)
            .or_else(|| self.edge_of(&err_target))
            .cloned();
        let launch = Launch {
            name,
            program,
            args: args.into_iter().map(OsString::from).collect(),
            cwd: self.cwd(),
            env,
            stdin: self.stdin_plan()?,
            stdout: out_plan,
            stderr: err_plan,
            job: self.current_job(&out_target),
            edge,
            sandbox,
        };
        let probe = self.cancel_probe();
        let cancelled = move || probe.is_set();
        // Read when the cancel lands: the host stores the cause just
        // before it sets the flag.
        let cause_cell = self.cancel_cause.clone();
        let cause = move || crate::exec::cause_of(cause_cell.load(Ordering::Relaxed));
        let ran = process::run(launch, &cancelled, &cause, &mut |s, bytes| {
            let t = match s {
                Stream::Out => &out_target,
                Stream::Err => &err_target,
            };
            let written = self.write_target(t, bytes);
            if let Some(tee) = tee.as_deref_mut() {
                match s {
                    Stream::Out => tee.out.push(bytes),
                    Stream::Err => tee.err.push(bytes),
                }
                // A pumped copy for a terminal is not held back in a line
                // buffer behind bytes written directly.
                if let Target::Base(stream) = t {
                    flush_base(self, *stream);
                }
            }
            written
        });
        // A key of the terminal the program was lent (or shares with ral)
        // cancels the run it belongs to, so `try` cannot recover it
        // (§8.10).
        if let Err(f) = &ran {
            if let Reason::Cancelled(
                c @ (Cause::Interrupted | Cause::Aborted | Cause::Terminated),
            ) = f.reason
            {
                if !self.cancelled() {
                    crate::exec::raise_cancel(
                        &self.mobile.context.cancel,
                        &self.cancel_cause,
                        &self.cancel_count,
                        c,
                    );
                }
            }
        }
        ran
    }

    /// Records an `exec` denial (§12.7): the command, the file it would
    /// have run, its evaluated arguments and why.
    pub fn observe_exec_denial(
        &mut self,
        name: &str,
        program: &Path,
        args: &[String],
        f: &Failure,
    ) {
        if !self.observing() {
            return;
        }
        let mut shown = String::new();
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                shown.push(' ');
            }
            crate::quote::write_ral_word(&mut shown, a);
        }
        self.observe_denial(
            "exec",
            vec![
                ("command".into(), name.to_owned()),
                ("path".into(), program.display().to_string()),
                ("args".into(), shown),
                ("reason".into(), f.message.clone()),
            ],
        );
    }

    // ---- redirects (§7.4, §7.5) ----

    pub(crate) fn redirect(&mut self, fd: u8, kind: RedirCode, src: &Value) -> Result<(), Failure> {
        let stream = match fd {
            1 => Some(Stream::Out),
            2 => Some(Stream::Err),
            _ => None,
        };
        match kind {
            RedirCode::Keep => Ok(()),
            RedirCode::ErrToOut => {
                self.top_io()?.err = Out::Other;
                Ok(())
            }
            RedirCode::Read => {
                let path = self.expand_path(&crate::display::to_text(src))?;
                let start = now_us();
                let cannot = |e: std::io::Error| {
                    Failure::error(format!("cannot read {}: {e}", path.display()))
                };
                let f = if self.restricts_fs() {
                    // Walked, judged on the real path, opened on the
                    // descriptor the walk reached (crate::walk).
                    self.guarded(&path, crate::caps::FsOp::Read, true, |r| {
                        r.open(rustix::fs::OFlags::RDONLY, 0).map(File::from)
                    })?
                    .map_err(cannot)?
                } else {
                    self.check_fs(crate::caps::FsOp::Read, &path)?;
                    File::open(&path).map_err(cannot)?
                };
                self.top_io()?.input = In::File(Arc::new(f));
                self.observe_here(
                    start,
                    What::Read {
                        path: path.display().to_string(),
                    },
                );
                Ok(())
            }
            RedirCode::Here => {
                let text = crate::display::to_text(src);
                let body = strip_leading_newline(&text).as_bytes().to_vec();
                let f = process::feed(body)?;
                self.top_io()?.input = In::File(Arc::new(f));
                Ok(())
            }
            RedirCode::Write | RedirCode::Stream | RedirCode::Append => {
                let Some(stream) = stream else {
                    return Err(Failure::error(format!("cannot redirect descriptor {fd}")));
                };
                let path = self.expand_path(&crate::display::to_text(src))?;
                // `2>` streams (§7.4): diagnostics are not held back until
                // the command ends, and what landed stays if it fails. Only
                // standard output's `>` is atomic.
                let kind = match (stream, kind) {
                    (Stream::Err, RedirCode::Write) => RedirCode::Stream,
                    _ => kind,
                };
                let mode = match kind {
                    RedirCode::Append => WriteMode::Append,
                    RedirCode::Stream => WriteMode::Stream,
                    _ => WriteMode::Write,
                };
                let start = now_us();
                let observing = self.observing();
                let grants = self.grants.clone();
                // The before-image of a streaming write is read before the
                // open truncates or extends it; `>` leaves the target alone
                // until it commits, and its open reports what it found.
                let early_image = |target: &Path| match (observing, kind) {
                    (true, RedirCode::Append | RedirCode::Stream) => {
                        Some(crate::audit::image(target, None, &grants))
                    }
                    _ => None,
                };
                let opened = if self.restricts_fs() {
                    // Walked, judged on the real path the walk took, and
                    // opened on the directory descriptor it reached with
                    // O_NOFOLLOW: neither a dangling link nor a directory
                    // swapped for a link meanwhile can lead the open
                    // outside what was judged (crate::walk).
                    match self.guarded(&path, crate::caps::FsOp::Write, true, |r| {
                        let early = early_image(&r.real);
                        open_output_at(r, kind).map(|o| (o, early))
                    }) {
                        Ok(Ok(opened)) => Ok(opened),
                        Ok(Err(e)) => Err(cannot_write(&path, &e)),
                        Err(f) => Err(f),
                    }
                } else {
                    match self.check_fs(crate::caps::FsOp::Write, &path) {
                        Err(f) => Err(f),
                        Ok(()) => {
                            let early = early_image(&path);
                            open_output(&path, kind).map(|o| (o, early))
                        }
                    }
                };
                let ((file, pending, found), early) = match opened {
                    Ok(opened) => opened,
                    Err(f) => {
                        self.observe_write_failed(start, &path, mode);
                        return Err(f);
                    }
                };
                let watch = match (self.observing(), early) {
                    (false, _) => None,
                    (true, early) => {
                        let before = match early {
                            Some(image) => image,
                            None => crate::audit::image(&path, found.as_ref(), &self.grants),
                        };
                        let (old, device) = match before {
                            crate::audit::Image::Absent => (Some(Vec::new()), false),
                            crate::audit::Image::Bytes(b) => (Some(b), false),
                            crate::audit::Image::Unkept => (None, false),
                            crate::audit::Image::Device => (None, true),
                        };
                        Some(io::Watch {
                            path: path.clone(),
                            mode,
                            atomic: pending.is_some(),
                            device,
                            start,
                            site: self.current_site(),
                            old,
                            trail_mark: self.trail.len(),
                        })
                    }
                };
                let top = self.top_io()?;
                let out = Out::File(Arc::new(file));
                match stream {
                    Stream::Out => top.out = out,
                    Stream::Err => top.err = out,
                }
                if let Some(p) = pending {
                    top.pending.push(p);
                }
                if let Some(w) = watch {
                    top.watches.push(w);
                }
                Ok(())
            }
        }
    }

    /// Records a write whose target never opened (§13.3: `failed`, with
    /// no images).
    /// Walks `path`, judges `op` on the real path the walk took, and runs
    /// `act` on what it reached, walking again when the last component
    /// became a link meanwhile ([`crate::walk`]). The outer error is the
    /// grant's (recorded under an open trail), the inner the system's.
    pub(crate) fn guarded<T>(
        &mut self,
        path: &Path,
        op: crate::caps::FsOp,
        follow: bool,
        mut act: impl FnMut(&crate::walk::Resolved) -> std::io::Result<T>,
    ) -> Result<std::io::Result<T>, Failure> {
        let mut last = None;
        for _ in 0..8 {
            let r = match crate::walk::resolve(path, follow) {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            self.check_fs_real(op, &r.real)?;
            match act(&r) {
                Err(e) if crate::walk::raced(&e) => last = Some(e),
                other => return Ok(other),
            }
        }
        Ok(Err(last.unwrap_or_else(|| {
            std::io::Error::from_raw_os_error(libc::ELOOP)
        })))
    }

    fn observe_write_failed(&mut self, start: i64, path: &Path, mode: WriteMode) {
        self.observe_here(
            start,
            What::Write(Box::new(WriteObs {
                path: path.display().to_string(),
                mode,
                outcome: WriteOutcome::Failed,
                new_bytes: None,
                old_bytes: None,
            })),
        );
    }

    /// Records a watched write settling with `outcome`; a write that
    /// landed carries the target's images.
    fn settle_watch(&mut self, w: io::Watch, outcome: WriteOutcome) {
        let landed = outcome == WriteOutcome::Committed;
        // A device or a fifo has no image, after as before.
        let new_bytes = match landed && !w.device {
            true => match crate::audit::image(&w.path, None, &self.grants) {
                crate::audit::Image::Bytes(b) => Some(b),
                crate::audit::Image::Absent
                | crate::audit::Image::Unkept
                | crate::audit::Image::Device => None,
            },
            false => None,
        };
        self.observe(
            w.site,
            w.start,
            now_us(),
            What::Write(Box::new(WriteObs {
                path: w.path.display().to_string(),
                mode: w.mode,
                outcome,
                new_bytes,
                old_bytes: if landed { w.old } else { None },
            })),
        );
    }

    /// Pops the top IO frame normally (`IoPop`): its atomic writes are
    /// committed and its watched writes settle. When a commit fails after
    /// the command in the frame exited cleanly, that command's observation
    /// reports the failed commit (§13.3).
    pub(crate) fn io_pop(&mut self) -> Result<(), Failure> {
        let Some(mut frame) = self.io.pop() else {
            return Ok(());
        };
        let watches = std::mem::take(&mut frame.watches);
        let committed = frame.commit();
        // The files close here, so the after-images are complete.
        drop(frame);
        if watches.is_empty() {
            return committed;
        }
        let mark = watches.iter().map(|w| w.trail_mark).min().unwrap_or(0);
        for w in watches {
            let outcome = match (&committed, w.atomic) {
                (Err(_), true) => WriteOutcome::Failed,
                _ => WriteOutcome::Committed,
            };
            self.settle_watch(w, outcome);
        }
        if let Err(f) = &committed {
            let from = mark.min(self.trail.len());
            let last = self
                .trail
                .get_mut(from..)
                .and_then(|t| {
                    t.iter_mut().rev().find_map(|o| match &mut o.what {
                        What::Command(c) => Some(c),
                        _ => None,
                    })
                })
                .filter(|c| c.status == 0);
            if let Some(c) = last {
                c.status = f.status;
                c.error = f.message.clone();
            }
        }
        committed
    }

    /// Drops the IO frames above `depth` without committing them (a
    /// failure or an escape is leaving their scope): an atomic `>` is
    /// aborted, a streaming write stays committed as its bytes landed, and
    /// a capture's buffer is flushed to the sink the capture replaced
    /// (§7.2, third rule; §17.9 `Cap-halt`), innermost first, so what a
    /// failing body wrote is never silently lost. A flush that cannot be
    /// written is dropped: the failure already leaving is the one reported.
    pub(crate) fn drop_io_to(&mut self, depth: usize) {
        while self.io.len() > depth {
            let Some(mut frame) = self.io.pop() else {
                break;
            };
            let watches = std::mem::take(&mut frame.watches);
            for s in [Stream::Out, Stream::Err] {
                if let Some(bytes) = frame.take_capture(s) {
                    if !bytes.is_empty() {
                        let _ = self.write_stream(s, &bytes);
                    }
                }
            }
            drop(frame);
            for w in watches {
                let outcome = match w.atomic {
                    true => WriteOutcome::Aborted,
                    false => WriteOutcome::Committed,
                };
                self.settle_watch(w, outcome);
            }
        }
    }

    fn top_io(&mut self) -> Result<&mut IoFrame, Failure> {
        self.io
            .last_mut()
            .ok_or_else(|| Failure::error("redirect without an IO frame"))
    }

    // ---- pipelines ----

    pub(crate) fn pipe_begin(&mut self) {
        // A pipeline inside a stage of another belongs to that one's job;
        // otherwise it is lent the terminal when its output is it.
        let job = match (self.pipes.last(), &self.job) {
            (Some(run), _) => run.job.clone(),
            (None, Some(job)) => job.clone(),
            (None, None) => {
                let out = io::resolve(&self.io, Stream::Out);
                crate::job::Job::new(self.terminal.as_ref(), self.to_terminal(&out))
            }
        };
        let trail_mark = self.trail.len();
        self.pipes.push(PipeRun {
            stages: Vec::new(),
            next_input: None,
            last: None,
            job,
            edges: Vec::new(),
            trail_mark,
        });
    }

    /// Starts a non-final stage (see the module docs).
    pub(crate) fn pipe_stage(
        &mut self,
        proto: u32,
        locals: Vec<Value>,
        env: Option<Arc<Func>>,
    ) -> Result<(), Failure> {
        let (read, write) = process::pipe()?;
        let edge = crate::job::Edge::new(&read)
            .map_err(|e| Failure::error(format!("cannot watch a pipe: {e}")))?;
        let (first, input) = match self.pipes.last_mut().and_then(|p| p.next_input.take()) {
            Some(f) => (false, Some(Arc::new(f))),
            None => (true, io::resolve_input(&self.io)),
        };
        let err_target = io::resolve(&self.io, Stream::Err);
        let err_fd = self.target_fd(&err_target)?;
        let mut child = self.fork(self.mobile.context.cancel.clone());
        child.stdin = self.stdin;
        child.terminal = self.terminal.clone();
        let Some(run) = self.pipes.last() else {
            return Err(Failure::error("pipeline stage outside a pipeline"));
        };
        child.job = Some(run.job.clone());
        child.in_edge = run.edges.last().cloned();
        // A first stage with nothing to read but the terminal, on a
        // pipeline that holds the terminal, sees the end of input at once
        // when ral itself reads: ral is not in the foreground then (§7.6).
        // Its programs still read the terminal.
        child.terminal_eof = first && input.is_none() && run.job.is_lent();
        let write = Arc::new(write);
        child.out_edge = Some((Arc::as_ptr(&write) as usize, edge.clone()));
        let err_buf = match err_fd {
            Some(_) => None,
            None => {
                let b = SharedBuf::default();
                child.stderr = Stdout::Writer(Box::new(b.clone()));
                Some(b)
            }
        };
        child.io.push(IoFrame {
            out: Out::File(write),
            err: match err_fd {
                Some(f) => Out::File(Arc::new(f)),
                None => Out::Below,
            },
            input: match input {
                Some(f) => In::File(f),
                None => In::Below,
            },
            pending: Vec::new(),
            watches: Vec::new(),
        });
        let thread = std::thread::Builder::new()
            .name("ral-stage".into())
            .stack_size(16 << 20)
            .spawn(move || child.run_stage(proto, locals, env))
            .map_err(|e| Failure::error(format!("cannot start a pipeline stage: {e}")))?;
        let Some(run) = self.pipes.last_mut() else {
            return Err(Failure::error("pipeline stage outside a pipeline"));
        };
        run.stages.push(Stage {
            thread,
            err: err_buf,
        });
        run.edges.push(edge);
        run.next_input = Some(read);
        Ok(())
    }

    /// Runs a stage proto on this (forked) machine.
    fn run_stage(
        mut self,
        proto: u32,
        locals: Vec<Value>,
        env: Option<Arc<Func>>,
    ) -> (Result<(), Failure>, Vec<Observation>) {
        let r = self.run_proto_with(proto, locals, env);
        // Close the pipe before anything else so the reader sees EOF.
        self.drop_io_to(0);
        // The stage has ended: the edge it read is dead (§7.6).
        if let Some(edge) = self.in_edge.take() {
            edge.reader_ended();
        }
        let outcome = match r {
            Ok(_) => Ok(()),
            Err(Escape::Fail(f)) => Err(f),
            Err(Escape::Exit(0)) => Ok(()),
            Err(Escape::Exit(n)) => Err(Failure::raised(n, format!("exit {n}"))),
        };
        (outcome, self.take_trail())
    }

    /// The final stage's input frame; the shell state the stage must not
    /// change is saved.
    pub(crate) fn pipe_last(&mut self) -> Result<(), Failure> {
        let last = LastStage {
            context: self.mobile.context.clone(),
            within_lens: self.withins.iter().map(|w| w.handlers_len).collect(),
            masked: self.masked.clone(),
            io_depth: self.io.len(),
        };
        let Some(run) = self.pipes.last_mut() else {
            return Err(Failure::error("pipeline stage outside a pipeline"));
        };
        let input = run.next_input.take();
        run.last = Some(last);
        let mut frame = IoFrame::default();
        if let Some(f) = input {
            frame.input = In::File(Arc::new(f));
        }
        self.io.push(frame);
        Ok(())
    }

    /// Puts back the shell state the final stage found.
    fn restore_last_stage(&mut self, last: LastStage) {
        self.mobile.context = last.context;
        for (w, len) in self.withins.iter_mut().zip(last.within_lens) {
            w.handlers_len = len;
        }
        self.masked = last.masked;
    }

    /// A failure is leaving the final stages of the pipelines above `depth`
    /// (innermost first): each pipeline is finished as its end would have
    /// finished it, its input closed, its stage state dropped and every
    /// stage waited for, and the first failure in launch order is the one
    /// that goes on (§7.6). The final stage is last in launch order, so an
    /// earlier stage's failure replaces `failure`; a cut non-final stage is
    /// forgiven, and the run's own cancellation is never replaced.
    pub(crate) fn settle_pipes(&mut self, depth: usize, failure: &mut Failure) {
        while self.pipes.len() > depth {
            let Some(mut run) = self.pipes.pop() else {
                break;
            };
            drop(run.next_input.take());
            if let Some(last) = run.last.take() {
                self.drop_io_to(last.io_depth);
                self.restore_last_stage(last);
            }
            // The final stage has ended: a producer still writing is cut
            // at its next write rather than waited on (§7.6).
            if let Some(edge) = run.edges.last() {
                edge.reader_ended();
            }
            let earlier = self.join_stages(run.stages, &run.edges, run.trail_mark);
            let cancelled = matches!(failure.reason, Reason::Cancelled(_)) && self.cancelled();
            if let (Some(f), false) = (earlier, cancelled) {
                *failure = f;
            }
        }
    }

    /// Waits for every stage thread; the first unforgiven failure in launch
    /// order. A stage's buffered standard error is written out as it ends.
    /// Each stage's joining retires the edge it wrote (`edges`, in launch
    /// order).
    ///
    /// The stages' trail fragments join the observations the final stage
    /// recorded here since `trail_mark` in settlement order (§13.3): each
    /// observation lands where its fact became true, by its `end`, so a
    /// first stage that ended at once comes before a final stage that ended
    /// later. Each machine's own observations are already in that order
    /// (a post-order), and a stable merge by `end` keeps them so.
    fn join_stages(
        &mut self,
        stages: Vec<Stage>,
        edges: &[Arc<crate::job::Edge>],
        trail_mark: usize,
    ) -> Option<Failure> {
        let mut first: Option<Failure> = None;
        let mut merged = false;
        for (i, stage) in stages.into_iter().enumerate() {
            let mut spins = 0u32;
            while !stage.thread.is_finished() {
                if self.cancelled() {
                    // The stages share the flag and stop on their own;
                    // wait for them so no thread outlives the run.
                    break;
                }
                spins = spins.saturating_add(1);
                let micros = u64::from(spins.min(20)) * 50;
                std::thread::sleep(std::time::Duration::from_micros(micros));
            }
            let result = match stage.thread.join() {
                Ok((r, fragment)) => {
                    // The stage's observations join the trail that owns
                    // the pipeline (§13.3).
                    merged |= !fragment.is_empty();
                    self.merge_trail(fragment);
                    r
                }
                Err(_) => Err(Failure::error("a pipeline stage panicked")),
            };
            // Its writer joined, ral lets go of the edge it wrote.
            if let Some(edge) = edges.get(i) {
                edge.retire();
            }
            if let Some(buf) = stage.err {
                let bytes = buf.take();
                if !bytes.is_empty() {
                    // Nowhere left to report a failed write of a finished
                    // stage's diagnostics but the stage's own outcome.
                    let _ = self.write_stream(Stream::Err, &bytes);
                }
            }
            if let Err(f) = result {
                if !forgiven(&f) && first.is_none() {
                    first = Some(f);
                }
            }
        }
        if merged {
            let from = trail_mark.min(self.trail.len());
            if let Some(tail) = self.trail.get_mut(from..) {
                tail.sort_by_key(|o| o.end);
            }
        }
        first
    }

    /// Drops the pipelines above `depth` without waiting (a control escape
    /// passes them by), putting back what their final stages saved.
    pub(crate) fn abandon_pipes(&mut self, depth: usize) {
        while self.pipes.len() > depth {
            let Some(mut run) = self.pipes.pop() else {
                break;
            };
            if let Some(last) = run.last.take() {
                self.restore_last_stage(last);
            }
            // Nobody reads the pipeline any more: its producers are cut
            // at their next write.
            if let Some(edge) = run.edges.last() {
                edge.reader_ended();
            }
        }
    }

    /// Waits for every stage (see the module docs).
    pub(crate) fn pipe_end(&mut self) -> Result<(), Failure> {
        // The final stage's input frame: dropping it closes the last read
        // end, so a producer still writing is cut off.
        if let Some(mut f) = self.io.pop() {
            f.commit()?;
        }
        let Some(mut run) = self.pipes.pop() else {
            return Err(Failure::error("pipeline end without a pipeline"));
        };
        if let Some(last) = run.last.take() {
            self.restore_last_stage(last);
        }
        // The final stage has ended: the edge it read is dead (§7.6).
        if let Some(edge) = run.edges.last() {
            edge.reader_ended();
        }
        let first = self.join_stages(run.stages, &run.edges, run.trail_mark);
        self.poll_cancel()?;
        match first {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    // ---- within (§9.1) ----

    pub(crate) fn within_push(&mut self, opts: &Value) -> Result<(), Failure> {
        let r = match opts {
            Value::Record(r) => r.clone(),
            Value::List(items) if items.is_empty() => Arc::new(Record::empty()),
            _ => return Err(Failure::error("within options must be a record")),
        };
        // Validate everything first.
        let mut env: Vec<(String, Option<String>)> = Vec::new();
        if let Some(v) = r.get("env") {
            let Value::Record(m) = v else {
                return Err(Failure::error("within env: must be a map"));
            };
            for (k, v) in m.iter() {
                let k = k.as_str();
                if k == "PWD" || k == "OLDPWD" {
                    return Err(Failure::error(format!(
                        "within env: {k} cannot be set; use dir: instead"
                    )));
                }
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    return Err(Failure::error(format!("within env: invalid name {k:?}")));
                }
                let text = match v {
                    Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                        crate::display::to_text(v)
                    }
                    other => {
                        return Err(Failure::error(format!(
                            "within env: {k} must be a scalar, got {}",
                            other.kind_name()
                        )))
                    }
                };
                env.push((k.to_owned(), Some(text)));
            }
        }
        let dir = match r.get("dir") {
            Some(v) => {
                let p = normalize(&self.expand_path(&crate::display::to_text(v))?);
                if !p.is_dir() {
                    return Err(Failure::error(format!(
                        "within dir: {} is not a directory",
                        p.display()
                    )));
                }
                if std::fs::read_dir(&p).is_err() {
                    return Err(Failure::error(format!(
                        "within dir: {} is not readable",
                        p.display()
                    )));
                }
                Some(p)
            }
            None => None,
        };
        let named = r.get("handlers").cloned();
        let catch_all = r.get("handler").cloned();
        let ctx = &mut self.mobile.context;
        self.withins.push(WithinSave {
            cwd: dir.as_ref().map(|_| ctx.cwd.clone()),
            env_len: ctx.env.len(),
            handlers_len: ctx.handlers.len(),
        });
        ctx.env.extend(env);
        if let Some(d) = dir {
            ctx.cwd = Some(d);
        }
        if named.is_some() || catch_all.is_some() {
            let named = match named {
                Some(v @ Value::Record(_)) => v,
                _ => Value::record(Record::empty()),
            };
            ctx.handlers
                .push(handler_frame(named, catch_all.unwrap_or(Value::Unit)));
        }
        Ok(())
    }

    pub(crate) fn within_pop(&mut self) {
        if let Some(save) = self.withins.pop() {
            self.restore_within(save);
        }
    }

    pub(crate) fn restore_within(&mut self, save: WithinSave) {
        let ctx = &mut self.mobile.context;
        if let Some(cwd) = save.cwd {
            ctx.cwd = cwd;
        }
        ctx.env.truncate(save.env_len);
        ctx.handlers.truncate(save.handlers_len);
    }

    /// A handler frame was inserted at the bottom of the stack (the alias
    /// frame): every recorded frame index moves up one.
    pub(crate) fn shift_handler_frames(&mut self) {
        for save in &mut self.withins {
            save.handlers_len += 1;
        }
        for m in &mut self.masked {
            *m += 1;
        }
    }

    // ---- use (§10.3, §10.4) ----

    /// `use path`: evaluates a module file in a fresh top-level scope and
    /// returns its public bindings as a record.
    pub fn use_module(&mut self, path: &str) -> Result<Value, Failure> {
        const MAX_DEPTH: usize = 100;
        let file = self.find_module(path)?;
        let real = crate::caps::real(&file);
        if let Some(i) = self.use_chain.iter().position(|p| *p == real) {
            let mut names: Vec<String> = self.use_chain[i..]
                .iter()
                .map(|p| display_name(p))
                .collect();
            names.push(display_name(&real));
            return Err(Failure::error(format!(
                "use: circular dependency: {}",
                names.join(" -> ")
            )));
        }
        if self.use_chain.len() >= MAX_DEPTH {
            return Err(Failure::error(format!(
                "use: modules nested more than {MAX_DEPTH} deep"
            )));
        }
        let denied = |f: Failure| Failure::new(f.status, format!("use: {}", f.message), f.reason);
        let cannot =
            |e: std::io::Error| Failure::error(format!("use: cannot read {}: {e}", file.display()));
        let text = if self.restricts_fs() {
            self.guarded(&file, crate::caps::FsOp::Read, true, |r| {
                let mut f = File::from(r.open(rustix::fs::OFlags::RDONLY, 0)?);
                let mut text = String::new();
                f.read_to_string(&mut text).map(|_| text)
            })
            .map_err(denied)?
            .map_err(cannot)?
        } else {
            self.check_fs(crate::caps::FsOp::Read, &file)
                .map_err(denied)?;
            std::fs::read_to_string(&file).map_err(cannot)?
        };
        let env = self.session_types();
        let (module, text) = compile_module_text(&file, &text, &env)?;
        self.use_chain.push(real);
        let r = self.run_module_scoped(&module, &text);
        self.use_chain.pop();
        r
    }

    /// The file `use path` names: relative to the containing file (or the
    /// cwd), then each directory of the effective `RAL_PATH`.
    fn find_module(&self, path: &str) -> Result<PathBuf, Failure> {
        let p = Path::new(path);
        if p.is_absolute() || path.starts_with("~/") {
            let full = self.expand_path(path)?;
            return if full.is_file() {
                Ok(full)
            } else {
                Err(Failure::error(format!(
                    "use: no module file {}",
                    full.display()
                )))
            };
        }
        let base = match self.use_chain.last() {
            Some(f) => f
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| self.cwd()),
            None => {
                let script = Path::new(self.script.as_str());
                if !self.script.is_empty() && script.is_file() {
                    let dir = script.parent().map(Path::to_path_buf).unwrap_or_default();
                    if dir.is_absolute() {
                        dir
                    } else {
                        self.cwd().join(dir)
                    }
                } else {
                    self.cwd()
                }
            }
        };
        let first = base.join(p);
        if first.is_file() {
            return Ok(first);
        }
        if let Some(search) = self.mobile.context.var("RAL_PATH") {
            for dir in search.split(':').filter(|d| !d.is_empty()) {
                if let Ok(d) = self.expand_path(dir) {
                    let cand = d.join(p);
                    if cand.is_file() {
                        return Ok(cand);
                    }
                }
            }
        }
        Err(Failure::error(format!(
            "use: no module {path} (looked in {} and RAL_PATH)",
            base.display()
        )))
    }

    /// Runs a compiled module against the session's slot table, then hides
    /// its names again (see `Scope::restore_names`).
    fn run_module_scoped(&mut self, module: &ral_ir::Module, text: &str) -> Result<Value, Failure> {
        let outer = self.mobile.scope.take_reservations();
        let journal = self.mobile.scope.swap_journal(None);
        let saved = self.mobile.scope.clone();
        let def_types = self.def_types_len();
        let name = self
            .use_chain
            .last()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let source = Arc::new(crate::failure::SourceText::new(&name, text));
        let result = match self.load_source(module, source) {
            Ok(main) => {
                let r = self
                    .run_proto_with(main, Vec::new(), None)
                    .map_err(|e| match e {
                        Escape::Fail(f) => f,
                        Escape::Exit(n) => Failure::raised(n.max(1), format!("exit {n}")),
                    });
                self.retire(main, false);
                r
            }
            Err(e) => Err(Failure::error(format!("use: {e}"))),
        };
        let exports: Vec<(String, Value)> = module
            .defs
            .iter()
            .filter(|d| !d.name.starts_with('_'))
            .filter_map(|d| {
                let v = self.mobile.scope.get_named(&d.name)?.clone();
                Some((d.name.clone(), v))
            })
            .collect();
        self.mobile.scope.restore_names(&saved);
        self.mobile.scope.put_reservations(outer);
        self.mobile.scope.swap_journal(journal);
        self.truncate_def_types(def_types);
        match result {
            Ok(_) => {
                // What the admission after this `use` holds the program's
                // uses of the exports to (§10.3).
                let schemes: Vec<(String, ral_types::Scheme)> = module
                    .defs
                    .iter()
                    .filter(|d| !d.name.starts_with('_'))
                    .filter_map(|d| Some((d.name.clone(), d.entry.as_ref()?.scheme.clone())))
                    .collect();
                self.use_exports = Some(Arc::from(schemes));
                Ok(Value::record(Record::from_entries(exports)))
            }
            Err(mut f) => {
                // A failure the module raised keeps its status and reads
                // `use: message` (§10.4): no file prefix, nothing rendered.
                // Its site is the module's own place; the caller's
                // diagnostic is placed at the `use`. A nested `use`'s
                // failure is already prefixed.
                let span = f.span.take();
                f.trace.clear();
                if !f.message.starts_with("use:") {
                    f.message = format!("use: {}", f.message);
                    if f.detail.is_none() {
                        if let Some(span) = span {
                            let file = self
                                .use_chain
                                .last()
                                .map(|p| display_name(p))
                                .unwrap_or_default();
                            let (line, col) = line_col(text, span.start as usize);
                            f.detail = Some(Arc::from(format!("raised at {file}:{line}:{col}")));
                        }
                    }
                }
                Err(f)
            }
        }
    }

    // ---- grant (§12) ----

    pub(crate) fn grant_push(&mut self, caps: &Value) -> Result<(), Failure> {
        let cwd = self.cwd();
        let ctx = self.mobile.context.clone();
        let var = move |k: &str| ctx.var(k);
        let layer = crate::caps::decode(
            caps,
            &crate::caps::DecodeEnv {
                cwd: &cwd,
                var: &var,
            },
        )?;
        self.grants.push(Arc::new(layer));
        self.observe_deputies();
        Ok(())
    }

    /// Checks a filesystem operation ral performs itself against the
    /// grants; under an open trail a denial is recorded (§12.7).
    pub fn check_fs(&mut self, op: crate::caps::FsOp, path: &Path) -> Result<(), Failure> {
        let verdict = crate::caps::check_fs(&self.grants, op, path);
        self.record_fs_verdict(op, path, verdict)
    }

    /// [`Vm::check_fs`] on a walked, real path ([`crate::walk`]).
    pub fn check_fs_real(&mut self, op: crate::caps::FsOp, real: &Path) -> Result<(), Failure> {
        let verdict = crate::caps::check_fs_real(&self.grants, op, real);
        self.record_fs_verdict(op, real, verdict)
    }

    /// Whether ral's own file operations are judged (some layer has `fs`).
    pub fn restricts_fs(&self) -> bool {
        crate::caps::restricts_fs(&self.grants)
    }

    fn record_fs_verdict(
        &mut self,
        op: crate::caps::FsOp,
        path: &Path,
        verdict: Result<(), Failure>,
    ) -> Result<(), Failure> {
        if let (Err(f), true) = (&verdict, self.observing()) {
            let op = match op {
                crate::caps::FsOp::Read => "read",
                crate::caps::FsOp::Write => "write",
            };
            let fields = vec![
                ("op".into(), op.to_owned()),
                ("path".into(), path.display().to_string()),
                ("reason".into(), f.message.clone()),
            ];
            self.observe_denial("fs", fields);
        }
        verdict
    }

    // ---- cd (§10.2) ----

    /// Changes the logical working directory. The target resolves as
    /// every path builtin resolves a path (§10.2), so an empty one is
    /// refused rather than read as the home directory.
    pub fn change_dir(&mut self, target: &str) -> Result<(), Failure> {
        if target.is_empty() {
            return Err(Failure::error("cd: the path is empty"));
        }
        crate::caps::check_chdir(&self.grants)?;
        let p = normalize(&self.expand_path(target)?);
        if !p.is_dir() {
            return Err(Failure::error(format!(
                "cd: {} is not a directory",
                p.display()
            )));
        }
        self.mobile.context.cwd = Some(p);
        Ok(())
    }
}

/// Parses, checks (against the session's environment `env`, so the
/// module sees the bindings that landed before the `use`, §17.8) and lowers
/// a module's text. A module that does not compile fails with status 2
/// (syntax) or 1 (types), §16.3: its message is the plain first error, and
/// its diagnostics, rendered against its own text, are the failure's
/// detail (§10.4). Also returns the text as the spans index it (line
/// endings normalised).
fn compile_module_text(
    file: &Path,
    text: &str,
    env: &ral_types::TypeEnv,
) -> Result<(ral_ir::Module, String), Failure> {
    use ral_syntax::render::{render_all, Color};
    let mut sources = ral_syntax::SourceMap::new();
    let id = sources.add(file.display().to_string(), text);
    let refused = |status: i32,
                   diags: &[ral_syntax::Diagnostic],
                   sources: &ral_syntax::SourceMap| {
        let errors: Vec<&ral_syntax::Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
        let first = errors
            .first()
            .map_or("it does not compile", |d| d.message.as_str());
        let more = match errors.len() {
            0 | 1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let mut f = Failure::raised(
            status,
            format!("use: {}: {first}{more}", display_name(file)),
        );
        f.detail = Some(Arc::from(render_all(diags, sources, Color::Never)));
        f
    };
    let parsed = ral_syntax::parse(sources.text(id), id);
    if parsed.has_errors() {
        return Err(refused(2, &parsed.diagnostics, &sources));
    }
    let opts = ral_types::CheckOptions { is_script: true };
    let checked = ral_types::check_program(&parsed.program, id, env, &opts);
    if checked.has_errors() {
        return Err(refused(1, &checked.diagnostics, &sources));
    }
    let module =
        ral_ir::lower_with_session(&parsed.program, &checked, id, &|n| env.get(n).is_some());
    Ok((module, sources.text(id).to_owned()))
}

fn display_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// 1-based line and column of byte `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The copies an open trail keeps of a command's two output streams.
#[derive(Default)]
struct Tee {
    out: Retained,
    err: Retained,
}

/// Flushes an inherited standard stream (a pumped copy must not wait in
/// the line buffer).
fn flush_base(vm: &mut Vm, s: Stream) {
    use std::io::Write;
    let sink = match s {
        Stream::Out => &mut vm.stdout,
        Stream::Err => &mut vm.stderr,
    };
    if let Stdout::Inherit = sink {
        let _ = match s {
            Stream::Out => std::io::stdout().flush(),
            Stream::Err => std::io::stderr().flush(),
        };
    }
}

fn write_base(sink: &mut Stdout, s: Stream, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    match sink {
        Stdout::Buffer(b) => {
            b.extend_from_slice(bytes);
            Ok(())
        }
        Stdout::Inherit => {
            let r = match s {
                Stream::Out => std::io::stdout().write_all(bytes),
                Stream::Err => std::io::stderr().write_all(bytes),
            };
            r.map_err(io::write_error)
        }
        Stdout::Writer(w) => w.write_all(bytes).map_err(io::write_error),
    }
}

/// Whether a non-final stage's failure is the forgiven cut: it wrote an
/// edge whose reader had ended (§7.6). Only that break: a death by
/// `SIGPIPE` is some other pipe's, since no interior edge delivers one.
fn forgiven(f: &Failure) -> bool {
    matches!(f.reason, Reason::Cancelled(Cause::ReaderGone))
}

/// The operating-system arguments of a program (§6.6): strings, numbers,
/// Booleans, `()` (as `()`) and tagged values whose payloads are such
/// values are formatted; bytes, collections, functions and handles are
/// refused, naming the program and the argument. This is the only
/// rendering that can refuse: what a spread contributes is judged here.
fn render_os_args(cmd: &str, items: &[Value]) -> Result<Vec<String>, Failure> {
    fn os_text(v: &Value) -> bool {
        match v {
            Value::Unit | Value::Bool(_) | Value::Int(_) | Value::Float(_) | Value::Str(_) => true,
            Value::Variant(var) => var.payload.as_ref().is_none_or(os_text),
            Value::Bytes(_)
            | Value::List(_)
            | Value::Record(_)
            | Value::Func(_)
            | Value::Handle(_) => false,
        }
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if os_text(v) {
                Ok(to_text(v))
            } else {
                let mut f = Failure::error(format!(
                    "argument {} is {}, which is not operating-system text",
                    i + 1,
                    v.kind_name()
                ));
                f.cmd = Some(cmd.into());
                Err(f)
            }
        })
        .collect()
}

fn strip_leading_newline(s: &str) -> &str {
    s.strip_prefix("\r\n")
        .or_else(|| s.strip_prefix('\n'))
        .unwrap_or(s)
}

/// Lexical normalisation: `.` dropped, `..` pops (the logical cwd, §10.2).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn cannot_write(path: &Path, e: &std::io::Error) -> Failure {
    Failure::error(format!("cannot write {}: {e}", path.display()))
}

/// [`open_output`] on a walked target ([`crate::walk`]): every open is
/// relative to the descriptor of the target's directory and refuses to
/// follow a last component that became a link; `>`'s temporary file is
/// created beside the target with `O_EXCL` and renamed over it through
/// the same descriptor.
fn open_output_at(r: &crate::walk::Resolved, kind: RedirCode) -> std::io::Result<Opened> {
    use rustix::fs::OFlags;
    match kind {
        RedirCode::Append => {
            let f = r.open(OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE, 0o666)?;
            Ok((File::from(f), None, None))
        }
        RedirCode::Stream => {
            let f = r.open(OFlags::WRONLY | OFlags::TRUNC | OFlags::CREATE, 0o666)?;
            Ok((File::from(f), None, None))
        }
        _ => {
            let found = r.metadata();
            let meta = found.as_ref().ok().cloned();
            if meta.as_ref().is_some_and(|m| !m.is_file()) {
                // Not a regular file (a device, a fifo): write in place.
                let f = r.open(OFlags::WRONLY, 0)?;
                return Ok((File::from(f), None, Some(found)));
            }
            let Some(dir) = r.dir.clone() else {
                return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
            };
            let base = r.name.to_string_lossy().into_owned();
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp_name = format!(".{base}.ral-{}-{n}", std::process::id());
            let fd = rustix::fs::openat(
                &*dir,
                tmp_name.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                rustix::fs::Mode::from_raw_mode(0o666),
            )?;
            if let Some(m) = &meta {
                use std::os::unix::fs::PermissionsExt;
                let _ = rustix::fs::fchmod(
                    &fd,
                    rustix::fs::Mode::from_raw_mode(m.permissions().mode() & 0o7777),
                );
            }
            let parent = r.real.parent().unwrap_or(Path::new("/"));
            Ok((
                File::from(fd),
                Some(Pending {
                    tmp: parent.join(&tmp_name),
                    target: r.real.clone(),
                    at: Some((dir, tmp_name.into(), r.name.clone())),
                }),
                Some(found),
            ))
        }
    }
}

/// A redirect target opened: the file to write, the atomic write to
/// commit, and for `>` what the target was before (its metadata as the
/// open found it, which an audit trail's before-image reuses).
type Opened = (
    File,
    Option<Pending>,
    Option<std::io::Result<std::fs::Metadata>>,
);

/// Opens a redirect target. `>` writes a temporary file beside the real
/// target (following a symlink to it, keeping an existing file's mode),
/// renamed over it when the redirect's scope completes.
fn open_output(path: &Path, kind: RedirCode) -> Result<Opened, Failure> {
    let fail = |e: std::io::Error| Failure::error(format!("cannot write {}: {e}", path.display()));
    match kind {
        RedirCode::Append => {
            let f = OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .map_err(fail)?;
            Ok((f, None, None))
        }
        RedirCode::Stream => {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(fail)?;
            Ok((f, None, None))
        }
        _ => {
            // Follow a symlink so the link itself survives.
            let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            let found = std::fs::metadata(&target);
            let meta = found.as_ref().ok().cloned();
            if meta.as_ref().is_some_and(|m| !m.is_file()) {
                // Not a regular file (a device, a fifo): write in place.
                let f = OpenOptions::new().write(true).open(&target).map_err(fail)?;
                return Ok((f, None, Some(found)));
            }
            let dir = target.parent().unwrap_or(Path::new("/"));
            let base = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
            let tmp = dir.join(format!(".{base}.ral-{}-{n}", std::process::id()));
            let f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
                .map_err(fail)?;
            if let Some(m) = meta {
                let _ = std::fs::set_permissions(&tmp, m.permissions());
            }
            Ok((
                f,
                Some(Pending {
                    tmp,
                    target,
                    at: None,
                }),
                Some(found),
            ))
        }
    }
}
