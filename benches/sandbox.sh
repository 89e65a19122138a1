#!/usr/bin/env bash
# The per-launch cost of the OS sandbox (spec/capabilities.md section 8):
# a loop of 300 launches of `true`, unconfined and under four grants, each
# run ROUNDS times (default 12) by the release `ral`, timed side by side by
# hyperfine. Prints, per case, the mean wall time, the mean CPU time (user +
# system, ral and its children) and both ratios to the unconfined loop.
# The confined cases use whatever level this machine gives ral's user (the
# namespace layer where user namespaces are allowed). Needs a release build
# and hyperfine:
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
# hyperfine (Debian package `hyperfine`) times each case ROUNDS times side
# by side; the CPU time is user + system of ral and its children.
# Each confined case runs twice: with the namespace layer (where this
# machine allows it) and with Landlock and seccomp alone (`-floor`,
# RAL_SANDBOX_NAMESPACES=0).
args=()
for c in $cases; do
  args+=(-n "$c" "$RAL $dir/$c.ral")
  if [ "$c" != plain ]; then
    args+=(-n "$c-floor" "env RAL_SANDBOX_NAMESPACES=0 $RAL $dir/$c.ral")
  fi
done
hyperfine -N --warmup 1 --runs "$ROUNDS" --export-json "$dir/h.json" "${args[@]}" > /dev/null
python3 - "$dir/h.json" <<'PY'
import json, sys
rs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
base = rs["plain"]
def cpu(r):
    return r["user"] + r["system"]
print(f"{'case':<9} {'wall s (mean ± sd)':>22} {'cpu s (mean)':>13} {'wall ratio':>11} {'cpu ratio':>10}")
for name, r in rs.items():
    print(f"{name:<9} {r['mean']:>13.3f} ± {r['stddev']:.3f} {cpu(r):>13.3f} "
          f"{r['mean'] / base['mean']:>10.2f}x {cpu(r) / cpu(base):>9.2f}x")
PY
