#!/usr/bin/env bash
# MPI tests (ctest label "mpi"; tests/mpi/CMakeLists.txt registers one ctest
# per case). Each case runs its programs under mpirun and checks the file
# through our reader (inside the programs, and `scope-profiler inspect`) and
# through h5py (check_mpi.py). Files of the write cases stay in
# $SP_MPI_BIN/out/np<N>/<mode>/ (a link to the last passing run's directory)
# for the compare case.
#
#   run.sh write MODE NP    mpi_job with output_mode=MODE: real clock (clock
#                           offsets, sp_mpi_sync_clock, verbose job summary,
#                           metadata_detail=full), then the manual clock
#   run.sh compare NP       the direct and parallel files of `write` agree
#   run.sh calls NP         profile_mpi_calls on (both writers) and off
#   run.sh counters NP      perf_events: every rank's rank<N>/perf_events groups,
#                           both writers
#   run.sh rank0 NP         direct mode sends no events to rank 0 (rank0_shim)
#   run.sh stream NP        streamed runs (events filled by a callback), both
#                           writers, through the static library
#   run.sh gpu NP           use_gpu_timing on the mock CUDA driver, both
#                           writers; rank 1 has no GPU (its calls: -1)
#   run.sh install          the installed package: CMake (shared, static) and
#                           pkg-config consumers under mpirun
#   run.sh detect           when MPI is used, and finalize after MPI_Finalize
#   run.sh demo NP          examples/sim_mpi under mpirun
#   run.sh fortran NP       fortran_job (the Fortran module, MPI, OpenMP): one job file
set -euo pipefail
"$SP_PYTHON" -c 'import h5py' 2>/dev/null || { echo "python3-h5py missing"; exit 77; }
[ -x "${SP_MPIEXEC:-}" ] || { echo "no mpirun"; exit 77; }

mpirun=("$SP_MPIEXEC")
# rank_env NAME VALUE: the launcher arguments that give every rank NAME=VALUE
# (Open MPI forwards only what -x names; MPICH's Hydra takes -genv).
if "$SP_MPIEXEC" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
  # CI runs as root on two cores.
  mpirun+=(--oversubscribe --allow-run-as-root)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  rank_env() { envargs=(-x "$1=$2"); }
else
  rank_env() { envargs=(-genv "$1" "$2"); }
fi
check() { "$SP_PYTHON" "$SP_SRC/tests/mpi/check_mpi.py" "$@"; }
unset SCOPE_PROFILER_MPI

case "$1" in
write)
  mode=$2 np=$3
  # Each run works in a directory of its own and publishes it as
  # out/np<N>/<mode> (a symlink renamed into place) once it passed: two runs
  # of a case in one build (a ctest -R beside the whole suite; RESOURCE_LOCK
  # orders the tests of one ctest only) removed each other's files while
  # they ran ("cannot create the output file in directory ."). A failed
  # run's directory stays, named in the output.
  out="$SP_MPI_BIN/out/np$np/$mode"
  mkdir -p "$SP_MPI_BIN/out/np$np"
  run="$out.run.$$" # this process's own (a dead run's of the same pid is replaced)
  rm -rf "$run" && mkdir "$run"
  trap '[ -d "$run" ] && echo "files of this run: $run"' EXIT
  mkdir "$run/real" && cd "$run/real"
  SCOPE_PROFILER_OUTPUT_MODE=$mode SCOPE_PROFILER_FILE_PATH=job.h5 SCOPE_PROFILER_METADATA_DETAIL=full \
    "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_job" --events 50 --sync --verbose > summary.txt
  cat summary.txt
  grep -q "scope-profiler summary: job ($np rank" summary.txt || { echo "no job summary"; exit 1; }
  check job.h5 --ranks "$np" --job 50 --sync --full
  [ "$np" = 1 ] && "$SP_PYTHON" "$SP_SRC/tests/integration/check_profile.py" job.h5
  "$SP_BUILD/scope-profiler" inspect job.h5 > inspect.txt || { cat inspect.txt; exit 1; }
  cd "$run"
  SCOPE_PROFILER_OUTPUT_MODE=$mode SCOPE_PROFILER_FILE_PATH=job.h5 SCOPE_PROFILER_CLOCK=manual \
    SCOPE_PROFILER_TRACK_THREADS=1 "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_job" --events 200
  check job.h5 --ranks "$np" --job 200 --threads
  writer=$("$SP_PYTHON" -c 'import h5py,sys; print(h5py.File(sys.argv[1])["metadata"].attrs["mpi_writer"])' job.h5)
  [ "$writer" = "$mode" ] || { echo "mpi_writer is $writer"; exit 1; }
  old=$(readlink "$out" || true)
  [ -L "$out" ] || rm -rf "$out" # a directory of the former layout
  ln -s "$(basename "$run")" "$run.link" && mv -T "$run.link" "$out"
  # the former run's files, unless it had this pid and so is the run just published
  if [ -n "$old" ] && [ "$old" != "$(basename "$run")" ]; then rm -rf "$SP_MPI_BIN/out/np$np/$old"; fi
  run=
  ;;
compare)
  np=$2
  check --compare "$SP_MPI_BIN/out/np$np/direct/job.h5" "$SP_MPI_BIN/out/np$np/parallel/job.h5"
  ;;
calls)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  for mode in direct parallel; do
    SCOPE_PROFILER_PROFILE_MPI_CALLS=1 SCOPE_PROFILER_OUTPUT_MODE=$mode SCOPE_PROFILER_FILE_PATH=calls.h5 \
      "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_calls"
    check calls.h5.run1.h5 --ranks "$np" --calls
    rm -f calls.h5*
  done
  SCOPE_PROFILER_PROFILE_MPI_CALLS=0 SCOPE_PROFILER_FILE_PATH=off.h5 "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_calls"
  "$SP_PYTHON" - off.h5.run1.h5 <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
names = [n.decode() for n in f["region_table/names"][:]]
assert not [n for n in names if n.startswith("MPI_")], names
assert "mpi_bytes_sent" not in f["events"], "byte columns without profile_mpi_calls"
print("profile_mpi_calls=0: no MPI region, no byte columns")
EOF
  ;;
counters)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  for mode in direct parallel; do
    SCOPE_PROFILER_PERF_EVENTS=task-clock,page-faults SCOPE_PROFILER_OUTPUT_MODE=$mode SCOPE_PROFILER_QUIET=1 \
      SCOPE_PROFILER_FILE_PATH=cnt.h5 "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_job" --events 30 ||
      { echo "skip: perf_event_open is not available here"; exit 77; }
    "$SP_PYTHON" - cnt.h5 "$np" "$mode" <<'EOF'
import sys, h5py
path, np_, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with h5py.File(path, "r") as f:
    names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]
    rri = f["rank_region_index"]
    calls = {}
    for rid, rank, cnt in zip(rri["region_ids"][:], rri["ranks"][:], rri["event_counts"][:]):
        calls[(int(rank), names[rid])] = int(cnt)
    for r in range(np_):
        g = f["rank%d/perf_events" % r]
        for region in g:
            grp = g[region]
            ev = [e.decode() if isinstance(e, bytes) else e for e in grp.attrs["event_names"]]
            assert ev == ["task-clock", "page-faults"], ev
            key = (r, region.replace("|", "/"))
            assert grp.attrs["calls"] == calls[key], (key, grp.attrs["calls"], calls[key])
            assert grp["values"].shape == (2,)
        assert len(g) > 0, "rank %d has no counter group" % r
    assert "perf_task-clock" in f["events"]
print("%s, %d ranks: every rank's counter totals, calls as in the index" % (mode, np_))
EOF
    rm -f cnt.h5
  done
  ;;
gpu)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  for mode in direct parallel; do
    SCOPE_PROFILER_OUTPUT_MODE=$mode SCOPE_PROFILER_FILE_PATH=gpu.h5 "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_gpu"
    check gpu.h5 --ranks "$np" --gpu
    "$SP_BUILD/scope-profiler" inspect gpu.h5 -q --columns region ranks calls gpu gpu_avg
    rm -f gpu.h5
  done
  ;;
rank0)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  # The shim must see every call the profiler makes that can move data.
  used=$(grep -oh 'PMPI_[A-Za-z_]*' "$SP_SRC"/src/mpi/mpi_{ops,layout,write}.c | sort -u)
  control='PMPI_Comm_dup|PMPI_Comm_rank|PMPI_Comm_size|PMPI_Finalize|PMPI_Finalized|PMPI_Get_library_version|PMPI_Get_processor_name|PMPI_Get_version|PMPI_Init_thread|PMPI_Initialized|PMPI_Recv'
  for fn in $used; do
    [[ "$fn" =~ ^($control)$ ]] && continue
    grep -q "^int $fn(" "$SP_SRC/tests/mpi/rank0_shim.c" || { echo "rank0_shim does not watch $fn"; exit 1; }
  done
  events=20000 # per rank: 20000 calls, over 640 KB of event columns
  mkdir direct memory
  rank_env LD_PRELOAD "$SP_MPI_BIN/librank0_shim.so"
  SP_SHIM_DIR=$PWD/direct SCOPE_PROFILER_OUTPUT_MODE=direct SCOPE_PROFILER_FILE_PATH=job.h5 \
    "${mpirun[@]}" "${envargs[@]}" -np "$np" "$SP_MPI_BIN/mpi_job" --events $events
  check job.h5 --ranks "$np" --job $events
  # Control: results gathered in memory (no file) do pass through rank 0;
  # the shim must see them, or its silence above would prove nothing.
  SP_SHIM_DIR=$PWD/memory SCOPE_PROFILER_DEACTIVATE_FILE_OUTPUT=1 \
    "${mpirun[@]}" "${envargs[@]}" -np "$np" "$SP_MPI_BIN/mpi_job" --events $events
  "$SP_PYTHON" - "$np" $events <<'EOF'
import sys
np_, events = int(sys.argv[1]), int(sys.argv[2])
payload = events * 4 * 8  # start, end, call and parent ids of the bulk calls alone
for r in range(1, np_):
    d = [int(x) for x in open("direct/rank%d.txt" % r).read().split()]
    m = [int(x) for x in open("memory/rank%d.txt" % r).read().split()]
    print("rank %d -> rank 0: direct %d bytes in %d calls; in-memory results %d bytes" % (r, d[0], d[1], m[0]))
    if d[1] == 0:
        sys.exit("the shim saw no call from rank %d: not loaded?" % r)
    if d[0] > 16384:
        sys.exit("direct mode sent %d bytes from rank %d to rank 0 (events are %d bytes)" % (d[0], r, payload))
    if m[0] < payload:
        sys.exit("control: the in-memory gather sent only %d bytes; the shim is blind" % m[0])
print("direct mode: no rank's events reached rank 0")
EOF
  ;;
stream)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work" && mkdir direct parallel
  SCOPE_PROFILER_CLOCK=manual "${mpirun[@]}" -np "$np" "$SP_MPI_BIN/mpi_stream"
  check direct/stream.h5 --ranks "$np" --per-rank streamed=1000
  check parallel/stream.h5 --ranks "$np" --per-rank streamed=1000
  check --compare direct/stream.h5 parallel/stream.h5
  ;;
install)
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cmake --install "$SP_BUILD" --prefix "$work/prefix" >/dev/null
  test -f "$work/prefix/include/scope_profiler/mpi.h"
  libdir=$(ls -d "$work"/prefix/lib*/ | head -1)
  # the compiler wrapper of the launcher's MPI (Debian: mpiexec.mpich -> mpicc.mpich)
  case "$SP_MPIEXEC" in *.mpich) sfx=.mpich ;; *.openmpi) sfx=.openmpi ;; *) sfx= ;; esac
  mpicc=$(dirname "$SP_MPIEXEC")/mpicc$sfx
  cmake -S "$SP_SRC/tests/mpi/install" -B "$work/cm" -DCMAKE_PREFIX_PATH="$work/prefix" \
    -DMPI_C_COMPILER="$mpicc" >/dev/null
  cmake --build "$work/cm" >/dev/null
  PKG_CONFIG_PATH="$libdir/pkgconfig" "$mpicc" -o "$work/consumer_mpi_pc" "$SP_SRC/tests/mpi/install/consumer_mpi.c" \
    $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs scope_profiler_mpi)
  cd "$work"
  for exe in cm/consumer_mpi_shared cm/consumer_mpi_static consumer_mpi_pc; do
    name=$(basename $exe)
    rank_env LD_LIBRARY_PATH "$libdir"
    LD_LIBRARY_PATH="$libdir" SCOPE_PROFILER_PROFILE_MPI_CALLS=1 SCOPE_PROFILER_FILE_PATH=$name.h5 \
      "${mpirun[@]}" "${envargs[@]}" -np 2 "$work/$exe"
    check $name.h5 --ranks 2 --per-rank consumer=3 --per-rank MPI_Barrier=3 --parent MPI_Barrier=consumer
  done
  ;;
fortran)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  rank_env OMP_NUM_THREADS 2
  "${mpirun[@]}" "${envargs[@]}" -np "$np" "$SP_MPI_BIN/fortran_job" job.h5
  check job.h5 --ranks "$np" --per-rank step=4 --per-rank exchange=4 --per-rank work=8 \
    --parent exchange=step
  ;;
detect)
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  # No launcher, no MPI_Init: MPI is never touched.
  SCOPE_PROFILER_FILE_PATH=plain.h5 "$SP_MPI_BIN/mpi_detect" --expect-mpi 0
  "$SP_PYTHON" -c 'import h5py,sys; f=h5py.File(sys.argv[1]); assert "ranks" not in f and f["metadata"].attrs["mpi_size"] == 1' plain.h5
  # A launcher but no MPI_Init in the program: the profiler initialises MPI.
  SCOPE_PROFILER_FILE_PATH=launched.h5 "${mpirun[@]}" -np 2 "$SP_MPI_BIN/mpi_detect" --expect-mpi 1
  check launched.h5 --ranks 2
  # SCOPE_PROFILER_MPI=0 under a launcher: every process on its own.
  rank_env SCOPE_PROFILER_MPI 0
  SCOPE_PROFILER_MPI=0 SCOPE_PROFILER_FILE_PATH=own.h5 "${mpirun[@]}" "${envargs[@]}" -np 2 \
    "$SP_MPI_BIN/mpi_detect" --expect-mpi 0 --per-rank-file
  test -s own.h5.0.h5 && test -s own.h5.1.h5
  # SCOPE_PROFILER_MPI=1 without a launcher: a singleton job of one rank.
  SCOPE_PROFILER_MPI=1 SCOPE_PROFILER_FILE_PATH=single.h5 "$SP_MPI_BIN/mpi_detect" --expect-mpi 1
  check single.h5 --ranks 1
  # Finalize after MPI_Finalize: a clear SP_ERR_MPI on every rank. By
  # default (finalize_on_exit) MPI_Finalize wrote the run while it could.
  SCOPE_PROFILER_FILE_PATH=late.h5 "${mpirun[@]}" -np 2 "$SP_MPI_BIN/mpi_detect" --late 1
  check late.h5 --ranks 2
  SCOPE_PROFILER_FINALIZE_ON_EXIT=0 SCOPE_PROFILER_FILE_PATH=never.h5 "${mpirun[@]}" -np 2 \
    "$SP_MPI_BIN/mpi_detect" --late 0
  ;;
demo)
  np=$2
  work=$(mktemp -d "${TMPDIR:-/tmp}/sp-mpi-XXXXXX"); trap 'rm -rf "$work"' EXIT
  cd "$work"
  OMP_NUM_THREADS=1 SCOPE_PROFILER_PROFILE_MPI_CALLS=1 SCOPE_PROFILER_FILE_PATH=sim.h5 \
    "${mpirun[@]}" -np "$np" "$SP_BUILD/examples/sim_mpi" --steps 6
  check sim.h5 --ranks "$np" --per-rank step=6 --per-rank halo=6 --per-rank MPI_Sendrecv=12 \
    --parent MPI_Sendrecv=halo --parent MPI_Allreduce=io
  OMP_NUM_THREADS=2 SCOPE_PROFILER_OUTPUT_MODE=parallel SCOPE_PROFILER_FILE_PATH=sim2.h5 \
    "${mpirun[@]}" -np "$np" "$SP_BUILD/examples/sim_mpi" --steps 3 --quiet
  check sim2.h5 --ranks "$np" --per-rank step=3 --per-rank halo=3
  ;;
*)
  echo "usage: run.sh write|compare|calls|rank0|stream|install|detect|demo ..." >&2
  exit 2
  ;;
esac
echo ok
