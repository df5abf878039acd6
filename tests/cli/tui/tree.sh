# the call tree: roots unfolded, Enter folds and unfolds, + and - all,
# Right unfolds, Left goes to the parent; % of the session per node
source "$SP_SRC/tests/cli/tui/common.bash"
cp "$SP_SRC/tests/golden/multi.h5" .
start 100 18 multi.h5
keys 2
screen "2: the tree, roots unfolded"
keys Down Right
screen "Down Right: solve unfolded"
keys Down Left
screen "Down Left: back on solve"
keys Enter
screen "Enter: solve folded"
keys +
screen "+: everything unfolded"
keys -
screen "-: roots folded"
keys q
