//! The per-call overhead exarch adds around `Shell::run_turn`: input
//! parsing, the pump's worker and completion flag, the durable snapshot,
//! the IO guard, rendering the result, the session log line, and the
//! ready-boundary prune. Measured on a trivial call (`return 1`).
//!
//! - `host/run_turn`: the bare host call, with the request exarch builds
//!   (capture, `<tool>`, a 60 s wall, a 1 h detached limit);
//! - `exarch/session_call`: `Session::run_turn` (pump, snapshot, guard,
//!   render, prune);
//! - `exarch/tool_call`: `Agent::run_tool_call`, the whole path a model's
//!   call takes, with the session log written to a file.
//!
//! The overhead is `exarch/tool_call` minus `host/run_turn`. On a busy
//! machine that difference drowns in the noise of `run_turn` itself, so
//! `parts/bookkeeping` also times everything exarch does around the host
//! call with the host call left out: parsing the input, the pump's scoped
//! worker and completion flag, the durable snapshot, installing and
//! dropping the IO guard, rendering the result, one log line, the
//! ready-boundary prune and the worker listing. `parts/pump_noop` and
//! `parts/render_and_log` break that down further.
//!
//! `cargo bench -p exarch --bench call_overhead -- --measurement-time 10`

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use exarch::agent::{Agent, AgentConfig, NullUi};
use exarch::control::Control;
use exarch::log::SessionLog;
use exarch::message::ToolArgs;
use exarch::provider::scripted::ScriptedProvider;
use exarch::session::{Session, SessionConfig};
use exarch::tool::RalCall;
use ral_host::{Capabilities, Shell, TurnIo, TurnRequest};

const SRC: &str = "return 1";

/// The request exarch builds, without exarch's surface sink and hooks.
fn host_request() -> TurnRequest<'static> {
    TurnRequest {
        script_name: "<tool>",
        caps: Capabilities::root(),
        turn_limit: Some(Duration::from_secs(60)),
        detached_limit: Some(Duration::from_secs(3600)),
        io: TurnIo::Capture,
        surface: None,
        lifecycle: Box::new(()),
        audit: true,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("call");

    let mut shell = Shell::new();
    g.bench_function("host/run_turn", |b| {
        b.iter(|| shell.run_turn(SRC, host_request()))
    });

    let ctl = Control::default();
    let mut session = Session::new(SessionConfig::default());
    let call = RalCall {
        cmd: SRC.to_owned(),
        description: Some("bench".to_owned()),
        timeout_secs: None,
    };
    g.bench_function("exarch/session_call", |b| {
        b.iter(|| session.run_turn(&call, &mut (), &ctl))
    });

    let dir = std::env::temp_dir().join(format!("exarch-bench-{}", std::process::id()));
    let log = SessionLog::create_in(&dir).unwrap_or_else(|_| SessionLog::disabled());
    let provider = ScriptedProvider::new([]);
    let mut agent = Agent::new(
        &provider,
        Session::new(SessionConfig::default()),
        AgentConfig::default(),
    )
    .with_log(log);
    let args = ToolArgs::Json(serde_json::json!({"cmd": SRC, "description": "bench"}));
    g.bench_function("exarch/tool_call", |b| {
        b.iter(|| agent.run_tool_call("c1", "ral", &args, &mut NullUi, &ctl))
    });

    // The pieces exarch adds, alone: the pump's worker and completion flag
    // around a no-op, and rendering plus one log line for a small result.
    g.bench_function("parts/pump_noop", |b| {
        b.iter(|| exarch::bus::pump(&mut (), |_: &exarch::bus::Emitter| 1u8))
    });
    let outcome = exarch::render::CallOutcome::Ran(exarch::render::RanCall {
        stdout: b"hello\n".to_vec(),
        stderr: Vec::new(),
        warnings: String::new(),
        value: Some("1".to_owned()),
        status: 0,
        ending: exarch::render::Ending::Value,
        running_workers: Vec::new(),
    });
    let mut log2 =
        SessionLog::create_in(&dir.join("parts")).unwrap_or_else(|_| SessionLog::disabled());
    let limits = exarch::render::Limits::default();
    g.bench_function("parts/render_and_log", |b| {
        b.iter(|| {
            let text = exarch::render::render(&outcome, &limits);
            log2.record("tool_call", serde_json::json!({"id": "c1", "result": text}));
        })
    });

    let mut book_shell = Shell::new();
    book_shell.arm_binding_lease(ral_host::BindingLease::idle_turns(256));
    let frame = std::sync::Arc::new(exarch::shell_eval::CallFrame::default());
    let mut log3 =
        SessionLog::create_in(&dir.join("book")).unwrap_or_else(|_| SessionLog::disabled());
    g.bench_function("parts/bookkeeping", |b| {
        b.iter(|| {
            let call = exarch::tool::parse_ral_input(&args);
            let cancel = book_shell.cancel_handle();
            let s = &mut book_shell;
            let (frame, outcome, limits) = (&frame, &outcome, &limits);
            let text = exarch::bus::pump(&mut (), move |emit: &exarch::bus::Emitter| {
                let durable = s.snapshot();
                let before = s.workers().running_ids();
                let guard = exarch::shell_eval::IoGuard::install(frame, emit.clone(), cancel);
                drop(guard);
                drop(durable);
                drop(before);
                exarch::render::render(outcome, limits)
            });
            let text = text.ok().flatten().unwrap_or_default();
            log3.record(
                "tool_call",
                serde_json::json!({"id": "c1", "cmd": call.map(|c| c.cmd).unwrap_or_default(), "result": text}),
            );
            book_shell.prune_idle_bindings()
        })
    });
    g.finish();
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
