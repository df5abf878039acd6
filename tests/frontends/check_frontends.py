"""Checks a profile written by a C++, Fortran or mixed-language program with
h5py + numpy alone (tests/frontends/run.sh), beside check_profile.py's
structural checks:

  check_frontends.py FILE [--expect REGION=CALLS ...] [--parent REGION=PARENT ...]
                          [--threads REGION=N ...] [--ranks N]

--expect: the region's calls summed over ranks; --parent: every call of
REGION sits directly inside a call of PARENT (PARENT may list alternatives
joined by '|'; '-' means a top-level call; without events/call_ids and
parent_ids, as schema 3 writes when the intervals give the nesting, the
calls are nested by their times, upstream's reader rule); --threads: the region's calls
come from exactly N distinct threads (events/thread_ids); --ranks: the file
holds N ranks. Exits non-zero with a message on the first violation.
"""
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sp_events  # noqa: E402  (decodes the event columns)


def fail(msg):
    print("check_frontends: " + msg, file=sys.stderr)
    sys.exit(1)


def pairs(args, flag):
    out = []
    for i, a in enumerate(args):
        if a == flag:
            k, v = args[i + 1].rsplit("=", 1)
            out.append((k, v))
    return out


def main():
    path, args = sys.argv[1], sys.argv[2:]
    f = h5py.File(path, "r")
    names = [n.decode() if isinstance(n, bytes) else n for n in f["region_table/names"][:]]
    rri = f["rank_region_index"]
    ids, ranks = rri["region_ids"][:], rri["ranks"][:]
    offs, counts = rri["event_offsets"][:], rri["event_counts"][:]
    ev = sp_events.nested(f)  # call/parent rebuilt from the intervals when the ids are absent
    n = len(ev["start"])
    region = np.empty(n, dtype=object)
    rank = np.zeros(n, dtype=np.int64)
    for r in range(len(ids)):
        o, c = int(offs[r]), int(counts[r])
        region[o:o + c] = names[ids[r]]
        rank[o:o + c] = ranks[r]
    calls = {}
    for name in region:
        calls[name] = calls.get(name, 0) + 1
    for name, want in pairs(args, "--expect"):
        if calls.get(name, 0) != int(want):
            fail("%s: %d calls, expected %s (calls: %s)" % (name, calls.get(name, 0), want,
                                                              sorted(calls.items())))
    # call ids are unique per rank
    where = {(int(rank[i]), int(ev["call"][i])): i for i in range(n)}
    for name, parent in pairs(args, "--parent"):
        allowed = set(parent.split("|"))
        mine = np.nonzero(region == name)[0]
        if len(mine) == 0:
            fail("%s: no calls" % name)
        for i in mine:
            p = int(ev["parent"][i])
            got = "-" if p == -1 else region[where[(int(rank[i]), p)]]
            if got not in allowed:
                fail("a call of %s sits in %s, expected %s" % (name, got, parent))
    for name, want in pairs(args, "--threads"):
        if "thread_ids" not in f["events"]:
            fail("no events/thread_ids")
        tid = f["events/thread_ids"][:]
        got = len(set(tid[region == name].tolist()))
        if got != int(want):
            fail("%s: calls from %d threads, expected %s" % (name, got, want))
    if "--ranks" in args:
        want = int(args[args.index("--ranks") + 1])
        got = len(set(ranks.tolist()))
        if got != want:
            fail("%d ranks, expected %d" % (got, want))
    print("%s: ok, %d calls of %d regions" % (path, n, len(calls)))


if __name__ == "__main__":
    main()
