# `config check` accepts a valid file that turns on settings this build left
# out, and on stderr warns about each as setup would.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
cat > run.toml <<'TOML'
[profiling]
file_path = "run.h5"
perf_events = ["cycles", "instructions"]
use_likwid = true

[profiling.gpu]
nvtx = true
timing = true
TOML
$SP config check run.toml; echo "exit $?"
