# `config --help`: usage, then every setting with its group spelling, type,
# default, allowed values or bounds, and doc line (generated from the table).
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
$SP config --help > help.txt; echo "exit $?"
head -n 4 help.txt
grep -A1 -E '^  (file_path|use_memray \[memray.enabled\]|gpu_timing_backend \[gpu.backend\]|buffer_limit|hdf5_compression \[hdf5.compression\]|hdf5_compression_level \[hdf5.compression_level\]|enable_tags):' help.txt
