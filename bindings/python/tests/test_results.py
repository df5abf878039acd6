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
    ev = res.events("kernel")
    assert set(ev) >= {"start_ns", "end_ns", "call_ids", "parent_ids", "thread_ids"}
    assert (ev["end_ns"] >= ev["start_ns"]).all()
    n = res.num_events
    res.close()
    with pytest.raises(sp.StateError):
        res.events("kernel")
    with h5py.File(recorded, "r") as f:
        assert f["events/durations"].shape[0] == n  # one duration per call, as the reader counts


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
    assert np.array_equal(mem.events("x")["start_ns"], disk.events("x")["start_ns"])
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
