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

from . import _core
from ._core import (ConfigurationError, FormatError, ScopeProfilerError, ScopeProfilerWarning, StateError,
                    UnknownSettingError)
from .profile_config import (GPUOptions, HDF5Options, MemrayOptions, ProfilingConfig, ProfilingOptions,
                             SetupOptions, load_profiling_config)
from .profile_manager import SESSION_REGION, ProfileManager, Run
from .results import MPIRegion, ProfilingResults, Region, load, read_h5

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
    "setup", "finalize", "session", "run", "region", "profile_region", "profile", "is_active", "is_configured",
    "registered_regions", "recorded_regions", "get_region", "get_config", "pause", "resume",
    "register_opt_in_tag", "ScopeProfilerError", "ConfigurationError", "UnknownSettingError", "FormatError",
    "StateError", "ScopeProfilerWarning", "SESSION_REGION", "__version__",
]
