#!/usr/bin/env python3
"""malformed.py — the malformed-input gate (issue 61): a generated corpus of
bad input through every door of the CLI, built with ASan+UBSan and run with
leak detection on; every run must end with a status, no sanitizer report
and no signal.

    malformed.py --cli build/v-.../attnguard --adapter build/v-.../libag_broken.so
                 [--out build/malformed] [--seed 61] [--jobs 2]

What it generates (deterministically from --seed, into --out; nothing is
committed):
  - text cases: every integer key and layer field at int32's ends and past
    them, floats past float's range, NaN and inf, dtypes, splits, requests
    lists with empty and absurd items, truncations, byte flips, duplicate
    and unknown keys, NUL bytes, invalid UTF-8, a 1 MiB line, escape
    sequences in keys and values;
  - byte inputs: random strings, truncations and flips of the shipped
    corpus, and strings of the byte grammar's invalid and extreme forms;
  - broken adapter tables: every entry point the registry requires (read
    from engines/registry.c's AG_REQUIRED_ENTRIES) NULL in turn, optional
    ones NULL, a wrong version either way, a table of an old shorter
    layout, one cut short, no name, no table, no entry point, no object.
What it runs: `show` and `check` on every text case, `show --target T` on
every byte input for every fuzz target (fuzz/fuzz_*.c), `check` on their
decodings, `check --engine` on every broken table, `repro` on inputs it
must refuse.  A run passes when it exits 0, 1 or 2 (the CLI's statuses)
within its time limit, every file it was given got an answer (a verdict,
a case, a message naming the file), and its stderr holds no sanitizer
report.  `check` runs with a small compute budget (ATTNGUARD_MAX_WORK) so
that the runaway cases among them end with their NOT RUN at once.
Exit status 0 when every run passed; the failures are listed otherwise.
"""
import argparse
import concurrent.futures
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "LeakSanitizer has encountered", "Tracer caught signal",
                   "SUMMARY: UndefinedBehaviorSanitizer", "AddressSanitizer:DEADLYSIGNAL",
                   "SUMMARY: AddressSanitizer", "broken_adapter:")
# a sanitizer's exit status, told apart from the CLI's 0, 1 and 2
ASAN_EXIT, UBSAN_EXIT = 97, 98
SAN_ENV = {
    "ASAN_OPTIONS": f"detect_leaks=1:halt_on_error=1:abort_on_error=0:exitcode={ASAN_EXIT}",
    "UBSAN_OPTIONS": f"halt_on_error=1:print_stacktrace=1:exitcode={UBSAN_EXIT}",
    "LSAN_OPTIONS": f"exitcode={ASAN_EXIT}",   # + --lsan-options
}
# check's compute budget here: the generated cases are tiny, the runaway
# ones among them must end with their NOT RUN, not run
MAX_WORK = "2e7"
BATCH = 40           # files per process
TIMEOUT_S = 300      # per process: a run past it ended with no status

I32_MIN, I32_MAX = -2**31, 2**31 - 1
INTS = [str(I32_MIN), str(I32_MIN + 1), "-2", "-1", "0", "1", "3", str(I32_MAX - 1), str(I32_MAX),
        str(2**31), str(-2**31 - 1), str(2**32), str(2**63 - 1), str(-2**63), str(2**64),
        "99999999999999999999999", "1e3", "0x10", "+5", "007", "", "NaN", "inf", "1.5", "--1",
        "1 2", "\x1b[31m5"]
FLOATS = ["1e308", "-1e308", "1e39", "-1e39", "3.4028235e38", "3.4028236e38", "1e-50", "-1e-50",
          "1e-45", "1e-46", "nan", "-nan", "inf", "-inf", "infinity", "0", "-0", "2^127",
          "2^128", "2^-149", "2^-150", "0x1p128", "0x1p-160", "1e", "e5", "", "1,5", "2^x"]
DTYPES = ["f32", "bf16", "fp8e4m3", "q4_0", "f64", "F32", "-1", "11", "127", "-128", str(I32_MIN),
          str(I32_MAX), "99999999999", ""]
BASES = [
    "name = mbase\nkv_heads = 2\nhead_dim = 16\nrequests = 1x8\nlayer.0 = heads=4\n",
    "name = mrich\nkv_heads = 2\nhead_dim = 32\nblock_size = 8\ndtype = bf16\nthreads = 2\n"
    "split = 3\nseed = 0x61\nrequests = 2x9, 1x5n, 1x12c\n"
    "layer.0 = heads=4 window=4 softcap=30 alibi=[0.5,0.25,0.125,0.0625] sinks=seeded\n"
    "layer.1 = heads=4 left=3 right=0 scale=0.125\n",
    "name = mfp8\nkv_heads = 1\nhead_dim = 16\nkv_dtype = fp8e4m3\nq_values = normal 2\n"
    "requests = 1x6\nlayer.0 = heads=2 k_scale=0.5 v_scale=2^-4\n",
]
SCALAR_INT_KEYS = ["model_num_heads", "kv_heads", "head_dim", "block_size", "threads", "causal",
                   "last_block_full", "seed", "split"]
LAYER_INT_FIELDS = ["heads", "window", "left", "right"]
LAYER_FLOAT_FIELDS = ["softcap", "scale", "k_scale", "v_scale"]


def set_key(text, key, value):
    """text with `key = value` (replacing the key's line, else appended)."""
    lines = [ln for ln in text.splitlines() if not ln.startswith(key + " =")]
    return "\n".join(lines + [f"{key} = {value}"]) + "\n"


def text_cases(rng):
    """[(stem, bytes)] of malformed and edge texts."""
    out = []
    base = BASES[0]

    def add(kind, text):
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        out.append((f"{kind}-{len(out):04d}", data))

    for key in SCALAR_INT_KEYS:
        for v in INTS:
            add("int", set_key(base, key, v))
    for f in LAYER_INT_FIELDS:
        for v in INTS:
            add("layer-int", set_key(base, "layer.0", f"heads=4 {f}={v}" if f != "heads"
                                     else f"heads={v}"))
    for v in INTS:
        add("req", set_key(base, "requests", f"{v}x37"))
        add("req", set_key(base, "requests", f"1x{v}"))
        add("req", set_key(base, "requests", f"1x8c{v}"))
        add("split", set_key(base, "split", f"raw:{v}:0"))
        add("split", set_key(base, "split", f"raw:3:{v}"))
    for f in LAYER_FLOAT_FIELDS:
        for v in FLOATS:
            add("layer-float", set_key(BASES[2], "layer.0", f"heads=2 {f}={v}"))
    for v in FLOATS:
        add("list", set_key(base, "layer.0", f"heads=1 alibi=[{v}]"))
        add("list", set_key(base, "layer.0", f"heads=2 sinks=[1,{v}]"))
        add("values", set_key(base, "q_values", f"uniform {v}"))
        add("values", set_key(base, "values", f"spike {v}"))
    for key in ("q_dtype", "kv_dtype", "out_dtype", "dtype"):
        for v in DTYPES:
            add("dtype", set_key(base, key, v))
    for v in ["ok", "heads", "window", "none", "bogus", "", "0", "-1", "limit", "overflow"]:
        add("expect", set_key(base, "expect", v))
    for v in ["1x1,,1x1", ", 1x1", "1x1,", ",", " , ", "1x", "x1", "1x1c", "1x1c256", "1x1cc",
              "1xx1", "none, 1x1", "1x1 1x1", "1x1;1x1", "1X8", "1x8n,2x8c,3x9c0", "none",
              ",".join(["1x2"] * 256), ",".join(["1x2"] * 257), "1x" + "9" * 400,
              "100000x100000", "1x2147483647", "65536x65536, 65536x65536"]:
        add("reqlist", set_key(base, "requests", v))
    for v in ["layer.64 = heads=4", "layer.-1 = heads=4", "layer.00 = heads=4",
              "layer.1 = heads=4", "layer.99999999999 = heads=4", "layer. = heads=4",
              "layer.x = heads=4", "layer.0 = heads=4\nlayer.0 = heads=4", "layers = none",
              "layers = some", "layer.0 = window=3", "layer.0 = heads=4 colour=red",
              "layer.0 = heads=4 heads=4", "layer.0 = heads=4 alibi=[1,2]",
              "layer.0 = heads=4 alibi=[", "layer.0 = heads=4 sinks=[[1]]",
              "layer.0 = heads=4 alibi=" + "[" + ",".join(["0.5"] * 5000) + "]",
              "isa = avx2\noptions = tune=amd", "options = " + "w" * 100,
              "name = " + "n" * 100, "name = two words", "name = #x", "blocks = outside",
              "blocks = sideways", "place = middle", "seed = -1", "seed = 0x",
              "seed = 0xFFFFFFFFFFFFFFFFF"]:
        add("struct", base + v + "\n")
    for b in BASES:   # duplicates, unknown keys, lines dropped or swapped
        lines = b.splitlines()
        for i in range(len(lines)):
            add("dup", "\n".join(lines + [lines[i]]) + "\n")
            add("drop", "\n".join(lines[:i] + lines[i + 1:]) + "\n")
            add("nokey", "\n".join(lines[:i] + ["= " + lines[i]] + lines[i + 1:]) + "\n")
        add("unknown", b + "colour = red\n")
        add("swap", "\n".join(reversed(lines)) + "\n")
    for b in BASES:   # truncations at every few bytes, and byte flips
        raw = b.encode()
        for cut in range(0, len(raw), 3):
            add("trunc", raw[:cut])
        for _ in range(60):
            m = bytearray(raw)
            for _ in range(rng.randint(1, 4)):
                m[rng.randrange(len(m))] = rng.randrange(256)
            add("flip", bytes(m))
    for ctl in ["\x1b[31m", "\x1b]0;owned\x07", "\x9b2J", "\x07", "\r", "\x7f", "\x00"]:
        add("escape", base + f"fo{ctl}o = 1\n")
        add("escape", set_key(base, "name", f"n{ctl}"))
        add("escape", set_key(base, "requests", f"1x8{ctl}"))
        add("escape", set_key(base, "layer.0", f"heads=4 w{ctl}=1"))
    for bad in [b"\xff\xfe", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"]:
        add("utf8", base.encode() + b"name" + bad + b" = x\n")
        add("utf8", base.encode().replace(b"mbase", b"m" + bad))
    add("nul", base.encode() + b"\x00")
    add("nul", b"kv_heads = 2\x00\nhead_dim = 16\n")
    add("long", base + "# " + "x" * (1 << 16) + "\n")
    add("long", base + "name = " + "y" * 70000 + "\n")
    add("long", (base + "# pad\n") * 40000)   # over 1 MiB
    for t in ["", "\n", "# only a comment\n", "   \n\t\n", "=", "==\n", "\r\n"]:
        add("empty", t)
    for b in BASES:
        add("crlf", b.replace("\n", "\r\n"))
    return out


def byte_inputs(rng):
    """[(stem, bytes)] of fuzz inputs: random, cut and flipped shipped ones,
    and strings of the grammar's invalid (0xFF k) and extreme forms."""
    out = []
    shipped = []
    for t in ("fuzz_attention", "fuzz_api", "fuzz_ort_contract", "fuzz_ggml_contract"):
        shipped += sorted(glob.glob(os.path.join(ROOT, "corpus", t, "*")))
    shipped = [open(p, "rb").read() for p in shipped if os.path.isfile(p)]
    for _ in range(200):
        out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 400))))
    for _ in range(120):
        s = rng.choice(shipped)
        out.append(s[:rng.randrange(len(s) + 1)])
    for _ in range(120):
        m = bytearray(rng.choice(shipped) or b"\x00")
        for _ in range(rng.randint(1, 6)):
            m[rng.randrange(len(m))] = rng.choice([0x00, 0xFD, 0xFE, 0xFF, rng.randrange(256)])
        out.append(bytes(m))
    for _ in range(100):   # every field in its invalid or extreme form
        out.append(bytes(b for _ in range(rng.randrange(4, 60))
                         for b in (0xFF, rng.choice([0xFE, 0xFF, 0xFC, 0xFD, rng.randrange(256)]))))
    for n in (1, 2, 7, 64, 1000):
        out += [b"\xff" * n, b"\xfe" * n, b"\x00" * n, b"\xfd" * n]
    return [(f"bytes-{i:04d}", b) for i, b in enumerate(out)]


def required_entries():
    """The entry points the registry requires: its own list."""
    text = open(os.path.join(ROOT, "engines", "registry.c")).read()
    m = re.search(r"#define AG_REQUIRED_ENTRIES\(X\)(.*?)\n\s*\n", text, re.S)
    if not m:
        sys.exit("malformed: no AG_REQUIRED_ENTRIES in engines/registry.c")
    names = re.findall(r"X\((\w+)\)", m.group(1))
    if not names:
        sys.exit("malformed: AG_REQUIRED_ENTRIES lists nothing")
    return names


def fuzz_targets():
    return sorted(os.path.basename(p)[:-2] for p in glob.glob(os.path.join(ROOT, "fuzz", "fuzz_*.c")))


class Gate:
    def __init__(self, cli, jobs):
        self.cli, self.jobs = cli, jobs
        self.failures, self.runs, self.tally = [], 0, {}

    def run(self, args, env_extra=None, timeout=TIMEOUT_S):
        env = dict(os.environ, **SAN_ENV)
        env.pop("ATTNGUARD_ENGINE", None)
        env.pop("ATTNGUARD_ENGINE_OPTIONS", None)
        env["ATTNGUARD_MAX_WORK"] = MAX_WORK
        env.update(env_extra or {})
        try:
            p = subprocess.run([self.cli] + args, env=env, stdin=subprocess.DEVNULL,
                               capture_output=True, timeout=timeout)
            return p.returncode, p.stdout.decode("utf-8", "replace"), \
                p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return None, "", f"no status within {timeout} s"

    def judge(self, what, rc, out, err, allowed=(0, 1, 2), missing=()):
        """Record one run's verdict; returns True when it passed."""
        self.runs += 1
        why = []
        if rc is None:
            why.append(err)
        elif rc < 0:
            why.append(f"killed by signal {-rc}")
        elif rc not in allowed:
            why.append(f"exit status {rc}" + (" (a sanitizer's)" if rc in (ASAN_EXIT, UBSAN_EXIT)
                                               else f", expected one of {allowed}"))
        marks = [m for m in SANITIZER_MARKS if m in err or m in out]
        if marks:
            why.append("sanitizer report: " + ", ".join(marks))
        if missing:
            why.append(f"no answer for {len(missing)} file(s): " + ", ".join(missing[:5]))
        if why:
            tail = "\n".join((err.strip().splitlines() or [""])[-12:])
            self.failures.append(f"{what}: " + "; ".join(why) + "\n    " +
                                 tail.replace("\n", "\n    "))
            return False
        return True

    def count(self, key, n=1):
        self.tally[key] = self.tally.get(key, 0) + n

    def batches(self, fn, items):
        """fn over items in batches, self.jobs at a time; a batch that
        fails is run again one file at a time, so the failure names its
        file."""
        chunks = [items[i:i + BATCH] for i in range(0, len(items), BATCH)]
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as ex:
            bad = [c for c, ok in zip(chunks, ex.map(lambda c: fn(c, quiet=True), chunks))
                   if not ok]
        for c in bad:
            for one in c:
                fn([one], quiet=False)

    def show_text(self, files, quiet):
        rc, out, err = self.run(["show"] + files)
        # several files: each gets its '# <file>: case text' header, or a
        # message naming it
        missing = [f for f in files
                   if f"# {f}: case text" not in out and f"attnguard: {f}:" not in err] \
            if len(files) > 1 else ([] if out or f"attnguard: {files[0]}:" in err else files)
        if quiet and (rc not in (0, 1) or missing or any(m in err for m in SANITIZER_MARKS)):
            return False
        ok = self.judge(f"show {files[0]}{' ...' if len(files) > 1 else ''}", rc, out, err,
                        (0, 1), missing)
        if ok:
            self.count("show: cases printed", out.count(": case text") or (1 if out else 0))
            self.count("show: refused with a message", err.count("attnguard: "))
        return ok

    def check(self, files, quiet, extra=(), env=None, label="check"):
        rc, out, err = self.run(["check"] + list(extra) + files, env)
        m = re.search(r"^(\d+) passed, (\d+) failed, (\d+) skipped, (\d+) not run$", out, re.M)
        answered = sum(int(x) for x in m.groups()) if m else 0
        missing = [] if answered == len(files) else files[answered:] or ["(summary line)"]
        if quiet and (rc not in (0, 1) or missing or any(k in err for k in SANITIZER_MARKS)):
            return False
        ok = self.judge(f"{label} {files[0]}{' ...' if len(files) > 1 else ''}", rc, out, err,
                        (0, 1), missing)
        if ok:
            for v, n in zip(("passed", "failed", "skipped", "not run"), m.groups()):
                self.count(f"{label}: {v}", int(n))
            for v, pat in (("failed: the file does not load", r"FAIL: the file does not load"),
                           ("failed: an oracle (the case is wrong, or a finding)", r"FAIL: ORACLE"),
                           ("not run: past the compute budget", r"NOT RUN: about .*compute budget")):
                self.count(f"{label}: {v}", len(re.findall(pat, out, re.M)))
        return ok

    def show_bytes(self, target, decoded_dir):
        def fn(files, quiet):
            rc, out, err = self.run(["show", "--target", target] + files)
            missing = [f for f in files if f"# {f}: " not in out]
            if quiet and (rc != 0 or missing or any(m in err for m in SANITIZER_MARKS)):
                return False
            ok = self.judge(f"show --target {target} {files[0]}...", rc, out, err, (0,), missing)
            if ok and decoded_dir:
                # each decoding, as the case text it prints, for check
                for part in re.split(r"(?m)^(?=# \S+: \d+ bytes, decoded as fuzz input$)", out):
                    m = re.match(r"# (\S+): \d+ bytes", part)
                    if m:
                        name = os.path.basename(m.group(1)) + ".case"
                        with open(os.path.join(decoded_dir, name), "w") as f:
                            f.write(part)
            if ok:
                self.count(f"show --target: decoded ({target})", len(files))
            return ok
        return fn


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--adapter", required=True, help="the broken adapter object")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "malformed"))
    ap.add_argument("--seed", type=int, default=61)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--lsan-options", default="",
                    help="added to LSAN_OPTIONS (make passes its LSAN_TLS)")
    a = ap.parse_args()
    if a.lsan_options:
        SAN_ENV["LSAN_OPTIONS"] += ":" + a.lsan_options
    t0 = time.time()
    rng = random.Random(a.seed)
    shutil.rmtree(a.out, ignore_errors=True)
    dirs = {k: os.path.join(a.out, k) for k in ("text", "bytes", "decoded", "work")}
    for d in dirs.values():
        os.makedirs(d)

    texts = text_cases(rng)
    raws = byte_inputs(rng)
    text_files, byte_files = [], []
    for stem, data in texts:
        p = os.path.join(dirs["text"], stem + ".case")
        open(p, "wb").write(data)
        text_files.append(p)
    for stem, data in raws:
        p = os.path.join(dirs["bytes"], stem + ".bin")
        open(p, "wb").write(data)
        byte_files.append(p)
    g = Gate(os.path.abspath(a.cli), a.jobs)

    # the text cases, through show and check
    g.batches(g.show_text, text_files)
    g.batches(g.check, text_files)
    # the byte inputs, decoded by every target; fuzz_attention's decodings checked
    for t in fuzz_targets():
        g.batches(g.show_bytes(t, dirs["decoded"] if t == "fuzz_attention" else None), byte_files)
    decoded = sorted(glob.glob(os.path.join(dirs["decoded"], "*.case")))
    if len(decoded) != len(byte_files):
        g.failures.append(f"decoded {len(decoded)} of {len(byte_files)} byte inputs")
    g.batches(g.check, decoded)

    # broken adapter tables: refused with a status naming the breakage
    base = text_files[0]
    adapter = os.path.abspath(a.adapter)
    breakages = [(f"null:{e}", f"'{e}'") for e in required_entries()]
    breakages += [("version", "version"), ("future", "version"), ("short", "version"),
                  ("cut", "'close'"), ("noname", "name"), ("nosummary", "summary"),
                  ("nulltable", "no adapter table")]
    for brk, want in breakages:
        for how in ("--engine", "env"):
            args = ["check", "--engine", adapter, base] if how == "--engine" else ["check", base]
            env = {"AG_BROKEN": brk}
            if how == "env":
                env["ATTNGUARD_ENGINE"] = adapter
            rc, out, err = g.run(args, env)
            ok = g.judge(f"check ({how}) broken table {brk}", rc, out, err, (2,))
            if ok and want not in err:
                g.failures.append(f"check ({how}) broken table {brk}: the message does not "
                                  f"name {want!r}: {err.strip()}")
            g.count("broken tables refused", ok)
    # optional entries may be NULL: the table is good, its open refuses
    for opt in ("variants", "group_info", "extents", "plan_shape", "internal_needs", "paths", ""):
        rc, out, err = g.run(["check", "--engine", adapter, base],
                             {"AG_BROKEN": f"null:{opt}" if opt else ""})
        if g.judge(f"check, optional entry {opt or '(none)'} NULL", rc, out, err, (2,)) and \
                "opens nowhere" not in err:
            g.failures.append(f"optional entry {opt} NULL: the table was refused: {err.strip()}")
        g.count("good tables opened (open refuses)")
    libm = next((p for p in glob.glob("/lib/*/libm.so.6") + glob.glob("/usr/lib/*/libm.so.6")),
                None)
    engines = [os.path.join(a.out, "none.so"), dirs["text"], base, "/dev/null", "nosuchengine",
               "./", "../../../../etc/passwd"] + ([libm] if libm else [])
    for e in engines:
        rc, out, err = g.run(["check", "--engine", e, base])
        g.judge(f"check --engine {e!r}", rc, out, err, (2,))
        g.count("unusable engine paths refused")

    # repro on what it must refuse (an empty fuzz folder: no binary runs)
    empty = dirs["work"]
    repros = [[base, "--target", "bogus"], [base, "--inject", "nosuchbug"], [dirs["text"]],
              [os.path.join(a.out, "none.case")], [base, "--fuzz-dir", empty],
              [base, "--fuzz-dir", empty, "--target", "fuzz_api", "--api-prefix", "zz"],
              [base, "--runs", "x"], [base, "--time", "-1"], [base, "--out", "x.case"], [],
              [base, base], [byte_files[0], "--target", "fuzz_plan", "--fuzz-dir", empty],
              [text_files[-1], "--fuzz-dir", empty]]
    repros += [[f, "--fuzz-dir", empty] for f in text_files[::max(1, len(text_files) // 40)]]
    for args in repros:
        rc, out, err = g.run(["repro"] + args)
        g.judge(f"repro {' '.join(args)[:80]}", rc, out, err, (2,))
        g.count("repro calls refused")
    # show on what is not a file
    for args in (["--target", "bogus", base], [dirs["text"]], ["--target"], ["--bogus"], []):
        rc, out, err = g.run(["show"] + args)
        g.judge(f"show {' '.join(args)[:80]}", rc, out, err, (1, 2))
        g.count("show misuses refused")

    secs = time.time() - t0
    for k in sorted(g.tally):
        print(f"  {k}: {g.tally[k]}")
    what = (f"{len(text_files)} text cases, {len(byte_files)} byte inputs x "
            f"{len(fuzz_targets())} targets, {len(decoded)} decodings, {len(breakages)} broken "
            f"tables x 2 ways, {len(repros)} repro calls: {g.runs} runs of the ASan+UBSan CLI "
            f"(leaks on) in {secs:.0f} s")
    if g.failures:
        print(f"malformed: {len(g.failures)} run(s) without a clean status:")
        for f in g.failures:
            print("  " + f)
        print(f"malformed: FAILED: {len(g.failures)} of {what}")
        return 1
    print(f"malformed: {what}; every one ended with a status, no sanitizer report, no signal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
