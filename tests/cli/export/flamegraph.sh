# export flamegraph: the report's flame graph as one standalone SVG; the call
# paths and their calls checked against the call tree `inspect --tree` prints
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" export flamegraph multi.h5 -o flame.svg; echo "exit $?"
"$SP" export flamegraph multi.h5 -o - --ranks 1 --width 800 -q > r1.svg; echo "exit $?"
"$SP_PYTHON" - flame.svg r1.svg <<'PY'
import sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    bars = [e for e in root.iter(NS + "rect") if "bar" in e.get("class", "").split()]
    assert root.get("id") == "flame_graph" and int(root.get("data-bars")) == len(bars), path
    frames = sorted((b.get("data-region"), b.get("data-calls") or "1") for b in bars)
    print(path, root.get("width"), len(bars), "frames:", " ".join(f"{r}x{n}" for r, n in frames))
PY
"$SP" inspect multi.h5 --tree -q
"$SP" inspect multi.h5 --tree -q --ranks 1
