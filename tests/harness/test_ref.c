/*
 * test_ref.c — the reference (harness/judge/ref.c) against DESIGN §2, checked by
 * hand-made cases and by a brute force written here that shares nothing
 * with ref.c's code path: every key tested against the mask rule as §2
 * words it, K/V fetched element by element through the block table, sums
 * in long double.
 *
 * Covers: positions of causal and non-causal queries with q_len < seq_len
 * (they differ exactly where §2 says: with a window or ALiBi), (left,
 * right) windows, soft cap, scale, sinks, ALiBi, GQA; the block-table
 * gather with shuffled and shared blocks and the plain slot-major row
 * layout; all 256 codes of both fp8 formats against the format
 * definitions, and fp8 K/V with their scales; bf16/f16 q; refusals.
 */
#include <criterion/criterion.h>

#include "../../harness/judge/ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ fixture */

#define MAXR 4

/* One batch over f32 inputs, owned arrays. */
typedef struct fx {
    int32_t R, H, HKV, D, BS, NB, stride;
    int32_t qsl[MAXR + 1], seq[MAXR];
    uint8_t causal[MAXR];
    int32_t *bt;
    float *q, *k, *v, *slopes, *sinks;
    int32_t left, right;
    double softcap, scale;
} fx;

static uint64_t g_rng = 0x1234567887654321ull;
static double urand(void) {   /* [-1, 1) */
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * 0x1.0p-52 - 1.0;
}

/* q_len/seq per request; blocks handed out in order, or reversed when
 * shuffle (every id still unique), plus 2 spare blocks. */
static fx fx_make(int32_t R, const int32_t *q_len, const int32_t *seq, int32_t H, int32_t HKV,
                  int32_t D, int32_t BS, int shuffle) {
    fx f;
    memset(&f, 0, sizeof f);
    f.R = R, f.H = H, f.HKV = HKV, f.D = D, f.BS = BS;
    f.left = f.right = -1;
    int32_t need = 0, maxb = 0;
    f.qsl[0] = 0;
    for (int32_t r = 0; r < R; r++) {
        f.qsl[r + 1] = f.qsl[r] + q_len[r];
        f.seq[r] = seq[r];
        f.causal[r] = 1;
        const int32_t nb = (seq[r] + BS - 1) / BS;
        need += nb;
        if (nb > maxb) maxb = nb;
    }
    f.NB = need + 2;
    f.stride = maxb;
    f.bt = calloc((size_t)R * (size_t)maxb, sizeof(int32_t));
    int32_t next = 0;
    for (int32_t r = 0; r < R; r++)
        for (int32_t j = 0; j < (seq[r] + BS - 1) / BS; j++, next++)
            f.bt[r * maxb + j] = shuffle ? f.NB - 1 - next : next;
    const size_t rows = (size_t)f.NB * (size_t)BS * (size_t)HKV * (size_t)D;
    f.k = malloc(rows * sizeof(float));
    f.v = malloc(rows * sizeof(float));
    f.q = malloc((size_t)f.qsl[R] * (size_t)H * (size_t)D * sizeof(float));
    cr_assert(f.bt && f.k && f.v && f.q);
    for (size_t i = 0; i < rows; i++) f.k[i] = (float)urand(), f.v[i] = (float)urand();
    for (size_t i = 0; i < (size_t)f.qsl[R] * (size_t)H * (size_t)D; i++) f.q[i] = (float)urand();
    return f;
}

static void fx_free(fx *f) {
    free(f->bt), free(f->q), free(f->k), free(f->v), free(f->slopes), free(f->sinks);
}

static ref_input fx_input(const fx *f) {
    ref_input in;
    memset(&in, 0, sizeof in);
    in.num_reqs = f->R;
    in.query_start_loc = f->qsl;
    in.seq_lens = f->seq;
    in.causal = f->causal;
    in.block_table = f->bt;
    in.block_table_stride = f->stride;
    in.num_blocks = f->NB;
    in.num_heads = f->H;
    in.num_kv_heads = f->HKV;
    in.head_dim = f->D;
    in.block_size = f->BS;
    in.window_left = f->left;
    in.window_right = f->right;
    in.softcap = f->softcap;
    in.scale = f->scale;
    in.alibi_slopes = f->slopes;
    in.sinks = f->sinks;
    in.q = f->q;
    in.q_dtype = AG_F32;
    in.k_rows = f->k;
    in.v_rows = f->v;
    in.kv_dtype = AG_F32;
    in.k_scale = in.v_scale = 1.0;
    return in;
}

/* The brute force.  shift_noncausal: place non-causal queries as causal
 * ones (p = seq - q_len + i), the rule §2 replaced, to show where the two
 * differ. */
static void brute(const fx *f, int shift_noncausal, double *out) {
    const double scale = f->scale > 0 ? f->scale : 1.0 / sqrt((double)f->D);
    for (int32_t r = 0; r < f->R; r++) {
        const int32_t q_len = f->qsl[r + 1] - f->qsl[r], seq = f->seq[r];
        for (int32_t i = 0; i < q_len; i++) {
            const int32_t p = (f->causal[r] || shift_noncausal) ? seq - q_len + i : i;
            for (int32_t h = 0; h < f->H; h++) {
                const int32_t kvh = h / (f->H / f->HKV);
                const float *q = f->q + ((size_t)(f->qsl[r] + i) * f->H + h) * f->D;
                long double lg[256];
                int vis[256];
                long double m = f->sinks ? f->sinks[h] : -INFINITY;
                cr_assert(seq <= 256);
                for (int32_t k = 0; k < seq; k++) {
                    /* §2: causal k <= p; window: p - left <= k <= p + right */
                    vis[k] = 1;
                    if (f->causal[r] && k > p) vis[k] = 0;
                    if (f->left >= 0 && p - k > f->left) vis[k] = 0;
                    if (f->right >= 0 && k - p > f->right) vis[k] = 0;
                    if (!vis[k]) continue;
                    const int32_t blk = f->bt[r * f->stride + k / f->BS];
                    const size_t row = (size_t)blk * f->BS + k % f->BS;
                    long double dot = 0;
                    for (int32_t d = 0; d < f->D; d++)
                        dot += (long double)q[d] * f->k[(row * f->HKV + kvh) * f->D + d];
                    long double s = scale * dot;
                    if (f->softcap > 0) s = f->softcap * tanhl(s / f->softcap);
                    if (f->slopes) s += (long double)f->slopes[h] * (k - p);
                    lg[k] = s;
                    if (s > m) m = s;
                }
                for (int32_t d = 0; d < f->D; d++) {
                    long double num = 0, den = f->sinks ? expl(f->sinks[h] - m) : 0;
                    for (int32_t k = 0; k < seq; k++) {
                        if (!vis[k]) continue;
                        const int32_t blk = f->bt[r * f->stride + k / f->BS];
                        const size_t row = (size_t)blk * f->BS + k % f->BS;
                        const long double w = expl(lg[k] - m);
                        num += w * f->v[(row * f->HKV + kvh) * f->D + d];
                        den += w;
                    }
                    out[((size_t)(f->qsl[r] + i) * f->H + h) * f->D + d] = (double)(num / den);
                }
            }
        }
    }
}

static size_t fx_elems(const fx *f) { return (size_t)f->qsl[f->R] * f->H * f->D; }

/* ref_attention of f against the brute force; returns ref's output. */
static double *check_brute(const fx *f, const char *what) {
    const size_t n = fx_elems(f);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    cr_assert(a && b);
    const ref_input in = fx_input(f);
    cr_assert_eq(ref_attention(&in, a), 0, "%s: refused", what);
    brute(f, 0, b);
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(a[i] - b[i]) <= 1e-12 * (1 + fabs(b[i])), "%s: element %zu: %.17g vs %.17g",
                  what, i, a[i], b[i]);
    free(b);
    return a;
}

static double max_diff(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* --------------------------------------------------------- positions */

/* A non-causal request with q_len < seq_len places query i at p = i; the
 * old rule (p = seq - q_len + i) gives the same output without a window
 * and a different one with a window (§2).  ALiBi alone moves every logit
 * of a row by the same slope x shift, which the softmax cannot see: the
 * rules differ with ALiBi only together with a sink (a logit that does
 * not move). */
Test(ref, noncausal_positions_differ_only_with_window_or_alibi_and_sink) {
    const int32_t q_len[] = {3}, seq[] = {11};
    for (int v = 0; v < 4; v++) {
        fx f = fx_make(1, q_len, seq, 2, 1, 8, 4, 0);
        f.causal[0] = 0;
        if (v == 1) f.left = 2, f.right = 2;
        if (v >= 2) {
            f.slopes = malloc(2 * sizeof(float));
            f.slopes[0] = 0.5f, f.slopes[1] = 0.125f;
        }
        if (v == 3) {
            f.sinks = malloc(2 * sizeof(float));
            f.sinks[0] = 0.3f, f.sinks[1] = -1.0f;
        }
        double *got = check_brute(&f, "non-causal");
        const size_t n = fx_elems(&f);
        double *old = malloc(n * sizeof(double));
        brute(&f, 1, old);
        const double d = max_diff(got, old, n);
        if (v == 0 || v == 2) cr_assert(d <= 1e-12, "variant %d: differ by %g", v, d);
        else cr_assert(d > 1e-3, "variant %d: the two position rules agree (%g)", v, d);
        free(got), free(old);
        fx_free(&f);
    }
}

/* A non-causal query at p = 0 gets ALiBi terms slope * k > 0 that grow
 * past exp's double range (4 * 255 = 1020 > 709): the softmax's shift must
 * be the max of the final logits, additive term included, or every weight
 * overflows and the row is NaN. */
Test(ref, noncausal_alibi_terms_beyond_exp_range) {
    const int32_t q_len[] = {2}, seq[] = {256};
    fx f = fx_make(1, q_len, seq, 2, 1, 8, 16, 0);
    f.causal[0] = 0;
    f.softcap = 50;
    f.slopes = malloc(2 * sizeof(float));
    f.slopes[0] = 4.0f, f.slopes[1] = 3.0f;
    double *a = check_brute(&f, "non-causal ALiBi");
    for (size_t i = 0; i < fx_elems(&f); i++) cr_assert(isfinite(a[i]), "element %zu: %g", i, a[i]);
    free(a);
    fx_free(&f);
}

/* The same request causal vs non-causal (q_len < seq_len), with a window
 * and with ALiBi: both match the brute force and differ from each other. */
Test(ref, causal_and_noncausal_rows) {
    const int32_t q_len[] = {4, 2}, seq[] = {13, 6};
    for (int v = 0; v < 2; v++) {
        fx f = fx_make(2, q_len, seq, 4, 2, 16, 4, 1);
        if (v == 0) f.left = 3;
        else {
            f.slopes = malloc(4 * sizeof(float));
            for (int h = 0; h < 4; h++) f.slopes[h] = (float)exp2(-(h + 1));
        }
        double *a = check_brute(&f, "causal");
        f.causal[0] = 0;   /* mixed batch: request 0 non-causal, request 1 causal */
        double *b = check_brute(&f, "mixed");
        cr_assert(max_diff(a, b, (size_t)q_len[0] * 4 * 16) > 1e-3);
        cr_assert(max_diff(a + (size_t)q_len[0] * 64, b + (size_t)q_len[0] * 64,
                           (size_t)q_len[1] * 64) == 0, "request 1 moved");
        free(a), free(b);
        fx_free(&f);
    }
}

/* (left, right) windows on non-causal rows; on causal rows the right side
 * cannot add keys (k <= p) and left = 0 keeps key p alone. */
Test(ref, left_right_windows) {
    const int32_t q_len[] = {7}, seq[] = {9};
    static const int32_t lr[][2] = {{1, 3}, {-1, 0}, {0, -1}, {2, 2}, {0, 0}, {5, -1}};
    for (int c = 0; c < 2; c++)
        for (size_t w = 0; w < sizeof lr / sizeof lr[0]; w++) {
            fx f = fx_make(1, q_len, seq, 1, 1, 4, 2, 0);
            f.causal[0] = (uint8_t)c;
            f.left = lr[w][0], f.right = lr[w][1];
            double *a = check_brute(&f, "window");
            if (c) {   /* the right side is moot */
                f.right = -1;
                double *b = check_brute(&f, "window right -1");
                cr_assert(max_diff(a, b, fx_elems(&f)) == 0);
                free(b);
            }
            if (f.left == 0 && c) {   /* only key p: out = V[p] */
                for (int32_t i = 0; i < 7; i++)
                    for (int32_t d = 0; d < 4; d++) {
                        const int32_t p = 2 + i, row = f.bt[p / 2] * 2 + p % 2;
                        cr_assert(a[i * 4 + d] == (double)f.v[row * 4 + d]);
                    }
            }
            free(a);
            fx_free(&f);
        }
}

/* Soft cap, scale, sinks, ALiBi and GQA together, decode and prefill. */
Test(ref, cap_scale_sinks_alibi_gqa) {
    const int32_t q_len[] = {1, 5, 3}, seq[] = {17, 5, 30};
    fx f = fx_make(3, q_len, seq, 6, 2, 12, 8, 1);
    f.softcap = 1.5;
    f.scale = 0.9;
    f.sinks = malloc(6 * sizeof(float));
    f.slopes = malloc(6 * sizeof(float));
    for (int h = 0; h < 6; h++) f.sinks[h] = (float)(urand() * 3), f.slopes[h] = 0.1f * h;
    double *a = check_brute(&f, "all");
    free(a);
    /* a sink takes weight: without it the outputs move */
    const size_t n = fx_elems(&f);
    double *with = malloc(n * sizeof(double)), *without = malloc(n * sizeof(double));
    brute(&f, 0, with);
    free(f.sinks);
    f.sinks = NULL;
    double *b = check_brute(&f, "no sinks");
    brute(&f, 0, without);
    cr_assert(max_diff(with, without, n) > 1e-3);
    free(b), free(with), free(without);
    fx_free(&f);
}

/* ------------------------------------------------------ gather, rows */

/* Token k of request r is row block_table[r][k / bs] * bs + k % bs of the
 * plain rows: K rows that make exactly one key match, V rows that name
 * their slot. */
Test(ref, plain_row_layout) {
    const int32_t q_len[] = {1}, seq[] = {7};
    fx f = fx_make(1, q_len, seq, 1, 1, 2, 3, 0);
    f.bt[0] = 4, f.bt[1] = 0, f.bt[2] = 3;   /* tokens 0-2, 3-5, 6 */
    for (int32_t row = 0; row < f.NB * 3; row++) {
        f.k[row * 2] = 0, f.k[row * 2 + 1] = 0;
        f.v[row * 2] = (float)row, f.v[row * 2 + 1] = -(float)row;
    }
    for (int32_t tok = 0; tok < 7; tok++) {
        const int32_t row = f.bt[tok / 3] * 3 + tok % 3;
        f.q[0] = 1, f.q[1] = 0;
        f.k[row * 2] = 1000;   /* only token tok's key scores */
        double out[2];
        const ref_input in = fx_input(&f);
        cr_assert_eq(ref_attention(&in, out), 0);
        cr_assert(fabs(out[0] - row) < 1e-9 && fabs(out[1] + row) < 1e-9,
                  "token %d: got %g, row %d", tok, out[0], row);
        f.k[row * 2] = 0;
    }
    fx_free(&f);
}

/* Shuffled physical ids, and request 1 reading request 0's first two
 * blocks (a shared prefix) then its own. */
Test(ref, shuffled_and_shared_blocks) {
    const int32_t q_len[] = {3, 4}, seq[] = {10, 12};
    fx f = fx_make(2, q_len, seq, 2, 2, 8, 4, 1);
    f.bt[1 * f.stride + 0] = f.bt[0];
    f.bt[1 * f.stride + 1] = f.bt[1];
    double *a = check_brute(&f, "shared");
    /* request 1's first 8 keys are request 0's: with q rows equal and
     * windows keeping keys < 8, their outputs agree */
    f.left = 2;
    memcpy(f.q + 3 * 2 * 8, f.q + 0, 2 * 8 * sizeof(float));   /* r1 row 0 = r0 row 0 */
    f.seq[1] = 11;   /* r1 row 0 at 11 - 4 = 7, like r0 row 0 (10 - 3) */
    double *b = check_brute(&f, "shared, window");
    cr_assert(max_diff(b, b + 3 * 16, 16) < 1e-12, "shared prefix read differently");
    free(a), free(b);
    fx_free(&f);
}

/* --------------------------------------------------------------- fp8 */

/* The format definitions, written out: sign, exponent field E, mantissa
 * field M; bias 7 / 15; subnormal at E = 0; e4m3fn has no infinities and
 * only S.1111.111 is NaN; e5m2 is IEEE-like (E = 31: inf or NaN). */
static double fp8_def(uint8_t c, int e4m3) {
    const int ebits = e4m3 ? 4 : 5, mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
    const int s = c >> 7, E = (c >> mbits) & ((1 << ebits) - 1), M = c & ((1 << mbits) - 1);
    double mag;
    if (e4m3 && E == 15 && M == 7) return NAN;
    if (!e4m3 && E == 31) mag = M ? NAN : INFINITY;
    else if (E == 0) mag = M / (double)(1 << mbits) * pow(2.0, 1 - bias);
    else mag = (1 + M / (double)(1 << mbits)) * pow(2.0, E - bias);
    return s ? -mag : mag;
}

Test(ref, fp8_all_codes) {
    for (int fmt = 0; fmt < 2; fmt++) {
        const ag_dtype t = fmt ? AG_FP8_E4M3 : AG_FP8_E5M2;
        int nans = 0;
        double prev = -1;
        for (int c = 0; c < 256; c++) {
            const uint8_t b = (uint8_t)c;
            const double got = ag_dtype_decode(&b, 0, t), want = fp8_def(b, fmt);
            if (isnan(want)) {
                cr_assert(isnan(got), "fmt %d code 0x%02x: %g, want NaN", fmt, c, got);
                nans++;
                continue;
            }
            cr_assert(got == want && signbit(got) == signbit(want),
                      "fmt %d code 0x%02x: %.17g, want %.17g", fmt, c, got, want);
            if (c < 128 && c > 0) cr_assert(got > prev, "fmt %d: not increasing at 0x%02x", fmt, c);
            if (c < 128) prev = got;
        }
        /* e4m3fn: 0x7f, 0xff; e5m2: 0x7d-0x7f and 0xfd-0xff */
        cr_assert_eq(nans, fmt ? 2 : 6);
    }
    const uint8_t e4[] = {0x01, 0x08, 0x38, 0x7e, 0xfe}, e5[] = {0x01, 0x04, 0x3c, 0x7b, 0x7c};
    const double e4v[] = {0x1.0p-9, 0x1.0p-6, 1.0, 448.0, -448.0};
    const double e5v[] = {0x1.0p-16, 0x1.0p-14, 1.0, 57344.0, INFINITY};
    for (int i = 0; i < 5; i++) {
        cr_assert(ag_dtype_decode(e4, (size_t)i, AG_FP8_E4M3) == e4v[i], "e4m3 0x%02x", e4[i]);
        cr_assert(ag_dtype_decode(e5, (size_t)i, AG_FP8_E5M2) == e5v[i], "e5m2 0x%02x", e5[i]);
    }
    /* e5m2 is the top byte of an IEEE half */
    for (int c = 0; c < 256; c++) {
        const uint8_t b = (uint8_t)c;
        const uint16_t h = (uint16_t)(c << 8);
        const double x = ag_dtype_decode(&b, 0, AG_FP8_E5M2), y = ag_dtype_decode(&h, 0, AG_F16);
        cr_assert((isnan(x) && isnan(y)) || x == y, "code 0x%02x", c);
    }
}

/* fp8 K/V with scales give exactly the output of f32 K/V holding
 * decode(code) * scale (exact in both). */
Test(ref, fp8_cache_with_scales) {
    const int32_t q_len[] = {2}, seq[] = {9};
    for (int fmt = 0; fmt < 2; fmt++) {
        fx f = fx_make(1, q_len, seq, 2, 1, 8, 4, 0);
        const ag_dtype t = fmt ? AG_FP8_E4M3 : AG_FP8_E5M2;
        const size_t rows = (size_t)f.NB * 4 * 8;
        uint8_t *kc = malloc(rows), *vc = malloc(rows);
        cr_assert(kc && vc);
        for (size_t i = 0; i < rows; i++) {
            /* finite codes only: skip the NaN/inf ones */
            kc[i] = (uint8_t)(i * 37 % 0x70);
            vc[i] = (uint8_t)(0x80 | (i * 53 % 0x70));
            f.k[i] = (float)(ag_dtype_decode(kc, i, t) * 0.5);
            f.v[i] = (float)(ag_dtype_decode(vc, i, t) * 3.0);
        }
        double *a = check_brute(&f, "fp8 as f32");
        ref_input in = fx_input(&f);
        in.k_rows = kc, in.v_rows = vc, in.kv_dtype = t;
        in.k_scale = 0.5, in.v_scale = 3.0;
        double *b = malloc(fx_elems(&f) * sizeof(double));
        cr_assert_eq(ref_attention(&in, b), 0);
        cr_assert(max_diff(a, b, fx_elems(&f)) == 0, "fmt %d", fmt);
        in.k_scale = 0;   /* an fp8 cache needs its scales */
        cr_assert_eq(ref_attention(&in, b), -1);
        free(a), free(b), free(kc), free(vc);
        fx_free(&f);
    }
}

/* bf16 and f16 q decode to the values an f32 q holding them gives. */
Test(ref, bf16_f16_queries) {
    const int32_t q_len[] = {3}, seq[] = {5};
    fx f = fx_make(1, q_len, seq, 2, 2, 8, 4, 0);
    const size_t nq = 3 * 2 * 8;
    uint16_t *qb = malloc(nq * 2), *qh = malloc(nq * 2);
    cr_assert(qb && qh);
    for (size_t i = 0; i < nq; i++) {
        /* values exact in both: k / 64, |k| < 64 */
        const int k = (int)(i * 29 % 127) - 63;
        f.q[i] = (float)k / 64.0f;
        uint32_t bits;
        memcpy(&bits, &f.q[i], 4);
        qb[i] = (uint16_t)(bits >> 16);
        const int e = k ? ilogb(fabs(k / 64.0)) : -15;   /* f16 by hand: 1.m x 2^e */
        const int m = k ? (int)((fabs(k / 64.0) / ldexp(1.0, e) - 1) * 1024) : 0;
        qh[i] = (uint16_t)((k < 0 ? 0x8000 : 0) | (k ? (e + 15) << 10 : 0) | m);
    }
    double *a = check_brute(&f, "f32 q");
    ref_input in = fx_input(&f);
    double *b = malloc(fx_elems(&f) * sizeof(double));
    for (int t = 0; t < 2; t++) {
        in.q = t ? (const void *)qh : (const void *)qb;
        in.q_dtype = t ? AG_F16 : AG_BF16;
        cr_assert_eq(ref_attention(&in, b), 0);
        cr_assert(max_diff(a, b, fx_elems(&f)) == 0, "dtype %d", t);
    }
    free(a), free(b), free(qb), free(qh);
    fx_free(&f);
}

/* ---------------------------------------------------------- refusals */

Test(ref, refuses_inconsistent_input) {
    const int32_t q_len[] = {2, 3}, seq[] = {5, 3};
    fx f = fx_make(2, q_len, seq, 2, 1, 4, 2, 0);
    double *out = malloc(fx_elems(&f) * sizeof(double));
    ref_input in = fx_input(&f);
    cr_assert_eq(ref_attention(&in, out), 0);
#define REFUSED(stmt)                                                                      \
    do {                                                                                   \
        ref_input b = fx_input(&f);                                                        \
        stmt;                                                                              \
        cr_assert_eq(ref_attention(&b, out), -1, "accepted: %s", #stmt);                   \
    } while (0)
    REFUSED(b.num_blocks = f.NB - 3);                /* the last id used is NB - 3 */
    REFUSED(b.window_left = -2);
    REFUSED(b.window_right = -5);
    REFUSED(b.num_kv_heads = 3);                     /* 2 heads: not a multiple */
    REFUSED(b.head_dim = 0);
    REFUSED(b.block_table_stride = 1);               /* 3 blocks needed */
    REFUSED(b.causal = NULL);
    REFUSED(b.k_rows = NULL);
    REFUSED(b.softcap = -1);
    REFUSED(b.scale = INFINITY);
    REFUSED(b.q_dtype = AG_DTYPE_COUNT);
    REFUSED(b.kv_dtype = (ag_dtype)99);
    int32_t bad_seq[] = {5, 2};                      /* seq_len < q_len */
    REFUSED(b.seq_lens = bad_seq);
    int32_t bad_qsl[] = {0, 2, 2};                   /* q_len 0 */
    REFUSED(b.query_start_loc = bad_qsl);
    uint8_t bad_causal[] = {1, 2};
    REFUSED(b.causal = bad_causal);
#undef REFUSED
    cr_assert_eq(ref_attention(NULL, out), -1);
    cr_assert_eq(ref_attention(&in, NULL), -1);
    free(out);
    fx_free(&f);
}

/* ------------------------------------------------------------- masks */

/* An explicit mask (an op's own input) against the rules it can spell:
 * -inf outside a window is that window; (k - p) times the head's slope is
 * ALiBi; a constant added to every key of a row changes nothing (no
 * sinks); a row with every key hidden is 0 — in the plain and the range
 * computation alike. */
Test(ref, mask_agrees_with_the_rules_it_spells) {
    const int32_t q_len[] = {3, 1}, seq[] = {9, 12};
    fx f = fx_make(2, q_len, seq, 4, 2, 8, 4, 1);
    f.causal[1] = 0;
    const size_t n = fx_elems(&f);
    const int32_t T = f.qsl[2], K = 12;
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
    double *lo = malloc(n * sizeof(double)), *hi = malloc(n * sizeof(double));
    float *mask = malloc((size_t)T * 4 * K * sizeof(float));
    cr_assert(a && b && lo && hi && mask);
    /* the position of each token */
    int32_t pos[4];
    for (int32_t r = 0; r < 2; r++)
        for (int32_t i = 0; i < q_len[r]; i++)
            pos[f.qsl[r] + i] = f.causal[r] ? seq[r] - q_len[r] + i : i;
#define FILL(expr)                                                                         \
    for (int32_t t = 0; t < T; t++)                                                        \
        for (int32_t h = 0; h < 4; h++)                                                    \
            for (int32_t k = 0; k < K; k++) {                                              \
                const int32_t p = pos[t];                                                  \
                (void)p;                                                                   \
                mask[((size_t)t * 4 + (size_t)h) * K + (size_t)k] = (expr);                \
            }
    ref_input in = fx_input(&f), m;
    /* a (2, 1) window, as a mask */
    in.window_left = 2, in.window_right = 1;
    cr_assert_eq(ref_attention(&in, a), 0);
    m = fx_input(&f);
    FILL(k >= p - 2 && k <= p + 1 ? 0.0f : -INFINITY);
    m.mask = mask, m.mask_tstride = 4 * K, m.mask_hstride = K;
    cr_assert_eq(ref_attention(&m, b), 0);
    for (size_t i = 0; i < n; i++) cr_assert(fabs(a[i] - b[i]) < 1e-12, "window %zu", i);
    /* ALiBi as slope * (k - p) */
    float slopes[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
    in = fx_input(&f);
    in.alibi_slopes = slopes;
    cr_assert_eq(ref_attention(&in, a), 0);
    FILL((float)(k - p));
    m.alibi_slopes = slopes, m.mask_times_slope = 1;
    cr_assert_eq(ref_attention(&m, b), 0);
    for (size_t i = 0; i < n; i++) cr_assert(fabs(a[i] - b[i]) < 1e-12, "alibi %zu", i);
    /* a constant per row and head: the softmax does not move */
    in = fx_input(&f);
    cr_assert_eq(ref_attention(&in, a), 0);
    FILL((float)(t * 4 + h) * 0.75f);
    m.alibi_slopes = NULL, m.mask_times_slope = 0;
    cr_assert_eq(ref_attention(&m, b), 0);
    for (size_t i = 0; i < n; i++) cr_assert(fabs(a[i] - b[i]) < 1e-12, "shift %zu", i);
    /* token 1, head 2 sees nothing: 0, and its range is the point 0 */
    FILL(t == 1 && h == 2 ? -INFINITY : 0.0f);
    const ref_model exact = {.u = 0x1p-24, .fmax = 3.4e38, .accmax = 3.4e38};
    cr_assert_eq(ref_attention_range(&m, exact, b, lo, hi), 0);
    for (int32_t d = 0; d < 8; d++) {
        const size_t i = ((size_t)1 * 4 + 2) * 8 + (size_t)d;
        cr_assert(b[i] == 0 && lo[i] == 0 && hi[i] == 0, "hidden row dim %d: %g [%g, %g]", d,
                  b[i], lo[i], hi[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (i / 8 != 6) cr_assert(lo[i] <= b[i] && b[i] <= hi[i], "range %zu", i);
#undef FILL
    free(a), free(b), free(lo), free(hi), free(mask);
    fx_free(&f);
}
