"""scope_profiler.load(): regions, statistics, events as numpy arrays and
the call tree, through the C reader; the same file read with h5py agrees."""
import h5py
import numpy as np
import pytest

import scope_profiler as sp


@pytest.fixture
def recorded(h5):
    sp.setup(file_path=h5, label="demo")
    for i in range(10):
        with sp.profile_region("step"):
            for _ in range(i % 3):
                with sp.profile_region("kernel"):
                    sum(range(200))
    sp.finalize(verbose=False)
    return h5


def test_regions_and_statistics(recorded):
    res = sp.load(recorded)
    assert res.label == "demo" and res.num_ranks == 1 and res.ranks == (0,)
    assert set(res.region_names) == {"step", "kernel"}
    step = res["step"]
    assert step.num_calls == 10 and step.ranks == (0,)
    r0 = step[0]
    d = r0.durations_ns
    assert d.dtype == np.int64 and len(d) == 10 and (d > 0).all()
    assert r0.total_duration == pytest.approx(d.sum() / 1e9)
    assert r0.min_duration == pytest.approx(d.min() / 1e9)
    assert r0.max_duration == pytest.approx(d.max() / 1e9)
    assert r0.std_duration == pytest.approx(d.std() / 1e9)
    assert r0.average_duration == pytest.approx(d.mean() / 1e9)
    st = step.stats(percentiles=True)
    assert st["count"] == 10 and "p95_ns" in st
    assert r0.get_summary()["num_calls"] == 10
    assert res["kernel"].num_calls == sum(i % 3 for i in range(10))
    assert (r0.start_times >= 0).all()
    with pytest.raises(KeyError):
        res["nope"]
    assert [r.name for r in res.get_regions(include="st")] == ["step"]
    assert [r.name for r in res.get_regions(exclude=["k"])] == ["step"]


def test_events_match_h5py(recorded):
    res = sp.load(recorded)
    ev = res.event_arrays("kernel")
    assert set(ev) >= {"start_ns", "end_ns", "call_ids", "parent_ids", "thread_ids"}
    assert (ev["end_ns"] >= ev["start_ns"]).all()
    n = res.num_events
    res.close()
    with pytest.raises(sp.StateError):
        res.event_arrays("kernel")
    with h5py.File(recorded, "r") as f:
        assert f["events/durations"].shape[0] == n  # one duration per call, as the reader counts


def test_events_one_dict_per_call(recorded):
    res = sp.load(recorded)
    ev = res.events()
    assert len(ev) == res.num_events == 10 + sum(i % 3 for i in range(10))
    assert set(ev[0]) == {"name", "rank", "call_index", "start", "end", "duration"}
    assert [e["start"] for e in ev] == sorted(e["start"] for e in ev)
    kernel = res.events(include="kernel")
    assert {e["name"] for e in kernel} == {"kernel"}
    assert sorted(e["call_index"] for e in kernel) == list(range(len(kernel)))
    arrays = res.event_arrays("kernel")
    first = min(kernel, key=lambda e: e["call_index"])
    assert first["start"] == pytest.approx((arrays["start_ns"][0] - res.time_origin_ns) / 1e9)
    assert first["duration"] == pytest.approx((arrays["end_ns"][0] - arrays["start_ns"][0]) / 1e9)
    absolute = res.events(include="kernel", relative=False)
    assert absolute[0]["start"] == pytest.approx(kernel[0]["start"] + res.time_origin)
    assert res.events(exclude=["step", "kernel"]) == [] and res.events(ranks=[3]) == []
    assert res["kernel"][0].events() == sorted(kernel, key=lambda e: e["call_index"])


class _FakePandas:
    """Stands in for pandas (not installed here): records what it was given."""

    class DataFrame:
        def __init__(self, data, columns=None):
            self.data, self.columns = data, columns


def test_dataframes(recorded, monkeypatch):
    import sys

    res = sp.load(recorded)
    rows = res.summary_rows()
    assert [r["name"] for r in rows] == ["step", "kernel"]
    step = rows[0]
    assert step["num_calls"] == 10 and step["num_ranks"] == 1
    assert step["total_duration"] == pytest.approx(res["step"].total_duration)
    assert step["std_duration"] == pytest.approx(res["step"][0].std_duration)
    assert step["total_exclusive_duration"] < step["total_duration"]
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="python3-pandas"):
        res.to_dataframe()
    monkeypatch.setitem(sys.modules, "pandas", _FakePandas)
    assert res.to_dataframe().data == rows
    df = res.to_events_dataframe(include="kernel")
    assert df.data == res.events(include="kernel") and df.columns[:3] == ["name", "rank", "call_index"]


def test_run_times(recorded):
    res = sp.load(recorded)
    assert res.run_start_time == pytest.approx(res.run_start_time_ns / 1e9)
    assert res.time_origin == res.run_start_time  # the run's start is recorded
    assert 0.0 <= res.startup_time == pytest.approx(res.minimum_start_time)
    last = max(int(res["step"][0].end_times_ns.max()), int(res["kernel"][0].end_times_ns.max()))
    assert res.maximum_end_time == pytest.approx((last - res.time_origin_ns) / 1e9)
    assert res.time_span == pytest.approx(res.maximum_end_time - res.minimum_start_time)
    assert res.time_span > 0
    again = sp.ProfilingResults.from_h5(recorded)
    assert again.region_names == res.region_names


def test_region_source_and_tags(h5):
    sp.setup(file_path=h5, capture_region_source=True)

    @sp.profile("src_solver")
    def solve(n):
        total = 0
        for i in range(n):
            total += i
        return total

    def body():
        with sp.region("src_step", tags=["outer"]):
            solve(3)
            x = 1
        return x

    body()
    sp.finalize(verbose=False)
    res = sp.load(h5)
    step, solver = res["src_step"], res["src_solver"]
    assert step.tags == ("outer",) and step[0].tags == ("outer",) and solver.tags == ()
    assert step.source_file == __file__ or step.source_file.endswith("test_results.py")  # not the package's own file
    assert step.source_text.splitlines() == [
        '        with sp.region("src_step", tags=["outer"]):', "            solve(3)", "            x = 1"]
    assert step[0].has_source and step[0].source_lineno == step.source_lineno
    assert solver.source_text.splitlines()[:2] == ['    @sp.profile("src_solver")', "    def solve(n):"]
    assert solver.source_text.splitlines()[-1] == "        return total"


def test_call_tree_own_time(recorded):
    res = sp.load(recorded)
    tree = res.call_tree()
    by = {n["name"]: n for n in tree}
    assert by["step"]["parent"] == -1 and tree[by["kernel"]["parent"]]["name"] == "step"
    assert by["step"]["own_ns"] == by["step"]["total_ns"] - by["kernel"]["total_ns"]
    assert by["kernel"]["count"] == res["kernel"].num_calls


def test_finalize_results_equal_file(h5):
    sp.setup(file_path=h5)
    for _ in range(4):
        with sp.profile_region("x"):
            pass
    mem = sp.finalize(verbose=False, return_results=True)
    disk = sp.load(h5)
    assert np.array_equal(mem.event_arrays("x")["start_ns"], disk.event_arrays("x")["start_ns"])
    assert mem.events() == disk.events()
    assert mem.metadata.get("label") == disk.metadata.get("label")


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.h5"):
        sp.load(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"not an hdf5 file at all" * 10)
    with pytest.raises((sp.FormatError, OSError)):
        sp.load(junk)
    with h5py.File(tmp_path / "empty.h5", "w") as f:
        f.create_group("something_else")
    with pytest.raises(sp.FormatError):
        sp.load(tmp_path / "empty.h5")


def test_await_times_per_call(h5):
    # track_async: each call's await time is the time its task was switched
    # out while it was open; the reader gives it per call (upstream's
    # Region.await_times), equal to events/await_ns read with h5py.
    import asyncio

    pm = sp.ProfileManager()
    pm.setup(file_path=h5, track_async=True)

    # Each job waits for an event that a third task sets 20 ms after its own
    # first step, which the loop runs after both jobs' first steps (gather
    # makes the tasks in order; their first steps run in that order), so each
    # job is already switched out when that 20 ms starts. A job sleeping
    # itself could be preempted between arming its timer and switching out,
    # and its await time then honestly falls short (once: 0.15 ms at load 16).
    async def job(ev):
        with pm.profile_region("waits"):
            await ev.wait()
        with pm.profile_region("runs"):
            sum(range(100))

    async def setter(evs):
        await asyncio.sleep(0.02)
        for ev in evs:
            ev.set()

    async def main():
        evs = [asyncio.Event(), asyncio.Event()]
        await asyncio.gather(job(evs[0]), job(evs[1]), setter(evs))

    try:
        asyncio.run(main())
    finally:
        pm.finalize(verbose=False)
        pm.setup(file_path=h5 + ".unused", deactivate_file_output=True, replace=True)  # removes the run's hooks
    with h5py.File(h5, "r") as f:
        stored = sorted(f["events/await_ns"][()].tolist())
    res = sp.load(h5)
    waits, runs = res["waits"][0], res["runs"][0]
    assert waits.await_times_ns.dtype == np.int64 and len(waits.await_times_ns) == 2
    assert (waits.await_times_ns >= 15_000_000).all()  # switched out for 20 ms at least
    assert (waits.await_times_ns <= waits.durations_ns).all()
    assert (runs.await_times_ns == 0).all()  # never switched out while open
    assert waits.await_times == pytest.approx(waits.await_times_ns / 1e9)
    assert (waits.task_ids >= 0).all() and len(set(waits.task_ids.tolist())) == 2
    got = sorted(x for name in res.region_names for x in res[name][0].await_times_ns.tolist())
    assert got == stored
    # the JSON profile carries await_ns (upstream's column) and reads back the same
    js = h5 + ".json"
    with open(js, "wb") as f:
        f.write(res._r.json_profile())
    back = sp.read_json(js)
    assert back["waits"][0].await_times_ns.tolist() == waits.await_times_ns.tolist()
    res.close()
    # a file without track_async has none: -1 exact, 0.0 s upstream-style
    pm.finalize(verbose=False)
    pm.setup(file_path=h5, replace=True)
    with pm.profile_region("plain"):
        pass
    pm.finalize(verbose=False)
    plain = sp.load(h5)["plain"][0]
    assert plain.await_times_ns.tolist() == [-1] and plain.await_times.tolist() == [0.0]
    assert plain.task_ids.tolist() == [-1]


def test_read_json_and_merge_results(tmp_path):
    paths = []
    for rank, calls in ((0, 3), (1, 5)):
        path = str(tmp_path / f"run{rank}.h5")
        pm = sp.ProfileManager()
        pm.setup(file_path=path, label=f"part{rank}")
        for _ in range(calls):
            with pm.profile_region("solve"):
                pass
        with pm.profile_region(f"only{rank}"):
            pass
        pm.finalize(verbose=False)
        paths.append(path)
    with pytest.raises(sp.FormatError, match="not a JSON profile"):
        sp.read_json(paths[0])
    a, b = sp.load(paths[0]), sp.load(paths[1])
    merged = sp.merge_results(a, b, label="both")
    # both runs wrote rank 0: their calls are concatenated, in the inputs' order
    assert merged.label == "both"
    assert merged["solve"].num_calls == 8
    solve = merged["solve"][0].durations_ns.tolist()
    assert solve == a["solve"][0].durations_ns.tolist() + b["solve"][0].durations_ns.tolist()
    assert merged["only0"].num_calls == 1 and merged["only1"].num_calls == 1
    assert merged["solve"].total_duration == pytest.approx(a["solve"].total_duration + b["solve"].total_duration)
    # from paths and from a list, the same
    again = sp.merge_results([paths[0], paths[1]])
    assert again["solve"].num_calls == 8
    with pytest.raises(ValueError):
        sp.merge_results()


def test_print_summary_columns_and_call_stack_walk(recorded, capsys):
    res = sp.load(recorded)
    res.print_summary(columns=["num_calls", "std_duration"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["region", "calls", "std", "[s]"]
    assert {line.split()[0] for line in out[1:]} == {"step", "kernel"}
    with pytest.raises(ValueError, match="unknown column"):
        res.print_summary(columns=["nope"])
    cs = res.call_stack()
    roots = res.call_stack_roots()
    assert [cs["names"][i] for i in roots] == ["step"] * 10
    kids = [k for r in roots for k in res.call_stack_children(r)]
    assert sorted(kids) == sorted(i for i, p in enumerate(cs["parent"].tolist()) if p >= 0)
    assert all(cs["names"][k] == "kernel" for k in kids)
    with pytest.raises(IndexError):
        res.call_stack_children(len(cs["parent"]))
    assert res["step"].color is None
