# strong scaling over 1, 2 and 4 ranks: speedup with the ideal line and
# efficiency for num_ranks and total_cores; a metadata field is categorical:
# command-line order, no ideal line, no efficiency
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
C="$SP_SRC/tests/report/check_report.py"
"$SP" report scale_4.h5 scale_1.h5 scale_2.h5 -o ranks -q || exit
"$SP_PYTHON" "$C" ranks scale_4.h5 scale_1.h5 scale_2.h5 | grep -E 'speedup|efficiency|FAIL|json'
grep -o 'baseline: x = [0-9]*' ranks/speedup.svg
"$SP" report scale_4.h5 scale_1.h5 scale_2.h5 -o cores -q --x total_cores || exit
"$SP_PYTHON" "$C" cores scale_4.h5 scale_1.h5 scale_2.h5 --x total_cores | grep -E 'speedup|efficiency|FAIL'
"$SP" report scale_4.h5 scale_1.h5 scale_2.h5 -o variant -q --x variant || exit
"$SP_PYTHON" "$C" variant scale_4.h5 scale_1.h5 scale_2.h5 --x variant | grep -E 'speedup|efficiency|FAIL'
grep -o 'Not drawn: [^<]*' variant/report.html
ls variant | grep -c efficiency
"$SP" report scale_1.h5 -o single -q || exit
grep -o 'Not drawn: [^<]*' single/report.html
