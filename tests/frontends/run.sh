#!/usr/bin/env bash
# The front ends' programs, run and checked from their files
# with h5py (tests/frontends/CMakeLists.txt registers one ctest per case):
#
#   run.sh cxx      cxx_app: exceptions through regions, templates, threads,
#                   run-time names, a second manager, a session
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d /tmp/sp-frontends-XXXXXX); trap 'rm -rf "$work"' EXIT
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
*)
  echo "usage: run.sh cxx" >&2
  exit 2
  ;;
esac
echo ok
