# --export-metadata writes typed, unclipped metadata of every file
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/compat_schema1.h5" .
"$SP" inspect multi.h5 compat_schema1.h5 --export-metadata meta.json --regions-only -q >/dev/null
sed "s#$PWD#TMP#" meta.json
