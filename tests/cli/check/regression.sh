# check exits 1 when a region got slower than allowed
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" check diff_a.h5 diff_b.h5 --max-regression 10
