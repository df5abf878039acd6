# The report's "lines" view (source view with per-line heat): a profile
# recorded with use_line_profiler gets line_profiler's tables of its hottest
# (region, function) records in the page's blob, each line with its text,
# hits and CPU time, drawn by the "source" renderer; one without gets none.
# The timer clock samples at the kernel's tick (~250/s): 600 ms gives loop_b
# (a quarter of the CPU time) ~75 samples, enough for its hottest line to be
# HOT_B on a loaded machine too (150 ms gave ~19 and missed it under ASan).
SCOPE_PROFILER_USE_LINE_PROFILER=1 SCOPE_PROFILER_LINE_PROFILE_SAMPLER=timer SCOPE_PROFILER_QUIET=1 \
  SCOPE_PROFILER_FILE_PATH=lines.h5 "$SP_BUILD/tests/app-line_hot" 600 > /dev/null 2>&1 || exit 3
SCOPE_PROFILER_FILE_PATH=plain.h5 "$SP_BUILD/tests/app-readme" > /dev/null 2>&1 || exit 3
"$SP" report lines.h5 -o with > /dev/null || exit 4
"$SP" report plain.h5 -o without > /dev/null || exit 5
echo "with: $(grep -c 'data-view="lines"' with/report.html) section"
"$SP_PYTHON" - with/report.html <<'PY' || exit 6
import json, re, sys
html = open(sys.argv[1]).read()
blob = json.loads(re.search(r'<script type="application/json" id="sp-data">(.*?)</script>', html, re.S).group(1))
v = blob["views"]["lines"]
print("renderer:", v["renderer"])
recs = {r["function"]: r for r in v["records"] if r["region"] == "compute"}
for fn, mark in (("loop_a", "HOT_A"), ("loop_b", "HOT_B")):
    r = recs[fn]
    hot = max((row for row in r["rows"] if row[2] is not None), key=lambda row: row[2])
    share = hot[2] / r["total"]
    # The blob's numbers carry 9 significant digits (rp_json_num): each row
    # and the total are rounded to 5e-9 of themselves, so the sum of the rows
    # can miss a total over 1 s by a few ns (ASan's slower loops put more
    # samples above that). 2e-8 of the total is that rounding, twice over.
    rows_sum = sum(row[2] or 0 for row in r["rows"])
    print(f"{fn}: hottest line has {mark}: {mark in hot[3]}, share > 0.5: {share > 0.5}, "
          f"times sum to the total: {abs(rows_sum - r['total']) <= 2e-8 * r['total']}")
print("loop_b inlined into worker:", any("worker" in s for s in recs["loop_b"]["inlined_into"]))
print("region index names compute:", blob["regions"][recs["loop_a"]["ri"]]["name"] == "compute")
PY
echo "without: $(grep -c 'data-view="lines"' without/report.html) section"
