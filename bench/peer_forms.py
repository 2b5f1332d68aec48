"""bench/peer_forms.py — PyTorch's formulations of bench-peer's rows.

Each row kind (decode, prefill, the Laguna-shaped batch) has its inputs
(class Inputs: q, and K/V per cold rotation, on huge pages as bench/util_host.c
places the engines' buffers) and two or more formulations (Form): ways to
hand the same attention to PyTorch, of which bench-peer keeps the fastest
correct one per row.  A Form's prepare(inputs, rotation) does what is not
timed (folding, expansion, masks), as an engine's plan build is not timed;
call(state) is the timed part; canon(raw) returns the output as
[tokens][heads][D] per group, for the check against float64 (ref()).

The semantics are DESIGN.md's: causal k <= p, window k >= p - (W - 1),
scale 1/sqrt(D); GQA head h reads KV head h // (Hq / Hkv).

PyTorch >= 2.0 names the function torch.nn.functional.
scaled_dot_product_attention; 1.13 (Debian 12's python3-torch) has the same
computation as the private _scaled_dot_product_attention.  sdpa() uses the
public one when present and says which it ran.
"""
import ctypes
import math
import mmap

import torch
import torch.nn.functional as F

HUGE = 2 << 20


def sdpa():
    """(function(q, k, v, mask, causal) -> out, its name)."""
    if hasattr(F, "scaled_dot_product_attention"):
        def run(q, k, v, mask=None, causal=False):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        return run, "torch.nn.functional.scaled_dot_product_attention"

    def run_private(q, k, v, mask=None, causal=False):
        return F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, causal)[0]
    return run_private, "torch.nn.functional._scaled_dot_product_attention"


RUN, RUN_NAME = sdpa()


def huge(t):
    """A contiguous copy of t on 2 MiB-aligned memory advised as
    transparent huge pages, as bench/util_host.c places every large buffer of
    the engines.  On these VMs a buffer on 4 KiB pages pays the host's
    per-page cost each time its pages sit idle (docs/perf-notes.md), so
    PyTorch's inputs get the engines' kind of memory."""
    n = t.numel() * t.element_size()
    m = mmap.mmap(-1, n + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:  # a hint, as in util_host.c: a kernel without THP refuses it, and that is no error
        m.madvise(mmap.MADV_HUGEPAGE)
    except (AttributeError, OSError):
        pass
    off = -ctypes.addressof(ctypes.c_char.from_buffer(m)) % HUGE
    # torch's own view of the buffer (it keeps m alive): no numpy, which
    # PyTorch from PyPI does not bring along
    out = torch.frombuffer(m, dtype=t.dtype, count=t.numel(), offset=off).view(t.shape)
    out.copy_(t)
    return out


def rand(shape, dtype):
    return (torch.rand(shape) * 2 - 1).to(dtype)


class Form:
    """wide: computes in f32 whatever the data's dtype (converting inside
    the timed call), offered for 16-bit data only: PyTorch's bf16 math
    path sums 4096 softmax weights in bf16 (an error of ~15 % of the
    output at 4096 keys on these rows)."""

    def __init__(self, name, prepare, call, canon, wide=False):
        self.name, self.prepare, self.call, self.canon = name, prepare, call, canon
        self.wide = wide


def f32(*ts):
    return [t.float() if t is not None and t.is_floating_point() else t for t in ts]


# ---------------------------------------------------------------- pieces
# q rows [n, Hq, D] at positions pos0 .. pos0 + n - 1 of one request whose
# K/V are [Hkv, S, D]; window W (0: none).

def fold_rows(q, hkv):
    """[n, Hq, D] -> [1, Hkv, g * n, D] (contiguous): the g query heads of a
    KV head become rows, so K/V are read once per KV head, never expanded
    (PyTorch 1.13 has no GQA argument)."""
    n, hq, d = q.shape
    g = hq // hkv
    return q.reshape(n, hkv, g, d).permute(1, 2, 0, 3).reshape(1, hkv, g * n, d).contiguous()


def unfold_rows(out, n):
    """[1, Hkv, g * n, D] -> [n, Hq, D]."""
    _, hkv, gn, d = out.shape
    g = gn // n
    return out[0].reshape(hkv, g, n, d).permute(2, 0, 1, 3).reshape(n, hkv * g, d)


def key_range(pos0, n, window):
    """The keys rows pos0 .. pos0 + n - 1 may see together: [lo, hi)."""
    lo = max(0, pos0 - (window - 1)) if window > 0 else 0
    return lo, pos0 + n


def visible(pos0, n, lo, hi, window):
    """Boolean [n, hi - lo]: row i (position pos0 + i) sees key lo + j."""
    p = torch.arange(pos0, pos0 + n).unsqueeze(1)
    kk = torch.arange(lo, hi).unsqueeze(0)
    m = kk <= p
    if window > 0:
        m &= kk >= p - (window - 1)
    return m


def chunks_prepare(q, k, v, pos0, window, block):
    """Query blocks of `block` rows, each folded (fold_rows) against the
    key range it sees, with its mask tiled over the g heads (None when the
    block sees every key of its range: a decode row)."""
    n, hq, _ = q.shape
    hkv = k.shape[0]
    parts = []
    for i0 in range(0, n, block):
        m = min(block, n - i0)
        lo, hi = key_range(pos0 + i0, m, window)
        mask = visible(pos0 + i0, m, lo, hi, window)
        mask = None if bool(mask.all()) else mask.repeat(hq // hkv, 1)
        parts.append((fold_rows(q[i0:i0 + m], hkv), k[:, lo:hi].unsqueeze(0),
                      v[:, lo:hi].unsqueeze(0), mask, m))
    return parts


def chunks_call(parts, wide=False):
    if wide:
        return [RUN(*f32(qf, kk, vv), mask) for qf, kk, vv, mask, _ in parts]
    return [RUN(qf, kk, vv, mask) for qf, kk, vv, mask, _ in parts]


def chunks_canon(parts, outs):
    return torch.cat([unfold_rows(o, m) for (_, _, _, _, m), o in zip(parts, outs)])


def expanded_prepare(q, k, v, pos0, window):
    """The whole block at once, K/V expanded to Hq heads beforehand; the
    causal mask as is_causal when the block is the whole sequence."""
    n, hq, _ = q.shape
    hkv, s = k.shape[0], k.shape[1]
    qh = q.transpose(0, 1).unsqueeze(0)  # [1, Hq, n, D]
    ke = huge(k.repeat_interleave(hq // hkv, dim=0).unsqueeze(0))
    ve = huge(v.repeat_interleave(hq // hkv, dim=0).unsqueeze(0))
    if pos0 == 0 and n == s and window <= 0:
        return qh, ke, ve, None, True
    return qh, ke, ve, visible(pos0, n, 0, s, window), False


# ----------------------------------------------------------------- decode

def decode_fold(q, k, v):
    """q [B, Hq, D], k/v [B, Hkv, S, D], one row per request at S - 1:
    the GQA heads folded into rows, [B, Hkv, g, D]."""
    b, hq, d = q.shape
    return q.reshape(b, k.shape[1], hq // k.shape[1], d), k, v


def matmul_attention(qf, k, v):
    s = torch.matmul(qf, k.transpose(-1, -2))
    s.mul_(1.0 / math.sqrt(qf.shape[-1]))
    return torch.matmul(torch.softmax(s, dim=-1), v)


DECODE_FORMS = [
    Form("sdpa, GQA folded", lambda x, r: decode_fold(x.q[0], *x.kv[r][0]),
         lambda st: RUN(*st), lambda o: [o.reshape(o.shape[0], -1, o.shape[-1])]),
    Form("matmul+softmax, GQA folded", lambda x, r: decode_fold(x.q[0], *x.kv[r][0]),
         lambda st: matmul_attention(*st), lambda o: [o.reshape(o.shape[0], -1, o.shape[-1])]),
    Form("sdpa in f32, GQA folded", lambda x, r: decode_fold(x.q[0], *x.kv[r][0]),
         lambda st: RUN(*f32(*st)), lambda o: [o.reshape(o.shape[0], -1, o.shape[-1])], wide=True),
]

# ---------------------------------------------------------------- prefill

PREFILL_FORMS = [
    Form("sdpa is_causal, K/V expanded",
         lambda x, r: expanded_prepare(x.q[0], *x.kv[r][0], 0, -1),
         lambda st: RUN(*st), lambda o: [o[0].transpose(0, 1)]),
    Form("sdpa in 256-row blocks, GQA folded",
         lambda x, r: chunks_prepare(x.q[0], *x.kv[r][0], 0, -1, x.block),
         chunks_call, None),
    Form("sdpa in f32, 256-row blocks, GQA folded",
         lambda x, r: chunks_prepare(x.q[0], *x.kv[r][0], 0, -1, x.block),
         lambda st: chunks_call(st, True), None, wide=True),
]

# ----------------------------------------------------------------- laguna
# Per group (48 heads full, 64 heads window 512): the decodes folded as
# above (the windowed group against its last W keys), then the chunk.

def laguna_prepare(x, r, chunked):
    k, v = x.kv[r][0]
    parts = []
    for gi, window in enumerate(x.windows):
        q = x.q[gi]
        s = k.shape[2]
        lo = s - window if 0 < window < s else 0
        dec = decode_fold(q[:x.ndec], k[:x.ndec, :, lo:], v[:x.ndec, :, lo:])
        qc, kc, vc, pos0 = q[x.ndec:], k[x.ndec], v[x.ndec], s - (q.shape[0] - x.ndec)
        chunk = (chunks_prepare(qc, kc, vc, pos0, window, x.block) if chunked
                 else expanded_prepare(qc, kc, vc, pos0, window))
        parts.append((dec, chunk))
    return parts


def laguna_call(parts, chunked, wide=False):
    if wide:
        return [(RUN(*f32(*dec)), chunks_call(chunk, True)) for dec, chunk in parts]
    return [(RUN(*dec), chunks_call(chunk) if chunked else RUN(*chunk)) for dec, chunk in parts]


def laguna_canon(parts, outs, chunked):
    res = []
    for (dec, chunk), (od, oc) in zip(parts, outs):
        od = od.reshape(od.shape[0], -1, od.shape[-1])
        oc = chunks_canon(chunk, oc) if chunked else oc[0].transpose(0, 1)
        res.append(torch.cat([od, oc]))
    return res


LAGUNA_FORMS = [
    Form("sdpa, chunk with K/V expanded", lambda x, r: laguna_prepare(x, r, False),
         lambda st: laguna_call(st, False), None),
    Form("sdpa, chunk in 128-row blocks, GQA folded", lambda x, r: laguna_prepare(x, r, True),
         lambda st: laguna_call(st, True), None),
    Form("sdpa in f32, chunk in 128-row blocks, GQA folded",
         lambda x, r: laguna_prepare(x, r, True), lambda st: laguna_call(st, True, True), None,
         wide=True),
]


def canon(form, state, raw, kind):
    """The output of `form` as [tokens, heads, D] per group."""
    if form.canon:
        return form.canon(raw)
    if kind == "prefill":
        return [chunks_canon(state, raw)]
    return laguna_canon(state, raw, "blocks" in form.name)


def forms_of(kind, dtype):
    """The formulations for rows of `kind` with data of `dtype` (the f32
    ones only where the data is narrower)."""
    forms = {"decode": DECODE_FORMS, "prefill": PREFILL_FORMS, "laguna": LAGUNA_FORMS}[kind]
    return [f for f in forms if not f.wide or dtype != torch.float32]


# ----------------------------------------------------------------- inputs

class Inputs:
    """q per group [T, H, D] and per rotation [(k, v)] of the engines'
    layout per request [R, Hkv, S, D] (prefill: [Hkv, S, D]), with the
    positions each group's tokens sit at (for ref())."""

    def __init__(self, kind, dtype, rot, batch=8, hkv=8, s=4096, d=128, hq=32, plen=2048,
                 ndec=6, lchunk=512, window=512, heads=(48, 64), block=None):
        self.kind, self.ndec, self.block = kind, ndec, block
        if kind == "decode":
            self.q = [huge(rand((batch, hq, d), dtype))]
            self.kv = [[(huge(rand((batch, hkv, s, d), dtype)), huge(rand((batch, hkv, s, d), dtype)))]
                       for _ in range(rot)]
            self.windows = [-1]
        elif kind == "prefill":
            self.block = block or 256
            self.q = [huge(rand((plen, hq, d), dtype))]
            self.kv = [[(huge(rand((hkv, plen, d), dtype)), huge(rand((hkv, plen, d), dtype)))]
                       for _ in range(rot)]
            self.windows = [-1]
        else:
            self.block = block or 128
            self.q = [huge(rand((ndec + lchunk, h, d), dtype)) for h in heads]
            self.kv = [[(huge(rand((ndec + 1, hkv, s, d), dtype)),
                         huge(rand((ndec + 1, hkv, s, d), dtype)))] for _ in range(rot)]
            self.windows = [-1, window]

    def tokens(self, gi, sample):
        """(token index, request's k/v index or None, position) of the
        tokens ref() checks in group gi: at most `sample` of each part."""
        k = self.kv[0][0][0]
        if self.kind == "decode":
            return [(t, t, k.shape[2] - 1) for t in range(self.q[0].shape[0])]
        n = self.q[gi].shape[0] - (self.ndec if self.kind == "laguna" else 0)
        m = min(sample, n)  # spread evenly, first and last included
        pick = sorted({round(i * (n - 1) / max(1, m - 1)) for i in range(m)})
        if self.kind == "prefill":
            return [(i, None, i) for i in pick]
        s = k.shape[2]
        return ([(t, t, s - 1) for t in range(self.ndec)] +
                [(self.ndec + i, self.ndec, s - n + i) for i in pick])


def ref(x, gi, rot, toks):
    """float64 [len(toks), H, D]: each token's attention over its keys."""
    k, v = x.kv[rot][0]
    q, window = x.q[gi], x.windows[gi]
    out = []
    for t, req, p in toks:
        kk, vv = (k, v) if req is None else (k[req], v[req])
        lo = max(0, p - (window - 1)) if window > 0 else 0
        hkv, hq, d = kk.shape[0], q.shape[1], q.shape[2]
        qt = q[t].double().reshape(hkv, hq // hkv, d)
        s = torch.matmul(qt, kk[:, lo:p + 1].double().transpose(-1, -2)) / math.sqrt(d)
        out.append(torch.matmul(torch.softmax(s, dim=-1), vv[:, lo:p + 1].double()).reshape(hq, d))
    return torch.stack(out)
