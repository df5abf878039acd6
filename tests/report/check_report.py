#!/usr/bin/python3
"""Structural checks of a `scope-profiler report` output directory against
the input files read independently with h5py (schema-2 files), used by the
golden tests in tests/cli/report/.

    check_report.py DIR FILE... [--ranks SPEC...] [--include RE...]
                    [--exclude RE...] [--flame-ranks SPEC|all] [--width PX]
                    [--x FIELD] [--labels L...] [--loose]

Prints one line per output file ("name: ok ..." with the counts that were
checked) and "FAIL: ..." lines for violations (exit 1), so a golden stdout
pins both the verdicts and the numbers. Checked:
  - report.html is self-contained (no script/link/img/url()/@import fetching
    anything; the only "http" is the SVG namespace), inlines every chart's SVG
    text unchanged, and has one summary-table row per region and file;
  - every .svg parses as XML; its root is <svg id=STEM class="chart"
    data-bars=N> with N = the number of .bar marks; every mark has
    data-region, data-rank, data-start, data-dur and a <title>; a region has
    the same data-ri (colour) in every chart, and all colours differ;
  - counts (unless --loose): Gantt and time series marks cover every call of
    the kept regions on the selected ranks exactly once (merged marks count
    data-calls); the flame chart covers the flame ranks' calls; the flame
    graph has one bar per call path at least 0.25 px wide; durations and
    imbalance have one bar per (region, file) and (region, rank) value;
    speedup and efficiency one point per (common region, x value);
  - region_statistics.json has upstream's keys and the statistics numpy
    computes from the events (count, avg, min, max, population std, total,
    overall and per rank).
"""
import argparse
import glob
import json
import math
import os
import re
import sys
import xml.etree.ElementTree as ET

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import sp_events  # noqa: E402  (decodes schema 3's event columns)

SVG = "{http://www.w3.org/2000/svg}"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def rank_spec(specs):
    if not specs:
        return None
    out = set()
    for spec in specs:
        for item in spec.split(","):
            if "-" in item:
                a, b = item.split("-")
                out.update(range(int(a), int(b) + 1))
            else:
                out.add(int(item))
    return out


class Profile:
    """A schema-2 file read with h5py alone."""

    def __init__(self, path):
        self.path = path
        with h5py.File(path, "r") as f:
            self.layout = f.attrs.get("storage_layout", b"columnar")
            if isinstance(self.layout, bytes):
                self.layout = self.layout.decode()
            # invalid UTF-8 in a name reads back as '?' through our reader
            self.names = [(n.decode("utf-8", "replace") if isinstance(n, bytes) else n)
                          .replace("\ufffd", "?") for n in f["region_table/names"][...]]
            g = f["rank_region_index"]
            k = g["region_ids"].shape[0]
            # the aggregate layout keeps upstream's skeleton columns empty
            offs = g["event_offsets"][...] if g["event_offsets"].shape == (k,) else np.zeros(k, np.int64)
            cnts = g["event_counts"][...] if g["event_counts"].shape == (k,) else np.zeros(k, np.int64)
            self.rows = list(zip(g["region_ids"][...].astype(int), g["ranks"][...].astype(int),
                                 offs.astype(int), cnts.astype(int)))
            self.meta = {k: (v.decode() if isinstance(v, bytes) else v)
                         for k, v in f["metadata"].attrs.items()}
            e = f["events"]
            # schema 3's start deltas decoded; nesting from the ids or, where the
            # file leaves them out, rebuilt from the intervals as readers do
            d = sp_events.nested(f)
            self.start, self.end = d["start"], d["end"]
            self.cid, self.pid = d["call"], d["parent"]
            self.tid = e["thread_ids"][...].astype(np.int64) if "thread_ids" in e else None
            self.summary = None
            for name in ("summary_statistics", "aggregate_statistics"):
                if name in g and g[name].shape == (k,):
                    self.summary = g[name][...]
            self.agg = g["aggregate_counts"][...] if "aggregate_counts" in g else None
        self.has_events = self.layout != "aggregate"
        self.ranks = sorted({r for (_, r, _, _) in self.rows})
        # calls per row: the aggregate layout stores counts instead of events
        self.ncalls = [int(c) for c in (self.agg if self.agg is not None
                                        else [r[3] for r in self.rows])]

    def summary_stats(self, region, ranks):
        """count, total, min, max (ns) from the summary rows."""
        sel = [(n, s) for (g, r, _, _), n, s in zip(self.rows, self.ncalls, self.summary)
               if g == region and r in ranks and n]
        if not sel:
            return None
        return (sum(n for n, _ in sel), sum(int(s["total"]) for _, s in sel),
                min(int(s["minimum"]) for _, s in sel), max(int(s["maximum"]) for _, s in sel))

    def durations(self, region, ranks):
        d = [self.end[o:o + c] - self.start[o:o + c]
             for (g, r, o, c) in self.rows if g == region and r in ranks]
        return np.concatenate(d) if d else np.array([], np.int64)

    def first_start(self, region, ranks):
        s = [self.start[o:o + c].min() for (g, r, o, c) in self.rows
             if g == region and r in ranks and c]
        return min(s) if s else None

    def calls(self, keep, ranks):
        """(region, rank, start, end, cid, pid, thread) of the kept regions."""
        out = []
        for (g, r, o, c) in self.rows:
            if r not in ranks:
                continue
            for i in range(o, o + c):
                out.append((g, r, int(self.start[i]), int(self.end[i]),
                            int(self.cid[i]) if self.cid is not None else -1,
                            int(self.pid[i]) if self.pid is not None else -1,
                            int(self.tid[i]) if self.tid is not None else 0))
        return out


def keep_region(name, inc, exc):
    if inc and not any(re.match(p, name) for p in inc):
        return False
    return not any(re.match(p, name) for p in exc or [])


def call_paths(p, keep, ranks):
    """Call-path totals merged over ranks, from the recorded ids; calls of
    dropped regions hand their children to the nearest kept ancestor."""
    totals = {}
    for rank in ranks:
        cs = [c for c in p.calls(keep, {rank})]
        by_id = {c[4]: c for c in cs}
        memo = {}

        def path(c):
            key = c[4]
            if key in memo:
                return memo[key]
            parent = by_id.get(c[5]) if c[5] >= 0 else None
            up = path(parent) if parent else ()
            res = up + (c[0],) if c[0] in keep else up
            memo[key] = res
            return res
        for c in cs:
            if c[0] in keep:
                pth = path(c)
                totals[pth] = totals.get(pth, 0) + (c[3] - c[2])
    return totals


def labels_of(profs, given):
    """The report's file labels: given, or metadata label, or stem; repeats "x (2)"."""
    out = []
    for i, p in enumerate(profs):
        base = given[i] if given else (p.meta.get("label") or
                                       os.path.splitext(os.path.basename(p.path))[0])
        n = sum(1 for q in out if q == base or q.startswith(base + " ("))
        out.append(f"{base} ({n + 1})" if n else base)
    return out


def bars_of(root):
    return [e for e in root.iter() if "bar" in (e.get("class") or "").split()]


def covered(bars):
    return sum(int(b.get("data-calls", "1")) for b in bars)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--ranks", nargs="*")
    ap.add_argument("--include", nargs="*")
    ap.add_argument("--exclude", nargs="*")
    ap.add_argument("--flame-ranks")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--x", default="num_ranks")
    ap.add_argument("--labels", nargs="*")
    ap.add_argument("--loose", action="store_true")
    a = ap.parse_args()
    d = a.dir
    profs = [] if a.loose else [Profile(f) for f in a.files]
    sel = rank_spec(a.ranks)
    pw = a.width - 224

    # ---- report.html
    with open(os.path.join(d, "report.html"), encoding="utf-8") as f:
        html = f.read()
    svgs = sorted(glob.glob(os.path.join(d, "*.svg")))
    bad = re.findall(r"<script[^>]+src=|<img[^>]+src=|<iframe|@import|url\(", html, re.I)
    links = [m for m in re.findall(r"<link[^>]*>", html) if 'href="data:' not in m]
    https = [m for m in re.findall(r"https?://[^\s\"'<>)]+", html)
             if m != "http://www.w3.org/2000/svg"]
    if bad or links or https:
        fail(f"report.html fetches something: {bad + links + https}")
    for s in svgs:
        with open(s, encoding="utf-8") as f:
            if f.read() not in html:
                fail(f"report.html does not inline {os.path.basename(s)} unchanged")
    rows = len(re.findall(r"<tr data-ri=", html))
    ranks_opt = re.findall(r'<option value="(\d+)">', html)
    print(f"report.html: ok, self-contained, {len(svgs)} charts inline, {rows} table rows, "
          f"rank options {','.join(ranks_opt)}")

    # ---- the SVG files
    colours, region_ri = {}, {}
    docs = {}
    for s in svgs:
        stem = os.path.splitext(os.path.basename(s))[0]
        try:
            root = ET.parse(s).getroot()
        except ET.ParseError as e:
            fail(f"{stem}.svg is not well-formed XML: {e}")
            continue
        docs[stem] = root
        bars = bars_of(root)
        if root.tag != SVG + "svg" or root.get("id") != stem or root.get("class") != "chart":
            fail(f"{stem}.svg: root is not <svg id={stem} class=chart>")
        if int(root.get("data-bars", -1)) != len(bars):
            fail(f"{stem}.svg: data-bars={root.get('data-bars')} but {len(bars)} bars")
        for b in bars:
            miss = [k for k in ("data-region", "data-rank", "data-start", "data-dur")
                    if b.get(k) is None]
            if miss or b.find(SVG + "title") is None:
                fail(f"{stem}.svg: a mark lacks {miss or 'a <title>'}")
                break
            ri, name = b.get("data-ri"), b.get("data-region")
            if region_ri.setdefault(name, ri) != ri:
                fail(f"region {name!r} has data-ri {ri} and {region_ri[name]}")
        style = "".join(e.text or "" for e in root.iter(SVG + "style"))
        for ri, col in re.findall(r"\.r(\d+)\{fill:(#[0-9a-f]{6})\}", style):
            if colours.setdefault(ri, col) != col:
                fail(f"region colour r{ri} differs between charts")
    if len(set(colours.values())) != len(colours):
        fail("two regions share a colour")
    if len(set(region_ri.values())) != len(region_ri):
        fail("two regions share a data-ri")

    def line(stem, text):
        print(f"{stem}.svg: ok, {text}")

    for stem in sorted(docs):
        root = docs[stem]
        bars = bars_of(root)
        notes = [t.text for t in root.iter(SVG + "text") if (t.get("class") or "") == "note"]
        merged = [n for n in notes if "merged into" in n]
        desc = f"bars={len(bars)}"
        if merged:
            desc += f", note: {merged[0].split(' at this')[0]}"
        if a.loose or not profs:
            line(stem, desc)
            continue
        keeps = [{i for i, n in enumerate(p.names) if keep_region(n, a.include, a.exclude)}
                 for p in profs]
        rsel = [set(p.ranks) if sel is None else set(p.ranks) & sel for p in profs]
        if stem in ("gantt", "timeseries"):
            # lanes past the limit are dropped by whole ranks, as the note says
            shown = [re.match(r"(.*): (?:lanes|calls) of (\d+) of \d+ ranks shown", n)
                     for n in notes]
            limit = {mm.group(1): int(mm.group(2)) for mm in shown if mm}
            want = 0
            for p, k, r, lab in zip(profs, keeps, rsel, labels_of(profs, a.labels)):
                if p.has_events:
                    rr = set(sorted(r)[:limit[lab]]) if lab in limit else r
                    want += len([c for c in p.calls(k, rr) if c[0] in k])
                    if lab in limit:
                        desc += f", {limit[lab]} of {len(r)} ranks"

            got = covered(bars)
            if got != want:
                fail(f"{stem}: marks cover {got} calls, the files have {want}")
            line(stem, desc + f", covering all {want} calls")
        elif stem == "flame_chart":
            want = 0
            for p, k, r in zip(profs, keeps, rsel):
                if not p.has_events:
                    continue
                if a.flame_ranks == "all":
                    fr = r
                elif a.flame_ranks:
                    fr = r & rank_spec([a.flame_ranks])
                else:
                    fr = {min(r)} if r else set()
                want += len([c for c in p.calls(k, fr) if c[0] in k])
            if covered(bars) != want:
                fail(f"flame_chart: marks cover {covered(bars)} calls, expected {want}")
            line(stem, desc + f", covering all {want} calls of the flame ranks")
        elif stem == "flame_graph":
            want = 0
            for p, k, r in zip(profs, keeps, rsel):
                if not p.has_events:
                    continue
                t = call_paths(p, k, sorted(r))
                total = sum(v for pth, v in t.items() if len(pth) == 1)
                want += sum(1 for v in t.values() if total and v / total * pw >= 0.25)
            if len(bars) != want:
                fail(f"flame_graph: {len(bars)} bars, expected {want} call paths")
            line(stem, desc + f" = call paths at least 0.25 px wide")
        elif stem.startswith("durations_"):
            metric = stem.split("_", 1)[1]
            common = [n for n in (profs[0].names[i] for i in keeps[0])
                      if all(n in p.names and p.summary_stats(p.names.index(n), r)
                             for p, r in zip(profs, rsel))]
            vals = []
            for n in common:
                for p, r in zip(profs, rsel):
                    cnt, tot, lo, hi = p.summary_stats(p.names.index(n), r)
                    vals.append({"avg": tot / cnt, "min": lo, "max": hi, "total": tot}[metric])
            # values of 0 are drawn too (in the log axis' band marked 0)
            want = len(vals)
            if len(bars) != want:
                fail(f"{stem}: {len(bars)} bars, expected {want}")
            line(stem, desc + f" = {len(common)} common regions x {len(profs)} file(s)")
        elif stem == "imbalance":
            want = 0
            for p, k, r in zip(profs, keeps, rsel):
                tot = [p.summary_stats(reg, {rank}) for reg in k for rank in r]
                tot = [t[1] for t in tot if t]
                grouped = [n for n in notes if "ranks per bar" in n]
                if grouped:  # ranks grouped: one bar per group that ran the region
                    g = int(re.search(r": (\d+) ranks per bar", grouped[0]).group(1))
                    rs = sorted(r)
                    want += sum(1 for reg in k for j in range(0, len(rs), g)
                                if any(p.summary_stats(reg, {x}) for x in rs[j:j + g]))
                    desc += f", {g} ranks per bar"
                else:  # totals of 0 too: the log axis has a band marked 0
                    want += len(tot)
            if len(bars) != want:
                fail(f"imbalance: {len(bars)} bars, expected {want} (region, rank) totals")
            line(stem, desc + " = (region, rank) pairs")
        elif stem in ("speedup", "efficiency"):
            xs = []
            for p in profs:
                if a.x == "num_ranks":
                    xs.append(len(p.ranks))
                elif a.x == "total_cores":
                    xs.append(len(p.ranks) * int(p.meta["omp_num_threads"]))
                else:
                    xs.append(p.meta[a.x])
            keys = sorted(set(xs)) if a.x in ("num_ranks", "num_nodes", "omp_num_threads",
                                              "total_cores") else list(dict.fromkeys(xs))
            common = [n for n in profs[0].names
                      if all(n in p.names and len(p.durations(p.names.index(n), r))
                             for p, r in zip(profs, rsel))
                      and keep_region(n, a.include, a.exclude)]
            want = 0
            for n in common:
                per = {}
                for p, r, x in zip(profs, rsel, xs):
                    m = p.durations(p.names.index(n), r).mean()
                    if math.isfinite(m) and m > 0:
                        per.setdefault(x, []).append(m)
                if keys[0] in per:
                    want += len(per)
            if len(bars) != want:
                fail(f"{stem}: {len(bars)} points, expected {want}")
            ticks = [t.text for ax in root.iter(SVG + "g") if ax.get("class") == "xaxis"
                     for t in ax.iter(SVG + "text") if t.get("class") == "tl"]
            ideal = any((e.get("class") or "") == "ideal" for e in root.iter())
            line(stem, desc + f" = common regions x x values; x order {','.join(ticks)}; "
                 f"ideal line {'yes' if ideal else 'no'}")
        else:
            line(stem, desc)

    # ---- region_statistics.json
    with open(os.path.join(d, "region_statistics.json")) as f:
        js = json.load(f)
    if set(js) != {"units", "filters", "common_regions", "files"} or \
            js["units"] != {"durations": "seconds"} or \
            set(js["filters"]) != {"include", "exclude", "ranks"}:
        fail("region_statistics.json: top-level keys differ from upstream's schema")
    keys6 = {"count", "average_duration_seconds", "min_duration_seconds", "max_duration_seconds",
             "std_duration_seconds", "total_duration_seconds"}
    checked = 0
    for i, fe in enumerate(js["files"]):
        if set(fe) != {"label", "file_path", "num_ranks", "region_statistics"}:
            fail("region_statistics.json: file entry keys differ")
        if a.labels and fe["label"] != a.labels[i]:
            fail(f"region_statistics.json: label {fe['label']!r}, expected {a.labels[i]!r}")
        for name, st in fe["region_statistics"].items():
            if set(st) != keys6 | {"per_rank"}:
                fail(f"region_statistics.json: keys of {name!r}")
            if a.loose or not profs[i].has_events:
                continue
            p = profs[i]
            r = set(p.ranks) if sel is None else set(p.ranks) & sel
            for scope, rs, s in [("all", r, st)] + [(k, {int(k)}, v)
                                                   for k, v in st["per_rank"].items()]:
                dd = p.durations(p.names.index(name), rs) / 1e9
                want = {"count": len(dd), "average_duration_seconds": dd.mean(),
                        "min_duration_seconds": dd.min(), "max_duration_seconds": dd.max(),
                        "std_duration_seconds": dd.std(),
                        "total_duration_seconds": dd.sum()}
                for k, v in want.items():
                    if not math.isclose(s[k], v, rel_tol=1e-9, abs_tol=1e-15):
                        fail(f"region_statistics.json: {name!r} rank {scope} {k} = {s[k]}, "
                             f"numpy says {v}")
                checked += 1
    print(f"region_statistics.json: ok, upstream schema, {len(js['files'])} file(s), "
          f"common regions {len(js['common_regions'])}, {checked} statistics rows match numpy")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
