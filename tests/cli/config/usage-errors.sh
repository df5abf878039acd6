# Usage errors exit 2 with a message on stderr.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
run() { echo "\$ config $*"; $SP config "$@" > out.txt 2>&1; local rc=$?; head -n 1 out.txt; echo "exit $rc"; }
run
run bogus
run check
run check a.toml b.toml
run show a.toml b.toml
run docs extra
run show --strict
