#!/usr/bin/env bash
# A short libFuzzer run (15 s) under ASan and UBSan of the allocation capture
# reader and its analysis on mutated capture files (tests/fuzz/fuzz_memcap.c).
# The targets are built once by scripts/fuzz-all.sh in $SP_BUILD/fuzz-all
# and shared by the test_fuzz_*.sh tests; skipped (77) when clang or its
# libFuzzer runtime is missing.
set -u
SP_FUZZ_OUT="$SP_BUILD/fuzz-all" bash "$SP_SRC/scripts/fuzz-all.sh" "${SP_FUZZ_SECONDS:-15}" memcap
