# hostile spill files for `scope-profiler recover`: empty, not a spill, an
# unknown version, a header cut short, corrupt clock anchors, an absurd
# settings count, a directory, a missing file (each exit 2), and a spill cut
# in the middle of its threads (recovered up to there, recovery_complete 0)
source "$SP_SRC/tests/cli/hostile/common.bash"
spill="$SP_SRC/tests/fuzz/corpus/spill/plain.spill" # written by a real crash
patch() { # patch FILE OFFSET HEXBYTES: overwrite bytes in place
  printf "$(sed 's/\(..\)/\\x\1/g' <<< "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
try() {
  local f rc
  for f in "$@"; do
    timeout 60 "$SP" recover "$f" -o out.h5 > /dev/null
    rc=$?
    echo "$f: exit $rc"
  done
}
: > empty.spill
printf 'region,calls\n' > text.spill
cp "$spill" version.spill && patch version.spill 8 09000000
head -c 40 "$spill" > header.spill
cp "$spill" anchors.spill && patch anchors.spill 32 0000000000000000
cp "$spill" settings.spill && patch settings.spill 60 ffffffff
mkdir dir.spill
try empty.spill text.spill version.spill header.spill anchors.spill settings.spill dir.spill missing.spill
head -c 3000 "$spill" > cut.spill
"$SP" recover cut.spill -o cut.h5 > /dev/null; echo "cut.spill: exit $?"
"$SP" inspect cut.h5 --metadata-only | grep -E '^ *recover'
"$SP" inspect cut.h5 -q | awk '{ print $1, $3 }'
