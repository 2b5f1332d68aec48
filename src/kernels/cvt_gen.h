/*
 * cvt_gen.h — the one generator of the conversion paths each kernel table
 * lists for tests/engine/test_convert.c (attn__cvt_path, kernels.h: a test
 * hook, never called by the engine).  A generated path is
 *
 *     static void name(const void *src, void *dst, size_t n)
 *
 * and runs n contiguous elements through the table's own inline
 * conversion, the very code its kernels use, `step` elements a call (the
 * table's vector: the last call gets what is left, its masked tail; 0: all
 * n in one call, the portable table's row loops).  The table supplies the
 * call, fn(dt, src, dst, left), left >= 1 being the elements from src to
 * the end of the run:
 *
 *     ATTN__CVT_TO    dt -> fp32: fn(dt, const unsigned char *narrow, float *wide, left)
 *     ATTN__CVT_FROM  fp32 -> dt: fn(dt, const float *wide, unsigned char *narrow, left)
 *
 * Included by ref.c, avx2.c and avx512.c, after the primitives fn uses.
 */
#ifndef ATTN_KERNELS_CVT_GEN_H
#define ATTN_KERNELS_CVT_GEN_H

#include "dtype.h"

#include <stddef.h>

#define ATTN__CVT_TO(name_, dt_, step_, fn_)                                             \
    static void name_(const void *s, void *d, size_t n) {                               \
        const size_t es = attn__dtype_size(dt_);                                         \
        for (size_t i = 0; i < n; i += (step_) ? (size_t)(step_) : n)                    \
            fn_(dt_, (const unsigned char *)s + i * es, (float *)d + i, n - i);          \
    }
#define ATTN__CVT_FROM(name_, dt_, step_, fn_)                                           \
    static void name_(const void *s, void *d, size_t n) {                               \
        const size_t es = attn__dtype_size(dt_);                                         \
        for (size_t i = 0; i < n; i += (step_) ? (size_t)(step_) : n)                    \
            fn_(dt_, (const float *)s + i, (unsigned char *)d + i * es, n - i);          \
    }

#endif /* ATTN_KERNELS_CVT_GEN_H */
