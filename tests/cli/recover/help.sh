# `scope-profiler recover --help`: the usage, what is removed after a whole
# recovery, and --keep
"$SP" recover --help
