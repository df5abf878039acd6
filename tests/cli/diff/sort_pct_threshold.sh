# --threshold hides small changes but never regions new in b
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" diff diff_a.h5 diff_b.h5 --metric avg --sort pct --threshold 30
