#!/bin/bash
# cli_read.sh - `report` and `inspect --tree` on one large file, by two
# builds of the CLI, alternated in one run (these machines are noisy: only
# the ratios and the spread say something). For each binary and command:
# process CPU seconds (user + sys, from /usr/bin/time) as min / median /
# max over the runs, and the peak RSS per event of the file.
#
#   bench/cli_read.sh FILE EVENTS RUNS BASELINE_CLI NEW_CLI
#
# FILE: e.g. the 10M-event file of `build/bench/reader_bench --keep`
# (bench_reader.h5); BASELINE_CLI: a copy of build/scope-profiler from the
# commit to compare with.
set -u
file=$1 events=$2 runs=$3
shift 3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  for b in "$@"; do
    /usr/bin/time -f "report $b %U %S %M" -a -o "$out/t" "$b" report "$file" -o "$out/rep" -q || exit
    /usr/bin/time -f "tree $b %U %S %M" -a -o "$out/t" "$b" inspect --tree "$file" >/dev/null || exit
  done
done
printf '%-8s %-40s %6s %6s %6s %10s\n' command binary "cpu min" median max "B/event"
for cmd in report tree; do
  for b in "$@"; do
    grep "^$cmd $b " "$out/t" | awk -v ev="$events" '{printf "%.2f %d\n", $3 + $4, $5}' | sort -n |
      awk -v c="$cmd" -v b="$b" -v ev="$events" '{v[NR] = $1; if ($2 > m) m = $2}
        END {printf "%-8s %-40s %6.2f %6.2f %6.2f %10.1f\n", c, b, v[1], v[int((NR + 1) / 2)], v[NR], m * 1024 / ev}'
  done
done
