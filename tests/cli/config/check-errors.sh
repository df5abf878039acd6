# Every kind of error `config check` reports, each with exit status 2.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
check() { $SP config check "$1" 2>&1; echo "exit $?"; }
printf '[profiling]\nhdf5_compression = "bzip2"\n' > enum.toml; check enum.toml
printf '[profiling]\nbuffer_limit = "1024"\n' > type.toml; check type.toml
printf '[profiling]\nbuffer_limit = 0\n' > bound.toml; check bound.toml
printf '[profiling]\nuse_memray = true\nmemray.enabled = true\n' > both.toml; check both.toml
printf '[profiling]\naggregation_mode = true\ngpu.nvtx = true\n' > agg.toml; check agg.toml
printf '[profiling.hdf5]\ncompression_level = 4\n' > level.toml; check level.toml
printf '[profiling]\nhdf5_compression = "lzf"\nhdf5_compression_level = 1\n' > lzf.toml; check lzf.toml
printf '[profiling]\ngpu_sync_on_exit = true\n' > sync.toml; check sync.toml
printf 'file_path = "x.h5"\n[profiling]\n' > outside.toml; check outside.toml
printf 'x = 1979-05-27\n' > date.toml; check date.toml
printf '[[runs]]\n' > aot.toml; check aot.toml
printf '[profiling]\nlabel = "unterminated\n' > syntax.toml; check syntax.toml
check missing.toml
