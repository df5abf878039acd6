# --fail-on-new makes a region the baseline lacks a failure
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" check diff_a.h5 diff_b.h5 --max-regression 30 --fail-on-new
