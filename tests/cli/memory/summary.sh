# a capture of tests/apps/memory_app.c: the peak is solve's 100 blocks of 1 KiB,
# the leak is leak_here's 5000 bytes, found by file and line
LD_PRELOAD="$SP_BUILD/src/memory/libscope_profiler_memory.so" "$SP_BUILD/tests/app-memory_app" run.bin || exit 1
"$SP" memory run.bin --top 1 | grep -v -e '^Memory over time' -e '^Releases of blocks'
