//! End-to-end: the real `exarch` binary, headless, against the fake server
//! on 127.0.0.1, in both wire formats, streaming and not. Every run is
//! bounded: a run that does not exit in time is killed and the test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const SECRET: &str = "sk-test-secret-value";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    log: Vec<Value>,
    _dir: tempfile::TempDir,
}

impl Run {
    fn json(&self) -> Value {
        let lines: Vec<&str> = self
            .stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert_eq!(
            lines.len(),
            1,
            "stdout must be one JSON object:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }

    fn log_kinds(&self) -> Vec<String> {
        self.log
            .iter()
            .map(|r| r["kind"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

fn spawn(
    server: &FakeServer,
    wire: Wire,
    stream: bool,
    extra: &[&str],
    dir: &tempfile::TempDir,
) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_exarch"));
    cmd.arg("--headless")
        .args(wire.args())
        .args(["--model", "test-model"])
        .args(["--base-url", &server.url()])
        .args(["--output-format", "json"])
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .args(extra)
        .current_dir(dir.path())
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_BASE_URL")
        .env("ANTHROPIC_API_KEY", SECRET)
        .env("OPENAI_API_KEY", SECRET)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !stream {
        cmd.arg("--no-stream");
    }
    cmd.spawn().expect("spawn exarch")
}

fn finish(mut child: Child, limit: Duration, dir: tempfile::TempDir) -> Run {
    let started = Instant::now();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = t_err.join().unwrap_or_default();
            panic!("exarch did not exit within {limit:?}; stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    let stdout = t_out.join().unwrap();
    let stderr = t_err.join().unwrap();
    let log = read_log(&dir.path().join("logs"));
    Run {
        code,
        stdout,
        stderr,
        elapsed,
        log,
        _dir: dir,
    }
}

fn read_log(dir: &std::path::Path) -> Vec<Value> {
    let files = run_logs(dir);
    assert!(files.len() <= 1, "one log per run: {files:?}");
    files
        .first()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        })
        .unwrap_or_default()
}

fn run(server: &FakeServer, wire: Wire, stream: bool, extra: &[&str], limit: Duration) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(server, wire, stream, extra, &dir);
    finish(child, limit, dir)
}

const MODES: [(Wire, bool); 6] = [
    (Wire::Anthropic, true),
    (Wire::Anthropic, false),
    (Wire::OpenAi, true),
    (Wire::OpenAi, false),
    (Wire::Responses, true),
    (Wire::Responses, false),
];

const PATIENCE: Duration = Duration::from_secs(30);

#[test]
fn a_binding_made_in_call_one_is_read_in_call_two() {
    for (wire, stream) in MODES {
        let server = FakeServer::start(vec![
            wire.ral(stream, "c1", "let n = 41\necho started"),
            wire.ral(stream, "c2", "return $[$n + 1]"),
            wire.text(stream, "The answer is 42."),
        ]);
        let r = run(
            &server,
            wire,
            stream,
            &["--prompt", "add one to 41"],
            PATIENCE,
        );
        let j = r.json();
        assert_eq!(r.code, Some(0), "{wire:?} {stream}: {}", r.stderr);
        assert_eq!(j["type"], "result");
        assert_eq!(j["is_error"], false);
        assert_eq!(j["result"], "The answer is 42.");
        assert_eq!(j["stop_reason"], "end_turn");
        assert_eq!(j["num_turns"], 3);
        assert!(j["duration_ms"].as_u64().is_some());
        assert!(j.get("total_cost_usd").is_some());
        let usage = &j["usage"];
        assert_eq!(usage["output_tokens"], 15, "{usage}");
        assert!(usage["input_tokens"].as_u64().unwrap() >= 27, "{usage}");
        assert_eq!(usage["cache_read_input_tokens"], 3, "{usage}");
        let cache_writes = if wire == Wire::Anthropic { 6 } else { 0 };
        assert_eq!(
            usage["cache_creation_input_tokens"], cache_writes,
            "{usage}"
        );
        let seen = server.requests();
        assert_eq!(seen.len(), 3);
        assert_eq!(
            seen[1].tool_results(),
            vec!["STDOUT:\nstarted\n\nEXIT: 0".to_owned()]
        );
        assert_eq!(seen[2].tool_results()[1], "VALUE:\n42\n\nEXIT: 0");
        // The system prompt tells the truths.
        let system = wire.system_of(&seen[0].body);
        assert!(system.contains("their bindings are still bound"));
        // The session log: bookends, usage per request, the exact results.
        let kinds = r.log_kinds();
        assert_eq!(
            kinds.first().map(String::as_str),
            Some("session_started"),
            "{kinds:?}"
        );
        assert_eq!(
            kinds.last().map(String::as_str),
            Some("session_ended"),
            "{kinds:?}"
        );
        assert_eq!(kinds.iter().filter(|k| *k == "request").count(), 3);
        let logged: Vec<&str> = r
            .log
            .iter()
            .filter(|x| x["kind"] == "tool_call")
            .map(|x| x["result"].as_str().unwrap())
            .collect();
        assert_eq!(
            logged,
            vec!["STDOUT:\nstarted\n\nEXIT: 0", "VALUE:\n42\n\nEXIT: 0"]
        );
        assert_eq!(r.log[0]["model"], "test-model");
        assert_eq!(r.log[0]["provider"], wire.name());
        let api = match wire {
            Wire::Anthropic => "messages",
            Wire::OpenAi => "chat-completions",
            Wire::Responses => "responses",
        };
        assert_eq!(r.log[0]["api"], api);
        let path = match wire {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Responses => "/v1/responses",
        };
        assert!(seen.iter().all(|s| s.path == path), "{wire:?}");
        assert!(r.stderr.contains("[tool: ral] a step"), "{}", r.stderr);
    }
}

#[test]
fn a_failed_call_keeps_what_landed_and_the_next_call_reads_it() {
    for (wire, stream) in MODES {
        let server = FakeServer::start(vec![
            wire.ral(
                stream,
                "c1",
                "let before = 7\nfail [status: 3, message: 'boom']\nlet after = 8",
            ),
            wire.ral(stream, "c2", "return $before"),
            wire.text(stream, "Recovered."),
        ]);
        let r = run(&server, wire, stream, &["--prompt", "go"], PATIENCE);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let seen = server.requests();
        let failed = &seen[1].tool_results()[0];
        assert!(failed.contains("boom"), "{failed}");
        assert!(
            failed.contains("their bindings are still bound"),
            "{failed}"
        );
        assert!(failed.contains("did not run"), "{failed}");
        assert!(failed.ends_with("EXIT: 3"), "{failed}");
        assert_eq!(seen[2].tool_results()[1], "VALUE:\n7\n\nEXIT: 0");
    }
}

#[test]
fn detached_worker_cannot_outlive_turn_completion() {
    for (wire, stream) in MODES {
        let server = FakeServer::start(vec![
            wire.ral(
                stream,
                "c1",
                "let forever = { |n| forever $[$n + 1] }\nlet h = spawn { forever 0 }\nreturn 'started'",
            ),
            wire.text(stream, "The worker is running."),
        ]);
        let r = run(
            &server,
            wire,
            stream,
            &["--prompt", "start a server"],
            Duration::from_secs(20),
        );
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.elapsed < Duration::from_secs(15), "{:?}", r.elapsed);
        let j = r.json();
        assert_eq!(j["result"], "The worker is running.");
        assert_eq!(
            server.requests()[1].tool_results()[0],
            "VALUE:\nstarted\n\nEXIT: 0"
        );
        assert!(r.log_kinds().contains(&"session_ended".to_owned()));
    }
}

#[test]
fn a_worker_running_an_external_program_does_not_hold_the_run() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![
        wire.ral(true, "c1", "let h = spawn { sleep 1000 }\nreturn 'started'"),
        wire.text(true, "Started."),
    ]);
    let r = run(
        &server,
        wire,
        true,
        &["--prompt", "start"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        server.requests()[1].tool_results()[0],
        "VALUE:\nstarted\n\nEXIT: 0"
    );
    assert!(r.elapsed < Duration::from_secs(10), "{:?}", r.elapsed);
}

/// Whether process `pid` is running (not gone, not a zombie).
fn process_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let (_, rest) = s.rsplit_once(')')?;
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Kills a process the test started through exarch, even if the test fails.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", &self.0.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

#[test]
fn a_detached_process_outlives_the_run() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![
        wire.ral(
            true,
            "c1",
            "let receipt = detach 'a sleeper' sh -c 'exec sleep 30'\n\
             echo $receipt[pid] > survivor.pid\n\
             return 'launched'",
        ),
        wire.text(true, "Left a sleeper running."),
    ]);
    let r = run(
        &server,
        wire,
        true,
        &["--prompt", "leave something running"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // The survivor held none of exarch's streams: the run ended promptly.
    assert!(r.elapsed < Duration::from_secs(10), "{:?}", r.elapsed);
    assert_eq!(r.json()["result"], "Left a sleeper running.");
    assert_eq!(
        server.requests()[1].tool_results()[0],
        "VALUE:\nlaunched\n\nEXIT: 0"
    );
    let pid_file = r._dir.path().join("survivor.pid");
    let started = Instant::now();
    let pid = loop {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if let Ok(pid) = text.trim().parse::<u32>() {
            break pid;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the detached program never wrote its pid"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let _cleanup = KillOnDrop(pid);
    assert!(process_alive(pid), "the detached process died with the run");
    // The receipt names the envelope (§12.6): where the OS sandbox gives
    // the survivor namespaces of its own, the program is a descendant of
    // it; otherwise it is the program itself.
    let program = survivor_program(pid);
    assert!(
        process_alive(program),
        "the detached program died with the run"
    );
    let cmdline = std::fs::read(format!("/proc/{program}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&cmdline).starts_with("sleep"),
        "{cmdline:?}"
    );
    // Born from the shell's environment, which never held the key.
    let environ = std::fs::read(format!("/proc/{program}/environ")).unwrap();
    assert!(!String::from_utf8_lossy(&environ).contains(SECRET));
}

/// The program a detach receipt's pid leads to: the first process below it
/// that is not one of the sandbox's own (which are copies of exarch).
fn survivor_program(pid: u32) -> u32 {
    let mut at = pid;
    for _ in 0..4 {
        let cmdline = std::fs::read(format!("/proc/{at}/cmdline")).unwrap_or_default();
        if !String::from_utf8_lossy(&cmdline).contains("exarch") {
            return at;
        }
        let children =
            std::fs::read_to_string(format!("/proc/{at}/task/{at}/children")).unwrap_or_default();
        match children
            .split_whitespace()
            .next()
            .and_then(|c| c.parse().ok())
        {
            Some(c) => at = c,
            None => return at,
        }
    }
    at
}

#[test]
fn a_call_wall_stops_the_call_and_the_run_goes_on() {
    for (wire, stream) in MODES {
        let server = FakeServer::start(vec![
            wire.tool(
                stream,
                "c1",
                json!({"cmd": "let kept = 1\nlet spin = { |n| spin $[$n + 1] }\nspin 0", "timeout_secs": 1}),
            ),
            wire.ral(stream, "c2", "return $kept"),
            wire.text(stream, "Done."),
        ]);
        let r = run(&server, wire, stream, &["--prompt", "spin"], PATIENCE);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let seen = server.requests();
        let walled = &seen[1].tool_results()[0];
        assert!(walled.contains("wall of 1s"), "{walled}");
        assert!(walled.contains("still bound"), "{walled}");
        assert!(walled.ends_with("EXIT: 124"), "{walled}");
        assert_eq!(seen[2].tool_results()[1], "VALUE:\n1\n\nEXIT: 0");
    }
}

#[test]
fn the_run_wall_ends_a_stuck_run_with_its_result() {
    let wire = Wire::OpenAi;
    let server = FakeServer::start(vec![wire.tool(
        false,
        "c1",
        json!({"cmd": "let spin = { |n| spin $[$n + 1] }\nspin 0", "timeout_secs": 600}),
    )]);
    let r = run(
        &server,
        wire,
        false,
        &["--prompt", "spin", "--max-wall", "2"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(10), "{:?}", r.elapsed);
    let j = r.json();
    assert_eq!(j["is_error"], true);
    assert_eq!(j["stop_reason"], "max_wall");
    assert!(j["error"].as_str().unwrap().contains("max-wall"));
}

#[test]
fn the_run_wall_also_bounds_a_silent_provider() {
    let server = FakeServer::start(vec![Canned::Delay(
        Duration::from_secs(30),
        Box::new(Canned::ok(anth_text("late"))),
    )]);
    let r = run(
        &server,
        Wire::Anthropic,
        false,
        &["--prompt", "hi", "--max-wall", "1"],
        Duration::from_secs(20),
    );
    assert_eq!(r.code, Some(124), "{}", r.stderr);
    assert_eq!(r.json()["stop_reason"], "max_wall");
}

#[test]
fn malformed_tool_input_answers_the_model_and_never_runs() {
    for (wire, stream) in [
        (Wire::Anthropic, true),
        (Wire::OpenAi, true),
        (Wire::Responses, false),
    ] {
        let bad = match wire {
            // Anthropic: an input without `cmd`.
            Wire::Anthropic => wire.tool(stream, "c1", json!({"command": "let x = 1"})),
            // OpenAI: arguments that are not JSON at all.
            Wire::OpenAi => Canned::ok(
                json!({"choices": [{"index": 0, "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "ral", "arguments": "{\"cmd\": "}}]}}]}),
            ),
            Wire::Responses => Canned::ok(
                json!({"status": "completed", "output": [{"type": "function_call",
                "call_id": "c1", "name": "ral", "arguments": "{\"cmd\": "}]}),
            ),
        };
        let server = FakeServer::start(vec![
            bad,
            wire.tool(stream, "c2", json!({"cmd": "1", "description": "x"})),
            wire.text(stream, "Sorry."),
        ]);
        let r = run(&server, wire, stream, &["--prompt", "go"], PATIENCE);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let seen = server.requests();
        let answer = &seen[1].tool_results()[0];
        assert!(answer.starts_with("tool input error: "), "{answer}");
        assert!(!answer.contains("EXIT"), "{answer}");
        if wire == Wire::Anthropic {
            let block = seen[1].body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                .find(|b| b["type"] == "tool_result")
                .unwrap();
            assert_eq!(block["is_error"], true);
        }
        let logged = r.log.iter().find(|x| x["kind"] == "tool_call").unwrap();
        assert_eq!(logged["is_error"], true);
        assert_eq!(logged["result"].as_str(), Some(answer.as_str()));
    }
}

#[test]
fn sigterm_writes_an_interrupted_result() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![wire.tool(
        false,
        "c1",
        json!({"cmd": "let spin = { |n| spin $[$n + 1] }\nspin 0", "timeout_secs": 600}),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let child = spawn(&server, wire, false, &["--prompt", "spin"], &dir);
    // Wait until the call is running (the server has answered).
    let started = Instant::now();
    while server.requests().is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let r = finish(child, Duration::from_secs(20), dir);
    assert_eq!(r.code, Some(143), "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["stop_reason"], "interrupted");
    assert_eq!(j["is_error"], true);
}

#[test]
fn usage_errors_exit_two_with_a_result() {
    let server = FakeServer::start(vec![]);
    let r = run(
        &server,
        Wire::Anthropic,
        true,
        &["--prompt", "   "],
        PATIENCE,
    );
    assert_eq!(r.code, Some(2));
    assert_eq!(r.json()["is_error"], true);
    assert!(server.requests().is_empty());
}

#[test]
fn provider_errors_exit_one_with_the_error() {
    let server = FakeServer::start(vec![Canned::status(
        401,
        json!({"error": {"message": "invalid key"}}),
    )]);
    let r = run(&server, Wire::OpenAi, false, &["--prompt", "hi"], PATIENCE);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["is_error"], true);
    assert_eq!(j["stop_reason"], "error");
    assert!(j["error"].as_str().unwrap().contains("invalid key"));
    assert!(r.log_kinds().contains(&"error".to_owned()));
}

#[test]
fn the_key_never_reaches_the_shell() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![
        wire.ral(false, "c1", "return !{env}"),
        wire.text(false, "ok"),
    ]);
    let r = run(&server, wire, false, &["--prompt", "env"], PATIENCE);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let seen = server.requests();
    assert_eq!(seen[0].header("x-api-key"), Some(SECRET));
    let result = &seen[1].tool_results()[0];
    assert!(
        result.contains("VALUE:") && result.contains("PATH"),
        "env did not run: {result}"
    );
    assert!(!result.contains(SECRET), "the key leaked: {result}");
    assert!(!result.contains("ANTHROPIC_API_KEY"), "{result}");
}

#[test]
fn max_turns_ends_the_run_as_an_error() {
    let wire = Wire::OpenAi;
    let server = FakeServer::start(vec![
        wire.ral(false, "c1", "let a = 1"),
        wire.ral(false, "c2", "let b = 2"),
    ]);
    let r = run(
        &server,
        wire,
        false,
        &["--prompt", "go", "--max-turns", "2"],
        PATIENCE,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["stop_reason"], "max_turns");
    assert_eq!(j["num_turns"], 2);
}

#[test]
fn text_output_prints_only_the_final_reply() {
    let wire = Wire::OpenAi;
    let server = FakeServer::start(vec![
        wire.ral(true, "c1", "echo noise"),
        wire.text(true, "Only this."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_exarch"));
    let out = cmd
        .args([
            "--headless",
            "--provider",
            "openai",
            "--base-url",
            &server.url(),
            "--prompt",
            "go",
        ])
        .arg("--log-dir")
        .arg(dir.path())
        .env("OPENAI_API_KEY", SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Only this.\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[tool: ral] a step — echo noise"), "{err}");
    assert!(err.contains("[turn 2]"), "{err}");
}

#[test]
fn interactive_line_mode_chats_clears_and_quits() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![
        wire.ral(true, "c1", "let mark = 5"),
        wire.text(true, "Bound it."),
        wire.ral(true, "c2", "return $mark"),
        wire.text(true, "Gone after clear."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_exarch"))
        .args(["--provider", "anthropic", "--base-url", &server.url()])
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .env("ANTHROPIC_API_KEY", SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"bind something\n/resources\n/clear\nread it back\n/bogus\n/quit\n")
            .unwrap();
    }
    let r = finish(child, PATIENCE, dir);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("Bound it."), "{}", r.stdout);
    assert!(r.stdout.contains("● a step"), "{}", r.stdout);
    assert!(r.stdout.contains("calls"), "{}", r.stdout);
    assert!(
        r.stdout.contains("(conversation and shell cleared)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("unknown command /bogus"), "{}", r.stdout);
    // After /clear the binding is gone (a type error: nothing ran) and the
    // conversation restarted.
    let seen = server.requests();
    assert_eq!(seen.len(), 4);
    let after_clear = &seen[3].tool_results()[0];
    assert!(
        after_clear.starts_with("ERROR (type error"),
        "{after_clear}"
    );
    assert_eq!(seen[2].body["messages"].as_array().unwrap().len(), 1);
    assert!(r.log_kinds().contains(&"cleared".to_owned()));
}

#[test]
fn the_log_keeps_each_calls_evidence_and_the_model_never_sees_it() {
    for (wire, stream) in [(Wire::Anthropic, false), (Wire::OpenAi, true)] {
        let cmd = "sh -c 'echo ran'\necho data > notes.txt\ntry { echo no > /usr/exarch-evidence-test.txt } { |e| () }";
        let server = FakeServer::start(vec![
            wire.ral(stream, "c1", cmd),
            wire.ral(stream, "c2", "return 2"),
            wire.text(stream, "Done."),
        ]);
        let r = run(&server, wire, stream, &["--prompt", "go"], PATIENCE);
        assert_eq!(r.code, Some(0), "{wire:?} {stream}: {}", r.stderr);
        // What the model read is the call's result and nothing of the trail.
        let seen = server.requests();
        assert_eq!(
            seen[1].tool_results(),
            vec!["STDOUT:\nran\n\nEXIT: 0".to_owned()]
        );
        // Each tool_call record is followed by its call's evidence.
        let kinds = r.log_kinds();
        let calls: Vec<usize> = kinds
            .iter()
            .enumerate()
            .filter(|(_, k)| *k == "tool_call")
            .map(|(i, _)| i)
            .collect();
        assert_eq!(calls.len(), 2, "{kinds:?}");
        for i in &calls {
            assert_eq!(kinds[i + 1], "evidence", "{kinds:?}");
            assert_eq!(r.log[i + 1]["id"], r.log[*i]["id"]);
        }
        let ev = &r.log[calls[0] + 1];
        assert_eq!(ev["id"], "c1");
        let commands = ev["commands"].as_array().unwrap();
        assert_eq!(commands.len(), 1, "{ev}");
        assert_eq!(commands[0]["argv"], json!(["sh", "-c", "echo ran"]));
        assert_eq!(commands[0]["status"], 0);
        assert!(commands[0].get("stdout").is_none());
        let writes = ev["writes"].as_array().unwrap();
        assert_eq!(writes.len(), 2, "{ev}");
        assert!(writes[0]["path"].as_str().unwrap().ends_with("/notes.txt"));
        assert_eq!(writes[0]["outcome"], "committed");
        assert_eq!(writes[1]["path"], "/usr/exarch-evidence-test.txt");
        assert_eq!(writes[1]["outcome"], "failed");
        let denials = ev["denials"].as_array().unwrap();
        assert_eq!(denials.len(), 1, "{ev}");
        assert_eq!(denials[0]["resource"], "fs");
        assert_eq!(denials[0]["fields"]["op"], "write");
        assert_eq!(
            denials[0]["fields"]["path"],
            "/usr/exarch-evidence-test.txt"
        );
        // A call that only computes attests nothing.
        let quiet = &r.log[calls[1] + 1];
        assert_eq!(quiet["commands"], json!([]));
        assert_eq!(quiet["writes"], json!([]));
        assert_eq!(quiet["denials"], json!([]));
    }
}

#[test]
fn agents_md_from_the_repository_root_down_joins_the_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("repo");
    let sub = root.join("pkg");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "ROOT RULE: use tabs.\n").unwrap();
    std::fs::write(sub.join("AGENTS.md"), "PKG RULE: run make check.\n").unwrap();
    let system_of = |extra: &[&str]| -> String {
        let server = FakeServer::start(vec![Wire::OpenAi.text(false, "ok")]);
        let out = Command::new(env!("CARGO_BIN_EXE_exarch"))
            .args(["--headless", "--provider", "openai", "--no-stream"])
            .args(["--base-url", &server.url(), "--prompt", "hi"])
            .arg("--log-dir")
            .arg(dir.path().join("logs"))
            .args(extra)
            .current_dir(&sub)
            .env("OPENAI_API_KEY", SECRET)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.requests()[0].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let system = system_of(&[]);
    let root_at = system
        .find(&format!("## {}", root.join("AGENTS.md").display()))
        .unwrap_or_else(|| panic!("{system}"));
    let sub_at = system
        .find(&format!("## {}", sub.join("AGENTS.md").display()))
        .unwrap_or_else(|| panic!("{system}"));
    assert!(root_at < sub_at, "the nearest file comes last");
    assert!(system.contains("ROOT RULE") && system.contains("PKG RULE"));
    // The persona and the guide are still first.
    assert!(system.starts_with("You are exarch"), "{system}");
    let without = system_of(&["--no-project-instructions"]);
    assert!(!without.contains("ROOT RULE") && !without.contains("# Project instructions"));
}

#[test]
fn the_model_picks_the_responses_api_unless_told_otherwise() {
    // A Codex model is served by Responses only: auto picks it.
    let server = FakeServer::start(vec![Wire::Responses.text(true, "hi")]);
    let out = Command::new(env!("CARGO_BIN_EXE_exarch"))
        .args([
            "--headless",
            "--provider",
            "openai",
            "--model",
            "gpt-5-codex",
        ])
        .args(["--base-url", &server.url(), "--prompt", "hi"])
        .arg("--log-dir")
        .arg(tempfile::tempdir().unwrap().path())
        .env("OPENAI_API_KEY", SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests()[0].path, "/v1/responses");
    // Another model gets Chat Completions, and the flag overrides.
    for (model, api, path) in [
        ("gpt-4.1", "auto", "/v1/chat/completions"),
        ("gpt-5-codex", "chat", "/v1/chat/completions"),
        ("gpt-4.1", "responses", "/v1/responses"),
    ] {
        let wire = if path == "/v1/responses" {
            Wire::Responses
        } else {
            Wire::OpenAi
        };
        let server = FakeServer::start(vec![wire.text(false, "hi")]);
        let out = Command::new(env!("CARGO_BIN_EXE_exarch"))
            .args([
                "--headless",
                "--provider",
                "openai",
                "--no-stream",
                "--model",
                model,
            ])
            .args([
                "--openai-api",
                api,
                "--base-url",
                &server.url(),
                "--prompt",
                "hi",
            ])
            .arg("--log-dir")
            .arg(tempfile::tempdir().unwrap().path())
            .env("OPENAI_API_KEY", SECRET)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{model} {api}");
        assert_eq!(server.requests()[0].path, path, "{model} {api}");
    }
    // The flag means nothing to Anthropic.
    let server = FakeServer::start(vec![]);
    let out = Command::new(env!("CARGO_BIN_EXE_exarch"))
        .args([
            "--headless",
            "--provider",
            "anthropic",
            "--openai-api",
            "responses",
        ])
        .args(["--base-url", &server.url(), "--prompt", "hi"])
        .arg("--log-dir")
        .arg(tempfile::tempdir().unwrap().path())
        .env("ANTHROPIC_API_KEY", SECRET)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(server.requests().is_empty());
}

#[test]
fn interactive_commands_compact_switch_and_report() {
    let wire = Wire::Anthropic;
    let server = FakeServer::start(vec![
        wire.ral(false, "c1", "seq 1 2000"),
        wire.ral(false, "c2", "seq 1 2000"),
        wire.ral(false, "c3", "seq 1 2000"),
        wire.ral(false, "c4", "seq 1 2000"),
        wire.ral(false, "c5", "seq 1 2000"),
        wire.ral(false, "c6", "seq 1 2000"),
        wire.text(false, "Printed."),
        // The summary `/compact` asks for.
        wire.text(false, "Summary: six seq calls printed 1..2000."),
        wire.text(false, "Now under another model."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_exarch"))
        .args([
            "--provider",
            "anthropic",
            "--no-stream",
            "--model",
            "claude-sonnet-4-5",
        ])
        .args(["--base-url", &server.url()])
        .arg("--log-dir")
        .arg(dir.path().join("logs"))
        .current_dir(dir.path())
        .env("ANTHROPIC_API_KEY", SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(
                b"print numbers\n/cost\n/context\n/compact\n/context\n/profile confined\n\
                  /profile nonsense\n/model claude-haiku-4-5\nand again\n/quit\n",
            )
            .unwrap();
    }
    let r = finish(child, PATIENCE, dir);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let out = &r.stdout;
    // /cost: seven turns, priced by the table.
    assert!(out.contains("7 turns, 0 summaries"), "{out}");
    assert!(out.contains('$'), "{out}");
    // /context: the table's window for the model.
    assert!(out.contains("window 200000 tokens (table)"), "{out}");
    // /compact: the oldest outputs went to files and one summary was made.
    assert!(out.contains("(context compacted: "), "{out}");
    assert!(
        out.contains("3 outputs evicted, 6 messages summarised"),
        "{out}"
    );
    assert!(out.contains("3 outputs evicted, 1 summaries"), "{out}");
    assert!(
        out.contains("(profile confined: later calls run under it)"),
        "{out}"
    );
    assert!(
        out.contains("/profile needs one of: dangerous, reasonable"),
        "{out}"
    );
    assert!(
        out.contains("(model claude-haiku-4-5, context window 200000 tokens)"),
        "{out}"
    );
    let seen = server.requests();
    // The summary request carried no tools; the next turn named the new
    // model, held the summary, and ran under the new profile's prompt.
    assert!(seen[7].body.get("tools").is_none());
    let last = &seen[8].body;
    assert_eq!(last["model"], "claude-haiku-4-5");
    assert!(last["messages"]
        .to_string()
        .contains("[exarch: context summary]"));
    assert!(last["system"][0]["text"]
        .as_str()
        .unwrap()
        .contains("capability profile `confined`"));
    let kinds = r.log_kinds();
    for k in ["context_compacted", "profile_changed", "model_changed"] {
        assert!(kinds.contains(&k.to_owned()), "{k}: {kinds:?}");
    }
}
