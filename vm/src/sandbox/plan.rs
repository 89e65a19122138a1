//! The projection of a capability stack onto the file hierarchy: which
//! rights a confined child has at each path, and the smallest set of
//! Landlock-style rules ("these rights beneath this path") that gives
//! exactly those rights.
//!
//! The verdict at a path is read from the same decoded layers and the same
//! functions ral's own checks use ([`caps::fs_verdict`],
//! [`caps::exec_verdict`], [`caps::admitted_dirs`]), plus the system
//! envelope a confined program needs to start at all (§12.11: the loader,
//! libraries, the files under `/etc` that linking, name resolution and user
//! lookup read, `/proc`, the discard device).
//!
//! # From verdicts to rules
//!
//! A rule grants its rights to a whole subtree and rules only add, so a
//! region with a hole (a `deny` inside a `read` prefix, an admitted
//! directory kept read-only inside a `write` prefix, a vetoed program name
//! inside an admitted directory) cannot be one rule. The verdict changes
//! only at *boundaries*: the paths some layer names, the envelope's paths,
//! the admitted directories. [`Plan::rules`] walks from `/` towards every
//! boundary: at each directory it grants the rights that hold everywhere
//! beneath it (its own verdict met with every boundary's below it); where a
//! right must be withheld somewhere below, it lists the directory and grants
//! each entry that holds no boundary the rest of the directory's verdict,
//! and descends into the entries that do. Directories on the way to a hole
//! can therefore be traversed and their other entries used, but not listed,
//! and a name created there later gets only what the directory grants
//! everywhere (spec/capabilities.md). A vetoed name is found by listing each
//! admitted directory, bounded by [`ENTRY_BUDGET`].
//!
//! Paths that do not exist at launch are not boundaries (nothing can be
//! granted on them), except a `deny` naming one: it is a hole like any
//! other, so the directories on its way grant their existing entries their
//! rights and keep for themselves only what holds everywhere beneath,
//! which leaves out creating entries: the denied name cannot be made
//! (spec/capabilities.md section 6, where this departs from §12.3's
//! "held by ral's own check alone").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::caps::{self, byte_order, same, under, FsOp, Layer};

/// Rights, as a small bit set.
pub type Rights = u8;
/// Read files and list directories.
pub const READ: Rights = 1;
/// Write, create, remove, rename, truncate.
pub const WRITE: Rights = 2;
/// Execute a file.
pub const EXEC: Rights = 4;

/// The most directory entries one launch may list to place its rules.
pub const ENTRY_BUDGET: usize = 50_000;

/// One rule: `rights` beneath `path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub path: PathBuf,
    pub rights: Rights,
    pub is_dir: bool,
}

/// Why the rules could not be built; the launch is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A path on the way to a granted one is now a symbolic link.
    Link(PathBuf),
    /// Holding the grant needs listing more than [`ENTRY_BUDGET`] entries.
    TooLarge(PathBuf),
    /// A directory on the way could not be listed.
    Unreadable(PathBuf, String),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::Link(p) => write!(
                f,
                "{} became a symbolic link after the grant was read, so the paths beneath it \
                 are not the ones the grant named",
                p.display()
            ),
            PlanError::TooLarge(p) => write!(
                f,
                "holding a vetoed program name inside {} needs listing more than {ENTRY_BUDGET} \
                 entries; admit narrower directories",
                p.display()
            ),
            PlanError::Unreadable(p, e) => write!(f, "cannot list {}: {e}", p.display()),
        }
    }
}

/// The paths a confined program needs to start at all, when `fs` is
/// restricted (§12.11). Read-only unless listed in `read_write`.
#[derive(Clone, Debug, Default)]
pub struct Envelope {
    pub read: Vec<PathBuf>,
    pub read_write: Vec<PathBuf>,
    /// Which entries are directories, and every directory above an entry
    /// (real paths all). The envelope's paths are the system's own, looked
    /// at once per process rather than on every launch.
    dirs: Vec<PathBuf>,
}

impl Envelope {
    /// Whether `p` is one of the envelope's entries.
    fn has(&self, p: &Path) -> bool {
        let find = |list: &[PathBuf]| list.binary_search_by(|e| byte_order(e, p)).is_ok();
        find(&self.read) || find(&self.read_write)
    }

    /// Whether `p` is an envelope directory or a directory above an entry.
    fn is_dir(&self, p: &Path) -> bool {
        self.dirs.binary_search_by(|e| byte_order(e, p)).is_ok()
    }

    /// The system envelope, real paths of the entries that exist.
    pub fn system() -> Envelope {
        const READ: &[&str] = &[
            "/bin",
            "/sbin",
            "/usr",
            "/lib",
            "/lib32",
            "/lib64",
            "/libx32",
            // Dynamic linking.
            "/etc/ld.so.cache",
            "/etc/ld.so.conf",
            "/etc/ld.so.conf.d",
            // Name resolution.
            "/etc/nsswitch.conf",
            "/etc/host.conf",
            "/etc/hosts",
            "/etc/resolv.conf",
            "/etc/gai.conf",
            "/etc/services",
            "/etc/protocols",
            // Certificates, for TLS clients (not the private keys beside
            // them).
            "/etc/ssl/certs",
            "/etc/ssl/openssl.cnf",
            "/etc/ca-certificates",
            "/etc/pki/ca-trust",
            "/etc/pki/tls/certs",
            // User lookup, time zone, locale.
            "/etc/passwd",
            "/etc/group",
            "/etc/localtime",
            "/etc/timezone",
            "/etc/locale.alias",
            // Toolchain resolution (Debian's `cc`, `python3`, …).
            "/etc/alternatives",
            // What sizes a program.
            "/sys/devices/system/cpu",
            "/sys/kernel/mm/transparent_hugepage",
            "/proc",
            "/dev/zero",
            "/dev/random",
            "/dev/urandom",
        ];
        const READ_WRITE: &[&str] = &["/dev/null", "/dev/full"];
        let resolve = |list: &[&str]| -> Vec<PathBuf> {
            let mut out: Vec<PathBuf> = list
                .iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect();
            out.sort_by(|a, b| byte_order(a, b));
            out.dedup_by(|a, b| same(a, b));
            out
        };
        let read = resolve(READ);
        let read_write = resolve(READ_WRITE);
        let mut dirs: Vec<PathBuf> = read
            .iter()
            .chain(read_write.iter())
            .filter(|p| p.is_dir())
            .cloned()
            .collect();
        for p in read.iter().chain(read_write.iter()) {
            let mut up = p.parent();
            while let Some(d) = up {
                dirs.push(d.to_path_buf());
                up = d.parent();
            }
        }
        dirs.sort_by(|a, b| byte_order(a, b));
        dirs.dedup_by(|a, b| same(a, b));
        Envelope {
            read,
            read_write,
            dirs,
        }
    }
}

/// The projection of one launch's capability stack.
pub struct Plan<'l> {
    layers: &'l [Arc<Layer>],
    admitted: Vec<&'l Path>,
    /// Some layer restricts `fs` / `exec`.
    pub fs: bool,
    pub exec: bool,
    /// Some layer says `net: false`.
    pub net_off: bool,
    vetoes: bool,
    envelope: &'l Envelope,
    /// Files that must stay executable for admitted programs to start:
    /// their dynamic loaders and script interpreters (real paths).
    extra_exec: Vec<PathBuf>,
}

impl<'l> Plan<'l> {
    /// The plan for `layers`; `extra_exec` lists the loaders and
    /// interpreters admitted programs need.
    pub fn new(layers: &'l [Arc<Layer>], envelope: &'l Envelope, extra_exec: Vec<PathBuf>) -> Self {
        let exec = layers.iter().any(|l| l.exec.is_some());
        Plan {
            layers,
            admitted: if exec {
                caps::admitted_dirs(layers)
            } else {
                Vec::new()
            },
            fs: layers.iter().any(|l| l.fs.is_some()),
            exec,
            net_off: layers.iter().any(|l| l.net == Some(false)),
            vetoes: layers
                .iter()
                .filter_map(|l| l.exec.as_ref())
                .any(caps::ExecPolicy::has_vetoes),
            envelope,
            extra_exec,
        }
    }

    /// Whether the file hierarchy is restricted at all.
    pub fn restricts_files(&self) -> bool {
        self.fs || self.exec
    }

    /// The rights a child has at `p` (a real path; `is_dir` says whether
    /// it is a directory, for name vetoes, which judge files only).
    pub fn verdict(&self, p: &Path, is_dir: bool) -> Rights {
        let mut r = 0;
        let denied = self.fs
            && self
                .layers
                .iter()
                .filter_map(|l| l.fs.as_ref())
                .any(|fs| fs.deny().iter().any(|d| under(p, d)));
        let exec_ok = self.exec && {
            let fname = if is_dir {
                String::new()
            } else {
                p.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            caps::exec_verdict(self.layers, p, &fname, "", None).is_none()
                || self.extra_exec.iter().any(|x| same(x, p))
        };
        if self.fs && !denied {
            let readable = caps::fs_verdict(self.layers, &self.admitted, FsOp::Read, p).is_none()
                || self.envelope.read.iter().any(|e| under(p, e))
                || self.envelope.read_write.iter().any(|e| same(p, e))
                || exec_ok;
            if readable {
                r |= READ;
            }
            let writable = caps::fs_verdict(self.layers, &self.admitted, FsOp::Write, p).is_none()
                || self.envelope.read_write.iter().any(|e| same(p, e));
            if writable {
                r |= WRITE;
            }
        }
        if exec_ok && !denied {
            r |= EXEC;
        }
        r
    }

    /// Whether `p` is named by some layer's `deny` list.
    fn denied_name(&self, p: &Path) -> bool {
        self.fs
            && self
                .layers
                .iter()
                .filter_map(|l| l.fs.as_ref())
                .any(|fs| fs.deny().iter().any(|d| same(d, p)))
    }

    /// The paths where the verdict may change, existing ones only, each
    /// with whether it is a directory and its verdict (computed once: the
    /// walk meets every boundary's verdict at each ancestor).
    fn boundaries(&self) -> Vec<Bound> {
        let mut paths: Vec<&Path> = Vec::new();
        if self.fs {
            for l in self.layers {
                if let Some(fs) = &l.fs {
                    paths.extend(fs.prefixes());
                }
            }
            paths.extend(self.envelope.read.iter().map(PathBuf::as_path));
            paths.extend(self.envelope.read_write.iter().map(PathBuf::as_path));
            paths.extend(self.admitted.iter().copied());
        }
        if self.exec {
            for l in self.layers {
                if let Some(p) = &l.exec {
                    paths.extend(p.admitted_files());
                    paths.extend(p.denied_files());
                    paths.extend(p.dirs().iter().map(|(d, _)| d.as_path()));
                }
            }
            paths.extend(self.extra_exec.iter().map(PathBuf::as_path));
        }
        paths.sort_by(|a, b| byte_order(a, b));
        paths.dedup_by(|a, b| same(a, b));
        let mut out: Vec<Bound> = Vec::with_capacity(paths.len());
        for p in paths {
            let is_dir = if self.envelope.has(p) {
                self.envelope.is_dir(p)
            } else {
                match std::fs::symlink_metadata(p) {
                    Ok(md) => md.is_dir(),
                    // A `deny` naming a path absent at launch is still a
                    // hole: the walk withholds from the directories on its
                    // way the rights to create entries (and so to create
                    // the denied name), granting their existing entries the
                    // rest, so the kernel holds it from the start.
                    Err(_) if self.denied_name(p) => true,
                    Err(_) => continue,
                }
            };
            let rights = self.verdict(p, is_dir);
            // A boundary whose verdict is its enclosing cell's changes
            // nothing: drop it, so a broad grant is not walked towards
            // every envelope entry. `out` is sorted, so the nearest kept
            // ancestor is the last kept entry above `p`.
            let enclosing = out
                .iter()
                .rev()
                .find(|b| under(p, &b.path))
                .map_or_else(|| self.verdict(Path::new("/"), true), |b| b.rights);
            if rights == enclosing && is_dir {
                continue;
            }
            out.push(Bound {
                path: p.to_path_buf(),
                rights,
            });
        }
        out
    }

    /// Whether the subtree at a node with verdict `v` and boundaries
    /// `below` holds files a name veto may refuse.
    fn sensitive(&self, v: Rights, below: &[&Bound]) -> bool {
        self.exec && self.vetoes && (v & EXEC != 0 || below.iter().any(|b| b.rights & EXEC != 0))
    }

    /// The rules (see the module docs).
    pub fn rules(&self) -> Result<Vec<Rule>, PlanError> {
        let boundaries = self.boundaries();
        let all: Vec<&Bound> = boundaries.iter().collect();
        let mut out = Vec::new();
        let mut budget = ENTRY_BUDGET;
        self.walk(Path::new("/"), true, &all, 0, &mut out, &mut budget)?;
        Ok(out)
    }

    fn push(out: &mut Vec<Rule>, path: &Path, rights: Rights, is_dir: bool) {
        if rights != 0 {
            out.push(Rule {
                path: path.to_path_buf(),
                rights,
                is_dir,
            });
        }
    }

    /// Places the rules for the subtree at `node`, whose ancestors already
    /// grant `inh`; `below` are the boundaries at or under `node`.
    fn walk(
        &self,
        node: &Path,
        is_dir: bool,
        below: &[&Bound],
        inh: Rights,
        out: &mut Vec<Rule>,
        budget: &mut usize,
    ) -> Result<(), PlanError> {
        let v = match below.iter().find(|b| same(&b.path, node)) {
            Some(b) => b.rights,
            None => self.verdict(node, is_dir),
        };
        if !is_dir {
            Self::push(out, node, v & !inh, false);
            return Ok(());
        }
        let strictly: Vec<&Bound> = below
            .iter()
            .copied()
            .filter(|b| !same(&b.path, node) && under(&b.path, node))
            .collect();
        let sensitive = self.sensitive(v, &strictly);
        // The rights that hold everywhere beneath `node`.
        let mut m = v;
        for b in &strictly {
            m &= b.rights;
        }
        if sensitive {
            m &= !EXEC;
        }
        Self::push(out, node, m & !inh, true);
        let inh = inh | m;
        let extra = v & !inh;
        if extra == 0 && !sensitive {
            // Nothing to withhold here: visit only the entries on the way
            // to a boundary, named by the boundaries themselves.
            let mut children: Vec<PathBuf> = strictly
                .iter()
                .filter_map(|b| {
                    let rest = b.path.strip_prefix(node).ok()?;
                    let first = rest.components().next()?;
                    Some(node.join(first))
                })
                .collect();
            children.sort_by(|a, b| byte_order(a, b));
            children.dedup_by(|a, b| same(a, b));
            for child in children {
                let child_is_dir = if self.envelope.is_dir(&child) {
                    true
                } else if self.envelope.has(&child) {
                    false
                } else {
                    let Ok(md) = std::fs::symlink_metadata(&child) else {
                        continue;
                    };
                    if md.file_type().is_symlink() {
                        return Err(PlanError::Link(child));
                    }
                    md.is_dir()
                };
                let cb: Vec<&Bound> = strictly
                    .iter()
                    .copied()
                    .filter(|b| under(&b.path, &child))
                    .collect();
                self.walk(&child, child_is_dir, &cb, inh, out, budget)?;
            }
            return Ok(());
        }
        let entries = std::fs::read_dir(node)
            .map_err(|e| PlanError::Unreadable(node.to_path_buf(), e.to_string()))?;
        for entry in entries {
            let entry =
                entry.map_err(|e| PlanError::Unreadable(node.to_path_buf(), e.to_string()))?;
            *budget = budget
                .checked_sub(1)
                .ok_or_else(|| PlanError::TooLarge(node.to_path_buf()))?;
            let child = node.join(entry.file_name());
            let Ok(ft) = entry.file_type() else { continue };
            let cb: Vec<&Bound> = strictly
                .iter()
                .copied()
                .filter(|b| under(&b.path, &child))
                .collect();
            if ft.is_symlink() {
                // A link's target is judged at its own path; a boundary
                // reached through a link means the tree changed.
                if !cb.is_empty() {
                    return Err(PlanError::Link(child));
                }
                continue;
            }
            if !cb.is_empty() || (sensitive && ft.is_dir()) {
                self.walk(&child, ft.is_dir(), &cb, inh, out, budget)?;
            } else if sensitive {
                Self::push(out, &child, self.verdict(&child, false) & !inh, false);
            } else {
                Self::push(out, &child, extra, ft.is_dir());
            }
        }
        Ok(())
    }
}

/// One mount of a launch's filesystem view (the namespace layer,
/// `sandbox/ns.rs`): the host path bound at the same path inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewEntry {
    pub path: PathBuf,
    pub is_dir: bool,
    pub access: ViewAccess,
    /// Whether files beneath may be executed or mapped executable.
    pub exec: bool,
}

/// How a [`ViewEntry`] is mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewAccess {
    ReadOnly,
    ReadWrite,
    /// Hidden: an empty read-only mount over a `deny` carve-out.
    Masked,
}

/// The directories shared libraries live in: mapped executable by every
/// dynamically linked program, so they stay executable in a view that
/// makes everything else `noexec` (real paths).
const LIBRARY_DIRS: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libx32",
    "/usr/local/lib",
];

impl Plan<'_> {
    /// The mounts of the filesystem view of a launch under this plan,
    /// sorted so that a path comes before everything beneath it.
    ///
    /// Under a restricted `fs` the view shows only what the child may
    /// use: every existing path some layer, the envelope or the `exec`
    /// map names, whose verdict is not empty, bound read-only unless the
    /// verdict includes writing; a nested path whose verdict differs from
    /// its nearest shown ancestor's is a mount of its own, so the
    /// admitted-directory rule holds in the mount table too; existing
    /// `deny` carve-outs are masked. Without a restricted `fs`, the view
    /// is the whole hierarchy, writable. Under a restricted `exec`
    /// everything is `noexec` except the admitted files and directories,
    /// the loaders and interpreters they need, and the library
    /// directories, so the explicit loader (`ld.so FILE`) and
    /// `LD_PRELOAD` cannot map an unadmitted file executable. The view is
    /// a superset of what Landlock allows; Landlock narrows reads and
    /// writes within it.
    pub fn view(&self) -> Vec<ViewEntry> {
        let mut out: Vec<ViewEntry> = Vec::new();
        if !self.fs {
            out.push(ViewEntry {
                path: PathBuf::from("/"),
                is_dir: true,
                access: ViewAccess::ReadWrite,
                exec: !self.exec,
            });
        }
        let mut paths: Vec<PathBuf> = Vec::new();
        if self.fs {
            for l in self.layers {
                if let Some(fs) = &l.fs {
                    let (r, w) = fs.lists();
                    paths.extend(r.iter().cloned());
                    paths.extend(w.iter().cloned());
                }
            }
            paths.extend(self.envelope.read.iter().cloned());
            paths.extend(self.envelope.read_write.iter().cloned());
            paths.extend(self.admitted.iter().map(|p| p.to_path_buf()));
        }
        if self.exec {
            for l in self.layers {
                if let Some(p) = &l.exec {
                    paths.extend(p.admitted_files().map(Path::to_path_buf));
                    paths.extend(p.dirs().iter().filter(|(_, a)| *a).map(|(d, _)| d.clone()));
                }
            }
            paths.extend(self.extra_exec.iter().cloned());
            paths.extend(LIBRARY_DIRS.iter().map(|d| caps::real(Path::new(d))));
        }
        paths.sort_by(|a, b| byte_order(a, b));
        paths.dedup_by(|a, b| same(a, b));
        for p in paths {
            // /proc and /dev are the view's own.
            if under(&p, Path::new("/proc")) || under(&p, Path::new("/dev")) {
                continue;
            }
            let Ok(md) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if md.file_type().is_symlink() {
                continue;
            }
            let is_dir = md.is_dir();
            let v = if self.fs {
                self.verdict(&p, is_dir)
            } else {
                READ | WRITE
                    | if self.exec {
                        self.verdict(&p, is_dir) & EXEC
                    } else {
                        EXEC
                    }
            };
            let library = self.exec
                && is_dir
                && LIBRARY_DIRS
                    .iter()
                    .any(|d| same(&caps::real(Path::new(d)), &p));
            let access = if v & WRITE != 0 {
                ViewAccess::ReadWrite
            } else {
                ViewAccess::ReadOnly
            };
            let exec = !self.exec || v & EXEC != 0 || library;
            if v & (READ | WRITE | EXEC) == 0 && !library {
                continue;
            }
            let entry = ViewEntry {
                path: p,
                is_dir,
                access,
                exec,
            };
            // Covered by its nearest shown ancestor with the same mount.
            let enclosing = out.iter().rev().find(|e| under(&entry.path, &e.path));
            if let Some(e) = enclosing {
                if e.is_dir && e.access == entry.access && e.exec == entry.exec {
                    continue;
                }
            }
            out.push(entry);
        }
        if self.exec && self.vetoes {
            // A vetoed name inside an admitted directory is made `noexec`
            // on its own, so the explicit loader cannot map it either.
            let mut budget = ENTRY_BUDGET;
            let dirs: Vec<(PathBuf, ViewAccess)> = out
                .iter()
                .filter(|e| e.is_dir && e.exec)
                .map(|e| (e.path.clone(), e.access))
                .collect();
            let mut vetoed = Vec::new();
            for (d, access) in dirs {
                let Ok(rd) = std::fs::read_dir(&d) else {
                    continue;
                };
                for e in rd.flatten() {
                    budget = budget.saturating_sub(1);
                    if budget == 0 {
                        break;
                    }
                    if !e.file_type().is_ok_and(|t| t.is_file()) {
                        continue;
                    }
                    let p = e.path();
                    if self.verdict(&p, false) & EXEC == 0
                        && self.admitted.iter().any(|a| under(&p, a))
                    {
                        vetoed.push(ViewEntry {
                            path: p,
                            is_dir: false,
                            access,
                            exec: false,
                        });
                    }
                }
            }
            out.extend(vetoed);
        }
        if self.fs {
            for l in self.layers {
                let Some(fs) = &l.fs else { continue };
                for d in fs.deny() {
                    let Ok(md) = std::fs::symlink_metadata(d) else {
                        continue;
                    };
                    if md.file_type().is_symlink() {
                        continue;
                    }
                    // Only what some shown mount would otherwise reveal.
                    if !out.iter().any(|e| under(d, &e.path)) {
                        continue;
                    }
                    out.retain(|e| !same(&e.path, d));
                    out.push(ViewEntry {
                        path: d.clone(),
                        is_dir: md.is_dir(),
                        access: ViewAccess::Masked,
                        exec: false,
                    });
                }
            }
        }
        out.sort_by(|a, b| byte_order(&a.path, &b.path));
        out.dedup_by(|a, b| same(&a.path, &b.path));
        out
    }
}

/// A boundary: an existing path where the verdict may change.
struct Bound {
    path: PathBuf,
    rights: Rights,
}

/// The dynamic loader an ELF file asks for (`PT_INTERP`), for 64-bit and
/// 32-bit little-endian files; `None` for anything else.
pub fn elf_interpreter(path: &Path) -> Option<PathBuf> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut hdr = [0u8; 64];
    f.read_exact(&mut hdr[..52]).ok()?;
    if hdr.get(..4)? != b"\x7fELF" || *hdr.get(5)? != 1 {
        return None;
    }
    let wide = *hdr.get(4)? == 2;
    let u16_at = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from(u16::from_le_bytes(
            b.get(o..o + 2)?.try_into().ok()?,
        )))
    };
    let u32_at = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from(u32::from_le_bytes(
            b.get(o..o + 4)?.try_into().ok()?,
        )))
    };
    let u64_at = |b: &[u8], o: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?))
    };
    let (phoff, phentsize, phnum) = if wide {
        f.read_exact(&mut hdr[52..64]).ok()?;
        (u64_at(&hdr, 32)?, u16_at(&hdr, 54)?, u16_at(&hdr, 56)?)
    } else {
        (u32_at(&hdr, 28)?, u16_at(&hdr, 42)?, u16_at(&hdr, 44)?)
    };
    if phnum > 256 || !(32..=64).contains(&phentsize) {
        return None;
    }
    let mut ph = vec![0u8; usize::try_from(phentsize * phnum).ok()?];
    f.seek(SeekFrom::Start(phoff)).ok()?;
    f.read_exact(&mut ph).ok()?;
    let step = usize::try_from(phentsize).ok()?;
    for e in ph.chunks(step) {
        if u32_at(e, 0)? != 3 {
            continue; // not PT_INTERP
        }
        let (off, size) = if wide {
            (u64_at(e, 8)?, u64_at(e, 32)?)
        } else {
            (u32_at(e, 4)?, u32_at(e, 16)?)
        };
        if size == 0 || size > 4096 {
            return None;
        }
        let mut name = vec![0u8; usize::try_from(size).ok()?];
        f.seek(SeekFrom::Start(off)).ok()?;
        f.read_exact(&mut name).ok()?;
        let end = name.iter().position(|b| *b == 0).unwrap_or(name.len());
        let text = std::str::from_utf8(name.get(..end)?).ok()?;
        return Some(PathBuf::from(text));
    }
    None
}

/// The interpreter a `#!` script names, when it names an absolute path.
pub fn shebang(path: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut head = [0u8; 256];
    let n = f.read(&mut head).ok()?;
    let head = head.get(..n)?;
    let rest = head.strip_prefix(b"#!")?;
    let line = rest.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim();
    let interp = line.split_whitespace().next()?;
    interp.starts_with('/').then(|| PathBuf::from(interp))
}

/// The files that must stay executable for `file` to start: its script
/// interpreter and that interpreter's loader, or its own loader (real
/// paths).
pub fn start_chain(file: &Path, out: &mut Vec<PathBuf>) {
    let add = |p: PathBuf, out: &mut Vec<PathBuf>| {
        let r = caps::real(&p);
        if !out.contains(&r) {
            out.push(r);
        }
    };
    if let Some(interp) = shebang(file) {
        if let Some(loader) = elf_interpreter(&interp) {
            add(loader, out);
        }
        add(interp, out);
    } else if let Some(loader) = elf_interpreter(file) {
        add(loader, out);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::caps::{decode, DecodeEnv};
    use crate::value::{Record, Value};

    fn rec(entries: Vec<(&str, Value)>) -> Value {
        Value::record(Record::from_entries(
            entries
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        ))
    }

    fn strs(xs: &[String]) -> Value {
        Value::list(xs.iter().map(|s| Value::str(s.as_str())).collect())
    }

    fn layer(v: Value, cwd: &Path) -> Arc<Layer> {
        let var = |k: &str| std::env::var(k).ok();
        Arc::new(decode(&v, &DecodeEnv { cwd, var: &var }).unwrap())
    }

    /// Every path of a small tree gets exactly its verdict from the rules.
    fn assert_exact(plan: &Plan<'_>, root: &Path) {
        let rules = plan.rules().unwrap();
        let granted = |p: &Path| -> Rights {
            rules
                .iter()
                .filter(|r| p.starts_with(&r.path))
                .fold(0, |acc, r| acc | r.rights)
        };
        let mut stack = vec![root.to_path_buf()];
        while let Some(p) = stack.pop() {
            let md = std::fs::symlink_metadata(&p).unwrap();
            if md.file_type().is_symlink() {
                continue;
            }
            let want = plan.verdict(&p, md.is_dir());
            let got = granted(&p);
            // A directory's own entry-creating rights may be withheld when a
            // hole lies beneath it; every right granted must be allowed.
            assert_eq!(
                got & !want,
                0,
                "{} granted {got} beyond {want}",
                p.display()
            );
            if !md.is_dir() {
                assert_eq!(got, want, "{} granted {got}, verdict {want}", p.display());
            }
            if md.is_dir() {
                for e in std::fs::read_dir(&p).unwrap() {
                    stack.push(e.unwrap().path());
                }
            }
        }
    }

    #[test]
    fn a_deny_inside_a_read_prefix_is_held_by_its_siblings() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["a/secret/deep", "a/open", "b"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in ["a/secret/deep/k", "a/open/x", "a/y", "b/z"] {
            std::fs::write(root.join(f), "t").unwrap();
        }
        let r = root.display().to_string();
        let l = layer(
            rec(vec![(
                "fs",
                rec(vec![
                    ("read", strs(std::slice::from_ref(&r))),
                    ("write", strs(&[format!("{r}/b")])),
                    ("deny", strs(&[format!("{r}/a/secret")])),
                ]),
            )]),
            &root,
        );
        let layers = vec![l];
        let env = Envelope::default();
        let plan = Plan::new(&layers, &env, Vec::new());
        assert_eq!(plan.verdict(&root.join("a/secret/deep/k"), false), 0);
        assert_eq!(plan.verdict(&root.join("b/z"), false), READ | WRITE);
        assert_exact(&plan, &root);
    }

    #[test]
    fn an_admitted_directory_inside_a_write_prefix_stays_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("tools/cache")).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        std::fs::write(root.join("tools/t"), "#!/bin/sh\n").unwrap();
        let r = root.display().to_string();
        let l = layer(
            rec(vec![
                (
                    "fs",
                    rec(vec![
                        ("read", strs(std::slice::from_ref(&r))),
                        ("write", strs(&[r.clone(), format!("{r}/tools/cache")])),
                    ]),
                ),
                (
                    "exec",
                    rec(vec![(&format!("{r}/tools/"), Value::str("allow"))]),
                ),
            ]),
            &root,
        );
        let layers = vec![l];
        let env = Envelope::default();
        let plan = Plan::new(&layers, &env, Vec::new());
        assert_eq!(plan.verdict(&root.join("tools/t"), false), READ | EXEC);
        assert_eq!(
            plan.verdict(&root.join("tools/cache"), true),
            READ | WRITE | EXEC
        );
        assert_eq!(plan.verdict(&root.join("work"), true), READ | WRITE);
        assert_exact(&plan, &root);
    }

    #[test]
    fn a_vetoed_name_inside_an_admitted_directory_is_not_executable() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("bin/sub")).unwrap();
        for f in ["bin/ok", "bin/BASH", "bin/sub/bash", "bin/sub/fine"] {
            std::fs::write(root.join(f), "x").unwrap();
        }
        let r = root.display().to_string();
        let l = layer(
            rec(vec![(
                "exec",
                rec(vec![
                    (&format!("{r}/bin/"), Value::str("allow")),
                    ("bash", Value::str("deny")),
                ]),
            )]),
            &root,
        );
        let layers = vec![l];
        let env = Envelope::default();
        let plan = Plan::new(&layers, &env, Vec::new());
        assert_eq!(plan.verdict(&root.join("bin/BASH"), false), 0);
        assert_eq!(plan.verdict(&root.join("bin/sub/fine"), false), EXEC);
        assert_exact(&plan, &root);
    }

    #[test]
    fn the_loader_of_an_elf_file_and_a_scripts_interpreter_are_found() {
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let loader = elf_interpreter(&sh);
        assert!(loader.is_some_and(|l| l.is_absolute()), "{sh:?}");
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("s");
        std::fs::write(&script, "#!/bin/sh -e\necho\n").unwrap();
        assert_eq!(shebang(&script), Some(PathBuf::from("/bin/sh")));
        let mut chain = Vec::new();
        start_chain(&script, &mut chain);
        assert!(chain.contains(&sh), "{chain:?}");
        assert_eq!(chain.len(), 2, "{chain:?}");
    }
}
