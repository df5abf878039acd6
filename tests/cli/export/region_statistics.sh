# region-statistics: region_statistics.json, same as inspect --json
cp "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" export region-statistics diff_a.h5 diff_b.h5 --exclude set -o stats.json || exit
sed "s#$PWD#TMP#" stats.json
"$SP" inspect diff_a.h5 diff_b.h5 --exclude set --json | cmp - stats.json && echo "same as inspect --json"
