# usage and input errors exit 2 with a message saying what to do
cp "$SP_SRC/tests/golden/multi.h5" "$SP_SRC/tests/golden/diff_a.h5" "$SP_SRC/tests/golden/diff_b.h5" .
"$SP" report multi.h5; echo "exit $?"
"$SP" report -o out; echo "exit $?"
"$SP" report multi.h5 -o out --metrics avg,p42; echo "exit $?"
"$SP" report multi.h5 -o out --palette rainbow; echo "exit $?"
"$SP" report multi.h5 -o out --width 50; echo "exit $?"
"$SP" report multi.h5 -o out --max-bars lots; echo "exit $?"
"$SP" report multi.h5 -o out --flame-ranks 3-1; echo "exit $?"
"$SP" report multi.h5 diff_a.h5 -o out --label one; echo "exit $?"
"$SP" report multi.h5 -o out --ranks 5; echo "exit $?"
"$SP" report missing.h5 -o out; echo "exit $?"
"$SP" report multi.h5 -o out --bogus; echo "exit $?"
"$SP" report diff_a.h5 diff_b.h5 -o out --x omp_num_threads; echo "exit $?"
"$SP" report diff_a.h5 diff_b.h5 -o out --x machine; echo "exit $?"
touch notadir
"$SP" report multi.h5 -o notadir; echo "exit $?"
ls
