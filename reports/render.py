#!/usr/bin/env python3
"""render.py — turn the differential grid and whatever else the last runs left
behind into the attnguard report: build/report/ (--out) holding report.json
(documented by reports/schema.json), report.md and one self-contained
report.html whose charts are inline SVG (no scripts, fonts or images from
anywhere else; it reads the same offline).  Generated output stays in
build/: `make snapshot` copies report.md into reports/snapshot/ on purpose,
CI publishes the folder as an artifact.

Inputs (all but the grid are optional; a missing one is recorded as null):
    --grid      build/report/grid.json          (build/report_grid)
    --fuzz      build/fuzz-session/summary.json (make fuzz)
    --mutants   build/mutants.json, else build/mutants-quick.json
    --bench     build/bench/bench.json          (make bench)
    --coverage  build/coverage/summary.json     (make coverage)
    --nightly   build/nightly/findings/findings.json (make nightly)

Standard library only.  Owns the report's layout and its charts; never
changes any input.
"""
import argparse
import datetime
import html
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_VERSION = 1
DTYPES = ["f32", "bf16", "f16", "fp8e4m3", "fp8e5m2"]  # KV dtypes


# ------------------------------------------------------------------ inputs

def load_json(path):
    """The parsed file, or None when it is absent or unreadable."""
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"render: ignoring {path}: {e}", file=sys.stderr)
        return None


def rel(path):
    return os.path.relpath(path, ROOT) if path else None


def git_info():
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return {"commit": commit or None, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def first_existing(*paths):
    for p in paths:
        if p and os.path.isfile(p):
            return p
    return None


# ------------------------------------------------------------- summarising

def engine_names(grid):
    """The engines of the grid, in its order (one unnamed engine for a grid
    written before engines had names)."""
    names = [e["name"] for e in grid.get("engines", [])]
    return names or sorted({c.get("engine_name", "engine") for c in grid["cells"]})


def by_dtype_of(cells):
    by_dtype = {}
    for dt in DTYPES:
        mine = [c for c in cells if c["dtype"] == dt]
        if not mine:
            continue

        def worst(side, key):
            vals = [c[side][key] for c in mine]
            return None if any(v is None for v in vals) else max(vals)
        by_dtype[dt] = {
            "cells": len(mine), "passed": sum(c["pass"] for c in mine),
            "engine_max_abs": worst("engine", "max_abs"),
            "baseline_max_abs": worst("baseline", "max_abs"),
            "engine_max_tol_use": worst("engine", "tol_use"),
        }
    return by_dtype


def grid_summary(grid):
    cells = grid["cells"]
    by_dtype = by_dtype_of(cells)
    by_engine = {}
    for e in grid.get("engines", []):
        mine = [c for c in cells if c.get("engine_name") == e["name"]]
        by_engine[e["name"]] = {"cells": e["cells"], "passed": e["passed"],
                                "failed": e["failed"], "skipped": e["skipped"],
                                "skip_reasons": e["skip_reasons"], "variants": e["variants"],
                                "by_dtype": by_dtype_of(mine)}
    by_isa = {}
    for isa in grid["isas"]:
        mine = [c for c in cells if c["isa"] == isa]
        by_isa[isa] = {"cells": len(mine), "passed": sum(c["pass"] for c in mine)}
    return {
        "cells": len(cells), "passed": sum(c["pass"] for c in cells),
        "failed": sum(not c["pass"] for c in cells),
        "within_tolerance": sum(c["within_tolerance"] for c in cells),
        "within_2x_baseline": sum(c["within_2x_baseline"] for c in cells),
        "by_dtype": by_dtype, "by_isa": by_isa, "by_engine": by_engine,
    }


def fuzz_summary(fuzz):
    if not fuzz:
        return None
    t = fuzz.get("targets", [])
    return {"targets": len(t), "execs": sum(x.get("execs") or 0 for x in t),
            "findings": fuzz.get("findings", 0)}


# ----------------------------------------------------------------- helpers

def fmt(v, digits=3):
    if v is None:
        return "NaN/—"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def esc(s):
    return html.escape(str(s), quote=True)


def log10c(v, lo=-9.0):
    if v is None:
        return None
    return math.log10(v) if v > 0 else lo


def color_scale(lv):
    """log10(error / tolerance) -> colour: greens up to 1x the tolerance (pale at
    1x), then orange to dark red at 10x and beyond."""
    def mixc(a, b, t):
        t = min(1.0, max(0.0, t))
        return tuple(int(a[k] + (b[k] - a[k]) * t) for k in range(3))
    if lv <= 0:
        c = mixc((20, 120, 60), (225, 240, 170), (lv + 3.0) / 3.0)
    else:
        c = mixc((245, 150, 60), (150, 0, 0), lv)
    return f"rgb({c[0]},{c[1]},{c[2]})"


def svg_open(cid, w, h, title):
    return [f'<svg id="{cid}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" '
            f'height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{esc(title)}">',
            f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>',
            f'<text x="10" y="20" class="ct">{esc(title)}</text>']


def svg_note(cid, w, title, note):
    parts = svg_open(cid, w, 90, title)
    parts.append(f'<text x="20" y="55" class="note">{esc(note)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def mark(key):
    """The attributes of a data mark (an element that has a class of its
    own adds "mark" to it instead of using this) whose colour the chart's legend explains
    under the same key (reports/screenshot.py checks that each one has its
    legend entry)."""
    return f'class="mark" data-key="{key}"'


def legend_row(x, y, entries, width):
    """A legend: swatches with their words, laid left to right from (x, y)
    and wrapped at width.  An entry is (key, swatch SVG at (0, 0) 18x14,
    text[, swatch width when not 18]).  Returns (SVG, height used)."""
    out, cx, cy = ['<g class="legend">'], x, y
    for key, swatch, text, *sw in entries:
        tx = (sw[0] if sw else 18) + 6   # where the words start: after the swatch
        w = tx + 6.2 * len(text) + 20
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 22
        out.append(f'<g data-key="{key}" transform="translate({cx:.0f},{cy})">{swatch}'
                   f'<text x="{tx}" y="11" class="lbl legend-text">{esc(text)}</text></g>')
        cx += w
    out.append("</g>")
    return "\n".join(out), cy - y + 22


def boxed(svg):
    """A chart in its own box: it scrolls sideways inside the box when wider
    than the page, so the page itself never does."""
    return f'<div class="chartbox">\n{svg}\n</div>'


# ------------------------------------------------------------------ charts

HEAT_EMPTY = "#f4f4f4"     # no cell of the grid in this bucket
HEAT_SKIP = "#c9ccd1"      # cells exist, the engine cannot express any of them
HEAT_NAN = "#3a0000"       # a NaN in the engine's output


def skipped_placed(grid, engine=None):
    """The grid's skipped (cell, engine) records with the cell's place in
    the heat map.  A grid written before skip records carried it borrows
    the place from a judged record of the same cell; a cell no engine
    judged then has none and is left out."""
    where = {c["id"]: c for c in grid["cells"]}
    keys = ("dtype", "head_dim", "group", "window")
    out = []
    for x in grid.get("skipped", []):
        if engine is not None and x.get("engine_name") != engine:
            continue
        if all(k in x for k in keys):
            out.append(x)
        elif x["id"] in where:
            out.append(dict(x, **{k: where[x["id"]][k] for k in keys}))
    return out


def heat_layout(grid):
    """Rows (KV dtype x head dim) and columns (group x window) of the heat
    maps, from every cell of the grid, judged or skipped, so that each
    engine's map has the same layout and reads side by side with the
    others'.  A column exists only for a window its group has."""
    placed = list(grid["cells"]) + skipped_placed(grid)
    hds = sorted({c["head_dim"] for c in placed})
    rows = [(d, hd) for d in DTYPES for hd in hds
            if any(c["dtype"] == d and c["head_dim"] == hd for c in placed)]
    groups = []
    for c in placed:
        if c["group"] not in groups:
            groups.append(c["group"])
    cols = [(g, w) for g in groups for w in sorted({c["window"] for c in placed if c["group"] == g})]
    return rows, cols


def chart_heatmap(grid, engine=None, chart_id="chart-heatmap"):
    """Worst tolerance use per (dtype x head_dim) row and (group x window)
    column of one engine's cells (all cells when engine is None)."""
    rows, cols = heat_layout(grid)
    cells = [c for c in grid["cells"] if engine is None or c.get("engine_name") == engine]
    skipped = skipped_placed(grid, engine) if engine else []
    title = f"Error heat map{': ' + engine if engine else ''}"
    if not rows:
        return svg_note(chart_id, 600, title, "no cells")
    cw, ch, gap, left, top = 38, 22, 8, 104, 64
    xs, x = [], left
    for j, (g, win) in enumerate(cols):
        if j and g != cols[j - 1][0]:
            x += gap
        xs.append(x)
        x += cw
    grid_w = x - left
    w = max(left + grid_w + 16, 660)
    legend_y = top + ch * len(rows) + 22
    entries = [("scale", f'<rect width="18" height="14" fill="{color_scale(math.log10(v))}"/>',
                f"{v:g}") for v in (0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0)]
    entries[0] = ("scale", entries[0][1], "error / tolerance: 0.001")
    entries += [
        ("nan", f'<rect width="18" height="14" fill="{HEAT_NAN}"/>', "NaN in the output"),
        ("fail", '<rect x="1" y="1" width="16" height="12" fill="none" stroke="#000000" '
                 'stroke-width="2.5"/>', "a failing cell"),
        ("skipped", f'<rect width="18" height="14" fill="{HEAT_SKIP}"/>',
         "skipped: the engine cannot express these cells" if engine else "skipped"),
        ("empty", f'<rect width="18" height="14" fill="{HEAT_EMPTY}" stroke="#dddddd"/>',
         "no cell of the grid here"),
    ]
    legend, lh = legend_row(left, legend_y, entries, w - left - 10)
    note_y = legend_y + lh + 8
    h = note_y + 12
    p = svg_open(chart_id, w, h,
                 f"{title} — worst error / tolerance per bucket over the engine's variants "
                 "(1 or less passes outright)")
    j = 0
    while j < len(cols):   # each group's name over its windows
        k = j
        while k + 1 < len(cols) and cols[k + 1][0] == cols[j][0]:
            k += 1
        mid = (xs[j] + xs[k] + cw) / 2
        p.append(f'<text x="{mid:.0f}" y="{top - 26}" class="lbl" text-anchor="middle">'
                 f'{esc(cols[j][0])}</text>')
        j = k + 1
    for j, (g, win) in enumerate(cols):
        p.append(f'<text x="{xs[j] + cw / 2 - 1:.0f}" y="{top - 8}" class="cell" '
                 f'text-anchor="middle">{"none" if win < 0 else "w" + str(win)}</text>')
    p.append(f'<text x="{left - 8}" y="{top - 8}" class="cell" text-anchor="end">window</text>')
    for i, (dt, hd) in enumerate(rows):
        y = top + i * ch
        p.append(f'<text x="{left - 8}" y="{y + ch * 0.68:.0f}" class="lbl" text-anchor="end">'
                 f'{dt} · D{hd}</text>')
        for j, (g, win) in enumerate(cols):
            x = xs[j]

            def here(c):
                return (c["dtype"] == dt and c["head_dim"] == hd and c["group"] == g
                        and c["window"] == win)
            mine = [c for c in cells if here(c)]
            skip = [c for c in skipped if here(c)]
            if not mine:
                key, fill = ("skipped", HEAT_SKIP) if skip else ("empty", HEAT_EMPTY)
                why = (f"{len(skip)} cell(s) skipped: " +
                       ", ".join(sorted({c['reason'] for c in skip}))) if skip else "no cell"
                p.append(f'<rect {mark(key)} x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" '
                         f'fill="{fill}"><title>{dt} D{hd} {esc(g)} window {win}: {esc(why)}'
                         f'</title></rect>')
                continue
            uses = [c["engine"]["tol_use"] for c in mine]
            worst = math.inf if any(u is None for u in uses) else max(uses)
            key, fill = (("nan", HEAT_NAN) if worst == math.inf
                         else ("scale", color_scale(log10c(worst, -3.0))))
            tip = "; ".join(f'#{c["id"]} {c.get("variant", c["isa"])} {c["mode"]} split {c["split"]} '
                            f'{fmt(c["engine"]["tol_use"], 2)}x tol'
                            f'{" FAIL" if not c["pass"] else ""}' for c in mine)
            if skip:
                tip += f"; {len(skip)} more skipped"
            p.append(f'<rect {mark(key)} x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" '
                     f'fill="{fill}"><title>{dt} D{hd} {esc(g)} window {win}: {esc(tip)}'
                     f'</title></rect>')
            if not all(c["pass"] for c in mine):
                p.append(f'<rect {mark("fail")} x="{x + 1}" y="{y + 1}" width="{cw - 4}" '
                         f'height="{ch - 4}" fill="none" stroke="#000000" stroke-width="2.5"/>')
            label = ("NaN" if worst == math.inf else fmt(worst, 1) if worst < 1
                     else f"{worst:.1f}" if worst < 10 else f"{worst:.0f}" if worst < 1000
                     else ">999")
            tc = "#ffffff" if worst == math.inf or log10c(worst, -3.0) < -1.5 or worst > 3 \
                else "#111111"
            p.append(f'<text x="{x + cw / 2 - 1}" y="{y + ch * 0.68:.0f}" class="cell" '
                     f'text-anchor="middle" style="fill:{tc}">{label}</text>')
    p.append(legend)
    p.append(f'<text x="{left}" y="{note_y}" class="lbl">bf16 and f16 sit near 1 by design: '
             "rounding the output to its dtype uses up the tolerance's rtol. Hover over a "
             "square for its cells.</text>")
    p.append("</svg>")
    return "\n".join(p)


ENGINE_COLORS = ["#1f5fbf", "#2e8b57", "#8a3ab9", "#b8860b"]


def chart_distribution(grid):
    """Max abs error per cell on a log axis: one lane per KV dtype and
    engine, the engine's dot above the same-precision baseline's."""
    cells = grid["cells"]
    engines = engine_names(grid)
    lanes = [(dt, e) for dt in DTYPES for e in engines
             if any(c["dtype"] == dt and c.get("engine_name", e) == e for c in cells)]
    multi = len(engines) > 1
    left, top, lane, width = 150 if multi else 90, 44, 46 if multi else 64, 860
    w = left + width + 30
    legend_y = top + lane * len(lanes) + 44
    entries = [(f"engine-{k}", f'<circle cx="9" cy="7" r="5" fill="{ENGINE_COLORS[k % 4]}"/>',
                f"{e}" if multi else "engine") for k, e in enumerate(engines)]
    entries += [("baseline", '<circle cx="9" cy="7" r="5" fill="#e8892b"/>',
                 "naive baseline at the engine's precision"),
                ("nan", '<circle cx="9" cy="7" r="5" fill="#c00000"/>',
                 "NaN (drawn at the right edge)")]
    legend, lh = legend_row(left, legend_y, entries, width)
    h = legend_y + lh + 4
    lo, hi = -9.0, 0.0
    p = svg_open("chart-dist", w, h,
                 "Error distribution per KV dtype: max abs error per cell against the fp64 "
                 "reference, each engine above its baseline")

    def xpos(v):
        lv = log10c(v, lo)
        lv = min(hi, max(lo, lv))
        return left + (lv - lo) / (hi - lo) * width

    for k in range(int(lo), int(hi) + 1):
        x = left + (k - lo) / (hi - lo) * width
        p.append(f'<line x1="{x:.1f}" y1="{top - 5}" x2="{x:.1f}" '
                 f'y2="{top + lane * len(lanes)}" stroke="#dddddd"/>')
        p.append(f'<text x="{x:.1f}" y="{top + lane * len(lanes) + 16}" class="lbl" '
                 f'text-anchor="middle">1e{k}</text>')
    for i, (dt, e) in enumerate(lanes):
        y0 = top + i * lane
        ek = engines.index(e)
        p.append(f'<text x="{left - 10}" y="{y0 + lane / 2 + 4}" class="lbl" '
                 f'text-anchor="end">{dt}{" · " + esc(e) if multi else ""}</text>')
        p.append(f'<line x1="{left}" y1="{y0 + lane}" x2="{left + width}" y2="{y0 + lane}" '
                 f'stroke="#bbbbbb"/>')
        mine = [c for c in cells if c["dtype"] == dt and c.get("engine_name", e) == e]
        for n, c in enumerate(mine):
            jit = ((n * 37) % 23) / 23.0
            for side, key, color, off in (("baseline", "baseline", "#e8892b", 0.55),
                                          ("engine", f"engine-{ek}", ENGINE_COLORS[ek % 4], 0.1)):
                v = c[side]["max_abs"]
                if v is None:
                    x, fill, key = left + width, "#c00000", "nan"
                else:
                    x, fill = xpos(v), color
                y = y0 + lane * off + jit * lane * 0.35
                p.append(f'<circle {mark(key)} cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{fill}" '
                         f'fill-opacity="0.7"><title>#{c["id"]} {esc(c.get("engine_name", ""))} '
                         f'{side} {fmt(v)}</title></circle>')
    p.append(f'<text x="{left + width / 2}" y="{top + lane * len(lanes) + 32}" class="lbl" '
             f'text-anchor="middle">max |output - fp64 reference| per cell (log scale)</text>')
    p.append(legend)
    p.append("</svg>")
    return "\n".join(p)


def chart_ttd(mutants):
    title = "Time to detect per injected bug"
    if not mutants or not mutants.get("bugs"):
        return svg_note("chart-ttd", 900, title, "no mutant campaign data (run make mutants)")
    bugs = mutants["bugs"]
    cap = float(mutants.get("cap_s") or 1)
    left, top, bh, width = 210, 45, 26, 600
    w = left + width + 160
    legend, lh = legend_row(left, top + bh * len(bugs) + 30, [
        ("median", '<rect y="2" width="18" height="10" fill="#1f5fbf"/>',
         "median seconds to the first finding"),
        ("max", '<line x1="0" y1="7" x2="18" y2="7" stroke="#222222" stroke-width="2"/>',
         "whisker: the slowest run"),
        ("escaped", '<text x="0" y="11" class="lbl" style="fill:#c00000">2/3</text>',
         "red: some runs let the bug escape", 22)], width)
    h = top + bh * len(bugs) + 30 + lh
    p = svg_open("chart-ttd", w, h, title)
    tmax = max([cap] + [b.get("max_s") or 0 for b in bugs])

    def xs(t):
        return left + (t / tmax) * width if tmax > 0 else left

    for k in range(6):
        t = tmax * k / 5
        p.append(f'<line x1="{xs(t):.1f}" y1="{top - 4}" x2="{xs(t):.1f}" '
                 f'y2="{top + bh * len(bugs)}" stroke="#dddddd"/>'
                 f'<text x="{xs(t):.1f}" y="{top + bh * len(bugs) + 16}" class="lbl" '
                 f'text-anchor="middle">{t:.0f}s</text>')
    for i, b in enumerate(bugs):
        y = top + i * bh
        p.append(f'<text x="{left - 8}" y="{y + bh * 0.65}" class="lbl" text-anchor="end">'
                 f'{esc(b["bug"])}</text>')
        med, mx = b.get("median_s"), b.get("max_s")
        escaped = b.get("runs", 0) - b.get("detected", 0)
        if med is not None:
            p.append(f'<rect {mark("median")} x="{left}" y="{y + 4}" '
                     f'width="{max(1.0, xs(med) - left):.1f}" '
                     f'height="{bh - 10}" fill="#1f5fbf"><title>{esc(b["bug"])}: median '
                     f'{med}s, max {mx}s, {b.get("detected")}/{b.get("runs")} detected'
                     f'</title></rect>')
            if mx is not None:
                p.append(f'<line {mark("max")} x1="{xs(med):.1f}" y1="{y + bh / 2 - 1}" '
                         f'x2="{xs(mx):.1f}" '
                         f'y2="{y + bh / 2 - 1}" stroke="#222222" stroke-width="2"/>')
        label = f'{b.get("detected")}/{b.get("runs")}'
        if escaped:
            label += f" ({escaped} escaped)"
        color = "#c00000" if escaped else "#222222"
        marked = ' class="lbl mark" data-key="escaped"' if escaped else ' class="lbl"'
        p.append(f'<text x="{left + width + 8}" y="{y + bh * 0.65}"{marked} '
                 f'style="fill:{color}">{esc(label)}</text>')
    p.append(legend)
    p.append("</svg>")
    return "\n".join(p)


def chart_execs(fuzz):
    title = "Fuzzing throughput: executions per second per target"
    if not fuzz or not fuzz.get("targets"):
        return svg_note("chart-execs", 900, title, "no fuzz summary (run make fuzz)")
    ts = fuzz["targets"]
    left, top, bh, width = 160, 45, 30, 560
    w = left + width + 380
    legend, lh = legend_row(left, top + bh * len(ts) + 12, [
        ("clean", '<rect y="2" width="18" height="10" fill="#2e8b57"/>', "no finding"),
        ("found", '<rect y="2" width="18" height="10" fill="#c00000"/>',
         "the target found something")], width)
    h = top + bh * len(ts) + 12 + lh
    p = svg_open("chart-execs", w, h, title)
    vmax = max([t.get("exec_per_s") or 0 for t in ts] + [1])
    for i, t in enumerate(ts):
        y = top + i * bh
        v = t.get("exec_per_s") or 0
        nfind = len([f for f in (t.get("findings") or []) if f])
        p.append(f'<text x="{left - 8}" y="{y + bh * 0.62}" class="lbl" text-anchor="end">'
                 f'{esc(t.get("target"))}</text>')
        p.append(f'<rect {mark("found" if nfind else "clean")} x="{left}" y="{y + 4}" '
                 f'width="{max(1.0, v / vmax * width):.1f}" '
                 f'height="{bh - 10}" fill="{"#c00000" if nfind else "#2e8b57"}">'
                 f'<title>{esc(t.get("target"))}: {v} exec/s</title></rect>')
        p.append(f'<text x="{left + v / vmax * width + 6:.1f}" y="{y + bh * 0.62}" '
                 f'class="lbl">{v:g}/s · cov {t.get("cov")} · {t.get("execs")} execs'
                 f'{" · " + str(nfind) + " finding(s)" if nfind else ""}</text>')
    p.append(legend)
    p.append("</svg>")
    return "\n".join(p)


# ------------------------------------------------------------------ report

def bench_rows(bench, max_cols=10):
    """(headers, rows) when bench.json holds a "results" list of flat objects."""
    res = bench.get("results") if isinstance(bench, dict) else None
    if not isinstance(res, list) or not res or not all(isinstance(r, dict) for r in res):
        return None
    headers = [k for k in res[0] if not isinstance(res[0][k], (dict, list))][:max_cols]
    return headers, [[r.get(k, "") for k in headers] for r in res]


def failing_cells(grid, limit=50):
    return [c for c in grid["cells"] if not c["pass"]][:limit]


def cell_desc(c):
    return (f'{c.get("engine_name", "")} {c.get("variant", "")} {c["isa"]} kv {c["dtype"]} '
            f'q/out {c.get("q_dtype", c["dtype"])} D{c["head_dim"]} {c["group"]} '
            f'w({c.get("window_left", c["window"])},{c.get("window_right", c["window"])}) '
            f'cap{c["softcap"]:g} sinks={int(c["sinks"])} alibi={int(c.get("alibi", 0))} '
            f'{c.get("values", "uniform")} {c.get("causal", "causal")} {c["mode"]} '
            f'split={c["split"]} t{c["threads"]} bs{c["block_size"]}')


def side_by_side(s):
    """(headers, rows): one row per KV dtype, for each engine its cells
    passed / judged, its max abs error and its baseline's, and its worst
    error / tolerance; None without engines."""
    eng = s.get("by_engine") or {}
    if not eng:
        return None
    headers = ["KV dtype"]
    for name in eng:
        headers += [f"{name}: pass / judged", f"{name}: max abs", f"{name}: baseline max abs",
                    f"{name}: worst err / tol"]
    rows = []
    for dt in DTYPES:
        if not any(dt in e["by_dtype"] for e in eng.values()):
            continue
        row = [dt]
        for e in eng.values():
            d = e["by_dtype"].get(dt)
            row += ([f"{d['passed']} / {d['cells']}", fmt(d["engine_max_abs"]),
                     fmt(d["baseline_max_abs"]), fmt(d["engine_max_tol_use"])] if d
                    else ["skipped", "—", "—", "—"])
        rows.append(row)
    row = ["all"]
    for e in eng.values():
        row += [f"{e['passed']} / {e['cells']}" + (f" ({e['skipped']} skipped)" if e["skipped"]
                                                   else ""), "", "", ""]
    rows.append(row)
    return headers, rows


def render_md(doc):
    g, s = doc["grid"], doc["summary"]["grid"]
    L = [f"# attnguard report — {doc['date']}", "",
         f"Generated {doc['generated']} from commit `{doc['git']['commit']}`"
         f"{' (dirty tree)' if doc['git']['dirty'] else ''}.", "",
         "## Differential grid", "",
         f"{s['cells']} cells over ISAs {', '.join(g['isas'])}; **{s['passed']} pass, "
         f"{s['failed']} fail**; {s['within_tolerance']} within attn_tolerance, "
         f"{s['within_2x_baseline']} within 2x the naive baseline; grid time "
         f"{g['elapsed_s']} s (seed {g['seed']}).", "",
         f"Criterion: {g['criterion']}.", "",
         "| engine | variants | cells judged | pass | fail | skipped (the engine lacks) |",
         "|---|---|---|---|---|---|"]
    for name, e in s.get("by_engine", {}).items():
        why = ", ".join(f"{k} ({v})" for k, v in e["skip_reasons"].items()) or "none"
        L.append(f"| {name} | {', '.join(e['variants'])} | {e['cells']} | {e['passed']} | "
                 f"{e['failed']} | {e['skipped']}: {why} |")
    side = side_by_side(s)
    if side:
        L += ["", "Engines side by side, per KV dtype:" if len(s["by_engine"]) > 1
              else "Per KV dtype:", "",
              "| " + " | ".join(side[0]) + " |", "|" + "---|" * len(side[0])]
        L += ["| " + " | ".join(str(v) for v in row) + " |" for row in side[1]]
    else:
        L += ["", "| KV dtype | cells | pass | engine max abs | baseline max abs | "
              "worst error / tolerance |", "|---|---|---|---|---|---|"]
        for dt, d in s["by_dtype"].items():
            L.append(f"| {dt} | {d['cells']} | {d['passed']} | {fmt(d['engine_max_abs'])} | "
                     f"{fmt(d['baseline_max_abs'])} | {fmt(d['engine_max_tol_use'])} |")
    L += ["", "| ISA | cells | pass |", "|---|---|---|"]
    for isa, d in s["by_isa"].items():
        L.append(f"| {isa} | {d['cells']} | {d['passed']} |")
    fails = failing_cells(g)
    if fails:
        L += ["", "### Failing cells", "",
              "| id | cell | engine abs / rel | baseline abs / rel | error / tol |",
              "|---|---|---|---|---|"]
        for c in fails:
            L.append(f"| {c['id']} | {cell_desc(c)} | {fmt(c['engine']['max_abs'])} / "
                     f"{fmt(c['engine']['max_rel'])} | {fmt(c['baseline']['max_abs'])} / "
                     f"{fmt(c['baseline']['max_rel'])} | {fmt(c['engine']['tol_use'])} |")
    f = doc["fuzz"]
    L += ["", "## Fuzzing", ""]
    if f:
        L += [f"Last `make fuzz`: {f.get('fuzz_time')} s budget, {f.get('wall_s')} s wall, "
              f"{f.get('findings')} finding(s).", "",
              "| target | execs | exec/s | cov | ft | corpus | unjudged | findings |",
              "|---|---|---|---|---|---|---|---|"]
        shares = f.get("unjudged") or {}
        for t in f.get("targets", []):
            fl = [x for x in (t.get("findings") or []) if x]
            u = shares.get(t.get("target"))
            # the share of compared elements the reference left open
            # (scripts/fuzzkit.py), flagged past its threshold
            un = "-" if not u else (f"{u['pct']:.3g} % of {u['elems']}"
                                    + (" (HIGH)" if u.get("flag") else ""))
            L.append(f"| {t.get('target')} | {t.get('execs')} | {t.get('exec_per_s')} | "
                     f"{t.get('cov')} | {t.get('ft')} | {t.get('corpus')} | {un} | "
                     + (", ".join(f"{x.get('oracle')} after {x.get('time_s')} s" for x in fl)
                        or "none") + " |")
    else:
        L.append("No fuzz summary (build/fuzz-session/summary.json) was present.")
    m = doc["mutants"]
    L += ["", "## Injected bugs (mutant campaign)", ""]
    if m:
        L += [f"Source `{doc['sources']['mutants']}`: {m.get('seeds')} seed(s), cap "
              f"{m.get('cap_s')} s, modes {', '.join(m.get('modes') or [])}.", "",
              "| bug | detected | median s | max s | oracles |", "|---|---|---|---|---|"]
        for b in m.get("bugs", []):
            L.append(f"| `{b['bug']}` | {b.get('detected')}/{b.get('runs')} | "
                     f"{b.get('median_s')} | {b.get('max_s')} | "
                     f"{', '.join(b.get('oracles') or [])} |")
        nm = m.get("normal")
        if nm:
            L.append(f"\nNormal build: {nm.get('detected')} finding(s) in {nm.get('runs')} runs.")
    else:
        L.append("No mutant campaign results were present.")
    L += ["", "## Coverage", ""]
    cv = doc["coverage"]
    if cv:
        L.append(f"src/: lines {cv['lines']['percent']}% ({cv['lines']['covered']}/"
                 f"{cv['lines']['total']}), branches {cv['branches']['percent']}% "
                 f"({cv['branches']['covered']}/{cv['branches']['total']}); "
                 f"{cv.get('inputs', '?')} inputs replayed.")
    else:
        L.append("No coverage summary (build/coverage/summary.json) was present.")
    L += ["", "## Benchmarks", ""]
    br = bench_rows(doc["bench"]) if doc["bench"] else None
    if br:
        L += ["| " + " | ".join(br[0]) + " |", "|" + "---|" * len(br[0])]
        L += ["| " + " | ".join(str(v) for v in row) + " |" for row in br[1]]
    else:
        L.append("See report.json (`bench`)." if doc["bench"] else
                 "No benchmark results (build/bench/bench.json) were present.")
    n = doc["nightly"]
    if n:
        L += ["", "## Nightly findings", "",
              f"{len(n.get('findings', []))} unique finding(s) from {n.get('artifacts', 0)} "
              "artifact(s).", "", "| id | oracle | reproduced | files |", "|---|---|---|---|"]
        for x in n.get("findings", []):
            L.append(f"| {x.get('id')} | {x.get('oracle')} | {x.get('reproduced')}/"
                     f"{x.get('attempts')} | {x.get('summary')} |")
    L.append("")
    return "\n".join(L)


CSS = """
body{font-family:DejaVu Sans,Liberation Sans,Arial,sans-serif;margin:0 auto;padding:16px 20px;
color:#1b1b1b;background:#fafafa;max-width:1320px;box-sizing:border-box}
h1{font-size:24px;margin:0 0 6px}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #ccc}
.kpis{display:flex;gap:14px;flex-wrap:wrap;margin:12px 0}
.kpi{background:#fff;border:1px solid #ccc;border-radius:6px;padding:10px 16px;min-width:140px}
.kpi b{display:block;font-size:24px}.kpi.bad b{color:#b00000}.kpi.good b{color:#1d7a3d}
table{border-collapse:collapse;background:#fff;font-size:13px;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;overflow-wrap:break-word}
th{background:#eef1f5}tr.fail td{background:#fde8e8}
.chartbox,.tablebox{max-width:100%;overflow-x:auto;margin:8px 0}
.chartbox{background:#fff;border:1px solid #ccc}
svg.chart{display:block}
svg .ct{font-size:14px;font-weight:bold;fill:#222}svg .lbl{font-size:11px;fill:#333}
svg .cell{font-size:10px;fill:#111}svg .note{font-size:14px;fill:#777}
.muted{color:#666;font-size:13px;overflow-wrap:anywhere}
"""


def table(headers, rows, row_class=None):
    out = ['<div class="tablebox"><table><tr>' +
           "".join(f"<th>{esc(h)}</th>" for h in headers) + "</tr>"]
    for i, r in enumerate(rows):
        cls = f' class="{row_class[i]}"' if row_class and row_class[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{esc(v)}</td>" for v in r) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def render_html(doc):
    g, s = doc["grid"], doc["summary"]["grid"]
    fz, m, cv = doc["fuzz"], doc["mutants"], doc["coverage"]
    H = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
         f"<title>attnguard report {esc(doc['date'])}</title>", f"<style>{CSS}</style>",
         "</head><body>",
         f"<h1>attnguard report — {esc(doc['date'])}</h1>",
         f'<p class="muted">Generated {esc(doc["generated"])} · commit '
         f'{esc(doc["git"]["commit"])}{" (dirty)" if doc["git"]["dirty"] else ""} · '
         f'ISAs {esc(", ".join(g["isas"]))}</p>', '<div class="kpis">']

    def kpi(label, value, cls=""):
        H.append(f'<div class="kpi {cls}"><b>{esc(value)}</b>{esc(label)}</div>')

    kpi("grid cells", s["cells"])
    kpi("cells pass", s["passed"], "good")
    kpi("cells fail", s["failed"], "bad" if s["failed"] else "good")
    if fz:
        kpi("fuzz findings (artifacts)", fz.get("findings", 0),
            "bad" if fz.get("findings") else "good")
    if doc["nightly"]:
        nu = len(doc["nightly"].get("findings", []))
        kpi("unique nightly findings", nu, "bad" if nu else "good")
    if m:
        esc_runs = sum((b.get("runs", 0) - b.get("detected", 0)) for b in m.get("bugs", []))
        kpi("mutant runs escaped", esc_runs, "bad" if esc_runs else "good")
    if cv:
        kpi("src/ line coverage", f'{cv["lines"]["percent"]}%')
        kpi("src/ branch coverage", f'{cv["branches"]["percent"]}%')
    H.append("</div>")

    H.append("<h2>Differential grid</h2>")
    H.append(f"<p>{s['cells']} cells, {s['passed']} pass, {s['failed']} fail; "
             f"{s['within_tolerance']} within attn_tolerance, {s['within_2x_baseline']} within "
             f"2x the same-precision naive baseline. {esc(g['criterion'])}. Grid time "
             f"{g['elapsed_s']} s, seed {g['seed']}.</p>")
    engines = engine_names(g)
    if s.get("by_engine"):
        H.append(table(["engine", "variants", "cells judged", "pass", "fail", "skipped"],
                       [[n, ", ".join(e["variants"]), e["cells"], e["passed"], e["failed"],
                         f'{e["skipped"]}: ' + (", ".join(f"{k} ({v})" for k, v in
                                                         e["skip_reasons"].items()) or "none")]
                        for n, e in s["by_engine"].items()]))
    side = side_by_side(s)
    if side:
        H.append("<h3>Engines side by side, per KV dtype</h3>" if len(s["by_engine"]) > 1
                 else "<h3>Per KV dtype</h3>")
        H.append(table(*side))
    for k, name in enumerate(engines):
        H.append(boxed(chart_heatmap(g, name if len(engines) > 1 or s.get("by_engine") else None,
                                     "chart-heatmap" if k == 0 else f"chart-heatmap-{k}")))
    H.append(boxed(chart_distribution(g)))
    if not side:
        H.append(table(["dtype", "cells", "pass", "engine max abs", "baseline max abs",
                        "worst error / tolerance"],
                       [[dt, d["cells"], d["passed"], fmt(d["engine_max_abs"]),
                         fmt(d["baseline_max_abs"]), fmt(d["engine_max_tol_use"])]
                        for dt, d in s["by_dtype"].items()]))
    fails = failing_cells(g)
    if fails:
        H.append("<h3>Failing cells</h3>")
        H.append(table(["id", "cell", "engine abs / rel", "baseline abs / rel", "error / tol",
                        "message"],
                       [[c["id"], cell_desc(c),
                         f'{fmt(c["engine"]["max_abs"])} / {fmt(c["engine"]["max_rel"])}',
                         f'{fmt(c["baseline"]["max_abs"])} / {fmt(c["baseline"]["max_rel"])}',
                         fmt(c["engine"]["tol_use"]), c["message"]] for c in fails],
                       ["fail"] * len(fails)))

    H.append("<h2>Injected bugs</h2>")
    H.append(boxed(chart_ttd(m)))
    if m:
        H.append(table(["bug", "what", "detected", "median s", "max s", "oracles"],
                       [[b["bug"], b.get("what", ""), f'{b.get("detected")}/{b.get("runs")}',
                         b.get("median_s"), b.get("max_s"), ", ".join(b.get("oracles") or [])]
                        for b in m.get("bugs", [])]))
    H.append("<h2>Fuzzing</h2>")
    H.append(boxed(chart_execs(fz)))
    if fz:
        H.append(table(["target", "execs", "exec/s", "cov", "ft", "corpus", "findings"],
                       [[t.get("target"), t.get("execs"), t.get("exec_per_s"), t.get("cov"),
                         t.get("ft"), t.get("corpus"),
                         ", ".join(f'{x.get("oracle")} @{x.get("time_s")}s'
                                   for x in (t.get("findings") or []) if x) or "none"]
                        for t in fz.get("targets", [])]))
    H.append("<h2>Coverage</h2>")
    if cv:
        H.append(table(["scope", "lines", "branches", "functions", "inputs replayed"],
                       [["src/", f'{cv["lines"]["percent"]}% ({cv["lines"]["covered"]}/'
                         f'{cv["lines"]["total"]})',
                         f'{cv["branches"]["percent"]}% ({cv["branches"]["covered"]}/'
                         f'{cv["branches"]["total"]})',
                         f'{cv.get("functions", {}).get("percent", "?")}%',
                         cv.get("inputs", "?")]]))
    else:
        H.append('<p class="muted">No coverage summary present (make coverage).</p>')
    H.append("<h2>Benchmarks</h2>")
    br = bench_rows(doc["bench"]) if doc["bench"] else None
    if br:
        H.append(table(*br))
    elif doc["bench"]:
        H.append(f"<pre>{esc(json.dumps(doc['bench'], indent=1)[:6000])}</pre>")
    else:
        H.append('<p class="muted">No benchmark results present (make bench).</p>')
    n = doc["nightly"]
    if n:
        H.append("<h2>Nightly findings</h2>")
        H.append(table(["id", "oracle", "reproduced", "summary"],
                       [[x.get("id"), x.get("oracle"),
                         f'{x.get("reproduced")}/{x.get("attempts")}', x.get("summary")]
                        for x in n.get("findings", [])]))
    H.append("<h2>All grid cells</h2><details><summary>show the "
             f"{len(g['cells'])} cells</summary>")
    H.append(table(["id", "cell", "requests q/kv", "engine abs", "engine rel", "baseline abs",
                    "baseline rel", "error/tol", "pass"],
                   [[c["id"], cell_desc(c), c["requests"], fmt(c["engine"]["max_abs"]),
                     fmt(c["engine"]["max_rel"]), fmt(c["baseline"]["max_abs"]),
                     fmt(c["baseline"]["max_rel"]), fmt(c["engine"]["tol_use"]),
                     "pass" if c["pass"] else "FAIL"] for c in g["cells"]],
                   ["" if c["pass"] else "fail" for c in g["cells"]]))
    H.append("</details>")
    H.append('<p class="muted">Sources: ' + esc(", ".join(
        f"{k}={v}" for k, v in doc["sources"].items())) + "</p>")
    H.append("</body></html>")
    return "\n".join(H) + "\n"


# -------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", default=os.path.join(ROOT, "build/report/grid.json"))
    ap.add_argument("--fuzz", default=os.path.join(ROOT, "build/fuzz-session/summary.json"))
    ap.add_argument("--mutants", default=None)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build/bench/bench.json"))
    ap.add_argument("--coverage", default=os.path.join(ROOT, "build/coverage/summary.json"))
    ap.add_argument("--nightly", default=os.path.join(ROOT, "build/nightly/findings/findings.json"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/report"))
    ap.add_argument("--date", default=None, help="the report's date (default: today, UTC)")
    args = ap.parse_args()

    grid = load_json(args.grid)
    if not grid or "cells" not in grid:
        sys.exit(f"render: no grid at {args.grid} (run build/report_grid or make report)")
    mut_path = args.mutants or first_existing(os.path.join(ROOT, "build/mutants.json"),
                                              os.path.join(ROOT, "build/mutants-quick.json"))
    paths = {"grid": args.grid, "fuzz": args.fuzz, "mutants": mut_path, "bench": args.bench,
             "coverage": args.coverage, "nightly": args.nightly}
    data = {k: load_json(p) for k, p in paths.items()}
    mutants = data["mutants"]
    if mutants is not None:
        mutants = {k: v for k, v in mutants.items() if k != "runs"}   # per-run rows stay there
    now = datetime.datetime.now(datetime.timezone.utc)
    date = args.date or now.strftime("%Y-%m-%d")
    doc = {
        "schema_version": SCHEMA_VERSION,
        "date": date,
        "generated": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git": git_info(),
        "sources": {k: (rel(p) if data[k] is not None else None) for k, p in paths.items()},
        "summary": {"grid": grid_summary(grid), "fuzz": fuzz_summary(data["fuzz"])},
        "grid": grid, "fuzz": data["fuzz"], "mutants": mutants, "bench": data["bench"],
        "coverage": data["coverage"], "nightly": data["nightly"],
    }
    texts = {"report.json": json.dumps(doc, indent=1) + "\n", "report.md": render_md(doc),
             "report.html": render_html(doc)}
    os.makedirs(args.out, exist_ok=True)
    for name, text in texts.items():
        tmp = os.path.join(args.out, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(args.out, name))
    s = doc["summary"]["grid"]
    print(f"render: {s['cells']} cells, {s['passed']} pass, {s['failed']} fail; "
          f"fuzz={'yes' if data['fuzz'] else 'no'} mutants={'yes' if mutants else 'no'} "
          f"bench={'yes' if data['bench'] else 'no'} coverage={'yes' if data['coverage'] else 'no'}"
          f" -> {rel(args.out)}/report.{{md,json,html}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
