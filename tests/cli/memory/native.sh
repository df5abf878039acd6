# with native traces the sites carry their callers
LD_PRELOAD="$SP_BUILD/src/memory/libscope_profiler_memory.so" "$SP_BUILD/tests/app-memory_app" run.bin native || exit 1
"$SP" memory run.bin --top 1 --frames 2 | sed -n '/^Top allocation sites/,$p'
