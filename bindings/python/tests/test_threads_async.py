"""Threads and asyncio: every thread records into its own C buffers
(safe without any option); track_threads records the thread of each call;
track_async makes every asyncio task a lane through the core's task API."""
import asyncio
import threading

import h5py
import numpy as np
import pytest

import scope_profiler as sp


def _hammer(n, region, barrier):
    barrier.wait()
    for _ in range(n):
        with region:
            with sp.profile_region("t_inner"):
                pass


@pytest.mark.parametrize("track", [False, True])
def test_threads_record_exact_counts(h5, track):
    sp.setup(file_path=h5, track_threads=track)
    region = sp.profile_region("t_outer")
    nthreads, n = 4, 2000
    barrier = threading.Barrier(nthreads)
    threads = [threading.Thread(target=_hammer, args=(n, region, barrier)) for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    res = sp.finalize(verbose=False, return_results=True)
    assert res["t_outer"].num_calls == nthreads * n
    assert res["t_inner"].num_calls == nthreads * n
    cs = res.call_stack()
    names = np.array(cs["names"])
    inner = names == "t_inner"
    parents = cs["parent"][inner]
    assert (parents >= 0).all()
    assert set(names[parents]) == {"t_outer"}
    assert cs["overlaps"] == 0
    assert len(set(cs["thread"][names == "t_outer"].tolist())) == nthreads
    res.close()
    with h5py.File(h5, "r") as f:
        assert "thread_ids" in f["events"]
        # upstream's /thread_table comes with every thread_ids column: with
        # track_threads, and also without it for calls of several threads
        assert "thread_table" in f
        assert sorted(f["thread_table"]["index"][:].tolist())[-1] >= nthreads - 1


def test_track_async_tasks_are_lanes(h5):
    sp.setup(file_path=h5, track_async=True)

    async def job(i):
        with sp.profile_region("job"):
            await asyncio.sleep(0.005 * (i + 1))
            with sp.profile_region("after_await"):
                pass

    async def main():
        with sp.profile_region("main"):
            await asyncio.gather(*(job(i) for i in range(3)))

    asyncio.run(main())
    res = sp.finalize(verbose=False, return_results=True)
    assert res["job"].num_calls == 3 and res["after_await"].num_calls == 3
    cs = res.call_stack()
    names = np.array(cs["names"])
    jobs = names == "job"
    tasks = cs["task"][jobs]
    assert len(set(tasks.tolist())) == 3 and (tasks > 0).all()
    # each after_await nests in the job of its own task, not in another task's
    for i in np.nonzero(names == "after_await")[0]:
        p = cs["parent"][i]
        assert names[p] == "job" and cs["task"][p] == cs["task"][i]
    # the jobs overlap in time but each lane nests properly
    assert cs["overlaps"] == 0
    res.close()
    with h5py.File(h5, "r") as f:
        assert "task_ids" in f["events"] and "await_ns" in f["events"]
        assert "task_table" in f


def test_track_async_chains_an_existing_factory(h5):
    seen = []

    def factory(loop, coro, **kw):
        seen.append(coro)
        return asyncio.Task(coro, loop=loop, **kw)

    async def leaf():
        with sp.profile_region("leaf"):
            await asyncio.sleep(0)
        return 7

    async def main():
        asyncio.get_running_loop().set_task_factory(factory)
        sp.setup(file_path=h5, track_async=True, replace=True)
        return await asyncio.gather(leaf(), leaf())

    assert asyncio.run(main()) == [7, 7]
    res = sp.finalize(verbose=False, return_results=True)
    assert res["leaf"].num_calls == 2
    # our factory wrapped each coroutine, then called theirs
    leaves = [c for c in seen if getattr(c, "__wrapped__", None) is not None and c.__qualname__.endswith("leaf")]
    assert len(leaves) == 2
    assert all(type(c).__name__ == "TaskSteps" for c in seen)
    cs = res.call_stack()
    assert (cs["task"][np.array(cs["names"]) == "leaf"] > 0).all()


def test_without_track_async_no_factory(h5):
    sp.setup(file_path=h5)
    assert sp.get_config().tracker is None

    async def main():
        return asyncio.get_running_loop().get_task_factory()

    assert asyncio.run(main()) is None
    sp.finalize(verbose=False)


def test_hooks_removed_at_next_setup(h5):
    sp.setup(file_path=h5, track_async=True)
    tracker = sp.get_config().tracker
    assert tracker is not None and hasattr(tracker, "instrument_loop")
    patched = asyncio.BaseEventLoop.create_task
    sp.setup(file_path=h5, replace=True)
    assert asyncio.BaseEventLoop.create_task is not patched
    sp.finalize(verbose=False)


def test_session_removes_its_hooks(h5):
    original = asyncio.BaseEventLoop.create_task
    with sp.session(file_path=h5, track_async=True):
        assert asyncio.BaseEventLoop.create_task is not original
    assert asyncio.BaseEventLoop.create_task is original


def test_track_threads_names_threads(h5):
    sp.setup(file_path=h5, track_threads=True)
    comm = {}

    def work():
        import os
        with open(f"/proc/self/task/{threading.get_native_id()}/comm") as f:
            comm["name"] = f.read().strip()
        with sp.profile_region("named"):
            pass

    t = threading.Thread(target=work, name="solver-thread-7")
    t.start()
    t.join()
    res = sp.finalize(verbose=False, return_results=True)
    assert res["named"].num_calls == 1
    assert comm["name"] == "solver-thread-7"
    res.close()
    with h5py.File(h5, "r") as f:
        table = f["threads"] if "threads" in f else f["thread_table"]
        key = "names" if "names" in table else "name"
        names = [n.decode() if isinstance(n, bytes) else n for n in table[key][()]]
    assert "solver-thread-7" in names
    sp.setup(file_path=h5, replace=True)
    assert threading.getprofile() is None  # the hook went with the run
    sp.finalize(verbose=False)


def test_lane_tables_read_back(h5):
    # A manager of its own: the tables describe its threads and tasks only
    # (the default manager's would also list those of the earlier tests).
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, track_async=True)

    def work():
        with pm.profile_region("w"):
            pass

    t = threading.Thread(target=work, name="lane-worker")
    t.start()
    t.join()
    # no wait: the thread stamped its end on itself before join() returned
    # (join() wakes before the OS thread exits, where the C library would)

    async def job():
        with pm.profile_region("aj"):
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(job(), job())

    try:
        asyncio.run(main())
    finally:
        mem = pm.finalize(verbose=False, return_results=True)
        pm.setup(file_path=h5 + ".unused", deactivate_file_output=True, replace=True)  # removes the run's hooks
    res = sp.load(h5)
    assert mem.threads == res.threads and mem.tasks == res.tasks  # in memory as in the file
    by_name = {t["name"]: t for t in res.threads}
    worker = by_name["lane-worker"]
    upstream = {"index", "name", "ident", "native_id", "daemon", "start_time", "end_time", "wall_time", "cpu_time",
                "alive"}
    assert upstream <= set(worker)
    assert worker["alive"] is False and worker["end_time"] >= worker["start_time"] >= 0  # joined before finalize
    assert worker["wall_time"] == pytest.approx(worker["end_time"] - worker["start_time"])
    assert worker["ident"] == t.ident and worker["native_id"] == t.native_id and worker["daemon"] is False
    main_thread = [x for x in res.threads if x["ident"] == threading.main_thread().ident]
    assert len(main_thread) == 1 and main_thread[0]["alive"] is True and main_thread[0]["end_time"] is None
    summary = {s["name"]: s for s in res.thread_summary()}
    assert summary["lane-worker"]["num_calls"] == 1
    assert summary[main_thread[0]["name"]]["num_calls"] == 2  # the two "aj" calls ran on the loop's thread
    tasks = [k for k in res.tasks if k["steps"] > 0]
    assert len(tasks) >= 2 and all(k["kind"] == "task" for k in tasks)
    upstream = {"index", "kind", "name", "coro_name", "thread_index", "steps", "running_time", "awaiting_time",
                "created_time", "done_time"}
    assert all(upstream <= set(k) for k in tasks)
    assert all(k["running_ns"] >= 0 and k["done_time"] >= k["created_time"] >= 0 for k in tasks)
    assert all(k["thread_index"] == main_thread[0]["index"] for k in tasks)
    # coro_name is the coroutine's qualname, as upstream writes it
    # (asyncio.run's own tasks are BaseEventLoop.shutdown_asyncgens and co.)
    coros = sorted(k["coro_name"] for k in tasks)
    ours = [c for c in coros if not c.startswith("BaseEventLoop.")]
    assert ours == sorted([job.__qualname__, job.__qualname__, main.__qualname__])
    assert job.__qualname__ == "test_lane_tables_read_back.<locals>.job"
    names = sorted(t["name"] for t in res.threads)
    res.close()
    dec = lambda v: [x.decode() if isinstance(x, bytes) else x for x in v]  # noqa: E731
    with h5py.File(h5, "r") as f:
        stored = sorted(dec(f["thread_table"]["name"][()]))
        kinds = dec(f["task_table"]["kind"][()])
        stored_coros = dec(f["task_table"]["coro_name"][()])
    assert stored == names
    assert set(kinds) == {"task"} and sorted(c for c in stored_coros if c) == coros


def test_task_describe_checks_its_arguments(h5):
    pm = sp.ProfileManager()
    pm.setup(file_path=h5, track_async=True)
    m = pm._m
    m.task_describe(5, "greenlet", "Worker.run")
    m.task_switch(5)
    m.task_switch(0)
    with pytest.raises(ValueError, match="task 6"):
        m.task_describe(6, "not a word", None)
    with pytest.raises(ValueError, match="task 0"):
        m.task_describe(0, "task", "x")
    pm.finalize(verbose=False)
    with h5py.File(h5, "r") as f:
        t = f["task_table"]
        assert [x.decode() if isinstance(x, bytes) else x for x in t["kind"][()]] == ["greenlet"]
        assert [x.decode() if isinstance(x, bytes) else x for x in t["coro_name"][()]] == ["Worker.run"]
