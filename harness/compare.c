/*
 * compare.c — the ONE place where the differential oracle's tolerances are
 * chosen and justified, and the element-wise comparison of an engine output
 * with the double-precision reference.
 *
 * Owns: cmp_tolerance, cmp_logit_error, cmp_bf16_dot_error, cmp_compare,
 * cmp_elem_get.
 * Element decoding is the reference's (ref_load), so the harness has a
 * single bf16/f16 decoder.
 */
#include "compare.h"
#include "ref.h"

#include <math.h>
#include <string.h>

/*
 * Tolerances.  An element passes when |got - ref| <= atol + rtol * |ref|.
 *
 * Facts the numbers rest on:
 *  - Q, K, V are drawn uniform in [-1, 1) and then rounded to their dtype by
 *    the harness; engine and reference read the SAME rounded values, so a
 *    bf16/f16 input adds no error to the comparison.
 *  - Every output element is a convex combination of V values (the softmax
 *    weights are >= 0 and sum to <= 1 with a sink), so |out| <= 1 and the
 *    absolute error of the weights bounds the absolute output error.
 *  - The engine computes in fp32 (unit roundoff u32 = 2^-24 ~ 6.0e-8).
 *
 * fp32 part, atol = 3e-5 (applies to every dtype):
 *  - logits: a D-term fp32 dot product (D <= ~256 in practice) has error
 *    ~ sqrt(D) * u32 * sqrt(D)/3 * scale ~ 1e-7 relative to |s| <~ 10;
 *    expf adds ~1-2 ulp.  Each weight is thus off by a relative ~1e-6 at most.
 *  - sums over n keys (n up to ~8k, split pieces merged by rescaling): the
 *    fp32 accumulation error of O and L is a random walk ~ sqrt(n) * u32 =
 *    sqrt(8192) * 6e-8 ~ 5.4e-6 in relative terms (the worst-case bound
 *    n * u32 ~ 4.9e-4 needs perfectly correlated rounding, which uniform
 *    random data does not produce).
 *  - safety factor ~5 over the sum of both (~6.5e-6) -> 3e-5.
 *  Why not looser: the bugs this harness hunts (a window one key too wide,
 *  a padding key or a stale split leaking in) move at least one weight by
 *  ~1/n, i.e. some output element by ~|V[k] - out| / n >= ~1e-4 for n <= 8k.
 *  fp32 rtol = 1e-5 covers the relative fp32 error of large outputs.
 *
 * output rounding, rtol = the output dtype's unit roundoff:
 *  - bf16 keeps 8 significant bits: round-to-nearest error <= 2^-8 * |x|
 *    (3.9e-3 relative);
 *  - f16 keeps 11 significant bits: error <= 2^-11 * |x| (4.9e-4 relative);
 *    values below 2^-14 are subnormal with absolute error <= 2^-25 (3e-8),
 *    far inside atol.
 *  The rounded value is off from the reference by at most
 *  e32 + u * (|ref| + e32) <= atol + u * |ref| (with e32 <= atol small), so
 *  rtol = u and atol = the fp32 part.  The harness does not loosen for
 *  bf16/f16 inputs (see the first fact).  A kernel that rounds
 *  intermediates is not absorbed here: the one that does (bf16 q and
 *  weights on VDPBF16PS, cmp_bf16_dot_error below) is held to a bound
 *  derived for its rounding, per element, and only where the engine says
 *  it rounds (attn_builder_info.bf16_rounding).
 */
#define TOL_F32_ATOL 3e-5
#define TOL_F32_RTOL 1e-5
#define TOL_BF16_U   0x1.0p-8
#define TOL_F16_U    0x1.0p-11

cmp_tol cmp_tolerance(ag_dtype q_dtype, ag_dtype kv_dtype, ag_dtype out_dtype) {
    (void)q_dtype;   /* inputs are read identically by engine and reference */
    (void)kv_dtype;
    cmp_tol t = {TOL_F32_ATOL, TOL_F32_RTOL};
    switch (out_dtype) {
    case AG_BF16: t.rtol += TOL_BF16_U; break;
    case AG_F16: t.rtol += TOL_F16_U; break;
    default: break;
    }
    return t;
}

/*
 * Where a fixed tolerance cannot hold: huge scales.  Every figure above
 * takes the logits' rounding to be tiny next to 1.  It is not when the
 * scale is huge (the API accepts any finite scale > 0): at scale 1.7e38 an
 * f16 dot product that cancels exactly gives the reference a logit of 0,
 * while an fp32 engine keeps a rounding residue of ~1e-8 of its terms that
 * the scale turns into ~1e30, a soft cap into +-cap; the output then lies
 * anywhere between the two mixtures (fuzz_attention found this on every
 * SIMD table: corpus/cases/huge-scale-cancel.case).  No fp32 engine can do
 * better.  So the reference estimates how far each row's output moves when
 * its logits are rounded and, for a row where that is not negligible,
 * checks the range the output may take with every logit anywhere within
 * its worst-case bound (ref_attention_range, ref_range.c), widened by the
 * same atol/rtol for everything after the logits.
 *
 * Per key, with ms = scale * sum_d |q_d k_d| (>= |x|, x the exact logit
 * before the cap), the engine's x is off by at most rel * ms:
 *  - q x scale is rounded to fp32 once (the split into a mantissa and a
 *    power of two is exact): u32 per term;
 *  - the default scale 1/sqrt(D) is itself rounded in fp32: ~u32 on x;
 *  - a D-term fp32 dot product, in any order, fused or not, is off by at
 *    most ~D u32 times the sum of its terms' magnitudes;
 *  - with bf16 KV the avx512bf16 table splits q into two bf16 terms whose
 *    remainder is <= 2^-16 |q_d|, and sums 2D products:
 *    rel = 2^-16 + (2D + 3) u32; otherwise rel = (D + 3) u32.
 * Typically it is off by about typ * ms, typ = u32: the rounding errors
 * have random signs, and the partial sums of random-signed terms are
 * ~sqrt(D) smaller than ms.  With bf16 KV add 2^-17 / sqrt(D): the q
 * remainders are independent per element, so their sum grows like sqrt(D)
 * times one term, not like ms; for the harness's inputs at scale
 * 1/sqrt(128) this predicts ~2.1e-6 per logit, near the ~2.5e-6 rms
 * kernels_avx512bf16.c measured.  The worst case sizes
 * the ranges, so they are sound; the typical figure decides which rows
 * need one, so ordinary rows keep the tight point check the hunted bugs
 * need (the worst case would put ranges of ~1e-4 on ordinary bf16 rows).
 * The soft cap, exp and the sums add errors that do not grow with the
 * logit; the fixed tolerance covers them.  The cap bounds the damage
 * (tanh maps any interval inside (-cap, cap)).
 *
 * point_max = atol / 4: a row keeps its point while logits moved by their
 * typical rounding can move no element by more than that (a bound that
 * holds for any size of move: ref.c, row_range), leaving most of atol to
 * the rest.  Ordinary rows are far below it
 * (scale 1/sqrt(D), |q|, |k| < 1: ~1e-7); only large scales with near-ties
 * between keys, and huge scales with a cancelling dot, exceed it.
 */
#define U32 0x1.0p-24

ref_logit_err cmp_logit_error(ag_dtype kv_dtype, int32_t head_dim) {
    const double D = head_dim > 0 ? (double)head_dim : 1.0;
    const int bf16 = kv_dtype == AG_BF16;
    ref_logit_err e;
    e.rel = bf16 ? 0x1.0p-16 + (2.0 * D + 3.0) * U32 : (D + 3.0) * U32;
    e.typ = bf16 ? 0x1.0p-17 / sqrt(D) + U32 : U32;
    e.point_max = TOL_F32_ATOL / 4;
    e.wabs = 0;
    return e;
}

/*
 * The bf16-rounding model: what kernels_avx512bf16_lanes.c does to a
 * bf16-KV row on top of fp32 arithmetic.
 *  - q (already times the scale, in fp32) is rounded to bf16 once, round
 *    to nearest even: |dq_d| <= 2^-9 |q_d|, so a logit moves by at most
 *    2^-9 ms; the products are exact and the sums fp32 ((D + 3) u32 ms as
 *    above): rel = 2^-9 + (D + 3) u32.
 *  - every softmax weight is rounded to bf16 and the row sum adds the
 *    rounded weights, so each weight is multiplied by a factor within
 *    [1 - 2^-9, 1 + 2^-9]: a move of its logit by at most
 *    wabs = -ln(1 - 2^-9) (about 1.957e-3), whatever the logit's size.
 *  - VDPBF16PS reads bf16 subnormals as zero: a weight below 2^-126 of its
 *    chunk's largest, or a q or K element below 2^-126, drops out, which
 *    moves an output by less than 2^-126 relative: inside atol.
 * The typical moves are far smaller than these bounds (random signs), but
 * the typical figure cannot decide which rows need slack here: every row
 * moves by some multiple of 2^-9.  So every element gets o +- its bound
 * (ref.c, row_bound) over the worst-case intervals, and the fixed
 * tolerance applies beyond that.  For the harness's inputs (uniform
 * [-1, 1), D 64-128, scale 1/sqrt(D)) the bound is ~1e-3..5e-3 per element
 * where the fp32 tables are held to 3e-5: the price of the rounding.  The
 * bugs this harness hunts still show on these runs where they move an
 * output by more than that, and on every fp32 table at full sensitivity.
 */
ref_logit_err cmp_bf16_dot_error(int32_t head_dim) {
    const double D = head_dim > 0 ? (double)head_dim : 1.0;
    ref_logit_err e;
    e.rel = 0x1.0p-9 + (D + 3.0) * U32;
    e.typ = e.rel;
    e.point_max = 0;
    e.wabs = -log1p(-0x1.0p-9);
    return e;
}

double cmp_elem_get(const void *buf, size_t i, ag_dtype dtype) {
    if (!buf) return NAN;
    return ref_load(buf, i, dtype);
}

int cmp_compare(const double *ref, const double *lo, const double *hi, const void *got,
                 ag_dtype out_dtype, size_t n, cmp_tol tol, cmp_result *res) {
    cmp_result r;
    memset(&r, 0, sizeof(r));
    r.n = n;
    if (!ref || (!got && n > 0) || !lo != !hi) {
        r.bad = n ? n : 1;
        if (res) *res = r;
        return 0;
    }
    double worst_excess = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const double g = cmp_elem_get(got, i, out_dtype);
        /* the nearest allowed value: ref[i], or the range's nearest end */
        double e = ref[i];
        if (lo && hi && lo[i] < hi[i]) e = g < lo[i] ? lo[i] : g > hi[i] ? hi[i] : g;
        const double diff = fabs(g - e);
        if (isnan(diff)) {                   /* NaN/garbage in either: a violation */
            if (worst_excess < INFINITY) r.worst = i;   /* the first NaN */
            r.bad++;
            r.max_abs = INFINITY;
            r.max_rel = INFINITY;
            worst_excess = INFINITY;
            continue;
        }
        const double rel = diff / fmax(fabs(e), 1e-6);
        if (diff > r.max_abs) r.max_abs = diff;
        if (rel > r.max_rel) r.max_rel = rel;
        const double excess = diff - (tol.atol + tol.rtol * fabs(e));
        if (excess > 0) r.bad++;
        if (excess > worst_excess) {
            worst_excess = excess;
            r.worst = i;
        }
    }
    if (res) *res = r;
    return r.bad == 0;
}
