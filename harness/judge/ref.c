/*
 * ref.c — the naive reference of docs/design.md §2: straight loops in double
 * precision.
 *
 * Owns: the definition of visibility as the harness reads it (positions
 * of causal and non-causal queries, (left, right) windows, seq_len), soft
 * cap, ALiBi, sinks and the softmax, on every ag_dtype decoded by the
 * ABI's reference codec (include/attnguard/dtype.h: f32, bf16, f16, fp8
 * e4m3fn / e5m2 times their scale, the block types q8_0 .. iq4_nl from
 * their bytes, exactly in double: the reference computes on the
 * dequantized cache).  Shares no code with src/: a bug copied into both
 * would be invisible.
 *
 * Shape of the work: per request and KV head, that request's K and V are
 * decoded once into contiguous doubles (K transposed, so that a query
 * row's logits are one pass per dimension over consecutive keys); per
 * query row, only the keys its mask leaves visible are touched: the
 * visible set is the contiguous range [k0, k1] of visible_range, not a
 * test per key.  With a model (ref_attention_range), each row's exact
 * result goes to ref_range.c for the interval an engine's rounding allows.
 */
#include "ref.h"
#include "ref_range.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- validation */

/* All the checks of ref_attention's contract; *max_seq gets the longest
 * sequence.  Sizes that the loops form are proven to fit in size_t. */
static int input_ok(const ref_input *in, int32_t *max_seq) {
    if (!in->query_start_loc || !in->seq_lens || !in->causal || !in->block_table || !in->q ||
        !in->k_rows || !in->v_rows)
        return 0;
    if (in->num_reqs < 1 || in->num_heads < 1 || in->num_kv_heads < 1 ||
        in->num_heads % in->num_kv_heads != 0 || in->head_dim < 1 || in->block_size < 1 ||
        in->block_table_stride < 1 || in->num_blocks < 1)
        return 0;
    if (in->window_left < -1 || in->window_right < -1) return 0;
    if (!(in->softcap >= 0) || !(in->scale >= 0) || !isfinite(in->softcap) ||
        !isfinite(in->scale))
        return 0;
    if ((unsigned)in->q_dtype >= AG_DTYPE_COUNT || (unsigned)in->kv_dtype >= AG_DTYPE_COUNT)
        return 0;
    /* a block dtype's rows are whole blocks (q too, if an engine took it so) */
    if (in->head_dim % ag_dtype_block(in->kv_dtype) != 0 ||
        in->head_dim % ag_dtype_block(in->q_dtype) != 0)
        return 0;
    if (in->mask && (in->mask_tstride < 0 || in->mask_hstride < 0)) return 0;
    if (ag_dtype_is_fp8(in->kv_dtype) && !(in->k_scale > 0 && isfinite(in->k_scale) &&
                                           in->v_scale > 0 && isfinite(in->v_scale)))
        return 0;
    if (in->query_start_loc[0] != 0) return 0;
    size_t cells;   /* K/V rows x heads x D, the largest index formed */
    if (__builtin_mul_overflow((size_t)in->num_blocks, (size_t)in->block_size, &cells) ||
        __builtin_mul_overflow(cells, (size_t)in->num_kv_heads, &cells) ||
        __builtin_mul_overflow(cells, (size_t)in->head_dim, &cells))
        return 0;
    *max_seq = 0;
    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int64_t q_len = (int64_t)in->query_start_loc[r + 1] - in->query_start_loc[r];
        const int64_t seq = in->seq_lens[r];
        /* a non-causal request may hold more queries than keys (cross attention) */
        if (q_len < 1 || seq < (in->causal[r] ? q_len : 0) || in->causal[r] > 1) return 0;
        const int64_t nblk = (seq + in->block_size - 1) / in->block_size;
        if (nblk > in->block_table_stride) return 0;
        const int32_t *bt = in->block_table + (size_t)r * (size_t)in->block_table_stride;
        for (int64_t j = 0; j < nblk; j++)
            if (bt[j] < 0 || bt[j] >= in->num_blocks) return 0;
        if (seq > *max_seq) *max_seq = (int32_t)seq;
    }
    size_t outs;    /* tokens x heads x D */
    if (__builtin_mul_overflow((size_t)in->query_start_loc[in->num_reqs], (size_t)in->num_heads,
                               &outs) ||
        __builtin_mul_overflow(outs, (size_t)in->head_dim, &outs))
        return 0;
    size_t kvd;     /* one request's K (or V) in doubles */
    return !__builtin_mul_overflow((size_t)*max_seq, (size_t)in->head_dim, &kvd) &&
           !__builtin_mul_overflow(kvd, sizeof(double), &kvd);
}

/* ---------------------------------------------------------- the rules */

/* The visible keys of the query at position p: every k with
 * p - left <= k <= p + right (each side unbounded at -1), k <= p when
 * causal, 0 <= k < seq.  One contiguous range [k0, k1]; it holds k = p
 * whenever p < seq (always for a causal request), else it may be empty
 * (k1 < k0). */
static void visible_range(const ref_input *in, int causal, int64_t p, int64_t seq, int64_t *k0,
                          int64_t *k1) {
    int64_t lo = 0, hi = seq - 1;
    if (causal && p < hi) hi = p;
    if (in->window_left >= 0 && p - in->window_left > lo) lo = p - in->window_left;
    if (in->window_right >= 0 && p + in->window_right < hi) hi = p + in->window_right;
    *k0 = lo;
    *k1 = hi;
}

/* K and V of request r, KV head kvh, decoded (fp8 times its scale): kt
 * [D][seq] (transposed), v [seq][D]; token k is row bt[k / bs] * bs + k % bs
 * of the slot-major row arrays. */
static void gather(const ref_input *in, int32_t r, int32_t kvh, double *kt, double *v) {
    const int32_t seq = in->seq_lens[r], D = in->head_dim, bs = in->block_size;
    const int32_t *bt = in->block_table + (size_t)r * (size_t)in->block_table_stride;
    const double ks = ag_dtype_is_fp8(in->kv_dtype) ? in->k_scale : 1.0;
    const double vs = ag_dtype_is_fp8(in->kv_dtype) ? in->v_scale : 1.0;
    for (int32_t k = 0; k < seq; k++) {
        const size_t row = (size_t)bt[k / bs] * (size_t)bs + (size_t)(k % bs);
        const size_t base = (row * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)D;
        for (int32_t d = 0; d < D; d++) {
            kt[(size_t)d * (size_t)seq + (size_t)k] =
                ag_dtype_decode(in->k_rows, base + (size_t)d, in->kv_dtype) * ks;
            v[(size_t)k * (size_t)D + (size_t)d] =
                ag_dtype_decode(in->v_rows, base + (size_t)d, in->kv_dtype) * vs;
        }
    }
}

/* Buffers of one call. */
typedef struct work {
    double *kt, *v, *q, *x, *s, *b, *acc, *bb, *M, *P;
    double *ktm, *vm;   /* a masked row's visible keys, compacted (mask only) */
    ref_ws *ws;         /* the bounds' own (model only) */
} work;

static void work_free(work *w) {
    free(w->kt), free(w->v), free(w->q), free(w->x), free(w->s), free(w->b), free(w->acc);
    free(w->bb), free(w->M), free(w->P), free(w->ktm), free(w->vm);
    ref_ws_free(w->ws);
}

static int work_alloc(work *w, int32_t max_seq, int32_t D, int with_model, int masked) {
    memset(w, 0, sizeof *w);
    const size_t kvd = (size_t)max_seq * (size_t)D;
    w->kt = malloc(kvd * sizeof(double));
    w->v = malloc(kvd * sizeof(double));
    if (masked) {
        w->ktm = malloc(kvd * sizeof(double));
        w->vm = malloc(kvd * sizeof(double));
    }
    w->b = malloc((size_t)max_seq * sizeof(double));
    w->q = malloc((size_t)D * sizeof(double));
    w->acc = malloc((size_t)D * sizeof(double));
    w->bb = malloc((size_t)D * sizeof(double));
    w->M = malloc((size_t)D * sizeof(double));
    w->P = malloc((size_t)D * sizeof(double));
    w->x = malloc((size_t)max_seq * sizeof(double));
    w->s = malloc((size_t)max_seq * sizeof(double));
    if (with_model) w->ws = ref_ws_alloc(max_seq);
    if (!w->kt || !w->v || !w->q || !w->acc || !w->bb || !w->M || !w->P || !w->x || !w->s ||
        !w->b || (masked && (!w->ktm || !w->vm)) || (with_model && !w->ws)) {
        work_free(w);
        return -1;
    }
    return 0;
}

/* The logits of query head h over the visible keys [k0, k0 + n) of the
 * decoded kv: x = scale <q, k> before the cap, s final (the cap, then the
 * additive term b[j]).  Returns the softmax's shift m (the sink takes part). */
static double row_logits(const ref_input *in, const ref_kv *kv, int32_t h, int64_t k0, int64_t n,
                         const double *q, double scale, const double *b, double *x, double *s) {
    const size_t seq = (size_t)kv->seq;
    for (int64_t j = 0; j < n; j++) x[j] = 0;
    for (int32_t d = 0; d < in->head_dim; d++) {
        const double qd = q[d];
        const double *kd = kv->kt + (size_t)d * seq + (size_t)k0;
        for (int64_t j = 0; j < n; j++) x[j] += qd * kd[j];
    }
    double m = in->sinks ? (double)in->sinks[h] : -INFINITY;
    for (int64_t j = 0; j < n; j++) {
        x[j] *= scale;
        double t = x[j];
        if (in->softcap > 0) t = in->softcap * tanh(t / in->softcap);
        s[j] = t + b[j];
        if (s[j] > m) m = s[j];   /* the shift is the max of the final logits (ref_range.h) */
    }
    return m;
}

/* The softmax average of the row: o[D] = sum_j e^(s_j - m) V[k0 + j] / l,
 * l (returned) the sum of the weights and the sink's e^(sink - m).  With
 * G (the bounds', ref_row_keys) the same pass over V also keeps, per d,
 * bb = sum_j G_j |V[k0 + j][d]|, M = max_j |V[k0 + j][d]| and P = the
 * largest |partial sum| of the weighted values in key order. */
static double row_pv(const ref_input *in, const ref_kv *kv, int32_t h, int64_t k0, int64_t n,
                     const double *s, double m, double *acc, double *o, const double *G,
                     double *bb, double *M, double *P) {
    const int32_t D = in->head_dim;
    double l = in->sinks ? exp((double)in->sinks[h] - m) : 0.0;
    for (int32_t d = 0; d < D; d++) acc[d] = 0, bb[d] = 0, M[d] = 0, P[d] = 0;
    for (int64_t j = 0; j < n; j++) {
        const double w = exp(s[j] - m);
        const double *vr = kv->v + (size_t)(k0 + j) * (size_t)D;
        l += w;
        if (!G) {
            for (int32_t d = 0; d < D; d++) acc[d] += w * vr[d];
            continue;
        }
        for (int32_t d = 0; d < D; d++) {
            const double a = fabs(vr[d]);
            acc[d] += w * vr[d];
            bb[d] += G[j] * a;   /* a NaN or inf sticks here */
            M[d] = a > M[d] ? a : M[d];
            P[d] = fabs(acc[d]) > P[d] ? fabs(acc[d]) : P[d];
        }
    }
    for (int32_t d = 0; d < D; d++) o[d] = n ? acc[d] / l : 0.0;
    return l;
}

/* The additive term of each visible key of the row at position p: ALiBi's
 * slope * (k - p) without a mask. */
static void row_bias_alibi(const ref_input *in, int32_t h, int64_t p, int64_t k0, int64_t n,
                           double *b) {
    const double slope = in->alibi_slopes ? (double)in->alibi_slopes[h] : 0.0;
    for (int64_t j = 0; j < n; j++) b[j] = slope * (double)(k0 + j - p);
}

/* With a mask: the row's visible keys in [k0, k1] whose mask is not -inf,
 * copied from kv into (ktm [D][n'], vm [n'][D]), and their additive terms;
 * returns n'. */
static int64_t row_masked(const ref_input *in, const ref_kv *kv, int32_t t, int32_t h,
                          int64_t k0, int64_t k1, double *ktm, double *vm, double *b) {
    const float *mrow = in->mask + (int64_t)t * in->mask_tstride + (int64_t)h * in->mask_hstride;
    const double slope = in->mask_times_slope && in->alibi_slopes ? (double)in->alibi_slopes[h]
                                                                  : 1.0;
    const int32_t D = kv->head_dim;
    int64_t n = 0;
    for (int64_t k = k0; k <= k1; k++)
        if (mrow[k] != -INFINITY) b[n++] = slope * (double)mrow[k];
    int64_t j = 0;
    for (int64_t k = k0; k <= k1; k++) {
        if (mrow[k] == -INFINITY) continue;
        for (int32_t d = 0; d < D; d++) {
            ktm[(size_t)d * (size_t)n + (size_t)j] = kv->kt[(size_t)d * (size_t)kv->seq + (size_t)k];
            vm[(size_t)j * (size_t)D + (size_t)d] = kv->v[(size_t)k * (size_t)D + (size_t)d];
        }
        j++;
    }
    return n;
}

/* ref_attention, and with a model (then lo/hi non-NULL) ref_attention_range,
 * counting its unjudged rows into why (NULL: not counted). */
static int attention(const ref_input *in, const ref_model *model, double *out, double *lo,
                     double *hi, ref_unjudged *why) {
    int32_t max_seq;
    if (!in || !out || !input_ok(in, &max_seq)) return -1;
    const int32_t Hq = in->num_heads, Hkv = in->num_kv_heads, D = in->head_dim;
    const int32_t g = Hq / Hkv;
    const double scale = in->scale > 0 ? in->scale : 1.0 / sqrt((double)D);
    work w;
    if (work_alloc(&w, max_seq > 0 ? max_seq : 1, D, model != NULL, in->mask != NULL)) return -1;

    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int32_t t0 = in->query_start_loc[r];
        const int32_t q_len = in->query_start_loc[r + 1] - t0;
        const int32_t seq = in->seq_lens[r];
        const int causal = in->causal[r] != 0;
        for (int32_t kvh = 0; kvh < Hkv; kvh++) {
            gather(in, r, kvh, w.kt, w.v);
            ref_kv kv = {seq, D, w.kt, w.v, NULL, NULL, NULL, NULL};
            if (model && !in->mask) {
                ref_kv_bind(w.ws, &kv);
                ref_kv_stats(model, &kv);
            }
            for (int32_t i = 0; i < q_len; i++) {
                const int64_t p = causal ? (int64_t)seq - q_len + i : i;
                int64_t k0, k1;
                visible_range(in, causal, p, seq, &k0, &k1);
                for (int32_t h = kvh * g; h < (kvh + 1) * g; h++) {
                    const size_t qbase =
                        ((size_t)(t0 + i) * (size_t)Hq + (size_t)h) * (size_t)D;
                    for (int32_t d = 0; d < D; d++)
                        w.q[d] = ag_dtype_decode(in->q, qbase + (size_t)d, in->q_dtype);
                    /* the row's keys: kv's [k0, k1], or with a mask its unmasked ones */
                    ref_kv rk = kv;
                    int64_t rk0 = k0, n = k1 >= k0 ? k1 - k0 + 1 : 0;
                    if (in->mask) {
                        n = row_masked(in, &kv, t0 + i, h, k0, k1, w.ktm, w.vm, w.b);
                        rk = (ref_kv){(int32_t)n, D, w.ktm, w.vm, NULL, NULL, NULL, NULL};
                        rk0 = 0;
                        if (model) {
                            ref_kv_bind(w.ws, &rk);
                            ref_kv_stats(model, &rk);
                        }
                    } else {
                        row_bias_alibi(in, h, p, k0, n, w.b);
                    }
                    const double m = row_logits(in, &rk, h, rk0, n, w.q, scale, w.b, w.x, w.s);
                    ref_row row = {in, &rk, h, p, rk0, n, w.q, scale, w.x, w.s, w.b, m, 0.0,
                                   in->sinks != NULL, in->sinks ? (double)in->sinks[h] : 0.0,
                                   out + qbase};
                    const double *G = model && n ? ref_row_keys(&row, model, w.ws) : NULL;
                    row.denom = row_pv(in, &rk, h, rk0, n, w.s, m, w.acc, out + qbase, G, w.bb,
                                       w.M, w.P);
                    if (model && n) {
                        ref_row_finish(&row, model, w.ws, w.bb, w.M, w.P, lo + qbase, hi + qbase);
                        ref_row_tally(w.ws, why);
                    } else if (model) {   /* no key: exactly 0 */
                        for (int32_t d = 0; d < D; d++) lo[qbase + d] = hi[qbase + d] = 0.0;
                        if (why) why->rows_all++;
                    }
                }
            }
        }
    }
    work_free(&w);
    return 0;
}

int ref_attention(const ref_input *in, double *out) {
    return attention(in, NULL, out, NULL, NULL, NULL);
}

int ref_attention_range(const ref_input *in, ref_model model, double *out, double *lo,
                        double *hi) {
    return ref_attention_range_why(in, model, out, lo, hi, NULL);
}

int ref_attention_range_why(const ref_input *in, ref_model model, double *out, double *lo,
                            double *hi, ref_unjudged *why) {
    if (!lo || !hi) return -1;
    return attention(in, &model, out, lo, hi, why);
}
