/*
 * alloc.c — every engine allocation goes through the caller's allocator (or
 * malloc/free); array sizes are overflow-checked here, once.
 */
#include "internal.h"

#include <stdlib.h>

static void *default_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    return malloc(bytes);
}

static void default_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

void attn__default_allocator(attn_allocator *out) {
    out->alloc = default_alloc;
    out->free = default_free;
    out->ctx = NULL;
}

void *attn__alloc(const attn_allocator *a, size_t bytes) {
    /* A zero-byte request still returns a unique pointer so callers can
     * treat NULL as failure only. */
    return a->alloc(a->ctx, bytes ? bytes : 1);
}

void *attn__alloc_array(const attn_allocator *a, size_t n, size_t elem) {
    size_t bytes;
    if (attn__mul(n, elem, &bytes)) return NULL;
    return attn__alloc(a, bytes);
}

void attn__free(const attn_allocator *a, void *p) {
    if (p) a->free(a->ctx, p);
}
