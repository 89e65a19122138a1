#!/usr/bin/env bash
# audit.sh: what an open audit trail costs (spec §13.3; spec/audit.md).
#
#   bash benches/audit.sh            # launches and writes, median of 5
#   RUNS=3 bash benches/audit.sh     # fewer runs
#   FULL=1 bash benches/audit.sh     # also 100,000 launches, once each
#
# Each workload runs as the same loop twice: bare, and inside `audit`,
# which also counts the observations so the trail cannot be optimised
# away (and checks that the count is right). Reported: the median wall
# time of each over RUNS runs and their ratio, and, for the writes, the
# peak resident set of each run and the difference per observation.
#
#   launches  2,000 starts of the external `true` (`^true`)
#   writes    100,000 `echo i > /dev/null` redirects (a write observation
#             each; /dev/null is not a regular file, so no images are read)
#   full      100,000 starts of `^true` (FULL=1; one run each, minutes)
#
# Environment: RAL (default target/release/ral, built if missing), RUNS
# (default 5), FULL.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
ral=${RAL:-$root/target/release/ral}
runs=${RUNS:-5}
if [ ! -x "$ral" ]; then
  (cd "$root" && cargo build --release -p ral-host --bin ral)
fi

# One run of a program: prints "seconds peak-KiB" and checks its output.
one() {
  local want=$1 src=$2 out
  out=$(mktemp)
  /usr/bin/time -f '%e %M' -o "$out.time" "$ral" -c "$src" > "$out"
  if [ "$(cat "$out")" != "$want" ]; then
    echo "audit.sh: expected '$want', got '$(cat "$out")' from: $src" >&2
    exit 1
  fi
  cat "$out.time"
  rm -f "$out" "$out.time"
}

# The median of the first column (times) and of the second (KiB) over
# $runs runs.
median() {
  local want=$1 src=$2 times=() mems=() t m
  for _ in $(seq "$runs"); do
    read -r t m < <(one "$want" "$src")
    times+=("$t")
    mems+=("$m")
  done
  local mid=$(((runs + 1) / 2))
  printf '%s %s\n' \
    "$(printf '%s\n' "${times[@]}" | sort -g | sed -n "${mid}p")" \
    "$(printf '%s\n' "${mems[@]}" | sort -g | sed -n "${mid}p")"
}

row() {
  local name=$1 n=$2 plain=$3 audited=$4 pt pm at am
  read -r pt pm <<< "$plain"
  read -r at am <<< "$audited"
  local ratio per
  ratio=$(awk -v a="$at" -v p="$pt" 'BEGIN { printf "%.2f", (p > 0 ? a / p : 0) }')
  per=$(awk -v a="$am" -v p="$pm" -v n="$n" 'BEGIN { printf "%.0f", (a - p) * 1024 / n }')
  printf '%-10s %9s %10ss %10ss %7sx %9s KiB %9s KiB %8s B\n' \
    "$name" "$n" "$pt" "$at" "$ratio" "$pm" "$am" "$per"
}

launch_plain='for !{range 0 N} { |i| ^true }; echo N'
launch_audit='let r = audit { for !{range 0 N} { |i| ^true } }; echo !{length $r[trail]}'
write_plain='for !{range 0 N} { |i| echo $i > /dev/null }; echo N'
write_audit='let r = audit { for !{range 0 N} { |i| echo $i > /dev/null } }; echo !{length $r[trail]}'

with() { echo "${1//N/$2}"; }

printf 'ral: %s, %s runs each (median)\n\n' "$ral" "$runs"
printf '%-10s %9s %11s %11s %8s %13s %13s %10s\n' \
  workload n plain audited ratio 'plain peak' 'audit peak' 'per obs'
row launches 2000 \
  "$(median 2000 "$(with "$launch_plain" 2000)")" \
  "$(median 2000 "$(with "$launch_audit" 2000)")"
row writes 100000 \
  "$(median 100000 "$(with "$write_plain" 100000)")" \
  "$(median 100000 "$(with "$write_audit" 100000)")"
if [ -n "${FULL:-}" ]; then
  runs=1
  row full 100000 \
    "$(median 100000 "$(with "$launch_plain" 100000)")" \
    "$(median 100000 "$(with "$launch_audit" 100000)")"
fi
