# ids recorded but threads not: another thread's root overlaps open calls of
# the lane; it gets its own profile rather than being drawn late
cat > mk.py <<PY
import h5py, numpy as np
S = h5py.string_dtype()
with h5py.File("untracked.h5", "w") as f:
    f.attrs["scope_profiler_schema"] = np.int64(2)
    f.create_group("metadata")
    f.create_group("region_table").create_dataset("names", data=["main", "loop", "omp_kernel"], dtype=S)
    g = f.create_group("rank_region_index")
    g["region_ids"] = np.array([0, 1, 2], np.uint32)
    g["ranks"] = np.array([0, 0, 0], np.uint32)
    g["event_offsets"] = np.array([0, 1, 2], np.uint64)
    g["event_counts"] = np.array([1, 1, 2], np.uint64)
    e = f.create_group("events")
    e["start_times"] = np.array([0, 10, 20, 30], np.int64)    # kernel on the main thread
    e["end_times"] = np.array([100, 90, 60, 50], np.int64)    # and one on a worker (a root)
    e["call_ids"] = np.array([0, 1, 2, 3], np.int64)
    e["parent_ids"] = np.array([-1, 0, 1, -1], np.int64)
PY
"$SP_PYTHON" mk.py
"$SP" export speedscope untracked.h5 -o u.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" speedscope u.json 4
"$SP_PYTHON" -c "import json; print([(p['name'], p['startValue'], p['endValue'], len(p['events'])) for p in json.load(open('u.json'))['profiles']])"
"$SP" inspect untracked.h5 --tree -q
