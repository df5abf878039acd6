# truncated copies of a valid profile (ours, and one the library writes when
# the demo runs) and blocks of a profile zeroed in place: HDF5 finds the end of
# file short of what the superblock promises, or a damaged object header
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE/valid.h5" .
SCOPE_PROFILER_FILE_PATH=sim.h5 "$SP_BUILD/examples/sim" --steps 2 --quiet > /dev/null
for src in valid sim; do
  size=$(stat -c %s "$src.h5")
  for n in 0 7 96 512 2048 half end-1; do
    case $n in half) bytes=$((size / 2)) ;; end-1) bytes=$((size - 1)) ;; *) bytes=$n ;; esac
    head -c "$bytes" "$src.h5" > "$src-cut-$n.h5"
    probe "$src-cut-$n.h5"
  done
done
for off in 96 800 1400 2048 6000 12000; do
  cp valid.h5 "valid-zeroed-at-$off.h5"
  dd if=/dev/zero of="valid-zeroed-at-$off.h5" bs=1 seek="$off" count=512 conv=notrunc status=none
  probe "valid-zeroed-at-$off.h5"
done
