//! Context management end to end: the real binary, headless, runs a task
//! of 60 calls whose outputs (8 KB each, 480 KB in all) hold the fake
//! server's context (30,000 tokens, counted as a token per four bytes of
//! the request body, about 120 KB) four times over. The server refuses an
//! over-long prompt exactly as the real ones do (Anthropic's 400 `prompt
//! is too long: N tokens > M maximum`, OpenAI's `context_length_exceeded`)
//! and answers summary requests (the ones without tools) with a summary.
//! The run must finish.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const LIMIT: u64 = 30_000;
const CALLS: usize = 60;
const TASK: &str = "Print sixty ranges of numbers and read them.";

/// The server's count of a request: a token per four bytes of its body.
fn tokens(seen: &Seen) -> u64 {
    seen.body.to_string().len() as u64 / 4
}

/// Each call prints ~8 KB: 1,150 seven-byte lines.
fn call_cmd(n: usize) -> String {
    let start = 1_000_000 + n * 10_000;
    format!("seq {start} {}", start + 1150)
}

struct Model {
    wire: Wire,
    stream: bool,
    calls: AtomicUsize,
    refusals: AtomicUsize,
    summaries: AtomicUsize,
}

impl Model {
    fn answer(&self, seen: &Seen) -> Canned {
        let t = tokens(seen);
        if t > LIMIT {
            self.refusals.fetch_add(1, Ordering::SeqCst);
            return match self.wire {
                Wire::Anthropic => Canned::status(
                    400,
                    json!({"type": "error", "error": {"type": "invalid_request_error",
                        "message": format!("prompt is too long: {t} tokens > {LIMIT} maximum")}}),
                ),
                Wire::OpenAi => Canned::status(
                    400,
                    json!({"error": {"message": format!(
                        "This model's maximum context length is {LIMIT} tokens. However, your messages resulted in {t} tokens. Please reduce the length of the messages."),
                        "type": "invalid_request_error", "param": "messages",
                        "code": "context_length_exceeded"}}),
                ),
                // Responses streams its refusal as a failed response.
                Wire::Responses => Canned::sse(vec![format!(
                    "event: response.failed\ndata: {}\n\n",
                    json!({"type": "response.failed", "response": {"status": "failed",
                        "error": {"code": "context_length_exceeded",
                                  "message": "Your input exceeds the context window of this model. Please adjust your input and try again."}}})
                )]),
            };
        }
        if seen.body.get("tools").is_none() {
            self.summaries.fetch_add(1, Ordering::SeqCst);
            return self.text(
                "Summary: the agent printed numeric ranges with seq, one call at a time, and each \
                 succeeded.",
                t,
            );
        }
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < CALLS {
            let input = json!({"cmd": call_cmd(n), "description": format!("range {n}")});
            self.tool(&format!("call_{n}"), input, t)
        } else {
            self.text(&format!("finished after {CALLS} calls"), t)
        }
    }

    fn text(&self, text: &str, prompt: u64) -> Canned {
        match (self.wire, self.stream) {
            (Wire::Anthropic, true) => Canned::sse(anth_sse_text_usage(text, prompt)),
            (Wire::Anthropic, false) => {
                let mut b = anth_text(text);
                b["usage"] = json!({"input_tokens": prompt, "output_tokens": 30});
                Canned::ok(b)
            }
            (Wire::OpenAi, _) => {
                let mut b = oai_text(text);
                b["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": 30});
                Canned::ok(b)
            }
            (Wire::Responses, _) => Canned::sse(with_resp_usage(resp_sse_text(text), prompt)),
        }
    }

    fn tool(&self, id: &str, input: Value, prompt: u64) -> Canned {
        match (self.wire, self.stream) {
            (Wire::Anthropic, true) => Canned::sse(anth_sse_tool_usage(id, input, prompt)),
            (Wire::Anthropic, false) => {
                let mut b = anth_tool(id, input);
                b["usage"] = json!({"input_tokens": prompt, "output_tokens": 30});
                Canned::ok(b)
            }
            (Wire::OpenAi, _) => {
                let mut b = oai_tool(id, input);
                b["usage"] = json!({"prompt_tokens": prompt, "completion_tokens": 30});
                Canned::ok(b)
            }
            (Wire::Responses, _) => Canned::sse(with_resp_usage(resp_sse_tool(id, input), prompt)),
        }
    }
}

/// A Responses stream whose completion reports `input` prompt tokens.
fn with_resp_usage(mut events: Vec<String>, input: u64) -> Vec<String> {
    let last = events.len() - 1;
    events[last] = format!(
        "event: response.completed\ndata: {}\n\n",
        json!({"type": "response.completed", "response": {"status": "completed",
               "usage": {"input_tokens": input, "output_tokens": 30}}})
    );
    events
}

struct Ran {
    code: Option<i32>,
    stderr: String,
    result: Value,
    log: Vec<Value>,
    seen: Vec<Seen>,
    model: Arc<Model>,
    _dir: tempfile::TempDir,
}

fn run(wire: Wire, stream: bool, extra: &[&str]) -> Ran {
    let model = Arc::new(Model {
        wire,
        stream,
        calls: AtomicUsize::new(0),
        refusals: AtomicUsize::new(0),
        summaries: AtomicUsize::new(0),
    });
    let m = model.clone();
    let server = FakeServer::responding(move |seen| m.answer(seen));
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_exarch"));
    cmd.arg("--headless")
        .args(wire.args())
        .args(["--model", "test-model"])
        .args(["--base-url", &server.url()])
        .args(["--output-format", "json", "--prompt", TASK])
        .args(["--max-turns", "200"])
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .args(extra)
        .current_dir(dir.path())
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("OPENAI_API_KEY", "sk-test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !stream {
        cmd.arg("--no-stream");
    }
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    // A bounded run: kill it if it hangs.
    let started = Instant::now();
    let watchdog = std::thread::spawn(move || {
        while started.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(100));
            if std::fs::metadata(format!("/proc/{pid}")).is_err() {
                return;
            }
        }
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    });
    let out = child.wait_with_output().unwrap();
    let _ = watchdog.join();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let logs = run_logs(&dir.path().join("logs"));
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = std::fs::read_to_string(&logs[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    Ran {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        result: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        log,
        seen: server.requests(),
        model,
        _dir: dir,
    }
}

/// Every tool result string of a request, either wire format, by call id.
fn results_by_id(seen: &Seen) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for item in seen.body["input"].as_array().cloned().unwrap_or_default() {
        if item["type"] == "function_call_output" {
            out.push((
                item["call_id"].as_str().unwrap_or_default().to_owned(),
                item["output"].as_str().unwrap_or_default().to_owned(),
            ));
        }
    }
    for m in seen.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            ));
        }
        for b in m["content"].as_array().cloned().unwrap_or_default() {
            if b["type"] == "tool_result" {
                out.push((
                    b["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    b["content"].as_str().unwrap_or_default().to_owned(),
                ));
            }
        }
    }
    out
}

/// The first user text of a request (the task).
fn first_user_text(seen: &Seen) -> String {
    let msgs = seen
        .body
        .get("messages")
        .or_else(|| seen.body.get("input"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let first = msgs
        .iter()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or(Value::Null);
    match &first["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks[0]["text"].as_str().unwrap_or_default().to_owned(),
        _ => String::new(),
    }
}

fn is_turn(seen: &Seen) -> bool {
    seen.body.get("tools").is_some()
}

/// What both runs must show: finished, every call made and answered, the
/// outputs several times the server's context, the task in every turn,
/// evictions that can be read back whole, a summary, and the accounting.
fn assert_finished_the_long_task(r: &Ran) {
    // The figures, for `--nocapture`.
    eprintln!(
        "long task: {} requests ({} refused), {} summaries; context {}",
        r.seen.len(),
        r.model.refusals.load(Ordering::SeqCst),
        r.model.summaries.load(Ordering::SeqCst),
        r.result["context"]
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, r.result);
    assert_eq!(r.result["result"], format!("finished after {CALLS} calls"));
    assert_eq!(r.model.calls.load(Ordering::SeqCst), CALLS + 1);
    // The outputs, each as first seen whole.
    let mut whole = std::collections::HashMap::new();
    for s in &r.seen {
        for (id, text) in results_by_id(s) {
            if !text.starts_with("[exarch evicted") {
                whole.entry(id).or_insert(text);
            }
        }
    }
    assert_eq!(
        whole.len(),
        CALLS,
        "every call's output reached the model whole"
    );
    let total: usize = whole.values().map(String::len).sum();
    let context_bytes = (LIMIT * 4) as usize;
    assert!(total > 3 * context_bytes, "{total} bytes of output");
    for (id, text) in &whole {
        assert!(text.ends_with("EXIT: 0"), "{id}: {text}");
    }
    // Every turn carried the system prompt and the task.
    for s in r.seen.iter().filter(|s| is_turn(s)) {
        assert_eq!(first_user_text(s), TASK);
    }
    // Stubs name files that hold the outputs whole.
    let mut checked = 0;
    for s in &r.seen {
        for (id, text) in results_by_id(s) {
            if let Some(rest) = text.split("kept in the file ").nth(1) {
                let path = rest.split(": read it back").next().unwrap();
                assert_eq!(std::fs::read_to_string(path).unwrap(), whole[&id], "{id}");
                assert!(text.contains(&format!("call {id} \"range ")), "{text}");
                checked += 1;
            }
        }
    }
    assert!(checked > 0, "no stub was checked");
    // Summaries were asked for, and one replaced the oldest exchanges.
    assert!(r.model.summaries.load(Ordering::SeqCst) >= 1);
    let last = r.seen.iter().rev().find(|s| is_turn(s)).unwrap();
    assert!(
        last.body.to_string().contains("[exarch: context summary]"),
        "the last turn has no summary"
    );
    // The log and the result account for it.
    let kinds: Vec<&str> = r.log.iter().map(|x| x["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"context_evicted"));
    assert!(kinds.contains(&"context_summarised"));
    let ctx = &r.result["context"];
    assert!(ctx["evicted_outputs"].as_u64().unwrap() > 0, "{ctx}");
    assert!(ctx["summaries"].as_u64().unwrap() > 0, "{ctx}");
    let exchanges = r.result["exchanges"].as_array().unwrap();
    assert_eq!(
        exchanges.iter().filter(|e| e["purpose"] == "turn").count(),
        CALLS + 1
    );
    assert!(exchanges.iter().any(|e| e["purpose"] == "summary"));
    for e in exchanges {
        assert!(e["usage"]["input_tokens"].as_u64().unwrap() > 0, "{e}");
    }
    let requests: Vec<&Value> = r.log.iter().filter(|x| x["kind"] == "request").collect();
    assert_eq!(requests.len(), exchanges.len());
    assert!(requests.iter().all(|x| x.get("cost_usd").is_some()));
}

#[test]
fn sixty_calls_over_four_contexts_finish_within_a_known_window() {
    let r = run(
        Wire::Anthropic,
        true,
        &["--context-window", &LIMIT.to_string()],
    );
    assert_finished_the_long_task(&r);
    // exarch knew the window and never sent a prompt the server refused.
    assert_eq!(r.model.refusals.load(Ordering::SeqCst), 0, "{}", r.stderr);
    assert!(r.seen.iter().all(|s| tokens(s) <= LIMIT));
    assert_eq!(r.result["context"]["window"], LIMIT);
    assert_eq!(r.result["context"]["window_source"], "flag");
    // The stable prefix carries cache breakpoints.
    let first = &r.seen[0].body;
    assert_eq!(first["system"][0]["cache_control"]["type"], "ephemeral");
    assert_eq!(first["tools"][0]["cache_control"]["type"], "ephemeral");
}

#[test]
fn a_server_smaller_than_exarch_believes_refuses_and_exarch_compacts_and_retries() {
    // exarch is told 100,000 tokens; the server holds 30,000.
    let r = run(Wire::OpenAi, false, &["--context-window", "100000"]);
    assert_finished_the_long_task(&r);
    assert!(r.model.refusals.load(Ordering::SeqCst) >= 1);
    assert_eq!(r.result["context"]["window"], LIMIT, "{}", r.result);
    assert_eq!(r.result["context"]["window_source"], "learned");
    let kinds: Vec<&str> = r.log.iter().map(|x| x["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"context_refused"));
    // A refused request is retried, never re-sent unchanged.
    for pair in r.seen.windows(2) {
        if tokens(&pair[0]) > LIMIT {
            assert!(tokens(&pair[1]) < tokens(&pair[0]));
        }
    }
}

#[test]
fn an_anthropic_refusal_to_a_streaming_request_is_not_a_streaming_fallback() {
    let r = run(Wire::Anthropic, true, &["--context-window", "100000"]);
    assert_finished_the_long_task(&r);
    assert!(r.model.refusals.load(Ordering::SeqCst) >= 1);
    // Every request after the refusal still streamed.
    assert!(
        r.seen.iter().all(|s| s.body["stream"] == true),
        "a request fell back to plain"
    );
}

#[test]
fn the_responses_api_streams_its_refusal_and_exarch_compacts_and_retries() {
    let r = run(Wire::Responses, true, &["--context-window", "100000"]);
    assert_finished_the_long_task(&r);
    assert!(r.model.refusals.load(Ordering::SeqCst) >= 1);
    // The streamed refusal names no limit: the window shrank until the
    // prompts fit.
    assert_eq!(r.result["context"]["window_source"], "learned");
    assert!(r.result["context"]["window"].as_u64().unwrap() < 100_000);
    assert!(r.seen.iter().all(|s| s.body["stream"] == true));
}
