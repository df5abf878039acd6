# Without FILE, `config show` reads SCOPE_PROFILER_CONFIG, like setup() does.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
printf 'buffer_limit = 77\n' > env.toml
SCOPE_PROFILER_CONFIG=env.toml $SP config show | grep '^buffer_limit ' | tr -s ' '
