# errors exit 2 and leave no output file behind
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/aggregate.h5" "$SP_SRC/tests/golden/hostile_events.h5" .
"$SP" export chrome-trace multi.h5; echo "exit $?"
"$SP" export flamegraph2 multi.h5 -o x; echo "exit $?"
"$SP" export chrome-trace multi.h5 -o x --width 800; echo "exit $?"
"$SP" export flamegraph multi.h5 aggregate.h5 -o x; echo "exit $?"
"$SP" export flamegraph aggregate.h5 -o x; echo "exit $?"
"$SP" export chrome-trace multi.h5 aggregate.h5 -o x; echo "exit $?"
"$SP" export chrome-trace aggregate.h5 -o x; echo "exit $?"
"$SP" export speedscope multi.h5 --kind flame -o x; echo "exit $?"
"$SP" export chrome-trace multi.h5 -o nodir/x.json; echo "exit $?"
"$SP" export chrome-trace hostile_events.h5 -o x; echo "exit $?"
ls
