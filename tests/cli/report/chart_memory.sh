# Every chart is drawn straight into the report's scratch file ($TMPDIR), so
# no chart's text is held in memory: on a file of 40000 regions (an
# imbalance chart of 37 MB) the peak RSS with the scratch file, plus every
# chart's bytes, stays under the peak without one (TMPDIR unusable: each
# chart held until the page is written). Counted (each run's ru_maxrss),
# not timed. Before, a chart was held while drawn (its body, then its text
# once more) and this failed by about 30 MB. The outputs are the same both
# ways (but for the page's date), and no scratch file is left.
nm -D "$SP" 2>/dev/null | grep -q " __asan_init" && exit 77 # a sanitizer's own memory
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" --regions 40000 g.h5 || exit
mkdir tmp
peak() { # peak RSS (KiB) of: TMPDIR=$1 $SP report g.h5 -o $2 -q
  "$SP_PYTHON" -c '
import os, resource, subprocess, sys
env = dict(os.environ, TMPDIR=sys.argv[1])
subprocess.run([sys.argv[2], "report", "g.h5", "-o", sys.argv[3], "-q"], env=env, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$1" "$SP" "$2"
}
with=$(peak "$PWD/tmp" a) || exit
without=$(peak "$PWD/none" b) || exit
charts=$(cat a/*.svg | wc -c)
echo "peak $with KiB with the scratch file, $without KiB without, charts $((charts / 1024)) KiB" >&2
(( with + charts / 1024 <= without )) && echo "peak with the scratch file + the charts <= peak without"
for f in a/*.svg a/region_statistics.json; do cmp "$f" "b/${f#a/}" || echo "differs: $f"; done
diff <(sed 's/generated [^<]*//' a/report.html) <(sed 's/generated [^<]*//' b/report.html) >/dev/null &&
  echo "report.html the same but for its date"
echo "scratch files left: $(find tmp -mindepth 1 | wc -l)"
