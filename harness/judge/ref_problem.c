/*
 * ref_problem.c — the reference's view of a materialized problem (see
 * ref_problem.h): the one place that says which problem field feeds which
 * reference input.
 */
#include "ref_problem.h"

#include <string.h>

void ref_input_of_problem(const problem *p, int32_t l, ref_input *in) {
    const case_spec *c = &p->c;
    const ag_layer *L = &p->layers[l];
    memset(in, 0, sizeof *in);
    in->num_reqs = c->num_reqs;
    in->query_start_loc = p->qsl;
    in->seq_lens = p->seq_lens;
    in->causal = p->causal;
    in->block_table = p->block_table;
    in->block_table_stride = p->bt_stride;
    in->num_blocks = p->num_blocks;
    in->num_heads = L->num_heads;
    in->num_kv_heads = c->num_kv_heads;
    in->head_dim = c->head_dim;
    in->block_size = c->block_size;
    in->window_left = L->window_left;
    in->window_right = L->window_right;
    in->softcap = L->softcap;
    in->scale = L->scale;
    in->alibi_slopes = L->alibi_slopes;
    in->sinks = L->sinks;
    in->q = p->q[l];
    in->q_dtype = c->q_dtype;
    in->k_rows = p->k_rows;
    in->v_rows = p->v_rows;
    in->kv_dtype = c->kv_dtype;
    /* scales apply to fp8 caches only (the ABI's contract) */
    const int fp8 = ag_dtype_is_fp8(c->kv_dtype);
    in->k_scale = fp8 ? L->k_scale : 1.0;
    in->v_scale = fp8 ? L->v_scale : 1.0;
}
