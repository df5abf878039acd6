"""scope_profiler: a region profiler for scientific Python, over the C
library libscope_profiler.

    import scope_profiler as sp

    sp.setup(file_path="run.h5")
    with sp.profile_region("step"):
        ...
    sp.finalize()
    res = sp.load("run.h5")

The module-level functions are the default manager's methods; a
``ProfileManager()`` instance is an independent manager. C code in the same
process that records with ``SP_REGION`` records into the default manager:
one timeline, one file.
"""

import os as _os
import sys as _sys


def _load_core():
    """The extension over libscope_profiler, or, in an MPI job, the same one
    over libscope_profiler_mpi (_core_mpi; the two cannot share a process).
    An MPI job: SCOPE_PROFILER_MPI=1, a launcher's per-rank environment, or
    mpi4py already imported; SCOPE_PROFILER_MPI=0 forces the serial one. The
    MPI one is loaded RTLD_GLOBAL so that its MPI_* wrappers
    (profile_mpi_calls) are the ones mpi4py calls."""
    forced = _os.environ.get("SCOPE_PROFILER_MPI", "").strip().lower()
    launched = any(v in _os.environ for v in ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                              "MV2_COMM_WORLD_RANK"))
    want_mpi = forced in ("1", "true", "yes", "on") or (
        forced not in ("0", "false", "no", "off") and (launched or "mpi4py.MPI" in _sys.modules))
    if want_mpi:
        import ctypes
        import importlib

        flags = _sys.getdlopenflags()
        _sys.setdlopenflags(flags | ctypes.RTLD_GLOBAL)
        try:
            core = importlib.import_module(__name__ + "._core_mpi")
        except ImportError:
            core = None
        finally:
            _sys.setdlopenflags(flags)
        if core is not None:
            _sys.modules[__name__ + "._core"] = core
            return core
    from . import _core as core

    return core


_core = _load_core()
#: True when this process uses libscope_profiler_mpi (an MPI job).
MPI_BUILD = _core.__name__.endswith("_core_mpi")

from ._core import (ConfigurationError, FormatError, ScopeProfilerError, ScopeProfilerWarning, StateError,
                    UnknownSettingError)
from .profile_config import (GPUOptions, HDF5Options, MemrayOptions, ProfilingConfig, ProfilingOptions,
                             SetupOptions, load_profiling_config)
from .profile_manager import SESSION_REGION, ProfileManager, Run
from .results import MPIRegion, ProfilingResults, Region, load, merge_results, read_h5, read_json

__version__ = _core.version()

setup = ProfileManager.setup
finalize = ProfileManager.finalize
session = ProfileManager.session
run = ProfileManager.run
region = ProfileManager.region
profile_region = ProfileManager.profile_region
profile = ProfileManager.profile
is_active = ProfileManager.is_active
is_configured = ProfileManager.is_configured
registered_regions = ProfileManager.registered_regions
recorded_regions = ProfileManager.recorded_regions
get_region = ProfileManager.get_region
get_config = ProfileManager.get_config
pause = ProfileManager.pause
resume = ProfileManager.resume
register_opt_in_tag = ProfileManager.register_opt_in_tag

__all__ = [
    "ProfileManager", "Run", "ProfilingOptions", "MemrayOptions", "GPUOptions", "HDF5Options", "ProfilingConfig",
    "SetupOptions", "load_profiling_config", "ProfilingResults", "MPIRegion", "Region", "load", "read_h5",
    "read_json", "merge_results",
    "setup", "finalize", "session", "run", "region", "profile_region", "profile", "is_active", "is_configured",
    "registered_regions", "recorded_regions", "get_region", "get_config", "pause", "resume",
    "register_opt_in_tag", "ScopeProfilerError", "ConfigurationError", "UnknownSettingError", "FormatError",
    "StateError", "ScopeProfilerWarning", "SESSION_REGION", "__version__",
]
