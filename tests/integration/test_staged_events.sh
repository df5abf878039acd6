#!/usr/bin/env bash
# A streamed run whose blocks are its file's data (docs/file-format.md,
# "Staged blocks"): ended by SIGTERM, the file is published with /events
# virtual over /staging and reads the way upstream's h5py reader reads
# schema 3 (each column whole, a row by its offset and count), equal to the
# same workload kept in memory; after a move it still reads. A SIGSEGV in the
# middle of such a run is recovered whole by `recover` from the staged HDF5
# file it leaves and the journal in the raw staging file, which holds no
# calls (each call is written once); a staged value changed after the crash
# is caught by the journal's checksums (recovery stops there, incomplete,
# and keeps the crashed run's files); put back, the recovery is whole and
# removes the spill, the journal and the staged file, naming each.
set -u
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-staged-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
unset SCOPE_PROFILER_CONFIG SCOPE_PROFILER_HDF5_COMPRESSION SCOPE_PROFILER_HDF5_SCHEMA
app="$SP_BUILD/tests/app-killme" cli="$SP_BUILD/scope-profiler"
fail=0
N=2000000
# killme records until the SIGTERM comes (the signal's default action: the
# watcher publishes the run, then the process ends by the signal)
term_run() {
  local out=$1 n=$2 mb=$3
  SCOPE_PROFILER_MAX_BUFFER_BYTES=$mb SCOPE_PROFILER_FILE_PATH=$out "$app" --ready "$n" > "$out.txt" 2>&1 &
  local pid=$!
  for _ in $(seq 1200); do grep -q ready "$out.txt" && break; sleep 0.1; done
  kill -TERM $pid
  wait $pid
}
term_run term.h5 $N 67108864
term_run mem.h5 1000 1073741824
ls .term.h5.tmp.* > /dev/null 2>&1 && { echo "FAIL: a staged file was left beside the output"; fail=1; }
mkdir moved && mv term.h5 moved/renamed.h5
"$SP_PYTHON" - "$N" <<'PY' || fail=1
import sys
import h5py
import numpy as np
n = int(sys.argv[1])
f = h5py.File("moved/renamed.h5", "r")
assert f["events/start_deltas"].is_virtual and f["events/durations"].is_virtual, "not staged"
assert f.attrs["scope_profiler_schema"] == 3
assert f["metadata"].attrs["streamed_blocks"] >= 2
names = [x.decode() for x in f["region_table/names"][:]]
assert "work" in names, names
rri = f["rank_region_index"]
off, cnt = rri["event_offsets"][:], rri["event_counts"][:]
# upstream's way: each column whole, then per row a slice and a cumsum
d = f["events/start_deltas"][:]
dur = f["events/durations"][:]
assert len(d) == cnt.sum() and len(dur) == len(d)
stats = rri["summary_statistics"][:]
for r, rid in enumerate(rri["region_ids"][:]):
    o, c = int(off[r]), int(cnt[r])
    starts = np.cumsum(d[o:o + c])
    ds = dur[o:o + c]
    assert stats["total"][r] == ds.sum(), names[rid]
    assert stats["minimum"][r] == ds.min() and stats["maximum"][r] == ds.max(), names[rid]
    assert stats["start_minimum"][r] == starts.min(), names[rid]
    assert stats["end_maximum"][r] == (starts + ds).max(), names[rid]
    assert abs(stats["mean"][r] - ds.mean()) <= 1e-6 * max(1.0, abs(ds.mean())), names[rid]
    if names[rid] == "work":
        assert c >= n, (c, n)
        assert (np.diff(starts) >= 0).all() and (ds >= 0).all()
# the layout is the one a run kept in memory writes: the same datasets
m = h5py.File("mem.h5", "r")
def walk(g, p=""):
    out = set()
    for k, v in g.items():
        if k == "staging":
            continue
        out.add(p + k)
        if isinstance(v, h5py.Group):
            out |= walk(v, p + k + "/")
    return out
ids = {"events/call_ids", "events/parent_ids"}  # each run decides whether its ids are needed
a, b = walk(f) - ids, walk(m) - ids
assert a == b, (a ^ b)
print("staged file: %d+ work calls, read as upstream reads schema 3, after a move" % n)
PY
"$cli" inspect moved/renamed.h5 > inspect.txt 2>&1 || { echo "FAIL: inspect of the staged file"; cat inspect.txt; fail=1; }
grep -q "work" inspect.txt || { echo "FAIL: inspect does not show work"; cat inspect.txt; fail=1; }
# A crash mid-stream: recovered from the staged file and the journal.
count_work() { # FILE: prints "<recovery_complete> <work calls>"
  "$SP_PYTHON" - "$1" <<'PY'
import sys
import h5py
f = h5py.File(sys.argv[1], "r")
names = [x.decode() for x in f["region_table/names"][:]]
rri = f["rank_region_index"]
got = sum(int(c) for i, c in zip(rri["region_ids"][:], rri["event_counts"][:]) if names[i] == "work")
print(int(f["metadata"].attrs["recovery_complete"]), got)
PY
}
whole=0
for pause in 500 2000 8000; do
  rm -f big.h5.spill .big.h5.stage.* .big.h5.tmp.* big_rec.h5
  SCOPE_PROFILER_MAX_BUFFER_BYTES=67108864 SCOPE_PROFILER_FILE_PATH=big.h5 "$app" --ready $N --pause-ms $pause --raise 11 > /dev/null 2>&1
  ls .big.h5.tmp.* > /dev/null 2>&1 || { echo "FAIL: the crash removed the staged file recovery reads"; fail=1; break; }
  ls .big.h5.stage.* > /dev/null 2>&1 || { echo "FAIL: the crash left no journal (raw staging file)"; fail=1; break; }
  # the journal names the blocks' places; the calls are in the staged file only
  jbytes=$(stat -c %s .big.h5.stage.*)
  [[ $jbytes -lt 65536 ]] || { echo "FAIL: the raw staging file holds $jbytes bytes: calls written twice"; fail=1; break; }
  "$cli" recover --keep big.h5.spill -o big_rec.h5 > /dev/null || { echo "FAIL: recover of a staged streamed run"; fail=1; break; }
  read -r complete got < <(count_work big_rec.h5)
  if [[ $complete == 1 ]]; then
    [[ $got == "$N" ]] || { echo "FAIL: recovery_complete 1 with $got of $N work calls"; fail=1; break; }
    whole=1
    break
  fi
done
[[ $whole == 1 ]] && echo "crash mid-stream: all $N calls recovered (journal $jbytes B)" || { echo "FAIL: never recovered whole"; fail=1; }
# The same crash with one staged value changed afterwards: the journal's
# checksum refuses that segment, so recovery stops there and says so.
if [[ $whole == 1 ]]; then
  "$SP_PYTHON" - .big.h5.tmp.* <<'PY' || fail=1
import sys
import h5py
name = sys.argv[1]
with h5py.File(name, "r") as f:
    at = f["staging/000000/durations"].id.get_offset()
with open(name, "r+b") as raw:
    raw.seek(at + 8)
    v = int.from_bytes(raw.read(8), "little")
    raw.seek(at + 8)
    raw.write((v + 1).to_bytes(8, "little"))
with open("changed.txt", "w") as out:
    out.write("%d %d\n" % (at + 8, v))
PY
  rm -f big_rec.h5
  "$cli" recover big.h5.spill -o big_rec.h5 > rec.txt || { echo "FAIL: recover after a staged value changed"; fail=1; }
  read -r complete got < <(count_work big_rec.h5)
  [[ $complete == 0 && $got -lt $N ]] || { echo "FAIL: a changed staged value went unnoticed ($complete, $got of $N)"; fail=1; }
  [[ $complete == 0 && $got -lt $N ]] && echo "changed staged value: recovery stops there ($got of $N work calls, recovery_complete 0)"
  # an incomplete recovery keeps the crashed run's files, and says so
  kept=$(grep -c "^kept .*(the recovery is not complete)$" rec.txt)
  [[ $kept == 3 ]] && ls big.h5.spill .big.h5.stage.* .big.h5.tmp.* > /dev/null 2>&1 \
    || { echo "FAIL: an incomplete recovery did not keep the spill, journal and staged file"; cat rec.txt; ls -a; fail=1; }
  # The value put back, the recovery is whole again, and then the crashed
  # run's files go (named), the recovered file staying.
  "$SP_PYTHON" - .big.h5.tmp.* <<'PY' || fail=1
import sys
at, v = map(int, open("changed.txt").read().split())
with open(sys.argv[1], "r+b") as raw:
    raw.seek(at)
    raw.write(v.to_bytes(8, "little"))
PY
  stage=$(ls .big.h5.stage.*) staged=$(ls .big.h5.tmp.*)
  rm -f big_rec.h5
  "$cli" recover big.h5.spill -o big_rec.h5 > rec.txt || { echo "FAIL: recover with the value put back"; fail=1; }
  read -r complete got < <(count_work big_rec.h5)
  printf 'recovered big.h5.spill -> big_rec.h5\nremoved big.h5.spill\nremoved %s\nremoved %s\n' "$stage" "$staged" > want.txt
  if [[ $complete == 1 && $got == "$N" ]] && diff want.txt <(sed 's|^removed \./|removed |' rec.txt) && ! ls big.h5.spill "$stage" "$staged" > /dev/null 2>&1; then
    echo "whole recovery: the spill, the journal and the staged file removed, each named"
  else
    echo "FAIL: after a whole recovery ($complete, $got of $N) the crashed run's files were not removed as said"; cat rec.txt; ls -a; fail=1
  fi
fi
exit $fail
