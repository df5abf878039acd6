#!/usr/bin/env bash
# Instructions per begin/end pair, counted by valgrind's callgrind: a figure
# that does not depend on machine load. For each mode the program runs with
# N1 and N2 pairs; (I(N2) - I(N1)) / (N2 - N1) is the cost of one pair.
#   bench/callgrind.sh [BUILD_DIR]       (SP_MODES="timeline c_macro": only those;
#                                         SP_PAIR_COUNT=pair_count_static: the static archive)
set -euo pipefail
build=${1:-build}
bin="$build/bench/${SP_PAIR_COUNT:-pair_count}"
command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 77; }
n1=100000 n2=300000
count() {
  local out; out=$(mktemp)
  # valgrind hides the invariant-TSC CPUID flag: use the TSC as a real run does
  if SCOPE_PROFILER_CLOCK=tsc valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" "$1" "$2" >/dev/null 2>&1; then
    awk '/^summary:/ {print $2}' "$out"
  fi
  rm -f "$out"
}
printf '%-12s %14s\n' mode "instr/pair"
# the core's modes, then the front ends' loops (a mode this build lacks is left out)
for mode in ${SP_MODES:-empty deactivated tag tag_site timeline aggregation name name_buf c_macro c_fn cxx_macro cxx_scope cxx_name \
  fortran_handle fortran_name}; do
  a=$(count "$mode" $n1); b=$(count "$mode" $n2)
  [ -n "$a" ] && [ -n "$b" ] || continue
  awk -v a="$a" -v b="$b" -v m="$mode" -v n=$((n2 - n1)) 'BEGIN {printf "%-12s %14.2f\n", m, (b - a) / n}'
done
