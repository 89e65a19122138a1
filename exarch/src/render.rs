//! The tool result string: what the model reads after a `ral` call, and
//! exactly what the session log records.
//!
//! ```text
//! STDOUT:
//! <captured stdout, clipped head+tail at 10 KB>
//! STDERR:
//! <captured stderr, then the failure's diagnostic; clipped at 10 KB>
//! VALUE:
//! <the run's value, clipped at 20 KB>
//!
//! <a note, for a call that failed, timed out, exited or was interrupted>
//! EXIT: <status>
//! ```
//!
//! Empty sections are left out; `EXIT` is always there. Output is first
//! reduced to what a terminal would show ([`crate::terminal::reduce`]),
//! then clipped: the head and the tail are kept, cut at line boundaries
//! where one is near, with a banner saying how much was elided and how to
//! narrow. A static error is the rendered diagnostic and `EXIT: 2` (parse)
//! or `EXIT: 1` (type): nothing of the call ran.
//!
//! The failure note states the law of a failed run (spec §5.6): the steps
//! before the failure completed and their bindings are still bound; the
//! failing step did not complete and the steps after it did not run; the
//! model should resume, not replay. Nothing here ever says a failed call's
//! bindings were discarded, because they were not.
//!
//! The VALUE section is [`value_text`]: ral's one value printer
//! ([`ral_host::render_value`]) in its [`StringStyle::Words`] style, so a
//! top-level string is its own text (the model must match it exactly when
//! editing; the section clip bounds it) and everything else is ral notation
//! with nested strings as bare words where they read back.

use ral_host::{render_value, RenderOptions, StringStyle, Value};

use crate::terminal::reduce;

/// The layout width of the VALUE section.
const VALUE_WIDTH: usize = 100;

/// The VALUE text of `v`; `None` for `()` (no VALUE section).
pub fn value_text(v: &Value) -> Option<String> {
    if matches!(v, Value::Unit) {
        return None;
    }
    let opts = RenderOptions {
        width: VALUE_WIDTH,
        // The section clip bounds the text; nothing is elided inside it.
        max_depth: 48,
        max_field_chars: usize::MAX,
        strings: StringStyle::Words,
    };
    Some(render_value(v, &opts))
}

/// Section limits, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub stdout: usize,
    pub stderr: usize,
    pub value: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            stdout: 10_000,
            stderr: 10_000,
            value: 20_000,
        }
    }
}

/// A static (parse or type) error: nothing ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticFailure {
    /// 2 for parse, 1 for type (spec §16.3).
    pub status: i32,
    /// The rendered diagnostics.
    pub diagnostics: String,
}

/// How a call that ran ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It produced its value (`EXIT` 0, or 1 for a final `false`).
    Value,
    /// An uncaught failure: raised, a failed command, a cancellation.
    Failed { kind: FailKind, diagnostic: String },
    /// `exit N`.
    Exit,
}

/// The kinds of failure the note distinguishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailKind {
    /// A raise or a failed command.
    Error,
    /// The call's wall, after this many seconds.
    TimedOut(u64),
    /// Ctrl-C, SIGTERM or the run's wall stopped it.
    Interrupted,
    /// An internal error; the session was restored to its state before the
    /// call.
    Internal,
}

/// Everything a call that ran reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RanCall {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Warnings the front end raised (the call still ran).
    pub warnings: String,
    /// The value's text; `None` for `()` and for failures.
    pub value: Option<String>,
    pub status: i32,
    pub ending: Ending,
    /// Workers this call started that are still running, `(id, what)`.
    pub running_workers: Vec<(String, String)>,
}

/// The outcome of one `ral` call, before rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallOutcome {
    Static(StaticFailure),
    Ran(RanCall),
}

impl CallOutcome {
    /// The `EXIT` status.
    pub fn status(&self) -> i32 {
        match self {
            CallOutcome::Static(s) => s.status,
            CallOutcome::Ran(r) => r.status,
        }
    }
}

/// Renders an outcome into the tool result string.
pub fn render(outcome: &CallOutcome, limits: &Limits) -> String {
    let mut out = String::new();
    match outcome {
        CallOutcome::Static(s) => {
            let what = if s.status == 2 { "parse" } else { "type" };
            out.push_str(&format!(
                "ERROR ({what} error; nothing in this call ran and no binding changed):\n"
            ));
            out.push_str(&clip(
                reduce(&s.diagnostics).trim_end(),
                limits.stderr,
                "ERROR",
            ));
            out.push_str("\n\n");
            out.push_str(&format!("EXIT: {}", s.status));
        }
        CallOutcome::Ran(r) => {
            let stdout = String::from_utf8_lossy(&r.stdout);
            section(&mut out, "STDOUT", &reduce(&stdout), limits.stdout);
            let mut stderr = reduce(&String::from_utf8_lossy(&r.stderr)).into_owned();
            for extra in [r.warnings.as_str(), failure_diagnostic(&r.ending)] {
                if !extra.trim().is_empty() {
                    if !stderr.is_empty() && !stderr.ends_with('\n') {
                        stderr.push('\n');
                    }
                    stderr.push_str(&reduce(extra));
                }
            }
            section(&mut out, "STDERR", &stderr, limits.stderr);
            if let Some(v) = &r.value {
                section(&mut out, "VALUE", &reduce(v), limits.value);
            }
            out.push('\n');
            let note = note(r);
            if !note.is_empty() {
                out.push_str(&note);
                out.push('\n');
            }
            out.push_str(&format!("EXIT: {}", r.status));
        }
    }
    out
}

fn failure_diagnostic(e: &Ending) -> &str {
    match e {
        Ending::Failed { diagnostic, .. } => diagnostic,
        Ending::Value | Ending::Exit => "",
    }
}

fn section(out: &mut String, name: &str, text: &str, limit: usize) {
    if text.is_empty() {
        return;
    }
    out.push_str(name);
    out.push_str(":\n");
    out.push_str(&clip(text, limit, name));
    if !out.ends_with('\n') {
        out.push('\n');
    }
}

const KEPT_PROMISE: &str = "The steps before it completed and their bindings are still bound; \
the failing step did not complete and the steps after it did not run. Resume from the failing \
step instead of replaying the call: replaying would repeat effects that already happened.";

/// The note after the sections (empty for a call that produced a value).
fn note(r: &RanCall) -> String {
    let mut n = match &r.ending {
        Ending::Value => String::new(),
        Ending::Exit => format!(
            "NOTE: the program called `exit {}`; the steps after it did not run. Bindings made \
             before it are still bound.",
            r.status
        ),
        Ending::Failed { kind, .. } => match kind {
            FailKind::Error => format!("NOTE: this call failed at the step shown above. {KEPT_PROMISE}"),
            FailKind::TimedOut(secs) => format!(
                "NOTE: this call hit its wall of {secs}s and was stopped at the step shown above. \
                 {KEPT_PROMISE} For a command known to take long, pass a larger timeout_secs; for \
                 work that should run on in the background, start it with `spawn` and `await` its \
                 handle in a later call."
            ),
            FailKind::Interrupted => format!(
                "NOTE: this call was interrupted by the user at the step shown above. {KEPT_PROMISE}"
            ),
            FailKind::Internal => "NOTE: this call hit an internal error in the host (a bug, not \
                 your program's fault). The session's bindings and working directory are as they \
                 were before this call; earlier calls' bindings are intact. Effects on files or \
                 processes that happened before the error were not undone."
                .to_owned(),
        },
    };
    if !r.running_workers.is_empty() && !matches!(r.ending, Ending::Value) {
        let shown: Vec<String> = r
            .running_workers
            .iter()
            .take(5)
            .map(|(id, what)| format!("{id} ({what})"))
            .collect();
        let more = r.running_workers.len().saturating_sub(5);
        let mut line = format!("Still running, started by this call: {}", shown.join(", "));
        if more > 0 {
            line.push_str(&format!(" and {more} more"));
        }
        line.push_str(". They end with the session unless awaited or cancelled.");
        if !n.is_empty() {
            n.push('\n');
        }
        n.push_str(&line);
    }
    n
}

/// Keeps the head and tail of `text` within `limit` bytes, cut at line
/// boundaries where one is near, with a banner between them.
pub fn clip(text: &str, limit: usize, section: &str) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let half = limit / 2;
    // The head ends at the last line break in its half (if that keeps at
    // least half of it), else at a character boundary.
    let mut head_end = floor_char(text, half);
    if let Some(i) = text[..head_end].rfind('\n') {
        if i + 1 >= half / 2 {
            head_end = i + 1;
        }
    }
    let mut tail_start = ceil_char(text, text.len() - half);
    if let Some(i) = text[tail_start..].find('\n') {
        if i < half / 2 {
            tail_start += i + 1;
        }
    }
    let tail_start = tail_start.max(head_end);
    let elided = &text[head_end..tail_start];
    let lines = elided.matches('\n').count();
    format!(
        "{}... [{} elided: {} bytes, {} lines; narrow it: bind the output and read a slice \
         (take, drop, lines), filter it, or write it to a file and read a range] ...\n{}",
        &text[..head_end],
        section,
        elided.len(),
        lines,
        &text[tail_start..]
    )
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_text_is_the_words_style_of_the_one_printer() {
        assert_eq!(value_text(&Value::Unit), None);
        assert_eq!(value_text(&Value::str("it's\n")), Some("it's\n".into()));
        assert_eq!(value_text(&Value::Int(42)), Some("42".into()));
        assert_eq!(value_text(&Value::Float(3.0)), Some("3.0".into()));
        let v = Value::variant("ok", Some(Value::variant("some", Some(Value::Int(1)))));
        assert_eq!(value_text(&v).as_deref(), Some("`ok (`some 1)"));
        let long = "x".repeat(500);
        let r = value_text(&Value::list(vec![Value::str(long.clone())])).unwrap_or_default();
        assert!(r.contains(&long), "a nested string is never cut: {r}");
    }

    fn ran(ending: Ending, status: i32) -> RanCall {
        RanCall {
            stdout: Vec::new(),
            stderr: Vec::new(),
            warnings: String::new(),
            value: None,
            status,
            ending,
            running_workers: Vec::new(),
        }
    }

    #[test]
    fn a_value_call_has_sections_and_exit() {
        let mut r = ran(Ending::Value, 0);
        r.stdout = b"hi\n".to_vec();
        r.value = Some("42".into());
        assert_eq!(
            render(&CallOutcome::Ran(r), &Limits::default()),
            "STDOUT:\nhi\nVALUE:\n42\n\nEXIT: 0"
        );
        assert_eq!(
            render(&CallOutcome::Ran(ran(Ending::Value, 0)), &Limits::default()),
            "\nEXIT: 0"
        );
    }

    #[test]
    fn a_failed_call_keeps_its_bindings_in_words() {
        let r = ran(
            Ending::Failed {
                kind: FailKind::Error,
                diagnostic: "error: boom".into(),
            },
            1,
        );
        let text = render(&CallOutcome::Ran(r), &Limits::default());
        assert!(text.starts_with("STDERR:\nerror: boom\n"), "{text}");
        assert!(
            text.contains("completed and their bindings are still bound"),
            "{text}"
        );
        assert!(text.contains("did not run"), "{text}");
        assert!(text.contains("instead of replaying"), "{text}");
        assert!(
            !text.contains("discarded") && !text.contains("rolled back"),
            "{text}"
        );
        assert!(text.ends_with("EXIT: 1"));
    }

    #[test]
    fn a_timed_out_call_names_its_wall() {
        let mut r = ran(
            Ending::Failed {
                kind: FailKind::TimedOut(3),
                diagnostic: "timed out".into(),
            },
            124,
        );
        r.running_workers = (0..7)
            .map(|i| (format!("w{i}"), "spawn".to_owned()))
            .collect();
        let text = render(&CallOutcome::Ran(r), &Limits::default());
        assert!(text.contains("wall of 3s"), "{text}");
        assert!(text.contains("still bound"), "{text}");
        assert!(text.contains("w4 (spawn) and 2 more"), "{text}");
        assert!(text.ends_with("EXIT: 124"));
    }

    #[test]
    fn static_errors_say_nothing_ran() {
        let s = CallOutcome::Static(StaticFailure {
            status: 2,
            diagnostics: "\x1b[31m[unexpected-token] Error\x1b[0m".into(),
        });
        let text = render(&s, &Limits::default());
        assert!(
            text.starts_with("ERROR (parse error; nothing in this call ran"),
            "{text}"
        );
        assert!(text.contains("[unexpected-token] Error\n"), "{text}");
        assert!(text.ends_with("EXIT: 2"));
        assert!(!text.contains("STDOUT"));
    }

    #[test]
    fn clipping_keeps_head_and_tail_on_line_boundaries() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let clipped = clip(&text, 1000, "STDOUT");
        assert!(clipped.len() < 1300, "{}", clipped.len());
        assert!(clipped.starts_with("line 0\nline 1\n"));
        assert!(clipped.ends_with("line 1999\n"));
        let banner = clipped
            .lines()
            .find(|l| l.starts_with("... [STDOUT elided"))
            .unwrap_or_else(|| panic!("no banner in {clipped}"));
        assert!(
            banner.contains("bytes") && banner.contains("narrow it"),
            "{banner}"
        );
        // Each kept line is whole.
        for l in clipped.lines().filter(|l| !l.starts_with("...")) {
            assert!(l.starts_with("line "), "{l:?}");
        }
        // Multi-byte text without newlines is cut on character boundaries.
        let wide = "é".repeat(5000);
        let c = clip(&wide, 101, "VALUE");
        assert!(c.contains("VALUE elided"));
        assert_eq!(clip("short", 10, "X"), "short");
    }

    #[test]
    fn output_is_reduced_before_it_is_shown() {
        let mut r = ran(Ending::Value, 0);
        r.stdout = b"\x1b[32m 50%\r100%\x1b[0m\n".to_vec();
        let text = render(&CallOutcome::Ran(r), &Limits::default());
        assert_eq!(text, "STDOUT:\n100%\n\nEXIT: 0");
    }
}
