"""use_line_profiler from Python: the lines of the functions registered on a
region (decorated ones, profile_region(..., functions=[...])) are timed by
the package's C trace function while the region is open and written as
upstream's line-profile records, rank<N>/line_profile/<i> (region, filename,
function, first_lineno, unit; line_numbers, hits, times), beside the
library's natively sampled ones. Hits are exact (line events); times follow
the lines' own intervals (sleeps); nothing is traced outside the regions."""
import sys
import threading
import time
import warnings

import h5py
import pytest

import scope_profiler as sp

HERE = __file__


def py_records(path):
    """The records of this file's Python functions: function -> dict."""
    out = {}
    with h5py.File(path, "r") as f:
        group = f.get("rank0/line_profile")
        for key in sorted(group or (), key=int):
            g = group[key]
            a = g.attrs
            if a["filename"] != HERE:
                continue
            rec = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}
            rec["index"] = int(key)
            rec["lines"] = {int(ln): (int(h), float(t)) for ln, h, t in
                            zip(g["line_numbers"][()], g["hits"][()], g["times"][()])}
            out.setdefault(rec["function"], []).append(rec)
    return out


def first_line(func):
    return func.__code__.co_firstlineno


def counted(n):
    total = 0
    for i in range(n):
        total += i
    return total


def test_decorated_function_hits_are_exact(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    work = pm.profile("work")(counted)
    for _ in range(3):
        assert work(10) == 45
    pm.finalize(verbose=False)
    recs = py_records(h5)["counted"]
    assert len(recs) == 1
    r = recs[0]
    f = first_line(counted)
    assert r["region"] == "work"
    assert r["first_lineno"] == f
    assert r["unit"] == pytest.approx(1e-9)
    hits = {ln - f: h for ln, (h, _) in r["lines"].items()}
    # total = 0 once, the loop header n+1 times, its body n times, the return once; per call
    assert hits == {1: 3, 2: 33, 3: 30, 4: 3}
    assert all(t > 0 for _, t in r["lines"].values())
    assert "total += i" in r["source"] and r["source_first_lineno"] == f


def two_waits(log):
    a = time.perf_counter_ns()
    t = time.perf_counter_ns(); time.sleep(0.02); b = time.perf_counter_ns()  # noqa: E702
    c = time.perf_counter_ns(); time.sleep(0.01); d = time.perf_counter_ns()  # noqa: E702
    e = time.perf_counter_ns()
    log.append(((t, b, a, c), (c, d, b, e)))


def test_times_are_the_lines_own_wall_time_callees_included(h5):
    # A line is timed from its line event to the next one, on the clock of
    # time.perf_counter_ns (CLOCK_MONOTONIC). Each line reads that clock around
    # its sleep (a callee), and the lines before and after it read it at their
    # ends and starts: the line's time lies between the two intervals, however
    # the load stretches the sleeps or preempts the thread.
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    timed = pm.profile("sleeps")(two_waits)
    log = []
    for _ in range(5):
        timed(log)
    pm.finalize(verbose=False)
    (r,) = py_records(h5)["two_waits"]
    f = first_line(two_waits)
    for k, (line, sleep_ns) in enumerate(((f + 2, 20_000_000), (f + 3, 10_000_000))):
        own = sum(call[k][1] - call[k][0] for call in log)
        outer = sum(call[k][3] - call[k][2] for call in log)
        hits, ns = r["lines"][line]
        assert hits == 5
        assert 5 * sleep_ns <= own <= ns <= outer, (line, own, ns, outer)


def helper(n):
    s = 0
    for i in range(n):
        s += i
    return s


def test_registered_functions_are_timed_only_inside_their_region(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    helper(5)  # no region open: not timed
    region = pm.profile_region("ctx", functions=[helper])
    with region:
        helper(4)
        helper(4)
    helper(5)
    with pm.profile_region("other"):  # helper is not registered on it
        helper(5)
    pm.finalize(verbose=False)
    (r,) = py_records(h5)["helper"]
    f = first_line(helper)
    assert r["region"] == "ctx"
    assert r["lines"][f + 2][0] == 2 * 5 and r["lines"][f + 3][0] == 2 * 4
    assert sys.gettrace() is None


def test_threads_are_timed_on_their_own(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    work = pm.profile("work")(counted)
    threads = [threading.Thread(target=work, args=(100,)) for _ in range(4)]
    for t in threads:
        t.start()
    work(100)
    for t in threads:
        t.join()
    pm.finalize(verbose=False)
    (r,) = py_records(h5)["counted"]
    assert r["lines"][first_line(counted) + 3][0] == 5 * 100


def raises_after(n):
    for i in range(n):
        pass
    raise KeyError(n)


def gen(n):
    for i in range(n):
        yield i


def test_exceptions_generators_and_nesting_stay_balanced(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    bad = pm.profile("bad")(raises_after)
    with pytest.raises(KeyError):
        bad(3)
    g = pm.profile("gen")(gen)
    assert sum(g(4)) == 6  # the decorated call only makes the generator: it runs outside "gen"
    with pm.profile_region("drain", functions=[gen]):
        assert list(gen(4)) == [0, 1, 2, 3]
    outer = pm.profile("outer")(lambda: bad(2))
    with pytest.raises(KeyError):
        outer()
    pm.finalize(verbose=False)
    recs = py_records(h5)
    (r,) = recs["raises_after"]
    f = first_line(raises_after)
    assert r["lines"][f + 3][0] == 2  # the raise, once per call
    assert r["lines"][f + 1][0] == 4 + 3
    drained = {x["region"]: x for x in recs["gen"]}
    assert set(drained) == {"drain"}
    assert drained["drain"]["lines"][first_line(gen) + 2][0] == 4
    assert sys.gettrace() is None


def test_an_existing_trace_function_keeps_its_events(h5):
    seen = []

    def tracer(frame, event, arg):
        if frame.f_code is counted.__code__:
            seen.append(event)
        return tracer

    pm = sp.ProfileManager()
    pm.setup(file_path=h5, use_line_profiler=True)
    work = pm.profile("work")(counted)
    sys.settrace(tracer)
    try:
        work(3)
    finally:
        sys.settrace(None)
    pm.finalize(verbose=False)
    assert seen.count("call") == 1 and seen.count("line") >= 5 and seen.count("return") == 1
    assert py_records(h5)["counted"][0]["lines"][first_line(counted) + 3][0] == 3


def test_verbose_finalize_prints_the_python_lines(h5, capsys):
    sp.setup(file_path=h5, use_line_profiler=True)
    work = sp.ProfileManager.profile("work")(counted)
    work(50)
    sp.finalize(verbose=True)
    out = capsys.readouterr().out
    assert "Function: counted at line" in out
    assert "total += i" in out


def test_off_nothing_is_traced(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5)
    work = pm.profile("work")(counted)
    work(10)
    assert sys.gettrace() is None
    pm.finalize(verbose=False)
    assert py_records(h5) == {}


def test_two_managers_time_their_own_functions(h5, tmp_path):
    a, b = sp.ProfileManager(), sp.ProfileManager()
    b_path = str(tmp_path / "b.h5")
    a.setup(file_path=h5, use_line_profiler=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the native sampler serves both managers: no warning
        b.setup(file_path=b_path, use_line_profiler=True)
    work = a.profile("work")(counted)
    other = b.profile("other")(helper)
    with a.profile_region("both", functions=[helper]):
        work(2)
        other(3)  # b's region inside a's: helper counts for b's innermost open region
    a.finalize(verbose=False)
    b.finalize(verbose=False)
    in_a, in_b = py_records(h5), py_records(b_path)
    assert set(in_a) == {"counted"} and in_a["counted"][0]["lines"][first_line(counted) + 3][0] == 2
    assert set(in_b) == {"helper"} and in_b["helper"][0]["region"] == "other"
    assert in_b["helper"][0]["lines"][first_line(helper) + 3][0] == 3
