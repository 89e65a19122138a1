//! The session log: one append-only JSONL file per run.
//!
//! Each record is one JSON object on one line, written with a single
//! `write_all` on an unbuffered file, so every line is on disk (in the
//! kernel's hands) as soon as it is recorded and a crash loses at most the
//! line being written. Every record has `ts` (UTC, RFC 3339, milliseconds),
//! `elapsed_ms` since the run started, and `kind`:
//!
//! | kind | fields |
//! |---|---|
//! | `session_started` | model, provider, base_url, exarch and ral versions, pid, cwd, mode, limits, run, context_window |
//! | `user` | text |
//! | `request` | n, purpose (`turn`, `summary`), model, usage, cost_usd, stop_reason, attempts, duration_ms, prompt_estimate, prompt_bytes, window |
//! | `request_failed` | n, error, attempts, duration_ms, prompt_estimate |
//! | `retry` | attempt, wait_ms, reason |
//! | `assistant` | text, tool_calls, blocks (exactly, in order) |
//! | `tool_call` | id, name, description, cmd, timeout_secs, result (the exact string the model saw), is_error, exit, duration_ms; not_run for a call a stop kept from running |
//! | `nudge` | text (what the model was told after a broken stream), why |
//! | `context_evicted` | results: msg, block, id, bytes, file, stub |
//! | `context_summarised` | first, count, text (the message that replaced them), summarised, error |
//! | `context_compacted` | reason, before, after, budget, window, evicted, evicted_bytes, summaries, summaries_failed, summarised_messages |
//! | `context_refused` | tokens, limit, window, bytes_per_token |
//! | `exchange_ended` | stop_reason, turns, usage, cost_usd |
//! | `model_changed`, `profile_changed` | from, to, window / profile |
//! | `shell_state` | bound (name, type), unbound, cwd, workers (id, what): how the last call changed the shell |
//! | `session_resumed` | as `session_started`, for a process that resumed the run |
//! | `resumed` | text: the notice the model was given |
//! | `evidence` | id (the call's), commands (argv, status, origin, error, start, end), writes (path, mode, outcome), denials (resource, fields); flagged, reads, workers, other when present — right after the call's `tool_call` |
//! | `bindings_pruned` | names (never shown to the model) |
//! | `workers_reaped` | notices |
//! | `notice` | text |
//! | `error` | message |
//! | `cleared` | — |
//! | `session_ended` | stop_reason, is_error, num_turns, usage, total_cost_usd, duration_ms |
//!
//! A log that cannot be written is reported once on stderr and then
//! dropped; the run goes on.
//!
//! # Where
//!
//! Each run has a directory of its own, `ROOT/PROJECT/RUN/`, where `ROOT`
//! is `--log-dir` or [`default_dir`], `PROJECT` names the working
//! directory ([`project_slug`]: its last two components and a hash of the
//! whole path) and `RUN` is `YYYYMMDD-HHMMSS-PID` ([`RunDir`]). It holds
//! `log.jsonl` and `outputs/`, the tool outputs evicted from the context
//! (one file each). A resumed run appends to the same `log.jsonl`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// See the module docs.
#[derive(Debug)]
pub struct SessionLog {
    file: Option<File>,
    path: Option<PathBuf>,
    started: Instant,
}

impl SessionLog {
    /// A log that records nothing.
    pub fn disabled() -> SessionLog {
        SessionLog {
            file: None,
            path: None,
            started: Instant::now(),
        }
    }

    /// Creates `dir` (and parents) and a new log file in it named after
    /// the start time and pid.
    pub fn create_in(dir: &Path) -> std::io::Result<SessionLog> {
        std::fs::create_dir_all(dir)?;
        let name = format!(
            "{}-{}.jsonl",
            file_stamp(SystemTime::now()),
            std::process::id()
        );
        let path = dir.join(name);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        Ok(SessionLog {
            file: Some(file),
            path: Some(path),
            started: Instant::now(),
        })
    }

    /// Creates a new run directory for `cwd` under `root` and its log.
    pub fn create_run(root: &Path, cwd: &Path) -> std::io::Result<(SessionLog, RunDir)> {
        let project = root.join(project_slug(cwd));
        std::fs::create_dir_all(&project)?;
        let stamp = file_stamp(SystemTime::now());
        let pid = std::process::id();
        // A second run in the same second by the same pid (a test) gets a
        // suffix rather than sharing a directory.
        let mut n = 0u32;
        let (dir, id) = loop {
            let id = if n == 0 {
                format!("{stamp}-{pid}")
            } else {
                format!("{stamp}-{pid}-{n}")
            };
            let dir = project.join(&id);
            match std::fs::create_dir(&dir) {
                Ok(()) => break (dir, id),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
                Err(e) => return Err(e),
            }
        };
        let run = RunDir { dir, id };
        std::fs::create_dir_all(run.outputs())?;
        let path = run.log();
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        Ok((
            SessionLog {
                file: Some(file),
                path: Some(path),
                started: Instant::now(),
            },
            run,
        ))
    }

    /// Opens an existing run's log to append to (a resumed run).
    pub fn append_to(run: &RunDir) -> std::io::Result<SessionLog> {
        let path = run.log();
        let file = OpenOptions::new().append(true).open(&path)?;
        std::fs::create_dir_all(run.outputs())?;
        Ok(SessionLog {
            file: Some(file),
            path: Some(path),
            started: Instant::now(),
        })
    }

    /// Where the log is being written.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Appends one record; `fields` must be a JSON object (other values are
    /// recorded under `value`).
    pub fn record(&mut self, kind: &str, fields: Value) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let mut obj = Map::new();
        obj.insert("ts".into(), Value::String(rfc3339(SystemTime::now())));
        obj.insert(
            "elapsed_ms".into(),
            Value::from(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)),
        );
        obj.insert("kind".into(), Value::String(kind.to_owned()));
        match fields {
            Value::Object(m) => obj.extend(m),
            Value::Null => {}
            other @ (Value::Bool(_) | Value::Number(_) | Value::String(_) | Value::Array(_)) => {
                obj.insert("value".into(), other);
            }
        }
        let mut line = Value::Object(obj).to_string();
        line.push('\n');
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("exarch: the session log stopped: {e}");
            self.file = None;
        }
    }
}

/// A run's directory; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    pub dir: PathBuf,
    /// The directory's name, `YYYYMMDD-HHMMSS-PID`.
    pub id: String,
}

impl RunDir {
    /// The run at `dir` (no check that it is one).
    pub fn at(dir: PathBuf) -> RunDir {
        let id = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        RunDir { dir, id }
    }

    /// The session log.
    pub fn log(&self) -> PathBuf {
        self.dir.join("log.jsonl")
    }

    /// Evicted tool outputs.
    pub fn outputs(&self) -> PathBuf {
        self.dir.join("outputs")
    }
}

/// The directory name of a working directory's runs: its last two
/// components (kept readable) and eight hex digits of a hash of the whole
/// path (kept distinct).
pub fn project_slug(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let tail: Vec<String> = cwd
        .components()
        .rev()
        .filter_map(|c| match c {
            std::path::Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .take(2)
        .collect();
    let readable: String = tail
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join("-")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .take(48)
        .collect();
    let readable = if readable.is_empty() {
        "root".to_owned()
    } else {
        readable
    };
    format!("{readable}-{:08x}", hash & 0xffff_ffff)
}

/// Days since 1970-01-01 to a civil date (proleptic Gregorian).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

struct Parts {
    y: i64,
    mo: u32,
    d: u32,
    h: u64,
    mi: u64,
    s: u64,
    ms: u32,
}

fn parts(t: SystemTime) -> Parts {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, mo, d) = civil(days);
    Parts {
        y,
        mo,
        d,
        h: rem / 3600,
        mi: rem % 3600 / 60,
        s: rem % 60,
        ms: since.subsec_millis(),
    }
}

/// `2026-07-05T14:03:09.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let p = parts(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        p.y, p.mo, p.d, p.h, p.mi, p.s, p.ms
    )
}

/// `20260705-140309` (for file names).
pub fn file_stamp(t: SystemTime) -> String {
    let p = parts(t);
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        p.y, p.mo, p.d, p.h, p.mi, p.s
    )
}

/// The default log directory: `$XDG_STATE_HOME/exarch`, else
/// `~/.local/state/exarch`, else a directory under the temp dir.
pub fn default_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_STATE_HOME").filter(|x| !x.is_empty()) {
        let p = PathBuf::from(x);
        if p.is_absolute() {
            return p.join("exarch");
        }
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".local/state/exarch");
    }
    fallback_dir()
}

/// Where logs go when the default directory cannot be written: a
/// directory under the temp dir named for the user.
pub fn fallback_dir() -> PathBuf {
    let user = std::env::var("USER")
        .ok()
        .filter(|u| {
            !u.is_empty()
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        })
        .unwrap_or_else(|| "user".to_owned());
    std::env::temp_dir().join(format!("exarch-state-{user}"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_civil_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_789);
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56.789Z");
        assert_eq!(file_stamp(t), "20240229-123456");
    }

    #[test]
    fn runs_get_a_directory_per_project_with_room_for_outputs() {
        let root = tempfile::tempdir().unwrap();
        let cwd = Path::new("/work/some project/src");
        let (mut log, run) = SessionLog::create_run(root.path(), cwd).unwrap();
        log.record("user", serde_json::json!({"text": "x"}));
        assert_eq!(
            run.dir.parent().unwrap(),
            root.path().join(project_slug(cwd))
        );
        assert!(
            project_slug(cwd).starts_with("some-project-src-"),
            "{}",
            project_slug(cwd)
        );
        assert_ne!(
            project_slug(cwd),
            project_slug(Path::new("/other/some project/src"))
        );
        assert!(run.outputs().is_dir());
        assert_eq!(log.path(), Some(run.log().as_path()));
        // A second run at once gets its own directory.
        let (_, second) = SessionLog::create_run(root.path(), cwd).unwrap();
        assert_ne!(second.dir, run.dir);
        // Appending continues the same file.
        let mut again = SessionLog::append_to(&RunDir::at(run.dir.clone())).unwrap();
        again.record("user", serde_json::json!({"text": "y"}));
        let text = std::fs::read_to_string(run.log()).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(
            project_slug(Path::new("/")),
            format!("root-{:08x}", {
                let mut h: u64 = 0xcbf2_9ce4_8422_2325;
                h ^= u64::from(b'/');
                h = h.wrapping_mul(0x0100_0000_01b3);
                h & 0xffff_ffff
            })
        );
    }

    #[test]
    fn records_are_one_json_object_per_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create_in(&dir.path().join("nested")).unwrap();
        log.record("user", serde_json::json!({"text": "a\nb"}));
        log.record("cleared", Value::Null);
        let text = std::fs::read_to_string(log.path().unwrap()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["kind"], "user");
        assert_eq!(lines[0]["text"], "a\nb");
        assert_eq!(lines[1]["kind"], "cleared");
        SessionLog::disabled().record("user", Value::Null);
    }
}
