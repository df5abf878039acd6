# things named .h5 that are no HDF5 file at all: text, random bytes, the HDF5
# signature alone, an empty file, a directory, a dangling symlink, a FIFO
# (which must not block the reader), /dev/null
source "$SP_SRC/tests/cli/hostile/common.bash"
printf 'region,calls\nsolve,2\n' > text.h5
head -c 3000 /dev/zero | tr '\0' 'x' > junk.h5
printf '\211HDF\r\n\032\n' > signature_only.h5
: > empty.h5
mkdir dir.h5
ln -s nowhere.h5 dangling.h5
mkfifo fifo.h5
probe text.h5 junk.h5 signature_only.h5 empty.h5 dir.h5 dangling.h5 fifo.h5 /dev/null
