# chrome-trace with GPU times: one async "gpu" slice per timed call on its
# rank's process, lasting the call's device time; the untimed call has none
cp "$SP_SRC/tests/golden/gpu.h5" .
"$SP" export chrome-trace gpu.h5 -o trace.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" chrome-trace trace.json 24
grep -c '"cat":"gpu","ph":"b"' trace.json
