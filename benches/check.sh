#!/usr/bin/env bash
# check.sh: times `ralc --check` on generated programs of 10,000 and 100,000
# lines and prints, for each, the median wall time, the median CPU time
# (user + system) and the median peak resident size over several runs, then
# the 100k/10k ratios and issue 15's targets (ratio <= 11, peak <= 100 MB).
#
#   bash benches/check.sh              # 5 runs of each size
#   RUNS=9 bash benches/check.sh       # more runs on a noisy machine
#
# Environment:
#   RALC   the ralc binary (default: target/release/ralc, built with
#          `cargo build --release -p ral-host --bin ralc` if missing)
#   RUNS   runs per size (default 5); the medians are reported
#   KEEP   a directory to keep the generated programs in (default: a temp dir)
#
# The programs are issue 15's `genprog.py` (embedded below, so the figures
# are reproducible from this tree alone): five kinds of top-level `let`
# (a function, a record, an interpolated string, a builtin call, an `if`
# join) repeated with fresh names; they check with no diagnostic. Each run
# is timed by bash's `time` (milliseconds) and GNU time (`-f %M`, the
# whole process's maximum resident set: source text, tokens, tree, checker).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
runs=${RUNS:-5}

[ -x /usr/bin/time ] || { echo "check.sh: needs GNU time at /usr/bin/time" >&2; exit 1; }

ralc=${RALC:-$root/target/release/ralc}
if [ ! -x "$ralc" ]; then
  echo "check.sh: building $ralc (a few minutes on 2 cores)" >&2
  (cd "$root" && cargo build --release -p ral-host --bin ralc)
fi

dir=${KEEP:-$(mktemp -d)}
mkdir -p "$dir"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT

# genprog.py LINES: a valid ral program of about LINES lines.
gen() {
  python3 - "$1" <<'EOF'
import sys
n = int(sys.argv[1]); out = []; i = 0
while len(out) < n:
    out += [f"let f{i} = {{ |x| return $[$x * 2 + {i % 97}] }}",
            f"let r{i} = [id: !{{f{i} {i}}}, name: \"item-{i}\", tags: ['a', 'b']]",
            f"let s{i} = \"$r{i}[name]:$r{i}[id]\"",
            f"let n{i} = !{{length $r{i}[tags]}}",
            f"let v{i} = if $[$n{i} > 1] {{ return $s{i} }} else {{ return 'none' }}"]
    i += 1
print("\n".join(out[:n]))
print("echo done")
EOF
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
least() { sort -g | head -1; }

# one LINES: runs ralc once on the LINES-line program and appends its wall
# time, CPU time and peak (KB) to the arrays for that size.
declare -A walls cpus rsss
one() {
  local file=$dir/g$1.ral out e u s m
  # bash's `time` reads to the millisecond; GNU time gives the peak.
  out=$({ TIMEFORMAT='%3R %3U %3S'; time /usr/bin/time -f '%M' -o "$dir/rss" \
    "$ralc" --check "$file" > /dev/null 2>&1; } 2>&1)
  read -r e u s <<< "$out"
  m=$(tail -1 "$dir/rss")
  walls[$1]+="$e "
  cpus[$1]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "
  rsss[$1]+="$m "
}

for n in 10000 100000; do
  [ -s "$dir/g$n.ral" ] || gen "$n" > "$dir/g$n.ral"
  "$ralc" --check "$dir/g$n.ral" || { echo "check.sh: ralc --check failed on g$n.ral" >&2; exit 1; }
done
# The sizes alternate, so a change in the machine's load falls on both.
for ((i = 0; i < runs; i++)); do
  one 10000
  one 100000
done

stat() { printf '%s\n' ${2} | $1; }
echo "ralc --check, $runs runs of each size ($(uptime | sed 's/.*load/load/'))"
printf '%-8s %12s %12s %12s %12s %10s\n' lines 'wall med/s' 'wall min/s' 'cpu med/s' 'cpu min/s' 'peak/MB'
for n in 10000 100000; do
  printf '%-8s %12s %12s %12s %12s %10.1f\n' "$n" \
    "$(stat median "${walls[$n]}")" "$(stat least "${walls[$n]}")" \
    "$(stat median "${cpus[$n]}")" "$(stat least "${cpus[$n]}")" \
    "$(awk -v k="$(stat median "${rsss[$n]}")" 'BEGIN { print k / 1024 }')"
done
w10=$(stat median "${walls[10000]}") w100=$(stat median "${walls[100000]}")
c10=$(stat median "${cpus[10000]}") c100=$(stat median "${cpus[100000]}")
m10=$(stat least "${cpus[10000]}") m100=$(stat least "${cpus[100000]}")
r100=$(stat median "${rsss[100000]}")

awk -v w10="$w10" -v w100="$w100" -v c10="$c10" -v c100="$c100" -v m10="$m10" -v m100="$m100" -v r100="$r100" 'BEGIN {
  wr = w100 / w10; cr = c100 / c10; mr = m100 / m10; mb = r100 / 1024
  printf "ratio 100k/10k: wall (medians) %.1fx, cpu (medians) %.1fx, cpu (minimums) %.1fx (target <= 11x: %s)\n", wr, cr, mr, (wr <= 11 ? "met" : "missed")
  printf "peak 100k: %.1f MB (target <= 100 MB: %s)\n", mb, (mb <= 100 ? "met" : "missed")
}'
