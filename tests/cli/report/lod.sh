# a lane with more calls than pixel columns: one bar per column, a note on
# the chart, every call still accounted for; --max-bars folds further
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
C="$SP_SRC/tests/report/check_report.py"
"$SP" report lod.h5 -o narrow -q --width 600 || exit
"$SP_PYTHON" "$C" narrow lod.h5 --width 600 | grep -E 'gantt|flame_chart|timeseries|FAIL'
"$SP" report lod.h5 -o capped -q --max-bars 200 || exit
"$SP_PYTHON" "$C" capped lod.h5 | grep -E 'gantt|flame_chart|timeseries|FAIL'
"$SP" report lod.h5 -o wide -q --width 8000 || exit
"$SP_PYTHON" "$C" wide lod.h5 --width 8000 | grep -E 'gantt|FAIL'
