#!/usr/bin/env python3
"""fuzzkit.py — the one fuzz launcher: `make fuzz`, `make corpus-merge`, the
mutant campaign (scripts/mutants.py) and the nightly job (scripts/nightly.sh,
scripts/nightly_triage.py) all start libFuzzer through it.

    fuzzkit.py run   --targets "a b" --time 60 [--jobs 2] [--weights a=2]
                     [--seed N] [--fork N --keep-going] [--bin-dir D] [--root R]
                     [--seeds DIR]... [--engine NAME] [--inject BUG]
    fuzzkit.py merge --targets "a b" --into ROOT --from ROOT... [--bin-dir D]

Owns: the command line of a libFuzzer run (the target's flags come from
<bin-dir>/<target>.options through `attnguard fuzz-flags`, campaign flags
after them), its environment (sanitizer options, ATTNGUARD_ENGINE), the
watchdog, reading libFuzzer's statistics, scheduling targets over the cores,
the progress lines and the summary (text and <root>/summary.json).  It does
not classify crashes itself: `attnguard classify` (harness/cli/repro_verdict.c,
the classifier behind `attnguard repro`) names every finding.  It builds
nothing and writes only under --root (and --into for merge).

A run's files: <root>/corpus/<target>/ (new inputs; the shipped corpus and
--seeds folders are read only), <root>/artifacts/<target>/ (crashes),
<root>/logs/<target>.log, <root>/summary.json, and <root>/attnguard-engine.txt:
the engine the session ran on (`attnguard engines --record`), which
`attnguard repro`, `show` and `check` follow for any file under <root>.  A
root may hold `{engine}`: it is replaced by the record's key (the engine's
name, and for an adapter object a hash of its bytes), so that each engine,
and each build of one, has a session folder of its own.

Exit status of `run`: 0 no finding, 1 a finding, 2 setup error (missing
binary, a run that failed without a report), 130 interrupted.
"""
import argparse
import configparser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.environ.get("ATTNGUARD_CLI", os.path.join(ROOT, "build", "attnguard"))
FINDING_PREFIXES = ("crash-", "leak-", "timeout-", "oom-")
PROGRESS_S = 5
# A target whose differential left more than this share of the elements it
# compared unjudged says so in the summary (docs/fuzzing.md, "Unjudged").
UNJUDGED_FLAG_PCT = 5.0
# The capability-skip line of a target names its most frequent reasons.
SKIP_REASONS_SHOWN = 8

# Sanitizer options every run gets (a caller's own settings come first and
# lose to nothing but ours: the dedup token keeps -minimize_crash on the
# same crash, DESIGN §6).
ASAN_OPTIONS = "dedup_token_length=3:print_summary=1:detect_leaks=1:symbolize=1"
UBSAN_OPTIONS = "print_stacktrace=1:report_error_type=1:halt_on_error=1"


# ------------------------------------------------------------ the tools --

def cli_path():
    if not os.access(CLI, os.X_OK):
        sys.exit(f"fuzzkit: {CLI} is missing (make {os.path.relpath(CLI, ROOT)})")
    return CLI


def target_flags(bin_dir, target):
    """The libFuzzer flags of <bin_dir>/<target>.options (attnguard fuzz-flags)."""
    path = os.path.join(bin_dir, target + ".options")
    p = subprocess.run([cli_path(), "fuzz-flags", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"fuzzkit: {p.stderr.strip() or 'fuzz-flags failed on ' + path}")
    return p.stdout.split("\n")[:-1]


def exec_goal(bin_dir, target):
    """The exec/s goal in the [attnguard] section of <target>.options (not a
    libFuzzer flag: attnguard fuzz-flags reads only [libfuzzer]), or None."""
    cp = configparser.ConfigParser()
    try:
        cp.read(os.path.join(bin_dir, target + ".options"))
        return cp.getint("attnguard", "exec_per_s_goal", fallback=None)
    except (configparser.Error, ValueError):
        return None


def flag_value(flags, key):
    for f in flags:
        if f.startswith(f"-{key}="):
            return f.split("=", 1)[1]
    return None


def classify(logs, status=None):
    """`attnguard classify` over log files: one dict per log (kind "" = none)."""
    if not logs:
        return []
    cmd = [cli_path(), "classify"] + (["--status", str(status)] if status is not None else [])
    p = subprocess.run(cmd + list(logs), capture_output=True)
    if p.returncode == 2:
        sys.exit(f"fuzzkit: attnguard classify: {p.stderr.decode(errors='replace').strip()}")
    return [json.loads(line) for line in p.stdout.decode(errors="replace").splitlines()]


def classify_one(log, status=None):
    return classify([log], status)[0]


RECORD_FILE = "attnguard-engine.txt"   # harness/cli/engine_record.h's ENGINE_RECORD_FILE


def engine_record(engine):
    """The record of the engine the targets will drive (`attnguard engines
    --record`: $ATTNGUARD_ENGINE and its options when engine is None), as
    (text, {key: value})."""
    p = subprocess.run([cli_path(), "engines", "--record"] + ([engine] if engine else []),
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"fuzzkit: {p.stderr.strip() or 'attnguard engines --record failed'}")
    return p.stdout, parse_record(p.stdout)


def parse_record(text):
    """A record's `key = value` lines as a dict ('#' lines are comments)."""
    return {k.strip(): v.strip() for k, _, v in
            (ln.partition("=") for ln in text.splitlines() if "=" in ln
             and not ln.lstrip().startswith("#"))}


def resolve_root(path, rec):
    """A session path with `{engine}` replaced by the engine record's key."""
    return path.replace("{engine}", rec["key"]) if path else path


def recorded_engine(root):
    """The engine record in a session folder as {key: value}, or None."""
    try:
        with open(os.path.join(root, RECORD_FILE)) as f:
            return parse_record(f.read())
    except OSError:
        return None


def keep_record(root, text, rec):
    """Writes the engine record into the session folder, saying so when the
    folder held another engine's inputs (a fixed --root used for two)."""
    os.makedirs(root, exist_ok=True)
    path = os.path.join(root, RECORD_FILE)
    old = recorded_engine(root)
    if old and old.get("key") != rec["key"]:
        print(f"fuzz: note: {root} held the inputs of engine {old.get('name')} "
              f"({old.get('engine')}, {old.get('build')}); they now count as {rec['name']}'s",
              flush=True)
    with open(path, "w") as f:
        f.write(text)


def run_env(engine=None, reach=None):
    env = dict(os.environ)
    for k, ours in (("ASAN_OPTIONS", ASAN_OPTIONS), ("UBSAN_OPTIONS", UBSAN_OPTIONS)):
        env[k] = ":".join(x for x in (env.get(k), ours) if x)
    if engine:
        env["ATTNGUARD_ENGINE"] = engine
    if reach:
        env["ATTNGUARD_REACH"] = reach   # the target's reach table (harness/judge/reach.h)
    return env


# ------------------------------------------------------ libFuzzer's logs --

STATUS_RE = re.compile(r"^#(\d+):?\s+(?:[A-Z]+\s+)?cov: (\d+) ft: (\d+) corp: (\d+)\S*"
                       r"(?:.*?exec/s:? (\d+))?(?:.*?time: (\d+)s)?")
FINAL_RE = re.compile(r"^stat::(number_of_executed_units|average_exec_per_sec):\s*(\d+)")
ARTIFACT_RE = re.compile(r"Test unit written to (\S+)")


def stats(log):
    """The latest figures of a libFuzzer log (plain or -fork): execs, exec/s,
    cov, ft, corpus, time_s; final stat:: lines win; None where absent."""
    st = dict(execs=None, exec_per_s=None, cov=None, ft=None, corpus=None, time_s=None)
    try:
        f = open(log, errors="replace")
    except OSError:
        return st
    final = {}
    with f:
        for line in f:
            m = STATUS_RE.match(line)
            if m:
                st.update(execs=int(m[1]), cov=int(m[2]), ft=int(m[3]), corpus=int(m[4]))
                if m[5]:
                    st["exec_per_s"] = int(m[5])
                if m[6]:
                    st["time_s"] = int(m[6])
                continue
            m = FINAL_RE.match(line)
            if m:
                final[m[1]] = int(m[2])
    if "number_of_executed_units" in final:
        st["execs"] = final["number_of_executed_units"]
    if "average_exec_per_sec" in final:
        st["exec_per_s"] = final["average_exec_per_sec"]
    return st


def artifacts_in(log):
    """Crash files libFuzzer wrote, in order (slow units are not findings)."""
    try:
        text = open(log, errors="replace").read()
    except OSError:
        return []
    return [a for a in ARTIFACT_RE.findall(text)
            if os.path.basename(a).startswith(FINDING_PREFIXES)]


# ---------------------------------------------------------------- a run --

class Run:
    """One libFuzzer process: `binary flags extra corpus...` with the log in
    `log`.  budget (s): -max_total_time; the watchdog stops the process
    (SIGINT, then SIGKILL) budget + timeout + 5 s after its start."""

    def __init__(self, binary, flags, extra, dirs, log, budget=None, engine=None, reach=None):
        self.cmd = [binary] + list(flags) + list(extra) + list(dirs)
        self.log, self.budget, self.engine, self.reach = log, budget, engine, reach
        t = flag_value(flags, "timeout")
        self.grace = (int(t) if t and t.isdigit() else 0) + 5
        self.proc = None
        self.rc = None
        self.hang = self.cancelled = False
        self.start = self.end = None

    def run(self):
        os.makedirs(os.path.dirname(self.log) or ".", exist_ok=True)
        self.start = time.time()
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         env=run_env(self.engine, self.reach))
            if self.cancelled:   # interrupted while starting
                self.proc.send_signal(signal.SIGINT)
            limit = None if self.budget is None else self.budget + self.grace
            try:
                self.rc = self.proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                self.hang = True
                self.proc.send_signal(signal.SIGINT)
                try:
                    self.rc = self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.rc = self.proc.wait()
        self.end = time.time()
        return self.rc

    def interrupt(self):
        self.cancelled = True
        if self.proc and self.rc is None:
            try:
                self.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass

    def wall(self):
        return ((self.end or time.time()) - self.start) if self.start else 0.0


def run_input(binary, flags, path, log, extra=(), budget=0, engine=None):
    """The target on one input in a fresh process (with `extra` flags, e.g.
    -minimize_crash=1, and `budget` seconds for them); returns the exit
    status."""
    return Run(binary, flags, extra, [path], log, budget=budget, engine=engine).run()


def fuzz_run(bin_dir, target, root, secs, seed=None, seeds=(), fork=0, keep_going=False,
             engine=None, extra=()):
    """The Run that fuzzes one target for `secs` into root's corpus/,
    artifacts/ and logs/ (not started: call .run())."""
    work = os.path.join(root, "corpus", target)
    arts = os.path.join(root, "artifacts", target)
    os.makedirs(work, exist_ok=True)
    os.makedirs(arts, exist_ok=True)
    os.makedirs(os.path.join(root, "reach"), exist_ok=True)
    # Order matters: libFuzzer keeps the last value of a flag, so the
    # campaign's flags come after the .options ones.
    camp = [f"-max_total_time={secs}", "-print_final_stats=1", f"-artifact_prefix={arts}/"]
    if seed is not None:
        camp.append(f"-seed={seed}")
    if fork:
        camp.append(f"-fork={fork}")
    if keep_going:
        camp += ["-ignore_crashes=1", "-ignore_timeouts=1", "-ignore_ooms=1"]
    dirs = [work] + [d for d in seeds if os.path.isdir(d)]
    return Run(os.path.join(bin_dir, target), target_flags(bin_dir, target), camp + list(extra),
               dirs, os.path.join(root, "logs", target + ".log"), budget=secs, engine=engine,
               reach=os.path.join(root, "reach", target + ".json"))


# ---------------------------------------------------------- reach table --

def reach_rows(root, targets):
    """{target: {"execs": N, "rows": {row: count}}} from the targets' reach
    files (harness/judge/reach.c writes them as they run)."""
    out = {}
    for t in targets:
        path = os.path.join(root, "reach", t + ".json")
        try:
            with open(path) as f:
                out[t] = json.load(f)
        except (OSError, ValueError):
            pass
    return out


def unjudged_shares(reach):
    """{target: {"elems", "open", "pct", "rows", "rows_open", "reasons": {reason:
    [elems, rows]}, "flag"}} from the reach files' "judged" figures (targets
    that compared nothing are left out)."""
    out = {}
    for t, doc in sorted(reach.items()):
        j = doc.get("judged") or {}
        elems = j.get("elems") or 0
        if not elems:
            continue
        reasons = {k: v for k, v in (j.get("open") or {}).items() if v and v[0]}
        opened = sum(v[0] for v in reasons.values())
        pct = 100.0 * opened / elems
        out[t] = {"elems": elems, "open": opened, "pct": round(pct, 3),
                  "rows": j.get("rows"), "rows_open": j.get("rows_open"),
                  "reasons": reasons, "flag": pct > UNJUDGED_FLAG_PCT}
    return out


def print_unjudged(shares):
    """One line per target: the share of compared elements the reference
    left open, and why; HIGH past UNJUDGED_FLAG_PCT."""
    if not shares:
        return
    print(f"\nunjudged (elements the differential compared but left open; HIGH: over "
          f"{UNJUDGED_FLAG_PCT:g} %):")
    for t, u in shares.items():
        why = ", ".join(f"{k} {v[0]} ({v[1]} rows)" for k, v in sorted(u["reasons"].items()))
        print(f"  {t:<20} {u['open']} of {u['elems']} elements ({u['pct']:.3g} %), "
              f"{u['rows_open']} of {u['rows']} rows" + (f": {why}" if why else "")
              + ("  HIGH" if u["flag"] else ""))


def print_reach(reach):
    """The reach table: one line per row, a column per target; a row that
    stayed at zero is marked (a blind spot of the generator)."""
    if not reach:
        return []
    targets = sorted(reach)
    rows = sorted({r for t in targets for r in reach[t].get("rows", {})})
    print("\nreach (executions that reached each feature and engine path; ZERO: never):")
    print("  " + f"{'row':<46}" + "".join(f"{t:>16}" for t in targets))
    zero = []
    for r in rows:
        counts = [reach[t].get("rows", {}).get(r) for t in targets]
        mark = "  ZERO" if all(not c for c in counts) else ""
        if mark:
            zero.append(r)
        print("  " + f"{r:<46}" + "".join(f"{fmt(c, 16)}" for c in counts) + mark)
    print(f"  {len(rows)} rows, {len(zero)} never reached" + (f": {', '.join(zero)}" if zero else ""))
    return zero


def finding_of(r, interrupted=False):
    """The finding of a finished fuzz_run, or None: named by the C
    classifier; a watchdog stop is a hang; a non-zero exit without any
    report is a setup error (kind starts with "failure(")."""
    arts = artifacts_in(r.log)
    if not arts and (r.rc == 0 or interrupted):
        return None
    v = classify_one(r.log, r.rc)
    kind = v.get("kind") or ""
    if r.hang and not arts:
        kind = "hang"
    st = stats(r.log)
    return {"oracle": kind or "unknown", "artifact": arts[0] if arts else r.log,
            "artifacts": len(arts), "time_s": round(r.wall(), 1), "execs": st["execs"],
            "frames": v.get("frames", []), "detail": v.get("detail") or v.get("error", "")}


# ------------------------------------------------------------ schedule --

def schedule(targets, weights, lanes, total):
    """Per lane, [(target, share_s)]: each target gets lanes*total core-seconds
    by weight (capped at total), targets go to the least-loaded lane, longest
    first, and each lane is scaled to exactly `total`."""
    lanes = max(1, min(lanes, len(targets)))
    wsum = sum(weights.get(t, 1) for t in targets)
    share = {t: min(total, lanes * total * weights.get(t, 1) / wsum) for t in targets}
    order = sorted(targets, key=lambda t: (-share[t], targets.index(t)))
    plan = [[] for _ in range(lanes)]
    load = [0.0] * lanes
    for t in order:
        best = min(range(lanes), key=lambda i: (load[i], i))
        plan[best].append(t)
        load[best] += share[t]
    return [[(t, share[t] * total / load[i]) for t in sorted(p, key=targets.index)]
            for i, p in enumerate(plan)]


def fmt(v, width):
    return f"{'-' if v is None else v:>{width}}"


def cmd_run(a):
    targets = a.targets.split()
    weights = {}
    for kv in a.weights.split():
        k, _, v = kv.partition("=")
        if not v.isdigit() or int(v) < 1:
            sys.exit(f"fuzzkit: bad weight '{kv}' (target=N, N >= 1)")
        weights[k] = int(v)
    for t in targets:
        if not os.access(os.path.join(a.bin_dir, t), os.X_OK):
            print(f"fuzzkit: no fuzzer binary {a.bin_dir}/{t} (run: make fuzz-build"
                  f"{' INJECT=' + a.inject if a.inject else ''})", file=sys.stderr)
            return 2
    plan = schedule(targets, weights, a.jobs, a.time)
    # One engine for the whole session, recorded in its folder.
    rec_text, rec = engine_record(a.engine)
    a.root = resolve_root(a.root, rec)
    a.record = rec
    if a.engine:
        a.engine = rec["engine"]   # the object by its absolute path
    keep_record(a.root, rec_text, rec)
    for t in targets:
        for old in (os.path.join(a.root, "logs", t + ".log"),
                    os.path.join(a.root, "reach", t + ".json")):
            try:
                os.unlink(old)
            except OSError:
                pass
        if a.empty:   # from nothing: no shipped corpus, no earlier session's inputs
            shutil.rmtree(os.path.join(a.root, "corpus", t), ignore_errors=True)
    os.makedirs(os.path.join(a.root, "reach"), exist_ok=True)
    what = (f" (mutant {a.inject})" if a.inject else "") + f", engine {engine_words(rec)}" \
        + (", from an empty corpus" if a.empty else "")
    print(f"fuzz: {a.time}s on {len(plan)} lane(s) from {a.bin_dir}{what}, seed "
          f"{a.seed if a.seed is not None else 'random'}" + (f", -fork={a.fork}" if a.fork else ""))
    for i, lane in enumerate(plan):
        print(f"fuzz: lane {i + 1}: " + " ".join(f"{t} ({s:.0f}s)" for t, s in lane))
    print(f"fuzz: logs in {a.root}/logs/, new inputs in {a.root}/corpus/, "
          f"crashes in {a.root}/artifacts/", flush=True)

    runs, stop, lock = {}, threading.Event(), threading.Lock()
    t0 = time.time()

    # A lane runs its targets one after another; one that stops early (a
    # finding) leaves its time to the ones after it.
    def lane_worker(lane):
        end = t0 + a.time
        for i, (t, share) in enumerate(lane):
            rest = sum(s for _, s in lane[i:])
            secs = max(1, round((end - time.time()) * share / rest))
            seeds = ([] if a.empty else [os.path.join(ROOT, "corpus", t)]) + \
                [os.path.join(s, t) for s in a.seeds]
            r = fuzz_run(a.bin_dir, t, a.root, secs, seed=a.seed, seeds=seeds, fork=a.fork,
                         keep_going=a.keep_going, engine=a.engine, extra=a.flags.split())
            with lock:
                if stop.is_set():
                    return
                runs[t] = r
            r.run()

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    threads = [threading.Thread(target=lane_worker, args=(lane,), daemon=True) for lane in plan]
    for th in threads:
        th.start()
    interrupted = False
    try:
        next_report = t0 + PROGRESS_S
        while any(th.is_alive() for th in threads):
            time.sleep(0.5)
            if time.time() < next_report:
                continue
            next_report += PROGRESS_S
            for t in targets:
                if t in runs and runs[t].rc is None:
                    st = stats(os.path.join(a.root, "logs", t + ".log"))
                    el = int(time.time() - t0)
                    if st["execs"] is None:
                        print(f"[{el:4d}s] {t:<16} loading the corpus", flush=True)
                    else:
                        print(f"[{el:4d}s] {t:<16} execs {st['execs']:<9} exec/s "
                              f"{fmt(st['exec_per_s'], 0):<6} cov {st['cov']:<6} ft "
                              f"{st['ft']:<7} corpus {st['corpus']}", flush=True)
    except KeyboardInterrupt:
        interrupted = True
        with lock:
            stop.set()
            for r in runs.values():
                r.interrupt()
        print("fuzz: interrupted; stopping the runs", flush=True)
    for th in threads:
        while th.is_alive():
            try:
                th.join()
            except KeyboardInterrupt:
                pass
    return summarize(a, targets, runs, time.time() - t0, interrupted)


def engine_words(rec):
    """"ggml", or "mine at /abs/libmine.so (build fnv1a64:...)"."""
    if rec["engine"] == rec["name"]:
        return rec["name"]
    return f"{rec['name']} at {rec['engine']} (build {rec['build']})"


def skip_shares(reach):
    """{target: {"execs", "skipped", "pct", "reasons"}}: the executions each
    target skipped because the case needs a capability the engine does not
    declare (the reach files' "skipped"), targets that skipped none left out."""
    out = {}
    for t, doc in sorted(reach.items()):
        sk = doc.get("skipped") or {}
        n, execs = sk.get("execs") or 0, doc.get("execs") or 0
        if n:
            out[t] = {"execs": execs, "skipped": n,
                      "pct": round(100.0 * n / execs, 2) if execs else None,
                      "reasons": sk.get("reasons") or {}}
    return out


def print_skips(shares):
    if not shares:
        return
    print("\ncapability skips (executions whose case needs what the engine does not declare: "
          "skipped, not judged):")
    for t, u in shares.items():
        top = sorted(u["reasons"].items(), key=lambda kv: -kv[1])
        why = ", ".join(f"{k} {v}" for k, v in top[:SKIP_REASONS_SHOWN])
        if len(top) > SKIP_REASONS_SHOWN:
            more = len(top) - SKIP_REASONS_SHOWN
            why += f", {more} more reason{'s' if more > 1 else ''} (summary.json)"
        pct = "-" if u["pct"] is None else f"{u['pct']:.3g} %"
        print(f"  {t:<20} {u['skipped']} of {u['execs']} execs ({pct})" + (f": {why}" if why else ""))


def summarize(a, targets, runs, wall, interrupted):
    rows, findings, errors = [], [], 0
    print(f"\nfuzz summary ({wall:.0f}s wall" + (f", mutant {a.inject}" if a.inject else "")
          + f", engine {engine_words(a.record)}):")
    if interrupted:
        print("  (interrupted: the numbers below are partial)")
    fmt_row = "{:<16} {:>6} {:>10} {:>8} {:>12} {:>7} {:>8} {:>7}  {}"
    print(fmt_row.format("target", "time", "execs", "exec/s", "goal", "cov", "ft", "corpus",
                         "findings"))
    for t in targets:
        r = runs.get(t)
        log = os.path.join(a.root, "logs", t + ".log")
        st = stats(log)
        secs = r.wall() if r else 0.0
        if st["exec_per_s"] is None and st["execs"] and secs:
            st["exec_per_s"] = round(st["execs"] / secs)
        if st["corpus"] is None:
            d = os.path.join(a.root, "corpus", t)
            st["corpus"] = len(os.listdir(d)) if os.path.isdir(d) else None
        found = []
        if r and a.keep_going:
            found = [{"oracle": None, "artifact": p, "time_s": None}
                     for p in sorted_artifacts(os.path.join(a.root, "artifacts", t))]
        elif r:
            f = finding_of(r, interrupted)
            if f:
                if f["oracle"].startswith("failure("):
                    errors += 1
                found = [f]
        findings += [(t, f) for f in found]
        note = (f"{len(found)} " + ", ".join(sorted({f['oracle'] or 'artifact' for f in found}))
                if found else "0")
        goal = exec_goal(a.bin_dir, t)
        eps = st["exec_per_s"]
        gnote = "-" if goal is None else f"{goal}" + (
            "" if eps is None else (" met" if eps >= goal else f" ({eps * 100 // goal}%)"))
        print(fmt_row.format(t, f"{secs:.0f}s", fmt(st["execs"], 0), fmt(eps, 0), gnote,
                             fmt(st["cov"], 0), fmt(st["ft"], 0), fmt(st["corpus"], 0), note))
        rows.append({"target": t, "started": round(r.start, 3) if r and r.start else None,
                     "time_s": round(secs, 1), "execs": st["execs"],
                     "exec_per_s": st["exec_per_s"], "exec_per_s_goal": goal,
                     "cov": st["cov"], "ft": st["ft"],
                     "corpus": st["corpus"], "exit_status": None if not r else r.rc,
                     "log": log, "findings": found})
    # How the core-seconds went, target by target (the shares of the
    # schedule, FUZZ_WEIGHTS, as they were actually spent).
    spent = sum(r["time_s"] for r in rows) or 1.0
    split = {r["target"]: round(100.0 * r["time_s"] / spent, 1) for r in rows}
    print("time split: " + ", ".join(f"{t} {r['time_s']:.0f}s ({split[t]:.0f} %)"
                                      for t, r in ((r["target"], r) for r in rows)))
    if findings and not a.keep_going:
        print("\nfindings by oracle:")
        for kind in sorted({f["oracle"] for _, f in findings}):
            print(f"  {kind}")
            for t, f in findings:
                if f["oracle"] == kind:
                    at = f" at {f['frames'][0]}" if f.get("frames") else ""
                    print(f"    {t}: first after {f['time_s']}s, {f['execs']} execs{at}: "
                          f"{f['artifact']}")
        print(f"\nreproduce: build/attnguard repro ARTIFACT{' --inject ' + a.inject if a.inject else ''}"
              f"   (prints the case, reruns it under ASan on engine {a.record['name']}, "
              f"as {os.path.join(a.root, RECORD_FILE)} records)")
    elif findings:
        print(f"\n{len(findings)} crash artifact(s) under {a.root}/artifacts/ (triage names them)")
    else:
        print("\nno findings.")
    reach = reach_rows(a.root, targets)
    zero = print_reach(reach)
    shares = unjudged_shares(reach)
    print_unjudged(shares)
    skips = skip_shares(reach)
    print_skips(skips)
    doc = {"fuzz_time": a.time, "wall_s": round(wall, 1), "inject": a.inject or "",
           "engine": a.record["name"], "engine_record": a.record, "skipped": skips,
           "seed": "random" if a.seed is None else str(a.seed),
           "interrupted": interrupted, "findings": len(findings), "targets": rows,
           "time_split_pct": split,
           "reach": reach, "reach_zero": zero,
           "unjudged": shares, "unjudged_high": [t for t, u in shares.items() if u["flag"]]}
    path = os.path.join(a.root, "summary.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"summary: {path}")
    # --keep-going: fuzzing went on past crashes; whether they are findings
    # is triage's call (scripts/nightly_triage.py).
    if findings and not a.keep_going:
        return 2 if errors == len(findings) else 1
    return 130 if interrupted else 0


def sorted_artifacts(d):
    if not os.path.isdir(d):
        return []
    paths = [os.path.join(d, n) for n in os.listdir(d) if n.startswith(FINDING_PREFIXES)]
    return sorted(paths, key=os.path.getmtime)


# ---------------------------------------------------------------- merge --

def cmd_merge(a):
    rc = 0
    _, rec = engine_record(a.engine)
    setattr(a, "from", [resolve_root(f, rec) for f in getattr(a, "from")])
    a.log_dir = resolve_root(a.log_dir, rec)
    for t in a.targets.split():
        into = os.path.join(a.into, t)
        srcs = [os.path.join(s, t) for s in getattr(a, "from") if os.path.isdir(os.path.join(s, t))]
        if not srcs:
            print(f"merge: {t}: nothing to merge (no {t}/ in {' '.join(getattr(a, 'from'))})")
            continue
        os.makedirs(into, exist_ok=True)
        before = len(os.listdir(into))
        log = os.path.join(a.log_dir or a.into, f"merge-{t}.log")
        r = Run(os.path.join(a.bin_dir, t), target_flags(a.bin_dir, t), ["-merge=1"],
                [into] + srcs, log, engine=rec["engine"] if a.engine else None)
        if r.run() == 0:
            after = len(os.listdir(into))
            print(f"merge: {t}: {into} {before} -> {after} files (+{after - before} from "
                  f"{' '.join(srcs)})")
        else:
            print(f"merge: {t}: libFuzzer -merge=1 failed, see {log}", file=sys.stderr)
            rc = 1
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--targets", required=True, help="space-separated (make's FUZZ_ALL)")
    common.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "fuzz"))
    common.add_argument("--engine", default=None, help="ATTNGUARD_ENGINE for the targets")
    r = sub.add_parser("run", parents=[common])
    r.add_argument("--time", type=int, default=60, help="wall seconds for the whole campaign")
    r.add_argument("--jobs", type=int, default=2, help="targets at a time (lanes)")
    r.add_argument("--weights", default="", help="time shares, e.g. 'fuzz_attention=2'")
    r.add_argument("--seed", type=int, default=None)
    r.add_argument("--fork", type=int, default=0, help="libFuzzer -fork workers per target")
    r.add_argument("--keep-going", action="store_true", help="-ignore_crashes/timeouts/ooms")
    r.add_argument("--flags", default="",
                   help="libFuzzer flags of the session's engine (mk/engines.mk's <e>_FUZZ_FLAGS), "
                        "after the campaign's")
    r.add_argument("--root", default=os.path.join(ROOT, "build", "fuzz-session"),
                   help="the session folder; {engine} in it: the engine record's key")
    r.add_argument("--seeds", action="append", default=[], help="extra read-only ROOT/<target>/")
    r.add_argument("--inject", default="", help="the mutant the binaries carry (for the record)")
    r.add_argument("--empty", action="store_true",
                   help="start from nothing: no shipped corpus, the session's corpus emptied")
    m = sub.add_parser("merge", parents=[common])
    m.add_argument("--into", required=True, help="ROOT whose <target>/ folders receive inputs")
    m.add_argument("--from", required=True, action="append", help="ROOT with <target>/ folders")
    m.add_argument("--log-dir", default=None)
    a = ap.parse_args()
    if a.cmd == "run":
        if a.time < 1 or a.jobs < 1:
            ap.error("--time and --jobs must be >= 1")
        return cmd_run(a)
    return cmd_merge(a)


if __name__ == "__main__":
    sys.exit(main())
