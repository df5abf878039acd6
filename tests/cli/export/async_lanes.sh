# interleaved async tasks on one thread: each task is its own lane, so the
# traces nest without overlap warnings
cp "$SP_SRC/tests/golden/async.h5" .
"$SP" export speedscope async.h5 -o async.speedscope.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" speedscope async.speedscope.json 5
"$SP_PYTHON" -c "import json; print([p['name'] for p in json.load(open('async.speedscope.json'))['profiles']])"
"$SP" export chrome-trace async.h5 -o async.trace.json -q || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" chrome-trace async.trace.json 5
grep thread_name async.trace.json
"$SP" inspect async.h5 --tree -q
