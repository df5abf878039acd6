#!/usr/bin/env bash
# Instructions per begin/end pair, counted by valgrind's callgrind: a figure
# that does not depend on machine load. For each mode the program runs with
# N1 and N2 pairs; (I(N2) - I(N1)) / (N2 - N1) is the cost of one pair.
#   bench/callgrind.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
bin="$build/bench/pair_count"
command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 77; }
n1=100000 n2=300000
count() {
  local out; out=$(mktemp)
  # valgrind hides the invariant-TSC CPUID flag: use the TSC as a real run does
  SCOPE_PROFILER_CLOCK=tsc valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$1" "$2" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"
  rm -f "$out"
}
printf '%-12s %14s\n' mode "instr/pair"
for mode in empty deactivated tag timeline aggregation; do
  a=$(count "$mode" $n1); b=$(count "$mode" $n2)
  awk -v a="$a" -v b="$b" -v m="$mode" -v n=$((n2 - n1)) 'BEGIN {printf "%-12s %14.2f\n", m, (b - a) / n}'
done
