#!/usr/bin/env python3
"""steps.py — run a list of check steps the way `make test` and `.ci/run`
report them: each step's output goes to a log, the terminal gets one line
per step (what it proved, how long it took), a progress line every 10 s of
a long step, the end of the log when a step fails, and one verdict line
covering every step.

    steps.py [--title T] [--logs DIR] [--junit FILE] NAME=COMMAND...

A step is a shell command.  A step named with a trailing '!' (build!=...)
waits for the steps before it and stops the run when it fails (nothing
after it can pass); one with a trailing '&' (suites&=...) runs beside the
steps after it.  The others all run, one after the other, so the verdict
names every failure at once.  Each step gets
STEP_XML=<logs>/<name>.xml in its environment: a step that writes a JUnit
file there (Criterion's --xml) has its test cases folded into --junit,
which also holds one test case per step.

The one-line summary of a step is read from its output: Criterion's
synthesis line, `attnguard check`'s tally, the replay drivers' tallies,
else the step's last line.  Exit status: 0 when every step passed.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

HEARTBEAT_S = 10

CRITERION_RE = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| "
                          r"Crashing: (\d+)")
CHECK_RE = re.compile(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?(?:, (\d+) not run)?\s*$")
REPLAY_RE = re.compile(r"replay: (\d+) inputs, (\d+) passed, (\d+) failed")
VERDICT_RE = re.compile(r"^\S[^:]*: ((?:PASS|FAIL) in \d+ s: .*)$", re.M)


def plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summarize(text, ok):
    """What a step's output says it proved (or, failed, what broke), in a
    few words."""
    m = VERDICT_RE.findall(text)   # a nested runner (make test under make ci)
    if m:
        return m[-1]
    m = CRITERION_RE.findall(text)
    if m:
        tested, passing = (sum(int(x[i]) for x in m) for i in (0, 1))
        # --verbose lists the tests a --filter left out as "disabled": not skips
        skipped = len(re.findall(r"^\[SKIP\] (?!.*: Test is disabled$)", text, re.M))
        bad = sorted(set(re.findall(r"^\[FAIL\] (\S+): \(", text, re.M)))
        return (f"{passing}/{tested} tests passed"
                + (f", {tested - passing} failed ({', '.join(bad)})" if tested > passing else "")
                + (f", {skipped} skipped (reasons in the log)" if skipped else ""))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        m = CHECK_RE.match(ln)
        if m:
            passed, failed, skipped = int(m[1]), int(m[2]), int(m[3] or 0)
            not_run = int(m[4] or 0)
            bad = re.findall(r"^(\S+)  FAIL", text, re.M)
            return (f"{plural(passed, 'case')} passed"
                    + (f", {failed} failed ({', '.join(bad)})" if failed else "")
                    + (f", {skipped} skipped (reasons in the log)" if skipped else "")
                    + (f", {not_run} not run" if not_run else ""))
    if not ok:
        for ln in lines:
            if re.search(r"ORACLE|FAILED|FAIL\b|error:|Error \d", ln):
                return ln.strip()[:200]
    m = REPLAY_RE.findall(text)
    if m:
        n, good = sum(int(x[0]) for x in m), sum(int(x[1]) for x in m)
        return (f"{n} corpus inputs replayed over {plural(len(m), 'target')}, "
                + ("all passed" if n == good else f"{n - good} failed"))
    return lines[-1].strip()[:200] if lines else "no output"


def run_step(name, cmd, logdir):
    log = os.path.join(logdir, name + ".log")
    xml = os.path.join(logdir, name + ".xml")
    if os.path.exists(xml):
        os.unlink(xml)
    env = dict(os.environ, STEP_XML=xml)
    t0 = time.time()
    done = threading.Event()

    def heartbeat():
        while not done.wait(HEARTBEAT_S):
            print(f"  {name}: running, {time.time() - t0:.0f} s", flush=True)
    hb = threading.Thread(target=heartbeat, daemon=True)
    with open(log, "w") as out:
        hb.start()
        rc = subprocess.call(cmd, shell=True, stdout=out, stderr=subprocess.STDOUT, env=env,
                             stdin=subprocess.DEVNULL)
        done.set()
    secs = time.time() - t0
    text = open(log, errors="replace").read()
    return {"name": name, "cmd": cmd, "rc": rc, "secs": secs, "log": log,
            "summary": summarize(text, rc == 0), "text": text, "xml": xml if os.path.exists(xml) else None}


def junit(path, title, results):
    root = ET.Element("testsuites", name=title)
    suite = ET.SubElement(root, "testsuite", name=title, tests=str(len(results)),
                          failures=str(sum(r["rc"] != 0 for r in results)),
                          time=f"{sum(r['secs'] for r in results):.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=title, name=r["name"],
                             time=f"{r['secs']:.3f}")
        if r["rc"] != 0:
            f = ET.SubElement(case, "failure", message=f"exit status {r['rc']}: {r['summary']}")
            f.text = "\n".join(r["text"].splitlines()[-60:])
        ET.SubElement(case, "system-out").text = f"{r['cmd']}\n{r['summary']}\nlog: {r['log']}"
    for r in results:
        if not r["xml"]:
            continue
        try:
            sub = ET.parse(r["xml"]).getroot()
        except ET.ParseError as e:
            print(f"steps: {r['xml']}: not JUnit XML ({e}); left out", file=sys.stderr)
            continue
        for s in ([sub] if sub.tag == "testsuite" else sub.findall("testsuite")):
            # Criterion lists the suites a --filter left out as all disabled
            if s.get("disabled") is not None and s.get("disabled") == s.get("tests"):
                continue
            s.set("name", f"{r['name']}/{s.get('name', '')}")
            root.append(s)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def report(title, r, lock):
    with lock:
        if r["rc"] == 0:
            print(f"{title}: {r['name']}: {r['summary']} ({r['secs']:.1f} s)", flush=True)
            return
        print(f"{title}: {r['name']}: FAILED, exit status {r['rc']} ({r['secs']:.1f} s): "
              f"{r['summary']}")
        print(f"---- end of {r['log']} ----")
        print("\n".join(r["text"].splitlines()[-40:]))
        print("----", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--title", default="test")
    ap.add_argument("--logs", default="build/test-logs")
    ap.add_argument("--junit", default=None)
    ap.add_argument("steps", nargs="+", metavar="NAME=COMMAND")
    a = ap.parse_args()
    os.makedirs(a.logs, exist_ok=True)
    steps = []
    for s in a.steps:
        name, sep, cmd = s.partition("=")
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)([!&]?)", name)
        if not sep or not m:
            ap.error(f"bad step '{s}' (NAME=COMMAND, NAME!=... or NAME&=...)")
        steps.append((m[1], cmd, m[2]))

    # A '&' step runs beside the steps after it; a '!' step waits for every
    # step before it and stops the run when it fails.
    t0, results, stopped, lock = time.time(), {}, None, threading.Lock()
    background = []

    def run(name, cmd):
        results[name] = r = run_step(name, cmd, a.logs)
        report(a.title, r, lock)
        return r

    for name, cmd, mode in steps:
        if mode == "!":
            for th in background:
                th.join()
            background = []
        if mode == "&":
            th = threading.Thread(target=run, args=(name, cmd))
            th.start()
            background.append(th)
            continue
        r = run(name, cmd)
        if mode == "!" and r["rc"] != 0:
            stopped = name
            break
    for th in background:
        th.join()
    done = [results[n] for n, _, _ in steps if n in results]
    if a.junit:
        junit(a.junit, a.title, done)
    failed = [r["name"] for r in done if r["rc"] != 0]
    skipped = [n for n, _, _ in steps if n not in results]
    passed = [r["name"] for r in done if r["rc"] == 0]
    wall = time.time() - t0
    if failed:
        print(f"{a.title}: FAIL in {wall:.0f} s: failed {', '.join(failed)}"
              + (f"; not run after {stopped}: {', '.join(skipped)}" if skipped else "")
              + (f"; passed {', '.join(passed)}" if passed else "")
              + f" (logs in {a.logs}/)")
        return 1
    print(f"{a.title}: PASS in {wall:.0f} s: " + "; ".join(
        f"{r['name']} ({r['summary']})" for r in done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
