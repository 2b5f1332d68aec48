/*
 * tutil.h — small helpers shared by the Criterion suites (header-only, every
 * function static inline so a suite that does not use one gets no warning):
 * group/batch construction over plain arrays, an aligned scratchpad, and a
 * counting allocator.  Not a test file itself (the Makefile only compiles
 * the .c files of tests/).
 */
#ifndef ATTN_TUTIL_H
#define ATTN_TUTIL_H

#include "../src/attn.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A group over `layers` with the given KV spec, f32 everywhere, model-wide
 * head count 48 (the fallback that must only matter for empty groups). */
static inline attn_group_desc tu_group(const attn_layer_desc *layers, int32_t n, int32_t hkv,
                                       int32_t d, int32_t bs, int32_t threads) {
    attn_group_desc g;
    memset(&g, 0, sizeof g);
    g.layers = layers;
    g.num_layers = n;
    g.kv.num_kv_heads = hkv;
    g.kv.head_dim = d;
    g.kv.block_size = bs;
    g.kv.dtype = ATTN_DTYPE_F32;
    g.q_dtype = ATTN_DTYPE_F32;
    g.out_dtype = ATTN_DTYPE_F32;
    g.model_num_heads = 48;
    g.num_threads = threads;
    g.isa = NULL;
    g.allocator = NULL;
    return g;
}

static inline attn_layer_desc tu_layer(int32_t heads, int32_t window) {
    attn_layer_desc l;
    memset(&l, 0, sizeof l);
    l.num_heads = heads;
    l.window = window;
    return l;
}

/* A batch with its own storage: requests get disjoint, contiguous physical
 * blocks (optionally permuted by `perm_seed` != 0). */
typedef struct tu_batch {
    attn_batch b;
    int32_t *qsl, *seq, *bt;
    int32_t num_tokens;
} tu_batch;

static inline uint64_t tu_rng(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static inline int32_t tu_range(uint64_t *s, int32_t lo, int32_t hi) { /* [lo, hi] */
    return lo + (int32_t)(tu_rng(s) % (uint64_t)(hi - lo + 1));
}

static inline int tu_batch_init(tu_batch *t, int32_t n, const int32_t *q_len,
                                const int32_t *kv_len, int32_t bs, int32_t causal,
                                uint64_t perm_seed) {
    memset(t, 0, sizeof *t);
    int32_t max_blocks = 1, total = 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t nb = (kv_len[r] + bs - 1) / bs;
        if (nb > max_blocks) max_blocks = nb;
        total += nb;
    }
    if (total < 1) total = 1;
    t->qsl = calloc((size_t)n + 1, sizeof(int32_t));
    t->seq = calloc((size_t)n, sizeof(int32_t));
    t->bt = calloc((size_t)n * (size_t)max_blocks, sizeof(int32_t));
    int32_t *perm = calloc((size_t)total, sizeof(int32_t));
    if (!t->qsl || !t->seq || !t->bt || !perm) { free(perm); return -1; }
    for (int32_t i = 0; i < total; i++) perm[i] = i;
    if (perm_seed) {
        uint64_t s = perm_seed;
        for (int32_t i = total - 1; i > 0; i--) {
            int32_t j = (int32_t)(tu_rng(&s) % (uint64_t)(i + 1));
            int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
        }
    }
    int32_t next = 0;
    for (int32_t r = 0; r < n; r++) {
        t->qsl[r + 1] = t->qsl[r] + q_len[r];
        t->seq[r] = kv_len[r];
        int32_t nb = (kv_len[r] + bs - 1) / bs;
        for (int32_t i = 0; i < nb; i++) t->bt[(size_t)r * (size_t)max_blocks + (size_t)i] = perm[next++];
    }
    free(perm);
    t->num_tokens = t->qsl[n];
    t->b.num_reqs = n;
    t->b.query_start_loc = t->qsl;
    t->b.seq_lens = t->seq;
    t->b.block_table = t->bt;
    t->b.block_table_stride = max_blocks;
    t->b.num_blocks = total;
    t->b.causal = causal;
    return 0;
}

static inline void tu_batch_free(tu_batch *t) {
    free(t->qsl); free(t->seq); free(t->bt);
    memset(t, 0, sizeof *t);
}

/* 64-byte aligned buffer (bytes rounded up; at least 64). */
static inline void *tu_aligned(size_t bytes) {
    size_t n = (bytes + 63) & ~(size_t)63;
    if (n == 0) n = 64;
    void *p = aligned_alloc(64, n);
    if (p) memset(p, 0, n);
    return p;
}

/* Counting allocator: fails the fail_at-th call (1-based; 0 = never) and
 * every call asking for more than `limit` bytes (0 = no limit). */
typedef struct tu_counter {
    long allocs, frees, live, calls;
    long fail_at;
    size_t limit;
} tu_counter;

static inline void *tu_count_alloc(void *ctx, size_t bytes) {
    tu_counter *c = ctx;
    c->calls++;
    if (c->fail_at && c->calls == c->fail_at) return NULL;
    if (c->limit && bytes > c->limit) return NULL;
    void *p = malloc(bytes ? bytes : 1);
    if (p) { c->allocs++; c->live++; }
    return p;
}
static inline void tu_count_free(void *ctx, void *p) {
    tu_counter *c = ctx;
    if (!p) return;
    c->frees++;
    c->live--;
    free(p);
}
static inline attn_allocator tu_counting_allocator(tu_counter *c) {
    attn_allocator a;
    a.alloc = tu_count_alloc;
    a.free = tu_count_free;
    a.ctx = c;
    return a;
}

/* Skip the running test with its reason.  Criterion 2.4.1 prints the
 * reason with --verbose (`make test` runs the suites so and counts the
 * skips in its summary) and in its XML report.  Not a warning: Criterion
 * exits non-zero after any cr_log_warn, which would fail a passing run.
 * For tests that need what this CPU or build does not have; never for a
 * check that could have run. */
#define TU_SKIP(...) cr_skip_test(__VA_ARGS__)

#endif /* ATTN_TUTIL_H */
