//! `ral --lsp` driven by a scripted client over stdio: initialize, a
//! document with a type error, hover, completion, definition, symbols,
//! semantic tokens, a change that fixes the error, shutdown and exit.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
}

impl Client {
    fn start() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ral"))
            .arg("--lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("ral --lsp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = None;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        len = n.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; len.unwrap_or(0)];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
        }
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let msg = self.wait(|m| m.get("id") == Some(&json!(id)));
        assert!(msg.get("error").is_none(), "{method}: {msg}");
        msg["result"].clone()
    }

    /// The next message `pred` accepts (others are dropped).
    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self
                .incoming
                .recv_timeout(left)
                .expect("the server answers");
            if pred(&msg) {
                return msg;
            }
        }
    }

    fn diagnostics(&mut self) -> Vec<Value> {
        let m = self.wait(|m| m["method"] == "textDocument/publishDiagnostics");
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }
}

const URI: &str = "file:///tmp/ral-lsp-test/deploy.ral";

fn pos(line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}})
}

#[test]
fn a_scripted_editor_session() {
    let mut c = Client::start();
    let init = c.request(
        "initialize",
        json!({"processId": null, "rootUri": null, "capabilities": {}}),
    );
    let caps = &init["capabilities"];
    assert_eq!(caps["hoverProvider"], json!(true));
    assert!(caps["semanticTokensProvider"]["legend"]["tokenTypes"].is_array());
    c.notify("initialized", json!({}));

    // Line 3 adds a String to an Integer: a type error, with its code.
    let broken = "let config = [host: 'db.example', port: 5432]\n\
                  let bump = { |n| return $[$n + 1] }\n\
                  let next = bump $config[port]\n\
                  let bad = $[$next + 'x']\n\
                  echo $config[host]\n";
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "ral", "version": 1, "text": broken}}),
    );
    let diags = c.diagnostics();
    assert!(!diags.is_empty());
    let d = &diags[0];
    assert_eq!(d["severity"], json!(1), "{d}");
    assert_eq!(d["range"]["start"]["line"], json!(3), "{d}");
    assert!(
        d["code"].as_str().is_some_and(|s| s.contains('-')),
        "a stable code: {d}"
    );

    // Hover: a binder's inferred type, a use's type, a builtin's doc.
    let h = c.request("textDocument/hover", pos(0, 5));
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("config : [host: String, port: Integer]"),
        "{text}"
    );
    let h = c.request("textDocument/hover", pos(1, 5));
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("bump : {Integer -> Returns Integer}"),
        "{text}"
    );
    let h = c.request("textDocument/hover", pos(4, 1));
    let text = h["contents"]["value"].as_str().unwrap();
    assert!(text.contains("echo"), "{text}");

    // Definition: `$config` on line 5 is bound on line 1.
    let def = c.request("textDocument/definition", pos(4, 7));
    assert_eq!(def["uri"], json!(URI));
    assert_eq!(def["range"]["start"], json!({"line": 0, "character": 4}));

    // Symbols: the top-level bindings with their types.
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": URI}}),
    );
    let names: Vec<&str> = syms
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["config", "bump", "next", "bad"]);

    // Semantic tokens from the lexer: a non-empty, delta-encoded list.
    let toks = c.request(
        "textDocument/semanticTokens/full",
        json!({"textDocument": {"uri": URI}}),
    );
    let data = toks["data"].as_array().unwrap();
    assert!(data.len() >= 5 * 5 && data.len() % 5 == 0, "{toks}");
    // The first token is `let`, a keyword (type 0), at 0:0, 3 long.
    assert_eq!(
        &data[..5],
        &[json!(0), json!(0), json!(3), json!(0), json!(0)]
    );

    // Fix the error; the diagnostics clear.
    let fixed = broken.replace("$[$next + 'x']", "$[$next + 1]");
    let with_completion = format!("{fixed}echo $config[p");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 2},
               "contentChanges": [{"text": with_completion}]}),
    );
    // The unfinished last line is a parse error; the type error is gone.
    let diags = c.diagnostics();
    assert!(
        diags
            .iter()
            .all(|d| d["range"]["start"]["line"] != json!(3)),
        "{diags:?}"
    );

    // Completion: a record field of a known type, then a binding.
    let items = c.request("textDocument/completion", pos(5, 14));
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["port"]);
    // The fixed file alone: no diagnostics at all.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 3},
               "contentChanges": [{"text": fixed.clone()}]}),
    );
    let diags = c.diagnostics();
    assert!(diags.is_empty(), "{diags:?}");
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 4},
               "contentChanges": [{"text": format!("{fixed}echo $ne")}]}),
    );
    let diags = c.diagnostics();
    assert_eq!(diags[0]["code"], json!("unbound-name"), "{diags:?}");
    let items = c.request("textDocument/completion", pos(5, 8));
    let first = &items.as_array().unwrap()[0];
    assert_eq!(first["label"], json!("$next"));
    assert_eq!(first["detail"], json!("Integer"));
    assert_eq!(first["textEdit"]["newText"], json!("next"));
    // Builtins come with their signatures.
    c.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": URI, "version": 5},
               "contentChanges": [{"text": format!("{fixed}lengt")}]}),
    );
    c.diagnostics();
    let items = c.request("textDocument/completion", pos(5, 5));
    let length = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["label"] == "length")
        .expect("length is offered");
    assert!(
        length["detail"].as_str().unwrap().contains("Integer"),
        "{length}"
    );

    let _ = c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    let status = c.child.wait().unwrap();
    assert!(status.success(), "{status}");
}
