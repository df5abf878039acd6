# export json carries the device times as upstream's gpu_durations_ns (right
# after the timeline), and a JSON profile that has them reads back with them:
# the same GPU columns in inspect as from the HDF5 file
cp "$SP_SRC/tests/golden/gpu.h5" .
"$SP" export json gpu.h5 -o gpu.json || exit
"$SP_PYTHON" - <<'PY'
import json
rows = json.load(open("gpu.json"))["regions"]
for r in rows:
    if "start_times_ns" not in r:
        continue
    keys = [k for k in r if k.endswith("_ns") or k.endswith("_ids")]
    print(r["name"], r["rank"], keys[:3], r.get("gpu_durations_ns"))
PY
"$SP" inspect gpu.h5 -q --columns region calls gpu gpu_avg > h5.txt
"$SP" inspect gpu.json -q --columns region calls gpu gpu_avg > json.txt || echo "inspect gpu.json failed"
cmp -s h5.txt json.txt && echo "inspect: the same GPU columns from gpu.h5 and gpu.json"
cat json.txt
