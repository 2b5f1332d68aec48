/*
 * compare.c — the ONE place where the differential oracle's error figures
 * are chosen: the per-type rounding facts, the error model of an engine's
 * declared precision (cmp_error_model, read by ref_range.c), the output
 * conversion's tolerance, and the element-wise comparison.  The
 * derivations are in docs/tolerances.md; the comments here say what each
 * figure stands for.
 *
 * Owns: cmp_tolerance, cmp_error_model, cmp_compare, cmp_elem_get.
 * Element decoding is the ABI's (ag_dtype_decode, include/attnguard/dtype.h): one decoder.
 */
#include "compare.h"
#include "ref.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define U32 0x1.0p-24

/* Rounding to nearest even into a binary format with p significand bits:
 * relative error <= unit = 2^-p for normal results, absolute <= half the
 * subnormal spacing below them (sub), and values at or above ovf round to
 * infinity (to NaN for e4m3fn, which has none). */
typedef struct type_facts {
    double unit, sub, ovf;
} type_facts;

static type_facts facts(ag_dtype t) {
    switch (t) {
    case AG_BF16: return (type_facts){0x1.0p-8, 0x1.0p-134, 0x1.fep127};
    case AG_F16: return (type_facts){0x1.0p-11, 0x1.0p-25, 65520.0};
    case AG_FP8_E4M3: return (type_facts){0x1.0p-4, 0x1.0p-10, 464.0};
    case AG_FP8_E5M2: return (type_facts){0x1.0p-3, 0x1.0p-17, 61440.0};
    case AG_F32:
    default: return (type_facts){U32, 0x1.0p-150, 0x1.ffffffp127};
    }
}

/* Below this, VDPBF16PS (and bf16 converters) read or write zero: the
 * absolute error of a bf16 step in the engines we drive. */
#define BF16_FLUSH 0x1.0p-126

/*
 * The model of prec (figures derived in docs/tolerances.md, "The rounding
 * models"):
 *  - logits: q rounded to q_dot (relative unit, absolute sub, or the
 *    bf16 flush), then fp32 products summed in any order: D + 3 fp32
 *    roundings per term (the q x scale product, the scale's own rounding,
 *    the sum); with bf16 K and q_dot F32, q as two bf16 terms (remainder
 *    <= 2^-16 |q|, 2D products); fp8 K: one more rounding (x k_scale);
 *  - an f16 q_dot overflows at 65520 (a bf16 or fp32 one cannot be
 *    forced to: engines rescale q by powers of two, attnguard does);
 *  - exp within 4 ulp (8 U32); weights rounded to p_dot (none for F32),
 *    absolute error at least 2^-126 (exp results that flush);
 *  - P.V steps: F32 one fp32 rounding; a narrower acc an fp32 rounding
 *    (the fused product-add) then one to acc; absolute sub (or the bf16
 *    flush); acc's overflow threshold.
 */
ref_model cmp_error_model(ag_precision prec, ag_dtype q_dtype, ag_dtype kv_dtype,
                          int32_t head_dim) {
    (void)q_dtype;   /* the inputs are the reference's too: no error of their own */
    const double D = head_dim > 0 ? (double)head_dim : 1.0;
    const type_facts qf = facts(prec.q_dot), pf = facts(prec.p_dot), af = facts(prec.acc);
    const int q32 = prec.q_dot == AG_F32, qbf = prec.q_dot == AG_BF16;
    const int pbf = prec.p_dot == AG_BF16;
    /* q_dot a block type (ggml: q to K's vec_dot type, q8_0): per block of
     * 32, n = round(x / d) with d = amax / 127 stored as f16, so each
     * element moves by at most d/2 + 127 |d - f16(d)| <= amax (1/254 +
     * 2^-11) (qblock, with slack for the fp32 quotient), or by 127 2^-25
     * where d is an f16 subnormal or flushes to 0 (qabs); d overflows f16
     * past amax = 65504 127 (qmax).  docs/tolerances.md, "Block types". */
    const int qblk = ag_dtype_block(prec.q_dot) > 1;
    ref_model m;
    memset(&m, 0, sizeof m);
    m.u = U32;
    m.fmax = 0x1.ffffffp127;
    m.rel = (q32 || qblk ? 0.0 : qf.unit) + (D + 3.0) * U32;
    /* q32 with a bf16 cache: an engine may take q as two bf16 terms on
     * bf16 dot-product instructions (attnguard's pairs tile on VDPBF16PS):
     * q's remainder term, and the instruction reads bf16 subnormals (of K,
     * and of that remainder) as zero. */
    const int pairs = q32 && kv_dtype == AG_BF16;
    if (pairs) m.rel += 0x1.0p-16 + D * U32;
    if (ag_dtype_is_fp8(kv_dtype)) m.rel += U32;
    m.qabs = (qbf || pairs) ? BF16_FLUSH : qf.sub;
    m.kflush = (qbf || pairs) ? BF16_FLUSH : 0x1.0p-150;
    /* VDPBF16PS also flushes products below 2^-126 (a huge scale over tiny
     * K: corpus/cases/bf16-dot-flushed-products.case) */
    m.pflush = (qbf || pairs) ? BF16_FLUSH : 0.0;
    /* bf16 has fp32's exponent range: q overflows it only near FLT_MAX, which
     * an engine that rescales huge rows never meets (q_raw 0) */
    m.qmax = q32 || (qbf && !prec.q_raw) ? INFINITY : qf.ovf;
    m.q_unscaled = prec.q_raw != 0;
    if (qblk) {
        const int one = kv_dtype == AG_Q4_1 || kv_dtype == AG_Q5_1;
        m.qblock = 1.0 / 254.0 + 0x1.0p-11 + 0x1.0p-16;
        m.qabs = 127.0 * 0x1.0p-25;
        m.qmax = 65504.0 * 127.0;
        if (one) {
            /* an _1 cache's dot reads q's block sum as its own f16, s =
             * f16(d sum n) (q8_1), times the block's offset m: s and f16(d)
             * each off by 2^-11, d |sum n| <= 1.15 |q_b|_1, |m| <= max|k_b|
             * (the offset is an element of the block), so by Cauchy-Schwarz
             * per block 2^-10 1.15 sqrt(32) of ms (rel), or 2^-25 (1 + 32
             * 127) |k_b|_1 with subnormal f16s (qabs); s overflows f16 past
             * |q_b|_1 = 65504 / 1.15 (qmax); and the terms d_k d_q sum and
             * m s, up to 3 sqrt(32) ms each, round on their way (rel) */
            m.rel += 0x1.0p-10 * 1.15 * sqrt(32.0) + 64.0 * U32;
            m.qabs += (1.0 + 32.0 * 127.0) * 0x1.0p-25;
            m.qmax = 65504.0 / (1.15 * 32.0);
        }
    }
    m.uexp = 8.0 * U32;
    m.wrel = prec.p_dot == AG_F32 ? 0.0 : -log1p(-pf.unit);
    m.wabs = fmax(BF16_FLUSH, pbf ? BF16_FLUSH : pf.sub);
    m.vflush = pbf ? BF16_FLUSH : 0x1.0p-150;
    m.uacc = prec.acc == AG_F32 ? U32 : af.unit + U32 + af.unit * U32;
    m.accabs = (pbf || prec.acc == AG_BF16) ? BF16_FLUSH : fmax(af.sub, 0x1.0p-150);
    m.accmax = af.ovf;
    m.logit_max = FLT_MAX;
    m.q_held = INFINITY;
    return m;
}

ref_model cmp_engine_model(ag_precision prec, const ag_caps *caps, ag_dtype q_dtype,
                           ag_dtype kv_dtype, int32_t head_dim) {
    ref_model m = cmp_error_model(prec, q_dtype, kv_dtype, head_dim);
    if (!caps) return m;
    /* What the engine declares, not a rule for every engine: with no
     * logit limit it is held to its rounding on every row whose Q.K does
     * not overflow by K alone (q counted up to AG_NO_LIMIT_Q_HELD, which
     * it takes down itself past that), and with AG_CAP_WIDE_ACC where its
     * accumulator type would overflow too (it carries those rows wider,
     * which its rounding bound covers). */
    if (caps->max_abs_logit > 0)
        m.logit_max = fmin((double)caps->max_abs_logit, FLT_MAX);
    else
        m.q_held = (double)AG_NO_LIMIT_Q_HELD;
    if (caps->flags & AG_CAP_WIDE_ACC) m.accmax = INFINITY;
    return m;
}

/*
 * The output conversion: the engine's value y (inside the reference's
 * interval, which holds all of its arithmetic) is rounded once to the
 * output dtype: |g - y| <= unit |y| above the normal range, half the
 * subnormal spacing below (bf16 converters may flush: 2^-126).  For f32
 * output y is the output: nothing to add.
 */
cmp_tol cmp_tolerance(ag_dtype out_dtype) {
    cmp_tol t = {0.0, 0.0};
    if (out_dtype == AG_F32) return t;
    const type_facts f = facts(out_dtype);
    t.rtol = f.unit;
    t.atol = out_dtype == AG_BF16 ? BF16_FLUSH : f.sub;
    return t;
}

double cmp_elem_get(const void *buf, size_t i, ag_dtype dtype) {
    if (!buf) return NAN;
    return ag_dtype_decode(buf, i, dtype);
}

int cmp_compare(const double *ref, const double *lo, const double *hi, const void *got,
                ag_dtype out_dtype, size_t n, cmp_tol tol, cmp_result *res) {
    cmp_result r;
    memset(&r, 0, sizeof r);
    r.n = n;
    if (!ref || (!got && n > 0) || !lo != !hi) {
        r.bad = n ? n : 1;
        if (res) *res = r;
        return 0;
    }
    const double ovf = facts(out_dtype).ovf;
    double worst_excess = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        const double a = lo ? lo[i] : ref[i], b = hi ? hi[i] : ref[i];
        if (lo && a == -INFINITY && b == INFINITY) {
            r.unjudged++;
            continue;
        }
        const double g = cmp_elem_get(got, i, out_dtype);
        double diff, e;
        if (isinf(g)) {
            /* right only where the value may reach the overflow threshold */
            const int ok = g > 0 ? b >= ovf : a <= -ovf;
            e = g > 0 ? b : a;
            diff = ok ? 0.0 : INFINITY;
        } else {
            e = g < a ? a : g > b ? b : g;   /* the nearest allowed value */
            diff = fabs(g - e);
        }
        if (isnan(diff) || isnan(a) || isnan(b)) {   /* NaN in either: a violation */
            if (worst_excess < INFINITY) r.worst = i;  /* the first one */
            r.bad++;
            r.max_abs = r.max_rel = worst_excess = INFINITY;
            continue;
        }
        if (isfinite(g)) {   /* the error against the exact value, for reports */
            const double err = fabs(g - ref[i]);
            const double erel = err > 0 ? (ref[i] != 0 ? err / fabs(ref[i]) : INFINITY) : 0.0;
            if (err > r.err_abs) r.err_abs = err;
            if (erel > r.err_rel) r.err_rel = erel;
        }
        const double rel = diff > 0 ? (e != 0 ? diff / fabs(e) : INFINITY) : 0.0;
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
