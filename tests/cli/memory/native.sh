# with native traces the sites carry their callers
lib="$SP_BUILD/src/memory/libscope_profiler_memory.so" app="$SP_BUILD/tests/app-memory_app"
# not built here (the sanitizer builds), or a sanitizer owns malloc: skip
[[ -f $lib && -x $app ]] || exit 77
nm -D "$SP" 2>/dev/null | grep -q " __asan_init" && exit 77
LD_PRELOAD="$lib" "$app" run.bin native || exit 1
"$SP" memory run.bin --top 1 --frames 2 | sed -n '/^Top allocation sites/,$p'
