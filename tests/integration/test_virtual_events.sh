#!/usr/bin/env bash
# Event columns that are HDF5 virtual datasets of the same file (source file
# ".", what a streamed run published without copying its blocks would write:
# BENCHMARKS.md "Round 3"). Files we wrote are rewritten with h5py so that
# each row is several segments of block datasets, block-major; our reader
# must give exactly what it gives for the contiguous file (inspect --tree,
# export json, chrome-trace), reading the sources directly. A virtual column
# whose source is another file is still refused, and one whose mappings
# leave a gap opens or fails cleanly.
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-virtual-XXXXXX"); trap 'rm -rf "$work"' EXIT  # mktemp fills in the X's
cd "$work"
unset SCOPE_PROFILER_CONFIG SCOPE_PROFILER_HDF5_COMPRESSION SCOPE_PROFILER_HDF5_SCHEMA
sp="$SP_BUILD/scope-profiler"
sim="$SP_BUILD/examples/sim"
OMP_NUM_THREADS=1 SCOPE_PROFILER_FILE_PATH=one.h5 "$sim" --steps 40 --quiet
OMP_NUM_THREADS=3 SCOPE_PROFILER_FILE_PATH=threads.h5 SCOPE_PROFILER_TRACK_THREADS=1 "$sim" --steps 20 --quiet
"$SP_PYTHON" - <<'PY'
import h5py
import numpy as np

def virtualize(src, dst, blocks, source=".", gap=False):
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        for k in f:
            if k != "events":
                f.copy(f[k], g, name=k)
        off = f["rank_region_index/event_offsets"][:].astype(np.int64)
        cnt = f["rank_region_index/event_counts"][:].astype(np.int64)
        n = int(cnt.sum())
        other = h5py.File("other.h5", "a") if source != "." else None
        for c in f["events"]:
            col = f["events"][c][:]
            lay = h5py.VirtualLayout(shape=(n,), dtype=col.dtype)
            for b in range(blocks):
                pieces, parts, soff = [], [], 0
                for r in range(len(off)):
                    lo, hi = cnt[r] * b // blocks, cnt[r] * (b + 1) // blocks
                    pieces.append(col[off[r] + lo:off[r] + hi])
                    parts.append((int(off[r] + lo), int(hi - lo), soff))
                    soff += int(hi - lo)
                name = "staging/%06d/%s" % (b, c)
                (other if other is not None else g).create_dataset(name, data=np.concatenate(pieces))
                vs = h5py.VirtualSource(source, name, shape=(soff,))
                for i, (voff, k, so) in enumerate(parts):
                    if k and not (gap and b == 1 and i == 0):
                        lay[voff:voff + k] = vs[so:so + k]
            g.create_virtual_dataset("events/" + c, lay, fillvalue=-1)
        if other is not None:
            other.close()
    with h5py.File(dst, "r") as g, h5py.File(src, "r") as f:
        for c in f["events"]:
            assert g["events"][c].is_virtual
            if not gap and source == ".":
                assert np.array_equal(g["events"][c][:], f["events"][c][:]), c

virtualize("one.h5", "one_v.h5", 3)
virtualize("threads.h5", "threads_v.h5", 5)
virtualize("one.h5", "outside_v.h5", 2, source="other.h5")
virtualize("one.h5", "gap_v.h5", 3, gap=True)

# sources replaced by 2-D datasets of the same names: each mapping still
# records a 1-D source (HDF5 1.10's own read of such a file crashes)
for src, dst in (("one_v.h5", "rank2_v.h5"), ("gap_v.h5", "rank2gap_v.h5")):
    with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
        for k, v in f.attrs.items():
            g.attrs[k] = v
        for k in f:
            f.copy(f[k], g, name=k)  # a virtual dataset's copy keeps its mappings
        for b in g["staging"]:
            for c in list(g["staging"][b]):
                col = g["staging"][b][c][:]
                del g["staging"][b][c]
                g["staging"][b].create_dataset(c, data=np.stack([col, col], axis=1))
        assert g["events/start_deltas"].is_virtual

# sources named in this file (".") but reached through an external link
# to another file: the other file's values, never to be read
with h5py.File("one.h5", "r") as f, h5py.File("elink_v.h5", "w") as g, h5py.File("elsewhere.h5", "w") as o:
    for k, v in f.attrs.items():
        g.attrs[k] = v
    for k in f:
        if k != "events":
            f.copy(f[k], g, name=k)
    for c in f["events"]:
        col = f["events"][c][:]
        o.create_dataset("staging/" + c, data=col)
        lay = h5py.VirtualLayout(shape=col.shape, dtype=col.dtype)
        lay[:] = h5py.VirtualSource(".", "ext/" + c, shape=col.shape)
        g.create_virtual_dataset("events/" + c, lay, fillvalue=-1)
    g["ext"] = h5py.ExternalLink("elsewhere.h5", "/staging")
print("virtual files written")
PY
for f in one threads; do
  "$sp" inspect --tree "$f.h5" | tail -n +2 > "$f.tree"
  "$sp" inspect --tree "${f}_v.h5" | tail -n +2 > "${f}_v.tree"
  cmp "$f.tree" "${f}_v.tree" || { echo "$f: inspect --tree differs for the virtual file"; exit 1; }
  "$sp" export json "$f.h5" -o "$f.json" > /dev/null
  "$sp" export json "${f}_v.h5" -o "${f}_v.json" > /dev/null
  "$SP_PYTHON" - "$f.json" "${f}_v.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d.pop("metadata", None)
assert a["regions"] == b["regions"], "regions differ"
assert a.get("threads") == b.get("threads"), "threads differ"
print("%s: %d regions, every call equal" % (sys.argv[1], len(a["regions"])))
PY
done
# another file's values are never read
if "$sp" inspect outside_v.h5 > outside.out 2> outside.err; then
  echo "a virtual column reading another file was accepted"; exit 1
fi
grep -q "outside the file" outside.err || { cat outside.err; exit 1; }
if "$sp" inspect --tree elink_v.h5 > elink.out 2> elink.err; then
  echo "a virtual column whose source path leaves the file by an external link was accepted"; exit 1
fi
grep -q "outside the file" elink.err || { cat elink.err; exit 1; }
# a source that is not 1-D, whatever its mappings: refused at open, saying why
for f in rank2_v rank2gap_v; do
  set +e
  "$sp" inspect --tree "$f.h5" > "$f.out" 2> "$f.err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || { echo "$f: exit $rc, not 2"; cat "$f.err"; exit 1; }
  grep -q "over a source that is not a 1-D dataset" "$f.err" || { echo "$f: unclear error"; cat "$f.err"; exit 1; }
done
# a gap in the mappings: HDF5's own read (fill values), or a clean error
set +e
"$sp" inspect --tree gap_v.h5 > gap.out 2> gap.err
rc=$?
set -e
[ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { echo "gap: exit $rc"; cat gap.err; exit 1; }
echo "virtual event columns: ok"
