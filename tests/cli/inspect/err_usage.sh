# usage errors exit 2 and say where the help is
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --columns region bogus; echo "exit $?"
"$SP" inspect multi.h5 --sort bogus; echo "exit $?"
"$SP" inspect multi.h5 --metadata-only --regions-only; echo "exit $?"
"$SP" inspect multi.h5 --include "("; echo "exit $?"
"$SP" inspect --frobnicate; echo "exit $?"
"$SP" inspect
