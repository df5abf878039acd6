# perf_events in inspect: per region its calls and each counter's total and
# mean per call (the file's rank<N>/perf_events groups), after the timing
# table; a damaged group is a clear error. Software counters any Linux has.
OMP_NUM_THREADS=2 SCOPE_PROFILER_PERF_EVENTS=task-clock,page-faults SCOPE_PROFILER_QUIET=1 \
  "$SP_BUILD/examples/sim" --steps 3 --quiet || exit 3
[ -f profiling_data.h5 ] || { echo "skip: perf_event_open is not available here"; exit 77; }
out=$("$SP" inspect profiling_data.h5 -q) || exit 4
echo "$out" | sed -n '/^perf_events/,$p' | sed -n '1,2p' | tr -s ' '
echo "$out" | awk '/^perf_events/ {t = 1} t && $1 == "step" {print "step:", $2, "calls, task-clock > 0:", ($3 > 0)}'
"$SP" inspect profiling_data.h5 -q --include step | sed -n '/^perf_events/,$p' | awk 'NR > 2 {print "filtered:", $1}'
"${SP_PYTHON:-/usr/bin/python3}" - <<'PY'
import h5py
with h5py.File("profiling_data.h5", "r+") as f:
    g = f["rank0/perf_events/step"]
    del g["values"]
    g["values"] = [1, 2, 3]  # three values for two event names
PY
"$SP" inspect profiling_data.h5 -q > /dev/null
echo "exit $?"
