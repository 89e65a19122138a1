//! exarch: an LLM coding agent whose one tool, `ral`, runs a ral program as
//! one turn on a persistent ral session.
//!
//! exarch is a consumer of `ral_host`'s public API and nothing else. The
//! layers, bottom up:
//!
//! - [`message`], [`provider`]: the conversation and the two wire formats
//!   (tokio and the HTTP client live only in `provider`);
//! - [`tool`], [`terminal`], [`render`]: the tool's input
//!   and the result string the model reads;
//! - [`shell_eval`], [`bus`], [`session`]: one call as a turn on the shell
//!   (the per-call IO frame, the pump and its completion flag, the durable
//!   snapshot, leases);
//! - [`evidence`]: what a call ran, wrote and was refused, from its audit
//!   trail, for the session log;
//! - [`agent`], [`context`]: the loop, its event stream and commands, and
//!   context management (the window, eviction, summaries);
//! - [`profiles`]: the capability profiles every call runs under;
//! - [`log`], [`resume`], [`prompt`], [`pricing`], [`control`], [`cli`],
//!   [`headless`], [`interactive`]: the program around it.

pub mod agent;
pub mod bus;
pub mod cli;
pub mod context;
pub mod control;
pub mod evidence;
pub mod headless;
pub mod interactive;
pub mod log;
pub mod message;
pub mod pricing;
pub mod profiles;
pub mod prompt;
pub mod provider;
pub mod render;
pub mod resume;
pub mod session;
pub mod shell_eval;
pub mod terminal;
pub mod tool;
