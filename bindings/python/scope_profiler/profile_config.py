"""Configuration for profiling managers.

Every setting here comes from the C library's settings table
(``_core.settings_table()``): the fields of :class:`ProfilingOptions` and of
the groups :class:`MemrayOptions`, :class:`GPUOptions` and
:class:`HDF5Options`, their documentation, the keys of :class:`SetupOptions`
and the properties of :class:`ProfilingConfig` are built from it when this
module is imported. Values are checked by the library's own setter, so
types, bounds, choices, "did you mean" and the flat-plus-grouped conflict
raise the library's messages (as :class:`ConfigurationError`, a
``ValueError``). Nothing in this file lists a setting.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

from . import _core

try:  # Python 3.11+
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - the package needs 3.11 anyway
    _tomllib = None

tomllib = _tomllib

ConfigurationError = _core.ConfigurationError
UnknownSettingError = _core.UnknownSettingError

#: The library's table: one dict per setting, in table order.
_TABLE = _core.settings_table()
_BY_NAME = {row["name"]: row for row in _TABLE}
_GROUPS = {g["name"]: g for g in _core.setting_groups()}

_PY_TYPES = {
    "bool": "bool | None",
    "int": "int | None",
    "str": "str | None",
    "enum": "str | None",
    "list": "list[str] | tuple[str, ...] | str | None",
}

#: Settings whose Python value may be an object rather than a word.
_OBJECT_SETTINGS = {"gpu_timing_backend"}
#: gpu_timing_backend words that name a Python backend (scope_profiler.gpu).
_PYTHON_BACKENDS = ("torch", "cupy")


def _text(name: str, value: Any) -> str | None:
    """A Python value as the text the library's setter parses."""
    if value is None:
        return None
    row = _BY_NAME.get(name)
    kind = row["type"] if row else None
    if name in _OBJECT_SETTINGS and (not isinstance(value, str) or value in _PYTHON_BACKENDS):
        return "callbacks"  # an object backend: Python drives the library's callbacks backend
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if kind == "list" and isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        for item in items:
            if not isinstance(item, str) or "," in item:
                raise ConfigurationError(f"{name}: every item must be a string without a comma, not {item!r}")
        return ",".join(items)
    if kind == "int" and isinstance(value, float):
        raise ConfigurationError(f"invalid value {value!r} for {name}: expected an integer")
    return str(value)


def _python_value(row: dict, text: str | None) -> Any:
    """The library's rendering of a resolved value as a Python value."""
    kind = row["type"]
    if kind == "list":
        return tuple(t for t in (text or "").split(",") if t)
    if text is None or (text == "" and kind != "bool"):
        return None
    if kind == "bool":
        return text.lower() in ("1", "true", "yes", "on")
    if kind == "int":
        return int(text)
    if kind == "enum" and text == "none":
        return None
    return text


#: Upstream's dataclasses take their fields positionally (``GPUOptions(True)``
#: is ``timing=True``). Where upstream declares fields in another order than
#: the table, these say how: a group's fields upstream declares first, in
#: that order (the group's other fields follow in table order), and the
#: flat fields upstream declares after its groups. From the first of those on
#: ProfilingOptions' fields are keyword-only, so a positional argument never
#: lands in a field upstream would not have put it in.
_UPSTREAM_GROUP_ORDER = {"gpu": ("timing", "backend", "nvtx")}
_UPSTREAM_AFTER_GROUPS = ("gpu_sync_on_exit",)


def _spelling(group: str, field: str) -> str:
    return f"{group}.{field}"


class _OptionGroup:
    """Base of the setting groups: a dataclass whose fields spell settings
    without their prefix (``MemrayOptions(enabled=True)`` is ``use_memray``)."""

    _group: str = ""

    def _explicit(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                yield f.name, value

    def to_kwargs(self) -> dict:
        """This group's explicitly-set fields, under their flat names."""
        out = {}
        for field, value in self._explicit():
            name = _core.find_setting(_spelling(self._group, field))
            _check(name, value)
            out[name] = value
        return out


def _check(name: str, value: Any) -> None:
    text = _text(name, value)
    if text is not None:
        _core.check_setting(name, text)


def _make_group(cls_name: str, group: str, doc: str) -> type:
    rows = [r for r in _TABLE if r["group"] == group and r["spelling"]]
    first = _UPSTREAM_GROUP_ORDER.get(group, ())
    rows.sort(key=lambda r: first.index(r["field"]) if r["field"] in first else len(first))
    fields = []
    for r in rows:
        annot = "Any" if r["name"] in _OBJECT_SETTINGS else _PY_TYPES[r["type"]]
        fields.append((r["field"], annot, dataclasses.field(default=None)))
    lines = [doc, "", "Attributes", "----------"]
    for r in rows:
        lines.append(f"{r['field']} : {r['type']} or None")
        lines.append(f"    {r['doc']} (``{r['name']}``)")
    cls = dataclasses.make_dataclass(cls_name, fields, bases=(_OptionGroup,), namespace={"_group": group})
    cls.__module__ = __name__
    cls.__doc__ = "\n".join(lines)
    cls.__qualname__ = cls_name
    return cls


MemrayOptions = _make_group(
    "MemrayOptions", "memray",
    "Memray capture settings, as a group.\n\nIn a TOML config file the group is the ``[profiling.memray]`` table.")
GPUOptions = _make_group(
    "GPUOptions", "gpu",
    "GPU timing and NVTX settings, as a group.\n\nIn a TOML config file this is the ``[profiling.gpu]`` table.")
HDF5Options = _make_group(
    "HDF5Options", "hdf5",
    "HDF5 storage settings, as a group.\n\nIn a TOML config file this is the ``[profiling.hdf5]`` table.")

_GROUP_CLASSES = {"memray": MemrayOptions, "gpu": GPUOptions, "hdf5": HDF5Options}


def _options_to_kwargs(opts) -> dict:
    """Explicit flat fields and group fields of a ProfilingOptions, through
    one library options object (which raises the conflict error)."""
    core = _core.Options()
    values = {}
    for f in dataclasses.fields(opts):
        value = getattr(opts, f.name)
        if value is None:
            continue
        if f.name in _GROUP_CLASSES:
            if not isinstance(value, _GROUP_CLASSES[f.name]):
                raise TypeError(f"{f.name} must be a {_GROUP_CLASSES[f.name].__name__}, not {type(value).__name__}")
            for field, v in value._explicit():
                key = _spelling(f.name, field)
                core.set(key, _text(_core.find_setting(key), v))
                values[_core.find_setting(key)] = v
        else:
            core.set(f.name, _text(f.name, value))
            values[f.name] = value
    core.items()  # raises ConfigurationError when one setting is set both ways
    return values


def _make_options() -> type:
    fields = []
    lines = [
        "A bag of :meth:`ProfileManager.setup` settings, to reuse or pass around.",
        "",
        "Every field mirrors a ``setup()``/``session()`` keyword argument and defaults to ``None``,",
        "meaning \"unset\". Settings that share a prefix can also be given as the groups",
        ":class:`MemrayOptions`, :class:`GPUOptions` and :class:`HDF5Options`; setting one thing",
        "both ways raises ``ValueError`` rather than picking a winner.",
        "",
        "Attributes",
        "----------",
    ]
    kw_only = False
    for r in _TABLE:
        annot = "Any" if r["name"] in _OBJECT_SETTINGS else _PY_TYPES[r["type"]]
        kw_only = kw_only or r["name"] in _UPSTREAM_AFTER_GROUPS
        fields.append((r["name"], annot, dataclasses.field(default=None, kw_only=kw_only)))
        default = r["default"]
        lines.append(f"{r['name']} : {r['type']} or None")
        lines.append(f"    {r['doc']} (default: {default!r})" + (
            "" if r["status"] == "ready" else f" [{r['status']} in this build]"))
    for g, cls in _GROUP_CLASSES.items():
        fields.append((g, f"{cls.__name__} | None", dataclasses.field(default=None, kw_only=True)))
        lines.append(f"{g} : {cls.__name__} or None")
        lines.append(f"    The {g} settings as one group.")
    ns = {"to_kwargs": lambda self: _options_to_kwargs(self)}
    ns["to_kwargs"].__doc__ = ("This options' explicitly-set fields, as ``setup()`` keyword arguments.\n\n"
                               "Group fields are expanded to the flat names they stand for. Setting the\n"
                               "same thing both ways raises ``ValueError`` rather than picking a winner.")
    cls = dataclasses.make_dataclass("ProfilingOptions", fields, namespace=ns)
    cls.__module__ = __name__
    cls.__doc__ = "\n".join(lines)
    return cls


ProfilingOptions = _make_options()


def _setup_annotation(r: dict):
    if r["name"] in _OBJECT_SETTINGS:
        return Any
    return {"bool": bool, "int": int, "str": str, "enum": str,
            "list": list[str] | tuple[str, ...] | str}[r["type"]]


#: The keyword names ProfileManager.setup() accepts, for typing. Built from the
#: same table as ProfilingOptions, so the two cannot drift.
SetupOptions = TypedDict("SetupOptions", {r["name"]: _setup_annotation(r) for r in _TABLE}, total=False)
SetupOptions.__module__ = __name__
SetupOptions.__doc__ = "The keyword names :meth:`ProfileManager.setup` accepts, for typing."


def load_profiling_config(path: str | os.PathLike[str]) -> dict:
    """Load the ``[profiling]`` table from a TOML settings file.

    A top-level table is also accepted for small files. Settings may be
    written flat, or grouped into the ``memray``, ``gpu`` and ``hdf5``
    sub-tables. Setting the same thing both ways is an error. The file is
    parsed by the C library (the same parser ``setup(config_path=...)``
    uses); the result maps flat names to Python values.
    """
    core = _core.Options.load(os.fspath(path))
    return {name: _python_value(_BY_NAME[name], text) for name, text in core.items()}


def _expand_kwargs(kwargs: dict) -> list:
    """setup() keywords (flat names, or a group object under its group name)
    as (flat name, text) pairs, validated by the library."""
    core = _core.Options()
    for key, value in kwargs.items():
        if key in _GROUP_CLASSES and isinstance(value, _OptionGroup):
            for field, v in value._explicit():
                core.set(_spelling(key, field), _text(_core.find_setting(_spelling(key, field)), v))
        elif value is not None:
            core.set(key, _text(key, value))
        else:
            _core.find_setting(key)  # an unknown name is an error even when None
    return core.items()


def _signature_default(row: dict) -> Any:
    """A setting's default as upstream's ProfilingConfig signature spells it
    (None where the table has no value: an empty list, an unset path)."""
    value = _python_value(row, row["default"])
    return None if value == () else value


class ProfilingConfig:
    """Configuration for one profiling manager.

    ``ProfilingConfig(file_path=..., buffer_limit=..., ...)`` takes every
    setting as a keyword (the same names, checks and messages as
    ``setup()``); ``ProfileManager.set_config(config)`` starts a run with
    it. The configuration of a run, ``get_config()``, is a view of what the C
    library resolved at ``setup()`` (defaults, the TOML file, options,
    ``SCOPE_PROFILER_*`` environment variables and keyword overrides, in that
    order of precedence). Each manager owns its own, so independently
    configured sessions coexist. Constructing it issues no MPI call.
    """

    def __init__(self, **settings):
        self._manager = None
        self._backend = None
        self._metadata = None
        self._metadata_path = None
        self._tracker = None
        self._created_ns = time.perf_counter_ns()
        self._settings = {}
        _expand_kwargs(settings)  # the library checks names, values and flat-plus-grouped conflicts
        for key, value in settings.items():
            if isinstance(value, _OptionGroup):
                for field, v in value._explicit():
                    self._settings[_core.find_setting(_spelling(key, field))] = v
            elif value is not None:
                self._settings[_core.find_setting(key)] = value
        backend = self._settings.get("gpu_timing_backend")
        if backend is not None and not isinstance(backend, str):
            self._backend = backend

    @classmethod
    def _bound(cls, manager, backend: Any = None, into: "ProfilingConfig | None" = None) -> "ProfilingConfig":
        """The configuration a manager's setup() resolved (``into``: the
        object set_config() installs, which becomes that view)."""
        self = into if into is not None else cls()
        self._manager = manager
        self._backend = backend
        self._metadata = None
        self._metadata_path = None
        self._tracker = None
        self._settings = {}
        return self

    def _resolved(self) -> bool:
        return self._manager is not None and self._manager.is_configured()

    def _value(self, name: str) -> Any:
        row = _BY_NAME[name]
        if self._resolved():
            got = self._manager.config_value(name)
            return _python_value(row, got[0] if got is not None else row["default"])
        if name in self._settings:
            return _python_value(row, _text(name, self._settings[name]))
        return _python_value(row, row["default"])

    def settings(self) -> dict:
        """The settings this configuration was given (a run's: those not at
        their default), as ``setup()`` keywords."""
        if not self._resolved():
            return dict(self._settings)
        out = {}
        for row in _TABLE:
            got = self._manager.config_value(row["name"])
            if got is not None and got[1] != 0:
                out[row["name"]] = _python_value(row, got[0])
        if self._backend is not None:
            out["gpu_timing_backend"] = self._backend
        return out

    def origin(self, name: str) -> str:
        """Where the resolved value of a setting came from."""
        name = _core.find_setting(name)
        if not self._resolved():
            return "override" if name in self._settings else "default"
        got = self._manager.config_value(name)
        return ("default", "file", "options", "env", "override")[got[1]] if got else "default"

    @classmethod
    def reset(cls):
        """Compatibility no-op retained for callers of older releases."""

    @property
    def comm(self):
        """MPI communicator or None if MPI is unavailable."""
        if "mpi4py.MPI" not in sys.modules and not os.environ.get("OMPI_COMM_WORLD_SIZE") \
                and not os.environ.get("PMI_SIZE"):
            return None
        try:
            from mpi4py import MPI
        except ImportError:
            return None
        return MPI.COMM_WORLD if MPI.Is_initialized() else None

    @property
    def memory_profile_path(self) -> Path | None:
        """Memray capture path, or None when allocation profiling is off."""
        if not self._resolved():
            if not self.use_memray:
                return None
            p = self._settings.get("memory_profile_path")  # else the library's rule: file_path's suffix replaced
            return Path(p) if p else Path(os.path.splitext(self.file_path)[0] + ".memray.bin")
        info = self._manager.config_info()
        p = info and info["memory_profile_path"]
        return Path(p) if p else None

    @property
    def gpu_timing_backend(self):
        """CUDA-event timing backend selector or backend object."""
        return self._backend if self._backend is not None else self._value("gpu_timing_backend")

    @property
    def start_time_ns(self) -> int:
        """The run's start time (ns, ``perf_counter_ns``'s clock), the timeline
        origin of the results; before setup, when this configuration was made."""
        info = self._manager.config_info() if self._resolved() else None
        return info["start_time_ns"] if info else self._created_ns

    @property
    def paused(self) -> bool:
        """Whether runtime timing collection is temporarily suspended."""
        info = self._manager.config_info() if self._resolved() else None
        return bool(info and info["paused"])

    @property
    def display_label(self) -> str:
        """The label post-processing shows: label, else the output file's stem."""
        info = self._manager.config_info() if self._resolved() else None
        return info["display_label"] if info else (self.label or Path(self.file_path).stem)

    @property
    def metadata(self) -> dict:
        """Environment metadata collected on this rank (hostname, OpenMP
        threads, ...): the library collects it at finalize, so this is the
        metadata of the last run finalized with this configuration (read from
        its results or its file), and empty before."""
        if self._metadata is None and self._metadata_path:
            try:
                self._metadata = _core.open(self._metadata_path).metadata()  # the reader closes when dropped
            except (OSError, ValueError, _core.ScopeProfilerError):
                self._metadata = {}
        return dict(self._metadata or {})

    @property
    def tracker(self):
        """None unless ``track_threads`` is set; otherwise the manager's tracker."""
        if not self.track_threads:
            return None
        return self._tracker

    def stop_memory_profiling(self) -> None:
        """Finish the allocation capture: done by the library at finalize."""

    def likwid_environment(self) -> dict:
        """Return the ``LIKWID_*`` environment variables of this process."""
        return {k: v for k, v in os.environ.items() if k.startswith("LIKWID_")}

    def pylikwid_markerinit(self):
        """LIKWID markers are opened by the library at setup when use_likwid is on."""

    def pylikwid_markerclose(self):
        """LIKWID markers are closed by the library at finalize; idempotent."""

    def collect_likwid_results(self, region_names) -> list:
        """The library writes LIKWID results into the file itself; read them with load()."""
        return []

    def __repr__(self):
        active = self._manager is not None and self._manager.is_active()
        return f"<ProfilingConfig file_path={self.file_path!r} active={active}>"


def _config_property(row: dict):
    name = row["name"]

    def get(self):
        return self._value(name)

    get.__name__ = name
    return property(get, doc=row["doc"])


for _row in _TABLE:
    if not hasattr(ProfilingConfig, _row["name"]):
        setattr(ProfilingConfig, _row["name"], _config_property(_row))
del _row
# help() and inspect show upstream's signature: every setting, with its default.
ProfilingConfig.__init__.__signature__ = inspect.Signature(
    [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + [inspect.Parameter(r["name"], inspect.Parameter.KEYWORD_ONLY, default=_signature_default(r),
                         annotation=_setup_annotation(r)) for r in _TABLE])

__all__ = [
    "tomllib", "GPUOptions", "HDF5Options", "MemrayOptions", "ProfilingConfig", "ProfilingOptions",
    "SetupOptions", "load_profiling_config", "ConfigurationError", "UnknownSettingError",
]
