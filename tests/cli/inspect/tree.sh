# the call tree: % of the session, (own) rows, a worker thread as its own root
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --tree -q
