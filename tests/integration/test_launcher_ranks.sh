#!/usr/bin/env bash
# Several processes of one launch, and no MPI job file (the demo is built
# without MPI; SCOPE_PROFILER_MPI=0 has the same effect on an MPI build):
# each process writes its own file with its rank in the name, and only rank 0
# warns, once. The launchers' environments are those of Open MPI, MPICH/Hydra
# and Slurm's srun; a real mpirun of the non-MPI demo too, when there is one.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-ranks-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
sim="$SP_BUILD/examples/sim"
fail=0
run() { # launcher-name size env-template (with @R@ for the rank)
  local name=$1 size=$2 tmpl=$3
  rm -f out*.h5 err.*
  for ((r = 0; r < size; r++)); do
    env ${tmpl//@R@/$r} OMP_NUM_THREADS=1 SCOPE_PROFILER_FILE_PATH=out.h5 "$sim" --steps 2 --quiet 2> err.$r &
  done
  wait
  for ((r = 0; r < size; r++)); do
    [[ -s out.rank$r.h5 ]] || { echo "$name: no out.rank$r.h5"; fail=1; }
    "$SP_BUILD/scope-profiler" inspect out.rank$r.h5 -q > /dev/null || { echo "$name: out.rank$r.h5 unreadable"; fail=1; }
  done
  [[ -e out.h5 ]] && { echo "$name: out.h5 written too"; fail=1; }
  local warned
  warned=$(cat err.* | grep -c "each writes its own")
  [[ "$warned" == 1 ]] || { echo "$name: $warned warnings, expected one"; cat err.*; fail=1; }
  grep -q "each writes its own" err.0 || { echo "$name: rank 0 did not warn"; fail=1; }
  echo "$name: $size files, $(ls out.rank*.h5 | tr '\n' ' ')"
}
run "Open MPI" 3 "OMPI_COMM_WORLD_RANK=@R@ OMPI_COMM_WORLD_SIZE=3"
run "MPICH/Hydra" 2 "PMI_RANK=@R@ PMI_SIZE=2"
run "Slurm srun" 2 "SLURM_PROCID=@R@ SLURM_STEP_NUM_TASKS=2 SLURM_STEP_ID=0"
# Each rank's file records its rank, as upstream's per-rank files do: the index
# rows, the thread table (track_threads; the ranks column) and what inspect
# shows, so that import-native merges the files into one job.
rm -f out*.h5
for ((r = 0; r < 3; r++)); do
  OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=3 OMP_NUM_THREADS=2 SCOPE_PROFILER_TRACK_THREADS=1 \
    SCOPE_PROFILER_FILE_PATH=out.h5 "$sim" --steps 1 --quiet 2> /dev/null &
done
wait
for ((r = 0; r < 3; r++)); do
  "$SP_BUILD/scope-profiler" inspect out.rank$r.h5 > insp.$r || { echo "rank $r: inspect failed"; fail=1; continue; }
  grep -q "ranks: 1 ($r)" insp.$r || { echo "rank $r: the file does not record its rank"; head -3 insp.$r; fail=1; }
  rows=$(awk '/^threads \(/ {t = 1; getline; next} t && NF == 0 {t = 0} t {print $1}' insp.$r | sort -u | tr '\n' ' ')
  [[ "$rows" == "$r " ]] || { echo "rank $r: thread table rows of ranks '$rows'"; sed -n '/^threads (/,/^$/p' insp.$r; fail=1; }
done
if "$SP_BUILD/scope-profiler" import-native out.rank0.h5 out.rank1.h5 out.rank2.h5 -o job.h5 -q; then
  "$SP_BUILD/scope-profiler" inspect job.h5 | grep -q "ranks: 3 (0-2)" || { echo "import-native: not ranks 0-2"; fail=1; }
else
  echo "import-native of the ranks' files failed"; fail=1
fi
echo "per-rank files record ranks 0-2 (thread table, index), import-native merges them"
# Alone under a launcher, or in a batch script (no step): the file as named.
rm -f out*.h5
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 SCOPE_PROFILER_FILE_PATH=out.h5 "$sim" --steps 1 --quiet 2> err.1
SLURM_PROCID=0 SLURM_NTASKS=4 SCOPE_PROFILER_FILE_PATH=out2.h5 "$sim" --steps 1 --quiet 2>> err.1
[[ -s out.h5 && -s out2.h5 && ! -s err.1 ]] || { echo "a single process got a ranked name or a warning"; ls; cat err.1; fail=1; }
echo "single process: out.h5, out2.h5"
if [[ -x "${SP_MPIEXEC:-}" ]]; then
  mpirun=("$SP_MPIEXEC")
  if "$SP_MPIEXEC" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
    mpirun+=(--oversubscribe --allow-run-as-root)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  fi
  rm -f out*.h5
  env=(-x SCOPE_PROFILER_FILE_PATH=out.h5 -x OMP_NUM_THREADS=1)
  case "$SP_MPIEXEC" in *mpich*|*hydra*) env=(-genv SCOPE_PROFILER_FILE_PATH out.h5 -genv OMP_NUM_THREADS 1) ;; esac
  "${mpirun[@]}" -np 2 "${env[@]}" "$sim" --steps 2 --quiet 2> err.mpirun
  if [[ -s out.rank0.h5 && -s out.rank1.h5 && ! -e out.h5 ]]; then echo "mpirun -np 2: out.rank0.h5 out.rank1.h5"
  else echo "mpirun -np 2 of a program without MPI: $(ls out*.h5 2>/dev/null)"; cat err.mpirun; fail=1; fi
fi
exit $fail
