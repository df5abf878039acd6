#!/usr/bin/env bash
# The demo simulation's file, checked independently with h5py (Debian's
# python3-h5py): upstream's names and dtypes (sp_spec.py), row slices,
# nesting and every summary row recomputed from the events (schema 3,
# decoded by sp_events.py); the decoding snippet in docs/file-format.md gives
# the same events. A track_threads run and a track_async program's file are
# checked the same way, with their lane tables. Also runs the SP_DISABLE
# build, which must write nothing.
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-demo-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
OMP_NUM_THREADS=3 "$SP_BUILD/examples/sim" --steps 12 --quiet
"$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" profiling_data.h5 \
  --expect step=12 --expect solve=12 --expect halo=12 --expect io=12 \
  --expect scope_profiler.session=1 --expect omp_kernel=36
# The snippet users copy from docs/file-format.md decodes what we write.
sed -n '/^```python$/,/^```$/p' "$SP_SRC/docs/file-format.md" | sed '1d;$d' > snippet.py
grep -q start_deltas snippet.py || { echo "no decoding snippet in docs/file-format.md"; exit 1; }
"$SP_PYTHON" - "$SP_SRC/tests/integration" <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import sp_events
exec(open("snippet.py").read())
d = sp_events.events(f)
for mine, ref in ((start, "start"), (end, "end"), (call, "call"), (parent, "parent")):
    if not np.array_equal(mine, d[ref]):
        sys.exit("docs/file-format.md snippet: %s differs" % ref)
print("doc snippet: %d events decoded alike" % len(start))
PY
rm profiling_data.h5
SCOPE_PROFILER_TRACK_THREADS=1 SCOPE_PROFILER_FILE_PATH=threads.h5 OMP_NUM_THREADS=2 \
  "$SP_BUILD/examples/sim" --steps 5 --quiet
"$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" threads.h5 --threads --expect step=5
"$SP_BUILD/examples/sim_disabled" --steps 3 --quiet
if ls ./*.h5 2>/dev/null | grep -v threads.h5; then echo "the SP_DISABLE build wrote a file"; exit 1; fi
echo "ok"
