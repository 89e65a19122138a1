//! Cancellation inside a builtin's own work (spec §8.10: the evaluator
//! polls "during collection loops").
//!
//! The VM polls the cancel flag when a builtin is entered; a builtin that
//! can run long polls again while it works, so an interrupt, a signal or
//! a wall ends it within a millisecond or so, not when it is done. Three
//! tools, all counting steps and looking at the flag only every
//! [`POLL_EVERY`]th one, so the look costs nothing measurable:
//!
//! - [`poll_at`] for an ordinary loop over elements (building a range,
//!   walking a list, splitting a string);
//! - [`Pacer`] for work a builtin hands to a pure walker that knows
//!   nothing of the machine (structural equality, the text conversion, the
//!   JSON codec): the walker asks [`Pacer::go_on`] once per step and gives
//!   up when it says no, and [`Pacer::finish`] turns that into the
//!   cancellation;
//! - [`sort_by`] for sorting, which the standard library cannot
//!   interrupt: blocks are sorted whole and then merged with polls.

use std::cmp::Ordering;

use super::Ctx;
use crate::failure::Failure;
use crate::value::Value;

/// Steps between two looks at the cancel flag. A step is one element or
/// one node: even a slow step (a string compared, a record copied) keeps
/// the gap far below a millisecond, and the look is one atomic load.
pub(crate) const POLL_EVERY: usize = 1024;

/// Polls for cancellation on every [`POLL_EVERY`]th step `i` of a loop
/// (step 0 included, so a loop polls before its first element).
#[inline]
pub(crate) fn poll_at(ctx: &mut dyn Ctx, i: usize) -> Result<(), Failure> {
    if i % POLL_EVERY == 0 {
        ctx.poll()
    } else {
        Ok(())
    }
}

/// Cancellation for a pure walker a builtin runs (see the module docs).
pub(crate) struct Pacer<'c> {
    ctx: &'c mut dyn Ctx,
    steps: usize,
    stopped: Option<Failure>,
}

impl<'c> Pacer<'c> {
    pub(crate) fn new(ctx: &'c mut dyn Ctx) -> Pacer<'c> {
        Pacer {
            ctx,
            steps: 0,
            stopped: None,
        }
    }

    /// One step of the walker's work: `false` once the run is cancelled,
    /// and from then on.
    #[inline]
    pub(crate) fn go_on(&mut self) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        self.steps = self.steps.wrapping_add(1);
        if self.steps % POLL_EVERY != 0 {
            return true;
        }
        match self.ctx.poll() {
            Ok(()) => true,
            Err(f) => {
                self.stopped = Some(f);
                false
            }
        }
    }

    /// The walker's result, unless it gave up because the run was
    /// cancelled: then the cancellation, whatever the walker returned.
    pub(crate) fn finish<T, E: Into<Failure>>(self, r: Result<T, E>) -> Result<T, Failure> {
        match self.stopped {
            Some(f) => Err(f),
            None => r.map_err(Into::into),
        }
    }

    /// [`Pacer::finish`] for a walker that says it gave up with `None`.
    pub(crate) fn finish_some<T>(self, r: Option<T>) -> Result<T, Failure> {
        match (self.stopped, r) {
            (Some(f), _) => Err(f),
            (None, Some(v)) => Ok(v),
            // A walker only gives up when asked to.
            (None, None) => Err(Failure::error("a builtin's work stopped without a cause")),
        }
    }
}

/// Bytes of text copied between two polls: a quarter of a megabyte is a
/// few tens of microseconds of copying.
pub(crate) const TEXT_RUN: usize = 256 * 1024;

/// `items` copied, in runs of [`POLL_EVERY`] with a poll before each.
pub(crate) fn copy<T: Clone>(ctx: &mut dyn Ctx, items: &[T]) -> Result<Vec<T>, Failure> {
    let mut out = Vec::with_capacity(items.len());
    for run in items.chunks(POLL_EVERY) {
        ctx.poll()?;
        out.extend_from_slice(run);
    }
    Ok(out)
}

/// Appends `s` to `out` in runs of [`TEXT_RUN`] bytes with a poll before
/// each.
pub(crate) fn push_str(ctx: &mut dyn Ctx, out: &mut String, s: &str) -> Result<(), Failure> {
    let mut rest = s;
    while !rest.is_empty() {
        ctx.poll()?;
        let mut at = rest.len().min(TEXT_RUN);
        while !rest.is_char_boundary(at) {
            at += 1;
        }
        let (run, tail) = rest.split_at(at);
        out.push_str(run);
        rest = tail;
    }
    Ok(())
}

/// Appends `n` copies of `c` to `out`, polling every [`TEXT_RUN`].
pub(crate) fn push_repeated(
    ctx: &mut dyn Ctx,
    out: &mut String,
    c: char,
    n: usize,
) -> Result<(), Failure> {
    let mut left = n;
    while left > 0 {
        ctx.poll()?;
        let run = left.min(TEXT_RUN);
        out.extend(std::iter::repeat_n(c, run));
        left -= run;
    }
    Ok(())
}

/// `s` cut into pieces of about [`TEXT_RUN`] bytes, each ending just
/// after an ASCII space or line feed (or at the end), so that a text
/// transformation applied piece by piece (case mapping, whose final-sigma
/// rule looks at the neighbouring letters) sees the same context as over
/// the whole: nothing on one side of a space is context for the other.
pub(crate) fn pieces(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        // Just after an ASCII byte is always a character boundary.
        let cut = match rest.as_bytes().get(TEXT_RUN..) {
            None => rest.len(),
            Some(tail) => tail
                .iter()
                .position(|&b| b == b' ' || b == b'\n')
                .map_or(rest.len(), |i| TEXT_RUN + i + 1),
        };
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

/// The text conversion of `value` (§4.9) with polls
/// ([`crate::display::write_text_while`]).
pub(crate) fn text_of(ctx: &mut dyn Ctx, value: &Value) -> Result<String, Failure> {
    let mut out = String::new();
    let mut pacer = Pacer::new(ctx);
    let done = crate::display::write_text_while(&mut out, value, &mut || pacer.go_on());
    pacer.finish_some(done)?;
    Ok(out)
}

/// Elements sorted whole before the merges start.
const BLOCK: usize = 4096;

/// The positions `0..n` stably sorted by `cmp` (which compares the
/// elements at two positions), polling for cancellation: blocks of
/// [`BLOCK`] positions are sorted by the standard library, then merged
/// pairwise, bottom up, with a poll every [`POLL_EVERY`] positions merged.
/// The same order as a stable sort, `O(n log n)` comparisons; positions
/// are moved rather than the values, so nothing is cloned or dropped
/// along the way.
pub(crate) fn sort_positions(
    ctx: &mut dyn Ctx,
    n: usize,
    cmp: &dyn Fn(usize, usize) -> Ordering,
) -> Result<Vec<usize>, Failure> {
    ctx.poll()?;
    let mut items: Vec<usize> = (0..n).collect();
    for block in items.chunks_mut(BLOCK) {
        block.sort_by(|a, b| cmp(*a, *b));
        ctx.poll()?;
    }
    let mut width = BLOCK;
    let mut into: Vec<usize> = Vec::with_capacity(n);
    while width < n {
        into.clear();
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j) = (start, mid);
            while i < mid && j < end {
                if (i + j) % POLL_EVERY == 0 {
                    ctx.poll()?;
                }
                // Ties take the left run's element: the sort is stable.
                match (items.get(i), items.get(j)) {
                    (Some(&a), Some(&b)) if cmp(b, a) == Ordering::Less => {
                        into.push(b);
                        j += 1;
                    }
                    (Some(&a), _) => {
                        into.push(a);
                        i += 1;
                    }
                    (None, _) => break,
                }
            }
            into.extend_from_slice(items.get(i..mid).unwrap_or_default());
            into.extend_from_slice(items.get(j..end).unwrap_or_default());
            start = end;
        }
        std::mem::swap(&mut items, &mut into);
        width *= 2;
    }
    Ok(items)
}

/// `items` stably sorted by `cmp` ([`sort_positions`]), each value
/// cloned once into the result.
pub(crate) fn sort_values(
    ctx: &mut dyn Ctx,
    items: &[Value],
    cmp: &dyn Fn(&Value, &Value) -> Ordering,
) -> Result<Vec<Value>, Failure> {
    let order = sort_positions(
        ctx,
        items.len(),
        &|i, j| match (items.get(i), items.get(j)) {
            (Some(a), Some(b)) => cmp(a, b),
            _ => Ordering::Equal,
        },
    )?;
    let mut out = Vec::with_capacity(items.len());
    for (k, i) in order.into_iter().enumerate() {
        poll_at(ctx, k)?;
        out.extend(items.get(i).cloned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure::{Cause, Reason};

    /// A context whose run is cancelled after `left` polls.
    struct Cancelling {
        left: usize,
        polls: usize,
    }

    impl Ctx for Cancelling {
        fn call(&mut self, _: &Value, _: &[Value]) -> Result<Value, Failure> {
            Ok(Value::Unit)
        }
        fn write(&mut self, _: &[u8]) -> Result<(), Failure> {
            Ok(())
        }
        fn poll(&mut self) -> Result<(), Failure> {
            self.polls += 1;
            if self.left == 0 {
                return Err(Failure::cancelled(Cause::Terminated));
            }
            self.left -= 1;
            Ok(())
        }
    }

    fn never() -> Cancelling {
        Cancelling {
            left: usize::MAX,
            polls: 0,
        }
    }

    #[test]
    fn sorting_matches_a_stable_sort_at_every_size() {
        // Sizes around the block and the merge widths, with many ties (the
        // key is the value modulo 7) so stability shows.
        for n in [0, 1, 2, 4095, 4096, 4097, 8192, 12_289, 40_000] {
            let keys: Vec<u64> = (0..n)
                .map(|i| (i as u64).wrapping_mul(2_654_435_761) % 7)
                .collect();
            let mut want: Vec<usize> = (0..n).collect();
            want.sort_by_key(|&i| keys[i]);
            let got = sort_positions(&mut never(), n, &|a, b| keys[a].cmp(&keys[b])).unwrap();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn a_cancelled_sort_stops_with_the_cancellation() {
        let mut ctx = Cancelling { left: 30, polls: 0 };
        let err = sort_positions(&mut ctx, 100_000, &|a, b| b.cmp(&a)).unwrap_err();
        assert_eq!(err.reason, Reason::Cancelled(Cause::Terminated));
        assert_eq!(ctx.polls, 31, "it stopped at the first refused poll");
    }

    #[test]
    fn a_pacer_gives_up_once_and_for_all() {
        let mut ctx = Cancelling { left: 1, polls: 0 };
        let mut pacer = Pacer::new(&mut ctx);
        let mut steps = 0;
        while pacer.go_on() {
            steps += 1;
        }
        // One poll passed (after POLL_EVERY - 1 free steps), the next one
        // refused.
        assert_eq!(steps, 2 * POLL_EVERY - 1);
        assert!(!pacer.go_on());
        let r: Result<Value, Failure> = pacer.finish(Ok::<Value, Failure>(Value::Unit));
        assert_eq!(r.unwrap_err().reason, Reason::Cancelled(Cause::Terminated));
    }

    #[test]
    fn pieces_end_after_a_space_and_cover_the_text() {
        let word = "ΣΑΣ Σ abc\n";
        let text = word.repeat(3 * TEXT_RUN / word.len());
        let parts: Vec<&str> = pieces(&text).collect();
        assert!(parts.len() > 2, "{}", parts.len());
        assert_eq!(parts.concat(), text);
        for p in &parts[..parts.len() - 1] {
            assert!(p.ends_with([' ', '\n']), "{:?}", &p[p.len() - 8..]);
        }
        let lowered: String = parts.iter().map(|p| p.to_lowercase()).collect();
        assert_eq!(lowered, text.to_lowercase());
        assert_eq!(pieces("").count(), 0);
        assert_eq!(pieces("short").collect::<Vec<_>>(), ["short"]);
    }

    #[test]
    fn copies_and_text_runs_poll() {
        let mut ctx = never();
        let items: Vec<u32> = (0..5000).collect();
        assert_eq!(copy(&mut ctx, &items).unwrap(), items);
        assert_eq!(ctx.polls, 5);
        let mut out = String::new();
        let text = "é".repeat(TEXT_RUN);
        push_str(&mut ctx, &mut out, &text).unwrap();
        assert_eq!(out, text);
        out.clear();
        push_repeated(&mut ctx, &mut out, ' ', TEXT_RUN + 1).unwrap();
        assert_eq!(out.len(), TEXT_RUN + 1);
    }

    #[test]
    fn poll_at_looks_every_so_often() {
        let mut ctx = never();
        for i in 0..10 * POLL_EVERY {
            poll_at(&mut ctx, i).unwrap();
        }
        assert_eq!(ctx.polls, 10);
    }
}
