//! Resolving the paths ral itself opens under a grant, so that what the
//! guard judged is what is opened (spec §12.3, the first enforcement layer).
//!
//! A check on a path and a later `open` of the same path are two lookups:
//! between them a symbolic link can be swapped in for a directory, and an
//! `open` that follows a dangling link creates its target wherever the link
//! points. So under a grant ral never hands a path to the kernel to
//! resolve. [`resolve`] walks it one component at a time from a descriptor
//! of `/`: each component is opened relative to the descriptor of the one
//! before with `O_PATH | O_NOFOLLOW`, a symbolic link is read
//! (`readlinkat`) and its text walked in turn, `..` returns to the
//! descriptor it came from. The walk ends with the descriptor of the
//! directory holding the last component, that component's name, and the
//! real path the walk took, with no link left in it: the grant judges that
//! path, and the operation then acts on `(directory, name)` with
//! `O_NOFOLLOW`, so nothing is resolved a second time. A last component
//! that became a link in between makes the operation fail with `ELOOP`,
//! which [`retry`] answers by walking again.
//!
//! The verdict is on the path each directory had when it was walked; a
//! directory moved afterwards is still the one opened. Moving one needs
//! write access at both ends, which a grant that denies a region denies
//! there too.
//!
//! Without an `fs` layer nothing is judged and the callers open paths as
//! they are (`Guard::Open`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{openat, Mode, OFlags};

/// The most symbolic links one walk follows (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// How often an operation walks again when its last component changed
/// under it.
const RETRIES: usize = 8;

/// What is at the end of a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Nothing: the last component does not exist (its directory does).
    Absent,
    /// Nothing, and not even the directory that would hold it.
    Missing,
    Dir,
    Link,
    Other,
}

/// A walked path (see the module docs).
#[derive(Debug)]
pub struct Resolved {
    /// The directory holding the last component; `None` for `/` itself
    /// and for a [`Kind::Missing`] path.
    pub dir: Option<Arc<OwnedFd>>,
    /// The last component (empty for `/`).
    pub name: OsString,
    /// The real path the walk took (for a missing path, the real part
    /// with the rest appended as written).
    pub real: PathBuf,
    pub kind: Kind,
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

fn open_path(dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Walks the absolute path `path` (see the module docs). `follow`: a last
/// component that is a link is followed (as `open` and `stat` do), else
/// it is the result itself (as `lstat` does).
pub fn resolve(path: &Path, follow: bool) -> io::Result<Resolved> {
    if !path.is_absolute() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a guarded path must be absolute",
        ));
    }
    let root = Arc::new(
        openat(
            rustix::fs::CWD,
            "/",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?,
    );
    // The directories walked so far, each with its real path.
    let mut stack: Vec<(Arc<OwnedFd>, PathBuf)> = vec![(root.clone(), PathBuf::from("/"))];
    // The components still to walk, next first (reversed).
    let mut pending: Vec<OsString> = Vec::new();
    push_components(path, &mut pending);
    let mut links = 0usize;
    // The last component reached and what it is, when the walk ended on
    // something that is not a directory pushed on the stack.
    while let Some(name) = pending.pop() {
        match name.as_bytes() {
            b"/" => {
                stack.truncate(1);
                continue;
            }
            b"." => continue,
            b".." => {
                if stack.len() > 1 {
                    stack.pop();
                }
                continue;
            }
            _ => {}
        }
        let last = pending.is_empty();
        let (dir, dir_real) = match stack.last() {
            Some((d, r)) => (d.clone(), r.clone()),
            None => (root.clone(), PathBuf::from("/")),
        };
        let real = dir_real.join(&name);
        let fd = match open_path(dir.as_fd(), &name) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => {
                if last {
                    return Ok(Resolved {
                        dir: Some(dir),
                        name,
                        real,
                        kind: Kind::Absent,
                    });
                }
                let mut rest = real;
                while let Some(n) = pending.pop() {
                    rest.push(n);
                }
                return Ok(Resolved {
                    dir: None,
                    name: OsString::new(),
                    real: crate::runtime::normalize(&rest),
                    kind: Kind::Missing,
                });
            }
            Err(e) => return Err(errno(e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
        if ft == rustix::fs::FileType::Symlink {
            if last && !follow {
                return Ok(Resolved {
                    dir: Some(dir),
                    name,
                    real,
                    kind: Kind::Link,
                });
            }
            links += 1;
            if links > MAX_LINKS {
                return Err(errno(rustix::io::Errno::LOOP));
            }
            let target = rustix::fs::readlinkat(&fd, "", Vec::new()).map_err(errno)?;
            push_components(
                Path::new(OsStr::from_bytes(target.as_bytes())),
                &mut pending,
            );
            continue;
        }
        if ft == rustix::fs::FileType::Directory {
            if last {
                return Ok(Resolved {
                    dir: Some(dir),
                    name,
                    real,
                    kind: Kind::Dir,
                });
            }
            stack.push((Arc::new(fd), real));
            continue;
        }
        if last {
            return Ok(Resolved {
                dir: Some(dir),
                name,
                real,
                kind: Kind::Other,
            });
        }
        return Err(errno(rustix::io::Errno::NOTDIR));
    }
    // The walk ended on a directory already on the stack (`/`, or a path
    // ending in `.` or `..`): name it from its parent.
    match stack.len() {
        0 | 1 => Ok(Resolved {
            dir: None,
            name: OsString::new(),
            real: PathBuf::from("/"),
            kind: Kind::Dir,
        }),
        _ => {
            let (_, real) = stack.pop().unwrap_or((root.clone(), PathBuf::from("/")));
            let dir = stack.last().map_or(root, |(d, _)| d.clone());
            Ok(Resolved {
                dir: Some(dir),
                name: real
                    .file_name()
                    .map(OsStr::to_os_string)
                    .unwrap_or_default(),
                real,
                kind: Kind::Dir,
            })
        }
    }
}

/// Pushes the components of `p` onto `pending` so that the first is
/// popped first; an absolute `p` starts with `/`, which resets the walk.
fn push_components(p: &Path, pending: &mut Vec<OsString>) {
    let mut parts: Vec<OsString> = Vec::new();
    for c in p.components() {
        match c {
            Component::RootDir => parts.push(OsString::from("/")),
            Component::CurDir => {}
            Component::ParentDir => parts.push(OsString::from("..")),
            Component::Normal(n) => parts.push(n.to_os_string()),
            Component::Prefix(_) => {}
        }
    }
    pending.extend(parts.into_iter().rev());
}

impl Resolved {
    /// Whether something is there.
    pub fn exists(&self) -> bool {
        !matches!(self.kind, Kind::Absent | Kind::Missing)
    }

    fn not_found(&self) -> io::Error {
        io::Error::from(io::ErrorKind::NotFound)
    }

    /// Opens the last component with `flags` (plus `O_NOFOLLOW` and
    /// `O_CLOEXEC`), creating it with `mode` when `flags` asks.
    pub fn open(&self, flags: OFlags, mode: u32) -> io::Result<OwnedFd> {
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(mode);
        match &self.dir {
            Some(d) => openat(d.as_fd(), &self.name, flags, mode).map_err(errno),
            None if self.kind == Kind::Dir => {
                openat(rustix::fs::CWD, "/", flags, mode).map_err(errno)
            }
            None => Err(self.not_found()),
        }
    }

    /// The last component itself, without following it (`O_PATH`): for
    /// its metadata and, for a link, its text.
    pub fn handle(&self) -> io::Result<File> {
        self.open(OFlags::PATH, 0).map(File::from)
    }

    /// The metadata of the last component (of a link itself).
    pub fn metadata(&self) -> io::Result<std::fs::Metadata> {
        if !self.exists() {
            return Err(self.not_found());
        }
        self.handle()?.metadata()
    }

    /// A link's text.
    pub fn link_text(&self) -> io::Result<PathBuf> {
        let h = self.handle()?;
        let t = rustix::fs::readlinkat(&h, "", Vec::new()).map_err(errno)?;
        Ok(PathBuf::from(OsStr::from_bytes(t.as_bytes())))
    }
}

/// Whether an error says the last component became a link after the walk
/// (an `O_NOFOLLOW` open of a link).
pub fn raced(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Walks `path` and runs `op` on the result, walking again (a few times)
/// when `op` fails because the last component became a link meanwhile.
pub fn retry<T>(
    path: &Path,
    follow: bool,
    mut op: impl FnMut(&Resolved) -> Result<T, WalkError>,
) -> Result<T, WalkError> {
    let mut last = None;
    for _ in 0..RETRIES {
        let r = resolve(path, follow).map_err(WalkError::Io)?;
        match op(&r) {
            Err(WalkError::Io(e)) if raced(&e) => last = Some(e),
            other => return other,
        }
    }
    Err(WalkError::Io(
        last.unwrap_or_else(|| errno(rustix::io::Errno::LOOP)),
    ))
}

/// Why a guarded operation failed: the grant refused it, or the operating
/// system did.
#[derive(Debug)]
pub enum WalkError {
    Denied(crate::failure::Failure),
    Io(io::Error),
}

impl From<crate::failure::Failure> for WalkError {
    fn from(f: crate::failure::Failure) -> WalkError {
        WalkError::Denied(f)
    }
}

impl From<io::Error> for WalkError {
    fn from(e: io::Error) -> WalkError {
        WalkError::Io(e)
    }
}

/// A directory's entry names, read through a descriptor of it (opened
/// from the walk, so it is the directory the grant judged).
pub fn read_dir(r: &Resolved) -> io::Result<Vec<OsString>> {
    let fd = r.open(OFlags::RDONLY | OFlags::DIRECTORY, 0)?;
    let mut dir = rustix::fs::Dir::read_from(&fd).map_err(errno)?;
    let mut out = Vec::new();
    for entry in dir.by_ref() {
        let entry = entry.map_err(errno)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        out.push(OsStr::from_bytes(name).to_os_string());
    }
    Ok(out)
}

/// An entry of a directory descriptor, not followed (`O_PATH`).
pub fn entry_handle(dir: &OwnedFd, name: &OsStr) -> io::Result<File> {
    open_path(dir.as_fd(), name).map(File::from).map_err(errno)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_walk_follows_links_to_their_real_path() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/f"), "x").unwrap();
        symlink(root.join("a"), root.join("la")).unwrap();
        symlink("b/f", root.join("a/rel")).unwrap();
        symlink(root.join("nowhere/x"), root.join("dangling")).unwrap();
        let r = resolve(&root.join("la/b/f"), true).unwrap();
        assert_eq!(r.real, root.join("a/b/f"));
        assert_eq!(r.kind, Kind::Other);
        let r = resolve(&root.join("la/rel"), true).unwrap();
        assert_eq!(r.real, root.join("a/b/f"));
        let r = resolve(&root.join("la/rel"), false).unwrap();
        assert_eq!(r.real, root.join("a/rel"));
        assert_eq!(r.kind, Kind::Link);
        // A dangling link is judged at its target, which does not exist.
        let r = resolve(&root.join("dangling"), true).unwrap();
        assert_eq!(r.real, root.join("nowhere/x"));
        assert_eq!(r.kind, Kind::Missing);
        let r = resolve(&root.join("a/b/../b/./f"), true).unwrap();
        assert_eq!(r.real, root.join("a/b/f"));
        let r = resolve(&root.join("a/new"), true).unwrap();
        assert_eq!((r.real.clone(), r.kind), (root.join("a/new"), Kind::Absent));
        let r = resolve(Path::new("/"), true).unwrap();
        assert_eq!((r.real.clone(), r.kind), (PathBuf::from("/"), Kind::Dir));
        symlink("loop", root.join("loop")).unwrap();
        assert!(resolve(&root.join("loop"), true).is_err());
    }

    #[test]
    fn an_open_never_follows_a_link_swapped_in_after_the_walk() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::write(root.join("secret"), "s").unwrap();
        let r = resolve(&root.join("f"), true).unwrap();
        assert_eq!(r.kind, Kind::Absent);
        // The name becomes a dangling link to somewhere else meanwhile.
        symlink(root.join("elsewhere"), root.join("f")).unwrap();
        let e = r.open(OFlags::WRONLY | OFlags::CREATE, 0o644).unwrap_err();
        assert!(raced(&e), "{e}");
        assert!(!root.join("elsewhere").exists());
    }
}
