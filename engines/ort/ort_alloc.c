/*
 * engines/ort/ort_alloc.c — the allocator ORT calls for its own buffers:
 * an OrtAllocator record whose Alloc and Free forward to the harness's
 * allocator (group.alloc), which guards and logs every block.
 *
 * ORT asks without an alignment; its own CPU allocator aligns to 64 bytes,
 * and so does this bridge.  ORT's worker threads call it concurrently, so
 * the harness's allocator must be thread-safe.
 *
 * A NULL from the harness (out of memory, or a failure it injects) cannot
 * be handed to ORT: ORT 1.30 does not check a user allocator's result and
 * its kernels write through it (MAPPING.md, "Findings").  The bridge then
 * serves that one request from malloc, remembers it (so Free returns it to
 * malloc) and the size refused, and the call that made the request reports
 * AG_INTERNAL with AG_R_RESOURCE after ORT returns, whatever ORT computed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_group.h"

#define OG_ALLOC_ALIGN 64   /* what ORT's own CPU allocator aligns to */

/* `ort` is the bridge's first member: ORT's pointer is the bridge's. */
static og_bridge *bridge_of(const OrtaAllocator *a) { return (og_bridge *)(uintptr_t)a; }

static void *from_malloc(og_bridge *b, size_t bytes) {
    void *p = aligned_alloc(OG_ALLOC_ALIGN, (bytes + OG_ALLOC_ALIGN - 1) & ~(size_t)(OG_ALLOC_ALIGN - 1));
    if (!p) return NULL;
    pthread_mutex_lock(&b->mu);
    if (b->nfallback == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 8;
        void **f = realloc(b->fallback, cap * sizeof *f);
        if (f) b->fallback = f, b->cap = cap;
    }
    if (b->nfallback < b->cap) {
        b->fallback[b->nfallback] = p;
        __atomic_store_n(&b->nfallback, b->nfallback + 1, __ATOMIC_RELAXED);
    } else {
        free(p);
        p = NULL;
    }
    pthread_mutex_unlock(&b->mu);
    return p;
}

static void *alloc_fn(OrtaAllocator *a, size_t bytes) {
    og_bridge *b = bridge_of(a);
    void *p = b->h->alloc(b->h->ctx, bytes, OG_ALLOC_ALIGN);
    if (p || bytes == 0) return p;   /* a NULL for 0 bytes ORT takes as it is */
    size_t none = 0;
    __atomic_compare_exchange_n(&b->refused, &none, bytes, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return bytes <= SIZE_MAX - OG_ALLOC_ALIGN ? from_malloc(b, bytes) : NULL;
}

static void free_fn(OrtaAllocator *a, void *p) {
    og_bridge *b = bridge_of(a);
    if (!p) return;
    if (__atomic_load_n(&b->nfallback, __ATOMIC_RELAXED) > 0) {
        pthread_mutex_lock(&b->mu);
        for (size_t i = 0; i < b->nfallback; i++) {
            if (b->fallback[i] != p) continue;
            b->fallback[i] = b->fallback[b->nfallback - 1];
            __atomic_store_n(&b->nfallback, b->nfallback - 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&b->mu);
            free(p);
            return;
        }
        pthread_mutex_unlock(&b->mu);
    }
    b->h->free(b->h->ctx, p);
}

static const OrtMemoryInfo *info_fn(const OrtaAllocator *a) { return bridge_of(a)->info; }

void og_bridge_init(og_bridge *b, const ag_allocator *h, const OrtMemoryInfo *info) {
    memset(b, 0, sizeof *b);
    /* version 1: ORT reads Alloc, Free and Info only (Reserve and the
     * later fields exist from higher versions on) */
    b->ort = (OrtaAllocator){1, alloc_fn, free_fn, info_fn};
    b->h = h;
    b->info = info;
    pthread_mutex_init(&b->mu, NULL);
}

void og_bridge_free(og_bridge *b) {
    for (size_t i = 0; i < b->nfallback; i++) free(b->fallback[i]);
    free(b->fallback);
    pthread_mutex_destroy(&b->mu);
}

size_t og_bridge_take(og_bridge *b) { return __atomic_exchange_n(&b->refused, 0, __ATOMIC_RELAXED); }

ag_status og_bridge_verdict(og_bridge *b, ag_status st, ag_msg *msg, const char *what) {
    const size_t refused = og_bridge_take(b);
    if (refused == 0) return st;
    return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ORT_ALLOC_NULL",
                     "%s: the group's allocator returned NULL for %zu bytes ORT asked for "
                     "(served from malloc: ORT does not check its allocator's result)%s", what,
                     refused, st == AG_OK ? "" : "; ORT failed too");
}
