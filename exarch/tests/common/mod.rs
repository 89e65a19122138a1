//! A fake LLM server on 127.0.0.1 for the provider and end-to-end tests.
//!
//! A plain HTTP/1.1 server on a std thread: it answers each POST with the
//! next canned reply of its script (a JSON body with a status and headers,
//! or an SSE stream written event by event, optionally cut short), closes
//! the connection after each answer, and records every request (path,
//! headers, parsed JSON body). An exhausted script answers 418, which no
//! client retries. Every wait is bounded; the server stops when dropped.
//!
//! Builders for both wire formats' replies are below.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

/// One canned answer.
#[derive(Clone, Debug)]
pub enum Canned {
    /// A whole body.
    Json {
        status: u16,
        headers: Vec<(String, String)>,
        body: Value,
    },
    /// An SSE stream; `cut` closes the connection after that many events
    /// without finishing; `pause` waits between events.
    Sse {
        events: Vec<String>,
        cut: Option<usize>,
        pause: Duration,
    },
    /// Waits this long before answering with the inner reply.
    Delay(Duration, Box<Canned>),
}

impl Canned {
    pub fn ok(body: Value) -> Canned {
        Canned::Json {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    pub fn status(status: u16, body: Value) -> Canned {
        Canned::Json {
            status,
            headers: Vec::new(),
            body,
        }
    }

    pub fn with_header(self, k: &str, v: &str) -> Canned {
        match self {
            Canned::Json {
                status,
                mut headers,
                body,
            } => {
                headers.push((k.to_owned(), v.to_owned()));
                Canned::Json {
                    status,
                    headers,
                    body,
                }
            }
            other @ (Canned::Sse { .. } | Canned::Delay(..)) => other,
        }
    }

    pub fn sse(events: Vec<String>) -> Canned {
        Canned::Sse {
            events,
            cut: None,
            pause: Duration::ZERO,
        }
    }

    pub fn sse_cut(events: Vec<String>, after: usize) -> Canned {
        Canned::Sse {
            events,
            cut: Some(after),
            pause: Duration::ZERO,
        }
    }
}

/// A recorded request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every tool result string in the request, any wire format.
    pub fn tool_results(&self) -> Vec<String> {
        let mut out = Vec::new();
        for item in self.body["input"].as_array().cloned().unwrap_or_default() {
            if item["type"] == "function_call_output" {
                out.push(item["output"].as_str().unwrap_or_default().to_owned());
            }
        }
        for m in self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            if m["role"] == "tool" {
                out.push(m["content"].as_str().unwrap_or_default().to_owned());
            }
            if let Some(blocks) = m["content"].as_array() {
                for b in blocks {
                    if b["type"] == "tool_result" {
                        out.push(b["content"].as_str().unwrap_or_default().to_owned());
                    }
                }
            }
        }
        out
    }
}

/// Answers a request from what it holds (a server with a context limit,
/// a model that counts its calls).
pub type Responder = Arc<dyn Fn(&Seen) -> Canned + Send + Sync>;

struct State {
    script: VecDeque<Canned>,
    seen: Vec<Seen>,
    responder: Option<Responder>,
}

/// See the module docs.
pub struct FakeServer {
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(script: Vec<Canned>) -> FakeServer {
        FakeServer::launch(script, None)
    }

    /// A server that answers each request with `f` of it.
    pub fn responding(f: impl Fn(&Seen) -> Canned + Send + Sync + 'static) -> FakeServer {
        FakeServer::launch(Vec::new(), Some(Arc::new(f)))
    }

    fn launch(script: Vec<Canned>, responder: Option<Responder>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            seen: Vec::new(),
            responder,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !sp.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let st = st.clone();
                        let sp = sp.clone();
                        std::thread::spawn(move || serve(stream, &st, &sp));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer {
            addr,
            state,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }

    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = Vec::new();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() {
            return;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_owned(), v.trim().to_owned());
            if k.eq_ignore_ascii_case("content-length") {
                len = v.parse().unwrap_or(0);
            }
            headers.push((k, v));
        }
    }
    let mut body = vec![0u8; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let seen = Seen {
        path,
        headers,
        body,
    };
    let (next, responder) = {
        let mut s = state.lock().unwrap();
        s.seen.push(seen.clone());
        match s.responder.clone() {
            Some(r) => (None, Some(r)),
            None => (s.script.pop_front(), None),
        }
    };
    let next = match responder {
        Some(r) => Some(r(&seen)),
        None => next,
    };
    let mut out = stream;
    let reply = next.unwrap_or_else(|| {
        Canned::status(
            418,
            json!({"error": {"message": "fake server: the script is exhausted"}}),
        )
    });
    answer(&mut out, reply, stop);
}

fn answer(out: &mut TcpStream, reply: Canned, stop: &AtomicBool) {
    match reply {
        Canned::Delay(d, inner) => {
            let until = std::time::Instant::now() + d;
            while std::time::Instant::now() < until && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            answer(out, *inner, stop);
        }
        Canned::Json {
            status,
            headers,
            body,
        } => {
            let text = body.to_string();
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                text.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = out.write_all(head.as_bytes());
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        Canned::Sse { events, cut, pause } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            if out.write_all(head.as_bytes()).is_err() {
                return;
            }
            for (i, ev) in events.iter().enumerate() {
                if cut == Some(i) {
                    break;
                }
                if out.write_all(ev.as_bytes()).is_err() {
                    return;
                }
                let _ = out.flush();
                if !pause.is_zero() {
                    std::thread::sleep(pause);
                }
            }
        }
    }
    let _ = out.shutdown(std::net::Shutdown::Both);
}

/// Every run's `log.jsonl` under a log root (`ROOT/PROJECT/RUN/log.jsonl`).
pub fn run_logs(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for project in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for run in std::fs::read_dir(project.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let log = run.path().join("log.jsonl");
            if log.is_file() {
                out.push(log);
            }
        }
    }
    out.sort();
    out
}

// ---- Anthropic Messages ----------------------------------------------------

pub fn anth_usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output,
           "cache_creation_input_tokens": 2, "cache_read_input_tokens": 1})
}

pub fn anth_text(text: &str) -> Value {
    json!({"id": "msg_t", "type": "message", "role": "assistant", "model": "m",
           "content": [{"type": "text", "text": text}],
           "stop_reason": "end_turn", "usage": anth_usage(10, 5)})
}

pub fn anth_tool(id: &str, input: Value) -> Value {
    json!({"id": "msg_c", "type": "message", "role": "assistant", "model": "m",
           "content": [{"type": "text", "text": "Working."},
                       {"type": "tool_use", "id": id, "name": "ral", "input": input}],
           "stop_reason": "tool_use", "usage": anth_usage(10, 5)})
}

fn ev(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// An Anthropic stream of `text` whose usage says `input` prompt tokens.
pub fn anth_sse_text_usage(text: &str, input: u64) -> Vec<String> {
    with_anth_input(anth_sse_text(text), input)
}

/// An Anthropic stream of one `ral` call whose usage says `input` prompt
/// tokens.
pub fn anth_sse_tool_usage(id: &str, input: Value, prompt: u64) -> Vec<String> {
    with_anth_input(anth_sse_tool(id, input), prompt)
}

fn with_anth_input(mut events: Vec<String>, input: u64) -> Vec<String> {
    events[0] = ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}),
    );
    events
}

pub fn anth_sse_text(text: &str) -> Vec<String> {
    let mid = text.len() / 2;
    let (a, b) = text.split_at(
        text.char_indices()
            .map(|(i, _)| i)
            .find(|&i| i >= mid)
            .unwrap_or(0),
    );
    vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 1, "cache_creation_input_tokens": 2}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": a}}),
        ),
        ": keep-alive comment\n\n".to_owned(),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": b}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
}

pub fn anth_sse_tool(id: &str, input: Value) -> Vec<String> {
    let json_text = input.to_string();
    let mid = json_text.len() / 2;
    let cut = json_text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= mid)
        .unwrap_or(0);
    let (a, b) = json_text.split_at(cut);
    vec![
        ev(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 1, "cache_creation_input_tokens": 2}}}),
        ),
        ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": "ral", "input": {}}}),
        ),
        ev("ping", json!({"type": "ping"})),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": a}}),
        ),
        ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": b}}),
        ),
        ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        ev(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
        ),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
}

// ---- OpenAI Chat Completions ------------------------------------------------

pub fn oai_usage(prompt: u64, completion: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion,
           "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": 1}})
}

pub fn oai_text(text: &str) -> Value {
    json!({"id": "c", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text}}],
           "usage": oai_usage(11, 5)})
}

pub fn oai_tool(id: &str, input: Value) -> Value {
    json!({"id": "c", "object": "chat.completion", "model": "m",
           "choices": [{"index": 0, "finish_reason": "tool_calls",
                        "message": {"role": "assistant", "content": null,
                                    "tool_calls": [{"id": id, "type": "function",
                                        "function": {"name": "ral", "arguments": input.to_string()}}]}}],
           "usage": oai_usage(11, 5)})
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

pub fn oai_sse_text(text: &str) -> Vec<String> {
    let mid = text.len() / 2;
    let cut = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= mid)
        .unwrap_or(0);
    let (a, b) = text.split_at(cut);
    vec![
        data(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": a}}]})),
        data(json!({"choices": [{"index": 0, "delta": {"content": b}}]})),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})),
        data(json!({"choices": [], "usage": oai_usage(11, 5)})),
        "data: [DONE]\n\n".to_owned(),
    ]
}

pub fn oai_sse_tool(id: &str, input: Value) -> Vec<String> {
    let args = input.to_string();
    let mid = args.len() / 2;
    let cut = args
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= mid)
        .unwrap_or(0);
    let (a, b) = args.split_at(cut);
    vec![
        data(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [
            {"index": 0, "id": id, "type": "function", "function": {"name": "ral", "arguments": ""}}]}}]}),
        ),
        data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": a}}]}}]})),
        data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": b}}]}}]})),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})),
        data(json!({"choices": [], "usage": oai_usage(11, 5)})),
        "data: [DONE]\n\n".to_owned(),
    ]
}

// ---- OpenAI Responses ----------------------------------------------------------

pub fn resp_usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": 1},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": input + output})
}

pub fn resp_text(text: &str) -> Value {
    json!({"id": "resp_t", "object": "response", "status": "completed", "model": "m",
           "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]}],
           "usage": resp_usage(11, 5)})
}

pub fn resp_tool(id: &str, input: Value) -> Value {
    json!({"id": "resp_c", "object": "response", "status": "completed", "model": "m",
           "output": [
               {"type": "reasoning", "id": "rs_1", "summary": []},
               {"type": "function_call", "id": "fc_1", "status": "completed", "call_id": id,
                "name": "ral", "arguments": input.to_string()}],
           "usage": resp_usage(11, 5)})
}

fn resp_ev(v: Value) -> String {
    let name = v["type"].as_str().unwrap_or("message").to_owned();
    format!("event: {name}\ndata: {v}\n\n")
}

fn resp_done(usage: Value) -> String {
    resp_ev(json!({"type": "response.completed", "sequence_number": 9,
                   "response": {"id": "r", "object": "response", "status": "completed", "usage": usage}}))
}

pub fn resp_sse_text(text: &str) -> Vec<String> {
    let mid = text.len() / 2;
    let cut = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= mid)
        .unwrap_or(0);
    let (a, b) = text.split_at(cut);
    vec![
        resp_ev(json!({"type": "response.created", "sequence_number": 0,
                       "response": {"id": "r", "status": "in_progress"}})),
        resp_ev(
            json!({"type": "response.output_item.added", "output_index": 0,
                       "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        resp_ev(
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                       "item_id": "msg_1", "delta": a}),
        ),
        ": keep-alive comment\n\n".to_owned(),
        resp_ev(
            json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0,
                       "item_id": "msg_1", "delta": b}),
        ),
        resp_ev(
            json!({"type": "response.output_text.done", "output_index": 0, "content_index": 0,
                       "text": text}),
        ),
        resp_ev(
            json!({"type": "response.output_item.done", "output_index": 0,
                       "item": {"type": "message", "id": "msg_1", "role": "assistant",
                                "content": [{"type": "output_text", "text": text}]}}),
        ),
        resp_done(resp_usage(11, 5)),
    ]
}

pub fn resp_sse_tool(id: &str, input: Value) -> Vec<String> {
    let args = input.to_string();
    let mid = args.len() / 2;
    let cut = args
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| i >= mid)
        .unwrap_or(0);
    let (a, b) = args.split_at(cut);
    vec![
        resp_ev(json!({"type": "response.created", "sequence_number": 0,
                       "response": {"id": "r", "status": "in_progress"}})),
        resp_ev(
            json!({"type": "response.output_item.added", "output_index": 0,
                       "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        ),
        resp_ev(
            json!({"type": "response.output_item.added", "output_index": 1,
                       "item": {"type": "function_call", "id": "fc_1", "call_id": id, "name": "ral",
                                "arguments": ""}}),
        ),
        resp_ev(
            json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                       "item_id": "fc_1", "delta": a}),
        ),
        resp_ev(
            json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                       "item_id": "fc_1", "delta": b}),
        ),
        resp_ev(
            json!({"type": "response.function_call_arguments.done", "output_index": 1,
                       "item_id": "fc_1", "arguments": args}),
        ),
        resp_ev(
            json!({"type": "response.output_item.done", "output_index": 1,
                       "item": {"type": "function_call", "id": "fc_1", "call_id": id, "name": "ral",
                                "arguments": args}}),
        ),
        resp_done(resp_usage(11, 5)),
    ]
}

// ---- Any -----------------------------------------------------------------------

/// Which wire and whether to stream: the six combinations the tests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAi,
    /// OpenAI's Responses API (`--provider openai --openai-api responses`).
    Responses,
}

impl Wire {
    /// The `--provider` value.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi | Wire::Responses => "openai",
        }
    }

    /// The command-line arguments that select this wire.
    pub fn args(self) -> Vec<&'static str> {
        match self {
            Wire::Anthropic => vec!["--provider", "anthropic"],
            Wire::OpenAi => vec!["--provider", "openai", "--openai-api", "chat"],
            Wire::Responses => vec!["--provider", "openai", "--openai-api", "responses"],
        }
    }

    /// The system prompt of a request on this wire.
    pub fn system_of(self, body: &Value) -> String {
        let s = match self {
            Wire::Anthropic => &body["system"][0]["text"],
            Wire::OpenAi => &body["messages"][0]["content"],
            Wire::Responses => &body["instructions"],
        };
        s.as_str().unwrap_or_default().to_owned()
    }

    pub fn text(self, stream: bool, text: &str) -> Canned {
        match (self, stream) {
            (Wire::Anthropic, false) => Canned::ok(anth_text(text)),
            (Wire::Anthropic, true) => Canned::sse(anth_sse_text(text)),
            (Wire::OpenAi, false) => Canned::ok(oai_text(text)),
            (Wire::OpenAi, true) => Canned::sse(oai_sse_text(text)),
            (Wire::Responses, false) => Canned::ok(resp_text(text)),
            (Wire::Responses, true) => Canned::sse(resp_sse_text(text)),
        }
    }

    pub fn tool(self, stream: bool, id: &str, input: Value) -> Canned {
        match (self, stream) {
            (Wire::Anthropic, false) => Canned::ok(anth_tool(id, input)),
            (Wire::Anthropic, true) => Canned::sse(anth_sse_tool(id, input)),
            (Wire::OpenAi, false) => Canned::ok(oai_tool(id, input)),
            (Wire::OpenAi, true) => Canned::sse(oai_sse_tool(id, input)),
            (Wire::Responses, false) => Canned::ok(resp_tool(id, input)),
            (Wire::Responses, true) => Canned::sse(resp_sse_tool(id, input)),
        }
    }

    /// One `ral` call.
    pub fn ral(self, stream: bool, id: &str, cmd: &str) -> Canned {
        self.tool(stream, id, json!({"cmd": cmd, "description": "a step"}))
    }
}
