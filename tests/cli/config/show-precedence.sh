# `config show FILE`: defaults < FILE < environment, with each value's origin;
# SCOPE_PROFILER_ENABLE_TAGS adds to the file's tags; derived values.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
cat > p.toml <<'TOML'
[profiling]
file_path = "out/run.h5"
buffer_limit = 2
label = "from-file"
use_memray = true
enable_tags = ["a"]
[profiling.hdf5]
compression = "gzip"
compression_level = 6
TOML
SCOPE_PROFILER_LABEL=from-env SCOPE_PROFILER_ENABLE_TAGS=b,c SCOPE_PROFILER_TRACK_ASYNC=yes \
SCOPE_PROFILER_HDF5_COMPRESSION= \
  $SP config show p.toml | tr -s ' ' |
  grep -E '^(file_path|label|buffer_limit|use_memray|memory_profile_path|track_threads|track_async|metadata_detail|hdf5_compression|hdf5_compression_level|hdf5_chunk_size|enable_tags|perf_events) '
