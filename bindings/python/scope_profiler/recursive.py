"""Recursive profiling of Python callees (``@profile(recursive=True)``, and
``recursive_profile`` as the default of decorators applied while it is on).

While a recursive decorated call runs, every Python function it calls that
is *user code* (a real file outside the standard library and the
site-packages directories) records a region named
``"<module>.<qualname>"``, as upstream's tracer names them; the package's
own modules and explicitly decorated functions are not traced (the latter
record themselves). The tracer is ``_core.Tracer``, a C profile function
installed for the outermost recursive call of a thread only, chaining any
profile function already set.
"""

from __future__ import annotations

import os
import site
import sys
import sysconfig
import threading

from . import _core

_state = threading.local()
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


def _library_dirs() -> tuple:
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p))
    for p in list(getattr(site, "getsitepackages", lambda: [])()) + [getattr(site, "USER_SITE", None) or ""]:
        if p:
            dirs.add(os.path.realpath(p))
    for p in sys.path:
        if p.endswith(("site-packages", "dist-packages")):
            dirs.add(os.path.realpath(p))
    dirs.add(_PKG_DIR)
    return tuple(sorted(dirs))


_LIB_DIRS = None


def is_user_code(filename: str) -> bool:
    global _LIB_DIRS
    if not filename or filename.startswith("<"):
        return False
    if _LIB_DIRS is None:
        _LIB_DIRS = _library_dirs()
    real = os.path.realpath(filename)
    return not any(real == d or real.startswith(d + os.sep) for d in _LIB_DIRS)


def classifier(manager, only_user_code: bool = True):
    """The tracer's question for a called frame: its region, or None when the
    frame is not traced (not user code, with ``only_user_code``)."""
    m = manager._m

    def classify(frame):
        code = frame.f_code
        if only_user_code and not is_user_code(code.co_filename):
            return None
        module = frame.f_globals.get("__name__", "?")
        return m.region(f"{module}.{code.co_qualname}", None, code.co_filename, code.co_firstlineno,
                        code.co_qualname)

    return classify


class Recursive:
    """The callable a recursive decorator returns."""

    def __init__(self, manager, inner, func, only_user_code=True):
        self._pm = manager
        self._inner = inner
        self.__wrapped__ = func
        self._classify = classifier(manager, only_user_code)

    def __call__(self, *args, **kwargs):
        if getattr(_state, "depth", 0):
            return self._inner(*args, **kwargs)
        _state.depth = 1
        try:
            with _core.Tracer(self._classify, self._pm._decorated_codes):
                return self._inner(*args, **kwargs)
        finally:
            _state.depth = 0

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return self.__class__._Bound(self, obj)

    class _Bound:
        def __init__(self, rec, obj):
            self._rec, self._obj = rec, obj

        def __call__(self, *args, **kwargs):
            return self._rec(self._obj, *args, **kwargs)
