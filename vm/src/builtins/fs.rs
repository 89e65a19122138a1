//! Paths and filesystem queries (§14.4): `absolute-path`, `resolve-path`,
//! `abbreviate-home`, `list-dir`, `file-info`, `glob`, `exists`, `is-file`,
//! `is-dir`, `is-link`, `is-readable`, `is-writable`, `temp-dir`,
//! `temp-file`, and the prelude's `file-empty`.
//!
//! # Resolving a path argument
//!
//! Every path argument goes through [`resolve`]: a leading path-prefix
//! sigil is expanded first (`~` and `~/…` to the effective `HOME`, §3.5;
//! `xdg:NAME[/…]` to an XDG base directory, §12.4), then a relative path is
//! joined onto the session's *logical* working directory ([`Ctx::cwd`]),
//! never the process's (§10.2). `~user` is not a sigil: it is a relative
//! name like any other (§3.5). An empty path is refused: it is almost
//! always an unset value, and no file is named by it.
//!
//! `absolute-path` additionally folds `.` and `..` lexically; the queries
//! hand the joined path to the operating system, so `..` there means what
//! the filesystem says it means.
//!
//! # Links
//!
//! `exists`, `is-link`, `file-info` and `list-dir` judge a symbolic link
//! itself (lstat); `is-file`, `is-dir`, `is-readable`, `is-writable` and
//! `file-empty` resolve through it, so a dangling link answers `false` to
//! the predicates (§14.4).
//!
//! # `FileInfo`
//!
//! `file-info` and each element of `list-dir` are records of the type
//! `FileInfo` of the signature table: `name` (the last component), `path`
//! (absolute, folded as `absolute-path` folds), `type` (`file`, `dir`,
//! `symlink`, `fifo`, `socket`, `block-device`, `char-device` or `other`),
//! `size` (bytes, of the link itself for a link), `modified`, `accessed`,
//! `created` (whole seconds since the Unix epoch; 0 where the platform
//! does not record one), `readonly` (no write permission bit at all), and
//! `target` (`` `just `` a link's target as written, `` `none `` otherwise).
//!
//! # `glob`
//!
//! A pattern is split at `/` into components. In a component, `*` matches
//! any run of characters and `?` any one character, never a `/`;
//! `[abc]`, `[a-z]` and `[!…]` (or `[^…]`) match one character of (or not
//! of) a set, `]` first in a set being literal; `\` makes the next
//! character literal. A component that is exactly `**` matches any number
//! of directory levels, zero included, without descending through links to
//! directories; as the last component it matches every entry below. A
//! wildcard never matches a leading `.` of a name: a pattern component
//! must start with a literal `.` to reach dotfiles, and `**` does not
//! descend into dot-directories. A pattern ending in `/` matches
//! directories only, and its results keep the `/`.
//!
//! Matches are returned sorted (by their text, bytewise) without
//! duplicates. A relative pattern gives paths relative to the working
//! directory, spelled as the pattern spells its literal parts; an absolute
//! or sigil-rooted one gives absolute paths. No match is the empty list,
//! not an error; a directory that cannot be read contributes nothing. A
//! malformed pattern (an unclosed `[`, a reversed range, a POSIX class
//! such as `[:alpha:]`, which is not supported) fails.
//!
//! # Grants
//!
//! Every query here reads the filesystem, and reading is what the `fs`
//! grant's `read` list admits (§12.3): under a grant that restricts `fs`,
//! `exists`, `is-file`, `is-dir`, `is-link`, `file-info`, `file-empty`,
//! `is-readable`, `is-writable`, `resolve-path` and `list-dir` refuse a
//! path the grant does not let ral read (`denied by grant: read …`),
//! whether or not anything is there, since even "nothing is here" is an
//! answer about a place the grant closed. `list-dir` and `glob` leave out
//! the entries the grant does not let ral read (a `deny` carve-out inside
//! a readable directory), and a directory `glob` may not read contributes
//! nothing, as one it cannot read does. `temp-dir` and `temp-file` need
//! `write` on the temporary directory.
//!
//! Under such a grant the path is not handed to the kernel to resolve: it
//! is walked ([`crate::walk`]), judged on the real path the walk took, and
//! the query reads what the walk reached, so a link swapped in between
//! cannot answer for a place outside. Without an `fs` grant the paths are
//! used as they are.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::{str_arg, Ctx};
use crate::failure::Failure;
use crate::value::{Record, Value};

// ---- path resolution ----

/// A failure of builtin `name`.
fn fail(name: &str, message: impl std::fmt::Display) -> Failure {
    Failure::error(format!("{name}: {message}"))
}

/// The effective home directory: `HOME` (or `USERPROFILE` on Windows)
/// from the effective environment; unset or empty is an error naming the
/// variable (§16.6).
pub(crate) fn home_dir(ctx: &dyn Ctx) -> Result<String, String> {
    let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
    match ctx.var(var) {
        Some(h) if !h.is_empty() => Ok(h),
        _ => Err(format!("{var} is not set, so there is no home directory")),
    }
}

/// The base directory `xdg:NAME` names: the `XDG_*` variable when it holds
/// an absolute path (the XDG rule ignores relative ones), else the
/// standard default beneath the home directory. `runtime` has no default.
fn xdg_dir(ctx: &dyn Ctx, name: &str) -> Result<String, String> {
    let (var, default) = match name {
        "config" => ("XDG_CONFIG_HOME", Some(".config")),
        "data" => ("XDG_DATA_HOME", Some(".local/share")),
        "cache" => ("XDG_CACHE_HOME", Some(".cache")),
        "state" => ("XDG_STATE_HOME", Some(".local/state")),
        "runtime" => ("XDG_RUNTIME_DIR", None),
        _ => {
            return Err(format!(
                "unknown XDG directory `xdg:{name}` (known: config, data, cache, state, runtime)"
            ))
        }
    };
    if let Some(v) = ctx.var(var).filter(|v| Path::new(v).is_absolute()) {
        return Ok(v);
    }
    match default {
        Some(sub) => Ok(join_text(&home_dir(ctx)?, sub)),
        None => Err(format!("`xdg:{name}` needs {var}, which is not set")),
    }
}

/// `base/rest` as text, with exactly one `/` between them.
fn join_text(base: &str, rest: &str) -> String {
    let rest = rest.trim_start_matches('/');
    if rest.is_empty() {
        return base.to_owned();
    }
    let trimmed = base.trim_end_matches('/');
    if trimmed.is_empty() && base.starts_with('/') {
        format!("/{rest}")
    } else if trimmed.is_empty() {
        rest.to_owned()
    } else {
        format!("{trimmed}/{rest}")
    }
}

/// Splits a leading sigil off `path`: the directory it names, and the rest
/// of the path after it (without its leading `/`). `None` when `path`
/// starts with no sigil.
fn split_sigil<'a>(ctx: &dyn Ctx, path: &'a str) -> Result<Option<(String, &'a str)>, String> {
    if path == "~" {
        return Ok(Some((home_dir(ctx)?, "")));
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return Ok(Some((home_dir(ctx)?, rest)));
    }
    if let Some(spec) = path.strip_prefix("xdg:") {
        let (name, rest) = spec.split_once('/').unwrap_or((spec, ""));
        return Ok(Some((xdg_dir(ctx, name)?, rest)));
    }
    Ok(None)
}

/// `path` with its leading sigil expanded.
pub(crate) fn expand_sigils<'a>(ctx: &dyn Ctx, path: &'a str) -> Result<Cow<'a, str>, String> {
    if path.is_empty() {
        return Err("the path is empty".into());
    }
    Ok(match split_sigil(ctx, path)? {
        Some((base, rest)) => Cow::Owned(join_text(&base, rest)),
        None => Cow::Borrowed(path),
    })
}

/// `path` as the filesystem should see it: sigils expanded, relative paths
/// joined onto the logical working directory. Not folded: `..` is left for
/// the filesystem.
pub(crate) fn resolve(ctx: &dyn Ctx, path: &str) -> Result<PathBuf, String> {
    let expanded = expand_sigils(ctx, path)?;
    let p = Path::new(expanded.as_ref());
    Ok(if p.is_absolute() {
        p.to_path_buf()
    } else {
        ctx.cwd().join(p)
    })
}

/// The text of `path`; a path that is not UTF-8 has none a ral `String`
/// could carry.
fn path_text(name: &str, path: &Path) -> Result<String, Failure> {
    path.to_str().map(str::to_owned).ok_or_else(|| {
        fail(
            name,
            format!("`{}` is not valid UTF-8", path.to_string_lossy()),
        )
    })
}

/// An IO error in a few plain words: the OS text without its error code,
/// starting lower-case (`no such file or directory`).
fn reason(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(i) => text.get(..i).unwrap_or(&text),
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Whether `e` says only that nothing is there to judge: the path is
/// missing, goes through a non-directory, or loops through links.
fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    ) || is_loop(e)
}

#[cfg(unix)]
fn is_loop(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

#[cfg(not(unix))]
fn is_loop(_: &io::Error) -> bool {
    false
}

/// The resolved path of argument 0 of builtin `name`.
fn path_arg(ctx: &dyn Ctx, name: &str, args: &[Value]) -> Result<(String, PathBuf), Failure> {
    let text = str_arg(args, 0)?;
    let full = resolve(ctx, text).map_err(|m| fail(name, m))?;
    Ok((text.to_owned(), full))
}

/// What a query reads: the path as it is (no `fs` grant), or the walk's
/// result under one (see the module docs).
enum At {
    Plain { path: PathBuf, follow: bool },
    Walked(crate::walk::Resolved),
}

impl At {
    /// The metadata of what is there (through a last link when the query
    /// follows one).
    fn metadata(&self) -> io::Result<std::fs::Metadata> {
        match self {
            At::Plain { path, follow: true } => std::fs::metadata(path),
            At::Plain {
                path,
                follow: false,
            } => std::fs::symlink_metadata(path),
            At::Walked(r) => r.metadata(),
        }
    }

    fn link_text(&self) -> io::Result<PathBuf> {
        match self {
            At::Plain { path, .. } => std::fs::read_link(path),
            At::Walked(r) => r.link_text(),
        }
    }
}

/// Argument 0 of builtin `name`, ready for a query that reads the
/// filesystem there: under an `fs` grant walked (through a last link when
/// `follow`) and judged for reading on the real path it reached (§12.3).
fn query_arg(
    ctx: &mut dyn Ctx,
    name: &str,
    args: &[Value],
    follow: bool,
) -> Result<(String, PathBuf, At), Failure> {
    let (text, full) = path_arg(ctx, name, args)?;
    let at = query_at(ctx, name, &text, &full, follow)?;
    Ok((text, full, at))
}

fn query_at(
    ctx: &mut dyn Ctx,
    name: &str,
    text: &str,
    full: &Path,
    follow: bool,
) -> Result<At, Failure> {
    if !ctx.restricts_fs() {
        return Ok(At::Plain {
            path: full.to_path_buf(),
            follow,
        });
    }
    let r = crate::walk::resolve(full, follow)
        .map_err(|e| fail(name, format!("`{text}`: {}", reason(&e))))?;
    ctx.check_fs_real(crate::caps::FsOp::Read, &r.real)
        .map_err(|f| fail(name, f.message.clone()))?;
    Ok(At::Walked(r))
}

/// The entries of the directory at `at` that the grants let ral read, with
/// their metadata (not followed) and, for a link, its text. An entry that
/// vanishes while it is read is left out.
#[allow(clippy::type_complexity)]
fn dir_entries(
    ctx: &mut dyn Ctx,
    at: &At,
) -> io::Result<
    Vec<(
        std::ffi::OsString,
        io::Result<(std::fs::Metadata, Option<PathBuf>)>,
    )>,
> {
    let mut out = Vec::new();
    match at {
        At::Plain { path, .. } => {
            for entry in std::fs::read_dir(path)? {
                let entry = entry?;
                let full = path.join(entry.file_name());
                let info = std::fs::symlink_metadata(&full).and_then(|m| {
                    let t = if m.file_type().is_symlink() {
                        Some(std::fs::read_link(&full)?)
                    } else {
                        None
                    };
                    Ok((m, t))
                });
                out.push((entry.file_name(), info));
            }
        }
        At::Walked(r) => {
            let fd = r.open(
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
                0,
            )?;
            for name in crate::walk::read_dir(r)? {
                let real = r.real.join(&name);
                if ctx.check_fs_real(crate::caps::FsOp::Read, &real).is_err() {
                    continue;
                }
                let info = crate::walk::entry_handle(&fd, &name).and_then(|h| {
                    let m = h.metadata()?;
                    let t = if m.file_type().is_symlink() {
                        let t = rustix::fs::readlinkat(&h, "", Vec::new())?;
                        use std::os::unix::ffi::OsStrExt;
                        Some(PathBuf::from(std::ffi::OsStr::from_bytes(t.as_bytes())))
                    } else {
                        None
                    };
                    Ok((m, t))
                });
                out.push((name, info));
            }
        }
    }
    Ok(out)
}

// ---- paths ----

/// `absolute-path p`: `p` made absolute against the logical working
/// directory, sigils expanded and `.`/`..` folded, without consulting the
/// filesystem (§14.4). The result need not exist.
pub fn absolute_path(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (_, full) = path_arg(ctx, "absolute-path", args)?;
    Ok(Value::str(path_text(
        "absolute-path",
        &crate::runtime::normalize(&full),
    )?))
}

/// `resolve-path p`: the canonical path of an existing `p`, every link
/// followed; a missing path fails.
pub fn resolve_path(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, full, at) = query_arg(ctx, "resolve-path", args, true)?;
    let canon = match at {
        At::Walked(r) if r.exists() => Ok(r.real),
        At::Walked(_) => Err(io::Error::from(io::ErrorKind::NotFound)),
        At::Plain { .. } => std::fs::canonicalize(&full),
    }
    .map_err(|e| fail("resolve-path", format!("`{text}`: {}", reason(&e))))?;
    Ok(Value::str(path_text("resolve-path", &canon)?))
}

/// `abbreviate-home p`: `p` with a leading home directory written `~`, for
/// display. Only whole components are folded (`/home/bobby` is not under
/// `/home/bob`); a path outside the home directory, a relative one, or any
/// path when no home directory is set comes back unchanged.
pub fn abbreviate_home(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let p = str_arg(args, 0)?;
    let Ok(home) = home_dir(ctx) else {
        return Ok(Value::str(p));
    };
    let home = match home.trim_end_matches('/') {
        "" => "/",
        h => h,
    };
    if p == home || (home != "/" && p.strip_suffix('/') == Some(home)) {
        return Ok(Value::str("~"));
    }
    let rest = if home == "/" {
        p.strip_prefix('/')
    } else {
        p.strip_prefix(home).and_then(|r| r.strip_prefix('/'))
    };
    Ok(match rest {
        Some(rest) => Value::str(format!("~/{rest}")),
        None => Value::str(p),
    })
}

// ---- metadata ----

/// Whole seconds since the Unix epoch; 0 when unavailable.
fn epoch_secs(t: io::Result<SystemTime>) -> i64 {
    match t {
        Ok(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
        },
        Err(_) => 0,
    }
}

/// The `type` field for a file type.
fn type_name(ft: std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        return "symlink";
    }
    if ft.is_dir() {
        return "dir";
    }
    if ft.is_file() {
        return "file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "fifo";
        }
        if ft.is_socket() {
            return "socket";
        }
        if ft.is_block_device() {
            return "block-device";
        }
        if ft.is_char_device() {
            return "char-device";
        }
    }
    "other"
}

/// A `FileInfo` record for an entry with metadata `meta` (of a link
/// itself) and, for a link, its text.
fn info_record(
    meta: &std::fs::Metadata,
    link: Option<&Path>,
    name: String,
    path: String,
) -> io::Result<Value> {
    let ft = meta.file_type();
    let target = match link {
        Some(t) if ft.is_symlink() => {
            Value::variant("just", Some(Value::str(t.to_string_lossy().into_owned())))
        }
        _ => Value::variant("none", None),
    };
    Ok(Value::record(Record::from_entries(vec![
        ("name".into(), Value::str(name)),
        ("path".into(), Value::str(path)),
        ("type".into(), Value::str(type_name(ft))),
        (
            "size".into(),
            Value::Int(i64::try_from(meta.len()).unwrap_or(i64::MAX)),
        ),
        ("modified".into(), Value::Int(epoch_secs(meta.modified()))),
        ("accessed".into(), Value::Int(epoch_secs(meta.accessed()))),
        ("created".into(), Value::Int(epoch_secs(meta.created()))),
        (
            "readonly".into(),
            Value::Bool(meta.permissions().readonly()),
        ),
        ("target".into(), target),
    ])))
}

/// `file-info p`: `p`'s metadata as a `FileInfo` record, judged at a link
/// itself, so a dangling link is reported as a `symlink` with its target.
pub fn file_info(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, full, at) = query_arg(ctx, "file-info", args, false)?;
    let folded = crate::runtime::normalize(&full);
    let path = path_text("file-info", &folded)?;
    let name = match folded.file_name() {
        Some(n) => n.to_string_lossy().into_owned(),
        None => path.clone(),
    };
    at.metadata()
        .and_then(|meta| {
            let link = match meta.file_type().is_symlink() {
                true => Some(at.link_text()?),
                false => None,
            };
            info_record(&meta, link.as_deref(), name, path)
        })
        .map_err(|e| fail("file-info", format!("`{text}`: {}", reason(&e))))
}

/// `list-dir p`: one `FileInfo` record per entry of directory `p` (not `.`
/// or `..`), sorted by name. An entry that vanishes while it is listed is
/// left out; a name that is not UTF-8 fails, since no `String` can name it.
pub fn list_dir(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, full, at) = query_arg(ctx, "list-dir", args, true)?;
    let cannot = |e: io::Error| fail("list-dir", format!("`{text}`: {}", reason(&e)));
    let dir = path_text("list-dir", &crate::runtime::normalize(&full))?;
    let mut entries = Vec::new();
    for (name, info) in dir_entries(ctx, &at).map_err(cannot)? {
        ctx.poll()?;
        let name = name.into_string().map_err(|n| {
            fail(
                "list-dir",
                format!(
                    "`{text}` holds a name that is not valid UTF-8: {}",
                    n.to_string_lossy()
                ),
            )
        })?;
        entries.push((name, info));
    }
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(entries.len());
    for (name, info) in entries {
        let path = join_text(&dir, &name);
        match info.and_then(|(m, t)| info_record(&m, t.as_deref(), name, path)) {
            Ok(v) => out.push(v),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(cannot(e)),
        }
    }
    Ok(Value::list(out))
}

// ---- predicates ----

/// A predicate over the metadata of a path: `Ok(false)` when nothing is
/// there to judge, a failure for any other error (a permission problem on
/// the way, say, which leaves the answer unknown).
fn judge(
    ctx: &mut dyn Ctx,
    name: &str,
    args: &[Value],
    follow: bool,
    test: fn(&std::fs::Metadata) -> bool,
) -> Result<Value, Failure> {
    let (text, _, at) = query_arg(ctx, name, args, follow)?;
    match at.metadata() {
        Ok(m) => Ok(Value::Bool(test(&m))),
        Err(e) if is_absent(&e) => Ok(Value::Bool(false)),
        Err(e) => Err(fail(name, format!("`{text}`: {}", reason(&e)))),
    }
}

/// `exists p`: whether anything is at `p`; a dangling link is.
pub fn exists(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    judge(ctx, "exists", args, false, |_| true)
}

/// `is-file p`: whether `p` is a regular file, through links.
pub fn is_file(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    judge(ctx, "is-file", args, true, std::fs::Metadata::is_file)
}

/// `is-dir p`: whether `p` is a directory, through links.
pub fn is_dir(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    judge(ctx, "is-dir", args, true, std::fs::Metadata::is_dir)
}

/// `is-link p`: whether `p` itself is a symbolic link.
pub fn is_link(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    judge(ctx, "is-link", args, false, |m| m.file_type().is_symlink())
}

/// Whether this process may access `full` in `mode`, through links, by
/// access(2): `false` for a missing path, a dangling link, a denial or a
/// read-only filesystem; a failure for errors that leave it unknown.
#[cfg(unix)]
fn may_access(
    name: &str,
    text: &str,
    full: &Path,
    at: &At,
    mode: rustix::fs::Access,
) -> Result<bool, Failure> {
    use rustix::io::Errno;
    let asked = match at {
        At::Plain { .. } => rustix::fs::access(full, mode),
        At::Walked(r) => match (&r.dir, r.exists()) {
            (_, false) => Err(Errno::NOENT),
            (Some(d), true) => rustix::fs::accessat(
                &**d,
                r.name.as_os_str(),
                mode,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            ),
            (None, true) => rustix::fs::access("/", mode),
        },
    };
    match asked {
        Ok(()) => Ok(true),
        Err(e)
            if e == Errno::ACCESS
                || e == Errno::NOENT
                || e == Errno::NOTDIR
                || e == Errno::LOOP
                || e == Errno::ROFS
                || e == Errno::TXTBSY
                || e == Errno::PERM =>
        {
            Ok(false)
        }
        Err(e) => Err(fail(
            name,
            format!("`{text}`: {}", reason(&io::Error::from(e))),
        )),
    }
}

/// `is-readable p`: whether `p` exists and this process may read it,
/// through links.
pub fn is_readable(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, full, at) = query_arg(ctx, "is-readable", args, true)?;
    #[cfg(unix)]
    {
        may_access(
            "is-readable",
            &text,
            &full,
            &at,
            rustix::fs::Access::READ_OK,
        )
        .map(Value::Bool)
    }
    #[cfg(not(unix))]
    {
        let _ = (text, at);
        Ok(Value::Bool(std::fs::metadata(&full).is_ok()))
    }
}

/// `is-writable p`: whether `p` exists and this process may write it,
/// through links.
pub fn is_writable(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, full, at) = query_arg(ctx, "is-writable", args, true)?;
    #[cfg(unix)]
    {
        may_access(
            "is-writable",
            &text,
            &full,
            &at,
            rustix::fs::Access::WRITE_OK,
        )
        .map(Value::Bool)
    }
    #[cfg(not(unix))]
    {
        let _ = (text, at);
        Ok(Value::Bool(
            std::fs::metadata(&full).is_ok_and(|m| !m.permissions().readonly()),
        ))
    }
}

/// `file-empty p`: whether the regular file at `p` (through links) has no
/// bytes. A missing path, a directory or another kind of file fails:
/// emptiness is a question about a file's contents.
pub fn file_empty(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let (text, _, at) = query_arg(ctx, "file-empty", args, true)?;
    let meta = at
        .metadata()
        .map_err(|e| fail("file-empty", format!("`{text}`: {}", reason(&e))))?;
    if meta.is_dir() {
        return Err(fail("file-empty", format!("`{text}` is a directory")));
    }
    if !meta.is_file() {
        return Err(fail(
            "file-empty",
            format!("`{text}` is not a regular file"),
        ));
    }
    Ok(Value::Bool(meta.len() == 0))
}

// ---- temporary files ----

/// Where temporary files go: the effective `TMPDIR` (made absolute against
/// the logical working directory), else the platform's default.
fn temp_base(ctx: &dyn Ctx) -> PathBuf {
    match ctx.var("TMPDIR").filter(|t| !t.is_empty()) {
        Some(t) => ctx.cwd().join(t),
        None if cfg!(unix) => PathBuf::from("/tmp"),
        None => std::env::temp_dir(),
    }
}

/// A builder for a `ral-…` name that only the owner may use: the mode is
/// set at creation, whatever the umask, so no other user ever sees the
/// entry open to them.
fn temp_builder(mode: u32) -> tempfile::Builder<'static, 'static> {
    let mut b = tempfile::Builder::new();
    b.prefix("ral-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    b
}

/// `temp-dir`: creates a fresh directory (mode 0700) with an unpredictable
/// name under the temporary directory and returns its path. Nothing
/// removes it later.
pub fn temp_dir(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let base = temp_base(ctx);
    if ctx.restricts_fs() {
        let made = temp_walked(ctx, "temp-dir", &base, true)?;
        return Ok(Value::str(path_text("temp-dir", &made)?));
    }
    ctx.check_fs(crate::caps::FsOp::Write, &base)
        .map_err(|f| fail("temp-dir", f.message.clone()))?;
    let dir = temp_builder(0o700).tempdir_in(&base).map_err(|e| {
        fail(
            "temp-dir",
            format!(
                "cannot create a directory in `{}`: {}",
                base.display(),
                reason(&e)
            ),
        )
    })?;
    Ok(Value::str(path_text("temp-dir", &dir.keep())?))
}

/// `temp-file`: creates a fresh empty file (mode 0600) with an
/// unpredictable name under the temporary directory and returns its path.
/// Nothing removes it later.
pub fn temp_file(ctx: &mut dyn Ctx, _: &[Value]) -> Result<Value, Failure> {
    let base = temp_base(ctx);
    if ctx.restricts_fs() {
        let made = temp_walked(ctx, "temp-file", &base, false)?;
        return Ok(Value::str(path_text("temp-file", &made)?));
    }
    ctx.check_fs(crate::caps::FsOp::Write, &base)
        .map_err(|f| fail("temp-file", f.message.clone()))?;
    let cannot = |e: io::Error| {
        fail(
            "temp-file",
            format!(
                "cannot create a file in `{}`: {}",
                base.display(),
                reason(&e)
            ),
        )
    };
    let file = temp_builder(0o600).tempfile_in(&base).map_err(cannot)?;
    let path = file.into_temp_path().keep().map_err(|e| cannot(e.error))?;
    Ok(Value::str(path_text("temp-file", &path)?))
}

/// Under an `fs` grant: the temporary directory is walked and judged for
/// writing on its real path, and a fresh `ral-…` directory (mode 0700) or
/// file (0600) is made through the descriptor the walk reached, with
/// exclusive creation and a new random name on a collision.
fn temp_walked(ctx: &mut dyn Ctx, name: &str, base: &Path, dir: bool) -> Result<PathBuf, Failure> {
    use std::hash::{BuildHasher, Hasher};
    let cannot = |e: io::Error| {
        fail(
            name,
            format!(
                "cannot create a {} in `{}`: {}",
                if dir { "directory" } else { "file" },
                base.display(),
                reason(&e)
            ),
        )
    };
    let r = crate::walk::resolve(base, true).map_err(cannot)?;
    ctx.check_fs_real(crate::caps::FsOp::Write, &r.real)
        .map_err(|f| fail(name, f.message.clone()))?;
    let fd = r
        .open(rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY, 0)
        .map_err(cannot)?;
    // Keys drawn from the system's randomness once per process, advanced
    // for each hasher, mixed with the time: an unpredictable name.
    let state = std::collections::hash_map::RandomState::new();
    for attempt in 0u64..64 {
        let mut h = state.build_hasher();
        h.write_u64(attempt);
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let v = h.finish();
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let suffix: String = (0..10)
            .map(|i| char::from(ALPHABET[((v >> (i * 6)) % 62) as usize]))
            .collect();
        let entry = format!("ral-{suffix}");
        let made = if dir {
            rustix::fs::mkdirat(&fd, entry.as_str(), rustix::fs::Mode::from_raw_mode(0o700))
        } else {
            rustix::fs::openat(
                &fd,
                entry.as_str(),
                rustix::fs::OFlags::WRONLY
                    | rustix::fs::OFlags::CREATE
                    | rustix::fs::OFlags::EXCL
                    | rustix::fs::OFlags::NOFOLLOW
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::from_raw_mode(0o600),
            )
            .map(drop)
        };
        match made {
            Ok(()) => return Ok(base.join(entry)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(cannot(io::Error::from(e))),
        }
    }
    Err(cannot(io::Error::from(io::ErrorKind::AlreadyExists)))
}

// ---- glob ----

/// One element of a pattern component.
#[derive(Debug, PartialEq)]
enum Tok {
    /// This character.
    Lit(char),
    /// `?`: any one character.
    One,
    /// `*`: any run of characters.
    Star,
    /// `[…]`: one character in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Parses one component of a glob pattern (no `/` in it).
fn parse_component(text: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => toks.push(Tok::Lit(chars.next().unwrap_or('\\'))),
            '?' => toks.push(Tok::One),
            '*' => {
                if toks.last() != Some(&Tok::Star) {
                    toks.push(Tok::Star);
                }
            }
            '[' => {
                let negated = matches!(chars.peek(), Some('!' | '^'));
                if negated {
                    chars.next();
                }
                let mut ranges = Vec::new();
                let mut first = true;
                loop {
                    let Some(c) = chars.next() else {
                        return Err(format!("unclosed `[` in `{text}`"));
                    };
                    let lo = match c {
                        ']' if !first => break,
                        '[' if chars.peek() == Some(&':') => {
                            return Err(format!(
                            "character classes such as `[:alpha:]` are not supported (in `{text}`)"
                        ))
                        }
                        '\\' => chars
                            .next()
                            .ok_or_else(|| format!("unclosed `[` in `{text}`"))?,
                        c => c,
                    };
                    first = false;
                    let mut ahead = chars.clone();
                    if ahead.next() == Some('-') && ahead.peek().is_some_and(|&c| c != ']') {
                        chars.next();
                        let hi = match chars.next() {
                            Some('\\') => chars
                                .next()
                                .ok_or_else(|| format!("unclosed `[` in `{text}`"))?,
                            Some(c) => c,
                            None => return Err(format!("unclosed `[` in `{text}`")),
                        };
                        if hi < lo {
                            return Err(format!("the range `{lo}-{hi}` is reversed in `{text}`"));
                        }
                        ranges.push((lo, hi));
                    } else {
                        ranges.push((lo, lo));
                    }
                }
                toks.push(Tok::Class { negated, ranges });
            }
            c => toks.push(Tok::Lit(c)),
        }
    }
    Ok(toks)
}

/// Whether one token matches character `c`.
fn tok_matches(tok: &Tok, c: char) -> bool {
    match tok {
        Tok::Lit(l) => *l == c,
        Tok::One => true,
        Tok::Star => false,
        Tok::Class { negated, ranges } => {
            ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
    }
}

/// Whether `toks` match all of `name`. Backtracks only to the last `*`,
/// so the cost is at most the product of the two lengths. A leading `.`
/// must be matched by a literal `.`.
fn component_matches(toks: &[Tok], name: &str) -> bool {
    if name.starts_with('.') && toks.first() != Some(&Tok::Lit('.')) {
        return false;
    }
    let name: Vec<char> = name.chars().collect();
    let (mut t, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    loop {
        match (toks.get(t), name.get(n)) {
            (Some(Tok::Star), _) => {
                star = Some((t, n));
                t += 1;
                continue;
            }
            (Some(tok), Some(&c)) if tok_matches(tok, c) => {
                t += 1;
                n += 1;
                continue;
            }
            (None, None) => return true,
            _ => {}
        }
        match star {
            Some((st, sn)) if sn < name.len() => {
                star = Some((st, sn + 1));
                t = st + 1;
                n = sn + 1;
            }
            _ => return false,
        }
    }
}

/// A path a glob has reached: where it is, and how the result spells it.
struct Reached {
    full: PathBuf,
    shown: String,
}

fn shown_join(shown: &str, name: &str) -> String {
    if shown.is_empty() {
        name.to_owned()
    } else if shown.ends_with('/') {
        format!("{shown}{name}")
    } else {
        format!("{shown}/{name}")
    }
}

/// The entries of `dir` as names, sorted; nothing when it cannot be read.
/// A non-UTF-8 name is kept as its lossy spelling and flagged.
fn entries(ctx: &mut dyn Ctx, dir: &Path) -> Vec<(String, bool)> {
    let names: Vec<std::ffi::OsString> = if ctx.restricts_fs() {
        // Walked and judged like `list-dir`; entries the grant closes are
        // left out (see the module docs).
        let Ok(r) = crate::walk::resolve(dir, true) else {
            return Vec::new();
        };
        if ctx.check_fs_real(crate::caps::FsOp::Read, &r.real).is_err() {
            return Vec::new();
        }
        let Ok(all) = crate::walk::read_dir(&r) else {
            return Vec::new();
        };
        all.into_iter()
            .filter(|n| {
                ctx.check_fs_real(crate::caps::FsOp::Read, &r.real.join(n))
                    .is_ok()
            })
            .collect()
    } else {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        rd.filter_map(Result::ok).map(|e| e.file_name()).collect()
    };
    let mut names: Vec<(String, bool)> = names
        .into_iter()
        .map(|n| match n.into_string() {
            Ok(s) => (s, true),
            Err(os) => (os.to_string_lossy().into_owned(), false),
        })
        .collect();
    names.sort_unstable();
    names
}

/// Whether a path `glob` reached is there (a directory, for a pattern
/// ending in `/`); under an `fs` grant, a path the grant does not let ral
/// read is not.
fn glob_hit(ctx: &mut dyn Ctx, full: &Path, dirs_only: bool) -> bool {
    if ctx.restricts_fs() {
        let Ok(r) = crate::walk::resolve(full, dirs_only) else {
            return false;
        };
        if ctx.check_fs_real(crate::caps::FsOp::Read, &r.real).is_err() {
            return false;
        }
        return match dirs_only {
            true => r.kind == crate::walk::Kind::Dir,
            false => r.exists(),
        };
    }
    if dirs_only {
        std::fs::metadata(full).is_ok_and(|m| m.is_dir())
    } else {
        std::fs::symlink_metadata(full).is_ok()
    }
}

/// `at` and every directory below it (not through links, not into
/// dot-directories), for `**`.
fn descend(ctx: &mut dyn Ctx, at: Reached, out: &mut Vec<Reached>) -> Result<(), Failure> {
    let mut stack = vec![at];
    while let Some(r) = stack.pop() {
        ctx.poll()?;
        let mut below = Vec::new();
        for (name, utf8) in entries(ctx, &r.full) {
            if !utf8 || name.starts_with('.') {
                continue;
            }
            let full = r.full.join(&name);
            if std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir()) {
                below.push(Reached {
                    shown: shown_join(&r.shown, &name),
                    full,
                });
            }
        }
        out.push(r);
        // Reversed so the stack pops them in name order.
        stack.extend(below.into_iter().rev());
    }
    Ok(())
}

/// `glob pattern`: the existing paths `pattern` matches, sorted (see the
/// module docs for the pattern language).
pub fn glob(ctx: &mut dyn Ctx, args: &[Value]) -> Result<Value, Failure> {
    let pattern = str_arg(args, 0)?;
    if pattern.is_empty() {
        return Err(fail("glob", "the pattern is empty"));
    }
    // A sigil's directory is literal: it is not itself a pattern.
    let (start, rest) = match split_sigil(ctx, pattern).map_err(|m| fail("glob", m))? {
        Some((base, rest)) => {
            let full = ctx.cwd().join(&base);
            (Reached { full, shown: base }, rest)
        }
        None if pattern.starts_with('/') => (
            Reached {
                full: PathBuf::from("/"),
                shown: "/".into(),
            },
            pattern,
        ),
        None => (
            Reached {
                full: ctx.cwd(),
                shown: String::new(),
            },
            pattern,
        ),
    };
    let mut components: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    let dirs_only = rest.ends_with('/') && !components.is_empty();
    if components.last() == Some(&"**") {
        components.push("*");
    }
    let mut reached = vec![start];
    for comp in components {
        let mut next = Vec::new();
        if comp == "**" {
            for r in reached {
                descend(ctx, r, &mut next)?;
            }
            reached = next;
            continue;
        }
        let toks = parse_component(comp).map_err(|m| fail("glob", m))?;
        if let Some(lit) = toks
            .iter()
            .map(|t| match t {
                Tok::Lit(c) => Some(*c),
                Tok::One | Tok::Star | Tok::Class { .. } => None,
            })
            .collect::<Option<String>>()
        {
            for r in reached {
                next.push(Reached {
                    full: r.full.join(&lit),
                    shown: shown_join(&r.shown, &lit),
                });
            }
        } else {
            for r in reached {
                ctx.poll()?;
                for (name, utf8) in entries(ctx, &r.full) {
                    if !component_matches(&toks, &name) {
                        continue;
                    }
                    if !utf8 {
                        return Err(fail(
                            "glob",
                            format!(
                                "a match in `{}` has a name that is not valid UTF-8: {name}",
                                r.full.display()
                            ),
                        ));
                    }
                    next.push(Reached {
                        full: r.full.join(&name),
                        shown: shown_join(&r.shown, &name),
                    });
                }
            }
        }
        reached = next;
    }
    let mut out: Vec<String> = reached
        .into_iter()
        .filter(|r| glob_hit(ctx, &r.full, dirs_only))
        .map(|r| {
            if dirs_only && !r.shown.ends_with('/') {
                format!("{}/", r.shown)
            } else {
                r.shown
            }
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(Value::list(out.into_iter().map(Value::str).collect()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::session::Mobile;
    use crate::Vm;

    /// A VM whose logical cwd is `cwd` and whose environment overrides are
    /// `env`, so tests never touch the process's own.
    fn vm_at(cwd: &Path, env: &[(&str, Option<&str>)]) -> Vm {
        let mut vm = Vm::new(Mobile::default());
        vm.mobile.context.cwd = Some(cwd.to_path_buf());
        vm.mobile.context.env = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect();
        vm
    }

    fn run(vm: &mut Vm, f: crate::BuiltinFn, arg: &str) -> Result<Value, Failure> {
        f(vm, &[Value::str(arg)])
    }

    fn text(v: Value) -> String {
        v.as_str().unwrap().to_owned()
    }

    fn texts(v: Value) -> Vec<String> {
        let Value::List(items) = v else {
            panic!("not a list: {v:?}")
        };
        items
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    }

    fn field<'a>(v: &'a Value, k: &str) -> &'a Value {
        let Value::Record(r) = v else {
            panic!("not a record: {v:?}")
        };
        r.get(k).unwrap()
    }

    /// A fresh scratch directory, removed when the guard drops.
    fn scratch() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("ral-fs-test-")
            .tempdir()
            .unwrap()
    }

    #[test]
    fn absolute_path_is_lexical_against_the_logical_cwd() {
        let mut vm = vm_at(Path::new("/work/a/b"), &[("HOME", Some("/home/u"))]);
        for (input, want) in [
            ("x", "/work/a/b/x"),
            ("./x/./y/", "/work/a/b/x/y"),
            ("../c", "/work/a/c"),
            ("../../../../..", "/"),
            (".", "/work/a/b"),
            ("/etc//passwd", "/etc/passwd"),
            ("/a/../..", "/"),
            ("~", "/home/u"),
            ("~/src/../bin", "/home/u/bin"),
            ("~bob/x", "/work/a/b/~bob/x"),
            ("x~", "/work/a/b/x~"),
        ] {
            assert_eq!(
                text(run(&mut vm, absolute_path, input).unwrap()),
                want,
                "{input}"
            );
        }
    }

    #[test]
    fn tilde_needs_home() {
        let mut vm = vm_at(Path::new("/w"), &[("HOME", None), ("USERPROFILE", None)]);
        let err = run(&mut vm, absolute_path, "~/x").unwrap_err();
        assert!(err.message.contains("HOME"), "{}", err.message);
        // Without a `~`, no home is needed.
        assert_eq!(text(run(&mut vm, absolute_path, "x").unwrap()), "/w/x");
        let err = run(&mut vm, absolute_path, "").unwrap_err();
        assert!(err.message.contains("empty"), "{}", err.message);
    }

    #[test]
    fn xdg_sigils() {
        let mut vm = vm_at(
            Path::new("/w"),
            &[
                ("HOME", Some("/home/u/")),
                ("XDG_CONFIG_HOME", Some("/cfg")),
                ("XDG_DATA_HOME", Some("relative/ignored")),
                ("XDG_CACHE_HOME", None),
                ("XDG_RUNTIME_DIR", None),
            ],
        );
        assert_eq!(
            text(run(&mut vm, absolute_path, "xdg:config/ral/rc").unwrap()),
            "/cfg/ral/rc"
        );
        assert_eq!(
            text(run(&mut vm, absolute_path, "xdg:data").unwrap()),
            "/home/u/.local/share"
        );
        assert_eq!(
            text(run(&mut vm, absolute_path, "xdg:cache/x").unwrap()),
            "/home/u/.cache/x"
        );
        let err = run(&mut vm, absolute_path, "xdg:runtime").unwrap_err();
        assert!(err.message.contains("XDG_RUNTIME_DIR"), "{}", err.message);
        let err = run(&mut vm, absolute_path, "xdg:music").unwrap_err();
        assert!(
            err.message.contains("unknown XDG directory"),
            "{}",
            err.message
        );
    }

    #[test]
    fn abbreviating_home_folds_whole_components_only() {
        let mut vm = vm_at(Path::new("/w"), &[("HOME", Some("/home/bob/"))]);
        for (input, want) in [
            ("/home/bob", "~"),
            ("/home/bob/", "~"),
            ("/home/bob/src/x", "~/src/x"),
            ("/home/bobby/x", "/home/bobby/x"),
            ("/etc", "/etc"),
            ("relative/home/bob", "relative/home/bob"),
        ] {
            assert_eq!(
                text(run(&mut vm, abbreviate_home, input).unwrap()),
                want,
                "{input}"
            );
        }
        let mut unset = vm_at(Path::new("/w"), &[("HOME", None), ("USERPROFILE", None)]);
        assert_eq!(
            text(run(&mut unset, abbreviate_home, "/home/bob").unwrap()),
            "/home/bob"
        );
    }

    #[test]
    fn relative_paths_use_the_logical_cwd_not_the_process_cwd() {
        let dir = scratch();
        std::fs::write(dir.path().join("only-here"), b"x").unwrap();
        let mut vm = vm_at(dir.path(), &[]);
        assert_eq!(
            run(&mut vm, exists, "only-here").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            run(&mut vm, is_file, "./only-here").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            run(&mut vm, exists, "not-here").unwrap(),
            Value::Bool(false)
        );
        let canon = std::fs::canonicalize(dir.path().join("only-here")).unwrap();
        assert_eq!(
            text(run(&mut vm, resolve_path, "only-here").unwrap()),
            canon.to_str().unwrap()
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_are_judged_at_the_link_or_through_it() {
        let dir = scratch();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("f"), b"abc").unwrap();
        std::os::unix::fs::symlink("f", d.join("to-f")).unwrap();
        std::os::unix::fs::symlink("sub", d.join("to-sub")).unwrap();
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop-b", d.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", d.join("loop-b")).unwrap();
        let mut vm = vm_at(d, &[]);
        let b = |vm: &mut Vm, f: crate::BuiltinFn, p: &str| run(vm, f, p).unwrap();
        let t = Value::Bool(true);
        let fl = Value::Bool(false);
        assert_eq!(b(&mut vm, exists, "dangling"), t);
        assert_eq!(b(&mut vm, is_link, "dangling"), t);
        assert_eq!(b(&mut vm, is_file, "dangling"), fl);
        assert_eq!(b(&mut vm, is_dir, "dangling"), fl);
        assert_eq!(b(&mut vm, is_readable, "dangling"), fl);
        assert_eq!(b(&mut vm, is_writable, "dangling"), fl);
        assert_eq!(b(&mut vm, is_file, "to-f"), t);
        assert_eq!(b(&mut vm, is_link, "to-f"), t);
        assert_eq!(b(&mut vm, is_link, "f"), fl);
        assert_eq!(b(&mut vm, is_dir, "to-sub"), t);
        assert_eq!(b(&mut vm, is_dir, "f"), fl);
        assert_eq!(b(&mut vm, is_file, "sub"), fl);
        assert_eq!(b(&mut vm, is_file, "loop-a"), fl);
        assert_eq!(b(&mut vm, exists, "loop-a"), t);
        // Through a file as though it were a directory: nothing there.
        assert_eq!(b(&mut vm, exists, "f/x"), fl);
        assert_eq!(b(&mut vm, is_readable, "f/x"), fl);

        let info = b(&mut vm, file_info, "dangling");
        assert_eq!(field(&info, "type"), &Value::str("symlink"));
        assert_eq!(
            field(&info, "target"),
            &Value::variant("just", Some(Value::str("nowhere")))
        );
        assert_eq!(field(&info, "name"), &Value::str("dangling"));
        let err = run(&mut vm, resolve_path, "dangling").unwrap_err();
        assert!(err.message.contains("no such file"), "{}", err.message);
    }

    #[cfg(unix)]
    #[test]
    fn access_checks_agree_with_opening() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch();
        let p = dir.path().join("locked");
        std::fs::write(&p, b"x").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        let mut vm = vm_at(dir.path(), &[]);
        // Root may read and write anything, so the truth is what opening
        // the file says, not the mode bits.
        let can_read = std::fs::File::open(&p).is_ok();
        let can_write = std::fs::OpenOptions::new().write(true).open(&p).is_ok();
        assert_eq!(
            run(&mut vm, is_readable, "locked").unwrap(),
            Value::Bool(can_read)
        );
        assert_eq!(
            run(&mut vm, is_writable, "locked").unwrap(),
            Value::Bool(can_write)
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            run(&mut vm, is_readable, "locked").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            run(&mut vm, is_writable, "locked").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            run(&mut vm, is_readable, "missing").unwrap(),
            Value::Bool(false)
        );
    }

    #[test]
    fn file_info_reports_metadata() {
        let dir = scratch();
        std::fs::write(dir.path().join("five"), b"12345").unwrap();
        let mut vm = vm_at(dir.path(), &[]);
        let info = run(&mut vm, file_info, "./five").unwrap();
        assert_eq!(field(&info, "name"), &Value::str("five"));
        assert_eq!(
            field(&info, "path"),
            &Value::str(dir.path().join("five").to_str().unwrap())
        );
        assert_eq!(field(&info, "type"), &Value::str("file"));
        assert_eq!(field(&info, "size"), &Value::Int(5));
        assert_eq!(field(&info, "readonly"), &Value::Bool(false));
        assert_eq!(field(&info, "target"), &Value::variant("none", None));
        let now = epoch_secs(Ok(SystemTime::now()));
        let Value::Int(m) = field(&info, "modified") else {
            panic!()
        };
        assert!((now - 60..=now + 1).contains(m), "modified {m}, now {now}");
        let dirinfo = run(&mut vm, file_info, ".").unwrap();
        assert_eq!(field(&dirinfo, "type"), &Value::str("dir"));
        let err = run(&mut vm, file_info, "absent").unwrap_err();
        assert!(
            err.message.starts_with("file-info: `absent`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn list_dir_sorts_entries_and_fails_on_non_directories() {
        let dir = scratch();
        for name in ["b", "a", ".hidden"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("c")).unwrap();
        let mut vm = vm_at(dir.path(), &[]);
        let Value::List(items) = run(&mut vm, list_dir, ".").unwrap() else {
            panic!()
        };
        let names: Vec<&Value> = items.iter().map(|v| field(v, "name")).collect();
        assert_eq!(
            names,
            [".hidden", "a", "b", "c"]
                .map(Value::str)
                .iter()
                .collect::<Vec<_>>()
        );
        assert_eq!(field(&items[3], "type"), &Value::str("dir"));
        assert_eq!(
            field(&items[1], "path"),
            &Value::str(dir.path().join("a").to_str().unwrap())
        );
        let err = run(&mut vm, list_dir, "a").unwrap_err();
        assert!(err.message.contains("not a directory"), "{}", err.message);
        let err = run(&mut vm, list_dir, "zzz").unwrap_err();
        assert!(err.message.contains("no such file"), "{}", err.message);
    }

    #[test]
    fn file_empty_asks_about_regular_files() {
        let dir = scratch();
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        std::fs::write(dir.path().join("full"), b"x").unwrap();
        let mut vm = vm_at(dir.path(), &[]);
        assert_eq!(
            run(&mut vm, file_empty, "empty").unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            run(&mut vm, file_empty, "full").unwrap(),
            Value::Bool(false)
        );
        assert!(run(&mut vm, file_empty, ".")
            .unwrap_err()
            .message
            .contains("directory"));
        assert!(run(&mut vm, file_empty, "none").is_err());
    }

    #[test]
    fn temp_paths_are_fresh_and_under_tmpdir() {
        let dir = scratch();
        let mut vm = vm_at(
            Path::new("/"),
            &[("TMPDIR", Some(dir.path().to_str().unwrap()))],
        );
        let a = text(temp_dir(&mut vm, &[]).unwrap());
        let b = text(temp_dir(&mut vm, &[]).unwrap());
        let f = text(temp_file(&mut vm, &[]).unwrap());
        assert_ne!(a, b);
        for p in [&a, &b, &f] {
            assert_eq!(Path::new(p).parent(), Some(dir.path()), "{p}");
        }
        assert!(Path::new(&a).is_dir());
        assert!(Path::new(&f).is_file());
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&a).unwrap().permissions().mode() & 0o777,
                0o700
            );
            assert_eq!(
                std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        // A TMPDIR that does not exist is a clear failure.
        let mut bad = vm_at(Path::new("/"), &[("TMPDIR", Some("/no/such/ral/dir"))]);
        let err = temp_dir(&mut bad, &[]).unwrap_err();
        assert!(err.message.contains("/no/such/ral/dir"), "{}", err.message);
    }

    #[test]
    fn component_patterns() {
        let m = |p: &str, n: &str| component_matches(&parse_component(p).unwrap(), n);
        assert!(m("*.rs", "main.rs"));
        assert!(!m("*.rs", "main.rsx"));
        assert!(m("a*b*c", "aXbYbc"));
        assert!(!m("a*b*c", "aXbYb"));
        assert!(m("?", "é"));
        assert!(!m("?", ""));
        assert!(m("[a-c]x", "bx"));
        assert!(!m("[!a-c]x", "bx"));
        assert!(m("[^a-c]x", "dx"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m("\\*", "*"));
        assert!(!m("\\*", "x"));
        assert!(!m("*", ".hidden"));
        assert!(!m("?hidden", ".hidden"));
        assert!(m(".*", ".hidden"));
        assert!(m("**", "anything"));
        assert!(parse_component("[ab").is_err());
        assert!(parse_component("[z-a]").is_err());
        assert!(parse_component("[[:alpha:]]").is_err());
        // A long run of stars against a near miss stays fast.
        let p = "*a".repeat(20);
        assert!(!m(&p, &"a".repeat(19)));
    }

    #[test]
    fn glob_expands_patterns_sorted() {
        let dir = scratch();
        let d = dir.path();
        std::fs::create_dir_all(d.join("src/deep/er")).unwrap();
        std::fs::create_dir_all(d.join(".git/x")).unwrap();
        for f in [
            "b.txt",
            "a.txt",
            "c.md",
            ".dot.txt",
            "src/m.rs",
            "src/deep/n.rs",
            "src/deep/er/o.rs",
            ".git/x/p.rs",
        ] {
            std::fs::write(d.join(f), b"").unwrap();
        }
        let mut vm = vm_at(d, &[("HOME", Some(d.to_str().unwrap()))]);
        let g = |vm: &mut Vm, p: &str| texts(run(vm, glob, p).unwrap());
        assert_eq!(g(&mut vm, "*.txt"), ["a.txt", "b.txt"]);
        assert_eq!(g(&mut vm, ".*.txt"), [".dot.txt"]);
        assert_eq!(g(&mut vm, "./*.md"), ["./c.md"]);
        assert_eq!(g(&mut vm, "*.none"), Vec::<String>::new());
        assert_eq!(g(&mut vm, "c.md"), ["c.md"]);
        assert_eq!(g(&mut vm, "absent.md"), Vec::<String>::new());
        assert_eq!(g(&mut vm, "*/"), ["src/"]);
        assert_eq!(g(&mut vm, "src/*"), ["src/deep", "src/m.rs"]);
        assert_eq!(
            g(&mut vm, "**/*.rs"),
            ["src/deep/er/o.rs", "src/deep/n.rs", "src/m.rs"]
        );
        assert_eq!(
            g(&mut vm, "src/**"),
            [
                "src/deep",
                "src/deep/er",
                "src/deep/er/o.rs",
                "src/deep/n.rs",
                "src/m.rs"
            ]
        );
        assert_eq!(g(&mut vm, "**/**/n.rs"), ["src/deep/n.rs"]);
        let abs = format!("{}/s?c/*.rs", d.to_str().unwrap());
        assert_eq!(
            g(&mut vm, &abs),
            [format!("{}/src/m.rs", d.to_str().unwrap())]
        );
        assert_eq!(
            g(&mut vm, "~/[ab].txt"),
            [
                format!("{}/a.txt", d.to_str().unwrap()),
                format!("{}/b.txt", d.to_str().unwrap()),
            ]
        );
        assert!(run(&mut vm, glob, "[oops")
            .unwrap_err()
            .message
            .contains("unclosed"));
        assert!(run(&mut vm, glob, "").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn glob_does_not_follow_links_with_double_star() {
        let dir = scratch();
        let d = dir.path();
        std::fs::create_dir(d.join("a")).unwrap();
        std::fs::write(d.join("a/f"), b"").unwrap();
        // A link back up would loop forever if `**` followed it.
        std::os::unix::fs::symlink("..", d.join("a/up")).unwrap();
        let mut vm = vm_at(d, &[]);
        assert_eq!(texts(run(&mut vm, glob, "**/f").unwrap()), ["a/f"]);
        // A single `*` does go through it, as a literal name would.
        assert_eq!(
            texts(run(&mut vm, glob, "a/up/a/*").unwrap()),
            ["a/up/a/f", "a/up/a/up"]
        );
    }
}
