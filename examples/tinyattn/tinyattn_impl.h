/*
 * tinyattn_impl.h — what tinyattn's two files share and its users never
 * see: the builder's and the plan's records, the status helpers, and the
 * size arithmetic of the scratch (overflow-checked; the kernels lay the
 * slots out with it for the running layer, the planner sizes them with it
 * for the builder's count).
 */
#ifndef TINYATTN_IMPL_H
#define TINYATTN_IMPL_H

#include "tinyattn.h"

#include <stdarg.h>
#include <stdio.h>

struct ta_builder {
    ta_group g;
    int32_t slot_g;          /* query heads per KV head that one reduction slot holds */
    size_t elt;              /* bytes of one cache element */
};

struct ta_plan {
    const ta_builder *b;
    ta_batch batch;
    int32_t *pieces;         /* [num_reqs]: 0 one pass, else the request's split-KV pieces */
    int32_t n_split;
    size_t scratch;          /* the builder's sizing: the layout for slot_g */
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline ta_status fail(ta_error *err, ta_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->text, sizeof err->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

static inline ta_status ok(ta_error *err) {
    if (err) err->text[0] = '\0';
    return TA_OK;
}

/* ------------------------------------------------------------- sizes */

static inline int mul_ok(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
static inline int add_ok(size_t a, size_t b, size_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
static inline int r64_ok(size_t a, size_t *out) {
    if (!add_ok(a, 63, out)) return 0;
    *out &= ~(size_t)63;
    return 1;
}

/* One reduction slot: S pieces of g query heads, each a partial output of
 * D floats, a maximum and a sum, every part 64-byte aligned. */
static inline int slot_bytes(size_t S, size_t g, size_t D, size_t *out) {
    size_t sg, part, stat;
    return mul_ok(S, g, &sg) && mul_ok(sg, D * sizeof(float), &part) && r64_ok(part, &part) &&
           mul_ok(sg, sizeof(float), &stat) && r64_ok(stat, &stat) && add_ok(part, stat, out) &&
           add_ok(*out, stat, out);
}

#endif /* TINYATTN_IMPL_H */
