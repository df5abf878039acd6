# common.bash - sourced by the tests/cli/hostile/*.sh golden tests (not a test
# itself: run-one.sh collects only *.sh). `probe FILE...` runs
# `scope-profiler inspect -q` on each file under a time limit and prints one
# line "NAME: exit N" to stdout; the CLI's own message goes to stderr, where
# the golden .stderr.exact pins it. A hang shows as exit 124, a crash as 128+
# the signal, so the golden files fail loudly on either.
HOSTILE="$SP_SRC/tests/cli/hostile/files"
probe() {
  local f rc
  for f in "$@"; do
    timeout 60 "$SP" inspect "$f" -q > /dev/null
    rc=$?
    echo "$f: exit $rc"
  done
}
