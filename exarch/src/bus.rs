//! The presentation bus and `pump`, which runs one tool call on a worker.
//!
//! # Completion is a flag the worker sets
//!
//! [`pump`] declares `done: AtomicBool`, runs the work on a
//! `std::thread::scope` worker (so it can borrow `&mut Session`), and the
//! worker stores `done = true` after the work returns *or unwinds*. The
//! driver ([`Drive::drive`], by default [`drive_until_done`]) loops on the
//! event channel with a short timeout, handing events to the UI and
//! polling the stop flags, and returns when it sees `done`. The channel's
//! disconnect means nothing: a detached worker may hold a clone of the
//! event sender forever and the call still completes the moment the work
//! returns. After setting the flag the worker sends one [`Event::Wake`]
//! so the driver notices at once rather than at its next poll; the wake is
//! a hint, the flag is the fact.
//!
//! # Panics
//!
//! The work runs under `catch_unwind`. A caught panic makes `pump` return
//! `Ok(None)`; the caller (`Session::run_turn`) then reconciles the shell
//! from its durable snapshot.
//!
//! No tokio here: the channel is `std::sync::mpsc`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

/// How long the driver waits on the channel before polling the flags.
pub const DRAIN_POLL: Duration = Duration::from_millis(15);

/// What a running call tells the presentation layer.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A structured event the program surfaced (`surface v`), as text.
    Surface(String),
    /// The worker set `done` (a hint to look now).
    Wake,
}

/// The worker's end of the bus. Cloneable; sending never blocks and never
/// fails loudly (a gone driver just drops the event).
#[derive(Clone, Debug)]
pub struct Emitter {
    tx: Sender<Event>,
}

impl Emitter {
    /// Sends an event to the driver.
    pub fn emit(&self, ev: Event) {
        let _ = self.tx.send(ev);
    }

    /// An emitter over an existing sender.
    pub fn from_sender(tx: Sender<Event>) -> Emitter {
        Emitter { tx }
    }

    /// An emitter whose events go nowhere (benches, tests).
    pub fn detached() -> Emitter {
        let (tx, _rx) = mpsc::channel();
        Emitter { tx }
    }
}

/// The driver's side: receives events while the work runs.
pub trait Drive {
    /// One event from the worker.
    fn event(&mut self, _ev: Event) {}
    /// Called every poll while the work runs (stop flags, animation).
    fn tick(&mut self) {}
    /// The work was asked to stop `waited` ago and is still running (a
    /// headless run writes its result and exits rather than hang).
    fn stuck(&mut self, _waited: Duration) {}

    /// Runs the drive loop until `done`; see [`drive_until_done`].
    fn drive(&mut self, rx: &Receiver<Event>, done: &AtomicBool) {
        drive_until_done(self, rx, done);
    }
}

/// A driver that ignores events.
impl Drive for () {}

/// The drive loop: events and ticks until the worker has set `done`, then
/// the events already queued. Channel disconnect is not completion.
pub fn drive_until_done<D: Drive + ?Sized>(d: &mut D, rx: &Receiver<Event>, done: &AtomicBool) {
    let mut connected = true;
    loop {
        if done.load(Ordering::Acquire) {
            break;
        }
        if connected {
            match rx.recv_timeout(DRAIN_POLL) {
                Ok(Event::Wake) => {}
                Ok(ev) => d.event(ev),
                Err(RecvTimeoutError::Timeout) => {}
                // Only a safety net: keep polling the flag.
                Err(RecvTimeoutError::Disconnected) => connected = false,
            }
        } else {
            std::thread::sleep(DRAIN_POLL);
        }
        d.tick();
    }
    while let Ok(ev) = rx.try_recv() {
        if ev != Event::Wake {
            d.event(ev);
        }
    }
}

/// Runs `work` on a scoped worker thread and drives `driver` until the
/// worker sets its completion flag. `Ok(Some(r))`: the work returned `r`;
/// `Ok(None)`: the work panicked (caught); `Err`: the worker thread could
/// not be started.
pub fn pump<R, D, W>(driver: &mut D, work: W) -> std::io::Result<Option<R>>
where
    R: Send,
    D: Drive + ?Sized,
    W: FnOnce(&Emitter) -> R + Send,
{
    let (tx, rx) = mpsc::channel();
    let done = AtomicBool::new(false);
    let emitter = Emitter { tx };
    std::thread::scope(|scope| {
        let done = &done;
        let worker = std::thread::Builder::new()
            .name("exarch-call".to_owned())
            .spawn_scoped(scope, move || {
                let out = catch_unwind(AssertUnwindSafe(|| work(&emitter)));
                done.store(true, Ordering::Release);
                emitter.emit(Event::Wake);
                out.ok()
            })?;
        driver.drive(&rx, done);
        // The flag is set, so the worker has returned or is returning.
        Ok(worker.join().ok().flatten())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[derive(Default)]
    struct Collect(Vec<Event>, usize);

    impl Drive for Collect {
        fn event(&mut self, ev: Event) {
            self.0.push(ev);
        }
        fn tick(&mut self) {
            self.1 += 1;
        }
    }

    #[test]
    fn the_work_value_and_its_events_arrive() {
        let mut c = Collect::default();
        let r = pump(&mut c, |e: &Emitter| {
            e.emit(Event::Surface("a".into()));
            7
        });
        assert_eq!(r.ok().flatten(), Some(7));
        assert_eq!(c.0, vec![Event::Surface("a".into())]);
    }

    #[test]
    fn a_panic_is_caught_and_reported_as_none() {
        let r: std::io::Result<Option<()>> = pump(&mut (), |_: &Emitter| panic!("boom"));
        assert!(matches!(r, Ok(None)));
    }

    #[test]
    fn a_sender_that_outlives_the_work_cannot_hold_completion() {
        // The work hands a clone of its sender to a thread that keeps it
        // alive far longer than the work: completion must not wait for it.
        let (keep_tx, keep_rx) = mpsc::channel::<Emitter>();
        let started = Instant::now();
        let mut c = Collect::default();
        let r = pump(&mut c, move |e: &Emitter| {
            let _ = keep_tx.send(e.clone());
            1
        });
        assert_eq!(r.ok().flatten(), Some(1));
        assert!(started.elapsed() < Duration::from_secs(2));
        // The clone is still alive here.
        let held = keep_rx.recv_timeout(Duration::from_secs(1));
        assert!(held.is_ok());
    }

    #[test]
    fn completion_is_prompt_not_a_poll_period_late() {
        let mut c = Collect::default();
        let started = Instant::now();
        for _ in 0..40 {
            let _ = pump(&mut c, |_: &Emitter| ());
        }
        // 40 calls at one full poll period each would take 600 ms.
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
    }
}
