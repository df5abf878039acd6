# aggregate layout: counts and own time from summary rows, no percentiles
cp "$SP_SRC/tests/golden/aggregate.h5" .
"$SP" inspect aggregate.h5 --columns region calls total avg own p50
