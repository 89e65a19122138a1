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

use crate::agent::{Agent, ExchangeOutcome, ExchangeStop, ShownCall, Ui};
use crate::control::{Control, Stop};
use crate::message::Usage;
use crate::pricing::cost;

/// `--output-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
}

/// What a headless run needs.
pub struct HeadlessRun<'a, 'p> {
    pub agent: Agent<'p>,
    pub prompt: &'a str,
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

/// The result object.
pub fn result_object(
    out: &ExchangeOutcome,
    num_turns: u32,
    usage: &Usage,
    model: &str,
    duration: Duration,
    session_log: Option<&str>,
) -> Value {
    let is_error = out.stop != ExchangeStop::EndTurn;
    let error = match &out.stop {
        ExchangeStop::EndTurn => None,
        ExchangeStop::Error => Some(out.error.clone().unwrap_or_else(|| "provider error".into())),
        ExchangeStop::MaxTurns => Some(format!(
            "the model did not finish within the turn limit ({num_turns} requests)"
        )),
        ExchangeStop::MaxTokens => {
            Some("the final reply was cut off by the output token limit".to_owned())
        }
        ExchangeStop::Stopped(Stop::Wall) => Some("the run reached its --max-wall limit".into()),
        ExchangeStop::Stopped(Stop::Interrupt) => Some("interrupted (SIGINT)".into()),
        ExchangeStop::Stopped(Stop::Terminate) => Some("terminated (SIGTERM)".into()),
    };
    let mut obj = json!({
        "type": "result",
        "subtype": subtype(&out.stop),
        "is_error": is_error,
        "result": out.final_text,
        "stop_reason": out.stop.as_str(),
        "num_turns": num_turns,
        "duration_ms": u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
        "total_cost_usd": cost(model, usage),
        "usage": usage,
        "model": model,
        "session_log": session_log,
    });
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
        usage: Usage::default(),
        turns: 0,
        last_text: String::new(),
    };
    let out = agent.exchange(prompt, &mut ui, ctl);
    let usage = agent.usage();
    let num_turns = agent.requests();
    let code = exit_code(&out.stop);
    let obj = result_object(
        &out,
        num_turns,
        &usage,
        &meta.model,
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
            "num_turns": num_turns,
            "usage": usage,
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
    usage: Usage,
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
    fn assistant_done(&mut self, text: &str) {
        if !text.trim().is_empty() {
            eprintln!("[assistant] {}", first_line(text, 200));
            self.last_text = text.to_owned();
        }
    }

    fn tool_started(&mut self, call: &ShownCall<'_>) {
        let what = call.description.unwrap_or("");
        let cmd = call.cmd.map(|c| first_line(c, 120)).unwrap_or_default();
        eprintln!(
            "[tool: {}] {what}{}{cmd}",
            call.name,
            if what.is_empty() { "" } else { " — " }
        );
    }

    fn tool_finished(&mut self, _call: &ShownCall<'_>, result: &str, exit: Option<i32>) {
        match exit {
            Some(code) => eprintln!("[exit {code}]"),
            None => eprintln!("[tool error] {}", first_line(result, 200)),
        }
    }

    fn surface(&mut self, text: &str) {
        eprintln!("[surface] {}", first_line(text, 200));
    }

    fn notice(&mut self, text: &str) {
        eprintln!("[notice] {text}");
    }

    fn retrying(&mut self, attempt: u32, wait: Duration, why: &str) {
        eprintln!(
            "[retry] attempt {attempt} failed ({}); retrying in {:.1}s",
            first_line(why, 160),
            wait.as_secs_f64()
        );
    }

    fn request_done(&mut self, n: u32, usage: &Usage, stop: &str) {
        self.usage += *usage;
        self.turns = n;
        eprintln!(
            "[turn {n}] in {} out {} cache-read {} cache-write {} ({stop})",
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens
        );
    }

    /// A stopped call that will not return: write the result now and exit,
    /// so no hung evaluation can cost the run its result.
    fn stuck(&mut self, waited: Duration) {
        let stop = self.ctl.stop().unwrap_or(Stop::Terminate);
        let out = ExchangeOutcome {
            stop: ExchangeStop::Stopped(stop),
            final_text: self.last_text.clone(),
            error: None,
            turns: self.turns,
        };
        let mut obj = result_object(
            &out,
            self.turns,
            &self.usage,
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
        let out = ExchangeOutcome {
            stop: ExchangeStop::EndTurn,
            final_text: "done".into(),
            error: None,
            turns: 2,
        };
        let u = Usage {
            input_tokens: 3,
            output_tokens: 4,
            cache_creation_input_tokens: 5,
            cache_read_input_tokens: 6,
        };
        let v = result_object(&out, 2, &u, "mystery", Duration::from_millis(1500), None);
        for key in [
            "type",
            "is_error",
            "result",
            "stop_reason",
            "num_turns",
            "duration_ms",
            "total_cost_usd",
            "usage",
        ] {
            assert!(v.get(key).is_some(), "{key}");
        }
        assert_eq!(v["type"], "result");
        assert_eq!(v["is_error"], false);
        assert_eq!(v["duration_ms"], 1500);
        assert_eq!(v["usage"]["cache_read_input_tokens"], 6);
        assert_eq!(v["total_cost_usd"], Value::Null);
        assert!(v.get("error").is_none());
        let stopped = ExchangeOutcome {
            stop: ExchangeStop::Stopped(Stop::Terminate),
            ..out
        };
        let v = result_object(&stopped, 2, &u, "gpt-4.1", Duration::ZERO, Some("/x.jsonl"));
        assert_eq!(v["stop_reason"], "interrupted");
        assert_eq!(v["is_error"], true);
        assert!(v["total_cost_usd"].as_f64().is_some());
        assert_eq!(exit_code(&stopped.stop), 143);
        assert_eq!(exit_code(&ExchangeStop::Stopped(Stop::Wall)), 124);
        assert_eq!(exit_code(&ExchangeStop::Error), 1);
    }
}
