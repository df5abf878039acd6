# a malformed rank spec
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --ranks 3-1
