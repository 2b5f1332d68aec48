/*
 * wide.c — the executor's fp64 path for rows fp32 cannot carry.
 *
 * The kernels keep q . K, the weights and the accumulator in fp32 (with
 * the power-of-two tricks of executor.c for huge scales and huge q).  An
 * f32 or bf16 cache reaches FLT_MAX by itself, and there those tricks run
 * out: products of K near its maximum with an ordinary q overflow the dot
 * product (NaN rows, or an infinite logit that erases the order of the
 * others), and a huge q scaled down to [1, 2) pushes its small elements
 * into fp32's subnormals, where their products with a large K were what
 * decided the logits (docs/engine.md, "Rows fp32 cannot carry").  The
 * executor sends such rows here (executor.c, needs_wide): every logit is
 * taken in fp64 from the inputs as they are, where the product of two
 * fp32 values is exact and no sum of them overflows, and the output row
 * comes back as fp32 with a neutral softmax state, for the table's own
 * store to convert.
 *
 * Plain scalar C, no threads, no allocation: it works one row at a time
 * in one pass over the row's keys, its state on the stack (head_dim is at
 * most ATTN_MAX_HEAD_DIM).  It is several times slower than a table's
 * tile, which is fine: it runs only on inputs no model produces.
 */
#include "internal.h"
#include "kernels/dtype.h"
#include "kernels/mask.h"

#include <math.h>

/* Element offset of key k's row of the cache, for the KV head kh of
 * request req (the paged layout of docs/design.md §1). */
static size_t key_row(const attn_plan *p, int32_t req, int32_t kh, int64_t k) {
    const int32_t blk = p->block_table[(size_t)req * (size_t)p->bt_stride +
                                       (size_t)(k / p->block_size)];
    ATTN_ASSERT(blk >= 0 && blk < p->num_blocks);
    const size_t D = (size_t)p->head_dim;
    return (((size_t)blk * (size_t)p->num_kv_heads + (size_t)kh) * (size_t)p->block_size +
            (size_t)(k % p->block_size)) *
           D;
}

/* Row (token tok of request req, query head h) of the layer, into out
 * (head_dim floats): v_scale sum_k w_k V_k / (sum_k w_k + [sink] e^sink),
 * w_k = e^(s_k - M), every step in fp64, one pass over the row's keys
 * (online softmax).  Its q, one key row and the accumulator live on the
 * stack (ATTN_MAX_HEAD_DIM elements each). */
static void wide_row(const attn__wide *w, int32_t req, int32_t tok, int32_t h, float *out) {
    const attn_plan *p = w->p;
    const attn_layer_desc *ly = w->layer;
    const size_t D = (size_t)p->head_dim;
    ATTN_ASSERT(D >= 1 && D <= ATTN_MAX_HEAD_DIM);
    const int32_t seq = p->seq_lens[req], q_len = p->qsl[req + 1] - p->qsl[req];
    const int32_t causal = p->req_causal[req];
    const int32_t kh = h / w->g;
    /* docs/design.md §2: a causal request's token i at seq_len - q_len + i */
    const int64_t pos = (int64_t)(causal ? seq - q_len : 0) + tok;
    int64_t lo, hi;
    attn__row_interval(pos, seq, causal, w->win_left[causal], w->win_right[causal], &lo, &hi);
    const double slope = ly->alibi_slopes ? (double)ly->alibi_slopes[h] : 0.0;
    /* rows widened exactly to fp32 (dtype.h), each product taken in fp64 */
    float q[ATTN_MAX_HEAD_DIM], row[ATTN_MAX_HEAD_DIM];
    double o[ATTN_MAX_HEAD_DIM];
    attn__row_f32(p->q_dtype, w->t->q,
                  ((size_t)(p->qsl[req] + tok) * (size_t)w->hq + (size_t)h) * D, (int32_t)D, q);
    for (size_t d = 0; d < D; d++) o[d] = 0.0;
    double M = -INFINITY, L = 0.0;
    for (int64_t k = lo; k < hi; k++) {
        const size_t kr = key_row(p, req, kh, k);
        attn__row_f32(p->kv_dtype, w->t->k_cache, kr, (int32_t)D, row);
        double dot = 0.0;
        for (size_t d = 0; d < D; d++) dot += (double)q[d] * (double)row[d];
#ifndef ATTN_INJECT_wide_softcap_units
        double s = dot * w->scale;
        if (ly->softcap > 0.0f) s = (double)ly->softcap * tanh(s / (double)ly->softcap);
#else
        /* INJECTED BUG (wide_softcap_units): the cap bounds the raw dot
         * product and the scale comes after it, so the capped logit is in
         * the wrong units (cap x scale, not cap) */
        double s = dot;
        if (ly->softcap > 0.0f) s = (double)ly->softcap * tanh(s / (double)ly->softcap);
        s *= w->scale;
#endif
#ifndef ATTN_INJECT_wide_alibi_sign
        if (ly->alibi_slopes) s += slope * (double)(k - pos);
#else
        /* INJECTED BUG (wide_alibi_sign): the distance taken the other way
         * round, so the fp64 path favours far keys */
        if (ly->alibi_slopes) s += slope * (double)(pos - k);
#endif
        if (s > M) {
            /* a new maximum: what was summed so far shrinks by e^(M - s) */
            const double f = M == -INFINITY ? 0.0 : exp(M - s);
            L *= f;
            for (size_t d = 0; d < D; d++) o[d] *= f;
            M = s;
        }
        const double wk = exp(s - M); /* NaN for a NaN logit: the row says so */
        L += wk;
        attn__row_f32(p->kv_dtype, w->t->v_cache, kr, (int32_t)D, row);
        for (size_t d = 0; d < D; d++) o[d] += wk * (double)row[d];
    }
#ifndef ATTN_INJECT_wide_sink_dropped
    if (ly->sinks) {
#else
    /* INJECTED BUG (wide_sink_dropped): the fp64 path forgets the sink,
     * and the executor passes the store none (it was "applied") */
    if (0) {
#endif
        /* the sink joins the denominator only (kernels.h, attn_store_fn) */
        const double sk = (double)ly->sinks[h];
        const double top = sk > M ? sk : M;
        const double f = M == -INFINITY ? 0.0 : exp(M - top);
        L = L * f + exp(sk - top);
        for (size_t d = 0; d < D; d++) o[d] *= f;
    }
    for (size_t d = 0; d < D; d++)
        out[d] = L == 0.0 ? 0.0f : (float)((double)w->v_scale * (o[d] / L));
}

void attn__wide_rows(const attn__wide *w, int32_t req, int32_t tok0, int32_t n_tok,
                     int32_t kv_head, float *acc, float *m, float *l) {
    const size_t D = (size_t)w->p->head_dim;
    for (int32_t t = 0; t < n_tok; t++)
        for (int32_t j = 0; j < w->g; j++) {
            const size_t r = (size_t)t * (size_t)w->g + (size_t)j;
            wide_row(w, req, tok0 + t, kv_head * w->g + j, acc + r * D);
            m[r] = 0.0f; /* the neutral state: the store's factor is exactly 1 */
            l[r] = 1.0f;
        }
}
