# upstream's compatibility fixtures (tests/fixtures/upstream: HDF5 schemas 1-3,
# the JSON profile v1, native traces v1 and v2; rank 0, region solve, starts
# 10 20 40, ends 15 33 55, line 7, tag golden where the format has them) read
# through inspect, and through export json, whose output reads back to the
# same export byte for byte; a copy under another name reads the same
for f in hdf5-schema-1.h5 hdf5-schema-2.h5 hdf5-schema-3.h5 json-v1.json native-v1.spt native-v2.spt; do
  cp "$SP_SRC/tests/fixtures/upstream/$f" .
  "$SP" inspect "$f" --columns region ranks calls total min max own | sed 1d
  "$SP" inspect "$f" --source solve -q
  "$SP" export json "$f" -o "$f.json" -q || exit
  sed 's/.*"regions": //; s/"exporter": [^,]*, //' "$f.json"
  "$SP" export json "$f.json" -o again.json -q || exit
  cmp "$f.json" again.json && echo "$f: the export reads back to itself"
  cp "$f" renamed.profile
  "$SP" inspect renamed.profile | sed -n 2p | sed 's/^  label: renamed/  same as/'
  echo
done
