/*
 * compare.h — the error model of an engine's declared rounding and the
 * comparison of an engine output with the reference (both defined and
 * justified in ONE place, compare.c, with docs/tolerances.md).
 */
#ifndef ATTN_COMPARE_H
#define ATTN_COMPARE_H

#include <stddef.h>
#include <stdint.h>

#include "../../include/attnguard/engine.h"
#include "ref.h"

/* The rounding of the final conversion to the output dtype: an engine's
 * value y becomes g with |g - y| <= atol + rtol |y|. */
typedef struct cmp_tol {
    double atol, rtol;
} cmp_tol;

/* The output conversion's tolerance (round to nearest even; below the
 * normal range the absolute half-spacing, or 2^-126 for bf16, whose
 * converters flush).  f32: 0, 0 (the intervals hold the fp32 arithmetic). */
cmp_tol cmp_tolerance(ag_dtype out_dtype);

/* The model (ref.h, ref_model) of an engine that rounds as prec says:
 * q_dot, p_dot and acc each one of AG_F32, AG_BF16, AG_F16 (the fp8 types
 * are accepted with their own unit and range), for these input dtypes and
 * head_dim >= 1 (a smaller one is read as 1).  All AG_F32 is fp32
 * arithmetic throughout (with bf16 K, q carried as two bf16 terms is
 * allowed: attnguard's avx512bf16 table). */
ref_model cmp_error_model(ag_precision prec, ag_dtype q_dtype, ag_dtype kv_dtype,
                          int32_t head_dim);

/* cmp_error_model with the limits an engine declares (caps: its
 * max_abs_logit, AG_CAP_WIDE_ACC); where it declares none the rows are
 * judged (docs/tolerances.md §7, "Declared, not assumed").  caps NULL: the limits of an
 * fp32 engine that does not rescale (logits and sums up to FLT_MAX). */
ref_model cmp_engine_model(ag_precision prec, const ag_caps *caps, ag_dtype q_dtype,
                           ag_dtype kv_dtype, int32_t head_dim);

typedef struct cmp_result {
    double max_abs;        /* max distance of got to the allowed point or interval */
    double max_rel;        /* max of that distance / |nearest allowed value| */
    double err_abs;        /* max |got - ref| over judged finite elements: the error against
                              the exact value, for reports */
    double err_rel;        /* max |got - ref| / |ref| there */
    size_t worst;          /* element of the worst excess over the tolerance */
    size_t bad;            /* elements outside (NaN counts, where judged) */
    size_t unjudged;       /* elements the reference leaves open (lo = -inf, hi = +inf) */
    size_t n;
} cmp_result;

/* Compare n elements of got (out_dtype) with the expected values.  With lo
 * and hi (both or neither; ref_attention_range's), element i passes when
 * within tol of the interval [lo[i], hi[i]]; an interval (-inf, +inf)
 * leaves it unjudged (any value, NaN too, counted in unjudged).  Without
 * them, within tol of ref[i].  An infinite got passes only where the
 * interval (or ref) reaches the output dtype's overflow threshold on that
 * side (round to nearest: every engine converts such a value to inf).
 * Returns 1 pass, 0 fail (res, if given, says where). */
int cmp_compare(const double *ref, const double *lo, const double *hi, const void *got,
                ag_dtype out_dtype, size_t n, cmp_tol tol, cmp_result *res);

/* Element i of a typed buffer as double (the reference's decoder). */
double cmp_elem_get(const void *buf, size_t i, ag_dtype dtype);

#endif /* ATTN_COMPARE_H */
