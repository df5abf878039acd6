"""Decodes the per-call event columns of a scope-profiler file with h5py and
numpy alone, as docs/file-format.md (upstream's layout) describes them:
schema 2 stores absolute events/start_times and end_times; schema 3 stores
events/start_deltas (per row of the rank/region index: the row's first
start, then differences within the row) and events/durations, int64 both.
call_ids and parent_ids exist only when the run recorded nesting.

events(f) -> dict of int64 arrays: start, end, call, parent (-1: none).
Raises ValueError on a layout that breaks the format.
"""
import numpy as np


def _column(ev, name, n=None):
    ds = ev[name]
    if ds.dtype != np.int64 or ds.ndim != 1 or (n is not None and ds.shape != (n,)):
        raise ValueError("events/%s must be int64%s, is %s%s"
                         % (name, "" if n is None else "[%d]" % n, ds.dtype, ds.shape))
    return ds[:]


def events(f):
    schema = int(f.attrs["scope_profiler_schema"])
    ev = f["events"]
    if schema == 2:
        for name in ("start_deltas", "durations"):
            if name in ev:
                raise ValueError("schema 2 has no events/%s" % name)
        start = _column(ev, "start_times")
        end = _column(ev, "end_times", len(start))
    elif schema == 3:
        for name in ("start_times", "end_times"):
            if name in ev:
                raise ValueError("schema 3 has no events/%s" % name)
        delta = _column(ev, "start_deltas")
        dur = _column(ev, "durations", len(delta))
        rri = f["rank_region_index"]
        start = np.zeros(len(delta), np.int64)
        with np.errstate(over="ignore"):
            for o, c in zip(rri["event_offsets"][:], rri["event_counts"][:]):
                o, c = int(o), int(c)
                start[o:o + c] = np.cumsum(delta[o:o + c])
            end = start + dur
    else:
        raise ValueError("schema %d" % schema)
    n = len(start)
    if ("call_ids" in ev) != ("parent_ids" in ev):
        raise ValueError("events/call_ids and parent_ids come together")
    call = _column(ev, "call_ids", n) if "call_ids" in ev else np.full(n, -1, np.int64)
    parent = _column(ev, "parent_ids", n) if "parent_ids" in ev else np.full(n, -1, np.int64)
    return {"start": start, "end": end, "call": call, "parent": parent}


def rebuild(start, end, lanes=None):
    """Nesting from intervals alone, as upstream's readers rebuild it when a
    file has no call ids: per lane, calls sorted by (start, longer first),
    each nested in the nearest enclosing call still open (a call is closed
    for a later one when it ends at or before that one's start). Returns
    (call, parent): call = the event's own index, parent = the index of its
    parent or -1."""
    n = len(start)
    lanes = np.zeros(n, np.int64) if lanes is None else lanes
    order = np.lexsort((-(end - start), start, lanes))
    parent = np.full(n, -1, np.int64)
    stack = []
    last_lane = None
    for i in order.tolist():
        if lanes[i] != last_lane:
            stack = []
            last_lane = lanes[i]
        while stack and end[stack[-1]] <= start[i]:
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return np.arange(n, dtype=np.int64), parent


def nested(f):
    """events(f), with call and parent filled from the intervals (rebuild,
    rank by rank, lanes from events/thread_ids and task_ids when present)
    when the file leaves the ids out."""
    d = events(f)
    ev = f["events"]
    if "call_ids" in ev:
        return d
    rri = f["rank_region_index"]
    n = len(d["start"])
    rank_of = np.zeros(n, np.int64)
    for r, o, c in zip(rri["ranks"][:], rri["event_offsets"][:], rri["event_counts"][:]):
        rank_of[int(o):int(o) + int(c)] = int(r)
    lane = np.zeros(n, np.int64)
    if "thread_ids" in ev:
        lane = ev["thread_ids"][:].astype(np.int64)
    if "task_ids" in ev:  # inside a task the task is the lane
        lane = np.where(ev["task_ids"][:] >= 0, -2 - ev["task_ids"][:].astype(np.int64), lane)
    call = np.full(n, -1, np.int64)
    parent = np.full(n, -1, np.int64)
    for rank in np.unique(rank_of):
        idx = np.nonzero(rank_of == rank)[0]
        c, p = rebuild(d["start"][idx], d["end"][idx], lane[idx])
        call[idx] = idx[c]
        parent[idx] = np.where(p >= 0, idx[np.maximum(p, 0)], -1)
    d["call"], d["parent"] = call, parent
    return d
