#!/usr/bin/env bash
# A short libFuzzer run (15 s) under ASan and UBSan of the readers of JSON
# profiles and native traces (tests/fuzz/fuzz_native.c), seeded with
# upstream's fixtures and our JSON export. Built by scripts/fuzz-all.sh in
# $SP_BUILD/fuzz-all like the other test_fuzz_*.sh tests; skipped (77) when
# clang or its libFuzzer runtime is missing.
set -u
SP_FUZZ_OUT="$SP_BUILD/fuzz-all" bash "$SP_SRC/scripts/fuzz-all.sh" "${SP_FUZZ_SECONDS:-15}" native
