//! Type-checking throughput on generated well-typed programs of 1,000, 10,000
//! and 100,000 lines ([`ral_benches::generate_typed_program`]).
//!
//! Run with `cargo bench -p ral-benches --bench check`. Only `check_program`
//! is timed: each program is parsed once, outside the measured loop.
//! Throughput is in elements, one per source line, so criterion prints
//! lines per second. Before criterion's measurements, a quick timing prints
//! `time(100k) / time(10k)` for the checker; linear checking gives about 10,
//! and anything above 12 suggests superlinear behaviour.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use ral_syntax::{parse, Parsed, SourceId};
use ral_types::{check_program, CheckOptions, TypeEnv};

const SIZES: &[usize] = &[1_000, 10_000, 100_000];

/// The generated program of `lines` lines, parsed; panics if it does not
/// check cleanly, since a benchmark of error paths would mislead.
fn parsed(lines: usize) -> Parsed {
    let src = ral_benches::generate_typed_program(lines);
    let parsed = parse(&src, SourceId(0));
    assert!(!parsed.has_errors(), "generated program has parse errors");
    let checked = check(&parsed, &TypeEnv::new());
    assert!(
        checked.diagnostics.is_empty(),
        "generated program has {} diagnostics",
        checked.diagnostics.len()
    );
    parsed
}

fn check(parsed: &Parsed, env: &TypeEnv) -> ral_types::Checked {
    check_program(
        black_box(&parsed.program),
        SourceId(0),
        env,
        &CheckOptions::default(),
    )
}

fn bench_check(c: &mut Criterion) {
    let env = TypeEnv::new();
    for &lines in SIZES {
        let parsed = parsed(lines);
        let mut group = c.benchmark_group(format!("check/{lines}-lines"));
        group
            .measurement_time(Duration::from_secs(4))
            .warm_up_time(Duration::from_secs(1))
            .throughput(Throughput::Elements(lines as u64));
        if lines >= 100_000 {
            group.sample_size(10).sampling_mode(SamplingMode::Flat);
        } else {
            group.sample_size(20);
        }
        group.bench_with_input("check_program", &parsed, |b, parsed| {
            b.iter(|| check(parsed, &env))
        });
        group.finish();
    }
}

/// The best of a few runs of the checker over `parsed`.
fn best_time(parsed: &Parsed, runs: usize) -> Duration {
    let env = TypeEnv::new();
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(check(parsed, &env));
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Prints the 100k/10k time ratio, the number the linearity budget is about.
fn linearity_report() {
    let small = parsed(10_000);
    let large = parsed(100_000);
    let t_small = best_time(&small, 10);
    let t_large = best_time(&large, 3);
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-9);
    eprintln!(
        "linearity: check 10k lines {t_small:?}, 100k lines {t_large:?}; \
         ratio {ratio:.2} (linear = 10, budget <= 12)"
    );
}

criterion_group!(benches, bench_check);

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // there the quick report would only cost time.
    if std::env::args().any(|a| a == "--bench") {
        linearity_report();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
