# each column of the profile stored with a type class, rank or object kind
# the reader must refuse
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/valid.h5 "$HOSTILE"/dtype_*.h5 .
probe valid.h5 dtype_*.h5
