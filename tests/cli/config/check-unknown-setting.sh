# An unknown key fails with exit 2 and a message naming file:line:column and
# the closest real setting.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
printf '[profiling]\nlabel = "x"\nfile_pth = "run.h5"\n' > bad.toml
$SP config check bad.toml
