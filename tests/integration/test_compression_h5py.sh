#!/usr/bin/env bash
# Compressed output read by programs that are not scope-profiler: the demo
# simulation writes one file per hdf5_compression value; h5py reads gzip and
# lzf natively (its built-in lzf filter) and zstd only through our plugin
# (HDF5_PLUGIN_PATH=$SP_BUILD/hdf5-plugins); every file passes the full
# check_profile.py check (summary rows recomputed from the events, decoded by
# sp_events.py; schema 3, and one gzip file in schema 2) and has the same
# structure as the uncompressed run (single-threaded, so the same calls, ids
# and nesting); h5dump reads zstd and lzf through the plugins, and h5py's own
# lzf file through ours.
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
plugins="$SP_BUILD/hdf5-plugins"
[ -f "$plugins/libsp_h5zstd.so" ] && [ -f "$plugins/libsp_h5lzf.so" ] || {
  echo "plugins not built in $plugins"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-compression-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
unset HDF5_PLUGIN_PATH SCOPE_PROFILER_HDF5_COMPRESSION_LEVEL SCOPE_PROFILER_CONFIG
export OMP_NUM_THREADS=1

run() { # NAME COMPRESSION STEPS [CHUNK]
  SCOPE_PROFILER_FILE_PATH="$1.h5" SCOPE_PROFILER_HDF5_COMPRESSION="$2" \
    SCOPE_PROFILER_HDF5_CHUNK_SIZE="${4:-}" "$SP_BUILD/examples/sim" --steps "$3" --cells 2000 --quiet
}
# A small chunk (at most 128 events) gives every compressed column several chunks.
run none none 60
run gzip gzip 60 128
run lzf lzf 60 128
run zstd zstd 60 128
# auto compresses only runs of 16384 events or more, as upstream (~67 events per step here).
run auto_small auto 60
run auto_big auto 400
run none_big none 400
SCOPE_PROFILER_HDF5_SCHEMA=2 run gzip2 gzip 60 128

check() { "$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" "$@" --expect step=60; }
check none.h5
check gzip.h5
check lzf.h5
HDF5_PLUGIN_PATH="$plugins" check zstd.h5
check auto_small.h5
check gzip2.h5
"$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" auto_big.h5 --expect step=400

cat > compare.py <<'EOF'
import os, sys
import h5py
import numpy as np
sys.path.insert(0, os.path.join(os.environ["SP_SRC"], "tests", "integration"))
import sp_events

CODED = ("start_deltas", "durations")

def fail(msg):
    print("test_compression_h5py: " + msg, file=sys.stderr)
    sys.exit(1)

def filters(d):
    return dict(d._filters)

def structure(path):
    with h5py.File(path, "r") as f:
        out = {"names": [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]}
        for k in ("region_ids", "event_offsets", "event_counts"):
            out[k] = f["rank_region_index/" + k][:]
        ev = sp_events.nested(f)
        out["call_ids"], out["parent_ids"] = ev["call"], ev["parent"]
        s, e = ev["start"], ev["end"]
        if not (e >= s).all():
            fail(path + ": an event ends before it starts")
        out["n"] = len(s)
    return out

which = sys.argv[1]
if which == "native":
    ref = structure("none.h5")
    with h5py.File("none.h5", "r") as f:
        d = f["events/start_deltas"]
        if d.chunks is not None or filters(d):
            fail("none.h5 should be contiguous and unfiltered: %r %r" % (d.chunks, filters(d)))
    for name, want, cols in (("gzip", "gzip", CODED), ("lzf", "lzf", CODED),
                             ("gzip2", "gzip", ("start_times", "end_times"))):
        with h5py.File(name + ".h5", "r") as f:
            for col in cols:
                d = f["events/" + col]
                # byte-shuffle only where a value has several bytes
                if (d.compression != want or d.shuffle != (d.dtype.itemsize > 1) or not d.chunks
                        or d.chunks[0] > 128):
                    fail("%s.h5 %s: compression %r shuffle %r chunks %r" % (name, col, d.compression, d.shuffle, d.chunks))
                if d.id.get_num_chunks() < 2:
                    fail("%s.h5 %s should span several chunks" % (name, col))
        got = structure(name + ".h5")
        for k in ("names", "region_ids", "event_offsets", "event_counts", "call_ids", "parent_ids"):
            if not np.array_equal(np.asarray(ref[k], dtype=object if k == "names" else None),
                                  np.asarray(got[k], dtype=object if k == "names" else None)):
                fail("%s.h5 differs from the uncompressed run in %s" % (name, k))
    # zstd is not built into h5py: without a plugin its events are unreadable
    # (unless the system has a zstd plugin on HDF5's default path).
    with h5py.File("zstd.h5", "r") as f:
        try:
            f["events/start_deltas"][:]
        except (OSError, ValueError):
            pass
        else:
            print("note: a system zstd plugin read zstd.h5 without HDF5_PLUGIN_PATH")
    with h5py.File("auto_small.h5", "r") as f:
        d = f["events/start_deltas"]
        if d.chunks is not None or filters(d):
            fail("auto_small.h5 is below the threshold and must be plain")
    with h5py.File("auto_big.h5", "r") as f, h5py.File("none_big.h5", "r") as g:
        d = f["events/start_deltas"]
        if d.compression != "gzip" or len(d) < 16384 or d.compression_opts != 4 or not d.shuffle:
            fail("auto_big.h5 (%d events): compression %r" % (len(d), d.compression))
        a, b = sp_events.nested(f), sp_events.nested(g)
        for col in ("call", "parent"):
            if not np.array_equal(a[col], b[col]):
                fail("auto_big.h5 differs from the uncompressed run in " + col)
        # shuffle + deflate on int64 start deltas and durations
        ratio = os.path.getsize("none_big.h5") / os.path.getsize("auto_big.h5")
        print("auto_big: %.2fx smaller than none_big" % ratio)
        if ratio < 3:
            fail("auto compressed only %.1fx" % ratio)
elif which == "plugin":
    ref = structure("none.h5")
    got = structure("zstd.h5")
    with h5py.File("zstd.h5", "r") as f:
        d = f["events/start_deltas"]
        fl = filters(d)
        # shuffle only where it can help: not on a column narrowed to one byte
        # (how narrow depends on the run's timing)
        if (("shuffle" in fl) != (d.dtype.itemsize > 1) or "32015" not in fl or not d.chunks
                or d.chunks[0] > 128):
            fail("zstd.h5 filters %r chunks %r dtype %s" % (fl, d.chunks, d.dtype))
        with open("zstd_start.txt", "w") as out:
            out.write(" ".join(str(v) for v in d[:5]))
    for k in ("region_ids", "event_offsets", "event_counts", "call_ids", "parent_ids"):
        if not np.array_equal(ref[k], got[k]):
            fail("zstd.h5 differs from the uncompressed run in " + k)
    # h5py's own lzf encoder, for h5dump through our lzf plugin.
    with h5py.File("h5py_lzf.h5", "w") as f:
        f.create_dataset("x", data=np.arange(50000, dtype=np.int64) * 1000003 + 17,
                         chunks=(4096,), compression="lzf", shuffle=True)
EOF
"$SP_PYTHON" compare.py native
HDF5_PLUGIN_PATH="$plugins" "$SP_PYTHON" compare.py plugin

if command -v h5dump >/dev/null; then
  # h5dump prints the values as "(i): v, v, ..." rows (wrapped); the first five.
  first5() { sed -n '/DATA {/,/}/p' | grep -o '([0-9]*): .*' | sed 's/^([0-9]*): //; s/,/ /g' \
    | tr -s ' \n' '  ' | sed 's/^ *//' | cut -d' ' -f1-5; }
  got=$(HDF5_PLUGIN_PATH="$plugins" h5dump -d /events/start_deltas -c 5 zstd.h5 | first5)
  want=$(cat zstd_start.txt)
  [ "$got" = "$want" ] || { echo "h5dump zstd.h5: '$got', h5py: '$want'"; exit 1; }
  HDF5_PLUGIN_PATH="$plugins" h5dump -p -H -d /events/start_deltas zstd.h5 | grep -q 'FILTER_ID 32015' \
    || { echo "h5dump does not show filter 32015"; exit 1; }
  HDF5_PLUGIN_PATH="$plugins" h5dump -d /events/durations lzf.h5 >/dev/null \
    || { echo "h5dump cannot read lzf.h5 through the plugin"; exit 1; }
  got=$(HDF5_PLUGIN_PATH="$plugins" h5dump -d /x -s 49995 -c 5 h5py_lzf.h5 | first5)
  want=$("$SP_PYTHON" -c 'print(" ".join(str(i * 1000003 + 17) for i in range(49995, 50000)))')
  [ "$got" = "$want" ] || { echo "h5dump h5py_lzf.h5: '$got', expected '$want'"; exit 1; }
fi
echo ok
