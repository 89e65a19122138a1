#!/usr/bin/env bash
# lsp.sh: the language server's queries at 5,000 and 50,000 lines, counted
# in instructions (callgrind), so the growth from one size to the other is
# the same on a loaded machine as on an idle one. For each query it prints
# the inclusive instruction count at both sizes and their ratio (linear is
# about 10): the analysis after an edit (parse and check), hover,
# completion after `$` (every binding in scope) and the document symbols.
# Wall times through the real server loop are `cargo bench -p ral-host
# --bench lsp`.
#
#   bash benches/lsp.sh
#
# Needs valgrind. Builds `host/examples/lsp_queries.rs` in release.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
command -v valgrind >/dev/null || { echo "lsp.sh: needs valgrind" >&2; exit 1; }
(cd "$root" && cargo build --release -q -p ral-host --example lsp_queries)
bin=$root/target/release/examples/lsp_queries
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

declare -A count
for lines in 5000 50000; do
  out=$dir/cg.$lines
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$lines" 2>/dev/null
  for q in new hover complete symbols; do
    ir=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null \
      | grep -E "lsp::analysis::Analysis::$q[ (]|lsp::analysis::Analysis::$q\$" \
      | head -1 | awk '{ gsub(",", "", $1); print $1 }')
    count[$q.$lines]=${ir:-0}
  done
done
printf '%-10s %16s %16s %7s\n' query '5,000 lines' '50,000 lines' ratio
for q in new hover complete symbols; do
  a=${count[$q.5000]} b=${count[$q.50000]}
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { if (a > 0) printf "%.1f", b / a; else print "-" }')
  printf '%-10s %16s %16s %7s\n' "$q" "$a" "$b" "$ratio"
done
