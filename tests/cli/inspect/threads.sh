# --threads: calls, first entry and last exit per rank and thread, from the
# events; filters apply; aggregate files and --tree together are refused
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/aggregate.h5" "$SP_SRC/tests/golden/compat_schema2.h5" .
"$SP" inspect multi.h5 --threads -q; echo "exit $?"
"$SP" inspect multi.h5 --threads -q --ranks 1 --include worker; echo "exit $?"
"$SP" inspect multi.h5 --threads -q --exclude '.*'; echo "exit $?"
"$SP" inspect compat_schema2.h5 --threads -q; echo "exit $?"
"$SP" inspect aggregate.h5 --threads -q; echo "exit $?"
"$SP" inspect multi.h5 --threads --tree; echo "exit $?"
