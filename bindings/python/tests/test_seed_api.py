"""The seed's scope_profiler.profile_config, name by name: one row per
documented class, field, property, method and function
(shared/seed/profile_config.md), checked against the package, plus the
members of ProfileManager that upstream documents. The rows are written
out here on purpose: they are the contract the package is held to, so a
setting renamed or dropped in the C table fails this file."""
import dataclasses
import inspect
import os
import typing
from pathlib import Path

import pytest

import scope_profiler as sp
from scope_profiler import profile_config as pc

# The seed's dataclasses: (class, fields in the seed's declaration order).
# The declaration order is the order of positional arguments.
SEED_GROUPS = [
    ("GPUOptions", ["timing", "backend", "nvtx", "sync_on_exit"]),
    ("HDF5Options", ["compression", "compression_level", "chunk_size"]),
    ("MemrayOptions", ["enabled", "path", "native_traces", "trace_python_allocators", "follow_fork"]),
]
SEED_OPTIONS_FIELDS = [
    "file_path", "label", "use_likwid", "perf_events", "use_line_profiler", "use_memray", "memory_profile_path",
    "memray_native_traces", "memray_trace_python_allocators", "memray_follow_fork", "deactivate_profiling",
    "use_nvtx", "use_gpu_timing", "gpu_timing_backend", "deactivate_file_output", "recursive_profile",
    "aggregation_mode", "profile_mpi_calls", "track_threads", "track_async", "capture_region_source",
    "metadata_detail", "buffer_limit", "output_mode", "hdf5_compression", "hdf5_compression_level",
    "hdf5_chunk_size", "enable_tags", "memray", "gpu", "hdf5", "gpu_sync_on_exit",
]

# SetupOptions: key -> the kind of its annotation in the seed.
SEED_SETUP_KEYS = {
    "aggregation_mode": bool, "buffer_limit": int, "capture_region_source": bool, "deactivate_file_output": bool,
    "deactivate_profiling": bool, "enable_tags": "seq", "file_path": str, "gpu_sync_on_exit": bool,
    "gpu_timing_backend": typing.Any, "hdf5_chunk_size": int, "hdf5_compression": str,
    "hdf5_compression_level": int, "label": str, "memory_profile_path": str, "memray_follow_fork": bool,
    "memray_native_traces": bool, "memray_trace_python_allocators": bool, "metadata_detail": str,
    "output_mode": str, "perf_events": "seq", "profile_mpi_calls": bool, "recursive_profile": bool,
    "track_async": bool, "track_threads": bool, "use_gpu_timing": bool, "use_likwid": bool,
    "use_line_profiler": bool, "use_memray": bool, "use_nvtx": bool,
}

# ProfilingConfig's constructor keywords and defaults (upstream's signature,
# the defaults of the seed's ProfilingOptions documentation).
SEED_CONFIG_DEFAULTS = {
    "file_path": "profiling_data.h5", "label": None, "use_likwid": False, "perf_events": None,
    "use_line_profiler": False, "use_memray": False, "memory_profile_path": None, "memray_native_traces": False,
    "memray_trace_python_allocators": False, "memray_follow_fork": False, "deactivate_profiling": False,
    "use_nvtx": False, "use_gpu_timing": False, "gpu_timing_backend": "auto", "gpu_sync_on_exit": False,
    "deactivate_file_output": False, "recursive_profile": False, "aggregation_mode": False,
    "profile_mpi_calls": False, "track_threads": False, "track_async": False, "capture_region_source": False,
    "metadata_detail": "minimal", "buffer_limit": 1024, "output_mode": "auto", "hdf5_compression": None,
    "hdf5_compression_level": None, "hdf5_chunk_size": None, "enable_tags": None,
}

# ProfilingConfig's properties: name -> the value a default run resolves to
# (a type where the value is the run's own).
SEED_CONFIG_PROPERTIES = {
    "aggregation_mode": False, "buffer_limit": 1024, "capture_region_source": False, "comm": None,
    "deactivate_file_output": False, "deactivate_profiling": False, "enable_tags": (),
    "file_path": "profiling_data.h5", "gpu_sync_on_exit": False, "gpu_timing_backend": "auto",
    "hdf5_chunk_size": None, "hdf5_compression": None, "hdf5_compression_level": None, "label": None,
    "memory_profile_path": None, "metadata": dict, "metadata_detail": "minimal", "output_mode": "auto",
    "paused": False, "perf_events": (), "profile_mpi_calls": False, "recursive_profile": False,
    "start_time_ns": int, "track_async": False, "track_threads": False, "tracker": None,
    "use_gpu_timing": False, "use_likwid": False, "use_line_profiler": False, "use_memray": False,
    "use_nvtx": False,
}
# name -> (kind, parameter names)
SEED_CONFIG_METHODS = {
    "collect_likwid_results": ("method", ["region_names"]),
    "likwid_environment": ("method", []),
    "pylikwid_markerclose": ("method", []),
    "pylikwid_markerinit": ("method", []),
    "reset": ("classmethod", []),
    "stop_memory_profiling": ("method", []),
}

# ProfileManager members upstream documents (api.qmd, modes.qmd, the seed; run_script: the snapshot).
UPSTREAM_MANAGER_MEMBERS = [
    "setup", "session", "profile", "region", "profile_region", "define_region", "metadata", "finalize",
    "read_results", "last_results", "get_region", "get_all_regions", "registered_regions", "recorded_regions",
    "is_configured", "is_active", "get_config", "set_config", "sample_every", "register_opt_in_tag", "run_script",
]
UPSTREAM_MODULE_FUNCTIONS = ["setup", "finalize", "session", "region", "profile", "is_active", "is_configured",
                             "registered_regions", "recorded_regions", "run"]


@pytest.fixture
def no_env(monkeypatch):
    for k in list(os.environ):
        if k.startswith("SCOPE_PROFILER_"):
            monkeypatch.delenv(k)


def test_module_attribute_tomllib():
    import tomllib

    assert pc.tomllib is tomllib
    assert set(pc.__all__) >= {"tomllib", "GPUOptions", "HDF5Options", "MemrayOptions", "ProfilingConfig",
                               "ProfilingOptions", "SetupOptions", "load_profiling_config"}


@pytest.mark.parametrize("cls_name,fields", SEED_GROUPS)
def test_group_dataclass(cls_name, fields):
    cls = getattr(pc, cls_name)
    assert cls is getattr(sp, cls_name)
    assert dataclasses.is_dataclass(cls)
    assert cls.__mro__[1].__name__ == "_OptionGroup"
    ours = [f for f in dataclasses.fields(cls)]
    assert [f.name for f in ours[: len(fields)]] == fields  # the seed's fields first, in its order
    assert all(f.default is None for f in ours)
    # Positionally, the seed's order: the first field is the first argument.
    first = cls(True if cls_name != "HDF5Options" else "gzip")
    assert getattr(first, fields[0]) is not None
    assert all(getattr(first, f) is None for f in fields[1:])
    assert inspect.signature(cls.to_kwargs).parameters.keys() == {"self"}
    assert cls().to_kwargs() == {}


def test_group_to_kwargs_flat_names():
    assert pc.GPUOptions(timing=True, backend="auto", nvtx=False, sync_on_exit=False).to_kwargs() == {
        "use_gpu_timing": True, "gpu_timing_backend": "auto", "use_nvtx": False, "gpu_sync_on_exit": False}
    assert pc.HDF5Options(compression="lzf", compression_level=None, chunk_size=64).to_kwargs() == {
        "hdf5_compression": "lzf", "hdf5_chunk_size": 64}
    assert pc.MemrayOptions(True, "m.bin", True, False, True).to_kwargs() == {
        "use_memray": True, "memory_profile_path": "m.bin", "memray_native_traces": True,
        "memray_trace_python_allocators": False, "memray_follow_fork": True}


def test_profiling_options_fields_in_seed_order():
    cls = pc.ProfilingOptions
    assert dataclasses.is_dataclass(cls) and cls is sp.ProfilingOptions
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    assert set(SEED_OPTIONS_FIELDS) <= set(names)
    assert all(f.default is None for f in fields)
    # Positional arguments keep the seed's meaning as far as they are
    # positional at all; a field that is keyword-only refuses a position.
    positional = [f.name for f in fields if not f.kw_only]
    assert positional == SEED_OPTIONS_FIELDS[: len(positional)]
    assert len(positional) >= 2
    o = cls(*[None] * (len(positional) - 1), "x")
    assert getattr(o, positional[-1]) == "x"
    with pytest.raises(TypeError):
        cls(*[None] * (len(positional) + 1))


@pytest.mark.parametrize("field", SEED_OPTIONS_FIELDS)
def test_profiling_options_field_defaults_to_none(field):
    assert getattr(pc.ProfilingOptions(), field) is None


def test_profiling_options_to_kwargs():
    assert inspect.signature(pc.ProfilingOptions.to_kwargs).parameters.keys() == {"self"}
    o = pc.ProfilingOptions(label="r", gpu=pc.GPUOptions(timing=True), hdf5=pc.HDF5Options(chunk_size=8),
                            memray=pc.MemrayOptions(path="x.bin"))
    assert o.to_kwargs() == {"label": "r", "use_gpu_timing": True, "hdf5_chunk_size": 8,
                             "memory_profile_path": "x.bin"}
    with pytest.raises(ValueError):
        pc.ProfilingOptions(gpu_sync_on_exit=True, gpu=pc.GPUOptions(sync_on_exit=True)).to_kwargs()


def test_setup_options_typed_dict():
    hints = typing.get_type_hints(pc.SetupOptions)
    assert set(SEED_SETUP_KEYS) <= set(hints)
    assert pc.SetupOptions.__total__ is False  # every keyword is optional
    flat = {f.name for f in dataclasses.fields(pc.ProfilingOptions)} - {"memray", "gpu", "hdf5"}
    assert set(hints) == flat  # upstream's test_setup_options_match_fields
    for key, kind in SEED_SETUP_KEYS.items():
        got = hints[key]
        if kind == "seq":
            assert set(typing.get_args(got)) >= {list[str], tuple[str, ...]}, key
        else:
            assert got == kind, key


def test_load_profiling_config_signature(tmp_path):
    params = inspect.signature(pc.load_profiling_config).parameters
    assert list(params) == ["path"]
    p = tmp_path / "c.toml"
    p.write_text('[profiling]\nbuffer_limit = 64\n[profiling.gpu]\nnvtx = false\n')
    assert pc.load_profiling_config(p) == {"buffer_limit": 64, "use_nvtx": False}
    assert pc.load_profiling_config(str(p)) == {"buffer_limit": 64, "use_nvtx": False}


def test_profiling_config_constructor_signature():
    sig = inspect.signature(pc.ProfilingConfig)
    for name, default in SEED_CONFIG_DEFAULTS.items():
        assert name in sig.parameters, name
        assert sig.parameters[name].default == default, name


def test_profiling_config_standalone(no_env):
    cfg = pc.ProfilingConfig(file_path="a.h5", buffer_limit=64, hdf5_compression="gzip",
                             enable_tags=["x"], perf_events="task-clock")
    assert cfg.file_path == "a.h5" and cfg.buffer_limit == 64 and cfg.hdf5_compression == "gzip"
    assert cfg.enable_tags == ("x",) and cfg.perf_events == ("task-clock",)
    assert cfg.label is None and cfg.metadata_detail == "minimal" and cfg.use_likwid is False
    assert cfg.start_time_ns > 0 and cfg.paused is False and cfg.tracker is None
    with pytest.raises(ValueError, match="buffer_limit"):
        pc.ProfilingConfig(buffer_limit=0)
    with pytest.raises(TypeError, match="did you mean 'buffer_limit'"):
        pc.ProfilingConfig(bufer_limit=4)


@pytest.mark.parametrize("name,expected", sorted(SEED_CONFIG_PROPERTIES.items()))
def test_profiling_config_property(no_env, name, expected, tmp_path, monkeypatch):
    assert isinstance(inspect.getattr_static(pc.ProfilingConfig, name), property), name
    monkeypatch.chdir(tmp_path)  # the default file_path is written here
    pm = sp.ProfileManager()
    pm.setup()
    try:
        value = getattr(pm.get_config(), name)
        if isinstance(expected, type):
            assert isinstance(value, expected), (name, value)
        else:
            assert value == expected and type(value) is type(expected), (name, value)
    finally:
        pm.finalize(verbose=False)
    # A configuration nobody set up answers with the seed's defaults too.
    value = getattr(pc.ProfilingConfig(), name)
    if isinstance(expected, type):
        assert isinstance(value, expected), (name, value)
    else:
        assert value == expected, (name, value)


def test_profiling_config_property_values_of_a_run(no_env, h5):
    pm = sp.ProfileManager()
    # A session: it removes the thread hooks at its end (setup() would keep them).
    with pm.session(file_path=h5, label="L", track_threads=True, hdf5_compression="gzip",
                    hdf5_compression_level=3, hdf5_chunk_size=128, enable_tags=["a"], metadata_detail="full",
                    output_mode="direct"):
        _check_run_config(pm.get_config(), h5)
    assert pm.get_config().metadata.get("label") == "L"  # read from the file finalize wrote


def _check_run_config(cfg, h5):
    assert (cfg.file_path, cfg.label, cfg.hdf5_compression, cfg.hdf5_compression_level, cfg.hdf5_chunk_size) == (
        h5, "L", "gzip", 3, 128)
    assert cfg.enable_tags == ("a",) and cfg.metadata_detail == "full" and cfg.output_mode == "direct"
    assert cfg.track_threads is True
    from scope_profiler.concurrency import ConcurrencyTracker

    assert isinstance(cfg.tracker, ConcurrencyTracker)  # track_threads alone gives the tracker
    assert cfg.metadata == {}  # collected at finalize


@pytest.mark.parametrize("name,spec", sorted(SEED_CONFIG_METHODS.items()))
def test_profiling_config_method(name, spec):
    kind, params = spec
    raw = inspect.getattr_static(pc.ProfilingConfig, name)
    if kind == "classmethod":
        assert isinstance(raw, classmethod)
        assert list(inspect.signature(getattr(pc.ProfilingConfig, name)).parameters) == params
    else:
        assert inspect.isfunction(raw)
        assert list(inspect.signature(raw).parameters)[1:] == params


def test_profiling_config_methods_behave(no_env, monkeypatch):
    monkeypatch.setenv("LIKWID_FILEPATH", "/tmp/x.txt")
    cfg = pc.ProfilingConfig()
    assert cfg.likwid_environment()["LIKWID_FILEPATH"] == "/tmp/x.txt"
    assert cfg.collect_likwid_results(["a"]) == []  # use_likwid off
    cfg.pylikwid_markerinit()
    cfg.pylikwid_markerclose()
    cfg.pylikwid_markerclose()  # idempotent
    assert pc.ProfilingConfig.reset() is None
    assert cfg.stop_memory_profiling() is None


@pytest.mark.parametrize("name", UPSTREAM_MANAGER_MEMBERS)
def test_profile_manager_member(name):
    assert callable(getattr(sp.ProfileManager, name)), name
    assert callable(getattr(sp.ProfileManager(), name)), name


@pytest.mark.parametrize("name", UPSTREAM_MODULE_FUNCTIONS)
def test_module_level_function(name):
    assert callable(getattr(sp, name))


def test_set_config_installs_a_config(no_env, h5):
    pm = sp.ProfileManager()
    cfg = pc.ProfilingConfig(file_path=h5, buffer_limit=32, label="via-set-config")
    pm.set_config(cfg)
    assert pm.is_active() and pm.get_config() is cfg
    assert cfg.buffer_limit == 32 and cfg.origin("buffer_limit") == "override"
    with pm.profile_region("r"):
        pass
    res = pm.finalize(verbose=False, return_results=True)
    assert res["r"].num_calls == 1 and res.label == "via-set-config"
    assert Path(h5).exists()


def test_setup_output_names_the_destination(no_env, tmp_path):
    pm = sp.ProfileManager()
    out = tmp_path / "direct.h5"
    pm.setup(output=out)
    assert pm.get_config().file_path == str(out)
    with pm.profile_region("r"):
        pass
    pm.finalize(verbose=False)
    assert out.exists()
    pm.setup(output=None, replace=True)  # kept in memory: no file at all
    assert pm.get_config().deactivate_file_output is True
    with pm.profile_region("r"):
        pass
    res = pm.finalize(verbose=False, return_results=True)
    assert res["r"].num_calls == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["direct.h5"]
    with pytest.raises(ValueError, match="export"):
        pm.setup(output=tmp_path / "run.json", replace=True)
    with pytest.raises(ValueError, match="not both"):
        pm.setup(output=out, file_path=str(out), replace=True)
    assert pm.get_config().deactivate_file_output is True  # the refused setups changed nothing
    value, res = sp.ProfileManager().run(lambda: 7, output=str(tmp_path / "run.h5"))
    assert value == 7 and (tmp_path / "run.h5").exists()
