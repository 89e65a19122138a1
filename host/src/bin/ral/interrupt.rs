//! Ctrl-C as the foreground interrupt (spec §8.10).
//!
//! SIGINT is received by a thread of its own through signal-hook's
//! iterator: the crate's handler only records the signal and wakes that
//! thread, and no code of ours runs in signal context. The thread sets the
//! session's cancel flag through [`CancelHandle::cancel`], which the VM
//! polls (backward jumps, calls, builtin entry, process waits), so the
//! running turn fails with the `interrupted` cause, status 130. A cancel
//! that lands between turns is cleared by the next turn's entry, so an
//! interrupt never reaches a later prompt.
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
use std::thread::JoinHandle;

use ral_host::{CancelHandle, Cause};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP};
use signal_hook::iterator::{Handle, Signals};

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
pub struct Interrupts {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

impl Interrupts {
    /// Watches SIGINT (and, interactively, SIGTSTP) and cancels the running
    /// turn through `cancel`.
    pub fn install(cancel: CancelHandle, profile: Profile) -> io::Result<Interrupts> {
        let mut signals = match profile {
            Profile::Batch { .. } => Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])?,
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
        Ok(Interrupts {
            handle,
            thread: Some(thread),
        })
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
