//! The agent loop: the conversation, the provider, and the session.
//!
//! [`Agent::exchange`] takes one user message and loops: request a reply;
//! run every tool call it holds, in order, each as one turn on the
//! session; append the results; repeat until a reply has no tool call.
//! It stops early at `max_turns` requests, on a provider error, or when a
//! stop flag is raised (Ctrl-C, SIGTERM, the run's wall). Every tool call
//! gets a result, including malformed ones (`tool input error: …`), calls
//! to unknown tools, and calls not run because the exchange was stopped,
//! so the history always pairs each call with its answer.
//!
//! Everything the model sees is also written to the session log, and the
//! tool result the log records is the very string the model got.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::bus::{Drive, Event};
use crate::control::{Control, Stop};
use crate::log::SessionLog;
use crate::message::{Block, Message, Reply, Role, StopReason, ToolArgs, Usage};
use crate::provider::{ChatRequest, Observer, Provider, ProviderErrorKind, ToolSpec};
use crate::session::{CallReport, Session};
use crate::tool::{input_error_text, parse_ral_input, ral_tool, unknown_tool_text, TOOL_NAME};

/// The default cap on model requests per exchange.
pub const DEFAULT_MAX_TURNS: u32 = 100;

/// What the presentation layer is told. Every method has a default that
/// ignores it.
pub trait Ui {
    /// Streamed assistant text.
    fn assistant_delta(&mut self, _text: &str) {}
    /// A reply is complete; `text` is all its prose.
    fn assistant_done(&mut self, _text: &str) {}
    /// A tool call is about to run.
    fn tool_started(&mut self, _call: &ShownCall<'_>) {}
    /// A tool call finished (the result is what the model got).
    fn tool_finished(&mut self, _call: &ShownCall<'_>, _result: &str, _exit: Option<i32>) {}
    /// A structured event a program surfaced.
    fn surface(&mut self, _text: &str) {}
    /// A host notice for the user (pruned bindings, reaped workers, a
    /// fallback): never shown to the model.
    fn notice(&mut self, _text: &str) {}
    /// A request is being retried.
    fn retrying(&mut self, _attempt: u32, _wait: Duration, _why: &str) {}
    /// A request finished.
    fn request_done(&mut self, _n: u32, _usage: &Usage, _stop: &str) {}
    /// A stopped call has not returned after `waited`.
    fn stuck(&mut self, _waited: Duration) {}
}

/// A UI that shows nothing.
#[derive(Debug, Default)]
pub struct NullUi;

impl Ui for NullUi {}

/// A tool call as shown to the user.
#[derive(Clone, Copy, Debug)]
pub struct ShownCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub description: Option<&'a str>,
    pub cmd: Option<&'a str>,
}

/// Agent policy.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// The system prompt.
    pub system: String,
    /// Model requests allowed per exchange.
    pub max_turns: u32,
}

impl Default for AgentConfig {
    fn default() -> AgentConfig {
        AgentConfig {
            system: String::new(),
            max_turns: DEFAULT_MAX_TURNS,
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeOutcome {
    pub stop: ExchangeStop,
    /// The prose of the last reply.
    pub final_text: String,
    /// What went wrong, for `Error` (and a provider error under a stop).
    pub error: Option<String>,
    /// Requests made in this exchange.
    pub turns: u32,
}

/// See the module docs.
pub struct Agent<'p> {
    provider: &'p dyn Provider,
    session: Session,
    history: Vec<Message>,
    cfg: AgentConfig,
    tools: Vec<ToolSpec>,
    usage: Usage,
    requests: u32,
    log: SessionLog,
}

impl<'p> Agent<'p> {
    /// An agent over `session`, with no log.
    pub fn new(provider: &'p dyn Provider, session: Session, cfg: AgentConfig) -> Agent<'p> {
        let timeout = session.config().default_timeout.as_secs().max(1);
        Agent {
            provider,
            session,
            history: Vec::new(),
            cfg,
            tools: vec![ral_tool(timeout)],
            usage: Usage::default(),
            requests: 0,
            log: SessionLog::disabled(),
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
        self.provider
    }

    /// Tokens used so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Model requests made so far.
    pub fn requests(&self) -> u32 {
        self.requests
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// `/clear`: forget the conversation and rebuild the shell.
    pub fn clear(&mut self) {
        self.history.clear();
        self.session.clear();
        self.log.record("cleared", serde_json::Value::Null);
    }

    fn push_user(&mut self, blocks: Vec<Block>) {
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
        let mut turns = 0u32;
        let mut final_text = String::new();
        loop {
            if let Some(stop) = ctl.stop() {
                return self.end(ExchangeStop::Stopped(stop), final_text, None, turns);
            }
            if turns >= self.cfg.max_turns {
                return self.end(ExchangeStop::MaxTurns, final_text, None, turns);
            }
            turns += 1;
            self.requests += 1;
            let reply = match self.request(ui, ctl) {
                Ok(r) => r,
                Err((kind, message)) => {
                    let stop = match kind {
                        ProviderErrorKind::Stopped(s) => ExchangeStop::Stopped(s),
                        ProviderErrorKind::Http(_)
                        | ProviderErrorKind::Transport
                        | ProviderErrorKind::Protocol
                        | ProviderErrorKind::Script => ExchangeStop::Error,
                    };
                    let error = (stop == ExchangeStop::Error).then_some(message);
                    return self.end(stop, final_text, error, turns);
                }
            };
            let msg = reply.to_message();
            final_text = msg.text();
            ui.assistant_done(&final_text);
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
                }),
            );
            if !msg.blocks.is_empty() {
                self.history.push(msg);
            }
            if calls.is_empty() {
                match reply.stop {
                    StopReason::Stalled => {
                        let note = "(Your previous reply was cut off by a connection error. \
                                    Continue from where it stopped.)";
                        self.log.record("notice", json!({"text": "the reply stream stalled after text; asking the model to continue"}));
                        self.push_user(vec![Block::Text(note.to_owned())]);
                        continue;
                    }
                    StopReason::MaxTokens => {
                        return self.end(ExchangeStop::MaxTokens, final_text, None, turns)
                    }
                    StopReason::EndTurn | StopReason::ToolUse | StopReason::Other(_) => {
                        return self.end(ExchangeStop::EndTurn, final_text, None, turns)
                    }
                }
            }
            let mut results = Vec::with_capacity(calls.len());
            for (id, name, args) in &calls {
                let block = match ctl.stop() {
                    Some(stop) => not_run(id, stop),
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
    ) -> ExchangeOutcome {
        if let Some(e) = &error {
            self.log.record("error", json!({ "message": e }));
        }
        ExchangeOutcome {
            stop,
            final_text,
            error,
            turns,
        }
    }

    fn request(
        &mut self,
        ui: &mut dyn Ui,
        ctl: &Control,
    ) -> Result<Reply, (ProviderErrorKind, String)> {
        let req = ChatRequest {
            system: &self.cfg.system,
            messages: &self.history,
            tools: &self.tools,
        };
        let started = Instant::now();
        let mut obs = UiObserver {
            ui: &mut *ui,
            log: &mut self.log,
        };
        let result = self.provider.complete(&req, &mut obs, ctl);
        let n = self.requests;
        match result {
            Ok(reply) => {
                self.usage += reply.usage;
                self.log.record(
                    "request",
                    json!({
                        "n": n,
                        "usage": reply.usage,
                        "stop_reason": reply.stop.as_str(),
                        "attempts": reply.attempts,
                        "duration_ms": millis(started.elapsed()),
                    }),
                );
                ui.request_done(n, &reply.usage, reply.stop.as_str());
                Ok(reply)
            }
            Err(e) => {
                self.log.record(
                    "request_failed",
                    json!({"n": n, "error": e.to_string(), "attempts": e.attempts,
                           "duration_ms": millis(started.elapsed())}),
                );
                Err((e.kind, e.to_string()))
            }
        }
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
        if name != TOOL_NAME {
            let text = unknown_tool_text(name);
            let shown = ShownCall {
                id,
                name,
                description: None,
                cmd: None,
            };
            ui.tool_started(&shown);
            ui.tool_finished(&shown, &text, None);
            self.log_call(id, name, args, None, &text, true, None, Duration::ZERO);
            return error_result(id, text);
        }
        let call = match parse_ral_input(args) {
            Ok(c) => c,
            Err(reason) => {
                let text = input_error_text(&reason);
                let shown = ShownCall {
                    id,
                    name,
                    description: None,
                    cmd: None,
                };
                ui.tool_started(&shown);
                ui.tool_finished(&shown, &text, None);
                self.log_call(id, name, args, None, &text, true, None, Duration::ZERO);
                return error_result(id, text);
            }
        };
        let shown = ShownCall {
            id,
            name,
            description: call.description.as_deref(),
            cmd: Some(&call.cmd),
        };
        ui.tool_started(&shown);
        let report = {
            let mut driver = UiDriver { ui: &mut *ui };
            self.session.run_turn(&call, &mut driver, ctl)
        };
        let exit = report.outcome.status();
        ui.tool_finished(&shown, &report.text, Some(exit));
        self.log_call(
            id,
            name,
            args,
            Some(&call),
            &report.text,
            false,
            Some(exit),
            report.duration,
        );
        // The call's evidence, beside the record of what the model saw.
        if let Some(ev) = &report.evidence {
            self.log.record("evidence", ev.to_log(id));
        }
        self.boundary_notices(&report, ui);
        Block::ToolResult {
            id: id.to_owned(),
            content: report.text,
            is_error: false,
        }
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
            ui.notice(&format!(
                "pruned idle binding{}: {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ));
        }
        if !report.reaped.is_empty() {
            self.log
                .record("workers_reaped", json!({ "notices": report.reaped }));
            for r in &report.reaped {
                ui.notice(r);
            }
        }
        if report.recovered_panic {
            self.log.record(
                "error",
                json!({"message": "a call panicked outside evaluation; the session was restored to its state before the call"}),
            );
            ui.notice(
                "internal error: a call panicked; the session was restored to its state before it",
            );
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
    ) {
        let mut rec = json!({
            "id": id,
            "name": name,
            "result": result,
            "is_error": is_error,
            "exit": exit,
            "duration_ms": millis(duration),
        });
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

fn error_result(id: &str, content: String) -> Block {
    Block::ToolResult {
        id: id.to_owned(),
        content,
        is_error: true,
    }
}

/// The answer to a call the exchange did not run.
fn not_run(id: &str, stop: Stop) -> Block {
    let why = match stop {
        Stop::Interrupt => "the user interrupted",
        Stop::Terminate => "exarch was told to terminate",
        Stop::Wall => "the run's time limit passed",
    };
    error_result(
        id,
        format!("not run: {why} before this call started. Nothing ran."),
    )
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Provider reports to the UI and the log.
struct UiObserver<'a> {
    ui: &'a mut dyn Ui,
    log: &'a mut SessionLog,
}

impl Observer for UiObserver<'_> {
    fn text_delta(&mut self, delta: &str) {
        self.ui.assistant_delta(delta);
    }

    fn retrying(&mut self, attempt: u32, wait: Duration, why: &str) {
        self.log.record(
            "retry",
            json!({"attempt": attempt, "wait_ms": millis(wait), "reason": why}),
        );
        self.ui.retrying(attempt, wait, why);
    }

    fn note(&mut self, text: &str) {
        self.log.record("notice", json!({ "text": text }));
        self.ui.notice(text);
    }
}

/// The pump's driver over the UI.
struct UiDriver<'a> {
    ui: &'a mut dyn Ui,
}

impl Drive for UiDriver<'_> {
    fn event(&mut self, ev: Event) {
        match ev {
            Event::Surface(t) => self.ui.surface(&t),
            Event::Wake => {}
        }
    }

    fn stuck(&mut self, waited: Duration) {
        self.ui.stuck(waited);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::provider::scripted::{Scripted, ScriptedProvider};
    use crate::provider::ProviderError;
    use crate::session::SessionConfig;

    fn agent(p: &ScriptedProvider) -> Agent<'_> {
        Agent::new(
            p,
            Session::new(SessionConfig::default()),
            AgentConfig::default(),
        )
    }

    fn results(p: &ScriptedProvider) -> Vec<(String, bool)> {
        p.requests()
            .pop()
            .unwrap_or_default()
            .iter()
            .flat_map(|m| m.blocks.clone())
            .filter_map(|b| match b {
                Block::ToolResult {
                    content, is_error, ..
                } => Some((content, is_error)),
                Block::Text(_) | Block::ToolUse { .. } => None,
            })
            .collect()
    }

    #[test]
    fn malformed_input_and_unknown_tools_answer_without_running() {
        let p = ScriptedProvider::new([
            Scripted::tool("a", "ral", ToolArgs::Json(json!({"command": "let x = 1"}))),
            Scripted::tool("b", "bash", ToolArgs::Json(json!({"cmd": "ls"}))),
            Scripted::tool("c", "ral", ToolArgs::parse("{\"cmd\": ")),
            Scripted::text("ok"),
        ]);
        let mut a = agent(&p);
        let out = a.exchange("go", &mut NullUi, &Control::default());
        assert_eq!(out.stop, ExchangeStop::EndTurn);
        assert_eq!(out.turns, 4);
        let r = results(&p);
        assert_eq!(r.len(), 3);
        assert!(
            r[0].0.starts_with("tool input error: `cmd` is missing"),
            "{}",
            r[0].0
        );
        assert!(r[0].1 && !r[0].0.contains("EXIT"));
        assert!(r[1].0.starts_with("unknown tool `bash`"), "{}", r[1].0);
        assert!(r[1].1 && !r[1].0.contains("EXIT"));
        assert!(r[2].0.contains("not valid JSON"), "{}", r[2].0);
        assert_eq!(a.session().calls(), 0, "nothing reached the shell");
    }

    #[test]
    fn max_turns_stops_a_model_that_never_finishes() {
        let p = ScriptedProvider::cycling([Scripted::ral("t", "let x = 1")]);
        let mut a = Agent::new(
            &p,
            Session::new(SessionConfig::default()),
            AgentConfig {
                max_turns: 3,
                ..AgentConfig::default()
            },
        );
        let out = a.exchange("loop", &mut NullUi, &Control::default());
        assert_eq!(out.stop, ExchangeStop::MaxTurns);
        assert_eq!(out.turns, 3);
        assert_eq!(a.requests(), 3);
        assert_eq!(a.usage().input_tokens, 30);
    }

    #[test]
    fn provider_errors_end_the_exchange_with_the_error() {
        let p = ScriptedProvider::new([Scripted::Error(ProviderError {
            kind: ProviderErrorKind::Http(401),
            message: "bad key".into(),
            attempts: 1,
        })]);
        let out = agent(&p).exchange("hi", &mut NullUi, &Control::default());
        assert_eq!(out.stop, ExchangeStop::Error);
        assert_eq!(out.error.as_deref(), Some("HTTP 401: bad key"));
    }

    #[test]
    fn a_stalled_reply_is_continued_and_tool_calls_pair_with_results() {
        let stalled = Scripted::Reply(Reply {
            blocks: vec![Block::Text("half an ans".into())],
            stop: StopReason::Stalled,
            usage: Usage::default(),
            attempts: 1,
        });
        let two_calls = Scripted::Reply(Reply {
            blocks: vec![
                Block::ToolUse {
                    id: "x1".into(),
                    name: "ral".into(),
                    input: ToolArgs::Json(json!({"cmd": "let a = 1"})),
                },
                Block::ToolUse {
                    id: "x2".into(),
                    name: "ral".into(),
                    input: ToolArgs::Json(json!({"cmd": "return $a"})),
                },
            ],
            stop: StopReason::ToolUse,
            usage: Usage::default(),
            attempts: 1,
        });
        let p = ScriptedProvider::new([stalled, two_calls, Scripted::text("fine")]);
        let mut a = agent(&p);
        let out = a.exchange("go", &mut NullUi, &Control::default());
        assert_eq!(out.final_text, "fine");
        let reqs = p.requests();
        assert!(format!("{:?}", reqs[1]).contains("cut off by a connection error"));
        let r = results(&p);
        assert_eq!(r[1].0, "VALUE:\n1\n\nEXIT: 0");
        // Every tool use in the history has its result.
        let h = a.history();
        let uses: Vec<_> = h
            .iter()
            .flat_map(|m| m.tool_uses().map(|(id, _, _)| id.to_owned()))
            .collect();
        for id in uses {
            assert!(h.iter().any(|m| m
                .blocks
                .iter()
                .any(|b| matches!(b, Block::ToolResult { id: rid, .. } if *rid == id))));
        }
    }

    #[test]
    fn a_stop_answers_the_calls_it_did_not_run() {
        let p = ScriptedProvider::new([Scripted::ral("t", "let x = 1")]);
        let ctl = Control::default();
        ctl.terminate();
        let mut a = agent(&p);
        // Stopped before the first request.
        let out = a.exchange("go", &mut NullUi, &ctl);
        assert_eq!(out.stop, ExchangeStop::Stopped(Stop::Terminate));
        assert_eq!(out.turns, 0);
        match not_run("z", Stop::Wall) {
            Block::ToolResult {
                content, is_error, ..
            } => {
                assert!(is_error && content.contains("time limit"));
            }
            Block::Text(_) | Block::ToolUse { .. } => panic!("not a result"),
        }
    }
}
