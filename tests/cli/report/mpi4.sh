# a 4-rank run (h5py-made, like an MPI run): every chart, every call covered,
# statistics equal numpy's; output listing on stdout
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
"$SP" report mpi4.h5 -o out || exit
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" out mpi4.h5
