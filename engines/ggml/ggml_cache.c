/*
 * engines/ggml/ggml_cache.c — where the ggml adapter keeps keys and what a
 * query row may see: the private cache layout (one array of num_blocks *
 * block_size cells, each [Hkv][D], written by slot) and the f16 masks that
 * turn a paged batch into ggml's dense [stream][rows][window cells] form.
 */
#include <math.h>
#include <string.h>

#include "ggml_group.h"

/* create checked that a row is whole blocks, and (kv_cache_bytes) that
 * the cache's size fits */
size_t ggc_row_bytes(const gg_group *g) {
    size_t b = 0;
    (void)ag_dtype_bytes(g->kv, (size_t)g->hkv * (size_t)g->d, &b);
    return b;
}

ag_status ggc_kv_cache_bytes(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const gg_group *g = grp;
    size_t cells = (size_t)num_blocks * (size_t)g->bs;
    if (num_blocks < 1 || cells / (size_t)g->bs != (size_t)num_blocks ||
        ggc_row_bytes(g) == 0 || cells > SIZE_MAX / ggc_row_bytes(g))
        return agg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "GGML_BAD_BLOCKS", "num_blocks %d", (int)num_blocks);
    *bytes = cells * ggc_row_bytes(g);
    return AG_OK;
}

ag_status ggc_write_kv(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                             const void *k_rows, const void *v_rows, int32_t num_tokens,
                             const int64_t *slot_mapping, ag_msg *msg) {
    const gg_group *g = grp;
    const size_t rb = ggc_row_bytes(g);
    const int64_t cells = (int64_t)num_blocks * g->bs;
    if (!k_cache || !v_cache || !k_rows || !v_rows || !slot_mapping || num_tokens < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_NULL, "GGML_BAD_ARGS", "write_kv: %d rows, a buffer is NULL",
                        (int)num_tokens);
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t s = slot_mapping[i];
        if (s < -1 || s >= cells)
            return agg_fail(msg, AG_REFUSED, AG_R_SLOT, "GGML_BAD_SLOT",
                            "slot_mapping[%d] = %lld outside -1..%lld", (int)i, (long long)s,
                            (long long)cells - 1);
        if (s < 0) continue;
        memcpy((char *)k_cache + (size_t)s * rb, (const char *)k_rows + (size_t)i * rb, rb);
        memcpy((char *)v_cache + (size_t)s * rb, (const char *)v_rows + (size_t)i * rb, rb);
    }
    return AG_OK;
}

/* Mask class c: row i of request r, query position p, sees key k in cell
 * bt[k / bs] * bs + k % bs when the rules of docs/design.md §2 allow; the mask
 * holds it at that cell's place in the request's stream window. */
void ggc_fill_mask(const gg_plan *P, const ag_batch *b, int c, ggml_fp16_t *m) {
    const gg_group *g = P->g;
    const gg_mask_class *C = &g->cls[c];
    const ggml_fp16_t ninf = g->lib->base.ggml_fp32_to_fp16(-INFINITY);
    const ggml_fp16_t zero = g->lib->base.ggml_fp32_to_fp16(0.0f);
    for (size_t i = 0; i < P->mask_cells; i++) m[i] = ninf;
    for (int sg = 0; sg < P->nseg; sg++) {
        const gg_seg *S = &P->seg[sg];
        for (int32_t r = S->r0; r < S->r0 + S->nreq; r++) {
            /* unified: one stream, the request's rows where its tokens are */
            const int32_t s = S->ns == 1 ? 0 : r - S->r0;
            const int32_t row0 = S->ns == 1 ? b->query_start_loc[r] - S->t0 : 0;
            const int64_t base = S->c0 + (int64_t)s * S->stride;
            const int32_t ql = b->query_start_loc[r + 1] - b->query_start_loc[r];
            const int32_t seq = b->seq_lens[r];
            const int32_t *bt = b->block_table + (size_t)r * (size_t)b->block_table_stride;
            const int causal = b->causal ? b->causal[r] : 1;
            for (int32_t i = 0; i < ql; i++) {
                const int64_t p = causal ? seq - ql + i : i;
                ggml_fp16_t *row = m + S->mask_off +
                                   ((size_t)s * (size_t)S->rows_pad + (size_t)(row0 + i)) *
                                       (size_t)S->n_kv;
                /* the visible keys form one run [lo, hi] (causal and window rules) */
                int64_t lo = 0, hi = (int64_t)seq - 1;
                if (causal && hi > p) hi = p;
                if (C->wl >= 0 && lo < p - C->wl) lo = p - C->wl;
                if (C->wr >= 0 && hi > p + C->wr) hi = p + C->wr;
                for (int64_t k = lo; k <= hi; k++) {
                    const ggml_fp16_t val =
                        C->alibi ? g->lib->base.ggml_fp32_to_fp16((float)(k - p)) : zero;
                    row[(int64_t)bt[k / g->bs] * g->bs + k % g->bs - base] = val;
                }
            }
        }
    }
}
