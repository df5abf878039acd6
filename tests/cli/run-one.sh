#!/usr/bin/env bash
# Runs one golden CLI test: tests/cli/<group>/<name>.sh is executed with bash
# in a fresh temporary directory, with $SP (the CLI), $SP_BUILD and $SP_SRC
# set; its stdout, stderr and exit status are compared with <name>.stdout.exact
# (or .stdout.glob, one shell pattern per line), <name>.stderr.exact and
# <name>.exit when those files exist. Set SP_UPDATE_GOLDEN=1 to rewrite them.
set -u
script=$1
base=${script%.sh}
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
export SP="$SP_BUILD/scope-profiler"
cd "$work"
bash "$script" >"$work/.stdout" 2>"$work/.stderr"
rc=$?
if [[ "${SP_UPDATE_GOLDEN:-0}" == 1 ]]; then
  cp "$work/.stdout" "$base.stdout.exact"
  [[ -s "$work/.stderr" ]] && cp "$work/.stderr" "$base.stderr.exact"
  echo "$rc" > "$base.exit"
  echo "updated golden files of $base"; exit 0
fi
# 77: the script found what it needs missing here (CTest reports a skip).
if [[ "$rc" == 77 && ! -f "$base.exit" ]]; then
  cat "$work/.stdout" "$work/.stderr"; exit 77
fi
fail=0
expected_rc=0
[[ -f "$base.exit" ]] && expected_rc=$(cat "$base.exit")
if [[ "$rc" != "$expected_rc" ]]; then
  echo "exit status $rc, expected $expected_rc"; fail=1
fi
if [[ -f "$base.stdout.exact" ]]; then
  diff -u "$base.stdout.exact" "$work/.stdout" || { echo "stdout differs"; fail=1; }
elif [[ -f "$base.stdout.glob" ]]; then
  mapfile -t pats < "$base.stdout.glob"; mapfile -t got < "$work/.stdout"
  if [[ ${#pats[@]} != ${#got[@]} ]]; then echo "stdout has ${#got[@]} lines, expected ${#pats[@]}"; fail=1; fi
  for i in "${!pats[@]}"; do
    # shellcheck disable=SC2053
    [[ "${got[$i]:-}" == ${pats[$i]} ]] || { echo "line $((i+1)): '${got[$i]:-}' !~ '${pats[$i]}'"; fail=1; }
  done
fi
if [[ -f "$base.stderr.exact" ]]; then
  diff -u "$base.stderr.exact" "$work/.stderr" || { echo "stderr differs"; fail=1; }
fi
if [[ $fail != 0 ]]; then
  echo "--- stdout"; cat "$work/.stdout"; echo "--- stderr"; cat "$work/.stderr"
fi
exit $fail
