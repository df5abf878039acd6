# link structures that loop: a soft link to itself, two soft links to each
# other, (hierarchical layout) a group holding two hard links to itself, and a
# chain of 28 groups each linking the next twice: no loop, but 2^27 paths for
# a walk that does not notice a group it has seen (inspect hung on it)
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/cycle_*.h5 "$HOSTILE"/dag_hard.h5 .
probe cycle_*.h5 dag_hard.h5
