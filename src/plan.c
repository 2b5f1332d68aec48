/*
 * plan.c — attn_builder_build: validates a batch and turns it into a plan:
 * work items (request, KV head, query tokens, key range, split piece),
 * reductions for split rows, and a static per-thread partition.  The
 * scratchpad layout is delegated to layout.c (the one place that sizes it).
 * Also the plan's accessors and destructor.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

static attn_status validate_batch(const attn_builder *b, const attn_batch *bt,
                                  attn_error *err) {
    if (bt->num_reqs < 1 || bt->num_reqs > ATTN_MAX_REQS)
        return attn__fail(err, ATTN_E_BAD_BATCH, "num_reqs = %d outside 1..%d", (int)bt->num_reqs,
                          ATTN_MAX_REQS);
    if (!bt->query_start_loc || !bt->seq_lens || !bt->block_table)
        return attn__fail(err, ATTN_E_NULL_ARG, "batch.%s is NULL",
                          !bt->query_start_loc ? "query_start_loc"
                          : !bt->seq_lens      ? "seq_lens"
                                               : "block_table");
    if (bt->causal != 0 && bt->causal != 1)
        return attn__fail(err, ATTN_E_BAD_BATCH, "causal = %d (must be 0 or 1)", (int)bt->causal);
    for (int32_t r = 0; bt->req_causal && r < bt->num_reqs; r++)
        if (bt->req_causal[r] > 1)
            return attn__fail(err, ATTN_E_BAD_BATCH, "req_causal[%d] = %d (must be 0 or 1)",
                              (int)r, (int)bt->req_causal[r]);
    if (bt->query_start_loc[0] != 0)
        return attn__fail(err, ATTN_E_BAD_BATCH, "query_start_loc[0] = %d (must be 0)",
                          (int)bt->query_start_loc[0]);
    int32_t max_seq = 0;
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        int32_t a = bt->query_start_loc[r], z = bt->query_start_loc[r + 1];
        if (z <= a)
            return attn__fail(err, ATTN_E_BAD_BATCH,
                              "query_start_loc not strictly increasing: [%d] = %d, [%d] = %d "
                              "(every request needs q_len >= 1)",
                              (int)r, (int)a, (int)r + 1, (int)z);
        int32_t q_len = z - a, s = bt->seq_lens[r];
#ifdef ATTN_INJECT_first_request_only
        /* INJECTED BUG (first_request_only): the batch check written for a
         * single request and never widened: later requests' lengths pass
         * unchecked. */
        if (r == 0 && (s < q_len || s > ATTN_MAX_SEQ_LEN))
#else
        if (s < q_len || s > ATTN_MAX_SEQ_LEN)
#endif
            return attn__fail(err, ATTN_E_BAD_SEQ_LEN,
                              "seq_lens[%d] = %d (must be >= q_len = %d and <= %d)", (int)r,
                              (int)s, (int)q_len, ATTN_MAX_SEQ_LEN);
        max_seq = max32(max_seq, s);
    }
    if (bt->num_blocks < 1)
        return attn__fail(err, ATTN_E_BAD_BLOCK_TABLE, "num_blocks = %d (must be >= 1)",
                          (int)bt->num_blocks);
    int32_t need = (int32_t)(((int64_t)max_seq + b->block_size - 1) / b->block_size);
    if (bt->block_table_stride < need)
        return attn__fail(err, ATTN_E_BAD_BLOCK_TABLE,
                          "block_table_stride = %d < %d blocks needed for seq_len %d",
                          (int)bt->block_table_stride, (int)need, (int)max_seq);
    size_t cells;
    if (attn__mul((size_t)bt->num_reqs, (size_t)bt->block_table_stride, &cells) ||
        cells > SIZE_MAX / sizeof(int32_t))
        return attn__fail(err, ATTN_E_OVERFLOW, "block table %d x %d overflows",
                          (int)bt->num_reqs, (int)bt->block_table_stride);
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        int32_t nb = (int32_t)(((int64_t)bt->seq_lens[r] + b->block_size - 1) / b->block_size);
        const int32_t *row = bt->block_table + (size_t)r * (size_t)bt->block_table_stride;
        for (int32_t i = 0; i < nb; i++)
            if (row[i] < 0 || row[i] >= bt->num_blocks)
                return attn__fail(err, ATTN_E_BAD_BLOCK_TABLE,
                                  "block_table[%d][%d] = %d outside 0..%d", (int)r, (int)i,
                                  (int)row[i], (int)bt->num_blocks - 1);
    }
    /* Every tensor the run will address must be addressable in size_t. */
    size_t x;
    if (attn__mul((size_t)bt->num_blocks, (size_t)b->num_kv_heads, &x) ||
        attn__mul(x, (size_t)b->block_size, &x) || attn__mul(x, (size_t)b->head_dim, &x) ||
        attn__mul(x, attn_dtype_size(b->kv_dtype), &x))
        return attn__fail(err, ATTN_E_OVERFLOW,
                          "KV cache of %d blocks x %d heads x %d x %d overflows size_t",
                          (int)bt->num_blocks, (int)b->num_kv_heads, (int)b->block_size,
                          (int)b->head_dim);
    int32_t tokens = bt->query_start_loc[bt->num_reqs];
    if (attn__mul((size_t)tokens, (size_t)b->num_heads, &x) ||
        attn__mul(x, (size_t)b->head_dim, &x) || attn__mul(x, 4, &x))
        return attn__fail(err, ATTN_E_OVERFLOW, "query of %d tokens x %d heads x %d overflows",
                          (int)tokens, (int)b->num_heads, (int)b->head_dim);
    return ATTN_OK;
}

static attn_status validate_opts(const attn_plan_opts *o, attn_error *err) {
    if ((unsigned)o->split > ATTN_SPLIT_FIXED)
        return attn__fail(err, ATTN_E_BAD_OPTION, "split = %d is not an attn_split_mode",
                          (int)o->split);
    if (o->split == ATTN_SPLIT_FIXED && (o->split_count < 1 || o->split_count > ATTN_MAX_SPLITS))
        return attn__fail(err, ATTN_E_BAD_OPTION, "split_count = %d outside 1..%d",
                          (int)o->split_count, ATTN_MAX_SPLITS);
    if (o->redzone % ATTN_ALIGN != 0 || o->redzone > ATTN_MAX_REDZONE)
        return attn__fail(err, ATTN_E_BAD_OPTION,
                          "redzone = %zu (must be a multiple of %d up to %u)", o->redzone,
                          ATTN_ALIGN, ATTN_MAX_REDZONE);
    return ATTN_OK;
}

typedef struct cost_ix {
    uint64_t cost;
    int32_t ix;
} cost_ix;

static int cmp_cost_desc(const void *a, const void *b) {
    const cost_ix *x = a, *y = b;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    return x->ix < y->ix ? -1 : x->ix > y->ix;
}

/* Thread heap order: less load first, then the lower thread. */
static int heap_before(const uint64_t *load, int32_t a, int32_t b) {
    return load[a] < load[b] || (load[a] == load[b] && a < b);
}

/* Restores the heap below position i (heap[] holds thread numbers). */
static void heap_down(int32_t *heap, int32_t n, const uint64_t *load, int32_t i) {
    for (;;) {
        int32_t m = i;
        const int32_t l = 2 * i + 1, r = l + 1;
        if (l < n && heap_before(load, heap[l], heap[m])) m = l;
        if (r < n && heap_before(load, heap[r], heap[m])) m = r;
        if (m == i) return;
        const int32_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Longest-processing-time-first onto the least-loaded thread; ties go to
 * the lowest thread so the partition is a pure function of the batch.
 * Writes owner[i] for n units of cost[i].  The threads sit in a min-heap
 * on (load, thread): the same choice as scanning them all, in log time. */
static attn_status lpt(const attn_allocator *al, size_t n, const uint64_t *cost, int32_t threads,
                       int32_t *owner) {
    cost_ix *ord = attn__alloc_array(al, n, sizeof *ord);
    uint64_t *load = attn__alloc_array(al, (size_t)threads, sizeof *load);
    int32_t *heap = attn__alloc_array(al, (size_t)threads, sizeof *heap);
    if (!ord || !load || !heap) {
        attn__free(al, ord);
        attn__free(al, load);
        attn__free(al, heap);
        return ATTN_E_NO_MEMORY;
    }
    for (size_t i = 0; i < n; i++) ord[i] = (cost_ix){cost[i], (int32_t)i};
    qsort(ord, n, sizeof *ord, cmp_cost_desc);
    memset(load, 0, (size_t)threads * sizeof *load);
    for (int32_t t = 0; t < threads; t++) heap[t] = t;   /* all zero: already a heap */
    for (size_t i = 0; i < n; i++) {
        const int32_t best = heap[0];
        owner[ord[i].ix] = best;
        load[best] += ord[i].cost;
        heap_down(heap, threads, load, 0);
    }
    attn__free(al, ord);
    attn__free(al, load);
    attn__free(al, heap);
    return ATTN_OK;
}

/* The CSR lists of an assignment: each thread's entries in index order. */
static void thread_lists(size_t n, const int32_t *owner, int32_t threads, int32_t *list,
                         size_t *start) {
    memset(start, 0, ((size_t)threads + 1) * sizeof *start);
    for (size_t i = 0; i < n; i++) start[owner[i] + 1]++;
    for (int32_t t = 0; t < threads; t++) start[t + 1] += start[t];
    for (size_t i = 0; i < n; i++) list[start[owner[i]]++] = (int32_t)i;
    /* the fill moved each start to the next thread's: shift back */
    for (int32_t t = threads; t > 0; t--) start[t] = start[t - 1];
    start[0] = 0;
}

/* Items are partitioned in units: a unit is one item, or a decode run of
 * head_run consecutive KV heads of one single-token, unsplit (request,
 * token), which stays on one thread, its items adjacent in that thread's
 * list, for the executor to hand to tile_heads together (kernels.h).
 * unit[i]: item i's unit; returns the number of units. */
static size_t item_units(const attn_plan *p, int32_t *unit) {
    size_t u = 0;
    for (size_t i = 0; i < p->num_items; i++) {
        const attn_work_item *it = &p->items[i];
        const int joins = i > 0 && p->head_run > 1 && it->kv_head % p->head_run != 0 &&
                          attn__run_item(it);
        unit[i] = joins ? unit[i - 1] : (int32_t)u++;
    }
    return u;
}

void attn_plan_destroy(attn_plan *p) {
    if (!p) return;
    attn_allocator a = p->alloc;
    attn__free(&a, p->qsl);
    attn__free(&a, p->seq_lens);
    attn__free(&a, p->block_table);
    attn__free(&a, p->req_causal);
    attn__free(&a, p->items);
    attn__free(&a, p->reds);
    attn__free(&a, p->thread_items);
    attn__free(&a, p->item_start);
    attn__free(&a, p->thread_reds);
    attn__free(&a, p->red_start);
    attn__free(&a, p->regions);
    p->magic = 0;
    attn__free(&a, p);
}

#define NOMEM(what) attn__fail(err, ATTN_E_NO_MEMORY, "plan: allocation of %s failed", what)

attn_status attn_builder_build(const attn_builder *b, const attn_batch *bt,
                               const attn_plan_opts *opts_in, attn_plan **out, attn_error *err) {
    attn_status st;
    if (!b || !bt || !out)
        return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL", !b ? "builder" : !bt ? "batch" : "out");
    attn_plan_opts opts = {ATTN_SPLIT_AUTO, 0, 0};
    if (opts_in) opts = *opts_in;
    if ((st = validate_opts(&opts, err))) return st;
    if ((st = validate_batch(b, bt, err))) return st;
    /* the plan's counts and bytes, and the limit, before any allocation */
    attn__plan_shape sh;
    if ((st = attn__plan_size(b, bt, &opts, &sh, err))) return st;

    const attn_allocator *al = &b->alloc;
    attn_plan *p = attn__alloc(al, sizeof *p);
    if (!p) return NOMEM("the plan");
    memset(p, 0, sizeof *p);
    p->magic = ATTN_PLAN_MAGIC;
    p->alloc = b->alloc;
    p->kern = b->kern;
    p->tune = b->tune;
    p->round_ok = b->round_ok;
    p->sync_hook = b->sync_hook;
    p->sync_hook_ctx = b->sync_hook_ctx;
    p->num_heads = b->num_heads;
    p->num_kv_heads = b->num_kv_heads;
    p->group_size = b->group_size;
    p->head_dim = b->head_dim;
    p->block_size = b->block_size;
    p->win = b->win;
    p->num_threads = b->num_threads;
    p->q_dtype = b->q_dtype;
    p->kv_dtype = b->kv_dtype;
    p->out_dtype = b->out_dtype;
    p->kv_tile = b->kern->kv_tile;
    p->q_tile = sh.q_tile;
    p->redzone = opts.redzone;
    p->metadata_bytes = sh.metadata_bytes;
    p->num_reqs = bt->num_reqs;
    p->num_tokens = bt->query_start_loc[bt->num_reqs];
    p->num_blocks = bt->num_blocks;
    p->bt_stride = bt->block_table_stride;
    p->causal = bt->causal;

    size_t R = (size_t)bt->num_reqs, cells = R * (size_t)bt->block_table_stride;
    p->qsl = attn__alloc_array(al, R + 1, sizeof(int32_t));
    p->seq_lens = attn__alloc_array(al, R, sizeof(int32_t));
    p->block_table = attn__alloc_array(al, cells, sizeof(int32_t));
    p->req_causal = attn__alloc_array(al, R, sizeof(uint8_t));
    if (!p->qsl || !p->seq_lens || !p->block_table || !p->req_causal) {
        st = NOMEM("batch copies");
        goto fail;
    }
    memcpy(p->qsl, bt->query_start_loc, (R + 1) * sizeof(int32_t));
    memcpy(p->seq_lens, bt->seq_lens, R * sizeof(int32_t));
    memcpy(p->block_table, bt->block_table, cells * sizeof(int32_t));
    for (int32_t r = 0; r < bt->num_reqs; r++) p->req_causal[r] = (uint8_t)attn__req_causal(bt, r);
    const size_t n_items = sh.num_items, n_reds = sh.num_reds;
    const uint64_t rows_per_tok = (uint64_t)b->group_size;

    p->items = attn__alloc_array(al, n_items, sizeof *p->items);
    p->reds = attn__alloc_array(al, n_reds, sizeof *p->reds);
    uint64_t *cost = attn__alloc_array(al, n_items > n_reds ? n_items : n_reds, sizeof *cost);
    int32_t *owner = attn__alloc_array(al, n_items > n_reds ? n_items : n_reds, sizeof *owner);
    p->thread_items = attn__alloc_array(al, n_items, sizeof(int32_t));
    p->item_start = attn__alloc_array(al, (size_t)p->num_threads + 1, sizeof(size_t));
    p->thread_reds = attn__alloc_array(al, n_reds, sizeof(int32_t));
    p->red_start = attn__alloc_array(al, (size_t)p->num_threads + 1, sizeof(size_t));
    if (!p->items || !p->reds || !cost || !owner || !p->thread_items || !p->item_start ||
        !p->thread_reds || !p->red_start) {
        attn__free(al, cost);
        attn__free(al, owner);
        st = NOMEM("work items");
        goto fail;
    }

    /* Pass 2: items in (request, KV head, tile, piece) order.  Head-major
     * for a request of several tiles: a thread's list keeps index order, so
     * its consecutive items read growing prefixes of one KV head's cache,
     * which the previous item left in L2, where tile-major order would
     * have each item read another head's (docs/perf-notes.md, "Item
     * order").  Single-token tiles (decode, and a last tile of one token)
     * keep their KV heads adjacent, as decode runs (head_run) need: they
     * come after the request's other tiles. */
    size_t ni = 0, nr = 0;
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        /* plan_size.c's figures, which the item and reduction counts
         * allocated above were summed from */
        attn__req_figures f;
        attn__request_figures(b, bt, &opts, &sh, r, &f);
        const int32_t q_len = f.q_len, s = p->seq_lens[r], S = f.pieces;
        const int32_t nm = f.multi, Hkv = b->num_kv_heads;   /* head-major, then tile-major */
        for (int32_t ix = 0; ix < f.tiles * Hkv; ix++) {
            const int32_t in_m = ix < nm * Hkv, j = ix - nm * Hkv;
            const int32_t h = in_m ? ix / nm : j % Hkv;
            const int32_t t0 = (in_m ? ix % nm : nm + j / Hkv) * p->q_tile;
            int32_t t1 = min32(q_len, t0 + p->q_tile), lo, hi;
            attn__kv_range(s, q_len, t0, t1, p->req_causal[r], &p->win, &lo, &hi);
            int64_t len = hi - lo;
            int32_t red = -1;
            if (S > 1) {
                red = (int32_t)nr;
                attn_reduction *rd = &p->reds[nr];
                memset(rd, 0, sizeof *rd);
                rd->req = r;
                rd->kv_head = h;
                rd->tok0 = t0;
                rd->tok1 = t1;
                rd->num_pieces = S;
                cost[nr] = (uint64_t)(t1 - t0) * rows_per_tok * (uint64_t)S *
                           (uint64_t)b->head_dim;
                nr++;
            }
            for (int32_t k = 0; k < S; k++) {
                attn_work_item *it = &p->items[ni];
                it->req = r;
                it->kv_head = h;
                it->tok0 = t0;
                it->tok1 = t1;
                it->k0 = (int32_t)(lo + len * k / S);
                it->k1 = (int32_t)(lo + len * (k + 1) / S);
                it->piece = k;
                it->num_pieces = S;
                it->reduction = red;
                it->thread = 0;
                ni++;
            }
        }
    }
    p->num_items = ni;
    p->num_reds = nr;
    p->head_run = sh.head_run;
    p->row_groups = sh.row_groups;

    /* Reductions partition first (cost[] is reused for items next). */
    if (lpt(al, nr, cost, p->num_threads, owner)) {
        attn__free(al, cost);
        attn__free(al, owner);
        st = NOMEM("the reduction partition");
        goto fail;
    }
    thread_lists(nr, owner, p->num_threads, p->thread_reds, p->red_start);
    for (size_t i = 0; i < nr; i++) p->reds[i].thread = owner[i];

    int32_t *unit = attn__alloc_array(al, ni, sizeof *unit);
    if (!unit) {
        attn__free(al, cost);
        attn__free(al, owner);
        st = NOMEM("the item units");
        goto fail;
    }
    const size_t nu = item_units(p, unit);
    /* A fixed per-item overhead keeps tiny items from looking free. */
    memset(cost, 0, nu * sizeof *cost);
    for (size_t i = 0; i < ni; i++) {
        const attn_work_item *it = &p->items[i];
        cost[unit[i]] += (uint64_t)(it->tok1 - it->tok0) * rows_per_tok *
                         (uint64_t)(it->k1 - it->k0 + 16);
    }
    st = lpt(al, nu, cost, p->num_threads, owner);
    if (st == ATTN_OK) {
        /* owner[] of units -> of items, from the last item down (unit[i] <= i) */
        for (size_t i = ni; i-- > 0;) owner[i] = owner[unit[i]];
        thread_lists(ni, owner, p->num_threads, p->thread_items, p->item_start);
        for (size_t i = 0; i < ni; i++) p->items[i].thread = owner[i];
    }
    attn__free(al, unit);
    attn__free(al, cost);
    attn__free(al, owner);
    if (st) {
        st = NOMEM("the item partition");
        goto fail;
    }

    if ((st = attn__layout_build(p, err))) goto fail_keep_msg;
    /* the limit was checked on the figures of plan_size.c: they must be
     * this plan's (the sizing injections change only the layout's sizes) */
#if !defined(ATTN_INJECT_out_dtype_sizing)
    ATTN_ASSERT(p->scratch_bytes == sh.scratch_bytes);
#endif
    *out = p;
    attn__ok(err);
    return ATTN_OK;

fail:
    /* st carries the status; the message was written by NOMEM. */
fail_keep_msg:
    attn_plan_destroy(p);
    return st;
}

/* ---- accessors ---- */

static attn_status check_plan(const attn_plan *p, const void *o, attn_error *err) {
    if (!p || !o) return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL", p ? "out" : "plan");
    if (p->magic != ATTN_PLAN_MAGIC)
        return attn__fail(err, ATTN_E_INTERNAL, "plan handle is not a live plan");
    return ATTN_OK;
}

attn_status attn_plan_scratch_size(const attn_plan *p, size_t *bytes, attn_error *err) {
    attn_status st = check_plan(p, bytes, err);
    if (st) return st;
    *bytes = p->scratch_bytes;
    attn__ok(err);
    return ATTN_OK;
}

attn_status attn_plan_regions(const attn_plan *p, const attn_region **regions, size_t *count,
                              attn_error *err) {
    attn_status st = check_plan(p, regions, err);
    if (st) return st;
    if (!count) return attn__fail(err, ATTN_E_NULL_ARG, "count is NULL");
    *regions = p->regions;
    *count = p->num_regions;
    attn__ok(err);
    return ATTN_OK;
}

attn_status attn_plan_items(const attn_plan *p, const attn_work_item **items, size_t *count,
                            attn_error *err) {
    attn_status st = check_plan(p, items, err);
    if (st) return st;
    if (!count) return attn__fail(err, ATTN_E_NULL_ARG, "count is NULL");
    *items = p->items;
    *count = p->num_items;
    attn__ok(err);
    return ATTN_OK;
}

attn_status attn_plan_reductions(const attn_plan *p, const attn_reduction **reds,
                                 size_t *count, attn_error *err) {
    attn_status st = check_plan(p, reds, err);
    if (st) return st;
    if (!count) return attn__fail(err, ATTN_E_NULL_ARG, "count is NULL");
    *reds = p->reds;
    *count = p->num_reds;
    attn__ok(err);
    return ATTN_OK;
}

attn_status attn_plan_get_info(const attn_plan *p, attn_plan_info *out, attn_error *err) {
    attn_status st = check_plan(p, out, err);
    if (st) return st;
    attn_plan_info i;
    memset(&i, 0, sizeof i);
    i.num_reqs = p->num_reqs;
    i.num_tokens = p->num_tokens;
    i.num_heads = p->num_heads;
    i.num_kv_heads = p->num_kv_heads;
    i.head_dim = p->head_dim;
    i.num_threads = p->num_threads;
    i.q_tile_tokens = p->q_tile;
    i.head_run = p->head_run;
    i.kv_tile = p->kv_tile;
    i.window = p->win.window;
    i.window_pair = p->win.pair;
    i.window_left = p->win.left;
    i.window_right = p->win.right;
    i.causal = p->causal;
    for (int32_t r = 0; r < p->num_reqs; r++) i.num_causal += p->req_causal[r];
    i.num_items = p->num_items;
    i.num_reductions = p->num_reds;
    i.num_regions = p->num_regions;
    i.scratch_bytes = p->scratch_bytes;
    i.redzone = p->redzone;
    i.metadata_bytes = p->metadata_bytes;
    *out = i;
    attn__ok(err);
    return ATTN_OK;
}
