# regions whose shortest call took 0 ns stay on the log axes: the time series,
# durations_min and the imbalance chart draw them in the band marked 0, inside
# the plot, and none is dropped
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
"$SP" report zero.h5 -o out -q; echo "exit $?"
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" out zero.h5
"$SP_PYTHON" - out <<'PY'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
for chart in ("timeseries", "durations_min", "imbalance"):
    root = ET.parse(f"{sys.argv[1]}/{chart}.svg").getroot()
    # the plot's vertical extent: the y axis line of its panel
    axis = next(e for e in root.iter(NS + "g") if e.get("class") == "yaxis").find(NS + "line")
    top, bottom = float(axis.get("y1")), float(axis.get("y2"))
    labels = [t.text for t in next(e for e in root.iter(NS + "g") if e.get("class") == "yaxis").iter(NS + "text")]
    per = {}
    for b in root.iter(NS + "rect"):
        if "bar" not in b.get("class", "").split():
            continue
        y, h = float(b.get("y")), float(b.get("height"))
        inside = top - 2 <= y and y + h <= bottom + 2 and h > 0
        r = b.get("data-region")
        n, ok = per.get(r, (0, 0))
        per[r] = (n + 1, ok + inside)
    print(chart, "axis", labels[0], "...", labels[-1], " ".join(f"{r}={ok}/{n}" for r, (n, ok) in sorted(per.items())))
PY
