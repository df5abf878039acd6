# The report's "counters" view: a profile recorded with perf_events gets a
# table of each region's counter totals and means per call (its JSON in the
# page's blob, drawn by the generic table renderer); one without gets none.
OMP_NUM_THREADS=2 SCOPE_PROFILER_PERF_EVENTS=task-clock,page-faults SCOPE_PROFILER_QUIET=1 \
  SCOPE_PROFILER_FILE_PATH=counted.h5 "$SP_BUILD/examples/sim" --steps 3 --quiet || exit 3
[ -f counted.h5 ] || { echo "skip: perf_event_open is not available here"; exit 77; }
OMP_NUM_THREADS=2 SCOPE_PROFILER_FILE_PATH=plain.h5 "$SP_BUILD/examples/sim" --steps 3 --quiet || exit 3
"$SP" report counted.h5 -o with > /dev/null || exit 4
"$SP" report plain.h5 -o without > /dev/null || exit 5
echo "with: $(grep -c 'data-view="counters"' with/report.html) section"
grep -o '"counters":{"renderer":"table","rank_column":0,"region_column":1,"columns":\[[^]]*\]' with/report.html |
  grep -o '"label":"[^"]*"' | tr '\n' ' '; echo
# the region column is text (the page sorts it by name) and names a region
grep -o '"counters":{[^]]*\]' with/report.html | grep -o '{"key":"region"[^}]*}'
echo "without: $(grep -c 'data-view="counters"' without/report.html) section"
