#!/usr/bin/env bash
# The test suite behind `make test`: every CTest test of the build directory
# (unit, integration, CLI golden tests, short fuzz runs), in parallel on the
# machine's cores. Extra arguments go to ctest (e.g. -L unit, -R config).
set -euo pipefail
build=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cd "$build"
exec ctest --output-on-failure --timeout 900 -j "$jobs" "$@"
