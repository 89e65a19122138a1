//! Benchmarks live in `benches/benches/`; this library holds what several of
//! them share, starting with [`generate_program`], a deterministic generator
//! of realistic ral source for throughput benchmarks.

use std::fmt::Write;

mod typed;

pub use typed::generate_typed_program;

/// Generates a well-formed ral program of exactly `lines` lines.
///
/// The program mixes what real scripts contain: `let` bindings, functions
/// with multi-line bodies, records, lists, pipelines with redirects,
/// `if`/`elsif`/`else`, `case` over tags, `try`, double-quoted strings with
/// interpolation, raw strings and `$[...]` arithmetic. Names carry a counter so
/// that no two units are identical text, which keeps the input from being
/// trivially repetitive. The output is deterministic: the same `lines` always
/// gives the same program.
pub fn generate_program(lines: usize) -> String {
    let mut gen = Generator {
        out: String::with_capacity(lines * 40),
        lines: 0,
    };
    let mut n = 0usize;
    while gen.lines < lines {
        let remaining = lines - gen.lines;
        let unit = UNITS[n % UNITS.len()];
        if unit.lines <= remaining {
            (unit.write)(&mut gen, n);
        } else {
            gen.line(&format!("let filler_{n} = {n}"));
        }
        n += 1;
    }
    gen.out
}

/// The text being built and how many lines it has.
struct Generator {
    out: String,
    lines: usize,
}

impl Generator {
    fn line(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
        self.lines += 1;
    }

    /// Appends several lines; `text` ends with a newline.
    fn lines(&mut self, text: &str) {
        self.lines += text.matches('\n').count();
        self.out.push_str(text);
    }
}

/// One kind of program fragment: how many lines it writes, and the writer.
#[derive(Clone, Copy)]
struct Unit {
    lines: usize,
    write: fn(&mut Generator, usize),
}

const UNITS: &[Unit] = &[
    Unit {
        lines: 3,
        write: lets,
    },
    Unit {
        lines: 7,
        write: function,
    },
    Unit {
        lines: 2,
        write: record,
    },
    Unit {
        lines: 3,
        write: pipelines,
    },
    Unit {
        lines: 7,
        write: conditional,
    },
    Unit {
        lines: 5,
        write: case,
    },
    Unit {
        lines: 2,
        write: strings,
    },
    Unit {
        lines: 6,
        write: try_and_lists,
    },
    Unit {
        lines: 1,
        write: comment,
    },
];

fn lets(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let count_{n} = {}", n * 7 % 1000);
    let _ = writeln!(s, "let ratio_{n} = {}.{}", n % 97, n % 10);
    let _ = writeln!(
        s,
        "let total_{n} = $[($count_{n} + {}) * 3 - $count_{n} % 7]",
        n % 13
    );
    g.lines(&s);
}

fn function(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let build_{n} = {{ |target opts|");
    let _ = writeln!(s, "  let dir = \"build/$target/{n}\"");
    let _ = writeln!(s, "  mkdir -p $dir");
    let _ = writeln!(
        s,
        "  cc -O2 -o \"$dir/out_{n}\" src/main_{n}.c 2> $dir/errors.log"
    );
    let _ = writeln!(s, "  let size = $[$opts[jobs] * {} + 1]", n % 8 + 1);
    let _ = writeln!(s, "  return [dir: $dir, size: $size, name: 'unit-{n}']");
    let _ = writeln!(s, "}}");
    g.lines(&s);
}

/// A record literal and a record update of it; shared by both generators.
fn server_record(s: &mut String, n: usize) {
    let _ = writeln!(
        s,
        "let server_{n} = [host: 'db{n}.example.com', port: {}, tags: ['primary', 'zone-{}'], retries: 3]",
        5000 + n % 1000,
        n % 5
    );
    let _ = writeln!(
        s,
        "let moved_{n} = [...$server_{n}, port: {}]",
        6000 + n % 1000
    );
}

fn record(g: &mut Generator, n: usize) {
    let mut s = String::new();
    server_record(&mut s, n);
    g.lines(&s);
}

fn pipelines(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "cat logs/app_{n}.log | grep -v DEBUG | sort -u > reports/summary_{n}.txt"
    );
    let _ = writeln!(
        s,
        "find src -name '*.rs' | xargs wc -l 2>&1 | tail -n {} >> totals.txt",
        n % 50 + 1
    );
    let _ = writeln!(
        s,
        "tr a-z A-Z < input_{n}.txt | head -c {} ? echo 'fallback {n}'",
        n % 4096
    );
    g.lines(&s);
}

/// The counter of the latest `lets` unit, whose names later units use.
fn base(n: usize) -> usize {
    n - n % UNITS.len()
}

fn conditional(g: &mut Generator, n: usize) {
    let b = base(n);
    let mut s = String::new();
    let _ = writeln!(s, "if $[$total_{b} > {} && $count_{b} != 0] {{", n % 300);
    let _ = writeln!(s, "  echo \"large: $total_{b} items\"");
    let _ = writeln!(s, "}} elsif $[$total_{b} == {}] {{", n % 17);
    let _ = writeln!(s, "  echo exact");
    let _ = writeln!(s, "}} else {{");
    let _ = writeln!(s, "  warn \"small batch $(count_{b})\"");
    let _ = writeln!(s, "}}");
    g.lines(&s);
}

fn case(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let result_{n} = `ok {n}");
    let _ = writeln!(s, "case $result_{n} [");
    let _ = writeln!(s, "  `ok: {{ |v| echo \"value $v from step {n}\" }},");
    let _ = writeln!(s, "  `err: {{ |e| warn $e[message] }},");
    let _ = writeln!(s, "]");
    g.lines(&s);
}

fn strings(g: &mut Generator, n: usize) {
    let b = base(n);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "let banner_{n} = \"deploy #{n}: $[$count_{b} * 2] of $total_{b}\\t(done)\\n\""
    );
    let _ = writeln!(s, "let quoted_{n} = #'it's literal $not_{n}'#");
    g.lines(&s);
}

fn try_and_lists(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let items_{n} = [{n}, {}, {}]", n + 1, n + 2);
    let _ = writeln!(s, "let more_{n} = [0, ...$items_{n}, {}]", n * 3);
    let _ = writeln!(s, "try {{");
    let _ = writeln!(
        s,
        "  curl -fsS \"https://example.com/api/{n}\" > cache/{n}.json"
    );
    let _ = writeln!(s, "}} {{ |err| warn \"fetch {n} failed: $err[message]\" }}");
    let _ = writeln!(s, "echo ...$more_{n} | wc -w");
    g.lines(&s);
}

fn comment(g: &mut Generator, n: usize) {
    g.line(&format!("# step {n}: the next block depends on total_{n}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_counts() {
        for lines in [0, 1, 2, 7, 100, 1000, 1234] {
            let src = generate_program(lines);
            assert_eq!(src.lines().count(), lines, "{lines}");
        }
    }

    #[test]
    fn generated_program_is_well_formed() {
        let src = generate_program(300);
        let parsed = ral_syntax::parse(&src, ral_syntax::SourceId(0));
        let errors: Vec<String> = parsed
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{} at {:?}: {}", d.code, d.span(), d.message))
            .collect();
        assert!(errors.is_empty(), "{}", errors.join("\n"));
    }

    #[test]
    fn deterministic_and_varied() {
        let src = generate_program(500);
        assert_eq!(src, generate_program(500));
        let mut lines: Vec<&str> = src.lines().collect();
        lines.sort_unstable();
        lines.dedup();
        // Only a few structural lines such as `}` and `]` repeat.
        assert!(lines.len() > 350, "{} distinct lines", lines.len());
    }
}
