#!/usr/bin/env bash
# test_export_stream.sh - exporters on large files with nesting and threads.
#
# big.h5: 4.2M events, 2 ranks x 2 threads, outer > 3 inner > 1 leaf each,
# with call/parent ids and thread ids. chrome-trace and the gantt CSV stream
# row slices, so their peak memory must stay far below what the events alone
# take in memory (4.2M x 16 bytes = 67 MB): asserted < 48 MB. The outputs
# are checked for their line counts.
# small.h5: the same shape at 7k events; the speedscope file is validated
# structurally (ordering, O/C nesting) and the folded stacks are compared with
# self times computed here.
# Env: SP_BUILD, SP_SRC, SP_PYTHON (h5py + numpy). Exit 77 = skipped.
set -euo pipefail
SP="$SP_BUILD/scope-profiler"
PY="${SP_PYTHON:-/usr/bin/python3}"
[[ -x "$SP" ]] || { echo "skip: $SP not built"; exit 77; }
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "skip: needs h5py and numpy"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-export-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

"$PY" - <<'EOF'
import h5py, numpy as np
STR = h5py.string_dtype()
SD = np.dtype([("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"), ("first", "<i8"),
               ("last", "<i8"), ("start_minimum", "<i8"), ("end_maximum", "<i8"),
               ("gpu_count", "<u8"), ("gpu_total", "<i8"), ("mean", "<f8"), ("m2", "<f8")])

def make(path, K):
    """K outer calls per lane; lanes = 2 ranks x 2 threads. Region 0 outer
    [t, t+100), region 1 inner x3 [t+10+30i, t+30+30i), region 2 leaf
    [inner+5, inner+10). Times in us-ish ns units scaled by 1000."""
    cols = {r: {k: [] for k in ("s", "e", "c", "p", "t")} for r in range(3)}
    per_rank = {}
    for rank in range(2):
        nid = 0
        for thread in range(2):
            t0 = np.arange(K, dtype=np.int64) * 200_000 + 10**9 + thread * 50_000
            oid = nid + np.arange(K, dtype=np.int64) * 7
            for k, v in (("s", t0), ("e", t0 + 100_000), ("c", oid), ("p", np.full(K, -1)),
                         ("t", np.full(K, thread))):
                cols[0][k].append((rank, v))
            for i in range(3):
                s = t0 + 10_000 + 30_000 * i
                iid = oid + 1 + 2 * i
                for k, v in (("s", s), ("e", s + 20_000), ("c", iid), ("p", oid),
                             ("t", np.full(K, thread))):
                    cols[1][k].append((rank, v))
                for k, v in (("s", s + 5_000), ("e", s + 10_000), ("c", iid + 1), ("p", iid),
                             ("t", np.full(K, thread))):
                    cols[2][k].append((rank, v))
            nid += 7 * K
    S, E, C, P, T, rows, summ = [], [], [], [], [], [], []
    off = 0
    for rank in range(2):
        for reg in range(3):
            parts = {k: np.concatenate([v for r, v in cols[reg][k] if r == rank]) for k in "secpt"}
            n = len(parts["s"])
            d = parts["e"] - parts["s"]
            S.append(parts["s"]); E.append(parts["e"]); C.append(parts["c"])
            P.append(parts["p"]); T.append(parts["t"])
            mean = d.sum() / n
            summ.append((d.sum(), d.min(), d.max(), d[0], d[-1], parts["s"].min(),
                         parts["e"].max(), 0, 0, mean, float(((d - mean) ** 2).sum())))
            rows.append((reg, rank, off, n))
            off += n
    with h5py.File(path, "w") as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.attrs.create("storage_layout", "columnar", dtype=STR)
        f.create_group("metadata").attrs["mpi_size"] = np.int64(2)
        f.create_group("region_table").create_dataset("names", data=["outer", "inner", "leaf"],
                                                      dtype=STR)
        g = f.create_group("rank_region_index")
        g["region_ids"] = np.array([r[0] for r in rows], np.uint32)
        g["ranks"] = np.array([r[1] for r in rows], np.uint32)
        g["event_offsets"] = np.array([r[2] for r in rows], np.uint64)
        g["event_counts"] = np.array([r[3] for r in rows], np.uint64)
        g["exclusive_totals"] = np.full(len(rows), -1, np.int64)
        g["summary_statistics"] = np.array(summ, dtype=SD)
        e = f.create_group("events")
        ch = (min(1 << 18, off),)
        e.create_dataset("start_times", data=np.concatenate(S), chunks=ch)
        e.create_dataset("end_times", data=np.concatenate(E), chunks=ch)
        e.create_dataset("call_ids", data=np.concatenate(C), chunks=ch)
        e.create_dataset("parent_ids", data=np.concatenate(P), chunks=ch)
        e.create_dataset("thread_ids", data=np.concatenate(T).astype(np.uint32), chunks=ch)
    # folded self times (ns), merged over ranks and threads
    lanes = 4 * K
    with open(path + ".folded", "w") as f:
        f.write(f"outer {lanes * (100_000 - 3 * 20_000)}\n")
        f.write(f"outer;inner {lanes * 3 * (20_000 - 5_000)}\n")
        f.write(f"outer;inner;leaf {lanes * 3 * 5_000}\n")
    return off

print("big.h5 events:", make("big.h5", 150_000))
print("small.h5 events:", make("small.h5", 250))
EOF

peak() { # run a command, print "<seconds> <peak RSS MB>"
  "$PY" - "$@" <<'EOF'
import resource, subprocess, sys, time
t = time.time()
rc = subprocess.run(sys.argv[1:]).returncode
if rc != 0:
    sys.exit(rc)
print(f"{time.time() - t:.2f} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024}")
EOF
}

read -r secs mb < <(peak "$SP" export chrome-trace big.h5 -o big.trace.json -q)
echo "chrome-trace of 4.2M events: ${secs} s, peak ${mb} MB"
(( mb < 48 )) || { echo "FAIL: chrome-trace peak memory ${mb} MB (not streamed?)"; exit 1; }
x=$(grep -c '"ph":"X"' big.trace.json)
[[ $x == 4200000 ]] || { echo "FAIL: $x X events, expected 4200000"; exit 1; }
tail -c 200 big.trace.json | grep -q '"displayTimeUnit":"ns"'
head -2 big.trace.json | tail -1 | "$PY" -c "import json,sys; json.loads(sys.stdin.read().rstrip().rstrip(','))"

read -r secs mb < <(peak "$SP" export csv big.h5 -o big.csv -q)
echo "gantt csv of 4.2M events: ${secs} s, peak ${mb} MB"
(( mb < 48 )) || { echo "FAIL: gantt csv peak memory ${mb} MB (not streamed?)"; exit 1; }
rows=$(wc -l < big.csv)
[[ $rows == 4200001 ]] || { echo "FAIL: $rows csv lines, expected 4200001"; exit 1; }

read -r secs mb < <(peak "$SP" export folded big.h5 -o big.folded -q)
echo "folded stacks of 4.2M events (nesting by ids, per rank in memory): ${secs} s, peak ${mb} MB"
diff -u big.h5.folded big.folded

"$SP" export speedscope small.h5 -o small.speedscope.json -q
"$PY" "$SP_SRC/tests/cli/export/validate.py" speedscope small.speedscope.json 7000
"$SP" export folded small.h5 -o small.folded -q
diff -u small.h5.folded small.folded
echo "ok"
