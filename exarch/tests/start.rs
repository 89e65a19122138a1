//! exarch starts anywhere: with its XDG directories outside `HOME` (CI
//! runners, containers, build sandboxes), with `HOME` unset, and with
//! `HOME` read-only. The real binary, headless, against the fake provider
//! on 127.0.0.1; each run does one call that writes into the workspace and
//! reads its result back, so "started" means "did the work", not "exited".
//! A profile file the user passed that fails is still a start-up error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;
use serde_json::Value;

const WIRE: Wire = Wire::Anthropic;

struct Place {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    scratch: PathBuf,
}

impl Place {
    fn new() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ws = root.join("ws");
        let scratch = root.join("scratch");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&scratch).unwrap();
        Place {
            _tmp: tmp,
            root,
            ws,
            scratch,
        }
    }

    fn dir(&self, name: &str) -> PathBuf {
        let p = self.root.join(name);
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

struct Started {
    code: Option<i32>,
    stderr: String,
    result: Value,
    seen: Vec<Seen>,
}

impl Started {
    fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("exarch: warning:"))
            .collect()
    }
}

/// Runs exarch in `place` with exactly the environment `env` (plus the key
/// and `PATH`), making `calls` in order and then finishing.
fn start(place: &Place, env: &[(&str, &Path)], extra: &[&str], calls: &[&str]) -> Started {
    let mut script: Vec<Canned> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| WIRE.ral(false, &format!("c{i}"), c))
        .collect();
    script.push(WIRE.text(false, "done"));
    let server = FakeServer::start(script);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_exarch"));
    cmd.args(["--headless", "--provider", "anthropic", "--model", "m"])
        .args(["--base-url", &server.url(), "--no-stream"])
        .args(["--output-format", "json", "--prompt", "go"])
        .args(extra)
        .current_dir(&place.ws)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TMPDIR", &place.scratch)
        .env("ANTHROPIC_API_KEY", "sk-test");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("exarch runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Started {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        result: serde_json::from_str(stdout.trim()).unwrap_or(Value::Null),
        seen: server.requests(),
    }
}

/// The control every run makes: write into the workspace, read it back.
const WORK: &str = "echo made > made.txt\ncat made.txt";

fn assert_did_the_work(s: &Started, place: &Place) {
    assert_eq!(s.code, Some(0), "{}\n{}", s.stderr, s.result);
    assert_eq!(s.result["result"], "done", "{}", s.result);
    let results = s.seen.last().map(Seen::tool_results).unwrap_or_default();
    assert_eq!(results[0], "STDOUT:\nmade\n\nEXIT: 0", "{results:?}");
    assert!(place.ws.join("made.txt").exists());
}

fn log_path(s: &Started) -> PathBuf {
    PathBuf::from(s.result["session_log"].as_str().unwrap_or_else(|| {
        panic!("no session log in the result: {}", s.result);
    }))
}

#[test]
fn xdg_directories_outside_home_start_and_the_cache_is_writable() {
    let p = Place::new();
    let home = p.dir("home");
    let cache = p.dir("ci/cache");
    let state = p.dir("ci/state");
    let config = p.dir("ci/config");
    let s = start(
        &p,
        &[
            ("HOME", &home),
            ("XDG_CACHE_HOME", &cache),
            ("XDG_STATE_HOME", &state),
            ("XDG_CONFIG_HOME", &config),
        ],
        &[],
        &[
            WORK,
            "sh -c 'mkdir -p \"$XDG_CACHE_HOME/tool\" && echo c > \"$XDG_CACHE_HOME/tool/c\"'",
        ],
    );
    assert_did_the_work(&s, &p);
    // Nothing was left out: the cache outside home is the profile's cache.
    assert!(s.warnings().is_empty(), "{}", s.stderr);
    let results = s.seen.last().unwrap().tool_results();
    assert!(results[1].ends_with("EXIT: 0"), "{}", results[1]);
    assert!(cache.join("tool/c").exists());
    // The log went where XDG_STATE_HOME says.
    assert!(
        log_path(&s).starts_with(state.join("exarch")),
        "{}",
        s.result
    );
    let system = s.seen[0].body["system"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains(&cache.display().to_string()), "{system}");
}

#[test]
fn an_xdg_cache_at_the_root_is_left_out_with_one_warning_and_exarch_starts() {
    let p = Place::new();
    let home = p.dir("home");
    let s = start(
        &p,
        &[("HOME", &home), ("XDG_CACHE_HOME", Path::new("/"))],
        &["--log-dir", &p.dir("logs").display().to_string()],
        &[WORK, "sh -c 'echo x > /exarch-start-test-root.txt'"],
    );
    assert_did_the_work(&s, &p);
    let w = s.warnings();
    assert_eq!(w.len(), 1, "{}", s.stderr);
    assert!(
        w[0].contains("`xdg:cache`") && w[0].contains("root"),
        "{}",
        w[0]
    );
    // Left out means not granted: the root stays unwritable.
    let results = s.seen.last().unwrap().tool_results();
    assert!(!results[1].ends_with("EXIT: 0"), "{}", results[1]);
    assert!(!Path::new("/exarch-start-test-root.txt").exists());
}

#[test]
fn home_unset_starts_leaving_out_the_home_caches_by_name() {
    let p = Place::new();
    let s = start(&p, &[], &[], &[WORK]);
    assert_did_the_work(&s, &p);
    let w = s.warnings();
    for entry in [
        "`xdg:cache`",
        "`~/.cargo/registry`",
        "`~/.cargo/git`",
        "`~/.npm`",
    ] {
        assert_eq!(
            w.iter().filter(|l| l.contains(entry)).count(),
            1,
            "{entry}: {}",
            s.stderr
        );
    }
    assert!(w.iter().all(|l| l.contains("HOME")), "{w:?}");
    // With no home and no XDG_STATE_HOME the log lives under the temp dir.
    assert!(log_path(&s).starts_with(&p.scratch), "{}", s.result);
    // The warnings are in the log too.
    let log = std::fs::read_to_string(log_path(&s)).unwrap();
    assert!(log.contains("leaves out"), "{log}");
}

/// Makes `dir` read-only for this process. As root a mode is not enough,
/// so the directory is also made immutable where the file system allows;
/// the probe says whether it worked.
fn make_read_only(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let probe = dir.join("probe");
    if std::fs::write(&probe, "x").is_err() {
        return true;
    }
    let _ = std::fs::remove_file(&probe);
    let _ = Command::new("chattr")
        .arg("+i")
        .arg(dir)
        .stderr(Stdio::null())
        .status();
    std::fs::write(&probe, "x").is_err()
}

struct Writable(PathBuf);

impl Drop for Writable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

#[test]
fn a_read_only_home_starts_and_logs_elsewhere() {
    let p = Place::new();
    let home = p.dir("home");
    std::fs::create_dir_all(home.join(".cache")).unwrap();
    let _restore = Writable(home.clone());
    let home = if make_read_only(&home) {
        home
    } else {
        // Root on a file system without immutable files: a home under a
        // regular file refuses every write as surely.
        let plain = p.root.join("plain");
        std::fs::write(&plain, "").unwrap();
        plain.join("home")
    };
    let s = start(&p, &[("HOME", &home)], &[], &[WORK]);
    assert_did_the_work(&s, &p);
    assert!(
        s.warnings()
            .iter()
            .any(|w| w.contains("cannot write the log directory")),
        "{}",
        s.stderr
    );
    assert!(log_path(&s).starts_with(&p.scratch), "{}", s.result);
    assert!(!home.join(".local").exists());
}

#[test]
fn a_capabilities_file_the_user_passed_still_fails_start_up() {
    let p = Place::new();
    let home = p.dir("home");
    let cache = p.dir("ci/cache");
    let user = p.scratch.join("mine.ral");
    // The sigil's home rule holds for the user's own profile.
    std::fs::write(&user, "return [fs: [read: ['/'], write: ['xdg:cache']]]\n").unwrap();
    let s = start(
        &p,
        &[("HOME", &home), ("XDG_CACHE_HOME", &cache)],
        &["--capabilities", &user.display().to_string()],
        &[WORK],
    );
    assert_eq!(s.code, Some(2), "{}", s.stderr);
    assert!(
        s.stderr.contains("escapes the home directory"),
        "{}",
        s.stderr
    );
    assert!(s.seen.is_empty(), "the provider was contacted");
    assert!(!p.ws.join("made.txt").exists());
}
