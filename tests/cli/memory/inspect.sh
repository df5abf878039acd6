# use_memray's figures in inspect (the memory column set) and in `memory
# --profile`: tests/apps/memory_regions.c, whose numbers are glibc's usable
# sizes of its known blocks (outer keeps 7000 B while inner allocates and
# frees 1000, 30000 and 500 B)
lib="$SP_BUILD/src/memory/libscope_profiler_memory.so" app="$SP_BUILD/tests/app-memory_regions"
[[ -f $lib && -x $app ]] || exit 77
nm -D "$SP" 2>/dev/null | grep -q " __asan_init" && exit 77
LD_PRELOAD="$lib" SCOPE_PROFILER_FILE_PATH=run.h5 SCOPE_PROFILER_USE_MEMRAY=1 "$app" || exit 1
"$SP" inspect run.h5 -q --columns region calls alloc freed allocs peak --sort name
echo "-- sorted by peak, only inner:"
"$SP" inspect run.h5 -q --columns region allocs peak --sort peak --include inner
echo "-- the memory column set adds calls and total; the default columns gain alloc and peak:"
"$SP" inspect run.h5 -q --columns memory | head -1 | tr -s ' '
"$SP" inspect run.h5 -q | head -1 | tr -s ' '
echo "-- the capture's by-region rows, with the profile's calls:"
"$SP" memory run.memray.bin --profile run.h5 --top 0 | awk '$1 == "inner" || $1 == "outer" { $NF = ""; $1 = $1; print }'
