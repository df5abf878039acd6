#!/usr/bin/env bash
# Disk and file-system faults at finalize. For each case the instrumented
# program (tests/faults/faults_app.c) records 50 calls and finalizes with
# return_results; the test checks what the writer did: a clear SP_ERR_IO
# message, the previous file at the path intact, no temporary file left in
# the directory, the results still complete in memory. Cases: an unwritable
# directory (as nobody, and a read-only bind mount), a full disk (the
# failwrite.so shim at several points of the write, and a small tmpfs), a
# failing fsync, an output path that is a directory, a dangling symlink or a
# symlink to another file, a symlink planted at the temporary name, things
# replaced or removed at the path during the run; and on success: temporary
# files created with O_CREAT|O_EXCL, the published file's mode from the
# umask, and a reader of the old file undisturbed by the atomic rename.
# A path that cannot work from the start (a directory, an unwritable or
# read-only directory) is refused by setup instead, before the run, with one
# line on stderr; the same faults arising during the run reach finalize.
# Cases that need root or mount namespaces say "skip" when unavailable.
set -uo pipefail
app="$SP_BUILD/tests/faults/app-faults"
shim="$SP_BUILD/tests/faults/failwrite.so"
cli="$SP_BUILD/scope-profiler"
[[ -x "$app" && -f "$shim" ]] || { echo "skip: app-faults or failwrite.so not built"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-faults-XXXXXX")
trap 'chmod -R u+rwx "$work" 2>/dev/null; rm -rf "$work"' EXIT
chmod 755 "$work" # nobody must reach the directories below
cd "$work" || exit 1
fail=0
xfail=0
bad() { echo "FAIL: $*"; fail=1; }

# run NAME CMD...: the app's stdout, stderr and exit status in NAME.out/.err/.rc
run() {
  local name=$1
  shift
  "$@" > "$name.out" 2> "$name.err"
  echo $? > "$name.rc"
}

# during NAME PATH CMD...: run the app on PATH and CMD while it waits between
# setup and recording (the app under ${as_user[@]}, when set)
as_user=()
during() {
  local name=$1 path=$2 pid i
  shift 2
  rm -f fifo
  mkfifo fifo
  "${as_user[@]}" "$app" "$path" --wait < fifo > "$name.out" 2> "$name.err" &
  pid=$!
  exec 5> fifo
  # until it has set up (however loaded the machine), or died
  for ((i = 0; i < 6000; i++)); do
    grep -q ready "$name.out" && break
    kill -0 "$pid" 2> /dev/null || break
    sleep 0.05
  done
  grep -q ready "$name.out" || bad "$name: the program never said ready"
  "$@"
  echo go >&5
  exec 5>&-
  wait "$pid"
  echo $? > "$name.rc"
}

# failed NAME DIR PREVIOUS PATTERN: finalize failed with SP_ERR_IO and a
# message matching PATTERN, DIR/out.h5 still holds PREVIOUS (unless "-"),
# DIR has no temporary file, the results are complete in memory, and the
# program exited normally. HDF5 1.10 crashes at exit after a failed file
# close (a full disk while it flushes): that is reported as a known failure.
failed() {
  local name=$1 dir=$2 prev=$3 pat=$4 rc
  rc=$(cat "$name.rc")
  grep -q '^finalize: SP_ERR_IO' "$name.out" ||
    bad "$name: finalize said '$(sed -n 's/^finalize: //p' "$name.out")', expected SP_ERR_IO"
  grep -qE "^error: .*($pat)" "$name.out" ||
    bad "$name: the message '$(sed -n 's/^error: //p' "$name.out")' does not match '$pat'"
  grep -q 'results in memory: 50 work calls' "$name.out" || bad "$name: results not in memory"
  if [[ $prev != - ]] && [[ "$(cat "$dir/out.h5" 2>/dev/null)" != "$prev" ]]; then
    bad "$name: the previous file was not left intact"
  fi
  if ls -A "$dir" 2>/dev/null | grep -q '^\.'; then
    bad "$name: temporary files left behind: $(ls -A "$dir" | grep '^\.' | tr '\n' ' ')"
  fi
  if [[ $rc -eq 139 ]] && grep -q 'HDF5' "$name.err"; then
    echo "XFAIL $name: the program then crashed at exit inside HDF5 (SIGSEGV in H5F__close_cb;" \
      "HDF5 1.10 cannot release a file whose close failed)"
    xfail=1
  elif [[ $rc -eq 0 ]] && grep -q '^HDF5: infinite loop closing library' "$name.err"; then
    echo "XFAIL $name: at exit HDF5 then printed 'infinite loop closing library' and its error" \
      "stack (HDF5 1.10 cannot release a file whose create failed)"
    xfail=1
  elif [[ $rc -ne 0 ]]; then
    bad "$name: exit status $rc; stderr: $(head -c 300 "$name.err")"
  elif [[ -s "$name.err" ]]; then
    bad "$name: unexpected stderr: $(head -c 300 "$name.err")"
  fi
  echo "$name: $(sed -n 's/^error: //p' "$name.out")"
}

# refused NAME DIR PREVIOUS PATTERN: setup refused the path before the run
# (the program gets the status and its message matching PATTERN, and one line
# on stderr says so), DIR/out.h5 still holds PREVIOUS, nothing was written.
refused() {
  local name=$1 dir=$2 prev=$3 pat=$4
  grep -qE "^setup: .*($pat)" "$name.out" ||
    bad "$name: setup did not refuse the path with '$pat': $(tr '\n' ' ' < "$name.out")"
  [[ $(grep -c . "$name.err") == 1 ]] && grep -qE "^scope-profiler: error: setup failed.*($pat)" "$name.err" ||
    bad "$name: stderr is not the one line saying why setup failed: $(head -c 300 "$name.err")"
  if [[ $prev != - ]] && [[ "$(cat "$dir/out.h5" 2>/dev/null)" != "$prev" ]]; then
    bad "$name: the previous file was not left intact"
  fi
  echo "$name: refused at setup: $(sed -n 's/^setup: //p' "$name.out")"
}

# published NAME PATH: finalize succeeded and PATH is a regular file holding
# the 50 calls (through our reader)
published() {
  local name=$1 path=$2
  grep -q '^finalize: SP_OK' "$name.out" || bad "$name: $(tr '\n' ' ' < "$name.out")"
  [[ -f "$path" && ! -L "$path" ]] || bad "$name: $path is not a regular file"
  "$cli" inspect "$path" -q 2> /dev/null | grep -qE '^work +1 +50 ' || bad "$name: $path lacks the 50 calls"
}

# ---- success: exclusive temporary files, umask, atomic replacement ---------
mkdir ok
echo PREVIOUS > ok/out.h5
exec 3< ok/out.h5 # a reader of the old file, across the replacement
FAILWRITE_DIR="$work/ok" FAILWRITE_LOG="$work/open.log" LD_PRELOAD="$shim" run excl "$app" ok/out.h5
published excl ok/out.h5
[[ "$(cat <&3)" == PREVIOUS ]] || bad "a reader of the old file saw it change"
exec 3<&-
# every open that may create a file under ok/ carries O_EXCL (0x80 with
# O_CREAT 0x40), and the final name is never opened for writing
# the file reaches the disk before the rename, the rename with its directory
[[ "$(grep '^fsync' open.log | tail -n 2 | tr '\n' ' ')" == "fsync file fsync dir " ]] ||
  bad "not fsync file, then fsync dir: $(grep '^fsync' open.log | tr '\n' ' ')"
grep -v '^fsync' open.log > opens.log
while read -r _ flags path; do
  f=$((16#$flags))
  ((f & 64 && !(f & 128))) && bad "created without O_EXCL: $flags $path"
  [[ $path == */out.h5 ]] && ((f & 3)) && bad "final name opened for writing: $flags $path"
done < opens.log
echo "success: temporary file created O_CREAT|O_EXCL ($(grep -c . opens.log) opens logged), synced," \
  "renamed over the old file, directory synced; an open reader kept the old content"
for m in 022 027 077; do
  rm -f ok/out.h5
  (umask "$m" && run "umask$m" "$app" ok/out.h5)
  mode=$(stat -c %a ok/out.h5 2>/dev/null)
  want=$(printf '%o' $((0666 & ~8#$m)))
  [[ "$mode" == "$want" ]] || bad "umask $m: published with mode ${mode:-none}, expected $want"
  echo "umask $m: published with mode $mode"
done

# ---- the output path is taken by something else ----------------------------
# (setup refuses it; swapdir below is the same appearing during the run)
mkdir isdir isdir/out.h5
run isdir "$app" isdir/out.h5
refused isdir isdir - "is a directory"
[[ -d isdir/out.h5 ]] || bad "isdir: the directory at the path was touched"

mkdir dangling
ln -s "$work/nowhere.h5" dangling/out.h5
run dangling "$app" dangling/out.h5
published dangling dangling/out.h5
[[ -e nowhere.h5 ]] && bad "dangling: the symlink was followed (its target was created)"
echo "dangling symlink at the path: the link itself was replaced by the file; its target was not created"

mkdir linked
echo VICTIM > victim.txt
ln -s "$work/victim.txt" linked/out.h5
run linked "$app" linked/out.h5
published linked linked/out.h5
[[ "$(cat victim.txt)" == VICTIM ]] || bad "linked: the symlink's target was written"
echo "symlink to another file at the path: the link was replaced, its target untouched"

# A symlink planted at the temporary name between its reservation and
# HDF5's create: the create must fail rather than write through it.
mkdir planted
echo PREVIOUS > planted/out.h5
FAILWRITE_DIR="$work/planted" FAILWRITE_PLANT="$work/victim.txt" LD_PRELOAD="$shim" \
  run planted "$app" planted/out.h5
rm -f planted/.out.h5.tmp.* # the planted link itself is the attacker's, not ours
failed planted planted PREVIOUS "could not create"
[[ "$(cat victim.txt)" == VICTIM ]] || bad "planted: the writer wrote through a planted symlink"

# ---- an unwritable directory -----------------------------------------------
# Unwritable from the start, setup refuses it; made unwritable during the run
# (rorun, robind), finalize fails cleanly.
mkdir ro rorun
echo PREVIOUS > ro/out.h5
echo PREVIOUS > rorun/out.h5
chmod 555 ro
if [[ $(id -u) -ne 0 ]]; then
  as_user=()
elif command -v setpriv > /dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
     test -x "$app" 2> /dev/null; then
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  chown 65534 rorun
else
  as_user=(skip)
  echo "skip: unwritable directory as another user (needs setpriv and a build nobody can run)"
fi
if [[ ${as_user[0]:-} != skip ]]; then
  run ro "${as_user[@]}" "$app" ro/out.h5
  refused ro ro PREVIOUS "cannot create files in ro.*Permission denied"
  during rorun rorun/out.h5 chmod 555 rorun
  failed rorun rorun PREVIOUS "cannot create the output file in directory rorun: Permission denied"
fi
as_user=()
chmod 755 ro rorun
mkdir robind
echo PREVIOUS > robind/out.h5
if unshare -m true 2> /dev/null; then
  unshare -m bash -c 'mount --bind robind robind && mount -o remount,bind,ro robind &&
    "$1" robind/out.h5 > robind.out 2> robind.err; echo $? > robind.rc' _ "$app"
  if [[ -s robind.rc ]]; then
    refused robind robind PREVIOUS "Read-only file system"
  else
    echo "skip: read-only bind mount (mount refused)"
  fi
  mkdir robindrun
  echo PREVIOUS > robindrun/out.h5
  # remounted read-only while the program waits between setup and recording
  unshare -m bash -c 'mount --bind robindrun robindrun || exit 0
    mkfifo rbfifo; "$1" robindrun/out.h5 --wait < rbfifo > robindrun.out 2> robindrun.err &
    pid=$!; exec 5> rbfifo
    for ((i = 0; i < 6000; i++)); do
      grep -q ready robindrun.out && break; kill -0 "$pid" 2> /dev/null || break; sleep 0.05
    done
    mount -o remount,bind,ro robindrun; echo go >&5; exec 5>&-
    wait "$pid"; echo $? > robindrun.rc' _ "$app"
  if [[ -s robindrun.rc ]]; then
    failed robindrun robindrun PREVIOUS "Read-only file system"
  else
    echo "skip: read-only bind mount during the run (mount refused)"
  fi
else
  echo "skip: read-only bind mount (no mount namespace)"
fi

# ---- a full disk, a failing fsync ------------------------------------------
# The shim fills the disk after N bytes: at the superblock, in the metadata,
# in the raw data and at the final flush.
for n in 0 1000 6000 12000; do
  mkdir "full$n"
  echo PREVIOUS > "full$n/out.h5"
  FAILWRITE_DIR="$work/full$n" FAILWRITE_AFTER=$n LD_PRELOAD="$shim" run "full$n" "$app" "full$n/out.h5"
  failed "full$n" "full$n" PREVIOUS "disk full"
done
mkdir fsync
echo PREVIOUS > fsync/out.h5
FAILWRITE_DIR="$work/fsync" FAILWRITE_FSYNC=1 LD_PRELOAD="$shim" run fsync "$app" fsync/out.h5
failed fsync fsync PREVIOUS "disk full or I/O error"
mkdir tmpfs
if unshare -m true 2> /dev/null; then
  unshare -m bash -c 'mount -t tmpfs -o size=12k tmpfs tmpfs && echo PREVIOUS > tmpfs/out.h5 &&
    "$1" tmpfs/out.h5 > tmpfs.out 2> tmpfs.err; echo $? > tmpfs.rc
    cp tmpfs/out.h5 tmpfs.prev; ls -A tmpfs > tmpfs.ls' _ "$app"
  if [[ -s tmpfs.rc ]]; then
    # the tmpfs is gone with its namespace: judge the copies taken inside
    mkdir tmpfs.view && cp tmpfs.prev tmpfs.view/out.h5
    while read -r f; do [[ $f == .* ]] && : > "tmpfs.view/$f"; done < tmpfs.ls
    failed tmpfs tmpfs.view PREVIOUS "disk full"
  else
    echo "skip: full tmpfs (mount refused)"
  fi
else
  echo "skip: full tmpfs (no mount namespace)"
fi

# ---- things replaced or removed at the path during the run -----------------
mkdir swapdir
echo PREVIOUS > swapdir/out.h5
during swapdir swapdir/out.h5 sh -c 'rm swapdir/out.h5 && mkdir swapdir/out.h5'
failed swapdir swapdir - "is a directory"

mkdir swaplink
echo PREVIOUS > swaplink/out.h5
during swaplink swaplink/out.h5 sh -c 'rm swaplink/out.h5 && ln -s "$1" swaplink/out.h5' _ "$work/victim.txt"
published swaplink swaplink/out.h5
[[ "$(cat victim.txt)" == VICTIM ]] || bad "swaplink: the writer wrote through the new symlink"
echo "output replaced by a symlink during the run: the link was replaced, its target untouched"

mkdir gone
during gone gone/out.h5 rmdir gone
failed gone gone - "cannot create the output file in directory gone"

if [[ $fail -ne 0 ]]; then exit 1; fi
[[ $xfail -ne 0 ]] && echo "known failures above are HDF5's (docs/reliability.md)"
echo ok
exit 0
