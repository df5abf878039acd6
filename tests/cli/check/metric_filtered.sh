# another metric and a filter: solve only, avg
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" check diff_a.h5 diff_b.h5 --max-regression 20 --metric avg --include solve; echo "exit $?"
"$SP" check diff_b.h5 diff_a.h5 --max-regression 0 --include solve
