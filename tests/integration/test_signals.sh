#!/usr/bin/env bash
# Killed and crashing runs keep their profile. Termination signals (TERM, INT,
# XCPU, USR1) sent to a running instrumented program: the HDF5 file holds the
# calls recorded before the signal and the process still dies of that signal.
# Fatal signals (SEGV, BUS, FPE, ABRT): a spill file is left, `scope-profiler
# recover` turns it into the file, and the process dies of the signal. An
# application's own SIGUSR1 handler keeps working (chained).
set -uo pipefail
app="$SP_BUILD/tests/app-killme"
cli="$SP_BUILD/scope-profiler"
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-signals-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
fail=0
calls() { # events of region "work" in a file, through our reader
  "$cli" inspect "$1" --json 2>/dev/null | "$SP_PYTHON" -c '
import json, sys
d = json.load(sys.stdin)
print(d["files"][0]["region_statistics"].get("work", {}).get("count", 0))'
}
declare -A num=([TERM]=15 [INT]=2 [XCPU]=24 [USR1]=10 [SEGV]=11 [BUS]=7 [FPE]=8 [ABRT]=6)

for sig in TERM INT XCPU USR1; do
  rm -f out.h5 fifo; mkfifo fifo
  SCOPE_PROFILER_FILE_PATH=out.h5 "$app" --ready 500 > fifo &
  pid=$!
  read -r line < fifo
  kill -s "$sig" "$pid"
  wait "$pid"; rc=$?
  n=$(calls out.h5)
  if [[ $rc -ne $((128 + ${num[$sig]})) ]]; then echo "SIG$sig: exit status $rc, expected death by the signal"; fail=1; fi
  if [[ -z "$n" || "$n" -lt 500 ]]; then echo "SIG$sig: file holds ${n:-no} work calls, expected >= 500"; fail=1; fi
  echo "SIG$sig: $line, exit $rc, $n calls written"
done

for sig in SEGV BUS FPE ABRT; do
  rm -f out.h5 out.h5.spill
  SCOPE_PROFILER_FILE_PATH=out.h5 "$app" --ready 300 --raise "${num[$sig]}" > /dev/null 2>&1
  rc=$?
  if [[ $rc -ne $((128 + ${num[$sig]})) ]]; then echo "SIG$sig: exit status $rc, expected death by the signal"; fail=1; fi
  if [[ ! -s out.h5.spill ]]; then echo "SIG$sig: no spill file"; fail=1; continue; fi
  if [[ -e out.h5 ]]; then echo "SIG$sig: an HDF5 file was written from a signal handler"; fail=1; fi
  "$cli" recover out.h5.spill || { echo "SIG$sig: recover failed"; fail=1; continue; }
  n=$(calls out.h5)
  if [[ "$n" != 300 ]]; then echo "SIG$sig: recovered file holds ${n:-no} work calls, expected 300"; fail=1; fi
  "$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" out.h5 --expect work=300 || fail=1
  "$SP_PYTHON" -c 'import h5py,sys; a=h5py.File("out.h5")["metadata"].attrs; sys.exit(0 if a["recovered_from_signal"]==int(sys.argv[1]) and a["recovery_complete"]==1 else 1)' "${num[$sig]}" \
    || { echo "SIG$sig: recovery metadata wrong"; fail=1; }
  echo "SIG$sig: exit $rc, spill recovered with $n calls"
done

# The application's own handler is chained, the run goes on and finalizes.
rm -f out.h5 fifo; mkfifo fifo
SCOPE_PROFILER_FILE_PATH=out.h5 "$app" --ready 200 --app-handler > fifo &
pid=$!
{ read -r line; kill -s USR1 "$pid"; read -r handled; } < fifo
wait "$pid"; rc=$?
if [[ $rc -ne 0 || "$handled" != "app handler ran: 1" ]]; then echo "chained USR1: rc=$rc '$handled'"; fail=1; fi
n=$(calls out.h5)
if [[ -z "$n" || "$n" -lt 200 ]]; then echo "chained USR1: ${n:-no} calls"; fail=1; fi
echo "chained SIGUSR1: $handled, final file has $n calls"

# Hostile spill files are refused with exit 2, never a crash.
printf 'SPSPILL1\x01\x00\x00\x00' > trunc.spill
head -c 100 /dev/urandom > random.spill
for f in trunc.spill random.spill /dev/null; do
  "$cli" recover "$f" -o x.h5 >/dev/null 2>err.txt; rc=$?
  if [[ $rc -ne 2 ]]; then echo "recover $f: exit $rc, expected 2"; cat err.txt; fail=1; fi
done
exit $fail
