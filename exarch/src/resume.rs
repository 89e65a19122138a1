//! Resuming a run: `--continue` (the newest run for this working
//! directory) and `--resume RUN` (a named one).
//!
//! The conversation is a fold of the log's records ([`load`]): `user`,
//! `assistant` (its blocks, exactly), `tool_call` (each result the model
//! got), `nudge` and `resumed` (text exarch added), `context_evicted`
//! (stubs replacing outputs at their positions), `context_summarised` (a
//! summary replacing a range) and `cleared`. The same fold reads what the
//! shell held (`shell_state`: bindings and their types, the working
//! directory, running workers) and which processes were `detach`ed (the
//! `evidence` records). A line that is not JSON (the torn end of a log
//! whose process was killed mid-write) is skipped.
//!
//! The shell cannot be restored: a resumed run starts a fresh one. The
//! model is told so in one message ([`notice`]), which names the bindings
//! and workers that no longer exist, the working directory the new shell
//! starts in, and the detached processes that may still run. A call the
//! log shows asked for but never answered (the process stopped mid-call)
//! gets a result saying so ([`UNANSWERED`]), so every call still pairs
//! with a result. A resumed run appends to the same log.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::log::{project_slug, RunDir};
use crate::message::{Block, Message, Role, ToolArgs};

/// The result given to a call the log never answered.
pub const UNANSWERED: &str = "no result: exarch stopped while this call was running (or before it \
started), so whether it ran, and how far, is not known. Effects it had on files or processes may \
have happened; the shell it ran in is gone.";

/// How the notice starts.
pub const NOTICE_PREFIX: &str = "[exarch: this session was resumed]";

/// What a run's log holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Restored {
    /// The conversation as the model last saw it.
    pub history: Vec<Message>,
    /// The shell as the log last saw it: bindings (name, type), working
    /// directory, running workers (id, what).
    pub bindings: Vec<(String, String)>,
    pub cwd: Option<String>,
    pub workers: Vec<(String, String)>,
    /// The `detach`ed programs (their command lines).
    pub detached: Vec<String>,
    /// The working directory the run started in, and its model.
    pub start_cwd: Option<String>,
    pub model: Option<String>,
    /// The last record's time.
    pub last_ts: Option<String>,
    /// Calls asked for and never answered (id, tool name).
    pub unanswered: Vec<(String, String)>,
    /// Outputs evicted and summaries written, over the whole run.
    pub evicted: u64,
    pub summaries: u64,
    /// Lines that were not JSON records.
    pub skipped_lines: usize,
    /// Whether the last process left without a `session_ended`.
    pub ended_cleanly: bool,
    /// The pid of the last process that wrote the log.
    pub last_pid: Option<u32>,
}

fn push_user(history: &mut Vec<Message>, block: Block) {
    match history.last_mut() {
        Some(m) if m.role == Role::User => m.blocks.push(block),
        Some(_) | None => history.push(Message {
            role: Role::User,
            blocks: vec![block],
        }),
    }
}

fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// An assistant record's blocks: its `blocks` when present, else its text
/// and calls (logs written before blocks were recorded).
fn assistant_blocks(rec: &Value) -> Vec<Block> {
    if let Some(blocks) = rec.get("blocks").and_then(Value::as_array) {
        return blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => Some(Block::Text(text_of(b, "text"))),
                Some("tool_use") => Some(Block::ToolUse {
                    id: text_of(b, "id"),
                    name: text_of(b, "name"),
                    input: match b.get("input") {
                        Some(v) => ToolArgs::Json(v.clone()),
                        None => ToolArgs::Invalid {
                            raw: text_of(b, "invalid_json"),
                            error: text_of(b, "error"),
                        },
                    },
                }),
                Some(_) | None => None,
            })
            .collect();
    }
    let mut out = Vec::new();
    let text = text_of(rec, "text");
    if !text.is_empty() {
        out.push(Block::Text(text));
    }
    for c in rec
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let input = c.get("input").cloned().unwrap_or(Value::Null);
        let input = match input.get("invalid_json").and_then(Value::as_str) {
            Some(raw) => ToolArgs::Invalid {
                raw: raw.to_owned(),
                error: text_of(&input, "error"),
            },
            None => ToolArgs::Json(input),
        };
        out.push(Block::ToolUse {
            id: text_of(c, "id"),
            name: text_of(c, "name"),
            input,
        });
    }
    out
}

/// Folds a log's text into what it holds.
pub fn fold(text: &str) -> Restored {
    let mut r = Restored {
        ended_cleanly: true,
        ..Restored::default()
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            r.skipped_lines += 1;
            continue;
        };
        if let Some(ts) = rec.get("ts").and_then(Value::as_str) {
            r.last_ts = Some(ts.to_owned());
        }
        let kind = rec.get("kind").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "session_started" | "session_resumed" => {
                if r.start_cwd.is_none() {
                    r.start_cwd = rec.get("cwd").and_then(Value::as_str).map(str::to_owned);
                }
                r.model = rec.get("model").and_then(Value::as_str).map(str::to_owned);
                r.last_pid = rec
                    .get("pid")
                    .and_then(Value::as_u64)
                    .and_then(|p| u32::try_from(p).ok());
                r.ended_cleanly = false;
            }
            "session_ended" => r.ended_cleanly = true,
            "model_changed" => {
                r.model = rec.get("to").and_then(Value::as_str).map(str::to_owned);
            }
            "user" | "nudge" | "resumed" => {
                push_user(&mut r.history, Block::Text(text_of(&rec, "text")));
            }
            "assistant" => {
                let blocks = assistant_blocks(&rec);
                if !blocks.is_empty() {
                    r.history.push(Message {
                        role: Role::Assistant,
                        blocks,
                    });
                }
            }
            "tool_call" => push_user(
                &mut r.history,
                Block::ToolResult {
                    id: text_of(&rec, "id"),
                    content: text_of(&rec, "result"),
                    is_error: rec.get("is_error").and_then(Value::as_bool) == Some(true),
                },
            ),
            "context_evicted" => {
                for e in rec
                    .get("results")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    apply_eviction(&mut r.history, e);
                    r.evicted += 1;
                }
            }
            "context_summarised" => {
                let first = rec.get("first").and_then(Value::as_u64).unwrap_or(1) as usize;
                let count = rec.get("count").and_then(Value::as_u64).unwrap_or(0) as usize;
                if first + count <= r.history.len() && count > 0 {
                    r.history.splice(
                        first..first + count,
                        [Message::user_text(text_of(&rec, "text"))],
                    );
                }
                if rec.get("summarised").and_then(Value::as_bool) == Some(true) {
                    r.summaries += 1;
                }
            }
            "cleared" => {
                r.history.clear();
                r.bindings.clear();
                r.workers.clear();
            }
            "shell_state" => apply_state(&mut r, &rec),
            "evidence" => {
                for c in rec
                    .get("commands")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if c.get("origin").and_then(Value::as_str) == Some("detached") {
                        let argv: Vec<&str> = c
                            .get("argv")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect();
                        r.detached.push(argv.join(" "));
                    }
                }
            }
            _ => {}
        }
    }
    r.unanswered = unanswered(&r.history);
    r
}

/// Puts an eviction's stub in place: at its recorded position when the
/// call id matches there, else at the result with that id.
fn apply_eviction(history: &mut [Message], e: &Value) {
    let id = text_of(e, "id");
    let stub = text_of(e, "stub");
    let at = |k: &str| e.get(k).and_then(Value::as_u64).map(|n| n as usize);
    if let (Some(mi), Some(bi)) = (at("msg"), at("block")) {
        if let Some(Block::ToolResult {
            id: rid, content, ..
        }) = history.get_mut(mi).and_then(|m| m.blocks.get_mut(bi))
        {
            if *rid == id {
                *content = stub;
                return;
            }
        }
    }
    for m in history.iter_mut() {
        for b in &mut m.blocks {
            if let Block::ToolResult {
                id: rid, content, ..
            } = b
            {
                if *rid == id {
                    content.clone_from(&stub);
                }
            }
        }
    }
}

fn apply_state(r: &mut Restored, rec: &Value) {
    for name in rec
        .get("unbound")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        r.bindings.retain(|(n, _)| n != name);
    }
    for b in rec
        .get("bound")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = text_of(b, "name");
        r.bindings.retain(|(n, _)| *n != name);
        r.bindings.push((name, text_of(b, "type")));
    }
    r.bindings.sort();
    if let Some(cwd) = rec.get("cwd") {
        r.cwd = cwd.as_str().map(str::to_owned);
    }
    if let Some(ws) = rec.get("workers").and_then(Value::as_array) {
        r.workers = ws
            .iter()
            .map(|w| (text_of(w, "id"), text_of(w, "what")))
            .collect();
    }
}

/// Calls in the history with no result.
fn unanswered(history: &[Message]) -> Vec<(String, String)> {
    let answered: std::collections::HashSet<&str> = history
        .iter()
        .flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            Block::ToolResult { id, .. } => Some(id.as_str()),
            Block::Text(_) | Block::ToolUse { .. } => None,
        })
        .collect();
    history
        .iter()
        .flat_map(|m| m.tool_uses())
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, name, _)| (id.to_owned(), name.to_owned()))
        .collect()
}

/// Reads a run's log.
pub fn load(run: &RunDir) -> Result<Restored, String> {
    let text = std::fs::read_to_string(run.log())
        .map_err(|e| format!("cannot read the log of run {}: {e}", run.dir.display()))?;
    Ok(fold(&text))
}

/// Whether process `pid` is alive and is an exarch (Linux; elsewhere
/// nothing is known and the answer is no).
fn exarch_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some((head, rest)) = stat.rsplit_once(')') else {
        return false;
    };
    let running = rest.split_whitespace().next().is_some_and(|s| s != "Z");
    running && head.contains("(exarch")
}

/// Whether another live exarch is still writing the run (its last session
/// has no `session_ended` and its pid is alive).
pub fn in_use(run: &RunDir) -> Option<u32> {
    let r = load(run).ok()?;
    match (r.ended_cleanly, r.last_pid) {
        (false, Some(pid)) if exarch_alive(pid) => Some(pid),
        _ => None,
    }
}

/// The runs of `cwd` under `root`, newest activity first.
fn runs_of(root: &Path, cwd: &Path) -> Vec<RunDir> {
    let project = root.join(project_slug(cwd));
    let mut runs: Vec<(std::time::SystemTime, RunDir)> = std::fs::read_dir(&project)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| RunDir::at(e.path()))
        .filter_map(|r| {
            let modified = std::fs::metadata(r.log()).ok()?.modified().ok()?;
            Some((modified, r))
        })
        .collect();
    runs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.id.cmp(&a.1.id)));
    runs.into_iter().map(|(_, r)| r).collect()
}

/// The run to resume. `named` is a run directory, its `log.jsonl`, or a
/// run's name (looked up among this directory's runs, then every
/// project's); `None` is the newest run of `cwd` no live exarch is using.
/// `roots` are the log roots to look in, in order.
pub fn find(roots: &[PathBuf], cwd: &Path, named: Option<&str>) -> Result<RunDir, String> {
    let Some(name) = named else {
        for root in roots {
            if let Some(run) = runs_of(root, cwd).into_iter().find(|r| in_use(r).is_none()) {
                return Ok(run);
            }
        }
        return Err(format!(
            "no run to continue for {} (looked in {})",
            cwd.display(),
            shown(roots)
        ));
    };
    let path = Path::new(name);
    let candidate = if path.is_file() && path.file_name().is_some_and(|f| f == "log.jsonl") {
        path.parent().map(|p| RunDir::at(p.to_path_buf()))
    } else if path.join("log.jsonl").is_file() {
        Some(RunDir::at(path.to_path_buf()))
    } else {
        roots.iter().find_map(|root| {
            let own = root.join(project_slug(cwd)).join(name);
            if own.join("log.jsonl").is_file() {
                return Some(RunDir::at(own));
            }
            std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|p| p.path().join(name))
                .find(|d| d.join("log.jsonl").is_file())
                .map(RunDir::at)
        })
    };
    let run = candidate.ok_or_else(|| {
        format!(
            "no run named {name} (a run directory, its log.jsonl, or a run name under {})",
            shown(roots)
        )
    })?;
    if let Some(pid) = in_use(&run) {
        return Err(format!(
            "run {} is in use by exarch process {pid}",
            run.dir.display()
        ));
    }
    Ok(run)
}

fn shown(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The one message that tells the model the session was resumed; see
/// the module docs. `cwd` is where the new shell starts; `prompt_follows`
/// says whether a new user message comes with it.
pub fn notice(r: &Restored, run_id: &str, cwd: &Path, prompt_follows: bool) -> String {
    let mut out = format!(
        "{NOTICE_PREFIX} exarch stopped and was started again on this conversation (run \
         {run_id}{}). The conversation above is restored as it was, but the ral shell is a new \
         one: nothing the earlier calls bound or started exists in it.",
        r.last_ts
            .as_deref()
            .map(|t| format!(", last active {t}"))
            .unwrap_or_default()
    );
    if r.bindings.is_empty() {
        out.push_str(" No bindings of the earlier calls were still bound.");
    } else {
        let names: Vec<String> = r
            .bindings
            .iter()
            .map(|(n, t)| {
                if t.is_empty() {
                    format!("`{n}`")
                } else {
                    format!("`{n}` ({t})")
                }
            })
            .collect();
        out.push_str(&format!(
            " These bindings no longer exist: {}.",
            names.join(", ")
        ));
    }
    if !r.workers.is_empty() {
        let ws: Vec<String> = r
            .workers
            .iter()
            .map(|(id, what)| format!("{id} ({what})"))
            .collect();
        out.push_str(&format!(
            " These workers were stopped with the old shell and no longer run: {}.",
            ws.join(", ")
        ));
    }
    if !r.unanswered.is_empty() {
        let ids: Vec<&str> = r.unanswered.iter().map(|(id, _)| id.as_str()).collect();
        out.push_str(&format!(
            " The process stopped during call {}: what that call bound is gone too, and whether \
             it finished is not known.",
            ids.join(", ")
        ));
    }
    let here = cwd.display().to_string();
    match r.cwd.as_deref() {
        Some(then) if then != here => out.push_str(&format!(
            " The working directory is {here} again (the old shell had moved to {then})."
        )),
        Some(_) | None => out.push_str(&format!(" The working directory is {here}.")),
    }
    if !r.detached.is_empty() {
        out.push_str(&format!(
            " Processes started with `detach` were not stopped and may still be running: {}.",
            r.detached.join("; ")
        ));
    }
    if r.evicted > 0 {
        out.push_str(" Evicted outputs are still in their files.");
    }
    out.push_str(if prompt_follows {
        " Re-create what you still need rather than assuming it exists."
    } else {
        " Re-create what you still need rather than assuming it exists, and continue the task \
         where it stopped."
    });
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(recs: &[Value]) -> String {
        let mut s = String::new();
        for r in recs {
            s.push_str(&r.to_string());
            s.push('\n');
        }
        s
    }

    #[test]
    fn the_fold_rebuilds_the_conversation_and_the_shell_it_left() {
        let text = lines(&[
            json!({"kind": "session_started", "cwd": "/w", "model": "m", "pid": 1, "ts": "t0"}),
            json!({"kind": "user", "text": "the task"}),
            json!({"kind": "assistant", "text": "ok", "tool_calls": [],
                   "blocks": [{"type": "text", "text": "ok"},
                              {"type": "tool_use", "id": "c1", "name": "ral", "input": {"cmd": "let n = 1"}},
                              {"type": "tool_use", "id": "c2", "name": "ral", "invalid_json": "{", "error": "eof"}]}),
            json!({"kind": "tool_call", "id": "c1", "result": "VALUE:\n1\n\nEXIT: 0", "is_error": false}),
            json!({"kind": "shell_state", "bound": [{"name": "n", "type": "Integer"}], "unbound": [],
                   "cwd": "/w/sub", "workers": [{"id": "w1", "what": "service: web"}]}),
            json!({"kind": "tool_call", "id": "c2", "result": "tool input error: x", "is_error": true}),
            json!({"kind": "assistant", "text": "done", "blocks": [{"type": "text", "text": "done"}]}),
            json!({"kind": "session_ended"}),
        ]);
        let r = fold(&text);
        assert_eq!(r.history.len(), 4);
        assert_eq!(r.history[0], Message::user_text("the task"));
        assert!(
            matches!(&r.history[1].blocks[2], Block::ToolUse { input: ToolArgs::Invalid { raw, .. }, .. } if raw == "{")
        );
        assert!(matches!(
            &r.history[2].blocks[1],
            Block::ToolResult { is_error: true, .. }
        ));
        assert_eq!(r.bindings, vec![("n".to_owned(), "Integer".to_owned())]);
        assert_eq!(r.cwd.as_deref(), Some("/w/sub"));
        assert_eq!(r.workers.len(), 1);
        assert!(r.unanswered.is_empty());
        assert!(r.ended_cleanly);
        assert_eq!(r.start_cwd.as_deref(), Some("/w"));
    }

    #[test]
    fn evictions_summaries_and_clears_replay_exactly() {
        let text = lines(&[
            json!({"kind": "user", "text": "task"}),
            json!({"kind": "assistant", "blocks": [{"type": "tool_use", "id": "a", "name": "ral", "input": {"cmd": "1"}}]}),
            json!({"kind": "tool_call", "id": "a", "result": "long output"}),
            json!({"kind": "assistant", "blocks": [{"type": "tool_use", "id": "b", "name": "ral", "input": {"cmd": "2"}}]}),
            json!({"kind": "tool_call", "id": "b", "result": "other output"}),
            json!({"kind": "context_evicted", "results": [{"msg": 2, "block": 0, "id": "a", "stub": "[stub a]"}]}),
            json!({"kind": "assistant", "blocks": [{"type": "text", "text": "so far"}]}),
            json!({"kind": "context_summarised", "first": 1, "count": 2, "text": "[summary]", "summarised": true}),
        ]);
        let r = fold(&text);
        let shown: Vec<String> = r
            .history
            .iter()
            .map(|m| format!("{:?}", m.blocks))
            .collect();
        assert_eq!(r.history.len(), 5, "{shown:?}");
        assert_eq!(r.history[1], Message::user_text("[summary]"));
        assert_eq!(r.evicted, 1);
        assert_eq!(r.summaries, 1);
        let cleared = fold(&format!(
            "{text}{}\n{}\n",
            json!({"kind": "cleared"}),
            json!({"kind": "user", "text": "fresh"})
        ));
        assert_eq!(cleared.history, vec![Message::user_text("fresh")]);
    }

    #[test]
    fn a_torn_log_and_an_unanswered_call_are_survivable() {
        let mut text = lines(&[
            json!({"kind": "session_started", "pid": 4_000_000_000u64}),
            json!({"kind": "user", "text": "task"}),
            json!({"kind": "assistant", "blocks": [
                {"type": "tool_use", "id": "x", "name": "ral", "input": {"cmd": "sleep 100"}}]}),
        ]);
        text.push_str("{\"kind\": \"tool_ca");
        let r = fold(&text);
        assert_eq!(r.skipped_lines, 1);
        assert_eq!(r.unanswered, vec![("x".to_owned(), "ral".to_owned())]);
        assert!(!r.ended_cleanly);
        let n = notice(&r, "run-1", Path::new("/w"), false);
        assert!(n.starts_with(NOTICE_PREFIX), "{n}");
        assert!(n.contains("stopped during call x"), "{n}");
        assert!(n.contains("continue the task where it stopped"), "{n}");
    }

    #[test]
    fn the_notice_names_what_no_longer_exists() {
        let r = Restored {
            bindings: vec![("n".into(), "Integer".into()), ("f".into(), String::new())],
            workers: vec![("w2".into(), "service: web".into())],
            cwd: Some("/w/sub".into()),
            detached: vec!["detach 'db' postgres".into()],
            evicted: 3,
            last_ts: Some("2026-01-02T03:04:05.000Z".into()),
            ..Restored::default()
        };
        let n = notice(&r, "20260102-030405-7", Path::new("/w"), true);
        assert!(
            n.contains("run 20260102-030405-7, last active 2026-01-02T03:04:05.000Z"),
            "{n}"
        );
        assert!(
            n.contains("These bindings no longer exist: `n` (Integer), `f`."),
            "{n}"
        );
        assert!(n.contains("w2 (service: web)"), "{n}");
        assert!(
            n.contains("is /w again (the old shell had moved to /w/sub)"),
            "{n}"
        );
        assert!(
            n.contains("may still be running: detach 'db' postgres"),
            "{n}"
        );
        assert!(
            n.contains("Evicted outputs are still in their files."),
            "{n}"
        );
        assert!(!n.contains("continue the task"), "{n}");
        let empty = notice(&Restored::default(), "r", Path::new("/w"), true);
        assert!(
            empty.contains("No bindings of the earlier calls"),
            "{empty}"
        );
    }

    #[test]
    fn runs_are_found_newest_first_by_name_and_by_path() {
        let root = tempfile::tempdir().unwrap();
        let cwd = Path::new("/some/where");
        let project = root.path().join(project_slug(cwd));
        for (i, id) in ["20260101-000000-1", "20260102-000000-2"]
            .iter()
            .enumerate()
        {
            let d = project.join(id);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("log.jsonl"),
                format!("{}\n", json!({"kind": "session_ended", "n": i})),
            )
            .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let roots = [root.path().to_path_buf()];
        let newest = find(&roots, cwd, None).unwrap();
        assert_eq!(newest.id, "20260102-000000-2");
        let named = find(&roots, cwd, Some("20260101-000000-1")).unwrap();
        assert_eq!(named.id, "20260101-000000-1");
        let by_path = find(
            &roots,
            Path::new("/elsewhere"),
            Some(project.join("20260101-000000-1").to_str().unwrap()),
        )
        .unwrap();
        assert_eq!(by_path.id, "20260101-000000-1");
        // From another directory, a bare name is found under any project.
        assert!(find(&roots, Path::new("/elsewhere"), Some("20260102-000000-2")).is_ok());
        assert!(find(&roots, Path::new("/elsewhere"), None)
            .unwrap_err()
            .contains("no run to continue"));
        assert!(find(&roots, cwd, Some("nope"))
            .unwrap_err()
            .contains("no run named nope"));
    }
}
