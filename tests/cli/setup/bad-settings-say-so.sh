# A setup that fails says so on stderr, one line naming the setting and the
# fix, and the program (written like the README, never checking a status)
# runs on without a profile; `quiet` silences the line.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null
app="$SP_BUILD/tests/app-readme"
run() { "$@" "$app" > /dev/null; echo "exit $?, file: $(ls profiling_data.h5 2>/dev/null || echo none)"; }
run env SCOPE_PROFILER_BUFFER_LIMIT=abc
run env SCOPE_PROFILER_OUTPUT_MODE=Direct
run env SCOPE_PROFILER_SIGNALS=SIGTERM,SIGFOO
printf '[profiling]\nhdf5_compression = "bzip2"\n' > bad.toml
run env SCOPE_PROFILER_CONFIG=bad.toml
run env SCOPE_PROFILER_CONFIG=missing.toml
run env SCOPE_PROFILER_FILE_PATH=no/such/dir/run.h5
mkdir adir
run env SCOPE_PROFILER_FILE_PATH=adir
echo "quiet:"
run env SCOPE_PROFILER_BUFFER_LIMIT=abc SCOPE_PROFILER_QUIET=1
echo "good:"
run env SCOPE_PROFILER_BUFFER_LIMIT=64
