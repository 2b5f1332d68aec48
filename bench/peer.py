#!/usr/bin/python3
"""bench/peer.py — PyTorch in `make bench-peer`'s rounds.

    peer.py --serve      the peer process bench --peer --torch starts
                         (bench/run_torch.c): one row at a time, every
                         formulation of bench/peer_forms.py timed once per
                         round when the C side asks, so that PyTorch runs
                         in the same interleaved rounds as the engines
    peer.py --selftest   every formulation against a float64 loop on small
                         shapes (make test-peer)

The protocol: lines of tab-separated words on stdin/stdout.
  -> row KIND BATCH HKV DTYPE COLD THREADS   <- ready NAME...  | skip WHY
     (inputs built, every formulation run once on every rotation: untimed;
     a formulation PyTorch cannot run here is left out, and if none is
     left the row is skipped)
  -> round IT [LEAD]   <- times SEC...        (one call of each, rotation IT;
                                              LEAD 1: each timed call right
                                              after an untimed one on the
                                              rotation before, workers awake)
  -> check             <- errors ABS REL ...  (rotation 0, against float64)
  -> done              <- ok                  (the row's memory freed)
Cold rows rotate through >= 1.5 GiB of K/V copies as the engines' do.
Rows PyTorch cannot run here (fp8 caches; f16 where this build has no
half-precision CPU matmul) are skipped with the reason.  Progress and
errors go to stderr; stdout carries the protocol only.
"""
import argparse
import math
import sys
import time

try:
    import torch
except ImportError:  # the caller (mk/bench.mk) says how to install it
    torch = None

COLD_BYTES = 1.5 * 1024 ** 3  # as bench/run_inputs.h's COLD_BYTES
SAMPLE = 16                   # chunk rows per group the check compares
TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def first_line(e):
    return str(e).splitlines()[0][:120] if str(e) else type(e).__name__


class Row:
    """One bench row's inputs, its formulations' prepared states (every
    rotation) and the calls the rounds time."""

    def __init__(self, kind, batch, hkv, dtype_name, cold, threads):
        import peer_forms as pf
        self.pf = pf
        name = TORCH_DTYPES.get(dtype_name)
        if name is None:
            raise ValueError(f"torch {torch.__version__} has no {dtype_name} attention")
        dtype = getattr(torch, name)
        torch.set_num_threads(threads)
        esz = torch.tensor([], dtype=dtype).element_size()
        per_copy = {"decode": 2.0 * batch * hkv * 4096 * 128 * esz,
                    "prefill": 2.0 * hkv * 2048 * 128 * esz,
                    "laguna": 2.0 * 7 * hkv * 4096 * 128 * esz}[kind]
        self.rot = max(3, math.ceil(COLD_BYTES / per_copy)) if cold else 1
        self.kind = kind
        self.x = pf.Inputs(kind, dtype, self.rot, batch=batch, hkv=hkv)
        self.forms, self.states, self.left_out = [], [], []
        for f in pf.forms_of(kind, dtype):
            try:
                st = [f.prepare(self.x, r) for r in range(self.rot)]
                for s in st:  # the untimed pass over every rotation
                    f.call(s)
            except RuntimeError as e:  # e.g. no half-precision CPU matmul in this build
                self.left_out.append(f"{f.name}: {first_line(e)}")
                continue
            self.forms.append(f)
            self.states.append(st)
        if not self.forms:
            raise ValueError("; ".join(self.left_out))

    def round(self, it, lead=False):
        out = []
        for f, st in zip(self.forms, self.states):
            s = st[it % self.rot]
            if lead:
                f.call(st[(it - 1) % self.rot])
            t0 = time.perf_counter()
            f.call(s)
            out.append(time.perf_counter() - t0)
        return out

    def check(self):
        """(max |error|, that / max |reference|) of each formulation on
        rotation 0: every decode token, SAMPLE chunk rows per group."""
        res = []
        for f, st in zip(self.forms, self.states):
            got = self.pf.canon(f, st[0], f.call(st[0]), self.kind)
            worst, big = 0.0, 0.0
            for gi, g in enumerate(got):
                toks = self.x.tokens(gi, SAMPLE)
                want = self.pf.ref(self.x, gi, 0, toks)
                have = g[[t for t, _, _ in toks]].double()
                err = (have - want).abs().max().item()
                worst = math.inf if math.isnan(err) else max(worst, err)
                big = max(big, want.abs().max().item())
            res.append((worst, worst / big if big > 0 else math.inf))
        return res


def serve():
    out = sys.stdout

    def say(*words):
        out.write("\t".join(str(w) for w in words) + "\n")
        out.flush()

    import peer_forms as pf
    say("hello", torch.__version__, pf.RUN_NAME)
    row = None
    for line in sys.stdin:
        w = line.rstrip("\n").split("\t")
        try:
            if w[0] == "row":
                row = None
                try:
                    row = Row(w[1], int(w[2]), int(w[3]), w[4], w[5] == "1", int(w[6]))
                except (ValueError, RuntimeError, MemoryError) as e:
                    say("skip", first_line(e))
                    continue
                for why in row.left_out:
                    print(f"peer: left out {why}", file=sys.stderr)
                say("ready", *[f.name for f in row.forms])
            elif w[0] == "round":
                lead = len(w) > 2 and w[2] == "1"
                say("times", *[f"{t:.9f}" for t in row.round(int(w[1]), lead)])
            elif w[0] == "check":
                say("errors", *[f"{x:.6g}" for pair in row.check() for x in pair])
            elif w[0] == "done":
                row = None
                say("ok")
            elif w[0] == "quit":
                break
        except Exception as e:  # the C side reads the reply it waits for
            print(f"peer: {w[0]}: {e!r}", file=sys.stderr)
            say("error", first_line(e))
    return 0


def selftest():
    import peer_forms as pf
    torch.manual_seed(7)
    ok = True
    shapes = [("decode", dict(batch=2, hkv=2, hq=6, s=37, d=16)),
              ("prefill", dict(hkv=2, hq=6, plen=19, d=16, block=8)),
              ("prefill", dict(hkv=6, hq=6, plen=19, d=16, block=8)),
              ("laguna", dict(hkv=2, s=30, d=16, ndec=2, lchunk=9, window=5, heads=(6, 4),
                              block=4))]
    for (kind, kw), dt in [(s, d) for s in shapes for d in (torch.float32, torch.bfloat16)]:
        x = pf.Inputs(kind, dt, 2, **kw)
        for f in pf.forms_of(kind, dt):
            for r in range(2):
                st = f.prepare(x, r)
                got = pf.canon(f, st, f.call(st), kind)
                for gi, g in enumerate(got):
                    toks = x.tokens(gi, 1000)  # every token
                    err = (g[[t for t, _, _ in toks]].double() - pf.ref(x, gi, r, toks)).abs().max()
                    # f32 compute: 1e-5; bf16 compute (rounded weights and
                    # output) on these short rows: 3e-2
                    bound = 1e-5 if dt == torch.float32 or f.wide else 3e-2
                    good = g.shape[0] == x.q[gi].shape[0] and float(err) < bound
                    ok &= good
                    print(f"  {kind} {str(dt)[6:]:<8} {f.name:<50} rot {r} group {gi}: max |err| "
                          f"{float(err):.2e}  "
                          f"{'ok' if good else 'FAIL'}")
    for dt in (torch.float32, torch.bfloat16):
        t = torch.randn(3, 70001).to(dt)
        h = pf.huge(t)
        good = torch.equal(h, t) and h.shape == t.shape and h.data_ptr() % pf.HUGE == 0
        print(f"  {'huge copy, ' + str(dt):<44} {'ok' if good else 'FAIL'}")
        ok &= good
    print(f"selftest ({pf.RUN_NAME}, torch {torch.__version__}): {'passed' if ok else 'FAILED'}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--selftest", action="store_true",
                    help="check every formulation against a float64 loop, then exit")
    ap.add_argument("--serve", action="store_true", help="the peer process of bench --peer")
    args = ap.parse_args()
    if torch is None:
        print(f"bench-peer: {sys.executable} has no torch "
              "(Debian: apt-get install python3-torch)", file=sys.stderr)
        return 2
    if args.selftest:
        return selftest()
    if args.serve:
        return serve()
    ap.error("--serve or --selftest")
    return 2


if __name__ == "__main__":
    sys.exit(main())
