#!/usr/bin/env bash
# test_report_browser.sh - `scope-profiler report` in a real browser: Debian's
# headless Chromium, driven through chromedriver by tests/report/browser_check.py
# (WebDriver over urllib), opens report.html from file:// and checks: no
# console errors, data-bars = bars in the DOM (= the golden counts for the
# 4-rank input), a click highlights a region everywhere, the rank selector,
# wheel zoom / drag pan, table sorting, the views drawn from the JSON blob
# (the demo records threads: its threads view must be there; the demo with
# use_memray has the three memory views; app-line_hot with use_line_profiler
# has the source view). Screenshots are saved as test
# artifacts in $SP_BUILD/test-artifacts/report-*.png.
#
# Inputs: (a) the demo (examples/sim --steps 20), (b) a 4-rank schema-2 file
# made with h5py (tests/report/make_inputs.py), (c) a real `mpirun -np 4` run
# of examples/sim_mpi when the MPI build exists (skipped otherwise).
# Env: SP_BUILD, SP_SRC, SP_PYTHON. Exit 77 = skipped (no Chromium or
# chromedriver: scripts/install-deps.sh --with-browser installs them).
set -euo pipefail
SP="$SP_BUILD/scope-profiler"
PY="${SP_PYTHON:-/usr/bin/python3}"
CHECK="$SP_SRC/tests/report/browser_check.py"
[[ -x "$SP" ]] || { echo "skip: $SP not built"; exit 77; }
for b in "${SP_CHROMIUM:-/usr/bin/chromium}" "${SP_CHROMEDRIVER:-/usr/bin/chromedriver}"; do
  [[ -x "$b" ]] || { echo "skip: $b missing (scripts/install-deps.sh --with-browser)"; exit 77; }
done
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "skip: needs h5py and numpy"; exit 77; }
art="$SP_BUILD/test-artifacts"
mkdir -p "$art"
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-report-browser-XXXXXX")
trap 'rm -rf "$work"' EXIT

# The counts each chart must show, read from the SVG files report wrote (the
# golden tests check those against the input; here the DOM must agree).
svg_counts() {
  for f in "$1"/*.svg; do
    printf '%s=%s ' "$(basename "$f" .svg)" "$(grep -o 'data-bars="[0-9]*"' "$f" | head -1 | tr -dc 0-9)"
  done
}

echo "== (a) the demo: examples/sim --steps 20"
mkdir "$work/demo"
cd "$work/demo"
SCOPE_PROFILER_FILE_PATH=demo.h5 SCOPE_PROFILER_TRACK_THREADS=1 OMP_NUM_THREADS=2 \
  "$SP_BUILD/examples/sim" --steps 20 --quiet
"$SP" report demo.h5 -o report -q
"$PY" "$SP_SRC/tests/report/check_report.py" report demo.h5
# shellcheck disable=SC2046
"$PY" "$CHECK" report/report.html --screenshot "$art/report-demo.png" --expect-view threads \
  --expect-view thread_table \
  --expect $(svg_counts report)

echo "== (a2) the demo with use_memray (the interposer preloaded, native stacks)"
lib="$SP_BUILD/src/memory/libscope_profiler_memory.so"
if [[ -f $lib ]]; then
  mkdir "$work/memray"
  cd "$work/memray"
  LD_PRELOAD="$lib" SCOPE_PROFILER_FILE_PATH=mem.h5 SCOPE_PROFILER_USE_MEMRAY=1 \
    SCOPE_PROFILER_MEMRAY_NATIVE_TRACES=1 OMP_NUM_THREADS=2 "$SP_BUILD/examples/sim" --steps 5 --quiet
  "$SP" report mem.h5 -o report -q # finds mem.memray.bin beside the profile
  "$PY" "$CHECK" report/report.html --screenshot "$art/report-memray.png" --expect-view memory \
    --expect-view memory_time --expect-view memory_peak
  n=$("$PY" - <<'PY'
import json, re
html = open("report/report.html").read()
blob = re.search(r'<script type="application/json" id="sp-data">(.*?)</script>', html, re.S).group(1)
print(len(json.loads(blob)["views"]["memory_peak"]["nodes"]))
PY
)
  [[ $n -gt 3 ]] || { echo "FAIL: the memory flame graph has $n boxes"; exit 1; }
fi

echo "== (a3) line profiles (use_line_profiler): the source view"
mkdir "$work/lines"
cd "$work/lines"
SCOPE_PROFILER_USE_LINE_PROFILER=1 SCOPE_PROFILER_FILE_PATH=lines.h5 SCOPE_PROFILER_QUIET=1 \
  "$SP_BUILD/tests/app-line_hot" 150 > /dev/null 2>&1
"$SP" report lines.h5 -o report -q
"$PY" "$CHECK" report/report.html --screenshot "$art/report-lines.png" --expect-view lines

echo "== (b) a 4-rank schema-2 file (h5py)"
mkdir "$work/mpi4"
cd "$work/mpi4"
"$PY" "$SP_SRC/tests/report/make_inputs.py" .
"$SP" report mpi4.h5 -o report -q
# golden counts: 105 calls on 4 ranks, 30 on rank 0, 7 call paths, 7 regions,
# 22 (region, rank) totals
"$PY" "$CHECK" report/report.html --screenshot "$art/report-mpi4.png" --rank 3 \
  --click-region solve --expect gantt=105 flame_chart=30 flame_graph=7 timeseries=105 \
  durations_avg=7 durations_min=7 durations_max=7 durations_total=7 imbalance=22

echo "== (b2) a 2-rank file with GPU times (tests/golden/gpu.h5): the gpu view, GPU strips"
mkdir "$work/gpu"
cd "$work/gpu"
"$SP" report "$SP_SRC/tests/golden/gpu.h5" -o report -q
strips=$(grep -o 'class="gpubar"' report/gantt.svg | wc -l)
[[ $strips == 17 ]] || { echo "FAIL: $strips GPU strips in the Gantt chart, expected 17 (one per timed call)"; exit 1; }
# shellcheck disable=SC2046
"$PY" "$CHECK" report/report.html --screenshot "$art/report-gpu.png" --expect-view gpu \
  --expect $(svg_counts report)

echo "== (c) a real mpirun -np 4 run"
sim_mpi="$SP_BUILD/examples/sim_mpi"
# the launcher of the MPI sim_mpi was built with (CMake's MPIEXEC_EXECUTABLE)
mpirun=${SP_MPIEXEC:-$(command -v mpirun || true)}
if [[ -x "$sim_mpi" ]] && [[ -n "$mpirun" ]]; then
  mkdir "$work/mpirun"
  cd "$work/mpirun"
  flags=()
  if "$mpirun" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
    # Open MPI forwards only the variables -x names; MPICH forwards all
    flags=(--oversubscribe -x SCOPE_PROFILER_FILE_PATH -x OMP_NUM_THREADS)
    [[ $(id -u) == 0 ]] && flags+=(--allow-run-as-root)
  fi
  SCOPE_PROFILER_FILE_PATH=mpi.h5 OMP_NUM_THREADS=1 \
    "$mpirun" "${flags[@]}" -np 4 "$sim_mpi" --steps 10 --quiet
  "$SP" report mpi.h5 -o report -q
  "$PY" "$SP_SRC/tests/report/check_report.py" report mpi.h5
  nranks=$(grep -o '<option value="[0-9]*">' report/report.html | wc -l)
  [[ $nranks == 4 ]] || { echo "FAIL: the mpirun profile has $nranks ranks, expected 4"; exit 1; }
  # shellcheck disable=SC2046
  "$PY" "$CHECK" report/report.html --screenshot "$art/report-mpirun.png" \
    --expect $(svg_counts report)
else
  echo "skipped: $sim_mpi not built (MPI build) or mpirun missing"
fi
echo "screenshots: $art/report-*.png"
