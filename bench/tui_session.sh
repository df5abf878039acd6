#!/usr/bin/env bash
# tui_session.sh BUILD FILE [tree|big]: CPU seconds and peak RSS of one
# scripted `scope-profiler tui` session on FILE, driven in tmux: open, first
# screen, the first region's detail, then either the call tree (tree) or the
# region with the most calls selected (big), then quit. BENCHMARKS.md
# ("Terminal browser") has the figures for a 10M-event file.
set -euo pipefail
build=$1 file=$2 what=${3:-}
export LANG=C.UTF-8 LC_ALL=C.UTF-8
unset TMUX
out=$(mktemp)
T() { tmux -L "tuibench-$$" "$@"; }
trap 'T kill-server 2>/dev/null; rm -f "$out"' EXIT
waitfor() {
  for _ in $(seq 1 30000); do T capture-pane -p -t tui 2>/dev/null | grep -q "$1" && return; sleep 0.02; done
  echo "timeout waiting for '$1'" >&2
  exit 1
}
T -u new-session -d -s tui -x 120 -y 30 \
  "/usr/bin/time -f '%U %S %e %M' -o $out $build/scope-profiler tui $file; sleep 3"
waitfor "over time: [^(]"
if [[ $what == tree ]]; then
  T send-keys -t tui 2
  waitfor "% session"
  waitfor "q quit"
elif [[ $what == big ]]; then
  T send-keys -t tui c
  sleep 0.3
  T send-keys -t tui g
  sleep 0.3
  waitfor "over time: [^(]"
fi
T send-keys -t tui q
for _ in $(seq 1 100); do [[ -s $out ]] && break; sleep 0.1; done
read -r user sys wall rss < "$out"
echo "tui $file ${what:-open}: user ${user} s, sys ${sys} s, wall ${wall} s, max RSS $((rss / 1024)) MB"
