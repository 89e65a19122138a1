//! The language server (`ral --lsp`): the checker in the editor.
//!
//! It speaks the Language Server Protocol over standard input and output
//! with `lsp-server` (the scaffold rust-analyzer uses) and `lsp-types`.
//! Each open document is re-analysed whole on every change
//! ([`analysis::Analysis`]: parse, then check, against the builtins
//! alone, as a script file); a burst of changes queued behind one another
//! is coalesced so only the newest text is analysed.
//!
//! | request | answer |
//! |---|---|
//! | `didOpen`, `didChange` | `publishDiagnostics`: every parse and type error and warning, with its code (`type-mismatch`, …) |
//! | `hover` | the inferred type of the binding, name or expression there; a builtin's signature and documentation |
//! | `completion` | bindings in scope, builtins with their signatures, record fields after `$name[`, keywords, executables on `PATH`, paths beside the file |
//! | `definition` | where the name is bound |
//! | `documentSymbol` | the top-level bindings with their types |
//! | `semanticTokens/full` | classes from the real lexer and parse ([`crate::ide::tokens`]) |
//!
//! Positions are UTF-16 columns, the protocol's default.

pub mod analysis;

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types as lsp;
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;

use analysis::{Analysis, Completion};

use crate::ide::Class;

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

/// Serves on standard input and output until the client says `exit`;
/// returns the process status.
pub fn serve_stdio() -> u8 {
    let (connection, io_threads) = Connection::stdio();
    let status = match serve(&connection) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ral --lsp: {e}");
            1
        }
    };
    drop(connection);
    let _ = io_threads.join();
    status
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

/// A protocol or transport failure.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The server's documents.
struct Server {
    docs: HashMap<String, (lsp::Uri, Analysis)>,
    executables: Vec<String>,
}

/// Serves on `conn` until the client shuts down (the stdio server, or an
/// in-memory connection for benches and tests).
pub fn serve(conn: &Connection) -> Result<(), Error> {
    let caps = serde_json::to_value(capabilities())?;
    conn.initialize(caps)?;
    let mut server = Server {
        docs: HashMap::new(),
        executables: crate::ide::executables(&std::env::var("PATH").unwrap_or_default()),
    };
    let mut queued: std::collections::VecDeque<Message> = std::collections::VecDeque::new();
    loop {
        let msg = match queued.pop_front() {
            Some(m) => m,
            None => match conn.receiver.recv() {
                Ok(m) => m,
                Err(_) => return Ok(()),
            },
        };
        match msg {
            Message::Request(req) => {
                if conn.handle_shutdown(&req)? {
                    return Ok(());
                }
                let resp = server.request(req);
                conn.sender.send(Message::Response(resp))?;
            }
            Message::Notification(mut note) => {
                // Coalesce a burst of changes to one document: only the
                // newest text is analysed.
                if note.method == lsp::notification::DidChangeTextDocument::METHOD {
                    while let Ok(next) = conn.receiver.try_recv() {
                        match next {
                            Message::Notification(n)
                                if n.method == note.method && same_doc(&n, &note) =>
                            {
                                note = n;
                            }
                            other => {
                                queued.push_back(other);
                                break;
                            }
                        }
                    }
                }
                if let Some(published) = server.notification(note)? {
                    let n = Notification::new(
                        lsp::notification::PublishDiagnostics::METHOD.to_owned(),
                        published,
                    );
                    conn.sender.send(Message::Notification(n))?;
                }
            }
            Message::Response(_) => {}
        }
    }
}

fn same_doc(a: &Notification, b: &Notification) -> bool {
    let uri = |n: &Notification| {
        n.params
            .get("textDocument")
            .and_then(|t| t.get("uri"))
            .cloned()
    };
    uri(a) == uri(b)
}

impl Server {
    /// Handles a notification; the diagnostics to publish, if any.
    fn notification(
        &mut self,
        note: Notification,
    ) -> Result<Option<lsp::PublishDiagnosticsParams>, Error> {
        match note.method.as_str() {
            m if m == lsp::notification::DidOpenTextDocument::METHOD => {
                let p: lsp::DidOpenTextDocumentParams = serde_json::from_value(note.params)?;
                Ok(Some(
                    self.update(p.text_document.uri, &p.text_document.text),
                ))
            }
            m if m == lsp::notification::DidChangeTextDocument::METHOD => {
                let p: lsp::DidChangeTextDocumentParams = serde_json::from_value(note.params)?;
                // Full sync: the last change holds the whole text.
                match p.content_changes.into_iter().last() {
                    Some(change) => Ok(Some(self.update(p.text_document.uri, &change.text))),
                    None => Ok(None),
                }
            }
            m if m == lsp::notification::DidCloseTextDocument::METHOD => {
                let p: lsp::DidCloseTextDocumentParams = serde_json::from_value(note.params)?;
                self.docs.remove(p.text_document.uri.as_str());
                Ok(Some(lsp::PublishDiagnosticsParams {
                    uri: p.text_document.uri,
                    diagnostics: Vec::new(),
                    version: None,
                }))
            }
            _ => Ok(None),
        }
    }

    /// Analyses a document's new text; its diagnostics.
    fn update(&mut self, uri: lsp::Uri, text: &str) -> lsp::PublishDiagnosticsParams {
        let name =
            file_path(&uri).map_or_else(|| uri.as_str().to_owned(), |p| p.display().to_string());
        let a = Analysis::new(&name, text);
        let diagnostics = a
            .diagnostics()
            .into_iter()
            .map(|d| lsp::Diagnostic {
                range: range(&a, d.primary.span),
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
                                range: range(&a, l.span),
                            },
                            message: l.text.clone(),
                        })
                        .collect(),
                ),
                ..lsp::Diagnostic::default()
            })
            .collect();
        self.docs.insert(uri.as_str().to_owned(), (uri.clone(), a));
        lsp::PublishDiagnosticsParams {
            uri,
            diagnostics,
            version: None,
        }
    }

    fn doc(&self, uri: &lsp::Uri) -> Option<&Analysis> {
        self.docs.get(uri.as_str()).map(|(_, a)| a)
    }

    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        match self.answer(req) {
            Ok(v) => Response::new_ok(id, v),
            Err(e) => Response::new_err(
                id,
                lsp_server::ErrorCode::InvalidParams as i32,
                e.to_string(),
            ),
        }
    }

    fn answer(&mut self, req: Request) -> Result<serde_json::Value, Error> {
        let method = req.method.as_str();
        if method == lsp::request::HoverRequest::METHOD {
            let p: lsp::HoverParams = serde_json::from_value(req.params)?;
            let pos = p.text_document_position_params;
            let hover = self.doc(&pos.text_document.uri).and_then(|a| {
                let off = a
                    .lines
                    .offset(&a.text, pos.position.line, pos.position.character);
                let h = a.hover(off)?;
                Some(lsp::Hover {
                    contents: lsp::HoverContents::Markup(lsp::MarkupContent {
                        kind: lsp::MarkupKind::Markdown,
                        value: h.text,
                    }),
                    range: Some(range(a, h.span)),
                })
            });
            return Ok(serde_json::to_value(hover)?);
        }
        if method == lsp::request::GotoDefinition::METHOD {
            let p: lsp::GotoDefinitionParams = serde_json::from_value(req.params)?;
            let pos = p.text_document_position_params;
            let uri = pos.text_document.uri;
            let found = self.doc(&uri).and_then(|a| {
                let off = a
                    .lines
                    .offset(&a.text, pos.position.line, pos.position.character);
                let span = a.definition(off)?;
                Some(lsp::GotoDefinitionResponse::Scalar(lsp::Location {
                    uri: uri.clone(),
                    range: range(a, span),
                }))
            });
            return Ok(serde_json::to_value(found)?);
        }
        if method == lsp::request::Completion::METHOD {
            let p: lsp::CompletionParams = serde_json::from_value(req.params)?;
            let pos = p.text_document_position;
            let uri = pos.text_document.uri;
            let dir = file_path(&uri)
                .and_then(|p| p.parent().map(PathBuf::from))
                .or_else(|| std::env::current_dir().ok())
                .unwrap_or_else(|| PathBuf::from("/"));
            let items: Vec<lsp::CompletionItem> = match self.doc(&uri) {
                Some(a) => {
                    let off = a
                        .lines
                        .offset(&a.text, pos.position.line, pos.position.character);
                    a.complete(off, &dir, &self.executables)
                        .into_iter()
                        .map(|c| completion_item(a, c))
                        .collect()
                }
                None => Vec::new(),
            };
            return Ok(serde_json::to_value(lsp::CompletionResponse::Array(items))?);
        }
        if method == lsp::request::DocumentSymbolRequest::METHOD {
            let p: lsp::DocumentSymbolParams = serde_json::from_value(req.params)?;
            let symbols: Vec<lsp::DocumentSymbol> = match self.doc(&p.text_document.uri) {
                Some(a) => a
                    .symbols()
                    .into_iter()
                    .map(|s| {
                        #[allow(deprecated)]
                        lsp::DocumentSymbol {
                            name: s.name,
                            detail: s.detail,
                            kind: if s.function {
                                lsp::SymbolKind::FUNCTION
                            } else {
                                lsp::SymbolKind::VARIABLE
                            },
                            tags: None,
                            deprecated: None,
                            range: range(a, s.whole),
                            selection_range: range(a, s.span),
                            children: None,
                        }
                    })
                    .collect(),
                None => Vec::new(),
            };
            return Ok(serde_json::to_value(lsp::DocumentSymbolResponse::Nested(
                symbols,
            ))?);
        }
        if method == lsp::request::SemanticTokensFullRequest::METHOD {
            let p: lsp::SemanticTokensParams = serde_json::from_value(req.params)?;
            let data = match self.doc(&p.text_document.uri) {
                Some(a) => semantic_tokens(a),
                None => Vec::new(),
            };
            return Ok(serde_json::to_value(lsp::SemanticTokensResult::Tokens(
                lsp::SemanticTokens {
                    result_id: None,
                    data,
                },
            ))?);
        }
        Err(format!("unsupported request {method}").into())
    }
}

/// A protocol range for a span.
fn range(a: &Analysis, s: ral_syntax::Span) -> lsp::Range {
    let (l0, c0) = a.lines.position(&a.text, s.start as usize);
    let (l1, c1) = a.lines.position(&a.text, s.end as usize);
    lsp::Range {
        start: lsp::Position::new(l0, c0),
        end: lsp::Position::new(l1, c1),
    }
}

fn completion_item(a: &Analysis, c: Completion) -> lsp::CompletionItem {
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
    let r = range(a, analysis_span(c.start, c.end));
    lsp::CompletionItem {
        label: c.label,
        kind: Some(kind),
        detail: c.detail,
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: r,
            new_text: c.insert,
        })),
        ..lsp::CompletionItem::default()
    }
}

fn analysis_span(s: usize, e: usize) -> ral_syntax::Span {
    ral_syntax::Span::new(
        u32::try_from(s).unwrap_or(u32::MAX),
        u32::try_from(e).unwrap_or(u32::MAX),
    )
}

/// The semantic tokens of a document, delta-encoded.
fn semantic_tokens(a: &Analysis) -> Vec<lsp::SemanticToken> {
    let mut out = Vec::new();
    let (mut prev_line, mut prev_col) = (0u32, 0u32);
    for (span, class) in a.tokens() {
        let (line, col) = a.lines.position(&a.text, span.start as usize);
        let (_, end_col) = a.lines.position(&a.text, span.end as usize);
        let delta_line = line - prev_line;
        let delta_start = if delta_line == 0 { col - prev_col } else { col };
        out.push(lsp::SemanticToken {
            delta_line,
            delta_start,
            length: end_col.saturating_sub(col),
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
