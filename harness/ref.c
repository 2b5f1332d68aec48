/*
 * ref.c — the naive reference of DESIGN §2: straight loops in double
 * precision, K/V gathered token by token through the block table.
 *
 * Owns: the definition of visibility (causal / non-causal, sliding window
 * counting the current token), soft cap, ALiBi, sinks and the softmax, as the
 * harness reads them, plus its own bf16/f16 -> double decoding.  Shares no
 * code with src/ (only the public types of attn.h): a bug copied into both
 * would be invisible.  Speed is not a goal; clarity is.  With an error
 * model (ref_attention_range) it also bounds every logit's rounding and,
 * for rows where that bound is too large to ignore, hands the intervals to
 * ref_range.c for the range the output may take.
 */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An fp8 code with `mbits` mantissa bits and exponent bias `bias`; e4m3fn
 * (ieee = 0) has no infinities and only S.1111.111 as NaN, e5m2 follows
 * IEEE (all-ones exponent: inf or NaN). */
static double fp8_value(unsigned code, int mbits, int bias, int ieee) {
    const int ebits = 7 - mbits, emax = (1 << ebits) - 1;
    const int sign = (code >> 7) & 1, ex = (int)(code >> mbits) & emax;
    const int mant = (int)code & ((1 << mbits) - 1);
    double v;
    if (ieee && ex == emax) v = mant ? NAN : INFINITY;
    else if (!ieee && ex == emax && mant == (1 << mbits) - 1) v = NAN;
    else if (ex == 0) v = ldexp((double)mant, 1 - bias - mbits);
    else v = ldexp((double)(mant + (1 << mbits)), ex - bias - mbits);
    return sign ? -v : v;
}

double ref_load(const void *base, size_t index, ag_dtype dtype) {
    switch (dtype) {
    case AG_F32:
        return (double)((const float *)base)[index];
    case AG_BF16: {
        /* bf16 is the top half of an IEEE single. */
        uint32_t bits = (uint32_t)((const uint16_t *)base)[index] << 16;
        float f;
        memcpy(&f, &bits, sizeof(f));
        return (double)f;
    }
    case AG_F16: {
        uint16_t h = ((const uint16_t *)base)[index];
        int sign = (h >> 15) & 1;
        int ex = (h >> 10) & 0x1f;
        int mant = h & 0x3ff;
        double v;
        if (ex == 0) v = ldexp((double)mant, -24);                 /* zero, subnormal */
        else if (ex == 31) v = mant ? NAN : INFINITY;
        else v = ldexp((double)(mant + 1024), ex - 25);            /* 1.m * 2^(ex-15) */
        return sign ? -v : v;
    }
    case AG_FP8_E4M3: return fp8_value(((const uint8_t *)base)[index], 3, 7, 0);
    case AG_FP8_E5M2: return fp8_value(((const uint8_t *)base)[index], 2, 15, 1);
    default:
        return NAN;
    }
}

/* Is key k visible to the query at position p (DESIGN §2)? */
static int visible(int64_t k, int64_t p, int32_t left, int32_t right, int causal) {
    if (causal && k > p) return 0;
    if (left >= 0 && k < p - left) return 0;
    if (right >= 0 && k > p + right) return 0;
    return 1;
}

static int input_ok(const ref_input *in) {
    if (!in->query_start_loc || !in->seq_lens || !in->block_table || !in->q || !in->k_rows ||
        !in->v_rows || !in->causal)
        return 0;
    if (in->num_reqs < 1 || in->num_heads < 1 || in->num_kv_heads < 1 ||
        in->num_heads % in->num_kv_heads != 0 || in->head_dim < 1 || in->block_size < 1 ||
        in->block_table_stride < 1)
        return 0;
    if (in->window_left < -1 || in->window_right < -1) return 0;
    if (!(in->softcap >= 0) || !(in->scale >= 0) || !isfinite(in->softcap) ||
        !isfinite(in->scale))
        return 0;
    if (in->query_start_loc[0] != 0) return 0;
    for (int32_t r = 0; r < in->num_reqs; r++) {
        int64_t q_len = (int64_t)in->query_start_loc[r + 1] - in->query_start_loc[r];
        int64_t seq = in->seq_lens[r];
        if (q_len < 1 || seq < q_len) return 0;
        int64_t nblk = (seq + in->block_size - 1) / in->block_size;
        if (nblk > in->block_table_stride) return 0;
        for (int64_t j = 0; j < nblk; j++) {
            int32_t b = in->block_table[(size_t)r * (size_t)in->block_table_stride + (size_t)j];
            if (b < 0 || b >= in->num_blocks) return 0;
        }
    }
    return 1;
}

/* ALiBi's term for head h, key k, query position p (0 without slopes). */
static double alibi_bias(const ref_input *in, int32_t h, int64_t k, int64_t p) {
    return in->alibi_slopes ? (double)in->alibi_slopes[h] * (double)(k - p) : 0.0;
}

/* Element index of (key k, dim 0) of KV head kvh in a cache, through the
 * request's block table row bt. */
static size_t kv_index(const ref_input *in, const int32_t *bt, int32_t kvh, int64_t k) {
    const int64_t bs = in->block_size;
    const size_t slot = (size_t)bt[k / bs] * (size_t)bs + (size_t)(k % bs);
    return (slot * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)in->head_dim;
}

static double load_k(const ref_input *in, size_t i) {
    return ref_load(in->k_rows, i, in->kv_dtype) * in->k_scale;
}

static double load_v(const ref_input *in, size_t i) {
    return ref_load(in->v_rows, i, in->kv_dtype) * in->v_scale;
}

/* Key k's logit x (scale * <q, k>, before the cap) as an interval
 * [x - e, x + e] through the soft cap and ALiBi (the cap is increasing,
 * so it maps the ends to the ends). */
static void logit_interval(const ref_input *in, double x, double e, double bias,
                           ref_range_key *key) {
    double a = x - e, b = x + e;
    if (in->softcap > 0) {
        a = in->softcap * tanh(a / in->softcap);
        b = in->softcap * tanh(b / in->softcap);
    }
    key->a = a + bias;
    key->b = b + bias;
}

/* One query row's keys, as attention() leaves them for row_range. */
typedef struct row_keys {
    const int32_t *bt;      /* the request's block table row */
    int32_t kvh, h, seq;
    int64_t p;              /* the query's position */
    const unsigned char *vis;
    const double *logit;    /* final logits (after cap and ALiBi) */
    const double *xs, *ms;  /* scale x <q, k> and scale x sum |q_d k_d| */
    double m, denom, sink;  /* softmax shift, its sum (sink included), sink logit */
} row_keys;

/* The bound on how far the row (exact output o, D elements) moves when
 * each logit may move by up to d_k: the interval x_k +- e x ms_k carried
 * through the cap, plus wabs.  Each weight then changes by a factor r_k in
 * [e^-d_k, e^d_k], and since sum_k p_k (v_k - o) = 0 (p_k the softmax
 * weights, the sink a key of value 0 that never moves),
 *     |o'_d - o_d| <= sum_k p_k (e^d_k - 1) |v_kd - o_d| / sum_k p_k e^-d_k
 * for any size of d_k, not only to first order (a one-hot row whose top
 * key may drop by 50 is moved by nothing to first order).  B[d] gets the
 * numerator, *wmin the denominator.  Returns 0 when a term is not finite
 * (no bound), else 1. */
static int row_bound(const ref_input *in, const row_keys *rk, const double *o, double e,
                     double wabs, double *B, double *wmin) {
    const int32_t D = in->head_dim;
    *wmin = in->sinks ? exp(rk->sink - rk->m) / rk->denom : 0.0;
    for (int32_t d = 0; d < D; d++) B[d] = 0;
    for (int32_t k = 0; k < rk->seq; k++) {
        if (!rk->vis[k]) continue;
        ref_range_key t;
        logit_interval(in, rk->xs[k], e * rk->ms[k], alibi_bias(in, rk->h, k, rk->p), &t);
        const double dk = fmax(t.b - rk->logit[k], rk->logit[k] - t.a) + wabs;
        const double s = rk->logit[k] - rk->m;
        /* p_k (e^d_k - 1), with p_k e^d_k in one exp: p_k may underflow
         * where p_k e^d_k does not */
        const double g = exp(s + dk) / rk->denom - exp(s) / rk->denom;
        *wmin += exp(s - dk) / rk->denom;
        if (!isfinite(g)) return 0;
        if (!(g > 0)) continue;
        const size_t vb = kv_index(in, rk->bt, rk->kvh, k);
        for (int32_t d = 0; d < D; d++)
            B[d] += g * fabs(load_v(in, vb + (size_t)d) - o[d]);
    }
    return 1;
}

/* lo/hi of one row (D elements at lo, hi) whose exact output is o.
 * The fp32 model (err->wabs = 0): first the cheap question, how far can
 * the typical rounding (typ x ms_k) move the row (row_bound)?  Where every
 * element's bound is within point_max the row keeps its point; otherwise
 * each element gets the exact range over logits within their worst-case
 * bounds rel x ms_k (ref_softmax_range).  The bf16-rounding model (wabs >
 * 0): every element gets o +- its bound over the worst-case intervals
 * widened by wabs, or the exact range over those where the bound is not
 * finite.  scratch: D doubles; ab: 2 seq doubles; keys: seq entries. */
static void row_range(const ref_input *in, const ref_logit_err *err, const row_keys *rk,
                      const double *o, double *lo, double *hi, double *scratch, double *ab,
                      ref_range_key *keys) {
    const int32_t D = in->head_dim;
    double *B = scratch, wmin;
    if (err->wabs > 0) {
        if (row_bound(in, rk, o, err->rel, err->wabs, B, &wmin) && wmin > 0) {
            for (int32_t d = 0; d < D; d++) {
                const double b = B[d] / wmin;
                lo[d] = o[d] - b;
                hi[d] = o[d] + b;
            }
            return;
        }
    } else {
        int point = row_bound(in, rk, o, err->typ, 0.0, B, &wmin);
        for (int32_t d = 0; d < D && point; d++) point = !(B[d] > err->point_max * wmin);
        if (point) {
            memcpy(lo, o, (size_t)D * sizeof(double));
            memcpy(hi, o, (size_t)D * sizeof(double));
            return;
        }
    }
    /* the visible keys' worst-case intervals, once for every element */
    int32_t n = 0;
    for (int32_t k = 0; k < rk->seq; k++) {
        if (!rk->vis[k]) continue;
        ref_range_key t;
        logit_interval(in, rk->xs[k], err->rel * rk->ms[k], alibi_bias(in, rk->h, k, rk->p), &t);
        ab[2 * n] = t.a - err->wabs;
        ab[2 * n + 1] = t.b + err->wabs;
        n++;
    }
    for (int32_t d = 0; d < D; d++) {
        int32_t j = 0;
        for (int32_t k = 0; k < rk->seq; k++) {
            if (!rk->vis[k]) continue;
            keys[j].a = ab[2 * j];
            keys[j].b = ab[2 * j + 1];
            keys[j++].v = load_v(in, kv_index(in, rk->bt, rk->kvh, k) + (size_t)d);
        }
        ref_softmax_range(keys, n, in->sinks != NULL, rk->sink, lo + d, hi + d);
    }
}

/* ref_attention, and with lo/hi (err then non-NULL) ref_attention_range. */
static int attention(const ref_input *in, const ref_logit_err *err, double *out, double *lo,
                     double *hi) {
    if (!in || !out || !input_ok(in)) return -1;

    const int32_t Hq = in->num_heads, Hkv = in->num_kv_heads, D = in->head_dim;
    const int32_t g = Hq / Hkv;
    const double scale = in->scale > 0 ? in->scale : 1.0 / sqrt((double)D);
    int32_t max_seq = 0;
    for (int32_t r = 0; r < in->num_reqs; r++)
        if (in->seq_lens[r] > max_seq) max_seq = in->seq_lens[r];

    double *logit = malloc((size_t)max_seq * sizeof(double));
    unsigned char *vis = malloc((size_t)max_seq);
    double *qrow = malloc((size_t)D * sizeof(double));
    double *acc = malloc((size_t)D * sizeof(double));
    /* for ranges: each key's uncapped logit and magnitude, its interval,
     * and the keys */
    double *xs = NULL, *ms = NULL, *ab = NULL;
    ref_range_key *keys = NULL;
    if (err) {
        xs = malloc((size_t)max_seq * sizeof(double));
        ms = malloc((size_t)max_seq * sizeof(double));
        ab = malloc((size_t)max_seq * 2 * sizeof(double));
        keys = malloc((size_t)max_seq * sizeof(ref_range_key));
    }
    if (!logit || !vis || !qrow || !acc || (err && (!xs || !ms || !ab || !keys))) {
        free(logit); free(vis); free(qrow); free(acc);
        free(xs); free(ms); free(ab); free(keys);
        return -1;
    }

    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int32_t t0 = in->query_start_loc[r];
        const int32_t q_len = in->query_start_loc[r + 1] - t0;
        const int32_t seq = in->seq_lens[r];
        const int32_t *bt = in->block_table + (size_t)r * (size_t)in->block_table_stride;

        for (int32_t i = 0; i < q_len; i++) {
            const int64_t t = (int64_t)t0 + i;
            const int causal = in->causal[r] != 0;
            const int64_t p = causal ? (int64_t)seq - q_len + i : i;   /* this query's position */
            for (int32_t h = 0; h < Hq; h++) {
                const int32_t kvh = h / g;
                const size_t qbase = ((size_t)t * (size_t)Hq + (size_t)h) * (size_t)D;
                for (int32_t d = 0; d < D; d++) qrow[d] = ref_load(in->q, qbase + (size_t)d, in->q_dtype);

                /* logits of the visible keys and their max (a sink joins the max) */
                double m = -INFINITY, ms_max = 0;
                int any = 0;
                for (int32_t k = 0; k < seq; k++) {
                    vis[k] = (unsigned char)visible(k, p, in->window_left, in->window_right, causal);
                    if (!vis[k]) continue;
                    const size_t kbase = kv_index(in, bt, kvh, k);
                    double dot = 0, mag = 0;
                    for (int32_t d = 0; d < D; d++) {
                        const double prod =
                            qrow[d] * load_k(in, kbase + (size_t)d);
                        dot += prod;
                        mag += fabs(prod);
                    }
                    double s = scale * dot;
                    if (err) {
                        xs[k] = s;
                        ms[k] = scale * mag;
                        if (ms[k] > ms_max) ms_max = ms[k];
                    }
                    if (in->softcap > 0) s = in->softcap * tanh(s / in->softcap);
                    s += alibi_bias(in, h, k, p);
                    logit[k] = s;
                    if (s > m) m = s;
                    any = 1;
                }
                double *o = out + qbase;
                if (!any) {               /* no visible key: defined as zero */
                    memset(o, 0, (size_t)D * sizeof(double));
                    if (err) {
                        memset(lo + qbase, 0, (size_t)D * sizeof(double));
                        memset(hi + qbase, 0, (size_t)D * sizeof(double));
                    }
                    continue;
                }
                double sink = in->sinks ? (double)in->sinks[h] : 0;
                if (in->sinks && sink > m) m = sink;

                double denom = in->sinks ? exp(sink - m) : 0.0, vmax = 0;
                for (int32_t d = 0; d < D; d++) acc[d] = 0;
                for (int32_t k = 0; k < seq; k++) {
                    if (!vis[k]) continue;
                    const double w = exp(logit[k] - m);
                    denom += w;
                    const size_t vbase = kv_index(in, bt, kvh, k);
                    for (int32_t d = 0; d < D; d++) {
                        const double v = load_v(in, vbase + (size_t)d);
                        acc[d] += w * v;
                        if (fabs(v) > vmax) vmax = fabs(v);
                    }
                }
                for (int32_t d = 0; d < D; d++) o[d] = acc[d] / denom;
                if (!err) continue;
                /* row_range's bound is at most (e^d - 1) e^d 2 vmax with
                 * d = typ ms_max (the weights sum to <= 1, |v - o| <= 2
                 * vmax): most rows stop here (not under the bf16-rounding
                 * model, where every row gets its bound). */
                const double dmax = err->typ * ms_max;
                if (!(err->wabs > 0) && !(expm1(dmax) * exp(dmax) * 2.0 * vmax > err->point_max)) {
                    memcpy(lo + qbase, o, (size_t)D * sizeof(double));
                    memcpy(hi + qbase, o, (size_t)D * sizeof(double));
                    continue;
                }
                const row_keys rk = {bt, kvh, h, seq, p, vis, logit, xs, ms, m, denom, sink};
                row_range(in, err, &rk, o, lo + qbase, hi + qbase, acc, ab, keys);
            }
        }
    }
    free(logit); free(vis); free(qrow); free(acc);
    free(xs); free(ms); free(ab); free(keys);
    return 0;
}

int ref_attention(const ref_input *in, double *out) {
    return attention(in, NULL, out, NULL, NULL);
}

int ref_attention_range(const ref_input *in, ref_logit_err err, double *out, double *lo,
                        double *hi) {
    if (!lo || !hi) return -1;
    return attention(in, &err, out, lo, hi);
}
