//! Where bytes go: the VM's stack of IO frames.
//!
//! A run has three standard streams. Their current destinations are the
//! topmost [`IoFrame`] that says something about them: a capture (§7.2)
//! pushes a frame whose standard output is a buffer; a redirect (§7.4)
//! pushes a frame whose streams are open files; a pipeline (§7.1) gives its
//! final stage a frame whose input is the last pipe. A frame says
//! [`Out::Below`] for a stream it leaves alone, and below the bottom frame
//! are the machine's base sinks ([`crate::Vm::stdout`], [`crate::Vm::stderr`],
//! [`crate::Vm::stdin`]).
//!
//! Invariants:
//! - Frames are pushed and popped in LIFO order by the ops that own them,
//!   and failure unwinding truncates the stack to the depth recorded by the
//!   handler it lands on, so a failure can never leave a redirect or a
//!   capture installed.
//! - An atomic `>` redirect writes to a temporary file beside its target;
//!   the target is replaced (by rename) only when its frame is popped
//!   normally. A frame dropped by unwinding removes the temporary file, so
//!   the old file survives a failure intact.
//! - A capture buffer fails, rather than truncates, past [`CAPTURE_LIMIT`].
//!   A capture frame left by a failure or an escape flushes what it holds
//!   to the sink it replaced ([`IoFrame::take_capture`], called by the
//!   unwinder), so a failing captured body loses nothing it wrote (§7.2).
//! - Under an open audit trail a frame also holds a [`Watch`] for each
//!   write it redirects; the runtime observes it when the frame ends
//!   (committed, failed or aborted), never the frame's `Drop`.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::failure::Failure;

/// The most a capture may hold (§7.2).
pub const CAPTURE_LIMIT: usize = 16 << 20;

/// One of the two output streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Out,
    Err,
}

impl Stream {
    fn other(self) -> Stream {
        match self {
            Stream::Out => Stream::Err,
            Stream::Err => Stream::Out,
        }
    }
}

/// Where an output stream of one frame goes.
#[derive(Debug, Default)]
pub enum Out {
    /// Wherever the frame below sends it.
    #[default]
    Below,
    /// Into this buffer (a capture).
    Capture(Vec<u8>),
    /// Into an open file or pipe.
    File(Arc<File>),
    /// Wherever this frame's other stream goes (`2>&1`).
    Other,
}

/// Where standard input comes from in one frame.
#[derive(Debug, Default)]
pub enum In {
    #[default]
    Below,
    File(Arc<File>),
}

/// A file an atomic `>` is writing: `tmp` replaces `target` on commit.
#[derive(Debug)]
pub struct Pending {
    pub tmp: PathBuf,
    pub target: PathBuf,
    /// Under a grant, the directory both live in (the descriptor the
    /// guard's walk reached, [`crate::walk`]) with the temporary's and the
    /// target's names in it: the rename and the clean-up act on that
    /// descriptor, so a directory swapped for a link after the redirect
    /// opened cannot retarget them.
    pub at: Option<(Arc<std::os::fd::OwnedFd>, OsString, OsString)>,
}

impl Pending {
    fn rename(&self) -> std::io::Result<()> {
        match &self.at {
            Some((dir, tmp, target)) => {
                rustix::fs::renameat(&**dir, tmp.as_os_str(), &**dir, target.as_os_str())
                    .map_err(std::io::Error::from)
            }
            None => std::fs::rename(&self.tmp, &self.target),
        }
    }

    fn remove(&self) {
        match &self.at {
            Some((dir, tmp, _)) => {
                let _ = rustix::fs::unlinkat(&**dir, tmp.as_os_str(), rustix::fs::AtFlags::empty());
            }
            None => {
                let _ = std::fs::remove_file(&self.tmp);
            }
        }
    }
}

/// One level of the IO stack.
#[derive(Debug, Default)]
pub struct IoFrame {
    pub out: Out,
    pub err: Out,
    pub input: In,
    /// Atomic writes to commit when the frame is popped normally.
    pub pending: Vec<Pending>,
    /// The writes an open audit trail watches, settled when the frame
    /// ends (§13.3).
    pub watches: Vec<Watch>,
}

/// A redirect's write an open trail is watching.
#[derive(Debug)]
pub struct Watch {
    /// The target as the redirect resolved it.
    pub path: PathBuf,
    pub mode: crate::audit::WriteMode,
    /// An atomic `>` (committed by rename, or aborted).
    pub atomic: bool,
    /// The target is not a file (a device, a fifo), so it has no images.
    pub device: bool,
    pub start: i64,
    pub site: Option<crate::failure::Site>,
    /// The target's content before the write, when it could be kept.
    pub old: Option<Vec<u8>>,
    /// How long the trail was when the redirect opened (a failed commit
    /// is reported on the command observed after it).
    pub trail_mark: usize,
}

impl IoFrame {
    /// A capture frame: standard output into a fresh buffer.
    pub fn capture() -> IoFrame {
        IoFrame {
            out: Out::Capture(Vec::new()),
            err: Out::Below,
            input: In::Below,
            pending: Vec::new(),
            watches: Vec::new(),
        }
    }

    fn stream(&self, s: Stream) -> &Out {
        match s {
            Stream::Out => &self.out,
            Stream::Err => &self.err,
        }
    }

    fn stream_mut(&mut self, s: Stream) -> &mut Out {
        match s {
            Stream::Out => &mut self.out,
            Stream::Err => &mut self.err,
        }
    }

    /// Takes the buffer of stream `s`, if this frame captures it (an
    /// unwinding capture flushes it to the sink below, §7.2).
    pub fn take_capture(&mut self, s: Stream) -> Option<Vec<u8>> {
        match self.stream_mut(s) {
            Out::Capture(buf) => Some(std::mem::take(buf)),
            Out::Below | Out::File(_) | Out::Other => None,
        }
    }

    /// Renames every pending atomic write over its target.
    pub fn commit(&mut self) -> Result<(), Failure> {
        for p in std::mem::take(&mut self.pending) {
            if let Err(e) = p.rename() {
                p.remove();
                return Err(Failure::error(format!(
                    "cannot replace {}: {e}",
                    p.target.display()
                )));
            }
        }
        Ok(())
    }
}

impl Drop for IoFrame {
    fn drop(&mut self) {
        // Not committed: the run failed inside the redirect; the old file
        // stays as it was.
        for p in self.pending.drain(..) {
            p.remove();
        }
    }
}

/// Where a stream resolves to, through the frames.
#[derive(Debug, Clone)]
pub enum Target {
    /// The capture buffer of frame `i` (on stream `Stream`).
    Capture(usize, Stream),
    File(Arc<File>),
    /// The machine's base sink for that stream.
    Base(Stream),
}

/// Resolves stream `s` through `frames`, top down.
pub fn resolve(frames: &[IoFrame], s: Stream) -> Target {
    let mut s = s;
    for (i, f) in frames.iter().enumerate().rev() {
        let mut o = f.stream(s);
        if matches!(o, Out::Other) {
            s = s.other();
            o = f.stream(s);
        }
        match o {
            Out::Below | Out::Other => {}
            Out::Capture(_) => return Target::Capture(i, s),
            Out::File(file) => return Target::File(file.clone()),
        }
    }
    Target::Base(s)
}

/// Whether two resolved streams land in the same place (`2>&1`).
pub fn same_target(a: &Target, b: &Target) -> bool {
    match (a, b) {
        (Target::Capture(i, s), Target::Capture(j, t)) => i == j && s == t,
        (Target::File(x), Target::File(y)) => Arc::ptr_eq(x, y),
        (Target::Base(s), Target::Base(t)) => s == t,
        _ => false,
    }
}

/// The input file in effect, if any frame redirects standard input.
pub fn resolve_input(frames: &[IoFrame]) -> Option<Arc<File>> {
    frames.iter().rev().find_map(|f| match &f.input {
        In::Below => None,
        In::File(file) => Some(file.clone()),
    })
}

/// Appends to capture buffer `(i, s)`, failing past the limit.
pub fn append_capture(
    frames: &mut [IoFrame],
    i: usize,
    s: Stream,
    bytes: &[u8],
) -> Result<(), Failure> {
    match frames.get_mut(i).map(|f| f.stream_mut(s)) {
        Some(Out::Capture(buf)) => {
            if buf.len() + bytes.len() > CAPTURE_LIMIT {
                return Err(Failure::error(format!(
                    "captured output exceeds {} MiB",
                    CAPTURE_LIMIT >> 20
                )));
            }
            buf.extend_from_slice(bytes);
            Ok(())
        }
        _ => Err(Failure::error("capture frame vanished")),
    }
}

/// Writes to an open file, mapping a closed reader to the failure a
/// pipeline forgives in a non-final stage.
pub fn write_file(file: &File, bytes: &[u8]) -> Result<(), Failure> {
    let mut f = file;
    f.write_all(bytes).map_err(write_error)
}

/// The failure for a failed write: a vanished reader is `reader-gone`.
pub fn write_error(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::cancelled(crate::failure::Cause::ReaderGone)
    } else {
        Failure::error(format!("write: {e}"))
    }
}

/// A cloneable, thread-safe byte buffer usable as a [`crate::Stdout::Writer`]
/// (pipeline stages and workers write into one; the owner reads it after).
#[derive(Clone, Debug, Default)]
pub struct SharedBuf(pub Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// Takes the bytes written so far.
    pub fn take(&self) -> Vec<u8> {
        match self.0.lock() {
            Ok(mut g) => std::mem::take(&mut *g),
            Err(p) => std::mem::take(&mut *p.into_inner()),
        }
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock() {
            Ok(mut g) => g.extend_from_slice(buf),
            Err(p) => p.into_inner().extend_from_slice(buf),
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
