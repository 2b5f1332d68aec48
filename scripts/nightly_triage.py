#!/usr/bin/env python3
"""nightly_triage.py — the triage half of the nightly job (scripts/nightly.sh):
turn the crash artifacts of a fuzzing night into unique, reproducible,
issue-ready findings.

For every artifact (crash-*, timeout-*, oom-*, leak-* under
<fuzz-root>/artifacts/<target>/, written by `fuzzkit.py run --keep-going`):
  1. rerun it once in a fresh process and key it by the finding's kind and
     top 3 frames, both from `attnguard classify` (the C classifier behind
     `attnguard repro`); group equal keys per target;
  2. rerun up to 3 members of each group N-1 more times, each in a fresh
     process: the reproduction rate is failing runs with the same kind over
     all runs;
  3. minimise the smallest artifact of each group (-minimize_crash=1; the
     launcher's ASAN_OPTIONS keep dedup_token_length=3, so the same crash);
  4. write <nightly>/findings/<id>/: crash.bin (minimised when that worked),
     original.bin, the case text (`attnguard show`, else the raw bytes as
     crash.bin), the first reproduction log and issue.md;
and write <nightly>/findings/findings.json (schema: reports/schema.json,
$defs/nightly) and <nightly>/fuzz-summary.json (the launcher's summary with
each artifact's kind filled in).

Every run goes through scripts/fuzzkit.py (the target's .options flags, the
sanitizer options).  Never writes outside <nightly>/.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

import fuzzkit


# The engine the night's session ran on (its record, fuzzkit.py): every
# rerun and minimisation goes to that engine, not to $ATTNGUARD_ENGINE's.
ENGINE = None


def rerun(binary, flags, path, log):
    """(exit status, verdict) of the target on `path` in a fresh process."""
    rc = fuzzkit.run_input(binary, flags, path, log, engine=ENGINE)
    return rc, fuzzkit.classify_one(log, rc)


def first_line(v):
    if v.get("oracle"):
        return f"attnguard: ORACLE {v['kind']}: {v.get('detail', '')}"[:400]
    return (v.get("error") or v.get("summary") or "")[:400]


def minimize(binary, flags, rep, out, secs, runs, log):
    """-minimize_crash=1 on rep into out; True when out was written."""
    fuzzkit.run_input(binary, flags, rep, log, budget=secs, engine=ENGINE,
                      extra=["-minimize_crash=1", f"-runs={runs}", f"-max_total_time={secs}",
                             f"-exact_artifact_path={out}"])
    return os.path.isfile(out) and os.path.getsize(out) <= os.path.getsize(rep)


def issue_text(g, oracle, frames, case_file, case_text, mpath, rep, minimized, d, commit,
               inject):
    frames_md = "\n".join(f"{i + 1}. `{fr}`" for i, fr in enumerate(frames)) or "(none)"
    lines = [
        f"# [nightly] {oracle} in {g['target']}" + (f" at {frames[0]}" if frames else ""), "",
        f"Found by the nightly fuzzing job on commit `{commit}` "
        f"({time.strftime('%Y-%m-%d', time.gmtime())}).", "",
        f"- target: `{g['target']}`",
        f"- engine: `{ENGINE or 'attnguard'}` (recorded in `{fuzzkit.RECORD_FILE}` beside the "
        "findings: `attnguard repro` reruns there)",
        f"- oracle: `{oracle}`",
        f"- reproduced: {g['reproduced']}/{g['attempts']} fresh-process runs "
        f"over {len(g['members'])} artifact(s)",
        f"- input: `{case_file}` ({os.path.getsize(mpath)} bytes"
        f"{', minimised' if minimized else ', not minimised'}; original "
        f"{os.path.getsize(rep)} bytes)", "",
        "## First line of the report", "", "```", first_line(g["verdict"]) or "(none)", "```",
        "", "## Top frames (below the sanitizer / libFuzzer / oracle plumbing)", "",
        frames_md, "", "## Reproduce", "", "```",
        "make fuzz-build" + (f" INJECT={inject}" if inject else ""),
        f"build/attnguard repro {os.path.join(d, 'crash.bin')} --target {g['target']}"
        + (f" --inject {inject}" if inject else ""),
        "```", ""]
    if case_text:
        lines += ["## Case", "", "```", case_text.rstrip(), "```", ""]
    lines += ["## Artifacts grouped here", ""] + [f"- `{m}`" for m in g["members"]] + [""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nightly", default="build/nightly")
    ap.add_argument("--fuzz-root", default=None, help="default: <nightly>/fuzz")
    ap.add_argument("--bin-dir", default="build/fuzz")
    ap.add_argument("--inject", default="", help="the mutant the binaries carry")
    ap.add_argument("--targets", required=True, help="space-separated (make's FUZZ_ALL)")
    ap.add_argument("--repro", type=int, default=3, help="fresh-process reruns per artifact")
    ap.add_argument("--min-time", type=int, default=60, help="seconds of -minimize_crash")
    ap.add_argument("--min-runs", type=int, default=20000)
    ap.add_argument("--max-artifacts", type=int, default=200, help="per target")
    args = ap.parse_args()

    root = args.nightly
    froot = args.fuzz_root or os.path.join(root, "fuzz")
    fdir = os.path.join(root, "findings")
    shutil.rmtree(fdir, ignore_errors=True)
    os.makedirs(fdir)
    global ENGINE
    rec = fuzzkit.recorded_engine(froot)
    if rec:
        ENGINE = rec.get("engine") or None
        # the findings leave the session folder: their record goes with them
        shutil.copy(os.path.join(froot, fuzzkit.RECORD_FILE), fdir)
    logs = os.path.join(root, "logs", "triage")
    os.makedirs(logs, exist_ok=True)
    targets = args.targets.split()
    summary_path = os.path.join(froot, "summary.json")
    summary = json.load(open(summary_path)) if os.path.isfile(summary_path) else None
    started = {r["target"]: r.get("started") for r in (summary or {}).get("targets", [])}

    # ---- 1-2: key every artifact (first run), then reproduce per group ----
    groups, per_target, n_art = {}, {t: [] for t in targets}, 0
    for t in targets:
        binary = os.path.join(args.bin_dir, t)
        flags = fuzzkit.target_flags(args.bin_dir, t)
        arts = fuzzkit.sorted_artifacts(os.path.join(froot, "artifacts", t))
        if len(arts) > args.max_artifacts:
            print(f"triage: {t}: {len(arts)} artifacts, triaging the first {args.max_artifacts}")
            arts = arts[:args.max_artifacts]
        for a in arts:
            n_art += 1
            log = os.path.join(logs, f"{t}-{os.path.basename(a)}.log")
            rc, v = rerun(binary, flags, a, log)
            oracle = v.get("kind") or "unknown"
            if rc == 0:
                oracle = "not-reproduced:" + os.path.basename(a).split("-")[0]
            frames = tuple(v.get("frames", []))
            g = groups.setdefault((t, oracle, frames), {
                "target": t, "members": [], "reproduced": 0, "attempts": 0, "verdict": v,
                "log": log})
            g["members"].append(a)
            g["reproduced"] += rc != 0
            g["attempts"] += 1
            t0 = started.get(t)
            per_target[t].append({"oracle": oracle, "artifact": a,
                                  "time_s": round(os.path.getmtime(a) - t0, 1) if t0 else None})
    # The rest of the N fresh-process runs, for up to 3 members per group.
    for (t, oracle, frames), g in groups.items():
        binary = os.path.join(args.bin_dir, t)
        flags = fuzzkit.target_flags(args.bin_dir, t)
        for a in g["members"][:3]:
            for k in range(args.repro - 1):
                log = os.path.join(logs, f"{t}-{os.path.basename(a)}.rerun{k + 1}.log")
                rc, v = rerun(binary, flags, a, log)
                g["attempts"] += 1
                g["reproduced"] += rc != 0 and v.get("kind") == oracle
        print(f"triage: {t}: {oracle} [{' < '.join(frames)}]: {len(g['members'])} "
              f"artifact(s), reproduced {g['reproduced']}/{g['attempts']}")

    # ---- 3-4: minimise a representative, write the finding ----
    findings = []
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    for (t, oracle, frames), g in sorted(groups.items(), key=lambda kv: kv[0]):
        fid = hashlib.sha1((t + oracle + "|".join(frames)).encode()).hexdigest()[:10]
        fid = f"{t}-{re.sub(r'[^a-z0-9-]', '-', oracle.lower())}-{fid}"
        d = os.path.join(fdir, fid)
        os.makedirs(d)
        rep = min(g["members"], key=os.path.getsize)
        shutil.copy(rep, os.path.join(d, "original.bin"))
        binary = os.path.join(args.bin_dir, t)
        flags = fuzzkit.target_flags(args.bin_dir, t)
        mpath = os.path.join(d, "crash.bin")
        minimized = False
        if not oracle.startswith("not-reproduced") and oracle not in ("timeout", "hang"):
            if minimize(binary, flags, rep, mpath, args.min_time, args.min_runs,
                        os.path.join(d, "minimize.log")):
                rc2, v2 = rerun(binary, flags, mpath, os.path.join(d, "minimized.log"))
                minimized = rc2 != 0 and v2.get("kind") == oracle
        if not minimized:
            shutil.copy(rep, mpath)
        p = subprocess.run([fuzzkit.cli_path(), "show", "--target", t, mpath],
                           capture_output=True, text=True)
        case_text = p.stdout if p.returncode == 0 and p.stdout.strip() else None
        case_file = "crash.case" if case_text else "crash.bin"
        if case_text:
            with open(os.path.join(d, case_file), "w") as f:
                f.write(case_text)
        shutil.copy(g["log"], os.path.join(d, "repro.log"))
        with open(os.path.join(d, "issue.md"), "w") as f:
            f.write(issue_text(g, oracle, frames, case_file, case_text, mpath, rep, minimized,
                               d, commit, args.inject))
        findings.append({
            "id": fid, "target": t, "oracle": oracle, "frames": list(frames),
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

    # ---- the fuzzing summary, with each artifact named ----
    if summary is not None:
        for row in summary["targets"]:
            row["findings"] = per_target.get(row["target"], [])
        summary["findings"] = n_art
        with open(os.path.join(root, "fuzz-summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    print(f"triage: {n_art} artifact(s) -> {len(findings)} unique finding(s); "
          f"{os.path.join(fdir, 'findings.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
