#!/usr/bin/python3
"""Generate the small HDF5 fixture files the reader tests read.

Run with Debian's /usr/bin/python3 (h5py + numpy) from anywhere:

    /usr/bin/python3 tests/golden/make_fixtures.py [OUTDIR]

The files are committed next to this script; regenerate them only when a
fixture must change, and update the golden CLI outputs with it. Each fixture
is described where it is built. They are laid out exactly as the writers lay
files out (upstream's Python/C writers and ours, schemas 2 and 3; upstream's
older hierarchical layout), so reading them exercises the same code paths real
files do. The hostile_*.h5 files are deliberately broken in one way each.
"""
import json
import os
import sys

import h5py
import numpy as np

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
STR = h5py.string_dtype(encoding="utf-8")
MS = 1_000_000          # one millisecond in ns
BASE = 5_000_000_000    # a monotonic-clock origin, as a real run has

SUMMARY_DTYPE = np.dtype([
    ("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"), ("first", "<i8"),
    ("last", "<i8"), ("start_minimum", "<i8"), ("end_maximum", "<i8"),
    ("gpu_count", "<u8"), ("gpu_total", "<i8"), ("mean", "<f8"), ("m2", "<f8"),
])


def summary_row(starts, ends):
    """The writer's two-pass summary of one (region, rank) row."""
    d = np.asarray(ends, dtype=np.int64) - np.asarray(starts, dtype=np.int64)
    if len(d) == 0:
        return (0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0)
    mean = float(d.sum()) / len(d)
    m2 = float(((d - mean) ** 2).sum())
    return (int(d.sum()), int(d.min()), int(d.max()), int(d[0]), int(d[-1]),
            int(np.min(starts)), int(np.max(ends)), 0, 0, mean, m2)


def exclusive_totals(rows, call_ids, parent_ids, starts, ends, ranks):
    """Per row: inclusive time minus direct children's time (by ids)."""
    out = []
    for (region, rank, off, cnt) in rows:
        total = 0
        for i in range(off, off + cnt):
            own = ends[i] - starts[i]
            for j, (c_rank, pid) in enumerate(zip(ranks, parent_ids)):
                if c_rank == rank and pid == call_ids[i]:
                    own -= ends[j] - starts[j]
            total += own
        out.append(total)
    return out


def attrs(group, meta):
    for k, v in meta.items():
        if isinstance(v, str):
            group.attrs.create(k, v, dtype=STR)
        elif isinstance(v, bool):
            group.attrs[k] = np.bool_(v)
        elif isinstance(v, int):
            group.attrs[k] = np.int64(v)
        elif isinstance(v, float):
            group.attrs[k] = np.float64(v)
        elif isinstance(v, list):
            group.attrs.create(k, v, dtype=STR)
        else:
            raise TypeError(k)


def write_schema2(path, names, calls, meta, layout="columnar", ids=True, threads=False,
                  sources=None, tags=None, exclusive=True, aggregate=None):
    """calls: list of dicts {region, rank, start, end, id, parent, thread}.

    Rows are one per (region, rank) in (rank, region) order; each row's events
    are contiguous in /events, in start order, as the writers store them.
    """
    sources = sources or {}
    tags = tags or {}
    keys = sorted({(c["rank"], c["region"]) for c in calls})
    starts, ends, cids, pids, tids, ev_rank = [], [], [], [], [], []
    rows = []
    for rank, region in keys:
        mine = sorted((c for c in calls if c["rank"] == rank and c["region"] == region),
                      key=lambda c: c["start"])
        rows.append((region, rank, len(starts), len(mine)))
        for c in mine:
            starts.append(c["start"])
            ends.append(c["end"])
            cids.append(c.get("id", -1) if ids else -1)
            pids.append(c.get("parent", -1) if ids else -1)
            tids.append(c.get("thread", 0))
            ev_rank.append(rank)
    with h5py.File(path, "w", track_order=False) as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.attrs.create("storage_layout", "aggregate" if aggregate else layout, dtype=STR)
        attrs(f.create_group("metadata"), meta)
        f.create_group("region_table").create_dataset("names", data=names, dtype=STR)
        g = f.create_group("rank_region_index")
        g.create_dataset("region_ids", data=np.array([r[0] for r in rows], dtype=np.uint32))
        g.create_dataset("ranks", data=np.array([r[1] for r in rows], dtype=np.uint32))
        if aggregate:
            g.create_dataset("event_offsets", data=np.zeros(len(rows), dtype=np.uint64))
            g.create_dataset("event_counts", data=np.zeros(len(rows), dtype=np.uint64))
        else:
            g.create_dataset("event_offsets", data=np.array([r[2] for r in rows], dtype=np.uint64))
            g.create_dataset("event_counts", data=np.array([r[3] for r in rows], dtype=np.uint64))
        g.create_dataset("source_lines", data=np.array(
            [sources.get(names[r[0]], ("", -1, ""))[1] for r in rows], dtype=np.int64))
        if exclusive and ids:
            ex = exclusive_totals(rows, cids, pids, starts, ends, ev_rank)
        else:
            ex = [-1] * len(rows)
        g.create_dataset("exclusive_totals", data=np.array(ex, dtype=np.int64))
        g.create_dataset("source_files", data=[sources.get(names[r[0]], ("", -1, ""))[0]
                                               for r in rows], dtype=STR)
        g.create_dataset("source_texts", data=[sources.get(names[r[0]], ("", -1, ""))[2]
                                               for r in rows], dtype=STR)
        g.create_dataset("tags", data=[json.dumps(tags.get(names[r[0]], [])) for r in rows],
                         dtype=STR)
        summ = [summary_row(starts[o:o + n], ends[o:o + n]) for (_, _, o, n) in rows]
        g.create_dataset("summary_statistics", data=np.array(summ, dtype=SUMMARY_DTYPE))
        if aggregate:
            g.create_dataset("aggregate_counts", data=np.array([r[3] for r in rows], dtype=np.int64))
        e = f.create_group("events")
        n = 0 if aggregate else len(starts)
        e.create_dataset("start_times", data=np.array(starts[:n], dtype=np.int64), shape=(n,))
        e.create_dataset("end_times", data=np.array(ends[:n], dtype=np.int64), shape=(n,))
        e.create_dataset("call_ids", data=np.array(cids[:n], dtype=np.int64), shape=(n,))
        e.create_dataset("parent_ids", data=np.array(pids[:n], dtype=np.int64), shape=(n,))
        if threads:
            e.create_dataset("thread_ids", data=np.array(tids[:n], dtype=np.uint32), shape=(n,))


def recode_schema3(src, dst):
    """Copy a schema-2 fixture as upstream's schema 3 (docs/file-format.md),
    coded here independently of the C writer: per row of the index, the
    row's first start and then the differences (events/start_deltas), and
    events/durations; start_times and end_times removed."""
    import shutil
    shutil.copyfile(src, dst)
    with h5py.File(dst, "a") as f:
        f.attrs["scope_profiler_schema"] = np.int64(3)
        g, e = f["rank_region_index"], f["events"]
        start, end = e["start_times"][:], e["end_times"][:]
        offs, cnts = g["event_offsets"][:], g["event_counts"][:]
        delta = start.copy()
        for o, c in zip(offs.tolist(), cnts.tolist()):
            delta[o + 1:o + c] = start[o + 1:o + c] - start[o:o + c - 1]
        for name in ("start_times", "end_times"):
            del e[name]
        e.create_dataset("start_deltas", data=delta.astype(np.int64))
        e.create_dataset("durations", data=(end - start).astype(np.int64))


def multi_schema3():
    """multi.h5 recoded as schema 3: the reader must give back exactly what
    it reads from multi.h5 (rows of two ranks, several rows per rank, so a
    delta never crossing a row boundary matters)."""
    recode_schema3(os.path.join(OUT, "multi.h5"), os.path.join(OUT, "multi_schema3.h5"))


def C(region, rank, start, end, cid=-1, parent=-1, thread=0):
    return {"region": region, "rank": rank, "start": start, "end": end, "id": cid,
            "parent": parent, "thread": thread}


def compat_schema2():
    """Upstream's compatibility fixture, schema 2: rank 0, region `solve`,
    starts [10,20,40], ends [15,33,55], source line 7, tag "golden"; the C and
    Python writers leave call/parent ids and exclusive totals at -1."""
    calls = [C(0, 0, s, e) for s, e in zip([10, 20, 40], [15, 33, 55])]
    write_schema2(os.path.join(OUT, "compat_schema2.h5"), ["solve"], calls,
                  {"scope_profiler_version": "0.5.0", "mpi_size": 1, "omp_num_threads": 1,
                   "total_cores": 1, "source": "python"},
                  ids=False, exclusive=False,
                  sources={"solve": ("golden.py", 7, "")}, tags={"solve": ["golden"]})


def compat_schema1():
    """The same run in upstream's hierarchical layout (schema 1)."""
    with h5py.File(os.path.join(OUT, "compat_schema1.h5"), "w") as f:
        attrs(f.create_group("metadata"), {"scope_profiler_version": "0.3.0", "mpi_size": 1,
                                           "omp_num_threads": 1, "total_cores": 1,
                                           "modules": ["gcc/12", "hdf5/1.10"]})
        g = f.create_group("rank0/regions/solve")
        g.create_dataset("start_times", data=np.array([10, 20, 40], dtype=np.int64))
        g.create_dataset("end_times", data=np.array([15, 33, 55], dtype=np.int64))
        g.attrs.create("source_file", "golden.py", dtype=STR)
        g.attrs["source_lineno"] = np.int64(7)
        g.attrs.create("tags", ["golden"], dtype=STR)


def hier_nested():
    """Snapshot layout, two ranks; a region named "io/write" that the snapshot
    writer stored as nested groups io -> write, next to a plain region "io"."""
    with h5py.File(os.path.join(OUT, "hier_nested.h5"), "w") as f:
        attrs(f.create_group("metadata"), {"hostname": "node01", "mpi_size": 2,
                                           "omp_num_threads": 2, "total_cores": 4,
                                           "python_version": "3.11.2"})
        data = {
            0: {"main": [(0, 100)], "io": [(10, 40)], "io/write": [(15, 20), (25, 35)]},
            1: {"main": [(0, 120)], "io": [(5, 65)], "io/write": [(10, 30)]},
        }
        for rank, regions in data.items():
            for name, ev in regions.items():
                g = f.require_group(f"rank{rank}/regions/{name}")
                g.create_dataset("start_times", data=np.array([s * MS for s, _ in ev], np.int64))
                g.create_dataset("end_times", data=np.array([e * MS for _, e in ev], np.int64))


def multi():
    """Ours, schema 2, 2 ranks, call/parent ids, thread ids, exclusive totals,
    a session root and a worker thread on rank 1."""
    names = ["scope_profiler.session", "setup", "solve", "step", "worker"]
    t = lambda ms: BASE + ms * MS
    calls = [
        C(0, 0, t(0), t(1000), 0, -1), C(1, 0, t(10), t(110), 1, 0),
        C(2, 0, t(200), t(500), 2, 0), C(3, 0, t(210), t(260), 3, 2), C(3, 0, t(300), t(400), 4, 2),
        C(2, 0, t(600), t(900), 5, 0), C(3, 0, t(610), t(700), 6, 5),
        C(0, 1, t(0), t(1200), 0, -1), C(1, 1, t(20), t(220), 1, 0),
        C(2, 1, t(300), t(900), 2, 0), C(3, 1, t(310), t(500), 3, 2), C(3, 1, t(520), t(880), 4, 2),
        C(2, 1, t(950), t(1150), 5, 0), C(3, 1, t(960), t(1000), 6, 5),
        C(4, 1, t(100), t(400), 7, -1, thread=1),
    ]
    settings = json.dumps({"file_path": "multi.h5", "buffer_limit": 1024,
                           "flush_to_disk": True, "compression": "none",
                           "metadata_detail": "minimal", "track_threads": True})
    write_schema2(os.path.join(OUT, "multi.h5"), names, calls,
                  {"label": "multi-run", "mpi_size": 2, "omp_num_threads": 2, "total_cores": 4,
                   "start_time_ns": BASE, "scope_profiler_version": "0.1.0",
                   "settings": settings, "wall_seconds": 1.25},
                  threads=True,
                  sources={"solve": ("src/solver.c", 42, "SP_REGION(\"solve\") {\n  step();\n}"),
                           "setup": ("src/main.c", 12, "")},
                  tags={"solve": ["numerics", "hot"]})


def async_tasks():
    """One thread, two asyncio-style tasks interleaving: task 1 fetch [0,100)
    with parse [60,90); task 2 fetch [10,50) with parse [20,30). Containment
    on the thread alone would nest task 2 inside task 1; lanes per task, or
    the recorded ids, must not."""
    t = lambda ms: BASE + ms * MS
    calls = [dict(C(0, 0, t(0), t(100), 0, -1), task=1), dict(C(1, 0, t(60), t(90), 1, 0), task=1),
             dict(C(0, 0, t(10), t(50), 2, -1), task=2), dict(C(1, 0, t(20), t(30), 3, 2), task=2),
             dict(C(0, 0, t(120), t(130), 4, -1), task=-1)]
    path = os.path.join(OUT, "async.h5")
    write_schema2(path, ["fetch", "parse"], calls, {"mpi_size": 1, "label": "async"},
                  threads=True)
    # task ids in the same row order write_schema2 uses: (rank, region), then start
    keys = sorted({(c["rank"], c["region"]) for c in calls})
    tasks = [c["task"] for k in keys for c in sorted(
        (c for c in calls if (c["rank"], c["region"]) == k), key=lambda c: c["start"])]
    with h5py.File(path, "a") as f:
        f["events"].create_dataset("task_ids", data=np.array(tasks, dtype=np.int64))


def aggregate():
    """Aggregate layout: outer and inner 3 calls each, no events."""
    t = lambda ms: BASE + ms * MS
    calls = [C(0, 0, t(0), t(10), 0, -1), C(1, 0, t(2), t(5), 1, 0),
             C(0, 0, t(20), t(32), 2, -1), C(1, 0, t(22), t(30), 3, 2),
             C(0, 0, t(40), t(50), 4, -1), C(1, 0, t(41), t(44), 5, 4)]
    write_schema2(os.path.join(OUT, "aggregate.h5"), ["outer", "inner"], calls,
                  {"mpi_size": 1, "omp_num_threads": 1, "total_cores": 1,
                   "scope_profiler_version": "0.1.0"}, aggregate=True)


def diff_pair():
    """Two single-rank runs for diff/check: solve 25% slower in b, io only in
    a, post only in b, setup unchanged."""
    t = lambda ms: BASE + ms * MS
    a = [C(0, 0, t(0), t(100)), C(1, 0, t(100), t(300)), C(1, 0, t(300), t(500)),
         C(2, 0, t(500), t(550))]
    b = [C(0, 0, t(0), t(100)), C(1, 0, t(100), t(350)), C(1, 0, t(350), t(600)),
         C(3, 0, t(600), t(610))]
    write_schema2(os.path.join(OUT, "diff_a.h5"), ["setup", "solve", "io"], a,
                  {"label": "baseline", "mpi_size": 1}, ids=False, exclusive=False)
    write_schema2(os.path.join(OUT, "diff_b.h5"), ["setup", "solve", "io", "post"], b,
                  {"label": "candidate", "mpi_size": 1}, ids=False, exclusive=False)


def hostile():
    """One defect each; every one must be a clean SP_ERR_FORMAT."""
    base = [C(0, 0, 10, 15), C(0, 0, 20, 33)]
    p = lambda n: os.path.join(OUT, n)
    write_schema2(p("hostile_dtype.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_dtype.h5"), "a") as f:
        del f["events/start_times"]
        f["events"].create_dataset("start_times", data=np.array([10.0, 20.0]))
    write_schema2(p("hostile_missing.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_missing.h5"), "a") as f:
        del f["rank_region_index/event_counts"]
    write_schema2(p("hostile_offsets.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_offsets.h5"), "a") as f:
        f["rank_region_index/event_offsets"][0] = 1
    write_schema2(p("hostile_region_id.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_region_id.h5"), "a") as f:
        f["rank_region_index/region_ids"][0] = 7
    write_schema2(p("hostile_huge.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_huge.h5"), "a") as f:
        g = f["rank_region_index"]
        for k in list(g.keys()):
            dt = g[k].dtype
            del g[k]
            g.create_dataset(k, shape=(1 << 40,), dtype=dt, chunks=(1024,))
    write_schema2(p("hostile_lengths.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_lengths.h5"), "a") as f:
        del f["events/end_times"]
        f["events"].create_dataset("end_times", data=np.array([15], dtype=np.int64))
    write_schema2(p("hostile_schema4.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_schema4.h5"), "a") as f:
        f.attrs["scope_profiler_schema"] = np.int64(4)
    write_schema2(p("hostile_summary.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_summary.h5"), "a") as f:
        s = f["rank_region_index/summary_statistics"][...]
        s["minimum"][0] = 99
        f["rank_region_index/summary_statistics"][...] = s
    # valid index and summaries, but the events end before they start: only
    # commands that read events may notice
    write_schema2(p("hostile_events.h5"), ["solve"], base, {})
    with h5py.File(p("hostile_events.h5"), "a") as f:
        f["events/end_times"][...] = np.array([1, 2], dtype=np.int64)
    with h5py.File(p("hostile_foreign.h5"), "w") as f:
        f.create_dataset("temperature", data=np.arange(10.0))


def gpu():
    """GPU timing as upstream's writers store it (schema 2): events/gpu_durations
    beside the times (-1 for a call without a device time) and gpu_count /
    gpu_total in the summary. Two ranks; "kernel" calls are short on the CPU
    (enqueue-side) and long on the device; "host" has no device time at all;
    rank 1's second kernel call has none (an untimed call)."""
    t = lambda ms: BASE + ms * MS
    names = ["step", "kernel", "host"]
    calls, gpu = [], {}
    def add(region, rank, s, e, g):
        c = C(region, rank, t(s), t(e))
        calls.append(c)
        gpu[(rank, region, c["start"])] = g
    for rank in (0, 1):
        for k in range(3):
            o = 100 * k
            add(0, rank, o, o + 40, (30 + 2 * rank) * MS)
            add(1, rank, o + 1, o + 2, (12 + rank) * MS if not (rank == 1 and k == 1) else -1)
            add(1, rank, o + 3, o + 4, (16 + rank) * MS)
            add(2, rank, o + 10, o + 35, -1)
    path = os.path.join(OUT, "gpu.h5")
    write_schema2(path, names, calls, {"mpi_size": 2, "label": "gpu", "gpu_backend": "cuda"},
                  ids=False)
    keys = sorted({(c["rank"], c["region"]) for c in calls})
    col, summ = [], []
    with h5py.File(path, "a") as f:
        s = f["rank_region_index/summary_statistics"][...]
        for i, (rank, region) in enumerate(keys):
            mine = sorted(c["start"] for c in calls if (c["rank"], c["region"]) == (rank, region))
            vals = [gpu[(rank, region, st)] for st in mine]
            col += vals
            ok = [v for v in vals if v >= 0]
            s["gpu_count"][i] = len(ok)
            s["gpu_total"][i] = sum(ok)
        f["rank_region_index/summary_statistics"][...] = s
        f["events"].create_dataset("gpu_durations", data=np.array(col, dtype=np.int64))
    # The same idea in upstream's older hierarchical layout.
    with h5py.File(os.path.join(OUT, "gpu_schema1.h5"), "w") as f:
        attrs(f.create_group("metadata"), {"mpi_size": 1})
        g = f.create_group("rank0/regions/kernel")
        g.create_dataset("start_times", data=np.array([10, 20, 40], dtype=np.int64))
        g.create_dataset("end_times", data=np.array([15, 23, 44], dtype=np.int64))
        g.create_dataset("gpu_durations", data=np.array([100, -1, 300], dtype=np.int64))
        g = f.create_group("rank0/regions/host")
        g.create_dataset("start_times", data=np.array([50], dtype=np.int64))
        g.create_dataset("end_times", data=np.array([60], dtype=np.int64))


if __name__ == "__main__":
    compat_schema2()
    compat_schema1()
    hier_nested()
    multi()
    multi_schema3()
    aggregate()
    async_tasks()
    diff_pair()
    hostile()
    gpu()
    print("fixtures written to", OUT)
