# a 4-rank run (h5py-made, like an MPI run): every chart, every call covered,
# statistics equal numpy's; output listing on stdout
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
"$SP" report mpi4.h5 -o out || exit
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" out mpi4.h5
# ranks without a flame chart are merged into the flame graph from the call
# ids directly; the result must equal the reader's call stacks
"$SP" report mpi4.h5 -o all -q --flame-ranks all || exit
cmp out/flame_graph.svg all/flame_graph.svg && echo "flame graph: id fast path = reader call stacks"
"$SP" report mpi4.h5 -o fx -q --exclude step solve || exit
"$SP" report mpi4.h5 -o fxa -q --exclude step solve --flame-ranks all || exit
cmp fx/flame_graph.svg fxa/flame_graph.svg && echo "flame graph, filtered: id fast path = reader call stacks"
