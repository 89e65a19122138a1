//! Parsing the same program many times must not grow the process: the
//! grammar is rebuilt per parse, and a reference cycle between recursive
//! parsers once leaked it (about 8.5 KiB) every time, which a long-lived
//! session running one parse per turn turned into unbounded growth. Alone
//! in its own test binary so no concurrent test disturbs the measurement.

use ral_syntax::{parse, SourceId};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn repeated_parses_do_not_leak() {
    let src = "let f = { |x| if $[$x > 1] { [a: $x, b: [1, 2]] } else { f $[$x + 1] } }\necho !{f 3} | cat > out.txt\n";
    for _ in 0..200 {
        assert!(!parse(src, SourceId(0)).has_errors());
    }
    let before = rss_kib();
    for _ in 0..4000 {
        assert!(!parse(src, SourceId(0)).has_errors());
    }
    let after = rss_kib();
    // 4,000 leaked grammars would be tens of megabytes.
    assert!(
        after.saturating_sub(before) < 4 * 1024,
        "resident size grew from {before} KiB to {after} KiB over 4,000 parses"
    );
}
