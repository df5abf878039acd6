#!/usr/bin/env bash
# Instructions per iteration of each case of bench/python_overhead.py,
# counted by valgrind's callgrind (a figure that does not depend on machine
# load): each case runs with N1 and N2 iterations in its own interpreter;
# (I(N2) - I(N1)) / (N2 - N1) is one iteration.
#   bench/python_callgrind.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
n1=20000 n2=120000
count() {
  local out; out=$(mktemp)
  PYTHONPATH="$build/python" SCOPE_PROFILER_CLOCK=tsc valgrind --tool=callgrind --callgrind-out-file="$out" \
    /usr/bin/python3 "$here/python_overhead.py" --case "$1" --calls "$2" >/dev/null 2>&1
  awk '/^summary:/ {print $2}' "$out"
  rm -f "$out"
}
printf '%-16s %14s\n' case "instr/iter"
for c in empty with_null perf_pair with_lookup with_local plain_call decorated_call; do
  a=$(count "$c" $n1); b=$(count "$c" $n2)
  awk -v a="$a" -v b="$b" -v c="$c" -v n=$((n2 - n1)) 'BEGIN {printf "%-16s %14.1f\n", c, (b - a) / n}'
done
