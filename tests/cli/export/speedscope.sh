# speedscope: one evented profile per lane, events ordered and nested
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/hier_nested.h5" .
"$SP" export speedscope multi.h5 -o multi.speedscope.json || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" speedscope multi.speedscope.json 15
"$SP" export speedscope hier_nested.h5 -o hier.speedscope.json --exclude io/ -q || exit
"$SP_PYTHON" "$SP_SRC/tests/cli/export/validate.py" speedscope hier.speedscope.json 4
