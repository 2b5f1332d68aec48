#!/usr/bin/env python3
"""check_workflows.py WORKFLOW_DIR... — what actionlint cannot check in
attnguard's workflows and in the ClusterFuzzLite template for an engine's
own repository (examples/clusterfuzzlite/.github/workflows/); `make
lint-workflows` runs it after actionlint.

1. The inputs given to ClusterFuzzLite's actions exist.  actionlint knows
   the inputs of popular actions only; a misspelt `storage-repo-brach`
   would be ignored by the action without a word.  The lists below are the
   inputs the two actions' action.yml declare (google/clusterfuzzlite v1).
2. A workflow a pull request triggers never writes to the corpus storage:
   no `upload-build: true`, run_fuzzers only in mode code-change, and its
   storage address names the secret only behind the storage step's
   `access == 'token'` test.
3. The storage step of a cflite_pr.yml that has one (attnguard's: the
   shell script that decides how a pull request reads the storage
   repository; the template keeps its corpus in the workflow's
   artifacts and has none) is run here, the way the
   runner runs it (bash -e -o pipefail), against a local storage
   repository (GITHUB_SERVER_URL=file://...), for each case: a branch of
   this repository with the token, a fork whose storage it can read, a
   fork whose storage it cannot read, a branch without the secret, a
   deleted fork.  The address each case hands the actions must carry a
   token only in the first.

Prints one line per problem and a tally; exit 1 on any problem.
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

CFL_INPUTS = {
    "build_fuzzers": {"language", "dry-run", "allowed-broken-targets-percentage", "sanitizer",
                      "project-src-path", "bad-build-check", "storage-repo", "storage-repo-branch",
                      "storage-repo-branch-coverage", "upload-build", "github-token"},
    "run_fuzzers": {"language", "fuzz-seconds", "dry-run", "sanitizer", "mode", "github-token",
                    "storage-repo", "storage-repo-branch", "storage-repo-branch-coverage",
                    "report-unreproducible-crashes"},
}
CFL_REQUIRED = {"build_fuzzers": set(), "run_fuzzers": {"github-token"}}
CFL_USES = re.compile(r"^google/clusterfuzzlite/actions/(\w+)@")
# The one form in which a pull request's storage address may name the secret.
GUARDED = re.compile(r"^\$\{\{ steps\.storage\.outputs\.access == 'token' && format\('https://\{0\}@"
                     r"github\.com/\{1\}-fuzz-storage\.git', secrets\.CFLITE_STORAGE_TOKEN, "
                     r"github\.repository\) \|\| steps\.storage\.outputs\.url \}\}$")

problems = []


def problem(where, msg):
    problems.append(f"{where}: {msg}")


def triggers(wf):
    on = wf.get(True, wf.get("on"))   # YAML 1.1 reads the key `on` as true
    if isinstance(on, str):
        return {on}
    return set(on or ())


def check_cfl_steps(path, wf):
    pr = "pull_request" in triggers(wf) or "pull_request_target" in triggers(wf)
    for job_id, job in (wf.get("jobs") or {}).items():
        for i, step in enumerate(job.get("steps") or []):
            m = CFL_USES.match(str(step.get("uses", "")))
            if not m:
                continue
            where = f"{path}: job {job_id}, step {i + 1} ({m.group(1)})"
            action, given = m.group(1), step.get("with") or {}
            if action not in CFL_INPUTS:
                problem(where, f"unknown ClusterFuzzLite action {action}")
                continue
            for key in sorted(set(given) - CFL_INPUTS[action]):
                problem(where, f"input {key!r} is not one of {action}'s "
                               f"({', '.join(sorted(CFL_INPUTS[action]))})")
            for key in sorted(CFL_REQUIRED[action] - set(given)):
                problem(where, f"required input {key!r} is missing")
            if not pr:
                continue
            if str(given.get("upload-build", "false")).lower() == "true":
                problem(where, "a pull request's run uploads its build (upload-build: true)")
            if action == "run_fuzzers" and given.get("mode", "code-change") != "code-change":
                problem(where, f"a pull request's run is in mode {given.get('mode')!r}, which "
                               "writes to the storage; code-change mode only reads it")
            repo = given.get("storage-repo")
            if repo is not None and "secrets." in str(repo) and not GUARDED.match(str(repo)):
                problem(where, "storage-repo names a secret outside the storage step's "
                               "access == 'token' test (a fork's run would get https://@...)")


def storage_script(wf):
    for job in (wf.get("jobs") or {}).values():
        for step in job.get("steps") or []:
            if step.get("id") == "storage":
                return step.get("run")
    return None


def run_storage_case(script, tmp, name, head_repo, have_token, readable):
    """Runs the step as the runner would; returns (access, address handed
    to the actions) or None after recording a problem."""
    server = f"file://{tmp}/server"
    storage = f"{tmp}/server/owner/proj-fuzz-storage.git"
    subprocess.run(["rm", "-rf", storage], check=True)
    if readable:
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", storage], check=True)
    out = os.path.join(tmp, f"output-{name}")
    open(out, "w").close()
    env = dict(os.environ, GITHUB_SERVER_URL=server, GITHUB_REPOSITORY="owner/proj",
               GITHUB_OUTPUT=out, HEAD_REPO=head_repo, HAVE_TOKEN=have_token)
    r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        problem(f"storage step, {name}", f"exit {r.returncode}: {r.stderr.strip()}")
        return None
    outputs = dict(line.split("=", 1) for line in open(out).read().splitlines() if "=" in line)
    access, url = outputs.get("access"), outputs.get("url", "")
    # What the `storage-repo:` expression makes of the step's outputs.
    address = "https://TOKEN@github.com/owner/proj-fuzz-storage.git" if access == "token" else url
    return access, address, f"file://{storage}"


def check_storage_step(path, wf):
    script = storage_script(wf)
    if script is None:
        problem(path, "no step with id: storage")
        return
    cases = [  # name, HEAD_REPO, HAVE_TOKEN, storage readable, expected access
        ("branch with token", "owner/proj", "true", True, "token"),
        ("fork, public storage", "someone/proj", "false", True, "read-only"),
        ("fork, private storage", "someone/proj", "false", False, "none"),
        ("branch, secret unset", "owner/proj", "false", True, "read-only"),
        ("deleted fork", "", "false", True, "read-only"),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for name, head, token, readable, want in cases:
            got = run_storage_case(script, tmp, name, head, token, readable)
            if got is None:
                continue
            access, address, public = got
            if access != want:
                problem(f"{path}: storage step, {name}", f"access {access!r}, expected {want!r}")
            elif access == "read-only" and address != public:
                problem(f"{path}: storage step, {name}", f"address {address!r}, expected {public!r}")
            elif access == "none" and address:
                problem(f"{path}: storage step, {name}", f"address {address!r}, expected none")
            if access != "token" and "@" in address:
                problem(f"{path}: storage step, {name}", f"address {address!r} carries credentials")


def uses_storage_step(wf):
    """Whether any step's inputs read the storage step's outputs."""
    return "steps.storage." in yaml.safe_dump(wf)


def check_dir(d):
    files = sorted(f for f in os.listdir(d) if f.endswith((".yml", ".yaml")))
    for f in files:
        path = os.path.join(d, f)
        with open(path) as fh:
            wf = yaml.safe_load(fh)
        check_cfl_steps(path, wf)
        if f == "cflite_pr.yml" and (storage_script(wf) is not None or uses_storage_step(wf)):
            check_storage_step(path, wf)
    if "cflite_pr.yml" not in files:
        problem(d, "no cflite_pr.yml")
    return len(files)


def main(argv):
    if len(argv) < 2:
        print("usage: check_workflows.py WORKFLOW_DIR...", file=sys.stderr)
        return 2
    n = sum(check_dir(d) for d in argv[1:])
    for p in problems:
        print(p)
    print(f"check-workflows: {n} workflow file(s) in {len(argv) - 1} folder(s), "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
