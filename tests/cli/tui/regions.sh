# the region table sorted by total, own and calls; the cursor moves, the
# selected region's summary and sparkline follow; its ranks and threads
source "$SP_SRC/tests/cli/tui/common.bash"
cp "$SP_SRC/tests/golden/multi.h5" .
start 100 20 multi.h5
screen "regions, by total"
keys s
screen "s: by own"
keys s
screen "s: by calls"
keys Down Down
screen "Down Down: two rows further (worker)"
keys 3
screen "3: worker per rank"
keys 4
screen "4: worker per thread"
keys 1 Home 3
screen "1 Home 3: the first row (step) per rank"
keys t 1 End
screen "t 1 End: by total, last row"
keys q
