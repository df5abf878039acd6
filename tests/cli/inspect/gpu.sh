# inspect: a file with GPU times (use_gpu_timing) gains gpu, gpu avg and
# gpu/cpu by default; the columns can be chosen and sorted on; a call without
# a device time (-1) counts in calls but not in gpu; upstream's hierarchical
# layout carries them too
cp "$SP_SRC/tests/golden/gpu.h5" "$SP_SRC/tests/golden/gpu_schema1.h5" .
"$SP" inspect gpu.h5 -q
"$SP" inspect gpu.h5 -q --ranks 1 --columns region calls gpu gpu_avg gpu_ratio --sort gpu
"$SP" inspect gpu_schema1.h5 -q
