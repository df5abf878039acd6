# an unknown --source name lists the regions and exits 2
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --source nope
