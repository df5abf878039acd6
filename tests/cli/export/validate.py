#!/usr/bin/python3
"""Structural checks of exported traces, used by the export CLI tests.

    validate.py chrome-trace FILE [EXPECTED_X_EVENTS]
    validate.py speedscope FILE [EXPECTED_OPENS]

Prints one "ok: ..." line per check group and exits 1 with a reason on the
first violation, so a golden stdout pins both the verdict and the counts.
"""
import json
import sys


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def chrome(path, expected=None):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("no traceEvents list")
    if doc.get("displayTimeUnit") not in ("ns", "ms"):
        fail("displayTimeUnit must be ns or ms")
    xs, meta, began, gpu = [], [], {}, []
    for e in doc["traceEvents"]:
        for k in ("name", "ph", "pid", "tid"):
            if k not in e:
                fail(f"event without {k}: {e}")
        if e["ph"] == "X":
            if not (num(e.get("ts")) and num(e.get("dur")) and e["dur"] >= 0 and e["ts"] >= 0):
                fail(f"bad X event {e}")
            if not isinstance(e["pid"], int) or not isinstance(e["tid"], int):
                fail(f"pid/tid must be integers: {e}")
            xs.append(e)
        elif e["ph"] == "M":
            if e["name"] not in ("process_name", "thread_name", "process_sort_index"):
                fail(f"unknown metadata event {e}")
            if "args" not in e:
                fail(f"metadata event without args {e}")
            meta.append(e)
        elif e["ph"] in ("b", "e") and e.get("cat") == "gpu":
            # device time: one async slice per timed call, ids unique
            if not num(e.get("ts")) or e["ts"] < 0 or not isinstance(e.get("id"), int):
                fail(f"bad GPU event {e}")
            if e["ph"] == "b":
                if e["id"] in began or not num(e.get("args", {}).get("device_ns")):
                    fail(f"GPU slice {e['id']} begun twice or without device_ns")
                began[e["id"]] = e
            else:
                b = began.pop(e["id"], None)
                if b is None or b["name"] != e["name"] or b["pid"] != e["pid"] or e["ts"] < b["ts"]:
                    fail(f"GPU slice end without its begin: {e}")
                if abs((e["ts"] - b["ts"]) * 1000 - b["args"]["device_ns"]) > 0.5:
                    fail(f"GPU slice {e['id']} lasts {e['ts'] - b['ts']} us, not its device_ns")
                gpu.append(b)
        else:
            fail(f"unexpected phase {e['ph']}")
    if began:
        fail(f"GPU slices never ended: {sorted(began)}")
    pids = {e["pid"] for e in xs}
    named = {e["pid"] for e in meta if e["name"] == "process_name"}
    if pids - named:
        fail(f"processes without a name: {sorted(pids - named)}")
    lanes = {(e["pid"], e["tid"]) for e in xs}
    tnamed = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    if lanes - tnamed:
        fail(f"threads without a name: {sorted(lanes - tnamed)}")
    if expected is not None and len(xs) != expected:
        fail(f"{len(xs)} X events, expected {expected}")
    # Every track nests: two calls on one (pid, tid) either nest or are apart.
    for lane in lanes:
        ev = sorted(((e["ts"], -e["dur"]) for e in xs if (e["pid"], e["tid"]) == lane))
        stack = []
        for ts, nd in ev:
            end = ts - nd
            while stack and stack[-1] <= ts:
                stack.pop()
            if stack and end > stack[-1]:
                fail(f"track {lane}: a call at {ts} overlaps another without nesting")
            stack.append(end)
    print(f"ok: chrome trace with {len(xs)} complete events on {len(lanes)} lanes "
          f"of {len(pids)} processes")
    if gpu:
        if {e["pid"] for e in gpu} - named:
            fail("GPU slices of an unnamed process")
        print(f"ok: {len(gpu)} GPU slices on the tracks of {len({e['pid'] for e in gpu})} ranks, "
              f"{sum(e['args']['device_ns'] for e in gpu)} ns of device time")


def speedscope(path, expected=None):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("$schema") != "https://www.speedscope.app/file-format-schema.json":
        fail("missing or wrong $schema")
    frames = doc.get("shared", {}).get("frames")
    if not isinstance(frames, list) or not all(isinstance(fr.get("name"), str) for fr in frames):
        fail("shared.frames must be a list of {name}")
    profiles = doc.get("profiles")
    if not isinstance(profiles, list) or not profiles:
        fail("no profiles")
    for k in ("name", "exporter"):
        if not isinstance(doc.get(k), str):
            fail(f"missing top-level {k}")
    opens = 0
    for p in profiles:
        if p.get("type") != "evented" or p.get("unit") != "nanoseconds":
            fail(f"profile {p.get('name')}: type/unit")
        for k in ("name", "startValue", "endValue", "events"):
            if k not in p:
                fail(f"profile without {k}")
        stack, last = [], p["startValue"]
        for ev in p["events"]:
            if ev.get("type") not in ("O", "C") or not isinstance(ev.get("frame"), int):
                fail(f"bad event {ev}")
            if not 0 <= ev["frame"] < len(frames):
                fail(f"frame index out of range {ev}")
            if ev["at"] < last:
                fail(f"{p['name']}: events out of order at {ev}")
            last = ev["at"]
            if ev["type"] == "O":
                stack.append(ev["frame"])
                opens += 1
            else:
                if not stack or stack[-1] != ev["frame"]:
                    fail(f"{p['name']}: close of frame {ev['frame']} does not match {stack}")
                stack.pop()
        if stack:
            fail(f"{p['name']}: frames left open {stack}")
        if last > p["endValue"]:
            fail(f"{p['name']}: events after endValue")
    if expected is not None and opens != expected:
        fail(f"{opens} opened frames, expected {expected}")
    print(f"ok: speedscope with {len(profiles)} profiles, {len(frames)} frames, "
          f"{opens} properly nested calls")


if __name__ == "__main__":
    kind, path = sys.argv[1], sys.argv[2]
    expected = int(sys.argv[3]) if len(sys.argv) > 3 else None
    {"chrome-trace": chrome, "speedscope": speedscope}[kind](path, expected)
