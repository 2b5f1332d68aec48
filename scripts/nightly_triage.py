#!/usr/bin/env python3
"""nightly_triage.py — the triage half of the nightly job (scripts/nightly.sh):
turn the crash artifacts of a fuzzing night into unique, reproducible,
issue-ready findings.

For every artifact (crash-*, timeout-*, oom-*, leak-* under
<nightly>/crashes/<target>/):
  1. run it once in a fresh process and key it by the oracle name (the
     `attnguard: ORACLE <name>:` line, else the sanitizer's or libFuzzer's
     error kind) plus the top 3 stack frames below
     the sanitizer/libFuzzer/abort/oracle plumbing (function@file:line);
     group equal keys per target;
  2. rerun up to 3 members of each group N-1 more times, each in a fresh
     process: the reproduction rate is failing runs with the same oracle over
     all runs;
  3. minimise the smallest artifact of each group (-minimize_crash=1 with
     ASAN_OPTIONS=dedup_token_length=3, which keeps the same crash);
  4. write <nightly>/findings/<id>/: crash.bin (minimised when that worked),
     original.bin, the case text (`attnguard show`, else the raw bytes as
     case.bin), the first reproduction log and issue.md;
and write <nightly>/findings/findings.json (schema: reports/schema.json,
$defs/nightly) and <nightly>/fuzz-summary.json (the shape of `make fuzz`'s
build/fuzz-summary.json) from the fuzzing logs.

Standard library only.  Never writes outside <nightly>/.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

ORACLE_RE = re.compile(r"attnguard: ORACLE ([A-Za-z0-9_-]+):")
SAN_RE = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                    r"ThreadSanitizer|MemorySanitizer)(?:: ?([A-Za-z0-9_-]+))?")
UBSAN_RE = re.compile(r"runtime error: ")
LIBFUZZER_RE = re.compile(r"ERROR: libFuzzer: ([a-z -]+)")
FRAME_RE = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (\S+)(?: (\S+))?")
STAT_RE = re.compile(r"^#(\d+):? .*?cov: (\d+) ft: (\d+) corp: (\d+)(?:/\S+)?"
                     r"(?: .*?exec/s:? (\d+))?(?: .*?time: (\d+)s)?")
# Frames that belong to the reporting machinery, not to the bug.
SKIP_PREFIX = ("__sanitizer", "__asan", "__ubsan", "__lsan", "__interceptor", "fuzzer::",
               "__pthread_kill", "pthread_kill", "__GI_", "__libc_", "__assert",
               "oracle_fire", "violation")
SKIP_EXACT = {"raise", "abort", "gsignal", "_start", "main", "__sigaction"}
FINDING_PREFIXES = ("crash-", "timeout-", "oom-", "leak-")


def run(cmd, env, timeout, log):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout)
        out, rc = p.stdout.decode(errors="replace"), p.returncode
    except OSError as e:
        out, rc = f"[nightly: cannot run {cmd[0]}: {e}]\n", -1
    except subprocess.TimeoutExpired as e:
        out, rc = (e.stdout or b"").decode(errors="replace") + "\n[nightly: killed after "\
            f"{timeout}s]\n", -9
    if log:
        with open(log, "w") as f:
            f.write(out)
    return rc, out, time.time() - t0


def classify(text):
    m = ORACLE_RE.search(text)
    if m:
        return m.group(1)
    m = SAN_RE.search(text)
    if m:
        return "asan:" + (m.group(2) or m.group(1)) if m.group(1) == "AddressSanitizer" \
            else m.group(1).lower() + (":" + m.group(2) if m.group(2) else "")
    if UBSAN_RE.search(text):
        return "ubsan"
    m = LIBFUZZER_RE.search(text)
    if m:
        return "libfuzzer:" + m.group(1).strip().replace(" ", "-")
    return "unknown"


def top_frames(text, n=3):
    frames = []
    for line in text.splitlines():
        m = FRAME_RE.match(line)
        if not m:
            if frames and not line.strip():
                break      # the first stack only
            continue
        fn = m.group(2)
        if fn.startswith(SKIP_PREFIX) or fn in SKIP_EXACT or fn.startswith("("):
            continue
        where = os.path.basename(m.group(3)) if m.group(3) else ""
        # file:line:col -> file:line (the column moves with unrelated edits)
        where = ":".join(where.split(":")[:2])
        frames.append(f"{fn}@{where}" if where else fn)
        if len(frames) == n:
            break
    return frames


def oracle_line(text):
    for line in text.splitlines():
        if "attnguard: ORACLE" in line or "ERROR: AddressSanitizer" in line \
                or "runtime error:" in line or "ERROR: libFuzzer" in line:
            return line.strip()[:400]
    return ""


def fuzz_env():
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "dedup_token_length=3:abort_on_error=1:symbolize=1:detect_leaks=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    return env


def fuzz_stats(log):
    """Last libFuzzer status line of a (fork mode) log."""
    st = {"execs": None, "cov": None, "ft": None, "corpus": None, "exec_per_s": None,
          "time_s": None}
    if not os.path.isfile(log):
        return st
    for line in open(log, errors="replace"):
        m = STAT_RE.match(line)
        if m:
            st.update(execs=int(m.group(1)), cov=int(m.group(2)), ft=int(m.group(3)),
                      corpus=int(m.group(4)))
            if m.group(5):
                st["exec_per_s"] = int(m.group(5))
            if m.group(6):
                st["time_s"] = int(m.group(6))
    if st["execs"] and st["time_s"]:
        st["exec_per_s"] = round(st["execs"] / max(1, st["time_s"]), 1)
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nightly", default="build/nightly")
    ap.add_argument("--bin-dir", default="build/fuzz")
    ap.add_argument("--cli", default="build/attnguard")
    ap.add_argument("--targets", default="fuzz_plan fuzz_attention fuzz_api")
    ap.add_argument("--repro", type=int, default=3, help="fresh-process reruns per artifact")
    ap.add_argument("--min-time", type=int, default=60, help="seconds of -minimize_crash")
    ap.add_argument("--min-runs", type=int, default=20000)
    ap.add_argument("--max-artifacts", type=int, default=200, help="per target")
    ap.add_argument("--fuzz-time", type=int, default=0)
    ap.add_argument("--fuzz-wall", type=float, default=None, help="wall seconds of fuzzing")
    args = ap.parse_args()

    root = args.nightly
    fdir = os.path.join(root, "findings")
    shutil.rmtree(fdir, ignore_errors=True)
    os.makedirs(fdir)
    logs = os.path.join(root, "logs", "triage")
    os.makedirs(logs, exist_ok=True)
    env = fuzz_env()
    targets = args.targets.split()

    # ---- 1-2: key every artifact (first run), then reproduce per group ----
    groups = {}
    n_art = 0
    per_target = {t: [] for t in targets}
    for t in targets:
        binary = os.path.join(args.bin_dir, t)
        arts = sorted((p for p in glob.glob(os.path.join(root, "crashes", t, "*"))
                       if os.path.basename(p).startswith(FINDING_PREFIXES)),
                      key=os.path.getmtime)
        if len(arts) > args.max_artifacts:
            print(f"triage: {t}: {len(arts)} artifacts, triaging the first "
                  f"{args.max_artifacts}")
            arts = arts[:args.max_artifacts]
        for a in arts:
            n_art += 1
            log = os.path.join(logs, f"{t}-{os.path.basename(a)}.log")
            rc, text, _ = run([binary, "-timeout=25", "-rss_limit_mb=2560", a], env, 300, log)
            oracle, frames = classify(text), top_frames(text)
            if rc == 0:
                oracle = "not-reproduced:" + os.path.basename(a).split("-")[0]
            key = (t, oracle, tuple(frames))
            g = groups.setdefault(key, {"target": t, "oracle": oracle, "frames": list(frames),
                                        "members": [], "reproduced": 0, "attempts": 0,
                                        "text": text})
            g["members"].append(a)
            g["reproduced"] += rc != 0
            g["attempts"] += 1
            start_file = os.path.join(root, "logs", f"fuzz-{t}.start")
            found_at = None
            if os.path.isfile(start_file):
                found_at = os.path.getmtime(a) - float(open(start_file).read().strip() or 0)
            per_target[t].append({"oracle": oracle, "artifact": a,
                                  "time_s": round(found_at, 1) if found_at is not None
                                  else None})
    # The rest of the N fresh-process runs, for up to 3 members per group.
    for (t, oracle, frames), g in groups.items():
        binary = os.path.join(args.bin_dir, t)
        for a in g["members"][:3]:
            for _ in range(args.repro - 1):
                rc, text, _ = run([binary, "-timeout=25", "-rss_limit_mb=2560", a], env, 300,
                                  None)
                g["attempts"] += 1
                g["reproduced"] += rc != 0 and classify(text) == oracle
        print(f"triage: {t}: {oracle} [{' < '.join(frames)}]: {len(g['members'])} "
              f"artifact(s), reproduced {g['reproduced']}/{g['attempts']}")

    # ---- 3-4: minimise a representative, write the finding ----
    findings = []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    for (_, oracle, frames), g in sorted(groups.items(), key=lambda kv: kv[0]):
        fid = hashlib.sha1((g["target"] + oracle + "|".join(frames)).encode()).hexdigest()[:10]
        fid = f"{g['target']}-{re.sub(r'[^a-z0-9-]', '-', oracle.lower())}-{fid}"
        d = os.path.join(fdir, fid)
        os.makedirs(d)
        rep = min(g["members"], key=os.path.getsize)
        shutil.copy(rep, os.path.join(d, "original.bin"))
        binary = os.path.join(args.bin_dir, g["target"])
        minimized = False
        mpath = os.path.join(d, "crash.bin")
        if not oracle.startswith("not-reproduced") and not oracle.startswith("libfuzzer:timeout"):
            rc, _, _ = run([binary, "-minimize_crash=1", f"-runs={args.min_runs}",
                            f"-max_total_time={args.min_time}", "-timeout=25",
                            "-rss_limit_mb=2560", f"-exact_artifact_path={mpath}", rep],
                           env, args.min_time + 120, os.path.join(d, "minimize.log"))
            if os.path.isfile(mpath) and os.path.getsize(mpath) <= os.path.getsize(rep):
                rc2, text2, _ = run([binary, "-timeout=25", "-rss_limit_mb=2560", mpath], env,
                                    300, None)
                minimized = rc2 != 0 and classify(text2) == oracle
        if not minimized:
            shutil.copy(rep, mpath)
        rc, case_text, _ = run([args.cli, "show", mpath], None, 60, None)
        if rc == 0 and case_text.strip():
            case_file = "crash.case"
            with open(os.path.join(d, case_file), "w") as f:
                f.write(case_text)
        else:
            case_file = "crash.bin"
            case_text = None
        with open(os.path.join(d, "repro.log"), "w") as f:
            f.write(g["text"])
        frames_md = "\n".join(f"{i + 1}. `{fr}`" for i, fr in enumerate(frames)) or "(none)"
        issue = [
            f"# [nightly] {oracle} in {g['target']}"
            + (f" at {frames[0]}" if frames else ""), "",
            f"Found by the nightly fuzzing job on commit `{commit}` "
            f"({time.strftime('%Y-%m-%d', time.gmtime())}).", "",
            f"- target: `{g['target']}`",
            f"- oracle: `{oracle}`",
            f"- reproduced: {g['reproduced']}/{g['attempts']} fresh-process runs "
            f"over {len(g['members'])} artifact(s)",
            f"- input: `{case_file}` ({os.path.getsize(mpath)} bytes"
            f"{', minimised' if minimized else ', not minimised'}; original "
            f"{os.path.getsize(rep)} bytes)", "",
            "## First line of the report", "", "```", oracle_line(g["text"]) or "(none)", "```",
            "", "## Top frames (below the sanitizer / libFuzzer / oracle plumbing)", "",
            frames_md, "", "## Reproduce", "", "```",
            "make fuzz-build",
            f"build/fuzz/{g['target']} -runs=1 {os.path.join(d, 'crash.bin')}",
            f"build/replay/replay_{g['target']} {os.path.join(d, 'crash.bin')}   # without libFuzzer",
            "```", ""]
        if case_text:
            issue += ["## Case", "", "```", case_text.rstrip(), "```", ""]
        issue += ["## Artifacts grouped here", ""] + [f"- `{m}`" for m in g["members"]] + [""]
        with open(os.path.join(d, "issue.md"), "w") as f:
            f.write("\n".join(issue))
        findings.append({
            "id": fid, "target": g["target"], "oracle": oracle, "frames": frames,
            "reproduced": g["reproduced"], "attempts": g["attempts"],
            "artifacts": len(g["members"]), "minimized": minimized,
            "size": os.path.getsize(mpath), "summary": os.path.join(d, "issue.md"),
        })
        print(f"triage: finding {fid}: {len(g['members'])} artifact(s), reproduced "
              f"{g['reproduced']}/{g['attempts']}, minimised={minimized}")

    doc = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": commit,
           "artifacts": n_art, "findings": findings}
    with open(os.path.join(fdir, "findings.json"), "w") as f:
        json.dump(doc, f, indent=1)

    # ---- the fuzzing summary, in make fuzz's shape ----
    tlist = []
    for t in targets:
        st = fuzz_stats(os.path.join(root, "logs", f"fuzz-{t}.log"))
        tlist.append({"target": t, "time_s": st["time_s"], "execs": st["execs"],
                      "exec_per_s": st["exec_per_s"], "cov": st["cov"], "ft": st["ft"],
                      "corpus": st["corpus"], "log": os.path.join(root, "logs", f"fuzz-{t}.log"),
                      "findings": per_target[t]})
    summary = {"fuzz_time": args.fuzz_time, "wall_s": args.fuzz_wall, "inject": "", "seed": "random", "interrupted": False,
               "findings": n_art, "targets": tlist}
    with open(os.path.join(root, "fuzz-summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"triage: {n_art} artifact(s) -> {len(findings)} unique finding(s); "
          f"{os.path.join(fdir, 'findings.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
