# `config check` refuses exactly what setup refuses: signal names setup
# cannot handle, an output directory that is missing or not writable from
# here, a file_path that is a directory; each with exit status 2.
unset $(compgen -e | grep '^SCOPE_PROFILER_') 2>/dev/null  # a clean environment
check() { $SP config check "$1" 2>&1; echo "exit $?"; }
printf '[profiling]\nsignals = ["SIGTERM", "SIGFOO"]\n' > sig.toml; check sig.toml
printf '[profiling]\nsignals = "TERM,USR2"\n' > sigok.toml; check sigok.toml
printf '[profiling]\nfile_path = "results/run.h5"\n' > nodir.toml; check nodir.toml
mkdir results; check nodir.toml
printf '[profiling]\nfile_path = "results"\n' > isdir.toml; check isdir.toml
printf 'x' > plain
printf '[profiling]\nfile_path = "plain/run.h5"\n' > notdir.toml; check notdir.toml
printf '[profiling]\nfile_path = "nowhere/run.h5"\ndeactivate_file_output = true\n' > nofile.toml
check nofile.toml
