/*
 * test_compare.c — the error models (cmp_error_model), the reference's
 * intervals under them (ref_attention_range) and the comparison rules
 * (cmp_compare, cmp_tolerance), against engines emulated here in their
 * declared precision.
 *
 * Covers: an fp32 online-softmax engine (keys ascending, a rescale at
 * every new maximum, optional split-KV merge) stays inside the fp32
 * model's intervals on uniform, constant (systematic rounding), monotone
 * ALiBi, heavy-tailed, tiny, huge, subnormal and soft-capped values; an
 * engine that rounds q to f16 and accumulates P.V in f16 (ggml's CPU
 * flash attention) stays inside its model's intervals, including a
 * 4096-key constant row where f16 stagnates, and escapes the fp32
 * model's; overflow of the declared precision and NaN inputs leave
 * elements unjudged, and only those; cmp_compare's point, interval,
 * unjudged and infinity rules; the model's figures.
 */
#include <criterion/criterion.h>

#include "../../harness/judge/compare.h"
#include "../../harness/judge/ref.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ fixture */

enum { H = 2, HKV = 1, BS = 16 };

typedef struct fx {
    int32_t D, q_len, seq, nb;
    int32_t qsl[2], seqv[1], *bt;
    uint8_t causal[1];
    float *q, *k, *v, slopes[H], sinks[H];
    int alibi, sink;
    int32_t left;
    double softcap, scale;
} fx;

static uint64_t g_rng = 0x0123456789abcdefull;
static double urand(void) {   /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * 0x1.0p-52 - 1.0;
}

static fx fx_make(int32_t D, int32_t q_len, int32_t seq) {
    fx f;
    memset(&f, 0, sizeof f);
    f.D = D, f.q_len = q_len, f.seq = seq;
    f.nb = (seq + BS - 1) / BS;
    f.qsl[1] = q_len;
    f.seqv[0] = seq;
    f.causal[0] = 1;
    f.left = -1;
    f.bt = malloc((size_t)f.nb * sizeof(int32_t));
    f.k = malloc((size_t)f.nb * BS * HKV * (size_t)D * sizeof(float));
    f.v = malloc((size_t)f.nb * BS * HKV * (size_t)D * sizeof(float));
    f.q = malloc((size_t)q_len * H * (size_t)D * sizeof(float));
    cr_assert(f.bt && f.k && f.v && f.q);
    for (int32_t j = 0; j < f.nb; j++) f.bt[j] = f.nb - 1 - j;   /* reversed */
    for (size_t i = 0; i < (size_t)f.nb * BS * D; i++)
        f.k[i] = (float)urand(), f.v[i] = (float)urand();
    for (size_t i = 0; i < (size_t)q_len * H * D; i++) f.q[i] = (float)urand();
    for (int h = 0; h < H; h++) f.slopes[h] = (float)exp2(-(h + 1)), f.sinks[h] = (float)urand();
    return f;
}

static void fx_free(fx *f) { free(f->bt), free(f->k), free(f->v), free(f->q); }

static size_t fx_n(const fx *f) { return (size_t)f->q_len * H * (size_t)f->D; }

/* K (or V) element d of token k (KV head 0). */
static float *kv_at(const fx *f, float *base, int32_t k, int32_t d) {
    return base + ((size_t)f->bt[k / BS] * BS + (size_t)(k % BS)) * (size_t)f->D + (size_t)d;
}

static ref_input fx_input(const fx *f) {
    ref_input in;
    memset(&in, 0, sizeof in);
    in.num_reqs = 1;
    in.query_start_loc = f->qsl;
    in.seq_lens = f->seqv;
    in.causal = f->causal;
    in.block_table = f->bt;
    in.block_table_stride = f->nb;
    in.num_blocks = f->nb;
    in.num_heads = H;
    in.num_kv_heads = HKV;
    in.head_dim = f->D;
    in.block_size = BS;
    in.window_left = f->left;
    in.window_right = -1;
    in.softcap = f->softcap;
    in.scale = f->scale;
    in.alibi_slopes = f->alibi ? f->slopes : NULL;
    in.sinks = f->sink ? f->sinks : NULL;
    in.q = f->q;
    in.q_dtype = AG_F32;
    in.k_rows = f->k;
    in.v_rows = f->v;
    in.kv_dtype = AG_F32;
    in.k_scale = in.v_scale = 1;
    return in;
}

/* ---------------------------------------------------------- emulators */

/* x rounded to the nearest IEEE half (ties to even), as a double: the
 * quantum of x's binade (2^-24 below the normal range), overflow at 65520. */
static double f16r(double x) {
    if (fabs(x) >= 65520.0) return copysign(INFINITY, x);
    if (x == 0 || isnan(x)) return x;
    int e;
    frexp(x, &e);   /* |x| in [2^(e-1), 2^e) */
    const double quantum = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
    return nearbyint(x / quantum) * quantum;
}

/* An engine in its declared precision, per query row: logits from q
 * (rounded to f16 when q16; the scale applied to q in fp32 before the dot
 * product when !q16, after it when q16, as ggml does), an online softmax
 * over keys in ascending order rescaling at every new maximum, within
 * `splits` contiguous pieces merged at the end; P.V accumulated in fp32,
 * or in f16 (acc16: each product-add and each rescale rounded to f16);
 * the row sum in fp32. */
static void emulate(const fx *f, int q16, int acc16, int splits, float *out) {
    const int32_t D = f->D;
    const float scale = (float)(f->scale > 0 ? f->scale : 1.0 / sqrt((double)D));
    double *acc = malloc((size_t)D * sizeof(double)), *pa = malloc((size_t)D * sizeof(double));
    cr_assert(acc && pa);
    for (int32_t i = 0; i < f->q_len; i++) {
        const int32_t p = f->seq - f->q_len + i;
        const int32_t k0 = f->left >= 0 && p - f->left > 0 ? p - f->left : 0, k1 = p;
        for (int h = 0; h < H; h++) {
            const float *q = f->q + ((size_t)i * H + (size_t)h) * (size_t)D;
            float M = f->sink ? f->sinks[h] : -INFINITY, L = f->sink ? 1.0f : 0.0f;
            for (int32_t d = 0; d < D; d++) acc[d] = 0;
            const int32_t len = k1 - k0 + 1;
            for (int s = 0; s < splits; s++) {
                const int32_t a = k0 + len * s / splits, b = k0 + len * (s + 1) / splits;
                float m = -INFINITY, l = 0;
                for (int32_t d = 0; d < D; d++) pa[d] = 0;
                for (int32_t k = a; k < b; k++) {
                    float x = 0;
                    for (int32_t d = 0; d < D; d++) {
                        const float qd = q16 ? (float)f16r(q[d]) : q[d] * scale;
                        x += qd * *kv_at(f, f->k, k, d);
                    }
                    if (q16) x *= scale;
                    if (f->softcap > 0) x = (float)f->softcap * tanhf(x / (float)f->softcap);
                    if (f->alibi) x += f->slopes[h] * (float)(k - p);
                    float w = 1.0f;
                    if (x > m) {
                        const float r = expf(m - x);
                        l *= r;
                        for (int32_t d = 0; d < D; d++)
                            pa[d] = acc16 ? f16r((float)pa[d] * r) : (double)((float)pa[d] * r);
                        m = x;
                    } else {
                        w = expf(x - m);
                    }
                    l += w;
                    for (int32_t d = 0; d < D; d++) {
                        const float t = (float)pa[d] + w * *kv_at(f, f->v, k, d);
                        pa[d] = acc16 ? f16r(t) : (double)t;
                    }
                }
                /* merge the piece (and the sink, weight 1 at M) */
                const float Mn = m > M ? m : M;
                const float ra = expf(M - Mn), rb = expf(m - Mn);
                L = L * ra + l * rb;
                for (int32_t d = 0; d < D; d++) {
                    const float t = (float)acc[d] * ra + (float)pa[d] * rb;
                    acc[d] = acc16 ? f16r(t) : (double)t;
                }
                M = Mn;
            }
            float *o = out + ((size_t)i * H + (size_t)h) * (size_t)D;
            for (int32_t d = 0; d < D; d++) o[d] = (float)acc[d] * (1.0f / L);
        }
    }
    free(acc), free(pa);
}

/* The reference's intervals under prec; the emulated output must pass
 * cmp_compare (f32 output: no conversion to add).  Returns the largest
 * half-width relative to the largest |v| (for the non-vacuity checks). */
static double inside(const fx *f, ag_precision prec, const float *got, const char *what,
                     size_t *unjudged) {
    const ref_input in = fx_input(f);
    const size_t n = fx_n(f);
    double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
    double *hi = malloc(n * sizeof(double));
    cr_assert(val && lo && hi);
    cr_assert_eq(ref_attention_range(&in, cmp_error_model(prec, AG_F32, AG_F32, f->D), val, lo,
                                     hi), 0, "%s", what);
    cmp_result r;
    const int ok = cmp_compare(val, lo, hi, got, AG_F32, n, cmp_tolerance(AG_F32), &r);
    cr_assert(ok, "%s: %zu of %zu outside; element %zu: got %.9g, exact %.9g, allowed "
                  "[%.9g, %.9g]", what, r.bad, n, r.worst, (double)got[r.worst], val[r.worst],
              lo[r.worst], hi[r.worst]);
    double vmax = 0, w = 0;
    for (size_t i = 0; i < (size_t)f->nb * BS * f->D; i++) vmax = fmax(vmax, fabs(f->v[i]));
    for (size_t i = 0; i < n; i++)
        if (isfinite(hi[i] - lo[i])) w = fmax(w, (hi[i] - lo[i]) / 2);
    if (unjudged) *unjudged = r.unjudged;
    free(val), free(lo), free(hi);
    return w / vmax;
}

static const ag_precision P32 = {AG_F32, AG_F32, AG_F32, 0};
static const ag_precision GGML = {AG_F16, AG_F32, AG_F16, 1};

/* ------------------------------------------------- the fp32 engine */

Test(compare, fp32_engine_inside_its_intervals, .timeout = 120) {
    for (int sc = 0; sc < 9; sc++) {
        const int32_t D = sc == 1 || sc == 2 ? 16 : 64;
        const int32_t seq = sc == 1 ? 3000 : sc == 2 ? 2000 : 300;
        const int32_t q_len = sc == 1 || sc == 2 ? 2 : 8;
        fx f = fx_make(D, q_len, seq);
        const size_t kvn = (size_t)f.nb * BS * (size_t)D;
        const char *what = "uniform";
        switch (sc) {
        case 1: /* every key and value row equal: equal weights, systematic sums */
            what = "constant rows";
            for (size_t i = 0; i < kvn; i++) f.k[i] = f.k[i % D], f.v[i] = f.v[i % D];
            break;
        case 2: /* equal K, ALiBi: logits rise key by key, each a new maximum */
            what = "monotone alibi";
            for (size_t i = 0; i < kvn; i++) f.k[i] = f.k[i % D];
            f.alibi = 1, f.sink = 1;
            f.slopes[0] = 1e-4f, f.slopes[1] = 3e-3f;
            break;
        case 3: /* heavy tails: one value in 50 a thousand times larger */
            what = "outliers";
            for (size_t i = 0; i < kvn; i++)
                if (i % 50 == 7) f.v[i] *= 1000.0f;
            break;
        case 4: /* tiny V, large logits */
            what = "tiny v, large q k";
            for (size_t i = 0; i < kvn; i++) f.v[i] *= 0x1.0p-24f, f.k[i] *= 8;
            for (size_t i = 0; i < fx_n(&f); i++) f.q[i] *= 8;
            break;
        case 5: /* subnormal V */
            what = "subnormal v";
            for (size_t i = 0; i < kvn; i++) f.v[i] *= 0x1.0p-130f;
            break;
        case 6: /* soft cap with large logits, window, sinks */
            what = "softcap";
            for (size_t i = 0; i < fx_n(&f); i++) f.q[i] *= 30;
            f.softcap = 5, f.left = 40, f.sink = 1;
            break;
        case 7: /* huge values, fp32's range */
            what = "huge v";
            for (size_t i = 0; i < kvn; i++) f.v[i] *= 1e36f;
            break;
        default: /* uniform, and split into pieces */
            break;
        }
        float *got = malloc(fx_n(&f) * sizeof(float));
        emulate(&f, 0, 0, sc == 8 ? 3 : 1, got);
        size_t unj;
        const double w = inside(&f, P32, got, what, &unj);
        cr_assert_eq(unj, 0, "%s: %zu unjudged", what, unj);
        if (sc == 0 || sc == 8) cr_assert(w < 1e-4, "%s: half-width %.3g of max |v|", what, w);
        free(got);
        fx_free(&f);
    }
}

/* ---------------------------------------- the f16-accumulating engine */

Test(compare, f16_accumulating_engine_inside_its_intervals, .timeout = 120) {
    for (int sc = 0; sc < 3; sc++) {
        const int32_t seq = sc == 0 ? 64 : sc == 1 ? 512 : 4096;
        fx f = fx_make(32, 2, seq);
        const size_t kvn = (size_t)f.nb * BS * 32;
        if (sc == 2) /* a flat row of ones: an f16 sum of 1s stops at 2048 */
            for (size_t i = 0; i < kvn; i++) f.k[i] = 0, f.v[i] = 1;
        float *got = malloc(fx_n(&f) * sizeof(float));
        emulate(&f, 1, 1, 1, got);
        size_t unj;
        const double w = inside(&f, GGML, got, sc == 2 ? "stagnating" : "uniform", &unj);
        cr_assert_eq(unj, 0);
        if (sc == 0) cr_assert(w < 0.05, "64 keys: half-width %.3g of max |v|", w);
        if (sc == 2) {
            /* the emulation does stagnate, and the fp32 model rejects it */
            cr_assert(fabs(got[0] - 1.0f) > 0.1f, "no stagnation: %g", (double)got[0]);
            const ref_input in = fx_input(&f);
            const size_t n = fx_n(&f);
            double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
            double *hi = malloc(n * sizeof(double));
            cr_assert_eq(ref_attention_range(&in, cmp_error_model(P32, AG_F32, AG_F32, 32), val,
                                             lo, hi), 0);
            cr_assert(!cmp_compare(val, lo, hi, got, AG_F32, n, cmp_tolerance(AG_F32), NULL));
            free(val), free(lo), free(hi);
        }
        free(got);
        fx_free(&f);
    }
}

/* ----------------------------------------------------------- unjudged */

/* Lo/hi of layer f under prec; returns the number of unjudged elements. */
static size_t count_unjudged(const ref_input *in, ag_precision prec, size_t n) {
    double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
    double *hi = malloc(n * sizeof(double));
    cr_assert(val && lo && hi);
    cr_assert_eq(ref_attention_range(in, cmp_error_model(prec, in->q_dtype, in->kv_dtype,
                                                         in->head_dim), val, lo, hi), 0);
    size_t u = 0;
    for (size_t i = 0; i < n; i++) {
        const int open = lo[i] == -INFINITY && hi[i] == INFINITY;
        cr_assert(open || (lo[i] <= val[i] && val[i] <= hi[i]), "element %zu", i);
        u += open;
    }
    free(val), free(lo), free(hi);
    return u;
}

/* Where the declared precision must overflow (an f16 P.V sum of values
 * near its range, an f16 q beyond it, an fp8 value times its scale
 * beyond fp32) or a NaN reaches an element, it is unjudged; only there. */
Test(compare, overflow_and_nan_leave_elements_unjudged) {
    fx f = fx_make(8, 3, 8);
    const size_t n = fx_n(&f);
    ref_input in = fx_input(&f);
    cr_assert_eq(count_unjudged(&in, GGML, n), 0);
    cr_assert_eq(count_unjudged(&in, P32, n), 0);

    /* V column 3 at 30000: 8 keys of it can pass 65504 in an f16 sum */
    for (int32_t k = 0; k < 8; k++) *kv_at(&f, f.v, k, 3) = 30000.0f;
    cr_assert_eq(count_unjudged(&in, GGML, n), (size_t)3 * H);   /* dim 3 of every row */
    cr_assert_eq(count_unjudged(&in, P32, n), 0);
    for (int32_t k = 0; k < 8; k++) *kv_at(&f, f.v, k, 3) = 0.5f;

    /* q row 1 of head 0 beyond f16 */
    f.q[(1 * H + 0) * 8 + 2] = 1e5f;
    cr_assert_eq(count_unjudged(&in, GGML, n), 8);
    cr_assert_eq(count_unjudged(&in, P32, n), 0);
    f.q[(1 * H + 0) * 8 + 2] = 0.5f;

    /* a NaN in K token 6: rows that see it (positions >= 6) */
    *kv_at(&f, f.k, 6, 0) = NAN;
    cr_assert_eq(count_unjudged(&in, P32, n), (size_t)2 * H * 8);   /* positions 6 and 7 */
    *kv_at(&f, f.k, 6, 0) = 0.5f;

    /* fp8 K whose scale takes 448 beyond fp32 */
    uint8_t *kc = calloc((size_t)f.nb * BS * 8, 1), *vc = calloc((size_t)f.nb * BS * 8, 1);
    cr_assert(kc && vc);
    kc[((size_t)f.bt[0] * BS + 7) * 8 + 1] = 0x7e;   /* token 7: 448 */
    in.k_rows = kc, in.v_rows = vc, in.kv_dtype = AG_FP8_E4M3;
    in.k_scale = 1e36, in.v_scale = 1;
    cr_assert_eq(count_unjudged(&in, P32, n), (size_t)1 * H * 8);   /* position 7 only */
    free(kc), free(vc);
    fx_free(&f);
}

/* ------------------------------------------------------ cmp_compare */

Test(compare, rules) {
    const double ref[5] = {0.5, 1.0, -2.0, 70000.0, 0.25};
    const double lo[5] = {0.49, 1.0, -2.5, 69000.0, -INFINITY};
    const double hi[5] = {0.51, 1.0, -1.5, 71000.0, INFINITY};
    float g[5] = {0.5f, 1.0f, -2.0f, INFINITY, NAN};
    cmp_result r;
    const cmp_tol t32 = cmp_tolerance(AG_F32);
    cr_assert(cmp_compare(ref, lo, hi, g, AG_F32, 5, t32, &r) == 0);   /* inf below FLT_MAX */
    cr_assert_eq(r.bad, 1);
    cr_assert_eq(r.worst, 3);
    cr_assert_eq(r.unjudged, 1);   /* the NaN sits in an open interval */
    g[3] = 70500.0f;
    cr_assert(cmp_compare(ref, lo, hi, g, AG_F32, 5, t32, &r));
    g[0] = 0.52f;   /* outside [0.49, 0.51], no tolerance on f32 */
    cr_assert(!cmp_compare(ref, lo, hi, g, AG_F32, 5, t32, &r));
    cr_assert_eq(r.worst, 0);
    cr_assert(fabs(r.max_abs - (0.52 - 0.51)) < 1e-6);
    cr_assert(fabs(r.err_abs - 500.0) < 1e-9, "%g", r.err_abs);   /* 70500 vs 70000 */
    cr_assert(fabs(r.err_rel - ((double)0.52f - 0.5) / 0.5) < 1e-12, "%g", r.err_rel);
    /* without intervals: the point; NaN fails */
    g[0] = 0.5f;
    cr_assert(!cmp_compare(ref, NULL, NULL, g, AG_F32, 5, t32, &r));
    cr_assert_eq(r.bad, 2);   /* 70500 against 70000, and the NaN */
    cr_assert(!cmp_compare(ref, lo, NULL, g, AG_F32, 5, t32, &r));

    /* f16 output: 70000 is beyond 65520, so inf is the right answer there
     * and a finite 65504 is not; 0.5 within 2^-11 relative */
    const uint16_t h[4] = {0x3800 /* 0.5 */, 0x3c00 /* 1 */, 0xc000 /* -2 */, 0x7c00 /* inf */};
    const cmp_tol t16 = cmp_tolerance(AG_F16);
    cr_assert(cmp_compare(ref, lo, hi, h, AG_F16, 4, t16, &r), "bad %zu", r.bad);
    const uint16_t h2[4] = {0x3800, 0x3c00, 0xc000, 0x7bff /* 65504 */};
    cr_assert(!cmp_compare(ref, lo, hi, h2, AG_F16, 4, t16, &r));
    const uint16_t h3[4] = {0x3801 /* 0.50049 */, 0x3c00, 0xc000, 0x7c00};
    const double pt[4] = {0.50026, 1, -2, 70000}, plo[4] = {0.50026, 1, -2, 69000};
    const double phi[4] = {0.50026, 1, -2, 71000};
    cr_assert(cmp_compare(pt, plo, phi, h3, AG_F16, 4, t16, &r));   /* rounds to 0x3801 */
}

Test(compare, tolerances_and_models) {
    cmp_tol t = cmp_tolerance(AG_F32);
    cr_assert(t.atol == 0 && t.rtol == 0);
    t = cmp_tolerance(AG_BF16);
    cr_assert(t.rtol == 0x1.0p-8 && t.atol == 0x1.0p-126);
    t = cmp_tolerance(AG_F16);
    cr_assert(t.rtol == 0x1.0p-11 && t.atol == 0x1.0p-25);

    const double u = 0x1.0p-24;
    ref_model m = cmp_error_model(P32, AG_F32, AG_F32, 128);
    cr_assert(m.rel == 131 * u && m.wrel == 0 && m.uacc == u && m.qmax == INFINITY);
    m = cmp_error_model(P32, AG_F32, AG_BF16, 128);   /* q as two bf16 terms */
    cr_assert(m.rel == 0x1.0p-16 + 259 * u);
    const ag_precision bf = {AG_BF16, AG_BF16, AG_F32, 0};
    m = cmp_error_model(bf, AG_F32, AG_BF16, 64);
    cr_assert(m.rel == 0x1.0p-8 + 67 * u && m.wrel == -log1p(-0x1.0p-8));
    cr_assert(m.kflush == 0x1.0p-126 && m.vflush == 0x1.0p-126);
    m = cmp_error_model(GGML, AG_F32, AG_F16, 64);
    cr_assert(m.rel == 0x1.0p-11 + 67 * u && m.qmax == 65520.0 && m.wrel == 0);
    cr_assert(m.uacc > 0x1.0p-11 && m.uacc < 0x1.0p-11 + 0x1.0p-23 && m.accmax == 65520.0);
    cr_assert(m.accabs == 0x1.0p-25);
    const ag_precision pf16 = {AG_F32, AG_F16, AG_F32, 0};
    m = cmp_error_model(pf16, AG_F32, AG_F32, 64);
    cr_assert(m.wrel == -log1p(-0x1.0p-11) && m.wabs == 0x1.0p-25);
}
