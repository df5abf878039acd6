#!/usr/bin/env bash
# The unit tests and the golden CLI tests built with clang under
# AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), and the
# threaded unit tests under ThreadSanitizer (scripts/sanitize.sh asan tsan).
# The two instrumented builds live in $SP_BUILD/sanitize/ and are reused by
# the next run. Skipped (77) when clang is missing.
set -u
SP_SANITIZE_DIR="$SP_BUILD/sanitize" bash "$SP_SRC/scripts/sanitize.sh" asan tsan
