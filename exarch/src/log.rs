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
//! | `session_started` | model, provider, base_url, exarch and ral versions, pid, cwd, mode, limits |
//! | `user` | text |
//! | `request` | n, usage, stop_reason, attempts, duration_ms |
//! | `retry` | attempt, wait_ms, reason |
//! | `assistant` | text, tool_calls |
//! | `tool_call` | id, name, description, cmd, timeout_secs, result (the exact string the model saw), is_error, exit, duration_ms |
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
