#!/usr/bin/python3
"""bench/peer.py — the PyTorch side-by-side of `make bench` (`make bench-peer`).

Times PyTorch's scaled-dot-product attention on the shapes of bench/bench.c
(decode B = 1 and 8, prefill L = 2048, the Laguna-shaped mixed batch; fp32
and bf16; 1 and 2 threads; median of >= 5 runs; cold rows rotating through
>= 1.5 GiB of KV copies as the engine's do), joins the result with the
engine rows of a bench.json written by bench/bench.c, and prints both with
the engine's speed-up.  Writes bench-peer.md and bench-peer.json.

How each shape is handed to PyTorch (it has no paged cache):
  decode   GQA heads folded into rows: q (B, Hkv, g, D) against K/V
           (B, Hkv, 4096, D), no mask (a decode token sees every key);
  prefill  K/V expanded to the query heads before timing (PyTorch 1.13 has
           no GQA argument), is_causal;
  laguna   per group: the 6 decodes folded as above (the windowed group
           against its last 512 keys), the 512-token chunk with K/V
           expanded and a boolean mask of the causal rule at offset
           4096 - 512 (and the window band for the windowed group).
Every timed input (q, the K/V copies, the expanded K/V) is copied onto
huge pages first (huge()), as bench.c places the engine's buffers; what
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

COLD_BYTES = 1.5 * 1024 ** 3  # as bench.c's run_spec
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
NP_SAME_SIZE = {torch.float32: "float32", torch.bfloat16: "int16"} if torch else {}


def huge(t):
    """A contiguous copy of t on 2 MiB-aligned memory advised as
    transparent huge pages, as bench.c's big_alloc places every large
    buffer of the engine.  On this VM a buffer on 4 KiB pages pays the
    host's per-page cost each time its pages sit idle (README, Speed), so
    PyTorch's inputs get the engine's kind of memory."""
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


def measure(threads_max, reps, only):
    run, _ = sdpa()
    rows = []
    for t in range(1, threads_max + 1):
        torch.set_num_threads(t)
        for dn, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            if os.environ.get("BENCH_DTYPE", dn) != dn:
                continue
            for B in (1, 8):
                if only and f"decode{B}" not in only:
                    continue
                for cold in (True, False):
                    sec = decode_row(run, B, dtype, cold, reps * (2 if cold else 1))
                    rows.append({"name": f"decode B={B} kv4096 {dn} {'cold' if cold else 'hot'}",
                                 "threads": t, "ms": sec * 1e3})
                    print_row(rows[-1])
            for hkv in (32, 8):
                if only and "prefill" not in only:
                    continue
                if os.environ.get("BENCH_HKV", str(hkv)) != str(hkv):
                    continue
                sec = prefill_row(run, hkv, dtype, 5)
                rows.append({"name": f"prefill L=2048 H=32 Hkv={hkv} {dn}", "threads": t,
                             "ms": sec * 1e3})
                print_row(rows[-1])
        if not only or "laguna" in only:
            sec = laguna_row(run, reps)
            rows.append({"name": "laguna mixed (48 full + 64 w512) bf16", "threads": t,
                         "ms": sec * 1e3})
            print_row(rows[-1])
    return rows


def print_row(r):
    print(f"  torch {r['name']:<40} {r['threads']} thr {r['ms']:10.2f} ms", flush=True)


# ---------------------------------------------------------------- reports

def side_by_side(engine, peer):
    """Rows of both, joined on (name, threads); speed-up = torch ms / engine
    ms (> 1: the engine is faster).  The useful work of a row (bytes or
    flops) is bench.c's alone: PyTorch's figure is the engine's scaled by
    the time ratio, so the two counts cannot drift apart."""
    eng = {(r["name"], r["threads"]): r for r in engine["results"]}
    out = []
    for p in peer:
        e = eng.get((p["name"], p["threads"]))
        if e is None:
            continue
        out.append({"name": p["name"], "threads": p["threads"], "engine_ms": e["ms"],
                    "torch_ms": p["ms"], "speedup": p["ms"] / e["ms"],
                    "metric": "GB/s" if p["name"].startswith("decode") else "GFLOP/s",
                    "engine_fig": e["gbs"] if p["name"].startswith("decode") else e["gflops"],
                    "torch_fig": (e["gbs"] if p["name"].startswith("decode") else e["gflops"])
                    * e["ms"] / p["ms"],
                    "engine_pct": e["pct"], "limit": e["limit"]})
    return out


def write_reports(outdir, joined, name, limits):
    with open(os.path.join(outdir, "bench-peer.json"), "w") as f:
        json.dump({"torch": torch.__version__, "function": name,
                   "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()
                   if hasattr(torch.backends, "cpu") else "",
                   "limits": limits, "rows": joined}, f, indent=2)
    with open(os.path.join(outdir, "bench-peer.md"), "w") as f:
        f.write("# attnguard against PyTorch\n\nGenerated by `make bench-peer` (bench/peer.py): "
                f"the engine rows of the same session's bench.json beside `{name}` "
                f"(torch {torch.__version__}) on the same shapes, threads and cold/hot rule "
                "(median of >= 5 runs).  *speed-up* = torch ms / engine ms.  How each shape "
                "is given to PyTorch: bench/peer.py's top comment.\n\n"
                "| case | threads | engine ms | torch ms | speed-up | engine | torch | "
                "engine % of limit |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
        for r in joined:
            f.write(f"| {r['name']} | {r['threads']} | {r['engine_ms']:.2f} | "
                    f"{r['torch_ms']:.2f} | {r['speedup']:.1f}x | {r['engine_fig']:.1f} "
                    f"{r['metric']} | {r['torch_fig']:.1f} {r['metric']} | "
                    f"{r['engine_pct']:.1f} % of {r['limit']} |\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true",
                    help="check the shape formulations against a float64 loop, then exit")
    ap.add_argument("--engine", help="bench.json of the engine run to put beside")
    ap.add_argument("--out", default="reports", help="where bench-peer.{md,json} go")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    if torch is None:
        print(f"bench-peer: {sys.executable} has no torch "
              "(Debian: apt-get install python3-torch)", file=sys.stderr)
        return 2
    if args.selftest:
        return selftest()
    if not args.engine:
        ap.error("--engine bench.json is required")
    with open(args.engine) as f:
        engine = json.load(f)
    # bench.c's narrowing variables (BENCH_ONLY, BENCH_THREADS, BENCH_DTYPE,
    # BENCH_HKV) narrow the peer alike
    only = os.environ.get("BENCH_ONLY", "")
    if os.environ.get("BENCH_THREADS"):
        args.threads = min(args.threads, int(os.environ["BENCH_THREADS"]))
    _, name = sdpa()
    print(f"bench-peer: {name}, torch {torch.__version__}")
    peer = measure(min(args.threads, 2), max(args.reps, 5), only)
    joined = side_by_side(engine, peer)
    print(f"\n{'case':<42} thr {'engine ms':>10} {'torch ms':>10}  speed-up")
    for r in joined:
        print(f"{r['name']:<42} {r['threads']:>3} {r['engine_ms']:10.2f} {r['torch_ms']:10.2f}"
              f"  {r['speedup']:6.1f}x")
    write_reports(args.out, joined, name, engine.get("limits", {}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
