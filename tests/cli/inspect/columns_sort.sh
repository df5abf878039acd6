# every column; sorted by p95 (reads events for the percentiles)
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 -q --columns region ranks calls total avg min max first last std p50 p95 p99 imbalance own --sort p95
