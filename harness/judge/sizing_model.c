/*
 * sizing_model.c — see sizing_model.h.  All partial results and softmax
 * state are fp32 (docs/design.md, section 2), and so are the kernels'
 * tiles of K and V.
 *
 *   per thread, rows = thread_tokens x g:
 *     q, acc   rows x D x 4        state  rows x 2 x 4
 *     scores   rows x kv_tile x 4  kv     2 x kv_tile x D x 4
 *   per reduction of S pieces, rows = its tokens x g:
 *     flags    S                   partial S x rows x D x 4
 *     max, sum S x rows x 4
 */
#include "sizing_model.h"

static int mul(size_t *acc, size_t f) { return __builtin_mul_overflow(*acc, f, acc); }

int sizing_model_need(const ag_plan_shape *sh, const ag_region *r, int32_t g, int32_t D,
                      size_t *need) {
    if (!sh || !r || g < 1 || D < 1) return -1;
    size_t x = 4, rows, S;
    int ov = 0;
    switch (r->kind) {
    case AG_REGION_Q: case AG_REGION_ACC: case AG_REGION_STATE: case AG_REGION_SCORES:
    case AG_REGION_KV:
        if (r->owner != AG_OWNER_THREAD) return -1;
        rows = (size_t)sh->thread_tokens * (size_t)g;
        if (r->kind == AG_REGION_Q || r->kind == AG_REGION_ACC)
            ov = mul(&x, rows) || mul(&x, (size_t)D);
        else if (r->kind == AG_REGION_STATE) ov = mul(&x, rows) || mul(&x, 2);
        else if (r->kind == AG_REGION_SCORES) ov = mul(&x, rows) || mul(&x, (size_t)sh->kv_tile);
        else ov = mul(&x, 2) || mul(&x, (size_t)sh->kv_tile) || mul(&x, (size_t)D);
        break;
    case AG_REGION_FLAGS: case AG_REGION_PARTIAL: case AG_REGION_MAX: case AG_REGION_SUM:
        if (r->owner != AG_OWNER_REDUCTION || r->index < 0 ||
            (size_t)r->index >= sh->num_reductions || !sh->red_tokens || !sh->red_pieces)
            return -1;
        S = (size_t)sh->red_pieces[r->index];
        rows = (size_t)sh->red_tokens[r->index] * (size_t)g;
        if (r->kind == AG_REGION_FLAGS) x = S;
        else if (r->kind == AG_REGION_PARTIAL) ov = mul(&x, S) || mul(&x, rows) || mul(&x, (size_t)D);
        else ov = mul(&x, S) || mul(&x, rows);
        break;
    default:
        return -1;
    }
    if (ov) return 1;
    *need = x;
    return 0;
}
