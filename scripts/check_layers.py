#!/usr/bin/env python3
"""check_layers.py — the include graph keeps the house's floors apart.

Rules (docs/design.md, "Repository"):
  1. the ABI is the only door: nothing under harness/, fuzz/, reports/ or
     bench/ includes a file under src/, except the target that fuzzes
     attnguard's own C API (fuzz/fuzz_api.c);
  2. engines/ never includes harness/ (an adapter knows the ABI only);
  3. the harness's rooms include only downwards: case <- host <- judge <-
     cli (case includes no other room; host only case; judge case and
     host; cli any);
  4. no file-level include cycle inside harness/;
  5. the contract fuzz targets' shared files (fuzz/contract/) know no
     engine (nothing under engines/ or fuzz/<engine>/), an engine's
     target rooms (fuzz/<engine>/) include no other engine's, and their
     room headers include only downwards: <e>_case.h <- <e>_run.h <-
     <e>_judge.h, as the harness's rooms.

Prints one line per breach and exits 1, else one summary line.  Reads the
sources as text: `#include "..."` paths are resolved against the including
file's folder (system includes are not followed).
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ROOMS = ["case", "host", "judge", "cli"]           # in order: each may include those before
FUZZ_ROOMS = ["case", "run", "judge"]              # fuzz/<engine>/<engine>_<room>.h, in order
DOOR_EXCEPTIONS = {"fuzz/fuzz_api.c"}


def sources():
    for top in ("harness", "fuzz", "reports", "bench", "engines"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def includes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        text = f.read()
    for m in INCLUDE.finditer(text):
        target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
        if os.path.exists(os.path.join(ROOT, target)):
            yield target


def room(path):
    parts = path.split(os.sep)
    return parts[1] if len(parts) > 2 and parts[0] == "harness" else None


def fuzz_room(path):
    """(engine folder, room) of a file under fuzz/<engine>/ (room None
    unless it is one of the room headers), "contract" for the shared
    folder, else None."""
    parts = path.split(os.sep)
    if len(parts) != 3 or parts[0] != "fuzz":
        return None
    return parts[1], next((r for r in FUZZ_ROOMS if parts[2] == f"{parts[1]}_{r}.h"), None)


def main():
    breaches, edges = [], {}
    for src in sources():
        top = src.split(os.sep)[0]
        for inc in includes(src):
            edges.setdefault(src, []).append(inc)
            into = inc.split(os.sep)[0]
            if into == "src" and top in ("harness", "fuzz", "reports", "bench") \
                    and src not in DOOR_EXCEPTIONS:
                breaches.append(f"{src} includes {inc}: the harness reaches engines only "
                                "through include/attnguard/engine.h")
            if top == "engines" and into == "harness":
                breaches.append(f"{src} includes {inc}: an adapter knows the ABI only")
            fa, fb = fuzz_room(src), fuzz_room(inc)
            if fa and fa[0] == "contract" and (into == "engines" or (fb and fb[0] != "contract")):
                breaches.append(f"{src} includes {inc}: the contract targets' shared files "
                                "know no engine")
            if fa and fb and "contract" not in (fa[0], fb[0]) and fa[0] != fb[0]:
                breaches.append(f"{src} includes {inc}: one engine's fuzz rooms include "
                                "no other engine's")
            if fa and fb and fa[0] == fb[0] and fa[1] and fb[1] \
                    and FUZZ_ROOMS.index(fb[1]) > FUZZ_ROOMS.index(fa[1]):
                breaches.append(f"{src} includes {inc}: fuzz room {fa[1]} may not include "
                                f"room {fb[1]} (order: {' <- '.join(FUZZ_ROOMS)})")
            a, b = room(src), room(inc)
            if a and b and a != b and a in ROOMS and b in ROOMS \
                    and ROOMS.index(b) > ROOMS.index(a):
                breaches.append(f"{src} includes {inc}: room {a} may not include room {b} "
                                f"(order: {' <- '.join(ROOMS)})")
    # cycles among harness files (iterative DFS, colours)
    colour, stack = {}, []
    for start in sorted(n for n in edges if n.startswith("harness" + os.sep)):
        if colour.get(start):
            continue
        work = [(start, iter(edges.get(start, [])))]
        colour[start] = 1
        stack.append(start)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                work.pop()
                continue
            if not nxt.startswith("harness" + os.sep):
                continue
            if colour.get(nxt) == 1:
                cyc = stack[stack.index(nxt):] + [nxt]
                breaches.append("include cycle: " + " -> ".join(cyc))
            elif not colour.get(nxt):
                colour[nxt] = 1
                stack.append(nxt)
                work.append((nxt, iter(edges.get(nxt, []))))
    for b in breaches:
        print("layers: " + b)
    if breaches:
        return 1
    n = sum(len(v) for v in edges.values())
    print(f"layers: {n} includes in {len(edges)} files: the ABI is the only door, "
          f"rooms {' <- '.join(ROOMS)}, no cycle; fuzz rooms {' <- '.join(FUZZ_ROOMS)}, "
          "shared contract files engine-free")
    return 0


if __name__ == "__main__":
    sys.exit(main())
