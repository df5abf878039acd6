# / searches region names (case-insensitive) in the table and in the tree,
# unfolding the path to a match; n finds the next; a miss says so
source "$SP_SRC/tests/cli/tui/common.bash"
cp "$SP_SRC/tests/golden/multi.h5" .
start 90 16 multi.h5
keys / S T E Enter
screen "/STE: step selected"
keys / s Enter n
screen "/s then n: the next region containing s"
keys / n o p e Enter
screen "/nope: no match"
keys 2 - / s t e p Enter
screen "tree, folded, /step: its path unfolded"
keys ? 
screen "?: the keys"
keys q
