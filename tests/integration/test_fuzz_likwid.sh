#!/usr/bin/env bash
# A short libFuzzer run (15 s) under ASan and UBSan of the use_likwid parsers
# (LIKWID's marker file, the full-API child's result stream;
# tests/fuzz/fuzz_likwid.c). Built by scripts/fuzz-all.sh in
# $SP_BUILD/fuzz-all with the other targets; skipped (77) when clang or its
# libFuzzer runtime is missing.
set -u
SP_FUZZ_OUT="$SP_BUILD/fuzz-all" bash "$SP_SRC/scripts/fuzz-all.sh" "${SP_FUZZ_SECONDS:-15}" likwid
