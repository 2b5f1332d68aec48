/*
 * tinyattn.c — the control side of tinyattn.h: the builder (what a group
 * is allowed to be, and how many query heads one reduction slot holds),
 * the cache writer, and the planner (which decode requests split into how
 * many pieces, and the scratch they need).  The kernels are
 * tinyattn_kernels.c.
 */
#include "tinyattn_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
        return fail(err, TA_E_HEADS,
                    "layers[%d].num_heads %d: not a positive multiple of %d KV heads", (int)l,
                    (int)L->num_heads, (int)g->num_kv_heads);
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
        return fail(err, TA_E_LIMIT, "num_kv_heads %d above %d", (int)g->num_kv_heads,
                    TA_MAX_HEADS);
    if (g->head_dim < 1) return fail(err, TA_E_HEAD_DIM, "head_dim %d", (int)g->head_dim);
    if (g->head_dim > TA_MAX_HEAD_DIM)
        return fail(err, TA_E_LIMIT, "head_dim %d above %d", (int)g->head_dim, TA_MAX_HEAD_DIM);
    if (g->block_size < 1) return fail(err, TA_E_BLOCK_SIZE, "block_size %d", (int)g->block_size);
    if (g->block_size > TA_MAX_BLOCK_SIZE)
        return fail(err, TA_E_LIMIT, "block_size %d above %d", (int)g->block_size,
                    TA_MAX_BLOCK_SIZE);
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
            return fail(err, TA_E_HEADS,
                        "model_num_heads %d (no layers): not a positive multiple of %d KV heads",
                        (int)m, (int)g->num_kv_heads);
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
        return fail(err, TA_E_OVERFLOW, "a cache of %d blocks of %d slots overflows",
                    (int)num_blocks, (int)b->g.block_size);
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
            const size_t to = ((blk * hkv + h) * bs + off) * row;
            const size_t from = ((size_t)i * hkv + h) * row;
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
        return fail(err, TA_E_BLOCK, "request %d needs %lld blocks, block_table_stride is %d",
                    (int)r, (long long)nblk, (int)bt->block_table_stride);
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
        return fail(err, TA_E_ARG, "plan: the builder, the batch, an array of it or out is NULL");
    *out = NULL;
    if (bt->num_reqs < 1) return fail(err, TA_E_BATCH, "num_reqs %d", (int)bt->num_reqs);
    if (bt->query_start_loc[0] != 0)
        return fail(err, TA_E_BATCH, "query_start_loc[0] = %d", (int)bt->query_start_loc[0]);
    if ((unsigned)bt->split > TA_SPLIT_FIXED)
        return fail(err, TA_E_SPLIT, "split %d", (int)bt->split);
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
