/*
 * compare.h — per-dtype tolerances (defined and justified in ONE place,
 * compare.c) and the comparison of an engine output with the reference.
 */
#ifndef ATTN_COMPARE_H
#define ATTN_COMPARE_H

#include "../src/attn.h"

typedef struct attn_tol {
    double atol, rtol;   /* pass when |got - ref| <= atol + rtol * |ref| */
} attn_tol;

/* Tolerance for a run whose inputs/outputs have these dtypes (the loosest
 * element type involved decides; see the derivation in compare.c). */
attn_tol attn_tolerance(attn_dtype q_dtype, attn_dtype kv_dtype, attn_dtype out_dtype);

typedef struct attn_cmp {
    double max_abs;        /* max |got - ref| */
    double max_rel;        /* max |got - ref| / max(|ref|, 1e-6) */
    size_t worst;          /* element index of the worst violation (or max_abs) */
    size_t bad;            /* elements outside tolerance (NaN counts as bad) */
    size_t n;
} attn_cmp;

/* Compare n elements of `got` (out_dtype) against ref.  Returns 1 pass, 0 fail. */
int attn_compare(const double *ref, const void *got, attn_dtype out_dtype, size_t n,
                 attn_tol tol, attn_cmp *res);

/* Element i of a typed buffer as double (harness-side conversion). */
double attn_elem_get(const void *buf, size_t i, attn_dtype dtype);

#endif /* ATTN_COMPARE_H */
