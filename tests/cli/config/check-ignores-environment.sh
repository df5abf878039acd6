# `config check` judges the file alone: neither SCOPE_PROFILER_CONFIG nor a
# broken SCOPE_PROFILER_<SETTING> variable changes its verdict.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
printf '[profiling]\nbuffer_limit = 8\n' > ok.toml
SCOPE_PROFILER_BUFFER_LIMIT=bogus SCOPE_PROFILER_CONFIG=missing.toml $SP config check ok.toml
