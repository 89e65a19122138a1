//! The OpenAI Responses wire format, `POST {base}/v1/responses`.
//!
//! The system prompt is `instructions`; the conversation is a list of
//! `input` items: `message` items (a user's `input_text`, an assistant's
//! `output_text`), `function_call` items (`call_id`, `name`, the
//! arguments as a JSON string) and `function_call_output` items (`call_id`,
//! `output`). Requests are not stored (`store: false`): every request
//! carries the whole conversation, as with the other two formats.
//!
//! A response's `output` holds `message`, `function_call` and `reasoning`
//! items (the last are not replayed); its `status` is `completed`,
//! `incomplete` (`incomplete_details.reason`, `max_output_tokens` for a
//! truncated reply) or `failed` (`error`). Usage is `input_tokens` (cached
//! ones in `input_tokens_details.cached_tokens`) and `output_tokens`.
//!
//! Streaming events: `response.output_item.added` (a `function_call` item
//! with its `call_id` and `name`), `response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.output_item.done`
//! (the finished item, whose arguments stand in when no delta carried
//! them), then one of `response.completed`, `response.incomplete` and
//! `response.failed` carrying the whole response (usage, status, error);
//! `error` events; `response.created` and the rest are ignored. Each
//! output item is keyed by its `output_index`.

use serde_json::{json, Value};

use super::sse::SseEvent;
use super::{Accum, ChatRequest, Observer, StreamFault};
use crate::message::{Block, Message, Reply, Role, StopReason, ToolArgs, Usage};

/// The request body.
pub fn request_body(
    req: &ChatRequest<'_>,
    model: &str,
    max_tokens: Option<u32>,
    streaming: bool,
) -> Value {
    let mut input = Vec::new();
    for m in req.messages {
        push_items(&mut input, m);
    }
    let mut body = json!({"model": model, "input": input, "store": false});
    if !req.system.is_empty() {
        body["instructions"] = Value::String(req.system.to_owned());
    }
    if !req.tools.is_empty() {
        body["tools"] = Value::Array(
            req.tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "name": t.name, "description": t.description,
                           "parameters": t.schema})
                })
                .collect(),
        );
    }
    if let Some(n) = req.max_tokens.or(max_tokens) {
        body["max_output_tokens"] = json!(n);
    }
    if streaming {
        body["stream"] = Value::Bool(true);
    }
    body
}

/// One message's items: a user message's results first (they answer the
/// calls before them), then its text; an assistant's text and calls in
/// order.
fn push_items(out: &mut Vec<Value>, m: &Message) {
    let mut text = Vec::new();
    let flush = |out: &mut Vec<Value>, text: &mut Vec<Value>, role: &str| {
        if !text.is_empty() {
            out.push(json!({"type": "message", "role": role, "content": std::mem::take(text)}));
        }
    };
    match m.role {
        Role::User => {
            for b in &m.blocks {
                match b {
                    Block::ToolResult { id, content, .. } => out.push(json!({
                        "type": "function_call_output", "call_id": id, "output": content,
                    })),
                    Block::Text(t) if !t.is_empty() => {
                        text.push(json!({"type": "input_text", "text": t}))
                    }
                    Block::Text(_) | Block::ToolUse { .. } => {}
                }
            }
            flush(out, &mut text, "user");
        }
        Role::Assistant => {
            for b in &m.blocks {
                match b {
                    Block::Text(t) if !t.is_empty() => {
                        text.push(json!({"type": "output_text", "text": t}))
                    }
                    Block::ToolUse { id, name, input } => {
                        flush(out, &mut text, "assistant");
                        out.push(json!({
                            "type": "function_call", "call_id": id, "name": name,
                            "arguments": input.replay_object().to_string(),
                        }));
                    }
                    Block::Text(_) | Block::ToolResult { .. } => {}
                }
            }
            flush(out, &mut text, "assistant");
        }
    }
}

/// Maps Responses usage onto the four buckets (cached input is a cache
/// read and leaves the input count).
fn read_usage(v: &Value) -> Usage {
    let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let input = n("/input_tokens");
    let cached = n("/input_tokens_details/cached_tokens").min(input);
    Usage {
        input_tokens: input - cached,
        output_tokens: n("/output_tokens"),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
    }
}

/// The stop reason a finished response states (`None`: decide from the
/// calls it holds).
fn status_stop(resp: &Value) -> Option<StopReason> {
    match resp.get("status").and_then(Value::as_str) {
        Some("incomplete") => {
            match resp
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("max_output_tokens") => Some(StopReason::MaxTokens),
                Some(other) => Some(StopReason::Other(other.to_owned())),
                None => Some(StopReason::Other("incomplete".to_owned())),
            }
        }
        Some(_) | None => None,
    }
}

/// The error a failed response or an `error` event carries: its message
/// and whether it refuses the prompt as too long.
fn failure(err: &Value) -> StreamFault {
    let code = err.get("code").and_then(Value::as_str).unwrap_or("error");
    let msg = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message");
    let overflow = (code == "context_length_exceeded").then(|| super::overflow_counts(msg));
    StreamFault {
        message: format!("{code}: {msg}"),
        retryable: overflow.is_none()
            && matches!(
                code,
                "server_error" | "rate_limit_exceeded" | "server_is_overloaded"
            ),
        overflow,
    }
}

/// A whole (non-streamed) response.
pub fn parse_response(v: &Value) -> Result<Reply, String> {
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        let msg = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("an error without a message");
        return Err(format!("the server reported an error: {msg}"));
    }
    let output = v
        .get("output")
        .and_then(Value::as_array)
        .ok_or("the response has no `output` array")?;
    let mut blocks = Vec::new();
    for (n, item) in output.iter().enumerate() {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for c in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let t = match c.get("type").and_then(Value::as_str) {
                        Some("output_text") => c.get("text"),
                        Some("refusal") => c.get("refusal"),
                        Some(_) | None => None,
                    };
                    if let Some(t) = t.and_then(Value::as_str).filter(|t| !t.is_empty()) {
                        blocks.push(Block::Text(t.to_owned()));
                    }
                }
            }
            Some("function_call") => {
                let id = item
                    .get("call_id")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map_or_else(|| format!("call_{}", n + 1), str::to_owned);
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                let input = match item.get("arguments") {
                    Some(Value::String(s)) => ToolArgs::parse(s),
                    Some(other) => ToolArgs::Json(other.clone()),
                    None => ToolArgs::parse(""),
                };
                blocks.push(Block::ToolUse {
                    id,
                    name: name.to_owned(),
                    input,
                });
            }
            // Reasoning summaries and other item kinds are not replayed.
            Some(_) | None => {}
        }
    }
    let has_tools = blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop = status_stop(v).unwrap_or(if has_tools {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    });
    let usage = v.get("usage").map(read_usage).unwrap_or_default();
    Ok(Reply {
        blocks,
        stop,
        usage,
        attempts: 1,
    })
}

/// One streamed event.
pub(crate) fn stream_event(
    acc: &mut Accum,
    ev: &SseEvent,
    obs: &mut dyn Observer,
) -> Result<(), StreamFault> {
    let data = ev.data.trim();
    if data.is_empty() || data == "[DONE]" {
        return Ok(());
    }
    let v: Value = serde_json::from_str(data)
        .map_err(|e| StreamFault::protocol(format!("an event that is not JSON ({e})")))?;
    let kind = v
        .get("type")
        .and_then(Value::as_str)
        .or(ev.event.as_deref())
        .unwrap_or_default();
    let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
    match kind {
        "response.output_item.added" => {
            let item = v.get("item").unwrap_or(&Value::Null);
            if item.get("type").and_then(Value::as_str) == Some("function_call") {
                let id = item.get("call_id").and_then(Value::as_str);
                let name = item.get("name").and_then(Value::as_str);
                let args = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                acc.tool(index, id, name, args);
            }
        }
        "response.output_text.delta" | "response.refusal.delta" => {
            let d = v.get("delta").and_then(Value::as_str).unwrap_or_default();
            acc.text(index, d, obs);
        }
        "response.function_call_arguments.delta" => {
            let d = v.get("delta").and_then(Value::as_str).unwrap_or_default();
            acc.tool(index, None, None, d);
        }
        "response.output_item.done" => {
            let item = v.get("item").unwrap_or(&Value::Null);
            if item.get("type").and_then(Value::as_str) == Some("function_call") {
                let id = item.get("call_id").and_then(Value::as_str);
                let name = item.get("name").and_then(Value::as_str);
                let args = item
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                acc.tool_done(index, id, name, args);
            }
        }
        "response.completed" | "response.incomplete" => {
            let resp = v.get("response").unwrap_or(&Value::Null);
            if let Some(u) = resp.get("usage").filter(|u| u.is_object()) {
                acc.usage = read_usage(u);
            }
            acc.stop = status_stop(resp);
            acc.done = true;
        }
        "response.failed" => {
            let err = v.pointer("/response/error").unwrap_or(&Value::Null);
            return Err(failure(err));
        }
        "error" => return Err(failure(&v)),
        // response.created, response.in_progress, content part and
        // summary events, and kinds added later.
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    #[test]
    fn bodies_carry_items_in_conversation_order() {
        let history = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                blocks: vec![
                    Block::Text("Looking.".into()),
                    Block::ToolUse {
                        id: "call_1".into(),
                        name: "ral".into(),
                        input: ToolArgs::Json(json!({"cmd": "ls"})),
                    },
                ],
            },
            Message {
                role: Role::User,
                blocks: vec![
                    Block::ToolResult {
                        id: "call_1".into(),
                        content: "EXIT: 0".into(),
                        is_error: false,
                    },
                    Block::Text("and now?".into()),
                ],
            },
        ];
        let tools = [ToolSpec {
            name: "ral".into(),
            description: "d".into(),
            schema: json!({"type": "object"}),
        }];
        let req = ChatRequest::new("sys", &history, &tools);
        let b = request_body(&req, "gpt-5", Some(99), true);
        assert_eq!(b["instructions"], "sys");
        assert_eq!(b["store"], false);
        assert_eq!(b["stream"], true);
        assert_eq!(b["max_output_tokens"], 99);
        assert_eq!(b["tools"][0]["type"], "function");
        assert_eq!(b["tools"][0]["name"], "ral");
        assert_eq!(b["tools"][0]["parameters"]["type"], "object");
        let items = b["input"].as_array().unwrap_or_else(|| panic!("input"));
        let kinds: Vec<&str> = items
            .iter()
            .map(|i| i["type"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            kinds,
            [
                "message",
                "message",
                "function_call",
                "function_call_output",
                "message"
            ]
        );
        assert_eq!(items[0]["content"][0]["type"], "input_text");
        assert_eq!(items[1]["role"], "assistant");
        assert_eq!(items[1]["content"][0]["type"], "output_text");
        assert_eq!(items[2]["arguments"], "{\"cmd\":\"ls\"}");
        assert_eq!(items[3]["call_id"], "call_1");
        assert_eq!(items[3]["output"], "EXIT: 0");
        assert_eq!(items[4]["content"][0]["text"], "and now?");
        let plain = request_body(&ChatRequest::new("", &history, &[]), "m", None, false);
        assert!(plain.get("stream").is_none() && plain.get("tools").is_none());
        assert!(plain.get("instructions").is_none());
    }

    #[test]
    fn whole_responses_parse_calls_text_usage_and_truncation() {
        let r = parse_response(&json!({
            "id": "resp_1", "object": "response", "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "Checking."}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "ral",
                 "arguments": "{\"cmd\":\"ls\"}"},
                {"type": "function_call", "id": "fc_2", "call_id": "call_10", "name": "ral",
                 "arguments": "{oops"},
            ],
            "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 60},
                      "output_tokens": 9},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.blocks[0], Block::Text("Checking.".into()));
        assert_eq!(
            r.blocks[1],
            Block::ToolUse {
                id: "call_9".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "ls"}))
            }
        );
        assert!(matches!(
            &r.blocks[2],
            Block::ToolUse {
                input: ToolArgs::Invalid { .. },
                ..
            }
        ));
        assert_eq!(r.usage.input_tokens, 40);
        assert_eq!(r.usage.cache_read_input_tokens, 60);
        let cut = parse_response(&json!({
            "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Half"}]}],
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cut.stop, StopReason::MaxTokens);
        assert!(parse_response(&json!({"error": {"message": "bad"}})).is_err());
        assert!(parse_response(&json!({"status": "completed"})).is_err());
    }

    fn ev(data: Value) -> SseEvent {
        SseEvent {
            event: data["type"].as_str().map(str::to_owned),
            data: data.to_string(),
        }
    }

    #[test]
    fn streamed_events_assemble_text_and_calls() {
        let mut acc = Accum::default();
        let mut seen = String::new();
        struct Text<'a>(&'a mut String);
        impl Observer for Text<'_> {
            fn text_delta(&mut self, d: &str) {
                self.0.push_str(d);
            }
        }
        let events = [
            json!({"type": "response.created", "response": {"id": "r", "status": "in_progress"}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "message", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "look."}),
            json!({"type": "response.output_item.added", "output_index": 1,
                   "item": {"type": "function_call", "id": "fc_1", "call_id": "call_7", "name": "ral", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{\"cmd\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "\"let x = 1\"}"}),
            json!({"type": "response.output_item.done", "output_index": 1,
                   "item": {"type": "function_call", "call_id": "call_7", "name": "ral", "arguments": "{\"cmd\":\"let x = 1\"}"}}),
            // A call whose arguments come only with its done event.
            json!({"type": "response.output_item.added", "output_index": 2,
                   "item": {"type": "function_call", "call_id": "call_8", "name": "ral", "arguments": ""}}),
            json!({"type": "response.output_item.done", "output_index": 2,
                   "item": {"type": "function_call", "call_id": "call_8", "name": "ral", "arguments": "{\"cmd\":\"2\"}"}}),
            json!({"type": "response.completed", "response": {"status": "completed",
                   "usage": {"input_tokens": 12, "output_tokens": 4}}}),
        ];
        for e in &events {
            assert!(stream_event(&mut acc, &ev(e.clone()), &mut Text(&mut seen)).is_ok());
        }
        assert!(acc.done);
        let r = acc.finish();
        assert_eq!(seen, "Let me look.");
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.usage.input_tokens, 12);
        assert_eq!(r.blocks.len(), 3);
        assert_eq!(
            r.blocks[1],
            Block::ToolUse {
                id: "call_7".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "let x = 1"}))
            }
        );
        assert_eq!(
            r.blocks[2],
            Block::ToolUse {
                id: "call_8".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "2"}))
            }
        );
    }

    #[test]
    fn failed_responses_are_faults_and_overflows_say_so() {
        let mut acc = Accum::default();
        let failed = ev(
            json!({"type": "response.failed", "response": {"status": "failed",
            "error": {"code": "context_length_exceeded",
                      "message": "Your input exceeds the context window of this model."}}}),
        );
        let Err(f) = stream_event(&mut acc, &failed, &mut ()) else {
            panic!("expected a fault")
        };
        assert!(f.overflow.is_some() && !f.retryable, "{}", f.message);
        let busy = ev(json!({"type": "error", "code": "server_error", "message": "try again"}));
        let Err(f) = stream_event(&mut acc, &busy, &mut ()) else {
            panic!("expected a fault")
        };
        assert!(f.retryable && f.overflow.is_none());
        let mut cut = Accum::default();
        let inc = ev(
            json!({"type": "response.incomplete", "response": {"status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"}}}),
        );
        assert!(stream_event(&mut cut, &inc, &mut ()).is_ok());
        assert_eq!(cut.finish().stop, StopReason::MaxTokens);
    }
}
