# Files written with zstd and lzf are read by the CLI without
# HDF5_PLUGIN_PATH: the library registers its own filters.
unset HDF5_PLUGIN_PATH
export OMP_NUM_THREADS=2
for f in zstd lzf; do
  SCOPE_PROFILER_HDF5_COMPRESSION=$f SCOPE_PROFILER_HDF5_CHUNK_SIZE=64 SCOPE_PROFILER_FILE_PATH=$f.h5 \
    "$SP_BUILD/examples/sim" --steps 4 --quiet || exit 3
  "$SP" export folded $f.h5 -o $f.folded 2>/dev/null || exit 4
  echo "$f: $(wc -l < $f.folded) stacks, $(awk '{s+=$NF} END {print (s>0)}' $f.folded) nonzero"
done
