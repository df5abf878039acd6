# broken files are reported, never crash
cp "$SP_SRC/tests/golden/hostile_offsets.h5" .
printf "not hdf5\n" > notes.h5
"$SP" inspect hostile_offsets.h5; echo "exit $?"
"$SP" inspect notes.h5; echo "exit $?"
: > empty.h5
"$SP" inspect empty.h5
