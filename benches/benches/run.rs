//! VM speed: four whole programs from `benches/programs/`, the same text
//! that `benches/compare.sh` runs in `ral`, `lua5.4`, `python3` and `bash`.
//!
//! | bench | program | work |
//! |---|---|---|
//! | `run/fib` | `fib.ral` | naive doubly recursive `fib 30` (2,692,537 calls) |
//! | `run/loop` | `loop.ral` | tail-recursive sum of 1..3,000,000 |
//! | `run/strings` | `strings.ral` | build 100,000 strings, join them |
//! | `run/records` | `records.ral` | create 300,000 records, filter, fold |
//!
//! Run with `cargo bench -p ral-benches --bench run` (one workload:
//! `cargo bench -p ral-benches --bench run -- run/fib`). Each program is
//! parsed, checked and lowered once, outside the measured loop, and its
//! output is checked against the known answer before any timing, so a
//! benchmark of a wrong program fails instead of reporting a number. The
//! timed part is `Vm::run_module` on a fresh `Vm` (bytecode compilation of
//! the module plus execution); making the `Vm` and dropping it afterwards
//! (freeing the program's data) are not timed.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, BatchSize, Criterion, SamplingMode};
use ral_syntax::{SourceId, SourceMap};
use ral_types::{CheckOptions, TypeEnv};
use ral_vm::{Mobile, Stdout, Value, Vm};

// Measure with the allocator the `ral` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One workload: its bench name, its source and the exact output it must
/// print.
struct Workload {
    name: &'static str,
    source: &'static str,
    expected: &'static str,
}

/// The expected outputs are independent of ral: fib(30) = 832040; the sum
/// of 1..3,000,000 is 3,000,000 × 3,000,001 / 2; the joined string is
/// 100,000 × len("item-") + the digits of 0..99,999 + 99,999 commas; the
/// records total is Σ (i + i mod 7) over i < 300,000 with i mod 7 even.
const WORKLOADS: &[Workload] = &[
    Workload {
        name: "fib",
        source: include_str!("../programs/fib.ral"),
        expected: "832040\n",
    },
    Workload {
        name: "loop",
        source: include_str!("../programs/loop.ral"),
        expected: "4500001500000\n",
    },
    Workload {
        name: "strings",
        source: include_str!("../programs/strings.ral"),
        expected: "1088889\n",
    },
    Workload {
        name: "records",
        source: include_str!("../programs/records.ral"),
        expected: "25714842855\n",
    },
];

/// Parses, checks and lowers `w`, panicking with the diagnostics if the
/// program does not compile cleanly (a benchmark of an error path would
/// mislead).
fn lower(w: &Workload) -> ral_ir::Module {
    let mut sources = SourceMap::new();
    let id: SourceId = sources.add(format!("{}.ral", w.name), w.source);
    let parsed = ral_syntax::parse(sources.text(id), id);
    assert!(
        !parsed.has_errors(),
        "{}.ral does not parse: {:?}",
        w.name,
        parsed.diagnostics
    );
    let opts = CheckOptions { is_script: true };
    let checked = ral_types::check_program(&parsed.program, id, &TypeEnv::new(), &opts);
    assert!(
        !checked.has_errors(),
        "{}.ral does not type-check: {:?}",
        w.name,
        checked.diagnostics
    );
    ral_ir::lower(&parsed.program, &checked, id)
}

/// A fresh machine that buffers what the program prints.
fn fresh_vm() -> Vm {
    let mut vm = Vm::new(Mobile::default());
    vm.stdout = Stdout::Buffer(Vec::new());
    vm
}

/// Runs `module` once on a fresh machine and panics unless it succeeds
/// and prints exactly `w.expected`.
fn verify(w: &Workload, module: &ral_ir::Module) {
    let mut vm = fresh_vm();
    let result = vm.run_module(module);
    assert!(
        matches!(result, Ok(ref v) if !matches!(v, Value::Bool(false))),
        "{}.ral did not succeed: {result:?}",
        w.name
    );
    let out = vm.take_output();
    assert_eq!(
        String::from_utf8_lossy(&out),
        w.expected,
        "{}.ral printed the wrong answer",
        w.name
    );
}

fn bench_run(c: &mut Criterion) {
    let mut group = c.benchmark_group("run");
    // Each run takes tens to hundreds of milliseconds: few, flat samples.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for w in WORKLOADS {
        let module = lower(w);
        verify(w, &module);
        group.bench_function(w.name, |b| {
            b.iter_batched(
                fresh_vm,
                |mut vm| {
                    let result = vm.run_module(black_box(&module));
                    black_box(&result);
                    // Returned so that freeing the program's data is not timed.
                    (vm, result)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench_run);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
