"""Independent check of a scope-profiler schema-2 or schema-3 file with h5py +
numpy: the layout against upstream's specification tables (sp_spec.py:
every name and dtype, no columns of the other schema, optional columns
present exactly when recorded), then the events (decoded by sp_events.py),
the consistency of row slices, call ids and parent ids, and every summary
row and exclusive total recomputed from the events.
Usage: check_profile.py FILE [--expect REGION=COUNT ...] [--threads] [--tasks]
Exits non-zero with a message on the first violation.
"""
import json
import sys

import h5py
import numpy as np

import sp_events
import sp_spec


def fail(msg):
    print("check_profile: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    path = sys.argv[1]
    expect = {}
    threads = "--threads" in sys.argv or "--tasks" in sys.argv
    tasks = "--tasks" in sys.argv
    args = sys.argv[2:]
    for i, a in enumerate(args):
        if a == "--expect":
            name, count = args[i + 1].rsplit("=", 1)
            expect[name] = int(count)
    f = h5py.File(path, "r")
    # the ids are left out when the intervals alone give the same nesting
    optional = {"call_ids", "parent_ids"} if "call_ids" in f["events"] else set()
    # thread ids are recorded with track_threads, and also without it when
    # calls of several threads are in the run (their lanes and cross-thread
    # parents need them): then at least two threads must appear
    several = "thread_ids" in f["events"] and len(set(f["events/thread_ids"][:].tolist())) > 1
    if threads or several:
        optional.add("thread_ids")
    if tasks:
        optional |= {"task_ids", "await_ns"}
    try:
        schema, layout, k, n = sp_spec.check(f, optional=optional, layout="columnar")
    except ValueError as e:
        fail(str(e))
    for key in ("label", "start_time_ns", "omp_num_threads", "mpi_size", "total_cores", "settings"):
        if key not in f["metadata"].attrs:
            fail("metadata lacks %s" % key)
    json.loads(f["metadata"].attrs["settings"])
    names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]
    rri = f["rank_region_index"]
    st = rri["summary_statistics"]
    ev = f["events"]
    try:
        decoded = sp_events.nested(f)
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
        t = f["thread_table"]
        if ev["thread_ids"][:].max() >= t["index"].shape[0]:
            fail("thread id outside the thread table")
    print("%s: schema %d ok, %d regions, %d rows, %d events" % (path, schema, len(names), k, n))


if __name__ == "__main__":
    main()
