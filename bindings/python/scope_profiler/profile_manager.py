"""ProfileManager: setup, sessions, regions and decorators over the C core.

A ``ProfileManager()`` instance is an independent manager of the C library
(its own configuration, regions and output file). The same methods called
on the class act on the process-wide default manager, which is the one C
code in the process records into with ``SP_REGION``, so Python regions and
C regions of one run nest in one timeline and one file.

The hot calls are C: ``with ProfileManager.profile_region("x"):`` is one
dictionary lookup returning the region object made the first time, then
the library's begin and end; a decorated function is a C vectorcall object
that brackets the call. Threads record into their own C buffers: nothing
here takes a lock.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import sys
import threading
import warnings
from typing import Any, Callable

from . import _core
from .profile_config import (ProfilingConfig, ProfilingOptions, _expand_kwargs, _options_to_kwargs, _text)

#: The root region every session() records around its body.
SESSION_REGION = "scope_profiler.session"

_SETUP_ONLY = ("options", "config_path", "replace", "auto_finalize", "output")
_UNSET = object()
#: What setup(output=...) writes, by suffix: the library writes HDF5.
_OUTPUT_SUFFIXES = (".h5", ".hdf5", ".he5")


def _output_settings(output, overrides: dict) -> dict:
    """setup(output=...): a destination whose suffix names the format (the
    library writes HDF5), or None for a run kept in memory only."""
    if "file_path" in overrides:
        raise _core.ConfigurationError("give output or file_path, not both (output is the file_path of an "
                                       "HDF5 file, or None for no file)")
    if output is None:
        return {**overrides, "deactivate_file_output": True}
    path = os.fspath(output)
    if os.path.splitext(path)[1].lower() not in _OUTPUT_SUFFIXES:
        raise _core.ConfigurationError(
            f"output {path!r}: setup() writes HDF5 files ({', '.join(_OUTPUT_SUFFIXES)}); write the .h5 and "
            "convert it with `scope-profiler export`, or pass None to keep the run in memory")
    return {**overrides, "file_path": path}


def _wants_memray(pairs, config_path) -> bool:
    """Whether use_memray may be on, before the library resolves it: the
    interposer must be visible when setup looks for it."""
    from .profile_config import load_profiling_config

    truthy = ("1", "true", "yes", "on")
    for k, v in pairs:
        if k == "use_memray":
            return v.lower() in truthy
    if os.environ.get("SCOPE_PROFILER_USE_MEMRAY", "").lower() in truthy:
        return True
    path = config_path or os.environ.get("SCOPE_PROFILER_CONFIG")
    if path and os.path.exists(path):
        try:
            return bool(load_profiling_config(path).get("use_memray"))
        except Exception:  # the setup itself reports a bad file
            return False
    return False


class _hybrid:
    """A method that runs on the default manager when called on the class."""

    def __init__(self, func):
        self.func = func
        functools.update_wrapper(self, func)

    def __get__(self, obj, owner):
        if obj is None:
            obj = owner._default_instance()
        return self.func.__get__(obj, owner)


class _c_method:
    """A method that is the C manager's own (no Python frame on the hot
    path): ``ProfileManager.profile_region`` is the default manager's
    ``_core.Manager.profile_region``, ``pm.profile_region`` pm's."""

    def __init__(self, name, doc):
        self.name = name
        self.__doc__ = doc

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner):
        if obj is None:
            obj = owner._default_instance()
        return getattr(obj._m, self.name)


class Run:
    """What ``session()`` yields: ``results`` holds the ProfilingResults when
    ``return_results=True`` (after the session ended), ``manager`` the manager."""

    def __init__(self, manager):
        self.manager = manager
        self.results = None

    @property
    def output_path(self):
        return self.manager.output_path


class ProfileManager:
    """A profiling manager: ``ProfileManager()`` makes an independent one;
    class-level calls (``ProfileManager.setup()``, ``ProfileManager.profile``)
    use the process-wide default manager."""

    _default = None
    _default_lock = threading.Lock()

    def __init__(self, _core_manager=None):
        self._m = _core_manager if _core_manager is not None else _core.Manager()
        self._config = ProfilingConfig._bound(self._m)
        self._last_results = None
        self._hooks = []  # extensions active for the current run (async, python allocators, ...)
        self._backend = None
        self._decorated_codes = set()  # code objects of decorated functions (never traced)

    @classmethod
    def _default_instance(cls) -> "ProfileManager":
        d = cls.__dict__.get("_default")
        if d is None:
            with cls._default_lock:
                d = cls.__dict__.get("_default")
                if d is None:
                    d = ProfileManager(_core.default_manager())
                    ProfileManager._default = d
        return d

    # ---- setup and finalize ---------------------------------------------------

    @_hybrid
    def setup(self, options: ProfilingOptions | None = None, config_path=None, replace: bool = False,
              auto_finalize: bool = False, output=_UNSET, **overrides) -> None:
        """Resolve the configuration and start a run.

        Precedence: keyword ``overrides`` > ``SCOPE_PROFILER_*`` environment >
        ``options`` > the ``config_path`` TOML file > defaults. Unknown names,
        bad values and conflicting settings raise ConfigurationError (a
        ValueError) with the library's message. A second setup while a run is
        active raises StateError unless ``replace=True``. ``output``: the
        file to write (an HDF5 path, the same as ``file_path``), or None to
        write no file (``deactivate_file_output``; use
        ``finalize(return_results=True)``).
        """
        if output is not _UNSET:
            overrides = _output_settings(output, overrides)
        return self._setup(options, config_path, replace, auto_finalize, overrides)

    def _setup(self, options, config_path, replace, auto_finalize, overrides, into=None) -> None:
        """setup() itself; ``into``: the ProfilingConfig set_config() installs."""
        from . import extensions

        if options is not None and not isinstance(options, ProfilingOptions):
            raise TypeError(f"options must be a ProfilingOptions, not {type(options).__name__}")
        opt_values = _options_to_kwargs(options) if options is not None else {}
        opt_pairs = [(k, _text(k, v)) for k, v in opt_values.items()]
        kw_pairs = _expand_kwargs(overrides)
        from . import gpu as _gpu

        backend = overrides.get("gpu_timing_backend", opt_values.get("gpu_timing_backend"))
        group = overrides.get("gpu")
        if group is not None and getattr(group, "backend", None) is not None:
            backend = group.backend
        backend_obj = _gpu.resolve(backend)
        if config_path is not None:
            config_path = os.fspath(config_path)
        extensions.stop(self)
        extensions.prepare(_wants_memray(kw_pairs + opt_pairs, config_path))
        if backend_obj is not None or self._backend is not None:
            if not _core.set_gpu_backend(self._m, backend_obj) and backend_obj is not None:
                warnings.warn(f"gpu_timing_backend = {backend!r} is not available: this build of the library has "
                              "no GPU callbacks backend", _core.ScopeProfilerWarning, stacklevel=2)
        self._backend = backend_obj
        self._m.setup(options=opt_pairs, overrides=kw_pairs, config_path=config_path, replace=replace,
                      auto_finalize=auto_finalize)
        self._config = ProfilingConfig._bound(self._m, backend if backend_obj is not None else None, into)
        self._last_results = None
        extensions.start(self, self._config)

    @_hybrid
    def set_config(self, config: ProfilingConfig) -> None:
        """Start a run with ``config``'s settings (a ProfilingConfig made with
        keywords, or another run's ``get_config()``), replacing a run that is
        still active; ``config`` becomes this manager's configuration.
        Decorated functions need no rebinding: they find the run when called."""
        if not isinstance(config, ProfilingConfig):
            raise TypeError(f"set_config() takes a ProfilingConfig, not {type(config).__name__}")
        self._setup(None, None, True, False, config.settings(), into=config)

    @_hybrid
    def finalize(self, verbose: bool = True, return_results: bool = False):
        """Write the run (and print the summary when ``verbose``); with
        ``return_results`` also return it as ProfilingResults."""
        from . import extensions
        from .results import ProfilingResults

        extensions.before_finalize(self)
        res, summary = self._m.finalize(verbose=verbose, return_results=return_results)
        if summary:
            sys.stdout.write(summary)
        results = ProfilingResults(res) if res is not None else None
        self._config._metadata = results.metadata if results is not None else None
        self._config._metadata_path = None if results is not None else self._m.output_path()
        self._last_results = results
        return results if return_results else None

    @_hybrid
    @contextlib.contextmanager
    def _session_cm(self, return_results=False, verbose=False, **kwargs):
        self.setup(**kwargs)
        run = Run(self)
        root = self._m.region(SESSION_REGION)
        try:
            with root:
                yield run
        finally:
            try:
                run.results = self.finalize(verbose=verbose, return_results=return_results)
            finally:
                from . import extensions

                extensions.stop(self)  # a session removes its hooks at exit (setup() keeps them)

    @_hybrid
    def session(self, func: Callable | None = None, /, *, return_results: bool = False, verbose: bool = False,
                **kwargs):
        """Setup on entry, finalize on exit (also when the body raises); a
        context manager yielding a Run, and a decorator. The session records
        one root region, ``scope_profiler.session``, around its body."""
        if func is not None and callable(func) and not kwargs:
            return self.session(return_results=return_results, verbose=verbose)(func)
        mgr = self

        class _Session(contextlib.ContextDecorator):
            def __enter__(s):
                s._cm = mgr._session_cm(return_results=return_results, verbose=verbose, **kwargs)
                return s._cm.__enter__()

            def __exit__(s, *exc):
                return s._cm.__exit__(*exc)

        return _Session()

    @_hybrid
    def run(self, main: Callable, *args, output: str | None = None, **kwargs):
        """Run ``main(*args)`` inside a session writing ``output``; returns
        (main's return value, the ProfilingResults)."""
        if output is not None:
            kwargs["output"] = output
        with self.session(return_results=True, **kwargs) as run:
            value = main(*args)
        return value, run.results

    @_hybrid
    def run_script(self, script_path, script_args=None, region_name: str | None = None,
                   only_user_code: bool = True):
        """Run a Python script as ``__main__`` inside one region (named after
        the script's file name, or ``region_name``), with every user-code
        Python function it calls recorded as a region ``<module>.<qualname>``
        (recursive profiling; ``only_user_code=False`` also traces the
        standard library and site-packages). ``sys.argv`` is ``[script,
        *script_args]`` and the script's directory comes first on
        ``sys.path`` while it runs, as ``python3 script.py`` would have them.
        Records into this manager's run (``setup()`` first); returns the
        script's globals."""
        from .recursive import classifier

        path = os.path.abspath(os.fspath(script_path))
        with open(path, "rb") as f:  # FileNotFoundError names the script
            source = f.read()
        code = compile(source, path, "exec")
        saved_argv, saved_path, saved_main = sys.argv, list(sys.path), sys.modules.get("__main__")
        module = type(sys)("__main__")
        module.__file__ = path
        module.__builtins__ = __builtins__
        sys.argv = [path, *[str(a) for a in (script_args or ())]]
        sys.path.insert(0, os.path.dirname(path))
        sys.modules["__main__"] = module
        skip = self._decorated_codes  # the live set: functions the script decorates record themselves
        skip.add(code)  # the module's own frame is the script's region
        try:
            with self._m.region(region_name or os.path.basename(path)):
                with _core.Tracer(classifier(self, only_user_code), skip):
                    exec(code, module.__dict__)
        finally:
            skip.discard(code)
            sys.argv, sys.path[:] = saved_argv, saved_path
            if saved_main is not None:
                sys.modules["__main__"] = saved_main
        return module.__dict__

    # ---- regions ----------------------------------------------------------------

    profile_region = _c_method(
        "profile_region",
        """profile_region(region_name, functions=None): the region called region_name
        (made once, then the same object): ``with ProfileManager.profile_region("solve"):``.""")

    @_hybrid
    def region(self, name: str, tags=None):
        """``profile_region`` with tags: ``region("solve", tags=["solver"])``."""
        return self._m.region(name, tags)

    @_hybrid
    def define_region(self, name: str, tags=None):
        """Create a region ahead of its first call (same as ``region``)."""
        return self._m.region(name, tags)

    @_hybrid
    def profile(self, region_name=None, recursive: bool | None = None, tags=None):
        """Decorator: ``@ProfileManager.profile`` or ``@ProfileManager.profile("name")``.
        Every call of the function is one call of its region (named after the
        function by default). Works before ``setup()``. With ``recursive=True``
        (or ``recursive_profile`` on when the decorator is applied) the Python
        user-code functions it calls become regions too (scope_profiler.recursive)."""
        if callable(region_name) and not isinstance(region_name, str):
            return self.profile()(region_name)

        def deco(func):
            from .recursive import Recursive

            name = region_name if region_name is not None else getattr(func, "__name__", repr(func))
            wrapped = self._m.wrap(func, name, tags)
            code = getattr(func, "__code__", None)
            if code is not None:
                self._decorated_codes.add(code)
            rec = recursive
            if rec is None and self._m.is_configured():
                rec = bool(self._config.recursive_profile)
            if rec:
                wrapped = Recursive(self, wrapped, func)
            try:
                functools.update_wrapper(wrapped, func)
            except AttributeError:
                pass
            self._register_function(name, func)
            return wrapped

        return deco

    def _register_function(self, name, func):
        """Functions profiled by decorator, by region (for line profiling)."""
        self._m.profile_region(name, [func])

    @_hybrid
    def get_region(self, name: str):
        """The region called ``name``, or None."""
        return self._m.get_region(name)

    @_hybrid
    def get_all_regions(self) -> dict:
        """name -> region of every region this manager has."""
        return self._m.regions()

    @_hybrid
    def registered_regions(self) -> list:
        """Names of the regions defined on this manager."""
        return list(self._m.regions())

    @_hybrid
    def recorded_regions(self) -> list:
        """Names of the regions with at least one completed call."""
        return [n for n, r in self._m.regions().items() if r.num_calls]

    # ---- state --------------------------------------------------------------------

    @_hybrid
    def is_active(self) -> bool:
        return self._m.is_active()

    @_hybrid
    def is_configured(self) -> bool:
        return self._m.is_configured()

    @_hybrid
    def get_config(self) -> ProfilingConfig:
        return self._config

    @_hybrid
    def pause(self) -> None:
        """Stop recording new calls (calls already open complete)."""
        self._m.pause()

    @_hybrid
    def resume(self) -> None:
        self._m.resume()

    @_hybrid
    @contextlib.contextmanager
    def paused(self):
        """Context manager: nothing begun inside is recorded."""
        self._m.pause()
        try:
            yield
        finally:
            self._m.resume()

    @_hybrid
    def sample_every(self, n: int):
        """Context manager yielding ``profile_step(step)``: only every n-th
        step's calls are recorded."""
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"sample_every(n): n must be a positive integer, not {n!r}")
        mgr = self

        @contextlib.contextmanager
        def profile_step(step: int):
            if step % n == 0:
                yield
            else:
                mgr._m.pause()
                try:
                    yield
                finally:
                    mgr._m.resume()

        return contextlib.nullcontext(profile_step)

    @_hybrid
    def register_opt_in_tag(self, tag: str) -> None:
        """Regions carrying ``tag`` stay disabled unless it is enabled
        (``enable_tags``, ``SCOPE_PROFILER_ENABLE_TAGS``, ``"*"``)."""
        _core.register_opt_in_tag(tag)

    @property
    def output_path(self):
        return self._m.output_path()

    @_hybrid
    def read_results(self):
        """Open the file this manager last wrote."""
        from .results import load

        path = self._m.output_path()
        if path is None:
            raise _core.StateError("no file was written yet (finalize first, and not with deactivate_file_output)")
        return load(path)

    @_hybrid
    def last_results(self):
        """The ProfilingResults of the last finalize(), or None."""
        return self._last_results

    @_hybrid
    def metadata(self) -> dict:
        return self._config.metadata

    @_hybrid
    def problems(self) -> dict:
        """What the hot path counted and refused (unmatched ends, ...)."""
        return self._m.problems()

    def __repr__(self):
        kind = "default" if self._m.is_default() else "independent"
        return f"<ProfileManager ({kind}) active={self._m.is_active()}>"
