# A streamed run killed with SIGKILL leaves no spill: recover finds the
# staging journal beside the file_path and writes the staged blocks' calls,
# partial, keeping the crashed run's files; a torn last record is said and
# ignored; a journal whose staged file is gone, and a file that is neither a
# spill nor a journal, are refused with what to do. Random names and counts
# are masked.
mask() { sed -E 's/\.(stage|tmp)\.[A-Za-z0-9]{6}/.\1.XXXXXX/g; s/[0-9]+ staged segment/N staged segment/'; }
SCOPE_PROFILER_MAX_BUFFER_BYTES=16777216 SCOPE_PROFILER_FILE_PATH=run.h5 "$SP_BUILD/tests/app-killme" --ready 1000000 > out.txt 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q ready out.txt && break; sleep 0.1; done
sleep 1 # (the writer stages what it was handed)
kill -KILL $pid; wait $pid 2>/dev/null
ls run.h5.spill 2>&1 | sed 's/^ls: //'
"$SP" recover run.h5 -o rec.h5 | mask; echo "exit ${PIPESTATUS[0]}"
"$SP" inspect rec.h5 --metadata-only | grep -E '^ *recover'
j=$(ls .run.h5.stage.*)
printf 'SPANC001\030\0\0\0' >> "$j"
"$SP" recover "$j" -o torn.h5 | mask; echo "exit ${PIPESTATUS[0]}"
mv .run.h5.tmp.* gone
"$SP" recover "$j" -o gone.h5 2>&1 | mask; echo "exit ${PIPESTATUS[0]}"
echo "not a journal" > .x.h5.stage.abcdef
"$SP" recover .x.h5.stage.abcdef 2>&1; echo "exit $?"
