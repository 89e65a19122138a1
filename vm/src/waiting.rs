//! Reading that watches the cancel flag (spec §8.10).
//!
//! A read of standard input blocks until the writer writes or closes; a
//! program waiting so (`from-line` on a pipe whose writer is silent, `ask`
//! at a terminal) must still end when its run is cancelled, and a signal
//! handler installed with `SA_RESTART` does not interrupt `read(2)`. So
//! every read of a descriptor that can block is preceded by `poll(2)` on
//! it, in slices of [`SLICE_MS`], with a look at the cancel flag between
//! slices; the read itself then does not block (a regular file is always
//! ready). A cancelled wait is the error [`cancelled`], which the caller
//! turns into the run's cancellation.
//!
//! The module's `unsafe` is the one `poll(2)` call, on a descriptor the
//! caller holds open.

#![allow(unsafe_code)]

use std::io::{self, Read};
use std::os::fd::RawFd;
use std::sync::Arc;

use crate::exec::CancelProbe;

/// The longest a wait goes without looking at the cancel flag.
const SLICE_MS: i32 = 50;

/// The message of the error a cancelled wait returns.
const CANCELLED: &str = "the run was cancelled while waiting for input";

/// Waits until `fd` is readable (or at its end, or in error: a read then
/// returns at once), or the run is cancelled: `Err(cancelled())` then.
pub fn wait_readable(fd: RawFd, cancel: &CancelProbe) -> io::Result<()> {
    loop {
        if cancel.is_set() {
            return Err(cancelled());
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one live pollfd for the duration of the call;
        // poll(2) only writes its `revents`.
        let n = unsafe { libc::poll(&mut pfd, 1, SLICE_MS) };
        if n > 0 {
            return Ok(());
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// The error of a wait the cancel flag ended.
pub fn cancelled() -> io::Error {
    io::Error::other(CANCELLED)
}

/// Whether `e` is the error of a cancelled wait.
pub fn is_cancelled(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.to_string() == CANCELLED
}

/// A reader over descriptor `fd` whose every read first waits with
/// [`wait_readable`].
pub struct Polled<R> {
    pub inner: R,
    pub fd: RawFd,
    pub cancel: CancelProbe,
}

impl<R: Read> Read for Polled<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        wait_readable(self.fd, &self.cancel)?;
        self.inner.read(buf)
    }
}

/// A shared open file as a reader (an input redirect or a pipe's read
/// end, which the IO frames hold by `Arc`).
pub struct ArcFile(pub Arc<std::fs::File>);

impl Read for ArcFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        (&*self.0).read(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn a_silent_pipe_waits_until_the_flag_is_set() {
        let (r, _w) = std::io::pipe().unwrap();
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                cancel.store(true, Ordering::Relaxed);
            })
        };
        let start = Instant::now();
        let mut reader = Polled {
            fd: r.as_raw_fd(),
            inner: r,
            cancel: CancelProbe::of_flag(cancel),
        };
        let mut buf = [0u8; 8];
        let e = reader.read(&mut buf).unwrap_err();
        assert!(is_cancelled(&e), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
        setter.join().unwrap();
    }

    #[test]
    fn data_and_the_end_are_read_at_once() {
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"hi").unwrap();
        drop(w);
        let mut reader = Polled {
            fd: r.as_raw_fd(),
            inner: r,
            cancel: CancelProbe::of_flag(Arc::new(AtomicBool::new(false))),
        };
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        assert_eq!(all, b"hi");
    }
}
