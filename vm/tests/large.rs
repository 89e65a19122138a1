//! Programs of the sizes people write: the compiler refuses none of them
//! (spec §3.4's 64 nested forms is the only source limit), and each prints
//! what it must.
//!
//! The generated programs mix bindings, calls, records, interpolation,
//! `if`, `case` and tail-recursive loops; the expected output is computed
//! here, beside the generator, so a miscompiled register shows up as a wrong
//! number rather than only as a failure. Each shape runs both at top level
//! (where every `let` is a session definition) and inside one function
//! (where every `let` is a local of that function, so thousands of locals
//! share its registers).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

mod support;
use support::run_program;

/// Runs `src` and asserts it succeeded with exactly `want` on stdout.
fn expect(src: &str, want: &str) {
    let got = run_program(src);
    assert!(
        got.status == 0 && got.stdout == want,
        "status {} ({:?})\nstdout (first 600 bytes):\n{}\nwanted (first 600 bytes):\n{}",
        got.status,
        got.detail,
        &got.stdout[..got.stdout.len().min(600)],
        &want[..want.len().min(600)],
    );
}

/// A program of `groups` groups of about ten statements and its output.
/// With `in_function`, the groups are the body of one function called
/// once, so their bindings are locals.
fn mixed_program(groups: usize, in_function: bool) -> (String, String) {
    let mut src = String::new();
    let mut want = String::new();
    let ind = if in_function { "  " } else { "" };
    src.push_str(
        "let sumto = { |n acc| if $[$n == 0] { return $acc } else { sumto $[$n - 1] $[$acc + $n] } }\n",
    );
    if in_function {
        src.push_str("let big = { |seed|\n");
        writeln!(src, "{ind}let t_start = $seed").unwrap();
    } else {
        src.push_str("let t_start = 0\n");
    }
    let mut prev = "t_start".to_owned();
    let mut total: i64 = 0;
    for k in 0..groups {
        let a = (k as i64 * 7) % 1000;
        let m = (k % 11) as i64;
        let id = a * 3 + m;
        let name = format!("n-{k}");
        let s = format!("{name}/{id}");
        let even = if id % 2 == 0 { "even" } else { "odd" };
        let c = if k % 3 == 0 { a + 1 } else { 0 };
        let n = (k % 20) as i64;
        let l = n * (n + 1) / 2;
        total += id + c + l + s.len() as i64 + (k % 5) as i64;
        writeln!(src, "{ind}let a{k} = {a}").unwrap();
        writeln!(src, "{ind}let f{k} = {{ |x| return $[$x * 3 + {m}] }}").unwrap();
        writeln!(
            src,
            "{ind}let r{k} = [id: !{{f{k} $a{k}}}, name: \"{name}\", tags: [1, 2, {}]]",
            k % 5
        )
        .unwrap();
        writeln!(src, "{ind}let s{k} = \"$r{k}[name]/$r{k}[id]\"").unwrap();
        writeln!(
            src,
            "{ind}let b{k} = if $[$r{k}[id] % 2 == 0] {{ return even }} else {{ return odd }}"
        )
        .unwrap();
        writeln!(
            src,
            "{ind}let v{k} = if {} {{ return `some $a{k} }} else {{ return `none }}",
            k % 3 == 0
        )
        .unwrap();
        writeln!(
            src,
            "{ind}let c{k} = case $v{k} [`some: {{ |x| return $[$x + 1] }}, `none: {{ |_| return 0 }}]"
        )
        .unwrap();
        writeln!(src, "{ind}let l{k} = !{{sumto {n} 0}}").unwrap();
        writeln!(
            src,
            "{ind}let t{k} = $[${prev} + $r{k}[id] + $c{k} + $l{k} + !{{length $s{k}}} + $r{k}[tags][2]]"
        )
        .unwrap();
        if k % 50 == 49 {
            writeln!(src, "{ind}echo \"{k} $t{k} $b{k} $s{k}\"").unwrap();
            writeln!(want, "{k} {total} {even} {s}").unwrap();
        }
        prev = format!("t{k}");
    }
    if in_function {
        writeln!(src, "{ind}return ${prev}").unwrap();
        src.push_str("}\necho !{big 0}\n");
    } else {
        writeln!(src, "echo ${prev}").unwrap();
    }
    writeln!(want, "{total}").unwrap();
    (src, want)
}

#[test]
fn generated_programs_of_300_lines_run() {
    for in_function in [false, true] {
        let (src, want) = mixed_program(34, in_function);
        assert!(src.lines().count() >= 300);
        expect(&src, &want);
    }
}

#[test]
fn generated_programs_of_3000_lines_run() {
    for in_function in [false, true] {
        let (src, want) = mixed_program(334, in_function);
        assert!(src.lines().count() >= 3000);
        expect(&src, &want);
    }
}

#[test]
fn generated_programs_of_30000_lines_run() {
    for in_function in [false, true] {
        let (src, want) = mixed_program(3334, in_function);
        assert!(src.lines().count() >= 30_000);
        expect(&src, &want);
    }
}

/// The shared generator (`../shared/tools/genprog.py`), as one more input
/// of a different shape, when it is at hand.
#[test]
fn the_shared_generator_programs_run() {
    let gen =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/genprog.py");
    if !gen.exists() {
        eprintln!("{} is not here; skipped", gen.display());
        return;
    }
    for n in ["300", "3000"] {
        let out = std::process::Command::new("python3")
            .arg(&gen)
            .arg(n)
            .output()
            .expect("python3 runs");
        assert!(out.status.success());
        expect(&String::from_utf8(out.stdout).unwrap(), "done\n");
    }
}

/// `n` locals made one by one and all read at the end: they cannot share
/// registers, so most of them live in the spill area.
#[test]
fn a_function_with_1000_live_locals() {
    let n = 1000;
    let mut src = String::from("let f = { |x|\n");
    for i in 1..=n {
        if i == 1 {
            writeln!(src, "  let v1 = $[$x + 1]").unwrap();
        } else {
            writeln!(src, "  let v{i} = $[$v{} + {i}]", i - 1).unwrap();
        }
    }
    src.push_str("  let all = [");
    for i in 1..=n {
        write!(src, "{}$v{i}", if i > 1 { ", " } else { "" }).unwrap();
    }
    src.push_str("]\n  return !{fold { |a b| $[$a + $b] } 0 $all}\n}\necho !{f 5}\n");
    // v_i = 5 + i(i+1)/2; the sum over i = 1..n.
    let want: i64 = (1..=n as i64).map(|i| 5 + i * (i + 1) / 2).sum();
    expect(&src, &format!("{want}\n"));
}

/// 1,000 locals interleaved so that half are live across the other half,
/// read back in a different order, and a string local per step: a check
/// that a spilled value is never confused with its neighbour.
#[test]
fn interleaved_live_locals_keep_their_values() {
    let n = 500;
    let mut src = String::from("let f = { |x|\n");
    for i in 0..n {
        writeln!(src, "  let k{i} = $[$x * {i}]").unwrap();
        writeln!(src, "  let s{i} = \"s$k{i}\"").unwrap();
    }
    src.push_str("  let out = [");
    for i in (0..n).rev() {
        write!(src, "{}$s{i}", if i + 1 < n { ", " } else { "" }).unwrap();
    }
    src.push_str("]\n  return !{intercalate ',' $out}\n}\necho !{f 3}\n");
    let want: Vec<String> = (0..n).rev().map(|i| format!("s{}", 3 * i)).collect();
    expect(&src, &format!("{}\n", want.join(",")));
}

#[test]
fn a_command_with_500_arguments() {
    let n = 500;
    let mut echo = String::from("echo");
    let mut printf = String::from("printf '%s\\n'");
    for i in 1..=n {
        write!(echo, " !{{echo {i}}}").unwrap();
        write!(printf, " a{i}").unwrap();
    }
    let words: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
    expect(&format!("{echo}\n"), &format!("{}\n", words.join(" ")));
    let lines: String = (1..=n).map(|i| format!("a{i}\n")).collect();
    expect(&format!("{printf}\n"), &lines);
    // The same, with every argument a local of one function.
    let mut src = String::from("let f = { |x|\n");
    for i in 1..=n {
        writeln!(src, "  let w{i} = \"w$[$x + {i}]\"").unwrap();
    }
    src.push_str("  printf '%s\\n'");
    for i in 1..=n {
        write!(src, " $w{i}").unwrap();
    }
    src.push_str("\n}\nf 0\n");
    let lines: String = (1..=n).map(|i| format!("w{i}\n")).collect();
    expect(&src, &lines);
}

/// Calls with many arguments, blocks with many parameters and captures,
/// literals and patterns with many entries, long interpolations.
#[test]
fn wide_calls_literals_patterns_and_captures() {
    let n = 300;
    let params: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let args: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    let sum: i64 = (0..n as i64).sum();
    // A block of 300 parameters, called with 300 arguments.
    let mut src = format!("let f = {{ |{}| return [", params.join(" "));
    for (i, p) in params.iter().enumerate() {
        write!(src, "{}${p}", if i > 0 { ", " } else { "" }).unwrap();
    }
    writeln!(
        src,
        "] }}\necho !{{fold {{ |a b| $[$a + $b] }} 0 !{{f {}}}}}",
        args.join(" ")
    )
    .unwrap();
    // The last parameter is the last argument.
    writeln!(
        src,
        "let g = {{ |{}| return $p{} }}\necho !{{g {}}}",
        params.join(" "),
        n - 1,
        args.join(" ")
    )
    .unwrap();
    expect(&src, &format!("{sum}\n{}\n", n - 1));

    // A closure capturing 300 locals, a record of 300 fields, a list
    // pattern and a record pattern of 300 entries, an interpolation of
    // 300 parts.
    let mut src = String::from("let h = { |x|\n");
    for i in 0..n {
        writeln!(src, "  let c{i} = $[$x + {i}]").unwrap();
    }
    src.push_str("  let k = { |y| return [");
    for i in 0..n {
        write!(src, "{}$c{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("] }\n  let rec = [");
    for i in 0..n {
        write!(src, "{}f{i}: $c{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("]\n  let [");
    for i in 0..n {
        write!(src, "{}q{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("] = !{k 0}\n  let [");
    for i in 0..n {
        write!(src, "{}f{i}: z{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("] = $rec\n  return \"");
    for i in 0..n {
        write!(src, "{}$q{i}.$z{i}", if i > 0 { "," } else { "" }).unwrap();
    }
    src.push_str("\"\n}\necho !{h 1}\n");
    let want: Vec<String> = (0..n).map(|i| format!("{}.{}", i + 1, i + 1)).collect();
    expect(&src, &format!("{}\n", want.join(",")));
}

/// Spilled locals where the code writes them in unusual places: a `case`
/// arm's payload, a `try` handler's error record, a pipeline stage.
#[test]
fn spilled_locals_in_handlers_arms_and_stages() {
    let n = 400;
    let mut src = String::from("let f = { |x|\n");
    for i in 0..n {
        writeln!(src, "  let h{i} = $[$x + {i}]").unwrap();
    }
    src.push_str("  let v = `pair [a: $h0, b: $h1]\n");
    src.push_str("  let got = case $v [`pair: { |p| return $[$p[a] + $p[b]] }]\n");
    src.push_str(
        "  let caught = try { fail [status: 7, message: boom] } { |e| return \"$e[status]:$e[message]\" }\n",
    );
    src.push_str(
        "  let piped = !{echo $h2 | !{ let line = !{from-lines}; echo \"$line[0]-$h3\" }}\n",
    );
    src.push_str("  let all = [");
    for i in 0..n {
        write!(src, "{}$h{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("]\n  return \"$got $caught $piped !{length $all} $all[399]\"\n}\necho !{f 10}\n");
    expect(&src, "21 7:boom 12-13 400 409\n");
}

/// Many live locals and a deeply nested statement at once: the temporaries
/// do not fit above the homes, so the compiler retries with a smaller
/// budget.
#[test]
fn deep_nesting_under_register_pressure() {
    let live = 220;
    let depth = 60;
    let mut src = String::from("let f = { |x|\n");
    for i in 0..live {
        writeln!(src, "  let d{i} = $[$x + {i}]").unwrap();
    }
    let mut nested = String::from("echo deep");
    for _ in 0..depth {
        nested = format!("echo !{{{nested}}}");
    }
    writeln!(src, "  let deep = !{{{nested}}}").unwrap();
    src.push_str("  let all = [");
    for i in 0..live {
        write!(src, "{}$d{i}", if i > 0 { ", " } else { "" }).unwrap();
    }
    src.push_str("]\n  return \"$deep !{fold { |a b| $[$a + $b] } 0 $all}\"\n}\necho !{f 1}\n");
    let want: i64 = (0..live as i64).map(|i| 1 + i).sum();
    expect(&src, &format!("deep {want}\n"));
}
