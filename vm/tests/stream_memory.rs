//! Bytes streaming between programs never enter the interpreter: a
//! pipeline moving 100 MB leaves this process's resident size where it
//! was. Alone in its own test binary so no concurrent test disturbs the
//! measurement.

#![allow(clippy::unwrap_used)]

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Mobile, RunError, Stdin, Stdout, Value, Vm};

fn run(src: &str) -> (Vm, Result<Value, RunError>) {
    let source = SourceId(0);
    let parsed = ral_syntax::parse(src, source);
    assert!(!parsed.has_errors(), "parse errors in {src:?}");
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, source, &TypeEnv::new(), &opts);
    assert!(!checked.has_errors(), "type errors in {src:?}");
    let module = ral_ir::lower(&parsed.program, &checked, source);
    let mut vm = Vm::new(Mobile::default());
    vm.stdin = Stdin::Null;
    vm.stderr = Stdout::Buffer(Vec::new());
    let r = vm.run_module(&module);
    (vm, r)
}

/// Resident set size of this process in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_hundred_megabytes_between_programs_never_enter_the_interpreter() {
    let before = rss_kib();
    let (_, r) = run("let n = head -c 100000000 /dev/zero | cat | wc -c | tr -d ' '\n$n");
    let after = rss_kib();
    assert_eq!(r.unwrap(), Value::str("100000000"));
    assert!(
        after.saturating_sub(before) < 32 * 1024,
        "resident size grew from {before} KiB to {after} KiB"
    );
}
