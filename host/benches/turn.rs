//! Per-turn cost of `Shell::run_turn`: the whole door (parse, check against
//! the session, lower, compile, run, settle) for a trivial turn, and for a
//! turn that reads ten bindings of a session holding 10,000.
//!
//! `cargo bench -p ral-host --bench turn`

use criterion::{criterion_group, criterion_main, Criterion};
use ral_host::{Shell, TurnIo, TurnReport, TurnRequest};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn request() -> TurnRequest<'static> {
    TurnRequest {
        io: TurnIo::Capture,
        ..TurnRequest::new("<bench>")
    }
}

fn ok(report: &TurnReport) -> bool {
    matches!(report, TurnReport::Ran { status: 0, .. })
}

fn trivial_turn(c: &mut Criterion) {
    let mut shell = Shell::default();
    c.bench_function("turn/let x = 1", |b| {
        b.iter(|| {
            let report = shell.run_turn("let x = 1", request());
            assert!(ok(&report));
        })
    });
}

fn read_ten_of_10k(c: &mut Criterion) {
    let mut shell = Shell::default();
    // Bind the 10,000 names in turns of 500 statements.
    for chunk in 0..20 {
        let src: String = (0..500)
            .map(|i| format!("let b{} = {}\n", chunk * 500 + i, i))
            .collect();
        assert!(ok(&shell.run_turn(&src, request())));
    }
    let reads: Vec<String> = (0..10).map(|i| format!("$b{}", i * 997)).collect();
    let src = format!("return $[{}]", reads.join(" + "));
    c.bench_function("turn/read 10 of 10k bindings", |b| {
        b.iter(|| {
            let report = shell.run_turn(&src, request());
            assert!(ok(&report));
        })
    });
}

criterion_group!(benches, trivial_turn, read_ten_of_10k);
criterion_main!(benches);
