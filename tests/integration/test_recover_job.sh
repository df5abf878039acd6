#!/usr/bin/env bash
# The spill files of several ranks of one launch (here three processes with
# Open MPI's environment, each crashing on SIGSEGV; under libscope_profiler_mpi
# a termination signal spills the same way) are recovered at once into one
# file of the job: every rank's calls under its own rank, mpi_size 3,
# recovery_complete 1; with one rank's spill missing recovery_complete is 0;
# the same spill twice is refused. A crash in a run that had streamed
# (max_buffer_bytes) is recovered whole from the spill and the staging file
# the run kept; without that file, with recovery_complete 0 and the number of
# blocks that went with it. (--keep: each case recovers the same spills
# again; a whole recovery would remove them.)
set -u
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-rjob-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
app="$SP_BUILD/tests/app-killme" cli="$SP_BUILD/scope-profiler"
fail=0
for r in 0 1 2; do
  OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=3 SCOPE_PROFILER_QUIET=1 SCOPE_PROFILER_FILE_PATH=job.h5 \
    "$app" --ready $((100 + r)) --raise 11 > /dev/null 2>&1
done
ls job.rank*.spill > /dev/null 2>&1 || { echo "no rank spills: $(ls)"; exit 1; }
"$cli" recover --keep job.rank*.spill -o whole.h5 || { echo "recover of the job failed"; exit 1; }
"$cli" inspect whole.h5 -q > /dev/null || { echo "our reader refuses the job file"; fail=1; }
"$SP_PYTHON" - <<'PY' || fail=1
import sys
import h5py
import numpy as np
f = h5py.File("whole.h5", "r")
names = [n.decode() for n in f["region_table/names"][:]]
rri = f["rank_region_index"]
ranks, ids, counts = rri["ranks"][:], rri["region_ids"][:], rri["event_counts"][:]
work = {int(r): int(c) for r, i, c in zip(ranks, ids, counts) if names[i] == "work"}
if work != {0: 100, 1: 101, 2: 102}:
    sys.exit("work calls by rank: %s, expected {0: 100, 1: 101, 2: 102}" % work)
a = f["metadata"].attrs
if a["mpi_size"] != 3 or a["recovery_complete"] != 1 or a["recovered_ranks"] != 3:
    sys.exit("mpi_size %s, recovery_complete %s, recovered_ranks %s" % (a["mpi_size"], a["recovery_complete"], a["recovered_ranks"]))
print("job of 3 ranks recovered: work calls %s, mpi_size 3, recovery_complete 1" % sorted(work.items()))
PY
"$cli" recover --keep job.rank0.h5.spill job.rank2.h5.spill -o part.h5 > /dev/null || { echo "recover of two ranks failed"; fail=1; }
"$SP_PYTHON" -c 'import h5py,sys; a=h5py.File("part.h5")["metadata"].attrs; sys.exit(int(a["recovery_complete"] != 0))' \
  && echo "two of three ranks: recovery_complete 0" || { echo "a partial job claims to be complete"; fail=1; }
"$cli" recover job.rank1.h5.spill job.rank1.h5.spill -o dup.h5 2> err.txt; rc=$?
[[ $rc == 2 ]] && grep -q "both written by rank 1" err.txt && echo "the same rank twice: refused" \
  || { echo "duplicate ranks: exit $rc"; cat err.txt; fail=1; }
# The writer thread must have finished its blocks for the recovery to be
# whole (a block in its hands at the crash is in neither file, and then
# recovery_complete must say 0): the program pauses before it crashes, longer
# on each try, for a loaded machine.
whole=0
for pause in 500 2000 8000; do
  rm -f big.h5.spill .big.h5.stage.* big_rec.h5
  SCOPE_PROFILER_MAX_BUFFER_BYTES=1048576 SCOPE_PROFILER_FILE_PATH=big.h5 "$app" --ready 150000 --pause-ms $pause --raise 11 > /dev/null 2>&1
  stage=$(ls .big.h5.stage.* 2>/dev/null | head -1)
  [[ -n "$stage" ]] || { echo "the streaming run left no staging file"; fail=1; break; }
  "$cli" recover --keep big.h5.spill -o big_rec.h5 > /dev/null || { echo "recover of a streamed run failed"; fail=1; break; }
  "$SP_PYTHON" - <<'PY'
import sys
import h5py
f = h5py.File("big_rec.h5", "r")
names = [n.decode() for n in f["region_table/names"][:]]
rri = f["rank_region_index"]
n = sum(int(c) for i, c in zip(rri["region_ids"][:], rri["event_counts"][:]) if names[i] == "work")
a = f["metadata"].attrs
if a["recovery_complete"] == 1:
    if n != 150000 or "streamed_blocks_lost" in a:
        sys.exit("recovery_complete 1 with %d of 150000 work calls" % n)
    sys.exit(0)
if a.get("streamed_blocks_lost", 0) < 1:
    sys.exit("recovery_complete 0 without saying what is missing (%d work calls)" % n)
print("the writer had a block in hand at the crash: %d calls, recovery_complete 0, streamed_blocks_lost %d; again with a longer pause" % (n, a["streamed_blocks_lost"]))
sys.exit(3)
PY
  rc=$?
  if [[ $rc == 0 ]]; then whole=1; break; fi
  [[ $rc == 3 ]] || { fail=1; break; }
done
if [[ $whole == 1 ]]; then
  echo "streamed run: all 150000 calls recovered (streamed blocks read back), recovery_complete 1"
  mv "$stage" stage.away
  "$cli" recover big.h5.spill -o big_lost.h5 > /dev/null || { echo "recover without the staging file failed"; fail=1; }
  "$SP_PYTHON" - <<'PY' || fail=1
import sys
import h5py
f = h5py.File("big_lost.h5", "r")
names = [n.decode() for n in f["region_table/names"][:]]
rri = f["rank_region_index"]
n = sum(int(c) for i, c in zip(rri["region_ids"][:], rri["event_counts"][:]) if names[i] == "work")
a = f["metadata"].attrs
if n >= 150000 or a["recovery_complete"] != 0 or a.get("streamed_blocks_lost", 0) < 1:
    sys.exit("without the staging file: %d calls, recovery_complete %s, streamed_blocks_lost %s" % (n, a["recovery_complete"], a.get("streamed_blocks_lost")))
print("without its staging file: %d calls, recovery_complete 0, streamed_blocks_lost %d" % (n, a["streamed_blocks_lost"]))
PY
elif [[ $fail == 0 ]]; then
  echo "the stream writer never finished its blocks within 8 s before the crash"; fail=1
fi
exit $fail
