/*
 * engines/ggml/ggml_streams.c — how the ggml adapter cuts a batch into
 * ggml ops (gg_seg): the unified layout and the streams layout.
 *
 * Unified (layout=unified, the default): one op per layer, every request
 * in one stream over the cache cells 0 .. n_kv, one mask [T][n_kv] (a
 * llama.cpp unified KV cache).  Each query row walks every request's cells.
 *
 * Streams (layout=streams): each request a stream of the op's fourth
 * dimension, as llama.cpp runs parallel sequences when its KV cache is not
 * unified: q [D, rows, Hq, ns], K/V [D, n_kv, Hkv, ns], mask [n_kv, rows,
 * 1, ns].  ggml's op takes one query count for all its streams, so the
 * batch is cut into runs of consecutive requests with the same q_len, one
 * op per run (as llama.cpp's equal split cuts a batch into ubatches of
 * equal tokens per sequence).  Consecutive, so that a run's queries and
 * outputs are one contiguous piece of the harness's q and out: the op's
 * output [D, Hq, rows, ns] is exactly their layout, and no query is padded
 * or copied.  A stream's K/V is a window of the paged cache read in place:
 * stream s starts at cell c0 + s * stride, every cell of its request's
 * blocks lies inside, the window's other cells are masked, and all
 * windows are as long as the longest need (padded to it).  With each
 * request's blocks contiguous and the requests equally spaced (a fresh
 * serving cache; the bench's rows) the windows are exactly the requests'
 * cells, as in llama.cpp's per-stream cache; with shuffled blocks a window
 * grows up to the used cache (a stream then reads as many mask cells as a
 * unified row, but still walks its own keys only, its heads together).
 * Windows never leave the cells the unified layout covers, so no layout
 * reads a cell the other would not.
 *
 * Fallback: a batch that cuts into more than GGS_MAX_RUNS runs is planned
 * unified (each run costs one graph compute per layer, a wake-up of the
 * threadpool each), and counted: group_info's detail says how many of the
 * group's plans fell back.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ggml_group.h"

/* Most ops per layer a streams plan makes before it plans unified. */
#define GGS_MAX_RUNS 16

/* Cells [lo, hi) that hold a request's keys. */
typedef struct ggs_span {
    int64_t lo, hi;
} ggs_span;

static ggs_span req_span(const gg_group *g, const ag_batch *b, int32_t r) {
    const int32_t *bt = b->block_table + (size_t)r * (size_t)b->block_table_stride;
    const int64_t seq = b->seq_lens[r], nblk = (seq + g->bs - 1) / g->bs;
    ggs_span s = {INT64_MAX, 0};
    for (int64_t j = 0; j < nblk; j++) {
        const int64_t c = (int64_t)bt[j] * g->bs, len = seq - j * g->bs < g->bs ? seq - j * g->bs : g->bs;
        if (c < s.lo) s.lo = c;
        if (c + len > s.hi) s.hi = c + len;
    }
    return s;
}

/* The windows of n streams with spans sp[] at stride S: 1 with the first
 * window's start and the common length, when every window starts at or
 * after cell 0 and the last ends by `limit`; else 0. */
static int window_for(const ggs_span *sp, int32_t n, int64_t S, int64_t limit, int64_t *c0,
                      int64_t *len) {
    if (S < 0) return 0;
    int64_t a = INT64_MAX, w = 0;
    for (int32_t s = 0; s < n; s++)
        if (sp[s].lo - s * S < a) a = sp[s].lo - s * S;
    if (a < 0) return 0;
    for (int32_t s = 0; s < n; s++)
        if (sp[s].hi - (a + s * S) > w) w = sp[s].hi - (a + s * S);
    if (a + (int64_t)(n - 1) * S + w > limit) return 0;
    *c0 = a;
    *len = w;
    return 1;
}

/* The shortest windows among a few strides: 0 (every window the same
 * cells, always fits), the spacing of the first two requests, and the
 * average spacing of all. */
static void choose_windows(gg_seg *S, const ggs_span *sp, int64_t limit) {
    const int32_t n = S->ns;
    int64_t cand[3] = {0, 0, 0};
    if (n > 1) {
        cand[1] = sp[1].lo - sp[0].lo;
        cand[2] = (sp[n - 1].lo - sp[0].lo) / (n - 1);
    }
    int64_t best = INT64_MAX;
    for (int i = 0; i < 3; i++) {
        int64_t c0, len;
        if (!window_for(sp, n, cand[i], limit, &c0, &len) || len >= best) continue;
        best = len;
        S->c0 = c0;
        S->stride = n > 1 ? cand[i] : 0;
        S->n_kv = (int32_t)len;
    }
}

static int32_t q_len(const ag_batch *b, int32_t r) {
    return b->query_start_loc[r + 1] - b->query_start_loc[r];
}

static int32_t pad_rows(int32_t rows) {
#ifdef GGML_KQ_MASK_PAD /* older ggml reads mask rows up to this padding */
    return GGML_PAD(rows, GGML_KQ_MASK_PAD);
#else
    return rows;
#endif
}

ag_status ggs_segments(gg_plan *P, ag_msg *msg) {
    const ag_batch *b = &P->b;
    const int32_t nr = b->num_reqs;
    int runs = 1;
    for (int32_t r = 1; r < nr; r++) runs += q_len(b, r) != q_len(b, r - 1);
    const int streams = P->g->layout == AGG_LAYOUT_STREAMS && runs <= GGS_MAX_RUNS;
    P->fell_back = P->g->layout == AGG_LAYOUT_STREAMS && !streams;
    P->nseg = streams ? runs : 1;
    P->seg = calloc((size_t)P->nseg, sizeof *P->seg);
    ggs_span *sp = streams ? malloc((size_t)nr * sizeof *sp) : NULL;
    if (!P->seg || (streams && !sp)) {
        free(sp);
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "%d segments", P->nseg);
    }
    if (!streams) {
        P->seg[0] = (gg_seg){.r0 = 0, .nreq = nr, .ns = 1, .t0 = 0, .rows = P->T,
                             .rows_pad = pad_rows(P->T), .c0 = 0, .stride = 0, .n_kv = P->n_kv};
    } else {
        for (int32_t r = 0; r < nr; r++) sp[r] = req_span(P->g, b, r);
        for (int32_t r = 0, k = 0; r < nr; k++) {
            gg_seg *S = &P->seg[k];
            int32_t e = r + 1;
            while (e < nr && q_len(b, e) == q_len(b, r)) e++;
            S->r0 = r;
            S->nreq = S->ns = e - r;
            S->t0 = b->query_start_loc[r];
            S->rows = q_len(b, r);
            S->rows_pad = pad_rows(S->rows);
            choose_windows(S, sp + r, P->n_kv);
            r = e;
        }
    }
    free(sp);
    P->mask_cells = 0;
    for (int k = 0; k < P->nseg; k++) {
        gg_seg *S = &P->seg[k];
        S->mask_off = P->mask_cells;
        P->mask_cells += (size_t)S->ns * (size_t)S->rows_pad * (size_t)S->n_kv;
    }
    return AG_OK;
}
