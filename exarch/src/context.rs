//! Context management: every request fits the model's context window with
//! room for the reply.
//!
//! # The window
//!
//! [`known_window`] holds the windows of the current Anthropic and OpenAI
//! model families; a model the table does not know gets
//! [`DEFAULT_WINDOW`], which is small on purpose (local servers often hold
//! less than the big providers). `--context-window N` overrides both, and
//! a provider's refusal that names its limit lowers it (see below). The
//! reply's room is the output cap sent with the request, at most a quarter
//! of the window ([`reply_reserve`]); the prompt's budget is the rest.
//!
//! # Estimating
//!
//! A prompt's size is estimated from bytes: the JSON-escaped length of the
//! system prompt, the tool schemas and every block, plus a little per
//! message, divided by a bytes-per-token ratio ([`Estimator`]). The ratio
//! starts at [`INITIAL_BYTES_PER_TOKEN`], below what tokenizers achieve on
//! English, code or JSON, so the first estimates run high. Each reply's
//! usage (input plus cache reads plus cache writes: the whole prompt) then
//! calibrates it: the observed ratio, less [`CALIBRATION_MARGIN`], clamped
//! to a sane range. A refusal that states the prompt's token count
//! calibrates it the same way.
//!
//! # The policy
//!
//! Before each request, when the estimate exceeds the budget:
//!
//! 1. **Evict old tool outputs**, oldest first, never the newest
//!    [`KEEP_RECENT_RESULTS`], and never one under [`EVICT_MIN_BYTES`]
//!    (its stub would save nothing), until the estimate is under
//!    [`TARGET_FRACTION`] of the budget. Each output is written whole to a
//!    file in the run's `outputs/` directory and replaced by a one-line
//!    stub ([`stub_text`]) that says which call it was (its description,
//!    the start of its source, its exit status), how big it was, and the
//!    exact ral command that reads it back. The run's directory is
//!    readable under every built-in profile.
//! 2. **Summarise the oldest exchanges** when eviction left the estimate
//!    above [`SUMMARY_FRACTION`] of the budget: the messages after the
//!    user's task, up to a clean boundary (no call separated from its
//!    result) that leaves the newest [`KEEP_RECENT_MESSAGES`] alone, go to
//!    the model in one extra request that asks for a factual summary; one
//!    user message replaces them, holding the summary, where the outputs
//!    of those calls are kept (every output in the part is first written
//!    to the store, as an eviction), and, verbatim, every message the user
//!    wrote in that part. Repeated (at most
//!    [`MAX_SUMMARY_CALLS`] per compaction) until under the target. A
//!    summary request that fails leaves a plain marker instead (what was
//!    removed, the user's words, and where the outputs are), so the run
//!    goes on.
//! 3. **Last resort**: every output but the newest is evicted.
//!
//! The system prompt and the user's task (the first message) are never
//! touched. Eviction moves the budget down to the target, not just under
//! the line, so compaction happens in batches and the prompt cache's
//! prefix stays stable between them.
//!
//! When a provider still refuses a request as too long (Anthropic's
//! `prompt is too long`, OpenAI's `context_length_exceeded`), the agent
//! learns what the refusal says (the limit, the prompt's real size; after
//! a refusal that leaves the refused prompt within budget on paper, the
//! budget becomes four fifths of that prompt), compacts, and retries, at
//! most [`MAX_OVERFLOW_RETRIES`] times per request.

use std::path::{Path, PathBuf};

use crate::message::{Block, Message, Role, ToolArgs};
use crate::provider::ToolSpec;

/// The window of a model the table does not know, in tokens.
pub const DEFAULT_WINDOW: u64 = 32_768;
/// The reply's room when no output cap is configured, in tokens.
pub const DEFAULT_REPLY_RESERVE: u64 = 16_384;
/// The starting bytes-per-token ratio (conservative: real tokenizers do
/// better on text, code and JSON).
pub const INITIAL_BYTES_PER_TOKEN: f64 = 3.0;
/// The calibrated ratio is the observed one times this (estimates err
/// high).
pub const CALIBRATION_MARGIN: f64 = 0.9;
/// The calibrated ratio's range.
pub const RATIO_RANGE: (f64, f64) = (1.0, 6.0);
/// Tool outputs never evicted: the newest this many.
pub const KEEP_RECENT_RESULTS: usize = 4;
/// Messages a summary never takes: the newest this many.
pub const KEEP_RECENT_MESSAGES: usize = 6;
/// Outputs smaller than this are not worth a stub.
pub const EVICT_MIN_BYTES: usize = 1024;
/// Compaction brings the estimate down to this fraction of the budget.
pub const TARGET_FRACTION: f64 = 0.6;
/// Summaries start when eviction leaves the estimate above this fraction.
pub const SUMMARY_FRACTION: f64 = 0.8;
/// The output cap of a summary request.
pub const SUMMARY_MAX_TOKENS: u32 = 4096;
/// Summary requests in one compaction, at most.
pub const MAX_SUMMARY_CALLS: usize = 6;
/// Compact-and-retry rounds after refusals of one request, at most.
pub const MAX_OVERFLOW_RETRIES: u32 = 3;
/// Bytes per message besides its blocks (role, framing).
const MESSAGE_OVERHEAD: u64 = 16;
/// Bytes per block besides its text (type, ids, framing).
const BLOCK_OVERHEAD: u64 = 24;
/// How every stub starts (so a stub is never evicted again).
pub const STUB_PREFIX: &str = "[exarch evicted this output";
/// How every summary message starts.
pub const SUMMARY_PREFIX: &str = "[exarch: context summary]";
/// The heading of a summary's verbatim user messages.
const USER_WORDS: &str = "The user's own messages in that part, verbatim:";

/// (model-name prefix, window in tokens). Longer prefixes win.
const WINDOWS: &[(&str, u64)] = &[
    // Anthropic: every current Claude model holds 200k tokens by default.
    ("claude-", 200_000),
    // OpenAI.
    ("gpt-5-chat", 128_000),
    // GPT-5: 400k in all, of which at most 272k may be input.
    ("gpt-5", 272_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4", 8_192),
    ("gpt-3.5-turbo", 16_385),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini", 200_000),
];

/// The window of `model` when the table knows it (a `vendor/` prefix, as
/// routers spell models, is ignored).
pub fn known_window(model: &str) -> Option<u64> {
    let name = model.rsplit('/').next().unwrap_or(model);
    WINDOWS
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, w)| *w)
}

/// Where the window figure came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSource {
    /// `--context-window`.
    Flag,
    /// The model table.
    Table,
    /// Neither: [`DEFAULT_WINDOW`].
    Default,
    /// Lowered after the provider refused a request as too long.
    Learned,
}

impl WindowSource {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowSource::Flag => "flag",
            WindowSource::Table => "table",
            WindowSource::Default => "default",
            WindowSource::Learned => "learned",
        }
    }
}

/// The window for `model`, given an override.
pub fn window_for(model: &str, flag: Option<u64>) -> (u64, WindowSource) {
    match (flag, known_window(model)) {
        (Some(n), _) => (n, WindowSource::Flag),
        (None, Some(n)) => (n, WindowSource::Table),
        (None, None) => (DEFAULT_WINDOW, WindowSource::Default),
    }
}

/// The reply's room: the configured output cap (else
/// [`DEFAULT_REPLY_RESERVE`]), at most a quarter of the window.
pub fn reply_reserve(window: u64, max_tokens: Option<u32>) -> u64 {
    let cap = max_tokens.map_or(DEFAULT_REPLY_RESERVE, u64::from);
    cap.min(window / 4).max(1)
}

/// The smallest window whose prompt budget is `budget` (the inverse of
/// `window - reply_reserve(window)`).
pub fn window_for_budget(budget: u64, max_tokens: Option<u32>) -> u64 {
    let cap = max_tokens.map_or(DEFAULT_REPLY_RESERVE, u64::from);
    // While a quarter of the window is below the cap, the budget is three
    // quarters of the window.
    let quarter_rule = budget.saturating_mul(4).div_ceil(3);
    if quarter_rule / 4 <= cap {
        quarter_rule
    } else {
        budget + cap
    }
}

/// The bytes-per-token ratio and its calibration; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimator {
    bytes_per_token: f64,
    calibrations: u32,
}

impl Default for Estimator {
    fn default() -> Estimator {
        Estimator {
            bytes_per_token: INITIAL_BYTES_PER_TOKEN,
            calibrations: 0,
        }
    }
}

impl Estimator {
    /// Tokens in `bytes`, rounded up.
    pub fn tokens(&self, bytes: u64) -> u64 {
        (bytes as f64 / self.bytes_per_token).ceil() as u64
    }

    /// Bytes that fit in `tokens`.
    pub fn bytes(&self, tokens: u64) -> u64 {
        (tokens as f64 * self.bytes_per_token).floor() as u64
    }

    /// The ratio in use.
    pub fn ratio(&self) -> f64 {
        self.bytes_per_token
    }

    /// Learns from a prompt of `bytes` (as this module measures) that the
    /// provider counted as `tokens`. Tiny prompts say nothing reliable and
    /// are ignored; whether the ratio changed.
    pub fn calibrate(&mut self, bytes: u64, tokens: u64) -> bool {
        if tokens < 256 || bytes < 2048 {
            return false;
        }
        let observed = bytes as f64 / tokens as f64 * CALIBRATION_MARGIN;
        self.bytes_per_token = observed.clamp(RATIO_RANGE.0, RATIO_RANGE.1);
        self.calibrations += 1;
        true
    }

    /// How many replies calibrated it.
    pub fn calibrations(&self) -> u32 {
        self.calibrations
    }
}

/// The length of `s` as a JSON string body (escapes counted).
pub fn json_len(s: &str) -> u64 {
    let mut n = 0u64;
    for c in s.chars() {
        n += match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8() as u64,
        };
    }
    n
}

/// The measured size of one block.
pub fn block_bytes(b: &Block) -> u64 {
    BLOCK_OVERHEAD
        + match b {
            Block::Text(t) => json_len(t),
            Block::ToolUse { id, name, input } => {
                json_len(id)
                    + json_len(name)
                    + match input {
                        ToolArgs::Json(v) => json_len(&v.to_string()),
                        ToolArgs::Invalid { raw, .. } => json_len(raw),
                    }
            }
            Block::ToolResult { id, content, .. } => json_len(id) + json_len(content),
        }
}

/// The measured size of one message.
pub fn message_bytes(m: &Message) -> u64 {
    MESSAGE_OVERHEAD + m.blocks.iter().map(block_bytes).sum::<u64>()
}

/// The measured size of the parts every request repeats.
pub fn fixed_bytes(system: &str, tools: &[ToolSpec]) -> u64 {
    json_len(system)
        + tools
            .iter()
            .map(|t| json_len(&t.name) + json_len(&t.description) + json_len(&t.schema.to_string()))
            .sum::<u64>()
}

/// The measured size of a whole request.
pub fn request_bytes(system: &str, tools: &[ToolSpec], messages: &[Message]) -> u64 {
    fixed_bytes(system, tools) + messages.iter().map(message_bytes).sum::<u64>()
}

/// Whether a tool output was already evicted.
pub fn is_stub(content: &str) -> bool {
    content.starts_with(STUB_PREFIX)
}

/// Tool outputs that may be evicted, oldest first, as (message, block)
/// positions: all but the newest `keep`, not stubs, at least
/// [`EVICT_MIN_BYTES`].
pub fn eviction_candidates(history: &[Message], keep: usize) -> Vec<(usize, usize)> {
    let mut all = Vec::new();
    for (mi, m) in history.iter().enumerate() {
        for (bi, b) in m.blocks.iter().enumerate() {
            if let Block::ToolResult { .. } = b {
                all.push((mi, bi));
            }
        }
    }
    let upto = all.len().saturating_sub(keep);
    all.truncate(upto);
    all.retain(|&(mi, bi)| match &history[mi].blocks[bi] {
        Block::ToolResult { content, .. } => !is_stub(content) && content.len() >= EVICT_MIN_BYTES,
        Block::Text(_) | Block::ToolUse { .. } => false,
    });
    all
}

/// What the model asked for in call `id`: its description and the start
/// of its source, when the history still has the call.
pub fn call_facts(history: &[Message], id: &str) -> (Option<String>, Option<String>) {
    for m in history.iter().rev() {
        for (uid, _, input) in m.tool_uses() {
            if uid != id {
                continue;
            }
            let ToolArgs::Json(v) = input else {
                return (None, None);
            };
            let text = |k: &str| {
                v.get(k)
                    .and_then(|x| x.as_str())
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
            };
            let cmd = text("cmd").map(|c| {
                let first = c.lines().next().unwrap_or_default();
                let mut short = clip_chars(first, 60);
                if c.lines().nth(1).is_some() && !short.ends_with('…') {
                    short.push_str(" …");
                }
                short
            });
            return (text("description").map(|d| clip_chars(&d, 60)), cmd);
        }
    }
    (None, None)
}

fn clip_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

/// `1,234`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A path as a single-quoted ral word.
pub fn ral_quote(p: &Path) -> String {
    let text = p.display().to_string();
    if text.contains('\'') {
        format!("#'{text}'#")
    } else {
        format!("'{text}'")
    }
}

/// The one-line stub that replaces an evicted output.
pub fn stub_text(
    id: &str,
    facts: &(Option<String>, Option<String>),
    content: &str,
    kept: Result<&Path, &str>,
) -> String {
    let mut what = format!("call {id}");
    if let Some(d) = &facts.0 {
        what.push_str(&format!(" \"{d}\""));
    }
    if let Some(c) = &facts.1 {
        what.push_str(&format!(" (`{c}`)"));
    }
    let exit = content
        .lines()
        .last()
        .filter(|l| l.starts_with("EXIT: "))
        .map(|l| format!(", ending {l}"))
        .unwrap_or_default();
    let size = format!(
        "{} bytes in {} lines{exit}",
        thousands(content.len() as u64),
        thousands(content.lines().count() as u64)
    );
    match kept {
        Ok(path) => {
            let q = ral_quote(path);
            format!(
                "{STUB_PREFIX} to keep the conversation within the context window: the result of \
                 {what}, {size}. The whole result is kept in the file {}: read it back with \
                 `cat {q}`, or part of it with `sed -n '1,80p' {q}`.]",
                path.display()
            )
        }
        Err(why) => format!(
            "{STUB_PREFIX} to keep the conversation within the context window: the result of \
             {what}, {size}. It could not be kept ({why}): run the call again if you need it.]"
        ),
    }
}

/// Where evicted outputs are written: `outputs/` in the run's directory.
#[derive(Clone, Debug, Default)]
pub struct OutputStore {
    dir: Option<PathBuf>,
    saved: u64,
}

impl OutputStore {
    /// A store in `dir` (created on first use); `None` keeps nothing.
    pub fn new(dir: Option<PathBuf>) -> OutputStore {
        let saved = dir
            .as_ref()
            .and_then(|d| std::fs::read_dir(d).ok())
            .map_or(0, |entries| entries.count() as u64);
        OutputStore { dir, saved }
    }

    /// The directory.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Writes one output; the file's path, or why it could not be kept.
    pub fn save(&mut self, id: &str, content: &str) -> Result<PathBuf, String> {
        let Some(dir) = &self.dir else {
            return Err("this run keeps no files".to_owned());
        };
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        self.saved += 1;
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let path = dir.join(format!("{:04}-{safe}.txt", self.saved));
        std::fs::write(&path, content).map_err(|e| e.to_string())?;
        Ok(path)
    }
}

/// The end of the summarisable region after the task: the largest `cut`
/// such that `history[1..cut]` is non-empty, leaves the newest `keep`
/// messages, ends before an assistant message, and holds the result of
/// every call it holds. `None` when there is no such region.
pub fn summary_cut(history: &[Message], keep: usize) -> Option<usize> {
    let limit = history.len().saturating_sub(keep);
    let mut cut = limit;
    while cut > 1 {
        if history[cut].role == Role::Assistant && self_contained(&history[1..cut]) {
            return Some(cut);
        }
        cut -= 1;
    }
    None
}

/// Whether every call in `msgs` has its result in `msgs`.
fn self_contained(msgs: &[Message]) -> bool {
    let mut open: Vec<&str> = Vec::new();
    for m in msgs {
        for b in &m.blocks {
            match b {
                Block::ToolUse { id, .. } => open.push(id),
                Block::ToolResult { id, .. } => {
                    if let Some(i) = open.iter().position(|o| o == id) {
                        open.remove(i);
                    }
                }
                Block::Text(_) => {}
            }
        }
    }
    open.is_empty()
}

/// The user's own words in `msgs`: their text messages, and the verbatim
/// section of any earlier summary (carried forward so no summary of a
/// summary loses them).
pub fn user_words(msgs: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in msgs.iter().filter(|m| m.role == Role::User) {
        for b in &m.blocks {
            let Block::Text(t) = b else { continue };
            if let Some(rest) = t.strip_prefix(SUMMARY_PREFIX) {
                if let Some((_, words)) = rest.split_once(USER_WORDS) {
                    out.extend(
                        words
                            .split("\n> ")
                            .map(|w| w.trim().to_owned())
                            .filter(|w| !w.is_empty()),
                    );
                }
            } else if !t.starts_with("[exarch") && !t.trim().is_empty() {
                out.push(t.trim().replace('\n', "\n  "));
            }
        }
    }
    out
}

/// The region as text for the summariser, each piece clipped to
/// `piece` bytes.
pub fn render_region(msgs: &[Message], piece: usize) -> String {
    let clip = |s: &str| -> String {
        if s.len() <= piece {
            return s.to_owned();
        }
        let mut head = piece * 2 / 3;
        while !s.is_char_boundary(head) {
            head -= 1;
        }
        let mut tail = s.len() - (piece - head);
        while !s.is_char_boundary(tail) {
            tail += 1;
        }
        format!(
            "{}\n[… {} bytes …]\n{}",
            &s[..head],
            tail - head,
            &s[tail..]
        )
    };
    let mut out = String::new();
    for m in msgs {
        for b in &m.blocks {
            match (m.role, b) {
                (Role::User, Block::Text(t)) => out.push_str(&format!("USER:\n{}\n\n", clip(t))),
                (Role::Assistant, Block::Text(t)) => {
                    out.push_str(&format!("ASSISTANT:\n{}\n\n", clip(t)))
                }
                (_, Block::ToolUse { id, input, .. }) => {
                    let src = match input {
                        ToolArgs::Json(v) => v
                            .get("cmd")
                            .and_then(|c| c.as_str())
                            .map_or_else(|| v.to_string(), str::to_owned),
                        ToolArgs::Invalid { raw, .. } => raw.clone(),
                    };
                    out.push_str(&format!("CALL {id}:\n{}\n\n", clip(&src)));
                }
                (_, Block::ToolResult { id, content, .. }) => {
                    out.push_str(&format!("RESULT {id}:\n{}\n\n", clip(content)))
                }
            }
        }
    }
    out
}

/// The system prompt of a summary request.
pub const SUMMARY_SYSTEM: &str = "You summarise part of a coding agent's working session so the \
agent can continue without it. The agent works through one tool, `ral`, which runs programs in a \
persistent shell. Write a compact, factual summary in plain prose and short lists: what the user \
asked; what was done (commands run, files created or changed, with exact paths); findings and \
values the agent will need again (names, numbers, errors, exact strings); what failed and why; \
and what was about to happen next. Keep paths, identifiers and numbers exact. Never invent \
anything; say what is unknown.";

/// The user message of a summary request.
pub fn summary_request_text(region: &str) -> String {
    format!(
        "Summarise this earlier part of the session (the messages it holds will be replaced by \
         your summary):\n\n{region}"
    )
}

/// The message that replaces a summarised region; `outputs` is where the
/// region's outputs were kept whole.
pub fn summary_message(
    count: usize,
    summary: Result<&str, &str>,
    words: &[String],
    outputs: Option<&Path>,
) -> String {
    let mut out = format!("{SUMMARY_PREFIX} ");
    match summary {
        Ok(s) => out.push_str(&format!(
            "To keep the conversation within the context window, exarch replaced the {count} \
             messages that followed the task with this summary, written by a separate model \
             call. Outputs evicted earlier stay readable in their files.\n\n{}\n",
            s.trim()
        )),
        Err(why) => out.push_str(&format!(
            "To keep the conversation within the context window, exarch removed the {count} \
             messages that followed the task. A summary could not be written ({why}). Outputs \
             evicted earlier stay readable in their files; the shell still holds what those \
             calls bound.\n"
        )),
    }
    if let Some(dir) = outputs {
        out.push_str(&format!(
            "\nThe outputs of the calls in that part are kept whole in {}, one file per call named \
             NNNN-<call id>.txt: `ls {}` lists them.\n",
            dir.display(),
            ral_quote(dir)
        ));
    }
    if !words.is_empty() {
        out.push_str(&format!("\n{USER_WORDS}"));
        for w in words {
            out.push_str("\n> ");
            out.push_str(w);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn use_(id: &str, cmd: &str) -> Message {
        Message {
            role: Role::Assistant,
            blocks: vec![Block::ToolUse {
                id: id.into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": cmd, "description": format!("step {id}")})),
            }],
        }
    }

    fn result(id: &str, bytes: usize) -> Message {
        Message {
            role: Role::User,
            blocks: vec![Block::ToolResult {
                id: id.into(),
                content: format!("STDOUT:\n{}\n\nEXIT: 0", "x".repeat(bytes)),
                is_error: false,
            }],
        }
    }

    fn session(n: usize) -> Vec<Message> {
        let mut h = vec![Message::user_text("the task")];
        for i in 0..n {
            h.push(use_(&format!("c{i}"), "seq 1 100\necho more"));
            h.push(result(&format!("c{i}"), 2000));
        }
        h
    }

    #[test]
    fn the_table_knows_the_current_families_and_defaults_small() {
        assert_eq!(known_window("claude-sonnet-4-5-20250929"), Some(200_000));
        assert_eq!(known_window("anthropic/claude-opus-4-1"), Some(200_000));
        assert_eq!(known_window("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known_window("gpt-5-mini"), Some(272_000));
        assert_eq!(known_window("gpt-5-chat-latest"), Some(128_000));
        assert_eq!(known_window("gpt-4o-2024-08-06"), Some(128_000));
        assert_eq!(known_window("o4-mini"), Some(200_000));
        assert_eq!(known_window("llama-3-8b"), None);
        assert_eq!(
            window_for("llama", None),
            (DEFAULT_WINDOW, WindowSource::Default)
        );
        assert_eq!(
            window_for("claude-x", Some(5000)),
            (5000, WindowSource::Flag)
        );
        assert_eq!(reply_reserve(200_000, None), DEFAULT_REPLY_RESERVE);
        assert_eq!(reply_reserve(20_000, None), 5_000);
        assert_eq!(reply_reserve(200_000, Some(1000)), 1000);
        for w in [4096u64, 30_000, 65_536, 200_000, 1_000_000] {
            let b = w - reply_reserve(w, None);
            let back = window_for_budget(b, None);
            assert!(back - reply_reserve(back, None) >= b, "{w}");
            assert!(back <= w, "{w} → {back}");
        }
    }

    #[test]
    fn estimates_err_high_until_calibrated_and_calibration_is_clamped() {
        let mut e = Estimator::default();
        assert_eq!(e.tokens(3000), 1000);
        // Tiny prompts teach nothing.
        assert!(!e.calibrate(1000, 10));
        assert!(e.calibrate(40_000, 10_000));
        assert!((e.ratio() - 3.6).abs() < 1e-9);
        // An absurd report is clamped.
        assert!(e.calibrate(1_000_000, 300));
        assert_eq!(e.ratio(), RATIO_RANGE.1);
        assert_eq!(e.calibrations(), 2);
    }

    #[test]
    fn json_length_counts_escapes() {
        assert_eq!(json_len("ab"), 2);
        assert_eq!(json_len("a\nb\"c"), 7);
        assert_eq!(json_len("é"), 2);
        assert_eq!(json_len("\u{1}"), 6);
        let m = result("c1", 10);
        assert!(message_bytes(&m) > 30);
    }

    #[test]
    fn candidates_are_oldest_first_and_spare_the_newest_and_the_small() {
        let mut h = session(6);
        h.push(use_("tiny", "1"));
        h.push(result("tiny", 3));
        // The small one is among the kept anyway; make an old one small.
        if let Block::ToolResult { content, .. } = &mut h[2].blocks[0] {
            *content = "EXIT: 0".into();
        }
        let c = eviction_candidates(&h, KEEP_RECENT_RESULTS);
        // Results: c0 (small) c1 c2 c3 c4 c5 tiny; keep the newest four.
        assert_eq!(c, vec![(4, 0), (6, 0)]);
    }

    #[test]
    fn stubs_say_what_was_there_and_how_to_get_it_back() {
        let h = session(1);
        let facts = call_facts(&h, "c0");
        assert_eq!(facts.0.as_deref(), Some("step c0"));
        assert_eq!(facts.1.as_deref(), Some("seq 1 100 …"));
        let content = "STDOUT:\n1\n2\n\nEXIT: 3";
        let s = stub_text(
            "c0",
            &facts,
            content,
            Ok(Path::new("/run/outputs/0001-c0.txt")),
        );
        assert!(s.starts_with(STUB_PREFIX), "{s}");
        assert!(s.contains("call c0 \"step c0\" (`seq 1 100 …`)"), "{s}");
        assert!(s.contains("20 bytes in 5 lines, ending EXIT: 3"), "{s}");
        assert!(s.contains("`cat '/run/outputs/0001-c0.txt'`"), "{s}");
        assert!(!s.contains('\n'));
        assert!(is_stub(&s));
        let lost = stub_text("c0", &(None, None), content, Err("disk full"));
        assert!(lost.contains("could not be kept (disk full)"), "{lost}");
    }

    #[test]
    fn the_store_writes_whole_outputs_under_safe_names() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = OutputStore::new(Some(dir.path().join("outputs")));
        let p = s.save("toolu/../x", "whole text").unwrap();
        assert_eq!(p.file_name().unwrap(), "0001-toolu____x.txt");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "whole text");
        // A store reopened on the same directory numbers on.
        let mut again = OutputStore::new(Some(dir.path().join("outputs")));
        let q = again.save("y", "z").unwrap();
        assert_eq!(q.file_name().unwrap(), "0002-y.txt");
        assert!(OutputStore::new(None).save("a", "b").is_err());
    }

    #[test]
    fn a_summary_region_keeps_the_task_the_recent_messages_and_every_pair() {
        let h = session(6);
        // 13 messages; the newest 6 stay; cut lands before an assistant.
        let cut = summary_cut(&h, KEEP_RECENT_MESSAGES).unwrap();
        assert_eq!(cut, 7);
        assert_eq!(h[cut].role, Role::Assistant);
        assert!(self_contained(&h[1..cut]));
        // A call whose result lies beyond the cut moves the cut back.
        let mut odd = session(2);
        odd.push(Message {
            role: Role::Assistant,
            blocks: vec![Block::ToolUse {
                id: "a".into(),
                name: "ral".into(),
                input: ToolArgs::Json(json!({"cmd": "1"})),
            }],
        });
        odd.push(result("a", 10));
        assert_eq!(summary_cut(&odd, 2), Some(5));
        assert_eq!(summary_cut(&session(1), KEEP_RECENT_MESSAGES), None);
    }

    #[test]
    fn the_users_words_survive_summaries_of_summaries() {
        let mut h = session(2);
        h.insert(3, Message::user_text("also, use tabs"));
        let words = user_words(&h[1..]);
        assert_eq!(words, vec!["also, use tabs".to_owned()]);
        let first = summary_message(4, Ok("did things"), &words, Some(Path::new("/r/outputs")));
        assert!(first.contains("`ls '/r/outputs'`"), "{first}");
        assert!(first.starts_with(SUMMARY_PREFIX));
        let again = vec![
            Message::user_text(first),
            Message::user_text("and run the tests"),
        ];
        let carried = user_words(&again);
        assert_eq!(
            carried,
            vec!["also, use tabs".to_owned(), "and run the tests".to_owned()]
        );
        let failed = summary_message(3, Err("HTTP 500"), &carried, None);
        assert!(
            failed.contains("could not be written (HTTP 500)"),
            "{failed}"
        );
        assert!(failed.contains("> and run the tests"), "{failed}");
    }

    #[test]
    fn the_region_text_clips_each_piece() {
        let h = session(1);
        let text = render_region(&h[1..], 300);
        assert!(text.contains("CALL c0:\nseq 1 100"), "{text}");
        assert!(text.contains("RESULT c0:"), "{text}");
        assert!(text.contains("bytes …]"), "{text}");
        assert!(text.len() < 1000, "{}", text.len());
    }
}
