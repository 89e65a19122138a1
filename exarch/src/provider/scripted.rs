//! A provider that answers from a script: no network, for tests of the
//! agent loop and for the bench.
//!
//! Each request takes the next [`Scripted`] entry. Text blocks are
//! delivered to the observer as if streamed. Every request's conversation
//! is recorded, so a test can check exactly what the model was shown (the
//! tool result strings in particular). A request past the end of the script
//! is an error (`ProviderErrorKind::Script`), not a panic.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::{ChatRequest, Observer, Provider, ProviderError, ProviderErrorKind};
use crate::control::Control;
use crate::message::{Block, Message, Reply, StopReason, ToolArgs, Usage};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Scripted {
    Reply(Reply),
    Error(ProviderError),
}

impl Scripted {
    /// A final text answer.
    pub fn text(t: &str) -> Scripted {
        Scripted::Reply(Reply {
            blocks: vec![Block::Text(t.to_owned())],
            stop: StopReason::EndTurn,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            attempts: 1,
        })
    }

    /// One `ral` call with this source.
    pub fn ral(id: &str, cmd: &str) -> Scripted {
        Scripted::tool(
            id,
            "ral",
            ToolArgs::Json(serde_json::json!({"cmd": cmd, "description": "scripted step"})),
        )
    }

    /// One call of tool `name` with these arguments.
    pub fn tool(id: &str, name: &str, input: ToolArgs) -> Scripted {
        Scripted::Reply(Reply {
            blocks: vec![Block::ToolUse {
                id: id.to_owned(),
                name: name.to_owned(),
                input,
            }],
            stop: StopReason::ToolUse,
            usage: Usage {
                input_tokens: 10,
                output_tokens: 5,
                ..Usage::default()
            },
            attempts: 1,
        })
    }
}

/// A request as the scripted provider saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// How many tools were offered (none for a summary request).
    pub tools: usize,
    pub max_tokens: Option<u32>,
}

/// Answers a request from what it holds (tests of behaviour that depends
/// on the request, such as a context limit).
pub type Responder = Box<dyn Fn(&SeenRequest) -> Scripted + Send + Sync>;

/// See the module docs.
#[derive(Default)]
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Scripted>>,
    seen: Mutex<Vec<SeenRequest>>,
    /// Cycle the script forever instead of running out (the bench).
    cycle: bool,
    responder: Option<Responder>,
    model: Option<String>,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider")
            .field("cycle", &self.cycle)
            .field("responder", &self.responder.is_some())
            .finish_non_exhaustive()
    }
}

impl ScriptedProvider {
    /// A provider answering `script` in order.
    pub fn new(script: impl IntoIterator<Item = Scripted>) -> ScriptedProvider {
        ScriptedProvider {
            script: Mutex::new(script.into_iter().collect()),
            seen: Mutex::new(Vec::new()),
            cycle: false,
            responder: None,
            model: None,
        }
    }

    /// A provider that repeats `script` forever and records nothing.
    pub fn cycling(script: impl IntoIterator<Item = Scripted>) -> ScriptedProvider {
        ScriptedProvider {
            cycle: true,
            ..ScriptedProvider::new(script)
        }
    }

    /// A provider that answers each request with `f` of it.
    pub fn responding(
        f: impl Fn(&SeenRequest) -> Scripted + Send + Sync + 'static,
    ) -> ScriptedProvider {
        ScriptedProvider {
            responder: Some(Box::new(f)),
            ..ScriptedProvider::default()
        }
    }

    /// The same provider naming `model` (the context table keys on it).
    pub fn named(mut self, model: &str) -> ScriptedProvider {
        self.model = Some(model.to_owned());
        self
    }

    /// The conversation each request carried, in order.
    pub fn requests(&self) -> Vec<Vec<Message>> {
        self.seen().into_iter().map(|r| r.messages).collect()
    }

    /// Each request whole, in order.
    pub fn seen(&self) -> Vec<SeenRequest> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Entries not yet used.
    pub fn remaining(&self) -> usize {
        self.script.lock().map(|s| s.len()).unwrap_or(0)
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        self.model.as_deref().unwrap_or("scripted")
    }

    fn complete(
        &self,
        req: &ChatRequest<'_>,
        obs: &mut dyn Observer,
        ctl: &Control,
    ) -> Result<Reply, ProviderError> {
        if let Some(stop) = ctl.stop() {
            return Err(ProviderError {
                kind: ProviderErrorKind::Stopped(stop),
                message: "request stopped".into(),
                attempts: 1,
            });
        }
        // A cycling script (the bench) copies nothing.
        let seen = (!self.cycle || self.responder.is_some()).then(|| SeenRequest {
            system: req.system.to_owned(),
            messages: req.messages.to_vec(),
            tools: req.tools.len(),
            max_tokens: req.max_tokens,
        });
        let answer = match (&self.responder, &seen) {
            (Some(f), Some(s)) => Some(f(s)),
            (Some(_), None) | (None, _) => None,
        };
        if let (false, Some(s)) = (self.cycle, seen) {
            if let Ok(mut all) = self.seen.lock() {
                all.push(s);
            }
        }
        let next = if answer.is_some() {
            answer
        } else {
            let mut script = self.script.lock().map_err(|_| ProviderError {
                kind: ProviderErrorKind::Script,
                message: "the script lock is poisoned".into(),
                attempts: 1,
            })?;
            let next = script.pop_front();
            if self.cycle {
                if let Some(n) = &next {
                    script.push_back(n.clone());
                }
            }
            next
        };
        match next {
            Some(Scripted::Reply(r)) => {
                for b in &r.blocks {
                    if let Block::Text(t) = b {
                        obs.text_delta(t);
                    }
                }
                Ok(r)
            }
            Some(Scripted::Error(e)) => Err(e),
            None => Err(ProviderError {
                kind: ProviderErrorKind::Script,
                message: "the script has no more replies".into(),
                attempts: 1,
            }),
        }
    }
}
