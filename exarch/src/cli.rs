//! The command line and start-up.
//!
//! Start-up order matters: the API keys are read from the environment and
//! removed from it first, while the process is still single-threaded, so
//! neither the shell nor any program it starts ever sees them. Then the
//! arguments, the provider, the log, the signal flags, the session, and
//! the mode (headless or interactive).
//!
//! The capability profile (`--profile`, `--capabilities`, [`profiles`]) is
//! loaded before the provider is contacted; one that cannot be loaded is a
//! usage error.
//!
//! Exit statuses: 0 success; 1 agent or provider error; 2 usage error;
//! 124 the `--max-wall` limit; 130 SIGINT; 143 SIGTERM/SIGHUP.

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, ValueEnum};
use serde_json::json;

use crate::agent::{Agent, AgentConfig};
use crate::control::Control;
use crate::headless::{self, HeadlessRun, OutputFormat};
use crate::interactive;
use crate::log::{self, RunDir, SessionLog};
use crate::profiles::{self, Profile};
use crate::prompt::{self, HostFacts};
use crate::provider::{HttpConfig, HttpProvider, Provider, WireFormat};
use crate::resume;
use crate::session::{Session, SessionConfig};
use crate::tool::TIMEOUT_MAX_SECS;

/// Exit status of a usage error.
pub const EXIT_USAGE: i32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProviderArg {
    Anthropic,
    Openai,
}

impl ProviderArg {
    fn key_var(self) -> &'static str {
        match self {
            ProviderArg::Anthropic => "ANTHROPIC_API_KEY",
            ProviderArg::Openai => "OPENAI_API_KEY",
        }
    }

    fn base_url_var(self) -> &'static str {
        match self {
            ProviderArg::Anthropic => "ANTHROPIC_BASE_URL",
            ProviderArg::Openai => "OPENAI_BASE_URL",
        }
    }

    fn default_model(self) -> &'static str {
        match self {
            ProviderArg::Anthropic => "claude-sonnet-4-5",
            ProviderArg::Openai => "gpt-4.1",
        }
    }
}

/// Which OpenAI API to speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OpenAiApi {
    /// Responses for the models only it serves (`-pro`, Codex, …), else
    /// Chat Completions.
    Auto,
    /// Chat Completions (also OpenRouter, vLLM, llama.cpp, Ollama).
    Chat,
    /// Responses.
    Responses,
}

/// exarch: a coding agent whose one tool runs ral programs on a persistent
/// ral session.
#[derive(Debug, Parser)]
#[command(name = "exarch", version, about, long_about = None)]
pub struct Args {
    /// The provider's wire format and key.
    #[arg(long, value_enum, default_value_t = ProviderArg::Anthropic)]
    pub provider: ProviderArg,
    /// The model (default: claude-sonnet-4-5 or gpt-4.1).
    #[arg(long)]
    pub model: Option<String>,
    /// The OpenAI API: Chat Completions, Responses, or the one the model
    /// needs.
    #[arg(long, value_enum, default_value_t = OpenAiApi::Auto)]
    pub openai_api: OpenAiApi,
    /// The server root; exarch appends /v1/messages or /v1/chat/completions
    /// (default: $ANTHROPIC_BASE_URL / $OPENAI_BASE_URL, else the public
    /// API).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Run one prompted exchange without interaction, then exit.
    #[arg(long)]
    pub headless: bool,
    /// The prompt (headless).
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub prompt: Option<String>,
    /// Read the prompt from a file (headless).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Headless output: the final text, or one JSON result object.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Model requests allowed per exchange.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// A limit on the whole run, in seconds (exit 124 when it passes).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_wall: Option<u64>,
    /// The wall of a tool call that sets no timeout_secs.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=TIMEOUT_MAX_SECS))]
    pub timeout_secs: u64,
    /// Where session logs go (default: $XDG_STATE_HOME/exarch).
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// A file whose text replaces the built-in persona of the system prompt
    /// (the guide to the tool and the session facts stay).
    #[arg(long, value_name = "FILE")]
    pub system: Option<PathBuf>,
    /// Send plain (non-streaming) requests.
    #[arg(long)]
    pub no_stream: bool,
    /// The output token cap per request.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// The capability profile every tool call runs under.
    #[arg(long, value_enum, default_value_t = Profile::Reasonable)]
    pub profile: Profile,
    /// A capability profile file (a ral script returning a grant record)
    /// that meets the profile, so it can only narrow it; repeatable.
    #[arg(long, value_name = "FILE")]
    pub capabilities: Vec<String>,
    /// Resume the newest run for this working directory: its
    /// conversation, with a fresh shell.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_run: bool,
    /// Resume a named run: its directory, its log.jsonl, or its name.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// Leave the project's AGENTS.md files (the working directory's and
    /// its parents' up to the repository root) out of the system prompt.
    #[arg(long)]
    pub no_project_instructions: bool,
    /// The model's context window in tokens, over exarch's table of known
    /// models (an unknown model gets a small default).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(4096..))]
    pub context_window: Option<u64>,
}

/// The keys, taken out of the environment.
#[derive(Default)]
pub struct Credentials {
    anthropic: Option<String>,
    openai: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("anthropic", &self.anthropic.as_ref().map(|_| "<set>"))
            .field("openai", &self.openai.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl Credentials {
    /// Reads both keys and removes them from the process environment. Call
    /// before any thread starts.
    pub fn take_from_env() -> Credentials {
        let take = |var: &str| {
            let v = std::env::var(var).ok().filter(|v| !v.trim().is_empty());
            std::env::remove_var(var);
            v.map(|v| v.trim().to_owned())
        };
        Credentials {
            anthropic: take("ANTHROPIC_API_KEY"),
            openai: take("OPENAI_API_KEY"),
        }
    }

    fn for_provider(&self, p: ProviderArg) -> Option<String> {
        match p {
            ProviderArg::Anthropic => self.anthropic.clone(),
            ProviderArg::Openai => self.openai.clone(),
        }
    }
}

/// The environment the shell's programs get besides the scrubbed keys:
/// no colour and no pager (output goes to a model, and a pager would wait
/// on a terminal nobody reads).
fn prepare_child_environment() {
    std::env::set_var("NO_COLOR", "1");
    std::env::set_var("PAGER", "cat");
    std::env::set_var("GIT_PAGER", "cat");
}

/// Where a run keeps its log and evicted outputs.
struct RunPlace {
    log: SessionLog,
    run: Option<RunDir>,
    /// The outputs directory (the run's, or one under the temp dir when no
    /// run directory could be made).
    outputs: Option<PathBuf>,
}

/// A new run directory: under `--log-dir` when given (a failure there is
/// reported and the run goes on without a log: the user chose the place),
/// else under the default directory, falling back to one under the temp
/// dir when that cannot be written (a read-only or missing home).
fn new_run(chosen: Option<&std::path::Path>, cwd: &std::path::Path) -> RunPlace {
    let without = |why: String| -> RunPlace {
        eprintln!("exarch: {why}; continuing without a session log");
        let outputs = std::env::temp_dir().join(format!("exarch-outputs-{}", std::process::id()));
        RunPlace {
            log: SessionLog::disabled(),
            run: None,
            outputs: std::fs::create_dir_all(&outputs).ok().map(|()| outputs),
        }
    };
    let made = |log: SessionLog, run: RunDir| RunPlace {
        log,
        outputs: Some(run.outputs()),
        run: Some(run),
    };
    if let Some(root) = chosen {
        return match SessionLog::create_run(root, cwd) {
            Ok((log, run)) => made(log, run),
            Err(e) => without(format!(
                "cannot open a session log in {}: {e}",
                root.display()
            )),
        };
    }
    let root = log::default_dir();
    match SessionLog::create_run(&root, cwd) {
        Ok((log, run)) => made(log, run),
        Err(e) => {
            let fallback = log::fallback_dir();
            match SessionLog::create_run(&fallback, cwd) {
                Ok((log, run)) => {
                    eprintln!(
                        "exarch: warning: cannot write the log directory {} ({e}); logging to {}",
                        root.display(),
                        fallback.display()
                    );
                    made(log, run)
                }
                Err(e2) => without(format!(
                    "cannot open a session log in {} ({e}) or {} ({e2})",
                    root.display(),
                    fallback.display()
                )),
            }
        }
    }
}

/// The binary's entry; returns the exit status.
pub fn main() -> i32 {
    let creds = Credentials::take_from_env();
    prepare_child_environment();
    let args = match Args::try_parse() {
        Ok(a) => a,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    run(args, creds)
}

/// Runs exarch with parsed arguments.
pub fn run(args: Args, creds: Credentials) -> i32 {
    let started = Instant::now();
    let json_out = args.headless && args.output_format == OutputFormat::Json;
    let usage_error = |msg: &str| -> i32 {
        eprintln!("exarch: {msg}");
        if json_out {
            headless::write_usage_error(msg, started);
        }
        EXIT_USAGE
    };
    if !args.headless && (args.prompt.is_some() || args.file.is_some()) {
        return usage_error("--prompt and --file need --headless");
    }
    if !args.headless && args.output_format == OutputFormat::Json {
        return usage_error("--output-format json needs --headless");
    }
    let resuming = args.continue_run || args.resume.is_some();
    let prompt = if args.headless {
        let text = match (&args.prompt, &args.file) {
            (Some(p), _) => Some(p.clone()),
            (None, Some(f)) => match std::fs::read_to_string(f) {
                Ok(t) => Some(t),
                Err(e) => return usage_error(&format!("cannot read {}: {e}", f.display())),
            },
            // A resumed run may go on with no new prompt.
            (None, None) if resuming => None,
            (None, None) => return usage_error("--headless needs --prompt TEXT or --file PATH"),
        };
        if text.as_ref().is_some_and(|t| t.trim().is_empty()) {
            return usage_error("the prompt is blank");
        }
        text
    } else {
        None
    };
    let persona = match &args.system {
        Some(f) => match std::fs::read_to_string(f) {
            Ok(t) => Some(t),
            Err(e) => return usage_error(&format!("cannot read {}: {e}", f.display())),
        },
        None => None,
    };
    // The run's directory first: the profiles grant reading its evicted
    // outputs (EXARCH_RUN_DIR), and it is removed again when start-up
    // fails.
    let start_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let restored = if resuming {
        let roots = match &args.log_dir {
            Some(d) => vec![d.clone()],
            None => vec![log::default_dir(), log::fallback_dir()],
        };
        let found = resume::find(&roots, &start_dir, args.resume.as_deref())
            .and_then(|run| Ok((resume::load(&run)?, run)));
        match found {
            Ok(r) => Some(r),
            Err(e) => return usage_error(&e),
        }
    } else {
        None
    };
    let RunPlace {
        log: mut session_log,
        run,
        outputs,
    } = match &restored {
        Some((_, run)) => match SessionLog::append_to(run) {
            Ok(log) => RunPlace {
                log,
                outputs: Some(run.outputs()),
                run: Some(run.clone()),
            },
            Err(e) => {
                return usage_error(&format!(
                    "cannot append to the log of run {}: {e}",
                    run.dir.display()
                ))
            }
        },
        None => new_run(args.log_dir.as_deref(), &start_dir),
    };
    // A run made by this start-up is removed when start-up fails; a
    // resumed one is never touched.
    let fresh = restored.is_none();
    let discard_run = |run: &Option<RunDir>| {
        if let (true, Some(r)) = (fresh, run) {
            let _ = std::fs::remove_dir_all(&r.dir);
        }
    };
    if let Some(o) = &outputs {
        std::env::set_var("EXARCH_RUN_DIR", o.parent().unwrap_or(o));
    }
    // The capability ceiling, before anything else can fail later: a bad
    // profile is a usage error.
    let (ceiling, profile_warnings) =
        match profiles::ceiling(args.profile, &args.capabilities, &start_dir) {
            Ok(c) => c,
            Err(report) => {
                drop(session_log);
                discard_run(&run);
                return usage_error(report.trim_end());
            }
        };
    for w in &profile_warnings {
        eprintln!("exarch: {w}");
        session_log.record("notice", json!({ "text": w }));
    }
    let base_url = args
        .base_url
        .clone()
        .or_else(|| std::env::var(args.provider.base_url_var()).ok())
        .filter(|u| !u.trim().is_empty());
    let key = creds.for_provider(args.provider);
    if key.is_none() && base_url.is_none() {
        drop(session_log);
        discard_run(&run);
        return usage_error(&format!(
            "{} is not set (a key is needed for the public API; a --base-url server may do without)",
            args.provider.key_var()
        ));
    }
    let model = args
        .model
        .clone()
        .unwrap_or_else(|| args.provider.default_model().to_owned());
    let wire = match (args.provider, args.openai_api) {
        (ProviderArg::Anthropic, OpenAiApi::Auto) => WireFormat::Anthropic,
        (ProviderArg::Anthropic, OpenAiApi::Chat | OpenAiApi::Responses) => {
            drop(session_log);
            discard_run(&run);
            return usage_error("--openai-api needs --provider openai");
        }
        (ProviderArg::Openai, OpenAiApi::Auto) => crate::provider::openai_wire_for(&model),
        (ProviderArg::Openai, OpenAiApi::Chat) => WireFormat::OpenAi,
        (ProviderArg::Openai, OpenAiApi::Responses) => WireFormat::Responses,
    };
    let mut cfg = HttpConfig::new(wire, model.clone(), key);
    cfg.auto_api = args.openai_api == OpenAiApi::Auto;
    if let Some(u) = &base_url {
        cfg.base_url = u.trim().to_owned();
    }
    cfg.stream = !args.no_stream;
    cfg.max_tokens = args.max_tokens;
    let provider = match HttpProvider::new(cfg) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("exarch: {e}");
            return 1;
        }
    };

    let ctl = Control::new(args.max_wall.map(Duration::from_secs));
    if let Err(e) = ctl.install_signal_handlers() {
        eprintln!("exarch: cannot install signal handlers: {e}");
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let date = log::rfc3339(SystemTime::now());
    let caps_section = profiles::prompt_section(args.profile, &ceiling, args.capabilities.len());
    let mut system = prompt::build(
        persona.as_deref(),
        &HostFacts {
            cwd: &cwd,
            default_timeout: args.timeout_secs,
            headless: args.headless,
            date: date.get(..10).unwrap_or(&date),
            capabilities: Some(&caps_section),
        },
    );
    if !args.no_project_instructions {
        system.project = prompt::project_instructions(&cwd);
    }
    session_log.record(
        if fresh {
            "session_started"
        } else {
            "session_resumed"
        },
        json!({
            "provider": provider.name(),
            "api": provider.config().wire.api(),
            "model": provider.model(),
            "base_url": provider.config().base_url,
            "streaming": !args.no_stream,
            "exarch_version": env!("CARGO_PKG_VERSION"),
            "ral_host_version": env!("CARGO_PKG_VERSION"),
            "pid": std::process::id(),
            "cwd": cwd.display().to_string(),
            "mode": if args.headless { "headless" } else { "interactive" },
            "max_turns": args.max_turns,
            "max_wall_secs": args.max_wall,
            "timeout_secs": args.timeout_secs,
            "profile": args.profile.name(),
            "capabilities": args.capabilities,
            "run": run.as_ref().map(|r| r.id.clone()),
            "project_instructions": !system.project.is_empty(),
            "context_window": args.context_window,
        }),
    );
    let session = Session::new(SessionConfig {
        default_timeout: Duration::from_secs(args.timeout_secs),
        ceiling,
        ..SessionConfig::default()
    });
    let agent = Agent::new(
        &provider,
        session,
        AgentConfig {
            system,
            max_turns: args.max_turns,
            context_window: args.context_window,
            max_tokens: args.max_tokens,
            outputs,
            capability_files: args.capabilities.clone(),
            start_dir: start_dir.clone(),
        },
    )
    .with_log(session_log);
    let mut agent = agent;
    if let (Some((restored, run)), Some(_)) = (&restored, &run) {
        let prompt_follows = prompt.is_some() || !args.headless;
        let notice = resume::notice(restored, &run.id, &start_dir, prompt_follows);
        agent.resume(restored, &notice);
        eprintln!(
            "exarch: resumed run {} ({} messages{})",
            run.dir.display(),
            restored.history.len(),
            if restored.skipped_lines > 0 {
                format!(", {} unreadable log lines skipped", restored.skipped_lines)
            } else {
                String::new()
            }
        );
    }
    if args.headless {
        headless::run(HeadlessRun {
            agent,
            prompt: prompt.as_deref(),
            ctl: &ctl,
            format: args.output_format,
            started,
        })
    } else {
        interactive::run(agent, &ctl, started)
    }
}
