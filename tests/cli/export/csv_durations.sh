# durations plot data over several files (regions common to all)
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" export csv "diff_*.h5" --kind durations -o - -q | tr -d "\r"
