#!/usr/bin/env bash
# What a profile tells about the person and machine that wrote it, as the CLI
# shows it. metadata_detail=minimal (the default) records no user, host,
# working directory, environment or absolute source path; full records
# those, and the value of any SLURM_* variable whose name looks secret
# (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, AUTH, any case) is written as
# [redacted], its value nowhere in the file's bytes.
set -uo pipefail
sim="$SP_BUILD/examples/sim"
cli="$SP_BUILD/scope-profiler"
[[ -x "$sim" && -x "$cli" ]] || { echo "skip: examples/sim or the CLI not built"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-privacy-XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
secrets=(SLURM_AUTH_TOKEN=tok-3f9a1c SLURM_API_KEY=key-77b2e0 SLURM_DB_PASSWORD=pw-c0ffee
         SLURM_my_secret=sec-5e5e5e SLURM_CREDENTIAL_FILE=cred-42a4)
for detail in minimal full; do
  env "${secrets[@]}" SLURM_JOB_ID=4242 SCOPE_PROFILER_METADATA_DETAIL=$detail \
    SCOPE_PROFILER_FILE_PATH=$detail.h5 "$sim" --steps 1 --quiet > /dev/null || bad "sim ($detail) failed"
  "$cli" inspect $detail.h5 --metadata-only --full > $detail.txt || bad "inspect $detail.h5 failed"
  for s in "${secrets[@]}"; do
    grep -aq -- "${s#*=}" $detail.h5 && bad "$detail: the value of ${s%%=*} is in the file"
  done
done
for key in user hostname working_directory modules PATH SLURM_JOB_ID; do
  grep -qE "^  $key " minimal.txt && bad "minimal records $key"
  grep -qE "^  $key " full.txt || bad "full does not record $key"
done
for s in "${secrets[@]}"; do
  grep -qE "^  ${s%%=*} +\[redacted\]$" full.txt || bad "full: ${s%%=*} is not [redacted]"
done
grep -qE '^  SLURM_JOB_ID +4242$' full.txt || bad "full: SLURM_JOB_ID not recorded as is"
# Source paths: relative to the working directory at minimal, absolute at full.
"$SP_PYTHON" - <<'PY' || fail=1
import h5py, sys
for name, want_abs in (("minimal.h5", False), ("full.h5", True)):
    files = {f for f in h5py.File(name)["rank_region_index/source_files"].asstr()[...] if f}
    if not files or any(f.startswith("/") != want_abs for f in files):
        print(f"FAIL: {name} source paths {sorted(files)}")
        sys.exit(1)
PY
echo "minimal: $(grep -cE '^  [A-Za-z_]+ ' minimal.txt) metadata entries, none about the user, host or environment"
echo "full: $(grep -c '\[redacted\]' full.txt) secret-looking SLURM_* values redacted," \
  "user/hostname/working_directory/PATH/SLURM_JOB_ID recorded"
exit $fail
