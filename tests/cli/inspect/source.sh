# --source prints the location and captured text, or "source not captured"
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --source solve setup step
