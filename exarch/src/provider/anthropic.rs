//! The Anthropic Messages wire format.
//!
//! Requests mark the stable prefix `cache_control: ephemeral` (prompt
//! caching: a marked prefix is written once and re-read at the cache
//! price), with the four breakpoints the API allows: the last tool schema
//! (tools come first in the cached order), the system prompt, the last
//! block of the last message (the whole conversation, which the next
//! request repeats and so reads back), and the last block of the user
//! message before it (the prefix the previous request wrote, read back
//! when the newest message pushed it past the cache's lookback).
//! Streaming events: `message_start` (input usage), `content_block_start`
//! (a text block, or a `tool_use` block with its id and name),
//! `content_block_delta` (`text_delta`, or `input_json_delta` fragments of
//! the tool input), `content_block_stop`, `message_delta` (the stop
//! reason, cumulative output usage), `message_stop`, `ping`, and `error`.

use serde_json::{json, Value};

use super::sse::SseEvent;
use super::{Accum, ChatRequest, Observer, StreamFault};
use crate::message::{Block, Message, Reply, Role, StopReason, ToolArgs, Usage};

/// The output cap sent when none is configured (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 16_384;

/// The request body.
pub fn request_body(
    req: &ChatRequest<'_>,
    model: &str,
    max_tokens: Option<u32>,
    streaming: bool,
) -> Value {
    let mut messages = wire_messages(req.messages);
    let n = messages.len();
    let mut marks = vec![n.checked_sub(1)];
    // The user message before the last one (messages alternate, so two
    // back from a final user message).
    marks.push(n.checked_sub(3));
    for i in marks.into_iter().flatten() {
        if let Some(last) = messages
            .get_mut(i)
            .and_then(|m| m.get_mut("content"))
            .and_then(Value::as_array_mut)
            .and_then(|c| c.last_mut())
            .and_then(Value::as_object_mut)
        {
            last.insert("cache_control".into(), json!({"type": "ephemeral"}));
        }
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}))
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut body = json!({
        "model": model,
        "max_tokens": req.max_tokens.or(max_tokens).unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
    });
    if !req.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": req.system,
            "cache_control": {"type": "ephemeral"},
        }]);
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if streaming {
        body["stream"] = Value::Bool(true);
    }
    body
}

/// The conversation as Anthropic messages: empty messages dropped and
/// adjacent messages of one role merged (the API wants them alternating
/// and non-empty), tool results first in their user message.
fn wire_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(Role, Vec<Value>)> = Vec::new();
    for m in messages {
        let mut results = Vec::new();
        let mut rest = Vec::new();
        for b in &m.blocks {
            match b {
                Block::Text(t) if t.is_empty() => {}
                Block::Text(t) => rest.push(json!({"type": "text", "text": t})),
                Block::ToolUse { id, name, input } => rest.push(json!({
                    "type": "tool_use", "id": id, "name": name, "input": input.replay_object(),
                })),
                Block::ToolResult {
                    id,
                    content,
                    is_error,
                } => {
                    let mut r =
                        json!({"type": "tool_result", "tool_use_id": id, "content": content});
                    if *is_error {
                        r["is_error"] = Value::Bool(true);
                    }
                    results.push(r);
                }
            }
        }
        results.extend(rest);
        if results.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((role, blocks)) if *role == m.role => blocks.extend(results),
            Some(_) | None => out.push((m.role, results)),
        }
    }
    out.into_iter()
        .map(|(role, content)| {
            let role = match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            json!({"role": role, "content": content})
        })
        .collect()
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

fn count(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Reads the usage fields present in `v` over `u` (message_delta repeats
/// only some of them).
fn read_usage(u: &mut Usage, v: &Value) {
    if let Some(n) = count(v, "input_tokens") {
        u.input_tokens = n;
    }
    if let Some(n) = count(v, "output_tokens") {
        u.output_tokens = n;
    }
    if let Some(n) = count(v, "cache_creation_input_tokens") {
        u.cache_creation_input_tokens = n;
    }
    if let Some(n) = count(v, "cache_read_input_tokens") {
        u.cache_read_input_tokens = n;
    }
}

/// A whole (non-streamed) response.
pub fn parse_response(v: &Value) -> Result<Reply, String> {
    if v.get("type").and_then(Value::as_str) == Some("error") {
        let msg = v
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("an error without a message");
        return Err(format!("the server reported an error: {msg}"));
    }
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or("the response has no `content` array")?;
    let mut blocks = Vec::new();
    for b in content {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b.get("text").and_then(Value::as_str).unwrap_or_default();
                if !t.is_empty() {
                    blocks.push(Block::Text(t.to_owned()));
                }
            }
            Some("tool_use") => {
                let id = b.get("id").and_then(Value::as_str).unwrap_or_default();
                let name = b.get("name").and_then(Value::as_str).unwrap_or_default();
                let input = b.get("input").cloned().unwrap_or(Value::Null);
                blocks.push(Block::ToolUse {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    input: ToolArgs::Json(input),
                });
            }
            // Thinking and other block kinds are not requested; skip them.
            Some(_) | None => {}
        }
    }
    let mut usage = Usage::default();
    if let Some(u) = v.get("usage") {
        read_usage(&mut usage, u);
    }
    let has_tools = blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop = match v.get("stop_reason").and_then(Value::as_str) {
        Some(s) => stop_reason(s),
        None if has_tools => StopReason::ToolUse,
        None => StopReason::EndTurn,
    };
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
    let v: Value = match serde_json::from_str(&ev.data) {
        Ok(v) => v,
        Err(e) => {
            return Err(StreamFault::protocol(format!(
                "an event that is not JSON ({e})"
            )))
        }
    };
    let kind = ev
        .event
        .as_deref()
        .or_else(|| v.get("type").and_then(Value::as_str))
        .unwrap_or_default();
    let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
    match kind {
        "message_start" => {
            if let Some(u) = v.pointer("/message/usage") {
                read_usage(&mut acc.usage, u);
            }
        }
        "content_block_start" => {
            let block = v.get("content_block").unwrap_or(&Value::Null);
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let id = block.get("id").and_then(Value::as_str);
                    let name = block.get("name").and_then(Value::as_str);
                    acc.tool(index, id, name, "");
                }
                Some("text") => {
                    let t = block
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    acc.text(index, t, obs);
                }
                Some(_) | None => {}
            }
        }
        "content_block_delta" => {
            let delta = v.get("delta").unwrap_or(&Value::Null);
            match delta.get("type").and_then(Value::as_str) {
                Some("text_delta") => {
                    let t = delta
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    acc.text(index, t, obs);
                }
                Some("input_json_delta") => {
                    let j = delta
                        .get("partial_json")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    acc.tool(index, None, None, j);
                }
                Some(_) | None => {}
            }
        }
        "message_delta" => {
            if let Some(s) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                acc.stop = Some(stop_reason(s));
            }
            if let Some(u) = v.get("usage") {
                read_usage(&mut acc.usage, u);
            }
        }
        "message_stop" => acc.done = true,
        "error" => {
            let kind = v
                .pointer("/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let msg = v
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            let overflow = (kind == "invalid_request_error"
                && msg.to_ascii_lowercase().contains("prompt is too long"))
            .then(|| super::overflow_counts(msg));
            return Err(StreamFault {
                message: format!("{kind}: {msg}"),
                retryable: matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error"),
                overflow,
            });
        }
        // ping, content_block_stop, and kinds added later.
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    #[test]
    fn bodies_put_results_first_merge_roles_and_mark_the_cache() {
        let history = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                blocks: vec![
                    Block::Text("ok".into()),
                    Block::ToolUse {
                        id: "t1".into(),
                        name: "ral".into(),
                        input: ToolArgs::Invalid {
                            raw: "{".into(),
                            error: "eof".into(),
                        },
                    },
                ],
            },
            Message {
                role: Role::User,
                blocks: vec![Block::ToolResult {
                    id: "t1".into(),
                    content: "tool input error: x".into(),
                    is_error: true,
                }],
            },
            Message::user_text("more"),
            Message {
                role: Role::Assistant,
                blocks: vec![],
            },
        ];
        let tools = [ToolSpec {
            name: "ral".into(),
            description: "d".into(),
            schema: json!({"type": "object"}),
        }];
        let req = ChatRequest::new("sys", &history, &tools);
        let b = request_body(&req, "m", None, true);
        assert_eq!(b["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(b["stream"], json!(true));
        assert_eq!(b["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
        let msgs = b["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("messages"));
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert_eq!(msgs[1]["content"][1]["input"], json!({}));
        assert_eq!(msgs[2]["content"][0]["type"], "tool_result");
        assert_eq!(msgs[2]["content"][0]["is_error"], json!(true));
        assert_eq!(msgs[2]["content"][1]["text"], "more");
        assert_eq!(msgs[2]["content"][1]["cache_control"]["type"], "ephemeral");
        // The user message before the last one, and the tools, are marked.
        assert_eq!(msgs[0]["content"][0]["cache_control"]["type"], "ephemeral");
        assert!(msgs[1]["content"][1].get("cache_control").is_none());
        assert_eq!(b["tools"][0]["cache_control"]["type"], "ephemeral");
        let capped = request_body(
            &ChatRequest {
                max_tokens: Some(77),
                ..req
            },
            "m",
            Some(5),
            false,
        );
        assert_eq!(capped["max_tokens"], json!(77));
    }

    #[test]
    fn plain_responses_parse() {
        let r = parse_response(&json!({
            "content": [
                {"type": "text", "text": "Counting."},
                {"type": "tool_use", "id": "toolu_1", "name": "ral", "input": {"cmd": "ls"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5,
                      "cache_creation_input_tokens": 3, "cache_read_input_tokens": 2},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.usage.cache_creation_input_tokens, 3);
        assert_eq!(r.blocks.len(), 2);
        assert!(parse_response(&json!({"type": "error", "error": {"message": "no"}})).is_err());
        assert!(parse_response(&json!({"nope": 1})).is_err());
    }

    fn ev(kind: &str, data: Value) -> SseEvent {
        SseEvent {
            event: Some(kind.into()),
            data: data.to_string(),
        }
    }

    #[test]
    fn streamed_tool_calls_assemble_from_fragments() {
        let mut acc = Accum::default();
        let mut seen = String::new();
        struct Text<'a>(&'a mut String);
        impl Observer for Text<'_> {
            fn text_delta(&mut self, d: &str) {
                self.0.push_str(d);
            }
        }
        let events = [
            ev(
                "message_start",
                json!({"message": {"usage": {"input_tokens": 7, "output_tokens": 1}}}),
            ),
            ev(
                "content_block_start",
                json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            ev(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": "Let me "}}),
            ),
            ev(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": "look."}}),
            ),
            ev("ping", json!({})),
            ev(
                "content_block_start",
                json!({"index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "ral", "input": {}}}),
            ),
            ev(
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"cmd\": \"l"}}),
            ),
            ev(
                "content_block_delta",
                json!({"index": 1, "delta": {"type": "input_json_delta", "partial_json": "et x = 1\"}"}}),
            ),
            ev("content_block_stop", json!({"index": 1})),
            ev(
                "message_delta",
                json!({"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}),
            ),
            ev("message_stop", json!({})),
        ];
        for e in &events {
            assert!(stream_event(&mut acc, e, &mut Text(&mut seen)).is_ok());
        }
        assert!(acc.done);
        let r = acc.finish();
        assert_eq!(seen, "Let me look.");
        assert_eq!(r.usage.input_tokens, 7);
        assert_eq!(r.usage.output_tokens, 30);
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(
            r.blocks[1],
            Block::ToolUse {
                id: "toolu_9".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "let x = 1"})),
            }
        );
    }

    #[test]
    fn an_overloaded_event_is_a_retryable_fault() {
        let mut acc = Accum::default();
        let e = ev(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        let Err(f) = stream_event(&mut acc, &e, &mut ()) else {
            panic!("expected a fault");
        };
        assert!(f.retryable);
        assert!(f.message.contains("Overloaded"));
    }
}
