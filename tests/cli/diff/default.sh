# diff: sorted by |delta|; a region missing on one side counts as 0 there
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" diff diff_a.h5 diff_b.h5
