# without a terminal, with two files, or with an unknown rank: a clear error, exit 2
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/diff_a.h5" .
"$SP" tui multi.h5 < /dev/null; echo "exit $?"
"$SP" tui multi.h5 diff_a.h5; echo "exit $?"
"$SP" tui; echo "exit $?"
"$SP" tui missing.h5; echo "exit $?"
"$SP" tui multi.h5 --ranks 7 < /dev/null; echo "exit $?"
# a terminal ncurses has no entry for: our message and exit 2 (run on a pty)
script -qec "TERM=nosuchterm $SP tui multi.h5" /dev/null | tr -d '\r'; echo "exit ${PIPESTATUS[0]}"
