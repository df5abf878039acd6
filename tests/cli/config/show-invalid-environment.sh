# A SCOPE_PROFILER_<SETTING> variable with a bad value is an error naming it.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
SCOPE_PROFILER_BUFFER_LIMIT=lots $SP config show
