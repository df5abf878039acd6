# hostile native traces and JSON profiles: every command exits 2 with a
# message that names the problem (truncated, lying counts, trailing bytes,
# unknown versions, wrong JSON types, malformed JSON), never a crash or a hang
source "$SP_SRC/tests/cli/hostile/common.bash"
"$SP_PYTHON" - "$SP_SRC/tests/fixtures/upstream" <<'PY'
import gzip, sys
src = sys.argv[1]
good = open(src + "/native-v2.spt", "rb").read()
def put(name, data):
    open(name, "wb").write(data)
put("cut_header.spt", good[:20])
put("cut_record.spt", good[:60])
put("cut_events.spt", good[:100])
put("trailing.spt", good + b"\0")
b = bytearray(good); b[8] = 3; put("version3.spt", bytes(b))
b = bytearray(good); b[16] = 200; put("lying_regions.spt", bytes(b))
b = bytearray(good); b[49] = 200; put("lying_calls.spt", bytes(b))
b = bytearray(good); b[26] = 100; put("lying_name.spt", bytes(b))
# a call starting near INT64_MIN: its duration does not fit in int64 (found by fuzz_native)
import base64
put("overflow.spt", base64.b64decode("U0NPUEVQUkYBAAAAAAAAAAEAAAAAAAAABQAAAHNvbHZlAwAAAAAAAAAKAAAAAAAAABQAAAAAAACA"
                                     "KAAAAAAAAAAPAAAAAAAAACEAAAAAAAAANwAAAAAAAAA="))
doc = open(src + "/json-v1.json").read()
put("not_profile.json", b'{"format": "something-else", "regions": []}')
put("version2.json", doc.replace('"format_version": 1', '"format_version": 2').encode())
put("rank_string.json", doc.replace('"rank": 0', '"rank": "0"').encode())
put("start_float.json", doc.replace("[10, 20, 40]", "[10, 20.5, 40]").encode())
put("lengths.json", doc.replace("[15, 33, 55]", "[15, 33]").encode())
put("ends_early.json", doc.replace("[15, 33, 55]", "[15, 13, 55]").encode())
# a call from -2^62 to 2^62: both ends at the limit, its duration 2^63 does not fit in int64
put("span.json", doc.replace("[10, 20, 40]", "[10, -4611686018427387904, 40]")
    .replace("[15, 33, 55]", "[15, 4611686018427387904, 55]").encode())
put("broken.json", doc[:-30].encode())
put("cut.json.gz", gzip.compress(doc.encode())[:60])
PY
probe cut_header.spt cut_record.spt cut_events.spt trailing.spt version3.spt lying_regions.spt \
  lying_calls.spt lying_name.spt overflow.spt not_profile.json version2.json rank_string.json start_float.json \
  lengths.json ends_early.json span.json broken.json cut.json.gz
"$SP" export json lengths.json -o out.json; echo "export: exit $?"
"$SP" report broken.json -o rep -q; echo "report: exit $?"
"$SP" diff trailing.spt lying_calls.spt; echo "diff: exit $?"
