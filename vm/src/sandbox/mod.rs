//! The OS sandbox (spec §12.10–§12.11): the second enforcement layer, which
//! confines what a started program does itself.
//!
//! Every external program launched while some capability layer restricts
//! `fs`, `exec` or `net` runs confined by the kernel, and so does
//! everything it starts (the confinement is inherited across `fork` and
//! `exec`):
//!
//! - reads and writes only where the layers allow, symlinks resolved by the
//!   kernel at each access, `deny` carve-outs held, admitted directories
//!   read-only inside a broader `write` ([`plan`]); the system envelope it
//!   needs to start is readable;
//! - executes only what `exec` admits, with the loaders and interpreters
//!   those programs need;
//! - no sockets under `net: false`, and the seccomp deny-set always;
//! - a session of its own (no controlling terminal), no core dumps, every
//!   descriptor above standard error closed at `exec`, and no
//!   loader-injection variables in its environment ([`scrub_env`]).
//!
//! Two levels (spec/capabilities.md section 4): where the kernel lets ral
//! make namespaces ([`namespaces`]), the program runs in new user (unless
//! root), mount, pid, ipc and uts namespaces with a filesystem view built
//! from the grant (`ns.rs`, [`plan::Plan::view`]); beneath it, and alone
//! elsewhere, Landlock, seccomp and `setsid` (`linux.rs`). No external
//! program is involved. The decoded layers are the same
//! ones ral's own checks read ([`crate::caps`]), so both layers judge a
//! path alike. Where the kernel lacks a guarantee a launch needs, the launch
//! is refused with a failure naming it (status 126): nothing runs
//! unconfined.
//!
//! [`prepare`] does everything that reads the filesystem or allocates;
//! [`Sandbox::spawn`] starts the program from a confined thread (or, when
//! ral has a controlling terminal, through `fork` and a `pre_exec` hook
//! that only makes system calls); [`Sandbox::install`] is the hook alone,
//! for a launcher that must `fork` (`detach`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use crate::caps::Layer;
use crate::failure::{Failure, Reason};

#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod ns;
pub mod plan;

#[cfg(target_os = "linux")]
pub use linux::{force_fork_path, kernel, Kernel};

/// One launch's prepared confinement.
pub struct Sandbox {
    #[cfg(target_os = "linux")]
    prepared: linux::Prepared,
    /// What the confinement allows, in a few words, for failure hints.
    summary: Arc<str>,
}

/// Whether a launch under `layers` runs confined.
pub fn confines(layers: &[Arc<Layer>]) -> bool {
    layers.iter().any(|l| l.confines())
}

static FORCE_FLOOR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every confined launch use Landlock and seccomp alone, as on a
/// system without user namespaces, so tests exercise that floor too.
pub fn force_floor(force: bool) {
    FORCE_FLOOR.store(force, std::sync::atomic::Ordering::Relaxed);
}

/// Whether confined launches run in namespaces with a filesystem view
/// (sandbox/ns.rs), rather than under Landlock and seccomp alone.
pub fn namespaces() -> bool {
    #[cfg(target_os = "linux")]
    {
        !FORCE_FLOOR.load(std::sync::atomic::Ordering::Relaxed) && ns::available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Removes the dynamic loader's injection variables (`LD_*`, `DYLD_*`)
/// from a confined child's environment (§12.10).
pub fn scrub_env(env: &mut Vec<(String, String)>) {
    env.retain(|(k, _)| !(k.starts_with("LD_") || k.starts_with("DYLD_")));
}

fn envelope() -> &'static plan::Envelope {
    static ENVELOPE: OnceLock<plan::Envelope> = OnceLock::new();
    ENVELOPE.get_or_init(plan::Envelope::system)
}

/// The loaders every dynamically linked system program needs: those of
/// ral's own executable and of `/bin/sh`.
fn system_loaders() -> &'static [PathBuf] {
    static LOADERS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    LOADERS.get_or_init(|| {
        let mut out = Vec::new();
        for p in ["/proc/self/exe", "/bin/sh"] {
            if let Ok(real) = std::fs::canonicalize(p) {
                plan::start_chain(&real, &mut out);
            }
        }
        out
    })
}

/// The refusal of a launch the kernel cannot confine (status 126).
fn refused(name: &str, why: &str) -> Failure {
    let mut f = Failure::new(
        126,
        format!("cannot confine `{name}`: {why}; ral does not run a program unconfined"),
        Reason::NotRunnable,
    );
    f.cmd = Some(name.into());
    f
}

/// Prepares the confinement for launching `program` (already admitted by
/// ral's own check) as `name` under `layers`; `None` when no layer
/// confines. Refuses (status 126) when the kernel lacks what the layers
/// need.
pub fn prepare(
    layers: &[Arc<Layer>],
    name: &str,
    program: &Path,
) -> Result<Option<Sandbox>, Failure> {
    if !confines(layers) {
        return Ok(None);
    }
    prepare_confined(layers, name, program).map(Some)
}

#[cfg(target_os = "linux")]
fn prepare_confined(layers: &[Arc<Layer>], name: &str, program: &Path) -> Result<Sandbox, Failure> {
    let k = kernel();
    let mut extra = Vec::new();
    if layers.iter().any(|l| l.exec.is_some()) {
        extra.extend(system_loaders().iter().cloned());
        plan::start_chain(&crate::caps::real(program), &mut extra);
        for l in layers {
            if let Some(p) = &l.exec {
                for f in p.admitted_files() {
                    plan::start_chain(f, &mut extra);
                }
            }
        }
    }
    let plan = plan::Plan::new(layers, envelope(), extra);
    if let Some(why) = linux::missing(&plan, k) {
        return Err(refused(name, &format!("this kernel lacks {why}")));
    }
    let namespaces = !FORCE_FLOOR.load(std::sync::atomic::Ordering::Relaxed) && ns::available();
    let mut prepared = linux::prepare(&plan, k, !namespaces).map_err(|why| refused(name, &why))?;
    if namespaces {
        let view = ns::View::new(
            &plan.view(),
            plan.fs,
            plan.net_off,
            linux::proc_rights(&plan, k),
        )
        .map_err(|why| refused(name, &why))?;
        prepared = prepared.with_view(view);
    }
    let layers_words = if namespaces {
        "namespaces with a filesystem view, Landlock and seccomp"
    } else {
        "Landlock and seccomp only: this system does not let ral create the user namespaces \
         the filesystem view needs, so attributes, inotify, SysV IPC and other processes' /proc \
         entries are held by the seccomp deny-set or not at all"
    };
    Ok(Sandbox {
        prepared,
        summary: format!("{}; {layers_words}", describe(layers)).into(),
    })
}

#[cfg(not(target_os = "linux"))]
fn prepare_confined(
    layers: &[Arc<Layer>],
    name: &str,
    _program: &Path,
) -> Result<Sandbox, Failure> {
    let _ = describe(layers);
    Err(refused(
        name,
        "ral has no OS sandbox for this operating system yet",
    ))
}

impl Sandbox {
    /// Starts `cmd` confined, in a process group of its own (a session of
    /// its own when ral has a controlling terminal), and returns what
    /// remains of the sandbox for the failure's hint.
    pub fn spawn(self, cmd: &mut Command) -> (std::io::Result<std::process::Child>, Confined) {
        let confined = Confined {
            summary: self.summary.clone(),
        };
        #[cfg(target_os = "linux")]
        let spawned = linux::spawn(self.prepared, cmd);
        #[cfg(not(target_os = "linux"))]
        let spawned = cmd.spawn();
        (spawned, confined)
    }

    /// Installs the confinement on `cmd` (a `pre_exec` hook) and returns
    /// what remains of it after the launch: the hint for a failure. The
    /// child becomes the leader of a new session, so `cmd` must not also be
    /// given a process group.
    pub fn install(self, cmd: &mut Command) -> Confined {
        #[cfg(target_os = "linux")]
        linux::install(self.prepared, cmd);
        #[cfg(not(target_os = "linux"))]
        let _ = cmd;
        Confined {
            summary: self.summary,
        }
    }

    /// The summary of what the sandbox allows.
    pub fn summary(&self) -> &str {
        &self.summary
    }
}

/// A launched confined program's sandbox, for its failure's hint.
pub struct Confined {
    summary: Arc<str>,
}

impl Confined {
    /// Adds a hint to a confined program's failure: what the sandbox
    /// allows, so a permission error or a refused connection can be read
    /// as the sandbox's doing. A death by `SIGSYS` is the deny-set's.
    pub fn annotate(&self, mut f: Failure) -> Failure {
        let hint = if f.reason == Reason::Signaled(libc::SIGSYS) {
            format!(
                "the OS sandbox killed it for a system call its deny-set refuses (ptrace, bpf, \
                 mount, kernel modules, kexec, keyrings, …); {}",
                self.summary
            )
        } else {
            format!(
                "it ran in the OS sandbox ({}); a \"Permission denied\", \"Operation not \
                 permitted\" or refused connection from it is the sandbox refusing what the \
                 grant does not allow",
                self.summary
            )
        };
        f.hint = Some(hint);
        f
    }
}

/// What a confining stack allows, in a few words: "profile `confined`:
/// reads only /w, /tmp; writes only /w, /tmp; no network".
pub fn describe(layers: &[Arc<Layer>]) -> String {
    fn list(paths: &[PathBuf]) -> String {
        let mut unique: Vec<&PathBuf> = Vec::new();
        for p in paths {
            if !unique.contains(&p) {
                unique.push(p);
            }
        }
        if unique.is_empty() {
            return "nothing".to_owned();
        }
        let mut shown: Vec<String> = unique
            .iter()
            .take(4)
            .map(|p| p.display().to_string())
            .collect();
        if unique.len() > 4 {
            shown.push(format!("{} more", unique.len() - 4));
        }
        shown.join(", ")
    }
    let mut parts = Vec::new();
    for l in layers.iter().filter(|l| l.confines()) {
        let mut dims = Vec::new();
        if let Some(fs) = &l.fs {
            let (read, write) = fs.lists();
            if read != [PathBuf::from("/")] {
                dims.push(format!("reads only under {}", list(read)));
            }
            dims.push(format!("writes only under {}", list(write)));
            if !fs.deny().is_empty() {
                dims.push(format!("nothing under {}", list(fs.deny())));
            }
        }
        if l.exec.is_some() {
            dims.push("runs only the programs its exec map admits".to_owned());
        }
        if l.net == Some(false) {
            dims.push("no network".to_owned());
        }
        let who = match &l.label {
            Some(label) => label.to_string(),
            None => "grant".to_owned(),
        };
        parts.push(format!("{who}: {}", dims.join("; ")));
    }
    parts.join(" | ")
}
