# gantt plot data: upstream columns, CRLF rows, seconds from the first entry
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" export csv multi.h5 -o gantt.csv --ranks 1 || exit
tr -d "\r" < gantt.csv
[ "$(tr -cd '\r' < gantt.csv | wc -c)" = "$(wc -l < gantt.csv)" ] && echo "every row ends in CRLF"
