/*
 * fixture.c — see fixture.h.
 */
#include "fixture.h"

#include "../engines/attnguard/dtype_map.h"

#include "../harness/judge/compare.h"
#include "../harness/judge/ref_problem.h"

#include <stdlib.h>
#include <string.h>

/* The descriptions of p's group and batch into fx (no caches). */
static void describe(afx_engine *fx, const problem *p) {
    const case_spec *c = &p->c;
    memset(fx, 0, sizeof *fx);
    for (int32_t l = 0; l < c->num_layers; l++) {
        const ag_layer *L = &p->layers[l];
        attn_layer_desc *d = &fx->layers[l];
        d->name = L->name;
        d->num_heads = L->num_heads;
        d->window = -1;
        d->window_pair = 1;
        d->window_left = L->window_left;
        d->window_right = L->window_right;
        d->k_scale = L->k_scale;
        d->v_scale = L->v_scale;
        d->softcap = L->softcap;
        d->scale = L->scale;
        d->alibi_slopes = L->alibi_slopes;
        d->sinks = L->sinks;
    }
    attn_group_desc *g = &fx->group;
    g->layers = c->num_layers ? fx->layers : NULL;
    g->num_layers = c->num_layers;
    g->kv.num_kv_heads = c->num_kv_heads;
    g->kv.head_dim = c->head_dim;
    g->kv.block_size = c->block_size;
    g->kv.dtype = attn_dtype_of(c->kv_dtype);
    g->q_dtype = attn_dtype_of(c->q_dtype);
    g->out_dtype = attn_dtype_of(c->out_dtype);
    g->model_num_heads = c->model_num_heads;
    g->num_threads = c->threads;
    fx->batch.num_reqs = p->batch.num_reqs;
    fx->batch.query_start_loc = p->batch.query_start_loc;
    fx->batch.seq_lens = p->batch.seq_lens;
    fx->batch.block_table = p->batch.block_table;
    fx->batch.block_table_stride = p->batch.block_table_stride;
    fx->batch.num_blocks = p->batch.num_blocks;
    fx->batch.causal = 1;
    fx->batch.req_causal = p->batch.causal;
}

int afx_init(afx_engine *fx, const problem *p) {
    const case_spec *c = &p->c;
    describe(fx, p);
    if (!p->materialized) return 0;
    fx->cache_bytes = p->row_elems * ag_dtype_size(c->kv_dtype);
    fx->k_cache = malloc(fx->cache_bytes ? fx->cache_bytes : 1);
    fx->v_cache = malloc(fx->cache_bytes ? fx->cache_bytes : 1);
    int64_t *slots = problem_identity_slots(p);
    const int32_t rows = p->num_blocks * c->block_size;
    int rc = -1;
    if (fx->k_cache && fx->v_cache && slots &&
        attn_reshape_and_cache(&fx->group.kv, p->num_blocks, p->k_rows, p->v_rows, rows, slots,
                               fx->k_cache, fx->v_cache, NULL) == ATTN_OK)
        rc = 0;
    free(slots);
    if (rc) afx_free(fx);
    return rc;
}

int afx_init_zeroed(afx_engine *fx, const problem *p) {
    describe(fx, p);
    if (!p->materialized) return 0;
    fx->cache_bytes = p->row_elems * ag_dtype_size(p->c.kv_dtype);
    /* zero is all-zero bytes in every cache dtype, and the identity slots
     * cover every slot: what afx_init's write would leave */
    fx->k_cache = calloc(1, fx->cache_bytes ? fx->cache_bytes : 1);
    fx->v_cache = calloc(1, fx->cache_bytes ? fx->cache_bytes : 1);
    /* the engine still judges the KV spec, as afx_init's write would:
     * one row with slot -1 (skipped) is validated and writes nothing */
    const int64_t skip = -1;
    if (fx->k_cache && fx->v_cache && p->row_elems > 0 &&
        attn_reshape_and_cache(&fx->group.kv, p->num_blocks, p->k_rows, p->v_rows, 1, &skip,
                               fx->k_cache, fx->v_cache, NULL) == ATTN_OK)
        return 0;
    afx_free(fx);
    return -1;
}

void afx_free(afx_engine *fx) {
    free(fx->k_cache);
    free(fx->v_cache);
    fx->k_cache = fx->v_cache = NULL;
}

attn_tensors afx_tensors(const afx_engine *fx, const problem *p, int32_t l, void *out) {
    const case_spec *c = &p->c;
    attn_tensors t;
    memset(&t, 0, sizeof t);
    t.out = out;
    t.k_cache = fx->k_cache;
    t.v_cache = fx->v_cache;
    t.num_tokens = p->num_tokens;
    t.head_dim = c->head_dim;
    t.num_blocks = p->num_blocks;
    t.num_kv_heads = c->num_kv_heads;
    t.block_size = c->block_size;
    t.q_dtype = attn_dtype_of(c->q_dtype);
    t.kv_dtype = attn_dtype_of(c->kv_dtype);
    t.out_dtype = attn_dtype_of(c->out_dtype);
    if (l >= 0 && l < c->num_layers) {
        t.q = p->q[l];
        t.num_heads = c->layers[l].num_heads;
    }
    return t;
}

int afx_reference(const problem *p, int32_t l, int bf16, double *out, double *lo, double *hi) {
    ref_input in;
    ref_input_of_problem(p, l, &in);
    if (!lo && !hi) return ref_attention(&in, out);
    const ag_precision prec = {bf16 ? AG_BF16 : AG_F32, bf16 ? AG_BF16 : AG_F32, AG_F32, 0};
    return ref_attention_range(&in, cmp_error_model(prec, in.q_dtype, in.kv_dtype, in.head_dim),
                               out, lo, hi);
}
