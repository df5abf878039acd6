#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then build tests/install/consumer.c
# as an outside program: through find_package(ScopeProfiler) (shared and
# static imported targets) and through pkg-config; run each and check that it
# wrote its profile.
set -euo pipefail
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-install-XXXXXX"); trap 'rm -rf "$work"' EXIT
cmake --install "$SP_BUILD" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/scope_profiler.h"
test -x "$work/prefix/bin/scope-profiler"
libdir=$(ls -d "$work"/prefix/lib*/ | head -1)
cmake -S "$SP_SRC/tests/install" -B "$work/cm" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cm" >/dev/null
cd "$work"
LD_LIBRARY_PATH="$libdir" SCOPE_PROFILER_FILE_PATH=shared.h5 "$work/cm/consumer_shared"
SCOPE_PROFILER_FILE_PATH=static.h5 "$work/cm/consumer_static"
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -o consumer_pc "$SP_SRC/tests/install/consumer.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs scope_profiler)
LD_LIBRARY_PATH="$libdir" SCOPE_PROFILER_FILE_PATH=pc.h5 ./consumer_pc
for f in shared.h5 static.h5 pc.h5; do
  test -s "$f" || { echo "$f was not written"; exit 1; }
done
if [ -x /usr/bin/h5dump ]; then
  h5dump -d /rank_region_index/event_counts pc.h5 | grep -q '(0): 3' || { echo "pc.h5 lacks the 3 calls"; exit 1; }
fi
echo ok
