# schema 3 (multi_schema3.h5: multi.h5 recoded by tests/golden/make_fixtures.py,
# with most times in the overflow lists) reads exactly like schema 2: the
# tree view, the events of every call (chrome trace), the call stacks
# (folded) and the Gantt rows print the same; only the header's file name
# and schema differ
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/multi_schema3.h5" .
for f in multi multi_schema3; do
  {
    "$SP" inspect $f.h5 --tree | sed 1,2d
    "$SP" export chrome-trace $f.h5 -o - -q
    "$SP" export folded $f.h5 -o - -q
    "$SP" export csv $f.h5 -o - -q
  } > $f.out
done
cmp multi.out multi_schema3.out && echo "schema 3 and schema 2 read alike ($(wc -l < multi.out) lines)"
"$SP" inspect multi_schema3.h5 | sed -n 2p
