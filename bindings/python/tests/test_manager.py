"""ProfileManager: regions, decorators, sessions, independent managers,
finalize and the file it writes (read back with h5py and our reader)."""
import os
import warnings

import h5py
import pytest

import scope_profiler as sp
from scope_profiler import ProfileManager


def test_profile_region_is_one_object_per_name(h5):
    sp.setup(file_path=h5)
    a = sp.profile_region("a")
    assert sp.profile_region("a") is a
    assert ProfileManager.profile_region("a") is a
    assert sp.profile_region(region_name="a") is a
    for _ in range(7):
        with a:
            pass
    assert a.num_calls == 7
    res = sp.finalize(verbose=False, return_results=True)
    assert res["a"].num_calls == 7
    with h5py.File(h5, "r") as f:
        assert "metadata" in f


def test_region_tags_fixed_at_creation(h5):
    r = sp.region("solve", tags=["solver", "expensive"])
    assert r.tags == ("solver", "expensive")
    assert sp.region("solve") is r
    with pytest.raises(ValueError, match="tags"):
        sp.region("solve", tags=["other"])
    with pytest.raises(TypeError):
        sp.region("s2", tags="solver")


def test_decorator_forms_and_lazy_setup(h5):
    pm = ProfileManager()  # never set up yet

    @pm.profile
    def bare(x):
        return x * 2

    @pm.profile("named")
    def called(x, *, y=1):
        return x + y

    class K:
        @pm.profile("method")
        def m(self, v):
            return (self, v)

    assert bare.__name__ == "bare" and bare.__wrapped__ is not None
    k = K()
    assert bare(2) == 4  # before setup: runs, records nothing
    pm.setup(file_path=h5)
    for i in range(3):
        assert bare(i) == 2 * i
        assert called(i, y=2) == i + 2
        assert k.m(i) == (k, i)
    res = pm.finalize(verbose=False, return_results=True)
    assert res["bare"].num_calls == 3
    assert res["named"].num_calls == 3
    assert res["method"].num_calls == 3


def test_exceptions_close_the_call(h5):
    @sp.profile
    def boom():
        raise KeyError("x")

    sp.setup(file_path=h5)
    for _ in range(2):
        with pytest.raises(KeyError):
            boom()
    with pytest.raises(ZeroDivisionError):
        with sp.profile_region("div"):
            1 / 0
    res = sp.finalize(verbose=False, return_results=True)
    assert res["boom"].num_calls == 2 and res["div"].num_calls == 1
    assert sp.ProfileManager.problems()["open_at_finalize"] == 0


def test_nesting_and_call_stack(h5):
    sp.setup(file_path=h5)
    with sp.profile_region("outer"):
        for _ in range(3):
            with sp.profile_region("inner"):
                pass
    res = sp.finalize(verbose=False, return_results=True)
    cs = res.call_stack()
    assert cs["names"] == ["outer", "inner", "inner", "inner"]
    assert list(cs["parent"]) == [-1, 0, 0, 0]
    assert list(cs["depth"]) == [0, 1, 1, 1]
    tree = res.call_tree()
    assert [(n["name"], n["parent"], n["count"]) for n in tree] == [("outer", -1, 1), ("inner", 0, 3)]


def test_session_root_region_and_results(h5):
    with sp.session(file_path=h5, return_results=True) as run:
        with sp.profile_region("work"):
            pass
        assert sp.is_active()
    res = run.results
    cs = res.call_stack()
    assert cs["names"][0] == sp.SESSION_REGION
    assert cs["parent"][cs["names"].index("work")] == 0
    assert os.path.exists(h5)


def test_session_finalizes_when_the_body_raises(h5):
    with pytest.raises(RuntimeError):
        with sp.session(file_path=h5):
            with sp.profile_region("w"):
                raise RuntimeError("stop")
    assert sp.load(h5)["w"].num_calls == 1


def test_session_as_decorator(tmp_path):
    out = str(tmp_path / "deco.h5")

    @sp.session(file_path=out)
    def main(n):
        for _ in range(n):
            with sp.profile_region("step"):
                pass
        return n

    assert main(4) == 4
    assert sp.load(out)["step"].num_calls == 4
    assert main(2) == 2  # a second session is a fresh run
    assert sp.load(out)["step"].num_calls == 2


def test_run_shortcut(tmp_path):
    out = str(tmp_path / "r.h5")

    def main():
        with sp.profile_region("x"):
            return 5

    value, res = sp.run(main, output=out)
    assert value == 5 and res["x"].num_calls == 1 and os.path.exists(out)


def test_second_setup_needs_replace(h5):
    sp.setup(file_path=h5)
    with pytest.raises(sp.StateError):
        sp.setup(file_path=h5)
    sp.setup(file_path=h5, replace=True)
    sp.finalize(verbose=False)


def test_independent_managers_write_their_own_files(tmp_path):
    a, b = ProfileManager(), ProfileManager()
    a.setup(file_path=str(tmp_path / "a.h5"))
    b.setup(file_path=str(tmp_path / "b.h5"))
    assert a.profile_region("x") is not b.profile_region("x")
    for _ in range(2):
        with a.profile_region("x"):
            with b.profile_region("y"):
                pass
    with b.profile_region("x"):
        pass
    ra = a.finalize(verbose=False, return_results=True)
    rb = b.finalize(verbose=False, return_results=True)
    assert ra.region_names == ["x"] and ra["x"].num_calls == 2
    assert set(rb.region_names) == {"x", "y"} and rb["x"].num_calls == 1 and rb["y"].num_calls == 2
    assert a.output_path == str(tmp_path / "a.h5")


def test_deactivate_profiling_and_file_output(tmp_path):
    p = tmp_path / "none.h5"
    sp.setup(file_path=str(p), deactivate_profiling=True)
    assert not sp.is_active()
    with sp.profile_region("z"):
        pass
    assert sp.finalize(verbose=False, return_results=True) is None or True
    assert not p.exists()
    sp.setup(file_path=str(p), deactivate_file_output=True)
    with sp.profile_region("z"):
        pass
    res = sp.finalize(verbose=False, return_results=True)
    assert res["z"].num_calls == 1
    assert not p.exists()


def test_pause_resume(h5):
    sp.setup(file_path=h5)
    r = sp.profile_region("p")
    with r:
        pass
    with sp.ProfileManager.paused():
        with r:
            pass
    with r:
        pass
    assert sp.finalize(verbose=False, return_results=True)["p"].num_calls == 2


def test_sample_every(h5):
    sp.setup(file_path=h5)
    with sp.ProfileManager.sample_every(3) as step_ctx:
        for step in range(9):
            with step_ctx(step):
                with sp.profile_region("s"):
                    pass
    assert sp.finalize(verbose=False, return_results=True)["s"].num_calls == 3


def test_opt_in_tags(h5):
    sp.register_opt_in_tag("libinternal")
    quiet = sp.region("lib_region", tags=["libinternal"])
    sp.setup(file_path=h5)
    with quiet:
        pass
    res = sp.finalize(verbose=False, return_results=True)
    assert "lib_region" not in res or res["lib_region"].num_calls == 0
    sp.setup(file_path=h5, enable_tags=["libinternal"])
    with quiet:
        pass
    assert sp.finalize(verbose=False, return_results=True)["lib_region"].num_calls == 1


def test_verbose_summary_goes_to_sys_stdout(h5, capsys):
    sp.setup(file_path=h5)
    with sp.profile_region("shown"):
        pass
    sp.finalize()
    out = capsys.readouterr().out
    assert "shown" in out and "calls" in out


def test_open_call_at_finalize_warns(h5):
    sp.setup(file_path=h5)
    r = sp.profile_region("left_open")
    r.begin()
    with pytest.warns(sp.ScopeProfilerWarning):
        sp.finalize(verbose=False)
    r.end()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sp.setup(file_path=h5, replace=True)
        sp.finalize(verbose=False)


def test_finalize_again_writes_only_the_new_calls(h5):
    """As upstream: recording goes on after finalize; the next finalize
    writes the calls since the previous one, num_calls keeps the total."""
    sp.setup(file_path=h5)
    r = sp.profile_region("again")
    for _ in range(3):
        with r:
            pass
    with sp.profile_region("only_first"):
        pass
    sp.finalize(verbose=False)
    for _ in range(5):
        with r:
            pass
    sp.finalize(verbose=False)
    res = sp.load(h5)
    assert res["again"].num_calls == 5 and "only_first" not in res
    assert r.num_calls == 8


def test_registered_and_recorded(h5):
    sp.setup(file_path=h5)
    sp.profile_region("never")
    with sp.profile_region("once"):
        pass
    assert {"never", "once"} <= set(sp.registered_regions())
    assert "once" in sp.recorded_regions() and "never" not in sp.recorded_regions()
    sp.finalize(verbose=False)
    assert sp.ProfileManager.read_results()["once"].num_calls == 1


def test_dropped_managers_are_freed_without_a_collection(tmp_path):
    # The library allows 15 live managers. A manager, its regions and its
    # profiled functions used to form a reference cycle, so a loop creating
    # and dropping managers hit that limit before the collector ran.
    import gc

    gc.disable()
    try:
        for i in range(100):
            pm = ProfileManager()
            pm.setup(file_path=str(tmp_path / f"m{i % 2}.h5"))

            @pm.profile("f")
            def f():
                pass

            f()
            with pm.profile_region("r"):
                pass
            res = pm.finalize(verbose=False, return_results=True)
            assert res["f"].num_calls == 1 and res["r"].num_calls == 1
            res.close()
            del pm, f, res
    finally:
        gc.enable()


def test_a_live_region_keeps_its_manager_recording(tmp_path):
    # A profiled function outlives its ProfileManager object: it still
    # records, and the C manager goes only with the last of them.
    import weakref

    pm = ProfileManager()
    pm.setup(file_path=str(tmp_path / "kept.h5"))
    core = weakref.ref(pm._m)

    @pm.profile("kept")
    def kept():
        pass

    region = pm._m.get_region("kept")
    assert region.manager is pm._m
    del pm
    assert core() is None  # the Python object went at once
    assert region.manager is None
    kept()
    kept()
    assert region.num_calls == 2  # recorded on the C manager the region holds


def test_managers_in_cycles_are_collected_before_the_limit(tmp_path):
    # A cycle of the program's own (an object holding its manager and a
    # function profiled on it) frees its manager only at a collection: the
    # limit runs one before refusing a new manager.
    import gc

    old = gc.get_threshold()
    gc.set_threshold(1000000, 1000, 1000)  # no automatic collection during the loop
    try:
        for i in range(60):
            class Solver:
                def __init__(self):
                    self.pm = ProfileManager()
                    self.step = self.pm.profile("step")(self._step)

                def _step(self):
                    return self  # self -> step -> bound method -> self

            s = Solver()
            s.step()
            del s
    finally:
        gc.set_threshold(*old)
        gc.collect()
