//! What the agent reports while it works: one stream of [`AgentEvent`]s,
//! in order, to whatever presents them (the headless progress lines, the
//! line chat, a terminal UI).
//!
//! The events are owned and `Send`, so a presentation layer on another
//! thread can take them through a channel ([`ChannelUi`]) while the agent
//! runs on its own. The session log is written separately, by the agent;
//! nothing here reaches the model.

use std::sync::mpsc::Sender;
use std::time::Duration;

use crate::context::WindowSource;
use crate::message::Usage;

/// A tool call as shown to the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownCall {
    pub id: String,
    pub name: String,
    /// The model's one-line description, when it gave one.
    pub description: Option<String>,
    /// The ral source, when the input was well formed.
    pub cmd: Option<String>,
}

/// Why a model request was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A turn of the conversation.
    Turn,
    /// A summary of old exchanges, for context management.
    Summary,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Turn => "turn",
            Purpose::Summary => "summary",
        }
    }
}

/// The state of the context window after a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContextStatus {
    /// The window, in tokens, and where that figure came from.
    pub window: u64,
    pub source: WindowSource,
    /// Tokens kept free for the reply.
    pub reply_reserve: u64,
    /// The estimate of the last request's prompt, in tokens.
    pub estimate: u64,
    /// The prompt's size as the provider counted it (input, cache reads
    /// and cache writes), when it said.
    pub prompt_tokens: Option<u64>,
    /// Outputs evicted and summaries written so far.
    pub evicted: u64,
    pub summaries: u64,
}

impl ContextStatus {
    /// The prompt's budget: the window less the reply's room.
    pub fn budget(&self) -> u64 {
        self.window.saturating_sub(self.reply_reserve)
    }
}

/// One model request's accounting.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestUsage {
    /// 1-based over the run (turns and summaries alike).
    pub n: u32,
    pub purpose: Purpose,
    pub model: String,
    pub usage: Usage,
    /// Dollars from the pricing table; `None` for a model it does not
    /// know.
    pub cost_usd: Option<f64>,
}

/// The running totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostReport {
    /// Model requests: turns, and summaries.
    pub turns: u32,
    pub summaries: u32,
    pub usage: Usage,
    /// The dollars of the requests the table could price; `None` when it
    /// priced none.
    pub cost_usd: Option<f64>,
    /// Requests whose model the table does not know.
    pub unpriced: u32,
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compaction {
    /// The estimate before and after, in tokens.
    pub before: u64,
    pub after: u64,
    /// Outputs evicted, and their bytes.
    pub evicted: u64,
    pub evicted_bytes: u64,
    /// Messages replaced by summaries, and the summaries written (a failed
    /// summary request leaves a plain marker and counts in `failed`).
    pub summarised_messages: u64,
    pub summaries: u64,
    pub failed: u64,
    /// Why it ran.
    pub reason: CompactReason,
}

/// Why a compaction ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompactReason {
    /// The next request would not fit the budget.
    #[default]
    Budget,
    /// The provider refused a request as too long.
    Refused,
    /// The user asked (`compact now`).
    Asked,
}

impl CompactReason {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactReason::Budget => "budget",
            CompactReason::Refused => "refused",
            CompactReason::Asked => "asked",
        }
    }
}

/// One thing the agent reports.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEvent {
    /// Streamed assistant text, as it arrives.
    TextDelta(String),
    /// A reply is complete; `text` is all its prose.
    AssistantDone { text: String },
    /// A tool call is about to run.
    ToolStarted(ShownCall),
    /// A tool call finished: the result exactly as the model got it, the
    /// exit status (`None` for input it could not run: malformed, an
    /// unknown tool, not run), and how long it took.
    ToolFinished {
        call: ShownCall,
        result: String,
        exit: Option<i32>,
        elapsed: Duration,
    },
    /// A structured event a running program surfaced.
    Surface(String),
    /// A host notice for the user (pruned bindings, reaped workers, a
    /// fallback, a profile entry left out): never shown to the model.
    Notice(String),
    /// A request is being retried.
    Retrying {
        attempt: u32,
        wait: Duration,
        why: String,
    },
    /// A model request finished: its usage and cost, the totals so far,
    /// and the context window's state.
    Usage {
        request: RequestUsage,
        total: CostReport,
        context: ContextStatus,
        stop: String,
    },
    /// The conversation was compacted to fit the window.
    Compacted(Compaction),
    /// A stopped call has not returned after `waited` (reported every poll
    /// after the grace period).
    Stuck { waited: Duration },
}

/// What the presentation layer implements.
pub trait Ui {
    /// One event. A headless run may act on [`AgentEvent::Stuck`] by
    /// writing its result and exiting.
    fn event(&mut self, ev: AgentEvent);
}

/// A UI that shows nothing.
#[derive(Debug, Default)]
pub struct NullUi;

impl Ui for NullUi {
    fn event(&mut self, _ev: AgentEvent) {}
}

/// The event stream over a channel, for a presentation layer on another
/// thread: every event is sent as it happens; a gone receiver drops them.
#[derive(Clone, Debug)]
pub struct ChannelUi {
    tx: Sender<AgentEvent>,
}

impl ChannelUi {
    pub fn new(tx: Sender<AgentEvent>) -> ChannelUi {
        ChannelUi { tx }
    }
}

impl Ui for ChannelUi {
    fn event(&mut self, ev: AgentEvent) {
        let _ = self.tx.send(ev);
    }
}

/// A UI that keeps every event (tests).
#[derive(Debug, Default)]
pub struct Recorder(pub Vec<AgentEvent>);

impl Ui for Recorder {
    fn event(&mut self, ev: AgentEvent) {
        self.0.push(ev);
    }
}
