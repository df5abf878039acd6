# `config show` prints one aligned line per setting (as many as --help
# lists), every one with an origin.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
$SP config show > show.txt || exit 1
n_show=$(wc -l < show.txt)
n_help=$($SP config --help | grep -c '^  [a-z_0-9]*\( \[[a-z0-9_.]*\]\)\?: ')
[[ $n_show == "$n_help" && $n_show -ge 29 ]] && echo "one line per setting"
[[ $(awk '{ print index($0, " = ") }' show.txt | sort -u | wc -l) == 1 ]] && echo "names aligned"
grep -cv ' (default)$' show.txt || true
