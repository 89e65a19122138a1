//! Interactive line mode: a plain chat on the terminal.
//!
//! The reply streams to stdout as it arrives; each tool call shows its
//! description (or its first line of source) and its exit status. Slash
//! commands: `/clear` (forget the conversation and start a fresh shell),
//! `/resources` (what the session holds; never shown to the model),
//! `/quit`. Ctrl-C cancels the running request or tool call and returns to
//! the prompt; the session, its bindings and its workers stay. Ctrl-D or
//! `/quit` leaves; SIGTERM leaves at once.
//!
//! Input is read on its own thread so a SIGTERM is noticed while the
//! prompt waits.

use std::io::{BufRead, Write};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::agent::{Agent, ExchangeStop, ShownCall, Ui};
use crate::control::{Control, Stop};
use crate::message::Usage;
use crate::pricing::cost;

const HELP: &str = "commands: /clear  /resources  /quit   (Ctrl-C cancels the running step)";

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
                println!("unknown command {s}; {HELP}");
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
    let usage = agent.usage();
    let requests = agent.requests();
    let total = cost(agent.provider().model(), &usage);
    agent.log_mut().record(
        "session_ended",
        json!({
            "stop_reason": if code == 0 { "quit" } else { "interrupted" },
            "is_error": code != 0,
            "num_turns": requests,
            "usage": usage,
            "total_cost_usd": total,
            "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }),
    );
    drop(agent);
    code
}

/// Terminal presentation of one exchange.
#[derive(Default)]
struct ChatUi {
    /// Text is being streamed on the current line.
    mid_text: bool,
    usage: Usage,
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
    fn assistant_delta(&mut self, text: &str) {
        if !self.mid_text {
            println!();
        }
        print!("{text}");
        let _ = std::io::stdout().flush();
        self.mid_text = true;
    }

    fn assistant_done(&mut self, _text: &str) {
        self.end_reply();
    }

    fn tool_started(&mut self, call: &ShownCall<'_>) {
        self.end_reply();
        let shown = match (call.description, call.cmd) {
            (Some(d), _) => d.to_owned(),
            (None, Some(c)) => c.trim().lines().next().unwrap_or_default().to_owned(),
            (None, None) => call.name.to_owned(),
        };
        println!("● {shown}");
    }

    fn tool_finished(&mut self, _call: &ShownCall<'_>, result: &str, exit: Option<i32>) {
        match exit {
            Some(0) => println!("  ⎿ ok"),
            Some(n) => println!("  ⎿ exit {n}"),
            None => println!("  ⎿ {}", result.lines().next().unwrap_or("tool error")),
        }
    }

    fn surface(&mut self, text: &str) {
        println!("  ▸ {text}");
    }

    fn notice(&mut self, text: &str) {
        self.end_reply();
        println!("  ({text})");
    }

    fn retrying(&mut self, _attempt: u32, wait: Duration, why: &str) {
        self.end_reply();
        println!("  (retrying in {:.1}s: {why})", wait.as_secs_f64());
    }

    fn request_done(&mut self, _n: u32, usage: &Usage, _stop: &str) {
        self.usage += *usage;
    }

    fn stuck(&mut self, waited: Duration) {
        if waited.as_millis() % 5000 < 20 {
            println!("  (still waiting for the call to stop…)");
        }
    }
}
