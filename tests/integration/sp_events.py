"""Decodes the per-call event columns of a scope-profiler file with h5py and
numpy alone, as docs/file-format.md describes them: schema 2 stores them
plainly (events/start_times, end_times, call_ids, parent_ids); schema 3
stores each row's calls as start gaps, durations, zigzag call-id steps and
zigzag parent distances in narrow unsigned integers, with the values that do
not fit listed in <column>_overflow_index/_values, and the row's first start
and call id in rank_region_index/start_bases and call_id_bases.

events(f) -> dict of int64 arrays: start, end, call, parent (-1: none).
Raises ValueError on a layout that breaks the format.
"""
import numpy as np

CODED = ("start_gaps", "durations", "call_id_gaps", "parent_offsets")


def _true_values(ev, name, zigzag, n):
    ds = ev[name]
    if ds.dtype.kind != "u" or ds.dtype.itemsize not in (1, 2, 4, 8) or ds.shape != (n,):
        raise ValueError("events/%s must be uint8/16/32/64[%d], is %s%s"
                         % (name, n, ds.dtype, ds.shape))
    u = ds[:].astype(np.uint64)
    if zigzag:
        v = ((u >> np.uint64(1)) ^ (np.uint64(0) - (u & np.uint64(1)))).view(np.int64)
    else:
        v = u.view(np.int64).copy()
    none = (u == 0) if name == "parent_offsets" else None
    iname, vname = name + "_overflow_index", name + "_overflow_values"
    if (iname in ev) != (vname in ev):
        raise ValueError("events/%s and %s come in pairs" % (iname, vname))
    if iname in ev:
        idx, val = ev[iname][:], ev[vname][:]
        if idx.dtype != np.uint64 or val.dtype != np.int64 or idx.shape != val.shape:
            raise ValueError("events/%s must be uint64 and %s int64, equally long" % (iname, vname))
        if len(idx) and (np.any(np.diff(idx.astype(np.int64)) <= 0) or idx.max() >= n):
            raise ValueError("events/%s must be ascending event numbers below %d" % (iname, n))
        v[idx.astype(np.int64)] = val
        if none is not None:
            none[idx.astype(np.int64)] = False
    return v, none


def events(f):
    schema = int(f.attrs["scope_profiler_schema"])
    ev = f["events"]
    if schema == 2:
        out = {"start": ev["start_times"][:], "end": ev["end_times"][:]}
        n = len(out["start"])
        out["call"] = ev["call_ids"][:] if "call_ids" in ev else np.full(n, -1, np.int64)
        out["parent"] = ev["parent_ids"][:] if "parent_ids" in ev else np.full(n, -1, np.int64)
        return out
    if schema != 3:
        raise ValueError("schema %d" % schema)
    rri = f["rank_region_index"]
    n = ev["start_gaps"].shape[0]
    gaps, _ = _true_values(ev, "start_gaps", False, n)
    dur, _ = _true_values(ev, "durations", False, n)
    steps, _ = _true_values(ev, "call_id_gaps", True, n)
    back, none = _true_values(ev, "parent_offsets", True, n)
    for name in ("start_bases", "call_id_bases"):
        if rri[name].dtype != np.int64 or rri[name].shape != rri["region_ids"].shape:
            raise ValueError("rank_region_index/%s must be int64, one per row" % name)
    offs, counts = rri["event_offsets"][:], rri["event_counts"][:]
    sb, cb = rri["start_bases"][:], rri["call_id_bases"][:]
    start = np.zeros(n, np.int64)
    call = np.full(n, -1, np.int64)
    with np.errstate(over="ignore"):
        for r in range(len(offs)):
            o, c = int(offs[r]), int(counts[r])
            start[o:o + c] = sb[r] + np.cumsum(gaps[o:o + c])
            call[o:o + c] = cb[r] + np.cumsum(steps[o:o + c])
        end = start + dur
        parent = np.where(none, -1, call - back)
    return {"start": start, "end": end, "call": call, "parent": parent}
