//! The one tool, `ral`: its schema, and turning the model's arguments into
//! a [`RalCall`] or a `tool input error`.
//!
//! Input: `{cmd: string (required), description: string (optional),
//! timeout_secs: integer ≥ 1 (optional)}`. A description longer than 60
//! characters or spanning lines is cut to its first line and 60
//! characters, never rejected. Unknown fields are ignored. Malformed input
//! never reaches the shell.

use serde_json::{json, Value};

use crate::message::ToolArgs;
use crate::provider::ToolSpec;

/// The tool's name.
pub const TOOL_NAME: &str = "ral";
/// The longest description kept, in characters.
pub const DESCRIPTION_MAX: usize = 60;
/// The largest `timeout_secs` accepted (a day).
pub const TIMEOUT_MAX_SECS: u64 = 86_400;

/// A well-formed `ral` call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RalCall {
    /// The ral source.
    pub cmd: String,
    /// The one-line description, cut to size; `None` when absent or blank.
    pub description: Option<String>,
    /// The call's wall, when the model chose one.
    pub timeout_secs: Option<u64>,
}

/// The tool as offered to the model; `default_timeout` is the wall a call
/// gets when it names none.
pub fn ral_tool(default_timeout: u64) -> ToolSpec {
    ToolSpec {
        name: TOOL_NAME.to_owned(),
        description: format!(
            "Run a ral program as the next top-level turn of your persistent ral session. \
             Bindings, the working directory and started workers persist between calls. \
             The result has STDOUT, STDERR and VALUE sections (each clipped) and an EXIT \
             status. Each call has a wall of {default_timeout}s unless timeout_secs says \
             otherwise."
        ),
        schema: json!({
            "type": "object",
            "properties": {
                "cmd": {
                    "type": "string",
                    "description": "The ral source to run."
                },
                "description": {
                    "type": "string",
                    "description": "What this call does, one line of at most 60 characters, shown to the user (e.g. 'Counting Rust files')."
                },
                "timeout_secs": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": TIMEOUT_MAX_SECS,
                    "description": format!("The wall for this call in seconds (default {default_timeout}). Raise it for commands known to take long.")
                }
            },
            "required": ["cmd"]
        }),
    }
}

/// The first line of `text`, trimmed, cut to [`DESCRIPTION_MAX`]
/// characters; `None` when that leaves nothing.
pub fn clean_description(text: &str) -> Option<String> {
    let line = text.trim().lines().next().unwrap_or_default().trim();
    if line.is_empty() {
        return None;
    }
    Some(match line.char_indices().nth(DESCRIPTION_MAX) {
        Some((i, _)) => line[..i].trim_end().to_owned(),
        None => line.to_owned(),
    })
}

/// Reads the arguments of a `ral` call. The error is the reason, to follow
/// `tool input error: `.
pub fn parse_ral_input(args: &ToolArgs) -> Result<RalCall, String> {
    let obj = match args {
        ToolArgs::Invalid { error, .. } => {
            return Err(format!("the arguments are not valid JSON ({error})"))
        }
        ToolArgs::Json(Value::Object(o)) => o,
        ToolArgs::Json(other) => {
            return Err(format!(
                "the arguments are {} where an object is expected",
                json_kind(other)
            ))
        }
    };
    let cmd = match obj.get("cmd") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => return Err("`cmd` is missing".to_owned()),
        Some(other) => {
            return Err(format!(
                "`cmd` is {} where a string is expected",
                json_kind(other)
            ))
        }
    };
    let description = match obj.get("description") {
        Some(Value::String(s)) => clean_description(s),
        Some(Value::Null) | None => None,
        Some(other) => {
            return Err(format!(
                "`description` is {} where a string is expected",
                json_kind(other)
            ))
        }
    };
    let timeout_secs = match obj.get("timeout_secs") {
        Some(Value::Null) | None => None,
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => return Err("`timeout_secs` must be at least 1".to_owned()),
            Some(s) if s > TIMEOUT_MAX_SECS => {
                return Err(format!("`timeout_secs` must be at most {TIMEOUT_MAX_SECS}"))
            }
            Some(s) => Some(s),
            None => {
                return Err(format!(
                    "`timeout_secs` is {n}; it must be a whole number of seconds, at least 1"
                ))
            }
        },
        Some(other) => {
            return Err(format!(
                "`timeout_secs` is {} where an integer is expected",
                json_kind(other)
            ))
        }
    };
    Ok(RalCall {
        cmd,
        description,
        timeout_secs,
    })
}

/// The text the model gets for malformed input (no `EXIT` line: nothing
/// ran).
pub fn input_error_text(reason: &str) -> String {
    format!(
        "tool input error: {reason}\n\
         expected an object like {{\"cmd\": \"<ral source>\", \"description\": \"<one line>\", \"timeout_secs\": 60}}; \
         only `cmd` is required. Nothing ran."
    )
}

/// The text the model gets for a tool that does not exist.
pub fn unknown_tool_text(name: &str) -> String {
    format!("unknown tool `{name}`: the only tool is `{TOOL_NAME}`. Nothing ran.")
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<RalCall, String> {
        parse_ral_input(&ToolArgs::Json(v))
    }

    #[test]
    fn well_formed_input_parses() {
        assert_eq!(
            parse(json!({"cmd": "ls", "description": "Listing", "timeout_secs": 5, "extra": 1})),
            Ok(RalCall {
                cmd: "ls".into(),
                description: Some("Listing".into()),
                timeout_secs: Some(5),
            })
        );
        assert_eq!(
            parse(json!({"cmd": "", "description": null})),
            Ok(RalCall {
                cmd: String::new(),
                description: None,
                timeout_secs: None,
            })
        );
    }

    #[test]
    fn long_or_multiline_descriptions_are_cut_not_rejected() {
        let long = "x".repeat(100);
        let c = parse(json!({"cmd": "1", "description": long})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.description.map(|d| d.chars().count()), Some(60));
        let c = parse(json!({"cmd": "1", "description": "  Building the crate\nthen testing it"}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.description.as_deref(), Some("Building the crate"));
        let c = parse(json!({"cmd": "1", "description": "é".repeat(61)}))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.description.map(|d| d.chars().count()), Some(60));
        assert_eq!(clean_description(" \n "), None);
    }

    #[test]
    fn malformed_input_says_what_is_wrong() {
        let err = |v: Value| parse(v).err().unwrap_or_default();
        assert!(err(json!({})).contains("`cmd` is missing"));
        assert!(err(json!({"cmd": 3})).contains("`cmd` is a number"));
        assert!(err(json!([1])).contains("an array where an object"));
        assert!(err(json!({"cmd": "x", "timeout_secs": 0})).contains("at least 1"));
        assert!(err(json!({"cmd": "x", "timeout_secs": -4})).contains("whole number"));
        assert!(err(json!({"cmd": "x", "timeout_secs": 1.5})).contains("whole number"));
        assert!(err(json!({"cmd": "x", "timeout_secs": "9"})).contains("a string where an integer"));
        assert!(err(json!({"cmd": "x", "timeout_secs": 100000})).contains("at most"));
        assert!(err(json!({"cmd": "x", "description": 4})).contains("`description` is a number"));
        let bad = parse_ral_input(&ToolArgs::parse("{\"cmd\": \"ls"))
            .err()
            .unwrap_or_default();
        assert!(bad.contains("not valid JSON"), "{bad}");
        assert!(input_error_text("x").starts_with("tool input error: x\n"));
        assert!(!input_error_text("x").contains("EXIT"));
    }
}
