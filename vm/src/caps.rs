//! Capabilities (spec §12): the in-process guard.
//!
//! A `grant` record decodes to one [`Layer`]; the active layers form a
//! stack on the context, and every check folds the whole stack afresh (a
//! layer never merges into another): an operation is allowed only when
//! every layer that has an opinion allows it, so nested grants intersect
//! and a denial anywhere is final.
//!
//! What is checked here (§12.10, the first enforcement layer):
//! - **exec**: command admission, judged on the real (symlink-resolved)
//!   file that will run. Per layer, the most specific rule decides: a
//!   literal denial vetoes its file name anywhere (case-insensitively);
//!   then a literal key (a bare key names what the host `PATH` finds at
//!   decode time, a path key that file); then the deepest covering
//!   directory key. Equal allow and deny resolve to deny. A layer with an
//!   `exec` map denies what it does not admit. A subcommand list admits
//!   only invocations whose first argument it names.
//! - **fs**: the filesystem operations ral performs itself (redirects,
//!   file builtins, `use`): per layer, a `deny` prefix refuses; a read
//!   needs a `read` prefix and a write a `write` prefix (write does not
//!   imply read); a layer with an `fs` map and no list for the operation
//!   grants nothing for it. Accessed paths are resolved through symlinks
//!   (the parent, for a file not yet created). `/dev/null` is always
//!   allowed.
//! - **shell.chdir** (`cd`), **detach** (birth of surrendered processes).
//!
//! - **the admitted-directory rule** (§12.10): under an `fs` layer, a
//!   directory some `exec` key admits is read-only to a `write` prefix that
//!   strictly contains it; a `write` prefix named at or inside the admitted
//!   directory states the intent and keeps it writable.
//!
//! The second layer (§12.10, §12.11), the OS sandbox that confines what a
//! started program does itself, is [`crate::sandbox`]: it reads the same
//! decoded stack through [`fs_verdict`], [`exec_verdict`] and
//! [`admitted_dirs`], so the two layers cannot disagree about a path. `net`
//! is the sandbox's alone (ral has no network primitive of its own).
//!
//! Paths in a grant must be absolute after sigil expansion (`~`, `cwd:`,
//! `tempdir:`, `xdg:config|data|cache|state|runtime`, `gitdir:`); relative
//! paths are rejected. Everything is frozen when the grant is decoded:
//! sigils, `.` and `..`, and symlinks (each prefix is stored as its real
//! path). `gitdir:` refuses a `.git` pointer file that its Git directory
//! does not name back (a linked worktree's `gitdir` file, a separate Git
//! directory's `core.worktree`), since the pointer lies inside the tree a
//! grant confines and could otherwise aim anywhere. A path rooted for
//! another operating-system family (`C:\…`, `\\server\…`) is a dead entry
//! that matches nothing, so one profile can carry host-specific entries.
//!
//! A host may give a layer a [`Layer::label`] (a session profile's name);
//! a denial by that layer names it.

use std::path::{Path, PathBuf};

use crate::failure::{Failure, Reason};
use crate::value::{Record, Value};

/// A command policy of one literal key.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    Allow,
    Deny,
    /// Only these first arguments.
    Sub(Vec<String>),
}

#[derive(Clone, Debug)]
struct Literal {
    /// The key as written (a bare name or a path).
    key: String,
    /// The real file it names, when it names one.
    real: Option<PathBuf>,
    rule: Rule,
}

#[derive(Clone, Debug, Default)]
pub struct ExecPolicy {
    literals: Vec<Literal>,
    /// Directory keys: real directory, allow?
    dirs: Vec<(PathBuf, bool)>,
}

#[derive(Clone, Debug, Default)]
pub struct FsPolicy {
    read: Option<Vec<PathBuf>>,
    write: Option<Vec<PathBuf>>,
    deny: Vec<PathBuf>,
}

/// One decoded `grant` (or a host's profile).
#[derive(Clone, Debug, Default)]
pub struct Layer {
    pub exec: Option<ExecPolicy>,
    pub fs: Option<FsPolicy>,
    pub net: Option<bool>,
    pub detach: Option<bool>,
    pub chdir: Option<bool>,
    /// What a denial by this layer is attributed to (`profile
    /// \`confined\``); `None` for an inline `grant`.
    pub label: Option<std::sync::Arc<str>>,
}

impl Layer {
    /// This layer attributed to `label` in denials.
    pub fn labelled(mut self, label: impl Into<std::sync::Arc<str>>) -> Layer {
        self.label = Some(label.into());
        self
    }

    /// Whether the OS sandbox has something to enforce for this layer
    /// (`fs`, `exec` or `net: false`).
    pub fn confines(&self) -> bool {
        self.fs.is_some() || self.exec.is_some() || self.net == Some(false)
    }
}

impl ExecPolicy {
    /// Real files admitted by a literal key (allow or subcommands).
    pub fn admitted_files(&self) -> impl Iterator<Item = &Path> {
        self.literals
            .iter()
            .filter(|l| l.rule != Rule::Deny)
            .filter_map(|l| l.real.as_deref())
    }

    /// Real files denied by a literal key that names a file.
    pub fn denied_files(&self) -> impl Iterator<Item = &Path> {
        self.literals
            .iter()
            .filter(|l| l.rule == Rule::Deny)
            .filter_map(|l| l.real.as_deref())
    }

    /// The directory keys: real directory, allow?
    pub fn dirs(&self) -> &[(PathBuf, bool)] {
        &self.dirs
    }

    /// Whether some literal denial vetoes a file name anywhere.
    pub fn has_vetoes(&self) -> bool {
        self.literals.iter().any(|l| l.rule == Rule::Deny)
    }
}

impl FsPolicy {
    /// Every prefix the policy names (read, write, deny).
    pub fn prefixes(&self) -> impl Iterator<Item = &Path> {
        self.read
            .iter()
            .flatten()
            .chain(self.write.iter().flatten())
            .chain(self.deny.iter())
            .map(PathBuf::as_path)
    }

    /// The `deny` carve-outs.
    pub fn deny(&self) -> &[PathBuf] {
        &self.deny
    }

    /// The `read` and `write` prefixes.
    pub fn lists(&self) -> (&[PathBuf], &[PathBuf]) {
        (
            self.read.as_deref().unwrap_or_default(),
            self.write.as_deref().unwrap_or_default(),
        )
    }
}

/// A filesystem operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsOp {
    Read,
    Write,
}

/// What decoding needs from the session: the logical cwd, the effective
/// environment.
pub struct DecodeEnv<'a> {
    pub cwd: &'a Path,
    pub var: &'a dyn Fn(&str) -> Option<String>,
}

fn bad(msg: impl Into<String>) -> Failure {
    Failure::error(format!("grant: {}", msg.into()))
}

/// Decodes a `grant` record into a layer.
pub fn decode(v: &Value, env: &DecodeEnv<'_>) -> Result<Layer, Failure> {
    let r = match v {
        Value::Record(r) => r.clone(),
        // `grant []`: the empty grant.
        Value::List(items) if items.is_empty() => return Ok(Layer::default()),
        _ => return Err(bad("the capability record must be a record")),
    };
    let mut layer = Layer::default();
    for (k, val) in r.iter() {
        match k.as_str() {
            "exec" => layer.exec = Some(decode_exec(val, env)?),
            "fs" => layer.fs = Some(decode_fs(val, env)?),
            "net" => layer.net = Some(bool_field(val, "net")?),
            "detach" => layer.detach = Some(bool_field(val, "detach")?),
            "shell" => {
                let Value::Record(s) = val else {
                    return Err(bad("shell must be a record: [chdir: Bool]"));
                };
                for (k, _) in s.iter() {
                    if k.as_str() != "chdir" {
                        return Err(bad(format!(
                            "unknown shell field `{}` (the field is chdir)",
                            k.as_str()
                        )));
                    }
                }
                // A present structured field defaults restrictive.
                layer.chdir = Some(match s.get("chdir") {
                    Some(b) => bool_field(b, "shell.chdir")?,
                    None => false,
                });
            }
            "editor" => {
                // There is no line-editor interface to gate yet; the record
                // is still decoded strictly, so a misspelling is caught.
                let Value::Record(e) = val else {
                    return Err(bad("editor must be a record: [read: Bool, write: Bool, tui: Bool]"));
                };
                for (k, v) in e.iter() {
                    match k.as_str() {
                        "read" | "write" | "tui" => {
                            bool_field(v, &format!("editor.{}", k.as_str()))?;
                        }
                        other => {
                            return Err(bad(format!(
                                "unknown editor field `{other}` (the fields are read, write and tui)"
                            )))
                        }
                    }
                }
            }
            other => {
                return Err(bad(format!(
                    "unknown capability field `{other}` (the fields are exec, fs, net, detach, editor and shell)"
                )))
            }
        }
    }
    Ok(layer)
}

fn bool_field(v: &Value, name: &str) -> Result<bool, Failure> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(bad(format!(
            "{name} must be a Bool, not a {}",
            other.kind_name()
        ))),
    }
}

fn decode_exec(v: &Value, env: &DecodeEnv<'_>) -> Result<ExecPolicy, Failure> {
    let Value::Record(map) = v else {
        return Err(bad("exec must be a map of command to policy"));
    };
    let mut p = ExecPolicy::default();
    for (key, rule) in map.iter() {
        let key = key.as_str();
        let rule = match rule {
            Value::Str(s) if s.as_str() == "allow" => Rule::Allow,
            Value::Str(s) if s.as_str() == "deny" => Rule::Deny,
            Value::Str(s) => {
                return Err(bad(format!(
                    "exec policy for `{key}` must be 'allow', 'deny' or a list, not {s:?}"
                )))
            }
            Value::List(items) => {
                if items.is_empty() {
                    return Err(bad(format!("exec subcommand list for `{key}` is empty")));
                }
                let mut subs = Vec::with_capacity(items.len());
                for i in items.iter() {
                    match i {
                        Value::Str(s) => subs.push(s.as_str().to_owned()),
                        other => {
                            return Err(bad(format!(
                                "exec subcommands for `{key}` must be strings, not a {}",
                                other.kind_name()
                            )))
                        }
                    }
                }
                Rule::Sub(subs)
            }
            other => {
                return Err(bad(format!(
                    "exec policy for `{key}` must be 'allow', 'deny' or a list, not a {}",
                    other.kind_name()
                )))
            }
        };
        let dir_rule = |rule: &Rule| -> Result<bool, Failure> {
            match rule {
                Rule::Allow => Ok(true),
                Rule::Deny => Ok(false),
                Rule::Sub(_) => Err(bad(format!(
                    "directory key `{key}` takes only 'allow' or 'deny'"
                ))),
            }
        };
        if key == "path:" {
            let allow = dir_rule(&rule)?;
            let path = (env.var)("PATH").unwrap_or_default();
            let dirs: Vec<PathBuf> = path
                .split(':')
                .map(PathBuf::from)
                .filter(|d| d.is_absolute())
                .collect();
            if dirs.is_empty() {
                return Err(bad("path: names no absolute directory of $PATH"));
            }
            for d in dirs {
                p.dirs.push((real(&d), allow));
            }
        } else if key == "system:" {
            let allow = dir_rule(&rule)?;
            for d in ["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin"] {
                p.dirs.push((real(Path::new(d)), allow));
            }
        } else if is_foreign(key) {
            // Rooted for another operating-system family: a dead key.
            continue;
        } else if key.ends_with('/') {
            let allow = dir_rule(&rule)?;
            let d = expand(key, env)?;
            p.dirs.push((real(&d), allow));
        } else if key.contains('/') || key.starts_with('~') || key.contains(':') {
            let f = expand(key, env)?;
            p.literals.push(Literal {
                key: file_name(&f),
                real: Some(real(&f)),
                rule,
            });
        } else {
            let host_path = std::env::var("PATH").ok();
            let found = crate::process::search_path(key, host_path.as_deref(), env.cwd);
            p.literals.push(Literal {
                key: key.to_owned(),
                real: found.map(|f| real(&f)),
                rule,
            });
        }
    }
    Ok(p)
}

fn decode_fs(v: &Value, env: &DecodeEnv<'_>) -> Result<FsPolicy, Failure> {
    let Value::Record(r) = v else {
        return Err(bad("fs must be a record of read, write and deny lists"));
    };
    let list = |name: &str| -> Result<Option<Vec<PathBuf>>, Failure> {
        match r.get(name) {
            None => Ok(None),
            Some(Value::List(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items.iter() {
                    let Value::Str(text) = i else {
                        return Err(bad(format!(
                            "fs {name} entries must be path strings, not a {}",
                            i.kind_name()
                        )));
                    };
                    if is_foreign(text) {
                        continue;
                    }
                    out.push(real(&expand(text, env)?));
                }
                Ok(Some(out))
            }
            Some(other) => Err(bad(format!(
                "fs {name} must be a list of paths, not a {}",
                other.kind_name()
            ))),
        }
    };
    for (k, _) in r.iter() {
        if !matches!(k.as_str(), "read" | "write" | "deny") {
            return Err(bad(format!("unknown fs field `{}`", k.as_str())));
        }
    }
    Ok(FsPolicy {
        read: Some(list("read")?.unwrap_or_default()),
        write: Some(list("write")?.unwrap_or_default()),
        deny: list("deny")?.unwrap_or_default(),
    })
}

/// Whether `p` is rooted for another operating-system family: a drive
/// letter (`C:\\`, `C:/`) or a UNC path (`\\\\server\\share`).
fn is_foreign(p: &str) -> bool {
    let b = p.as_bytes();
    let drive = b.len() >= 3
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b[2] == b'\\' || b[2] == b'/');
    drive || p.starts_with("\\\\")
}

/// Expands a grant path's sigil; the result must be absolute.
fn expand(p: &str, env: &DecodeEnv<'_>) -> Result<PathBuf, Failure> {
    let home = || -> Result<PathBuf, Failure> {
        (env.var)("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| bad("HOME is not set, so `~` and xdg: cannot be resolved"))
    };
    let join = |base: PathBuf, rest: &str| -> PathBuf {
        let rest = rest.trim_start_matches('/');
        if rest.is_empty() {
            base
        } else {
            base.join(rest)
        }
    };
    let out = if p == "~" {
        home()?
    } else if let Some(rest) = p.strip_prefix("~/") {
        join(home()?, rest)
    } else if let Some(rest) = p.strip_prefix("cwd:") {
        join(env.cwd.to_path_buf(), rest)
    } else if let Some(rest) = p.strip_prefix("tempdir:") {
        let t = (env.var)("TMPDIR")
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| "/tmp".into());
        join(PathBuf::from(t), rest)
    } else if let Some(rest) = p.strip_prefix("gitdir:") {
        join(git_dir(env.cwd)?, rest)
    } else if let Some(rest) = p.strip_prefix("xdg:") {
        let (name, sub) = rest.split_once('/').unwrap_or((rest, ""));
        let (var, default) = match name {
            "config" => ("XDG_CONFIG_HOME", ".config"),
            "data" => ("XDG_DATA_HOME", ".local/share"),
            "cache" => ("XDG_CACHE_HOME", ".cache"),
            "state" => ("XDG_STATE_HOME", ".local/state"),
            "runtime" => ("XDG_RUNTIME_DIR", ""),
            other => return Err(bad(format!("unknown XDG directory `{other}`"))),
        };
        let h = home()?;
        let base = match (env.var)(var).filter(|v| !v.is_empty()) {
            Some(v) => PathBuf::from(v),
            None if default.is_empty() => {
                return Err(bad(format!("{var} is not set")));
            }
            None => h.join(default),
        };
        let base = crate::runtime::normalize(&base);
        if name != "runtime" && !base.starts_with(&h) {
            return Err(bad(format!("{var} escapes the home directory")));
        }
        join(base, sub)
    } else {
        PathBuf::from(p)
    };
    if !out.is_absolute() {
        return Err(bad(format!(
            "relative path {p:?} in a grant; write `cwd:{p}` if that is meant"
        )));
    }
    Ok(crate::runtime::normalize(&out))
}

/// The enclosing repository's real Git directory, or `cwd` outside one.
///
/// A `.git` directory is the Git directory. A `.git` file (`gitdir: X`)
/// points elsewhere, and since it lies inside the tree a grant confines, its
/// word alone is not trusted: the directory it names must name this working
/// tree back, through its `gitdir` file (a linked worktree) or its
/// `core.worktree` setting (a separate Git directory, a submodule).
fn git_dir(cwd: &Path) -> Result<PathBuf, Failure> {
    let mut d = Some(cwd);
    while let Some(dir) = d {
        let g = dir.join(".git");
        if g.is_dir() {
            return Ok(real(&g));
        }
        if g.is_file() {
            return pointed_git_dir(dir, &g);
        }
        d = dir.parent();
    }
    Ok(cwd.to_path_buf())
}

/// The Git directory a `.git` file at `pointer` (in working tree `tree`)
/// names, when that directory claims the tree back.
fn pointed_git_dir(tree: &Path, pointer: &Path) -> Result<PathBuf, Failure> {
    let unclaimed = |why: &str| {
        bad(format!(
            "gitdir: {} is a `.git` pointer file no Git directory claims ({why})",
            pointer.display()
        ))
    };
    let text = std::fs::read_to_string(pointer).map_err(|e| unclaimed(&e.to_string()))?;
    let named = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| unclaimed("it has no `gitdir:` line"))?;
    let named = PathBuf::from(named);
    let gitdir = real(&if named.is_absolute() {
        named
    } else {
        tree.join(named)
    });
    if !gitdir.is_dir() {
        return Err(unclaimed(&format!(
            "{} is not a directory",
            gitdir.display()
        )));
    }
    let tree_real = real(tree);
    // A linked worktree: `<gitdir>/gitdir` names this tree's `.git` file.
    if let Ok(back) = std::fs::read_to_string(gitdir.join("gitdir")) {
        let back = PathBuf::from(back.trim());
        let back = if back.is_absolute() {
            back
        } else {
            gitdir.join(back)
        };
        if real(&back) == real(pointer) {
            return Ok(gitdir);
        }
    }
    // A separate Git directory or a submodule: `core.worktree` names the
    // tree (relative to the Git directory when relative).
    if let Some(wt) = std::fs::read_to_string(gitdir.join("config"))
        .ok()
        .and_then(|c| core_worktree(&c))
    {
        let wt = PathBuf::from(wt);
        let wt = if wt.is_absolute() {
            wt
        } else {
            gitdir.join(wt)
        };
        if real(&wt) == tree_real {
            return Ok(gitdir);
        }
    }
    Err(unclaimed(&format!(
        "{} names no working tree at {}",
        gitdir.display(),
        tree_real.display()
    )))
}

/// The `worktree` key of the `[core]` section of a Git config file.
fn core_worktree(config: &str) -> Option<String> {
    let mut in_core = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((k, v)) = line.split_once('=') {
            if k.trim().eq_ignore_ascii_case("worktree") {
                let v = v.trim();
                let v = v
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(v);
                return Some(v.to_owned());
            }
        }
    }
    None
}

/// The symlink-resolved path; for a path that does not exist yet, its
/// deepest existing ancestor resolved with the rest appended.
pub fn real(p: &Path) -> PathBuf {
    if let Ok(r) = std::fs::canonicalize(p) {
        return r;
    }
    let mut rest = Vec::new();
    let mut cur = p.to_path_buf();
    while let Some(name) = cur.file_name().map(|n| n.to_os_string()) {
        rest.push(name);
        if !cur.pop() {
            break;
        }
        if let Ok(r) = std::fs::canonicalize(&cur) {
            let mut out = r;
            for n in rest.iter().rev() {
                out.push(n);
            }
            return out;
        }
    }
    crate::runtime::normalize(p)
}

/// Whether `p` is `prefix` or lies beneath it. Both are normalised
/// absolute paths (real paths, or `real`'s output), so comparing bytes at a
/// component boundary is the same as `Path::starts_with`, and much cheaper
/// on the sandbox's hot path.
pub fn under(p: &Path, prefix: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (p, pre) = (p.as_os_str().as_bytes(), prefix.as_os_str().as_bytes());
    p.starts_with(pre)
        && (p.len() == pre.len() || pre.ends_with(b"/") || p.get(pre.len()) == Some(&b'/'))
}

/// Whether two normalised absolute paths are the same path: their bytes
/// are equal (cheaper than `Path`'s component-wise `==`).
pub fn same(a: &Path, b: &Path) -> bool {
    a.as_os_str() == b.as_os_str()
}

/// The byte order of two paths: a path sorts before everything beneath it.
pub fn byte_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    a.as_os_str().as_bytes().cmp(b.as_os_str().as_bytes())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Which layer refused, for the message: ` (profile `x`)` or nothing.
fn by(layer: &Layer) -> String {
    match &layer.label {
        Some(l) => format!(" ({l})"),
        None => String::new(),
    }
}

/// The failure for an `exec` denial. (Audit, §12.7: when a trail is open,
/// every exec and ral-owned fs denial becomes a `check` observation; this
/// and the fs denial in [`check_fs`] are the two places it is recorded.)
fn denied(what: String, layer: &Layer) -> Failure {
    let mut f = Failure::new(
        126,
        format!("denied by grant: {what}{}", by(layer)),
        Reason::NotRunnable,
    );
    f.cmd = None;
    f
}

/// Why an `exec` layer refused a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecDenial {
    /// A literal denial vetoes the file's name (or the name it was run as).
    Vetoed,
    /// A literal key names the file and denies it.
    Denied,
    /// The first argument is not among the admitted subcommands.
    Subcommand(Vec<String>),
    /// The deepest covering directory key denies it.
    DeniedDirectory,
    /// No key admits it.
    NotAdmitted,
}

/// How one layer judges running the real file `real_prog` (file name
/// `fname`) invoked as `name`. `args` is `None` for the OS sandbox, which
/// cannot see arguments: a subcommand list then admits the file.
pub fn exec_verdict_layer(
    p: &ExecPolicy,
    real_prog: &Path,
    fname: &str,
    name: &str,
    args: Option<&[String]>,
) -> Result<(), ExecDenial> {
    // 1. Vetoes: a literal denial, by file name, any case.
    let fname_l = fname.to_lowercase();
    let name_l = name.to_lowercase();
    let vetoed = p.literals.iter().any(|l| {
        l.rule == Rule::Deny && {
            let k = l.key.to_lowercase();
            (!fname_l.is_empty() && k == fname_l) || (!name_l.is_empty() && k == name_l)
        }
    });
    if vetoed {
        return Err(ExecDenial::Vetoed);
    }
    // 2. Literal keys naming this file.
    let mut named = false;
    for l in p
        .literals
        .iter()
        .filter(|l| l.real.as_deref().is_some_and(|r| same(r, real_prog)))
    {
        named = true;
        match &l.rule {
            Rule::Allow => {}
            Rule::Deny => return Err(ExecDenial::Denied),
            Rule::Sub(list) => match args {
                None => {}
                Some(args) => match args.first() {
                    Some(a) if list.iter().any(|s| s == a) => {}
                    _ => return Err(ExecDenial::Subcommand(list.clone())),
                },
            },
        }
    }
    if named {
        return Ok(());
    }
    // 3. The deepest covering directory; equal depth: deny wins.
    match deepest_dir(p, real_prog) {
        Some(true) => Ok(()),
        Some(false) => Err(ExecDenial::DeniedDirectory),
        None => Err(ExecDenial::NotAdmitted),
    }
}

/// The verdict of the deepest directory key covering `path` (allow?), the
/// equal-depth meet being deny.
fn deepest_dir(p: &ExecPolicy, path: &Path) -> Option<bool> {
    let mut best: Option<(usize, bool)> = None;
    for (d, allow) in &p.dirs {
        if under(path, d) {
            let depth = d.components().count();
            best = match best {
                Some((bd, ba)) if bd > depth => Some((bd, ba)),
                Some((bd, ba)) if bd == depth => Some((bd, ba && *allow)),
                _ => Some((depth, *allow)),
            };
        }
    }
    best.map(|(_, a)| a)
}

/// The first layer that refuses running `real_prog`, with its reason
/// (`None`: every layer admits it). See [`exec_verdict_layer`].
pub fn exec_verdict<'l>(
    layers: &'l [std::sync::Arc<Layer>],
    real_prog: &Path,
    fname: &str,
    name: &str,
    args: Option<&[String]>,
) -> Option<(&'l Layer, ExecDenial)> {
    for layer in layers {
        let Some(p) = &layer.exec else { continue };
        if let Err(d) = exec_verdict_layer(p, real_prog, fname, name, args) {
            return Some((layer, d));
        }
    }
    None
}

/// Whether `layers` admit running `program` (already found) as `name`
/// with `args`.
pub fn check_exec(
    layers: &[std::sync::Arc<Layer>],
    name: &str,
    program: &Path,
    args: &[String],
) -> Result<(), Failure> {
    if layers.iter().all(|l| l.exec.is_none()) {
        return Ok(());
    }
    let real_prog = real(program);
    let fname = file_name(&real_prog);
    let Some((layer, why)) = exec_verdict(layers, &real_prog, &fname, name, Some(args)) else {
        return Ok(());
    };
    let what = match why {
        ExecDenial::Vetoed | ExecDenial::Denied => format!("`{name}` is denied"),
        ExecDenial::Subcommand(list) => {
            let mut shown = name.to_owned();
            if let Some(a) = args.first() {
                shown.push(' ');
                shown.push_str(a);
            }
            format!(
                "`{shown}` is not among the admitted subcommands of `{name}` ({})",
                list.join(", ")
            )
        }
        ExecDenial::DeniedDirectory => format!("`{name}` is in a denied directory"),
        ExecDenial::NotAdmitted => format!("`{name}` is not admitted by the exec grant"),
    };
    Err(denied(what, layer))
}

/// Every directory an `exec` key of some layer admits (§12.10: under a
/// restricted `fs` these are read-only to a broader `write` prefix).
pub fn admitted_dirs(layers: &[std::sync::Arc<Layer>]) -> Vec<&Path> {
    let mut out: Vec<&Path> = Vec::new();
    for l in layers {
        let Some(p) = &l.exec else { continue };
        for (d, allow) in &p.dirs {
            if *allow && !out.contains(&d.as_path()) {
                out.push(d);
            }
        }
    }
    out
}

/// The first layer that refuses `op` on the real path `p` (`None`: every
/// layer with an `fs` map allows it). `admitted` is [`admitted_dirs`] of
/// the same stack. The discard device is not special here; see
/// [`check_fs`].
pub fn fs_verdict<'l>(
    layers: &'l [std::sync::Arc<Layer>],
    admitted: &[&Path],
    op: FsOp,
    p: &Path,
) -> Option<&'l Layer> {
    for layer in layers {
        let Some(fs) = &layer.fs else { continue };
        if fs.deny.iter().any(|d| under(p, d)) {
            return Some(layer);
        }
        let ok = match op {
            FsOp::Read => fs
                .read
                .as_ref()
                .is_some_and(|list| list.iter().any(|a| under(p, a))),
            // A write prefix reaches `p` unless an admitted directory lies
            // strictly inside the prefix and holds `p` (§12.10).
            FsOp::Write => fs.write.as_ref().is_some_and(|list| {
                list.iter().any(|w| {
                    under(p, w)
                        && !admitted
                            .iter()
                            .any(|d| under(d, w) && !same(d, w) && under(p, d))
                })
            }),
        };
        if !ok {
            return Some(layer);
        }
    }
    None
}

/// Whether `layers` admit `op` on `path` (absolute).
pub fn check_fs(layers: &[std::sync::Arc<Layer>], op: FsOp, path: &Path) -> Result<(), Failure> {
    if !restricts_fs(layers) || path == Path::new("/dev/null") {
        return Ok(());
    }
    check_fs_real(layers, op, &real(path))
}

/// Whether some layer has an `fs` map, so that ral's own file operations
/// are judged (and walked, [`crate::walk`]).
pub fn restricts_fs(layers: &[std::sync::Arc<Layer>]) -> bool {
    layers.iter().any(|l| l.fs.is_some())
}

/// [`check_fs`] on a path that is already real (a walk's,
/// [`crate::walk::Resolved::real`]): judged exactly as given, with no
/// second resolution that a link swapped in meanwhile could redirect.
pub fn check_fs_real(layers: &[std::sync::Arc<Layer>], op: FsOp, p: &Path) -> Result<(), Failure> {
    if !restricts_fs(layers) || p == Path::new("/dev/null") {
        return Ok(());
    }
    let admitted = admitted_dirs(layers);
    match fs_verdict(layers, &admitted, op, p) {
        None => Ok(()),
        Some(layer) => {
            // Audit (§12.7): an open trail records this denial here.
            let verb = match op {
                FsOp::Read => "read",
                FsOp::Write => "write",
            };
            Err(Failure::error(format!(
                "denied by grant: {verb} {}{}",
                p.display(),
                by(layer)
            )))
        }
    }
}

/// Whether `cd` is allowed.
pub fn check_chdir(layers: &[std::sync::Arc<Layer>]) -> Result<(), Failure> {
    match layers.iter().find(|l| l.chdir == Some(false)) {
        Some(layer) => Err(Failure::error(format!(
            "denied by grant: cd (shell: [chdir: false]){}",
            by(layer)
        ))),
        None => Ok(()),
    }
}

/// Whether a surrendered (detached) process may be born.
pub fn may_detach(layers: &[std::sync::Arc<Layer>]) -> bool {
    !layers.iter().any(|l| l.detach == Some(false))
}

/// Decodes a session profile's terminal value (§12.12): a capability
/// record, decoded as `grant` decodes one, or `()` for a profile with
/// nothing to set (the lattice top).
pub fn decode_profile(v: &Value, env: &DecodeEnv<'_>) -> Result<Layer, Failure> {
    match v {
        Value::Unit => Ok(Layer::default()),
        Value::Record(_) => decode(v, env),
        Value::List(items) if items.is_empty() => Err(bad(
            "a profile returned `[]`, the empty list; return `()` for a profile with nothing to set",
        )),
        other => Err(bad(format!(
            "a profile must return a capability record (or `()`), not a {}",
            other.kind_name()
        ))),
    }
}

/// A layer from a record, for hosts building profiles in Rust.
pub fn layer_of(r: Record, env: &DecodeEnv<'_>) -> Result<Layer, Failure> {
    decode(&Value::record(r), env)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::sync::Arc;

    fn env_of(cwd: &Path) -> DecodeEnv<'_> {
        DecodeEnv {
            cwd,
            var: &|k| std::env::var(k).ok(),
        }
    }

    fn rec(entries: Vec<(&str, Value)>) -> Value {
        Value::record(Record::from_entries(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        ))
    }

    fn strs(xs: &[&str]) -> Value {
        Value::list(xs.iter().map(|s| Value::str(*s)).collect())
    }

    #[test]
    fn exec_subcommands_intersect_across_layers() {
        let cwd = PathBuf::from("/");
        let sh = crate::process::search_path("sh", Some("/bin:/usr/bin"), &cwd).unwrap_or_default();
        let outer = decode(
            &rec(vec![("exec", rec(vec![("sh", strs(&["-c", "-e"]))]))]),
            &env_of(&cwd),
        )
        .unwrap();
        let inner = decode(
            &rec(vec![("exec", rec(vec![("sh", strs(&["-c"]))]))]),
            &env_of(&cwd),
        )
        .unwrap();
        let stack = vec![Arc::new(outer), Arc::new(inner)];
        assert!(check_exec(&stack, "sh", &sh, &["-c".into()]).is_ok());
        assert!(check_exec(&stack, "sh", &sh, &["-e".into()]).is_err());
        assert!(check_exec(&stack[..1], "sh", &sh, &["-e".into()]).is_ok());
        assert!(check_exec(&stack, "sh", &sh, &[]).is_err());
    }

    #[test]
    fn a_denial_vetoes_by_name_in_any_case_and_unlisted_commands_are_denied() {
        let cwd = PathBuf::from("/");
        let l = decode(
            &rec(vec![(
                "exec",
                rec(vec![
                    ("SH", Value::str("deny")),
                    ("path:", Value::str("allow")),
                ]),
            )]),
            &env_of(&cwd),
        )
        .unwrap();
        let stack = vec![Arc::new(l)];
        let sh = crate::process::search_path("sh", Some("/bin:/usr/bin"), &cwd).unwrap_or_default();
        assert!(check_exec(&stack, "sh", &sh, &[]).is_err());
        let only_ls = decode(
            &rec(vec![("exec", rec(vec![("ls", Value::str("allow"))]))]),
            &env_of(&cwd),
        )
        .unwrap();
        assert!(check_exec(&[Arc::new(only_ls)], "sh", &sh, &[]).is_err());
    }

    #[test]
    fn fs_read_and_write_are_separate_and_deny_carves_out() {
        let cwd = std::env::temp_dir();
        let l = decode(
            &rec(vec![(
                "fs",
                rec(vec![
                    ("read", strs(&["tempdir:"])),
                    ("deny", strs(&["tempdir:secret"])),
                ]),
            )]),
            &env_of(&cwd),
        )
        .unwrap();
        let stack = vec![Arc::new(l)];
        let t = real(&std::env::temp_dir());
        assert!(check_fs(&stack, FsOp::Read, &t.join("a.txt")).is_ok());
        assert!(check_fs(&stack, FsOp::Write, &t.join("a.txt")).is_err());
        assert!(check_fs(&stack, FsOp::Read, &t.join("secret/x")).is_err());
        assert!(check_fs(&stack, FsOp::Write, Path::new("/dev/null")).is_ok());
    }

    #[test]
    fn relative_paths_and_unknown_fields_are_rejected() {
        let cwd = PathBuf::from("/");
        assert!(decode(
            &rec(vec![("fs", rec(vec![("read", strs(&["src"]))]))]),
            &env_of(&cwd)
        )
        .is_err());
        assert!(decode(&rec(vec![("network", Value::Bool(false))]), &env_of(&cwd)).is_err());
        assert!(decode(
            &rec(vec![("fs", rec(vec![("read", strs(&["cwd:src"]))]))]),
            &env_of(&cwd)
        )
        .is_ok());
    }

    #[test]
    fn shell_chdir_and_detach_are_booleans_that_any_layer_can_deny() {
        let cwd = PathBuf::from("/");
        let l = decode(
            &rec(vec![("shell", rec(vec![])), ("detach", Value::Bool(false))]),
            &env_of(&cwd),
        )
        .unwrap();
        let stack = vec![Arc::new(Layer::default()), Arc::new(l)];
        assert!(check_chdir(&stack).is_err());
        assert!(!may_detach(&stack));
        assert!(may_detach(&stack[..1]));
    }

    fn gitdir_of(cwd: &Path) -> Result<PathBuf, Failure> {
        let l = decode(
            &rec(vec![("fs", rec(vec![("read", strs(&["gitdir:"]))]))]),
            &env_of(cwd),
        )?;
        Ok(l.fs.unwrap().read.unwrap().remove(0))
    }

    #[test]
    fn gitdir_follows_only_a_pointer_its_git_directory_claims() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        // A plain repository: `.git` is the directory.
        std::fs::create_dir_all(root.join("repo/.git")).unwrap();
        std::fs::create_dir_all(root.join("repo/src")).unwrap();
        assert_eq!(
            gitdir_of(&root.join("repo/src")).unwrap(),
            root.join("repo/.git")
        );
        // Outside any repository: the working directory.
        std::fs::create_dir_all(root.join("plain")).unwrap();
        assert_eq!(gitdir_of(&root.join("plain")).unwrap(), root.join("plain"));
        // A linked worktree: its Git directory names the pointer back.
        let wt_git = root.join("repo/.git/worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::create_dir_all(root.join("wt")).unwrap();
        std::fs::write(
            root.join("wt/.git"),
            format!("gitdir: {}\n", wt_git.display()),
        )
        .unwrap();
        std::fs::write(
            wt_git.join("gitdir"),
            format!("{}\n", root.join("wt/.git").display()),
        )
        .unwrap();
        assert_eq!(gitdir_of(&root.join("wt")).unwrap(), wt_git);
        // A separate Git directory: its core.worktree names the tree.
        std::fs::create_dir_all(root.join("sep.git")).unwrap();
        std::fs::create_dir_all(root.join("sep")).unwrap();
        std::fs::write(root.join("sep/.git"), "gitdir: ../sep.git\n").unwrap();
        std::fs::write(
            root.join("sep.git/config"),
            format!(
                "[core]\n\tbare = false\n\tworktree = {}\n",
                root.join("sep").display()
            ),
        )
        .unwrap();
        assert_eq!(gitdir_of(&root.join("sep")).unwrap(), root.join("sep.git"));
        // An unclaimed pointer: aimed at a directory that does not name
        // this tree (here, someone else's secrets).
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(root.join("evil")).unwrap();
        std::fs::write(
            root.join("evil/.git"),
            format!("gitdir: {}\n", root.join("secrets").display()),
        )
        .unwrap();
        let err = gitdir_of(&root.join("evil")).unwrap_err();
        assert!(
            err.message.contains("no Git directory claims"),
            "{}",
            err.message
        );
        // A pointer claimed by a different tree is unclaimed here.
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(
            root.join("other/.git"),
            format!("gitdir: {}\n", wt_git.display()),
        )
        .unwrap();
        assert!(gitdir_of(&root.join("other")).is_err());
    }

    #[test]
    fn paths_rooted_for_another_family_are_dead_entries() {
        let cwd = PathBuf::from("/");
        let l = decode(
            &rec(vec![
                (
                    "fs",
                    rec(vec![(
                        "read",
                        strs(&["C:\\Users\\me", "\\\\srv\\share", "/usr"]),
                    )]),
                ),
                ("exec", rec(vec![("C:/tools/", Value::str("allow"))])),
            ]),
            &env_of(&cwd),
        )
        .unwrap();
        assert_eq!(l.fs.as_ref().unwrap().read.as_ref().unwrap().len(), 1);
        assert!(l.exec.as_ref().unwrap().dirs.is_empty());
    }

    #[test]
    fn an_admitted_directory_is_read_only_to_a_broader_write_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("opt/tools/cache")).unwrap();
        std::fs::create_dir_all(root.join("opt/work")).unwrap();
        let r = root.display().to_string();
        let with_write = |writes: &[String]| {
            let w: Vec<&str> = writes.iter().map(String::as_str).collect();
            decode(
                &rec(vec![
                    ("fs", rec(vec![("read", strs(&[&r])), ("write", strs(&w))])),
                    (
                        "exec",
                        rec(vec![(&format!("{r}/opt/tools/"), Value::str("allow"))]),
                    ),
                ]),
                &env_of(&root),
            )
            .unwrap()
        };
        let broad = vec![Arc::new(with_write(&[format!("{r}/opt")]))];
        assert!(check_fs(&broad, FsOp::Write, &root.join("opt/work/f")).is_ok());
        assert!(check_fs(&broad, FsOp::Write, &root.join("opt/tools/new")).is_err());
        assert!(check_fs(&broad, FsOp::Read, &root.join("opt/tools/new")).is_ok());
        // A write prefix named at or inside the admitted directory states
        // the intent.
        let named = vec![Arc::new(with_write(&[
            format!("{r}/opt"),
            format!("{r}/opt/tools/cache"),
        ]))];
        assert!(check_fs(&named, FsOp::Write, &root.join("opt/tools/cache/x")).is_ok());
        assert!(check_fs(&named, FsOp::Write, &root.join("opt/tools/x")).is_err());
        let at = vec![Arc::new(with_write(&[format!("{r}/opt/tools")]))];
        assert!(check_fs(&at, FsOp::Write, &root.join("opt/tools/x")).is_ok());
    }

    #[test]
    fn a_labelled_layer_names_itself_in_its_denials() {
        let cwd = PathBuf::from("/");
        let l = decode(
            &rec(vec![("fs", rec(vec![("read", strs(&["/usr"]))]))]),
            &env_of(&cwd),
        )
        .unwrap()
        .labelled("profile `read-only`");
        let err = check_fs(&[Arc::new(l)], FsOp::Write, Path::new("/usr/x")).unwrap_err();
        assert_eq!(
            err.message,
            "denied by grant: write /usr/x (profile `read-only`)"
        );
    }

    #[test]
    fn editor_and_shell_are_decoded_strictly() {
        let cwd = PathBuf::from("/");
        let bad_editor = rec(vec![("editor", rec(vec![("reed", Value::Bool(true))]))]);
        assert!(decode(&bad_editor, &env_of(&cwd)).is_err());
        let bad_shell = rec(vec![("shell", rec(vec![("cd", Value::Bool(true))]))]);
        assert!(decode(&bad_shell, &env_of(&cwd)).is_err());
        let ok = rec(vec![("editor", rec(vec![("read", Value::Bool(true))]))]);
        assert!(decode(&ok, &env_of(&cwd)).is_ok());
        assert!(decode_profile(&Value::Unit, &env_of(&cwd)).is_ok());
        assert!(decode_profile(&Value::list(vec![]), &env_of(&cwd)).is_err());
        assert!(decode_profile(&Value::Int(1), &env_of(&cwd)).is_err());
    }
}
