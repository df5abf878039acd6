# chrome-trace: valid Trace Event JSON, one X event per call, named lanes
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" export chrome-trace multi.h5 -o trace.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" chrome-trace trace.json 15
head -3 trace.json
