#!/usr/bin/env bash
# use_likwid under the real likwid-perfctr -m: the example simulation's
# regions become LIKWID marker regions and LIKWID's counters land in
# rank0/likwid/regions/<region> (read back through LIKWID's own API, or its
# marker file). Skipped (77), with the reason, where likwid-perfctr is
# missing or `likwid-perfctr -e` reports no counters (virtual machines: no
# PMU, "Unsupported Processor"); tests/unit/test-likwid.c covers the rest on a
# LIKWID stand-in.
set -u
command -v likwid-perfctr >/dev/null 2>&1 || { echo "skip: likwid-perfctr is not installed (Debian: likwid)"; exit 77; }
ev=$(likwid-perfctr -e 2>&1)
if ! echo "$ev" | grep -q "counters\." || echo "$ev" | grep -qE "has 0 counters|Unsupported|not initialized"; then
  echo "skip: likwid-perfctr -e reports no counters here: $(echo "$ev" | grep -m1 -iE 'error|unsupported|0 counters')"
  exit 77
fi
group=$(likwid-perfctr -a 2>/dev/null | awk 'NR > 2 && $1 ~ /^[A-Z_0-9]+$/ {print $1; exit}')
[ -n "$group" ] || { echo "skip: likwid-perfctr -a lists no performance group"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-likwid-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
OMP_NUM_THREADS=1 SCOPE_PROFILER_USE_LIKWID=1 SCOPE_PROFILER_FILE_PATH=lk.h5 \
  likwid-perfctr -C 0 -g "$group" -m "$SP_BUILD/examples/sim" --steps 3 --quiet > perfctr.out 2>&1 ||
  { cat perfctr.out; echo "likwid-perfctr failed"; exit 1; }
"$SP_PYTHON" - <<'PY'
import sys, h5py
with h5py.File("lk.h5", "r") as f:
    regs = f["rank0/likwid/regions"]
    step = regs["step"]
    src = step.attrs["source"]
    src = src.decode() if isinstance(src, bytes) else src
    assert src in ("full_api", "marker_file"), src
    assert step["call_counts"][()].sum() == 3, step["call_counts"][()]
    assert step["events"].shape[0] == len(step.attrs["event_names"])
    print("likwid ok:", len(regs), "regions, source", src)
PY
