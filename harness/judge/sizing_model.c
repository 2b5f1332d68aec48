/*
 * sizing_model.c — see sizing_model.h.  All partial results and softmax
 * state are fp32 (DESIGN §2), and so are the kernels' tiles of K and V.
 *
 *   per thread, rows = thread_tokens x g:
 *     q, acc   rows x D x 4        state  rows x 2 x 4
 *     scores   rows x kv_tile x 4  kv     2 x kv_tile x D x 4
 *   per reduction of S pieces, rows = its tokens x g:
 *     flags    S                   partial S x rows x D x 4
 *     max, sum S x rows x 4
 */
#include "sizing_model.h"

#include <stdlib.h>
#include <string.h>

static int mul(size_t *acc, size_t f) { return __builtin_mul_overflow(*acc, f, acc); }

/* "t12.scores" -> 't', 12, "scores"; 0 ok. */
static int split_name(const char *name, char *owner, unsigned long *idx, const char **kind) {
    if ((name[0] != 't' && name[0] != 'r') || name[1] < '0' || name[1] > '9') return -1;
    char *end;
    *idx = strtoul(name + 1, &end, 10);
    if (*end != '.') return -1;
    *owner = name[0];
    *kind = end + 1;
    return 0;
}

int sizing_model_need(const ag_plan_shape *sh, const char *name, int32_t g, int32_t D,
                      size_t *need) {
    char owner;
    unsigned long idx;
    const char *kind;
    if (!sh || g < 1 || D < 1 || split_name(name, &owner, &idx, &kind)) return -1;
    size_t x = 4;
    int ov = 0;
    if (owner == 't') {
        const size_t rows = (size_t)sh->thread_tokens * (size_t)g;
        if (!strcmp(kind, "q") || !strcmp(kind, "acc")) ov = mul(&x, rows) || mul(&x, (size_t)D);
        else if (!strcmp(kind, "state")) ov = mul(&x, rows) || mul(&x, 2);
        else if (!strcmp(kind, "scores")) ov = mul(&x, rows) || mul(&x, (size_t)sh->kv_tile);
        else if (!strcmp(kind, "kv")) ov = mul(&x, 2) || mul(&x, (size_t)sh->kv_tile) ||
                                           mul(&x, (size_t)D);
        else return -1;
    } else {
        if (idx >= sh->num_reductions || !sh->red_tokens || !sh->red_pieces) return -1;
        const size_t S = (size_t)sh->red_pieces[idx];
        const size_t rows = (size_t)sh->red_tokens[idx] * (size_t)g;
        if (!strcmp(kind, "flags")) x = S;
        else if (!strcmp(kind, "partial")) ov = mul(&x, S) || mul(&x, rows) || mul(&x, (size_t)D);
        else if (!strcmp(kind, "max") || !strcmp(kind, "sum")) ov = mul(&x, S) || mul(&x, rows);
        else return -1;
    }
    if (ov) return 1;
    *need = x;
    return 0;
}
