"""Upstream scope-profiler's HDF5 layout (schemas 2 and 3, columnar and
aggregate, lane tables), written out from the format specification
(shared/reference/upstream-file-format.md, sections 1-4) independently of
our writer's dataset plan, and a checker for files against it.

check(f, optional=(), layout=None) raises ValueError naming the first
difference: an upstream name missing or of another dtype, a column of the
other schema present, an optional event column present that the run did
not record (or missing one it did), lane-table fields. `optional` lists the
optional /events columns the run recorded (call_ids, parent_ids,
thread_ids, task_ids, await_ns, gpu_durations).
"""
import numpy as np

STR = "vlen str"

ROOT = {"scope_profiler_schema": "int64", "storage_layout": STR}

INDEX = {
    "region_ids": "uint32",
    "ranks": "uint32",
    "event_offsets": "uint64",
    "event_counts": "uint64",
    "source_lines": "int64",
    "exclusive_totals": "int64",
    "source_files": STR,
    "source_texts": STR,
    "tags": STR,
}

SUMMARY_FIELDS = [("total", "<i8"), ("minimum", "<i8"), ("maximum", "<i8"), ("first", "<i8"),
                  ("last", "<i8"), ("start_minimum", "<i8"), ("end_maximum", "<i8"),
                  ("gpu_count", "<u8"), ("gpu_total", "<i8"), ("mean", "<f8"), ("m2", "<f8")]

AGGREGATE = {
    "region_ids": "uint32",
    "ranks": "uint32",
    "aggregate_counts": "uint64",
    "aggregate_totals": "int64",
    "aggregate_minimums": "int64",
    "aggregate_maximums": "int64",
    "aggregate_exclusives": "int64",
}

EVENTS = {2: ("start_times", "end_times"), 3: ("start_deltas", "durations")}
OPTIONAL_EVENTS = ("gpu_durations", "call_ids", "parent_ids", "thread_ids", "task_ids", "await_ns")

THREAD_TABLE = {"ranks": "uint32", "index": "int64", "ident": "int64", "native_id": "int64",
                "daemon": "int8", "start_ns": "int64", "end_ns": "int64", "cpu_ns": "int64",
                "name": STR}
TASK_TABLE = {"ranks": "uint32", "index": "int64", "thread_index": "int64", "created_ns": "int64",
              "done_ns": "int64", "steps": "int64", "running_ns": "int64", "suspended_ns": "int64",
              "kind": STR, "name": STR, "coro_name": STR}


def _dtype(obj):
    dt = obj.dtype
    if dt.kind == "O" or (dt.kind == "S" and obj.id.get_type().is_variable_str()):
        return STR
    return str(dt)


def _is_vlen_utf8(ds):
    t = ds.id.get_type()
    import h5py
    return isinstance(t, h5py.h5t.TypeStringID) and t.is_variable_str() and t.get_cset() == h5py.h5t.CSET_UTF8


def _check_group(g, table, where, length=None):
    n = None
    for name, want in table.items():
        if name not in g:
            raise ValueError("%s/%s is missing" % (where, name))
        ds = g[name]
        if ds.ndim != 1:
            raise ValueError("%s/%s must be one-dimensional" % (where, name))
        if want == STR:
            if not _is_vlen_utf8(ds):
                raise ValueError("%s/%s must be variable-length UTF-8 strings, is %s" % (where, name, ds.dtype))
        elif str(ds.dtype) != want:
            raise ValueError("%s/%s is %s, upstream's is %s" % (where, name, ds.dtype, want))
        if length is not None and ds.shape[0] != length:
            raise ValueError("%s/%s has %d rows, expected %d" % (where, name, ds.shape[0], length))
        n = ds.shape[0] if n is None else n
    return n


def check(f, optional=(), layout=None):
    schema = f.attrs.get("scope_profiler_schema")
    if schema is None or not isinstance(schema, np.int64):
        raise ValueError("root attribute scope_profiler_schema must be int64, is %r" % (schema,))
    schema = int(schema)
    if schema not in (2, 3):
        raise ValueError("scope_profiler_schema %d" % schema)
    sl = f.attrs["storage_layout"]
    sl = sl.decode() if isinstance(sl, bytes) else sl
    if layout is not None and sl != layout:
        raise ValueError("storage_layout %r, expected %r" % (sl, layout))
    if not isinstance(f.attrs["storage_layout"], str):
        raise ValueError("storage_layout must be a (vlen) string")
    if "metadata" not in f or len(f["metadata"].keys()) != 0:
        raise ValueError("/metadata must be a group of attributes only")
    _check_group(f["region_table"], {"names": STR}, "/region_table")
    rri = f["rank_region_index"]
    ev = f["events"]
    if sl == "aggregate":
        k = _check_group(rri, AGGREGATE, "/rank_region_index")
        for name in [c for c in INDEX if c not in AGGREGATE] + ["summary_statistics"]:
            if name not in rri or rri[name].shape != (0,):
                raise ValueError("aggregate layout: /rank_region_index/%s must exist with length 0" % name)
        for name in EVENTS[schema]:
            if name not in ev or ev[name].shape != (0,) or ev[name].dtype != np.int64:
                raise ValueError("aggregate layout: /events/%s must be an empty int64 column" % name)
        n = 0
    else:
        k = _check_group(rri, INDEX, "/rank_region_index", None)
        _check_group(rri, INDEX, "/rank_region_index", k)
        st = rri["summary_statistics"]
        if st.dtype != np.dtype(SUMMARY_FIELDS) or st.shape != (k,):
            raise ValueError("summary_statistics must be %s x %d, is %s x %s" % (SUMMARY_FIELDS, k, st.dtype, st.shape))
        for name in ("aggregate_counts", "aggregate_totals"):
            if name in rri:
                raise ValueError("columnar layout with /rank_region_index/%s" % name)
        first = EVENTS[schema][0]
        n = ev[first].shape[0]
        _check_group(ev, {c: "int64" for c in EVENTS[schema]}, "/events", n)
        if int(rri["event_counts"][:].sum()) != n:
            raise ValueError("event_counts sum to %d, /events holds %d" % (rri["event_counts"][:].sum(), n))
    for name in EVENTS[5 - schema]:
        if name in ev:
            raise ValueError("schema %d file with /events/%s (schema %d's)" % (schema, name, 5 - schema))
    for name in ("start_gaps", "call_id_gaps", "parent_offsets"):
        if name in ev:
            raise ValueError("/events/%s is not upstream's" % name)
    for name in OPTIONAL_EVENTS:
        if name in optional:
            if name not in ev:
                raise ValueError("/events/%s missing: the run recorded it" % name)
            if ev[name].dtype != np.int64 or ev[name].shape != (n,):
                raise ValueError("/events/%s must be int64[%d], is %s%s" % (name, n, ev[name].dtype, ev[name].shape))
        elif name in ev:
            raise ValueError("/events/%s present, but the run did not record it (absence is data)" % name)
    if "thread_ids" in optional:
        if "thread_table" not in f:
            raise ValueError("/thread_table missing with thread ids")
        nt = _check_group(f["thread_table"], THREAD_TABLE, "/thread_table")
        _check_group(f["thread_table"], THREAD_TABLE, "/thread_table", nt)
        ids = set(zip(f["thread_table/ranks"][:].tolist(), f["thread_table/index"][:].tolist()))
        if n:
            tid = ev["thread_ids"][:]
            ranks = np.repeat(rri["ranks"][:], rri["event_counts"][:].astype(np.int64))
            order = np.argsort(rri["event_offsets"][:], kind="stable")
            ranks = np.repeat(rri["ranks"][:][order], rri["event_counts"][:][order].astype(np.int64))
            for r, t in set(zip(ranks.tolist(), tid.tolist())):
                if t != -1 and (r, t) not in ids:
                    raise ValueError("thread id %d of rank %d is not in /thread_table" % (t, r))
    elif "thread_table" in f:
        raise ValueError("/thread_table without thread tracking")
    if "task_ids" in optional:
        if "task_table" not in f:
            raise ValueError("/task_table missing with task ids")
        nt = _check_group(f["task_table"], TASK_TABLE, "/task_table")
        _check_group(f["task_table"], TASK_TABLE, "/task_table", nt)
    elif "task_table" in f:
        raise ValueError("/task_table without task tracking")
    return schema, sl, k, n
