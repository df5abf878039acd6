# Threads not recorded (no events/thread_ids): the calls of two threads share
# one lane and overlap without nesting. The Chrome trace gives them tracks of
# their own; every track nests (validate.py checks it). One file with call
# ids (a worker's root), one without (containment only, a partial overlap).
cat > mk.py <<PY
import h5py, numpy as np
S = h5py.string_dtype()
def make(path, ids):
    with h5py.File(path, "w") as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.create_group("metadata")
        f.create_group("region_table").create_dataset("names", data=["main", "loop", "omp_kernel"], dtype=S)
        g = f.create_group("rank_region_index")
        g["region_ids"] = np.array([0, 1, 2], np.uint32)
        g["ranks"] = np.array([0, 0, 0], np.uint32)
        g["event_offsets"] = np.array([0, 1, 2], np.uint64)
        g["event_counts"] = np.array([1, 1, 3], np.uint64)
        e = f.create_group("events")
        e["start_times"] = np.array([0, 10, 20, 30, 95], np.int64)
        e["end_times"] = np.array([100, 90, 60, 70, 120], np.int64)
        if ids:
            e["call_ids"] = np.array([0, 1, 2, 3, 4], np.int64)
            e["parent_ids"] = np.array([-1, 0, 1, -1, -1], np.int64)
make("ids.h5", True)
make("noids.h5", False)
PY
"$SP_PYTHON" mk.py
for f in ids noids; do
  "$SP" export chrome-trace $f.h5 -o $f.json -q || exit
  "$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" chrome-trace $f.json 5 || exit
  "$SP_PYTHON" -c "import json,sys; print(sorted((e['name'], e['tid']) for e in json.load(open(sys.argv[1]))['traceEvents'] if e['ph'] == 'X'))" $f.json
done
