#!/usr/bin/env bash
# What this project's test machines cannot show (virtual machines without a
# PMU): hardware counters per region on real hardware. Run it on a machine
# with a PMU (bare metal, or a VM with PMU passthrough), from a build folder:
#
#   scripts/counters-check.sh [BUILD_DIR]
#
# 1. perf_events with hardware counters: the unit tests (their hardware case
#    counts cycles instead of expecting the "no PMU" error), then one
#    instrumented run, checked: instructions of a region doing known work.
# 2. How counters are read: with cap_user_rdpmc the counted pair reads them
#    with rdpmc (perf_events_read = "rdpmc" in the file); its cost next to
#    the read() path and the plain pair (bench/ext_overhead).
# 3. PAPI presets (PAPI_TOT_CYC, PAPI_TOT_INS) where papi_avail lists them.
# 4. use_likwid under likwid-perfctr -m (tests/integration/test_likwid_perfctr.sh).
# Prints what it measured; exit 1 when a check fails.
set -u
build=$(cd "${1:-build}" && pwd) || exit 2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sp="$build/scope-profiler"
py=/usr/bin/python3
fail=0
echo "== kernel: perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid), rdpmc $(cat /sys/bus/event_source/devices/cpu/rdpmc 2>/dev/null || echo '?')"
echo "== 1. perf_events unit tests"
"$build/tests/test-perf" || fail=1
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-counters-XXXXXX"); trap 'rm -rf "$work"' EXIT
( cd "$work" && OMP_NUM_THREADS=2 SCOPE_PROFILER_PERF_EVENTS=cycles,instructions,task-clock \
    SCOPE_PROFILER_FILE_PATH=hw.h5 "$build/examples/sim" --steps 5 --quiet ) || { echo "hardware counters: setup failed"; fail=1; }
if [ -f "$work/hw.h5" ]; then
  "$sp" inspect "$work/hw.h5" -q | sed -n '/^perf_events/,$p'
  "$py" - "$work/hw.h5" <<'PY' || fail=1
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    how = f["metadata"].attrs["perf_events_read"]
    how = how.decode() if isinstance(how, bytes) else how
    v = f["rank0/perf_events/step/values"][()]
    names = list(f["rank0/perf_events/step"].attrs["event_names"])
    print("read with:", how, "| step totals:", dict(zip([n.decode() if isinstance(n, bytes) else n for n in names], v)))
    assert v[0] > 0 and v[1] > 0, "hardware counters counted nothing"
PY
fi
echo "== 2. the counted pair, rdpmc and read()"
"$build/bench/ext_overhead" --reps 11 --events cycles,instructions
"$build/bench/ext_overhead" --reps 11 --events task-clock | tail -2 # the counted pair, the bare reads
echo "== 3. PAPI presets"
if command -v papi_avail >/dev/null && papi_avail -a 2>/dev/null | grep -q PAPI_TOT_CYC; then
  ( cd "$work" && SCOPE_PROFILER_PERF_EVENTS=PAPI_TOT_CYC,PAPI_TOT_INS SCOPE_PROFILER_FILE_PATH=papi.h5 \
      "$build/examples/sim" --steps 3 --quiet && "$sp" inspect papi.h5 -q | sed -n '/^perf_events/,$p' ) || fail=1
else
  echo "papi_avail lists no PAPI_TOT_CYC here: skipped"
fi
echo "== 4. use_likwid under likwid-perfctr"
SP_BUILD="$build" SP_SRC="$root" SP_PYTHON="$py" bash "$root/tests/integration/test_likwid_perfctr.sh"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail=1
exit $fail
