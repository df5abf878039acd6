# use_likwid's results in inspect: per LIKWID group one table, per rank and
# region (the tag, '/' kept) its source, threads, calls summed over the
# threads, the slowest thread's time and each event summed over the threads;
# filters apply; a damaged group is a clear error (exit 2). The groups are
# written here as docs/file-format.md describes them (this machine's LIKWID
# cannot count; tests/unit/test-likwid.c writes them through the probe).
SCOPE_PROFILER_QUIET=1 OMP_NUM_THREADS=1 "$SP_BUILD/examples/sim" --steps 3 --quiet || exit 3
"${SP_PYTHON:-/usr/bin/python3}" - <<'PY' || exit 4
import h5py, numpy as np
def region(f, path, tag, group, source, names, calls, times, events):
    g = f.create_group(path)
    g.attrs["tag"] = tag
    g.attrs["group_id"] = np.int64(0)
    g.attrs["group_name"] = group
    g.attrs["source"] = source
    str_t = h5py.string_dtype()
    g.attrs.create("event_names", names, dtype=str_t)
    g.attrs.create("counter_names", ["PMC%d" % i for i in range(len(names))], dtype=str_t)
    g.attrs.create("metric_names", [], dtype=str_t)
    g["cpus"] = np.arange(len(calls), dtype=np.int64)
    g["times"] = np.array(times, dtype=np.float64)
    g["call_counts"] = np.array(calls, dtype=np.int64)
    g["events"] = np.array(events, dtype=np.float64).reshape(len(names), len(calls))
    g["metrics"] = np.zeros((0, len(calls)))
with h5py.File("profiling_data.h5", "r+") as f:
    lk = f.create_group("rank0/likwid")
    lk.attrs["num_regions"] = np.int64(3)
    fl = ["INSTR_RETIRED_ANY", "FP_ARITH_INST_RETIRED_SCALAR_DOUBLE"]
    region(f, "rank0/likwid/regions/step", "step", "FLOPS_DP", "full_api", fl, [3, 3], [0.5, 0.25],
           [1e9, 2e9, 1.5e6, 2.5e6])
    region(f, "rank0/likwid/regions/solve|inner", "solve/inner", "FLOPS_DP", "full_api", fl, [6, 6], [0.1, 0.125],
           [5, 7, 1, 2])
    region(f, "rank0/likwid/regions/io", "io", "", "marker_file", ["event_0"], [3], [0.01], [42])
PY
"$SP" inspect profiling_data.h5 -q | sed -n '/^likwid/,$p'
echo "-- only step:"
"$SP" inspect profiling_data.h5 -q --include step | sed -n '/^likwid/,$p'
"${SP_PYTHON:-/usr/bin/python3}" - <<'PY' || exit 5
import h5py
with h5py.File("profiling_data.h5", "r+") as f:
    g = f["rank0/likwid/regions/step"]
    del g["events"]
    g["events"] = [1.0, 2.0, 3.0]  # not events x threads
PY
"$SP" inspect profiling_data.h5 -q > /dev/null
echo "exit $?"
