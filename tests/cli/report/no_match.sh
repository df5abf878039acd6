# filters that keep no region: a warning, a page that says why, no charts
"$SP" report "$SP_SRC/tests/golden/multi.h5" -o out --include nothing; echo "exit $?"
grep -o 'Not drawn: [^<]*' out/report.html | sort | uniq -c
