# `config --help` marks exactly the settings this build left out, with the
# switch that brings each; docs/configuration.md, generated from the same
# table, is the same in every build (this one included).
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null
$SP config --help > help.txt
grep -B2 'Not available in this build' help.txt | grep -E '^  [a-z_]+( \[[a-z_.]+\])?:' | sed 's/:.*//'
grep -o 'rebuild with [^.]*' help.txt | sort | uniq -c
$SP config docs > docs.md
cmp -s docs.md "$SP_SRC/docs/configuration.md" && echo "config docs: same as docs/configuration.md"
