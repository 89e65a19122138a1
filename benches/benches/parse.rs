//! Lexing and parsing throughput on generated programs of 1,000, 10,000 and
//! 100,000 lines ([`ral_benches::generate_program`]).
//!
//! Run with `cargo bench -p ral-benches --bench parse`. Before criterion's
//! measurements, a quick timing prints `time(100k) / time(10k)` for
//! lex+parse; linear parsing gives about 10, and anything above 12 suggests
//! superlinear behaviour.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, SamplingMode, Throughput};
use ral_syntax::{lexer, parse, SourceId, SourceMap};

// Measure with the allocator the binaries ship with (`ralc`, `ral`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const SIZES: &[usize] = &[1_000, 10_000, 100_000];

fn source(lines: usize) -> String {
    let mut sources = SourceMap::new();
    let id = sources.add("bench.ral", &ral_benches::generate_program(lines));
    sources.text(id).to_string()
}

fn bench_parse(c: &mut Criterion) {
    for &lines in SIZES {
        let src = source(lines);
        // One group per size, so the largest can take fewer, flat samples
        // and the whole bench stays around a minute.
        let mut group = c.benchmark_group(format!("front-end/{lines}-lines"));
        group
            .measurement_time(Duration::from_secs(3))
            .warm_up_time(Duration::from_secs(1))
            .throughput(Throughput::Bytes(src.len() as u64));
        if lines >= 100_000 {
            group.sample_size(10).sampling_mode(SamplingMode::Flat);
        } else {
            group.sample_size(20);
        }
        group.bench_with_input("lex", &src, |b, src| {
            b.iter(|| lexer::lex(black_box(src), SourceId(0)))
        });
        group.bench_with_input("lex+parse", &src, |b, src| {
            b.iter(|| parse(black_box(src), SourceId(0)))
        });
        group.finish();
    }
}

/// The best of a few runs of lex+parse over `src`.
fn best_time(src: &str, runs: usize) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            black_box(parse(black_box(src), SourceId(0)));
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Prints the 100k/10k time ratio, the number the linearity budget is about.
fn linearity_report() {
    let small = source(10_000);
    let large = source(100_000);
    let t_small = best_time(&small, 10);
    let t_large = best_time(&large, 3);
    let ratio = t_large.as_secs_f64() / t_small.as_secs_f64().max(1e-9);
    eprintln!(
        "linearity: lex+parse 10k lines ({} bytes) {:?}, 100k lines ({} bytes) {:?}; \
         ratio {ratio:.2} (linear = 10, budget <= 12)",
        small.len(),
        t_small,
        large.len(),
        t_large
    );
}

criterion_group!(benches, bench_parse);

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and
    // there the quick report would only cost time.
    if std::env::args().any(|a| a == "--bench") {
        linearity_report();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
