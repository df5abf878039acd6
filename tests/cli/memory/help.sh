# scope-profiler memory --help
"$SP" memory --help
