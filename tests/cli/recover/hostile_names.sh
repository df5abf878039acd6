# The names in a spill are outside data: after a whole recovery `recover`
# removes the staging file a spill names only when it is named as the run's
# own (.<name>.stage.*) and begins as one. A spill naming another file, or a
# file of that name holding something else, leaves it alone.
spill="$SP_SRC/tests/fuzz/corpus/spill/plain.spill" # a real crash of file_path=out.h5
name_stage() { # SPILL PATH OUT: the spill with a staging section naming PATH
  "$SP_PYTHON" - "$1" "$2" "$3" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data.endswith(b"SPILLEND")
p = sys.argv[2].encode()
sec = b"SPSTAGE1" + struct.pack("<I", len(p)) + p + struct.pack("<QII", 0, 1, 0)
open(sys.argv[3], "wb").write(data[:-8] + sec + b"SPILLEND")
PY
}
echo "not the profiler's" > victim.txt
name_stage "$spill" victim.txt a.spill
"$SP" recover a.spill -o a.h5; echo "exit $?"
cat victim.txt
printf 'not a journal' > .out.h5.stage.abcdef
name_stage "$spill" .out.h5.stage.abcdef b.spill
"$SP" recover b.spill -o b.h5; echo "exit $?"
ls -A | grep stage
printf 'SPSTGF01' > .out.h5.stage.ghijkl
name_stage "$spill" .out.h5.stage.ghijkl c.spill
"$SP" recover c.spill -o c.h5; echo "exit $?"
ls -A | grep -c ghijkl
