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
# 64 ranks: lanes past --max-bars / 24 are dropped by whole ranks (noted);
# the imbalance chart groups ranks into bars when they do not fit
"$SP" report ranks64.h5 -o many -q --max-bars 500 || exit
"$SP_PYTHON" "$C" many ranks64.h5 | grep -E 'gantt|timeseries|imbalance|FAIL'
grep -o '[a-z0-9]*: lanes of [0-9]* of [0-9]* ranks shown[^<]*' many/gantt.svg
"$SP" report ranks64.h5 -o fewbars -q --max-bars 100 || exit
"$SP_PYTHON" "$C" fewbars ranks64.h5 | grep -E 'imbalance|FAIL'
