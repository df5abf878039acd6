#!/usr/bin/env bash
# Outputs that are not regular files are never replaced: a FIFO, a device and
# - (stdout) are written in place, by the library (file_path) and by the CLI
# (export -o); a directory or a socket is refused with a clear message. A
# device node stays one (a rename over it, as root, makes it a regular file):
# as root the test makes its own null device and never touches /dev/null.
set -u
work=$(mktemp -d "${TMPDIR:-/tmp}/sp-dest-XXXXXX"); trap 'rm -rf "$work"' EXIT
cd "$work"
sim="$SP_BUILD/examples/sim" cli="$SP_BUILD/scope-profiler"
fail=0
export OMP_NUM_THREADS=1
# Not root: renaming over /dev/null is refused anyway, so it is safe to use.
# Root: our own null device node, or no device case at all (a nodev mount or a
# device cgroup can forbid opening it) -- never the real /dev/null.
dev=/dev/null
if [[ $(id -u) == 0 ]]; then
  dev=
  if mknod null c 1 3 2>/dev/null && { printf x > null; } 2>/dev/null; then dev=$PWD/null
  else echo "no usable device node here (mknod or opening it refused): device cases skipped"; fi
fi
# library: a FIFO with a reader on the other end
mkfifo lib.fifo
timeout 120 cat lib.fifo > from_fifo.h5 &  # (a writer that never comes must not hang the test)
SCOPE_PROFILER_FILE_PATH=lib.fifo "$sim" --steps 2 --quiet || { echo "sim into a FIFO failed"; fail=1; }
wait
[[ -p lib.fifo ]] || { echo "the FIFO was replaced"; fail=1; }
if "$cli" inspect from_fifo.h5 -q > /dev/null; then echo "library: FIFO written in place, its bytes a readable profile"
else echo "what came through the FIFO is not a profile"; fail=1; fi
# library: a character device
if [[ -n $dev ]]; then
  SCOPE_PROFILER_FILE_PATH=$dev "$sim" --steps 1 --quiet || { echo "sim into a device failed"; fail=1; }
  [[ -c $dev ]] || { echo "the device node was replaced"; fail=1; }
  echo "library: a device written in place, still a character device"
fi
# library: a directory
mkdir adir
SCOPE_PROFILER_FILE_PATH=adir "$sim" --steps 1 --quiet 2> err.txt
grep -q "is a directory" err.txt && echo "library: a directory refused" || { echo "no message for a directory"; cat err.txt; fail=1; }
# CLI: export into a FIFO, a device and stdout; a directory and a socket refused
mkfifo out.fifo
timeout 120 cat out.fifo > trace.json &
"$cli" export chrome-trace from_fifo.h5 -o out.fifo -q || { echo "export into a FIFO failed"; fail=1; }
wait
[[ -p out.fifo ]] || { echo "export replaced the FIFO"; fail=1; }
if "$SP_PYTHON" -c 'import json; json.load(open("trace.json"))'; then echo "export: FIFO written in place"
else echo "the trace through the FIFO is not JSON"; fail=1; fi
if [[ -n $dev ]]; then
  "$cli" export folded from_fifo.h5 -o "$dev" -q || { echo "export into a device failed"; fail=1; }
  [[ -c $dev ]] || { echo "export replaced the device node"; fail=1; }
  echo "export: a device written in place"
fi
[[ $("$cli" export folded from_fifo.h5 -o - -q | wc -l) -gt 0 ]] || { echo "export -o - wrote nothing"; fail=1; }
"$SP_PYTHON" -c 'import socket; s = socket.socket(socket.AF_UNIX); s.bind("a.sock")'
for bad in adir a.sock; do
  "$cli" export folded from_fifo.h5 -o $bad -q 2> err.txt; rc=$?
  if [[ $rc == 2 ]] && grep -q " is a " err.txt; then echo "export -o $bad: $(sed 's/.*-o [^ ]* //' err.txt)"
  else echo "export -o $bad: exit $rc"; cat err.txt; fail=1; fi
done
[[ -d adir && -S a.sock ]] || { echo "the directory or the socket was replaced"; fail=1; }
exit $fail
