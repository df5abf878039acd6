"""track_async for asyncio: every task is a lane of its own.

:class:`AsyncTracker` installs a task factory on each event loop the run
touches (found by hooking ``BaseEventLoop.create_task`` and
``run_forever``, so ``asyncio.run`` and loops made before setup are both
covered); an existing factory is chained, not replaced. The factory gives
each new task an id and wraps its coroutine in ``_core.TaskSteps``, which
tells the core, around every step, that this thread now runs that task
(``sp_manager_task_switch``). The core then nests each call in its task's
lane, records ``task_ids`` and the time a call spent awaiting, and writes
the task table. Task names come from ``Task.get_name()``, the kind
("task") and ``coro_name`` (the coroutine's ``__qualname__``) reach the task
table through ``sp_manager_task_describe``; a task's end is announced from
its done callback.
"""

from __future__ import annotations

import asyncio
import itertools
import weakref

from . import _core

_ids = itertools.count(1)


def _coro_name(coro) -> str:
    """The task table's coro_name, as upstream writes it: the qualified name
    of the coroutine (``main.<locals>.job``); for another awaitable, that of
    its type."""
    name = getattr(coro, "__qualname__", None)
    if not isinstance(name, str):
        name = type(coro).__qualname__
    return name.encode("utf-8", "replace")[:4095].decode("utf-8", "ignore")


class AsyncTracker:
    """The asyncio side of one manager's track_async run."""

    def __init__(self, manager):
        self._m = manager._m
        self._loops = weakref.WeakKeyDictionary()  # loop -> the factory it had
        self._orig_create_task = None
        self._orig_run_forever = None

    # ---- the factory ----------------------------------------------------------------

    def _factory(self, previous):
        m = self._m

        def factory(loop, coro, **kwargs):
            tid = next(_ids)
            steps = _core.TaskSteps(m, coro, tid)
            if previous is not None:
                task = previous(loop, steps, **kwargs)
            else:
                task = asyncio.Task(steps, loop=loop, **kwargs)
            try:
                m.task_name(tid, task.get_name())
            except AttributeError:
                pass
            try:
                m.task_describe(tid, "task", _coro_name(coro))
            except Exception:  # the manager was finalized: profiling never stops the program
                pass
            task.add_done_callback(lambda _t, tid=tid: m.task_done(tid))
            return task

        factory._sp_tracker = self
        return factory

    def instrument_loop(self, loop) -> None:
        """Install the factory on `loop` (done automatically for asyncio's loops;
        call it for a loop class that bypasses BaseEventLoop, e.g. uvloop)."""
        current = loop.get_task_factory()
        if getattr(current, "_sp_tracker", None) is self or loop in self._loops:
            return
        self._loops[loop] = current
        loop.set_task_factory(self._factory(current))

    # ---- hooks ----------------------------------------------------------------------

    def start(self) -> None:
        base = asyncio.BaseEventLoop
        self._orig_create_task = base.create_task
        self._orig_run_forever = base.run_forever
        tracker = self
        orig_create, orig_run = self._orig_create_task, self._orig_run_forever

        def create_task(loop, coro, **kwargs):
            tracker.instrument_loop(loop)
            return orig_create(loop, coro, **kwargs)

        def run_forever(loop):
            tracker.instrument_loop(loop)
            return orig_run(loop)

        base.create_task = create_task
        base.run_forever = run_forever
        try:
            self.instrument_loop(asyncio.get_running_loop())
        except RuntimeError:
            pass

    def before_finalize(self) -> None:
        pass

    def stop(self) -> None:
        base = asyncio.BaseEventLoop
        if self._orig_create_task is not None:
            base.create_task = self._orig_create_task
            base.run_forever = self._orig_run_forever
            self._orig_create_task = self._orig_run_forever = None
        for loop, previous in list(self._loops.items()):
            if getattr(loop.get_task_factory(), "_sp_tracker", None) is self:
                loop.set_task_factory(previous)
        self._loops.clear()


class ConcurrencyTracker(AsyncTracker):
    """``ProfilingConfig.tracker`` of a run with track_threads: upstream's
    name. Threads need no Python hook (the core keeps per-thread buffers and
    the thread table); with track_async it also follows asyncio tasks, and
    ``instrument_loop(loop)`` covers a loop that bypasses BaseEventLoop."""

    def __init__(self, manager, track_async: bool):
        super().__init__(manager)
        self.track_async = bool(track_async)

    def instrument_loop(self, loop) -> None:
        if self.track_async:
            super().instrument_loop(loop)

    def start(self) -> None:
        if self.track_async:
            super().start()
