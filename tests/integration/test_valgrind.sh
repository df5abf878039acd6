#!/usr/bin/env bash
# The demo (examples/sim) under valgrind memcheck, and the CLI reading the
# file it wrote: no memory error, no definite or indirect leak after finalize
# (scripts/sanitize.sh valgrind; suppressions in tests/valgrind.supp).
# Skipped (77) when valgrind is missing.
set -u
SP_VALGRIND_BUILD="$SP_BUILD" bash "$SP_SRC/scripts/sanitize.sh" valgrind
