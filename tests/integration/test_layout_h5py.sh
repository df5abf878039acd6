#!/usr/bin/env bash
# Our files against upstream's specification tables, checked with h5py
# (tests/integration/sp_spec.py, written from the format specification, not
# from our writer's plan): every upstream name present with upstream's
# dtype, no schema-2 columns in schema 3 (and the reverse), the optional
# columns present exactly when the run recorded them, the lane tables'
# fields, the aggregate layout's five columns and empty skeleton. Files: the
# demo's default run, hdf5_schema=2, aggregation_mode, track_threads, and a
# track_async program (tests/apps/tasks.c). MPI jobs (direct and parallel)
# pass the same check in tests/mpi/check_mpi.py.
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-layout-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
unset SCOPE_PROFILER_CONFIG SCOPE_PROFILER_HDF5_COMPRESSION SCOPE_PROFILER_HDF5_SCHEMA
sim="$SP_BUILD/examples/sim"
OMP_NUM_THREADS=1 SCOPE_PROFILER_FILE_PATH=default.h5 "$sim" --steps 6 --quiet
OMP_NUM_THREADS=1 SCOPE_PROFILER_FILE_PATH=schema2.h5 SCOPE_PROFILER_HDF5_SCHEMA=2 "$sim" --steps 6 --quiet
OMP_NUM_THREADS=2 SCOPE_PROFILER_FILE_PATH=aggregate.h5 SCOPE_PROFILER_AGGREGATION_MODE=1 "$sim" --steps 6 --quiet
OMP_NUM_THREADS=3 SCOPE_PROFILER_FILE_PATH=threads.h5 SCOPE_PROFILER_TRACK_THREADS=1 "$sim" --steps 6 --quiet
SCOPE_PROFILER_FILE_PATH=tasks.h5 "$SP_BUILD/tests/app-tasks"
SCOPE_PROFILER_FILE_PATH=plain.h5 "$SP_BUILD/tests/app-readme" >/dev/null
"$SP_PYTHON" - "$SP_SRC/tests/integration" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import h5py
import numpy as np
import sp_spec

def check(path, optional, layout="columnar", schema=3):
    with h5py.File(path, "r") as f:
        got = sp_spec.check(f, optional=optional, layout=layout)
        if got[0] != schema:
            sys.exit("%s: schema %d, expected %d" % (path, got[0], schema))
        print("%s: upstream's schema %d %s layout, %d rows, %d events, optional %s"
              % (path, got[0], got[1], got[2], got[3], sorted(optional) or "none"))
        return f

def ids(path):
    with h5py.File(path, "r") as f:
        return {"call_ids", "parent_ids"} if "call_ids" in f["events"] else set()

try:
    check("default.h5", ids("default.h5"))
    check("schema2.h5", ids("schema2.h5"), schema=2)
    check("aggregate.h5", set(), layout="aggregate")
    check("threads.h5", ids("threads.h5") | {"thread_ids"})
    check("tasks.h5", {"call_ids", "parent_ids", "thread_ids", "task_ids", "await_ns"})
except ValueError as e:
    sys.exit("test_layout_h5py: " + str(e))
check("plain.h5", set())
with h5py.File("plain.h5", "r") as f:
    # one thread, no OpenMP, nothing open: the intervals tell the nesting,
    # so the ids are left out, as upstream's native writers leave them out
    # (the demo keeps them: its OpenMP regions adopt a parent context)
    if "call_ids" in f["events"]:
        sys.exit("plain.h5 keeps call ids the intervals make redundant")
with h5py.File("aggregate.h5", "r") as f:
    g = f["rank_region_index"]
    st = g["aggregate_statistics"][:]
    if not (np.array_equal(g["aggregate_totals"][:], st["total"]) and np.all(g["aggregate_counts"][:] > 0)):
        sys.exit("aggregate.h5: the aggregate columns disagree with the statistics")
with h5py.File("tasks.h5", "r") as f:
    t = f["task_table"]
    names = sorted(n.decode() if isinstance(n, bytes) else n for n in t["name"][:])
    kinds = {k.decode() if isinstance(k, bytes) else k for k in t["kind"][:]}
    if names != ["worker-0", "worker-1", "worker-2"] or kinds != {"task"} or list(t["steps"][:]) != [4, 4, 4]:
        sys.exit("tasks.h5 task_table: %s %s %s" % (names, kinds, t["steps"][:]))
    if not np.all(t["done_ns"][:] >= t["created_ns"][:]):
        sys.exit("tasks.h5: a task is done before it was created")
    th = f["thread_table"]
    # the main thread and the helper thread tasks.c starts and joins
    if sorted(th["index"][:].tolist()) != [0, 1] or len(set(th["native_id"][:].tolist())) != 2:
        sys.exit("tasks.h5 thread_table: %s" % th["index"][:])
    if not np.all(th["end_ns"][:] >= -1) or not np.all(th["start_ns"][:] >= 0):
        sys.exit("tasks.h5 thread_table: start/end times %s %s" % (th["start_ns"][:], th["end_ns"][:]))
    tids = set(f["events/thread_ids"][:].tolist())
    if not tids <= {0, 1}:
        sys.exit("tasks.h5: thread ids %s outside /thread_table" % sorted(tids))
    if np.all(f["events/await_ns"][:] == 0):
        sys.exit("tasks.h5: no call was ever suspended")
print("ok")
PY
