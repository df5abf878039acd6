#!/usr/bin/env bash
# A short libFuzzer run (about 15 s) of the configuration readers under
# AddressSanitizer and UndefinedBehaviorSanitizer: the TOML reader, the
# [profiling] loader with the resolver, and the key setter (scripts/fuzz.sh).
# Skipped (77) when clang or its libFuzzer runtime is not installed.
set -u
if ! command -v clang >/dev/null 2>&1; then
  echo "skip: no clang"
  exit 77
fi
probe=$(mktemp -d "${TMPDIR:-/tmp}/sp-fuzz-probe-XXXXXX")
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\n%s\n' \
  'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  > "$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
  echo "skip: clang has no libFuzzer runtime (Debian: libclang-rt-14-dev)"
  exit 77
fi
# Crash files (crash-*) land in the working directory: keep them in the build.
mkdir -p "$SP_BUILD/fuzz"
cd "$SP_BUILD/fuzz" || exit 1
SP_FUZZ_OUT="$SP_BUILD/fuzz" bash "$SP_SRC/scripts/fuzz.sh" 15 2>&1 | tail -n 8
exit "${PIPESTATUS[0]}"
