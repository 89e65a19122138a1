//! The language server's latency: from a `didChange` of a 5,000-line file
//! (one line edited) to its `publishDiagnostics`, through the real server
//! loop and its JSON, over an in-memory connection. The target is under
//! 100 ms (issue 14). Also the analysis alone (parse and check), and a
//! hover on the analysed file.
//!
//! `cargo bench -p ral-host --bench lsp`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::json;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LINES: usize = 5_000;
const URI: &str = "file:///bench/big.ral";

fn diagnostics(conn: &Connection) -> usize {
    loop {
        match conn.receiver.recv_timeout(Duration::from_secs(30)) {
            Ok(Message::Notification(n)) if n.method == "textDocument/publishDiagnostics" => {
                return n.params["diagnostics"].as_array().map_or(0, Vec::len)
            }
            Ok(_) => {}
            Err(e) => panic!("no diagnostics: {e}"),
        }
    }
}

fn edit_to_diagnostics(c: &mut Criterion) {
    let text = ral_benches::generate_typed_program(LINES);
    let (server, client) = Connection::memory();
    let thread =
        std::thread::spawn(move || ral_host::lsp::serve(&server).map_err(|e| e.to_string()));
    let init = Request::new(
        RequestId::from(1),
        "initialize".into(),
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    client
        .sender
        .send(Message::Request(init))
        .unwrap_or_default();
    let _ = client.receiver.recv();
    let note = |method: &str, params: serde_json::Value| {
        Message::Notification(Notification::new(method.to_owned(), params))
    };
    let _ = client.sender.send(note("initialized", json!({})));
    let _ = client.sender.send(note(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "ral", "version": 1, "text": text}}),
    ));
    assert_eq!(diagnostics(&client), 0, "the generated file checks clean");
    let mut version = 1;
    c.bench_function(
        "lsp/didChange of a 5000-line file to its diagnostics",
        |b| {
            b.iter(|| {
                version += 1;
                // One line changes each time (a new literal), as typing does.
                let edited = format!("{text}let edit_{version} = {version}\n");
                let _ = client.sender.send(note(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": URI, "version": version},
                       "contentChanges": [{"text": edited}]}),
                ));
                diagnostics(&client)
            })
        },
    );
    let _ = client.sender.send(Message::Request(Request::new(
        RequestId::from(2),
        "shutdown".into(),
        serde_json::Value::Null,
    )));
    let _ = client.sender.send(note("exit", serde_json::Value::Null));
    drop(client);
    let _ = thread.join();
}

fn analysis_alone(c: &mut Criterion) {
    let text = ral_benches::generate_typed_program(LINES);
    c.bench_function("lsp/analysis (parse + check) of a 5000-line file", |b| {
        b.iter(|| {
            ral_host::lsp::analysis::Analysis::new("big.ral", &text)
                .diagnostics()
                .len()
        })
    });
    let a = ral_host::lsp::analysis::Analysis::new("big.ral", &text);
    let offset = text.len() / 2;
    c.bench_function("lsp/hover in a 5000-line file", |b| {
        b.iter(|| a.hover(offset))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(8));
    targets = edit_to_diagnostics, analysis_alone
}
criterion_main!(benches);
