# files that are not captures, or damaged ones: one clear line each, exit 2
printf 'hello, this is text and no capture at all\n' > text.bin
printf 'memray\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0' > memray.bin
cp "$SP_SRC/tests/fuzz/corpus/memcap/plain.bin" crc.bin
# flip one byte inside the HEAD record's payload: its checksum no longer matches
printf '\x7f' | dd of=crc.bin bs=1 seek=60 conv=notrunc status=none
head -c 31 "$SP_SRC/tests/fuzz/corpus/memcap/plain.bin" > short.bin
for f in text.bin memray.bin crc.bin short.bin missing.bin; do
  "$SP" memory "$f" > /dev/null
  echo "$f: exit $?"
done
