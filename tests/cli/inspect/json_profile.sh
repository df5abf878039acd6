# A JSON profile (upstream's v1, here from export json) inspects like the
# HDF5 file it came from: the same region table, and the reader's walks over
# per-rank groups (counters, LIKWID) find none in results held in memory
# rather than failing on the file handle such results do not have.
cp "$SP_SRC/tests/golden/diff_a.h5" .
"$SP" export json diff_a.h5 -o diff_a.json || exit
"$SP" inspect diff_a.h5 -q --columns region calls total > h5.txt || exit
"$SP" inspect diff_a.json -q --columns region calls total > json.txt; echo "inspect diff_a.json: exit $?"
cmp -s h5.txt json.txt && echo "the same table from diff_a.h5 and diff_a.json"
cat json.txt
