//! [`generate_typed_program`]: realistic ral source that the checker accepts
//! with no diagnostic, for the check benchmark.

use std::fmt::Write;

use crate::{server_record, Generator};

/// Generates a well-typed ral program of exactly `lines` lines.
///
/// Where [`generate_program`](crate::generate_program) only has to parse,
/// this program also type-checks with zero diagnostics against
/// `TypeEnv::new()`: functions with multi-line bodies (row-polymorphic
/// record parameters, closures, self-recursion), records and record updates,
/// lists through `map`/`filter`/`fold` with block arguments, pipelines of
/// externals ending in decoders, `if`/`elsif`/`else` joins, `case` over
/// variants, `try` and `?`, string interpolation and `$[...]` arithmetic.
/// Later units use the names earlier units of the same round bound, so the
/// checker sees real data flow. Once a unit no longer fits, the rest is
/// one-line `let` fillers (so nothing refers to a unit left out). The output
/// is deterministic.
pub fn generate_typed_program(lines: usize) -> String {
    let mut gen = Generator {
        out: String::with_capacity(lines * 40),
        lines: 0,
    };
    let mut n = 0usize;
    let mut filling = false;
    while gen.lines < lines {
        let remaining = lines - gen.lines;
        let (unit_lines, write) = UNITS[n % UNITS.len()];
        if !filling && unit_lines <= remaining {
            write(&mut gen, n);
        } else {
            filling = true;
            gen.line(&format!("let filler_{n} = $[{} + 1]", n % 1000));
        }
        n += 1;
    }
    gen.out
}

/// One kind of fragment: how many lines it writes, and the writer. A unit may
/// use names bound by the units before it in the same round.
type Unit = (usize, fn(&mut Generator, usize));

const UNITS: &[Unit] = &[
    (3, lets),
    (11, functions),
    (4, records),
    (8, lists),
    (4, pipelines),
    (7, conditional),
    (7, variants),
    (3, strings),
    (7, recursion),
    (5, failures),
    (1, comment),
];

/// The counter of the round's first unit; unit `i` of the round is `r + i`.
fn round(n: usize) -> usize {
    n - n % UNITS.len()
}

fn lets(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let count_{n} = {}", n * 7 % 1000 + 1);
    let _ = writeln!(s, "let ratio_{n} = {}.{}", n % 97, n % 10);
    let _ = writeln!(
        s,
        "let total_{n} = $[($count_{n} + {}) * 3 - $count_{n} % 7]",
        n % 13
    );
    g.lines(&s);
}

fn functions(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(s, "let build_{n} = {{ |target opts|");
    let _ = writeln!(s, "  let dir = \"build/$target/{n}\"");
    let _ = writeln!(s, "  mkdir -p $dir");
    let _ = writeln!(s, "  cc -O2 -o \"$dir/out_{n}\" src/main_{n}.c");
    let _ = writeln!(s, "  let size = $[$opts[jobs] * {} + 1]", n % 8 + 1);
    let _ = writeln!(s, "  return [dir: $dir, size: $size, name: 'unit-{n}']");
    let _ = writeln!(s, "}}");
    let _ = writeln!(
        s,
        "let built_{n} = build_{n} 'x86_64' [jobs: $count_{r}, verbose: false]"
    );
    let _ = writeln!(
        s,
        "let scale_{n} = {{ |k| return {{ |x| return $[$x * $k + {}] }} }}",
        n % 5
    );
    let _ = writeln!(s, "let scaled_{n} = scale_{n} $built_{n}[size]");
    let _ = writeln!(s, "let size_{n} = scaled_{n} $total_{r}");
    g.lines(&s);
}

fn records(g: &mut Generator, n: usize) {
    let mut s = String::new();
    server_record(&mut s, n);
    let _ = writeln!(
        s,
        "let retry_{n} = {{ |r| return [...$r, retries: $[$r[retries] + 1]] }}"
    );
    let _ = writeln!(s, "let port_{n} = $[!{{retry_{n} $moved_{n}}}[port] + 1]");
    g.lines(&s);
}

fn lists(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "let items_{n} = [{n}, {}, $count_{r}, $size_{}]",
        n + 1,
        r + 1
    );
    let _ = writeln!(s, "let more_{n} = [0, ...$items_{n}, {}]", n * 3);
    let _ = writeln!(
        s,
        "let doubled_{n} = map {{ |x| return $[$x * 2 + {}] }} $more_{n}",
        n % 9
    );
    let _ = writeln!(
        s,
        "let evens_{n} = filter {{ |x| return $[$x % 2 == 0] }} $doubled_{n}"
    );
    let _ = writeln!(s, "let sum_{n} = fold {{ |acc x|");
    let _ = writeln!(s, "  let step = $[$acc + $x]");
    let _ = writeln!(s, "  return $step");
    let _ = writeln!(s, "}} 0 $evens_{n}");
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
        "let lines_{n} = cat input_{n}.txt | grep -v '^#' | from-lines"
    );
    let _ = writeln!(
        s,
        "let version_{n} = cat VERSION_{n} | tr -d ' ' | from-line"
    );
    let _ = writeln!(
        s,
        "let words_{n} = find src -name '*.rs' | xargs wc -l | tail -n {}",
        n % 50 + 1
    );
    g.lines(&s);
}

fn conditional(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "let grade_{n} = if $[$total_{r} > {} && $count_{r} != 0] {{",
        n % 300
    );
    let _ = writeln!(s, "  return \"large: $total_{r} items\"");
    let _ = writeln!(s, "}} elsif $[$sum_{} == {}] {{", r + 3, n % 17);
    let _ = writeln!(s, "  echo exact");
    let _ = writeln!(s, "}} else {{");
    let _ = writeln!(s, "  return \"small batch $(count_{r})\"");
    let _ = writeln!(s, "}}");
    g.lines(&s);
}

fn variants(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(s, "let classify_{n} = {{ |v|");
    let _ = writeln!(
        s,
        "  if $[$v > {}] {{ return `ok $v }} else {{ return `err [message: 'low {n}', code: $v] }}",
        n % 100
    );
    let _ = writeln!(s, "}}");
    let _ = writeln!(s, "let settled_{n} = case !{{classify_{n} $total_{r}}} [");
    let _ = writeln!(s, "  `ok: {{ |v| return $[$v + 1] }},");
    let _ = writeln!(s, "  `err: {{ |e| return $e[code] }},");
    let _ = writeln!(s, "]");
    g.lines(&s);
}

fn strings(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "let banner_{n} = \"deploy #{n}: $[$count_{r} * 2] of $total_{r} at $ratio_{r}\\t(done)\\n\""
    );
    let _ = writeln!(
        s,
        "let where_{n} = \"$server_{}[host]:$port_{} $grade_{}\"",
        r + 2,
        r + 2,
        r + 5
    );
    let _ = writeln!(
        s,
        "echo $banner_{n} $where_{n} \"settled $settled_{}\"",
        r + 6
    );
    g.lines(&s);
}

fn recursion(g: &mut Generator, n: usize) {
    let r = round(n);
    let mut s = String::new();
    let _ = writeln!(s, "let fact_{n} = {{ |k|");
    let _ = writeln!(
        s,
        "  if $[$k <= 1] {{ return 1 }} else {{ return $[$k * !{{fact_{n} $[$k - 1]}}] }}"
    );
    let _ = writeln!(s, "}}");
    let _ = writeln!(s, "let countdown_{n} = {{ |k|");
    let _ = writeln!(
        s,
        "  if $[$k == 0] {{ fact_{n} {} }} else {{ countdown_{n} $[$k - 1] }}",
        n % 10
    );
    let _ = writeln!(s, "}}");
    let _ = writeln!(s, "let unwound_{n} = countdown_{n} $[$count_{r} % 5]");
    g.lines(&s);
}

fn failures(g: &mut Generator, n: usize) {
    let mut s = String::new();
    let _ = writeln!(s, "let fetched_{n} = try {{");
    let _ = writeln!(s, "  curl -fsS \"https://example.com/api/{n}\"");
    let _ = writeln!(
        s,
        "}} {{ |err| return \"fetch {n} failed: $err[message]\" }}"
    );
    let _ = writeln!(s, "let who_{n} = hostname ? whoami ? return 'nobody-{n}'");
    let _ = writeln!(
        s,
        "let checked_{n} = {{ |x| if $[$x < 0] {{ fail [status: 1, message: 'negative {n}'] }} else {{ return $x }} }}"
    );
    g.lines(&s);
}

fn comment(g: &mut Generator, n: usize) {
    g.line(&format!("# step {n}: the next round depends on total_{n}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every parse and check diagnostic of `src`, with its line.
    fn diagnostics(src: &str) -> Vec<String> {
        let line = |off: u32| src[..off as usize].matches('\n').count() + 1;
        let (parsed, checked) = ral_types::check_source(src, "<bench>", &ral_types::TypeEnv::new());
        let mut out: Vec<String> = parsed
            .diagnostics
            .iter()
            .map(|d| {
                format!(
                    "parse {} line {}: {}",
                    d.code,
                    line(d.primary.span.start),
                    d.message
                )
            })
            .collect();
        if let Some(checked) = checked {
            out.extend(checked.diagnostics.iter().map(|d| {
                format!(
                    "check {} line {}: {}",
                    d.code,
                    line(d.primary.span.start),
                    d.message
                )
            }));
        }
        out
    }

    #[test]
    fn exact_line_counts() {
        for lines in [0, 1, 2, 3, 59, 60, 61, 1000, 1234] {
            let src = generate_typed_program(lines);
            assert_eq!(src.lines().count(), lines, "{lines}");
        }
    }

    /// Every size, including ones that cut a round short, parses and checks
    /// with no diagnostic at all (not even a warning).
    #[test]
    fn generated_program_checks_clean() {
        for lines in [1, 2, 3, 14, 59, 60, 61, 100, 1000, 1234, 10_000] {
            let src = generate_typed_program(lines);
            let found = diagnostics(&src);
            assert!(found.is_empty(), "{lines} lines:\n{}", found.join("\n"));
        }
    }

    /// The clean check above is not vacuous: one ill-typed line is reported.
    #[test]
    fn an_ill_typed_line_is_reported() {
        let src = format!(
            "{}let bad = $[$count_0 + 'a']\n",
            generate_typed_program(100)
        );
        let found = diagnostics(&src);
        assert_eq!(found.len(), 1, "{}", found.join("\n"));
        assert!(found[0].contains("line 101"), "{}", found[0]);
    }

    #[test]
    fn deterministic_and_varied() {
        let src = generate_typed_program(600);
        assert_eq!(src, generate_typed_program(600));
        let mut lines: Vec<&str> = src.lines().collect();
        lines.sort_unstable();
        lines.dedup();
        // Only structural lines such as `}` and `]` and a few bodies repeat.
        assert!(lines.len() > 450, "{} distinct lines", lines.len());
    }
}
