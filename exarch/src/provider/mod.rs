//! LLM providers. tokio and the HTTP client live here and nowhere else:
//! the rest of exarch calls [`Provider::complete`], a synchronous method,
//! and gets a [`Reply`] or a [`ProviderError`].
//!
//! - [`HttpProvider`] speaks one of three wire formats ([`WireFormat`]):
//!   Anthropic Messages ([`anthropic`]), OpenAI Chat Completions
//!   ([`openai`]) and OpenAI Responses ([`responses`]). It streams (SSE, [`sse`]) unless told not to, and falls
//!   back to a plain request by itself when a server answers a streaming
//!   request with a JSON body or refuses it with a 400. Retries follow
//!   [`retry`]. A request polls the [`Control`] flags while it waits, so
//!   Ctrl-C, SIGTERM and the run's wall stop it within a few milliseconds.
//! - [`scripted::ScriptedProvider`] answers from a script, for tests and the
//!   bench.

pub mod anthropic;
pub mod openai;
pub mod responses;
pub mod retry;
pub mod scripted;
pub mod sse;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::control::{Control, Stop};
use crate::message::{Block, Message, Reply, StopReason, ToolArgs, Usage};
use retry::{retry_after, retryable_status, RetryPolicy};
use sse::{SseEvent, SseParser};

/// How often a waiting request looks at the stop flags.
const STOP_POLL: Duration = Duration::from_millis(10);

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON schema of its input.
    pub schema: serde_json::Value,
}

/// One request: the whole conversation so far.
#[derive(Clone, Copy, Debug)]
pub struct ChatRequest<'a> {
    pub system: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// The output cap for this request, over the provider's configured
    /// one (a summary request, a small context window).
    pub max_tokens: Option<u32>,
}

impl<'a> ChatRequest<'a> {
    /// A request with the provider's own output cap.
    pub fn new(system: &'a str, messages: &'a [Message], tools: &'a [ToolSpec]) -> ChatRequest<'a> {
        ChatRequest {
            system,
            messages,
            tools,
            max_tokens: None,
        }
    }
}

/// What a request reports while it runs. Every method has a default that
/// ignores the report.
pub trait Observer {
    /// Streamed text, as it arrives (the whole text at once when the answer
    /// was not streamed).
    fn text_delta(&mut self, _delta: &str) {}
    /// Attempt `attempt` failed for `why`; the next starts after `wait`.
    fn retrying(&mut self, _attempt: u32, _wait: Duration, _why: &str) {}
    /// Something worth a line in the log (a fallback to plain requests).
    fn note(&mut self, _text: &str) {}
}

impl Observer for () {}

/// What went wrong, broadly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProviderErrorKind {
    /// The server answered with this non-success status.
    Http(u16),
    /// No usable answer arrived (connect, reset, a silent stream).
    Transport,
    /// The answer could not be understood.
    Protocol,
    /// The request was stopped from outside.
    Stopped(Stop),
    /// A scripted provider ran out of replies (tests).
    Script,
    /// The server refused the prompt as longer than the model's context
    /// window (Anthropic's `prompt is too long`, OpenAI's
    /// `context_length_exceeded`), with the prompt's token count and the
    /// limit when the refusal states them.
    ContextOverflow {
        tokens: Option<u64>,
        limit: Option<u64>,
    },
}

/// A request that did not produce a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderError {
    pub kind: ProviderErrorKind,
    pub message: String,
    /// Attempts made.
    pub attempts: u32,
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ProviderErrorKind::Http(s) => write!(f, "HTTP {s}: {}", self.message)?,
            ProviderErrorKind::Transport
            | ProviderErrorKind::Protocol
            | ProviderErrorKind::Stopped(_)
            | ProviderErrorKind::Script
            | ProviderErrorKind::ContextOverflow { .. } => f.write_str(&self.message)?,
        }
        if self.attempts > 1 {
            write!(f, " (after {} attempts)", self.attempts)?;
        }
        Ok(())
    }
}

impl std::error::Error for ProviderError {}

/// A model behind some transport.
pub trait Provider: Send + Sync {
    /// The provider's name (`anthropic`, `openai`, `scripted`).
    fn name(&self) -> &str;
    /// The model requested.
    fn model(&self) -> &str;
    /// Sends the conversation; blocks until the reply, an error, or a stop.
    fn complete(
        &self,
        req: &ChatRequest<'_>,
        obs: &mut dyn Observer,
        ctl: &Control,
    ) -> Result<Reply, ProviderError>;

    /// The same provider for another model (a model switch), or why not.
    fn with_model(&self, model: &str) -> Result<Box<dyn Provider>, String> {
        Err(format!(
            "the {} provider cannot switch to {model}",
            self.name()
        ))
    }
}

/// The three wire formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireFormat {
    /// Anthropic Messages, `POST {base}/v1/messages`.
    Anthropic,
    /// OpenAI Chat Completions, `POST {base}/v1/chat/completions`.
    OpenAi,
    /// OpenAI Responses, `POST {base}/v1/responses`.
    Responses,
}

impl WireFormat {
    /// The provider name.
    pub fn name(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "anthropic",
            WireFormat::OpenAi | WireFormat::Responses => "openai",
        }
    }

    /// The API's name, for logs.
    pub fn api(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "messages",
            WireFormat::OpenAi => "chat-completions",
            WireFormat::Responses => "responses",
        }
    }

    /// The public server root.
    pub fn default_base_url(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "https://api.anthropic.com",
            WireFormat::OpenAi | WireFormat::Responses => "https://api.openai.com",
        }
    }

    fn path(self) -> &'static str {
        match self {
            WireFormat::Anthropic => "/v1/messages",
            WireFormat::OpenAi => "/v1/chat/completions",
            WireFormat::Responses => "/v1/responses",
        }
    }
}

/// Whether an OpenAI model is served only by the Responses API (the
/// `-pro` reasoning models, the Codex models, computer use and deep
/// research), so `--openai-api auto` picks it.
pub fn responses_only(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    name.contains("-pro")
        || name.contains("codex")
        || name.starts_with("computer-use")
        || name.contains("deep-research")
}

/// The OpenAI wire for `model` under `--openai-api auto`.
pub fn openai_wire_for(model: &str) -> WireFormat {
    if responses_only(model) {
        WireFormat::Responses
    } else {
        WireFormat::OpenAi
    }
}

/// How an [`HttpProvider`] talks to its server.
#[derive(Clone, Debug)]
pub struct HttpConfig {
    pub wire: WireFormat,
    /// The server root; the wire's path is appended.
    pub base_url: String,
    pub api_key: Option<String>,
    pub model: String,
    /// Stream (SSE) by default; `false` is `--no-stream`.
    pub stream: bool,
    /// The output token cap sent with each request (Anthropic requires
    /// one; OpenAI gets one only when set).
    pub max_tokens: Option<u32>,
    pub retry: RetryPolicy,
    pub connect_timeout: Duration,
    /// The longest silence tolerated: before the response headers, and
    /// between two chunks of a body.
    pub idle_timeout: Duration,
    /// The OpenAI API follows the model ([`openai_wire_for`]) on a model
    /// switch (`--openai-api auto`).
    pub auto_api: bool,
}

impl HttpConfig {
    /// The defaults for `wire`, `model` and a key.
    pub fn new(wire: WireFormat, model: impl Into<String>, api_key: Option<String>) -> HttpConfig {
        HttpConfig {
            wire,
            base_url: wire.default_base_url().to_owned(),
            api_key,
            model: model.into(),
            stream: true,
            max_tokens: None,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(180),
            auto_api: false,
        }
    }

    /// The full request URL.
    pub fn url(&self) -> String {
        format!(
            "{}{}",
            self.base_url.trim_end_matches('/'),
            self.wire.path()
        )
    }
}

/// A provider over HTTP; see the module docs.
pub struct HttpProvider {
    cfg: HttpConfig,
    client: reqwest::Client,
    rt: tokio::runtime::Runtime,
    /// Cleared for the rest of the session once a server refused a
    /// streaming request or answered it with plain JSON.
    stream: AtomicBool,
}

impl fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpProvider")
            .field("wire", &self.cfg.wire)
            .field("url", &self.cfg.url())
            .field("model", &self.cfg.model)
            .finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider for `cfg`; fails only when the runtime or the TLS client
    /// cannot be set up.
    pub fn new(cfg: HttpConfig) -> Result<HttpProvider, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the provider runtime: {e}"))?;
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("exarch/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let stream = AtomicBool::new(cfg.stream);
        Ok(HttpProvider {
            cfg,
            client,
            rt,
            stream,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    async fn run(
        &self,
        req: &ChatRequest<'_>,
        obs: &mut dyn Observer,
        ctl: &Control,
    ) -> Result<Reply, ProviderError> {
        let mut attempt = 0u32;
        let mut fell_back = false;
        loop {
            attempt += 1;
            let streaming = self.stream.load(Ordering::Relaxed);
            let failed = match self.attempt(req, obs, ctl, streaming).await {
                Ok(mut reply) => {
                    reply.attempts = attempt;
                    return Ok(reply);
                }
                Err(f) => f,
            };
            match failed {
                Failed::Stop(stop) => {
                    return Err(ProviderError {
                        kind: ProviderErrorKind::Stopped(stop),
                        message: format!("request stopped ({})", stop_words(stop)),
                        attempts: attempt,
                    })
                }
                Failed::RefusedStreaming(msg) if !fell_back => {
                    fell_back = true;
                    self.stream.store(false, Ordering::Relaxed);
                    obs.note(&format!(
                        "the server refused a streaming request ({msg}); using plain requests"
                    ));
                    attempt -= 1;
                }
                Failed::RefusedStreaming(msg) => {
                    return Err(ProviderError {
                        kind: ProviderErrorKind::Http(400),
                        message: msg,
                        attempts: attempt,
                    })
                }
                Failed::Retry {
                    kind,
                    message,
                    after,
                } => {
                    if attempt >= self.cfg.retry.max_attempts {
                        return Err(ProviderError {
                            kind,
                            message,
                            attempts: attempt,
                        });
                    }
                    let wait = self.cfg.retry.wait(attempt, after);
                    obs.retrying(attempt, wait, &message);
                    tokio::select! {
                        biased;
                        stop = stopped(ctl) => {
                            return Err(ProviderError {
                                kind: ProviderErrorKind::Stopped(stop),
                                message: format!("request stopped ({})", stop_words(stop)),
                                attempts: attempt,
                            })
                        }
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                Failed::Fatal(kind, message) => {
                    return Err(ProviderError {
                        kind,
                        message,
                        attempts: attempt,
                    })
                }
            }
        }
    }

    async fn attempt(
        &self,
        req: &ChatRequest<'_>,
        obs: &mut dyn Observer,
        ctl: &Control,
        streaming: bool,
    ) -> Result<Reply, Failed> {
        let wire = self.cfg.wire;
        let body = match wire {
            WireFormat::Anthropic => {
                anthropic::request_body(req, &self.cfg.model, self.cfg.max_tokens, streaming)
            }
            WireFormat::OpenAi => {
                openai::request_body(req, &self.cfg.model, self.cfg.max_tokens, streaming)
            }
            WireFormat::Responses => {
                responses::request_body(req, &self.cfg.model, self.cfg.max_tokens, streaming)
            }
        };
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| Failed::Fatal(ProviderErrorKind::Protocol, e.to_string()))?;
        let mut rb = self
            .client
            .post(self.cfg.url())
            .header("content-type", "application/json")
            .body(bytes);
        let key = self.cfg.api_key.as_deref();
        match wire {
            WireFormat::Anthropic => {
                rb = rb.header("anthropic-version", "2023-06-01");
                if let Some(k) = key {
                    rb = rb.header("x-api-key", k);
                }
            }
            WireFormat::OpenAi | WireFormat::Responses => {
                if let Some(k) = key {
                    rb = rb.header("authorization", format!("Bearer {k}"));
                }
            }
        }
        if streaming {
            rb = rb.header("accept", "text/event-stream");
        }
        let idle = self.cfg.idle_timeout;
        let resp = tokio::select! {
            biased;
            stop = stopped(ctl) => return Err(Failed::Stop(stop)),
            r = tokio::time::timeout(idle, rb.send()) => r,
        };
        let resp = match resp {
            Err(_) => {
                return Err(Failed::Retry {
                    kind: ProviderErrorKind::Transport,
                    message: format!("no response within {}s", idle.as_secs()),
                    after: None,
                })
            }
            Ok(Err(e)) => {
                return Err(Failed::Retry {
                    kind: ProviderErrorKind::Transport,
                    message: transport_words(&e),
                    after: None,
                })
            }
            Ok(Ok(r)) => r,
        };
        let status = resp.status().as_u16();
        let is_sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !(200..300).contains(&status) {
            let after = retry_after(resp.headers());
            let text = read_all(resp, ctl, idle).await?;
            let message = error_message(&text);
            // Before the streaming fallback: a too-long prompt is a 400 to
            // a streaming request too, and plain requests would not help.
            if let Some(kind) = overflow(status, &text, &message) {
                return Err(Failed::Fatal(kind, format!("HTTP {status}: {message}")));
            }
            if retryable_status(status) {
                return Err(Failed::Retry {
                    kind: ProviderErrorKind::Http(status),
                    message: format!("HTTP {status}: {message}"),
                    after,
                });
            }
            if status == 400 && streaming {
                return Err(Failed::RefusedStreaming(message));
            }
            return Err(Failed::Fatal(ProviderErrorKind::Http(status), message));
        }
        if !is_sse {
            let text = read_all(resp, ctl, idle).await?;
            let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                Failed::Fatal(
                    ProviderErrorKind::Protocol,
                    format!("the response is not JSON ({e}): {}", excerpt(&text)),
                )
            })?;
            if streaming {
                self.stream.store(false, Ordering::Relaxed);
                obs.note(
                    "the server answered a streaming request with plain JSON; using plain requests",
                );
            }
            let reply = match wire {
                WireFormat::Anthropic => anthropic::parse_response(&json),
                WireFormat::OpenAi => openai::parse_response(&json),
                WireFormat::Responses => responses::parse_response(&json),
            }
            .map_err(|e| Failed::Fatal(ProviderErrorKind::Protocol, e))?;
            let text = reply_text(&reply);
            if !text.is_empty() {
                obs.text_delta(&text);
            }
            return Ok(reply);
        }
        self.read_stream(resp, obs, ctl).await
    }

    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        obs: &mut dyn Observer,
        ctl: &Control,
    ) -> Result<Reply, Failed> {
        let idle = self.cfg.idle_timeout;
        let mut parser = SseParser::new();
        let mut dec = Decoder::new(self.cfg.wire);
        loop {
            let chunk = tokio::select! {
                biased;
                stop = stopped(ctl) => return Err(Failed::Stop(stop)),
                c = tokio::time::timeout(idle, resp.chunk()) => c,
            };
            let events = match chunk {
                Err(_) => {
                    return dec.fault(StreamFault::transport(format!(
                        "the stream was silent for {}s",
                        idle.as_secs()
                    )))
                }
                Ok(Err(e)) => return dec.fault(StreamFault::transport(transport_words(&e))),
                Ok(Ok(None)) => {
                    if let Some(ev) = parser.finish() {
                        if let Some(r) = dec.event(&ev, obs) {
                            return r;
                        }
                    }
                    return if dec.acc.complete() {
                        Ok(dec.acc.finish())
                    } else {
                        dec.fault(StreamFault::transport(
                            "the stream ended before the reply was complete".to_owned(),
                        ))
                    };
                }
                Ok(Ok(Some(bytes))) => parser.feed(&bytes),
            };
            for ev in events {
                if let Some(r) = dec.event(&ev, obs) {
                    return r;
                }
            }
        }
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        self.cfg.wire.name()
    }

    fn model(&self) -> &str {
        &self.cfg.model
    }

    fn complete(
        &self,
        req: &ChatRequest<'_>,
        obs: &mut dyn Observer,
        ctl: &Control,
    ) -> Result<Reply, ProviderError> {
        self.rt.block_on(self.run(req, obs, ctl))
    }

    fn with_model(&self, model: &str) -> Result<Box<dyn Provider>, String> {
        let mut cfg = self.cfg.clone();
        cfg.model = model.to_owned();
        if cfg.auto_api && cfg.wire != WireFormat::Anthropic {
            cfg.wire = openai_wire_for(model);
        }
        cfg.stream = self.stream.load(Ordering::Relaxed);
        Ok(Box::new(HttpProvider::new(cfg)?))
    }
}

/// Why one attempt failed, and what to do about it.
enum Failed {
    Stop(Stop),
    /// A 400 to a streaming request: try once more without streaming.
    RefusedStreaming(String),
    Retry {
        kind: ProviderErrorKind,
        message: String,
        after: Option<Duration>,
    },
    Fatal(ProviderErrorKind, String),
}

/// A stream that broke.
pub(crate) struct StreamFault {
    pub message: String,
    pub retryable: bool,
    /// The server refused the prompt as too long, mid-stream.
    pub overflow: Option<ProviderErrorKind>,
}

impl StreamFault {
    pub(crate) fn transport(message: String) -> StreamFault {
        StreamFault {
            message,
            retryable: true,
            overflow: None,
        }
    }

    pub(crate) fn protocol(message: String) -> StreamFault {
        StreamFault {
            message,
            retryable: false,
            overflow: None,
        }
    }
}

/// One stream's decoding: the wire-specific event handler over the shared
/// accumulator.
struct Decoder {
    wire: WireFormat,
    acc: Accum,
}

impl Decoder {
    fn new(wire: WireFormat) -> Decoder {
        Decoder {
            wire,
            acc: Accum::default(),
        }
    }

    /// Handles one event; `Some` ends the stream.
    fn event(&mut self, ev: &SseEvent, obs: &mut dyn Observer) -> Option<Result<Reply, Failed>> {
        let r = match self.wire {
            WireFormat::Anthropic => anthropic::stream_event(&mut self.acc, ev, obs),
            WireFormat::OpenAi => openai::stream_event(&mut self.acc, ev, obs),
            WireFormat::Responses => responses::stream_event(&mut self.acc, ev, obs),
        };
        match r {
            Ok(()) if self.acc.done => Some(Ok(std::mem::take(&mut self.acc).finish())),
            Ok(()) => None,
            Err(fault) => Some(self.fault(fault)),
        }
    }

    /// A broken stream: keep what was shown when text was delivered (never
    /// re-issue it), else retry or give up.
    fn fault(&mut self, fault: StreamFault) -> Result<Reply, Failed> {
        if let Some(kind) = fault.overflow {
            return Err(Failed::Fatal(kind, fault.message));
        }
        if self.acc.delivered_text {
            return Ok(std::mem::take(&mut self.acc).stalled());
        }
        if fault.retryable {
            Err(Failed::Retry {
                kind: ProviderErrorKind::Transport,
                message: fault.message,
                after: None,
            })
        } else {
            Err(Failed::Fatal(ProviderErrorKind::Protocol, fault.message))
        }
    }
}

/// A reply being assembled from deltas.
#[derive(Debug, Default)]
pub(crate) struct Accum {
    /// (wire key, part), in order of first appearance.
    parts: Vec<(u64, Part)>,
    pub stop: Option<StopReason>,
    pub usage: Usage,
    /// Some text reached the observer.
    pub delivered_text: bool,
    /// The stream's end marker arrived.
    pub done: bool,
}

#[derive(Debug)]
enum Part {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
}

impl Accum {
    /// Appends streamed text to the text part keyed `key`.
    pub(crate) fn text(&mut self, key: u64, delta: &str, obs: &mut dyn Observer) {
        if delta.is_empty() {
            return;
        }
        match self.part(key, || Part::Text(String::new())) {
            Part::Text(t) => t.push_str(delta),
            Part::Tool { .. } => return,
        }
        self.delivered_text = true;
        obs.text_delta(delta);
    }

    /// Starts or extends the tool part keyed `key`: fills the id and name
    /// when they arrive and appends argument text.
    pub(crate) fn tool(&mut self, key: u64, id: Option<&str>, name: Option<&str>, args: &str) {
        let fresh = || Part::Tool {
            id: String::new(),
            name: String::new(),
            json: String::new(),
        };
        if let Part::Tool {
            id: pid,
            name: pname,
            json,
        } = self.part(key, fresh)
        {
            if let Some(i) = id.filter(|i| !i.is_empty()) {
                if pid.is_empty() {
                    *pid = i.to_owned();
                }
            }
            if let Some(n) = name.filter(|n| !n.is_empty()) {
                if pname.is_empty() {
                    *pname = n.to_owned();
                }
            }
            json.push_str(args);
        }
    }

    /// A finished tool part: its id and name when still missing, and its
    /// whole argument text when no fragment carried any.
    pub(crate) fn tool_done(&mut self, key: u64, id: Option<&str>, name: Option<&str>, args: &str) {
        let empty = matches!(
            self.parts.iter().find(|(k, _)| *k == key),
            Some((_, Part::Tool { json, .. })) if json.is_empty()
        ) || !self.parts.iter().any(|(k, _)| *k == key);
        self.tool(key, id, name, if empty { args } else { "" });
    }

    fn part(&mut self, key: u64, fresh: impl FnOnce() -> Part) -> &mut Part {
        let i = match self.parts.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.parts.push((key, fresh()));
                self.parts.len() - 1
            }
        };
        &mut self.parts[i].1
    }

    /// Whether the stream said how it ended.
    pub(crate) fn complete(&self) -> bool {
        self.done || self.stop.is_some()
    }

    /// The finished reply.
    pub(crate) fn finish(self) -> Reply {
        let mut blocks = Vec::new();
        let mut n = 0;
        for (_, part) in self.parts {
            match part {
                Part::Text(t) if t.is_empty() => {}
                Part::Text(t) => blocks.push(Block::Text(t)),
                Part::Tool { id, name, json } => {
                    n += 1;
                    let id = if id.is_empty() {
                        format!("call_{n}")
                    } else {
                        id
                    };
                    blocks.push(Block::ToolUse {
                        id,
                        name,
                        input: ToolArgs::parse(&json),
                    });
                }
            }
        }
        let has_tools = blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        let stop = self.stop.unwrap_or(if has_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        Reply {
            blocks,
            stop,
            usage: self.usage,
            attempts: 1,
        }
    }

    /// What a broken stream had shown: its text only (a half-received tool
    /// call is not a call).
    pub(crate) fn stalled(self) -> Reply {
        let blocks = self
            .parts
            .into_iter()
            .filter_map(|(_, p)| match p {
                Part::Text(t) if !t.is_empty() => Some(Block::Text(t)),
                Part::Text(_) | Part::Tool { .. } => None,
            })
            .collect();
        Reply {
            blocks,
            stop: StopReason::Stalled,
            usage: self.usage,
            attempts: 1,
        }
    }
}

/// Resolves when a stop flag is raised.
async fn stopped(ctl: &Control) -> Stop {
    loop {
        if let Some(s) = ctl.stop() {
            return s;
        }
        tokio::time::sleep(STOP_POLL).await;
    }
}

/// A whole (error or plain) body, bounded by the idle timeout and the stop
/// flags.
async fn read_all(
    resp: reqwest::Response,
    ctl: &Control,
    idle: Duration,
) -> Result<String, Failed> {
    let r = tokio::select! {
        biased;
        stop = stopped(ctl) => return Err(Failed::Stop(stop)),
        r = tokio::time::timeout(idle, resp.text()) => r,
    };
    match r {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(Failed::Retry {
            kind: ProviderErrorKind::Transport,
            message: transport_words(&e),
            after: None,
        }),
        Err(_) => Err(Failed::Retry {
            kind: ProviderErrorKind::Transport,
            message: format!("the body was silent for {}s", idle.as_secs()),
            after: None,
        }),
    }
}

/// The server's own error text: `error.message` of a JSON error body, else
/// the start of the body.
fn error_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        let m = v
            .pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(|m| m.as_str());
        if let Some(m) = m {
            return m.to_owned();
        }
    }
    if body.trim().is_empty() {
        "(empty body)".to_owned()
    } else {
        excerpt(body)
    }
}

/// Whether an error answer refuses the prompt as too long for the
/// model's window: Anthropic's 400 `prompt is too long: N tokens > M
/// maximum` and 413 `request_too_large`, OpenAI's
/// `context_length_exceeded` code (Chat Completions and Responses), and
/// the wording local servers copy. The kind carries the counts the
/// message states.
pub fn overflow(status: u16, body: &str, message: &str) -> Option<ProviderErrorKind> {
    let json: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let code = json
        .as_ref()
        .and_then(|v| {
            v.pointer("/error/code")
                .or_else(|| v.pointer("/error/type"))
                .or_else(|| v.get("code"))
        })
        .and_then(|c| c.as_str())
        .unwrap_or_default();
    let lower = message.to_ascii_lowercase();
    let refused = code == "context_length_exceeded"
        || code == "request_too_large"
        || status == 413
        || (status == 400
            && (lower.contains("prompt is too long")
                || lower.contains("maximum context length")
                || lower.contains("context window")
                || lower.contains("context length")
                || lower.contains("too many tokens")));
    refused.then(|| overflow_counts(message))
}

/// The token counts an overflow message states, as a kind.
pub fn overflow_counts(message: &str) -> ProviderErrorKind {
    let numbers = |after: &str| -> Option<u64> {
        let lower = message.to_ascii_lowercase();
        let at = lower.find(after)? + after.len();
        let digits: String = message[at..]
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    // Anthropic: "prompt is too long: 215000 tokens > 200000 maximum".
    if let Some(tokens) = numbers("prompt is too long") {
        let limit = message.split_once('>').and_then(|(_, rest)| {
            let d: String = rest
                .chars()
                .skip_while(|c| !c.is_ascii_digit())
                .take_while(char::is_ascii_digit)
                .collect();
            d.parse().ok()
        });
        return ProviderErrorKind::ContextOverflow {
            tokens: Some(tokens),
            limit,
        };
    }
    // OpenAI: "maximum context length is 128000 tokens. However, your
    // messages resulted in 130000 tokens", or "exceed the configured limit
    // of 272000 tokens. Your messages resulted in 300000 tokens".
    let limit = numbers("maximum context length is").or_else(|| numbers("limit of"));
    let tokens = numbers("resulted in");
    ProviderErrorKind::ContextOverflow { tokens, limit }
}

fn excerpt(text: &str) -> String {
    let t = text.trim();
    match t.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_owned(),
    }
}

fn transport_words(e: &reqwest::Error) -> String {
    use std::error::Error;
    let mut msg = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
}

fn stop_words(stop: Stop) -> &'static str {
    match stop {
        Stop::Interrupt => "interrupted",
        Stop::Terminate => "terminated",
        Stop::Wall => "the run's wall passed",
    }
}

/// The text blocks of a reply joined.
pub fn reply_text(reply: &Reply) -> String {
    let mut s = String::new();
    for b in &reply.blocks {
        if let Block::Text(t) = b {
            s.push_str(t);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_append_the_wire_path_to_the_root() {
        let mut c = HttpConfig::new(WireFormat::Anthropic, "m", None);
        c.base_url = "http://127.0.0.1:9/".into();
        assert_eq!(c.url(), "http://127.0.0.1:9/v1/messages");
        c.wire = WireFormat::OpenAi;
        assert_eq!(c.url(), "http://127.0.0.1:9/v1/chat/completions");
        c.wire = WireFormat::Responses;
        assert_eq!(c.url(), "http://127.0.0.1:9/v1/responses");
        assert_eq!(openai_wire_for("gpt-5-codex"), WireFormat::Responses);
        assert_eq!(openai_wire_for("o3-pro"), WireFormat::Responses);
        assert_eq!(openai_wire_for("gpt-4.1"), WireFormat::OpenAi);
        assert_eq!(openai_wire_for("openrouter/gpt-5"), WireFormat::OpenAi);
    }

    #[test]
    fn error_bodies_yield_their_message() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#
            ),
            "busy"
        );
        assert_eq!(error_message("plain words"), "plain words");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn overflow_refusals_are_recognised_with_their_counts() {
        let anth = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215000 tokens > 200000 maximum"}}"#;
        assert_eq!(
            overflow(400, anth, &error_message(anth)),
            Some(ProviderErrorKind::ContextOverflow {
                tokens: Some(215_000),
                limit: Some(200_000)
            })
        );
        let oai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130,500 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(
            overflow(400, oai, &error_message(oai)),
            Some(ProviderErrorKind::ContextOverflow {
                tokens: Some(130_500),
                limit: Some(128_000)
            })
        );
        let bare = r#"{"error":{"message":"too big","code":"context_length_exceeded"}}"#;
        assert_eq!(
            overflow(400, bare, &error_message(bare)),
            Some(ProviderErrorKind::ContextOverflow {
                tokens: None,
                limit: None
            })
        );
        assert!(overflow(413, "", "request_too_large").is_some());
        // Other 400s are not overflows.
        let other = r#"{"error":{"message":"bad tool schema"}}"#;
        assert_eq!(overflow(400, other, &error_message(other)), None);
        assert_eq!(overflow(500, anth, "prompt is too long"), None);
    }

    #[test]
    fn a_stalled_stream_keeps_only_its_text() {
        let mut acc = Accum::default();
        acc.text(0, "partial", &mut ());
        acc.tool(1, Some("t1"), Some("ral"), "{\"cmd\":");
        assert!(acc.delivered_text);
        let r = acc.stalled();
        assert_eq!(r.blocks, vec![Block::Text("partial".into())]);
        assert_eq!(r.stop, StopReason::Stalled);
    }

    #[test]
    fn tool_parts_without_ids_get_one() {
        let mut acc = Accum::default();
        acc.tool(3, None, Some("ral"), "{\"cmd\":\"1\"}");
        let r = acc.finish();
        assert_eq!(r.stop, StopReason::ToolUse);
        let Block::ToolUse { id, .. } = &r.blocks[0] else {
            panic!("expected a tool use");
        };
        assert_eq!(id, "call_1");
    }
}
