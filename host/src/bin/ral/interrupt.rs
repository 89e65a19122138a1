//! Ctrl-C as the foreground interrupt (spec §8.10).
//!
//! A signal sets the session's cancel flag through
//! [`CancelHandle::cancel_with`], which the VM polls (backward jumps,
//! calls, builtin entry, process waits), so the running turn fails with the
//! `interrupted` cause, status 130. A cancel that lands between turns is
//! cleared by the next turn's entry, so an interrupt never reaches a later
//! prompt.
//!
//! The interactive session receives its signals on a thread of its own
//! through signal-hook's iterator (the crate's handler only records the
//! signal and wakes that thread). A batch run starts no thread: its
//! handlers (signal-hook's low-level registration) do only what is safe in
//! signal context — atomic stores, a counter, and at the force-exit count
//! `write(2)` and `_exit(2)` — which keeps a thread, its stack and its
//! teardown out of every short `ral` run.
//!
//! In batch runs SIGTERM and SIGHUP cancel with the `terminated` cause
//! (143) and SIGQUIT with `aborted` (131); the interactive session leaves
//! them at their default dispositions.
//!
//! Batch runs escalate: when cooperative cancellation has not ended the
//! run by the third interrupt, the process exits at once with status 130.
//! The interactive session never force-exits: at the prompt the line editor
//! holds the terminal in raw mode and reads Ctrl-C as a key (it clears the
//! line), and during a run an interrupt cancels that turn only. It also
//! catches SIGTSTP and does nothing with it, so Ctrl-Z never stops the
//! session itself (§15.2: Ctrl-Z has no visible effect); a caught signal
//! is reset to its default in a child at exec, so programs still get it.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use ral_host::{CancelHandle, Cause};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
use signal_hook::iterator::{Handle, Signals};
use signal_hook::SigId;

/// The status a force-exit after repeated interrupts uses (128 + SIGINT).
const INTERRUPTED: i32 = 130;

/// Who is watching: a batch run or the interactive session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// The `n`th interrupt exits the process with status 130.
    Batch { force_exit_at: u32 },
    /// Interrupts cancel the running turn only; SIGTSTP is swallowed.
    Interactive,
}

/// The installed signal watcher. Dropping it stops the thread; the
/// process's SIGINT disposition stays caught (signal-hook does not restore
/// it), which is harmless because the process is about to exit.
pub enum Interrupts {
    /// The interactive session's watcher thread.
    Thread {
        handle: Handle,
        thread: Option<JoinHandle<()>>,
    },
    /// A batch run's handlers.
    Handlers(Vec<SigId>),
}

/// What a batch run prints when the force-exit interrupt arrives.
const FORCE_EXIT_MESSAGE: &[u8] = b"ral: interrupted again; exiting without waiting for cleanup\n";

impl Interrupts {
    /// Watches SIGINT (and, interactively, SIGTSTP; in batch, SIGTERM,
    /// SIGHUP and SIGQUIT) and cancels the running turn through `cancel`.
    pub fn install(cancel: CancelHandle, profile: Profile) -> io::Result<Interrupts> {
        let mut signals = match profile {
            Profile::Batch { force_exit_at } => return Self::handlers(cancel, force_exit_at),
            Profile::Interactive => Signals::new([SIGINT, SIGTSTP])?,
        };
        let handle = signals.handle();
        let thread = std::thread::Builder::new()
            .name("ral-interrupts".to_owned())
            .spawn(move || {
                let mut n: u32 = 0;
                for signal in signals.forever() {
                    // §8.10: Ctrl-C interrupts (130); SIGTERM and SIGHUP
                    // terminate (143); SIGQUIT aborts (131).
                    let cause = match signal {
                        SIGINT => Cause::Interrupted,
                        SIGTERM | SIGHUP => Cause::Terminated,
                        SIGQUIT => Cause::Aborted,
                        _ => continue,
                    };
                    n = n.saturating_add(1);
                    cancel.cancel_with(cause);
                    if matches!(profile, Profile::Batch { force_exit_at } if n >= force_exit_at) {
                        eprintln!("ral: interrupted again; exiting without waiting for cleanup");
                        std::process::exit(INTERRUPTED);
                    }
                }
            })?;
        Ok(Interrupts::Thread {
            handle,
            thread: Some(thread),
        })
    }

    /// A batch run's handlers: each cancels with its cause (§8.10: Ctrl-C
    /// interrupts, 130; SIGTERM and SIGHUP terminate, 143; SIGQUIT aborts,
    /// 131), and the `force_exit_at`th signal ends the process with 130.
    #[allow(unsafe_code)]
    fn handlers(cancel: CancelHandle, force_exit_at: u32) -> io::Result<Interrupts> {
        let count = Arc::new(AtomicU32::new(0));
        let mut ids = Vec::with_capacity(4);
        for (signal, cause) in [
            (SIGINT, Cause::Interrupted),
            (SIGTERM, Cause::Terminated),
            (SIGHUP, Cause::Terminated),
            (SIGQUIT, Cause::Aborted),
        ] {
            let cancel = cancel.clone();
            let count = count.clone();
            let action = move || {
                let n = count.fetch_add(1, Ordering::SeqCst).saturating_add(1);
                cancel.cancel_with(cause);
                if n >= force_exit_at {
                    // SAFETY: write(2) on the standard error descriptor with
                    // a static buffer is async-signal-safe, as the call is.
                    unsafe {
                        libc::write(
                            libc::STDERR_FILENO,
                            FORCE_EXIT_MESSAGE.as_ptr().cast(),
                            FORCE_EXIT_MESSAGE.len(),
                        );
                    }
                    signal_hook::low_level::exit(INTERRUPTED);
                }
            };
            // SAFETY: the action runs in signal context and does only
            // async-signal-safe things: atomic read-modify-writes and
            // stores (the counter, `CancelHandle::cancel_with`), and at the
            // force-exit count write(2) and _exit(2). It allocates, locks
            // and unwinds nothing.
            ids.push(unsafe { signal_hook::low_level::register(signal, action) }?);
        }
        Ok(Interrupts::Handlers(ids))
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        match self {
            Interrupts::Thread { handle, thread } => {
                handle.close();
                if let Some(thread) = thread.take() {
                    let _ = thread.join();
                }
            }
            Interrupts::Handlers(ids) => {
                for id in ids.drain(..) {
                    signal_hook::low_level::unregister(id);
                }
            }
        }
    }
}
