//! The arguments of commands at the prompt (spec/host.md §4.2): what
//! `git ch`, `cargo b` or `ls --al` may go on to.
//!
//! A command's completion spec ([`ral_host::ide::specs`]) comes from, in
//! order: the user's `completions/NAME.json` in the configuration
//! directory (re-read when it changes; a spec that does not read is
//! reported once and passed over), the specs shipped with ral, and, for
//! any other program on `PATH`, a spec read from its `--help` text. That
//! text is got, when a flag is being completed (a word starting with
//! `-`), by running `PROGRAM --help` with no input, in its own process
//! group, for at most [`HELP_LIMIT`]; the spec (or the finding
//! that there is none) is cached by the program's path and modification
//! time, in memory and in `help/` under the cache directory
//! (`$XDG_CACHE_HOME/ral`, else `~/.cache/ral`), so a program is asked
//! once per version. `--help` is not run for ral's own names, for
//! programs that change the machine's power state, nor when the session
//! has a capability ceiling (completion must not run what the session
//! may not).
//!
//! A spec's generator commands (`{"command": [...]}`) run in the session's
//! working directory under the same limit; their lines are kept for a few
//! seconds, so Tab pressed twice runs them once.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use ral_host::ide::specs::{self, Offer, Spec, Word};
use ral_host::ide::Invocation;
use serde_json::{json, Value};

/// The longest a `--help` or a generator may run.
pub const HELP_LIMIT: Duration = Duration::from_millis(500);
/// How long a generator's words are reused.
const GENERATED_FOR: Duration = Duration::from_secs(3);
/// The most output read from a helper program.
const OUTPUT_CAP: usize = 1 << 20;
/// Programs never run to read their `--help`.
const NEVER_RUN: &[&str] = &["halt", "poweroff", "reboot", "shutdown", "init", "telinit"];

/// A spec found for a command.
enum Found {
    Shipped(&'static Spec),
    Owned(Arc<Spec>),
}

impl std::ops::Deref for Found {
    type Target = Spec;
    fn deref(&self) -> &Spec {
        match self {
            Found::Shipped(s) => s,
            Found::Owned(s) => s,
        }
    }
}

/// A user spec as last read: the file's modification time and the spec.
type UserEntry = (Option<SystemTime>, Option<Arc<Spec>>);
/// A program's `--help` reading: its modification time and the spec.
type HelpEntry = (SystemTime, Option<Arc<Spec>>);
/// A generator's words by its command line and directory, with when they
/// were made.
type Generated = HashMap<(Vec<String>, PathBuf), (Instant, Arc<Vec<Word>>)>;

/// The argument completer's state (see the module docs).
pub struct Arguments {
    config: Option<PathBuf>,
    cache: Option<PathBuf>,
    /// Whether `--help` and generators may run.
    may_run: bool,
    user: Mutex<HashMap<String, UserEntry>>,
    help: Mutex<HashMap<PathBuf, HelpEntry>>,
    generated: Mutex<Generated>,
    /// Problems to report before the next prompt.
    notices: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `$XDG_CACHE_HOME/ral` when that is absolute, else `~/.cache/ral`.
pub fn cache_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    match xdg {
        Some(x) => Some(x.join("ral")),
        None => {
            let home = PathBuf::from(std::env::var_os("HOME")?);
            home.is_absolute().then(|| home.join(".cache").join("ral"))
        }
    }
}

impl Arguments {
    pub fn new(config: Option<PathBuf>, cache: Option<PathBuf>, may_run: bool) -> Arguments {
        Arguments {
            config,
            cache,
            may_run,
            user: Mutex::new(HashMap::new()),
            help: Mutex::new(HashMap::new()),
            generated: Mutex::new(HashMap::new()),
            notices: Mutex::new(Vec::new()),
        }
    }

    /// The problems found since the last call (a user spec that does not
    /// read).
    pub fn take_notices(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.notices))
    }

    /// What the word being typed after `inv` may be. `ral_name` says
    /// whether the head is one of the session's own names (a builtin, a
    /// binding, an alias), whose `--help` is not a program's; `path_var`
    /// is the session's `PATH`, `cwd` its working directory.
    pub fn offers(
        &self,
        inv: &Invocation,
        typed: &str,
        cwd: &Path,
        path_var: &str,
        ral_name: bool,
    ) -> Vec<Offer> {
        // `--help` runs only when a flag is being completed: a program
        // that does not know the flag (a script of the user's) may do
        // something else with it, and asking for flags is asking for that.
        let may_ask = typed.starts_with('-');
        let Some(spec) = self.spec(&inv.head, cwd, path_var, ral_name, may_ask) else {
            return vec![Offer::Files];
        };
        specs::offers(&spec, &inv.words, typed)
            .into_iter()
            .map(|o| match o {
                Offer::Run(argv) => Offer::Words(self.generate(&argv, cwd).to_vec()),
                other @ (Offer::Words(_) | Offer::Files | Offer::Directories | Offer::Commands) => {
                    other
                }
            })
            .collect()
    }

    fn spec(
        &self,
        head: &str,
        cwd: &Path,
        path_var: &str,
        ral_name: bool,
        may_ask: bool,
    ) -> Option<Found> {
        if let Some(s) = self.user_spec(head) {
            return Some(Found::Owned(s));
        }
        if let Some(s) = specs::shipped(head) {
            return Some(Found::Shipped(s));
        }
        if ral_name || !self.may_run || NEVER_RUN.contains(&head) {
            return None;
        }
        let program = find_program(head, cwd, path_var)?;
        self.help_spec(head, &program, may_ask).map(Found::Owned)
    }

    /// `CONFIG/completions/HEAD.json`, read again when it changed.
    fn user_spec(&self, head: &str) -> Option<Arc<Spec>> {
        let ok_name =
            !head.is_empty() && !head.contains(['/', '\0']) && head != "." && head != "..";
        if !ok_name {
            return None;
        }
        let path = self
            .config
            .as_ref()?
            .join("completions")
            .join(format!("{head}.json"));
        let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut user = lock(&self.user);
        if let Some((seen, spec)) = user.get(head) {
            if *seen == mtime {
                return spec.clone();
            }
        }
        let spec = match mtime {
            None => None,
            Some(_) => match std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|t| Spec::from_json(&t))
            {
                Ok(s) => Some(Arc::new(s)),
                Err(e) => {
                    lock(&self.notices).push(format!(
                        "the completion spec {} is not used: {e}",
                        path.display()
                    ));
                    None
                }
            },
        };
        user.insert(head.to_owned(), (mtime, spec.clone()));
        spec
    }

    /// The spec read from `program --help`, cached by path and
    /// modification time; without `may_ask`, only a reading already made.
    fn help_spec(&self, head: &str, program: &Path, may_ask: bool) -> Option<Arc<Spec>> {
        let mtime = std::fs::metadata(program).and_then(|m| m.modified()).ok()?;
        if let Some((seen, spec)) = lock(&self.help).get(program) {
            if *seen == mtime {
                return spec.clone();
            }
        }
        let spec = match self.read_cached(program, mtime) {
            Some(spec) => spec,
            None if !may_ask => return None,
            None => {
                let spec = run_help(head, program);
                self.write_cached(program, mtime, spec.as_ref());
                spec.map(Arc::new)
            }
        };
        lock(&self.help).insert(program.to_path_buf(), (mtime, spec.clone()));
        spec
    }

    /// The cache file for a program: its path with `%` and `/` escaped.
    fn cache_file(&self, program: &Path) -> Option<PathBuf> {
        let name: String = program
            .to_string_lossy()
            .chars()
            .map(|c| match c {
                '%' => "%25".to_owned(),
                '/' => "%2F".to_owned(),
                c => c.to_string(),
            })
            .collect();
        Some(
            self.cache
                .as_ref()?
                .join("help")
                .join(format!("{name}.json")),
        )
    }

    /// A cached reading for `program` at `mtime`: `Some(None)` when its
    /// `--help` gave nothing.
    fn read_cached(&self, program: &Path, mtime: SystemTime) -> Option<Option<Arc<Spec>>> {
        let text = std::fs::read_to_string(self.cache_file(program)?).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        if v["path"].as_str() != program.to_str() || v["mtime"] != stamp(mtime) {
            return None;
        }
        match &v["spec"] {
            Value::Null => Some(None),
            spec @ (Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_)
            | Value::Object(_)) => Some(Some(Arc::new(Spec::from_json(&spec.to_string()).ok()?))),
        }
    }

    fn write_cached(&self, program: &Path, mtime: SystemTime, spec: Option<&Spec>) {
        let Some(file) = self.cache_file(program) else {
            return;
        };
        let body = json!({
            "path": program.to_string_lossy(),
            "mtime": stamp(mtime),
            "spec": spec.map_or(Value::Null, Spec::to_json),
        });
        // A cache that cannot be written only costs the next session a run.
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = file.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, body.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &file);
        }
    }

    /// A generator's words (run at most once per [`GENERATED_FOR`]).
    fn generate(&self, argv: &[String], cwd: &Path) -> Arc<Vec<Word>> {
        let key = (argv.to_vec(), cwd.to_path_buf());
        if let Some((at, words)) = lock(&self.generated).get(&key) {
            if at.elapsed() < GENERATED_FOR {
                return words.clone();
            }
        }
        let words = if self.may_run {
            run_limited(argv, cwd)
                .map(|(out, _)| {
                    let mut seen = std::collections::HashSet::new();
                    String::from_utf8_lossy(&out)
                        .lines()
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && seen.insert(l.to_string()))
                        .map(|l| Word {
                            text: l.to_owned(),
                            description: String::new(),
                        })
                        .collect()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        let words = Arc::new(words);
        lock(&self.generated).insert(key, (Instant::now(), words.clone()));
        words
    }
}

/// A modification time as JSON (seconds and nanoseconds since the epoch).
fn stamp(t: SystemTime) -> Value {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => json!([d.as_secs(), d.subsec_nanos()]),
        Err(_) => Value::Null,
    }
}

/// The program `head` runs: a path (relative to `cwd`), or the first
/// executable of that name on `path_var`.
fn find_program(head: &str, cwd: &Path, path_var: &str) -> Option<PathBuf> {
    let runs = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if head.contains('/') {
        let p = cwd.join(head);
        return runs(&p).then_some(p);
    }
    path_var
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(head))
        .find(|p| runs(p))
}

/// The spec `program --help` describes, if it describes one.
fn run_help(head: &str, program: &Path) -> Option<Spec> {
    let argv = [program.to_string_lossy().into_owned(), "--help".to_owned()];
    let cwd = std::env::temp_dir();
    let (out, err) = run_limited(&argv, &cwd)?;
    // Some programs print their help to standard error.
    let text = if out.is_empty() { err } else { out };
    let spec = specs::from_help(head, &String::from_utf8_lossy(&text));
    (!spec.flags.is_empty() || !spec.subcommands.is_empty()).then_some(spec)
}

/// Runs `argv` in `cwd` with no input, in a process group of its own, for
/// at most [`HELP_LIMIT`]; its output and error output, or `None` when it
/// could not start or ran too long (then its group is killed).
fn run_limited(argv: &[String], cwd: &Path) -> Option<(Vec<u8>, Vec<u8>)> {
    use std::os::unix::process::CommandExt;
    let (program, args) = argv.split_first()?;
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("MANPAGER", "cat")
        .env("NO_COLOR", "1")
        .env("TERM", "dumb")
        .env("COLUMNS", "200")
        .process_group(0)
        .spawn()
        .ok()?;
    let deadline = Instant::now() + HELP_LIMIT;
    let (tx, rx) = std::sync::mpsc::channel();
    for (which, pipe) in [
        (
            0u8,
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
        (
            1u8,
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ),
    ] {
        let Some(pipe) = pipe else { continue };
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.take(OUTPUT_CAP as u64).read_to_end(&mut buf);
            let _ = tx.send((which, buf));
        });
    }
    drop(tx);
    let kill = |child: &mut std::process::Child| {
        if let Some(pid) = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((0, b)) => out = b,
            Ok((_, b)) => err = b,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                kill(&mut child);
                return None;
            }
        }
    }
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return Some((out, err)),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) | Err(_) => {
                kill(&mut child);
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ral-args-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).ok();
        d
    }

    fn write_program(dir: &Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).ok();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).ok();
        p
    }

    fn words(offers: &[Offer]) -> Vec<String> {
        offers
            .iter()
            .flat_map(|o| match o {
                Offer::Words(w) => w.iter().map(|w| w.text.clone()).collect(),
                other @ (Offer::Files | Offer::Directories | Offer::Commands | Offer::Run(_)) => {
                    vec![format!("{other:?}")]
                }
            })
            .collect()
    }

    fn inv(head: &str) -> Invocation {
        Invocation {
            head: head.to_owned(),
            words: Vec::new(),
        }
    }

    #[test]
    fn help_is_read_once_per_version_and_cached_on_disk() {
        let dir = scratch("help");
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).ok();
        let count = dir.join("count");
        let body = format!(
            "echo run >> {}\nprintf '  -x, --extra   more\\n      --other=FILE   a file\\n'",
            count.display()
        );
        let prog = write_program(&bin, "tool", &body);
        let path_var = bin.display().to_string();
        let args = Arguments::new(None, Some(dir.join("cache")), true);
        // Completing a file does not run the program.
        let got = words(&args.offers(&inv("tool"), "", &dir, &path_var, false));
        assert_eq!(got, ["Files"]);
        assert!(!count.exists(), "--help ran for a plain word");
        let got = words(&args.offers(&inv("tool"), "--", &dir, &path_var, false));
        assert_eq!(got, ["-x", "--extra", "--other"]);
        args.offers(&inv("tool"), "--", &dir, &path_var, false);
        let runs = || {
            std::fs::read_to_string(&count)
                .unwrap_or_default()
                .lines()
                .count()
        };
        assert_eq!(runs(), 1, "the second Tab uses the memory cache");
        // A new session reads the disk cache.
        let again = Arguments::new(None, Some(dir.join("cache")), true);
        assert_eq!(
            words(&again.offers(&inv("tool"), "--o", &dir, &path_var, false)),
            ["-x", "--extra", "--other"]
        );
        assert_eq!(runs(), 1);
        // A new version of the program is asked again.
        std::thread::sleep(Duration::from_millis(20));
        write_program(&bin, "tool", &format!("{body}\nprintf '  --new   new\\n'"));
        let _ = prog;
        let got = words(&again.offers(&inv("tool"), "--", &dir, &path_var, false));
        assert!(got.contains(&"--new".to_owned()), "{got:?}");
        assert_eq!(runs(), 2);
        // No program runs for ral's names, nor under a ceiling.
        let none = Arguments::new(None, None, false);
        assert_eq!(
            words(&none.offers(&inv("tool"), "--", &dir, &path_var, false)),
            ["Files"]
        );
        assert_eq!(
            words(&args.offers(&inv("tool"), "--", &dir, &path_var, true)),
            ["Files"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_slow_help_is_cut_off() {
        let dir = scratch("slow");
        write_program(
            &dir,
            "slow",
            "printf '  --late   late\\n'; sleep 5; printf '  --never  x\\n'",
        );
        let args = Arguments::new(None, None, true);
        let t = Instant::now();
        let got = words(&args.offers(&inv("slow"), "--", &dir, &dir.display().to_string(), false));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert_eq!(got, ["Files"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn user_specs_come_first_and_bad_ones_are_reported() {
        let dir = scratch("user");
        let cfg = dir.join("cfg");
        std::fs::create_dir_all(cfg.join("completions")).ok();
        std::fs::write(
            cfg.join("completions/git.json"),
            r#"{"name": "git", "subcommands": [{"name": "mine"}]}"#,
        )
        .ok();
        std::fs::write(
            cfg.join("completions/cargo.json"),
            r#"{"name": "cargo", "oops": 1}"#,
        )
        .ok();
        let args = Arguments::new(Some(cfg), None, false);
        assert_eq!(
            words(&args.offers(&inv("git"), "", &dir, "", false)),
            ["mine"]
        );
        // The shipped spec stands in for one that does not read.
        let cargo = words(&args.offers(&inv("cargo"), "b", &dir, "", false));
        assert!(cargo.contains(&"build".to_owned()), "{cargo:?}");
        let notices = args.take_notices();
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("unknown key `oops`"), "{notices:?}");
        // Reported once, not at every Tab.
        args.offers(&inv("cargo"), "b", &dir, "", false);
        assert!(args.take_notices().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn generators_run_in_the_working_directory() {
        let dir = scratch("gen");
        std::fs::write(dir.join("a-branch"), "").ok();
        let spec_dir = dir.join("cfg/completions");
        std::fs::create_dir_all(&spec_dir).ok();
        std::fs::write(
            spec_dir.join("vcs.json"),
            r#"{"name": "vcs", "subcommands": [{"name": "switch", "args": {"command": ["ls"]}}]}"#,
        )
        .ok();
        let args = Arguments::new(Some(dir.join("cfg")), None, true);
        let i = Invocation {
            head: "vcs".into(),
            words: vec!["switch".into()],
        };
        let got = words(&args.offers(&i, "", &dir, "", false));
        assert!(got.contains(&"a-branch".to_owned()), "{got:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
