//! The audit trail (spec §13.3, §12.7; our spec/audit.md).
//!
//! An open trail is a count on the machine ([`Vm::observing`]) and one flat
//! list of [`Observation`]s. Every `audit` scope, and a host's run-level
//! trail (`ral --audit`, exarch's per-call evidence), raises the count and
//! remembers where the list stood when it opened; closing it reads the
//! list from there on. So a nested `audit` returns its own observations
//! and leaves them in place for the enclosing trail, and once the last
//! trail closes the list is emptied. With no trail open nothing is
//! recorded and the doors pay one comparison.
//!
//! Observations are appended when the fact they record settles (post
//! order): a command after it is reaped, a redirect's write when its scope
//! ends, a check when it is decided. Nothing records a wrapper for a
//! builtin, a function or a control form; nesting is recovered from the
//! `start`–`end` intervals.
//!
//! The doors that record:
//! - **command** ([`crate::runtime`]): every external launch, refused or
//!   not found included. While a trail is open the child's output streams
//!   are pumped, so the bytes are copied into the observation (up to
//!   [`RETAIN_CAP`] each, then one marker) on their way to wherever they
//!   were going.
//! - **write** and **read**: a redirect's target settling, and a `<`
//!   opening. A write keeps the target's whole content before and after,
//!   up to [`IMAGE_CAP`], where the live grant lets ral read it.
//! - **check**: every `exec` and ral-owned `fs` denial; an admitted
//!   executable directory the body could write (`deputy`/`flagged`) when a
//!   `grant` is entered. Allowed checks are never recorded.
//! - **worker**: a worker's birth (recorded by the host that spawns it).
//! - **grep** and **act**: the host doors that have them call
//!   [`Vm::observe`].
//!
//! Work that runs on another machine (a pipeline stage, a worker) starts
//! with a trail of its own when its creator's was open, and its fragment
//! is merged back by whoever joins it ([`Vm::merge_trail`]).

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::exec::Vm;
use crate::failure::{Failure, Site};
use crate::value::{Keys, Record, Value};

/// How many bytes of each of a command's streams a trail keeps (§13.3:
/// the worker buffers' cap).
pub const RETAIN_CAP: usize = 16 << 20;

/// The largest file a write observation keeps a whole image of.
pub const IMAGE_CAP: u64 = 64 << 10;

/// What a retained stream ends with when it reached [`RETAIN_CAP`].
pub const TRUNCATION_MARKER: &[u8] =
    b"\n[ral audit: 16 MiB of this stream were kept; the rest was not retained]\n";

/// One recorded fact.
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// Where in the source it happened; `None` where no position applies.
    pub site: Option<Site>,
    /// Microseconds since the Unix epoch.
    pub start: i64,
    pub end: i64,
    /// The shell principal (the machine's [`Vm::principal`]).
    pub principal: Arc<str>,
    pub what: What,
}

/// The kind of fact and its fields (§13.3's `what`).
#[derive(Clone, Debug, PartialEq)]
pub enum What {
    Command(Box<CommandObs>),
    Write(Box<WriteObs>),
    Read { path: String },
    Grep { scope: String, pattern: String },
    Check(Box<CheckObs>),
    Worker { id: i64, cmd: String, class: String },
    Act(Box<ActObs>),
}

/// An external command, a bundled one, or a `detach` birth.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandObs {
    /// The shown name, then the evaluated arguments.
    pub argv: Vec<String>,
    /// 0 for a command that returned, else its failure's status.
    pub status: i32,
    pub origin: Origin,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// ral's message for a failure; empty on success.
    pub error: String,
}

/// Where a command observation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    External,
    Detached,
}

/// A redirect's write settling.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteObs {
    pub path: String,
    pub mode: WriteMode,
    pub outcome: WriteOutcome,
    pub new_bytes: Option<Vec<u8>>,
    pub old_bytes: Option<Vec<u8>>,
}

/// `>`, `>>`, or a streaming write (`>~`, `2>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    Write,
    Append,
    Stream,
}

/// How a write settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    Committed,
    Aborted,
    Failed,
}

/// A recorded capability decision: a denial, or the deputy advisory.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckObs {
    /// `exec`, `fs` or `deputy`.
    pub resource: String,
    /// `denied` or `flagged`.
    pub decision: String,
    pub fields: Vec<(String, String)>,
}

/// An act a host committed or refused.
#[derive(Clone, Debug, PartialEq)]
pub struct ActObs {
    pub verb: String,
    pub subject: Option<String>,
    pub payload: String,
    pub refused: bool,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::External => "external",
            Origin::Detached => "detached",
        }
    }
}

impl WriteMode {
    pub fn name(self) -> &'static str {
        match self {
            WriteMode::Write => "write",
            WriteMode::Append => "append",
            WriteMode::Stream => "stream",
        }
    }
}

impl WriteOutcome {
    pub fn name(self) -> &'static str {
        match self {
            WriteOutcome::Committed => "committed",
            WriteOutcome::Aborted => "aborted",
            WriteOutcome::Failed => "failed",
        }
    }
}

impl What {
    /// The tag of `what`.
    pub fn tag(&self) -> &'static str {
        match self {
            What::Command(_) => "command",
            What::Write(_) => "write",
            What::Read { .. } => "read",
            What::Grep { .. } => "grep",
            What::Check(_) => "check",
            What::Worker { .. } => "worker",
            What::Act(_) => "act",
        }
    }
}

/// The current time in microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// A stream's retained copy: the first [`RETAIN_CAP`] bytes, then
/// [`TRUNCATION_MARKER`] once.
#[derive(Debug, Default)]
pub struct Retained {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Retained {
    /// Keeps what fits of `data`.
    pub fn push(&mut self, data: &[u8]) {
        if self.truncated {
            return;
        }
        let room = RETAIN_CAP.saturating_sub(self.bytes.len());
        if data.len() <= room {
            self.bytes.extend_from_slice(data);
        } else {
            self.bytes
                .extend_from_slice(data.get(..room).unwrap_or_default());
            self.bytes.extend_from_slice(TRUNCATION_MARKER);
            self.truncated = true;
        }
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// What a file holds, for a write's images.
pub(crate) enum Image {
    /// There is no file there.
    Absent,
    /// Its whole content.
    Bytes(Vec<u8>),
    /// A file it cannot keep: too large, or not readable (by the operating
    /// system or under the grant).
    Unkept,
    /// Not a regular file (a device, a fifo, a directory).
    Device,
}

/// The image of `path`, read only where the grants let ral read it.
/// `found` is what a `stat` of it already returned, if one was made.
pub(crate) fn image(
    path: &Path,
    found: Option<&std::io::Result<std::fs::Metadata>>,
    grants: &[Arc<crate::caps::Layer>],
) -> Image {
    let fresh;
    let found = match found {
        Some(f) => f,
        None => {
            fresh = std::fs::metadata(path);
            &fresh
        }
    };
    let meta = match found {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Image::Absent,
        Err(_) => return Image::Unkept,
    };
    if !meta.is_file() {
        return Image::Device;
    }
    if meta.len() > IMAGE_CAP {
        return Image::Unkept;
    }
    let read = if crate::caps::restricts_fs(grants) {
        // Walked and judged on the real path, read through the descriptor
        // the walk reached (crate::walk), so no link swapped in between
        // puts a file outside the grant into the trail.
        crate::walk::resolve(path, true).and_then(|r| {
            if crate::caps::check_fs_real(grants, crate::caps::FsOp::Read, &r.real).is_err() {
                return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
            }
            use std::io::Read;
            let f = std::fs::File::from(r.open(rustix::fs::OFlags::RDONLY, 0)?);
            let mut b = Vec::new();
            f.take(IMAGE_CAP + 1).read_to_end(&mut b).map(|_| b)
        })
    } else {
        std::fs::read(path)
    };
    match read {
        Ok(b) if b.len() as u64 <= IMAGE_CAP => Image::Bytes(b),
        Ok(_) | Err(_) => Image::Unkept,
    }
}

// ---- values (§13.3) ----

/// The record shapes and constant strings of a report, made once: a trail
/// of many observations shares its keys, tags and fixed texts instead of
/// allocating them for each.
struct Shapes {
    obs: Shape,
    site: Shape,
    command: Shape,
    write: Shape,
    read: Shape,
    grep: Shape,
    check: Shape,
    worker: Shape,
    act: Shape,
    report: Shape,
    just: Arc<str>,
    none: Value,
    tags: [Arc<str>; 7],
    /// `origin`, `mode` and `outcome` texts, and the empty string.
    words: Vec<(&'static str, Value)>,
}

/// A record shape: its sorted keys, and where each field, in the order
/// the shape was declared, goes among them.
struct Shape {
    keys: Keys,
    slots: Vec<usize>,
}

impl Shape {
    fn new(fields: &[&str]) -> Shape {
        let keys = Keys::new(fields.iter().copied());
        let slots = fields.iter().map(|f| keys.slot(f).unwrap_or(0)).collect();
        Shape { keys, slots }
    }

    /// A record of this shape from its fields' values in declared order.
    fn record<const N: usize>(&self, vals: [Value; N]) -> Value {
        let mut out = vec![Value::Unit; self.keys.len()];
        for (v, slot) in vals.into_iter().zip(&self.slots) {
            if let Some(place) = out.get_mut(*slot) {
                *place = v;
            }
        }
        Value::record(Record::from_parts(self.keys.clone(), out))
    }
}

fn shapes() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let words = [
            "external",
            "detached",
            "write",
            "append",
            "stream",
            "committed",
            "aborted",
            "failed",
            "",
        ];
        Shapes {
            obs: Shape::new(&["site", "start", "end", "principal", "what"]),
            site: Shape::new(&["script", "line", "col"]),
            command: Shape::new(&["argv", "status", "origin", "stdout", "stderr", "error"]),
            write: Shape::new(&["path", "mode", "outcome", "new_bytes", "old_bytes"]),
            read: Shape::new(&["path"]),
            grep: Shape::new(&["scope", "pattern"]),
            check: Shape::new(&["resource", "decision", "fields"]),
            worker: Shape::new(&["id", "cmd", "class"]),
            act: Shape::new(&["verb", "subject", "payload", "refused"]),
            report: Shape::new(&["outcome", "trail"]),
            just: Arc::from("just"),
            none: Value::variant("none", None),
            tags: ["command", "write", "read", "grep", "check", "worker", "act"].map(Arc::from),
            words: words.iter().map(|w| (*w, Value::str(*w))).collect(),
        }
    })
}

impl Shapes {
    fn opt(&self, v: Option<Value>) -> Value {
        match v {
            Some(v) => Value::Variant(Arc::new(crate::value::Variant {
                tag: self.just.clone(),
                payload: Some(v),
            })),
            None => self.none.clone(),
        }
    }

    /// A fixed text as a shared string value.
    fn word(&self, w: &str) -> Value {
        match self.words.iter().find(|(k, _)| *k == w) {
            Some((_, v)) => v.clone(),
            None => Value::str(w),
        }
    }

    fn tag(&self, what: &What) -> Arc<str> {
        let i = match what {
            What::Command(_) => 0,
            What::Write(_) => 1,
            What::Read { .. } => 2,
            What::Grep { .. } => 3,
            What::Check(_) => 4,
            What::Worker { .. } => 5,
            What::Act(_) => 6,
        };
        self.tags
            .get(i)
            .cloned()
            .unwrap_or_else(|| Arc::from(what.tag()))
    }
}

/// Turns observations into values, sharing what repeats between them.
struct Converter {
    /// The last script named by a site, and its string value.
    script: Option<(Arc<str>, Value)>,
    principal: Option<(Arc<str>, Value)>,
}

impl Converter {
    fn new() -> Converter {
        Converter {
            script: None,
            principal: None,
        }
    }

    fn shared(slot: &mut Option<(Arc<str>, Value)>, text: &Arc<str>) -> Value {
        match slot {
            Some((t, v)) if Arc::ptr_eq(t, text) => v.clone(),
            _ => {
                let v = Value::str(text.as_ref());
                *slot = Some((text.clone(), v.clone()));
                v
            }
        }
    }

    fn convert(&mut self, o: Observation) -> Value {
        let sh = shapes();
        let site = match &o.site {
            Some(site) => sh.opt(Some(sh.site.record([
                Converter::shared(&mut self.script, &site.script),
                Value::Int(i64::from(site.line)),
                Value::Int(i64::from(site.col)),
            ]))),
            None => sh.opt(None),
        };
        let principal = Converter::shared(&mut self.principal, &o.principal);
        let tag = sh.tag(&o.what);
        let payload = match o.what {
            What::Command(c) => {
                let c = *c;
                sh.command.record([
                    Value::list(c.argv.into_iter().map(Value::str).collect()),
                    Value::Int(i64::from(c.status)),
                    sh.word(c.origin.name()),
                    Value::bytes(c.stdout),
                    Value::bytes(c.stderr),
                    sh.word_or_text(c.error),
                ])
            }
            What::Write(w) => {
                let w = *w;
                sh.write.record([
                    Value::str(w.path),
                    sh.word(w.mode.name()),
                    sh.word(w.outcome.name()),
                    sh.opt(w.new_bytes.map(Value::bytes)),
                    sh.opt(w.old_bytes.map(Value::bytes)),
                ])
            }
            What::Read { path } => sh.read.record([Value::str(path)]),
            What::Grep { scope, pattern } => {
                sh.grep.record([Value::str(scope), Value::str(pattern)])
            }
            What::Check(c) => {
                let c = *c;
                let fields = Record::from_entries(
                    c.fields
                        .into_iter()
                        .map(|(k, v)| (k, Value::str(v)))
                        .collect(),
                );
                sh.check.record([
                    Value::str(c.resource),
                    Value::str(c.decision),
                    Value::record(fields),
                ])
            }
            What::Worker { id, cmd, class } => {
                sh.worker
                    .record([Value::Int(id), Value::str(cmd), Value::str(class)])
            }
            What::Act(a) => {
                let a = *a;
                sh.act.record([
                    Value::str(a.verb),
                    sh.opt(a.subject.map(Value::str)),
                    Value::str(a.payload),
                    Value::Bool(a.refused),
                ])
            }
        };
        let what = Value::Variant(Arc::new(crate::value::Variant {
            tag,
            payload: Some(payload),
        }));
        sh.obs.record([
            site,
            Value::Int(o.start),
            Value::Int(o.end),
            principal,
            what,
        ])
    }
}

impl Shapes {
    /// An error text: the shared empty string when there is none.
    fn word_or_text(&self, text: String) -> Value {
        if text.is_empty() {
            self.word("")
        } else {
            Value::str(text)
        }
    }
}

impl Observation {
    /// The observation as the ral value the report carries.
    pub fn to_value(&self) -> Value {
        Converter::new().convert(self.clone())
    }
}

/// `` `ok value ``.
pub fn outcome_ok(value: Value) -> Value {
    Value::variant("ok", Some(value))
}

/// `` `err record ``, the record `try` hands its handler.
pub fn outcome_err(f: &Failure) -> Value {
    Value::variant("err", Some(crate::exec::error_record(f)))
}

/// A report, `[outcome: …, trail: […]]`, taking the observations.
pub fn report_owned(outcome: Value, trail: Vec<Observation>) -> Value {
    let sh = shapes();
    let mut conv = Converter::new();
    let items: Vec<Value> = trail.into_iter().map(|o| conv.convert(o)).collect();
    sh.report.record([outcome, Value::list(items)])
}

/// A report, `[outcome: …, trail: […]]`.
pub fn report(outcome: Value, trail: &[Observation]) -> Value {
    report_owned(outcome, trail.to_vec())
}

impl Vm {
    /// Whether a trail is open: the doors record only then.
    #[inline]
    pub fn observing(&self) -> bool {
        self.audits > 0
    }

    /// Records `what`, which happened from `start` to `end`, at `site`.
    /// Nothing happens when no trail is open. Hosts call it for the doors
    /// they own (`grep`, `act`, a worker's birth).
    pub fn observe(&mut self, site: Option<Site>, start: i64, end: i64, what: What) {
        if !self.observing() {
            return;
        }
        self.trail.push(Observation {
            site,
            start,
            end,
            principal: self.principal.clone(),
            what,
        });
    }

    /// Records `what`, from `start` until now, at the instruction running.
    pub(crate) fn observe_here(&mut self, start: i64, what: What) {
        if !self.observing() {
            return;
        }
        let site = self.current_site();
        self.observe(site, start, now_us(), what);
    }

    /// Records a capability denial (§12.7): a leaf, starting and ending
    /// now.
    pub(crate) fn observe_denial(&mut self, resource: &str, fields: Vec<(String, String)>) {
        if !self.observing() {
            return;
        }
        let now = now_us();
        let site = self.current_site();
        self.observe(
            site,
            now,
            now,
            What::Check(Box::new(CheckObs {
                resource: resource.into(),
                decision: "denied".into(),
                fields,
            })),
        );
    }

    /// Opens a trail for a whole run (a host's `--audit`, an agent's
    /// call): it outlives the run's own dynamic scopes. Returns where its
    /// observations begin, for [`Vm::close_trail`].
    pub fn open_trail(&mut self) -> usize {
        self.audits += 1;
        self.base_audits += 1;
        self.trail.len()
    }

    /// Closes a trail [`Vm::open_trail`] opened and returns what it
    /// recorded; they stay for an enclosing trail, if any.
    pub fn close_trail(&mut self, mark: usize) -> Vec<Observation> {
        self.audits = self.audits.saturating_sub(1);
        self.base_audits = self.base_audits.saturating_sub(1);
        let mark = mark.min(self.trail.len());
        if self.observing() {
            self.trail.get(mark..).unwrap_or_default().to_vec()
        } else {
            self.trail.split_off(mark)
        }
    }

    /// Everything this machine recorded (a fork's fragment, for whoever
    /// joins it).
    pub fn take_trail(&mut self) -> Vec<Observation> {
        std::mem::take(&mut self.trail)
    }

    /// Closes every trail this machine has open and forgets what they
    /// recorded (a fork that will outlive its creator's trail).
    pub fn drop_trail(&mut self) {
        self.audits = 0;
        self.base_audits = 0;
        self.trail = Vec::new();
    }

    /// Appends another machine's fragment, when a trail is open here.
    pub fn merge_trail(&mut self, fragment: Vec<Observation>) {
        if self.observing() && !fragment.is_empty() {
            self.trail.extend(fragment);
        }
    }

    /// Ends an `audit` scope whose observations begin at `start` (the
    /// scope's count is already given back): its report, and the list
    /// emptied when no trail is open any more.
    pub(crate) fn close_scope(&mut self, start: usize, outcome: Value) -> Value {
        let start = start.min(self.trail.len());
        if self.observing() {
            // An enclosing trail keeps these observations: copy them.
            report(outcome, self.trail.get(start..).unwrap_or_default())
        } else {
            let tail = self.trail.split_off(start);
            report_owned(outcome, tail)
        }
    }

    /// `audit` applied from Rust (the host's `defer`): runs `func` on
    /// `args` under a fresh trail and returns the report. An `exit`
    /// propagates; an ordinary failure becomes the `` `err `` outcome.
    pub fn audit_call(
        &mut self,
        func: Value,
        args: Vec<Value>,
    ) -> Result<Value, crate::exec::Escape> {
        let start = self.trail.len();
        let io_depth = self.io.len();
        self.audits += 1;
        let result = self.call_value(func, args);
        if result.is_err() {
            // Redirects the failure left open settle inside the scope.
            self.drop_io_to(io_depth);
        }
        self.audits = self.audits.saturating_sub(1);
        match result {
            Ok(v) => Ok(self.close_scope(start, outcome_ok(v))),
            Err(crate::exec::Escape::Fail(f))
                if !(matches!(f.reason, crate::failure::Reason::Cancelled(_))
                    && self
                        .mobile
                        .context
                        .cancel
                        .load(std::sync::atomic::Ordering::Relaxed)) =>
            {
                Ok(self.close_scope(start, outcome_err(&f)))
            }
            Err(e) => {
                if !self.observing() {
                    self.trail.truncate(start);
                }
                Err(e)
            }
        }
    }

    /// Records the `deputy` advisory (§12.7) for the stack just composed:
    /// one flagged check for each directory an `exec` key admits that the
    /// body could write (the grants allow it and the operating system
    /// does).
    pub(crate) fn observe_deputies(&mut self) {
        if !self.observing() {
            return;
        }
        let flagged: Vec<String> = {
            let admitted = crate::caps::admitted_dirs(&self.grants);
            admitted
                .iter()
                .filter(|d| {
                    crate::caps::fs_verdict(&self.grants, &admitted, crate::caps::FsOp::Write, d)
                        .is_none()
                        && rustix::fs::access(**d, rustix::fs::Access::WRITE_OK).is_ok()
                })
                .map(|d| d.display().to_string())
                .collect()
        };
        let now = now_us();
        let site = self.current_site();
        for prefix in flagged {
            self.observe(
                site.clone(),
                now,
                now,
                What::Check(Box::new(CheckObs {
                    resource: "deputy".into(),
                    decision: "flagged".into(),
                    fields: vec![("prefix".into(), prefix)],
                })),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_keeps_the_cap_and_one_marker() {
        let mut r = Retained::default();
        r.push(&vec![b'a'; RETAIN_CAP - 1]);
        r.push(b"bcd");
        r.push(b"more");
        let b = r.into_bytes();
        assert_eq!(b.len(), RETAIN_CAP + TRUNCATION_MARKER.len());
        assert_eq!(b.get(RETAIN_CAP - 1), Some(&b'b'));
        assert!(b.ends_with(TRUNCATION_MARKER));
    }

    #[test]
    fn every_kind_has_the_common_fields() {
        let o = Observation {
            site: None,
            start: 1,
            end: 2,
            principal: Arc::from(""),
            what: What::Act(Box::new(ActObs {
                verb: "commit".into(),
                subject: Some("x".into()),
                payload: "p".into(),
                refused: true,
            })),
        };
        let Value::Record(r) = o.to_value() else {
            panic!("not a record")
        };
        for k in ["site", "start", "end", "principal", "what"] {
            assert!(r.get(k).is_some(), "{k}");
        }
        let Some(Value::Variant(w)) = r.get("what") else {
            panic!("no what")
        };
        assert_eq!(&*w.tag, "act");
    }
}
