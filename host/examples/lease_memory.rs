//! Resident memory of a long leased session: 100,000 turns, each binding a
//! fresh scratch name (a small record) and reading a recent one, with a
//! binding lease armed and a prune at every turn boundary, as an agent host
//! runs them. Prints the resident size (VmRSS) as it goes.
//!
//! `cargo run --release -p ral-host --example lease_memory [TURNS]`

use ral_host::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The process's resident set size in KiB, from /proc/self/status.
fn vm_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rss() -> String {
    vm_rss_kib().map_or_else(|| "unknown".to_owned(), |k| format!("{k} KiB"))
}

fn main() {
    let turns: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut shell = Shell::default();
    let seed = shell.run_turn("let base = 1", TurnRequest::new("<seed>"));
    assert_eq!(seed.status(), 0);
    shell.arm_binding_lease(BindingLease::idle_turns(16));

    let report_every = (turns / 10).max(1);
    let mut pruned = 0usize;
    let started = std::time::Instant::now();
    let mut chunk_started = started;
    println!("before: {} ({} turns to run)", rss(), turns);
    for i in 0..turns {
        let src = if i == 0 {
            "let s0 = [n: 0, note: 'scratch']".to_owned()
        } else {
            format!(
                "let s{i} = [n: {i}, note: 'scratch']\nlet last = $s{}[n]",
                i - 1
            )
        };
        let req = TurnRequest {
            io: TurnIo::Capture,
            ..TurnRequest::new("<tool>")
        };
        let report = shell.run_turn(&src, req);
        assert_eq!(report.status(), 0, "turn {i}: {report:?}");
        if let Some((notices, _durable)) = shell.prune_idle_bindings() {
            pruned += notices.len();
        }
        if (i + 1) % report_every == 0 {
            let per_turn = chunk_started.elapsed().as_secs_f64() * 1e6 / report_every as f64;
            chunk_started = std::time::Instant::now();
            println!(
                "after {:>7} turns: {:>12}  {:>7.1} µs/turn  bound names {:>3}  leased {:>3}  pruned {:>7}  slots {:>7}",
                i + 1,
                rss(),
                per_turn,
                shell.names().count(),
                shell.binding_ledger().leased(),
                pruned,
                shell.mobile().scope.slot_count(),
            );
        }
    }
    let elapsed = started.elapsed();
    println!(
        "after: {} ({} turns in {:.2?}, {:.1} µs per turn including the prune)",
        rss(),
        turns,
        elapsed,
        elapsed.as_secs_f64() * 1e6 / turns as f64
    );
}
