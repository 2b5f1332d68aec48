/*
 * tinyattn.c — the engine of tinyattn.h: the builder (what a group is
 * allowed to be, and how many query heads one reduction slot holds), the
 * planner (which decode requests split into how many pieces, and the
 * scratch they need), the cache writer, and the kernels: one pass with an
 * online softmax, and split-KV pieces merged by their maxima and sums.
 * Single-threaded: the pieces are the work items threads would share.
 */
#include "tinyattn.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ta_builder {
    ta_group g;
    int32_t slot_g;          /* query heads per KV head that one reduction slot holds */
    size_t elt;              /* bytes of one cache element */
};

struct ta_plan {
    const ta_builder *b;
    ta_batch batch;
    int32_t *pieces;         /* [num_reqs]: 0 one pass, else the request's split-KV pieces */
    int32_t n_split;
    size_t scratch;          /* the builder's sizing: the layout for slot_g */
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static ta_status fail(ta_error *err, ta_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

static ta_status ok(ta_error *err) {
    if (err) err->text[0] = '\0';
    return TA_OK;
}

/* ------------------------------------------------------------- sizes */

static int mul_ok(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
static int add_ok(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }
static int r64_ok(size_t a, size_t *out) {
    if (!add_ok(a, 63, out)) return 0;
    *out &= ~(size_t)63;
    return 1;
}

/* One reduction slot: S pieces of g query heads, each a partial output of
 * D floats, a maximum and a sum, every part 64-byte aligned. */
static int slot_bytes(size_t S, size_t g, size_t D, size_t *out) {
    size_t sg, part, stat;
    return mul_ok(S, g, &sg) && mul_ok(sg, D * sizeof(float), &part) && r64_ok(part, &part) &&
           mul_ok(sg, sizeof(float), &stat) && r64_ok(stat, &stat) && add_ok(part, stat, out) &&
           add_ok(*out, stat, out);
}

/* The scratch layout for g query heads per KV head: one row accumulator
 * of D floats, then one slot per split request and KV head, in order. */
static int layout_bytes(const ta_plan *p, int32_t g, size_t *out) {
    const ta_group *G = &p->b->g;
    size_t total, slot, all;
    if (!r64_ok((size_t)G->head_dim * sizeof(float), &total)) return 0;
    for (int32_t r = 0; r < p->batch.num_reqs; r++) {
        if (!p->pieces[r]) continue;
        if (!slot_bytes((size_t)p->pieces[r], (size_t)g, (size_t)G->head_dim, &slot) ||
            !mul_ok(slot, (size_t)G->num_kv_heads, &all) || !add_ok(total, all, &total))
            return 0;
    }
    *out = total;
    return 1;
}

/* ----------------------------------------------------------- builder */

static ta_status check_layer(const ta_group *g, int32_t l, ta_error *err) {
    const ta_layer *L = &g->layers[l];
    if (L->num_heads < 1 || L->num_heads % g->num_kv_heads != 0)
        return fail(err, TA_E_HEADS, "layers[%d].num_heads %d: not a positive multiple of %d KV heads",
                    (int)l, (int)L->num_heads, (int)g->num_kv_heads);
    if (L->num_heads > TA_MAX_HEADS)
        return fail(err, TA_E_LIMIT, "layers[%d].num_heads %d above %d", (int)l, (int)L->num_heads,
                    TA_MAX_HEADS);
    if (L->window_left < -1 || L->window_right < -1)
        return fail(err, TA_E_WINDOW, "layers[%d] window (%d, %d): a side below -1", (int)l,
                    (int)L->window_left, (int)L->window_right);
    if (!isfinite(L->scale) || L->scale < 0 || !isfinite(L->softcap) || L->softcap < 0)
        return fail(err, TA_E_LAYER, "layers[%d] scale %g, softcap %g: not finite and >= 0", (int)l,
                    (double)L->scale, (double)L->softcap);
    for (int32_t h = 0; h < L->num_heads; h++) {
        if (L->alibi_slopes && !isfinite(L->alibi_slopes[h]))
            return fail(err, TA_E_LAYER, "layers[%d].alibi_slopes[%d] = %g", (int)l, (int)h,
                        (double)L->alibi_slopes[h]);
        if (L->sinks && !isfinite(L->sinks[h]))
            return fail(err, TA_E_LAYER, "layers[%d].sinks[%d] = %g", (int)l, (int)h,
                        (double)L->sinks[h]);
    }
    return TA_OK;
}

ta_status ta_builder_create(const ta_group *g, ta_builder **out, ta_error *err) {
    if (!g || !out || (g->num_layers > 0 && !g->layers))
        return fail(err, TA_E_ARG, "builder: the group, its layers or out is NULL");
    *out = NULL;
    if (g->num_layers < 0) return fail(err, TA_E_HEADS, "num_layers %d", (int)g->num_layers);
    if (g->num_kv_heads < 1) return fail(err, TA_E_HEADS, "num_kv_heads %d", (int)g->num_kv_heads);
    if (g->num_kv_heads > TA_MAX_HEADS)
        return fail(err, TA_E_LIMIT, "num_kv_heads %d above %d", (int)g->num_kv_heads, TA_MAX_HEADS);
    if (g->head_dim < 1) return fail(err, TA_E_HEAD_DIM, "head_dim %d", (int)g->head_dim);
    if (g->head_dim > TA_MAX_HEAD_DIM)
        return fail(err, TA_E_LIMIT, "head_dim %d above %d", (int)g->head_dim, TA_MAX_HEAD_DIM);
    if (g->block_size < 1) return fail(err, TA_E_BLOCK_SIZE, "block_size %d", (int)g->block_size);
    if (g->block_size > TA_MAX_BLOCK_SIZE)
        return fail(err, TA_E_LIMIT, "block_size %d above %d", (int)g->block_size, TA_MAX_BLOCK_SIZE);
    if (g->kv_type != TA_KV_F32 && g->kv_type != TA_KV_F16)
        return fail(err, TA_E_KV_TYPE, "kv_type %d", (int)g->kv_type);
    int32_t most = 0;   /* the most query heads any layer of the group has */
    for (int32_t l = 0; l < g->num_layers; l++) {
        const ta_status st = check_layer(g, l, err);
        if (st != TA_OK) return st;
        if (g->layers[l].num_heads > most) most = g->layers[l].num_heads;
    }
    if (g->num_layers == 0) {   /* an empty group: the model-wide count stands in */
        const int32_t m = g->model_num_heads;
        if (m < 1 || m % g->num_kv_heads != 0)
            return fail(err, TA_E_HEADS, "model_num_heads %d (no layers): not a positive multiple of "
                        "%d KV heads", (int)m, (int)g->num_kv_heads);
        if (m > TA_MAX_HEADS)
            return fail(err, TA_E_LIMIT, "model_num_heads %d (no layers) above %d", (int)m,
                        TA_MAX_HEADS);
        most = m;
    }
#if defined(PLANTED_MODEL_HEADS) && PLANTED_MODEL_HEADS
    /* The planted bug: the slots sized from the model-wide head count (a
     * usable one; else the group's), as vLLM's CPU builder did before PR
     * 51852.  A layer with more heads than that writes past its slot. */
    int32_t heads = g->model_num_heads;
    if (heads < g->num_kv_heads || heads > TA_MAX_HEADS) heads = most;
#else
    const int32_t heads = most;
#endif
    ta_builder *b = calloc(1, sizeof *b);
    if (!b) return fail(err, TA_E_NOMEM, "builder: out of memory");
    b->g = *g;
    b->slot_g = heads / g->num_kv_heads;
    b->elt = g->kv_type == TA_KV_F16 ? 2 : 4;
    *out = b;
    return ok(err);
}

void ta_builder_destroy(ta_builder *b) { free(b); }

/* ------------------------------------------------------------- cache */

static int cell_bytes(const ta_builder *b, size_t *out) {   /* one slot: [Hkv][D] */
    return mul_ok((size_t)b->g.num_kv_heads * (size_t)b->g.head_dim, b->elt, out);
}

ta_status ta_cache_bytes(const ta_builder *b, int32_t num_blocks, size_t *bytes, ta_error *err) {
    if (!b || !bytes) return fail(err, TA_E_ARG, "cache_bytes: builder or bytes is NULL");
    *bytes = 0;
    if (num_blocks < 1) return fail(err, TA_E_BATCH, "num_blocks %d", (int)num_blocks);
    size_t cell;
    if (!cell_bytes(b, &cell) || !mul_ok(cell, (size_t)num_blocks * (size_t)b->g.block_size, bytes))
        return fail(err, TA_E_OVERFLOW, "a cache of %d blocks of %d slots overflows", (int)num_blocks,
                    (int)b->g.block_size);
    return ok(err);
}

ta_status ta_write_kv(const ta_builder *b, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slots, ta_error *err) {
    if (!b || !k_cache || !v_cache || (num_tokens > 0 && (!k_rows || !v_rows || !slots)))
        return fail(err, TA_E_ARG, "write_kv: a buffer is NULL");
    const int64_t cells = (int64_t)num_blocks * b->g.block_size;
    for (int32_t i = 0; i < num_tokens; i++)   /* every slot first: a refusal writes nothing */
        if (slots[i] < -1 || slots[i] >= cells)
            return fail(err, TA_E_SLOT, "slots[%d] = %lld outside -1..%lld", (int)i,
                        (long long)slots[i], (long long)cells - 1);
    const size_t hkv = (size_t)b->g.num_kv_heads, bs = (size_t)b->g.block_size;
    const size_t row = (size_t)b->g.head_dim * b->elt;   /* one head's elements */
    for (int32_t i = 0; i < num_tokens; i++) {
        if (slots[i] < 0) continue;
        const size_t blk = (size_t)slots[i] / bs, off = (size_t)slots[i] % bs;
        for (size_t h = 0; h < hkv; h++) {
            const size_t to = ((blk * hkv + h) * bs + off) * row, from = ((size_t)i * hkv + h) * row;
            memcpy((char *)k_cache + to, (const char *)k_rows + from, row);
            memcpy((char *)v_cache + to, (const char *)v_rows + from, row);
        }
    }
    return ok(err);
}

/* -------------------------------------------------------------- plan */

static int32_t pieces_of(const ta_batch *bt, int32_t q_len, int32_t seq) {
    if (q_len != 1) return 0;   /* only decode rows split */
    const int32_t cut = (int32_t)(((int64_t)seq + TA_PIECE_KEYS - 1) / TA_PIECE_KEYS);
    switch (bt->split) {
    case TA_SPLIT_AUTO: return seq >= TA_SPLIT_AUTO_KEYS ? (cut < 16 ? cut : 16) : 0;
    case TA_SPLIT_ALWAYS: return seq < 2 ? 0 : cut < 2 ? 2 : cut < 16 ? cut : 16;
    case TA_SPLIT_FIXED: return bt->pieces < seq ? bt->pieces : seq;
    default: return 0;
    }
}

static ta_status check_request(const ta_builder *b, const ta_batch *bt, int32_t r, ta_error *err) {
    const int64_t q_len = (int64_t)bt->query_start_loc[r + 1] - bt->query_start_loc[r];
    if (q_len < 1)
        return fail(err, TA_E_BATCH, "query_start_loc[%d..%d] = %d, %d: an empty request", (int)r,
                    (int)r + 1, (int)bt->query_start_loc[r], (int)bt->query_start_loc[r + 1]);
    if (bt->causal && bt->causal[r] > 1)
        return fail(err, TA_E_BATCH, "causal[%d] = %d", (int)r, (int)bt->causal[r]);
    const int32_t seq = bt->seq_lens[r];
    if (seq < q_len)
        return fail(err, TA_E_SEQ_LEN, "seq_lens[%d] = %d below its %lld queries", (int)r, (int)seq,
                    (long long)q_len);
    const int64_t nblk = ((int64_t)seq + b->g.block_size - 1) / b->g.block_size;
    if (nblk > bt->block_table_stride)
        return fail(err, TA_E_BLOCK, "request %d needs %lld blocks, block_table_stride is %d", (int)r,
                    (long long)nblk, (int)bt->block_table_stride);
    for (int64_t k = 0; k < nblk; k++) {
        const int32_t id = bt->block_table[(size_t)r * (size_t)bt->block_table_stride + (size_t)k];
        if (id < 0 || id >= bt->num_blocks)
            return fail(err, TA_E_BLOCK, "block_table[%d][%lld] = %d outside 0..%d", (int)r,
                        (long long)k, (int)id, (int)bt->num_blocks - 1);
    }
    return TA_OK;
}

ta_status ta_plan_create(const ta_builder *b, const ta_batch *bt, ta_plan **out, ta_error *err) {
    if (!b || !bt || !out || !bt->query_start_loc || !bt->seq_lens || !bt->block_table)
        return fail(err, TA_E_ARG, "plan: the builder, the batch, one of its arrays or out is NULL");
    *out = NULL;
    if (bt->num_reqs < 1) return fail(err, TA_E_BATCH, "num_reqs %d", (int)bt->num_reqs);
    if (bt->query_start_loc[0] != 0)
        return fail(err, TA_E_BATCH, "query_start_loc[0] = %d", (int)bt->query_start_loc[0]);
    if ((unsigned)bt->split > TA_SPLIT_FIXED) return fail(err, TA_E_SPLIT, "split %d", (int)bt->split);
    if (bt->split == TA_SPLIT_FIXED && bt->pieces < 1)
        return fail(err, TA_E_SPLIT, "pieces %d", (int)bt->pieces);
    if (bt->split == TA_SPLIT_FIXED && bt->pieces > TA_MAX_PIECES)
        return fail(err, TA_E_LIMIT, "pieces %d above %d", (int)bt->pieces, TA_MAX_PIECES);
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        const ta_status st = check_request(b, bt, r, err);
        if (st != TA_OK) return st;
    }
    ta_plan *p = calloc(1, sizeof *p);
    if (p) p->pieces = calloc((size_t)bt->num_reqs, sizeof *p->pieces);
    if (!p || !p->pieces) {
        free(p);
        return fail(err, TA_E_NOMEM, "plan: out of memory for %d requests", (int)bt->num_reqs);
    }
    p->b = b;
    p->batch = *bt;
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        p->pieces[r] = pieces_of(bt, bt->query_start_loc[r + 1] - bt->query_start_loc[r],
                                 bt->seq_lens[r]);
        p->n_split += p->pieces[r] > 0;
    }
    if (!layout_bytes(p, b->slot_g, &p->scratch)) {
        ta_plan_destroy(p);
        return fail(err, TA_E_OVERFLOW, "plan: the scratch of %d split requests overflows",
                    (int)bt->num_reqs);
    }
    *out = p;
    return ok(err);
}

void ta_plan_destroy(ta_plan *p) {
    if (p) free(p->pieces);
    free(p);
}

size_t ta_plan_scratch_bytes(const ta_plan *p) { return p ? p->scratch : 0; }

int32_t ta_plan_split_requests(const ta_plan *p) { return p ? p->n_split : 0; }

ta_status ta_plan_layer_bytes(const ta_plan *p, int32_t num_heads, size_t *bytes, ta_error *err) {
    if (!p || !bytes) return fail(err, TA_E_ARG, "layer_bytes: plan or bytes is NULL");
    const int32_t hkv = p->b->g.num_kv_heads;
    if (num_heads < 1 || num_heads % hkv != 0)
        return fail(err, TA_E_HEADS, "num_heads %d over %d KV heads", (int)num_heads, (int)hkv);
    if (!layout_bytes(p, num_heads / hkv, bytes))
        return fail(err, TA_E_OVERFLOW, "the scratch of %d heads overflows", (int)num_heads);
    return ok(err);
}

/* ----------------------------------------------------------- kernels */

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
    for (int32_t i = 0; i < n; i++)
        if (m[(size_t)i * stride] != -INFINITY) den += l[(size_t)i * stride] * expf(m[(size_t)i * stride] - M);
    for (int32_t e = 0; e < D; e++) {
        float num = 0;
        for (int32_t i = 0; i < n; i++)
            if (m[(size_t)i * stride] != -INFINITY)
                num += acc[(size_t)i * acc_stride + (size_t)e] * expf(m[(size_t)i * stride] - M);
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
        return fail(err, TA_E_SCRATCH, "a scratch of %zu bytes at %p; the plan needs %zu, %d-aligned",
                    scratch_bytes, scratch, p->scratch, TA_SCRATCH_ALIGN);
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
            return fail(err, TA_E_OVERFLOW, "request %d: a slot of %d pieces overflows", (int)r, (int)S);
        x.pos = x.causal ? (int64_t)seq - 1 : 0;
        for (int32_t kvh = 0; kvh < G->num_kv_heads; kvh++, off += slot) {
            char *base = (char *)scratch + off;
            float *acc = (float *)base, *mx = (float *)(base + part), *sm = (float *)(base + part + stat);
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
