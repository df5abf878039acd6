#!/usr/bin/env bash
# The C++ and Fortran front ends of the installed package, from outside
# programs (the counterpart of test_install.sh for C): `cmake --install` into
# a temporary prefix (not on the system's library path), then
#   - a C++-only CMake project (tests/install/cxx): ScopeProfiler::cxx, and
#     ScopeProfiler::cxx_mpi required when the build has the MPI library (run
#     as an MPI singleton)
#   - a Fortran-only CMake project (tests/install/fortran): ScopeProfiler::fortran,
#     and ScopeProfiler::fortran_mpi with MPI's Fortran bindings likewise
#   - pkg-config: scope_profiler_cxx, scope_profiler_fortran, and the C
#     entry, each linked with its rpath variable and run WITHOUT
#     LD_LIBRARY_PATH
#   - examples/fortran/Makefile, a plain Makefile, as docs/fortran.md shows it
# Each serial program runs and its file must hold its 3 calls (h5py).
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-install-fe-XXXXXX"); trap 'rm -rf "$work"' EXIT
cmake --install "$SP_BUILD" --prefix "$work/prefix" >/dev/null
prefix="$work/prefix"
libdir=$(ls -d "$prefix"/lib*/ | head -1); libdir=${libdir%/}
export PKG_CONFIG_PATH="$libdir/pkgconfig"
unset LD_LIBRARY_PATH SCOPE_PROFILER_MPI
cached() { grep -E "^$1:" "$SP_BUILD/CMakeCache.txt" | cut -d= -f2-; }
have_fortran=$(cached SP_WITH_FORTRAN)
have_mpi=OFF
[ -f "$libdir/cmake/ScopeProfiler/ScopeProfilerMPITargets.cmake" ] && have_mpi=ON
calls3() { # calls3 FILE: the file holds the region "consumer" with 3 calls
  "$SP_PYTHON" "$SP_SRC/tests/frontends/check_frontends.py" "$1" --expect consumer=3
}
cd "$work"

test -f "$prefix/include/scope_profiler.hpp"
test -f "$PKG_CONFIG_PATH/scope_profiler_cxx.pc"
# rpath variables, and every .pc file resolves
for pc in "$PKG_CONFIG_PATH"/*.pc; do
  name=$(basename "$pc" .pc)
  pkg-config --exists --print-errors "$name"
  # (relocatable: the path goes through ${pcfiledir}, so compare it resolved)
  rp=$(pkg-config --variable=rpath "$name")
  [ "${rp#-Wl,-rpath,}" != "$rp" ] && [ "$(readlink -f "${rp#-Wl,-rpath,}")" = "$(readlink -f "$libdir")" ] ||
    { echo "$name: rpath variable is '$rp', expected -Wl,-rpath,$libdir"; exit 1; }
done

# C++: CMake, C++ only
cmake -S "$SP_SRC/tests/install/cxx" -B cm-cxx -DCMAKE_PREFIX_PATH="$prefix" -DSP_EXPECT_MPI=$have_mpi \
  > cm-cxx.log 2>&1 || { cat cm-cxx.log; exit 1; }
cmake --build cm-cxx > cm-cxx-build.log 2>&1 || { cat cm-cxx-build.log; exit 1; }
SCOPE_PROFILER_FILE_PATH=cm-cxx.h5 cm-cxx/consumer_cxx
calls3 cm-cxx.h5
if [ $have_mpi = ON ]; then # an MPI singleton (no mpirun): one rank's file
  SCOPE_PROFILER_FILE_PATH=cm-cxx-mpi.h5 cm-cxx/consumer_cxx_mpi
  calls3 cm-cxx-mpi.h5
fi

# C++: pkg-config with the rpath variable (no LD_LIBRARY_PATH)
c++ -std=c++11 -Wall -Wextra -Wpedantic -Werror -o pc-cxx "$SP_SRC/tests/install/consumer.cpp" \
  $(pkg-config --cflags --libs scope_profiler_cxx) $(pkg-config --variable=rpath scope_profiler_cxx)
SCOPE_PROFILER_FILE_PATH=pc-cxx.h5 ./pc-cxx
calls3 pc-cxx.h5

# C: pkg-config with the rpath variable, strict ISO C (no _POSIX_C_SOURCE)
cc -std=c11 -Wall -Wextra -Wpedantic -Werror -o pc-c "$SP_SRC/tests/install/consumer.c" \
  $(pkg-config --cflags --libs scope_profiler) $(pkg-config --variable=rpath scope_profiler)
SCOPE_PROFILER_FILE_PATH=pc-c.h5 ./pc-c
calls3 pc-c.h5

if [ "$have_fortran" != ON ]; then
  echo "ok (built without Fortran: the Fortran part is not checked)"
  exit 0
fi
moddir="$prefix/include/scope_profiler/fortran"
test -f "$moddir/scope_profiler.mod"
test -f "$moddir/scope_profiler.f90"
test -f "$libdir/libscope_profiler_fortran.a"

# Fortran: CMake, Fortran only
cmake -S "$SP_SRC/tests/install/fortran" -B cm-f -DCMAKE_PREFIX_PATH="$prefix" -DSP_EXPECT_MPI=$have_mpi \
  > cm-f.log 2>&1 || { cat cm-f.log; exit 1; }
cmake --build cm-f > cm-f-build.log 2>&1 || { cat cm-f-build.log; exit 1; }
SCOPE_PROFILER_FILE_PATH=cm-f.h5 cm-f/consumer_fortran
calls3 cm-f.h5
if [ $have_mpi = ON ]; then # MPI's Fortran bindings, as a singleton
  SCOPE_PROFILER_FILE_PATH=cm-f-mpi.h5 cm-f/consumer_fortran_mpi
  "$SP_PYTHON" "$SP_SRC/tests/frontends/check_frontends.py" cm-f-mpi.h5 --expect consumer=1 --ranks 1
fi

# Fortran: pkg-config with the rpath variable
gfortran -o pc-f "$SP_SRC/tests/install/consumer.f90" \
  $(pkg-config --cflags --libs scope_profiler_fortran) $(pkg-config --variable=rpath scope_profiler_fortran)
SCOPE_PROFILER_FILE_PATH=pc-f.h5 ./pc-f
calls3 pc-f.h5

# Fortran: the plain Makefile of examples/fortran, copied as a user would
mkdir mk && cp "$SP_SRC/examples/fortran/Makefile" "$SP_SRC/examples/fortran/heat.f90" mk/
make -s -C mk PREFIX="$prefix" LIBDIR="$libdir" > mk.log 2>&1 || { cat mk.log; exit 1; }
(cd mk && OMP_NUM_THREADS=2 ./heat > heat.txt) || { cat mk/heat.txt; exit 1; }
"$SP_PYTHON" "$SP_SRC/tests/frontends/check_frontends.py" mk/heat.h5 --expect step=50 --expect sweep=50 \
  --expect init=1 --parent sweep=step

# The installed module source compiles on its own (for other compilers).
gfortran -std=f2008 -c "$moddir/scope_profiler.f90" -o own.o -J "$work"
echo ok
