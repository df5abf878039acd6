#!/usr/bin/env bash
# test_inspect_large.sh - `inspect` on a ten-million-event schema-2 file
# prints its summary from the summary rows alone.
#
# 1. big.h5: 10M events (8 regions x 2 ranks), summary rows computed with
#    numpy; inspect must print exactly numpy's counts/totals/averages, and we
#    print how long it took (asserted only generously: < 5 s).
# 2. trap.h5: the same index and summary rows, but /events holds 10M calls
#    that end before they start (unwritten chunked datasets with fill values).
#    Reading any event is a format error, so an identical, successful inspect
#    proves the summary never touched /events; the p50 column, which must read
#    events, is shown to fail on it.
# Env: SP_BUILD, SP_SRC, SP_PYTHON (h5py + numpy). Exit 77 = skipped.
set -euo pipefail
SP="$SP_BUILD/scope-profiler"
PY="${SP_PYTHON:-/usr/bin/python3}"
[[ -x "$SP" ]] || { echo "skip: $SP not built"; exit 77; }
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "skip: needs h5py and numpy"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-large-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

"$PY" - <<'EOF'
import h5py, numpy as np
N_REGIONS, N_RANKS, PER_ROW = 8, 2, 625_000          # 8 * 2 * 625k = 10M events
N = N_REGIONS * N_RANKS * PER_ROW
STR = h5py.string_dtype()
rng = np.random.default_rng(42)
summ_dtype = np.dtype([("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"),
                       ("first", "<i8"), ("last", "<i8"), ("start_minimum", "<i8"),
                       ("end_maximum", "<i8"), ("gpu_count", "<u8"), ("gpu_total", "<i8"),
                       ("mean", "<f8"), ("m2", "<f8")])
names = [f"kernel_{i}" for i in range(N_REGIONS)]
rows, summ, expected = [], [], []
starts = np.empty(N, np.int64)
ends = np.empty(N, np.int64)
off = 0
for rank in range(N_RANKS):
    for reg in range(N_REGIONS):
        d = rng.integers(1_000, 50_000 * (reg + 1), PER_ROW, dtype=np.int64)
        s = 10**9 + np.arange(PER_ROW, dtype=np.int64) * 1_000_000 + reg * 10
        starts[off:off + PER_ROW] = s
        ends[off:off + PER_ROW] = s + d
        mean = d.sum() / len(d)
        summ.append((d.sum(), d.min(), d.max(), d[0], d[-1], s.min(), (s + d).max(), 0, 0,
                     mean, float(((d - mean) ** 2).sum())))
        rows.append((reg, rank, off, PER_ROW))
        off += PER_ROW
# expected inspect lines: region, ranks, calls, total [s], avg [s] (%.6g like the CLI)
tot = {}
for (reg, rank, o, n), sm in zip(rows, summ):
    t = tot.setdefault(reg, [0, 0])
    t[0] += n
    t[1] += int(sm[0])
order = sorted(tot, key=lambda r: (-tot[r][1], names[r]))
with open("expected.txt", "w") as f:
    for r in order:
        f.write(f"{names[r]} {N_RANKS} {tot[r][0]} {tot[r][1] / 1e9:.6g} "
                f"{tot[r][1] / tot[r][0] / 1e9:.6g}\n")

def write(path, real):
    with h5py.File(path, "w") as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.attrs.create("storage_layout", "columnar", dtype=STR)
        m = f.create_group("metadata")
        m.attrs["mpi_size"] = np.int64(N_RANKS)
        f.create_group("region_table").create_dataset("names", data=names, dtype=STR)
        g = f.create_group("rank_region_index")
        g["region_ids"] = np.array([r[0] for r in rows], np.uint32)
        g["ranks"] = np.array([r[1] for r in rows], np.uint32)
        g["event_offsets"] = np.array([r[2] for r in rows], np.uint64)
        g["event_counts"] = np.array([r[3] for r in rows], np.uint64)
        g["source_lines"] = np.full(len(rows), -1, np.int64)
        g["exclusive_totals"] = np.full(len(rows), -1, np.int64)
        g["summary_statistics"] = np.array(summ, dtype=summ_dtype)
        e = f.create_group("events")
        chunks = (1 << 20,)
        if real:
            e.create_dataset("start_times", data=starts, chunks=chunks)
            e.create_dataset("end_times", data=ends, chunks=chunks)
        else:
            # never written: every read returns the fill values, end < start
            e.create_dataset("start_times", shape=(N,), dtype=np.int64, chunks=chunks,
                             fillvalue=10)
            e.create_dataset("end_times", shape=(N,), dtype=np.int64, chunks=chunks,
                             fillvalue=1)
write("big.h5", True)
write("trap.h5", False)
EOF

timed() { # prints the seconds a command took; its stdout goes to $1
  local out=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  "$@" > "$out"
  t1=$(date +%s%N)
  echo "$(( (t1 - t0) / 1000000 ))"
}

ms=$(timed big.txt "$SP" inspect big.h5 -q)
echo "inspect of a 10M-event file (summary from summary rows): ${ms} ms"
tail -n +2 big.txt | awk '{print $1, $2, $3, $4, $5}' > got.txt
diff -u expected.txt got.txt
(( ms < 5000 )) || { echo "FAIL: inspect took ${ms} ms (> 5 s)"; exit 1; }

ms=$(timed trap.txt "$SP" inspect trap.h5 -q)
echo "inspect of the trap file (events unreadable): ${ms} ms"
diff -u big.txt trap.txt

if "$SP" inspect trap.h5 -q --columns region p50 > /dev/null 2> p50.err; then
  echo "FAIL: p50 on the trap file should have read events and failed"; exit 1
fi
grep -q "ends (1) before it starts (10)" p50.err
echo "p50 on the trap file fails as it must: $(head -1 p50.err)"

ms=$(timed p50.txt "$SP" inspect big.h5 -q --columns region calls p50 p99)
echo "p50/p99 over all 10M events (reads /events): ${ms} ms"
echo "ok"
