# --sort name with --columns given as --columns=X repeated and -q
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 -q --sort name --columns=region --columns=calls --columns=imbalance
