# upstream snapshot layout: "io/write" stored as nested groups
cp "$SP_SRC/tests/golden/hier_nested.h5" .
"$SP" inspect hier_nested.h5 --regions-only --columns region ranks calls total imbalance own
