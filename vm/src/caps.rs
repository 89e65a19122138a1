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
//! Not done here (deviation, spec/deviations.md): the OS sandbox (§12.11)
//! that confines what spawned programs do themselves, `net` enforcement
//! (which only a sandbox can provide, so a `net: false` layer refuses every
//! external launch rather than running it online), and the editor gates
//! (there is no line-editor interface to gate).
//!
//! Paths in a grant must be absolute after sigil expansion (`~`, `cwd:`,
//! `tempdir:`, `xdg:config|data|cache|state|runtime`, `gitdir:`); relative
//! paths are rejected. Everything is frozen when the grant is decoded.

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
                    return Err(bad("shell must be a record"));
                };
                // A present structured field defaults restrictive.
                layer.chdir = Some(match s.get("chdir") {
                    Some(b) => bool_field(b, "shell.chdir")?,
                    None => false,
                });
            }
            "editor" => {
                if !matches!(val, Value::Record(_)) {
                    return Err(bad("editor must be a record"));
                }
            }
            other => return Err(bad(format!("unknown capability field `{other}`"))),
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
                Rule::Sub(items.iter().map(crate::display::to_text).collect())
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
            Some(Value::List(items)) => items
                .iter()
                .map(|i| expand(&crate::display::to_text(i), env).map(|p| real(&p)))
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
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
        join(git_dir(env.cwd), rest)
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

/// The enclosing repository's `.git` directory, or `cwd` outside one.
fn git_dir(cwd: &Path) -> PathBuf {
    let mut d = Some(cwd);
    while let Some(dir) = d {
        let g = dir.join(".git");
        if g.is_dir() {
            return real(&g);
        }
        if g.is_file() {
            if let Ok(text) = std::fs::read_to_string(&g) {
                if let Some(rest) = text.trim().strip_prefix("gitdir:") {
                    let p = PathBuf::from(rest.trim());
                    return real(&if p.is_absolute() { p } else { dir.join(p) });
                }
            }
        }
        d = dir.parent();
    }
    cwd.to_path_buf()
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

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn denied(what: String) -> Failure {
    let mut f = Failure::new(126, format!("denied by grant: {what}"), Reason::NotRunnable);
    f.cmd = None;
    f
}

/// Whether `layers` admit running `program` (already found) as `name`
/// with `args`.
pub fn check_exec(
    layers: &[std::sync::Arc<Layer>],
    name: &str,
    program: &Path,
    args: &[String],
) -> Result<(), Failure> {
    if layers
        .iter()
        .all(|l| l.exec.is_none() && l.net != Some(false))
    {
        return Ok(());
    }
    let real_prog = real(program);
    let fname = file_name(&real_prog);
    let shown = || {
        let mut s = name.to_owned();
        if let Some(a) = args.first() {
            s.push(' ');
            s.push_str(a);
        }
        s
    };
    for layer in layers {
        if layer.net == Some(false) {
            return Err(denied(format!(
                "`{name}`: net: false cannot be enforced on this host, so no program may run"
            )));
        }
        let Some(p) = &layer.exec else { continue };
        // 1. Vetoes: a literal denial, by file name, any case.
        let vetoed = p.literals.iter().any(|l| {
            l.rule == Rule::Deny
                && (l.key.to_lowercase() == fname.to_lowercase()
                    || l.key.to_lowercase() == name.to_lowercase())
        });
        if vetoed {
            return Err(denied(format!("`{name}` is denied")));
        }
        // 2. Literal keys naming this file.
        let lits: Vec<&Literal> = p
            .literals
            .iter()
            .filter(|l| l.real.as_deref() == Some(real_prog.as_path()))
            .collect();
        if !lits.is_empty() {
            for l in lits {
                match &l.rule {
                    Rule::Allow => {}
                    Rule::Deny => return Err(denied(format!("`{name}` is denied"))),
                    Rule::Sub(list) => match args.first() {
                        Some(a) if list.iter().any(|s| s == a) => {}
                        _ => {
                            return Err(denied(format!(
                                "`{}` is not among the admitted subcommands of `{name}` ({})",
                                shown(),
                                list.join(", ")
                            )))
                        }
                    },
                }
            }
            continue;
        }
        // 3. The deepest covering directory; equal depth: deny wins.
        let mut best: Option<(usize, bool)> = None;
        for (d, allow) in &p.dirs {
            if real_prog.starts_with(d) {
                let depth = d.components().count();
                best = match best {
                    Some((bd, ba)) if bd > depth => Some((bd, ba)),
                    Some((bd, ba)) if bd == depth => Some((bd, ba && *allow)),
                    _ => Some((depth, *allow)),
                };
            }
        }
        match best {
            Some((_, true)) => {}
            Some((_, false)) => return Err(denied(format!("`{name}` is in a denied directory"))),
            None => {
                return Err(denied(format!(
                    "`{name}` is not admitted by the exec grant"
                )))
            }
        }
    }
    Ok(())
}

/// Whether `layers` admit `op` on `path` (absolute).
pub fn check_fs(layers: &[std::sync::Arc<Layer>], op: FsOp, path: &Path) -> Result<(), Failure> {
    if layers.iter().all(|l| l.fs.is_none()) || path == Path::new("/dev/null") {
        return Ok(());
    }
    let p = real(path);
    let verb = match op {
        FsOp::Read => "read",
        FsOp::Write => "write",
    };
    for layer in layers {
        let Some(fs) = &layer.fs else { continue };
        if fs.deny.iter().any(|d| p.starts_with(d)) {
            return Err(fs_denied(verb, &p));
        }
        let allowed = match op {
            FsOp::Read => &fs.read,
            FsOp::Write => &fs.write,
        };
        let ok = allowed
            .as_ref()
            .is_some_and(|list| list.iter().any(|a| p.starts_with(a)));
        if !ok {
            return Err(fs_denied(verb, &p));
        }
    }
    Ok(())
}

fn fs_denied(verb: &str, p: &Path) -> Failure {
    Failure::error(format!("denied by grant: {verb} {}", p.display()))
}

/// Whether `cd` is allowed.
pub fn check_chdir(layers: &[std::sync::Arc<Layer>]) -> Result<(), Failure> {
    if layers.iter().any(|l| l.chdir == Some(false)) {
        return Err(Failure::error(
            "denied by grant: cd (shell: [chdir: false])",
        ));
    }
    Ok(())
}

/// Whether a surrendered (detached) process may be born.
pub fn may_detach(layers: &[std::sync::Arc<Layer>]) -> bool {
    !layers.iter().any(|l| l.detach == Some(false))
}

/// A layer from a record, for hosts building profiles in Rust.
pub fn layer_of(r: Record, env: &DecodeEnv<'_>) -> Result<Layer, Failure> {
    decode(&Value::record(r), env)
}

#[cfg(test)]
mod tests {
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
}
