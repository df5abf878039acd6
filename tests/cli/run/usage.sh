# scope-profiler run: mistakes are said before anything runs (exit 2)
"$SP" run; echo "exit $?"
"$SP" run --line-rate 0 -- true; echo "exit $?"
"$SP" run --set label -- true; echo "exit $?"
"$SP" run --set no_such_setting=1 -- true; echo "exit $?"
"$SP" run --set hdf5_compression=fast -- true; echo "exit $?"
"$SP" run --bogus -- true; echo "exit $?"
"$SP" run -- ./no-such-program; echo "exit $?"
ls
