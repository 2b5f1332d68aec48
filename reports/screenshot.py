#!/usr/bin/env python3
"""screenshot.py HTML OUTDIR — look at the report the way a laptop shows it.

Drives Debian's headless chromium over the DevTools protocol on a pipe
(--remote-debugging-pipe: fds 3 and 4; standard library only, no
playwright) and, for each window width (--widths, default 1349,1366,1920:
a 1,366 px screen with and without a 17 px classic scrollbar, and a wide
one), loads HTML and measures:

  - the page: it must not scroll sideways (document scrollWidth no wider
    than the window);
  - every chart box (.chartbox): its chart either fits or the box scrolls
    by itself (overflow-x auto), so the page never does;
  - every colour: each data mark of a chart (an SVG element with class
    "mark", what it means in data-key) must have an entry with the same key
    in that chart's legend (class "legend", entries with data-key) whose
    swatch is drawn in the mark's colour (the colour scale's swatches are
    samples of it, so a scale mark only needs the entry).

It writes OUTDIR/report-<W>x<H>.png (what the window shows first),
OUTDIR/report-<W>-full.png (the whole page at the first width that is
1366 or else the first width; with --charts also one PNG per chart box)
and OUTDIR/layout.json (every measure), prints
one line per width and exits 1 when a check fails, 2 when chromium cannot
run.
"""
import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

# What the page is asked, per width (runs inside the page; returns JSON).
MEASURE_JS = r"""
(() => {
  const de = document.documentElement;
  const boxes = [...document.querySelectorAll('.chartbox')].map((b) => {
    const svg = b.querySelector('svg');
    const style = getComputedStyle(b);
    return {id: svg ? svg.id : null, box_width: b.clientWidth, content_width: b.scrollWidth,
            scrolls: b.scrollWidth > b.clientWidth + 1,
            can_scroll: style.overflowX === 'auto' || style.overflowX === 'scroll',
            right: b.getBoundingClientRect().right};
  });
  // an element's colour as drawn: its fill, or its stroke when it has no fill
  const colour = (e) => {
    const st = getComputedStyle(e);
    return st.fill && st.fill !== 'none' ? st.fill : st.stroke;
  };
  const charts = [...document.querySelectorAll('svg.chart')].map((svg) => {
    const legend = {};   // key -> colours of its swatch (not of its words)
    for (const g of svg.querySelectorAll('.legend [data-key]')) {
      const k = g.getAttribute('data-key');
      legend[k] = legend[k] || new Set();
      for (const e of g.querySelectorAll('rect, circle, line, path, text:not(.legend-text)'))
        legend[k].add(colour(e));
    }
    const marks = {}, unexplained = [];
    for (const m of svg.querySelectorAll('.mark')) {
      const k = m.getAttribute('data-key'), c = colour(m);
      marks[k] = (marks[k] || 0) + 1;
      // the colour scale is continuous: its swatches are samples of it
      const why = !legend[k] ? `colour '${k}' (${c}) has no legend entry`
                : k !== 'scale' && !legend[k].has(c)
                  ? `a '${k}' mark is drawn ${c}, its legend swatch ${[...legend[k]].join(' ')}`
                  : null;
      if (why && !unexplained.includes(why)) unexplained.push(why);
    }
    return {id: svg.id, width: svg.getBoundingClientRect().width,
            legend: Object.keys(legend).sort(), marks: marks, unexplained: unexplained,
            in_box: !!svg.closest('.chartbox')};
  });
  // Anything sticking out of the window that no scrolling box holds.
  const outside = [];
  for (const e of document.body.querySelectorAll('*')) {
    if (e.closest('.chartbox') && !e.classList.contains('chartbox')) continue;
    if (e.closest('details:not([open])') && e.tagName !== 'DETAILS' && e.tagName !== 'SUMMARY') continue;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > de.clientWidth + 1)
      outside.push(e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
                   (e.className && typeof e.className === 'string' ? '.' + e.className : '') +
                   ' right=' + Math.round(r.right));
  }
  return JSON.stringify({client_width: de.clientWidth, scroll_width: de.scrollWidth,
                         page_height: de.scrollHeight, boxes, charts,
                         outside: outside.slice(0, 20)});
})()
"""


# Each chart's place on the page (the part its box shows), for --charts.
CHART_BOXES_JS = r"""
JSON.stringify([...document.querySelectorAll('.chartbox svg.chart')].map((svg) => {
  const r = svg.getBoundingClientRect(), b = svg.closest('.chartbox').getBoundingClientRect();
  const w = Math.min(r.right, b.right) - r.left;
  return [svg.id, r.left + scrollX, r.top + scrollY, w, r.height];
}))
"""


class Browser:
    """One headless chromium, spoken to over --remote-debugging-pipe."""

    def __init__(self, exe, profile):
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()
        # the child's ends away from 3 and 4, which the redirections below fill
        to_child_r, from_child_w = (self._high(fd) for fd in (to_child_r, from_child_w))
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage", "--remote-debugging-pipe",
                 f"--user-data-dir={profile}", "about:blank"]
        # chromium reads commands on fd 3 and writes answers on fd 4
        shell = f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-'
        self.log = open(os.path.join(profile, "chromium.log"), "w")
        self.proc = subprocess.Popen(["bash", "-c", shell, exe] + flags,
                                     pass_fds=(to_child_r, from_child_w),
                                     stdout=self.log, stderr=self.log)
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    @staticmethod
    def _high(fd):
        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.from_child], [], [], left)
            if ready:
                chunk = os.read(self.from_child, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe (see chromium.log)")
                self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method, session, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.events):
                if m.get("method") == method and m.get("sessionId") == session:
                    del self.events[i]
                    return m
            self.events.append(self._read_message(deadline))

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def shoot(b, url, width, height, outdir, full, charts=False):
    target = b.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = b.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    b.call("Emulation.setDeviceMetricsOverride",
           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, s)
    b.call("Page.enable", {}, s)
    b.call("Page.navigate", {"url": url}, s)
    b.wait_event("Page.loadEventFired", s)
    r = b.call("Runtime.evaluate", {"expression": MEASURE_JS, "returnByValue": True}, s)
    if "exceptionDetails" in r:
        raise RuntimeError(f"measuring the page failed: {r['exceptionDetails']}")
    m = json.loads(r["result"]["value"])
    m["width"], m["height"] = width, height
    shots = []
    png = os.path.join(outdir, f"report-{width}x{height}.png")
    data = b.call("Page.captureScreenshot", {"format": "png"}, s)["data"]
    with open(png, "wb") as f:
        f.write(base64.b64decode(data))
    shots.append(png)
    if full:
        png = os.path.join(outdir, f"report-{width}-full.png")
        data = b.call("Page.captureScreenshot",
                      {"format": "png", "captureBeyondViewport": True,
                       "clip": {"x": 0, "y": 0, "width": width, "height": m["page_height"],
                                "scale": 1}}, s, timeout=120)["data"]
        with open(png, "wb") as f:
            f.write(base64.b64decode(data))
        shots.append(png)
    if full and charts:
        r = b.call("Runtime.evaluate", {"expression": CHART_BOXES_JS, "returnByValue": True}, s)
        for cid, x, y, cw, chh in json.loads(r["result"]["value"]):
            png = os.path.join(outdir, f"report-{width}-{cid}.png")
            data = b.call("Page.captureScreenshot",
                          {"format": "png", "captureBeyondViewport": True,
                           "clip": {"x": x, "y": y, "width": cw, "height": chh, "scale": 1}},
                          s, timeout=120)["data"]
            with open(png, "wb") as f:
                f.write(base64.b64decode(data))
            shots.append(png)
    b.call("Target.closeTarget", {"targetId": target})
    m["screenshots"] = shots
    return m


def judge(m):
    """The problems of one width's measures."""
    bad = []
    if m["scroll_width"] > m["client_width"]:
        bad.append(f"the page scrolls sideways: {m['scroll_width']} px of content in a "
                   f"{m['client_width']} px window")
    for e in m["outside"]:
        bad.append(f"outside the window, in no scrolling box: {e}")
    for bx in m["boxes"]:
        if bx["scrolls"] and not bx["can_scroll"]:
            bad.append(f"chart {bx['id']}: {bx['content_width']} px in a {bx['box_width']} px box "
                       "that does not scroll")
    for c in m["charts"]:
        if not c["in_box"]:
            bad.append(f"chart {c['id']} is not inside a .chartbox")
        for why in c["unexplained"]:
            bad.append(f"chart {c['id']}: {why}")
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html")
    ap.add_argument("outdir")
    ap.add_argument("--widths", default="1349,1366,1920")
    ap.add_argument("--height", type=int, default=768)
    ap.add_argument("--browser", default=None)
    ap.add_argument("--charts", action="store_true",
                    help="also one PNG per chart box (report-<W>-<chart id>.png)")
    args = ap.parse_args()
    exe = args.browser or shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        print("report-screenshot: no chromium (make report-screenshot installs Debian's)",
              file=sys.stderr)
        return 2
    if not os.path.isfile(args.html):
        print(f"report-screenshot: no {args.html} (make report writes it)", file=sys.stderr)
        return 2
    widths = [int(w) for w in args.widths.split(",")]
    full_at = 1366 if 1366 in widths else widths[0]
    os.makedirs(args.outdir, exist_ok=True)
    url = "file://" + os.path.abspath(args.html)
    profile = tempfile.mkdtemp(prefix="attnguard-chromium-")
    results, failed = [], False
    try:
        b = Browser(exe, profile)
        try:
            for w in widths:
                m = shoot(b, url, w, args.height, args.outdir, w == full_at, args.charts)
                bad = judge(m)
                m["problems"] = bad
                results.append(m)
                widths_of = {c["id"]: round(c["width"]) for c in m["charts"]}
                boxes = ", ".join(f"{bx['id']} {widths_of.get(bx['id'], '?')} px "
                                  f"{'scrolls in its' if bx['scrolls'] else 'fits its'} "
                                  f"{bx['box_width']} px box"
                                  for bx in m["boxes"] if "heatmap" in (bx["id"] or ""))
                legends = sum(len(c["legend"]) for c in m["charts"])
                print(f"report-screenshot: {w}x{args.height}: page {m['scroll_width']}/"
                      f"{m['client_width']} px wide, {m['page_height']} px tall; {boxes}; "
                      f"{len(m['charts'])} charts, {legends} legend entries; "
                      + ("ok" if not bad else f"{len(bad)} problem(s)"))
                for p in bad:
                    print(f"  {p}")
                failed |= bool(bad)
        finally:
            b.close()
    except (RuntimeError, TimeoutError, OSError) as e:
        log = os.path.join(profile, "chromium.log")
        tail = open(log).read()[-2000:] if os.path.exists(log) else ""
        print(f"report-screenshot: chromium: {e}\n{tail}", file=sys.stderr)
        shutil.rmtree(profile, ignore_errors=True)
        return 2
    shutil.rmtree(profile, ignore_errors=True)
    with open(os.path.join(args.outdir, "layout.json"), "w") as f:
        json.dump(results, f, indent=1)
    shots = [p for m in results for p in m["screenshots"]]
    print(f"report-screenshot: {'FAIL' if failed else 'ok'}; " + ", ".join(shots))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
