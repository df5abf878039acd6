#!/usr/bin/env bash
# The C++ and Fortran front ends' programs, run and checked from their files
# with h5py (tests/frontends/CMakeLists.txt registers one ctest per case):
#
#   run.sh cxx      cxx_app: exceptions through regions, templates, threads,
#                   run-time names, a second manager, a session
#   run.sh fortran  fortran_app: nested regions by name and handle, OpenMP,
#                   pause/resume, TOML and keyword settings, setup errors
#   run.sh mixed    C++ -> Fortran -> C -> C++ in one process and one file
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-frontends-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
check() { "$SP_PYTHON" "$SP_SRC/tests/frontends/check_frontends.py" "$@"; }
structure() { "$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" "$@"; }
unset SCOPE_PROFILER_FILE_PATH SCOPE_PROFILER_MPI

case "$1" in
cxx)
  "$SP_FRONTEND_BIN/frontend-cxx" cxx.h5
  structure cxx.h5 --threads
  # 50 outer calls, the rethrower, and 4 threads x 10: each throw unwound
  # deepest < middle.inner < middle, every scope closed exactly once.
  check cxx.h5 --expect outer=50 --expect middle=91 --expect middle.inner=91 --expect deepest=91 \
    --expect rethrower=1 --expect rethrower.handler=1 --expect early=1 --expect accumulate=3 \
    --expect Grid.smooth=2 --expect dynamic.0=1 --expect dynamic.2=1 --expect dynamic=3 \
    --expect worker=4 --expect worker.step=400 --expect scope_profiler.session=1 \
    --expect side.hot=0 \
    --parent deepest=middle.inner --parent middle.inner=middle \
    --parent 'middle=outer|rethrower|worker.step' --parent rethrower.handler=rethrower \
    --parent worker.step=worker --parent outer=scope_profiler.session \
    --parent accumulate=scope_profiler.session --threads worker=4 --threads worker.step=4
  ;;
fortran)
  # The file names another file_path: the keyword argument wins.
  printf '[profiling]\nfile_path = "not-this.h5"\nlabel = "fortran-run"\n' > prof.toml
  OMP_NUM_THREADS=3 "$SP_FRONTEND_BIN/frontend-fortran" fortran.h5 prof.toml > out.txt 2> err.txt
  cat out.txt err.txt
  grep -q "^scope-profiler: setup: .*no_such_key_either" err.txt ||
    { echo "a setup failure without status= was not reported on stderr"; exit 1; }
  grep -q "scope-profiler summary: fortran-run" out.txt || { echo "no summary (verbose=.true.)"; exit 1; }
  [ ! -e not-this.h5 ] || { echo "the TOML file_path won over the keyword argument"; exit 1; }
  structure fortran.h5 --threads
  nthreads=$("$SP_PYTHON" -c 'import h5py,sys; print(int(h5py.File(sys.argv[1])["metadata"].attrs["omp_num_threads"]))' fortran.h5)
  [ "$nthreads" = 3 ] || { echo "omp_num_threads $nthreads, expected 3"; exit 1; }
  check fortran.h5 --expect timestep=3 --expect solve=93 --expect solve.iter=15 --expect halo=9 \
    --expect padded=1 --expect a=1 --expect paused=0 --expect b=0 --expect side.hot=0 \
    --parent timestep=- --parent solve.iter=solve --parent 'solve=timestep|halo' \
    --parent 'halo=timestep|-' --threads halo=3 --threads timestep=1
  "$SP_PYTHON" -c 'import h5py,sys; l=h5py.File(sys.argv[1])["metadata"].attrs["label"]; l=l.decode() if isinstance(l,bytes) else l; sys.exit(l!="fortran-run")' fortran.h5 ||
    { echo "the TOML file's label is not in the file"; exit 1; }
  ;;
mixed)
  "$SP_FRONTEND_BIN/frontend-mixed" mixed.h5
  structure mixed.h5
  check mixed.h5 --expect driver=3 --expect fortran.kernel=3 --expect c.helper=6 --expect cxx.leaf=6 \
    --expect shared=3 --parent driver=scope_profiler.session --parent fortran.kernel=driver \
    --parent c.helper=fortran.kernel --parent cxx.leaf=c.helper --parent shared=fortran.kernel
  ;;
*)
  echo "usage: run.sh cxx|fortran|mixed" >&2
  exit 2
  ;;
esac
echo ok
