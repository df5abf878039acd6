#!/usr/bin/python3
"""Drive Debian's headless Chromium on a scope-profiler report.html through
chromedriver, speaking the W3C WebDriver HTTP protocol with urllib (no pip
packages), and check what a user would see and do.

    browser_check.py REPORT_HTML --screenshot OUT.png [--expect ID=N ...]
                     [--click-region NAME] [--rank R]

Checks, each printed as one "ok: ..." line (exit 1 with "FAIL: ..." on the
first failure, 77 when Chromium or chromedriver is missing):
  1. the page loads from file:// and its script reports ready;
  2. no console errors or uncaught exceptions (browser log, SEVERE);
  3. every chart's <svg class="chart"> declares data-bars equal to the number
     of .bar marks in the DOM, and equal to --expect ID=N where given; every
     mark has data-region, data-rank, data-start, data-dur and a <title>;
  4. clicking a Gantt bar (a real pointer click) highlights its region in
     every chart that shows it and in the summary table; clicking again clears;
  5. the rank selector (a real <option> click) leaves only that rank's
     panels visible in the Gantt chart;
  6. a wheel over a Gantt plot zooms (viewBox narrows, axis relabelled) and a
     drag pans it; double-click resets;
  7. clicking the "total [s]" header sorts the summary table;
  8. every view section (data.views of the JSON blob) is drawn by its
     renderer, a table view has one row per data row (a source view one per
     line of its records, the sampled ones shaded), the rank selector
     filters the threads view and its headers sort (--expect-view NAME
     requires a view);
then saves a full-page screenshot (Chrome DevTools Page.captureScreenshot).
"""
import argparse
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = os.environ.get("SP_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SP_CHROMEDRIVER", "/usr/bin/chromedriver")
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Driver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.sid = None

    def req(self, method, path, body=None, timeout=60):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method,
                                   headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(r, timeout=timeout) as resp:
                return json.loads(resp.read() or b"{}").get("value")
        except urllib.error.HTTPError as e:
            detail = e.read().decode(errors="replace")
            raise RuntimeError(f"{method} {path}: HTTP {e.code}: {detail[:600]}")

    def s(self, method, path, body=None, timeout=60):
        return self.req(method, f"/session/{self.sid}{path}", body, timeout)

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def find(self, css):
        v = self.s("POST", "/element", {"using": "css selector", "value": css})
        return v[ELEMENT]

    def click(self, css):
        e = self.find(css)
        # centred, so the sticky toolbar never covers the target
        self.js("arguments[0].scrollIntoView({block:'center'});", {ELEMENT: e})
        self.s("POST", f"/element/{e}/click", {})


def sort_by(d, table, header):
    """Clicks the header `header` of the table `table` (a CSS selector) and
    returns that column's data-v values, top row first."""
    i = d.js("return [].map.call(document.querySelectorAll('%s thead th'),"
             "function(t){return t.textContent;}).indexOf('%s');" % (table, header))
    d.click("%s thead th:nth-child(%d)" % (table, i + 1))
    return d.js("return [].map.call(document.querySelectorAll('%s tbody tr'),"
                "function(r){return parseFloat(r.cells[%d].getAttribute('data-v'));});" % (table, i))


def sort_text(d, table, header):
    """Clicks the header `header` of `table` and returns that column's
    cells as shown, top row first, with whether they are in ascending text
    order (as the page compares text: digits by value)."""
    i = d.js("return [].map.call(document.querySelectorAll('%s thead th'),"
             "function(t){return t.textContent;}).indexOf('%s');" % (table, header))
    if i < 0:
        fail(f"{table} has no header {header!r}")
    d.click("%s thead th:nth-child(%d)" % (table, i + 1))
    return d.js("var v = [].map.call(document.querySelectorAll('%s tbody tr'),"
                "function(r){return r.cells[%d].textContent;});"
                "var ok = v.every(function(x, k){return !k || v[k - 1].localeCompare(x, undefined,"
                "{numeric: true}) <= 0;});"
                "return [v, ok];" % (table, i))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--expect", nargs="*", default=[])
    ap.add_argument("--click-region", default=None)
    ap.add_argument("--rank", default=None)
    ap.add_argument("--expect-view", dest="expect_views", action="append", default=[])
    ap.add_argument("--section-shots", default=None,
                    help="also save each chart section as PREFIX-<id>.png (for looking closer)")
    a = ap.parse_args()
    if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
        print(f"skip: needs {CHROMIUM} and {CHROMEDRIVER} (scripts/install-deps.sh --with-browser)")
        sys.exit(77)
    expect = dict(e.split("=", 1) for e in a.expect)
    profile = tempfile.mkdtemp(prefix="sp-chromium-")
    port = free_port()
    log = open(os.path.join(profile, "chromedriver.log"), "w")
    drv_proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=log, stderr=log)
    d = Driver(port)
    try:
        for _ in range(100):
            try:
                if d.req("GET", "/status", timeout=2).get("ready"):
                    break
            except Exception:
                pass
            time.sleep(0.1)
        else:
            fail("chromedriver did not start")
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-dev-shm-usage", f"--user-data-dir={profile}/ud",
                "--window-size=1400,1000"]}}}}
        sess = d.req("POST", "/session", caps, timeout=120)
        d.sid = sess["sessionId"]
        url = "file://" + os.path.abspath(a.report)
        d.s("POST", "/url", {"url": url}, timeout=120)
        for _ in range(100):
            if d.js("return !!(window.spReport && window.spReport.ready);"):
                break
            time.sleep(0.1)
        else:
            fail("the page's script never reported ready")
        title = d.js("return document.title;")
        load_ms = d.js("var n=performance.getEntriesByType('navigation')[0];"
                       "return n ? Math.round(n.loadEventEnd - n.startTime) : -1;")
        size = os.path.getsize(a.report)
        print(f"ok: loaded {os.path.basename(a.report)} from file:// (title: {title}; "
              f"{size / 1e6:.2f} MB, load event after {load_ms} ms)")

        charts = d.js("""
          return [].map.call(document.querySelectorAll('svg.chart'), function(c) {
            var bars = c.querySelectorAll('.bar'), bad = 0;
            [].forEach.call(bars, function(b) {
              if (!b.hasAttribute('data-region') || !b.hasAttribute('data-rank') ||
                  !b.hasAttribute('data-start') || !b.hasAttribute('data-dur') ||
                  !b.querySelector('title')) bad++;
            });
            return {id: c.id, declared: +c.getAttribute('data-bars'), dom: bars.length, bad: bad};
          });""")
        if not charts:
            fail("no svg.chart in the page")
        for c in charts:
            if c["declared"] != c["dom"]:
                fail(f"{c['id']}: data-bars={c['declared']} but {c['dom']} .bar elements")
            if c["bad"]:
                fail(f"{c['id']}: {c['bad']} marks lack data attributes or a <title>")
            if c["id"] in expect and int(expect[c["id"]]) != c["dom"]:
                fail(f"{c['id']}: {c['dom']} bars, expected {expect[c['id']]}")
        missing = set(expect) - {c["id"] for c in charts}
        if missing:
            fail(f"charts missing from the page: {sorted(missing)}")
        print("ok: bars per chart: " + ", ".join(f"{c['id']}={c['dom']}" for c in charts))

        # 4. highlight by a real click on a Gantt bar
        region = a.click_region or d.js(
            "var b=document.querySelector('#gantt .bar');return b?b.getAttribute('data-region'):null;")
        if region is None:
            fail("no Gantt bar to click")
        sel = '#gantt .bar[data-region="%s"]' % region.replace('"', '\\"')
        d.click(sel)
        hl = d.js("""
          var ri = document.querySelector(arguments[0]).getAttribute('data-ri');
          var per = {};
          [].forEach.call(document.querySelectorAll('svg.chart'), function(c) {
            var all = c.querySelectorAll('.bar[data-ri="' + ri + '"]').length;
            var on = c.querySelectorAll('.bar.hl[data-ri="' + ri + '"]').length;
            var other = c.querySelectorAll('.bar.hl:not([data-ri="' + ri + '"])').length;
            per[c.id] = [all, on, other, c.classList.contains('has-hl')];
          });
          return {per: per, rows: document.querySelectorAll('#summary-table tr.hl').length,
                  label: document.getElementById('hl-name').textContent};""", sel)
        for cid, (total, on, other, flag) in hl["per"].items():
            if on != total or other or (total and not flag):
                fail(f"highlight of {region!r}: chart {cid} has {on}/{total} marks highlighted, "
                     f"{other} others")
        if hl["rows"] < 1 or region not in hl["label"]:
            fail(f"highlight of {region!r} not shown in the table or toolbar: {hl}")
        shown = sum(1 for v in hl["per"].values() if v[0])
        print(f"ok: click on a Gantt bar highlights {region!r} in {shown} charts and "
              f"{hl['rows']} table row(s)")
        d.click(sel)
        if d.js("return document.querySelectorAll('.bar.hl').length;"):
            fail("a second click did not clear the highlight")
        print("ok: a second click clears the highlight")

        # 5. rank selector
        ranks = d.js("return [].map.call(document.querySelectorAll('#rank-select option'),"
                     "function(o){return o.value;});")
        rank = a.rank or (ranks[-1] if len(ranks) > 1 else None)
        if rank is not None and rank != "all":
            d.click(f'#rank-select option[value="{rank}"]')
            vis, drawn, missing = d.js("""
              var r = arguments[0], p = document.querySelectorAll('#gantt .blocks > .blk.panel');
              return [[].filter.call(p, function(b) {
                        return getComputedStyle(b).display !== 'none'; })
                        .map(function(b) { return b.getAttribute('data-rank'); }),
                      [].some.call(p, function(b) { return b.getAttribute('data-rank') === r; }),
                      !!document.querySelector('#gantt .rank-missing')];""", rank)
            if drawn and (not vis or any(v != rank for v in vis) or missing):
                fail(f"rank selector {rank}: visible Gantt panels {vis}")
            if not drawn and (vis or not missing):
                fail(f"rank selector {rank} (not drawn): visible panels {vis}, note {missing}")
            print(f"ok: rank selector shows only rank {rank} in the Gantt chart "
                  + (f"({len(vis)} panel(s) of {len(ranks) - 1} ranks)" if drawn else
                     "(not drawn there: the chart says so)"))
            d.click('#rank-select option[value="all"]')

        # 6. zoom with the wheel, pan with a drag, reset with a double-click
        plot = d.find("#gantt svg.plot")
        d.js("arguments[0].scrollIntoView({block:'center'});", {ELEMENT: plot})
        before = d.js("var p=arguments[0];return [p.viewBox.baseVal.x,p.viewBox.baseVal.width,"
                      "p.parentNode.querySelector('.xaxis .ticks').textContent];", {ELEMENT: plot})
        d.s("POST", "/actions", {"actions": [{"type": "wheel", "id": "wheel", "actions": [
            {"type": "scroll", "x": 0, "y": 0, "deltaX": 0, "deltaY": -600,
             "origin": {ELEMENT: plot}}]}]})
        # the page handles the wheel event on its own time: wait for the zoom
        # (10 s at most, for a loaded machine) rather than a fixed pause
        for _ in range(100):
            zoomed = d.js("var p=arguments[0];return [p.viewBox.baseVal.x,p.viewBox.baseVal.width,"
                          "p.parentNode.querySelector('.xaxis .ticks').textContent];", {ELEMENT: plot})
            if zoomed[1] < before[1] * 0.9 and zoomed[2] != before[2]:
                break
            time.sleep(0.1)
        if not zoomed[1] < before[1] * 0.9 or zoomed[2] == before[2]:
            fail(f"wheel did not zoom the Gantt plot: {before} -> {zoomed}")
        d.s("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse",
                                              "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": {ELEMENT: plot}},
            {"type": "pointerDown", "button": 0},
            {"type": "pointerMove", "x": 120, "y": 0, "origin": {ELEMENT: plot}, "duration": 100},
            {"type": "pointerUp", "button": 0}]}]})
        for _ in range(100):  # likewise
            panned = d.js("var p=arguments[0];return [p.viewBox.baseVal.x,p.viewBox.baseVal.width];",
                          {ELEMENT: plot})
            if abs(panned[0] - zoomed[0]) >= 1e-9:
                break
            time.sleep(0.1)
        if abs(panned[0] - zoomed[0]) < 1e-9 or abs(panned[1] - zoomed[1]) > 1e-6:
            fail(f"drag did not pan the zoomed plot: {zoomed[:2]} -> {panned}")
        if d.js("return document.querySelectorAll('.bar.hl').length;"):
            fail("the drag was taken for a click (region highlighted)")
        d.s("POST", "/actions", {"actions": [{"type": "pointer", "id": "mouse2",
                                              "parameters": {"pointerType": "mouse"}, "actions": [
            {"type": "pointerMove", "x": 0, "y": 0, "origin": {ELEMENT: plot}},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0},
            {"type": "pointerDown", "button": 0}, {"type": "pointerUp", "button": 0}]}]})
        for _ in range(100):  # likewise
            reset = d.js("var p=arguments[0];return [p.viewBox.baseVal.x,p.viewBox.baseVal.width];",
                         {ELEMENT: plot})
            if abs(reset[1] - before[1]) <= 1e-6:
                break
            time.sleep(0.1)
        if abs(reset[1] - before[1]) > 1e-6:
            fail(f"double-click did not reset the zoom: {reset} vs {before[:2]}")
        d.js("window.spReport.highlight(null);")
        print(f"ok: wheel zooms the Gantt plot ({before[1]:.0f} -> {zoomed[1]:.0f} px of data, "
              f"axis relabelled), drag pans it, double-click resets")

        # 7. sortable table
        totals = sort_by(d, "#summary-table", "total [s]")
        if totals != sorted(totals, reverse=True):
            fail(f"clicking 'total [s]' did not sort descending: {totals}")
        print(f"ok: summary table sorts by total ({len(totals)} rows)")
        names, ascending = sort_text(d, "#summary-table", "region")
        if not ascending:
            fail(f"clicking 'region' did not sort the summary table by name: {names}")
        print("ok: summary table sorts by region name")

        # 8. views: every section.view drawn from the JSON blob by its renderer;
        # a table view has one row per row of its data, the rank selector filters
        # rows that carry a rank, and its headers sort
        views = d.js("""
          var data = window.spReport.data, out = [];
          [].forEach.call(document.querySelectorAll('section.view'), function(s) {
            var id = s.getAttribute('data-view'), v = data.views[id];
            out.push({id: id, drawn: s.getAttribute('data-drawn'),
                      renderer: v ? v.renderer : null,
                      rows: v && v.rows ? v.rows.length : v && v.records ?
                        v.records.reduce(function(a, r) { return a + r.rows.length; }, 0) : -1,
                      shaded: s.querySelectorAll('.view-body tr[data-share]:not([data-share="0.0000"])').length,
                      dom: s.querySelectorAll('.view-body tbody tr').length});
          });
          return {views: out, ids: Object.keys(data.views)};""")
        if sorted(v["id"] for v in views["views"]) != sorted(views["ids"]):
            fail(f"views in the blob {views['ids']} and sections on the page differ: {views['views']}")
        for v in views["views"]:
            if v["drawn"] != "1":
                fail(f"view {v['id']} was not drawn (renderer {v['renderer']!r})")
            if v["renderer"] == "table" and v["rows"] != v["dom"]:
                fail(f"view {v['id']}: {v['dom']} table rows for {v['rows']} data rows")
            if v["renderer"] == "source" and (v["rows"] != v["dom"] or v["shaded"] == 0):
                fail(f"view {v['id']}: {v['dom']} source lines for {v['rows']} data rows, {v['shaded']} shaded")
        # a table view's region column is text: it sorts by the names shown
        region_views = d.js("""var data = window.spReport.data, out = [];
          Object.keys(data.views).forEach(function(id) {
            var v = data.views[id];
            (v.columns || []).forEach(function(c) {
              if (c.region) out.push([id, c.label, !!c.text]);
            });
          });
          return out;""")
        for vid, label, text in region_views:
            if not text:
                fail(f"view {vid}: its region column {label!r} is not marked text")
            if not any(v["id"] == vid and v["dom"] > 0 for v in views["views"]):
                continue
            names, ascending = sort_text(d, f"#sec-{vid}", label)
            if not ascending:
                fail(f"view {vid}: clicking {label!r} did not sort it by name: {names}")
            print(f"ok: view {vid} sorts by region name ({len(names)} rows)")
        for name in a.expect_views:
            if name not in views["ids"]:
                fail(f"view {name} missing (views: {views['ids']})")
        if "threads" in views["ids"]:
            ranks = d.js("return window.spReport.data.ranks.map(String);")
            r = ranks[-1]
            d.click(f'#rank-select option[value="{r}"]')
            shown = d.js("""return [].filter.call(
              document.querySelectorAll('#sec-threads tbody tr'),
              function(t){return getComputedStyle(t).display !== 'none';})
              .map(function(t){return t.getAttribute('data-rank');});""")
            if not shown or any(x != r for x in shown):
                fail(f"rank selector {r}: visible thread rows have ranks {shown}")
            d.click('#rank-select option[value="all"]')
            calls = sort_by(d, "#sec-threads", "calls")
            if calls != sorted(calls, reverse=True):
                fail(f"clicking the threads view's 'calls' did not sort it: {calls}")
            print(f"ok: threads view: {len(calls)} rows, rank selector filters them "
                  f"({len(shown)} on rank {r}), headers sort")
        print("ok: views drawn: " + (", ".join(f"{v['id']}={v['dom']} rows" for v in views["views"])
                                     or "none in this report"))

        # console
        try:
            entries = d.s("POST", "/se/log", {"type": "browser"}) or []
        except RuntimeError as e:
            fail(f"cannot read the browser console log: {e}")
        severe = [e for e in entries if e.get("level") == "SEVERE"]
        if severe:
            fail("console errors: " + "; ".join(e.get("message", "") for e in severe[:5]))
        print(f"ok: no console errors ({len(entries)} console entries)")

        # screenshot of the whole page
        d.js("window.scrollTo(0,0);")
        w, h = d.js("return [document.documentElement.scrollWidth,"
                    "document.documentElement.scrollHeight];")
        shot = d.s("POST", "/goog/cdp/execute", {"cmd": "Page.captureScreenshot", "params": {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": w, "height": min(h, 16000), "scale": 1}}},
                   timeout=120)
        os.makedirs(os.path.dirname(os.path.abspath(a.screenshot)), exist_ok=True)
        with open(a.screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print(f"ok: screenshot {w}x{min(h, 16000)} saved")
        if a.section_shots:
            boxes = d.js("""return [].map.call(document.querySelectorAll('main > section'),
              function(s){var r=s.getBoundingClientRect();
                return [s.id, r.left + window.scrollX, r.top + window.scrollY, r.width, r.height];});""")
            for sid, x, y, bw, bh in boxes:
                shot = d.s("POST", "/goog/cdp/execute", {"cmd": "Page.captureScreenshot", "params": {
                    "format": "png", "captureBeyondViewport": True,
                    "clip": {"x": x, "y": y, "width": bw, "height": bh, "scale": 1}}}, timeout=120)
                with open(f"{a.section_shots}-{sid}.png", "wb") as f:
                    f.write(base64.b64decode(shot["data"]))
    finally:
        try:
            if d.sid:
                d.req("DELETE", f"/session/{d.sid}", timeout=30)
        except Exception:
            pass
        drv_proc.terminate()
        try:
            drv_proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            drv_proc.kill()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
