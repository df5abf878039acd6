#!/usr/bin/env bash
# The demo behind `make demo`: runs the example simulation under the profiler,
# prints its summary, leaves profiling_data.h5 in the current directory and
# shows what the CLI reads back from it. Any SCOPE_PROFILER_* variable set in
# the environment applies (e.g. SCOPE_PROFILER_AGGREGATION_MODE=1).
set -euo pipefail
build=${1:-build}
steps=${SP_DEMO_STEPS:-50}
out=${SCOPE_PROFILER_FILE_PATH:-profiling_data.h5}
export SCOPE_PROFILER_FILE_PATH="$out"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

echo "== running examples/sim --steps $steps (OMP_NUM_THREADS=$OMP_NUM_THREADS) under scope-profiler"
"$build/examples/sim" --steps "$steps"
echo
if "$build/scope-profiler" --help 2>/dev/null | grep -q '^  inspect'; then
  echo "== scope-profiler inspect $out --tree"
  "$build/scope-profiler" inspect "$out" --tree
  echo
fi
if "$build/scope-profiler" --help 2>/dev/null | grep -q '^  report'; then
  "$build/scope-profiler" report "$out" -o report >/dev/null
  echo "== HTML report: $(pwd)/report/report.html"
fi
echo "== profile: $(pwd)/$out  (open with: scope-profiler inspect $out, or h5py)"
if [[ -d "$build/python/scope_profiler" ]]; then
  echo
  echo "== the same from Python: examples/python/sim.py (PYTHONPATH=$build/python)"
  (unset SCOPE_PROFILER_FILE_PATH; PYTHONPATH="$build/python" /usr/bin/python3 \
     "$(dirname "$0")/../examples/python/sim.py" --steps 20 --out profiling_data_python.h5)
fi
