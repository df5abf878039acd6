# inspect: header, clipped metadata and the default columns (total, descending)
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5
