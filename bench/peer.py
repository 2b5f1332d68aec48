#!/usr/bin/python3
"""bench/peer.py — PyTorch beside the engines of `make bench-peer`.

Reads the bench-peer.json that `bench --peer` (bench/bench.c) wrote for the
engines given, times PyTorch's scaled-dot-product attention on the same
rows (decode B = 1 and 8, prefill L = 2048, the Laguna-shaped mixed batch;
1 and 2 threads; median of >= 5 runs; cold rows rotating through >= 1.5 GiB
of KV copies as the engines' do), and adds it to both files: a "torch"
entry in each row's results and a section of its own in bench-peer.md.
Rows PyTorch cannot run here (fp8 caches; f16 where this build has no
half-precision CPU matmul) say so.

How each shape is handed to PyTorch (it has no paged cache; q, K and V all
in the row's KV dtype, whatever q/out dtype the engines used):
  decode   GQA heads folded into rows: q (B, Hkv, g, D) against K/V
           (B, Hkv, 4096, D), no mask (a decode token sees every key);
  prefill  K/V expanded to the query heads before timing (PyTorch 1.13 has
           no GQA argument), is_causal;
  laguna   per group: the 6 decodes folded as above (the windowed group
           against its last 512 keys), the 512-token chunk with K/V
           expanded and a boolean mask of the causal rule at offset
           4096 - 512 (and the window band for the windowed group).
Every timed input (q, the K/V copies, the expanded K/V) is copied onto
huge pages first (huge()), as bench.c places the engines' buffers; what
PyTorch allocates inside the call is its own allocator's.
The semantics are DESIGN.md's: causal k <= p, window k >= p - (W - 1),
scale 1/sqrt(D).  `--selftest` checks every one of these formulations
against a float64 loop over (token, head) on small shapes.

PyTorch >= 2.0 names the function torch.nn.functional.
scaled_dot_product_attention; 1.13 (Debian 12's python3-torch) has the same
computation as the private _scaled_dot_product_attention.  The script uses
the public one when present and reports which it ran.
"""
import argparse
import ctypes
import json
import math
import mmap
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:  # the caller (mk/bench.mk) says how to install it
    torch = None

COLD_BYTES = 1.5 * 1024 ** 3  # as bench/rows.c's COLD_BYTES
KV_LEN, HKV, D = 4096, 8, 128


def sdpa():
    """(function(q, k, v, mask, causal) -> out, its name)."""
    if hasattr(F, "scaled_dot_product_attention"):
        def run(q, k, v, mask=None, causal=False):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        return run, "torch.nn.functional.scaled_dot_product_attention"

    def run_private(q, k, v, mask=None, causal=False):
        return F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, causal)[0]
    return run_private, "torch.nn.functional._scaled_dot_product_attention"


# ------------------------------------------------------------ formulations
# Each takes the engine's view (q [tokens, Hq, D], K/V [Hkv, S, D] per
# request) and returns (prepared inputs, timed call): preparation (folding,
# expansion, masks) is not timed, as the engine's plan build is not.

def decode_prepare(q, k, v, window):
    """q [B, Hq, D], k/v [B, Hkv, S, D]: one token per request at position
    S - 1; GQA heads folded into rows."""
    B, hq, d = q.shape
    hkv, s = k.shape[1], k.shape[2]
    qf = q.reshape(B, hkv, hq // hkv, d)
    if window > 0 and window < s:  # keys p - (W - 1) .. p, p = S - 1
        k, v = k[:, :, s - window:, :], v[:, :, s - window:, :]
    return qf, k, v


def decode_finish(out, hq):
    return out.reshape(out.shape[0], hq, out.shape[-1])


def chunk_prepare(q, k, v, window):
    """q [L, Hq, D] at positions S - L .. S - 1 of one request, k/v
    [Hkv, S, D]: K/V expanded to Hq heads; a boolean mask unless the chunk
    is the whole causal sequence (then is_causal)."""
    L, hq, d = q.shape
    hkv, s = k.shape[0], k.shape[1]
    qh = q.transpose(0, 1).unsqueeze(0)  # [1, Hq, L, D]
    ke = k.repeat_interleave(hq // hkv, dim=0).unsqueeze(0).contiguous()
    ve = v.repeat_interleave(hq // hkv, dim=0).unsqueeze(0).contiguous()
    if L == s and window <= 0:
        return qh, ke, ve, None, True
    p = torch.arange(s - L, s).unsqueeze(1)
    kk = torch.arange(s).unsqueeze(0)
    mask = kk <= p
    if window > 0:
        mask &= kk >= p - (window - 1)
    return qh, ke, ve, mask, False


def chunk_finish(out):
    return out[0].transpose(0, 1)  # [L, Hq, D]


def naive(q, k, v, window):
    """float64 reference: q [L, Hq, D] at positions S - L .. S - 1, k/v
    [Hkv, S, D]; DESIGN.md's rule, one (token, head) at a time."""
    L, hq, d = q.shape
    hkv, s = k.shape[0], k.shape[1]
    g = hq // hkv
    out = torch.zeros(L, hq, d, dtype=torch.float64)
    for i in range(L):
        p = s - L + i
        lo = p - (window - 1) if window > 0 else 0
        lo = max(lo, 0)
        for h in range(hq):
            kh = h // g
            sc = [float(q[i, h].double() @ k[kh, j].double()) / math.sqrt(d)
                  for j in range(lo, p + 1)]
            m = max(sc)
            w = [math.exp(x - m) for x in sc]
            tot = sum(w)
            for j, wj in zip(range(lo, p + 1), w):
                out[i, h] += (wj / tot) * v[kh, j].double()
    return out


def selftest():
    run, name = sdpa()
    torch.manual_seed(7)
    worst = 0.0

    def check(what, got, want):
        nonlocal worst
        err = float((got.double() - want).abs().max())
        worst = max(worst, err)
        status = "ok" if err < 1e-5 else "FAIL"
        print(f"  {what:<44} max |err| {err:.2e}  {status}")
        return err < 1e-5

    ok = True
    # decode, folded: B 2, Hkv 2, g 3, S 37 (window off, and 5)
    for window in (-1, 5):
        B, hkv, g, s, d = 2, 2, 3, 37, 16
        q = huge(torch.randn(B, hkv * g, d))  # as the timed rows' inputs
        k, v = huge(torch.randn(B, hkv, s, d)), huge(torch.randn(B, hkv, s, d))
        qf, kf, vf = decode_prepare(q, k, v, window)
        got = decode_finish(run(qf, kf, vf), hkv * g)
        for b in range(B):
            want = naive(q[b].unsqueeze(0), k[b], v[b], window)[0]
            ok &= check(f"decode fold, request {b}, window {window}", got[b], want)
    # chunks: whole causal sequence (is_causal), offset chunk, windowed chunk
    for L, s, window in ((19, 19, -1), (7, 23, -1), (9, 30, 5)):
        hkv, g, d = 2, 3, 16
        q = torch.randn(L, hkv * g, d)
        k, v = torch.randn(hkv, s, d), torch.randn(hkv, s, d)
        qh, ke, ve, mask, causal = chunk_prepare(q, k, v, window)
        got = chunk_finish(run(qh, ke, ve, mask, causal))
        ok &= check(f"chunk L {L} of S {s}, window {window}", got, naive(q, k, v, window))
    # huge(): an exact copy, on a 2 MiB boundary
    for dt in (torch.float32, torch.bfloat16):
        t = torch.randn(3, 70001).to(dt)
        h = huge(t)
        good = torch.equal(h, t) and h.shape == t.shape and h.data_ptr() % HUGE == 0
        print(f"  {'huge copy, ' + str(dt):<44} {'ok' if good else 'FAIL'}")
        ok &= good
    print(f"selftest ({name}, torch {torch.__version__}): {'passed' if ok else 'FAILED'}")
    return 0 if ok else 1


# ----------------------------------------------------------------- timing

def rotations(bytes_per_copy, cold):
    return max(3, math.ceil(COLD_BYTES / bytes_per_copy)) if cold else 1


def timed(call_for, rot, reps):
    """Median seconds of call_for(k)() over reps runs (k rotates), after
    one untimed pass over every rotation."""
    for k in range(rot):
        call_for(k)()
    times = []
    for it in range(reps):
        f = call_for(it % rot)
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def rand(shape, dtype):
    return (torch.rand(shape) * 2 - 1).to(dtype)


HUGE = 2 << 20
NP_SAME_SIZE = ({torch.float32: "float32", torch.bfloat16: "int16", torch.float16: "float16"}
                if torch else {})


def huge(t):
    """A contiguous copy of t on 2 MiB-aligned memory advised as
    transparent huge pages, as bench/util.c places every large buffer of
    the engines.  On these VMs a buffer on 4 KiB pages pays the host's
    per-page cost each time its pages sit idle (docs/perf-notes.md), so
    PyTorch's inputs get the engines' kind of memory."""
    import numpy as np  # a dependency of python3-torch
    n = t.numel() * t.element_size()
    m = mmap.mmap(-1, n + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:  # a hint, as in bench.c: a kernel without THP refuses it, and that is no error
        m.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, OSError):
        pass
    off = -ctypes.addressof(ctypes.c_char.from_buffer(m)) % HUGE
    raw = np.frombuffer(m, dtype=NP_SAME_SIZE[t.dtype], count=t.numel(), offset=off)
    out = torch.from_numpy(raw).view(t.dtype).view(t.shape)  # keeps m alive
    out.copy_(t)
    return out


def decode_row(run, B, dtype, cold, reps):
    g = 4
    esz = torch.tensor([], dtype=dtype).element_size()
    kv_bytes = 2.0 * B * HKV * KV_LEN * D * esz
    rot = rotations(kv_bytes, cold)
    q = huge(rand((B, HKV * g, D), dtype))
    copies = [decode_prepare(q, huge(rand((B, HKV, KV_LEN, D), dtype)),
                             huge(rand((B, HKV, KV_LEN, D), dtype)), -1) for _ in range(rot)]
    sec = timed(lambda k: (lambda: run(*copies[k])), rot, reps)
    return sec


def prefill_row(run, hkv, dtype, reps):
    L, hq = 2048, 32
    q = huge(rand((L, hq, D), dtype))
    qh, ke, ve, mask, causal = chunk_prepare(q, rand((hkv, L, D), dtype),
                                             rand((hkv, L, D), dtype), -1)
    args = (qh, huge(ke), huge(ve), mask, causal)
    return timed(lambda k: (lambda: run(*args)), 1, reps)


def laguna_row(run, reps):
    """bench.c's Laguna batch, bf16: 6 decodes and one 512-token chunk, all
    at 4096 keys; group 0: 48 heads, full; group 1: 64 heads, window 512."""
    dtype, ndec, L, W = torch.bfloat16, 6, 512, 512
    esz = 2
    kv_bytes = 2.0 * (ndec + 1) * HKV * KV_LEN * D * esz
    rot = rotations(kv_bytes, True)
    q = [huge(rand((ndec + L, hq, D), dtype)) for hq in (48, 64)]
    copies = []
    for _ in range(rot):
        k = huge(rand((ndec + 1, HKV, KV_LEN, D), dtype))
        v = huge(rand((ndec + 1, HKV, KV_LEN, D), dtype))
        parts = []
        for gi, window in ((0, -1), (1, W)):
            parts.append(decode_prepare(q[gi][:ndec], k[:ndec], v[:ndec], window))
            qh, ke, ve, mask, causal = chunk_prepare(q[gi][ndec:], k[ndec], v[ndec], window)
            parts.append((qh, huge(ke), huge(ve), mask, causal))
        copies.append(parts)

    def call(k):
        def go():
            for a in copies[k]:
                run(*a)
        return go
    return timed(call, rot, reps)


TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"} if torch else {}


class Skip(Exception):
    """A row PyTorch cannot run here (the message says why)."""


def torch_row(run, row, reps):
    """Median seconds of one batch of `row` (an entry of bench-peer.json)."""
    name = TORCH_DTYPES.get(row["kv_dtype"])
    if name is None:
        raise Skip(f"torch {torch.__version__} has no {row['kv_dtype']} attention")
    dtype = getattr(torch, name)
    try:
        if row["kind"] == "decode":
            return decode_row(run, row["batch"], dtype, row["cold"], reps)
        if row["kind"] == "prefill":
            return prefill_row(run, row["hkv"], dtype, reps)
        if row["kind"] == "laguna" and dtype == torch.bfloat16:
            return laguna_row(run, reps)
    except RuntimeError as e:  # e.g. no half-precision CPU matmul in this build
        raise Skip(f"torch: {str(e).splitlines()[0][:120]}")
    raise Skip(f"no PyTorch formulation of {row['name']}")


def measure(rows, reps):
    """Time PyTorch on every row; the block size changes nothing for it,
    so rows that differ only by it share one measurement."""
    run, _ = sdpa()
    done = {}
    for row in rows:
        key = (row["kind"], row["batch"], row["hkv"], row["kv_dtype"], row["cold"],
               row["threads"])
        if key not in done:
            torch.set_num_threads(row["threads"])
            # as bench.c's row_reps: prefill 5, cold decode twice the rest
            base_reps = (5 if row["kind"] == "prefill" else
                         reps * 2 if row["kind"] == "decode" and row["cold"] else reps)
            try:
                done[key] = {"status": "ok", "ms": torch_row(run, row, base_reps) * 1e3}
            except Skip as e:
                done[key] = {"status": "skipped", "why": str(e)}
        t = dict(done[key])
        first = next((r for r in row["results"].values() if r.get("status") == "ok"), None)
        if t["status"] == "ok":
            t["figure"] = row["work"] / (t["ms"] * 1e-3) * 1e-9
            if first:
                t["ratio_to_first"] = t["ms"] / first["ms"]
        row["results"]["torch"] = t
        shown = f"{t['ms']:10.2f} ms" if t["status"] == "ok" else t["why"]
        print(f"  torch {row['name']:<40} {row['threads']} thr {shown}", flush=True)


# ---------------------------------------------------------------- reports

def write_reports(outdir, doc, name):
    """bench-peer.json with torch in every row, and a PyTorch section
    appended to the engines' bench-peer.md."""
    doc["torch"] = {"version": torch.__version__, "function": name,
                    "cpu_capability": torch.backends.cpu.get_cpu_capability()
                    if hasattr(torch.backends, "cpu") else ""}
    with open(os.path.join(outdir, "bench-peer.json"), "w") as f:
        json.dump(doc, f, indent=2)
    first = doc["engines"][0]
    md = os.path.join(outdir, "bench-peer.md")
    with open(md) as f:
        text = f.read()
    cut = text.find("\n## PyTorch")
    text = text if cut < 0 else text[:cut + 1]
    with open(md, "w") as f:
        f.write(text)
        f.write(f"\n## PyTorch\n\n`{name}` (torch {torch.__version__}) on the same shapes and "
                "threads, run after the engines (median of >= 5 runs), with q, K and V in the "
                "row's KV dtype; how each shape is given to it: bench/peer.py's top comment. "
                f"*x {first}* = torch ms / {first} ms (above 1: {first} is faster).\n\n"
                f"| case | threads | torch ms | torch | x {first} |\n|---|---:|---:|---:|---:|\n")
        for r in doc["rows"]:
            t = r["results"]["torch"]
            if t["status"] != "ok":
                f.write(f"| {r['name']} | {r['threads']} | {t['why']} | | |\n")
                continue
            ratio = f"{t['ratio_to_first']:.1f}x" if "ratio_to_first" in t else ""
            f.write(f"| {r['name']} | {r['threads']} | {t['ms']:.2f} | {t['figure']:.1f} "
                    f"{r['metric']} | {ratio} |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true",
                    help="check the shape formulations against a float64 loop, then exit")
    ap.add_argument("--engine", help="bench-peer.json of the engines' run to put PyTorch beside")
    ap.add_argument("--out", default="reports", help="where bench-peer.{md,json} go")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    if torch is None:
        print(f"bench-peer: {sys.executable} has no torch "
              "(Debian: apt-get install python3-torch)", file=sys.stderr)
        return 2
    if args.selftest:
        return selftest()
    if not args.engine:
        ap.error("--engine bench-peer.json is required")
    with open(args.engine) as f:
        doc = json.load(f)
    _, name = sdpa()
    print(f"bench-peer: {name}, torch {torch.__version__}")
    measure(doc["rows"], max(args.reps, 5))
    write_reports(args.out, doc, name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
