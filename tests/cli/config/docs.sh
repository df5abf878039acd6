# `config docs` prints the generated docs/configuration.md.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
$SP config docs > docs.md; echo "exit $?"
head -n 4 docs.md
cmp -s docs.md "$SP_SRC/docs/configuration.md" && echo "same as docs/configuration.md"
