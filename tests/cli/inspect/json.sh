# --json is region_statistics.json (upstream schema); file_path is absolute
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --json --ranks 0-1 --include s | sed "s#$PWD#TMP#"
