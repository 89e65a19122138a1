//! The language server (`ral --lsp`): the checker in the editor.
//!
//! It speaks the Language Server Protocol over standard input and output,
//! with `lsp-types` for the protocol's shapes and its own wire ([`rpc`]),
//! because the server must outlive any input: a body that is not JSON (a
//! raw 0xFF byte, a lone `"\ud800"` escape), broken framing, a message
//! that is not a request, an unknown method or parameters of the wrong
//! shape get the reply JSON-RPC prescribes (`-32700`, `-32600`, `-32601`,
//! `-32602`, with `id` `null` when the id is unknown), a notification that
//! cannot be used is dropped, and a panic while answering is caught
//! (`-32603`). Only `exit` and the end of input end the server.
//!
//! Three threads: one reads and frames the input, one analyses documents,
//! and the main one answers. Analysis ([`analysis::Analysis`]: parse, then
//! check, against the builtins alone, as a script file) runs off the main
//! thread, on the newest text only: a change replaces the document's
//! pending job, so a burst of edits is analysed once, at its end. Requests
//! are answered at once against the last completed analysis, with the
//! request's position mapped from the newest text onto the analysed one
//! through the unchanged prefix and suffix of the two (a position inside
//! the edited region answers nothing, or, for completion, completes with
//! the names in scope where the edit began). A request that arrives before
//! a document's first analysis waits for it.
//!
//! | request | answer |
//! |---|---|
//! | `didOpen`, `didChange` | `publishDiagnostics` for the newest text: every parse and type error and warning, with its code (`type-mismatch`, …) |
//! | `hover` | the inferred type of the binding, name or expression there; a builtin's signature and documentation |
//! | `completion` | bindings in scope, builtins with their signatures, record fields after `$name[`, keywords, executables on `PATH`, paths beside the file; at most [`COMPLETION_LIMIT`], best first (`isIncomplete` when more matched) |
//! | `definition` | where the name is bound |
//! | `documentSymbol` | the top-level bindings with their types |
//! | `semanticTokens/full` | classes from the real lexer and parse ([`crate::ide::tokens`]) |
//!
//! Positions are UTF-16 columns, the protocol's default.

pub mod analysis;
pub mod rpc;

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use lsp_types as lsp;
use serde_json::{json, Value};

use analysis::{Analysis, Completion, LineIndex};
use rpc::{code, Frame, Id, Incoming};

use crate::ide::Class;

/// The most completion items one answer carries.
pub const COMPLETION_LIMIT: usize = 500;

/// The semantic token types, in legend order.
const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::VARIABLE,
    lsp::SemanticTokenType::PARAMETER,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::OPERATOR,
    lsp::SemanticTokenType::ENUM_MEMBER,
    lsp::SemanticTokenType::REGEXP,
];

fn token_type(class: Class) -> u32 {
    match class {
        Class::Keyword => 0,
        Class::Command | Class::PathCommand => 1,
        Class::Variable => 2,
        Class::Binder => 3,
        Class::String => 4,
        Class::Escape => 9,
        Class::Number => 5,
        Class::Comment => 6,
        Class::Operator | Class::Error => 7,
        Class::Tag => 8,
    }
}

/// What the server offers (answered to `initialize`).
pub fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Kind(
            lsp::TextDocumentSyncKind::FULL,
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec!["$".into(), "[".into(), "/".into()]),
            ..lsp::CompletionOptions::default()
        }),
        definition_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        semantic_tokens_provider: Some(
            lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp::SemanticTokensOptions {
                    legend: lsp::SemanticTokensLegend {
                        token_types: TOKEN_TYPES.to_vec(),
                        token_modifiers: Vec::new(),
                    },
                    full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    ..lsp::SemanticTokensOptions::default()
                },
            ),
        ),
        ..lsp::ServerCapabilities::default()
    }
}

/// Serves on standard input and output until `exit` or the end of input;
/// returns the process status.
pub fn serve_stdio() -> u8 {
    serve(std::io::stdin(), std::io::stdout())
}

/// Serves the protocol on `input` and `output` until the client says
/// `exit` (status 0 after `shutdown`, else 1, as the protocol says) or the
/// input ends (0 after `shutdown`, else 1).
pub fn serve<R, W>(input: R, output: W) -> u8
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let (out_tx, out_rx) = channel::<String>();
    let writer = std::thread::Builder::new()
        .name("ral-lsp-writer".into())
        .spawn(move || write_loop(output, &out_rx));
    let (events_tx, events) = channel::<Event>();
    let reader_events = events_tx.clone();
    let reader_out = out_tx.clone();
    let reader = std::thread::Builder::new()
        .name("ral-lsp-reader".into())
        .spawn(move || read_loop(input, &reader_events, &reader_out));
    let jobs = Arc::new(Jobs::default());
    let worker_jobs = jobs.clone();
    let worker = std::thread::Builder::new()
        .name("ral-lsp-analysis".into())
        .spawn(move || analysis_loop(&worker_jobs, &events_tx));
    if reader.is_err() || worker.is_err() {
        eprintln!("ral --lsp: cannot start a thread");
        return 1;
    }
    let mut server = Server {
        state: State::Uninitialized,
        docs: HashMap::new(),
        executables: crate::ide::executables(&std::env::var("PATH").unwrap_or_default()),
        out: out_tx,
        jobs: jobs.clone(),
        seq: 0,
    };
    let status = server.run(&events);
    jobs.close();
    // Everything said so far reaches the client before the server ends.
    drop(server);
    if let Ok(w) = writer {
        let _ = w.join();
    }
    status
}

/// Writes each message as it comes; stops when the output fails.
fn write_loop<W: Write>(mut output: W, messages: &Receiver<String>) {
    for msg in messages {
        if rpc::write_message(&mut output, &msg).is_err() {
            return;
        }
    }
}

/// Frames and reads the input until `exit` or its end; replies to what
/// cannot be read itself.
fn read_loop<R: Read>(input: R, events: &Sender<Event>, out: &Sender<String>) {
    let mut framer = rpc::Framer::new(input);
    loop {
        match framer.next_frame() {
            Frame::Body(body) => match rpc::classify(&body) {
                Ok(msg) => {
                    let exit =
                        matches!(&msg, Incoming::Notification { method, .. } if method == "exit");
                    if events.send(Event::Message(msg)).is_err() || exit {
                        return;
                    }
                }
                Err(reply) => {
                    let _ = out.send(reply);
                }
            },
            Frame::Junk(why) => {
                let _ = out.send(rpc::error(
                    &Value::Null,
                    code::PARSE_ERROR,
                    &format!("parse error: {why}"),
                ));
            }
            Frame::Eof => {
                let _ = events.send(Event::Eof);
                return;
            }
        }
    }
}

/// What the main thread hears.
enum Event {
    Message(Incoming),
    /// A finished analysis (`None` when analysing panicked).
    Analysed {
        uri: String,
        seq: u64,
        analysis: Option<Arc<Analysis>>,
    },
    Eof,
}

/// A document waiting to be analysed.
struct Job {
    seq: u64,
    name: String,
    text: Arc<str>,
}

/// The analysis queue: at most one job per document, the newest text.
#[derive(Default)]
struct Jobs {
    queue: Mutex<JobQueue>,
    ready: Condvar,
}

#[derive(Default)]
struct JobQueue {
    pending: HashMap<String, Job>,
    /// Documents in the order their jobs were first queued.
    order: VecDeque<String>,
    closed: bool,
}

impl Jobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, JobQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `job` for `uri`, replacing a job not yet started.
    fn submit(&self, uri: &str, job: Job) {
        let mut q = self.lock();
        if q.pending.insert(uri.to_owned(), job).is_none() {
            q.order.push_back(uri.to_owned());
        }
        self.ready.notify_one();
    }

    fn cancel(&self, uri: &str) {
        let mut q = self.lock();
        q.pending.remove(uri);
        q.order.retain(|u| u != uri);
    }

    fn close(&self) {
        self.lock().closed = true;
        self.ready.notify_all();
    }

    /// The next job; `None` once closed.
    fn take(&self) -> Option<(String, Job)> {
        let mut q = self.lock();
        loop {
            if q.closed {
                return None;
            }
            while let Some(uri) = q.order.pop_front() {
                if let Some(job) = q.pending.remove(&uri) {
                    return Some((uri, job));
                }
            }
            q = self
                .ready
                .wait(q)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

fn analysis_loop(jobs: &Jobs, events: &Sender<Event>) {
    while let Some((uri, job)) = jobs.take() {
        let analysis =
            std::panic::catch_unwind(AssertUnwindSafe(|| Analysis::new(&job.name, &job.text)));
        let analysis = match analysis {
            Ok(a) => Some(Arc::new(a)),
            Err(_) => {
                eprintln!("ral --lsp: analysing {uri} panicked (a bug in ral)");
                None
            }
        };
        let done = Event::Analysed {
            uri,
            seq: job.seq,
            analysis,
        };
        if events.send(done).is_err() {
            return;
        }
    }
}

/// Where the conversation is (the protocol's lifecycle).
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Uninitialized,
    Running,
    ShutDown,
}

/// An open document.
struct Doc {
    uri: lsp::Uri,
    /// The newest text (normalised, spec §3.1) and its line index.
    text: Arc<str>,
    lines: LineIndex,
    /// The number of the newest text.
    seq: u64,
    /// The last completed analysis and the number of its text.
    analysis: Option<(u64, Arc<Analysis>)>,
    /// Requests that came before the first analysis.
    waiting: Vec<(Id, String, Value)>,
    /// Analysing the newest text panicked (a bug in ral): requests are
    /// answered with nothing rather than held until the next change.
    broken: bool,
}

struct Server {
    state: State,
    docs: HashMap<String, Doc>,
    executables: Vec<String>,
    out: Sender<String>,
    jobs: Arc<Jobs>,
    /// Numbers texts as they arrive.
    seq: u64,
}

/// Why a request has no answer yet, or failed.
enum Fail {
    /// The parameters do not have the method's shape.
    Params(String),
    /// The server has no such method.
    Method,
    /// The document has no analysis yet: answer when it has one.
    Wait,
}

impl Server {
    fn send(&self, msg: String) {
        let _ = self.out.send(msg);
    }

    fn run(&mut self, events: &Receiver<Event>) -> u8 {
        for event in events {
            match event {
                Event::Message(Incoming::Request { id, method, params }) => {
                    self.request(id, &method, params);
                }
                Event::Message(Incoming::Notification { method, params }) => {
                    if method == "exit" {
                        return u8::from(self.state != State::ShutDown);
                    }
                    self.notification(&method, params);
                }
                Event::Message(Incoming::Response) => {}
                Event::Analysed { uri, seq, analysis } => self.analysed(&uri, seq, analysis),
                Event::Eof => break,
            }
        }
        u8::from(self.state != State::ShutDown)
    }

    fn request(&mut self, id: Id, method: &str, params: Value) {
        match (self.state, method) {
            (State::Uninitialized, "initialize") => {
                self.state = State::Running;
                let caps = serde_json::to_value(capabilities()).unwrap_or(Value::Null);
                let info = json!({"name": "ral", "version": env!("CARGO_PKG_VERSION")});
                let result = json!({"capabilities": caps, "serverInfo": info});
                self.send(rpc::response(&id, &result.to_string()));
            }
            (State::Uninitialized, _) => self.send(rpc::error(
                &id,
                code::SERVER_NOT_INITIALIZED,
                "the server is not initialized",
            )),
            (_, "initialize") => self.send(rpc::error(
                &id,
                code::INVALID_REQUEST,
                "invalid request: the server is already initialized",
            )),
            (State::ShutDown, _) => self.send(rpc::error(
                &id,
                code::INVALID_REQUEST,
                "invalid request: the server is shutting down",
            )),
            (State::Running, "shutdown") => {
                self.state = State::ShutDown;
                self.send(rpc::response(&id, "null"));
            }
            (State::Running, _) => self.answer(id, method, params),
        }
    }

    /// Answers a request now, or queues it for its document's first
    /// analysis.
    fn answer(&mut self, id: Id, method: &str, params: Value) {
        let outcome =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.respond(method, params.clone())));
        match outcome {
            Ok(Ok(v)) => self.send(rpc::response(&id, &v)),
            Ok(Err(Fail::Params(e))) => {
                self.send(rpc::error(&id, code::INVALID_PARAMS, &e));
            }
            Ok(Err(Fail::Method)) => self.send(rpc::error(
                &id,
                code::METHOD_NOT_FOUND,
                &format!("method not found: {method}"),
            )),
            Ok(Err(Fail::Wait)) => {
                let uri = params
                    .get("textDocument")
                    .and_then(|t| t.get("uri"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                match self.docs.get_mut(&uri) {
                    Some(doc) => doc.waiting.push((id, method.to_owned(), params)),
                    None => self.send(rpc::response(&id, "null")),
                }
            }
            Err(_) => self.send(rpc::error(
                &id,
                code::INTERNAL_ERROR,
                "internal error: answering this panicked (a bug in ral)",
            )),
        }
    }

    fn notification(&mut self, method: &str, params: Value) {
        if self.state == State::Uninitialized {
            return;
        }
        // A notification that cannot be used is dropped: the protocol
        // gives it no reply.
        match method {
            "textDocument/didOpen" => {
                if let Ok(p) = serde_json::from_value::<lsp::DidOpenTextDocumentParams>(params) {
                    self.update(p.text_document.uri, &p.text_document.text);
                }
            }
            "textDocument/didChange" => {
                // Read by hand rather than through `lsp-types`, so the
                // whole text is not copied once more.
                let mut params = params;
                let uri = params
                    .pointer("/textDocument/uri")
                    .and_then(Value::as_str)
                    .and_then(|u| u.parse::<lsp::Uri>().ok());
                let last = match params.get_mut("contentChanges") {
                    Some(Value::Array(changes)) => changes.pop(),
                    _ => None,
                };
                // Full sync: the last change holds the whole text.
                if let (Some(uri), Some(Value::Object(mut change))) = (uri, last) {
                    let whole = change.get("range").is_none_or(Value::is_null);
                    if let (true, Some(Value::String(text))) = (whole, change.remove("text")) {
                        self.update(uri, &text);
                    }
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = serde_json::from_value::<lsp::DidCloseTextDocumentParams>(params) {
                    let key = p.text_document.uri.as_str().to_owned();
                    self.jobs.cancel(&key);
                    if let Some(doc) = self.docs.remove(&key) {
                        for (id, _, _) in doc.waiting {
                            self.send(rpc::response(&id, "null"));
                        }
                    }
                    self.publish(&p.text_document.uri, Vec::new());
                }
            }
            "$/cancelRequest" => {
                let Some(cancelled) = params.get("id") else {
                    return;
                };
                for doc in self.docs.values_mut() {
                    if let Some(i) = doc.waiting.iter().position(|(id, _, _)| id == cancelled) {
                        let (id, _, _) = doc.waiting.remove(i);
                        let _ = self.out.send(rpc::error(
                            &id,
                            code::REQUEST_CANCELLED,
                            "the request was cancelled",
                        ));
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    /// Takes a document's new text and queues its analysis.
    fn update(&mut self, uri: lsp::Uri, text: &str) {
        self.seq += 1;
        let text: Arc<str> = Arc::from(ral_syntax::span::normalize_newlines(text).as_ref());
        let name =
            file_path(&uri).map_or_else(|| uri.as_str().to_owned(), |p| p.display().to_string());
        let key = uri.as_str().to_owned();
        self.jobs.submit(
            &key,
            Job {
                seq: self.seq,
                name,
                text: text.clone(),
            },
        );
        let lines = LineIndex::new(&text);
        match self.docs.get_mut(&key) {
            Some(doc) => {
                doc.text = text;
                doc.lines = lines;
                doc.seq = self.seq;
                doc.broken = false;
            }
            None => {
                self.docs.insert(
                    key,
                    Doc {
                        uri,
                        text,
                        lines,
                        seq: self.seq,
                        analysis: None,
                        waiting: Vec::new(),
                        broken: false,
                    },
                );
            }
        }
    }

    /// Installs a finished analysis; publishes its diagnostics when it is
    /// of the newest text, and answers the requests waiting for it.
    fn analysed(&mut self, uri: &str, seq: u64, analysis: Option<Arc<Analysis>>) {
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        let Some(analysis) = analysis else {
            doc.broken = seq == doc.seq;
            // Analysing panicked: keep what there was; answer the waiting
            // requests with nothing rather than hold them.
            for (id, _, _) in std::mem::take(&mut doc.waiting) {
                let _ = self.out.send(rpc::response(&id, "null"));
            }
            return;
        };
        if doc.analysis.as_ref().is_some_and(|(s, _)| *s >= seq) {
            return;
        }
        doc.analysis = Some((seq, analysis.clone()));
        doc.broken = false;
        let waiting = std::mem::take(&mut doc.waiting);
        if seq == doc.seq {
            let uri = doc.uri.clone();
            let diagnostics = diagnostics(&uri, &analysis);
            self.publish(&uri, diagnostics);
        }
        for (id, method, params) in waiting {
            self.answer(id, &method, params);
        }
    }

    fn publish(&self, uri: &lsp::Uri, diagnostics: Vec<lsp::Diagnostic>) {
        let params = lsp::PublishDiagnosticsParams {
            uri: uri.clone(),
            diagnostics,
            version: None,
        };
        self.send(rpc::notification(
            "textDocument/publishDiagnostics",
            &serde_json::to_string(&params).unwrap_or_else(|_| "null".to_owned()),
        ));
    }

    /// The document a request names and its view (the newest text over
    /// the last analysis).
    fn view(&self, uri: &lsp::Uri) -> Result<Option<View<'_>>, Fail> {
        let Some(doc) = self.docs.get(uri.as_str()) else {
            return Ok(None);
        };
        let Some((_, a)) = &doc.analysis else {
            if doc.broken {
                return Ok(None);
            }
            return Err(Fail::Wait);
        };
        Ok(Some(View::new(doc, a)))
    }

    fn respond(&self, method: &str, params: Value) -> Result<String, Fail> {
        fn parse<P: serde::de::DeserializeOwned>(params: Value) -> Result<P, Fail> {
            serde_json::from_value(params).map_err(|e| Fail::Params(format!("invalid params: {e}")))
        }
        let value = match method {
            "textDocument/hover" => {
                let p: lsp::HoverParams = parse(params)?;
                let pos = p.text_document_position_params;
                let hover = self.view(&pos.text_document.uri)?.and_then(|v| {
                    let h = v.a.hover(v.old_offset(pos.position)?)?;
                    Some(lsp::Hover {
                        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                            kind: lsp::MarkupKind::Markdown,
                            value: h.text,
                        }),
                        range: Some(v.range(h.span)?),
                    })
                });
                serde_json::to_string(&hover)
            }
            "textDocument/definition" => {
                let p: lsp::GotoDefinitionParams = parse(params)?;
                let pos = p.text_document_position_params;
                let uri = pos.text_document.uri;
                let found = self.view(&uri)?.and_then(|v| {
                    let span = v.a.definition(v.old_offset(pos.position)?)?;
                    Some(lsp::GotoDefinitionResponse::Scalar(lsp::Location {
                        uri: uri.clone(),
                        range: v.range(span)?,
                    }))
                });
                serde_json::to_string(&found)
            }
            "textDocument/completion" => {
                let p: lsp::CompletionParams = parse(params)?;
                let pos = p.text_document_position;
                let uri = pos.text_document.uri;
                let dir = file_path(&uri)
                    .and_then(|p| p.parent().map(PathBuf::from))
                    .or_else(|| std::env::current_dir().ok())
                    .unwrap_or_else(|| PathBuf::from("/"));
                let (items, incomplete) = match self.view(&uri)? {
                    Some(v) => {
                        let offset = v.new_offset(pos.position);
                        let here = v.old_offset(pos.position).unwrap_or(v.edit_start());
                        let (found, more) = v.a.complete(
                            v.text,
                            offset,
                            here,
                            &dir,
                            &self.executables,
                            COMPLETION_LIMIT,
                        );
                        let items = found.into_iter().map(|c| completion_item(&v, c)).collect();
                        (items, more)
                    }
                    None => (Vec::new(), false),
                };
                serde_json::to_string(&lsp::CompletionResponse::List(lsp::CompletionList {
                    is_incomplete: incomplete,
                    items,
                }))
            }
            "textDocument/documentSymbol" => {
                let p: lsp::DocumentSymbolParams = parse(params)?;
                let symbols: Vec<lsp::DocumentSymbol> = match self.view(&p.text_document.uri)? {
                    Some(v) => {
                        v.a.symbols()
                            .into_iter()
                            .filter_map(|s| {
                                #[allow(deprecated)]
                                Some(lsp::DocumentSymbol {
                                    name: s.name,
                                    detail: s.detail,
                                    kind: if s.function {
                                        lsp::SymbolKind::FUNCTION
                                    } else {
                                        lsp::SymbolKind::VARIABLE
                                    },
                                    tags: None,
                                    deprecated: None,
                                    range: v.range(s.whole)?,
                                    selection_range: v.range(s.span)?,
                                    children: None,
                                })
                            })
                            .collect()
                    }
                    None => Vec::new(),
                };
                serde_json::to_string(&lsp::DocumentSymbolResponse::Nested(symbols))
            }
            "textDocument/semanticTokens/full" => {
                let p: lsp::SemanticTokensParams = parse(params)?;
                let data = match self.view(&p.text_document.uri)? {
                    Some(v) => semantic_tokens(&v),
                    None => Vec::new(),
                };
                serde_json::to_string(&lsp::SemanticTokensResult::Tokens(lsp::SemanticTokens {
                    result_id: None,
                    data,
                }))
            }
            _ => return Err(Fail::Method),
        };
        value.map_err(|e| Fail::Params(format!("invalid params: {e}")))
    }
}

/// The published form of an analysis' diagnostics.
fn diagnostics(uri: &lsp::Uri, a: &Analysis) -> Vec<lsp::Diagnostic> {
    let range = |s: ral_syntax::Span| {
        let (l0, c0) = a.lines.position(&a.text, s.start as usize);
        let (l1, c1) = a.lines.position(&a.text, s.end as usize);
        lsp::Range::new(lsp::Position::new(l0, c0), lsp::Position::new(l1, c1))
    };
    a.diagnostics()
        .iter()
        .map(|d| lsp::Diagnostic {
            range: range(d.primary.span),
            severity: Some(match d.severity {
                ral_syntax::Severity::Error => lsp::DiagnosticSeverity::ERROR,
                ral_syntax::Severity::Warning => lsp::DiagnosticSeverity::WARNING,
                ral_syntax::Severity::Note => lsp::DiagnosticSeverity::INFORMATION,
            }),
            code: Some(lsp::NumberOrString::String(d.code.name().to_owned())),
            source: Some("ral".to_owned()),
            message: Analysis::message(d),
            related_information: Some(
                d.secondary
                    .iter()
                    .map(|l| lsp::DiagnosticRelatedInformation {
                        location: lsp::Location {
                            uri: uri.clone(),
                            range: range(l.span),
                        },
                        message: l.text.clone(),
                    })
                    .collect(),
            ),
            ..lsp::Diagnostic::default()
        })
        .collect()
}

/// A document's newest text seen through its last analysis: offsets in
/// the unchanged prefix and suffix of the two texts correspond.
struct View<'d> {
    text: &'d str,
    lines: &'d LineIndex,
    a: &'d Analysis,
    /// The length of the common prefix.
    prefix: usize,
    /// The length of the common suffix (not overlapping the prefix).
    suffix: usize,
}

impl<'d> View<'d> {
    fn new(doc: &'d Doc, a: &'d Analysis) -> View<'d> {
        let (new, old) = (doc.text.as_bytes(), a.text.as_bytes());
        let prefix = common_prefix(new, old);
        let room = new.len().min(old.len()) - prefix;
        let suffix = common_suffix(new, old).min(room);
        View {
            text: &doc.text,
            lines: &doc.lines,
            a,
            prefix,
            suffix,
        }
    }

    /// The byte offset of a position in the newest text.
    fn new_offset(&self, p: lsp::Position) -> usize {
        self.lines.offset(self.text, p.line, p.character)
    }

    /// Where the edit begins in the analysed text.
    fn edit_start(&self) -> usize {
        self.prefix
    }

    /// The analysed offset matching a position of the newest text; `None`
    /// inside the edited region.
    fn old_offset(&self, p: lsp::Position) -> Option<usize> {
        let off = self.new_offset(p);
        if off <= self.prefix {
            Some(off)
        } else if off >= self.text.len() - self.suffix {
            Some(off + self.a.text.len() - self.text.len())
        } else {
            None
        }
    }

    /// The newest-text offset of an analysed offset; `None` inside the
    /// edited region.
    fn to_new(&self, off: usize) -> Option<usize> {
        if off <= self.prefix {
            Some(off)
        } else if off >= self.a.text.len() - self.suffix {
            Some(off + self.text.len() - self.a.text.len())
        } else {
            None
        }
    }

    /// The protocol range of an analysed span in the newest text.
    fn range(&self, s: ral_syntax::Span) -> Option<lsp::Range> {
        let start = self.to_new(s.start as usize)?;
        let end = self.to_new(s.end as usize)?;
        Some(self.new_range(start, end))
    }

    /// The protocol range of a byte range of the newest text.
    fn new_range(&self, start: usize, end: usize) -> lsp::Range {
        let (l0, c0) = self.lines.position(self.text, start);
        let (l1, c1) = self.lines.position(self.text, end);
        lsp::Range::new(lsp::Position::new(l0, c0), lsp::Position::new(l1, c1))
    }
}

/// The length of the common prefix of `a` and `b`, compared a block at a
/// time (a 2 MB file takes a fraction of a millisecond).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a.get(i..i + BLOCK) == b.get(i..i + BLOCK) {
        i += BLOCK;
    }
    i + a
        .get(i..n)
        .unwrap_or(&[])
        .iter()
        .zip(b.get(i..n).unwrap_or(&[]))
        .take_while(|(x, y)| x == y)
        .count()
}

/// The length of the common suffix of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let (ea, eb) = (a.len(), b.len());
    let mut i = 0;
    while i + BLOCK <= n && a.get(ea - i - BLOCK..ea - i) == b.get(eb - i - BLOCK..eb - i) {
        i += BLOCK;
    }
    i + a[..ea - i]
        .iter()
        .rev()
        .zip(b[..eb - i].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

fn completion_item(v: &View<'_>, c: Completion) -> lsp::CompletionItem {
    let kind = match c.kind {
        Class::Variable => lsp::CompletionItemKind::VARIABLE,
        Class::Binder => lsp::CompletionItemKind::FIELD,
        Class::Command | Class::PathCommand => lsp::CompletionItemKind::FUNCTION,
        Class::Keyword => lsp::CompletionItemKind::KEYWORD,
        Class::String => lsp::CompletionItemKind::FILE,
        Class::Escape
        | Class::Number
        | Class::Comment
        | Class::Operator
        | Class::Tag
        | Class::Error => lsp::CompletionItemKind::TEXT,
    };
    lsp::CompletionItem {
        label: c.label,
        kind: Some(kind),
        detail: c.detail,
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: v.new_range(c.start, c.end),
            new_text: c.insert,
        })),
        ..lsp::CompletionItem::default()
    }
}

/// The semantic tokens of a document, delta-encoded (those inside an edit
/// not yet analysed are left out).
fn semantic_tokens(v: &View<'_>) -> Vec<lsp::SemanticToken> {
    let mut out = Vec::new();
    let (mut prev_line, mut prev_col) = (0u32, 0u32);
    for (span, class) in v.a.tokens() {
        let Some(r) = v.range(span) else { continue };
        let (line, col) = (r.start.line, r.start.character);
        let delta_line = line - prev_line;
        let delta_start = if delta_line == 0 { col - prev_col } else { col };
        out.push(lsp::SemanticToken {
            delta_line,
            delta_start,
            length: r.end.character.saturating_sub(col),
            token_type: token_type(class),
            token_modifiers_bitset: 0,
        });
        prev_line = line;
        prev_col = col;
    }
    out
}

/// The file a `file://` URI names.
fn file_path(uri: &lsp::Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1..i + 3)) {
            (b'%', Some(hex)) => match u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                }
                Err(_) => return None,
            },
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}
