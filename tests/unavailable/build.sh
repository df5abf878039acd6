#!/usr/bin/env bash
# Builds the tree the tests in tests/unavailable/ run against: this source
# configured with every optional feature switched off (NVTX, perf_events,
# LIKWID, the memory capture; no MPI, Fortran, benchmarks or examples), so
# the settings those switches bring are really unavailable there. The
# builds CI runs have every feature, and "not available in this build"
# must still be proven on each of them: the CLI and the Python package say
# it here, for rows that a build really lacks.
#   build.sh SRC DIR C_COMPILER WERROR PYTHON3|"" TARGET...
# Reconfigures and rebuilds DIR incrementally when it exists.
set -eu
src=$1 dir=$2 cc=$3 werror=$4 py=$5
shift 5
args=(-S "$src" -B "$dir" -DCMAKE_C_COMPILER="$cc" -DSP_WERROR="$werror"
      -DSP_WITH_NVTX=OFF -DSP_WITH_PERF=OFF -DSP_WITH_LIKWID=OFF -DSP_WITH_MEMORY=OFF
      -DSP_WITH_MPI=OFF -DSP_WITH_FORTRAN=OFF -DSP_BUILD_BENCH=OFF -DSP_BUILD_EXAMPLES=OFF)
if [[ -n "$py" ]]; then args+=(-DSP_WITH_PYTHON=ON -DPython3_EXECUTABLE="$py"); else args+=(-DSP_WITH_PYTHON=OFF); fi
cmake "${args[@]}" > "$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
# Under CTest's -j2 the other half of the machine runs tests: one job here.
cmake --build "$dir" -j1 --target "$@" > "$dir.build.log" 2>&1 || { tail -n 60 "$dir.build.log"; exit 1; }
# The point of the tree: what it left out.
"$dir/scope-profiler" config --help | grep -c 'Not available in this build' |
  { read -r n; echo "$n settings not available in $dir"; [[ $n -gt 0 ]]; }
