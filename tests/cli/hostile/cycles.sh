# link structures that loop: a soft link to itself, two soft links to each
# other, and (hierarchical layout) a group holding two hard links to itself,
# which doubles the paths a naive walk visits at every level
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/cycle_*.h5 .
probe cycle_*.h5
