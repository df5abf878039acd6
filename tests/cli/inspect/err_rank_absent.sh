# a rank the file does not have
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --ranks 0,5
