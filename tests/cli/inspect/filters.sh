# include/exclude regexes anchored at the start; rank selection
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 -q -i s w -e scope --ranks 1 --columns region ranks calls total
