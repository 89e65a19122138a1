//! The OpenAI Chat Completions wire format (also spoken by OpenRouter,
//! vLLM, llama.cpp, Ollama and most local servers).
//!
//! Tool calls are `tool_calls` on the assistant message, their arguments a
//! JSON *string*; results go back as one `role: "tool"` message per call.
//! Streaming chunks carry `choices[0].delta` (text in `content`, tool calls
//! as fragments keyed by `index`), `finish_reason` on the last choice
//! chunk, usage on a final chunk with no choices (requested with
//! `stream_options.include_usage`), then `data: [DONE]`.

use serde_json::{json, Value};

use super::sse::SseEvent;
use super::{Accum, ChatRequest, Observer, StreamFault};
use crate::message::{Block, Message, Reply, Role, StopReason, ToolArgs, Usage};

/// The key of the text part in the accumulator (tool calls use their
/// index).
const TEXT_KEY: u64 = u64::MAX;

/// The request body.
pub fn request_body(
    req: &ChatRequest<'_>,
    model: &str,
    max_tokens: Option<u32>,
    streaming: bool,
) -> Value {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in req.messages {
        push_message(&mut messages, m);
    }
    let mut body = json!({"model": model, "messages": messages});
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.schema,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(n) = req.max_tokens.or(max_tokens) {
        body["max_completion_tokens"] = json!(n);
    }
    if streaming {
        body["stream"] = Value::Bool(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn push_message(out: &mut Vec<Value>, m: &Message) {
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in &m.blocks {
        match b {
            Block::Text(t) => text.push_str(t),
            Block::ToolUse { id, name, input } => calls.push(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": input.replay_object().to_string()},
            })),
            Block::ToolResult { id, content, .. } => {
                out.push(json!({"role": "tool", "tool_call_id": id, "content": content}));
            }
        }
    }
    match m.role {
        Role::User if !text.is_empty() => out.push(json!({"role": "user", "content": text})),
        Role::User => {}
        Role::Assistant if text.is_empty() && calls.is_empty() => {}
        Role::Assistant => {
            let mut msg = json!({"role": "assistant"});
            msg["content"] = if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            if !calls.is_empty() {
                msg["tool_calls"] = Value::Array(calls);
            }
            out.push(msg);
        }
    }
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "stop" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

/// Maps OpenAI usage onto the four buckets: cached prompt tokens are cache
/// reads and leave the input count.
fn read_usage(v: &Value) -> Usage {
    let n = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    let prompt = n("/prompt_tokens");
    let cached = n("/prompt_tokens_details/cached_tokens").min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: n("/completion_tokens"),
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: cached,
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
    let choice = v
        .pointer("/choices/0")
        .ok_or("the response has no `choices`")?;
    let msg = choice.get("message").ok_or("the choice has no `message`")?;
    let mut blocks = Vec::new();
    if let Some(t) = msg.get("content").and_then(Value::as_str) {
        if !t.is_empty() {
            blocks.push(Block::Text(t.to_owned()));
        }
    }
    if let Some(calls) = msg.get("tool_calls").and_then(Value::as_array) {
        for (n, c) in calls.iter().enumerate() {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{}", n + 1), str::to_owned);
            let name = c
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let input = match c.pointer("/function/arguments") {
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
    }
    let has_tools = blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop = match choice.get("finish_reason").and_then(Value::as_str) {
        Some(s) => stop_reason(s),
        None if has_tools => StopReason::ToolUse,
        None => StopReason::EndTurn,
    };
    let usage = v.get("usage").map(read_usage).unwrap_or_default();
    Ok(Reply {
        blocks,
        stop,
        usage,
        attempts: 1,
    })
}

/// One streamed chunk.
pub(crate) fn stream_event(
    acc: &mut Accum,
    ev: &SseEvent,
    obs: &mut dyn Observer,
) -> Result<(), StreamFault> {
    let data = ev.data.trim();
    if data == "[DONE]" {
        acc.done = true;
        return Ok(());
    }
    if data.is_empty() {
        return Ok(());
    }
    let v: Value = serde_json::from_str(data)
        .map_err(|e| StreamFault::protocol(format!("a chunk that is not JSON ({e})")))?;
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        let msg = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        let overflow = (e.get("code").and_then(Value::as_str) == Some("context_length_exceeded"))
            .then(|| super::overflow_counts(msg));
        return Err(StreamFault {
            message: format!("the server reported an error mid-stream: {msg}"),
            retryable: overflow.is_none(),
            overflow,
        });
    }
    if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
        acc.usage = read_usage(u);
    }
    let Some(choice) = v.pointer("/choices/0") else {
        return Ok(());
    };
    if let Some(delta) = choice.get("delta") {
        if let Some(t) = delta.get("content").and_then(Value::as_str) {
            acc.text(TEXT_KEY, t, obs);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (n, c) in calls.iter().enumerate() {
                let index = c.get("index").and_then(Value::as_u64).unwrap_or(n as u64);
                let id = c.get("id").and_then(Value::as_str);
                let name = c.pointer("/function/name").and_then(Value::as_str);
                let args = c
                    .pointer("/function/arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                acc.tool(index, id, name, args);
            }
        }
    }
    if let Some(s) = choice.get("finish_reason").and_then(Value::as_str) {
        acc.stop = Some(stop_reason(s));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolSpec;

    #[test]
    fn bodies_carry_tool_messages_and_string_arguments() {
        let history = vec![
            Message::user_text("hi"),
            Message {
                role: Role::Assistant,
                blocks: vec![Block::ToolUse {
                    id: "call_1".into(),
                    name: "ral".into(),
                    input: ToolArgs::Json(json!({"cmd": "ls"})),
                }],
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
        let b = request_body(&req, "gpt", Some(99), true);
        let msgs = b["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("messages"));
        assert_eq!(msgs[0]["role"], "system");
        assert_eq!(msgs[2]["content"], Value::Null);
        assert_eq!(
            msgs[2]["tool_calls"][0]["function"]["arguments"],
            "{\"cmd\":\"ls\"}"
        );
        assert_eq!(msgs[3]["role"], "tool");
        assert_eq!(msgs[3]["tool_call_id"], "call_1");
        assert_eq!(msgs[4]["content"], "and now?");
        assert_eq!(b["max_completion_tokens"], json!(99));
        assert_eq!(b["stream_options"]["include_usage"], json!(true));
        assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");
        let plain = request_body(&req, "gpt", None, false);
        assert!(plain.get("stream").is_none() && plain.get("max_completion_tokens").is_none());
    }

    #[test]
    fn plain_responses_parse_with_bad_arguments_kept() {
        let r = parse_response(&json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "ral", "arguments": "{\"cmd\":\"1\"}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "ral", "arguments": "{oops"}},
                ]}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 9,
                      "prompt_tokens_details": {"cached_tokens": 60}},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.stop, StopReason::ToolUse);
        assert_eq!(r.usage.input_tokens, 40);
        assert_eq!(r.usage.cache_read_input_tokens, 60);
        assert!(matches!(
            &r.blocks[1],
            Block::ToolUse {
                input: ToolArgs::Invalid { .. },
                ..
            }
        ));
        assert!(parse_response(&json!({"error": {"message": "bad key"}})).is_err());
    }

    #[test]
    fn streamed_chunks_accumulate_by_index() {
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sure"}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "call_a", "type": "function", "function": {"name": "ral", "arguments": ""}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": "{\"cmd\":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": "\"echo 1\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 4}}),
        ];
        let mut acc = Accum::default();
        for c in &chunks {
            let e = SseEvent {
                event: None,
                data: c.to_string(),
            };
            assert!(stream_event(&mut acc, &e, &mut ()).is_ok());
        }
        let done = SseEvent {
            event: None,
            data: "[DONE]".into(),
        };
        assert!(stream_event(&mut acc, &done, &mut ()).is_ok());
        assert!(acc.done && acc.delivered_text);
        let r = acc.finish();
        assert_eq!(r.usage.input_tokens, 12);
        assert_eq!(r.blocks[0], Block::Text("Sure".into()));
        assert_eq!(
            r.blocks[1],
            Block::ToolUse {
                id: "call_a".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "echo 1"})),
            }
        );
    }
}
