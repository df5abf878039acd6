# The charts are drawn into the report's scratch file in $TMPDIR. When that
# file system fills partway through (a tmpfs of 64 KiB: the first charts
# fit, a later one does not; one of 4 KiB: not even the first), the chart
# the file could not take and those after it are drawn again in memory: the
# report still succeeds, and its outputs are those of a run with room (but
# for the page's date). Without that fallback the report ends at the chart
# that failed.
unshare -m true 2> /dev/null || { echo "skip: no mount namespace"; exit 77; }
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . > /dev/null || exit
TMPDIR=$PWD "$SP" report mpi4.h5 -o roomy -q || exit
for size in 64k 4k; do
  mkdir "full$size"
  unshare -m bash -c 'mount -t tmpfs -o size=$2 tmpfs "full$2" || exit 77
    TMPDIR=$PWD/full$2 "$1" report mpi4.h5 -o "out$2" -q; echo "$2: exit $?"' _ "$SP" "$size" || exit
  for f in roomy/*.svg roomy/region_statistics.json; do
    cmp -s "$f" "out$size/${f#roomy/}" || echo "$size: differs: ${f#roomy/}"
  done
  diff <(sed 's/generated [^<]*//' roomy/report.html) <(sed 's/generated [^<]*//' "out$size/report.html") > /dev/null &&
    echo "$size: report.html the same but for its date"
done
