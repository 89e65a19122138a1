//! The agent's half of context management: when to compact, and the
//! evictions and summaries themselves, each written to the log exactly so
//! a resumed run replays them. The policy and its pieces are in
//! [`crate::context`].

use std::time::Instant;

use serde_json::json;

use super::{slot, Agent, AgentEvent, CompactReason, Compaction, Purpose, Ui, UiObserver};
use crate::context::{
    self, block_bytes, call_facts, eviction_candidates, render_region, stub_text, summary_cut,
    summary_message, summary_request_text, user_words, KEEP_RECENT_MESSAGES, KEEP_RECENT_RESULTS,
    MAX_SUMMARY_CALLS, SUMMARY_FRACTION, SUMMARY_MAX_TOKENS, SUMMARY_PREFIX, SUMMARY_SYSTEM,
    TARGET_FRACTION,
};
use crate::control::Control;
use crate::message::{Block, Message};
use crate::provider::{reply_text, ChatRequest, ProviderErrorKind};

/// The longest piece of the region the summariser is shown, in bytes
/// (halved until the region fits its half of the budget).
const SUMMARY_PIECE: usize = 4000;

impl Agent<'_> {
    /// Before a request: compacts when the next request would not fit the
    /// budget.
    pub(super) fn fit(&mut self, reason: CompactReason, ui: &mut dyn Ui, ctl: &Control) {
        let bytes = self.request_bytes();
        if self.ctx.est.tokens(bytes) > self.budget() {
            self.compact_from(bytes, reason, false, ui, ctl);
        }
    }

    /// Compacts now, as far as the policy goes (every output but the
    /// newest few evicted, the rest summarised).
    pub(super) fn compact(
        &mut self,
        reason: CompactReason,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> Compaction {
        let bytes = self.request_bytes();
        self.compact_from(bytes, reason, true, ui, ctl)
    }

    /// Learns from a refusal: the limit it states (the window shrinks to
    /// it), the prompt's real size (the estimator calibrates to it); when
    /// neither makes the refused prompt over budget on paper, the refused
    /// prompt bounds the window: the budget becomes four fifths of it, so
    /// the retry is always compacted and smaller.
    pub(super) fn learn_refusal(
        &mut self,
        tokens: Option<u64>,
        limit: Option<u64>,
        bytes: u64,
        ui: &mut dyn Ui,
    ) {
        if let Some(t) = tokens {
            self.ctx.est.calibrate(bytes, t);
        }
        if let Some(l) = limit.filter(|l| *l < self.ctx.window) {
            self.ctx.window = l;
            self.ctx.source = context::WindowSource::Learned;
        }
        let refused = self.ctx.est.tokens(bytes);
        if refused <= self.budget() {
            let budget = refused * 4 / 5;
            self.ctx.window = context::window_for_budget(budget, self.cfg.max_tokens)
                .clamp(2048, self.ctx.window);
            self.ctx.source = context::WindowSource::Learned;
        }
        self.log.record(
            "context_refused",
            json!({
                "tokens": tokens,
                "limit": limit,
                "window": self.ctx.window,
                "bytes_per_token": self.ctx.est.ratio(),
            }),
        );
        ui.event(AgentEvent::Notice(format!(
            "the provider refused the prompt as too long; compacting to a window of {} tokens and \
             retrying",
            context::thousands(self.ctx.window)
        )));
    }

    fn compact_from(
        &mut self,
        mut bytes: u64,
        reason: CompactReason,
        force: bool,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> Compaction {
        let budget = self.budget();
        let target = if force {
            0
        } else {
            (budget as f64 * TARGET_FRACTION) as u64
        };
        let mut c = Compaction {
            before: self.ctx.est.tokens(bytes),
            reason,
            ..Compaction::default()
        };
        // 1. Old outputs, oldest first.
        bytes = self.evict_down_to(bytes, target, KEEP_RECENT_RESULTS, &mut c);
        // 2. Summaries of the oldest exchanges.
        let trigger = if force {
            0
        } else {
            (budget as f64 * SUMMARY_FRACTION) as u64
        };
        if self.ctx.est.tokens(bytes) > trigger {
            for _ in 0..MAX_SUMMARY_CALLS {
                let Some(cut) = summary_cut(&self.history, KEEP_RECENT_MESSAGES) else {
                    break;
                };
                // A region that is one earlier summary gains nothing.
                if cut == 2 && starts_summary(&self.history[1]) {
                    break;
                }
                if !self.summarise(cut, &mut c, ui, ctl) {
                    break;
                }
                bytes = self.request_bytes();
                if force || self.ctx.est.tokens(bytes) <= target {
                    break;
                }
            }
        }
        // 3. The last resort: every output but the newest.
        if self.ctx.est.tokens(bytes) > budget {
            bytes = self.evict_down_to(bytes, budget, 1, &mut c);
        }
        c.after = self.ctx.est.tokens(bytes);
        self.ctx.last_estimate = c.after;
        self.log.record(
            "context_compacted",
            json!({
                "reason": reason.as_str(),
                "before": c.before,
                "after": c.after,
                "budget": budget,
                "window": self.ctx.window,
                "evicted": c.evicted,
                "evicted_bytes": c.evicted_bytes,
                "summaries": c.summaries,
                "summaries_failed": c.failed,
                "summarised_messages": c.summarised_messages,
            }),
        );
        ui.event(AgentEvent::Compacted(c.clone()));
        c
    }

    /// Evicts outputs (all but the newest `keep`) oldest first until the
    /// estimate is at most `target`; the new size. One log record for the
    /// batch.
    fn evict_down_to(
        &mut self,
        mut bytes: u64,
        target: u64,
        keep: usize,
        c: &mut Compaction,
    ) -> u64 {
        let mut records = Vec::new();
        for (mi, bi) in eviction_candidates(&self.history, keep) {
            if self.ctx.est.tokens(bytes) <= target {
                break;
            }
            let Some((old, new, rec, size)) = self.evict(mi, bi) else {
                continue;
            };
            bytes = bytes.saturating_sub(old) + new;
            c.evicted += 1;
            c.evicted_bytes += size;
            records.push(rec);
        }
        if !records.is_empty() {
            self.log
                .record("context_evicted", json!({ "results": records }));
        }
        bytes
    }

    /// Replaces the output at (`mi`, `bi`) with its stub, keeping it whole
    /// in the store: the block's old and new measured sizes, the log
    /// entry, and the output's length.
    fn evict(&mut self, mi: usize, bi: usize) -> Option<(u64, u64, serde_json::Value, u64)> {
        let (id, content) = match self.history.get(mi)?.blocks.get(bi)? {
            Block::ToolResult { id, content, .. } => (id.clone(), content.clone()),
            Block::Text(_) | Block::ToolUse { .. } => return None,
        };
        let facts = call_facts(&self.history[..mi], &id);
        let kept = self.ctx.store.save(&id, &content);
        let stub = stub_text(
            &id,
            &facts,
            &content,
            kept.as_deref().map_err(String::as_str),
        );
        let block = &mut self.history[mi].blocks[bi];
        let old = block_bytes(block);
        if let Block::ToolResult { content: c, .. } = block {
            c.clone_from(&stub);
        }
        let new = block_bytes(block);
        self.ctx.evicted += 1;
        let rec = json!({
            "msg": mi,
            "block": bi,
            "id": id,
            "bytes": content.len(),
            "file": kept.as_ref().ok().map(|p| p.display().to_string()),
            "stub": stub,
        });
        Some((old, new, rec, content.len() as u64))
    }

    /// Replaces `history[1..cut]` with one summary message (a plain marker
    /// when the summary request fails). `false` when a stop interrupted
    /// the request: nothing was replaced.
    fn summarise(
        &mut self,
        cut: usize,
        c: &mut Compaction,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> bool {
        // Every output the summary will take is kept whole first.
        let whole: Vec<(usize, usize)> = (1..cut)
            .flat_map(|mi| {
                self.history[mi]
                    .blocks
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| {
                        matches!(b, Block::ToolResult { content, .. }
                            if !context::is_stub(content) && content.len() >= context::EVICT_MIN_BYTES)
                    })
                    .map(move |(bi, _)| (mi, bi))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut records = Vec::new();
        for (mi, bi) in whole {
            if let Some((_, _, rec, size)) = self.evict(mi, bi) {
                c.evicted += 1;
                c.evicted_bytes += size;
                records.push(rec);
            }
        }
        if !records.is_empty() {
            self.log
                .record("context_evicted", json!({ "results": records }));
        }
        let region = &self.history[1..cut];
        let words = user_words(region);
        let limit = usize::try_from(self.ctx.est.bytes(self.budget() / 2)).unwrap_or(usize::MAX);
        let mut piece = SUMMARY_PIECE;
        let mut text = render_region(region, piece);
        while text.len() > limit && piece > 256 {
            piece /= 2;
            text = render_region(region, piece);
        }
        if text.len() > limit {
            text = clip_middle(&text, limit);
        }
        let msgs = [Message::user_text(summary_request_text(&text))];
        let cap = u32::try_from(self.reply_reserve())
            .unwrap_or(u32::MAX)
            .min(SUMMARY_MAX_TOKENS);
        let req = ChatRequest {
            system: SUMMARY_SYSTEM,
            messages: &msgs,
            tools: &[],
            max_tokens: Some(cap),
        };
        let bytes = context::request_bytes(SUMMARY_SYSTEM, &[], &msgs);
        let started = Instant::now();
        let mut obs = UiObserver {
            ui: &mut *ui,
            log: &mut self.log,
            show_text: false,
        };
        let result = slot(&self.provider).complete(&req, &mut obs, ctl);
        let summary = match result {
            Ok(reply) => {
                self.account(Purpose::Summary, &reply, started, bytes, ui);
                let t = reply_text(&reply);
                if t.trim().is_empty() {
                    Err("the model returned no text".to_owned())
                } else {
                    Ok(t)
                }
            }
            Err(e) if matches!(e.kind, ProviderErrorKind::Stopped(_)) => return false,
            Err(e) => {
                self.log.record(
                    "request_failed",
                    json!({"purpose": "summary", "error": e.to_string(), "attempts": e.attempts}),
                );
                Err(e.to_string())
            }
        };
        let count = cut - 1;
        let message = summary_message(
            count,
            summary.as_deref().map_err(String::as_str),
            &words,
            self.ctx.store.dir(),
        );
        self.history
            .splice(1..cut, [Message::user_text(message.clone())]);
        c.summarised_messages += count as u64;
        match &summary {
            Ok(_) => {
                c.summaries += 1;
                self.ctx.summaries += 1;
            }
            Err(_) => c.failed += 1,
        }
        self.log.record(
            "context_summarised",
            json!({
                "first": 1,
                "count": count,
                "text": message,
                "summarised": summary.is_ok(),
                "error": summary.as_ref().err(),
            }),
        );
        true
    }
}

/// Whether a message is an earlier summary.
fn starts_summary(m: &Message) -> bool {
    matches!(m.blocks.first(), Some(Block::Text(t)) if t.starts_with(SUMMARY_PREFIX))
}

/// `text` cut to about `limit` bytes: head and tail, with the middle
/// marked.
fn clip_middle(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut head = limit / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - limit / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes of the session elided …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}
