# Unknown SCOPE_PROFILER_* variables are ignored, and `config show` names
# them on stderr with the closest real variable; SCOPE_PROFILER_MPI and
# SCOPE_PROFILER_CONFIG are not settings but are known.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
SCOPE_PROFILER_FILEPATH=x.h5 SCOPE_PROFILER_MPI=1 SCOPE_PROFILER_hdf5_level=3 $SP config show 2>&1 >/dev/null | sort
