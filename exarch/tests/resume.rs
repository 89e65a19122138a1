//! Resuming across processes: one exarch process runs (to completion, or
//! until it is killed mid-call), then a second process resumes the run
//! from its log against another fake server, and the first request that
//! server receives is checked: the conversation restored, a fresh shell,
//! and one message telling the model which bindings and workers no longer
//! exist. Both processes write the same log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const NOTICE: &str = "[exarch: this session was resumed]";

fn exarch(server: &FakeServer, dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_exarch"));
    cmd.args([
        "--headless",
        "--provider",
        "anthropic",
        "--model",
        "test-model",
    ])
    .args(["--base-url", &server.url(), "--no-stream"])
    .args(["--output-format", "json"])
    .arg("--log-dir")
    .arg(dir.join("logs"))
    .args(extra)
    .current_dir(dir.join("ws"))
    .env_remove("ANTHROPIC_BASE_URL")
    .env("ANTHROPIC_API_KEY", "sk-test")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    cmd
}

fn finished(out: Output) -> (Option<i32>, Value, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code(),
        serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        stderr,
    )
}

fn place() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("ws")).unwrap();
    (tmp, root)
}

fn log_records(dir: &Path) -> (PathBuf, Vec<Value>) {
    let logs = run_logs(&dir.join("logs"));
    assert_eq!(logs.len(), 1, "one run, one log: {logs:?}");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    let recs = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (logs[0].clone(), recs)
}

fn kinds(recs: &[Value]) -> Vec<&str> {
    recs.iter().map(|r| r["kind"].as_str().unwrap()).collect()
}

#[test]
fn a_finished_run_continues_in_a_second_process_with_a_fresh_shell() {
    let (_tmp, dir) = place();
    let first = FakeServer::start(vec![
        Canned::ok(anth_tool(
            "c1",
            json!({"cmd": "let answer = 41\nlet web = service 'web server' { sleep 60 }\nmkdir sub\ncd sub\nreturn 'ready'",
                   "description": "Setting up"}),
        )),
        Canned::ok(anth_text("Set up.")),
    ]);
    let (code, one, err) = finished(
        exarch(&first, &dir, &["--prompt", "set things up"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(one["result"], "Set up.");

    let second = FakeServer::start(vec![Canned::ok(anth_text("The shell is new."))]);
    let (code, two, err) = finished(
        exarch(
            &second,
            &dir,
            &["--continue", "--prompt", "what is answer + 1?"],
        )
        .output()
        .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(two["result"], "The shell is new.");
    assert_eq!(two["session_log"], one["session_log"], "the same log");
    assert!(err.contains("resumed run"), "{err}");

    // The request the second server received.
    let seen = second.requests();
    assert_eq!(seen.len(), 1);
    let msgs = seen[0].body["messages"].as_array().unwrap().clone();
    assert_eq!(msgs.len(), 5, "{msgs:#?}");
    assert_eq!(msgs[0]["content"][0]["text"], "set things up");
    assert_eq!(msgs[1]["role"], "assistant");
    assert_eq!(msgs[1]["content"][1]["type"], "tool_use");
    assert_eq!(msgs[1]["content"][1]["id"], "c1");
    assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
    assert_eq!(msgs[2]["content"][0]["content"], "VALUE:\nready\n\nEXIT: 0");
    assert_eq!(msgs[3]["role"], "assistant");
    assert_eq!(msgs[3]["content"][0]["text"], "Set up.");
    let last = &msgs[4];
    assert_eq!(last["role"], "user");
    let notice = last["content"][0]["text"].as_str().unwrap();
    assert!(notice.starts_with(NOTICE), "{notice}");
    assert!(notice.contains("`answer` (Integer)"), "{notice}");
    assert!(notice.contains("`web`"), "{notice}");
    assert!(notice.contains("w1 (service: web server)"), "{notice}");
    let ws = dir.join("ws");
    assert!(
        notice.contains(&format!(
            "is {} again (the old shell had moved to {})",
            ws.display(),
            ws.join("sub").display()
        )),
        "{notice}"
    );
    assert_eq!(last["content"][1]["text"], "what is answer + 1?");
    // The system prompt and the tool are sent afresh.
    assert!(seen[0].body["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains("# Your tool"));
    assert_eq!(seen[0].body["tools"][0]["name"], "ral");

    // One log, both processes: started, ended, resumed, the notice, ended.
    let (_, recs) = log_records(&dir);
    let k = kinds(&recs);
    let at = |kind: &str| k.iter().position(|x| *x == kind).unwrap();
    assert_eq!(k[0], "session_started");
    assert!(at("session_ended") < at("session_resumed"), "{k:?}");
    assert!(at("session_resumed") < at("resumed"), "{k:?}");
    assert_eq!(k.last(), Some(&"session_ended"));
    assert_eq!(k.iter().filter(|x| **x == "session_ended").count(), 2);
    let resumed = recs.iter().find(|r| r["kind"] == "resumed").unwrap();
    assert_eq!(resumed["text"], notice);
}

/// Waits until `server` has seen `n` requests, then a little more.
fn wait_for_requests(server: &FakeServer, n: usize) {
    let started = Instant::now();
    while server.requests().len() < n {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no request came"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
}

fn kill(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

#[test]
fn a_run_killed_mid_call_resumes_by_name_and_the_call_gets_an_answer() {
    let (_tmp, dir) = place();
    let first = FakeServer::start(vec![Canned::ok(anth_tool(
        "c1",
        json!({"cmd": "let kept = 1\nlet spin = { |n| spin $[$n + 1] }\nspin 0",
               "description": "Spinning", "timeout_secs": 600}),
    ))]);
    let mut child = exarch(&first, &dir, &["--prompt", "spin for a while"])
        .spawn()
        .unwrap();
    wait_for_requests(&first, 1);
    kill(&mut child);
    let (log, recs) = log_records(&dir);
    assert!(
        !kinds(&recs).contains(&"session_ended"),
        "{:?}",
        kinds(&recs)
    );
    // The process died mid-write, as far as the log can tell.
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{\"kind\": \"tool_ca");
    std::fs::write(&log, text).unwrap();
    let run = log
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();

    // No prompt: the model is told to go on.
    let second = FakeServer::start(vec![Canned::ok(anth_text("Going on."))]);
    let (code, two, err) = finished(exarch(&second, &dir, &["--resume", &run]).output().unwrap());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(two["result"], "Going on.");
    assert!(err.contains("1 unreadable log lines skipped"), "{err}");
    let msgs = second.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(msgs.len(), 3, "{msgs:#?}");
    assert_eq!(msgs[1]["content"][1]["id"], "c1");
    let answer = &msgs[2]["content"][0];
    assert_eq!(answer["type"], "tool_result");
    assert_eq!(answer["tool_use_id"], "c1");
    assert_eq!(answer["is_error"], true);
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .contains("exarch stopped while this call was running"),
        "{answer}"
    );
    let notice = msgs[2]["content"][1]["text"].as_str().unwrap();
    assert!(notice.starts_with(NOTICE), "{notice}");
    assert!(notice.contains("stopped during call c1"), "{notice}");
    assert!(
        notice.contains("continue the task where it stopped"),
        "{notice}"
    );
    // The answer is in the log, so a third process would see it too.
    let (_, recs) = log_records(&dir);
    let answered = recs
        .iter()
        .find(|r| r["kind"] == "tool_call" && r["id"] == "c1")
        .unwrap();
    assert_eq!(answered["not_run"], true);
}

#[test]
fn a_run_resumes_from_another_directory_by_its_path_and_appends() {
    let (_tmp, dir) = place();
    let first = FakeServer::start(vec![Canned::ok(anth_text("One."))]);
    let (code, one, err) = finished(
        exarch(&first, &dir, &["--prompt", "say one"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    let log = PathBuf::from(one["session_log"].as_str().unwrap());
    let elsewhere = dir.join("ws").join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let second = FakeServer::start(vec![Canned::ok(anth_text("Two."))]);
    let out = exarch(
        &second,
        &dir,
        &["--resume", log.to_str().unwrap(), "--prompt", "say two"],
    )
    .current_dir(&elsewhere)
    .output()
    .unwrap();
    let (code, two, err) = finished(out);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(two["session_log"], one["session_log"]);
    let msgs = second.requests()[0].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(msgs[0]["content"][0]["text"], "say one");
    assert_eq!(msgs[1]["content"][0]["text"], "One.");
    let notice = msgs[2]["content"][0]["text"].as_str().unwrap();
    assert!(
        notice.contains("No bindings of the earlier calls"),
        "{notice}"
    );
    assert!(
        notice.contains(&format!(
            "The working directory is {}.",
            elsewhere.display()
        )),
        "{notice}"
    );
    assert_eq!(msgs[2]["content"][1]["text"], "say two");
}

#[test]
fn nothing_to_continue_is_a_usage_error() {
    let (_tmp, dir) = place();
    let server = FakeServer::start(vec![]);
    let (code, result, err) = finished(
        exarch(&server, &dir, &["--continue", "--prompt", "go on"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no run to continue"), "{err}");
    assert_eq!(result["is_error"], true);
    let (code, _, err) = finished(
        exarch(&server, &dir, &["--resume", "no-such-run"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no run named no-such-run"), "{err}");
    assert!(server.requests().is_empty());
}

/// A request's messages with the cache marks taken out (they move with
/// the conversation's end).
fn unmarked(body: &Value) -> Vec<Value> {
    let mut msgs = body["messages"].as_array().cloned().unwrap_or_default();
    for m in &mut msgs {
        if let Some(blocks) = m["content"].as_array_mut() {
            for b in blocks {
                if let Some(o) = b.as_object_mut() {
                    o.remove("cache_control");
                }
            }
        }
    }
    msgs
}

#[test]
fn a_compacted_conversation_resumes_exactly_as_the_model_last_saw_it() {
    let (_tmp, dir) = place();
    // Twelve calls of ~3 KB against an 8,192-token window: evictions and
    // a summary happen in the first process.
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let first = FakeServer::responding(move |seen| {
        if seen.body.get("tools").is_none() {
            return Canned::ok(anth_text("Summary: twelve seq calls so far."));
        }
        let n = c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if n < 12 {
            let start = 100_000 + n * 1000;
            Canned::ok(anth_tool(
                &format!("c{n}"),
                json!({"cmd": format!("seq {start} {}", start + 450), "description": format!("range {n}")}),
            ))
        } else {
            Canned::ok(anth_text("finished"))
        }
    });
    let (code, _, err) = finished(
        exarch(
            &first,
            &dir,
            &["--prompt", "print ranges", "--context-window", "8192"],
        )
        .output()
        .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    let (_, recs) = log_records(&dir);
    let k = kinds(&recs);
    assert!(
        k.contains(&"context_evicted") && k.contains(&"context_summarised"),
        "{k:?}"
    );

    let second = FakeServer::start(vec![Canned::ok(anth_text("ok"))]);
    let (code, _, err) = finished(
        exarch(
            &second,
            &dir,
            &[
                "--continue",
                "--prompt",
                "and now?",
                "--context-window",
                "8192",
            ],
        )
        .output()
        .unwrap(),
    );
    assert_eq!(code, Some(0), "{err}");
    // What the first model saw last, plus its final answer, is what the
    // second model sees before the notice.
    let last_turn = first
        .requests()
        .into_iter()
        .filter(|s| s.body.get("tools").is_some())
        .last()
        .unwrap();
    let mut expected = unmarked(&last_turn.body);
    expected.push(json!({"role": "assistant", "content": [{"type": "text", "text": "finished"}]}));
    let got = unmarked(&second.requests()[0].body);
    assert_eq!(got.len(), expected.len() + 1, "{got:#?}");
    assert_eq!(got[..expected.len()], expected[..]);
    let tail = got.last().unwrap();
    assert!(tail["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with(NOTICE));
    assert!(tail["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("Evicted outputs are still in their files."));
    // The wire merges the task and the summary after it into one user
    // message.
    assert_eq!(got[0]["content"][0]["text"], "print ranges");
    assert!(got[0]["content"][1]["text"]
        .as_str()
        .unwrap()
        .starts_with("[exarch: context summary]"));
}
