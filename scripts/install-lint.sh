#!/usr/bin/env bash
# Installs the JavaScript linter of the report's script (ESLint, pinned, from
# the npm registry) into DIR (default build/lint-tools), for the lint/report_js
# test. Needs Node.js >= 18.18 and npm: Debian's nodejs and npm are installed
# when missing (as root). Idempotent: an install of the pinned version is kept.
# Usage: scripts/install-lint.sh [DIR]
set -euo pipefail
dest=${1:-build/lint-tools}
eslint_version=9.39.5

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "scope-profiler: the report's lint needs Node.js and npm: apt-get install -y nodejs npm" >&2
    exit 1
  fi
  echo "scope-profiler: installing nodejs npm" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends nodejs npm
fi
have=$(node -e "try{console.log(require('$dest/node_modules/eslint/package.json').version)}catch(e){}" \
  2>/dev/null || true)
[[ "$have" == "$eslint_version" ]] && exit 0
mkdir -p "$dest"
echo "scope-profiler: installing eslint@$eslint_version into $dest" >&2
npm install --prefix "$dest" --no-audit --no-fund --no-save --loglevel=error \
  "eslint@$eslint_version" "@eslint/js@$eslint_version" >&2
