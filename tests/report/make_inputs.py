#!/usr/bin/python3
"""Inputs for the `scope-profiler report` tests, written with h5py + numpy in
the schema-2 columnar layout our writer produces (call and parent ids, thread
ids, summary rows, exclusive totals).

    make_inputs.py [OUTDIR]            the small deterministic test inputs
    make_inputs.py --big N PATH        N events (about; 8 regions x 4 ranks,
                                       nested, one worker thread) for timing
    make_inputs.py --regions N PATH    one rank, N regions called twice each
                                       under one root (charts of N regions)
    make_inputs.py --walk OUTDIR       pairs X.h5 / X_rev.h5 of the same calls,
                                       the second with each row's events in
                                       reverse order (the reader's walk refuses
                                       it and sorts: both must draw alike)

Small inputs (all deterministic):
  mpi4.h5     4 ranks, like an MPI run: session > step > {solve > kernel, halo},
              io on rank 0 only, a worker thread on rank 0, rank 3 slow in solve
  scale_1/2/4.h5  the same program on 1, 2 and 4 ranks (strong scaling);
              metadata "variant" = "c", "a", "b" for the categorical x order
  ranks64.h5  64 ranks x 3 regions x 2 steps, for the lane and bar limits
  lod.h5      one rank, 6000 short calls of "tick" in one lane plus a parent,
              so the Gantt lane has more calls than pixel columns
  names.h5    25 regions with names that need escaping (<, &, quotes,
              non-ASCII, a control character, invalid UTF-8)
  zero.h5     one rank: "tick" calls of 0 ns among longer ones and "instant"
              whose every call took 0 ns (two clock reads one tick apart),
              beside 1 us and 10 ms calls, so the duration axes are logarithmic
"""
import json
import os
import sys

import h5py
import numpy as np

STR = h5py.string_dtype(encoding="utf-8")
MS = 1_000_000
US = 1_000
BASE = 7_000_000_000
SUMMARY = np.dtype([
    ("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"), ("first", "<i8"),
    ("last", "<i8"), ("start_minimum", "<i8"), ("end_maximum", "<i8"),
    ("gpu_count", "<u8"), ("gpu_total", "<i8"), ("mean", "<f8"), ("m2", "<f8"),
])


class Run:
    """Calls of one run: nested with explicit ids, like our writer records."""

    def __init__(self):
        self.region, self.rank, self.start, self.end = [], [], [], []
        self.cid, self.pid, self.thread = [], [], []
        self.next_id = {}

    def call(self, region, rank, start, end, parent=-1, thread=0):
        """Record a call; `parent` is the index returned for the enclosing
        call. Returns this call's index (its end may be set later)."""
        i = self.next_id.get(rank, 0)
        self.next_id[rank] = i + 1
        self.region.append(region)
        self.rank.append(rank)
        self.start.append(start)
        self.end.append(end)
        self.cid.append(i)
        self.pid.append(self.cid[parent] if parent >= 0 else -1)
        self.thread.append(thread)
        return len(self.start) - 1


def write(path, names, run, meta, threads=True, ids=True, reverse_rows=False):
    reg = np.asarray(run.region, np.int64)
    rank = np.asarray(run.rank, np.int64)
    st = np.asarray(run.start, np.int64)
    en = np.asarray(run.end, np.int64)
    cid = np.asarray(run.cid, np.int64)
    pid = np.asarray(run.pid, np.int64)
    th = np.asarray(run.thread, np.int64)
    dur = en - st
    # exclusive time: duration minus the direct children's (same rank)
    excl = dur.copy()
    key = rank * (1 << 40) + cid
    order_key = np.argsort(key)
    has_parent = pid >= 0
    pkey = rank[has_parent] * (1 << 40) + pid[has_parent]
    pos = order_key[np.searchsorted(key, pkey, sorter=order_key)]
    np.subtract.at(excl, pos, dur[has_parent])
    # rows: (rank, region), events of a row in start order
    order = np.lexsort((st, reg, rank))
    reg, rank, st, en, cid, pid, th, dur, excl = (a[order] for a in
                                                  (reg, rank, st, en, cid, pid, th, dur, excl))
    n = len(st)
    cut = np.flatnonzero((np.diff(rank) != 0) | (np.diff(reg) != 0)) + 1
    first = np.concatenate(([0], cut))
    count = np.diff(np.concatenate((first, [n])))
    rows = [(int(reg[o]), int(rank[o]), int(o), int(c)) for o, c in zip(first, count)]
    summ = []
    for (_, _, o, c) in rows:
        d = dur[o:o + c]
        mean = float(d.sum()) / c
        summ.append((int(d.sum()), int(d.min()), int(d.max()), int(d[0]), int(d[-1]),
                     int(st[o:o + c].min()), int(en[o:o + c].max()), 0, 0, mean,
                     float(((d - mean) ** 2).sum())))
    if reverse_rows:  # the events of each row backwards (the summaries stay)
        perm = np.concatenate([np.arange(o + c - 1, o - 1, -1) for (_, _, o, c) in rows])
        st, en, cid, pid, th = (a[perm] for a in (st, en, cid, pid, th))
    with h5py.File(path, "w") as f:
        f.attrs["scope_profiler_schema"] = np.int64(2)
        f.attrs.create("storage_layout", "columnar", dtype=STR)
        m = f.create_group("metadata")
        for k, v in meta.items():
            if isinstance(v, str):
                m.attrs.create(k, v, dtype=STR)
            else:
                m.attrs[k] = np.int64(v)
        f.create_group("region_table").create_dataset("names", data=names, dtype=STR)
        g = f.create_group("rank_region_index")
        g["region_ids"] = np.array([r[0] for r in rows], np.uint32)
        g["ranks"] = np.array([r[1] for r in rows], np.uint32)
        g["event_offsets"] = np.array([r[2] for r in rows], np.uint64)
        g["event_counts"] = np.array([r[3] for r in rows], np.uint64)
        g["source_lines"] = np.full(len(rows), -1, np.int64)
        g["exclusive_totals"] = np.array([int(excl[o:o + c].sum()) for (_, _, o, c) in rows],
                                         np.int64)
        g.create_dataset("source_files", data=[""] * len(rows), dtype=STR)
        g.create_dataset("source_texts", data=[""] * len(rows), dtype=STR)
        g.create_dataset("tags", data=["[]"] * len(rows), dtype=STR)
        g["summary_statistics"] = np.array(summ, dtype=SUMMARY)
        e = f.create_group("events")
        chunks = (min(max(n, 1), 1 << 20),)
        e.create_dataset("start_times", data=st, chunks=chunks)
        e.create_dataset("end_times", data=en, chunks=chunks)
        if ids:
            e.create_dataset("call_ids", data=cid, chunks=chunks)
            e.create_dataset("parent_ids", data=pid, chunks=chunks)
        if threads:
            e.create_dataset("thread_ids", data=th.astype(np.uint32), chunks=chunks)


NAMES = ["scope_profiler.session", "step", "solve", "kernel", "halo", "io", "worker"]


def program(ranks, steps=4, slow_rank=None, io_rank=0, worker=True, scale=1.0):
    """The time-step program on `ranks` ranks; work per rank shrinks with
    `scale` (strong scaling: 1/ranks of the work)."""
    run = Run()
    for r in range(ranks):
        t = BASE + r * 7 * US
        sess = run.call(0, r, t, 0)
        t += 100 * US
        for s in range(steps):
            step0 = t
            step = run.call(1, r, t, 0, sess)
            t += 20 * US
            solve_len = int((3 * MS + s * 40 * US) * scale * (1.6 if r == slow_rank else 1.0))
            solve = run.call(2, r, t, t + solve_len, step)
            for k in range(3):
                ks = t + 50 * US + k * (solve_len // 3)
                run.call(3, r, ks, ks + solve_len // 4, solve)
            t += solve_len + 30 * US
            halo_len = 400 * US + 90 * US * ((r + s) % 3)
            run.call(4, r, t, t + halo_len, step)
            t += halo_len + 25 * US
            if r == io_rank:
                run.call(5, r, t, t + 700 * US, step)
                t += 720 * US
            run.end[step] = t
            t += 15 * US
            if worker and r == 0 and s == 1:
                run.call(6, r, step0 + 200 * US, step0 + 2 * MS, -1, thread=1)
        run.end[sess] = t + 50 * US
    return run


def meta(ranks, label, **extra):
    m = {"label": label, "mpi_size": ranks, "omp_num_threads": 2, "total_cores": 2 * ranks,
         "scope_profiler_version": "0.1.0", "source": "native", "start_time_ns": BASE}
    m.update(extra)
    return m


def small(out):
    zero(out)
    write(os.path.join(out, "mpi4.h5"), NAMES, program(4, slow_rank=3), meta(4, "mpi4"))
    for ranks, variant in ((1, "c"), (2, "a"), (4, "b")):
        write(os.path.join(out, f"scale_{ranks}.h5"), NAMES,
              program(ranks, steps=3, worker=False, scale=1.0 / ranks),
              meta(ranks, f"scale_{ranks}", variant=variant))
    run = Run()
    for r in range(64):
        t = BASE + r * US
        for k in range(2):
            a = run.call(0, r, t, t + (300 + 5 * r) * US)
            run.call(1, r, t + 10 * US, t + (200 + 3 * (r % 8)) * US, a)
            run.call(2, r, t + (250 + r) * US, t + (290 + r) * US, a)
            t += 400 * US
    write(os.path.join(out, "ranks64.h5"), ["outer", "compute", "exchange"], run,
          meta(64, "ranks64"), threads=False)
    run = Run()
    top = run.call(0, 0, BASE, BASE + 6000 * 20 * US + 10 * US)
    for i in range(6000):
        s = BASE + 5 * US + i * 20 * US
        run.call(1, 0, s, s + 3 * US + (i % 7) * US, top)
    write(os.path.join(out, "lod.h5"), ["loop", "tick"], run, meta(1, "lod"), threads=False)
    names = ["<b>bold</b> & co", 'say "hi"', "it's", "ünïcödé·région", "tab\there",
             "ctrl\x01char", "a/b/c", "x" * 60]
    names += [f"r{i:02d}" for i in range(25 - len(names) - 1)]
    bad = len(names)
    names.append("placeholder")
    run = Run()
    t = BASE
    for i in range(len(names)):
        run.call(i, 0, t, t + (i + 1) * 10 * US)
        t += (i + 1) * 10 * US + 5 * US
    write(os.path.join(out, "names.h5"), names, run, meta(1, "names"), threads=False)
    with h5py.File(os.path.join(out, "names.h5"), "a") as f:
        # invalid UTF-8, as a foreign writer might store: raw bytes in the vlen string
        ds = f["region_table/names"]
        raw = [n.encode() if isinstance(n, str) else n for n in ds.asstr()[...]]
        raw[bad] = b"bad\xff\xfebytes"
        del f["region_table/names"]
        f["region_table"].create_dataset("names", data=np.array(raw, dtype=object),
                                         dtype=h5py.string_dtype(encoding="utf-8"))


def zero(out):
    run = Run()
    top = run.call(0, 0, BASE, BASE + 400 * MS)
    t = BASE + 1 * MS
    for i in range(12):
        run.call(1, 0, t, t + (0 if i % 3 == 0 else (i + 1) * US), top)
        run.call(2, 0, t + 500 * US, t + 500 * US, top)
        run.call(3, 0, t + 1 * MS, t + 11 * MS, top)
        run.call(4, 0, t + 12 * MS, t + 12 * MS + 1 * US, top)
        t += 30 * MS
    write(os.path.join(out, "zero.h5"), ["loop", "tick", "instant", "work", "short"], run,
          meta(1, "zero"), threads=False)


def big(n_events, path):
    """About n_events calls: 4 ranks x steps x (step, solve, 4 kernels, halo,
    io, 2 comm) = 10 calls per step and rank, plus a session per rank."""
    ranks, per_step = 4, 10
    steps = max(1, n_events // (ranks * per_step))
    names = ["scope_profiler.session", "step", "solve", "kernel", "halo", "io", "comm_send",
             "comm_recv"]
    rng = np.random.default_rng(7)
    cols = {k: [] for k in ("region", "rank", "start", "end", "cid", "pid", "thread")}
    for r in range(ranks):
        # per step: step [0, L), solve [a, a+S), 4 kernels inside solve, halo, io, send, recv
        L = 100 * US
        s0 = BASE + r * 3 * US + np.arange(steps, dtype=np.int64) * L
        jitter = rng.integers(0, 5 * US, steps)
        solve_len = 40 * US + jitter + (r * 2 * US)
        base_id = 1 + np.arange(steps, dtype=np.int64) * per_step
        starts, ends, regs, cids, pids = [], [], [], [], []

        def add(region, a, b, slot, parent_slot):
            regs.append(np.full(steps, region, np.int64))
            starts.append(s0 + a)
            ends.append(s0 + b)
            cids.append(base_id + slot)
            pids.append(base_id + parent_slot if parent_slot >= 0 else np.zeros(steps, np.int64))
        add(1, 0, L - 2 * US, 0, -1)
        pids[-1] = np.zeros(steps, np.int64)  # steps hang off the session (id 0)
        add(2, 2 * US, 2 * US + solve_len, 1, 0)
        for k in range(4):
            add(3, 3 * US + k * 9 * US, 3 * US + k * 9 * US + 8 * US, 2 + k, 1)
        h0 = 2 * US + solve_len + 2 * US
        add(4, h0, h0 + 10 * US, 6, 0)
        add(5, h0 + 11 * US, h0 + 14 * US, 7, 0)
        add(6, h0 + 15 * US, h0 + 18 * US, 8, 0)
        add(7, h0 + 19 * US, h0 + 22 * US, 9, 0)
        cols["region"] += [np.array([0])] + regs
        cols["rank"] += [np.full(1 + steps * per_step, r, np.int64)]
        cols["start"] += [np.array([BASE + r * 3 * US - US])] + starts
        cols["end"] += [np.array([BASE + steps * L + 10 * US])] + ends
        cols["cid"] += [np.array([0])] + cids
        cols["pid"] += [np.array([-1])] + pids
        cols["thread"] += [np.zeros(1 + steps * per_step, np.int64)]
    run = Run()
    run.region = np.concatenate(cols["region"])
    run.rank = np.concatenate(cols["rank"])
    run.start = np.concatenate(cols["start"])
    run.end = np.concatenate(cols["end"])
    run.cid = np.concatenate(cols["cid"])
    run.pid = np.concatenate(cols["pid"])
    run.thread = np.concatenate(cols["thread"])
    write(path, names, run, meta(ranks, "big"))
    return len(run.start)


def many_regions(n, path):
    """One rank, n regions "r00000".. called twice each, one after the
    other, under a root: every per-region chart has n entries."""
    run = Run()
    root = run.call(0, 0, BASE, 0)
    t = BASE + 1 * US
    for k in range(n):
        for _ in range(2):
            run.call(1 + k, 0, t, t + (1 + k % 7) * US, root)
            t += 10 * US
    run.end[root] = t + 1 * US
    write(path, ["root"] + [f"r{k:05d}" for k in range(n)], run, meta(1, "regions"),
          threads=False)


def walk_pairs(out):
    """Inputs that take each rule of the report's flame chart and tree: a
    worker thread under a call of another thread (whose id sorts later),
    overlapping roots of an unrecorded thread (virtual lanes), nesting by
    containment with a child that outlives its parent, calls deeper than the
    chart draws, a row with more calls than pixel columns, a row on more
    threads than the Gantt chart has lanes for, and a rank the walk refuses
    part way."""
    def both(name, names, run, m, **kw):
        write(os.path.join(out, name + ".h5"), names, run, m, **kw)
        write(os.path.join(out, name + "_rev.h5"), names, run, m, reverse_rows=True, **kw)

    run = program(2, steps=3)
    for r in range(2):  # the main thread is 5: a worker's parent sorts after it
        run.thread = [5 if t == 0 else t for t in run.thread]
        t0 = BASE + 300 * US + r * 7 * US
        step = next(i for i in range(len(run.start)) if run.rank[i] == r and run.region[i] == 1)
        for w in (1, 2):
            wk = run.call(6, r, t0 + w * 10 * US, t0 + 2 * MS, step, thread=w)
            run.call(3, r, t0 + w * 10 * US + 5 * US, t0 + 1 * MS, wk, thread=w)
    both("threads", NAMES, run, meta(2, "threads"))

    run = Run()  # no thread ids: two threads' roots overlap in one lane
    for k in range(6):
        a = run.call(0, 0, BASE + k * 50 * US, BASE + k * 50 * US + 120 * US)
        run.call(1, 0, BASE + k * 50 * US + 10 * US, BASE + k * 50 * US + 60 * US, a)
    both("unrec", ["outer", "inner"], run, meta(1, "unrec"), threads=False)

    run = Run()  # containment only (no ids)
    top = run.call(0, 0, BASE, BASE + 900 * MS)
    t = BASE + 1 * MS
    for i in range(3000):  # more calls in one row than the plot has columns
        run.call(1, 0, t, t + 20 * US + (i % 5) * US, top)
        t += 100 * US
    a = run.call(2, 0, t, t + 10 * MS, top)
    run.call(3, 0, t + 1 * MS, t + 12 * MS, a)  # ends after its parent
    t += 20 * MS
    for d in range(70):  # recursion past the chart's depth
        run.call(4, 0, t + d * US, t + 100 * MS - d * US, top)
    both("noids", ["loop", "tick", "outer", "late", "deep"], run, meta(1, "noids"),
         threads=False, ids=False)

    run = Run()  # a region on more threads than a Gantt row keeps lanes for
    top = run.call(0, 0, BASE, BASE + 50 * MS)
    for w in range(1, 71):
        run.call(1, 0, BASE + w * 10 * US, BASE + w * 10 * US + 5 * MS, top, thread=w)
    both("lanes", ["team", "worker"], run, meta(1, "lanes"))

    # the walk refuses the second rank part way (after the first rank and
    # most of this one): a call and its child of the same start and end, the
    # child's id the smaller, so the order gives the child first
    run = program(2, steps=3)
    sess = next(i for i in range(len(run.start)) if run.rank[i] == 1 and run.region[i] == 0)
    t = run.end[sess] - 40 * US
    p = run.call(4, 1, t, t + 10 * US, sess)
    c = run.call(3, 1, t, t + 10 * US, p)
    run.cid[p], run.cid[c] = run.cid[c], run.cid[p]
    run.pid[c] = run.cid[p]
    both("late", NAMES, run, meta(2, "late"))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--walk":
        walk_pairs(sys.argv[2])
    elif len(sys.argv) >= 4 and sys.argv[1] == "--regions":
        many_regions(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) >= 2 and sys.argv[1] == "--big":
        n = big(int(sys.argv[2]), sys.argv[3])
        print(json.dumps({"events": int(n), "path": sys.argv[3]}))
    else:
        out = sys.argv[1] if len(sys.argv) > 1 else "."
        small(out)
