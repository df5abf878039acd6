# the reader's fixtures: threads and two ranks (multi), async task lanes,
# the aggregate layout (no calls: time charts are explained, not drawn) and
# upstream's hierarchical layout
G="$SP_SRC/tests/golden"
C="$SP_SRC/tests/report/check_report.py"
"$SP" report "$G/multi.h5" -o multi --flame-ranks all -q || exit
"$SP_PYTHON" "$C" multi "$G/multi.h5" --flame-ranks all
grep -o 'data-rank="[0-9]*" transform' multi/flame_chart.svg | sort | uniq -c
grep -o '>worker \[t1\]\|>thread [0-9]* ▸' multi/gantt.svg multi/flame_chart.svg | sort | uniq -c
"$SP" report "$G/async.h5" -o async -q || exit
"$SP_PYTHON" "$C" async "$G/async.h5" | grep -E 'flame|FAIL'
grep -o '>thread 0 task [0-9]* ▸\|>thread 0 ▸' async/flame_chart.svg
"$SP" report "$G/aggregate.h5" -o agg -q || exit
"$SP_PYTHON" "$C" agg "$G/aggregate.h5"
grep -o 'Not drawn: [^<]*' agg/report.html
"$SP" report "$G/compat_schema1.h5" -o hier -q || exit
"$SP_PYTHON" "$C" hier "$G/compat_schema1.h5" --loose | grep -E 'gantt|json|FAIL'
