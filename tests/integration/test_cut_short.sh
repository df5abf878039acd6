#!/usr/bin/env bash
# The demo simulation killed with SIGTERM in the middle of its run: the file's
# call tree is whole from scope_profiler.session down (one root, every parent
# id names a call of the file), the calls still open at the signal end at it
# and are listed in cut_short_call_ids (the session and the current step
# among them), cut_short says SIGTERM, and h5py's independent check of every
# row and exclusive total passes.
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-cut-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
# The signal goes once the run is under way: the sim prints (line-buffered)
# its first step's line from inside that step, after setup. A fixed sleep
# would race the start-up of a loaded machine (a signal before setup kills
# the process with nothing written).
OMP_NUM_THREADS=2 SCOPE_PROFILER_FILE_PATH=cut.h5 stdbuf -oL "$SP_BUILD/examples/sim" --steps 1000000 > sim.out &
pid=$!
for ((i = 0; i < 6000; i++)); do # 5 minutes at most
  grep -q '^step' sim.out && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.05
done
grep -q '^step' sim.out || { echo "sim never began its steps"; kill -KILL "$pid" 2> /dev/null; exit 1; }
sleep 0.5 # some steps into the run
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
if [[ $rc -ne 143 ]]; then echo "sim: exit $rc, expected 143 (death by SIGTERM)"; exit 1; fi
"$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" cut.h5 --expect scope_profiler.session=1
"$SP_PYTHON" - "$SP_SRC/tests/integration" <<'PY'
import json, sys
import h5py
import numpy as np
sys.path.insert(0, sys.argv[1])
import sp_events
f = h5py.File("cut.h5", "r")
meta = f["metadata"].attrs
if meta["cut_short"] != "SIGTERM":
    sys.exit("cut_short is %r, expected SIGTERM" % meta["cut_short"])
d = sp_events.events(f)
call, parent = d["call"], d["parent"]
names = [n.decode() for n in f["region_table/names"][:]]
rri = f["rank_region_index"]
region = np.repeat(rri["region_ids"][:], rri["event_counts"][:].astype(np.int64))
ids = set(call.tolist())
dangling = [p for p in parent.tolist() if p != -1 and p not in ids]
if dangling:
    sys.exit("%d parent ids name no call of the file (first %d)" % (len(dangling), dangling[0]))
roots = sorted(set(names[region[i]] for i in np.nonzero(parent == -1)[0]))
if roots != ["scope_profiler.session"]:
    sys.exit("roots %s, expected only scope_profiler.session" % roots)
cut = json.loads(meta["cut_short_call_ids"])
if len(cut) != meta["cut_short_calls"] or not cut:
    sys.exit("cut_short_call_ids %s vs cut_short_calls %d" % (cut, meta["cut_short_calls"]))
index = {c: i for i, c in enumerate(call.tolist())}
cut_names = sorted(set(names[region[index[c]]] for c in cut))
for need in ("scope_profiler.session", "step"):
    if need not in cut_names:
        sys.exit("%s is not among the calls cut short: %s" % (need, cut_names))
steps = int((region == names.index("step")).sum())
print("SIGTERM after %d steps: one root, %d calls, cut short: %s" % (steps, len(call), ", ".join(cut_names)))
PY
"$SP_BUILD/scope-profiler" inspect cut.h5 --tree -q | head -3
