# usage errors exit 2
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/aggregate.h5" .
"$SP" diff diff_a.h5; echo "exit $?"
"$SP" diff diff_a.h5 diff_a.h5 --metric speed; echo "exit $?"
"$SP" diff diff_a.h5 diff_a.h5 --sort size; echo "exit $?"
"$SP" diff diff_a.h5 diff_a.h5 --threshold -3; echo "exit $?"
"$SP" diff diff_a.h5 "nomatch*.h5"; echo "exit $?"
"$SP" diff aggregate.h5 aggregate.h5 --metric p50
