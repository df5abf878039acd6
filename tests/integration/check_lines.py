"""Independent check (h5py + numpy) of the line-profile records of a run of
tests/apps/line_hot.c: upstream's layout rank<N>/line_profile/<i> (attributes
region, filename, function, first_lineno, unit; datasets line_numbers, hits,
times), and the attribution: loop_a's and loop_b's shares of the samples'
time against the CPU times the program measured itself, on the lines marked
HOT_A and HOT_B of its source, with loop_b reported as inlined.

Usage: check_lines.py FILE SOURCE MEASURED_A_NS MEASURED_B_NS [TOLERANCE=0.05]
"""
import sys

import h5py
import numpy as np


def fail(msg):
    print("check_lines: " + msg, file=sys.stderr)
    sys.exit(1)


def line_of(source, marker):
    with open(source) as f:
        for no, text in enumerate(f, 1):
            if marker in text:
                return no
    fail("no %s in %s" % (marker, source))


def main():
    path, source, meas_a, meas_b = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    tol = float(sys.argv[5]) if len(sys.argv) > 5 else 0.05
    hot = {"loop_a": line_of(source, "/* HOT_A */"), "loop_b": line_of(source, "/* HOT_B */")}
    f = h5py.File(path, "r")
    if "rank0/line_profile" not in f:
        fail("no rank0/line_profile group")
    group = f["rank0/line_profile"]
    keys = sorted(group, key=int)
    if keys != [str(i) for i in range(len(keys))]:
        fail("records are not numbered 0..n-1: %s" % keys)
    times = {}
    for k in keys:
        rec = group[k]
        a = rec.attrs
        for name in ("region", "filename", "function"):
            if not isinstance(a[name], str):
                fail("record %s: attribute %s is %r, not a string" % (k, name, type(a[name])))
        if a["first_lineno"].dtype != np.int64 or a["unit"].dtype != np.float64:
            fail("record %s: first_lineno/unit have dtypes %s/%s" % (k, a["first_lineno"].dtype, a["unit"].dtype))
        if a["unit"] != 1e-9:
            fail("record %s: unit %r" % (k, a["unit"]))
        ln, hits, t = rec["line_numbers"], rec["hits"], rec["times"]
        if (ln.dtype, hits.dtype, t.dtype) != (np.int64, np.int64, np.float64):
            fail("record %s: dtypes %s %s %s" % (k, ln.dtype, hits.dtype, t.dtype))
        if not (ln.shape == hits.shape == t.shape) or len(ln.shape) != 1:
            fail("record %s: shapes %s %s %s" % (k, ln.shape, hits.shape, t.shape))
        if a["region"] != "compute":
            fail("record %s: region %r (only 'compute' has regions open)" % (k, a["region"]))
        fn = a["function"]
        if fn in hot:
            if fn in times:
                fail("two records for (compute, %s)" % fn)
            times[fn] = float(np.sum(t[:]))
            row = int(np.argmax(t[:]))
            if int(ln[row]) != hot[fn]:
                fail("%s: hottest line %d, expected %d (the %s line)" % (fn, ln[row], hot[fn], fn))
            if t[row] < 0.9 * np.sum(t[:]):
                fail("%s: the hot line holds only %.0f%% of the time" % (fn, 100 * t[row] / np.sum(t[:])))
            if not a["filename"].endswith("line_hot.c"):
                fail("%s: filename %r" % (fn, a["filename"]))
            if not 0 < a["first_lineno"] < hot[fn]:
                fail("%s: first_lineno %d" % (fn, a["first_lineno"]))
            if hot[fn] - a["source_first_lineno"] >= 0:
                text = a["source"].split("\n")[hot[fn] - a["source_first_lineno"]]
                if ("HOT_A" if fn == "loop_a" else "HOT_B") not in text:
                    fail("%s: stored source line %d is %r" % (fn, hot[fn], text))
    for fn in hot:
        if fn not in times:
            fail("no record for function %s" % fn)
    inl = [group[k].attrs.get("inlined_into") for k in keys if group[k].attrs["function"] == "loop_b"][0]
    if inl is None or not any(s.startswith("worker (line_hot.c:") for s in inl):
        fail("loop_b is not reported as inlined into worker: %r" % (inl,))
    sampled = times["loop_a"] / (times["loop_a"] + times["loop_b"])
    measured = meas_a / (meas_a + meas_b)
    print("loop_a: %.1f%% of the sampled time, %.1f%% measured; sampled %.3f s of %.3f s measured"
          % (100 * sampled, 100 * measured, (times["loop_a"] + times["loop_b"]) / 1e9, (meas_a + meas_b) / 1e9))
    if abs(sampled - measured) > tol:
        fail("loop_a's share %.3f is off the measured %.3f by more than %g points" % (sampled, measured, 100 * tol))
    total = (times["loop_a"] + times["loop_b"]) / (meas_a + meas_b)
    if not 0.8 < total < 1.1:
        fail("the samples stand for %.2f of the measured CPU time" % total)
    m = f["metadata"].attrs
    print("sampler: %s, %d samples" % (m["line_profile_sampler"], m["line_profile_samples"]))


main()
