# a capture of tests/apps/memory_app.c: the peak is solve's 100 blocks of 1 KiB,
# the leak is leak_here's 5000 bytes, found by file and line
lib="$SP_BUILD/src/memory/libscope_profiler_memory.so" app="$SP_BUILD/tests/app-memory_app"
# not built here (the sanitizer builds), or a sanitizer owns malloc: skip
[[ -f $lib && -x $app ]] || exit 77
nm -D "$SP" 2>/dev/null | grep -q " __asan_init" && exit 77
LD_PRELOAD="$lib" "$app" run.bin || exit 1
"$SP" memory run.bin --top 1 | grep -v -e '^Memory over time' -e '^Releases of blocks'
