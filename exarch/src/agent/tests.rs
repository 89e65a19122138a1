#![allow(clippy::unwrap_used)]

use super::*;
use crate::context::{is_stub, SUMMARY_PREFIX};
use crate::provider::scripted::{Scripted, ScriptedProvider, SeenRequest};
use crate::provider::{ProviderError, ProviderErrorKind};
use crate::session::SessionConfig;

fn agent(p: &ScriptedProvider) -> Agent<'_> {
    Agent::new(
        p,
        Session::new(SessionConfig::default()),
        AgentConfig::default(),
    )
}

fn results(p: &ScriptedProvider) -> Vec<(String, bool)> {
    p.requests()
        .pop()
        .unwrap_or_default()
        .iter()
        .flat_map(|m| m.blocks.clone())
        .filter_map(|b| match b {
            Block::ToolResult {
                content, is_error, ..
            } => Some((content, is_error)),
            Block::Text(_) | Block::ToolUse { .. } => None,
        })
        .collect()
}

/// A presentation layer may run the agent on a thread of its own.
#[test]
fn the_agent_and_its_events_can_cross_threads() {
    fn send<T: Send>() {}
    send::<Agent<'static>>();
    send::<AgentEvent>();
    send::<Command>();
}

#[test]
fn malformed_input_and_unknown_tools_answer_without_running() {
    let p = ScriptedProvider::new([
        Scripted::tool("a", "ral", ToolArgs::Json(json!({"command": "let x = 1"}))),
        Scripted::tool("b", "bash", ToolArgs::Json(json!({"cmd": "ls"}))),
        Scripted::tool("c", "ral", ToolArgs::parse("{\"cmd\": ")),
        Scripted::text("ok"),
    ]);
    let mut a = agent(&p);
    let out = a.exchange("go", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::EndTurn);
    assert_eq!(out.turns, 4);
    let r = results(&p);
    assert_eq!(r.len(), 3);
    assert!(
        r[0].0.starts_with("tool input error: `cmd` is missing"),
        "{}",
        r[0].0
    );
    assert!(r[0].1 && !r[0].0.contains("EXIT"));
    assert!(r[1].0.starts_with("unknown tool `bash`"), "{}", r[1].0);
    assert!(r[1].1 && !r[1].0.contains("EXIT"));
    assert!(r[2].0.contains("not valid JSON"), "{}", r[2].0);
    assert_eq!(a.session().calls(), 0, "nothing reached the shell");
}

#[test]
fn max_turns_stops_a_model_that_never_finishes() {
    let p = ScriptedProvider::cycling([Scripted::ral("t", "let x = 1")]);
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        AgentConfig {
            max_turns: 3,
            ..AgentConfig::default()
        },
    );
    let out = a.exchange("loop", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::MaxTurns);
    assert_eq!(out.turns, 3);
    assert_eq!(a.requests(), 3);
    assert_eq!(a.usage().input_tokens, 30);
    assert_eq!(out.usage.output_tokens, 15);
}

#[test]
fn provider_errors_end_the_exchange_with_the_error() {
    let p = ScriptedProvider::new([Scripted::Error(ProviderError {
        kind: ProviderErrorKind::Http(401),
        message: "bad key".into(),
        attempts: 1,
    })]);
    let out = agent(&p).exchange("hi", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::Error);
    assert_eq!(out.error.as_deref(), Some("HTTP 401: bad key"));
}

#[test]
fn a_stalled_reply_is_continued_and_tool_calls_pair_with_results() {
    let stalled = Scripted::Reply(Reply {
        blocks: vec![Block::Text("half an ans".into())],
        stop: StopReason::Stalled,
        usage: Usage::default(),
        attempts: 1,
    });
    let two_calls = Scripted::Reply(Reply {
        blocks: vec![
            Block::ToolUse {
                id: "x1".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "let a = 1"})),
            },
            Block::ToolUse {
                id: "x2".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "return $a"})),
            },
        ],
        stop: StopReason::ToolUse,
        usage: Usage::default(),
        attempts: 1,
    });
    let p = ScriptedProvider::new([stalled, two_calls, Scripted::text("fine")]);
    let mut a = agent(&p);
    let out = a.exchange("go", &mut NullUi, &Control::default());
    assert_eq!(out.final_text, "fine");
    let reqs = p.requests();
    assert!(format!("{:?}", reqs[1]).contains("cut off by a connection error"));
    let r = results(&p);
    assert_eq!(r[1].0, "VALUE:\n1\n\nEXIT: 0");
    // Every tool use in the history has its result.
    let h = a.history();
    let uses: Vec<_> = h
        .iter()
        .flat_map(|m| m.tool_uses().map(|(id, _, _)| id.to_owned()))
        .collect();
    for id in uses {
        assert!(h.iter().any(|m| m
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolResult { id: rid, .. } if *rid == id))));
    }
}

#[test]
fn a_stop_answers_the_calls_it_did_not_run() {
    let p = ScriptedProvider::new([Scripted::ral("t", "let x = 1")]);
    let ctl = Control::default();
    ctl.terminate();
    let mut a = agent(&p);
    // Stopped before the first request.
    let out = a.exchange("go", &mut NullUi, &ctl);
    assert_eq!(out.stop, ExchangeStop::Stopped(Stop::Terminate));
    assert_eq!(out.turns, 0);
    assert!(not_run_text(Stop::Wall).contains("time limit"));
}

// ---- Context management ---------------------------------------------------

/// A call that writes about `lines` × 7 bytes.
fn seq_call(id: &str, n: usize, lines: usize) -> Scripted {
    let start = 100_000 + n * 10_000;
    Scripted::ral(id, &format!("seq {start} {}", start + lines))
}

/// The estimate the agent makes of a request, before any calibration.
fn uncalibrated(r: &SeenRequest) -> u64 {
    let tools = [ral_tool(60)];
    let bytes = context::request_bytes(&r.system, &tools, &r.messages);
    Estimator::default().tokens(bytes)
}

fn outputs_dir() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let o = d.path().join("outputs");
    (d, o)
}

/// A model that makes `calls` calls of ~`lines` lines each, then finishes;
/// summary requests (no tools) get a summary.
fn busy_model(calls: usize, lines: usize) -> ScriptedProvider {
    ScriptedProvider::responding(move |r| {
        if r.tools == 0 {
            return Scripted::text("SUMMARY: the agent ran seq calls and read their output.");
        }
        let done = r
            .messages
            .iter()
            .flat_map(|m| &m.blocks)
            .filter(|b| matches!(b, Block::ToolUse { .. }))
            .count();
        // Summaries fold calls away: count the calls the model has made
        // from the ids, which number on.
        let last = r
            .messages
            .iter()
            .flat_map(|m| m.tool_uses())
            .filter_map(|(id, _, _)| id.strip_prefix('c')?.parse::<usize>().ok())
            .max()
            .map_or(0, |n| n + 1);
        let n = last.max(done);
        if n < calls {
            seq_call(&format!("c{n}"), n, lines)
        } else {
            Scripted::text("finished")
        }
    })
}

fn small_window(outputs: PathBuf, window: u64) -> AgentConfig {
    AgentConfig {
        system: crate::prompt::SystemPrompt::plain("be useful"),
        context_window: Some(window),
        outputs: Some(outputs),
        ..AgentConfig::default()
    }
}

#[test]
fn old_outputs_are_evicted_to_files_and_every_request_fits() {
    let (_d, outputs) = outputs_dir();
    // 34 calls of ~3.2 KB against a window of 16,384 tokens (~49 KB at the
    // starting ratio): the outputs hold two windows.
    let p = busy_model(34, 460);
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        small_window(outputs.clone(), 16_384),
    );
    let mut rec = Recorder::default();
    let out = a.exchange("count things", &mut rec, &Control::default());
    assert_eq!(out.stop, ExchangeStop::EndTurn, "{:?}", out.error);
    assert_eq!(out.final_text, "finished");
    let seen = p.seen();
    let budget = 16_384 - 16_384 / 4;
    let mut originals = std::collections::HashMap::new();
    for r in &seen {
        // The task is always first, and the request fits the budget.
        if r.tools > 0 {
            assert_eq!(r.messages[0], Message::user_text("count things"));
        }
        assert!(uncalibrated(r) <= budget, "{} > {budget}", uncalibrated(r));
        // The window made the reply's room smaller than the default cap.
        if r.tools > 0 {
            assert_eq!(r.max_tokens, Some(4096));
        }
        for b in r.messages.iter().flat_map(|m| &m.blocks) {
            if let Block::ToolResult { id, content, .. } = b {
                if !is_stub(content) {
                    originals.insert(id.clone(), content.clone());
                }
            }
        }
    }
    let total: usize = originals.values().map(String::len).sum();
    assert!(total > 2 * 16_384 * 3, "outputs of {total} bytes");
    // Old outputs became stubs naming a file that holds the output whole;
    // the newest four of the last request are whole.
    let mut stubs = std::collections::BTreeMap::new();
    for r in &seen {
        for b in r.messages.iter().flat_map(|m| &m.blocks) {
            if let Block::ToolResult { id, content, .. } = b {
                if is_stub(content) {
                    stubs.insert(id.clone(), content.clone());
                }
            }
        }
    }
    assert!(stubs.len() >= 10, "{} stubs", stubs.len());
    let last = seen.iter().rev().find(|r| r.tools > 0).unwrap();
    let results: Vec<&String> = last
        .messages
        .iter()
        .flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            Block::ToolResult { content, .. } => Some(content),
            Block::Text(_) | Block::ToolUse { .. } => None,
        })
        .collect();
    for c in results.iter().rev().take(context::KEEP_RECENT_RESULTS) {
        assert!(!is_stub(c), "a recent output was evicted: {c}");
    }
    for (id, stub) in &stubs {
        let path = stub
            .split("kept in the file ")
            .nth(1)
            .and_then(|r| r.split(": read it back").next())
            .unwrap();
        assert!(path.starts_with(outputs.to_str().unwrap()), "{stub}");
        assert_eq!(
            std::fs::read_to_string(path).unwrap(),
            originals[id],
            "{stub}"
        );
        assert!(
            stub.contains(&format!("call {id} \"scripted step\" (`seq ")),
            "{stub}"
        );
        assert!(stub.contains("`cat '"), "{stub}");
    }
    // The event stream reported the compaction and each request's usage.
    let compactions = rec
        .0
        .iter()
        .filter(|e| matches!(e, AgentEvent::Compacted(c) if c.evicted > 0))
        .count();
    assert!(compactions >= 1);
    let usages = rec
        .0
        .iter()
        .filter(|e| matches!(e, AgentEvent::Usage { .. }))
        .count();
    assert_eq!(usages, seen.len());
    assert!(a.context_status().evicted as usize >= stubs.len());
}

#[test]
fn when_stubs_are_not_enough_the_oldest_exchanges_are_summarised() {
    let (_d, outputs) = outputs_dir();
    // 80 calls: even stubbed, they outgrow a 6,000-token window.
    let p = busy_model(80, 200);
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        small_window(outputs, 6000),
    );
    let out = a.exchange("the task", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::EndTurn, "{:?}", out.error);
    let seen = p.seen();
    let summaries: Vec<&SeenRequest> = seen.iter().filter(|r| r.tools == 0).collect();
    assert!(!summaries.is_empty(), "no summary was requested");
    // The summariser saw the calls it replaced, and its own cap.
    assert!(format!("{:?}", summaries[0].messages).contains("CALL c"));
    assert_eq!(summaries[0].max_tokens, Some(1500));
    let budget = 6000 - 1500;
    for r in seen.iter().filter(|r| r.tools > 0) {
        assert_eq!(r.messages[0], Message::user_text("the task"));
        assert!(uncalibrated(r) <= budget);
    }
    // The summary took the place of the oldest exchanges.
    let last = seen.iter().rev().find(|r| r.tools > 0).unwrap();
    assert!(
        last.messages[1].text().starts_with(SUMMARY_PREFIX),
        "{:?}",
        last.messages[1]
    );
    assert!(last.messages[1]
        .text()
        .contains("SUMMARY: the agent ran seq calls"));
    assert!(a.cost().summaries >= 1);
    assert_eq!(a.cost().turns, 81);
    // Every call in the history still pairs with its result.
    let h = a.history();
    for (id, _, _) in h.iter().flat_map(|m| m.tool_uses()) {
        assert!(h
            .iter()
            .flat_map(|m| &m.blocks)
            .any(|b| matches!(b, Block::ToolResult { id: r, .. } if r == id)));
    }
}

#[test]
fn a_refused_prompt_is_compacted_and_retried_and_the_limit_is_learned() {
    let (_d, outputs) = outputs_dir();
    // The agent believes in 100,000 tokens; the "server" holds 5,000 and
    // counts a token per four bytes, refusing like Anthropic does.
    let inner = busy_model(30, 300);
    let p = ScriptedProvider::responding(move |r| {
        let bytes = context::request_bytes(&r.system, &[ral_tool(60)], &r.messages);
        let tokens = bytes / 4;
        if tokens > 5000 {
            return Scripted::Error(ProviderError {
                kind: ProviderErrorKind::ContextOverflow {
                    tokens: Some(tokens),
                    limit: Some(5000),
                },
                message: format!("prompt is too long: {tokens} tokens > 5000 maximum"),
                attempts: 1,
            });
        }
        inner_reply(&inner, r)
    });
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        small_window(outputs, 100_000),
    );
    let out = a.exchange("go", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::EndTurn, "{:?}", out.error);
    assert_eq!(out.final_text, "finished");
    let status = a.context_status();
    assert_eq!(status.window, 5000);
    assert_eq!(status.source, WindowSource::Learned);
    assert!(status.evicted > 0);
}

#[test]
fn a_provider_that_keeps_refusing_ends_the_exchange_after_bounded_retries() {
    let p = ScriptedProvider::responding(|_| {
        Scripted::Error(ProviderError {
            kind: ProviderErrorKind::ContextOverflow {
                tokens: None,
                limit: None,
            },
            message: "context_length_exceeded".into(),
            attempts: 1,
        })
    });
    let out = agent(&p).exchange("hi", &mut NullUi, &Control::default());
    assert_eq!(out.stop, ExchangeStop::Error);
    assert_eq!(p.seen().len() as u32, 1 + context::MAX_OVERFLOW_RETRIES);
}

/// A model that makes 12 calls for the first prompt and 12 more once the
/// second (`SECOND`) is in its conversation (whole, or quoted by a
/// summary), numbering its calls across the run; summary requests fail.
fn steady_model() -> ScriptedProvider {
    let made = std::sync::atomic::AtomicUsize::new(0);
    ScriptedProvider::responding(move |r| {
        if r.tools == 0 {
            return Scripted::Error(ProviderError {
                kind: ProviderErrorKind::Http(500),
                message: "overloaded".into(),
                attempts: 6,
            });
        }
        let second = r.messages.iter().any(|m| m.text().contains(SECOND));
        let target = if second { 24 } else { 12 };
        let n = made.load(std::sync::atomic::Ordering::SeqCst);
        if n < target {
            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            seq_call(&format!("c{n}"), n, 200)
        } else {
            Scripted::text("finished")
        }
    })
}

const SECOND: &str = "now also check the tabs";

#[test]
fn a_failed_summary_leaves_a_marker_with_the_users_words_and_the_run_goes_on() {
    let (_d, outputs) = outputs_dir();
    let p = steady_model();
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        small_window(outputs.clone(), 5000),
    );
    let ctl = Control::default();
    let first = a.exchange("first task", &mut NullUi, &ctl);
    assert_eq!(first.stop, ExchangeStop::EndTurn, "{:?}", first.error);
    let later = a.exchange(SECOND, &mut NullUi, &ctl);
    assert_eq!(later.stop, ExchangeStop::EndTurn, "{:?}", later.error);
    assert!(
        p.seen().iter().any(|r| r.tools == 0),
        "no summary was tried"
    );
    let h = a.history();
    assert_eq!(h[0], Message::user_text("first task"));
    let marker = h[1].text();
    assert!(marker.starts_with(SUMMARY_PREFIX), "{marker}");
    assert!(
        marker.contains("could not be written (HTTP 500"),
        "{marker}"
    );
    assert!(marker.contains("> now also check the tabs"), "{marker}");
    // The outputs of the removed calls stay whole on disk, and the marker
    // says where.
    assert!(
        marker.contains(&format!("`ls '{}'`", outputs.display())),
        "{marker}"
    );
    let files = std::fs::read_dir(&outputs).unwrap().count();
    assert!(files >= 12, "{files} files");
}

fn inner_reply(inner: &ScriptedProvider, r: &SeenRequest) -> Scripted {
    match inner.complete(
        &ChatRequest {
            system: &r.system,
            messages: &r.messages,
            tools: &vec![ral_tool(60); r.tools],
            max_tokens: r.max_tokens,
        },
        &mut (),
        &Control::default(),
    ) {
        Ok(r) => Scripted::Reply(r),
        Err(e) => Scripted::Error(e),
    }
}

#[test]
fn commands_report_cost_and_context_and_switch_the_profile() {
    let p = ScriptedProvider::new([Scripted::ral("t1", "let x = 1"), Scripted::text("ok")]);
    let mut a = Agent::new(
        &p,
        Session::new(SessionConfig::default()),
        AgentConfig {
            system: crate::prompt::SystemPrompt {
                base: "base".into(),
                capabilities: "# Capabilities\n\nold".into(),
                project: String::new(),
            },
            ..AgentConfig::default()
        },
    );
    let ctl = Control::default();
    let mut rec = Recorder::default();
    let _ = a.exchange("go", &mut rec, &ctl);
    let CommandOutcome::Cost(c) = a.command(Command::Cost, &mut rec, &ctl) else {
        panic!("cost")
    };
    assert_eq!(c.turns, 2);
    assert_eq!(c.usage.input_tokens, 20);
    assert_eq!(c.cost_usd, None, "the scripted model has no price");
    assert_eq!(c.unpriced, 2);
    let CommandOutcome::Context(s) = a.command(Command::Context, &mut rec, &ctl) else {
        panic!("context")
    };
    assert_eq!(s.window, context::DEFAULT_WINDOW);
    assert_eq!(s.source, WindowSource::Default);
    // A scripted provider cannot switch models; nothing changes.
    assert!(matches!(
        a.command(Command::SetModel("gpt-4.1".into()), &mut rec, &ctl),
        CommandOutcome::Refused(_)
    ));
    let out = a.command(Command::SetProfile(Profile::Confined), &mut rec, &ctl);
    assert_eq!(
        out,
        CommandOutcome::ProfileSet {
            profile: Profile::Confined
        }
    );
    assert!(a.system_prompt().starts_with("base\n\n# Capabilities"));
    assert!(
        a.system_prompt().contains("`confined`"),
        "{}",
        a.system_prompt()
    );
    assert!(!a.system_prompt().contains("old"));
    // The event stream: tool start and end around the call, usage after
    // each request, in order.
    let kinds: Vec<&str> = rec
        .0
        .iter()
        .map(|e| match e {
            AgentEvent::TextDelta(_) => "text",
            AgentEvent::AssistantDone { .. } => "done",
            AgentEvent::ToolStarted(_) => "start",
            AgentEvent::ToolFinished { .. } => "end",
            AgentEvent::Usage { .. } => "usage",
            AgentEvent::Notice(_) => "notice",
            AgentEvent::Surface(_)
            | AgentEvent::Retrying { .. }
            | AgentEvent::Compacted(_)
            | AgentEvent::Stuck { .. } => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        vec!["usage", "done", "start", "end", "text", "usage", "done"]
    );
}
