#!/usr/bin/env python3
"""mutants.py — measure the harness: build each injected historical bug,
fuzz it with several seeds from the shipped corpus and from an empty corpus,
and record whether, how fast and by which oracle it was caught; then run the
same campaign on the normal build, where every finding is a false alarm.

Every run goes through the fuzz launcher (scripts/fuzzkit.py: the target's
.options flags, the classifier).  Writes <out>.json and <out>.md (default
build/mutants.*) and exits non-zero if any bug escapes a run from the
shipped corpus or from an empty one, or the normal build reports anything.

    scripts/mutants.py                          # full campaign (nightly)
    scripts/mutants.py --bugs model_wide_heads --seeds 2 --time 20   # quick
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import fuzzkit

ROOT = fuzzkit.ROOT



def read_bugs():
    """The injected bugs, from their one list (src/inject_list.h):
    name -> (engine it is fuzzed through, file, what it models)."""
    text = open(os.path.join(ROOT, "src", "inject_list.h")).read()
    rows = re.findall(r'X\((\w+), (\w+), "([^"]+)", "([^"]+)"\)', text)
    if not rows:
        sys.exit("mutants: no X(...) rows in src/inject_list.h")
    return {name: (engine, where, what) for name, engine, where, what in rows}


BUGS = read_bugs()


def kernel_table_of(bug):
    """The kernel table a bug's file belongs to ('avx512' for
    src/kernels/avx512_inl.h), or None for a file outside the kernels: the
    tables are the src/kernels/table_<name>.c files, and a kernel file
    belongs to the longest table name its own name starts with."""
    where = BUGS[bug][1]
    if not where.startswith("src/kernels/"):
        return None
    tables = [f[len("table_"):-2] for f in os.listdir(os.path.join(ROOT, "src", "kernels"))
              if f.startswith("table_") and f.endswith(".c")]
    base = os.path.basename(where)
    fits = [t for t in tables if base.startswith(t)]
    return max(fits, key=len) if fits else None


def tables_here():
    """The kernel tables the fuzzing builds reach on this CPU, natively or
    through an emulated twin (mk/isa.mk's names): make's own list (make
    fuzz-tables) under this environment, so that FUZZ_EMU_TABLES= (make
    mutants-quick) is seen."""
    out = subprocess.run(["make", "-s", "-C", ROOT, "--no-print-directory", "fuzz-tables"],
                         capture_output=True, text=True, check=True)
    return sorted(set(out.stdout.split()))


def engines_here():
    """The engines built into the CLI (`attnguard engines`: one line per
    engine, its name first, then its variants indented)."""
    out = subprocess.run([fuzzkit.cli_path(), "engines"], capture_output=True, text=True)
    return {line.split()[0] for line in out.stdout.splitlines()
            if line and not line[0].isspace()}


def not_here(bug, here):
    """Why a bug cannot run on this CPU (its kernel table is not among
    those the engine offers here), or None."""
    t = kernel_table_of(bug)
    if t is None or t in here:
        return None
    return f"needs the {t} kernels; this CPU offers {', '.join(here)}"

print_lock = threading.Lock()


def log(msg):
    with print_lock:
        print(msg, flush=True)


def fuzz_dir(bug):
    return os.path.join(ROOT, "build", "fuzz" + (f"-inject-{bug}" if bug else ""))


def build(bug, logdir):
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, f"build-{bug or 'normal'}.log")
    cmd = ["make", "-C", ROOT, "--no-print-directory", f"-j{os.cpu_count() or 1}", "fuzz-build"]
    if bug:
        cmd.append(f"INJECT={bug}")
    t0 = time.time()
    with open(path, "w") as f:
        rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT)
    if rc != 0:
        sys.exit(f"mutants: building {bug or 'the normal build'} failed, see {path}")
    log(f"mutants: built {bug or 'normal'} in {time.time() - t0:.0f} s")


def one_run(bug, target, mode, seed, cap, workroot, engine):
    """Fuzz one (bug, mode, seed) until the first finding or the cap, through
    the launcher; the finding is named by the C classifier."""
    name = f"{bug or 'normal'}/{target}/{mode}-{seed}"
    root = os.path.join(workroot, bug or "normal", target, f"{mode}-{seed}")
    shutil.rmtree(root, ignore_errors=True)
    seeds = [os.path.join(ROOT, "corpus", target)] if mode == "corpus" else []
    r = fuzzkit.fuzz_run(fuzz_dir(bug), target, root, cap, seed=seed, seeds=seeds,
                         engine=engine)
    r.run()
    f = fuzzkit.finding_of(r)
    execs = fuzzkit.stats(r.log)["execs"] or 0
    res = {
        "bug": bug or "normal", "target": target, "mode": mode, "seed": seed,
        "input": killing_input(f, seeds) if f else None,
        "detected": f is not None, "time_s": f["time_s"] if f else None,
        "execs": execs, "oracle": f["oracle"] if f else None,
        "artifact": f["artifact"] if f else None, "exit": r.rc,
    }
    verdict = (f"DETECTED in {f['time_s']:.1f} s / {execs} execs by {f['oracle']}" if f
               else f"not detected in {cap} s ({execs} execs)")
    log(f"  {name:55s} {verdict}")
    return res


def killing_input(f, seed_dirs):
    """'corpus' when the first killing input is byte for byte a file of the
    shipped corpus the run started from, 'new' when the fuzzer made it,
    None when the finding left no input (a setup error)."""
    art = f.get("artifact")
    if not art or not os.path.isfile(art) or art.endswith(".log"):
        return None
    data = open(art, "rb").read()
    for d in seed_dirs:
        for name in os.listdir(d) if os.path.isdir(d) else []:
            p = os.path.join(d, name)
            if os.path.isfile(p) and os.path.getsize(p) == len(data) and \
                    open(p, "rb").read() == data:
                return "corpus"
    return "new"


def summarize(runs, bug):
    mine = [r for r in runs if r["bug"] == bug]
    det = [r for r in mine if r["detected"]]
    times = sorted(r["time_s"] for r in det)
    oracles = sorted({r["oracle"] for r in det})
    by_mode = {}
    for mode in sorted({r["mode"] for r in mine}):
        rs = [r for r in mine if r["mode"] == mode]
        ds = sorted(r["time_s"] for r in rs if r["detected"])
        by_mode[mode] = {
            "runs": len(rs), "detected": len(ds),
            "median_s": round(statistics.median(ds), 2) if ds else None,
            "max_s": round(max(ds), 2) if ds else None,
        }
    return {
        "bug": bug, "what": BUGS[bug][2] if bug in BUGS else "normal build (false alarms)",
        "runs": len(mine), "detected": len(det),
        "rate": round(len(det) / len(mine), 3) if mine else 0.0,
        "median_s": round(statistics.median(times), 2) if times else None,
        "max_s": round(max(times), 2) if times else None,
        "oracles": oracles, "by_mode": by_mode,
        "first_input": {k: sum(1 for r in det if r.get("input") == k) for k in ("corpus", "new")},
    }


def write_reports(out, args, runs, summaries, normal, elapsed, command, unreachable, here):
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    doc = {
        "command": command, "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "seeds": args.seeds, "cap_s": args.time, "modes": args.modes,
        "targets": args.targets, "elapsed_s": round(elapsed, 1),
        "bugs": summaries, "normal": normal, "runs": runs,
        "not_measured": unreachable, "tables": here,
    }
    with open(out + ".json", "w") as f:
        json.dump(doc, f, indent=2)
    lines = [
        "# Mutant campaign",
        "",
        f"Command: `{command}`  ",
        f"Date: {doc['date']}; seeds {args.seeds}; cap {args.time} s per run; "
        f"modes {', '.join(args.modes)}; targets {', '.join(args.targets)}; "
        f"wall time {elapsed / 60:.1f} min.  ",
        f"attnguard's kernel tables here: {', '.join(here)}"
        + (" (an @emu table runs the AVX-512 kernels on SIMDe: the bugs in them are "
           "reached through it)" if any("@" in h for h in here) else "") + ".",
        "",
        "Time-to-detect is the wall time of the fuzzing process from start to its first "
        "finding (corpus loading included).",
        "",
        "| bug | what it models | detected | median s | max s | "
        + " | ".join(f"{m}: det / median s" for m in args.modes)
        + " | first killing input: corpus / new | oracle |",
        "|---|---|---|---|---|" + "---|" * len(args.modes) + "---|---|",
    ]
    for s in summaries:
        cells = []
        for m in args.modes:
            bm = s["by_mode"].get(m)
            cells.append(f"{bm['detected']}/{bm['runs']} / {bm['median_s']}" if bm else "-")
        lines.append(
            f"| `{s['bug']}` | {s['what']} | {s['detected']}/{s['runs']} | {s['median_s']} | "
            f"{s['max_s']} | " + " | ".join(cells)
            + f" | {s['first_input']['corpus']} / {s['first_input']['new']}"
            + f" | {', '.join(s['oracles'])} |")
    for b, why in sorted(unreachable.items()):
        lines.append(f"| `{b}` | {BUGS[b][2]} | not measured here: {why} | | |"
                     + " |" * len(args.modes) + " | |")
    if normal:
        lines += ["", f"Normal build: {normal['detected']} findings in {normal['runs']} runs "
                  "(every finding here would be a false alarm)."]
    lines += ["", "## Runs", "",
              "| bug | target | mode | seed | detected | s | execs | killing input | oracle |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lines.append(f"| {r['bug']} | {r['target']} | {r['mode']} | {r['seed']} | "
                     f"{'yes' if r['detected'] else 'no'} | {r['time_s'] or ''} | {r['execs']} | "
                     f"{r.get('input') or ''} | {r['oracle'] or ''} |")
    with open(out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bugs", default="",
                    help="comma list (default: every bug of every engine built in, or of "
                         "--engine)")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--time", type=int, default=60, help="cap per run, seconds")
    ap.add_argument("--modes", default="corpus,empty")
    ap.add_argument("--targets", default="fuzz_attention")
    ap.add_argument("--empty-bugs", default="all",
                    help="bugs also fuzzed from an empty corpus (comma list or 'all')")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-normal", action="store_true", help="skip the false-alarm campaign")
    ap.add_argument("--engine", default=None,
                    help="only this engine's bugs, and its normal build for false alarms "
                         "(default: each bug through its own engine; normal runs on attnguard)")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "mutants"))
    args = ap.parse_args()
    engine = args.engine or "attnguard"   # the normal build's engine
    built = engines_here()
    args.bugs = [b for b in args.bugs.split(",") if b] or \
        [b for b, (e, _, _) in BUGS.items() if args.engine in (None, e)]
    args.modes = [m for m in args.modes.split(",") if m]
    args.targets = [t for t in args.targets.split(",") if t]
    empty_bugs = set(BUGS) if args.empty_bugs == "all" else set(args.empty_bugs.split(","))
    for b in args.bugs:
        if b not in BUGS:
            sys.exit(f"mutants: unknown bug '{b}' (known: {', '.join(BUGS)})")
        if args.engine and BUGS[b][0] != args.engine:
            sys.exit(f"mutants: {b} sits in {BUGS[b][1]}, fuzzed through engine "
                     f"{BUGS[b][0]}, not {args.engine}")
    command = "scripts/mutants.py " + " ".join(sys.argv[1:])
    workroot = os.path.join(ROOT, "build", "mutants-runs")
    t_start = time.time()

    # A bug in a kernel table this CPU cannot run is reported as such, not
    # fuzzed: no input can reach it here, and a miss would say nothing.
    here = tables_here()
    unreachable = {b: (f"engine {BUGS[b][0]} is not built in (make engines)"
                       if BUGS[b][0] not in built else
                       not_here(b, here) if BUGS[b][0] == "attnguard" else None)
                   for b in args.bugs}
    unreachable = {b: why for b, why in unreachable.items() if why}
    for b, why in unreachable.items():
        log(f"mutants: {b}: not measured on this machine ({why})")
    args.bugs = [b for b in args.bugs if b not in unreachable]

    plan = []
    for bug in args.bugs:
        for target in args.targets:
            for mode in args.modes:
                if mode == "empty" and bug not in empty_bugs:
                    continue
                for seed in range(1, args.seeds + 1):
                    plan.append((bug, target, mode, seed))
    normal_plan = [] if args.no_normal else [
        (None, t, m, s) for t in args.targets for m in args.modes
        for s in range(1, args.seeds + 1)]
    log(f"mutants: {len(args.bugs)} bugs, {len(plan)} mutant runs + {len(normal_plan)} "
        f"normal runs, cap {args.time} s, {args.jobs} at a time")

    runs = []
    for bug in args.bugs + ([None] if normal_plan else []):
        build(bug, workroot)
        todo = [p for p in (plan if bug else normal_plan) if p[0] == bug]
        log(f"mutants: fuzzing {bug or 'normal build'} ({len(todo)} runs)")
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            runs += list(ex.map(lambda p: one_run(*p, args.time, workroot,
                                                  BUGS[p[0]][0] if p[0] else engine), todo))

    summaries = [summarize(runs, b) for b in args.bugs]
    normal = summarize(runs, "normal") if normal_plan else None
    elapsed = time.time() - t_start
    write_reports(args.out, args, runs, summaries, normal, elapsed, command, unreachable, here)

    # The gate: every run catches its bug, from the shipped corpus and from
    # an empty one alike (a bug the fuzzer cannot find from nothing within
    # the cap is a defect of the generator, not a bug to exclude).
    escaped = [s["bug"] for s in summaries
               if any(bm["detected"] < bm["runs"] for bm in s["by_mode"].values())]
    missed_empty = [s["bug"] for s in summaries
                    if s["by_mode"].get("empty", {}).get("detected", 0)
                    < s["by_mode"].get("empty", {}).get("runs", 0)]
    empty_times = sorted(r["time_s"] for r in runs
                         if r["mode"] == "empty" and r["bug"] != "normal" and r["detected"])
    if empty_times:
        log(f"mutants: from an empty corpus: {len(empty_times)} runs detected, median "
            f"{statistics.median(empty_times):.1f} s, max {empty_times[-1]:.1f} s")
    false_alarms = normal["detected"] if normal else 0
    log("")
    for s in summaries:
        log(f"mutants: {s['bug']:22s} {s['detected']}/{s['runs']} detected, median "
            f"{s['median_s']} s, max {s['max_s']} s, by {', '.join(s['oracles']) or '-'}")
    if normal:
        log(f"mutants: normal build: {false_alarms} false alarms in {normal['runs']} runs")
    log(f"mutants: wrote {args.out}.md and {args.out}.json ({elapsed / 60:.1f} min)")
    if missed_empty:
        log(f"mutants: not found from an empty corpus within the cap: {', '.join(missed_empty)}")
    if escaped or false_alarms:
        log(f"mutants: FAIL: escaped {escaped or 'none'}, false alarms {false_alarms}")
        return 1
    log("mutants: every injected bug detected in every run; no false alarms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
