# Files written by the library carry the measured cost of one begin/end
# pair; inspect shows each region's overhead share and flags regions whose
# calls are too short to measure (halo: two stores), not long ones (step).
# halo's five calls average some 10 ns, 20-50 times under the bar (a mean of
# 20 pairs), but one interrupt inside one of them on a loaded machine lifts
# the mean over it, and then rightly no "!": the demo runs again (5 runs at
# most) until halo's recorded mean is under the bar.
for try in 1 2 3 4 5; do
  rm -f profiling_data.h5
  OMP_NUM_THREADS=2 "$SP_BUILD/examples/sim" --steps 5 --quiet || exit 3
  "$SP_PYTHON" - <<'PY' && break
import sys
import h5py
f = h5py.File("profiling_data.h5", "r")
names = [n.decode() for n in f["region_table/names"][:]]
rows = f["rank_region_index/summary_statistics"][:]
ids = f["rank_region_index/region_ids"][:]
mean = [r["mean"] for i, r in zip(ids, rows) if names[i] == "halo"][0]
sys.exit(0 if mean < 20 * f["metadata"].attrs["overhead_pair_ns"] else 1)
PY
done
out=$("$SP" inspect profiling_data.h5 -q) || exit 4
echo "$out" | head -1 | grep -c 'ovh %'
echo "$out" | awk '$1 == "halo" { print "halo flagged:", ($NF ~ /!$/) }
                   $1 == "step" { print "step flagged:", ($NF ~ /!$/) }' | sort
"$SP" inspect profiling_data.h5 -q --columns region calls | head -1 | grep -c "ovh" || true
