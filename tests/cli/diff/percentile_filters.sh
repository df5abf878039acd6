# p95 over rank 1 of a multi-rank file against itself, with filters
cp "$SP_SRC/tests/golden/multi.h5" .
cp multi.h5 again.h5
"$SP" diff multi.h5 again.h5 --metric p95 --ranks 1 --include s --exclude scope
