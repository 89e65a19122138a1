//! The provider-neutral conversation: messages made of blocks, a model's
//! reply, and token usage. Both wire formats (`provider::anthropic`,
//! `provider::openai`) translate to and from these types, so the agent loop
//! never sees a wire shape.

use std::ops::AddAssign;

use serde::Serialize;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

/// The arguments of a tool call as the model sent them.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolArgs {
    /// Parsed JSON (any shape; the tool decides whether it fits).
    Json(serde_json::Value),
    /// Text that was not JSON (a truncated stream, a confused model), kept
    /// so the tool can say what was wrong.
    Invalid { raw: String, error: String },
}

impl ToolArgs {
    /// Parses a complete argument text; an empty text is an empty object
    /// (servers send `""` for a call with no arguments).
    pub fn parse(raw: &str) -> ToolArgs {
        if raw.trim().is_empty() {
            return ToolArgs::Json(serde_json::Value::Object(Default::default()));
        }
        match serde_json::from_str(raw) {
            Ok(v) => ToolArgs::Json(v),
            Err(e) => ToolArgs::Invalid {
                raw: raw.to_owned(),
                error: e.to_string(),
            },
        }
    }

    /// What to replay to a provider: the object itself, or `{}` when the
    /// model sent something that is not an object (wire formats require
    /// one; the tool result already told the model what was wrong).
    pub fn replay_object(&self) -> serde_json::Value {
        match self {
            ToolArgs::Json(v @ serde_json::Value::Object(_)) => v.clone(),
            ToolArgs::Json(_) | ToolArgs::Invalid { .. } => {
                serde_json::Value::Object(Default::default())
            }
        }
    }

    /// The arguments as JSON for logs (the raw text when they were not).
    pub fn to_log(&self) -> serde_json::Value {
        match self {
            ToolArgs::Json(v) => v.clone(),
            ToolArgs::Invalid { raw, error } => {
                serde_json::json!({ "invalid_json": raw, "error": error })
            }
        }
    }
}

/// One piece of a message.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// Prose.
    Text(String),
    /// The model asks for a tool call.
    ToolUse {
        id: String,
        name: String,
        input: ToolArgs,
    },
    /// The answer to the tool call with this id.
    ToolResult {
        id: String,
        content: String,
        is_error: bool,
    },
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    pub blocks: Vec<Block>,
}

impl Message {
    /// A user message of plain text.
    pub fn user_text(text: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            blocks: vec![Block::Text(text.into())],
        }
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.blocks {
            if let Block::Text(t) = b {
                out.push_str(t);
            }
        }
        out
    }

    /// The tool calls, in order.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &ToolArgs)> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            Block::Text(_) | Block::ToolResult { .. } => None,
        })
    }
}

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// The output token limit cut it off.
    MaxTokens,
    /// The stream broke after text had been delivered; what arrived is
    /// kept and the request was not re-issued.
    Stalled,
    /// Anything else the server said, verbatim.
    Other(String),
}

impl StopReason {
    /// The name used in logs and the headless result.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Stalled => "stalled",
            StopReason::Other(s) => s,
        }
    }
}

/// Token counts, in Anthropic's four buckets (OpenAI's are mapped onto
/// them: its cached prompt tokens are cache reads and are not counted
/// again as input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// Whether every count is zero.
    pub fn is_zero(&self) -> bool {
        *self == Usage::default()
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_creation_input_tokens += o.cache_creation_input_tokens;
        self.cache_read_input_tokens += o.cache_read_input_tokens;
    }
}

/// A model's answer to one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    /// Text and tool-use blocks, in the order the model produced them.
    pub blocks: Vec<Block>,
    pub stop: StopReason,
    pub usage: Usage,
    /// How many attempts the request took (1 without retries).
    pub attempts: u32,
}

impl Reply {
    /// The reply as an assistant message for the history.
    pub fn to_message(&self) -> Message {
        Message {
            role: Role::Assistant,
            blocks: self.blocks.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_arguments_are_an_empty_object() {
        assert_eq!(ToolArgs::parse("  "), ToolArgs::Json(serde_json::json!({})));
    }

    #[test]
    fn broken_arguments_keep_their_text() {
        let ToolArgs::Invalid { raw, .. } = ToolArgs::parse("{\"cmd\": \"ls") else {
            panic!("expected invalid");
        };
        assert_eq!(raw, "{\"cmd\": \"ls");
        assert_eq!(
            ToolArgs::parse("[1]").replay_object(),
            serde_json::json!({})
        );
    }

    #[test]
    fn usage_adds_bucketwise() {
        let mut u = Usage {
            input_tokens: 1,
            output_tokens: 2,
            cache_creation_input_tokens: 3,
            cache_read_input_tokens: 4,
        };
        u += u;
        assert_eq!(u.cache_read_input_tokens, 8);
        assert!(!u.is_zero());
    }
}
