//! Run control: what can stop a request or a tool call from outside.
//!
//! Three sources, checked by polling (the provider's wait loop and the
//! pump's drive loop both look every few milliseconds):
//!
//! - **interrupt** (SIGINT, Ctrl-C): cancels the running request or tool
//!   call. Interactive mode consumes it and keeps the session; headless
//!   mode ends the run (exit 130).
//! - **terminate** (SIGTERM, SIGHUP): ends the run; headless writes its
//!   result with `stop_reason: "interrupted"` (exit 143).
//! - **the wall** (`--max-wall`): a deadline for the whole run (exit 124).
//!
//! Signal handlers only set flags (`signal_hook::flag`), so nothing unsafe
//! runs in signal context.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a run is being stopped, most severe first when several apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGTERM or SIGHUP.
    Terminate,
    /// The whole-run wall.
    Wall,
    /// SIGINT / Ctrl-C.
    Interrupt,
}

impl Stop {
    /// The process exit status a headless run ends with.
    pub fn exit_code(self) -> i32 {
        match self {
            Stop::Terminate => 143,
            Stop::Wall => 124,
            Stop::Interrupt => 130,
        }
    }

    /// The `stop_reason` of the headless result.
    pub fn stop_reason(self) -> &'static str {
        match self {
            Stop::Terminate | Stop::Interrupt => "interrupted",
            Stop::Wall => "max_wall",
        }
    }
}

/// The shared stop flags and the run's deadline. Cheap to share by
/// reference; the flags are `Arc`s so signal handlers can hold them.
#[derive(Debug, Clone)]
pub struct Control {
    interrupt: Arc<AtomicBool>,
    terminate: Arc<AtomicBool>,
    deadline: Option<Instant>,
}

impl Default for Control {
    fn default() -> Control {
        Control::new(None)
    }
}

impl Control {
    /// Flags all clear; `wall` from now, if given.
    pub fn new(wall: Option<Duration>) -> Control {
        Control {
            interrupt: Arc::new(AtomicBool::new(false)),
            terminate: Arc::new(AtomicBool::new(false)),
            deadline: wall.and_then(|w| Instant::now().checked_add(w)),
        }
    }

    /// Routes SIGINT to the interrupt flag and SIGTERM/SIGHUP to the
    /// terminate flag (their default actions no longer kill the process).
    pub fn install_signal_handlers(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        signal_hook::flag::register(SIGINT, self.interrupt.clone())?;
        signal_hook::flag::register(SIGTERM, self.terminate.clone())?;
        signal_hook::flag::register(SIGHUP, self.terminate.clone())?;
        Ok(())
    }

    /// The most severe stop in force, if any.
    pub fn stop(&self) -> Option<Stop> {
        if self.terminate.load(Ordering::SeqCst) {
            Some(Stop::Terminate)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(Stop::Wall)
        } else if self.interrupt.load(Ordering::SeqCst) {
            Some(Stop::Interrupt)
        } else {
            None
        }
    }

    /// Clears a pending interrupt; whether there was one. Interactive mode
    /// calls this once an interrupt has done its work, so the session
    /// continues.
    pub fn take_interrupt(&self) -> bool {
        self.interrupt.swap(false, Ordering::SeqCst)
    }

    /// Raises the interrupt flag (what SIGINT does; tests use it).
    pub fn interrupt(&self) {
        self.interrupt.store(true, Ordering::SeqCst);
    }

    /// Raises the terminate flag (what SIGTERM does).
    pub fn terminate(&self) {
        self.terminate.store(true, Ordering::SeqCst);
    }

    /// The run's deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left before the wall (`None`: no wall).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_orders_the_stops() {
        let c = Control::new(None);
        assert_eq!(c.stop(), None);
        c.interrupt();
        assert_eq!(c.stop(), Some(Stop::Interrupt));
        c.terminate();
        assert_eq!(c.stop(), Some(Stop::Terminate));
        assert!(c.take_interrupt());
        assert!(!c.take_interrupt());
    }

    #[test]
    fn a_passed_wall_stops() {
        let c = Control::new(Some(Duration::ZERO));
        assert_eq!(c.stop(), Some(Stop::Wall));
        assert_eq!(Stop::Wall.exit_code(), 124);
        assert_eq!(c.remaining(), Some(Duration::ZERO));
    }
}
