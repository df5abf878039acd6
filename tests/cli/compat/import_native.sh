# import-native merges upstream's native traces and a per-rank HDF5 file
# into one profile with the right ranks: native-v1.spt as rank 0, a copy of
# native-v2.spt whose header says rank 1, and hdf5-schema-3.h5 with its row
# on rank 2 (the fixtures are all rank 0; two inputs claiming one rank are an
# error); the merged file is upstream's schema 3 and its metadata the HDF5
# input's plus the native marks
mkdir traces
cp "$SP_SRC/tests/fixtures/upstream/native-v1.spt" traces/run_rank00000.spt
"$SP_PYTHON" - "$SP_SRC/tests/fixtures/upstream" <<'PY'
import shutil, sys
import h5py
src = sys.argv[1]
b = bytearray(open(src + "/native-v2.spt", "rb").read())
b[12] = 1  # the int32 rank
open("traces/run_rank00001.spt", "wb").write(bytes(b))
shutil.copy(src + "/hdf5-schema-3.h5", "traces/run_rank00002.h5")
with h5py.File("traces/run_rank00002.h5", "a") as f:
    f["rank_region_index/ranks"][0] = 2
PY
cp "$SP_SRC/tests/fixtures/upstream/native-v2.spt" other.spt
echo "== clash"
"$SP" import-native traces/run_rank00000.spt other.spt -o clash.h5; echo "exit $?"
echo "== merge"
"$SP" import-native traces -o job.h5 || exit
"$SP" inspect job.h5 --columns region ranks calls total min max | sed 1d
"$SP" export json job.h5 -o - -q | sed 's/"exporter": [^,]*, //'
"$SP_PYTHON" - <<'PY'
import h5py
f = h5py.File("job.h5", "r")
print("schema", int(f.attrs["scope_profiler_schema"]), sorted(f["events"]), f["rank_region_index/ranks"][:].tolist())
PY
echo "== gzip"
"$SP" export json job.h5 -o job.json.gz -q || exit
od -An -tx1 -N8 job.json.gz  # magic, deflate, no flags, mtime 0
"$SP" export json job.json.gz -o - -q | cmp - <("$SP" export json job.h5 -o - -q) && echo "job.json.gz reads back to the same export"
