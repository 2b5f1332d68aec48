/*
 * engines/ort/ort_needs.c — the ABI's internal_needs: the sizes of the
 * buffers ORT's CPU kernels request from the group's allocator during one
 * run of a layer, derived here from the shapes of the tensors the adapter
 * hands ORT (MAPPING.md, "ORT's internal buffers", writes the derivation
 * down), so the harness can compare them with what its allocator logged.
 *
 * One list per run, class after class in the order run() calls ORT, and
 * within a call in the order the kernel asks.  Where ORT's threads request
 * buffers concurrently (f16 GQA, f16 Attention: one buffer per batch entry
 * and head) the log's order among those varies; the sizes do not.
 */
#include "ort_group.h"

typedef struct og_list {
    size_t *sizes, cap, n;
} og_list;

static void put(og_list *l, size_t bytes) {
    if (l->n < l->cap) l->sizes[l->n] = bytes;
    l->n++;
}

/* The streaming kernels' key block: as many keys as the L2 cache holds
 * for 4 floats' bytes x 4 x (D + D) each, at least 1. */
static size_t kv_block(size_t l2, size_t D) {
    const size_t kv = l2 / (sizeof(float) * 4 * (D + D));
    return kv < 1 ? 1 : kv;
}

/* The streaming kernel's tiles (f32 GQA without soft cap or sinks, S > 1):
 * a tile of Bq query rows meets the keys Bk at a time; per thread it holds
 * Bq x Bk logits, Bq x D output accumulators and a running max and sum per
 * row.  Bk is kv_block, Bq = min(Bk, D + D), each clipped to the rows
 * there are. */
static size_t flash_tile_floats(size_t l2, size_t D, size_t S, size_t T) {
    const size_t kv = kv_block(l2, D);
    size_t bq = kv < D + D ? kv : D + D;
    if (bq > S) bq = S;
    const size_t bk = kv < T ? kv : T;
    return bq * (bk + D + 2);
}

/* Whether the decode kernel (f32 GQA without soft cap or sinks, S = 1)
 * splits class c's keys.  Normally it computes one logit row and one
 * output row per thread.  When the batch has fewer (entry, head) pairs
 * than threads, every entry has the same length and the keys span more
 * than one kv_block, ORT splits the keys into blocks instead (flash
 * decoding, ORT pull request #29216: the same conditions), merged
 * afterwards.  Measured on 1.30 for T 2..5000, D 8..128, 1..4 threads, B
 * 1..3 (MAPPING.md). */
static int decode_splits(const og_plan *P, const og_class *c, size_t hq) {
    const size_t B = (size_t)c->nreq, T = (size_t)c->T, D = (size_t)P->g->d;
    int ragged = 0;
    for (int32_t i = 1; i < c->nreq; i++)
        ragged |= P->b.seq_lens[P->req[c->first + i]] != P->b.seq_lens[P->req[c->first]];
    return B * hq < (size_t)P->g->threads && !ragged && T > kv_block(P->g->lib->l2_bytes, D);
}

og_route og_gqa_route(const og_plan *P, const og_class *c, const og_key *k) {
    if (P->g->t_dt != AG_F32) return OG_ROUTE_F16;
    /* the streaming kernels: a decode over a past (S = 1, T > 1), or a
     * prompt; a lone first token (S = T = 1) takes the logits path */
    if (k->softcap != 0.0f || k->sink != OG_SINK_NONE || (c->S == 1 && c->T == 1))
        return OG_ROUTE_LOGITS;
    if (c->S > 1) return OG_ROUTE_FLASH;
    return decode_splits(P, c, (size_t)k->hq) ? OG_ROUTE_DECODE_SPLIT : OG_ROUTE_DECODE_ROW;
}

/* The decode kernel's buffer: per thread a logit row and an output row,
 * or when it splits (decode_splits), per thread one block of logits and
 * per entry, head and block a partial output with its max and sum. */
static size_t decode_floats(const og_plan *P, const og_class *c, size_t hq, size_t th,
                            int split) {
    const size_t B = (size_t)c->nreq, T = (size_t)c->T, D = (size_t)P->g->d;
    const size_t kv = kv_block(P->g->lib->l2_bytes, D);
    if (!split) return th * (T + D);
    return th * kv + B * hq * ((T + kv - 1) / kv) * (D + 2);
}

static void gqa_needs(const og_plan *P, const og_class *c, const og_key *k, og_list *l) {
    const og_group *g = P->g;
    const size_t B = (size_t)c->nreq, S = (size_t)c->S, T = (size_t)c->T, D = (size_t)g->d;
    const size_t hq = (size_t)k->hq, hkv = (size_t)g->hkv, es = ag_dtype_size(g->t_dt);
    /* query, key and value, from BSNH to BNSH: three buffers, or one for
     * the packed input (its q, K and V heads transposed together) */
    if (g->io == OG_IO_GQA_PACKED) {
        put(l, B * (hq + 2 * hkv) * S * D * es);
    } else {
        put(l, B * hq * S * D * es);
        put(l, B * hkv * S * D * es);
        put(l, B * hkv * S * D * es);
    }
    /* the rotary step: the rotated q and K (packed: q, K and V, V
     * copied); the positions it makes from seqlens_k are not asked of
     * this allocator in 1.30 */
    if (g->rotary != OG_ROT_NONE) {
        if (g->io == OG_IO_GQA_PACKED) {
            put(l, B * (hq + 2 * hkv) * S * D * es);
        } else {
            put(l, B * hq * S * D * es);
            put(l, B * hkv * S * D * es);
        }
    }
    const og_route route = og_gqa_route(P, c, k);
    const size_t th = (size_t)g->threads;
    if (route == OG_ROUTE_DECODE_ROW || route == OG_ROUTE_DECODE_SPLIT) {
        put(l, decode_floats(P, c, hq, th, route == OG_ROUTE_DECODE_SPLIT) * sizeof(float));
        return;
    }
    if (route == OG_ROUTE_FLASH) {
        put(l, th * flash_tile_floats(g->lib->l2_bytes, D, S, T) * sizeof(float));
        return;
    }
    put(l, B * hq * S * T * sizeof(float));   /* every logit of the batch: B x N x S x T */
    if (g->t_dt == AG_F32) {
        put(l, 0);   /* an empty request ORT makes on this path (MAPPING.md) */
        return;
    }
    /* f16: per batch entry and head, q and that entry's keys widened to f32
     * (total_b = seqlens_k[b] + 1 keys), the f32 output, then its values */
    for (size_t i = 0; i < B; i++)
        for (size_t h = 0; h < hq; h++)
            put(l, D * (S + (size_t)P->b.seq_lens[P->req[c->first + (int32_t)i]]) * sizeof(float));
    put(l, B * S * hq * D * sizeof(float));
    for (size_t i = 0; i < B; i++)
        for (size_t h = 0; h < hq; h++)
            put(l, D * (size_t)P->b.seq_lens[P->req[c->first + (int32_t)i]] * sizeof(float));
}

static void attention_needs(const og_plan *P, const og_class *c, int32_t layer, og_list *l) {
    const og_group *g = P->g;
    const size_t B = (size_t)c->nreq, S = (size_t)c->S, T = (size_t)c->T;
    const size_t hq = (size_t)g->layers[layer].key.hq, es = ag_dtype_size(g->t_dt);
    put(l, B * hq * S * T * es);                       /* the weights, in T */
    if (og_masked(P, c, layer)) put(l, B * S * T * es);   /* the boolean mask made additive */
    if (g->t_dt == AG_F16)                             /* a softmax row block in f32 per head */
        for (size_t i = 0; i < B * hq; i++) put(l, S * T * sizeof(float));
}

ag_status og_internal_needs(void *plan, int32_t layer, size_t *sizes, size_t cap,
                            size_t *count, ag_msg *msg) {
    const og_plan *P = plan;
    if (!count || (cap > 0 && !sizes))
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "internal_needs: sizes or count");
    if (layer < 0 || layer >= P->g->nl)
        return orta_fail(msg, AG_REFUSED, AG_R_MISMATCH, "ORT_BAD_LAYER",
                         "internal_needs: layer %d of %d", (int)layer, (int)P->g->nl);
    const og_key *k = &P->g->layers[layer].key;
    /* both streaming kernels block the keys by the L2 size: the prompt's
     * always, the decode's when it may split them (decode_floats) */
    if (P->g->op == OG_GQA && P->g->t_dt == AG_F32 && k->softcap == 0.0f &&
        k->sink == OG_SINK_NONE && P->g->lib->l2_bytes == 0)
        for (int32_t i = 0; i < P->ncls; i++)
            if (P->cls[i].S > 1 || (size_t)P->cls[i].nreq * (size_t)k->hq < (size_t)P->g->threads)
                return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_L2_UNKNOWN",
                                 "internal_needs: ORT tiles by the L2 size, which this system "
                                 "does not report in /sys/devices/system/cpu/cpu0/cache");
    og_list l = {sizes, cap, 0};
    for (int32_t i = 0; i < P->ncls; i++) {
        if (P->g->op == OG_GQA) gqa_needs(P, &P->cls[i], k, &l);
        else attention_needs(P, &P->cls[i], layer, &l);
    }
    *count = l.n;
    return orta_ok(msg);
}
