# the thread table (track_threads) after the metadata, row for row as h5py
# reads /thread_table; --ranks filters it, --regions-only leaves it out
SCOPE_PROFILER_FILE_PATH=lanes.h5 SCOPE_PROFILER_TRACK_THREADS=1 OMP_NUM_THREADS=2 \
  "$SP_BUILD/examples/sim" --steps 3 --quiet || exit
"$SP" inspect lanes.h5 > out.txt; echo "exit $?"
"$SP_PYTHON" - lanes.h5 out.txt <<'PY'
import sys, h5py
t = h5py.File(sys.argv[1])["thread_table"]
lines = open(sys.argv[2]).read().split("\n")
i = next(k for k, l in enumerate(lines) if l.startswith("threads ("))
rows = [l.split() for l in lines[i + 2:i + 2 + len(t["index"])]]
for k in range(len(t["index"])):
    r = rows[k]
    assert int(r[0]) == t["ranks"][k] and int(r[1]) == t["index"][k], (r, k)
    assert int(r[2]) == t["native_id"][k] and r[-1] == t["name"][k].decode(), (r, k)
    assert (r[5] == "alive") == (t["end_ns"][k] == -1), (r, k)
print(f"ok: {len(rows)} thread rows match /thread_table")
PY
"$SP" inspect lanes.h5 --regions-only | grep -c '^threads ('
"$SP" inspect lanes.h5 --ranks 0 | grep '^threads ('
