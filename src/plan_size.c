/*
 * plan_size.c — what a batch's plan will be, worked out before anything is
 * allocated: each request's key ranges and split pieces, the number of
 * work items and reductions, the decode runs' length, the scratchpad's
 * bytes (the layout's own formula, layout.c) and the bytes the build
 * allocates for the plan's metadata.  attn_builder_build (plan.c) refuses
 * a plan whose scratchpad or metadata would exceed the group's
 * max_plan_bytes from these figures, then builds exactly this plan.
 */
#include "internal.h"
#include "kernels/mask.h"

#include <string.h>
#include <unistd.h>

/* Keys a split piece should at least get under ATTN_SPLIT_AUTO: below this
 * the merge and the extra partial traffic cost more than the idle thread. */
#define AUTO_MIN_KEYS_PER_PIECE 256

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

void attn__kv_range(int32_t seq_len, int32_t q_len, int32_t t0, int32_t t1, int32_t causal,
                    const attn__window *w, int32_t *lo, int32_t *hi) {
    int32_t left, right;
    attn__window_pair(w->window, w->pair, w->left, w->right, causal, &left, &right);
    /* positions of tokens t0 and t1 - 1 (docs/design.md §2) */
    const int64_t base = causal ? (int64_t)seq_len - q_len : 0;
    const int64_t pa = base + t0, pb = base + t1 - 1;
    int64_t l = 0, h = seq_len;
    if (causal && pb + 1 < h) h = pb + 1;
    if (left >= 0 && pa - left > l) l = pa - left;
    if (right >= 0 && pb + right + 1 < h) h = pb + right + 1;
    *lo = (int32_t)l;
    *hi = (int32_t)h;
}

/* Pieces for a single-tile row with `keys` keys and cost `cost`, given the
 * batch's total cost.  Each piece keeps >= 1 key (>= AUTO_MIN under auto). */
static int32_t choose_pieces(const attn_plan_opts *o, int32_t threads, int32_t keys,
                             uint64_t cost, uint64_t total) {
    int32_t s = 1;
    switch (o->split) {
    case ATTN_SPLIT_OFF: s = 1; break;
    case ATTN_SPLIT_FIXED: s = o->split_count; break;
    case ATTN_SPLIT_ON: s = max32(2, threads); break;
    case ATTN_SPLIT_AUTO:
        /* Split a row only when it alone is more than a thread's fair share
         * (requests x KV heads leave threads idle): pieces of about the
         * fair share, never smaller than AUTO_MIN_KEYS_PER_PIECE keys. */
        if (threads > 1) {
            uint64_t share = (total + (uint64_t)threads - 1) / (uint64_t)threads;
            if (share && cost > share) {
                uint64_t want = (cost + share - 1) / share;
                int32_t cap = keys / AUTO_MIN_KEYS_PER_PIECE;
                s = (int32_t)(want < (uint64_t)cap ? want : (uint64_t)cap);
                if (s < 1) s = 1;
            }
        }
        break;
    }
    s = min32(s, ATTN_MAX_SPLITS);
    return max32(1, min32(s, keys));
}

/* Tokens per multi-token item: as many as the table's rows_target holds,
 * then the most whose rows are a multiple of its rows_multiple, if that
 * keeps at least half the target (the table's fast tile takes only such
 * items: g 6 at 21 tokens made 126 rows, and Laguna's 48-head layers ran
 * their prefill on the general tile; 16 tokens make 96). */
int32_t attn__q_tile(const attn_builder *b) {
    const int32_t g = b->group_size, t = max32(1, b->kern->rows_target / g);
    const int32_t m = b->kern->rows_multiple;
    if (m > 1)
        for (int32_t u = t; (int64_t)u * g * 2 >= b->kern->rows_target; u--)
            if ((int64_t)u * g % m == 0) return u;
    return t;
}

/* Split pieces of request r (1: not split; only single-tile rows split). */
static int32_t request_pieces(const attn_builder *b, const attn_batch *bt,
                              const attn_plan_opts *o, const attn__plan_shape *s, int32_t r) {
    const int32_t q_len = bt->query_start_loc[r + 1] - bt->query_start_loc[r];
    if (q_len > s->q_tile) return 1; /* only single-tile rows are split */
    int32_t lo, hi;
    attn__kv_range(bt->seq_lens[r], q_len, 0, q_len, attn__req_causal(bt, r), &b->win, &lo, &hi);
    const uint64_t cost = (uint64_t)q_len * (uint64_t)b->group_size * (uint64_t)(hi - lo);
    return choose_pieces(o, b->num_threads, hi - lo, cost, s->total_cost);
}

void attn__request_figures(const attn_builder *b, const attn_batch *bt, const attn_plan_opts *o,
                           const attn__plan_shape *s, int32_t r, attn__req_figures *out) {
    const int32_t q_len = bt->query_start_loc[r + 1] - bt->query_start_loc[r];
    out->q_len = q_len;
    out->tiles = (q_len + s->q_tile - 1) / s->q_tile;
    /* every tile but a last one of a single token holds several (none
     * when q_tile is 1) */
    out->multi = s->q_tile == 1 ? 0 : (q_len - 1) % s->q_tile == 0 ? out->tiles - 1 : out->tiles;
    out->pieces = request_pieces(b, bt, o, s, r);
}

/* Heads per decode run.  A run reads one chunk's K and V pieces of all its
 * heads back to back: in the paged layout those of one block are adjacent,
 * where one head at a time strides over the others' pieces, and the
 * longer contiguous reads stream faster (docs/perf-notes.md, "Decode
 * runs").  So: the longest run (a divisor of Hkv, so runs tile the heads)
 * that still leaves 2 units per thread to balance, or, when every unit
 * costs the same (uniform: single-token items only, each with the same key
 * range), a whole number of units per thread; 1 when the kernel table has
 * no tile_heads or no item has a single token.  singles: the unsplit
 * single-token (request, token) pairs; others: the remaining items. */
static int32_t head_run(const attn_builder *b, size_t singles, size_t others, bool uniform) {
    if (!b->kern->tile_heads[b->kv_dtype] || singles == 0) return 1;
    const int32_t hkv = b->num_kv_heads;
    const size_t T = (size_t)b->num_threads;
    for (int32_t r = min32(hkv, ATTN__HEAD_RUN_MAX); r > 1; r--) {
        if (hkv % r != 0) continue;
        const size_t units = singles * (size_t)(hkv / r) + others;
        if (units >= 2 * T || (uniform && others == 0 && units >= T && units % T == 0)) return r;
    }
    return 1;
}

/* Bytes the build allocates for the plan (plan.c and layout.c, persistent
 * and temporary alike); true on overflow. */
static bool metadata_bytes(const attn_batch *bt, int32_t threads, size_t ni, size_t nr,
                           size_t *out) {
    const size_t R = (size_t)bt->num_reqs, T = (size_t)threads, i4 = sizeof(int32_t);
    const size_t nmax = ni > nr ? ni : nr;
    size_t cells, t = sizeof(attn_plan), x;
    bool ov = attn__mul(R, (size_t)bt->block_table_stride, &cells);
    /* batch copies (query_start_loc, seq_lens, causality, block table) */
    ov |= attn__mul(R + 1 + R, i4, &x) || attn__add(t, x, &t) || attn__add(t, R, &t);
    ov |= attn__mul(cells, i4, &x) || attn__add(t, x, &t);
    /* items, reductions, their thread lists, the cost/owner/unit scratch */
    ov |= attn__mul(ni, sizeof(attn_work_item) + i4 + i4, &x) || attn__add(t, x, &t);
    ov |= attn__mul(nr, sizeof(attn_reduction) + i4, &x) || attn__add(t, x, &t);
    ov |= attn__mul(nmax, sizeof(uint64_t) + i4, &x) || attn__add(t, x, &t);
    ov |= attn__mul(T + 1, 2 * sizeof(size_t), &x) || attn__add(t, x, &t);
    /* the partition's sort (at most nmax entries) and per-thread loads */
    ov |= attn__mul(nmax, 2 * sizeof(uint64_t), &x) || attn__add(t, x, &t);
    ov |= attn__mul(T, sizeof(uint64_t), &x) || attn__add(t, x, &t);
    /* the region table */
    ov |= attn__mul(T, ATTN__THREAD_REGIONS, &x) || attn__mul(nr, 4, &cells) ||
          attn__add(x, cells, &x) || attn__mul(x, sizeof(attn_region), &x) || attn__add(t, x, &t);
    *out = t;
    return ov;
}

/* The default limit: a quarter of physical memory (no limit if unknown). */
static size_t default_max_bytes(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t bytes;
    if (pages <= 0 || page <= 0 || attn__mul((size_t)pages, (size_t)page, &bytes)) return SIZE_MAX;
    return bytes / 4;
}

attn_status attn__plan_size(const attn_builder *b, const attn_batch *bt, const attn_plan_opts *o,
                            attn__plan_shape *out, attn_error *err) {
    attn__plan_shape s;
    memset(&s, 0, sizeof s);
    s.q_tile = attn__q_tile(b);
    const int32_t Hkv = b->num_kv_heads;
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        const int32_t q_len = bt->query_start_loc[r + 1] - bt->query_start_loc[r];
        for (int32_t t0 = 0; t0 < q_len; t0 += s.q_tile) {
            const int32_t t1 = min32(q_len, t0 + s.q_tile);
            int32_t lo, hi;
            attn__kv_range(bt->seq_lens[r], q_len, t0, t1, attn__req_causal(bt, r), &b->win, &lo,
                           &hi);
            s.total_cost += (uint64_t)(t1 - t0) * (uint64_t)b->group_size * (uint64_t)(hi - lo) *
                            (uint64_t)Hkv;
        }
    }
    /* items, reductions, the decode runs, and the reductions' regions */
    bool ov = false;
    size_t singles = 0, red_bytes = 0, x;
    int32_t max_tokens = 1;
    int64_t single_keys = -1; /* the key count of the single-token items, while all agree */
    bool uniform = true;
    for (int32_t r = 0; r < bt->num_reqs; r++) {
        attn__req_figures f;
        attn__request_figures(b, bt, o, &s, r, &f);
        const int32_t q_len = f.q_len, S = f.pieces;
        max_tokens = max32(max_tokens, min32(q_len, s.q_tile));
        ov |= attn__mul((size_t)f.tiles * (size_t)S, (size_t)Hkv, &x) ||
              attn__add(s.num_items, x, &s.num_items);
        if (S > 1) { /* one tile of q_len tokens, a reduction per KV head */
            s.num_reds += (size_t)Hkv;
            ov |= attn__owner_bytes(ATTN_OWNER_REDUCTION, b->group_size, b->head_dim, q_len,
                                    b->kern->kv_tile, S, b->kv_dtype, o->redzone, &x) ||
                  attn__mul(x, (size_t)Hkv, &x) || attn__add(red_bytes, x, &red_bytes);
        } else {
            /* unsplit single-token tiles: all of them when q_tile is 1,
             * else the last one when it holds one token */
            singles += (size_t)(f.tiles - f.multi);
            /* a unit's cost is its key range: the same for all only if each
             * request has one token and the same range */
            int32_t lo, hi;
            attn__kv_range(bt->seq_lens[r], q_len, 0, q_len, attn__req_causal(bt, r), &b->win,
                           &lo, &hi);
            if (q_len != 1 || (single_keys >= 0 && single_keys != (int64_t)hi - lo)) uniform = false;
            single_keys = (int64_t)hi - lo;
        }
    }
    s.head_run = head_run(b, singles, s.num_items - singles * (size_t)Hkv, uniform);
    s.row_groups = max32(max_tokens, s.head_run);
    /* the scratchpad: every region aligned, a redzone after each but the last */
    ov |= attn__owner_bytes(ATTN_OWNER_THREAD, b->group_size, b->head_dim, s.row_groups,
                            b->kern->kv_tile, 0, b->kv_dtype, o->redzone, &x) ||
          attn__mul(x, (size_t)b->num_threads, &x) || attn__add(x, red_bytes, &s.scratch_bytes);
    s.scratch_bytes -= o->redzone;
    ov |= metadata_bytes(bt, b->num_threads, s.num_items, s.num_reds, &s.metadata_bytes);
    if (ov)
        return attn__fail(err, ATTN_E_OVERFLOW,
                          "plan size overflows size_t (%d requests, %d threads, %d KV heads)",
                          (int)bt->num_reqs, (int)b->num_threads, (int)Hkv);

    const size_t limit = b->max_plan_bytes ? b->max_plan_bytes : default_max_bytes();
    const char *why = b->max_plan_bytes ? "max_plan_bytes"
                                        : "the default max_plan_bytes, a quarter of physical memory";
    if (s.scratch_bytes > limit)
        return attn__fail(err, ATTN_E_TOO_LARGE,
                          "the plan's scratchpad would take %zu bytes, over the limit of %zu (%s)",
                          s.scratch_bytes, limit, why);
    if (s.metadata_bytes > limit)
        return attn__fail(err, ATTN_E_TOO_LARGE,
                          "the plan's metadata (%zu work items, %zu reductions) would take %zu "
                          "bytes, over the limit of %zu (%s)",
                          s.num_items, s.num_reds, s.metadata_bytes, limit, why);
    *out = s;
    return ATTN_OK;
}
