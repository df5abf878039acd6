# "**" matches any depth; a pattern whose files an earlier one already
# brought in is not "unmatched"; -q with several files still names each file
mkdir -p runs/a/b
cp "$SP_SRC/tests/golden/diff_a.h5" runs/a/
cp "$SP_SRC/tests/golden/diff_b.h5" runs/a/b/
cp "$SP_SRC/tests/golden/compat_schema2.h5" runs/
"$SP" inspect 'runs/**/*.h5' 'runs/a/*.h5' -q --columns region calls
