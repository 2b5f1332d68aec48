#!/usr/bin/env python3
"""check_layers.py — the include and call graphs keep the house's floors apart.

Rules (docs/design.md, "Repository"):
  1. the ABI is the only door: nothing under harness/, fuzz/, reports/ or
     bench/ includes a file under src/, except the target that fuzzes
     attnguard's own C API (fuzz/fuzz_api.c);
  2. engines/ never includes harness/ (an adapter knows the ABI only);
  3. the harness's rooms include only downwards: util <- case <- host <-
     judge <- cli (util includes no other room; case only util; host util
     and case; ...; cli any);
  4. the contract fuzz targets' shared files (fuzz/contract/) know no
     engine (nothing under engines/ or fuzz/<engine>/), an engine's
     target rooms (fuzz/<engine>/) include no other engine's, and their
     room headers include only downwards: <e>_case.h <- <e>_run.h <-
     <e>_judge.h, as the harness's rooms;
  5. bench/ goes in layers that only reach downwards, each file named for
     its own: util_ <- report_ <- run_ <- main_ (the reports know nothing
     of running, the runners nothing of the command line; util_ is what
     every layer shares).  A file includes and calls only files of its
     layer or below, and no bench file lacks a layer;
  6. no include cycle between files in harness/, bench/ and src/kernels/,
     and no call cycle in bench/, src/kernels/ and harness/cli/ (a call: a file naming a
     function or variable another .c file of the folder defines with
     external linkage);
  7. src/kernels/: no private name (a macro, a static or inline function,
     a static variable, a typedef) is defined by the files of two kernel
     tables (ref and those of mk/isa.mk: a table's kernel, inline and
     table files); each table's carry its ISA, so that grep finds one.
  8. an example engine (examples/<name>/) is built from the installed kit
     only: no `#include "..."` leaves its folder, and only its adapter
     (*_adapter.c) includes the kit's headers (<attnguard/...>): the
     engine itself knows nothing of attnguard.

Prints one line per breach and exits 1, else one summary line.  Reads the
sources as text: `#include "..."` paths are resolved against the including
file's folder (system includes are not followed); calls and definitions
are read off the text with comments and strings removed, a file-level
approximation that needs no compiler.
"""
import functools
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
KIT_INCLUDE = re.compile(r'^\s*#\s*include\s*<attnguard/', re.M)
ROOMS = ["util", "case", "host", "judge", "cli"]   # in order: each may include those before
FUZZ_ROOMS = ["case", "run", "judge"]              # fuzz/<engine>/<engine>_<room>.h, in order
DOOR_EXCEPTIONS = {"fuzz/fuzz_api.c"}
BENCH_LAYERS = ["util", "report", "run", "main"]    # bench/<layer>_*.{c,h}, lowest first
CYCLE_FOLDERS = ["harness", "bench", os.path.join("src", "kernels")]   # no include cycle
CALL_FOLDERS = ["bench", os.path.join("src", "kernels"), os.path.join("harness", "cli")]   # no call cycle


def sources():
    for top in ("harness", "fuzz", "reports", "bench", "engines", os.path.join("src", "kernels")):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


@functools.lru_cache(maxsize=None)
def kernel_tables():
    """The kernel tables as mk/isa.mk lists them, plus the portable one,
    longest name first (a file belongs to the longest table name it starts
    with: avx512bf16_lanes.c to avx512bf16, not avx512)."""
    m = re.search(r'^KERNEL_TABLES\s*:=\s*(.*)$', read(os.path.join("mk", "isa.mk")), re.M)
    return sorted(m.group(1).split() + ["ref"], key=len, reverse=True)


COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def code(path):
    """The file's text without comments, strings and character literals
    (newlines kept, so that line starts stay line starts)."""
    return COMMENT_OR_STRING.sub(lambda m: "\n" * m.group(0).count("\n") or " ", read(path))


# a definition at the start of a line: "type name(args) {" or "type name[...] = " / "type name = "
EXTERN_DEF = re.compile(r'^(?!static\b|INLINE\b|typedef\b|extern\b|#)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)'
                        r'\s*(?:\([^;{}]*\)\s*\{|(?:\[[^\]]*\])*\s*=)', re.M)
PRIVATE_DEF = [
    re.compile(r'^\s*#\s*define\s+([A-Za-z_]\w*)', re.M),
    re.compile(r'^(?:static|INLINE)\b[\w \t*]*?\b([A-Za-z_]\w*)\s*(?:\(|\[|=)', re.M),
    re.compile(r'^typedef\b[^;{]*?(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})?\s*\**\s*\(?\s*\*?\s*([A-Za-z_]\w*)\s*[\);\[]', re.M),
]
WORD = re.compile(r'[A-Za-z_]\w*')


def bench_layer(path):
    """The layer of a file under bench/ (its name's prefix), "" for none;
    None outside bench/."""
    parts = path.split(os.sep)
    if len(parts) != 2 or parts[0] != "bench":
        return None
    return next((l for l in BENCH_LAYERS if parts[1].startswith(l + "_")), "")


def kernel_table(path):
    """The kernel table a file of src/kernels/ belongs to, None for the
    files every table shares (kernels.h, dtype.h, mask.h, ...)."""
    parts = path.split(os.sep)
    if parts[:2] != ["src", "kernels"]:
        return None
    name = parts[2][len("table_"):] if parts[2].startswith("table_") else parts[2]
    return next((t for t in kernel_tables() if name.startswith(t + "_") or name.startswith(t + ".")), None)


def call_edges(files):
    """file -> {file whose external symbols it names}, over the .c files
    given (one folder)."""
    cfiles = [f for f in files if f.endswith(".c")]
    owner = {}
    for f in cfiles:
        for m in EXTERN_DEF.finditer(code(f)):
            owner.setdefault(m.group(1), f)
    edges = {}
    for f in cfiles:
        for w in set(WORD.findall(code(f))):
            o = owner.get(w)
            if o and o != f:
                edges.setdefault(f, {})[o] = w
    return edges


def cycles(nodes, succ):
    """The cycles a depth-first walk meets (one per back edge), as lists."""
    colour, stack, found = {}, [], []
    for start in sorted(nodes):
        if colour.get(start):
            continue
        work = [(start, iter(sorted(succ(start))))]
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
            if nxt not in nodes:
                continue
            if colour.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif not colour.get(nxt):
                colour[nxt] = 1
                stack.append(nxt)
                work.append((nxt, iter(sorted(succ(nxt)))))
    return found


def includes(path):
    for m in INCLUDE.finditer(read(path)):
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


def example_breaches():
    """Rule 8, over every C file under examples/."""
    out = []
    top = os.path.join(ROOT, "examples")
    for d, _, files in os.walk(top):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            src = os.path.relpath(os.path.join(d, f), ROOT)
            home = os.sep.join(src.split(os.sep)[:2])
            with open(os.path.join(ROOT, src), encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in INCLUDE.finditer(text):
                target = os.path.normpath(os.path.join(os.path.dirname(src), m.group(1)))
                if not target.startswith(home + os.sep):
                    out.append(f"{src} includes \"{m.group(1)}\": an example is built from the "
                               "installed kit only (<attnguard/...> through pkg-config)")
            if KIT_INCLUDE.search(text) and not f.endswith("_adapter.c"):
                out.append(f"{src} includes <attnguard/...>: only an example's adapter "
                           "(*_adapter.c) knows attnguard, never its engine")
    return out


def main():
    breaches, edges = example_breaches(), {}
    files = sorted(sources())
    for src in files:
        top = src.split(os.sep)[0]
        if bench_layer(src) == "":
            breaches.append(f"{src}: a bench file's name says its layer "
                            f"({', '.join(l + '_' for l in reversed(BENCH_LAYERS))})")
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
            la, lb = bench_layer(src), bench_layer(inc)
            if la and lb and BENCH_LAYERS.index(lb) > BENCH_LAYERS.index(la):
                breaches.append(f"{src} includes {inc}: bench layer {la} may not include layer "
                                f"{lb} (order: {' <- '.join(BENCH_LAYERS)})")
    # include and call cycles inside each folder; calls up bench's layers
    n_calls = 0
    for folder in CYCLE_FOLDERS + [f for f in CALL_FOLDERS if f not in CYCLE_FOLDERS]:
        inside = {f for f in files if f.startswith(folder + os.sep)}
        for cyc in cycles(inside, lambda n: edges.get(n, []) if folder in CYCLE_FOLDERS else []):
            breaches.append("include cycle: " + " -> ".join(cyc))
        calls = call_edges(sorted(inside)) if folder in CALL_FOLDERS else {}
        n_calls += sum(len(v) for v in calls.values())
        for cyc in cycles(inside, lambda n: calls.get(n, {})):
            breaches.append("call cycle: " + " -> ".join(
                f"{a} ({calls[a][b]})" for a, b in zip(cyc, cyc[1:])) + " -> " + cyc[-1])
        for a, outs in sorted(calls.items()):
            for b, name in sorted(outs.items()):
                la, lb = bench_layer(a), bench_layer(b)
                if la and lb and BENCH_LAYERS.index(lb) > BENCH_LAYERS.index(la):
                    breaches.append(f"{a} calls {name} ({b}): bench layer {la} may not call "
                                    f"layer {lb} (order: {' <- '.join(BENCH_LAYERS)})")
    # the kernel tables' private names
    defined = {}
    for f in files:
        t = kernel_table(f)
        if t is None:
            continue
        text = code(f)
        guard = re.search(r'^\s*#\s*ifndef\s+(\w+)', text, re.M)
        for rx in PRIVATE_DEF:
            for m in rx.finditer(text):
                if guard and m.group(1) == guard.group(1):
                    continue
                defined.setdefault(m.group(1), {}).setdefault(t, f)
    for name, by in sorted(defined.items()):
        if len(by) > 1:
            breaches.append(f"src/kernels: {name} is defined by the files of "
                            + ", ".join(f"{t} ({f})" for t, f in sorted(by.items()))
                            + ": a table's private names carry its ISA")
    for b in breaches:
        print("layers: " + b)
    if breaches:
        return 1
    n = sum(len(v) for v in edges.values())
    print(f"layers: {n} includes in {len(edges)} files, {n_calls} calls between files: the ABI "
          f"is the only door, rooms {' <- '.join(ROOMS)}; fuzz rooms {' <- '.join(FUZZ_ROOMS)}, "
          f"shared contract files engine-free; bench {' <- '.join(BENCH_LAYERS)}; no include or "
          f"call cycle in {', '.join(CALL_FOLDERS)} (no include cycle in harness either); "
          "kernel tables' private names their own; examples from the installed kit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
