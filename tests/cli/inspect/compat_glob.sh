# upstream compatibility fixtures (schema 2 and hierarchical) through a glob
cp "$SP_SRC/tests/golden/compat_schema1.h5" "$SP_SRC/tests/golden/compat_schema2.h5" .
"$SP" inspect "compat_*.h5" --columns region calls total min max first last p50 own
