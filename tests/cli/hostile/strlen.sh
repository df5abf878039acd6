# a region name whose stored length is corrupt (0x55555555): refused, naming
# the dataset and the string, before HDF5 allocates 1.4 GB for it (it took
# 2.8 GB and 6 s, and printed the name, before the reader checked lengths)
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/strlen_*.h5 .
probe strlen_*.h5
