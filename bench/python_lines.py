"""python_lines.py - what use_line_profiler costs per Python line, in one run.

    PYTHONPATH=build/python python3 bench/python_lines.py [--n N] [--calls C] [--repeat R] [--json OUT]

A decorated function whose body is a loop of N iterations (2N+3 line
events per call) is called C times per round, in rounds that alternate:
use_line_profiler off, use_line_profiler on (line_profile_rate=1, so the
library's native sampler stays out of the figure), and, for scale, no
profiler but a do-nothing Python-level sys.settrace function (the least a
tracer written in Python costs). A second function of the same shape calls
an unregistered helper of the same shape: its lines are traced (the trace
function runs for every line while a timed region is open) but not timed.
Each case's fastest round counts (on a loaded machine the other processes
only ever add time); the figures are the differences per line event
against the same run's "off" round.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import scope_profiler as sp


def body(n):
    total = 0
    for i in range(n):
        total += i
    return total


def untimed_helper(n):
    total = 0
    for i in range(n):
        total += i
    return total


def caller(n):
    return untimed_helper(n)


def round_ns(fn, n, calls):
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn(n)
    return (time.perf_counter_ns() - t0) / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--json")
    a = ap.parse_args()
    events = 2 * a.n + 3  # total = 0; the loop header n+1 times; its body n times; return
    best = {}

    def keep(k, v):
        best[k] = min(best.get(k, float("inf")), v)

    def nothing(frame, event, arg):
        return nothing

    managers = {on: sp.ProfileManager() for on in (False, True)}
    funcs = {on: (pm.profile("timed")(body), pm.profile("outer")(caller)) for on, pm in managers.items()}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.repeat):
            for on, pm in managers.items():
                pm.setup(file_path=os.path.join(d, "b.h5"), use_line_profiler=on, line_profile_rate=1,
                         deactivate_file_output=True, quiet=True)
                timed, outer = funcs[on]
                keep(f"decorated_{'on' if on else 'off'}", round_ns(timed, a.n, a.calls))
                keep(f"caller_{'on' if on else 'off'}", round_ns(outer, a.n, a.calls))
                pm.finalize(verbose=False)
            sys.settrace(nothing)
            keep("python_settrace", round_ns(body, a.n, a.calls))
            sys.settrace(None)
            keep("plain", round_ns(body, a.n, a.calls))
    res = {
        "n": a.n, "calls": a.calls, "repeat": a.repeat, "python": sys.version.split()[0], "line_events": events,
        "ns_per_call": best,
        "timed_line_ns": (best["decorated_on"] - best["decorated_off"]) / events,
        "traced_untimed_line_ns": (best["caller_on"] - best["caller_off"]) / events,
        "python_settrace_line_ns": (best["python_settrace"] - best["plain"]) / events,
        "plain_line_ns": best["plain"] / events,
    }
    for k, v in best.items():
        print(f"{k:18s} {v / 1000:9.2f} us/call")
    print(f"per line event: timed {res['timed_line_ns']:.1f} ns, traced but not timed (a callee) "
          f"{res['traced_untimed_line_ns']:.1f} ns, a do-nothing Python settrace {res['python_settrace_line_ns']:.1f} ns; "
          f"the line itself {res['plain_line_ns']:.1f} ns")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
