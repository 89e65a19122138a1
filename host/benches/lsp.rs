//! The language server's latency through the real server loop, its wire
//! and its JSON, over in-process pipes, on generated well-typed files of
//! 5,000 and 50,000 lines:
//!
//! - `diagnostics`: from a `didChange` (one line added) to its
//!   `publishDiagnostics`;
//! - `hover`, `completion` (after `$`, every binding in scope),
//!   `symbols` (every top-level binding with its type): one request to its
//!   answer, the document analysed;
//! - `hover after 10 edits`: ten `didChange`s sent back to back, then a
//!   hover: it is answered from the last completed analysis, without
//!   waiting for the edits to be analysed.
//!
//! The targets (issue 20): completion and symbols under 300 ms at 50,000
//! lines, growing linearly. A figure runs from the request's first byte
//! to the answer's last; the client does not parse a large answer's
//! payload.
//!
//! `cargo bench -p ral-host --bench lsp`

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use serde_json::{json, Value};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const URI: &str = "file:///bench/big.ral";

/// A client on the server's pipes.
struct Client {
    to: std::io::PipeWriter,
    from: BufReader<std::io::PipeReader>,
    id: i64,
}

impl Client {
    fn start() -> Client {
        let (in_r, in_w) = std::io::pipe().expect("a pipe");
        let (out_r, out_w) = std::io::pipe().expect("a pipe");
        std::thread::spawn(move || ral_host::lsp::serve(in_r, out_w));
        let mut c = Client {
            to: in_w,
            from: BufReader::new(out_r),
            id: 0,
        };
        c.request("initialize", json!({"capabilities": {}}));
        c.notify("initialized", json!({}));
        c
    }

    fn send(&mut self, v: &Value) {
        let body = v.to_string();
        write!(self.to, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("the server reads");
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message: its id when it is a response (the payload of a
    /// large answer is not parsed: the figure is the server's, not a JSON
    /// parser's), else the whole message.
    fn read(&mut self) -> Value {
        let mut len = 0;
        loop {
            let mut line = String::new();
            self.from.read_line(&mut line).expect("the server writes");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(n) = line.strip_prefix("Content-Length: ") {
                len = n.parse().expect("a length");
            }
        }
        let mut body = vec![0; len];
        self.from.read_exact(&mut body).expect("a body");
        let head = br#"{"jsonrpc":"2.0","id":"#;
        if let Some(rest) = body.strip_prefix(&head[..]) {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let id: i64 = std::str::from_utf8(&rest[..digits])
                .expect("digits")
                .parse()
                .expect("an id");
            return json!({ "id": id });
        }
        serde_json::from_slice(&body).expect("JSON")
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.read();
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    fn diagnostics(&mut self) -> usize {
        loop {
            let m = self.read();
            if m["method"] == "textDocument/publishDiagnostics" {
                return m["params"]["diagnostics"].as_array().map_or(0, Vec::len);
            }
        }
    }

    fn change(&mut self, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": URI, "version": version},
                   "contentChanges": [{"text": text}]}),
        );
    }
}

fn at(line: usize, character: usize) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}})
}

fn lsp(c: &mut Criterion) {
    let mut group = c.benchmark_group("lsp");
    for lines in [5_000, 50_000] {
        let text = ral_benches::generate_typed_program(lines);
        let mut client = Client::start();
        client.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": URI, "languageId": "ral", "version": 1, "text": text}}),
        );
        assert_eq!(client.diagnostics(), 0, "the generated file checks clean");
        let mut version = 1;
        group.bench_function(BenchmarkId::new("diagnostics", lines), |b| {
            b.iter(|| {
                version += 1;
                client.change(version, &format!("{text}let edit_{version} = {version}\n"));
                client.diagnostics()
            })
        });
        // A file ending in a line being typed: `$` after `echo`.
        let n = text.lines().count();
        let typing = format!("{text}echo $\n");
        version += 1;
        client.change(version, &typing);
        client.diagnostics();
        let middle = n / 2;
        let line = text.lines().nth(middle).unwrap_or_default();
        let col = line.find("let ").map_or(0, |i| i + 4);
        group.bench_function(BenchmarkId::new("hover", lines), |b| {
            b.iter(|| client.request("textDocument/hover", at(middle, col)))
        });
        group.bench_function(BenchmarkId::new("completion", lines), |b| {
            b.iter(|| client.request("textDocument/completion", at(n, 6)))
        });
        group.bench_function(BenchmarkId::new("symbols", lines), |b| {
            b.iter(|| {
                client.request(
                    "textDocument/documentSymbol",
                    json!({"textDocument": {"uri": URI}}),
                )
            })
        });
        group.bench_function(BenchmarkId::new("hover after 10 edits", lines), |b| {
            b.iter(|| {
                for _ in 0..10 {
                    version += 1;
                    client.change(version, &format!("{typing}# {version}\n"));
                }
                client.request("textDocument/hover", at(middle, col))
            })
        });
        client.request("shutdown", Value::Null);
        client.notify("exit", Value::Null);
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = lsp
}
criterion_main!(benches);
