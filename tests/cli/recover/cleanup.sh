# After a whole recovery that reads back, the crashed run's spill is removed
# (recovering it again would write the same run over the good file, or less
# once a streamed run's staging is gone); --keep keeps it; a spill cut short
# recovers in part and is kept, saying why.
spill="$SP_SRC/tests/fuzz/corpus/spill/plain.spill" # written by a real crash
cp "$spill" run.spill
"$SP" recover run.spill -o out.h5; echo "exit $?"
ls run.spill 2>&1 | sed 's/^ls: //'
"$SP" inspect out.h5 --metadata-only | grep -E '^ *recover'
cp "$spill" run.spill
"$SP" recover --keep run.spill -o kept.h5; echo "exit $?"
ls run.spill
head -c 3000 "$spill" > cut.spill
"$SP" recover cut.spill -o cut.h5; echo "exit $?"
ls cut.spill
