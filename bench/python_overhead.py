"""python_overhead.py - what a region costs from Python, in one run.

    PYTHONPATH=build/python python3 bench/python_overhead.py [--calls N] [--repeat R] [--json OUT]

ns per iteration, the minimum over R rounds (as timeit advises: on a
loaded machine the other processes only ever add time), the cases of a
round run one after the other, for: an empty loop; `with` of an
empty C context manager (_core.NullContext: what the interpreter charges
for any `with` of a C object); a perf_counter_ns() pair (what a hand-made
Python timer costs); `with ProfileManager.profile_region("x"):` (lookup +
region, the usual spelling) and `with region:` of a region kept in a local;
a plain call of a small function and the same function decorated with
@profile. The figures that matter are differences and ratios against the
baselines of the same run (these machines are noisy).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import scope_profiler as sp
from scope_profiler import _core


def bench(n, only=None):
    pc = time.perf_counter_ns
    null = _core.NullContext()
    region = sp.profile_region("bench_with")
    profile_region = sp.ProfileManager.profile_region

    def f(x):
        return x

    g = sp.profile("bench_call")(lambda x: x)

    def empty():
        for _ in range(n):
            pass

    def with_null():
        for _ in range(n):
            with null:
                pass

    def perf_pair():
        for _ in range(n):
            pc()
            pc()

    def with_lookup():
        for _ in range(n):
            with profile_region("bench_lookup"):
                pass

    def with_local():
        for _ in range(n):
            with region:
                pass

    def plain_call():
        for i in range(n):
            f(i)

    def decorated_call():
        for i in range(n):
            g(i)

    cases = [empty, with_null, perf_pair, with_lookup, with_local, plain_call, decorated_call]
    if only is not None:
        {c.__name__: c for c in cases}[only]()
        return None
    out = {}
    for c in cases:
        t0 = time.perf_counter_ns()
        c()
        out[c.__name__] = (time.perf_counter_ns() - t0) / n
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=41)
    ap.add_argument("--json")
    ap.add_argument("--case", help="run only this case once, untimed (for bench/python_callgrind.sh)")
    a = ap.parse_args()
    if a.case:
        with tempfile.TemporaryDirectory() as d:
            sp.setup(file_path=os.path.join(d, "bench.h5"), buffer_limit=1 << 20, deactivate_file_output=True)
            bench(a.calls, a.case)
            sys.stdout.flush()
            os._exit(0)  # no finalize: the count is the recording alone
    with tempfile.TemporaryDirectory() as d:
        sp.setup(file_path=os.path.join(d, "bench.h5"), buffer_limit=1 << 20)
        runs = []
        for _ in range(a.repeat):
            runs.append(bench(a.calls))
            sp.finalize(verbose=False)  # keeps memory flat between repeats
        med = {k: min(r[k] for r in runs) for k in runs[0]}
        spread = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    res = {
        "calls": a.calls, "repeat": a.repeat, "python": sys.version.split()[0], "ns_per_iteration": med, "median_ns_per_iteration": spread,
        "region_with_over_null_with_ns": med["with_local"] - med["with_null"],
        "region_with_lookup_over_null_with_ns": med["with_lookup"] - med["with_null"],
        "decorated_over_plain_ns": med["decorated_call"] - med["plain_call"],
        "perf_pair_over_empty_ns": med["perf_pair"] - med["empty"],
    }
    for k, v in med.items():
        print(f"{k:16s} {v:8.1f} ns/iter (median {spread[k]:.1f})")
    print(f"with region: {res['region_with_over_null_with_ns']:.1f} ns over an empty C `with` "
          f"(with the profile_region lookup: {res['region_with_lookup_over_null_with_ns']:.1f}); "
          f"decorated call: {res['decorated_over_plain_ns']:.1f} ns over a plain call; "
          f"perf_counter_ns pair: {res['perf_pair_over_empty_ns']:.1f} ns")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
