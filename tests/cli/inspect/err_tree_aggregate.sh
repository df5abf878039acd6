# --tree needs individual calls
cp "$SP_SRC/tests/golden/aggregate.h5" .
"$SP" inspect aggregate.h5 --tree -q
