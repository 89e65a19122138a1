//! `HttpProvider` against the fake server on 127.0.0.1: both wire formats,
//! streaming and not, retries, fallbacks, stalls, usage, cancellation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use exarch::control::Control;
use exarch::message::{Block, Message, StopReason, ToolArgs};
use exarch::provider::retry::RetryPolicy;
use exarch::provider::{
    ChatRequest, HttpConfig, HttpProvider, Observer, Provider, ProviderErrorKind, WireFormat,
};
use exarch::tool::ral_tool;
use serde_json::json;

fn provider(server: &FakeServer, wire: Wire, stream: bool) -> HttpProvider {
    let w = match wire {
        Wire::Anthropic => WireFormat::Anthropic,
        Wire::OpenAi => WireFormat::OpenAi,
        Wire::Responses => WireFormat::Responses,
    };
    let mut cfg = HttpConfig::new(w, "test-model", Some("sk-test".into()));
    cfg.base_url = server.url();
    cfg.stream = stream;
    cfg.retry = RetryPolicy {
        max_attempts: 3,
        base: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        max_retry_after: Duration::from_millis(300),
    };
    cfg.idle_timeout = Duration::from_secs(5);
    HttpProvider::new(cfg).unwrap()
}

#[derive(Default)]
struct Seen {
    text: String,
    retries: Vec<(u32, Duration, String)>,
    notes: Vec<String>,
}

impl Observer for Seen {
    fn text_delta(&mut self, d: &str) {
        self.text.push_str(d);
    }
    fn retrying(&mut self, a: u32, w: Duration, why: &str) {
        self.retries.push((a, w, why.to_owned()));
    }
    fn note(&mut self, t: &str) {
        self.notes.push(t.to_owned());
    }
}

fn ask(
    p: &HttpProvider,
    obs: &mut Seen,
) -> Result<exarch::message::Reply, exarch::provider::ProviderError> {
    let history = [Message::user_text("hello")];
    let tools = [ral_tool(60)];
    let req = ChatRequest::new("be brief", &history, &tools);
    p.complete(&req, obs, &Control::default())
}

const WIRES: [Wire; 3] = [Wire::Anthropic, Wire::OpenAi, Wire::Responses];

#[test]
fn text_and_tool_replies_in_all_six_modes() {
    for wire in WIRES {
        for stream in [false, true] {
            let server = FakeServer::start(vec![
                wire.text(stream, "héllo there"),
                wire.ral(stream, "call_7", "let x = 1"),
            ]);
            let p = provider(&server, wire, stream);
            let mut obs = Seen::default();
            let r = ask(&p, &mut obs).unwrap();
            assert_eq!(
                r.blocks,
                vec![Block::Text("héllo there".into())],
                "{wire:?} {stream}"
            );
            assert_eq!(obs.text, "héllo there");
            assert_eq!(r.stop, StopReason::EndTurn);
            assert_eq!(r.attempts, 1);
            assert!(
                r.usage.input_tokens > 0 && r.usage.output_tokens == 5,
                "{:?}",
                r.usage
            );
            assert!(r.usage.cache_read_input_tokens == 1, "{:?}", r.usage);

            let r = ask(&p, &mut Seen::default()).unwrap();
            let call = r
                .blocks
                .iter()
                .find_map(|b| match b {
                    Block::ToolUse { id, name, input } => {
                        Some((id.clone(), name.clone(), input.clone()))
                    }
                    Block::Text(_) | Block::ToolResult { .. } => None,
                })
                .unwrap();
            assert_eq!(call.0, "call_7");
            assert_eq!(call.1, "ral");
            assert_eq!(
                call.2,
                ToolArgs::Json(json!({"cmd": "let x = 1", "description": "a step"}))
            );
            assert_eq!(r.stop, StopReason::ToolUse);

            let seen = server.requests();
            assert_eq!(seen.len(), 2);
            let req = &seen[0];
            match wire {
                Wire::Anthropic => {
                    assert_eq!(req.path, "/v1/messages");
                    assert_eq!(req.header("x-api-key"), Some("sk-test"));
                    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
                    assert_eq!(req.body["system"][0]["text"], "be brief");
                    assert_eq!(req.body["tools"][0]["name"], "ral");
                }
                Wire::OpenAi => {
                    assert_eq!(req.path, "/v1/chat/completions");
                    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
                    assert_eq!(req.body["messages"][0]["role"], "system");
                    assert_eq!(req.body["tools"][0]["function"]["name"], "ral");
                }
                Wire::Responses => {
                    assert_eq!(req.path, "/v1/responses");
                    assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
                    assert_eq!(req.body["instructions"], "be brief");
                    assert_eq!(req.body["input"][0]["content"][0]["text"], "hello");
                    assert_eq!(req.body["tools"][0]["name"], "ral");
                    assert_eq!(req.body["store"], false);
                }
            }
            assert_eq!(req.body["model"], "test-model");
            assert_eq!(req.body.get("stream").is_some(), stream, "{wire:?}");
        }
    }
}

#[test]
fn retries_honour_retry_after_and_give_up_in_time() {
    for wire in WIRES {
        let server = FakeServer::start(vec![
            Canned::status(429, json!({"error": {"message": "slow down"}}))
                .with_header("retry-after", "0.2"),
            Canned::status(
                529,
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
            ),
            wire.text(true, "finally"),
        ]);
        let p = provider(&server, wire, true);
        let mut obs = Seen::default();
        let started = Instant::now();
        let r = ask(&p, &mut obs).unwrap();
        assert_eq!(r.attempts, 3);
        assert_eq!(obs.text, "finally");
        assert_eq!(obs.retries.len(), 2);
        assert_eq!(
            obs.retries[0].1,
            Duration::from_millis(200),
            "retry-after honoured"
        );
        assert!(obs.retries[0].2.contains("slow down"), "{:?}", obs.retries);
        assert!(started.elapsed() >= Duration::from_millis(200));

        // Out of attempts: the last error is reported.
        let server = FakeServer::start(vec![
            Canned::status(500, json!({"error": {"message": "e1"}})),
            Canned::status(502, json!({"error": {"message": "e2"}})),
            Canned::status(503, json!({"error": {"message": "e3"}})),
        ]);
        let p = provider(&server, wire, false);
        let e = ask(&p, &mut Seen::default()).unwrap_err();
        assert_eq!(e.kind, ProviderErrorKind::Http(503));
        assert_eq!(e.attempts, 3);
        assert!(e.to_string().contains("e3"), "{e}");
    }
}

#[test]
fn client_errors_are_not_retried() {
    let server = FakeServer::start(vec![Canned::status(
        401,
        json!({"error": {"message": "invalid x-api-key"}}),
    )]);
    let p = provider(&server, Wire::Anthropic, false);
    let e = ask(&p, &mut Seen::default()).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Http(401));
    assert_eq!(e.attempts, 1);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn transport_errors_are_retried() {
    // Nothing listens on this port once the listener is dropped.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = HttpConfig::new(WireFormat::OpenAi, "m", None);
    cfg.base_url = format!("http://127.0.0.1:{port}");
    cfg.retry = RetryPolicy {
        max_attempts: 2,
        base: Duration::from_millis(5),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_millis(5),
    };
    let p = HttpProvider::new(cfg).unwrap();
    let mut obs = Seen::default();
    let e = ask(&p, &mut obs).unwrap_err();
    assert_eq!(e.kind, ProviderErrorKind::Transport);
    assert_eq!(e.attempts, 2);
    assert_eq!(obs.retries.len(), 1);
}

#[test]
fn a_json_answer_to_a_streaming_request_is_accepted_and_sticks() {
    for wire in WIRES {
        let server = FakeServer::start(vec![wire.text(false, "plain"), wire.text(false, "again")]);
        let p = provider(&server, wire, true);
        let mut obs = Seen::default();
        assert_eq!(
            ask(&p, &mut obs).unwrap().blocks,
            vec![Block::Text("plain".into())]
        );
        assert_eq!(obs.text, "plain");
        assert!(!obs.notes.is_empty());
        let _ = ask(&p, &mut Seen::default()).unwrap();
        let seen = server.requests();
        assert!(seen[0].body.get("stream").is_some());
        assert!(
            seen[1].body.get("stream").is_none(),
            "later requests are plain"
        );
    }
}

#[test]
fn a_400_to_a_streaming_request_falls_back_to_a_plain_one() {
    for wire in WIRES {
        let server = FakeServer::start(vec![
            Canned::status(
                400,
                json!({"error": {"message": "stream is not supported"}}),
            ),
            wire.text(false, "ok"),
        ]);
        let p = provider(&server, wire, true);
        let mut obs = Seen::default();
        let r = ask(&p, &mut obs).unwrap();
        assert_eq!(r.blocks, vec![Block::Text("ok".into())]);
        assert!(
            obs.notes
                .iter()
                .any(|n| n.contains("refused a streaming request")),
            "{:?}",
            obs.notes
        );
        let seen = server.requests();
        assert_eq!(seen.len(), 2);
        assert!(seen[1].body.get("stream").is_none());
        // A 400 to a plain request is final.
        let server = FakeServer::start(vec![Canned::status(
            400,
            json!({"error": {"message": "bad"}}),
        )]);
        let p = provider(&server, wire, false);
        assert_eq!(
            ask(&p, &mut Seen::default()).unwrap_err().kind,
            ProviderErrorKind::Http(400)
        );
    }
}

#[test]
fn a_stream_that_breaks_after_text_is_kept_not_reissued() {
    let events = anth_sse_text("some words that arrive");
    // Cut after the first text delta.
    let server = FakeServer::start(vec![
        Canned::sse_cut(events, 3),
        Canned::ok(anth_text("should not be asked")),
    ]);
    let p = provider(&server, Wire::Anthropic, true);
    let mut obs = Seen::default();
    let r = ask(&p, &mut obs).unwrap();
    assert_eq!(r.stop, StopReason::Stalled);
    assert_eq!(r.blocks.len(), 1);
    assert!(obs.text.starts_with("some words"), "{}", obs.text);
    assert_eq!(server.requests().len(), 1, "never re-issued");

    // A stream that breaks before any text is retried.
    let events = oai_sse_tool("c1", json!({"cmd": "ls"}));
    let server = FakeServer::start(vec![
        Canned::sse_cut(events, 1),
        Wire::OpenAi.text(true, "second try"),
    ]);
    let p = provider(&server, Wire::OpenAi, true);
    let mut obs = Seen::default();
    let r = ask(&p, &mut obs).unwrap();
    assert_eq!(r.blocks, vec![Block::Text("second try".into())]);
    assert_eq!(r.attempts, 2);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_mid_stream_overload_before_text_is_retried() {
    let overloaded = vec![
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n".to_owned(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n".to_owned(),
    ];
    let server = FakeServer::start(vec![
        Canned::sse(overloaded),
        Canned::sse(anth_sse_text("fine")),
    ]);
    let p = provider(&server, Wire::Anthropic, true);
    let mut obs = Seen::default();
    let r = ask(&p, &mut obs).unwrap();
    assert_eq!(obs.text, "fine");
    assert_eq!(r.attempts, 2);
    assert!(obs.retries[0].2.contains("Overloaded"));
}

#[test]
fn an_interrupt_stops_a_waiting_request_promptly() {
    let server = FakeServer::start(vec![Canned::Delay(
        Duration::from_secs(20),
        Box::new(Canned::ok(anth_text("late"))),
    )]);
    let p = provider(&server, Wire::Anthropic, false);
    let ctl = Control::default();
    let c2 = ctl.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(150));
        c2.interrupt();
    });
    let history = [Message::user_text("hi")];
    let req = ChatRequest::new("", &history, &[]);
    let started = Instant::now();
    let e = p.complete(&req, &mut (), &ctl).unwrap_err();
    let _ = t.join();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e.kind, ProviderErrorKind::Stopped(_)), "{e:?}");
}

#[test]
fn a_wall_stops_a_silent_stream() {
    let mut events = anth_sse_text("x");
    events.truncate(2);
    let server = FakeServer::start(vec![Canned::Sse {
        events,
        cut: None,
        pause: Duration::from_secs(3),
    }]);
    let p = provider(&server, Wire::Anthropic, true);
    let ctl = Control::new(Some(Duration::from_millis(300)));
    let history = [Message::user_text("hi")];
    let req = ChatRequest::new("", &history, &[]);
    let started = Instant::now();
    let e = p.complete(&req, &mut (), &ctl).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        e.kind,
        ProviderErrorKind::Stopped(exarch::control::Stop::Wall)
    );
}

#[test]
fn responses_calls_and_results_round_trip_and_overflows_are_named() {
    // A call, its result sent back as a function_call_output, then text.
    let server = FakeServer::start(vec![
        Wire::Responses.ral(true, "call_a", "let x = 1"),
        Wire::Responses.text(true, "done"),
    ]);
    let p = provider(&server, Wire::Responses, true);
    let tools = [ral_tool(60)];
    let mut history = vec![Message::user_text("go")];
    let r = p
        .complete(
            &ChatRequest::new("sys", &history, &tools),
            &mut (),
            &Control::default(),
        )
        .unwrap();
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.usage.input_tokens, 10);
    assert_eq!(r.usage.cache_read_input_tokens, 1);
    history.push(r.to_message());
    history.push(Message {
        role: exarch::message::Role::User,
        blocks: vec![Block::ToolResult {
            id: "call_a".into(),
            content: "EXIT: 0".into(),
            is_error: false,
        }],
    });
    let r = p
        .complete(
            &ChatRequest::new("sys", &history, &tools),
            &mut (),
            &Control::default(),
        )
        .unwrap();
    assert_eq!(r.blocks, vec![Block::Text("done".into())]);
    let input = server.requests()[1].body["input"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[1]["call_id"], "call_a");
    assert_eq!(
        input[1]["arguments"],
        json!({"cmd": "let x = 1", "description": "a step"}).to_string()
    );
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_a");
    assert_eq!(input[2]["output"], "EXIT: 0");

    // A too-long prompt, as a 400 and as a failed stream.
    let server = FakeServer::start(vec![
        Canned::status(
            400,
            json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                             "type": "invalid_request_error", "code": "context_length_exceeded"}}),
        ),
        Canned::sse(vec![format!(
            "event: response.failed\ndata: {}\n\n",
            json!({"type": "response.failed", "response": {"status": "failed",
                   "error": {"code": "context_length_exceeded", "message": "too long"}}})
        )]),
    ]);
    let p = provider(&server, Wire::Responses, true);
    for _ in 0..2 {
        let e = ask(&p, &mut Seen::default()).unwrap_err();
        assert!(
            matches!(e.kind, ProviderErrorKind::ContextOverflow { .. }),
            "{e:?}"
        );
        assert_eq!(e.attempts, 1, "an overflow is not retried unchanged");
    }
    // Neither made the provider give up streaming.
    assert!(server.requests().iter().all(|s| s.body["stream"] == true));
}
