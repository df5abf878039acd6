#!/usr/bin/env bash
# Builds and runs the libFuzzer targets for every reader of outside data
# except the TOML reader (scripts/fuzz.sh has that one): the profile reader
# on mutated HDF5 files (fuzz_reader), the JSON-profile and native-trace
# readers on mutated JSON and .spt files (fuzz_native), the crash-spill
# parser (fuzz_spill), region names through intern/begin/end/finalize
# (fuzz_names), settings from the environment (fuzz_env), allocation
# capture files (fuzz_memcap) and LIKWID's marker file and result stream
# (fuzz_likwid). tests/fuzz/fuzz_<target>.c says what each one feeds and
# checks.
#
#   scripts/fuzz-all.sh [SECONDS] [TARGET...]   (default 60 s each, all seven)
#
# The library is built once with clang under -fsanitize=fuzzer-no-link,
# address,undefined in $SP_FUZZ_OUT/lib (default build-fuzz-all/lib; serial
# HDF5 is linked as installed, not instrumented), then each target runs for
# SECONDS on its corpus: $SP_FUZZ_OUT/corpus/<target>, seeded from
# tests/fuzz/corpus/<target>. A failing input is left as
# $SP_FUZZ_OUT/crash-<target>-*. One line per target goes to stdout:
#   fuzz_<target>: <executions> executions in <s> s, <corpus> inputs, ok|FAILED
# Exit status: 0 when every target ran clean, 1 on a finding, 77 when clang
# or its libFuzzer runtime is missing (Debian: clang, libclang-rt-14-dev).
#
# Each run's random seed is printed on its line ("seed S"); SP_FUZZ_SEED=S
# sets it, and with SP_FUZZ_RUNS=N (stop after N inputs instead of at the
# time limit) and the same corpus a run mutates the same inputs again. A
# finding's own input (crash-<target>-*) replays alone: ./fuzz_<target> FILE.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-60}
[[ $# -gt 0 ]] && shift
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(reader native spill names env memcap likwid)
out=${SP_FUZZ_OUT:-$root/build-fuzz-all}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc=${SP_FUZZ_CC:-clang}

command -v "$cc" > /dev/null 2>&1 || { echo "skip: no $cc"; exit 77; }
# The probe's files are this caller's own: CTest runs the test_fuzz_*.sh
# scripts in parallel, and one caller's compiler must not read the source
# another is rewriting (a failed probe reads as "no libFuzzer": a skip).
probe="$out/probe.$$"
printf '%s\n' 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);' \
  'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
  > "$probe.c"
"$cc" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" > /dev/null 2>&1
probe_rc=$?
rm -f "$probe.c" "$probe"
if [[ $probe_rc -ne 0 ]]; then
  echo "skip: $cc has no libFuzzer runtime (Debian: libclang-rt-14-dev)"
  exit 77
fi

# One build for every target; concurrent callers (CTest runs the
# test_fuzz_*.sh scripts in parallel) wait for it instead of racing it.
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
build() {
  cmake -S "$root" -B "$out/lib" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS="$san -fsanitize=fuzzer-no-link" \
    -DSP_BUILD_TESTS=OFF -DSP_BUILD_BENCH=OFF -DSP_BUILD_EXAMPLES=OFF > "$out/lib.log" 2>&1 &&
    cmake --build "$out/lib" --target scope_profiler_static -j "${SP_FUZZ_JOBS:-2}" >> "$out/lib.log" 2>&1 ||
    { tail -n 30 "$out/lib.log"; return 1; }
  local t
  for t in "${targets[@]}"; do
    "$cc" -g -O1 $san -fsanitize=fuzzer -D_GNU_SOURCE -I"$root/include" -I"$root/src" \
      "$root/tests/fuzz/fuzz_$t.c" "$out/lib/libscope_profiler.a" \
      $(pkg-config --cflags --libs hdf5-serial libdw) -lzstd -llzf -lz -lm -lpthread -ldl \
      $(cat "$out/lib/sp_counter_libs.txt" 2>/dev/null) \
      -o "$out/fuzz_$t.new" && mv "$out/fuzz_$t.new" "$out/fuzz_$t" || return 1
  done
}
exec 9> "$out/.lock"
flock 9
build || { echo "fuzz-all: build failed"; exit 1; }
flock -u 9

# put FILE: stdin becomes FILE by a rename. Every caller writes the
# dictionaries and the suppressions while the fuzzers of the others run (a
# forked reader child reads the suppressions at its start): each reads
# either the old copy or the new one, never a half-written file.
put() { cat > "$1.$$" && mv -f "$1.$$" "$1"; }

# Dictionaries: tokens random mutation rarely invents. The environment
# target gets every setting's variable name, the reader the names a profile's
# groups, datasets and attributes have.
# (the settings table's blocks: rows "  X(number, name, group, field, ...")
{
  sed -n 's/^  X([0-9]*, \([a-z0-9_]*\),.*/\1/p' "$root"/src/*/*_settings.h | tr a-z A-Z | sed 's/.*/"&="/'
  printf '"%s"\n' SLURM_ ENABLE_TAGS= CONFIG= true false full minimal "," "*"
} | put "$out/env.dict"
printf '"%s"\n' scope_profiler_schema storage_layout columnar aggregate metadata region_table \
  names rank_region_index region_ids ranks event_offsets event_counts source_lines \
  exclusive_totals source_files source_texts tags summary_statistics aggregate_counts events \
  start_times end_times call_ids parent_ids thread_ids task_ids threads regions rank0 \
  start_deltas durations thread_table task_table aggregate_totals aggregate_minimums \
  aggregate_maximums aggregate_exclusives aggregate_statistics index ident native_id daemon \
  | put "$out/reader.dict"
printf '"%s"\n' "scope-profiler memory capture\\x0a\\x01\\x00" HEAD CLCK EVNT STCK REGN THRD MAPS STAT \
  | put "$out/memcap.dict"
printf '"%s"\n' SCOPEPRF '{' '}' '[' ']' ':' , '"format"' '"scope-profiler-profile"' '"format_version"' \
  '"regions"' '"name"' '"rank"' '"start_times_ns"' '"end_times_ns"' '"aggregate"' '"metadata"' \
  '"threads"' '"tasks"' '"call_ids"' '"parent_ids"' '"thread_ids"' '"task_ids"' '"tags"' \
  '"source_lineno"' '"event_data_available"' null true false '\\u0000' '\\ud800' 1e999 \
  | put "$out/native.dict"

# Serial HDF5 1.10 crashes and loops forever on some corrupt files
# (docs/reliability.md lists where), which no check of ours can prevent: the
# reader target runs in fork mode, where a crash or timeout is saved and the
# run goes on, and each saved input is then judged by hdf5_or_ours below.
declare -A extra=([reader]="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 -max_len=65536 -dict=$out/reader.dict"
                  [native]="-max_len=65536 -dict=$out/native.dict"
                  [spill]="-max_len=65536" [names]="-max_len=8192"
                  [env]="-max_len=4096 -dict=$out/env.dict"
                  [memcap]="-max_len=65536 -dict=$out/memcap.dict"
                  [likwid]="-max_len=16384")
# A run normally takes milliseconds; HDF5's endless loops would eat the
# reader's budget at a long timeout.
declare -A timeout=([reader]=3 [native]=20 [spill]=20 [names]=20 [env]=20 [memcap]=20 [likwid]=20)
# HDF5 1.10 leaks the strings it converted when a variable-length read fails
# midway on a corrupt file (allocated inside H5T__conv_vlen, never handed
# to us, so no H5Dvlen_reclaim can free them). Only that allocation site is
# suppressed; leaks of our own allocations still fail the run, and a missing
# reclaim after a successful read is caught by the unit tests under ASan
# (scripts/sanitize.sh), which run without this suppression.
printf 'leak:H5T__conv_vlen\n' | put "$out/lsan.supp"
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$out/lsan.supp:print_suppressions=0}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Replays a saved input and prints "hdf5 <function>" when the fault lies in
# libhdf5, "ours" when it lies in our code, "unconfirmed" when the replay is
# clean (a leak that libFuzzer saw after thousands of inputs in one process,
# which HDF5's free lists make depend on history). The fault is HDF5's when
# its innermost frame that is neither a sanitizer, libc nor libFuzzer frame is
# in libhdf5 and the memory it overran was not allocated by our code (a heap
# overflow inside an HDF5 memcpy into a buffer we malloc'd means we passed
# HDF5 a buffer too small); for a leak, when every leaked block was
# allocated inside libhdf5. The one blind spot, a vlen read we forget to
# reclaim, is covered by the unit tests under ASan (scripts/sanitize.sh).
runtime='interceptor|__asan|__sanitizer|__ubsan|__lsan|libc\.so|fuzzer::|libFuzzer'
runtime+='| in (malloc|calloc|realloc|free|strdup|strndup|posix_memalign|aligned_alloc) '
runtime+='|[( ](abort|raise|__pthread_kill)'
hdf5_or_ours() {
  local report
  # A timeout can be HDF5 itself filling a gigabyte-sized buffer that a
  # corrupt file claims (seen: 1.7 GB in one malloc inside libhdf5, a few
  # seconds of page faults on a loaded machine), and an out-of-memory the
  # same buffer when it pushes the run past -rss_limit_mb (seen: 1.4 GB in
  # H5T__conv_vlen reading a string dataset): replayed with allocations
  # capped, such an input stops at that malloc, and the stack says whose.
  if [[ $1 == *crash-reader-timeout-* || $1 == *crash-reader-oom-* ]]; then
    report=$(ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0:max_allocation_size_mb=512:allocator_may_return_null=0" \
      "$out/fuzz_reader" -timeout=60 -rss_limit_mb=2048 "$1" 2>&1)
    if grep -q "requested allocation size" <<< "$report" &&
       grep -E '^ +#[0-9]+ ' <<< "$report" | grep -vE "$runtime" | head -n 1 | grep -q libhdf5; then
      echo "hdf5 allocation"; return
    fi
  fi
  report=$(ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
    "$out/fuzz_reader" -timeout=3 -rss_limit_mb=2048 "$1" 2>&1)
  if ! grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error' <<< "$report"; then
    echo unconfirmed; return
  fi
  # the buffer overrun: whose code allocated it (the first frame past malloc)
  if sed -n '/allocated by thread/,/^$/p' <<< "$report" |
     awk -v rt="$runtime" '/^ +#[0-9]+ / && $0 !~ rt { print; exit }' |
     grep -qv libhdf5; then
    echo ours; return
  fi
  if grep -q "LeakSanitizer" <<< "$report"; then
    # one verdict per leaked block: the first frame past the allocator
    awk -v rt="$runtime" '/leak of/ { want = 1; next }
         want && /^ +#[0-9]+ / && $0 !~ rt {
           print (/libhdf5/ ? "hdf5" : "ours"); want = 0 }' <<< "$report" | sort -u |
      awk '{ v[$1] = 1 } END { print (("ours" in v) || !("hdf5" in v)) ? "ours" : "hdf5 a leak" }'
    return
  fi
  grep -E '^ +#[0-9]+ ' <<< "$report" | grep -vE "$runtime" |
    awk 'NR == 1 && !/libhdf5/ { print "ours"; exit }
         /libhdf5/ && $3 == "in" { print "hdf5 " $4; exit }
         !/libhdf5/ { print "hdf5 ?"; exit }
         END { if (NR == 0) print "ours" }'
}

# libFuzzer draws a seed when given 0 (or none) and only logs it: draw it
# here, so that every line says it and SP_FUZZ_SEED can give it back.
seed=${SP_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
[[ $seed =~ ^[0-9]+$ && $seed -le 4294967295 ]] ||
  { echo "fuzz-all: SP_FUZZ_SEED=$seed is not a whole number from 1 to 4294967295"; exit 2; }
[[ $seed -eq 0 ]] && seed=1
runs=()
if [[ -n ${SP_FUZZ_RUNS:-} ]]; then
  [[ $SP_FUZZ_RUNS =~ ^[0-9]+$ ]] || { echo "fuzz-all: SP_FUZZ_RUNS=$SP_FUZZ_RUNS is not a whole number"; exit 2; }
  runs=(-runs="$SP_FUZZ_RUNS")
fi

status=0
for t in "${targets[@]}"; do
  mkdir -p "$out/corpus/$t"
  log="$out/fuzz_$t.log"
  # shellcheck disable=SC2086
  (cd "$out" && "./fuzz_$t" -seed="$seed" "${runs[@]}" -max_total_time="$secs" -rss_limit_mb=2048 \
     -print_final_stats=1 -error_exitcode=99 -timeout_exitcode=98 -timeout="${timeout[$t]}" \
     -artifact_prefix="$out/crash-$t-" ${extra[$t]} \
     "$out/corpus/$t" "$root/tests/fuzz/corpus/$t") > "$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [[ -z "$execs" ]] && execs=$(grep -o '#[0-9]*' "$log" | tail -n 1 | tr -d '#')
  inputs=$(find "$out/corpus/$t" -type f | wc -l)
  if [[ $t == reader ]]; then
    # fork mode: judge every saved crash and timeout; only ours fail the run
    hdf5=0 ours=0
    for a in "$out"/crash-reader-{crash,timeout,leak,oom}-*; do
      [[ -e $a ]] || continue
      verdict=$(hdf5_or_ours "$a")
      if [[ $verdict == unconfirmed ]]; then
        echo "  not reproduced on replay: $a"
        mkdir -p "$out/unconfirmed" && mv "$a" "$out/unconfirmed/"
      elif [[ $verdict == hdf5* ]]; then
        hdf5=$((hdf5 + 1))
        echo "  inside HDF5 (${verdict#hdf5 }): $a"
        mkdir -p "$out/hdf5-bugs" && mv "$a" "$out/hdf5-bugs/"
      else
        echo "  OURS: $a"
        ours=1
      fi
    done
    # In fork mode the parent exits with the status of the last child that
    # failed (98/99 from our exit codes, 134 when ASan aborted it, 71, ...),
    # whatever the verdicts above. The run itself went well when the parent
    # wrapped up in order ("INFO: exiting:"); every failure it saw is an
    # artifact judged above, so only a parent that died without wrapping up
    # keeps its status.
    grep -q '^INFO: exiting: ' "$log" && rc=0
    [[ $ours -eq 1 ]] && rc=1
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')
    [[ $hdf5 -gt 0 ]] && echo "  $hdf5 input(s) crash or hang inside HDF5 itself: kept in $out/hdf5-bugs"
  fi
  if [[ $rc -eq 0 ]]; then
    echo "fuzz_$t: ${execs:-0} executions in $secs s, $inputs inputs, seed $seed, ok"
  else
    echo "fuzz_$t: ${execs:-0} executions, seed $seed, FAILED (exit $rc); log $log"
    echo "  again: SP_FUZZ_SEED=$seed SP_FUZZ_RUNS=${execs:-0} scripts/fuzz-all.sh $secs $t (same corpus)"
    grep -E "ERROR:|SUMMARY:|runtime error|^    #[0-9] " "$log" | head -n 20
    status=1
  fi
done
exit $status
