//! `ral --lsp` driven by a real client over its standard input and output:
//! a scripted editor session (initialize, a document with a type error,
//! hover, completion, definition, symbols, semantic tokens, a change that
//! fixes the error, shutdown and exit); malformed messages of every kind,
//! each answered as JSON-RPC says while the server carries on; a seeded
//! stream of thousands of arbitrary and mutated messages that never ends
//! it; recovery around a line that does not parse; `?` for an ill-typed
//! binding (spec/deviations.md T1); and a burst of edits to a large file
//! analysed once while a hover is answered at once.

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
    /// Every message received.
    seen: Vec<Value>,
}

impl Client {
    /// Starts `ral --lsp` without initializing it.
    fn spawn() -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ral"))
            .arg("--lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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
                let mut body = vec![0; len.expect("every message has a Content-Length")];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                // Whatever the server writes is one JSON message.
                let msg = serde_json::from_slice(&body).unwrap_or_else(
                    |e| json!({"not-json": e.to_string(), "body": String::from_utf8_lossy(&body)}),
                );
                if tx.send(msg).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
            seen: Vec::new(),
        }
    }

    /// Starts and initializes `ral --lsp`.
    fn start() -> Client {
        let mut c = Client::spawn();
        let init = c.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": {}}),
        );
        assert!(init["capabilities"].is_object(), "{init}");
        c.notify("initialized", json!({}));
        c
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn send(&mut self, msg: Value) {
        let body = msg.to_string();
        self.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes());
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request; its whole response.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait(|m| m.get("id") == Some(&json!(id)))
    }

    /// Sends a request and waits for its response's `result`.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let msg = self.call(method, params);
        assert!(msg.get("error").is_none(), "{method}: {msg}");
        msg["result"].clone()
    }

    /// The next message `pred` accepts (others are dropped).
    fn wait(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self
                .incoming
                .recv_timeout(left)
                .expect("the server answers");
            assert!(msg.get("not-json").is_none(), "{msg}");
            self.seen.push(msg.clone());
            if pred(&msg) {
                return msg;
            }
        }
    }

    fn diagnostics(&mut self) -> Vec<Value> {
        let m = self.wait(|m| m["method"] == "textDocument/publishDiagnostics");
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }

    fn hover_text(&mut self, uri: &str, line: u32, character: u32) -> String {
        let h = self.request("textDocument/hover", at(uri, line, character));
        h["contents"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// `shutdown` then `exit`; the process must end with status 0.
    fn finish(mut self) {
        let _ = self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

const URI: &str = "file:///tmp/ral-lsp-test/deploy.ral";

fn pos(line: u32, character: u32) -> Value {
    json!({"textDocument": {"uri": URI}, "position": {"line": line, "character": character}})
}

#[test]
fn a_scripted_editor_session() {
    let mut c = Client::spawn();
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
    assert!(
        data.len() >= 5 * 5 && data.len().is_multiple_of(5),
        "{toks}"
    );
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
    let labels: Vec<&str> = items["items"]
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
    let first = &items["items"].as_array().unwrap()[0];
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
    let length = items["items"]
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

const PROBE: &str = "let greeting = 'hello'\necho $greeting\n";

/// Opens a document and waits for its own diagnostics.
fn open_doc(c: &mut Client, uri: &str, text: &str) -> Vec<Value> {
    c.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "ral", "version": 1, "text": text}}),
    );
    let m = c.wait(|m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(uri)
    });
    m["params"]["diagnostics"].as_array().unwrap().clone()
}

/// The server still answers a valid request against a fresh document.
fn assert_alive(c: &mut Client, tag: &str) {
    assert!(
        c.child.try_wait().unwrap().is_none(),
        "{tag}: the server ended"
    );
    let uri = format!("file:///tmp/ral-lsp-test/alive-{tag}.ral");
    assert!(open_doc(c, &uri, PROBE).is_empty());
    let text = c.hover_text(&uri, 0, 5);
    assert!(text.contains("greeting : String"), "{tag}: {text}");
}

/// The next error reply with a null id.
fn null_error(c: &mut Client) -> i64 {
    let m = c.wait(|m| m.get("error").is_some() && m["id"].is_null());
    m["error"]["code"].as_i64().unwrap()
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn malformed_messages_get_protocol_errors_and_the_server_carries_on() {
    // Before `initialize`: requests are refused, notifications dropped.
    let mut c = Client::spawn();
    let m = c.call("textDocument/hover", at("file:///x.ral", 0, 0));
    assert_eq!(m["error"]["code"], json!(-32002), "{m}");
    c.notify("textDocument/didOpen", json!({"nonsense": true}));
    let init = c.request("initialize", json!({"capabilities": {}}));
    assert!(init["capabilities"]["hoverProvider"].is_boolean(), "{init}");
    c.notify("initialized", json!({}));
    let again = c.call("initialize", json!({"capabilities": {}}));
    assert_eq!(again["error"]["code"], json!(-32600), "{again}");

    // A body that is not JSON.
    c.send_raw(&frame(b"{not json"));
    assert_eq!(null_error(&mut c), -32700);
    assert_alive(&mut c, "not-json");

    // A raw 0xFF byte inside a didChange's text, and a lone surrogate.
    let change = |text: &[u8]| {
        let mut b = br#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"file:///tmp/ral-lsp-test/alive-not-json.ral","version":2},"contentChanges":[{"text":"let a = '"#.to_vec();
        b.extend_from_slice(text);
        b.extend_from_slice(br#"'"}]}}"#);
        b
    };
    c.send_raw(&frame(&change(b"\xff")));
    assert_eq!(null_error(&mut c), -32700);
    c.send_raw(&frame(&change(br"\ud800")));
    assert_eq!(null_error(&mut c), -32700);
    assert_alive(&mut c, "bytes");

    // Framing: a length too large (the next message still arrives), a
    // length too small, no header at all, a header without a length, an
    // absurd length.
    let hover = json!({"jsonrpc": "2.0", "id": 900, "method": "textDocument/hover",
                       "params": at("file:///tmp/ral-lsp-test/alive-bytes.ral", 0, 5)})
    .to_string();
    let mut bytes = b"Content-Length: 100000\r\n\r\n{\"jsonrpc\":\"2.0\"".to_vec();
    bytes.extend(frame(hover.as_bytes()));
    c.send_raw(&bytes);
    assert_eq!(null_error(&mut c), -32700);
    let m = c.wait(|m| m["id"] == json!(900));
    assert!(m["result"]["contents"]["value"]
        .as_str()
        .unwrap()
        .contains("greeting : String"));
    // Each of these is reported as one or more parse errors, and the
    // request after it is answered.
    for bytes in [
        &b"Content-Length: 4\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"[..],
        br#"{"jsonrpc":"2.0","id":5,"method":"shutdown"}"#,
        b"Content-Type: text/plain\r\n\r\n",
        b"Content-Length: 999999999999999999999999\r\n\r\n",
        b"Content-Length: 12\r\nX-Junk\r\n\r\n",
    ] {
        let from = c.seen.len();
        c.send_raw(bytes);
        let m = c.call("ral/nothing", Value::Null);
        assert_eq!(m["error"]["code"], json!(-32601), "{m}");
        let parse_errors = c.seen[from..]
            .iter()
            .filter(|m| m["id"].is_null() && m["error"]["code"] == json!(-32700))
            .count();
        assert!(parse_errors >= 1, "{:?}", String::from_utf8_lossy(bytes));
    }
    assert_alive(&mut c, "framing");

    // JSON that is not a request: -32600, the id echoed when it reads.
    for (body, id) in [
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"shutdown"}]"#,
            Value::Null,
        ),
        ("42", Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"shutdown"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":2.5,"method":"shutdown"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":31,"method":17}"#, json!(31)),
        (
            r#"{"jsonrpc":"1.0","id":32,"method":"textDocument/hover"}"#,
            json!(32),
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s","method":"textDocument/hover","params":3}"#,
            json!("s"),
        ),
        (r#"{"jsonrpc":"2.0","params":{}}"#, Value::Null),
    ] {
        c.send_raw(&frame(body.as_bytes()));
        let m = c.wait(|m| m.get("error").is_some() && m["id"] == id);
        assert_eq!(m["error"]["code"], json!(-32600), "{body}: {m}");
    }
    assert_alive(&mut c, "invalid");

    // An unknown method: -32601 for a request; a notification is dropped
    // (the next message is the next request's answer).
    let m = c.call("ral/nothing", json!({}));
    assert_eq!(m["error"]["code"], json!(-32601), "{m}");
    c.notify("ral/nothing", json!({}));
    c.notify("$/setTrace", json!({"value": "off"}));
    let id = c.next_id;
    let m = c.call("ral/nothing-either", Value::Null);
    assert_eq!(m["id"], json!(id));

    // Parameters of the wrong shape: -32602 for a request, a notification
    // is dropped.
    for params in [
        json!({"textDocument": 5}),
        json!({"textDocument": {"uri": "file:///a.ral"}, "position": {"line": -1, "character": 0}}),
        json!([1, 2]),
        Value::Null,
    ] {
        let m = c.call("textDocument/hover", params.clone());
        assert_eq!(m["error"]["code"], json!(-32602), "{params}: {m}");
    }
    c.notify("textDocument/didChange", json!({"textDocument": 5}));
    c.notify("textDocument/didOpen", json!([]));
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": 7}}));
    assert_alive(&mut c, "params");
    c.finish();
}

/// A small deterministic generator (xorshift64*), so the fuzzed stream is
/// the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Valid bodies the fuzzer starts from: every method the server knows,
/// with ral text worth analysing, and some it does not know.
fn corpus() -> Vec<String> {
    let texts = [
        "let x = 1\necho $x\n",
        "let f = { |n| return $[$n * 2] }\nlet y = f 21\n",
        "let r = [a: 1, b: 'two']\necho $r[b]\nlet x = [a: ",
        "if $[1 < 2] { echo yes } else { echo no }\n",
        "case `ok 3 [`ok: { |v| echo $v }, `err: { |e| echo $e }]\n",
        "let xs = map { |x| return $[$x + 1] } [1, 2, 3]\nlet bad = $[$xs + 'q']\n",
        "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
        "echo \"unterminated $x\nlet = = =\n)]}\n",
        "ls | grep x | wc -l\nlet n = !{wc -l < /etc/hostname}\n",
        "",
    ];
    let mut out = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let uri = format!("file:///tmp/ral-lsp-fuzz/f{}.ral", i % 4);
        out.push(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                   "params": {"textDocument": {"uri": uri, "languageId": "ral", "version": 1, "text": t}}})
            .to_string(),
        );
        out.push(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
                   "params": {"textDocument": {"uri": uri, "version": 2},
                              "contentChanges": [{"text": t}]}})
            .to_string(),
        );
    }
    for (i, method) in [
        "textDocument/hover",
        "textDocument/definition",
        "textDocument/completion",
        "textDocument/documentSymbol",
        "textDocument/semanticTokens/full",
        "ral/unknown",
        "workspace/symbol",
    ]
    .iter()
    .enumerate()
    {
        let uri = format!("file:///tmp/ral-lsp-fuzz/f{}.ral", i % 4);
        out.push(
            json!({"jsonrpc": "2.0", "id": 10_000 + i, "method": method,
                   "params": {"textDocument": {"uri": uri}, "position": {"line": i % 3, "character": i * 2}}})
            .to_string(),
        );
    }
    out.push(
        json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 10_001}})
            .to_string(),
    );
    out.push(
        json!({"jsonrpc": "2.0", "method": "textDocument/didClose",
               "params": {"textDocument": {"uri": "file:///tmp/ral-lsp-fuzz/f1.ral"}}})
        .to_string(),
    );
    out.push(json!({"jsonrpc": "2.0", "id": 20_000, "result": null}).to_string());
    out
}

/// One message of the fuzzed stream: a corpus body, framed and perhaps
/// damaged in one of many ways.
fn mutate(rng: &mut Rng, body: &str) -> Vec<u8> {
    let mut b = body.as_bytes().to_vec();
    let pos = |rng: &mut Rng, b: &[u8]| rng.below(b.len() + 1);
    const NASTY: &[&[u8]] = &[
        b"\xff",
        b"\xc3",
        b"\"",
        b"\\",
        b"\n",
        b"\r\n",
        b"{",
        b"}",
        b"[",
        b"]",
        b"\\ud800",
        b"\\udfff",
        b"\\x",
        b"\0",
        b"null",
        b"-1",
        b"1e999",
        b"Content-Length: 3\r\n\r\n",
        b"\xf0\x9f\x98",
        b"\xe2\x80\xa8",
    ];
    let framed = match rng.below(14) {
        0 | 1 => frame(&b),
        2 => {
            for _ in 0..=rng.below(4) {
                let i = rng.below(b.len().max(1));
                if let Some(x) = b.get_mut(i) {
                    *x ^= 1 << rng.below(8);
                }
            }
            frame(&b)
        }
        3 => {
            let i = pos(rng, &b);
            let junk = NASTY[rng.below(NASTY.len())];
            b.splice(i..i, junk.iter().copied());
            frame(&b)
        }
        4 => {
            let i = pos(rng, &b);
            let j = (i + rng.below(20)).min(b.len());
            b.drain(i..j);
            frame(&b)
        }
        5 => {
            // The header promises more than comes.
            let mut f =
                format!("Content-Length: {}\r\n\r\n", b.len() + 1 + rng.below(5000)).into_bytes();
            f.extend_from_slice(&b);
            f
        }
        6 => {
            // The header promises less.
            let mut f =
                format!("Content-Length: {}\r\n\r\n", rng.below(b.len().max(1))).into_bytes();
            f.extend_from_slice(&b);
            f
        }
        7 => b,
        8 => {
            let bad = ["abc", "-5", "", "1 2", "99999999999999999999", "0x10", "+3"];
            let mut f =
                format!("Content-Length: {}\r\n\r\n", bad[rng.below(bad.len())]).into_bytes();
            f.extend_from_slice(&b);
            f
        }
        9 => {
            let n = rng.below(300);
            let r = rng.bytes(n);
            if rng.below(2) == 0 {
                frame(&r)
            } else {
                r
            }
        }
        10 => {
            // A value of the wrong shape where the protocol wants another.
            let mut v: Value = serde_json::from_str(body).unwrap();
            let wrong = [
                json!(5),
                json!("x"),
                json!([]),
                json!({}),
                json!(-1),
                json!(1e300),
            ];
            let w = wrong[rng.below(wrong.len())].clone();
            match rng.below(4) {
                0 => v["params"] = w,
                1 => v["params"]["textDocument"] = w,
                2 => v["params"]["position"] = w,
                _ => v["params"]["position"]["line"] = w,
            }
            frame(v.to_string().as_bytes())
        }
        11 => {
            let mut f = b"content-length: ".to_vec();
            f.extend(b.len().to_string().bytes());
            f.extend_from_slice(
                b"\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
            );
            f.extend_from_slice(&b);
            f
        }
        12 => {
            let mut f = frame(&b);
            let i = rng.below(f.len());
            f.truncate(i);
            f
        }
        _ => {
            let i = pos(rng, &b);
            let j = (i + rng.below(40)).min(b.len());
            let piece = b[i..j].to_vec();
            let k = pos(rng, &b);
            b.splice(k..k, piece);
            frame(&b)
        }
    };
    framed
}

#[test]
fn a_fuzzed_stream_never_ends_the_server() {
    let mut c = Client::start();
    let probe = "file:///tmp/ral-lsp-test/probe.ral";
    assert!(open_doc(&mut c, probe, PROBE).is_empty());
    let corpus = corpus();
    let mut rng = Rng(0x5eed_0020_00f0_0d5e);
    let mut stream = Vec::new();
    let mut sent = 0;
    while sent < 4000 {
        let body = &corpus[rng.below(corpus.len())];
        let msg = mutate(&mut rng, body);
        // What ends or stops the server by the protocol stays out.
        let text = String::from_utf8_lossy(&msg);
        if text.contains("\"exit\"") || text.contains("\"shutdown\"") {
            continue;
        }
        stream.extend(msg);
        sent += 1;
    }
    for chunk in stream.chunks(4096) {
        c.send_raw(chunk);
    }
    // A header that lied about its length costs at most the message after
    // it (rpc.rs): these absorb that.
    for _ in 0..3 {
        c.notify("$/ral/padding", json!({}));
    }
    let text = c.hover_text(probe, 0, 5);
    assert!(text.contains("greeting : String"), "{text}");
    assert!(c.child.try_wait().unwrap().is_none());
    // The stream reached every kind of reply.
    let codes: std::collections::BTreeSet<i64> = c
        .seen
        .iter()
        .filter_map(|m| m["error"]["code"].as_i64())
        .collect();
    for code in [-32700, -32600, -32601, -32602] {
        assert!(codes.contains(&code), "no {code} reply among {codes:?}");
    }
    assert_alive(&mut c, "after-fuzz");
    c.finish();
}

#[test]
fn statements_that_parse_answer_while_a_line_does_not() {
    let mut c = Client::start();
    // A half-typed record at the end of the file.
    let uri = "file:///tmp/ral-lsp-test/typing.ral";
    let text = "let config = [host: 'db', port: 5432]\n\
                let bump = { |n| return $[$n + 1] }\n\
                let next = bump $config[port]\n\
                echo $next\n\
                let x = [a: ";
    let diags = open_doc(&mut c, uri, text);
    assert!(
        diags
            .iter()
            .all(|d| d["range"]["start"]["line"] == json!(4)),
        "only the last line is wrong: {diags:?}"
    );
    assert!(c
        .hover_text(uri, 0, 5)
        .contains("config : [host: String, port: Integer]"));
    assert!(c
        .hover_text(uri, 1, 5)
        .contains("bump : {Integer -> Returns Integer}"));
    assert!(c.hover_text(uri, 3, 7).contains("$next : Integer"));
    let def = c.request("textDocument/definition", at(uri, 2, 17));
    assert_eq!(
        def["range"]["start"],
        json!({"line": 0, "character": 4}),
        "{def}"
    );
    let items = c.request("textDocument/completion", at(uri, 2, 25));
    let labels: Vec<&str> = items["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, vec!["port"], "{items}");

    // A line in the middle that does not parse: the lines after it are
    // checked, see the names bound before and after it, and a use of the
    // name it was binding is not called unbound.
    let uri = "file:///tmp/ral-lsp-test/middle.ral";
    let text = "let base = 40\n\
                let broken = $[1 + ]\n\
                let total = $[$base + 2]\n\
                echo $total $broken\n\
                echo $nowhere\n";
    let diags = open_doc(&mut c, uri, text);
    let lines: Vec<i64> = diags
        .iter()
        .map(|d| d["range"]["start"]["line"].as_i64().unwrap())
        .collect();
    assert!(lines.contains(&1), "the bad line is reported: {diags:?}");
    assert!(
        !lines.contains(&3),
        "`$broken` is not called unbound: {diags:?}"
    );
    let unbound: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == json!("unbound-name"))
        .collect();
    assert_eq!(unbound.len(), 1, "only `$nowhere`: {diags:?}");
    assert_eq!(unbound[0]["range"]["start"]["line"], json!(4));
    assert!(c.hover_text(uri, 2, 5).contains("total : Integer"));
    assert!(c.hover_text(uri, 3, 7).contains("$total : Integer"));
    let def = c.request("textDocument/definition", at(uri, 2, 17));
    assert_eq!(
        def["range"]["start"],
        json!({"line": 0, "character": 4}),
        "{def}"
    );
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let names: Vec<&str> = syms
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["base", "total"]);
    c.finish();
}

#[test]
fn an_ill_typed_binding_shows_unknown() {
    // spec/deviations.md T1: a type already reported as an error prints `?`.
    let mut c = Client::start();
    let uri = "file:///tmp/ral-lsp-test/t1.ral";
    let text = "let n = 3\nlet bad = $[$n + 'x']\necho $bad\n";
    let diags = open_doc(&mut c, uri, text);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(c.hover_text(uri, 0, 4).contains("n : Integer"));
    let h = c.hover_text(uri, 1, 5);
    assert!(h.contains("bad : ?"), "{h}");
    let h = c.hover_text(uri, 2, 7);
    assert!(h.contains("$bad : ?"), "{h}");
    let syms = c.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let details: Vec<(&str, &str)> = syms
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["detail"].as_str().unwrap()))
        .collect();
    assert_eq!(details, vec![("n", "Integer"), ("bad", "?")]);
    c.finish();
}

#[test]
fn a_burst_of_edits_is_analysed_once_and_a_hover_does_not_wait() {
    let mut c = Client::start();
    let uri = "file:///tmp/ral-lsp-test/big.ral";
    let text = ral_benches::generate_typed_program(5_000);
    assert!(open_doc(&mut c, uri, &text).is_empty());
    let first = text.lines().next().unwrap();
    let col = first.find("let ").unwrap() as u32 + 4;
    let want = c.hover_text(uri, 0, col);
    assert!(want.contains(" : "), "{want}");
    // Ten edits back to back, the last one wrong on its last line.
    let mut edited = text.clone();
    for v in 2..=11 {
        if v == 11 {
            edited.push_str("let last = $[1 + 'x']\n");
        } else {
            edited.push_str(&format!("let edit_{v} = {v}\n"));
        }
        c.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": v},
                   "contentChanges": [{"text": edited}]}),
        );
    }
    let id = c.next_id;
    c.next_id += 1;
    c.send(
        json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/hover",
                  "params": at(uri, 0, col)}),
    );
    // The hover is answered from the analysis already made, before the
    // burst's analysis lands; only the newest text's diagnostics are
    // published.
    let mut order = Vec::new();
    let last_line = edited.lines().count() as i64 - 1;
    loop {
        let m = c.wait(|_| true);
        if m["id"] == json!(id) {
            assert_eq!(m["result"]["contents"]["value"].as_str().unwrap(), want);
            order.push("hover".to_owned());
        } else if m["method"] == "textDocument/publishDiagnostics" {
            let d = m["params"]["diagnostics"].as_array().unwrap();
            let lines: Vec<i64> = d
                .iter()
                .map(|d| d["range"]["start"]["line"].as_i64().unwrap())
                .collect();
            let newest = !lines.is_empty() && lines.iter().all(|l| *l == last_line);
            order.push(if newest {
                "diagnostics of the newest text".to_owned()
            } else {
                format!("diagnostics {lines:?}")
            });
            if newest {
                break;
            }
        }
    }
    assert_eq!(
        order,
        vec!["hover", "diagnostics of the newest text"],
        "one analysis of the newest text, after the hover"
    );
    c.finish();
}
