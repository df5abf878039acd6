# scope-profiler run --help
"$SP" run --help
