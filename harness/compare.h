/*
 * compare.h — per-dtype tolerances (defined and justified in ONE place,
 * compare.c) and the comparison of an engine output with the reference.
 */
#ifndef AG_COMPARE_H
#define AG_COMPARE_H

#include "../include/attnguard/engine.h"
#include "ref.h"

typedef struct cmp_tol {
    double atol, rtol;   /* pass when |got - ref| <= atol + rtol * |ref| */
} cmp_tol;

/* Tolerance for a run whose inputs/outputs have these dtypes (the loosest
 * element type involved decides; see the derivation in compare.c). */
cmp_tol cmp_tolerance(ag_dtype q_dtype, ag_dtype kv_dtype, ag_dtype out_dtype);

typedef struct cmp_result {
    double max_abs;        /* max |got - ref| */
    double max_rel;        /* max |got - ref| / max(|ref|, 1e-6) */
    size_t worst;          /* element index of the worst violation (or max_abs) */
    size_t bad;            /* elements outside tolerance (NaN counts as bad) */
    size_t n;
} cmp_result;

/* The error model of the engine's logits that the reference's ranges
 * rest on (ref_attention_range; derived in compare.c). */
ref_logit_err cmp_logit_error(ag_dtype kv_dtype, int32_t head_dim);
/* The same for a run that rounds q and the softmax weights to bf16
 * (attn_builder_info.bf16_rounding; derived in compare.c). */
ref_logit_err cmp_bf16_dot_error(int32_t head_dim);

/* Compare n elements of `got` (out_dtype) against the expected values:
 * element i must lie within tol of ref[i], or, where lo and hi are given
 * and lo[i] < hi[i], within tol of the range [lo[i], hi[i]] (a row the
 * engine's rounding leaves undetermined: ref_attention_range).  lo and hi
 * are both NULL or both set.  max_abs / max_rel measure the distance to
 * the point or range.  Returns 1 pass, 0 fail. */
int cmp_compare(const double *ref, const double *lo, const double *hi, const void *got,
                 ag_dtype out_dtype, size_t n, cmp_tol tol, cmp_result *res);

/* Element i of a typed buffer as double (harness-side conversion). */
double cmp_elem_get(const void *buf, size_t i, ag_dtype dtype);

#endif /* AG_COMPARE_H */
