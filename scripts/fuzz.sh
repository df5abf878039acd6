#!/usr/bin/env bash
# Fuzzes the configuration readers (tests/fuzz/fuzz_toml.c: the TOML reader,
# the [profiling] loader with the resolver, the key setter and overrides)
# with libFuzzer under AddressSanitizer and UndefinedBehaviorSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]     (default 20 s)
#
# The build needs only clang with libFuzzer (Debian: clang, libclang-rt-14-dev)
# and src/common/ + src/config/, so it works while the rest of the tree does
# not compile. Inputs found are kept in $SP_FUZZ_OUT/corpus (default
# build-fuzz/corpus), seeded from tests/fuzz/corpus/toml and the TOML test
# corpus; a crash leaves crash-* in the working directory and exits non-zero.
# The run's random seed is printed last ("seed S"); SP_FUZZ_SEED=S sets it
# (with -runs=N among the extra flags and the same corpus, the run mutates
# the same inputs again).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-20}
[[ $# -gt 0 ]] && shift
out=${SP_FUZZ_OUT:-$root/build-fuzz}
mkdir -p "$out/corpus"

cd "$root"
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Iinclude -Isrc src/common/*.c src/config/*.c tests/fuzz/fuzz_toml.c -lm -o "$out/fuzz_toml"

# A libFuzzer dictionary of tokens random mutation rarely invents (in its
# syntax \" is a quote, \\ a backslash, \xNN a byte), plus every setting name.
{
  cat <<'DICT'
"["
"]"
"[["
"{"
"}"
" = "
","
"."
"#"
"\"\"\""
"'''"
"\\u00e9"
"\\U0001F600"
"\\n"
"true"
"false"
"inf"
"nan"
"0x"
"0o"
"0b"
"e+"
"_"
"\x0d\x0a"
"[profiling]"
"[profiling.hdf5]"
"profiling"
"memray"
"gpu"
"hdf5"
"1979-05-27"
DICT
  sed -n 's/^  X([0-9]*, \([a-z0-9_]*\), \([a-z0-9]*\), \([a-z0-9_]*\),.*/"\1"\n"\3"/p' \
    src/*/*_settings.h | sort -u
} > "$out/toml.dict"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# libFuzzer draws a seed when given none and only logs it: draw it here.
seed=${SP_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[[ $seed =~ ^[0-9]+$ && $seed -le 4294967295 ]] ||
  { echo "fuzz.sh: SP_FUZZ_SEED=$seed is not a whole number from 1 to 4294967295"; exit 2; }
[[ $seed -eq 0 ]] && seed=1
rc=0
"$out/fuzz_toml" -seed="$seed" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -dict="$out/toml.dict" "$@" \
  "$out/corpus" tests/fuzz/corpus/toml tests/config/valid tests/config/invalid || rc=$?
echo "fuzz_toml: seed $seed$([[ $rc -ne 0 ]] && echo ", FAILED (exit $rc); again: SP_FUZZ_SEED=$seed scripts/fuzz.sh $secs")"
exit $rc
