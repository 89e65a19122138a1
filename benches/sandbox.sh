#!/usr/bin/env bash
# The per-launch cost of the OS sandbox (spec/capabilities.md): a loop of
# 300 launches of `true`, unconfined and under four grants, each run ROUNDS
# times (default 12) by the release `ral`. Prints, per case, the minimum and
# median of the run's CPU time (user + system, ral and its children; less
# disturbed by other load than wall time) and of its wall time, and each
# case's ratio to the unconfined loop. Needs a release build:
#   cargo build --release -p ral-host --bin ral && benches/sandbox.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RAL=${RAL:-target/release/ral}
ROUNDS=${ROUNDS:-12}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
loop="let loop = { |n| if \$[\$n > 0] { ^true; loop \$[\$n - 1] } }"
printf '%s\nloop 300\n' "$loop" > "$dir/plain.ral"
printf '%s\ngrant [net: false] { loop 300 }\n' "$loop" > "$dir/net.ral"
printf '%s\ngrant [exec: [true: %s]] { loop 300 }\n' "$loop" "'allow'" > "$dir/exec.ral"
printf '%s\ngrant [fs: [read: [%s], write: [%s, %s]]] { loop 300 }\n' "$loop" "'/'" "'cwd:'" "'tempdir:'" > "$dir/writes.ral"
printf '%s\ngrant [fs: [read: [%s, %s], write: [%s, %s]], net: false] { loop 300 }\n' "$loop" "'cwd:'" "'tempdir:'" "'cwd:'" "'tempdir:'" > "$dir/confined.ral"
cases="plain net exec writes confined"
for _ in $(seq "$ROUNDS"); do
  for c in $cases; do
    /usr/bin/time -f "$c %e %U %S" "$RAL" "$dir/$c.ral" 2>> "$dir/times"
  done
done
stat() { # case column -> "min median"
  grep "^$1 " "$dir/times" | awk -v col="$2" '{ if (col == "cpu") print $3 + $4; else print $2 }' \
    | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f %.3f", v[1], v[int((NR + 1) / 2)] }'
}
read -r base_cpu base_cpu_med <<< "$(stat plain cpu)"
read -r _ base_wall_med <<< "$(stat plain wall)"
printf '%-9s %22s %22s %14s\n' case "cpu s (min median)" "wall s (min median)" "median ratio"
for c in $cases; do
  read -r cmin cmed <<< "$(stat "$c" cpu)"
  read -r wmin wmed <<< "$(stat "$c" wall)"
  ratio=$(awk -v a="$cmed" -v b="$base_cpu_med" 'BEGIN { printf "%.2f", a / b }')
  printf '%-9s %10s %11s %10s %11s %14s\n' "$c" "$cmin" "$cmed" "$wmin" "$wmed" "cpu ${ratio}x"
done
