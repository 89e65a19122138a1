//! Headless mode: one seeded exchange, then exit.
//!
//! stdout carries exactly one thing, written before teardown (before the
//! session and its workers are dropped): with `--output-format json` one
//! JSON object with Claude Code's result keys (`type: "result"`,
//! `is_error`, `result`, `stop_reason`, `num_turns`, `duration_ms`,
//! `total_cost_usd`, `usage{…}`, `error` on failure, plus `subtype`,
//! `model` and `session_log`); with `text`, the final reply. Progress is
//! one line per event on stderr. A run stopped by SIGTERM, SIGINT or the
//! wall still writes its result (`stop_reason` `interrupted` or
//! `max_wall`). If a stopped tool call does not return within the grace
//! period, the result is written from the driver and the process exits
//! without waiting for it.

use std::io::Write;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use serde_json::{json, Value};

use crate::agent::{
    Agent, AgentEvent, ContextStatus, CostReport, ExchangeOutcome, ExchangeStop, Purpose,
    RequestUsage, Ui,
};
use crate::control::{Control, Stop};
use crate::message::Usage;

/// `--output-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// What a headless run needs.
pub struct HeadlessRun<'a, 'p> {
    pub agent: Agent<'p>,
    /// The prompt; `None` continues a resumed conversation as it stands.
    pub prompt: Option<&'a str>,
    pub ctl: &'a Control,
    pub format: OutputFormat,
    pub started: Instant,
}

/// The result object's fields that do not depend on how the run ended.
#[derive(Clone, Debug)]
struct Meta {
    model: String,
    session_log: Option<String>,
    started: Instant,
    format: OutputFormat,
}

/// The exit status for an exchange's end.
pub fn exit_code(stop: &ExchangeStop) -> i32 {
    match stop {
        ExchangeStop::EndTurn => 0,
        ExchangeStop::MaxTokens | ExchangeStop::MaxTurns | ExchangeStop::Error => 1,
        ExchangeStop::Stopped(s) => s.exit_code(),
    }
}

fn subtype(stop: &ExchangeStop) -> &'static str {
    match stop {
        ExchangeStop::EndTurn => "success",
        ExchangeStop::MaxTurns => "error_max_turns",
        ExchangeStop::Stopped(Stop::Wall) => "error_max_wall",
        ExchangeStop::Stopped(Stop::Interrupt | Stop::Terminate) => "error_interrupted",
        ExchangeStop::MaxTokens | ExchangeStop::Error => "error_during_execution",
    }
}

/// What the result object reports besides how the exchange ended.
#[derive(Clone, Debug, Default)]
pub struct Accounts<'a> {
    /// The run's totals (turns, summaries, tokens, dollars).
    pub total: CostReport,
    /// Every model request, in order.
    pub ledger: &'a [RequestUsage],
    /// The context window's state at the end.
    pub context: Option<ContextStatus>,
}

/// The result object: Claude Code's keys, and `exchanges` (each model
/// request's usage and cost) and `context` (the window and what
/// compaction did).
pub fn result_object(
    out: &ExchangeOutcome,
    accounts: &Accounts<'_>,
    model: &str,
    duration: Duration,
    session_log: Option<&str>,
) -> Value {
    let num_turns = accounts.total.turns;
    let is_error = out.stop != ExchangeStop::EndTurn;
    let error = match &out.stop {
        ExchangeStop::EndTurn => None,
        ExchangeStop::Error => Some(out.error.clone().unwrap_or_else(|| "provider error".into())),
        ExchangeStop::MaxTurns => Some(format!(
            "the model did not finish within the turn limit ({} requests)",
            out.turns
        )),
        ExchangeStop::MaxTokens => {
            Some("the final reply was cut off by the output token limit".to_owned())
        }
        ExchangeStop::Stopped(Stop::Wall) => Some("the run reached its --max-wall limit".into()),
        ExchangeStop::Stopped(Stop::Interrupt) => Some("interrupted (SIGINT)".into()),
        ExchangeStop::Stopped(Stop::Terminate) => Some("terminated (SIGTERM)".into()),
    };
    let exchanges: Vec<Value> = accounts
        .ledger
        .iter()
        .map(|r| {
            json!({
                "n": r.n,
                "purpose": r.purpose.as_str(),
                "model": r.model,
                "usage": r.usage,
                "cost_usd": r.cost_usd,
            })
        })
        .collect();
    let mut obj = json!({
        "type": "result",
        "subtype": subtype(&out.stop),
        "is_error": is_error,
        "result": out.final_text,
        "stop_reason": out.stop.as_str(),
        "num_turns": num_turns,
        "duration_ms": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        "total_cost_usd": accounts.total.cost_usd,
        "usage": accounts.total.usage,
        "model": model,
        "session_log": session_log,
        "exchanges": exchanges,
    });
    if let Some(c) = &accounts.context {
        obj["context"] = json!({
            "window": c.window,
            "window_source": c.source.as_str(),
            "reply_reserve": c.reply_reserve,
            "last_prompt_estimate": c.estimate,
            "last_prompt_tokens": c.prompt_tokens,
            "evicted_outputs": c.evicted,
            "summaries": c.summaries,
            "summary_requests": accounts.total.summaries,
        });
    }
    if let Some(e) = error {
        obj["error"] = Value::String(e);
    }
    obj
}

fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// For a usage error under `--output-format json`: a result object all the
/// same, so a harness always gets one.
pub fn write_usage_error(msg: &str, started: Instant) {
    let obj = json!({
        "type": "result",
        "subtype": "error_usage",
        "is_error": true,
        "result": "",
        "stop_reason": "usage_error",
        "num_turns": 0,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "total_cost_usd": 0.0,
        "usage": Usage::default(),
        "error": msg,
    });
    write_stdout(&obj.to_string());
}

/// Runs a headless exchange; returns the exit status.
pub fn run(r: HeadlessRun<'_, '_>) -> i32 {
    let HeadlessRun {
        mut agent,
        prompt,
        ctl,
        format,
        started,
    } = r;
    let meta = Meta {
        model: agent.provider().model().to_owned(),
        session_log: agent.log_mut().path().map(|p| p.display().to_string()),
        started,
        format,
    };
    let mut ui = HeadlessUi {
        meta: meta.clone(),
        ctl: ctl.clone(),
        total: CostReport::default(),
        ledger: Vec::new(),
        context: None,
        turns: 0,
        last_text: String::new(),
    };
    let out = match prompt {
        Some(p) => agent.exchange(p, &mut ui, ctl),
        None => agent.continue_exchange(&mut ui, ctl),
    };
    let total = agent.cost();
    let code = exit_code(&out.stop);
    let obj = result_object(
        &out,
        &Accounts {
            total: total.clone(),
            ledger: agent.ledger(),
            context: Some(agent.context_status()),
        },
        agent.provider().model(),
        started.elapsed(),
        meta.session_log.as_deref(),
    );
    // The result goes out before anything is torn down.
    match format {
        OutputFormat::Json => write_stdout(&obj.to_string()),
        OutputFormat::Text => {
            if !out.final_text.is_empty() {
                write_stdout(&out.final_text);
            }
            if let Some(e) = obj.get("error").and_then(Value::as_str) {
                eprintln!("exarch: {e}");
            }
        }
    }
    eprintln!("[stop: {}]", out.stop.as_str());
    agent.log_mut().record(
        "session_ended",
        json!({
            "stop_reason": out.stop.as_str(),
            "is_error": obj["is_error"],
            "num_turns": total.turns,
            "summary_requests": total.summaries,
            "usage": total.usage,
            "total_cost_usd": obj["total_cost_usd"],
            "duration_ms": obj["duration_ms"],
        }),
    );
    // Teardown: the session drops, cancelling its workers (bounded).
    drop(agent);
    code
}

/// One line per event on stderr.
struct HeadlessUi {
    meta: Meta,
    ctl: Control,
    total: CostReport,
    ledger: Vec<RequestUsage>,
    context: Option<ContextStatus>,
    turns: u32,
    last_text: String,
}

fn first_line(s: &str, max: usize) -> String {
    let line = s.trim().lines().next().unwrap_or_default();
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_owned(),
    }
}

impl Ui for HeadlessUi {
    fn event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::TextDelta(_) => {}
            AgentEvent::AssistantDone { text } => {
                if !text.trim().is_empty() {
                    eprintln!("[assistant] {}", first_line(&text, 200));
                    self.last_text = text;
                }
            }
            AgentEvent::ToolStarted(call) => {
                let what = call.description.as_deref().unwrap_or("");
                let cmd = call
                    .cmd
                    .as_deref()
                    .map(|c| first_line(c, 120))
                    .unwrap_or_default();
                eprintln!(
                    "[tool: {}] {what}{}{cmd}",
                    call.name,
                    if what.is_empty() { "" } else { " — " }
                );
            }
            AgentEvent::ToolFinished { result, exit, .. } => match exit {
                Some(code) => eprintln!("[exit {code}]"),
                None => eprintln!("[tool error] {}", first_line(&result, 200)),
            },
            AgentEvent::Surface(text) => eprintln!("[surface] {}", first_line(&text, 200)),
            AgentEvent::Notice(text) => eprintln!("[notice] {text}"),
            AgentEvent::Retrying { attempt, wait, why } => eprintln!(
                "[retry] attempt {attempt} failed ({}); retrying in {:.1}s",
                first_line(&why, 160),
                wait.as_secs_f64()
            ),
            AgentEvent::Usage {
                request,
                total,
                context,
                stop,
            } => {
                let u = request.usage;
                let label = match request.purpose {
                    Purpose::Turn => format!("turn {}", total.turns),
                    Purpose::Summary => "summary".to_owned(),
                };
                eprintln!(
                    "[{label}] in {} out {} cache-read {} cache-write {} ({stop}); context ~{} of {} tokens",
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_input_tokens,
                    u.cache_creation_input_tokens,
                    context.prompt_tokens.unwrap_or(context.estimate),
                    context.window,
                );
                self.turns = total.turns;
                self.total = total;
                self.ledger.push(request);
                self.context = Some(context);
            }
            AgentEvent::Compacted(c) => eprintln!(
                "[context] {} → {} tokens: {} outputs evicted, {} messages summarised",
                c.before, c.after, c.evicted, c.summarised_messages
            ),
            AgentEvent::Stuck { waited } => self.stuck(waited),
        }
    }
}

impl HeadlessUi {
    /// A stopped call that will not return: write the result now and exit,
    /// so no hung evaluation can cost the run its result.
    fn stuck(&mut self, waited: Duration) {
        let stop = self.ctl.stop().unwrap_or(Stop::Terminate);
        let out = ExchangeOutcome {
            stop: ExchangeStop::Stopped(stop),
            final_text: self.last_text.clone(),
            error: None,
            turns: self.turns,
            usage: self.total.usage,
            cost_usd: self.total.cost_usd,
        };
        let mut obj = result_object(
            &out,
            &Accounts {
                total: self.total.clone(),
                ledger: &self.ledger,
                context: self.context,
            },
            &self.meta.model,
            self.meta.started.elapsed(),
            self.meta.session_log.as_deref(),
        );
        let note = format!(
            "{}; a tool call did not stop within {}s and was abandoned",
            obj["error"].as_str().unwrap_or("stopped"),
            waited.as_secs()
        );
        obj["error"] = Value::String(note.clone());
        match self.meta.format {
            OutputFormat::Json => write_stdout(&obj.to_string()),
            OutputFormat::Text => {
                if !self.last_text.is_empty() {
                    write_stdout(&self.last_text);
                }
            }
        }
        eprintln!("exarch: {note}");
        std::process::exit(stop.exit_code());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_carry_claude_code_keys() {
        let u = Usage {
            input_tokens: 3,
            output_tokens: 4,
            cache_creation_input_tokens: 5,
            cache_read_input_tokens: 6,
        };
        let out = ExchangeOutcome {
            stop: ExchangeStop::EndTurn,
            final_text: "done".into(),
            error: None,
            turns: 2,
            usage: u,
            cost_usd: None,
        };
        let ledger = [RequestUsage {
            n: 1,
            purpose: Purpose::Summary,
            model: "mystery".into(),
            usage: u,
            cost_usd: None,
        }];
        let accounts = Accounts {
            total: CostReport {
                turns: 2,
                summaries: 1,
                usage: u,
                cost_usd: None,
                unpriced: 3,
            },
            ledger: &ledger,
            context: None,
        };
        let v = result_object(
            &out,
            &accounts,
            "mystery",
            Duration::from_millis(1500),
            None,
        );
        for key in [
            "type",
            "is_error",
            "result",
            "stop_reason",
            "num_turns",
            "duration_ms",
            "total_cost_usd",
            "usage",
            "exchanges",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert_eq!(v["type"], "result");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["num_turns"], 2);
        assert_eq!(v["duration_ms"], 1500);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 6);
        assert_eq!(v["total_cost_usd"], Value::Null);
        assert_eq!(v["exchanges"][0]["purpose"], "summary");
        assert_eq!(v["exchanges"][0]["usage"]["output_tokens"], 4);
        assert!(v.get("error").is_none());
        let stopped = ExchangeOutcome {
            stop: ExchangeStop::Stopped(Stop::Terminate),
            ..out
        };
        let priced = Accounts {
            total: CostReport {
                cost_usd: Some(0.5),
                ..accounts.total.clone()
            },
            ..accounts
        };
        let v = result_object(
            &stopped,
            &priced,
            "gpt-4.1",
            Duration::ZERO,
            Some("/x.jsonl"),
        );
        assert_eq!(v["stop_reason"], "interrupted");
        assert_eq!(v["is_error"], true);
        assert_eq!(v["total_cost_usd"].as_f64(), Some(0.5));
        assert_eq!(exit_code(&stopped.stop), 143);
        assert_eq!(exit_code(&ExchangeStop::Stopped(Stop::Wall)), 124);
        assert_eq!(exit_code(&ExchangeStop::Error), 1);
    }
}
