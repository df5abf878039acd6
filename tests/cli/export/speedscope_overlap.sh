# calls that overlap without nesting (no thread ids) still give a valid file
cat > mk.py <<EOF
import h5py, numpy as np
S = h5py.string_dtype()
with h5py.File("overlap.h5", "w") as f:
    f.attrs["scope_profiler_schema"] = np.int64(2)
    f.create_group("metadata")
    f.create_group("region_table").create_dataset("names", data=["a", "b"], dtype=S)
    g = f.create_group("rank_region_index")
    g["region_ids"] = np.array([0, 1], np.uint32)
    g["ranks"] = np.array([0, 0], np.uint32)
    g["event_offsets"] = np.array([0, 1], np.uint64)
    g["event_counts"] = np.array([1, 1], np.uint64)
    e = f.create_group("events")
    e["start_times"] = np.array([0, 5], np.int64)
    e["end_times"] = np.array([10, 15], np.int64)
EOF
"$SP_PYTHON" mk.py
"$SP" export speedscope overlap.h5 -o o.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" speedscope o.json 2
"$SP" inspect overlap.h5 -q --columns region calls total own
