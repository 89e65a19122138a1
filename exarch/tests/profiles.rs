//! exarch's capability profiles end to end: the real binary, headless,
//! against the fake provider on 127.0.0.1. Each run has its own workspace
//! (the directory exarch starts in), scratch (`TMPDIR`), home and an
//! "outside" directory that no profile but `dangerous` lets a call write.
//! Every escape is checked on disk, and the tool result the model reads
//! must say what was refused and which profile refused it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

const WIRE: Wire = Wire::Anthropic;

struct Place {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    scratch: PathBuf,
    home: PathBuf,
    outside: PathBuf,
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let dir = |n: &str| {
            let p = root.join(n);
            std::fs::create_dir_all(&p).unwrap();
            p
        };
        let place = Place {
            ws: dir("ws"),
            scratch: dir("scratch"),
            home: dir("home"),
            outside: dir("outside"),
            _tmp: tmp,
        };
        std::fs::write(place.outside.join("secret"), "secret\n").unwrap();
        place
    }

    fn out(&self, name: &str) -> String {
        self.outside.join(name).display().to_string()
    }
}

struct Ran {
    code: Option<i32>,
    stderr: String,
    result: Value,
    seen: Vec<Seen>,
}

impl Ran {
    /// The tool results the model read, in call order.
    fn results(&self) -> Vec<String> {
        self.seen.last().map(Seen::tool_results).unwrap_or_default()
    }

    fn system(&self) -> String {
        self.seen[0].body["system"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

/// Runs exarch in `place` with `extra` arguments; the model makes `calls`
/// in order, then ends with a text.
fn run(place: &Place, extra: &[&str], calls: &[&str]) -> Ran {
    let mut script: Vec<Canned> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| WIRE.ral(false, &format!("c{i}"), c))
        .collect();
    script.push(WIRE.text(false, "done"));
    let server = FakeServer::start(script);
    let out = Command::new(env!("CARGO_BIN_EXE_exarch"))
        .args(["--headless", "--provider", "anthropic", "--model", "m"])
        .args(["--base-url", &server.url(), "--no-stream"])
        .args(["--output-format", "json", "--prompt", "go"])
        .arg("--log-dir")
        .arg(place.scratch.join("logs"))
        .args(extra)
        .current_dir(&place.ws)
        .env("TMPDIR", &place.scratch)
        .env("HOME", &place.home)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("ANTHROPIC_BASE_URL")
        .env("ANTHROPIC_API_KEY", "sk-test")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("exarch runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let result = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    Ran {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        result,
        seen: server.requests(),
    }
}

fn assert_refused_by(result: &str, profile: &str) {
    assert!(
        result.contains(&format!("exarch profile `{profile}`")),
        "the result does not name the profile:\n{result}"
    );
    assert!(!result.contains("EXIT: 0"), "the call succeeded:\n{result}");
}

#[test]
fn confined_holds_the_workspace_and_the_network_and_says_so() {
    let p = Place::new();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = run(
        &p,
        &["--profile", "confined"],
        &[
            &format!("sh -c 'echo x > {}'", p.out("child.txt")),
            &format!("echo y > {}", p.out("own.txt")),
            &format!("cat {}", p.out("secret")),
            &format!("bash -c 'echo > /dev/tcp/127.0.0.1/{port}'"),
            "sh -c 'echo z > made.txt; echo s > \"$TMPDIR/s.txt\"'; cat made.txt",
        ],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, r.result);
    let results = r.results();
    assert_eq!(results.len(), 5, "{results:?}");
    // A started program's write: the kernel refused, the hint names it.
    assert_refused_by(&results[0], "confined");
    assert!(results[0].contains("OS sandbox"), "{}", results[0]);
    // ral's own write.
    assert_refused_by(&results[1], "confined");
    assert!(
        results[1].contains("denied by grant: write"),
        "{}",
        results[1]
    );
    // Reads outside the workspace.
    assert_refused_by(&results[2], "confined");
    assert!(!results[2].contains("STDOUT:"), "{}", results[2]);
    // The network.
    assert_refused_by(&results[3], "confined");
    assert!(listener.accept().is_err(), "a connection arrived");
    // The control: the workspace and scratch are writable.
    assert!(
        results[4].contains("z") && results[4].ends_with("EXIT: 0"),
        "{}",
        results[4]
    );
    assert!(p.ws.join("made.txt").exists());
    assert!(p.scratch.join("s.txt").exists());
    for f in ["child.txt", "own.txt"] {
        assert!(!p.outside.join(f).exists(), "{f} was written");
    }
    let system = r.system();
    assert!(system.contains("capability profile `confined`"), "{system}");
    assert!(system.contains("no network"), "{system}");
}

#[test]
fn the_default_profile_writes_only_the_workspace_scratch_and_caches() {
    let p = Place::new();
    // The cache directory exists, as it does on a machine in use (a prefix
    // absent at launch grants a started program nothing).
    std::fs::create_dir_all(p.home.join(".cache")).unwrap();
    let r = run(
        &p,
        &[],
        &[
            &format!("sh -c 'echo x > {}'", p.out("child.txt")),
            &format!("cat {}", p.out("secret")),
            "sh -c 'echo w > made.txt; mkdir -p ~/.cache/tool; echo c > ~/.cache/tool/c'; cat made.txt",
        ],
    );
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, r.result);
    let results = r.results();
    assert_refused_by(&results[0], "reasonable");
    assert!(!p.outside.join("child.txt").exists());
    // Broad reads.
    assert!(
        results[1].contains("secret") && results[1].ends_with("EXIT: 0"),
        "{}",
        results[1]
    );
    assert!(results[2].ends_with("EXIT: 0"), "{}", results[2]);
    assert!(p.ws.join("made.txt").exists());
    assert!(p.home.join(".cache/tool/c").exists());
    assert!(r.system().contains("capability profile `reasonable`"));
}

#[test]
fn a_capabilities_file_narrows_and_cannot_widen() {
    let p = Place::new();
    let narrow = p.scratch.join("narrow.ral");
    std::fs::write(
        &narrow,
        "return [net: false, fs: [read: ['/'], write: ['/']]]\n",
    )
    .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let r = run(
        &p,
        &["--capabilities", &narrow.display().to_string()],
        &[
            &format!("bash -c 'echo > /dev/tcp/127.0.0.1/{port}'"),
            &format!("sh -c 'echo x > {}'", p.out("wide.txt")),
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let results = r.results();
    assert!(results[0].contains("narrow.ral"), "{}", results[0]);
    assert!(listener.accept().is_err());
    assert_refused_by(&results[1], "reasonable");
    assert!(!p.outside.join("wide.txt").exists());
}

#[test]
fn dangerous_does_not_attenuate_and_a_bad_profile_is_a_usage_error() {
    let p = Place::new();
    let r = run(
        &p,
        &["--profile", "dangerous"],
        &[&format!("sh -c 'echo x > {}'", p.out("free.txt"))],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.results()[0].ends_with("EXIT: 0"), "{:?}", r.results());
    assert!(p.outside.join("free.txt").exists());
    let bad = p.scratch.join("bad.ral");
    std::fs::write(&bad, "return [netw: false]\n").unwrap();
    let r = run(
        &p,
        &["--capabilities", &bad.display().to_string()],
        &["echo never"],
    );
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("netw"), "{}", r.stderr);
    assert!(r.seen.is_empty(), "the provider was contacted");
    let _ = Duration::ZERO;
}
