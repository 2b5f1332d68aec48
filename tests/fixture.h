/*
 * fixture.h — attnguard's engine API (src/attn.h) over a harness problem,
 * for the engine's own tests: the attn_* descriptions of a problem's group
 * and batch, and the paged caches in the engine's layout, written from the
 * problem's plain K/V rows with attn_reshape_and_cache.  Plus the fp64
 * reference of a layer under the plain and the bf16-rounding error models.
 * Used by the engine's own tests and its API fuzz target (fuzz/fuzz_api.c).
 * The harness itself reaches the engine through its adapter instead
 * (engines/attnguard/adapter.c).
 */
#ifndef ATTN_TEST_FIXTURE_H
#define ATTN_TEST_FIXTURE_H

#include "../harness/case/problem.h"
#include "../src/attn.h"

typedef struct afx_engine {
    attn_layer_desc layers[CASE_MAX_LAYERS];
    attn_group_desc group;
    attn_batch batch;
    void *k_cache, *v_cache;      /* [num_blocks][Hkv][bs][D], kv dtype */
    size_t cache_bytes;
} afx_engine;

/* Fill fx from a problem (caches only when it is materialized).  0, or -1
 * when it cannot (allocation, reshape). */
int afx_init(afx_engine *fx, const problem *p);
/* The same for a problem of problem_init_zeros, whose caches are all
 * zeros: allocated zeroed instead of written row by row (fuzz_api's
 * set-up; the reshape functions have their own ops there). */
int afx_init_zeroed(afx_engine *fx, const problem *p);
void afx_free(afx_engine *fx);
/* Tensors of layer l writing to out. */
attn_tensors afx_tensors(const afx_engine *fx, const problem *p, int32_t l, void *out);

/* The reference of layer l: out, and with lo/hi the ranges of the fp32
 * model (bf16 = 0) or of the bf16-rounding model (bf16 = 1). */
int afx_reference(const problem *p, int32_t l, int bf16, double *out, double *lo, double *hi);

#endif /* ATTN_TEST_FIXTURE_H */
