//! Interactive line mode: a plain chat on the terminal.
//!
//! The reply streams to stdout as it arrives; each tool call shows its
//! description (or its first line of source) and its exit status. Slash
//! commands: `/clear` (forget the conversation and start a fresh shell),
//! `/compact` (compact the conversation now), `/context` (the window and
//! what compaction did), `/cost` (tokens and dollars so far), `/model
//! NAME` and `/profile NAME` (switch for later requests and calls),
//! `/resources` (what the session holds; never shown to the model),
//! `/quit`. All but `/resources` and `/quit` are [`Command`]s, the same
//! ones a terminal UI gives. Ctrl-C cancels the running request or tool call and returns to
//! the prompt; the session, its bindings and its workers stay. Ctrl-D or
//! `/quit` leaves; SIGTERM leaves at once.
//!
//! Input is read on its own thread so a SIGTERM is noticed while the
//! prompt waits.

use std::io::{BufRead, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use clap::ValueEnum;

use serde_json::json;

use crate::agent::{Agent, AgentEvent, Command, CommandOutcome, ExchangeStop, Ui};
use crate::control::{Control, Stop};
use crate::profiles::Profile;

const HELP: &str = "commands: /clear /compact /context /cost /model NAME /profile NAME /resources /quit   (Ctrl-C cancels the running step)";

/// Runs the chat until `/quit`, end of input, or a terminate/wall stop;
/// returns the exit status.
pub fn run(mut agent: Agent<'_>, ctl: &Control, started: Instant) -> i32 {
    println!(
        "exarch · {} via {} · {HELP}",
        agent.provider().model(),
        agent.provider().name()
    );
    if let Some(p) = agent.log_mut().path() {
        println!("session log: {}", p.display());
    }
    let (tx, rx) = mpsc::channel::<Option<String>>();
    let reader = std::thread::Builder::new()
        .name("exarch-input".to_owned())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut lines = stdin.lock();
            loop {
                let mut line = String::new();
                match lines.read_line(&mut line) {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(None);
                        return;
                    }
                    Ok(_) => {
                        if tx.send(Some(line)).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    if reader.is_err() {
        eprintln!("exarch: cannot start the input reader");
        return 1;
    }
    let mut ui = ChatUi::default();
    let mut code = 0;
    'chat: loop {
        print!("\n> ");
        let _ = std::io::stdout().flush();
        let line = loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(Some(l)) => break l,
                Ok(None) | Err(RecvTimeoutError::Disconnected) => {
                    println!();
                    break 'chat;
                }
                Err(RecvTimeoutError::Timeout) => match ctl.stop() {
                    Some(s @ (Stop::Terminate | Stop::Wall)) => {
                        code = s.exit_code();
                        break 'chat;
                    }
                    Some(Stop::Interrupt) => {
                        ctl.take_interrupt();
                        print!("\n(type /quit or press Ctrl-D to leave)\n> ");
                        let _ = std::io::stdout().flush();
                    }
                    None => {}
                },
            }
        };
        let line = line.trim();
        match line {
            "" => continue,
            "/quit" | "/exit" => break,
            "/clear" => {
                agent.clear();
                println!("(conversation and shell cleared)");
                continue;
            }
            "/resources" => {
                for (k, v) in agent.session().resources() {
                    println!("  {k:<14} {v}");
                }
                let u = agent.usage();
                println!(
                    "  {:<14} {} requests; in {} out {} cache-read {} cache-write {}",
                    "tokens",
                    agent.requests(),
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_input_tokens,
                    u.cache_creation_input_tokens
                );
                if let Some(p) = agent.log_mut().path() {
                    println!("  {:<14} {}", "log", p.display());
                }
                continue;
            }
            s if s.starts_with('/') => {
                match parse_command(s) {
                    Ok(cmd) => {
                        let outcome = agent.command(cmd, &mut ui, ctl);
                        ui.end_reply();
                        show_outcome(&outcome);
                    }
                    Err(e) => println!("{e}; {HELP}"),
                }
                continue;
            }
            _ => {}
        }
        ctl.take_interrupt();
        let out = agent.exchange(line, &mut ui, ctl);
        ui.end_reply();
        match &out.stop {
            ExchangeStop::EndTurn => {}
            ExchangeStop::Stopped(Stop::Interrupt) => {
                ctl.take_interrupt();
                println!("(interrupted; the session is kept)");
            }
            ExchangeStop::Stopped(s @ (Stop::Terminate | Stop::Wall)) => {
                code = s.exit_code();
                break;
            }
            ExchangeStop::MaxTurns => println!("(stopped: the turn limit was reached)"),
            ExchangeStop::MaxTokens => println!("(the reply hit the output token limit)"),
            ExchangeStop::Error => {
                println!(
                    "error: {}",
                    out.error.as_deref().unwrap_or("provider error")
                );
            }
        }
    }
    let total = agent.cost();
    agent.log_mut().record(
        "session_ended",
        json!({
            "stop_reason": if code == 0 { "quit" } else { "interrupted" },
            "is_error": code != 0,
            "num_turns": total.turns,
            "summary_requests": total.summaries,
            "usage": total.usage,
            "total_cost_usd": total.cost_usd,
            "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }),
    );
    drop(agent);
    code
}

/// A slash command as an agent [`Command`].
fn parse_command(line: &str) -> Result<Command, String> {
    let (name, arg) = line.split_once(' ').unwrap_or((line, ""));
    let arg = arg.trim();
    match name {
        "/compact" => Ok(Command::Compact),
        "/context" => Ok(Command::Context),
        "/cost" => Ok(Command::Cost),
        "/model" if !arg.is_empty() => Ok(Command::SetModel(arg.to_owned())),
        "/model" => Err("/model needs a model name".to_owned()),
        "/profile" => Profile::from_str(arg, true)
            .map(Command::SetProfile)
            .map_err(|_| format!("/profile needs one of: {}", profile_names())),
        other => Err(format!("unknown command {other}")),
    }
}

fn profile_names() -> String {
    Profile::value_variants()
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn show_outcome(outcome: &CommandOutcome) {
    match outcome {
        // The compaction's own event has been shown.
        CommandOutcome::Compacted(_) => {}
        CommandOutcome::ModelSet { model, window } => {
            println!("(model {model}, context window {window} tokens)")
        }
        CommandOutcome::ProfileSet { profile } => {
            println!("(profile {}: later calls run under it)", profile.name())
        }
        CommandOutcome::Cost(c) => println!(
            "  {} turns, {} summaries; in {} out {} cache-read {} cache-write {}; {}",
            c.turns,
            c.summaries,
            c.usage.input_tokens,
            c.usage.output_tokens,
            c.usage.cache_read_input_tokens,
            c.usage.cache_creation_input_tokens,
            match c.cost_usd {
                Some(d) => format!("${d:.4}"),
                None => "cost unknown for this model".to_owned(),
            }
        ),
        CommandOutcome::Context(c) => println!(
            "  window {} tokens ({}), {} kept for the reply; last prompt ~{} tokens; {} outputs \
             evicted, {} summaries",
            c.window,
            c.source.as_str(),
            c.reply_reserve,
            c.prompt_tokens.unwrap_or(c.estimate),
            c.evicted,
            c.summaries
        ),
        CommandOutcome::Cleared => println!("(conversation and shell cleared)"),
        CommandOutcome::Refused(why) => println!("(not done: {why})"),
    }
}

/// Terminal presentation of one exchange.
#[derive(Default)]
struct ChatUi {
    /// Text is being streamed on the current line.
    mid_text: bool,
}

impl ChatUi {
    fn end_reply(&mut self) {
        if self.mid_text {
            println!();
            self.mid_text = false;
        }
    }
}

impl Ui for ChatUi {
    fn event(&mut self, ev: AgentEvent) {
        match ev {
            AgentEvent::TextDelta(text) => {
                if !self.mid_text {
                    println!();
                }
                print!("{text}");
                let _ = std::io::stdout().flush();
                self.mid_text = true;
            }
            AgentEvent::AssistantDone { .. } => self.end_reply(),
            AgentEvent::ToolStarted(call) => {
                self.end_reply();
                let shown = match (&call.description, &call.cmd) {
                    (Some(d), _) => d.clone(),
                    (None, Some(c)) => c.trim().lines().next().unwrap_or_default().to_owned(),
                    (None, None) => call.name.clone(),
                };
                println!("● {shown}");
            }
            AgentEvent::ToolFinished { result, exit, .. } => match exit {
                Some(0) => println!("  ⎿ ok"),
                Some(n) => println!("  ⎿ exit {n}"),
                None => println!("  ⎿ {}", result.lines().next().unwrap_or("tool error")),
            },
            AgentEvent::Surface(text) => println!("  ▸ {text}"),
            AgentEvent::Notice(text) => {
                self.end_reply();
                println!("  ({text})");
            }
            AgentEvent::Retrying { wait, why, .. } => {
                self.end_reply();
                println!("  (retrying in {:.1}s: {why})", wait.as_secs_f64());
            }
            AgentEvent::Usage { .. } => {}
            AgentEvent::Compacted(c) => {
                self.end_reply();
                println!(
                    "  (context compacted: {} → {} tokens; {} outputs evicted, {} messages \
                     summarised)",
                    c.before, c.after, c.evicted, c.summarised_messages
                );
            }
            AgentEvent::Stuck { waited } => {
                if waited.as_millis() % 5000 < 20 {
                    println!("  (still waiting for the call to stop…)");
                }
            }
        }
    }
}
