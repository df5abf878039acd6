"""Reading profiles back: ``scope_profiler.load(path)`` and the results of
``finalize(return_results=True)``, both over the C reader.

:class:`ProfilingResults` is upstream's analysis type: regions by name
(:class:`MPIRegion`, one :class:`Region` per rank), per-region statistics
computed by the reader, events as numpy int64 arrays (nanoseconds on the
run's clock), the call stack of a rank and the call-path tree. Durations
and statistics in seconds, as upstream's newer releases; the ``*_ns``
forms are exact integers.
"""

from __future__ import annotations

import errno
import json
import os
import re

from . import _core

try:
    import numpy as np
except ImportError:  # recording needs no numpy; reading events does (python3-numpy)
    np = None


def _numpy():
    if np is None:
        raise ImportError("reading events needs numpy (Debian: apt-get install python3-numpy)")
    return np


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("DataFrames need pandas (Debian: apt-get install python3-pandas); "
                          "summary_rows() and events() give the same data as dicts") from None
    return pandas


def _i64(b: bytes):
    return _numpy().frombuffer(b, dtype=_numpy().int64)


def _patterns(p):
    if p is None:
        return None
    if isinstance(p, str):
        p = [p]
    return [re.compile(x) for x in p]


class Region:
    """One region's calls on one rank."""

    def __init__(self, results: "ProfilingResults", index: int, rank: int):
        self._res = results
        self._index = index
        self.rank = rank
        self._events = None
        self._stats = None

    def _ev(self):
        if self._events is None:
            self._events = {k: _i64(v) for k, v in self._res._r.events(self._index, self.rank).items()}
        return self._events

    def _st(self):
        if self._stats is None:
            self._stats = self._res._r.region_stats(self._index, rank=self.rank, own=True)
        return self._stats

    @property
    def name(self) -> str:
        return self._res._names[self._index]

    @property
    def start_times_ns(self) :
        return self._ev()["start_ns"]

    @property
    def end_times_ns(self) :
        return self._ev()["end_ns"]

    @property
    def durations_ns(self) :
        return self.end_times_ns - self.start_times_ns

    @property
    def start_times(self) :
        """Start times in seconds from the results' time origin."""
        return (self.start_times_ns - self._res.time_origin_ns) / 1e9

    @property
    def end_times(self) :
        return (self.end_times_ns - self._res.time_origin_ns) / 1e9

    @property
    def durations(self) :
        return self.durations_ns / 1e9

    @property
    def call_ids(self) :
        return self._ev()["call_ids"]

    @property
    def parent_ids(self) :
        return self._ev()["parent_ids"]

    @property
    def thread_ids(self) :
        return self._ev()["thread_ids"]

    @property
    def threads(self) -> tuple:
        t = self.thread_ids
        return tuple(int(x) for x in _numpy().unique(t[t >= 0]))

    def _tasks(self):
        if not hasattr(self, "_tasks_cache"):
            self._tasks_cache = self._res._r.tasks(self._index, self.rank)
        return self._tasks_cache

    @property
    def task_ids(self):
        """The task (track_async) each call ran in, numpy int64 in the calls'
        order; -1 outside any task and for files without tasks."""
        t = self._tasks()
        return _i64(t[0]) if t is not None else _numpy().full(self.num_events, -1, _numpy().int64)

    @property
    def await_times_ns(self):
        """Per call, how long its task was switched out while the call was open
        (ns, numpy int64, the calls' order; events/await_ns of track_async);
        -1 where the file does not record it."""
        t = self._tasks()
        return _i64(t[1]) if t is not None else _numpy().full(self.num_events, -1, _numpy().int64)

    @property
    def await_times(self):
        """await_times_ns in seconds, upstream's per-call field; 0.0 where the
        file does not record it (upstream's value for a call outside a task)."""
        ns = self.await_times_ns
        return _numpy().where(ns >= 0, ns / 1e9, 0.0)

    @property
    def num_events(self) -> int:
        """Calls stored with their times (0 in an aggregation-mode file)."""
        return len(self.start_times_ns)

    def for_thread(self, i: int) -> dict:
        """This region's calls made on thread i: start_ns/end_ns arrays."""
        keep = self.thread_ids == i
        return {"start_ns": self.start_times_ns[keep], "end_ns": self.end_times_ns[keep]}

    @property
    def num_calls(self) -> int:
        return int(self._st()["count"])

    @property
    def first_start_time(self) -> float:
        return (self._st()["first_start_ns"] - self._res.time_origin_ns) / 1e9 if self.num_calls else 0.0

    @property
    def total_duration(self) -> float:
        return self._st()["total_ns"] / 1e9

    @property
    def average_duration(self) -> float:
        return self._st()["mean_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def min_duration(self) -> float:
        return self._st()["min_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def max_duration(self) -> float:
        return self._st()["max_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def std_duration(self) -> float:
        return self._st()["std_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def total_exclusive_duration(self) -> float:
        return self._st().get("own_ns", 0) / 1e9

    exclusive_duration = total_exclusive_duration

    def _gpu(self):
        if not hasattr(self, "_gpu_cache"):
            self._gpu_cache = self._res._r.gpu(self._index, self.rank)
        return self._gpu_cache

    @property
    def gpu_durations_ns(self):
        """Device time of each call (ns, numpy int64, the calls' order; -1
        where a call has none), or None when the file records no device time."""
        g = self._gpu()
        return _i64(g[0]) if g is not None else None

    @property
    def gpu_durations(self):
        """gpu_durations_ns in seconds (NaN where a call has none), or None."""
        ns = self.gpu_durations_ns
        if ns is None:
            return None
        return _numpy().where(ns >= 0, ns / 1e9, _numpy().nan)

    @property
    def gpu_num_calls(self) -> int:
        """Calls with a device time."""
        g = self._gpu()
        return int(g[1]) if g is not None else 0

    @property
    def gpu_total_duration(self) -> float:
        """Their device time summed (s); 0.0 without GPU timing."""
        g = self._gpu()
        return g[2] / 1e9 if g is not None else 0.0

    @property
    def _defined(self) -> "MPIRegion":
        return self._res.get_region(self.name)

    @property
    def tags(self) -> tuple:
        return self._defined.tags

    @property
    def source_file(self):
        return self._defined.source_file

    @property
    def source_lineno(self):
        return self._defined.source_lineno

    @property
    def source_text(self):
        return self._defined.source_text

    @property
    def has_source(self) -> bool:
        return self._defined.has_source

    def events(self, relative: bool = True, origin: int | None = None) -> list:
        """This region's calls on this rank, one dict each (name, rank,
        call_index, start, end, duration; seconds), as ProfilingResults.events."""
        return self._res._call_dicts(self, self._res._origin(relative, origin))

    def get_summary(self) -> dict:
        return {
            "num_calls": self.num_calls,
            "total_duration": self.total_duration,
            "average_duration": self.average_duration,
            "min_duration": self.min_duration,
            "max_duration": self.max_duration,
            "std_duration": self.std_duration,
        }

    def __repr__(self):
        return f"<Region {self.name!r} rank {self.rank}: {self.num_calls} calls, {self.total_duration:.6f} s>"


class MPIRegion:
    """One region over every rank that recorded it."""

    def __init__(self, results: "ProfilingResults", index: int):
        self._res = results
        self._index = index
        info = results._r.region_info(index)
        self.name = info["name"]
        self.source_file = info["source_file"] or None
        self.source_lineno = info["source_lineno"] if info["source_lineno"] >= 0 else None
        self.source_text = info["source_text"] or None
        self.tags = tuple(json.loads(info["tags"] or "[]"))
        self.regions = {rank: Region(results, index, rank) for rank in results.ranks}
        self._stats = None
        self.color = None  # upstream's plotting code sets it

    @property
    def has_source(self) -> bool:
        return self.source_text is not None

    @property
    def ranks(self) -> tuple:
        return tuple(r for r, reg in self.regions.items() if reg.num_calls)

    def __getitem__(self, rank: int) -> Region:
        return self.regions[rank]

    def stats(self, percentiles: bool = False) -> dict:
        """The reader's statistics over every rank, in ns (count, total_ns,
        mean_ns, std_ns, min_ns, max_ns, imbalance, own_ns, p50/p95/p99)."""
        return self._res._r.region_stats(self._index, percentiles=percentiles, own=True)

    def _all(self):
        if self._stats is None:
            self._stats = self.stats()
        return self._stats

    @property
    def num_calls(self) -> int:
        return int(self._all()["count"])

    @property
    def total_duration(self) -> float:
        return self._all()["total_ns"] / 1e9

    @property
    def average_duration(self) -> float:
        return self._all()["mean_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def min_duration(self) -> float:
        return self._all()["min_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def max_duration(self) -> float:
        return self._all()["max_ns"] / 1e9 if self.num_calls else 0.0

    @property
    def first_start_time(self) -> float:
        return (self._all()["first_start_ns"] - self._res.time_origin_ns) / 1e9 if self.num_calls else 0.0

    @property
    def gpu_num_calls(self) -> int:
        """Calls with a device time, over every rank."""
        g = self._res._r.gpu(self._index, -1)
        return int(g[1]) if g is not None else 0

    @property
    def gpu_total_duration(self) -> float:
        """Device time summed over every rank (s); 0.0 without GPU timing."""
        g = self._res._r.gpu(self._index, -1)
        return g[2] / 1e9 if g is not None else 0.0

    def num_calls_per_rank(self) -> dict:
        return {r: reg.num_calls for r, reg in self.regions.items()}

    def average_durations(self) -> dict:
        return {r: reg.average_duration for r, reg in self.regions.items()}

    def min_durations(self) -> dict:
        return {r: reg.min_duration for r, reg in self.regions.items()}

    def max_durations(self) -> dict:
        return {r: reg.max_duration for r, reg in self.regions.items()}

    def __repr__(self):
        return f"<MPIRegion {self.name!r}: {self.num_calls} calls on {len(self.ranks)} rank(s)>"


class ProfilingResults:
    """A profile: regions, statistics, events and call trees."""

    def __init__(self, core_results):
        self._core = core_results
        self._info = core_results.info()
        self._names = core_results.region_names()
        self.ranks = tuple(core_results.ranks())
        self._regions = {}
        self._metadata = None

    @property
    def _r(self):
        if self._core is None:
            raise _core.StateError("these results were closed")
        return self._core

    def close(self) -> None:
        """Release the reader (and the file it holds open) now."""
        self._core = None
        self._regions.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- what the file is ---------------------------------------------------------

    @property
    def file_path(self):
        return self._info["path"]

    @property
    def schema(self) -> int:
        return self._info["schema"]

    @property
    def num_ranks(self) -> int:
        return len(self.ranks)

    @property
    def is_root(self) -> bool:
        return True

    @property
    def region_names(self) -> list:
        return list(self._names)

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = self._r.metadata()
        return dict(self._metadata)

    @property
    def label(self):
        return self._info["label"]

    @property
    def display_label(self):
        return self._info["display_label"]

    @property
    def num_events(self) -> int:
        return self._info["num_events"]

    @property
    def run_start_time_ns(self):
        v = self.metadata.get("start_time_ns")
        return int(v) if v is not None else None

    @property
    def time_origin_ns(self) -> int:
        """The run's start when recorded, else the first region entry."""
        start = self.run_start_time_ns
        return start if start is not None else self._r.min_start()

    @property
    def minimum_start_time(self) -> float:
        return (self._r.min_start() - self.time_origin_ns) / 1e9

    @property
    def maximum_end_time(self) -> float:
        """The last call's end (s from the time origin); 0.0 without calls."""
        ends = [r._all()["last_end_ns"] for r in map(self.get_region, self._names) if r.num_calls]
        return (max(ends) - self.time_origin_ns) / 1e9 if ends else 0.0

    @property
    def time_span(self) -> float:
        """From the first call's start to the last call's end (s)."""
        return self.maximum_end_time - self.minimum_start_time if self.num_events else 0.0

    @property
    def run_start_time(self):
        """The run's start (s, on the run's clock), or None when the file does not record it."""
        ns = self.run_start_time_ns
        return ns / 1e9 if ns is not None else None

    @property
    def time_origin(self) -> float:
        """What times are relative to (s, on the run's clock): the run's start
        when recorded, else the first region entry."""
        return self.time_origin_ns / 1e9

    @property
    def startup_time(self) -> float:
        """From setup to the first region entry (s); 0.0 when unknown."""
        ns = self.run_start_time_ns
        return max(0, self._r.min_start() - ns) / 1e9 if ns is not None and self.num_events else 0.0

    @classmethod
    def from_h5(cls, path) -> "ProfilingResults":
        """The same as ``scope_profiler.load(path)``."""
        return load(path)

    # ---- regions ----------------------------------------------------------------------

    def get_region(self, name: str) -> MPIRegion:
        try:
            index = self._names.index(name)
        except ValueError:
            raise KeyError(f"no region {name!r} in this profile") from None
        if index not in self._regions:
            self._regions[index] = MPIRegion(self, index)
        return self._regions[index]

    __getitem__ = get_region

    def __contains__(self, name) -> bool:
        return name in self._names

    def get_regions(self, include=None, exclude=None) -> list:
        """Regions whose name matches an include regex (re.match) and no exclude
        one, sorted by their first start."""
        inc, exc = _patterns(include), _patterns(exclude)
        out = []
        for name in self._names:
            if inc and not any(p.match(name) for p in inc):
                continue
            if exc and any(p.match(name) for p in exc):
                continue
            out.append(self.get_region(name))
        return sorted(out, key=lambda r: r.first_start_time)

    def _origin(self, relative: bool, origin) -> int:
        if origin is not None:
            return int(origin)
        return self.time_origin_ns if relative else 0

    def _call_dicts(self, region: Region, origin_ns: int) -> list:
        name, rank = region.name, region.rank
        starts, ends = region.start_times_ns.tolist(), region.end_times_ns.tolist()
        return [{"name": name, "rank": rank, "call_index": i, "start": (s - origin_ns) / 1e9,
                 "end": (e - origin_ns) / 1e9, "duration": (e - s) / 1e9}
                for i, (s, e) in enumerate(zip(starts, ends))]

    def events(self, include=None, exclude=None, ranks=None, relative: bool = True, origin: int | None = None) -> list:
        """Every call, one dict each: name, rank, call_index (the call's index
        among its region's calls on that rank), start, end, duration (s),
        ordered by start. ``include``/``exclude``: region name regexes (as
        get_regions); ``ranks``: the ranks to take (default: all);
        ``relative``: times from the time origin (else on the run's clock);
        ``origin``: another origin, in ns on the run's clock. Empty for an
        aggregation-mode run (it keeps no events)."""
        wanted = None if ranks is None else {int(r) for r in ([ranks] if isinstance(ranks, int) else ranks)}
        origin_ns = self._origin(relative, origin)
        out = []
        for reg in self.get_regions(include, exclude):
            for rank, region in reg.regions.items():
                if wanted is None or rank in wanted:
                    out.extend(self._call_dicts(region, origin_ns))
        out.sort(key=lambda d: (d["start"], d["rank"]))
        return out

    def event_arrays(self, name: str, rank: int | None = None) -> dict:
        """Events of one region on one rank (default: the first) as numpy int64
        arrays: start_ns, end_ns, call_ids, parent_ids, thread_ids."""
        r = self.get_region(name)
        rank = self.ranks[0] if rank is None else rank
        ev = r.regions[rank]._ev() if rank in r.regions else \
            {k: _i64(v) for k, v in self._r.events(r._index, rank).items()}
        return dict(ev)

    def call_stack(self, rank: int | None = None, include=None, exclude=None) -> dict:
        """Every call of a rank, nested: numpy columns start_ns, end_ns, parent
        (index, -1 for a root), thread, task, region (index into region_names),
        depth, plus "names" (region name per call) and "overlaps"."""
        rank = self.ranks[0] if rank is None and self.ranks else (rank or 0)
        d = self._r.call_stack(rank, include, exclude)
        out = {k: _i64(d[k]) for k in ("start_ns", "end_ns", "parent", "thread", "task")}
        out["region"] = _numpy().frombuffer(d["region"], dtype=_numpy().uint32)
        out["depth"] = _numpy().frombuffer(d["depth"], dtype=_numpy().uint32)
        out["names"] = [self._names[i] for i in out["region"]]
        out["overlaps"] = d["overlaps"]
        return out

    def call_tree(self, ranks: str | None = None, include=None, exclude=None) -> list:
        """The call-path tree merged over ranks: one dict per node (parents
        first) with name, region, parent (node index, -1 for a root), count,
        total_ns, own_ns."""
        nodes = self._r.call_tree(ranks, include, exclude)
        return [{"name": self._names[reg], "region": reg, "parent": parent, "count": count, "total_ns": total,
                 "own_ns": total - children} for reg, parent, count, total, children in nodes]

    @property
    def threads(self) -> tuple:
        """The thread table, one dict per thread, with upstream's fields:
        index (the events' thread id), name, ident, native_id, daemon,
        start_time, end_time (None while alive), wall_time (None while
        alive), cpu_time (None when unknown), alive; times in seconds from
        the rank's start. Also rank, omp_thread (-1 outside OpenMP) and the
        exact start_ns, end_ns, cpu_ns (-1 unknown). Empty when threads were
        not recorded."""
        out = []
        for t in self._r.thread_table():
            alive = t["end_ns"] == -1
            out.append({**t, "start_time": t["start_ns"] / 1e9, "end_time": None if alive else t["end_ns"] / 1e9,
                        "wall_time": None if alive else (t["end_ns"] - t["start_ns"]) / 1e9,
                        "cpu_time": t["cpu_ns"] / 1e9 if t["cpu_ns"] != -1 else None, "alive": alive})
        return tuple(out)

    @property
    def tasks(self) -> tuple:
        """The task table (track_async), one dict per task, with upstream's
        fields: index (the events' task id), kind ("task"), name, coro_name (the
        coroutine's qualname),
        thread_index (the thread that last ran it), steps, running_time,
        awaiting_time, created_time, done_time (None when not finished); times
        in seconds, from the rank's start. Also rank, switch_id and the exact
        created_ns, done_ns (-1), running_ns, suspended_ns."""
        out = []
        for t in self._r.task_table():
            out.append({**t, "running_time": t["running_ns"] / 1e9, "awaiting_time": t["suspended_ns"] / 1e9,
                        "created_time": t["created_ns"] / 1e9 if t["created_ns"] != -1 else None,
                        "done_time": t["done_ns"] / 1e9 if t["done_ns"] != -1 else None})
        return tuple(out)

    def thread_summary(self, rank: int | None = None) -> list:
        """Per thread of a rank: name, num_calls, region_time (s, top-level
        calls of the thread), cpu_time (s, None when unknown)."""
        rank = self.ranks[0] if rank is None and self.ranks else (rank or 0)
        cs = self.call_stack(rank)
        out = []
        for t in self.threads:
            if t["rank"] != rank:
                continue
            mine = cs["thread"] == t["index"]
            top = mine & (cs["parent"] < 0)
            out.append({"index": t["index"], "name": t["name"], "num_calls": int(mine.sum()),
                        "region_time": float((cs["end_ns"][top] - cs["start_ns"][top]).sum()) / 1e9,
                        "cpu_time": t["cpu_ns"] / 1e9 if t["cpu_ns"] >= 0 else None})
        return out

    def summary_rows(self, include=None, exclude=None) -> list:
        """One dict per region (sorted by first start): name, num_calls,
        num_ranks, total_duration, average_duration, min_duration,
        max_duration, std_duration, total_exclusive_duration (s)."""
        out = []
        for r in self.get_regions(include, exclude):
            st = r._all()
            n = int(st["count"])
            out.append({"name": r.name, "num_calls": n, "num_ranks": len(r.ranks),
                        "total_duration": st["total_ns"] / 1e9,
                        "average_duration": st["mean_ns"] / 1e9 if n else 0.0,
                        "min_duration": st["min_ns"] / 1e9 if n else 0.0,
                        "max_duration": st["max_ns"] / 1e9 if n else 0.0,
                        "std_duration": st["std_ns"] / 1e9 if n else 0.0,
                        "total_exclusive_duration": st.get("own_ns", 0) / 1e9})
        return out

    def to_dataframe(self, include=None, exclude=None):
        """summary_rows() as a pandas DataFrame (needs pandas)."""
        return _pandas().DataFrame(self.summary_rows(include, exclude))

    def to_events_dataframe(self, include=None, exclude=None, ranks=None, relative: bool = True, origin=None):
        """events() as a pandas DataFrame, one row per call (needs pandas)."""
        columns = ["name", "rank", "call_index", "start", "end", "duration"]
        return _pandas().DataFrame(self.events(include, exclude, ranks, relative, origin), columns=columns)

    _SUMMARY_COLUMNS = {
        "num_calls": ("calls", "{:>10}", 10), "num_ranks": ("ranks", "{:>6}", 6),
        "total_duration": ("total [s]", "{:>12.6f}", 12), "average_duration": ("avg [s]", "{:>12.9f}", 12),
        "min_duration": ("min [s]", "{:>12.9f}", 12), "max_duration": ("max [s]", "{:>12.9f}", 12),
        "std_duration": ("std [s]", "{:>12.9f}", 12), "total_exclusive_duration": ("own [s]", "{:>12.6f}", 12),
    }

    def print_summary(self, columns=None, file=None, include=None, exclude=None) -> None:
        """Print one line per region (sorted by first start). ``columns``: the
        summary_rows() fields to show, in order (default num_calls,
        total_duration, average_duration); unknown names raise ValueError
        listing the known ones."""
        import sys

        cols = list(columns) if columns is not None else ["num_calls", "total_duration", "average_duration"]
        if isinstance(columns, str):
            cols = [columns]
        bad = [c for c in cols if c not in self._SUMMARY_COLUMNS]
        if bad:
            raise ValueError(f"print_summary: unknown column(s) {', '.join(map(repr, bad))}; "
                             f"known: {', '.join(self._SUMMARY_COLUMNS)}")
        out = file or sys.stdout
        rows = self.summary_rows(include, exclude)
        width = max([32] + [len(r["name"]) for r in rows])
        out.write(f"{'region':<{width}}" + "".join(
            " " + f"{self._SUMMARY_COLUMNS[c][0]:>{self._SUMMARY_COLUMNS[c][2]}}" for c in cols) + "\n")
        for r in rows:
            out.write(f"{r['name']:<{width}}" + "".join(
                " " + self._SUMMARY_COLUMNS[c][1].format(r[c]) for c in cols) + "\n")

    # ---- the call stack as a tree ------------------------------------------------------

    def call_stack_roots(self, rank: int | None = None) -> list:
        """Indices (into call_stack(rank)) of the calls that have no parent."""
        cs = self.call_stack(rank)
        return _numpy().flatnonzero(cs["parent"] < 0).tolist()

    def call_stack_children(self, index: int, rank: int | None = None) -> list:
        """Indices (into call_stack(rank)) of the direct children of call `index`."""
        cs = self.call_stack(rank)
        if not 0 <= index < len(cs["parent"]):
            raise IndexError(f"call_stack_children: no call {index} on this rank ({len(cs['parent'])} calls)")
        return _numpy().flatnonzero(cs["parent"] == index).tolist()

    def __repr__(self):
        return f"<ProfilingResults {self.display_label!r}: {len(self._names)} regions, {self.num_ranks} rank(s)>"


def read_json(path: str | os.PathLike) -> ProfilingResults:
    """Open a JSON profile (upstream's JSON v1, plain or .gz; what
    ``scope-profiler export json`` writes) through the C reader; a file that
    is not one raises FormatError."""
    res = load(path)
    if res._info.get("format") != "json":
        res.close()
        raise _core.FormatError(f"{os.fspath(path)}: not a JSON profile (it is {res._info.get('format')}); "
                                "open it with scope_profiler.load()")
    return res


_TIMELINE = ("start_times_ns", "end_times_ns", "gpu_durations_ns", "call_ids", "parent_ids", "thread_ids",
             "task_ids", "await_ns")


def merge_results(*results, label: str | None = None) -> ProfilingResults:
    """Combine runs into one ProfilingResults, regions merged by name (e.g.
    the per-rank files of launcher-started ranks, or repeated runs). Each
    input goes through the C reader's JSON profile; the merged document is
    read back by the C reader, so every statistic, tree and export works on
    it. A region's calls on a rank that several inputs share are
    concatenated in the inputs' order; columns one of them lacks read as -1
    there, and their call ids are dropped (ids of different runs collide).
    Thread and task tables are kept for ranks only one input has. Inputs may
    be ProfilingResults or paths; a list works too. Aggregation-mode inputs
    that share a (region, rank) cannot be merged exactly: ValueError."""
    import gzip
    import tempfile
    import warnings

    if len(results) == 1 and isinstance(results[0], (list, tuple)):
        results = tuple(results[0])
    if not results:
        raise ValueError("merge_results: give at least one ProfilingResults or path")
    docs, opened = [], []
    try:
        for r in results:
            if not isinstance(r, ProfilingResults):
                r = load(r)
                opened.append(r)
            docs.append(json.loads(r._r.json_profile()))
    finally:
        for r in opened:
            r.close()
    merged = dict(docs[0])
    merged["metadata"] = dict(docs[0].get("metadata", {}))
    if label is not None:
        merged["metadata"]["label"] = label
    rows, where = [], {}
    rank_owner = {}
    for k, d in enumerate(docs):
        for row in d.get("regions", []):
            rank_owner.setdefault(str(row["rank"]), set()).add(k)
    for k, d in enumerate(docs):
        for row in d.get("regions", []):
            key = (row["name"], row["rank"])
            if key not in where:
                where[key] = len(rows)
                rows.append(dict(row))
                continue
            into = rows[where[key]]
            if "aggregate" in into or "aggregate" in row:
                raise ValueError(f"merge_results: region {row['name']!r} on rank {row['rank']} is in "
                                 "several aggregation-mode inputs; their summaries cannot be merged exactly")
            n0, n1 = len(into.get("start_times_ns", [])), len(row.get("start_times_ns", []))
            for c in _TIMELINE:
                if c in into or c in row:
                    into[c] = list(into.get(c, [-1] * n0)) + list(row.get(c, [-1] * n1))
            into.pop("call_ids", None), into.pop("parent_ids", None)
            into.pop("exclusive_total_ns", None)
    shared = {rank for rank, owners in rank_owner.items() if len(owners) > 1}
    for key in ("threads", "tasks"):
        lanes = {}
        for d in docs:
            for rank, table in (d.get(key) or {}).items():
                if rank not in shared:
                    lanes[rank] = table
        if lanes:
            merged[key] = lanes
        else:
            merged.pop(key, None)
    if shared and any(d.get("threads") or d.get("tasks") for d in docs):
        warnings.warn(f"merge_results: rank(s) {', '.join(sorted(shared, key=int))} come from several inputs; "
                      "their thread and task tables are left out", stacklevel=2)
    merged["regions"] = rows
    merged["num_ranks"] = len(rank_owner)
    with tempfile.NamedTemporaryFile(suffix=".json.gz", delete=False) as tmp:
        path = tmp.name
    try:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            json.dump(merged, f)
        return load(path)  # a JSON profile is read whole: the file can go
    finally:
        os.unlink(path)


def load(path: str | os.PathLike) -> ProfilingResults:
    """Open a profile (ours, schema 2/3, or upstream's layouts) through the C reader."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "no such profile", path)
    return ProfilingResults(_core.open(os.fspath(path)))


read_h5 = load
