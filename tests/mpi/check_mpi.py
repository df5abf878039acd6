"""Independent check of a job's scope-profiler file (schema 3, or 2 with
hdf5_schema=2; several ranks)
with h5py + numpy; the multi-rank counterpart of
tests/integration/check_profile.py, whose checks assume one rank.

  check_mpi.py FILE --ranks N [--job EVENTS] [--calls] [--sync] [--full] [--threads]
               [--per-rank REGION=COUNT ...] [--parent REGION=PARENT ...]
  check_mpi.py --compare A B

Checks dtypes and shapes, that rows come rank after rank with their events
back to back, every rank's call tree (call ids are unique per rank), every
summary row and exclusive total recomputed from the events, the MPI metadata,
and /ranks (clock offsets: on one host the true offset is 0, so each
estimate must lie within its error bound). --job checks the counts
tests/mpi/mpi_job.c records; --calls the MPI regions and byte columns of
tests/mpi/mpi_calls.c; --sync the offsets of sp_mpi_sync_clock(); --full the
per-rank host names; --per-rank the calls of a region on every rank;
--parent that every call of REGION sits directly inside a PARENT call;
--threads (track_threads) the thread table: every rank's rows, its ranks
column saying whose they are, every thread id of a rank's calls in its
rows. --compare: the two files hold the same content (every
dataset and attribute) apart from metadata that differs between runs
(timestamp, settings, mpi_writer, the overhead_* figures, finalize_time_ns) and
the thread table's native_id, ident, cpu_ns, start_ns and end_ns.
Exits non-zero with a message on the first violation.
"""
import json
import sys

import os

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sp_events  # noqa: E402  (decodes schema 3's event columns)
import sp_spec  # noqa: E402  (upstream's layout)


def fail(msg):
    print("check_mpi: " + msg, file=sys.stderr)
    sys.exit(1)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def check_rank_tree(rank, start, end, cid, pid, tid):
    if len(np.unique(cid)) != len(cid) or np.any(cid < 0):
        fail("rank %d: call ids must be unique and recorded" % rank)
    index_of = {c: i for i, c in enumerate(cid.tolist())}
    child = np.zeros(len(cid), dtype=np.int64)
    for i, p in enumerate(pid.tolist()):
        if p == -1:
            continue
        if p not in index_of:
            fail("rank %d: parent id %d refers to no call of that rank" % (rank, p))
        j = index_of[p]
        if not (start[j] <= start[i] and end[i] <= end[j]):
            fail("rank %d: call %d is not inside its parent %d" % (rank, cid[i], p))
        # a parent on another thread keeps the time of its child (it ran beside it)
        if tid is None or tid[i] == tid[j]:
            child[j] += end[i] - start[i]
    return child


def check_file(path, nranks, args):
    f = h5py.File(path, "r")
    try:
        sp_spec.check(f, optional={c for c in sp_spec.OPTIONAL_EVENTS if c in f["events"]}, layout="columnar")
    except ValueError as e:
        fail(str(e))
    meta = f["metadata"].attrs
    for key in ("mpi_size", "num_nodes", "total_cores", "mpi_library_version", "mpi_writer", "settings",
                "start_time_ns", "label"):
        if key not in meta:
            fail("metadata lacks %s" % key)
    json.loads(meta["settings"])
    if meta["mpi_size"] != nranks:
        fail("mpi_size %d, expected %d" % (meta["mpi_size"], nranks))
    if meta["num_nodes"] != 1:
        fail("num_nodes %d on one host" % meta["num_nodes"])
    if meta["total_cores"] < nranks:
        fail("total_cores %d" % meta["total_cores"])
    names = [text(n) for n in f["region_table/names"][:]]
    if len(set(names)) != len(names):
        fail("region names are not unique")
    rri = f["rank_region_index"]
    k = rri["region_ids"].shape[0]
    dtypes = {"region_ids": "uint32", "ranks": "uint32", "event_offsets": "uint64", "event_counts": "uint64",
              "source_lines": "int64", "exclusive_totals": "int64"}
    for name, dt in dtypes.items():
        if str(rri[name].dtype) != dt or rri[name].shape != (k,):
            fail("rank_region_index/%s is %s%s" % (name, rri[name].dtype, rri[name].shape))
    for name in ("source_files", "source_texts", "tags"):
        if rri[name].dtype.kind != "O" or rri[name].shape != (k,):
            fail("rank_region_index/%s must be %d vlen strings" % (name, k))
    fields = ["total", "minimum", "maximum", "first", "last", "start_minimum", "end_maximum", "gpu_count",
              "gpu_total", "mean", "m2"]
    if list(rri["summary_statistics"].dtype.names) != fields:
        fail("summary_statistics fields")
    ranks = rri["ranks"][:]
    ids = rri["region_ids"][:]
    offs, counts = rri["event_offsets"][:], rri["event_counts"][:]
    if np.any(np.diff(ranks.astype(np.int64)) < 0):
        fail("rows are not rank after rank")
    if sorted(set(ranks.tolist())) != list(range(nranks)):
        fail("ranks in the file %s, expected 0..%d" % (sorted(set(ranks.tolist())), nranks - 1))
    if np.any(ids >= len(names)):
        fail("a region id is outside the region table")
    pos = 0
    for r in range(k):
        if offs[r] != pos:
            fail("row %d starts at %d, expected %d (rows back to back, in order)" % (r, offs[r], pos))
        pos += counts[r]
    ev = f["events"]
    try:
        decoded = sp_events.nested(f)
    except ValueError as e:
        fail(str(e))
    n = len(decoded["start"])
    if pos != n:
        fail("rows cover %d events of %d" % (pos, n))
    for name in ev:
        if ev[name].shape != (n,):
            fail("events/%s has shape %s" % (name, ev[name].shape))
    start, end = decoded["start"], decoded["end"]
    cid, pid = decoded["call"], decoded["parent"]
    tid = ev["thread_ids"][:].astype(np.int64) if "thread_ids" in ev else None
    if np.any(end < start):
        fail("an event ends before it starts")
    stats = rri["summary_statistics"][:]
    excl = rri["exclusive_totals"][:]
    for rank in range(nranks):
        rows = np.nonzero(ranks == rank)[0]
        lo = int(offs[rows[0]])
        hi = int(offs[rows[-1]] + counts[rows[-1]])
        child = check_rank_tree(rank, start[lo:hi], end[lo:hi], cid[lo:hi], pid[lo:hi],
                                None if tid is None else tid[lo:hi])
        for r in rows:
            o, c = int(offs[r]) - lo, int(counts[r])
            if c == 0:
                continue
            d = (end[lo:hi] - start[lo:hi])[o:o + c]
            s = stats[r]
            if np.any(np.diff(start[lo + o:lo + o + c]) < 0):
                fail("row %d is not ordered by start" % r)
            exp = {"total": d.sum(), "minimum": d.min(), "maximum": d.max(), "first": d[0], "last": d[-1],
                   "start_minimum": start[lo + o:lo + o + c].min(), "end_maximum": end[lo + o:lo + o + c].max()}
            for key, val in exp.items():
                if s[key] != val:
                    fail("row %d %s: file %d, recomputed %d" % (r, key, s[key], val))
            if not np.isclose(s["mean"], d.mean(), rtol=1e-12):
                fail("row %d mean" % r)
            if excl[r] != (d - child[o:o + c]).sum():
                fail("row %d exclusive total %d, recomputed %d" % (r, excl[r], (d - child[o:o + c]).sum()))
            json.loads(rri["tags"][r])
    g = f["ranks"]
    off, err = g["clock_offsets_ns"][:], g["clock_offset_errors_ns"][:]
    if off.dtype != np.int64 or off.shape != (nranks,) or err.shape != (nranks,):
        fail("/ranks/clock_offsets_ns must be int64[%d]" % nranks)
    if off[0] != 0 or err[0] != 0 or np.any(err < 0):
        fail("clock offsets %s errors %s" % (off, err))
    if "--threads" in args:
        if "thread_table" not in f or tid is None:
            fail("--threads: no /thread_table or events/thread_ids")
        tt = f["thread_table"]
        tr, ti = tt["ranks"][:].astype(np.int64), tt["index"][:].astype(np.int64)
        if set(tr.tolist()) != set(range(nranks)):
            fail("thread_table ranks column holds %s, expected ranks 0-%d" % (sorted(set(tr.tolist())), nranks - 1))
        for rank in range(nranks):
            rows = np.nonzero(ranks == rank)[0]
            lo, hi = int(offs[rows[0]]), int(offs[rows[-1]] + counts[rows[-1]])
            used, mine = set(tid[lo:hi].tolist()), set(ti[tr == rank].tolist())
            if not used <= mine:
                fail("rank %d: calls on threads %s, its thread_table rows %s" % (rank, sorted(used), sorted(mine)))
    manual = text(meta["clock"]) == "manual"
    if not manual and np.any(np.abs(off) > err):
        fail("on one host every offset must lie within its error bound: %s vs %s" % (off, err))
    if "--sync" in args:
        so = g["sync_clock_offsets_ns"][:]
        se = g["sync_clock_offset_errors_ns"][:]
        if so.shape != (nranks,) or (not manual and np.any(np.abs(so) > se)):
            fail("sync clock offsets %s vs %s" % (so, se))
    if "--full" in args:
        hosts = [text(h) for h in g["hostnames"][:]]
        if len(hosts) != nranks or len(set(hosts)) != 1 or not hosts[0]:
            fail("hostnames %s" % hosts)
    elif "hostnames" in g:
        fail("host names are recorded only at metadata_detail=full")
    per = {}
    for r in range(k):
        per[(names[ids[r]], int(ranks[r]))] = int(counts[r])
    if "--job" in args:
        events = int(args[args.index("--job") + 1])
        for rank in range(nranks):
            want = {"step": 3 + rank, "inner": 2 * (3 + rank), "rank_%d" % rank: 1, "odd": rank % 2,
                    "bulk": events}
            for name, c in want.items():
                if per.get((name, rank), 0) != c:
                    fail("rank %d region %s: %d events, expected %d" % (rank, name, per.get((name, rank), 0), c))
    for i, a in enumerate(args):
        if a == "--per-rank":
            name, c = args[i + 1].rsplit("=", 1)
            for rank in range(nranks):
                if per.get((name, rank), 0) != int(c):
                    fail("rank %d region %s: %d events, expected %s" % (rank, name, per.get((name, rank), 0), c))
        if a == "--parent":
            child, parent = args[i + 1].split("=", 1)
            region_of = np.empty(n, dtype=object)
            for r in range(k):
                region_of[int(offs[r]):int(offs[r] + counts[r])] = names[ids[r]]
            seen = 0
            for rank in range(nranks):
                rows = np.nonzero(ranks == rank)[0]
                lo, hi = int(offs[rows[0]]), int(offs[rows[-1]] + counts[rows[-1]])
                at = {c: lo + i for i, c in enumerate(cid[lo:hi].tolist())}
                for i in range(lo, hi):
                    if region_of[i] == child:
                        seen += 1
                        if pid[i] == -1 or region_of[at[pid[i]]] != parent:
                            fail("rank %d: a %s call is not directly inside %s" % (rank, child, parent))
            if not seen:
                fail("no %s call" % child)
    if "--calls" in args:
        check_calls(f, names, ids, ranks, offs, counts, nranks)
    if "--gpu" in args:
        check_gpu(f, names, ids, ranks, offs, counts, nranks)
    print("%s: ok, %d ranks, %d regions, %d rows, %d events" % (path, nranks, len(names), k, n))


def check_gpu(f, names, ids, ranks, offs, counts, nranks):
    """tests/mpi/mpi_gpu.c: kernel calls of rank r take (r + 1) * 1000 ns of
    device time, except on rank 1, which had no GPU: -1, the column's fill."""
    ev = f["events"]
    if "gpu_durations" not in ev or ev["gpu_durations"].dtype != np.int64:
        fail("events/gpu_durations missing or not int64")
    g = ev["gpu_durations"][:]
    summ = f["rank_region_index/summary_statistics"][:]
    for r in range(len(ids)):
        rank, name = int(ranks[r]), names[ids[r]]
        vals = g[int(offs[r]):int(offs[r] + counts[r])]
        if name == "kernel":
            want = -1 if rank == 1 else (rank + 1) * 1000
        elif name == "host":
            want = -1 if rank == 1 else 0
        else:
            continue
        if counts[r] != 20 or np.any(vals != want):
            fail("rank %d %s: %d calls, GPU times %s, expected 20 x %d" % (rank, name, counts[r], vals[:5], want))
        timed = 0 if want < 0 else 20
        if summ["gpu_count"][r] != timed or summ["gpu_total"][r] != timed * max(want, 0):
            fail("rank %d %s: gpu_count %d gpu_total %d" % (rank, name, summ["gpu_count"][r], summ["gpu_total"][r]))
    print("gpu: ok, device times per rank, rank 1 without GPU filled with -1")


def check_calls(f, names, ids, ranks, offs, counts, nranks):
    ev = f["events"]
    if "mpi_bytes_sent" not in ev or "mpi_bytes_received" not in ev:
        fail("events/mpi_bytes_sent and mpi_bytes_received missing")
    sent, recv = ev["mpi_bytes_sent"][:], ev["mpi_bytes_received"][:]
    decoded = sp_events.nested(f)
    pid, cid = decoded["parent"], decoded["call"]
    tags = f["rank_region_index/tags"]
    # Expected (sent, received) per call on each rank; see mpi_calls.c.
    nd = 100 * 8
    expect = {"MPI_Send": (nd, 0), "MPI_Recv": (0, nd), "MPI_Isend": (nd, 0), "MPI_Irecv": (0, nd),
              "MPI_Sendrecv": (nd, nd), "MPI_Allreduce": (32, 32), "MPI_Barrier": (0, 0),
              "MPI_Alltoall": (8 * nranks, 8 * nranks), "MPI_Allgather": (8, 8 * nranks),
              "MPI_Waitall": (-1, -1), "MPI_Comm_dup": (-1, -1), "MPI_Comm_split": (-1, -1),
              "MPI_Iallreduce": (8, 8), "MPI_File_open": (-1, -1), "MPI_File_close": (-1, -1),
              "MPI_File_write_at_all": (1000, 0), "MPI_File_read_at": (0, 1000), "MPI_Ibarrier": (0, 0)}
    seen = set()
    for r in range(len(ids)):
        name = names[ids[r]]
        o, c = int(offs[r]), int(counts[r])
        rank = int(ranks[r])
        if name.startswith("MPI_"):
            if json.loads(tags[r]) != ["mpi"]:
                fail("%s is not tagged mpi" % name)
            seen.add(name)
            for i in range(o, o + c):
                if name in expect and (sent[i], recv[i]) != expect[name]:
                    fail("rank %d %s: sent/received %d/%d, expected %s" % (rank, name, sent[i], recv[i],
                                                                          expect[name]))
                if name == "MPI_Bcast":
                    want = (40, 0) if rank == 0 else (0, 40)
                    if (sent[i], recv[i]) != want:
                        fail("rank %d MPI_Bcast %d/%d" % (rank, sent[i], recv[i]))
                if name == "MPI_Gather":
                    want = (8, 8 * nranks) if rank == 0 else (8, 0)
                    if (sent[i], recv[i]) != want:
                        fail("rank %d MPI_Gather %d/%d" % (rank, sent[i], recv[i]))
                if pid[i] == -1:
                    fail("rank %d %s is not nested in the program's region" % (rank, name))
        else:
            if np.any(sent[o:o + c] != -1) or np.any(recv[o:o + c] != -1):
                fail("region %s (not an MPI call) has byte counts" % name)
    for name in list(expect) + ["MPI_Bcast", "MPI_Gather"]:
        if name not in seen:
            fail("no %s region" % name)
    print("calls: %d MPI regions with byte counts as expected" % len(seen))


def compare(a, b):
    fa, fb = h5py.File(a, "r"), h5py.File(b, "r")
    volatile = {"/metadata": {"timestamp", "settings", "mpi_writer", "overhead_ns_per_call", "overhead_pair_ns",
                              "overhead_cold_pair_ns", "overhead_total_ns", "overhead_extra_ns", "overhead_slow_calls",
                              "overhead_fresh_bytes", "finalize_time_ns"}}
    items = []
    fa.visit(items.append)
    other = []
    fb.visit(other.append)
    if sorted(items) != sorted(other):
        fail("different objects: %s vs %s" % (sorted(set(items) ^ set(other)), ""))
    for obj in [""] + items:
        oa, ob = fa["/" + obj], fb["/" + obj]
        skip = volatile.get("/" + obj, set())
        ka, kb = set(oa.attrs) - skip, set(ob.attrs) - skip
        if ka != kb:
            fail("/%s: attributes differ: %s" % (obj, sorted(ka ^ kb)))
        for key in ka:
            va, vb = oa.attrs[key], ob.attrs[key]
            if not np.array_equal(np.asarray(va), np.asarray(vb)):
                fail("/%s attribute %s: %r vs %r" % (obj, key, va, vb))
        if isinstance(oa, h5py.Dataset):
            if oa.dtype != ob.dtype or oa.shape != ob.shape:
                fail("/%s: %s%s vs %s%s" % (obj, oa.dtype, oa.shape, ob.dtype, ob.shape))
            # what the operating system says about a run's threads (ids, CPU
            # time, when they started and ended: the real clock, also under
            # the manual one) differs between two runs; the shapes above agree
            if obj in ("thread_table/native_id", "thread_table/ident", "thread_table/cpu_ns",
                       "thread_table/start_ns", "thread_table/end_ns"):
                continue
            if not np.array_equal(oa[()], ob[()]):
                fail("/%s: contents differ" % obj)
    print("%s and %s: same content (%d objects)" % (a, b, len(items)))


def main():
    args = sys.argv[1:]
    if args and args[0] == "--compare":
        compare(args[1], args[2])
        return
    path = args[0]
    nranks = int(args[args.index("--ranks") + 1])
    check_file(path, nranks, args)


if __name__ == "__main__":
    main()
