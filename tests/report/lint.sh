#!/usr/bin/env bash
# lint.sh - ESLint over the report's script (src/report/assets/report.js) with
# tests/report/eslint.config.mjs, using the linter scripts/install-lint.sh put
# in $SP_BUILD/lint-tools (`make test` installs it). Exit 77 (skipped) when it
# is not installed; any finding fails the test.
set -euo pipefail
tools="$SP_BUILD/lint-tools"
eslint="$tools/node_modules/.bin/eslint"
if [[ ! -x "$eslint" ]]; then
  echo "skip: ESLint not installed (scripts/install-lint.sh $tools)"
  exit 77
fi
# The configuration finds @eslint/js from where it lies: next to the tools.
work=$(mktemp -d "$tools/run-XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$SP_SRC/tests/report/eslint.config.mjs" "$SP_SRC/src/report/assets/report.js" "$work/"
cd "$work"
if ! "$eslint" --max-warnings 0 report.js; then
  echo "FAIL: ESLint findings in src/report/assets/report.js (lines as above)"
  exit 1
fi
echo "ok: src/report/assets/report.js passes ESLint $("$eslint" --version)"
