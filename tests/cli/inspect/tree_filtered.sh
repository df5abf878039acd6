# excluding solve re-attaches step to the session; rank 0 only
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --tree -q --exclude solve --ranks 0
