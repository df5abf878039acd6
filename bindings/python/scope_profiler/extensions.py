"""The Python counterparts of the settings that only make sense in Python.

At ``setup()`` the manager asks this module to start what its resolved
configuration turns on, and at the next ``setup()`` (or the end of a
session) to stop it again:

- ``track_async``: the asyncio task factory of :mod:`scope_profiler.concurrency`
  (each task's coroutine announced to the core's task API);
- ``track_threads``: the OS names of threads started during the run are
  their ``threading`` names, so the thread table shows them;
- ``use_line_profiler``: the lines of the Python functions registered on
  regions (decorated ones, ``profile_region(name, functions=[...])``) timed
  by the C trace function of ``_core`` (py_lines.c) while their region is
  open, handed to the run at finalize as line-profile records (the library
  samples native code lines beside them);
- ``memray_trace_python_allocators`` (with ``use_memray``): Python's object
  and memory allocators hooked onto the allocation capture of
  libscope_profiler_memory.so (``_core.pymalloc_hooks``), which is loaded
  for the run when it is not preloaded.

A setting whose Python side this build lacks warns once at setup that it
is unavailable (the library warns for its own unavailable settings).
"""

from __future__ import annotations

import ctypes
import os
import warnings

from . import _core

_loaded_memory = None


def load_memory_library() -> bool:
    """Make sp_memory_api_v1 visible to the core (RTLD_GLOBAL), so that a
    use_memray run set up from Python has its capture without LD_PRELOAD.
    Loading it interposes nothing: it only records what is handed to it."""
    global _loaded_memory
    if _loaded_memory is not None or _core.memory_library_loaded():
        return True
    from . import _paths

    path = _paths.MEMORY_LIBRARY
    if not path or not os.path.exists(path):
        return False
    _loaded_memory = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    return True


def prepare(wants_memray: bool) -> None:
    """Before the C setup: what must exist when the core resolves its extensions."""
    if wants_memray:
        load_memory_library()


def start(manager, config) -> None:
    """After a successful setup: start the Python-side hooks the config asks for."""
    hooks = manager._hooks
    if config.track_threads:  # track_async implies it
        from . import concurrency

        tracker = concurrency.ConcurrencyTracker(manager, config.track_async)
        config._tracker = tracker
        hooks.append(tracker)
    if config.use_memray and _core.memory_library_loaded() and not _core.malloc_interposed():
        warnings.warn("use_memray: malloc is not interposed in this process, so only Python's own allocators are "
                      "captured (with memray_trace_python_allocators); for native allocations start Python with "
                      "LD_PRELOAD=libscope_profiler_memory.so", _core.ScopeProfilerWarning, stacklevel=3)
    if config.use_memray and config.memray_trace_python_allocators:
        if _core.memory_library_loaded():
            _core.pymalloc_hooks(True)
            hooks.append(_PymallocHooks())
        else:
            warnings.warn("memray_trace_python_allocators = true is not available: libscope_profiler_memory.so "
                          "is not loaded in this process (build it with SP_WITH_MEMORY=ON)",
                          _core.ScopeProfilerWarning, stacklevel=3)
    if config.track_threads:
        hooks.append(_ThreadNames())
    if config.use_line_profiler and not config.aggregation_mode:
        hooks.append(_LineTimer(manager))
    for hook in hooks:
        hook.start()


def before_finalize(manager) -> None:
    for hook in manager._hooks:
        hook.before_finalize()


def stop(manager) -> None:
    """Remove the hooks of the manager's previous run."""
    hooks, manager._hooks = manager._hooks, []
    for hook in reversed(hooks):
        hook.stop()


class _ThreadNames:
    """track_threads: each thread started during the run gives its OS thread
    its ``threading`` name at its first Python call (a profile hook that
    removes itself, chaining threading's own profile hook), so the thread
    table names it. The main thread keeps its name (the process's).

    Each such thread also stamps its end when its ``run()`` is over, on the
    dying thread (``Thread._bootstrap_inner`` wrapped): join() returns when
    the interpreter lets go of the thread, before the OS thread's exit would
    stamp it, so a table written right after a join showed it alive.
    Upstream reads the end on the dying thread too."""

    _orig_bootstrap = None
    _users = 0  # runs with track_threads now: the last one restores threading

    def start(self):
        import sys
        import threading

        self._prev = threading.getprofile()
        prev = self._prev
        _ThreadNames._users += 1
        if _ThreadNames._orig_bootstrap is None:
            orig = threading.Thread._bootstrap_inner
            _ThreadNames._orig_bootstrap = orig

            def _bootstrap_inner(thread):
                try:
                    orig(thread)
                finally:
                    _core.thread_end()

            threading.Thread._bootstrap_inner = _bootstrap_inner

        def hook(frame, event, arg):
            sys.setprofile(prev)
            try:
                _core.set_thread_name(threading.current_thread().name)
            except (OSError, ValueError):
                pass
            if prev is not None:
                return prev(frame, event, arg)
            return None

        threading.setprofile(hook)

    def before_finalize(self):
        pass

    def stop(self):
        import threading

        threading.setprofile(self._prev)
        _ThreadNames._users -= 1
        if _ThreadNames._users == 0 and _ThreadNames._orig_bootstrap is not None:
            threading.Thread._bootstrap_inner = _ThreadNames._orig_bootstrap
            _ThreadNames._orig_bootstrap = None


class _LineTimer:
    """use_line_profiler: Python lines timed for this manager's run, handed
    to it before each finalize."""

    def __init__(self, manager):
        self._m = manager._m
        self._on = False

    def start(self):
        try:
            _core.lines_start(self._m)
            self._on = True
        except _core.StateError as e:
            warnings.warn(f"use_line_profiler: Python lines are not timed in this run: {e}",
                          _core.ScopeProfilerWarning, stacklevel=4)

    def before_finalize(self):
        if not self._on:
            return
        try:
            _core.lines_flush(self._m)
        except _core.ScopeProfilerError as e:
            warnings.warn(f"use_line_profiler: the timed Python lines are not in this run's file: {e}",
                          _core.ScopeProfilerWarning, stacklevel=4)

    def stop(self):
        if self._on:
            _core.lines_stop(self._m)
            self._on = False


class _PymallocHooks:
    def start(self):
        pass

    def before_finalize(self):
        pass

    def stop(self):
        _core.pymalloc_hooks(False)
