"""Independent check of a scope-profiler schema-2 or schema-3 file with h5py +
numpy (sp_events.py decodes schema 3's event columns).

Verifies names, dtypes and shapes of every dataset upstream's readers use, the
field order of summary_statistics, the consistency of row slices, call ids and
parent ids, and recomputes every summary row and exclusive total from the
events. Usage: check_profile.py FILE [--expect REGION=COUNT ...] [--threads]
Exits non-zero with a message on the first violation.
"""
import json
import sys

import h5py
import numpy as np

import sp_events


def fail(msg):
    print("check_profile: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    path = sys.argv[1]
    expect = {}
    threads = "--threads" in sys.argv
    args = sys.argv[2:]
    for i, a in enumerate(args):
        if a == "--expect":
            name, count = args[i + 1].rsplit("=", 1)
            expect[name] = int(count)
    f = h5py.File(path, "r")
    schema = f.attrs["scope_profiler_schema"]
    if schema not in (2, 3) or schema.dtype != np.int64:
        fail("root attribute scope_profiler_schema must be int64 2 or 3")
    layout = f.attrs["storage_layout"]
    layout = layout.decode() if isinstance(layout, bytes) else layout
    if layout != "columnar":
        fail("storage_layout %r" % layout)
    for key in ("label", "start_time_ns", "omp_num_threads", "mpi_size", "total_cores", "settings"):
        if key not in f["metadata"].attrs:
            fail("metadata lacks %s" % key)
    json.loads(f["metadata"].attrs["settings"])
    names = [n.decode() for n in f["region_table/names"][:]]
    if f["region_table/names"].dtype.kind != "O":
        fail("region_table/names must be variable-length strings")
    rri = f["rank_region_index"]
    dtypes = {"region_ids": "uint32", "ranks": "uint32", "event_offsets": "uint64",
              "event_counts": "uint64", "source_lines": "int64", "exclusive_totals": "int64"}
    k = rri["region_ids"].shape[0]
    for name, dt in dtypes.items():
        if str(rri[name].dtype) != dt:
            fail("rank_region_index/%s is %s, expected %s" % (name, rri[name].dtype, dt))
        if rri[name].shape != (k,):
            fail("rank_region_index/%s has shape %s" % (name, rri[name].shape))
    for name in ("source_files", "source_texts", "tags"):
        if rri[name].dtype.kind != "O" or rri[name].shape != (k,):
            fail("rank_region_index/%s must be %d vlen strings" % (name, k))
    fields = ["total", "minimum", "maximum", "first", "last", "start_minimum", "end_maximum",
              "gpu_count", "gpu_total", "mean", "m2"]
    st = rri["summary_statistics"]
    if list(st.dtype.names) != fields:
        fail("summary_statistics fields %s" % (st.dtype.names,))
    ev = f["events"]
    if schema == 2:
        n = ev["start_times"].shape[0]
        for name in ("start_times", "end_times", "call_ids", "parent_ids"):
            if ev[name].dtype != np.int64 or ev[name].shape != (n,):
                fail("events/%s must be int64[%d]" % (name, n))
    try:
        decoded = sp_events.events(f)
    except ValueError as e:
        fail(str(e))
    start, end = decoded["start"], decoded["end"]
    cid, pid = decoded["call"], decoded["parent"]
    n = len(start)
    offs, counts = rri["event_offsets"][:], rri["event_counts"][:]
    if counts.sum() != n:
        fail("event_counts sum %d != %d events" % (counts.sum(), n))
    order = np.argsort(offs)
    pos = 0
    for i in order:
        if offs[i] != pos:
            fail("row slices are not back to back at row %d" % i)
        pos += counts[i]
    if np.any(end < start):
        fail("an event ends before it starts")
    if len(np.unique(cid)) != n or np.any(cid < 0):
        fail("call ids must be unique and recorded")
    known = set(cid.tolist())
    for p in pid:
        if p != -1 and p not in known:
            fail("parent id %d refers to no call" % p)
    dur = end - start
    child = np.zeros(n, dtype=np.int64)
    index_of = {c: i for i, c in enumerate(cid.tolist())}
    # A parent on another thread (an OpenMP worker's call under the call that
    # opened the parallel region) ran beside its child: its exclusive time
    # keeps the child's time. Such files always carry thread ids.
    tid = ev["thread_ids"][:].astype(np.int64) if "thread_ids" in ev else None
    for i, p in enumerate(pid):
        if p != -1:
            j = index_of[p]
            if not (start[j] <= start[i] and end[i] <= end[j]):
                fail("call %d is not inside its parent %d" % (cid[i], p))
            if tid is None or tid[i] == tid[j]:
                child[j] += dur[i]
    stats = st[:]
    excl = rri["exclusive_totals"][:]
    ids = rri["region_ids"][:]
    for r in range(k):
        o, c = int(offs[r]), int(counts[r])
        d = dur[o:o + c]
        s = stats[r]
        if c == 0:
            continue
        if np.any(np.diff(start[o:o + c]) < 0):
            fail("row %d is not ordered by start" % r)
        exp = {"total": d.sum(), "minimum": d.min(), "maximum": d.max(), "first": d[0], "last": d[-1],
               "start_minimum": start[o:o + c].min(), "end_maximum": end[o:o + c].max()}
        for key, val in exp.items():
            if s[key] != val:
                fail("row %d %s: file %d, recomputed %d" % (r, key, s[key], val))
        if not np.isclose(s["mean"], d.mean(), rtol=1e-12):
            fail("row %d mean" % r)
        if not np.isclose(s["m2"], ((d - d.mean()) ** 2).sum(), rtol=1e-9, atol=1e-3):
            fail("row %d m2 %r vs %r" % (r, s["m2"], ((d - d.mean()) ** 2).sum()))
        if excl[r] != (d - child[o:o + c]).sum():
            fail("row %d exclusive total %d, recomputed %d" % (r, excl[r], (d - child[o:o + c]).sum()))
        json.loads(rri["tags"][r])
    got = {}
    for r in range(k):
        got[names[ids[r]]] = got.get(names[ids[r]], 0) + int(counts[r])
    for name, c in expect.items():
        if got.get(name, 0) != c:
            fail("region %s has %d events, expected %d" % (name, got.get(name, 0), c))
    if threads:
        if "thread_ids" not in ev or ev["thread_ids"].shape != (n,):
            fail("events/thread_ids missing")
        t = f["threads"]
        if ev["thread_ids"][:].max() >= t["index"].shape[0]:
            fail("thread id outside the thread table")
    print("%s: schema %d ok, %d regions, %d rows, %d events" % (path, schema, len(names), k, n))


if __name__ == "__main__":
    main()
