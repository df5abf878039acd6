#!/usr/bin/env bash
# docs/configuration.md is generated from the settings table: it must be
# exactly what `scope-profiler config docs` prints, so a setting added,
# removed or re-documented without regenerating the document fails here.
set -u
cli="$SP_BUILD/scope-profiler"
if [[ ! -x "$cli" ]]; then
  echo "missing $cli; build the scope-profiler target first"
  exit 1
fi
if ! diff -u "$SP_SRC/docs/configuration.md" <("$cli" config docs); then
  echo "docs/configuration.md is stale; regenerate it with:"
  echo "  $cli config docs > $SP_SRC/docs/configuration.md"
  exit 1
fi
echo "docs/configuration.md is up to date"
