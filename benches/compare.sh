#!/usr/bin/env bash
# compare.sh: times the programs of benches/programs/ in ral, lua5.4, python3
# and bash, plus `ral -c ''` against `dash -c ''` start-up and a byte
# pipeline of external programs (`seq | grep | wc`) run by ral against the
# same one run by bash, in ONE hyperfine run, and prints each peer's mean
# time and its ratio to ral.
#
#   bash benches/compare.sh            # the full comparison (one to two minutes)
#   HYPERFINE_OPTS='--runs 3' bash benches/compare.sh   # a quick look
#
# Environment:
#   RAL             the ral binary (default: target/release/ral, built with
#                   `cargo build --release -p ral-host --bin ral` if missing)
#   PYTHON          the Python 3 interpreter (default: /usr/bin/python3, the
#                   Debian build, when present; else python3 on PATH)
#   HYPERFINE_OPTS  options for hyperfine (default: --warmup 1 --min-runs 10)
#   JSON_OUT        where to keep hyperfine's JSON export (default: a temp file)
#
# Each program is run once first and its output checked, so a broken
# program stops the script instead of being timed. The bash peers of fib,
# loop and records are scaled down (see the headers of the .sh files): their
# ratio is computed per unit of work and marked as such in the table.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
progs=$here/programs

# --- tools ------------------------------------------------------------------
missing=()
for tool in hyperfine lua5.4 dash bash python3; do
  command -v "$tool" > /dev/null 2>&1 || missing+=("$tool")
done
if ((${#missing[@]} > 0)); then
  echo "compare.sh: installing ${missing[*]}" >&2
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null 2>&1 || {
      echo "compare.sh: need root or sudo to install ${missing[*]}" >&2
      exit 1
    }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq "${missing[@]}" > /dev/null
fi

ral=${RAL:-$root/target/release/ral}
if [ ! -x "$ral" ]; then
  echo "compare.sh: building $ral (several minutes on 2 cores)" >&2
  (cd "$root" && cargo build --release -p ral-host --bin ral)
fi
if [ -z "${PYTHON:-}" ]; then
  if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=$(command -v python3); fi
fi
lua=$(command -v lua5.4)
bash_bin=$(command -v bash)
dash_bin=$(command -v dash)

# --- check every program's answer -------------------------------------------
# name  expected-full  expected-bash (scaled peers print their own answer)
declare -A want=(
  [fib]=832040 [loop]=4500001500000 [strings]=1088889 [records]=25714842855
  [closures]=245000000
)
declare -A want_bash=(
  [fib]=6765 [loop]=45000150000 [strings]=1088889 [records]=257189997
  [closures]=2450000
)
# Units of work each version does (calls, steps, strings, records); the
# ratio is per unit when a peer does less than ral.
declare -A units=(
  [fib]=2692537 [loop]=3000000 [strings]=100000 [records]=300000
  [closures]=1000000
)
declare -A units_bash=(
  [fib]=21891 [loop]=300000 [strings]=100000 [records]=30000
  [closures]=10000
)
workloads=(fib loop strings records closures)
# The pipeline: three external programs and two OS pipes; the shell only
# starts them and waits.
pipeline="seq 1 2000000 | grep 7 | wc -l"

check() { # label expected command...
  local label=$1 expected=$2 got
  shift 2
  if ! got=$("$@" 2>&1); then
    echo "compare.sh: $label failed:" >&2
    echo "$got" >&2
    exit 1
  fi
  if [ "$got" != "$expected" ]; then
    echo "compare.sh: $label printed '$got', expected '$expected'" >&2
    exit 1
  fi
}
for w in "${workloads[@]}"; do
  check "ral $w" "${want[$w]}" "$ral" "$progs/$w.ral"
  check "lua $w" "${want[$w]}" "$lua" "$progs/$w.lua"
  check "python $w" "${want[$w]}" "$PYTHON" "$progs/$w.py"
  check "bash $w" "${want_bash[$w]}" "$bash_bin" "$progs/$w.sh"
done
check "ral -c ''" "" "$ral" -c ''
check "dash -c ''" "" "$dash_bin" -c ''
want_pipe=$("$bash_bin" -c "$pipeline")
check "ral pipeline" "$want_pipe" "$ral" -c "$pipeline"

# --- one hyperfine run ------------------------------------------------------
json=${JSON_OUT:-$(mktemp --suffix=.json)}
args=()
for w in "${workloads[@]}"; do
  args+=(-n "ral $w" "$ral $progs/$w.ral")
  args+=(-n "lua $w" "$lua $progs/$w.lua")
  args+=(-n "python $w" "$PYTHON $progs/$w.py")
  args+=(-n "bash $w" "$bash_bin $progs/$w.sh")
done
args+=(-n "ral startup" "$ral -c ''")
args+=(-n "dash startup" "$dash_bin -c ''")
args+=(-n "ral pipeline" "$ral -c '$pipeline'")
args+=(-n "bash pipeline" "$bash_bin -c '$pipeline'")

# shellcheck disable=SC2086 # HYPERFINE_OPTS is a list of options
hyperfine -N --style basic ${HYPERFINE_OPTS:---warmup 1 --min-runs 10} \
  --export-json "$json" "${args[@]}" >&2

# --- the table ----------------------------------------------------------------
units_spec=""
for w in "${workloads[@]}"; do
  units_spec+="$w=${units[$w]}:${units_bash[$w]} "
done
"$PYTHON" - "$json" "$units_spec" <<'EOF'
import json
import sys

results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
units = {}
for item in sys.argv[2].split():
    name, pair = item.split("=")
    full, scaled = pair.split(":")
    units[name] = (int(full), int(scaled))

# ratio = peer time / ral time (per unit of work): above 1, ral is faster.
# Issue 15's targets: ral within 1.5x of Lua on fib and closures, 1.2x on
# the tail loop, 2x of dash on start-up, 1.05x of bash on the pipeline.
targets = {
    ("lua", "fib"): 1 / 1.5, ("lua", "loop"): 1 / 1.2, ("lua", "records"): 0.5,
    ("lua", "closures"): 1 / 1.5,
    ("python", "fib"): 1.0, ("python", "loop"): 1.0,
    ("python", "strings"): 1.0, ("python", "records"): 1.0,
    ("dash", "startup"): 0.5, ("bash", "pipeline"): 1 / 1.05,
}


def ms(r):
    return f"{r['mean'] * 1e3:9.1f} ± {r['stddev'] * 1e3:5.1f}"


def cpu(r):
    """Mean user + system time: less disturbed than wall time by other
    load on the machine."""
    return r["user"] + r["system"]


rows = []
for w in ["fib", "loop", "strings", "records", "closures", "startup", "pipeline"]:
    ral = results[f"ral {w}"]
    rows.append((w, "ral", ms(ral), f"{cpu(ral) * 1e3:8.1f}", "1.00", "1.00", "", ""))
    peers = {"startup": ["dash"], "pipeline": ["bash"]}.get(w, ["lua", "python", "bash"])
    for peer in peers:
        r = results[f"{peer} {w}"]
        ratio = r["mean"] / ral["mean"]
        cpu_ratio = cpu(r) / max(cpu(ral), 1e-9)
        note = ""
        if peer == "bash" and w in units and units[w][0] != units[w][1]:
            full, scaled = units[w]
            ratio *= full / scaled
            cpu_ratio *= full / scaled
            note = f"bash does {scaled:,} of {full:,} units; ratio per unit"
        target = targets.get((peer, w))
        verdict = ""
        if target is not None:
            met = ratio >= target
            verdict = f"{'met' if met else 'MISSED'} (>= {target:.2f})"
        rows.append((w, peer, ms(r), f"{cpu(r) * 1e3:8.1f}", f"{ratio:.2f}",
                     f"{cpu_ratio:.2f}", verdict, note))

head = ("workload", "peer", "wall ms ± σ", "cpu ms", "peer/ral", "cpu peer/ral",
        "target (wall)", "note")
widths = [max(len(str(row[i])) for row in rows + [head]) for i in range(len(head))]
fmt = "  ".join(f"{{:<{w}}}" for w in widths)
print()
print("ratio = peer mean / ral mean; above 1 means ral is faster. cpu = user + system.")
print(fmt.format(*head).rstrip())
print(fmt.format(*("-" * w for w in widths)).rstrip())
for row in rows:
    print(fmt.format(*row).rstrip())
EOF
echo >&2
echo "hyperfine JSON: $json" >&2
