//! The agent loop: the conversation, the provider, and the session.
//!
//! [`Agent::exchange`] takes one user message and loops: fit the
//! conversation to the context window ([`crate::context`], `compact.rs`),
//! request a reply; run every tool call it holds, in order, each as one
//! turn on the session; append the results; repeat until a reply has no
//! tool call. It stops early at `max_turns` requests, on a provider error,
//! or when a stop flag is raised (Ctrl-C, SIGTERM, the run's wall). Every
//! tool call gets a result, including malformed ones (`tool input error:
//! …`), calls to unknown tools, and calls not run because the exchange was
//! stopped, so the history always pairs each call with its answer. A
//! request the provider refuses as too long is compacted and retried.
//!
//! What happens is reported as a stream of [`AgentEvent`]s to a [`Ui`]
//! (`events.rs`); a presentation layer steers the agent between exchanges
//! with [`Agent::command`] (compact now, switch the model or the profile,
//! the cost so far, the context's state, clear).
//!
//! # The log is the conversation's record
//!
//! Everything the model sees is also written to the session log, and the
//! tool result the log records is the very string the model got. The
//! records that change the conversation (`user`, `assistant`, `tool_call`,
//! `nudge`, `context_evicted`, `context_summarised`, `resumed`,
//! `cleared`) are exact, in order, so folding them rebuilds it
//! ([`crate::resume`]); `shell_state` records say how the shell changed,
//! so a resumed run can tell the model what no longer exists.

mod compact;
pub mod events;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;

pub use events::{
    AgentEvent, ChannelUi, CompactReason, Compaction, ContextStatus, CostReport, NullUi, Purpose,
    Recorder, RequestUsage, ShownCall, Ui,
};

use crate::bus::{Drive, Event};
use crate::context::{self, Estimator, OutputStore, WindowSource};
use crate::control::{Control, Stop};
use crate::log::SessionLog;
use crate::message::{Block, Message, Reply, Role, StopReason, ToolArgs, Usage};
use crate::pricing;
use crate::profiles::{self, Profile};
use crate::prompt::SystemPrompt;
use crate::provider::{ChatRequest, Observer, Provider, ProviderErrorKind, ToolSpec};
use crate::session::{CallReport, Session, ShellState};
use crate::tool::{input_error_text, parse_ral_input, ral_tool, unknown_tool_text, TOOL_NAME};

/// The default cap on model requests per exchange.
pub const DEFAULT_MAX_TURNS: u32 = 100;

/// Agent policy.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The system prompt.
    pub system: SystemPrompt,
    /// Model requests allowed per exchange.
    pub max_turns: u32,
    /// `--context-window`: the window, over the model table.
    pub context_window: Option<u64>,
    /// `--max-tokens`: the output cap, which is also the reply's room.
    pub max_tokens: Option<u32>,
    /// Where evicted tool outputs are kept (the run's `outputs/`).
    pub outputs: Option<PathBuf>,
    /// The `--capabilities` files and the directory they and the profiles
    /// resolve against, for a profile switch.
    pub capability_files: Vec<String>,
    pub start_dir: PathBuf,
}

impl Default for AgentConfig {
    fn default() -> AgentConfig {
        AgentConfig {
            system: SystemPrompt::default(),
            max_turns: DEFAULT_MAX_TURNS,
            context_window: None,
            max_tokens: None,
            outputs: None,
            capability_files: Vec::new(),
            start_dir: std::env::temp_dir(),
        }
    }
}

/// How an exchange ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExchangeStop {
    /// The model finished.
    EndTurn,
    /// The model's last reply hit the output token cap.
    MaxTokens,
    /// `max_turns` requests were made.
    MaxTurns,
    /// A stop flag ended it.
    Stopped(Stop),
    /// The provider failed.
    Error,
}

impl ExchangeStop {
    /// The headless `stop_reason`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ExchangeStop::EndTurn => "end_turn",
            ExchangeStop::MaxTokens => "max_tokens",
            ExchangeStop::MaxTurns => "max_turns",
            ExchangeStop::Stopped(s) => s.stop_reason(),
            ExchangeStop::Error => "error",
        }
    }
}

/// The result of one exchange.
#[derive(Clone, Debug, PartialEq)]
pub struct ExchangeOutcome {
    pub stop: ExchangeStop,
    /// The prose of the last reply.
    pub final_text: String,
    /// What went wrong, for `Error` (and a provider error under a stop).
    pub error: Option<String>,
    /// Turn requests made in this exchange.
    pub turns: u32,
    /// This exchange's tokens and dollars (turns and summaries).
    pub usage: Usage,
    pub cost_usd: Option<f64>,
}

/// A command a presentation layer gives between exchanges.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Compact the conversation now: evict every output but the newest
    /// few and summarise what can be summarised.
    Compact,
    /// Talk to another model from the next request on (the window
    /// follows the model unless `--context-window` fixed it).
    SetModel(String),
    /// Run later calls under another named profile (the `--capabilities`
    /// files still meet it).
    SetProfile(Profile),
    /// The tokens and dollars so far.
    Cost,
    /// The context window's state.
    Context,
    /// Forget the conversation and start a fresh shell.
    Clear,
}

/// What a command did.
#[derive(Clone, Debug, PartialEq)]
pub enum CommandOutcome {
    Compacted(Compaction),
    ModelSet {
        model: String,
        window: u64,
    },
    ProfileSet {
        profile: Profile,
    },
    Cost(CostReport),
    Context(ContextStatus),
    Cleared,
    /// The command could not be carried out; the agent is unchanged.
    Refused(String),
}

/// The provider the agent talks to: the one it was given, or one a model
/// switch made.
enum ProviderSlot<'p> {
    Borrowed(&'p dyn Provider),
    Owned(Box<dyn Provider>),
}

fn slot<'a>(p: &'a ProviderSlot<'_>) -> &'a dyn Provider {
    match p {
        ProviderSlot::Borrowed(b) => *b,
        ProviderSlot::Owned(o) => o.as_ref(),
    }
}

/// The context manager's state; see [`crate::context`].
#[derive(Debug)]
struct ContextState {
    window: u64,
    source: WindowSource,
    est: Estimator,
    store: OutputStore,
    evicted: u64,
    summaries: u64,
    /// The estimate and the provider's count of the last request.
    last_estimate: u64,
    last_prompt_tokens: Option<u64>,
}

/// See the module docs.
pub struct Agent<'p> {
    provider: ProviderSlot<'p>,
    session: Session,
    history: Vec<Message>,
    cfg: AgentConfig,
    /// The rendered system prompt.
    system: String,
    tools: Vec<ToolSpec>,
    totals: CostReport,
    ledger: Vec<RequestUsage>,
    log: SessionLog,
    ctx: ContextState,
    /// The shell's state after the last call, to log its changes.
    shell_state: ShellState,
}

impl<'p> Agent<'p> {
    /// An agent over `session`, with no log.
    pub fn new(provider: &'p dyn Provider, session: Session, cfg: AgentConfig) -> Agent<'p> {
        let timeout = session.config().default_timeout.as_secs().max(1);
        let (window, source) = context::window_for(provider.model(), cfg.context_window);
        let store = OutputStore::new(cfg.outputs.clone());
        Agent {
            provider: ProviderSlot::Borrowed(provider),
            session,
            history: Vec::new(),
            system: cfg.system.render(),
            cfg,
            tools: vec![ral_tool(timeout)],
            totals: CostReport::default(),
            ledger: Vec::new(),
            log: SessionLog::disabled(),
            ctx: ContextState {
                window,
                source,
                est: Estimator::default(),
                store,
                evicted: 0,
                summaries: 0,
                last_estimate: 0,
                last_prompt_tokens: None,
            },
            shell_state: ShellState::default(),
        }
    }

    /// Records to `log` from now on.
    pub fn with_log(mut self, log: SessionLog) -> Agent<'p> {
        self.log = log;
        self
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn session_mut(&mut self) -> &mut Session {
        &mut self.session
    }

    pub fn log_mut(&mut self) -> &mut SessionLog {
        &mut self.log
    }

    pub fn provider(&self) -> &dyn Provider {
        slot(&self.provider)
    }

    /// Tokens used so far (turns and summaries).
    pub fn usage(&self) -> Usage {
        self.totals.usage
    }

    /// Turn requests made so far.
    pub fn requests(&self) -> u32 {
        self.totals.turns
    }

    /// The tokens and dollars so far.
    pub fn cost(&self) -> CostReport {
        self.totals.clone()
    }

    /// Every model request so far, in order.
    pub fn ledger(&self) -> &[RequestUsage] {
        &self.ledger
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The system prompt as sent.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// The context window's state.
    pub fn context_status(&self) -> ContextStatus {
        ContextStatus {
            window: self.ctx.window,
            source: self.ctx.source,
            reply_reserve: self.reply_reserve(),
            estimate: self.ctx.last_estimate,
            prompt_tokens: self.ctx.last_prompt_tokens,
            evicted: self.ctx.evicted,
            summaries: self.ctx.summaries,
        }
    }

    /// Continues a run's conversation ([`crate::resume`]): the history
    /// its log holds, a result for every call it never answered, and the
    /// notice telling the model what the fresh shell lacks, all logged as
    /// they join the conversation.
    pub fn resume(&mut self, restored: &crate::resume::Restored, notice: &str) {
        self.history = restored.history.clone();
        self.ctx.evicted = restored.evicted;
        self.ctx.summaries = restored.summaries;
        for (id, name) in &restored.unanswered {
            let text = crate::resume::UNANSWERED.to_owned();
            self.log_call(
                id,
                name,
                &ToolArgs::Json(serde_json::Value::Null),
                None,
                &text,
                true,
                None,
                Duration::ZERO,
                true,
            );
            self.push_user(vec![error_result(id, text)]);
        }
        self.log.record("resumed", json!({ "text": notice }));
        self.push_user(vec![Block::Text(notice.to_owned())]);
    }

    /// Runs an exchange on the conversation as it stands, with no new
    /// prompt (a resumed run told to go on).
    pub fn continue_exchange(&mut self, ui: &mut dyn Ui, ctl: &Control) -> ExchangeOutcome {
        self.run_exchange(ui, ctl)
    }

    /// `/clear`: forget the conversation and rebuild the shell.
    pub fn clear(&mut self) {
        self.history.clear();
        self.session.clear();
        self.shell_state = ShellState::default();
        self.log.record("cleared", serde_json::Value::Null);
    }

    /// Logs how the shell changed in the last call (`shell_state`: the
    /// bindings made and gone, the working directory, the running
    /// workers), so a resumed run knows what no longer exists.
    fn note_shell_state(&mut self) {
        let now = self.session.state();
        if now == self.shell_state {
            return;
        }
        let before = &self.shell_state;
        let clip = |t: &str| -> String {
            match t.char_indices().nth(120) {
                Some((i, _)) => format!("{}…", &t[..i]),
                None => t.to_owned(),
            }
        };
        let bound: Vec<serde_json::Value> = now
            .bindings
            .iter()
            .filter(|b| !before.bindings.contains(b))
            .map(|(n, t)| json!({"name": n, "type": clip(t)}))
            .collect();
        let unbound: Vec<&str> = before
            .bindings
            .iter()
            .filter(|(n, _)| !now.bindings.iter().any(|(m, _)| m == n))
            .map(|(n, _)| n.as_str())
            .collect();
        let mut rec = json!({"bound": bound, "unbound": unbound});
        if now.cwd != before.cwd {
            rec["cwd"] = json!(now.cwd);
        }
        if now.workers != before.workers {
            rec["workers"] = json!(now
                .workers
                .iter()
                .map(|(id, what)| json!({"id": id, "what": what}))
                .collect::<Vec<_>>());
        }
        self.log.record("shell_state", rec);
        self.shell_state = now;
    }

    /// Carries out a command between exchanges; see [`Command`].
    pub fn command(&mut self, cmd: Command, ui: &mut dyn Ui, ctl: &Control) -> CommandOutcome {
        match cmd {
            Command::Compact => {
                CommandOutcome::Compacted(self.compact(CompactReason::Asked, ui, ctl))
            }
            Command::SetModel(model) => self.set_model(&model),
            Command::SetProfile(profile) => self.set_profile(profile, ui),
            Command::Cost => CommandOutcome::Cost(self.cost()),
            Command::Context => CommandOutcome::Context(self.context_status()),
            Command::Clear => {
                self.clear();
                CommandOutcome::Cleared
            }
        }
    }

    fn set_model(&mut self, model: &str) -> CommandOutcome {
        let model = model.trim();
        if model.is_empty() {
            return CommandOutcome::Refused("no model named".to_owned());
        }
        let next = match self.provider().with_model(model) {
            Ok(p) => p,
            Err(e) => return CommandOutcome::Refused(e),
        };
        let from = self.provider().model().to_owned();
        self.provider = ProviderSlot::Owned(next);
        let (window, source) = context::window_for(model, self.cfg.context_window);
        self.ctx.window = window;
        self.ctx.source = source;
        self.log.record(
            "model_changed",
            json!({"from": from, "to": model, "window": window, "window_source": source.as_str()}),
        );
        CommandOutcome::ModelSet {
            model: model.to_owned(),
            window,
        }
    }

    fn set_profile(&mut self, profile: Profile, ui: &mut dyn Ui) -> CommandOutcome {
        let (ceiling, warnings) =
            match profiles::ceiling(profile, &self.cfg.capability_files, &self.cfg.start_dir) {
                Ok(c) => c,
                Err(e) => return CommandOutcome::Refused(e),
            };
        for w in &warnings {
            self.log.record("notice", json!({ "text": w }));
            ui.event(AgentEvent::Notice(w.clone()));
        }
        let section = profiles::prompt_section(profile, &ceiling, self.cfg.capability_files.len());
        self.session.set_ceiling(ceiling);
        self.cfg.system.capabilities = section;
        self.system = self.cfg.system.render();
        self.log
            .record("profile_changed", json!({ "profile": profile.name() }));
        CommandOutcome::ProfileSet { profile }
    }

    pub(crate) fn push_user(&mut self, blocks: Vec<Block>) {
        match self.history.last_mut() {
            Some(m) if m.role == Role::User => m.blocks.extend(blocks),
            Some(_) | None => self.history.push(Message {
                role: Role::User,
                blocks,
            }),
        }
    }

    /// One exchange; see the module docs.
    pub fn exchange(&mut self, prompt: &str, ui: &mut dyn Ui, ctl: &Control) -> ExchangeOutcome {
        self.log.record("user", json!({ "text": prompt }));
        self.push_user(vec![Block::Text(prompt.to_owned())]);
        self.run_exchange(ui, ctl)
    }

    /// Runs the loop on the conversation as it stands (its last message is
    /// the user's).
    pub(crate) fn run_exchange(&mut self, ui: &mut dyn Ui, ctl: &Control) -> ExchangeOutcome {
        let before = self.totals.clone();
        let mut turns = 0u32;
        let mut final_text = String::new();
        loop {
            if let Some(stop) = ctl.stop() {
                return self.end(
                    ExchangeStop::Stopped(stop),
                    final_text,
                    None,
                    turns,
                    &before,
                );
            }
            if turns >= self.cfg.max_turns {
                return self.end(ExchangeStop::MaxTurns, final_text, None, turns, &before);
            }
            turns += 1;
            let reply = match self.request(ui, ctl) {
                Ok(r) => r,
                Err((kind, message)) => {
                    let stop = match kind {
                        ProviderErrorKind::Stopped(s) => ExchangeStop::Stopped(s),
                        ProviderErrorKind::Http(_)
                        | ProviderErrorKind::Transport
                        | ProviderErrorKind::Protocol
                        | ProviderErrorKind::Script
                        | ProviderErrorKind::ContextOverflow { .. } => ExchangeStop::Error,
                    };
                    let error = (stop == ExchangeStop::Error).then_some(message);
                    return self.end(stop, final_text, error, turns, &before);
                }
            };
            let msg = reply.to_message();
            final_text = msg.text();
            ui.event(AgentEvent::AssistantDone {
                text: final_text.clone(),
            });
            let calls: Vec<(String, String, ToolArgs)> = msg
                .tool_uses()
                .map(|(id, name, args)| (id.to_owned(), name.to_owned(), args.clone()))
                .collect();
            self.log.record(
                "assistant",
                json!({
                    "text": final_text,
                    "tool_calls": calls.iter().map(|(id, name, args)| {
                        json!({"id": id, "name": name, "input": args.to_log()})
                    }).collect::<Vec<_>>(),
                    "blocks": blocks_to_log(&msg.blocks),
                }),
            );
            if !msg.blocks.is_empty() {
                self.history.push(msg);
            }
            if calls.is_empty() {
                match reply.stop {
                    StopReason::Stalled => {
                        let note = NUDGE_STALLED;
                        self.log.record(
                            "nudge",
                            json!({ "text": note, "why": "the reply stream stalled after text" }),
                        );
                        self.push_user(vec![Block::Text(note.to_owned())]);
                        continue;
                    }
                    StopReason::MaxTokens => {
                        return self.end(ExchangeStop::MaxTokens, final_text, None, turns, &before)
                    }
                    StopReason::EndTurn | StopReason::ToolUse | StopReason::Other(_) => {
                        return self.end(ExchangeStop::EndTurn, final_text, None, turns, &before)
                    }
                }
            }
            let mut results = Vec::with_capacity(calls.len());
            for (id, name, args) in &calls {
                let block = match ctl.stop() {
                    Some(stop) => self.not_run(id, name, args, stop, ui),
                    None => self.run_tool_call(id, name, args, ui, ctl),
                };
                results.push(block);
            }
            self.push_user(results);
        }
    }

    fn end(
        &mut self,
        stop: ExchangeStop,
        final_text: String,
        error: Option<String>,
        turns: u32,
        before: &CostReport,
    ) -> ExchangeOutcome {
        if let Some(e) = &error {
            self.log.record("error", json!({ "message": e }));
        }
        let usage = minus(self.totals.usage, before.usage);
        let cost_usd = match (self.totals.cost_usd, before.cost_usd) {
            (Some(now), Some(then)) => Some(now - then),
            (Some(now), None) => Some(now),
            (None, _) => None,
        };
        self.log.record(
            "exchange_ended",
            json!({
                "stop_reason": stop.as_str(),
                "turns": turns,
                "usage": usage,
                "cost_usd": cost_usd,
            }),
        );
        ExchangeOutcome {
            stop,
            final_text,
            error,
            turns,
            usage,
            cost_usd,
        }
    }

    /// The reply's room in the window.
    fn reply_reserve(&self) -> u64 {
        context::reply_reserve(self.ctx.window, self.cfg.max_tokens)
    }

    /// The prompt's budget in tokens.
    fn budget(&self) -> u64 {
        self.ctx.window.saturating_sub(self.reply_reserve())
    }

    /// The output cap to send: the reply's room when the window made it
    /// smaller than the configured (or the provider's default) cap.
    fn request_cap(&self) -> Option<u32> {
        let reserve = self.reply_reserve();
        let cap = self
            .cfg
            .max_tokens
            .map_or(context::DEFAULT_REPLY_RESERVE, u64::from);
        (reserve < cap).then(|| u32::try_from(reserve).unwrap_or(u32::MAX))
    }

    /// The measured size of the next request.
    fn request_bytes(&self) -> u64 {
        context::request_bytes(&self.system, &self.tools, &self.history)
    }

    /// One turn request: fit the window, ask, account; compact and retry
    /// when the provider refuses the prompt as too long.
    fn request(
        &mut self,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> Result<Reply, (ProviderErrorKind, String)> {
        let mut refusals = 0u32;
        let mut reason = CompactReason::Budget;
        loop {
            self.fit(reason, ui, ctl);
            let bytes = self.request_bytes();
            self.ctx.last_estimate = self.ctx.est.tokens(bytes);
            let req = ChatRequest {
                system: &self.system,
                messages: &self.history,
                tools: &self.tools,
                max_tokens: self.request_cap(),
            };
            let started = Instant::now();
            let mut obs = UiObserver {
                ui: &mut *ui,
                log: &mut self.log,
                show_text: true,
            };
            let result = slot(&self.provider).complete(&req, &mut obs, ctl);
            match result {
                Ok(reply) => {
                    let prompt = prompt_tokens(&reply.usage);
                    if prompt > 0 {
                        self.ctx.last_prompt_tokens = Some(prompt);
                        self.ctx.est.calibrate(bytes, prompt);
                    }
                    self.account(Purpose::Turn, &reply, started, bytes, ui);
                    return Ok(reply);
                }
                Err(e) => {
                    let n = self.totals.turns + self.totals.summaries + 1;
                    self.log.record(
                        "request_failed",
                        json!({"n": n, "error": e.to_string(), "attempts": e.attempts,
                               "duration_ms": millis(started.elapsed()),
                               "prompt_estimate": self.ctx.last_estimate}),
                    );
                    if let ProviderErrorKind::ContextOverflow { tokens, limit } = e.kind {
                        if refusals < context::MAX_OVERFLOW_RETRIES {
                            refusals += 1;
                            self.learn_refusal(tokens, limit, bytes, ui);
                            reason = CompactReason::Refused;
                            continue;
                        }
                    }
                    return Err((e.kind, e.to_string()));
                }
            }
        }
    }

    /// Books a reply's usage: the totals, the ledger, the log, the UI.
    fn account(
        &mut self,
        purpose: Purpose,
        reply: &Reply,
        started: Instant,
        bytes: u64,
        ui: &mut dyn Ui,
    ) {
        let model = self.provider().model().to_owned();
        let cost = pricing::cost(&model, &reply.usage);
        match purpose {
            Purpose::Turn => self.totals.turns += 1,
            Purpose::Summary => self.totals.summaries += 1,
        }
        self.totals.usage += reply.usage;
        match cost {
            Some(c) => self.totals.cost_usd = Some(self.totals.cost_usd.unwrap_or(0.0) + c),
            None => self.totals.unpriced += 1,
        }
        let n = self.totals.turns + self.totals.summaries;
        let request = RequestUsage {
            n,
            purpose,
            model: model.clone(),
            usage: reply.usage,
            cost_usd: cost,
        };
        self.ledger.push(request.clone());
        self.log.record(
            "request",
            json!({
                "n": n,
                "purpose": purpose.as_str(),
                "model": model,
                "usage": reply.usage,
                "cost_usd": cost,
                "stop_reason": reply.stop.as_str(),
                "attempts": reply.attempts,
                "duration_ms": millis(started.elapsed()),
                "prompt_estimate": self.ctx.est.tokens(bytes),
                "prompt_bytes": bytes,
                "window": self.ctx.window,
            }),
        );
        ui.event(AgentEvent::Usage {
            request,
            total: self.totals.clone(),
            context: self.context_status(),
            stop: reply.stop.as_str().to_owned(),
        });
    }

    /// Answers one tool call: dispatch by name, check the input, run it as
    /// a turn, log it. The block is the tool result for the history.
    pub fn run_tool_call(
        &mut self,
        id: &str,
        name: &str,
        args: &ToolArgs,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> Block {
        let started = Instant::now();
        let call = if name == TOOL_NAME {
            parse_ral_input(args).map_err(|reason| input_error_text(&reason))
        } else {
            Err(unknown_tool_text(name))
        };
        let call = match call {
            Err(text) => {
                let shown = ShownCall {
                    id: id.to_owned(),
                    name: name.to_owned(),
                    description: None,
                    cmd: None,
                };
                ui.event(AgentEvent::ToolStarted(shown.clone()));
                ui.event(AgentEvent::ToolFinished {
                    call: shown,
                    result: text.clone(),
                    exit: None,
                    elapsed: started.elapsed(),
                });
                self.log_call(
                    id,
                    name,
                    args,
                    None,
                    &text,
                    true,
                    None,
                    Duration::ZERO,
                    false,
                );
                return error_result(id, text);
            }
            Ok(c) => c,
        };
        let shown = ShownCall {
            id: id.to_owned(),
            name: name.to_owned(),
            description: call.description.clone(),
            cmd: Some(call.cmd.clone()),
        };
        ui.event(AgentEvent::ToolStarted(shown.clone()));
        let report = {
            let mut driver = UiDriver { ui: &mut *ui };
            self.session.run_turn(&call, &mut driver, ctl)
        };
        let exit = report.outcome.status();
        ui.event(AgentEvent::ToolFinished {
            call: shown,
            result: report.text.clone(),
            exit: Some(exit),
            elapsed: report.duration,
        });
        self.log_call(
            id,
            name,
            args,
            Some(&call),
            &report.text,
            false,
            Some(exit),
            report.duration,
            false,
        );
        // The call's evidence, beside the record of what the model saw.
        if let Some(ev) = &report.evidence {
            self.log.record("evidence", ev.to_log(id));
        }
        self.boundary_notices(&report, ui);
        self.note_shell_state();
        Block::ToolResult {
            id: id.to_owned(),
            content: report.text,
            is_error: false,
        }
    }

    /// The answer to a call the exchange did not run.
    fn not_run(
        &mut self,
        id: &str,
        name: &str,
        args: &ToolArgs,
        stop: Stop,
        ui: &mut dyn Ui,
    ) -> Block {
        let text = not_run_text(stop);
        let shown = ShownCall {
            id: id.to_owned(),
            name: name.to_owned(),
            description: None,
            cmd: None,
        };
        ui.event(AgentEvent::ToolFinished {
            call: shown,
            result: text.clone(),
            exit: None,
            elapsed: Duration::ZERO,
        });
        self.log_call(
            id,
            name,
            args,
            None,
            &text,
            true,
            None,
            Duration::ZERO,
            true,
        );
        error_result(id, text)
    }

    /// Prune and reap notices: the log and the user, never the model.
    fn boundary_notices(&mut self, report: &CallReport, ui: &mut dyn Ui) {
        if !report.pruned.is_empty() {
            let names: Vec<&str> = report.pruned.iter().map(|p| p.name.as_str()).collect();
            self.log.record(
                "bindings_pruned",
                json!({
                    "names": names,
                    "idle_calls": report.pruned.iter().map(|p| p.idle_turns).collect::<Vec<_>>(),
                }),
            );
            ui.event(AgentEvent::Notice(format!(
                "pruned idle binding{}: {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            )));
        }
        if !report.reaped.is_empty() {
            self.log
                .record("workers_reaped", json!({ "notices": report.reaped }));
            for r in &report.reaped {
                ui.event(AgentEvent::Notice(r.clone()));
            }
        }
        if report.recovered_panic {
            self.log.record(
                "error",
                json!({"message": "a call panicked outside evaluation; the session was restored to its state before the call"}),
            );
            ui.event(AgentEvent::Notice(
                "internal error: a call panicked; the session was restored to its state before it"
                    .to_owned(),
            ));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn log_call(
        &mut self,
        id: &str,
        name: &str,
        args: &ToolArgs,
        call: Option<&crate::tool::RalCall>,
        result: &str,
        is_error: bool,
        exit: Option<i32>,
        duration: Duration,
        not_run: bool,
    ) {
        let mut rec = json!({
            "id": id,
            "name": name,
            "result": result,
            "is_error": is_error,
            "exit": exit,
            "duration_ms": millis(duration),
        });
        if not_run {
            rec["not_run"] = json!(true);
        }
        match call {
            Some(c) => {
                rec["cmd"] = json!(c.cmd);
                rec["description"] = json!(c.description);
                rec["timeout_secs"] = json!(c.timeout_secs);
            }
            None => rec["input"] = args.to_log(),
        }
        self.log.record("tool_call", rec);
    }
}

/// What the model is told after a reply stream broke.
pub const NUDGE_STALLED: &str =
    "(Your previous reply was cut off by a connection error. Continue from where it stopped.)";

/// The whole prompt the provider counted: input, cache reads and cache
/// writes.
fn prompt_tokens(u: &Usage) -> u64 {
    u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
}

fn minus(a: Usage, b: Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens.saturating_sub(b.input_tokens),
        output_tokens: a.output_tokens.saturating_sub(b.output_tokens),
        cache_creation_input_tokens: a
            .cache_creation_input_tokens
            .saturating_sub(b.cache_creation_input_tokens),
        cache_read_input_tokens: a
            .cache_read_input_tokens
            .saturating_sub(b.cache_read_input_tokens),
    }
}

/// An assistant message's blocks for the log, exactly (resume replays
/// them).
pub fn blocks_to_log(blocks: &[Block]) -> serde_json::Value {
    serde_json::Value::Array(
        blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => json!({"type": "text", "text": t}),
                Block::ToolUse { id, name, input } => match input {
                    ToolArgs::Json(v) => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": v})
                    }
                    ToolArgs::Invalid { raw, error } => json!({
                        "type": "tool_use", "id": id, "name": name,
                        "invalid_json": raw, "error": error,
                    }),
                },
                Block::ToolResult {
                    id,
                    content,
                    is_error,
                } => json!({"type": "tool_result", "id": id, "content": content, "is_error": is_error}),
            })
            .collect(),
    )
}

fn error_result(id: &str, content: String) -> Block {
    Block::ToolResult {
        id: id.to_owned(),
        content,
        is_error: true,
    }
}

/// The text answering a call the exchange did not run.
fn not_run_text(stop: Stop) -> String {
    let why = match stop {
        Stop::Interrupt => "the user interrupted",
        Stop::Terminate => "exarch was told to terminate",
        Stop::Wall => "the run's time limit passed",
    };
    format!("not run: {why} before this call started. Nothing ran.")
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Provider reports to the UI and the log.
struct UiObserver<'a> {
    ui: &'a mut dyn Ui,
    log: &'a mut SessionLog,
    /// Stream text to the user (turns do; summaries do not).
    show_text: bool,
}

impl Observer for UiObserver<'_> {
    fn text_delta(&mut self, delta: &str) {
        if self.show_text {
            self.ui.event(AgentEvent::TextDelta(delta.to_owned()));
        }
    }

    fn retrying(&mut self, attempt: u32, wait: Duration, why: &str) {
        self.log.record(
            "retry",
            json!({"attempt": attempt, "wait_ms": millis(wait), "reason": why}),
        );
        self.ui.event(AgentEvent::Retrying {
            attempt,
            wait,
            why: why.to_owned(),
        });
    }

    fn note(&mut self, text: &str) {
        self.log.record("notice", json!({ "text": text }));
        self.ui.event(AgentEvent::Notice(text.to_owned()));
    }
}

/// The pump's driver over the UI.
struct UiDriver<'a> {
    ui: &'a mut dyn Ui,
}

impl Drive for UiDriver<'_> {
    fn event(&mut self, ev: Event) {
        match ev {
            Event::Surface(t) => self.ui.event(AgentEvent::Surface(t)),
            Event::Wake => {}
        }
    }

    fn stuck(&mut self, waited: Duration) {
        self.ui.event(AgentEvent::Stuck { waited });
    }
}

#[cfg(test)]
mod tests;
