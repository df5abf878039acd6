# `config check` accepts valid files, flat or grouped, and says so on stdout;
# nothing on stderr: every setting they use is available in this build
# (tests/unavailable/config-check.sh checks the warnings of one without).
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
cat > run.toml <<'TOML'
# a shared file: other tools' tables are left alone
[tool.other]
x = 1

[profiling]
file_path = "out/run.h5"
label = "baseline"
perf_events = ["cycles", "instructions"]
track_async = true

[profiling.gpu]
timing = true

[profiling.hdf5]
compression = "zstd"
compression_level = 3
TOML
mkdir out # setup would refuse file_path in a directory that does not exist
cp "$SP_SRC/tests/config/valid/profiling-inline.toml" inline.toml
printf 'buffer_limit = 4096\nmetadata_detail = "full"\n' > small.toml
$SP config check run.toml && $SP config check inline.toml && $SP config check small.toml
