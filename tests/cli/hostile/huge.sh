# sizes claimed by a few kilobytes of file: 2^50 events, 2^40 region names,
# 2^26 index rows with no storage behind them (reading them whole took 24 GB
# before the reader checked that the storage was written), an offset of 2^64-1
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/huge_*.h5 .
probe huge_*.h5
