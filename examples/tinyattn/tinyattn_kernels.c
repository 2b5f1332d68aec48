/*
 * tinyattn_kernels.c — tinyattn's kernels: one pass over a row's keys with
 * an online softmax, and split-KV decode, whose pieces go to one reduction
 * slot per request and KV head of the caller's scratch (laid out for the
 * running layer's head count) and are merged by their maxima and sums.
 * Single-threaded: the pieces are the work items threads would share.
 */
#include "tinyattn_impl.h"

#include <math.h>
#include <string.h>

static float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);                          /* zero, subnormal */
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), (int)e - 25);
    return sign ? -v : v;
}

/* What one row of the kernels needs to know. */
typedef struct row_ctx {
    const ta_plan *p;
    const ta_layer *L;
    const float *q;          /* the row's query head */
    const void *k, *v;       /* the caches */
    int32_t r, kvh, h;
    int64_t pos;             /* the query's position */
    int causal;
    float scale;
} row_ctx;

static float elem(const ta_builder *b, const void *cache, size_t at) {
    return b->g.kv_type == TA_KV_F16 ? half_to_float(((const uint16_t *)cache)[at])
                                     : ((const float *)cache)[at];
}

/* Keys [k0, k1) of the row: an online softmax into acc[D] (unnormalised,
 * relative to *m), the running maximum *m (-inf: no key seen) and sum *l. */
static void pass(const row_ctx *x, int64_t k0, int64_t k1, float *acc, float *m, float *l) {
    const ta_builder *b = x->p->b;
    const ta_batch *bt = &x->p->batch;
    const ta_layer *L = x->L;
    const int32_t D = b->g.head_dim, bs = b->g.block_size;
    float mx = -INFINITY, sum = 0;
    memset(acc, 0, (size_t)D * sizeof *acc);
    for (int64_t k = k0; k < k1; k++) {
        if ((x->causal && k > x->pos) || (L->window_left >= 0 && k < x->pos - L->window_left) ||
            (L->window_right >= 0 && k > x->pos + L->window_right))
            continue;
        const size_t blk = (size_t)bt->block_table[(size_t)x->r * (size_t)bt->block_table_stride +
                                                    (size_t)(k / bs)];
        const size_t at = ((blk * (size_t)b->g.num_kv_heads + (size_t)x->kvh) * (size_t)bs +
                           (size_t)(k % bs)) * (size_t)D;
        float s = 0;
        for (int32_t e = 0; e < D; e++) s += x->q[e] * elem(b, x->k, at + (size_t)e);
        s *= x->scale;
        if (L->softcap > 0) s = L->softcap * tanhf(s / L->softcap);
        if (L->alibi_slopes) s += L->alibi_slopes[x->h] * (float)(k - x->pos);
        if (s == -INFINITY) continue;   /* weighs nothing */
        if (s > mx) {
            const float c = expf(mx - s);
            for (int32_t e = 0; e < D; e++) acc[e] *= c;
            sum *= c;
            mx = s;
        }
        const float w = expf(s - mx);
        sum += w;
        for (int32_t e = 0; e < D; e++) acc[e] += w * elem(b, x->v, at + (size_t)e);
    }
    *m = mx;
    *l = sum;
}

/* out[D] from pieces n of (acc, m, l), strided, and the row's sink. */
static void merge(const row_ctx *x, const float *acc, size_t acc_stride, const float *m,
                  const float *l, size_t stride, int32_t n, float *out) {
    const int32_t D = x->p->b->g.head_dim;
    const float sink = x->L->sinks ? x->L->sinks[x->h] : -INFINITY;
    float M = sink;
    for (int32_t i = 0; i < n; i++)
        if (m[(size_t)i * stride] > M) M = m[(size_t)i * stride];
    if (M == -INFINITY) {   /* nothing visible and no sink */
        memset(out, 0, (size_t)D * sizeof *out);
        return;
    }
    float den = x->L->sinks ? expf(sink - M) : 0;
    for (int32_t i = 0; i < n; i++) {
        const float mi = m[(size_t)i * stride];
        if (mi != -INFINITY) den += l[(size_t)i * stride] * expf(mi - M);
    }
    for (int32_t e = 0; e < D; e++) {
        float num = 0;
        for (int32_t i = 0; i < n; i++) {
            const float mi = m[(size_t)i * stride];
            if (mi != -INFINITY) num += acc[(size_t)i * acc_stride + (size_t)e] * expf(mi - M);
        }
        out[e] = num / den;
    }
}

ta_status ta_forward(const ta_plan *p, int32_t layer, const float *q, const void *k_cache,
                     const void *v_cache, void *scratch, size_t scratch_bytes, float *out,
                     ta_error *err) {
    if (!p || !q || !k_cache || !v_cache || !scratch || !out)
        return fail(err, TA_E_ARG, "forward: the plan, a tensor or the scratch is NULL");
    const ta_group *G = &p->b->g;
    if (layer < 0 || layer >= G->num_layers)
        return fail(err, TA_E_LAYER_INDEX, "layer %d of %d", (int)layer, (int)G->num_layers);
    if (scratch_bytes < p->scratch || (uintptr_t)scratch % TA_SCRATCH_ALIGN)
        return fail(err, TA_E_SCRATCH,
                    "a scratch of %zu bytes at %p; the plan needs %zu, %d-aligned", scratch_bytes,
                    scratch, p->scratch, TA_SCRATCH_ALIGN);
    const ta_layer *L = &G->layers[layer];
    const ta_batch *bt = &p->batch;
    const int32_t D = G->head_dim, Hq = L->num_heads, g = Hq / G->num_kv_heads;
    row_ctx x = {p, L, NULL, k_cache, v_cache, 0, 0, 0, 0, 1,
                 L->scale > 0 ? L->scale : 1.0f / sqrtf((float)D)};
    float *row_acc = scratch;
    size_t off;   /* where the next reduction slot starts: the kernels' layout for g */
    r64_ok((size_t)D * sizeof(float), &off);
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        const int32_t t0 = bt->query_start_loc[r], q_len = bt->query_start_loc[r + 1] - t0;
        const int32_t seq = bt->seq_lens[r], S = p->pieces[r];
        x.r = r;
        x.causal = !bt->causal || bt->causal[r];
        if (!S) {   /* one pass per row */
            for (int32_t i = 0; i < q_len; i++)
                for (int32_t h = 0; h < Hq; h++) {
                    const size_t row = ((size_t)(t0 + i) * (size_t)Hq + (size_t)h) * (size_t)D;
                    float m, l;
                    x.q = q + row, x.h = h, x.kvh = h / g;
                    x.pos = x.causal ? (int64_t)seq - q_len + i : i;
                    pass(&x, 0, seq, row_acc, &m, &l);
                    merge(&x, row_acc, 0, &m, &l, 0, 1, out + row);
                }
            continue;
        }
        size_t slot, part, stat;   /* a split decode row: S pieces per head into its slot */
        if (!slot_bytes((size_t)S, (size_t)g, (size_t)D, &slot) ||
            !r64_ok((size_t)S * (size_t)g * (size_t)D * sizeof(float), &part) ||
            !r64_ok((size_t)S * (size_t)g * sizeof(float), &stat))
            return fail(err, TA_E_OVERFLOW, "request %d: a slot of %d pieces overflows", (int)r,
                        (int)S);
        x.pos = x.causal ? (int64_t)seq - 1 : 0;
        for (int32_t kvh = 0; kvh < G->num_kv_heads; kvh++, off += slot) {
            char *base = (char *)scratch + off;
            float *acc = (float *)base, *mx = (float *)(base + part);
            float *sm = (float *)(base + part + stat);
            for (int32_t j = 0; j < g; j++) {
                const int32_t h = kvh * g + j;
                x.q = q + ((size_t)t0 * (size_t)Hq + (size_t)h) * (size_t)D, x.h = h, x.kvh = kvh;
                for (int32_t i = 0; i < S; i++) {
                    const size_t at = (size_t)i * (size_t)g + (size_t)j;
                    pass(&x, (int64_t)seq * i / S, (int64_t)seq * (i + 1) / S, acc + at * (size_t)D,
                         mx + at, sm + at);
                }
                merge(&x, acc + (size_t)j * (size_t)D, (size_t)g * (size_t)D, mx + j, sm + j,
                      (size_t)g, S, out + ((size_t)t0 * (size_t)Hq + (size_t)h) * (size_t)D);
            }
        }
    }
    return ok(err);
}
