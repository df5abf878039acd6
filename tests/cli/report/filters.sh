# --include/--exclude/--ranks/--metrics/--label/--title reach every chart,
# the table and region_statistics.json
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
"$SP" report mpi4.h5 scale_4.h5 -o out --include s k h --exclude step --ranks 1,3 \
  --metrics total,avg --label run-a run-b --title 'Filtered <report>' || exit
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" out mpi4.h5 scale_4.h5 --include s k h \
  --exclude step --ranks 1,3 --labels run-a run-b
grep -o '<title>Filtered &lt;report&gt;</title>' out/report.html
grep -o '"filters": {[^}]*}' out/region_statistics.json || \
  "$SP_PYTHON" -c 'import json;print(json.load(open("out/region_statistics.json"))["filters"])'
