"""Independent check (h5py + numpy) of the line-profile records of a run of
tests/apps/line_hot.c: upstream's layout rank<N>/line_profile/<i> (attributes
region, filename, function, first_lineno, unit; datasets line_numbers, hits,
times), and the attribution: loop_a's and loop_b's shares of the samples'
time against the CPU times the program measured itself, on the lines marked
HOT_A and HOT_B of its source, with loop_b reported as inlined.

How far the shares may be off follows from how a sample weighs: it stands
for the thread's CPU time since its previous sample, all of it given to the
code it interrupted. On each of the THREADS threads one sample's interval
straddles the switch from loop_a to loop_b, and the CPU time after the last
sample of loop_b is in no sample; each is at most the longest interval of the
run (metadata line_profile_max_sample_ns), whatever the load. Samples that
landed elsewhere in the region (clock reads) are counted against the shares
too. So the tolerance is SLACK plus those, over the loops' sampled time: a
bound, not a guess at the luck of the draw.

Usage: check_lines.py FILE SOURCE MEASURED_A_NS MEASURED_B_NS THREADS SLACK
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
    threads, slack = int(sys.argv[5]), float(sys.argv[6])
    hot = {"loop_a": line_of(source, "/* HOT_A */"), "loop_b": line_of(source, "/* HOT_B */")}
    f = h5py.File(path, "r")
    if "rank0/line_profile" not in f:
        fail("no rank0/line_profile group")
    group = f["rank0/line_profile"]
    keys = sorted(group, key=int)
    if keys != [str(i) for i in range(len(keys))]:
        fail("records are not numbered 0..n-1: %s" % keys)
    times = {}
    elsewhere = 0.0
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
        if fn not in hot:
            elsewhere += float(np.sum(t[:]))
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
    m = f["metadata"].attrs
    longest = float(m["line_profile_max_sample_ns"])
    loops = times["loop_a"] + times["loop_b"]
    sampled = times["loop_a"] / loops
    measured = meas_a / (meas_a + meas_b)
    tol = slack + (2 * threads * longest + elsewhere) / loops
    print("loop_a: %.1f%% of the sampled time, %.1f%% measured (tolerance %.1f points: longest sample %.1f ms, "
          "%.1f ms elsewhere); sampled %.3f s of %.3f s measured"
          % (100 * sampled, 100 * measured, 100 * tol, longest / 1e6, elsewhere / 1e6, loops / 1e9,
             (meas_a + meas_b) / 1e9))
    print("sampler: %s, %d samples" % (m["line_profile_sampler"], m["line_profile_samples"]))
    if abs(sampled - measured) > tol:
        fail("loop_a's share %.3f is off the measured %.3f by more than %.1f points" % (sampled, measured, 100 * tol))
    # The samples stand for all the loops' CPU time but the lost tails and
    # what landed elsewhere, and never for more than the threads ran.
    lost = threads * longest + elsewhere
    if not meas_a + meas_b - lost - slack * loops <= loops <= (1 + slack) * (meas_a + meas_b):
        fail("the samples stand for %.3f s of the %.3f s measured (%.3f s may be lost)"
             % (loops / 1e9, (meas_a + meas_b) / 1e9, lost / 1e9))


main()
