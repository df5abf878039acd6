# A setting this build cannot honour warns once at setup, naming the setting,
# where it was set and the build switch that brings it; the run itself is
# recorded as usual. Under a launcher only rank 0 warns; `quiet` silences it.
# (This tree was built without NVTX and the memory capture: build.sh.)
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null
app="$SP_BUILD/tests/app-readme"
run() { "$@" "$app" > /dev/null; echo "exit $?, file: $(ls profiling_data.h5 2>/dev/null || echo none)"; rm -f profiling_data.h5; }
run env SCOPE_PROFILER_USE_NVTX=1
printf '[profiling.memray]\nenabled = true\n' > p.toml
run env SCOPE_PROFILER_CONFIG=p.toml
echo "rank 1, then quiet:"
run env OMPI_COMM_WORLD_RANK=1 SCOPE_PROFILER_USE_NVTX=1
run env SCOPE_PROFILER_USE_NVTX=1 SCOPE_PROFILER_QUIET=1
