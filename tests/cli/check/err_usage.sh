# usage and input errors exit 2, distinct from a regression (1)
cp "$SP_SRC/tests/golden/diff_a.h5" .
"$SP" check diff_a.h5 diff_a.h5; echo "exit $?"
"$SP" check diff_a.h5 diff_a.h5 --max-regression ten; echo "exit $?"
"$SP" check diff_a.h5 --max-regression 5; echo "exit $?"
"$SP" check diff_a.h5 missing.h5 --max-regression 5
