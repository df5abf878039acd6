# use_memray through the settings, on the example simulation: without the
# interposer the run warns once and goes on without memory figures; preloaded,
# finalize leaves a complete capture at the default path (the profile's with
# .memray.bin), the profile has the memory columns, and `memory --profile`
# joins each region's calls and time
lib="$SP_BUILD/src/memory/libscope_profiler_memory.so" sim="$SP_BUILD/examples/sim"
[[ -f $lib && -x $sim ]] || exit 77
nm -D "$SP" 2>/dev/null | grep -q " __asan_init" && exit 77
export SCOPE_PROFILER_FILE_PATH=run.h5 SCOPE_PROFILER_USE_MEMRAY=1
"$sim" --steps 3 --quiet 2> nolib.err
echo "without the interposer: exit $?, $(grep -c 'libscope_profiler_memory.so is not loaded' nolib.err) warning, capture: $(ls run.memray.bin 2>/dev/null || echo none)"
LD_PRELOAD="$lib" "$sim" --steps 3 --quiet 2> lib.err
echo "preloaded: exit $?, $(wc -l < lib.err) warnings, capture: $(ls run.memray.bin 2>/dev/null || echo none)"
"$SP" inspect run.h5 > /dev/null && echo "the profile opens"
"${SP_PYTHON:-/usr/bin/python3}" - <<'PY'
import h5py
f = h5py.File("run.h5", "r")
u = f["events/mem_peak_bytes"].attrs["units"]
print("columns:", " ".join(k for k in sorted(f["events"]) if k.startswith("mem_")),
      "| units:", u.decode() if isinstance(u, bytes) else u)
print("memory group:", " ".join(sorted(f["rank0/memory"])))
PY
"$SP" memory run.memray.bin --profile run.h5 --top 0 > out.txt
echo "memory: exit $?"
awk '$1 == "step" && $(NF-1) == 3 { print "step: 3 calls joined from the profile" }' out.txt
