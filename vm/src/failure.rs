//! Runtime failures (§8.5, §8.6, §8.10).
//!
//! A [`Failure`] is the ordinary, recoverable failure outcome: what `fail`
//! raises, what a builtin that cannot complete returns, and what `?` and
//! `try` observe. It is one pointer wide (the details are boxed), so a
//! `Result<Value, Failure>` stays small on the hot path where nothing fails.
//! Control escapes (`exit`, cancellation stickiness) are the VM's business
//! and are not `Failure`s.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use ral_syntax::Span;

/// The status a builtin reports when it cannot complete and the spec names
/// no other.
pub const STATUS_ERROR: i32 = 1;

/// A recoverable failure. Derefs to [`FailureInfo`] for its fields.
#[derive(Clone, PartialEq, Eq)]
pub struct Failure {
    info: Box<FailureInfo>,
}

/// What a failure carries. The VM later adds the source site and trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureInfo {
    /// The nonzero status, in the signed 32-bit exit-code range.
    pub status: i32,
    /// The message: the text the failure carries (`try`'s `message`).
    pub message: String,
    /// Why it happened (`try`'s `reason`).
    pub reason: Reason,
    /// The innermost failing command's name, stamped by dispatch; `None`
    /// reads as `<runtime>`.
    pub cmd: Option<Arc<str>>,
    /// The source of the failing instruction, stamped when the failure
    /// escapes a run uncaught; `None` until then (and in `try` records).
    pub span: Option<Span>,
    /// The active ral call sites when it escaped, innermost first: the
    /// callee's name where known and the call's span. A deep stack keeps
    /// its innermost and outermost [`TRACE_KEEP`] entries each.
    pub trace: Vec<(Option<String>, Span)>,
    /// How many entries were left out of the middle of `trace` (they sit
    /// between `trace[TRACE_KEEP - 1]` and `trace[TRACE_KEEP]`).
    pub trace_elided: usize,
    /// Where it happened, in the source it was written in (`try`'s `site`,
    /// §8.6): stamped by the innermost run that meets it, from the failing
    /// instruction's span, when that code's source is known.
    pub site: Option<Site>,
    /// More for a person to read below the diagnostic (a module's own
    /// rendered diagnostics when it does not compile, §10.4); never part
    /// of `message`, which is what `try` reads.
    pub detail: Option<Arc<str>>,
    /// Advice for a person reading the diagnostic (not part of `try`'s
    /// record): what the OS sandbox allowed a program that failed in it.
    pub hint: Option<String>,
}

/// A failure's source position (§8.6, §13.1): the script (or the name the
/// host gave the source) and one-based line and column, the column in
/// characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    pub script: Arc<str>,
    pub line: u32,
    pub col: u32,
}

/// A loaded source's name and text, to turn spans into [`Site`]s.
#[derive(Debug)]
pub struct SourceText {
    name: Arc<str>,
    text: Arc<str>,
    /// Byte offset of the start of each line.
    line_starts: Vec<u32>,
}

impl SourceText {
    /// `text` as the spans of its code index it (normalised, §3.1).
    pub fn new(name: &str, text: &str) -> SourceText {
        let mut line_starts = vec![0u32];
        line_starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .filter_map(|(i, _)| u32::try_from(i + 1).ok()),
        );
        SourceText {
            name: Arc::from(name),
            text: Arc::from(text),
            line_starts,
        }
    }

    /// The source's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The site of byte offset `at`.
    pub fn site(&self, at: u32) -> Site {
        let line = self.line_starts.partition_point(|&s| s <= at).max(1);
        let start = self.line_starts.get(line - 1).copied().unwrap_or(0) as usize;
        let mut end = (at as usize).min(self.text.len());
        while end > start && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let col = self.text.get(start..end).map_or(0, |s| s.chars().count()) + 1;
        Site {
            script: self.name.clone(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
        }
    }
}

/// How many call sites a failure's trace keeps at each end.
pub const TRACE_KEEP: usize = 10;

/// Why a failure happened (§8.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// An external command exited with this nonzero status.
    Exited(i32),
    /// An external command died of this signal.
    Signaled(i32),
    /// Cancellation, by this cause.
    Cancelled(Cause),
    /// No command of that name exists (status 127).
    NotFound,
    /// The command exists but could not be started (status 126).
    NotRunnable,
    /// `fail`, or a runtime operation that could not complete.
    Raised,
}

/// A cancellation cause (§8.10), in escalation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// A pipeline stage whose reader ended (status 141).
    ReaderGone,
    /// Foreground interrupt (130).
    Interrupted,
    /// Explicit cancellation of a handle (143).
    Cancelled,
    /// A deadline (124).
    TimedOut,
    /// Session termination (143).
    Terminated,
    /// Root abort (131).
    Aborted,
}

impl Cause {
    /// The status this cause reports.
    pub fn status(self) -> i32 {
        match self {
            Cause::ReaderGone => 141,
            Cause::Interrupted => 130,
            Cause::Cancelled => 143,
            Cause::TimedOut => 124,
            Cause::Terminated => 143,
            Cause::Aborted => 131,
        }
    }

    /// The message this cause reports.
    pub fn message(self) -> &'static str {
        match self {
            Cause::ReaderGone => "reader gone",
            Cause::Interrupted => "interrupted",
            Cause::Cancelled => "cancelled",
            Cause::TimedOut => "timed out",
            Cause::Terminated => "terminated",
            Cause::Aborted => "aborted",
        }
    }
}

impl Failure {
    /// A raised failure with a status and message (what `fail` builds).
    pub fn raised(status: i32, message: impl Into<String>) -> Failure {
        Failure::new(status, message.into(), Reason::Raised)
    }

    /// A runtime operation that could not complete: status 1, reason
    /// `raised`.
    pub fn error(message: impl Into<String>) -> Failure {
        Failure::raised(STATUS_ERROR, message)
    }

    /// A cancellation by `cause`.
    pub fn cancelled(cause: Cause) -> Failure {
        Failure::new(
            cause.status(),
            cause.message().to_owned(),
            Reason::Cancelled(cause),
        )
    }

    /// A failure with every field given.
    pub fn new(status: i32, message: String, reason: Reason) -> Failure {
        Failure {
            info: Box::new(FailureInfo {
                status,
                message,
                reason,
                cmd: None,
                span: None,
                trace: Vec::new(),
                trace_elided: 0,
                site: None,
                detail: None,
                hint: None,
            }),
        }
    }

    /// Stamps the failing command's name unless an inner dispatch already
    /// did (the innermost wins, §8.6).
    pub fn with_cmd(mut self, cmd: &Arc<str>) -> Failure {
        if self.info.cmd.is_none() {
            self.info.cmd = Some(cmd.clone());
        }
        self
    }
}

impl Deref for Failure {
    type Target = FailureInfo;
    fn deref(&self) -> &FailureInfo {
        &self.info
    }
}

impl DerefMut for Failure {
    fn deref_mut(&mut self) -> &mut FailureInfo {
        &mut self.info
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.info.fmt(f)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A message that already names its command (`git exited with
        // status 1`, `command not found: gti`) is not prefixed again.
        match &self.info.cmd {
            Some(cmd) if !mentions(&self.info.message, cmd) => {
                write!(f, "{cmd}: {}", self.info.message)
            }
            Some(_) | None => f.write_str(&self.info.message),
        }
    }
}

/// Whether `message` names `cmd` as a word of its own.
fn mentions(message: &str, cmd: &str) -> bool {
    message
        .split(|c: char| c.is_whitespace() || c == ':' || c == '`')
        .any(|w| w == cmd)
}

impl std::error::Error for Failure {}

/// How many times, in this process, a run-time kind check behind the
/// checker fired (an operand of a kind the checker should have ruled out).
/// A sound checker keeps it at zero on checked programs; the golden
/// harness asserts that.
static BACKSTOPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one kind-check backstop firing (see [`backstops`]).
#[cold]
pub fn note_backstop() {
    BACKSTOPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// How many kind-check backstops have fired in this process.
pub fn backstops() -> u64 {
    BACKSTOPS.load(std::sync::atomic::Ordering::Relaxed)
}

const _: () = assert!(std::mem::size_of::<Failure>() == 8);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    #[test]
    fn result_stays_small() {
        assert!(std::mem::size_of::<Result<Value, Failure>>() <= 24);
    }

    #[test]
    fn sites_count_lines_and_characters() {
        let s = SourceText::new("t.ral", "ab\nxé y\n\nz");
        let at = |n| {
            let site = s.site(n);
            (site.line, site.col)
        };
        assert_eq!(at(0), (1, 1));
        assert_eq!(at(3), (2, 1));
        // `y` follows a two-byte character: column 4, not 5.
        assert_eq!(at(7), (2, 4));
        assert_eq!(at(9), (3, 1));
        assert_eq!(at(10), (4, 1));
        assert_eq!(s.site(10).script.as_ref(), "t.ral");
    }

    #[test]
    fn innermost_command_wins() {
        let inner: Arc<str> = Arc::from("int");
        let outer: Arc<str> = Arc::from("map");
        let f = Failure::error("bad").with_cmd(&inner).with_cmd(&outer);
        assert_eq!(f.cmd.as_deref(), Some("int"));
        assert_eq!(f.to_string(), "int: bad");
        assert_eq!(Failure::cancelled(Cause::TimedOut).status, 124);
    }
}
