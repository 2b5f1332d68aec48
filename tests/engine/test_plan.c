/*
 * test_plan.c — structural properties of attn_builder_build's plans over
 * 300 seeded random batches (no kernels run).
 *
 * For every plan: every (request, query head, query token, visible key) is
 * covered by exactly one work item (visibility computed here from DESIGN §2
 * with the plan's window), item ranges lie inside [0, seq_len), the pieces of
 * every split row partition its keys (contiguous, no gap/overlap, >= 1 key
 * each), reductions name existing regions of the right kinds and owners,
 * thread ids are in range and every item's thread owns a full set of work
 * regions, and every region holds what the kernels touch in it (checked
 * against attn_plan_layer_extents, the engine's one footprint formula, not a
 * copy of it: the sizing is decided in layout.c and checked there); the region
 * table is sorted, disjoint, 64-byte aligned, inside the total, and the total
 * is exactly align64(end of last region); with a redzone R every gap between
 * regions is >= R and region sizes are those of the R = 0 plan; split OFF
 * has no reductions, split FIXED n / ON give decode rows exactly min(n,
 * visible keys) pieces; the scratchpad grows with the head count; and
 * attn_plan_layer_extents is within the regions for the plan's own layer and
 * beyond some region for a layer with more heads (the sizing oracle).
 *
 * Bugs this catches: model-wide head count in the layout (region too small
 * for g), rows double-counted or dropped by splits or q-tiling, an off-by-one
 * window in the KV range, regions that overlap or slack-padded totals,
 * redzones not applied, split counts ignoring the clamp.
 */
#include <criterion/criterion.h>

#include "../../src/attn.h"
#include "../../src/attn_plan_inspect.h"
#include "../tutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

typedef struct plan_params {
    int32_t hq, hkv, d, bs, window, causal, threads;
    int32_t pair, wl, wr;       /* the window as an explicit (left, right) pair */
    int mixed;                  /* rc[] gives each request's causality */
    uint8_t rc[16];
    attn_split_mode split;
    int32_t split_count;
    size_t redzone;
    attn_dtype qd, kvd, od;     /* element types (partials are fp32 regardless) */
    int32_t n;
    int32_t q_len[16], kv_len[16];
} plan_params;

static void describe(const plan_params *pp, char *buf, size_t cap) {
    static const char *sm[] = {"auto", "off", "on", "fixed"};
    int o = snprintf(buf, cap, "Hq=%d Hkv=%d D=%d bs=%d W=%d causal=%d thr=%d split=%s/%d rz=%zu "
                     "dt=%s/%s/%s reqs=", pp->hq, pp->hkv, pp->d, pp->bs, pp->window, pp->causal,
                     pp->threads, sm[pp->split], pp->split_count, pp->redzone, attn_dtype_name(pp->qd),
                     attn_dtype_name(pp->kvd), attn_dtype_name(pp->od));
    if (pp->pair && o > 0 && (size_t)o < cap)
        o += snprintf(buf + o, cap - (size_t)o, "pair(%d,%d) ", pp->wl, pp->wr);
    for (int32_t r = 0; r < pp->n && o > 0 && (size_t)o < cap; r++)
        o += snprintf(buf + o, cap - (size_t)o, "%s(%d,%d%s)", r ? "," : "", pp->q_len[r],
                      pp->kv_len[r], !pp->mixed ? "" : pp->rc[r] ? ",c" : ",nc");
}

/* Request r's causality and its token t's position (DESIGN §2: a causal
 * request's token i at seq_len - q_len + i, a non-causal one's at i). */
static int32_t rcausal(const plan_params *pp, int32_t r) {
    return pp->mixed ? pp->rc[r] : pp->causal;
}
static int32_t pos_of(const plan_params *pp, int32_t r, int32_t t) {
    return rcausal(pp, r) ? pp->kv_len[r] - pp->q_len[r] + t : t;
}

/* Visible keys of position p in a request of seq keys under pp's window
 * (DESIGN §2, written out here, not taken from the engine): always an
 * interval [*lo, *hi) (possibly empty). */
static void visible(int32_t p, int32_t seq, int32_t causal, const plan_params *pp, int32_t *lo,
                    int32_t *hi) {
    int32_t left = -1, right = -1; /* -1: unbounded */
    if (pp->pair) {
        left = pp->wl;
        right = pp->wr;
    } else if (pp->window > 0) {
        left = pp->window - 1;
        right = causal ? -1 : pp->window - 1;
    }
    int32_t a = 0, b = seq;
    if (causal && p + 1 < b) b = p + 1;
    if (left >= 0 && p - left > a) a = p - left;
    if (right >= 0 && p + right + 1 < b) b = p + right + 1;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

/* pp's layer, with its window either way. */
static attn_layer_desc pp_layer(const plan_params *pp) {
    attn_layer_desc l = tu_layer(pp->hq, pp->pair ? -1 : pp->window);
    l.window_pair = pp->pair;
    l.window_left = pp->pair ? pp->wl : 0;
    l.window_right = pp->pair ? pp->wr : 0;
    return l;
}

typedef struct seg { int64_t key; int32_t a, b; int32_t item; } seg;
static int seg_cmp(const void *x, const void *y) {
    const seg *s = x, *t = y;
    if (s->key != t->key) return s->key < t->key ? -1 : 1;
    if (s->a != t->a) return s->a < t->a ? -1 : 1;
    return (s->b > t->b) - (s->b < t->b);
}
typedef struct pc { int32_t red, piece, k0, k1; } pc;
static int pc_cmp(const void *x, const void *y) {
    const pc *s = x, *t = y;
    if (s->red != t->red) return s->red < t->red ? -1 : 1;
    return (s->k0 > t->k0) - (s->k0 < t->k0);
}

static const attn_region *find_region(const attn_region *rg, size_t n, attn_owner_kind ok,
                                      int32_t owner, attn_region_kind kind) {
    for (size_t i = 0; i < n; i++)
        if (rg[i].owner_kind == ok && rg[i].owner == owner && rg[i].kind == kind) return &rg[i];
    return NULL;
}

static attn_plan *build(const plan_params *pp, attn_builder **bout, tu_batch *tb, const char *tag) {
    attn_layer_desc l[1] = {pp_layer(pp)};
    attn_group_desc g = tu_group(l, 1, pp->hkv, pp->d, pp->bs, pp->threads);
    g.q_dtype = pp->qd;
    g.kv.dtype = pp->kvd;
    g.out_dtype = pp->od;
    attn_error err;
    attn_builder *b = NULL;
    attn_status st = attn_builder_create(&g, &b, &err);
    cr_assert_eq(st, ATTN_OK, "%s: create %s (%s)", tag, attn_status_name(st), err.message);
    cr_assert_eq(tu_batch_init(tb, pp->n, pp->q_len, pp->kv_len, pp->bs, pp->causal, 0), 0);
    if (pp->mixed) tb->b.req_causal = pp->rc;
    attn_plan_opts o = {pp->split, pp->split_count, pp->redzone};
    attn_plan *p = NULL;
    st = attn_builder_build(b, &tb->b, &o, &p, &err);
    cr_assert_eq(st, ATTN_OK, "%s: build %s (%s)", tag, attn_status_name(st), err.message);
    *bout = b;
    return p;
}

/* Check one plan; returns nothing, asserts with `tag` in every message. */
static void check_plan(const plan_params *pp, const attn_plan *p, const tu_batch *tb, const char *tag) {
    attn_error err;
    attn_plan_info info;
    cr_assert_eq(attn_plan_get_info(p, &info, &err), ATTN_OK, "%s: %s", tag, err.message);
    const attn_work_item *it = NULL;
    const attn_reduction *rd = NULL;
    const attn_region *rg = NULL;
    size_t ni = 0, nr = 0, ng = 0, total = 0;
    cr_assert_eq(attn_plan_items(p, &it, &ni, &err), ATTN_OK, "%s", tag);
    cr_assert_eq(attn_plan_reductions(p, &rd, &nr, &err), ATTN_OK, "%s", tag);
    cr_assert_eq(attn_plan_regions(p, &rg, &ng, &err), ATTN_OK, "%s", tag);
    cr_assert_eq(attn_plan_scratch_size(p, &total, &err), ATTN_OK, "%s", tag);

    const int32_t g = pp->hq / pp->hkv, D = pp->d;
    cr_assert_eq(info.num_reqs, pp->n, "%s: info.num_reqs", tag);
    cr_assert_eq(info.num_tokens, tb->num_tokens, "%s: info.num_tokens", tag);
    cr_assert_eq(info.num_heads, pp->hq, "%s: info.num_heads %d", tag, info.num_heads);
    cr_assert_eq(info.num_kv_heads, pp->hkv, "%s", tag);
    cr_assert_eq(info.head_dim, D, "%s", tag);
    cr_assert(info.num_threads >= 1 && info.num_threads <= pp->threads,
              "%s: plan threads %d for group threads %d", tag, info.num_threads, pp->threads);
    cr_assert_eq(info.window, pp->pair ? -1 : pp->window, "%s: plan window %d", tag, info.window);
    cr_assert(info.window_pair == pp->pair && info.window_left == (pp->pair ? pp->wl : 0) &&
                  info.window_right == (pp->pair ? pp->wr : 0),
              "%s: plan window pair %d (%d, %d)", tag, info.window_pair, info.window_left,
              info.window_right);
    cr_assert_eq(info.causal, pp->causal, "%s", tag);
    int32_t ncausal = 0;
    for (int32_t r = 0; r < pp->n; r++) ncausal += rcausal(pp, r);
    cr_assert_eq(info.num_causal, ncausal, "%s", tag);
    cr_assert_eq(info.num_items, ni, "%s", tag);
    cr_assert_eq(info.num_reductions, nr, "%s", tag);
    cr_assert_eq(info.num_regions, ng, "%s", tag);
    cr_assert_eq(info.scratch_bytes, total, "%s", tag);
    cr_assert_eq(info.redzone, pp->redzone, "%s", tag);
    cr_assert(info.kv_tile >= 1 && info.q_tile_tokens >= 1, "%s: tiles %d %d", tag, info.kv_tile,
              info.q_tile_tokens);
    const int32_t T = info.num_threads;

    /* ---- region table ---- */
    cr_assert_gt(ng, 0, "%s: no regions", tag);
    for (size_t i = 0; i < ng; i++) {
        cr_assert(memchr(rg[i].name, '\0', ATTN_REGION_NAME_LEN) && rg[i].name[0],
                  "%s: region %zu name", tag, i);
        cr_assert_eq(rg[i].offset % ATTN_ALIGN, 0, "%s: region %zu (%s) offset %zu unaligned", tag,
                     i, rg[i].name, rg[i].offset);
        cr_assert((int)rg[i].kind >= 0 && rg[i].kind < ATTN_REGION_KIND_COUNT, "%s: kind", tag);
        cr_assert(rg[i].offset + rg[i].size <= total, "%s: region %zu (%s) [%zu,+%zu) past total %zu",
                  tag, i, rg[i].name, rg[i].offset, rg[i].size, total);
        if (rg[i].owner_kind == ATTN_OWNER_THREAD)
            cr_assert(rg[i].owner >= 0 && rg[i].owner < T, "%s: region %s owner %d", tag, rg[i].name,
                      rg[i].owner);
        else {
            cr_assert_eq(rg[i].owner_kind, ATTN_OWNER_REDUCTION, "%s", tag);
            cr_assert(rg[i].owner >= 0 && (size_t)rg[i].owner < nr, "%s: region %s owner %d", tag,
                      rg[i].name, rg[i].owner);
        }
        if (i > 0) {
            size_t end = rg[i - 1].offset + rg[i - 1].size;
            cr_assert(rg[i].offset >= end, "%s: regions %zu (%s) and %zu (%s) overlap/unsorted: "
                      "[%zu,+%zu) then %zu", tag, i - 1, rg[i - 1].name, i, rg[i].name,
                      rg[i - 1].offset, rg[i - 1].size, rg[i].offset);
            cr_assert(rg[i].offset - end >= pp->redzone, "%s: gap %zu between %s and %s < redzone %zu",
                      tag, rg[i].offset - end, rg[i - 1].name, rg[i].name, pp->redzone);
        }
    }
    size_t last_end = rg[ng - 1].offset + rg[ng - 1].size;
    cr_assert_eq(total, align64(last_end), "%s: scratch %zu != align64(last end %zu) = %zu", tag,
                 total, last_end, align64(last_end));

    /* ---- items ---- */
    size_t nseg_cap = 0;
    for (size_t i = 0; i < ni; i++) nseg_cap += (size_t)(it[i].tok1 > it[i].tok0 ? it[i].tok1 - it[i].tok0 : 0);
    seg *segs = malloc((nseg_cap + 1) * sizeof *segs);
    pc *pcs = malloc((ni + 1) * sizeof *pcs);
    cr_assert(segs && pcs);
    size_t ns = 0, npc = 0;
    for (size_t i = 0; i < ni; i++) {
        const attn_work_item *w = &it[i];
        cr_assert(w->req >= 0 && w->req < pp->n, "%s: item %zu req %d", tag, i, w->req);
        int32_t ql = pp->q_len[w->req], sl = pp->kv_len[w->req];
        cr_assert(w->kv_head >= 0 && w->kv_head < pp->hkv, "%s: item %zu kv_head %d", tag, i, w->kv_head);
        cr_assert(0 <= w->tok0 && w->tok0 < w->tok1 && w->tok1 <= ql,
                  "%s: item %zu tokens [%d,%d) of q_len %d", tag, i, w->tok0, w->tok1, ql);
        cr_assert(w->tok1 - w->tok0 <= info.q_tile_tokens, "%s: item %zu has %d tokens > q tile %d",
                  tag, i, w->tok1 - w->tok0, info.q_tile_tokens);
        cr_assert(0 <= w->k0 && w->k0 < w->k1 && w->k1 <= sl,
                  "%s: item %zu keys [%d,%d) outside [0,%d) (req %d)", tag, i, w->k0, w->k1, sl, w->req);
        cr_assert(w->thread >= 0 && w->thread < T, "%s: item %zu thread %d", tag, i, w->thread);
        cr_assert(w->num_pieces >= 1 && w->num_pieces <= ATTN_MAX_SPLITS, "%s: item %zu pieces %d",
                  tag, i, w->num_pieces);
        cr_assert(w->piece >= 0 && w->piece < w->num_pieces, "%s: item %zu piece %d/%d", tag, i,
                  w->piece, w->num_pieces);
        if (w->num_pieces == 1)
            cr_assert_eq(w->reduction, -1, "%s: unsplit item %zu has reduction %d", tag, i, w->reduction);
        else {
            cr_assert(w->reduction >= 0 && (size_t)w->reduction < nr, "%s: item %zu reduction %d of %zu",
                      tag, i, w->reduction, nr);
            const attn_reduction *r = &rd[w->reduction];
            cr_assert(r->req == w->req && r->kv_head == w->kv_head && r->tok0 == w->tok0 &&
                      r->tok1 == w->tok1 && r->num_pieces == w->num_pieces,
                      "%s: item %zu disagrees with its reduction %d", tag, i, w->reduction);
            pcs[npc++] = (pc){w->reduction, w->piece, w->k0, w->k1};
        }
        if (pp->split == ATTN_SPLIT_OFF)
            cr_assert_eq(w->num_pieces, 1, "%s: split OFF but item %zu has %d pieces", tag, i, w->num_pieces);
        if (pp->split == ATTN_SPLIT_FIXED)
            cr_assert(w->num_pieces <= pp->split_count, "%s: item %zu %d pieces > fixed %d", tag, i,
                      w->num_pieces, pp->split_count);
        /* single-tile rows (the request's queries in one item: decode, and
         * short prefill/chunks): exact piece count, clamped to the keys the
         * row's tokens see together */
        if (w->tok0 == 0 && w->tok1 == ql && pp->split != ATTN_SPLIT_AUTO) {
            int32_t lo, hi, lo2, hi2;
            visible(pos_of(pp, w->req, 0), sl, rcausal(pp, w->req), pp, &lo, &hi);
            visible(pos_of(pp, w->req, ql - 1), sl, rcausal(pp, w->req), pp, &lo2, &hi2);
            if (hi2 > hi) hi = hi2;
            int32_t vis = hi - lo, want = 1;
            if (pp->split == ATTN_SPLIT_FIXED) want = pp->split_count;
            if (pp->split == ATTN_SPLIT_ON) want = T > 2 ? T : 2;
            if (want > ATTN_MAX_SPLITS) want = ATTN_MAX_SPLITS;
            if (want > vis) want = vis;
            cr_assert_eq(w->num_pieces, want, "%s: single-tile row req %d (q_len %d, visible [%d,%d)) has %d "
                         "pieces, want %d", tag, w->req, ql, lo, hi, w->num_pieces, want);
            if (w->num_pieces > 1 && ql == 1) {
                int32_t a = w->k0 > lo ? w->k0 : lo, b = w->k1 < hi ? w->k1 : hi;
                cr_assert(b > a, "%s: decode piece %d/%d of req %d keys [%d,%d) sees none of [%d,%d)",
                          tag, w->piece, w->num_pieces, w->req, w->k0, w->k1, lo, hi);
            }
        }
        /* coverage segments */
        for (int32_t t = w->tok0; t < w->tok1; t++) {
            int32_t lo, hi;
            visible(pos_of(pp, w->req, t), sl, rcausal(pp, w->req), pp, &lo, &hi);
            int32_t a = w->k0 > lo ? w->k0 : lo, b = w->k1 < hi ? w->k1 : hi;
            if (b <= a) continue;
            int64_t key = ((int64_t)w->req * pp->hkv + w->kv_head) * 4096 + t;
            segs[ns++] = (seg){key, a, b, (int32_t)i};
        }
    }
    qsort(segs, ns, sizeof *segs, seg_cmp);
    size_t si = 0;
    for (int32_t r = 0; r < pp->n; r++) {
        int32_t ql = pp->q_len[r], sl = pp->kv_len[r];
        for (int32_t h = 0; h < pp->hkv; h++)
            for (int32_t t = 0; t < ql; t++) {
                int64_t key = ((int64_t)r * pp->hkv + h) * 4096 + t;
                int32_t lo, hi;
                visible(pos_of(pp, r, t), sl, rcausal(pp, r), pp, &lo, &hi);
                int32_t at = lo;
                while (si < ns && segs[si].key == key) {
                    cr_assert(segs[si].a <= at, "%s: req %d kv_head %d token %d: keys [%d,%d) not covered",
                              tag, r, h, t, at, segs[si].a);
                    cr_assert(segs[si].a >= at, "%s: req %d kv_head %d token %d: key %d covered twice "
                              "(item %d)", tag, r, h, t, segs[si].a, segs[si].item);
                    at = segs[si].b;
                    si++;
                }
                cr_assert_eq(at, hi, "%s: req %d kv_head %d token %d: visible keys [%d,%d) not covered "
                             "(visible [%d,%d))", tag, r, h, t, at, hi, lo, hi);
            }
    }
    cr_assert_eq(si, ns, "%s: stray coverage", tag);

    /* ---- split pieces partition their row ---- */
    qsort(pcs, npc, sizeof *pcs, pc_cmp);
    for (size_t i = 0; i < npc;) {
        size_t j = i;
        while (j < npc && pcs[j].red == pcs[i].red) j++;
        const attn_reduction *r = &rd[pcs[i].red];
        cr_assert_eq((int32_t)(j - i), r->num_pieces, "%s: reduction %d has %zu items for %d pieces", tag,
                     pcs[i].red, j - i, r->num_pieces);
        uint64_t seen = 0;
        for (size_t k = i; k < j; k++) {
            cr_assert(pcs[k].k1 > pcs[k].k0, "%s: empty piece", tag);
            if (k > i)
                cr_assert_eq(pcs[k].k0, pcs[k - 1].k1, "%s: reduction %d pieces [%d,%d) and [%d,%d) gap/overlap",
                             tag, pcs[i].red, pcs[k - 1].k0, pcs[k - 1].k1, pcs[k].k0, pcs[k].k1);
            cr_assert(!(seen & (1ull << pcs[k].piece)), "%s: reduction %d piece %d twice", tag,
                      pcs[i].red, pcs[k].piece);
            seen |= 1ull << pcs[k].piece;
        }
        i = j;
    }

    /* ---- decode runs: head_run consecutive heads of a single-token,
     * unsplit (request, token) are adjacent items on one thread ---- */
    cr_assert(info.head_run >= 1 && pp->hkv % info.head_run == 0, "%s: head_run %d for Hkv %d",
              tag, info.head_run, pp->hkv);
    for (size_t i = 0; i < ni; i++) {
        const attn_work_item *w = &it[i];
        if (info.head_run == 1 || w->tok1 - w->tok0 != 1 || w->num_pieces != 1 ||
            w->kv_head % info.head_run != 0)
            continue;
        cr_assert(i + (size_t)info.head_run <= ni, "%s: run at item %zu cut short", tag, i);
        for (int32_t h = 1; h < info.head_run; h++) {
            const attn_work_item *x = &it[i + (size_t)h];
            cr_assert(x->req == w->req && x->tok0 == w->tok0 && x->kv_head == w->kv_head + h &&
                          x->thread == w->thread && x->num_pieces == 1,
                      "%s: item %zu (req %d head %d thread %d) breaks the run of item %zu (req "
                      "%d head %d thread %d)", tag, i + (size_t)h, x->req, x->kv_head, x->thread,
                      i, w->req, w->kv_head, w->thread);
        }
    }

    /* ---- reductions and their regions ---- */
    if (pp->split == ATTN_SPLIT_OFF) cr_assert_eq(nr, 0, "%s: split OFF but %zu reductions", tag, nr);
    size_t *pieces_seen = calloc(nr + 1, sizeof *pieces_seen);
    for (size_t i = 0; i < npc; i++) pieces_seen[pcs[i].red]++;
    for (size_t i = 0; i < nr; i++) {
        const attn_reduction *r = &rd[i];
        cr_assert(r->num_pieces >= 2 && r->num_pieces <= ATTN_MAX_SPLITS, "%s: reduction %zu pieces %d",
                  tag, i, r->num_pieces);
        cr_assert_eq(pieces_seen[i], (size_t)r->num_pieces, "%s: reduction %zu has %zu items", tag, i,
                     pieces_seen[i]);
        cr_assert(r->thread >= 0 && r->thread < T, "%s: reduction %zu thread %d", tag, i, r->thread);
        cr_assert(r->req >= 0 && r->req < pp->n && r->kv_head >= 0 && r->kv_head < pp->hkv, "%s", tag);
        cr_assert(0 <= r->tok0 && r->tok0 < r->tok1 && r->tok1 <= pp->q_len[r->req], "%s", tag);
        size_t rows = (size_t)(r->tok1 - r->tok0) * (size_t)g, S = (size_t)r->num_pieces;
        const int32_t idx[4] = {r->region_flags, r->region_partial, r->region_max, r->region_sum};
        const attn_region_kind kinds[4] = {ATTN_REGION_FLAGS, ATTN_REGION_PARTIAL, ATTN_REGION_MAX,
                                           ATTN_REGION_SUM};
        for (int k = 0; k < 4; k++) {
            cr_assert(idx[k] >= 0 && (size_t)idx[k] < ng, "%s: reduction %zu region index %d", tag, i, idx[k]);
            const attn_region *x = &rg[idx[k]];
            cr_assert_eq(x->kind, kinds[k], "%s: reduction %zu region %s kind %d want %d", tag, i,
                         x->name, x->kind, kinds[k]);
            cr_assert(x->owner_kind == ATTN_OWNER_REDUCTION && x->owner == (int32_t)i,
                      "%s: region %s owner (%zu rows, %zu pieces)", tag, x->name, rows, S);
        }
    }
    free(pieces_seen);

    /* ---- every item's thread owns a full set of work regions; their sizes
     * are checked once, below, against the engine's own footprint
     * (attn_plan_layer_extents): the one sizing formula, not a copy ---- */
    for (size_t i = 0; i < ni; i++) {
        const attn_work_item *w = &it[i];
        const attn_region_kind kinds[5] = {ATTN_REGION_Q, ATTN_REGION_ACC, ATTN_REGION_STATE,
                                           ATTN_REGION_SCORES, ATTN_REGION_KV};
        for (int k = 0; k < 5; k++) {
            const attn_region *x = find_region(rg, ng, ATTN_OWNER_THREAD, w->thread, kinds[k]);
            cr_assert_not_null(x, "%s: thread %d has no region of kind %d", tag, w->thread, kinds[k]);
        }
    }

    /* ---- the plan's own layer fits; its extents are within the regions ---- */
    size_t *ext = calloc(ng, sizeof *ext);
    attn_layer_desc own = pp_layer(pp);
    attn_status st = attn_plan_layer_extents(p, &own, D, ext, ng, &err);
    cr_assert_eq(st, ATTN_OK, "%s: extents %s (%s)", tag, attn_status_name(st), err.message);
    for (size_t i = 0; i < ng; i++)
        cr_assert(ext[i] <= rg[i].size, "%s: own layer extent %zu > region %s size %zu", tag, ext[i],
                  rg[i].name, rg[i].size);
    free(ext);
    free(segs);
    free(pcs);
}

static void random_params(uint64_t *s, plan_params *pp) {
    static const int32_t heads[][2] = {{4, 4}, {8, 2}, {9, 3}, {48, 8}, {64, 8}, {32, 1}};
    static const int32_t windows[] = {-1, 1, 7, 512};
    static const int32_t bss[] = {1, 16, 48};
    static const int32_t dims[] = {64, 128, 80};
    memset(pp, 0, sizeof *pp);
    int hi = tu_range(s, 0, 5);
    pp->hq = heads[hi][0];
    pp->hkv = heads[hi][1];
    pp->d = dims[tu_range(s, 0, 2)];
    pp->bs = bss[tu_range(s, 0, 2)];
    pp->window = windows[tu_range(s, 0, 3)];
    pp->causal = tu_range(s, 0, 3) != 0;
    if (tu_range(s, 0, 3) == 0) { /* the window as a pair, one side possibly unbounded */
        static const int32_t sides[] = {-1, 0, 3, 100};
        pp->pair = 1;
        pp->wl = sides[tu_range(s, 0, 3)];
        pp->wr = sides[tu_range(s, 0, 3)];
    }
    pp->mixed = tu_range(s, 0, 2) == 0; /* causal and non-causal requests in one batch */
    pp->threads = tu_range(s, 1, 8);
    int sm = tu_range(s, 0, 3);
    pp->split = (attn_split_mode)sm;
    pp->split_count = sm == ATTN_SPLIT_FIXED ? tu_range(s, 2, 9) : 0;
    pp->qd = (attn_dtype)tu_range(s, 0, 2);
    pp->kvd = (attn_dtype)tu_range(s, 0, 2);
    pp->od = (attn_dtype)tu_range(s, 0, 2);
    pp->n = tu_range(s, 1, 12);
    for (int32_t r = 0; r < pp->n; r++) pp->rc[r] = (uint8_t)tu_range(s, 0, 1);
    int32_t maxkv = pp->bs == 1 ? 300 : (tu_range(s, 0, 3) == 0 ? 3000 : 900);
    for (int32_t r = 0; r < pp->n; r++) {
        int kind = tu_range(s, 0, 2);
        if (kind == 0) {            /* decode */
            pp->kv_len[r] = tu_range(s, 1, maxkv);
            pp->q_len[r] = 1;
        } else if (kind == 1) {     /* prefill */
            pp->q_len[r] = pp->kv_len[r] = tu_range(s, 1, 80);
        } else {                    /* chunked prefill */
            pp->kv_len[r] = tu_range(s, 2, maxkv);
            pp->q_len[r] = tu_range(s, 1, pp->kv_len[r] < 64 ? pp->kv_len[r] - 1 : 63);
        }
    }
}

Test(plan, random_batches_300, .timeout = 120) {
    uint64_t s = 0x9a7e5eedull;
    char tag[512];
    for (int iter = 0; iter < 300; iter++) {
        plan_params pp;
        random_params(&s, &pp);
        pp.redzone = (iter % 5 == 4) ? 64 : 0;
        char d[400];
        describe(&pp, d, sizeof d);
        snprintf(tag, sizeof tag, "batch %d [%s]", iter, d);
        attn_builder *b = NULL;
        tu_batch tb;
        attn_plan *p = build(&pp, &b, &tb, tag);
        check_plan(&pp, p, &tb, tag);
        attn_plan_destroy(p);
        tu_batch_free(&tb);
        attn_builder_destroy(b);
    }
}

/* Redzones R = 64 and 256: same sizes as the R = 0 plan, every gap >= R. */
Test(plan, redzone_gaps_and_same_sizes) {
    uint64_t s = 0x7ed20e5ull;
    char tag[512];
    for (int iter = 0; iter < 40; iter++) {
        plan_params pp;
        random_params(&s, &pp);
        if (pp.split == ATTN_SPLIT_OFF) pp.split = ATTN_SPLIT_ON;
        attn_builder *b0 = NULL;
        tu_batch tb0;
        attn_plan *p0 = build(&pp, &b0, &tb0, "rz0");
        const attn_region *r0 = NULL;
        size_t n0 = 0, tot0 = 0;
        cr_assert_eq(attn_plan_regions(p0, &r0, &n0, NULL), ATTN_OK);
        cr_assert_eq(attn_plan_scratch_size(p0, &tot0, NULL), ATTN_OK);
        size_t rzs[2] = {64, 256};
        for (int k = 0; k < 2; k++) {
            pp.redzone = rzs[k];
            char d[400];
            describe(&pp, d, sizeof d);
            snprintf(tag, sizeof tag, "redzone iter %d [%s]", iter, d);
            attn_builder *b = NULL;
            tu_batch tb;
            attn_plan *p = build(&pp, &b, &tb, tag);
            check_plan(&pp, p, &tb, tag);
            const attn_region *r = NULL;
            size_t n = 0, tot = 0;
            cr_assert_eq(attn_plan_regions(p, &r, &n, NULL), ATTN_OK);
            cr_assert_eq(attn_plan_scratch_size(p, &tot, NULL), ATTN_OK);
            cr_assert_eq(n, n0, "%s: %zu regions vs %zu without redzone", tag, n, n0);
            for (size_t i = 0; i < n; i++) {
                cr_assert_str_eq(r[i].name, r0[i].name, "%s: region %zu", tag, i);
                cr_assert_eq(r[i].size, r0[i].size, "%s: region %s size %zu vs %zu without redzone",
                             tag, r[i].name, r[i].size, r0[i].size);
            }
            cr_assert_geq(tot, tot0 + (n - 1) * rzs[k], "%s: total %zu", tag, tot);
            if (iter == 0)
                cr_log_info("redzone %zu: first region at offset %zu, last ends at %zu, total %zu",
                            rzs[k], r[0].offset, r[n - 1].offset + r[n - 1].size, tot);
            attn_plan_destroy(p);
            tu_batch_free(&tb);
            attn_builder_destroy(b);
        }
        attn_plan_destroy(p0);
        tu_batch_free(&tb0);
        attn_builder_destroy(b0);
    }
}

static size_t plan_bytes(int32_t hq, attn_split_mode split, int32_t count, attn_plan **keep,
                         attn_builder **keepb, tu_batch *tb) {
    plan_params pp;
    memset(&pp, 0, sizeof pp);
    pp.hq = hq; pp.hkv = 8; pp.d = 128; pp.bs = 16; pp.window = -1; pp.causal = 1;
    pp.threads = 4; pp.split = split; pp.split_count = count; pp.n = 3;
    pp.qd = ATTN_DTYPE_BF16; pp.kvd = ATTN_DTYPE_BF16; pp.od = ATTN_DTYPE_BF16;
    int32_t q[] = {1, 1, 7}, kv[] = {700, 33, 40};
    memcpy(pp.q_len, q, sizeof q);
    memcpy(pp.kv_len, kv, sizeof kv);
    attn_builder *b = NULL;
    attn_plan *p = build(&pp, &b, tb, "heads");
    check_plan(&pp, p, tb, "heads");
    size_t bytes = 0;
    cr_assert_eq(attn_plan_scratch_size(p, &bytes, NULL), ATTN_OK);
    *keep = p;
    *keepb = b;
    return bytes;
}

/* The seed bug: the scratchpad must grow with the layer's head count. */
Test(plan, scratch_scales_with_heads) {
    attn_split_mode modes[3] = {ATTN_SPLIT_FIXED, ATTN_SPLIT_OFF, ATTN_SPLIT_ON};
    for (int m = 0; m < 3; m++) {
        attn_plan *p48, *p64, *p16;
        attn_builder *b48, *b64, *b16;
        tu_batch t48, t64, t16;
        size_t s48 = plan_bytes(48, modes[m], 2, &p48, &b48, &t48);
        size_t s64 = plan_bytes(64, modes[m], 2, &p64, &b64, &t64);
        size_t s16 = plan_bytes(16, modes[m], 2, &p16, &b16, &t16);
        cr_assert_gt(s64, s48, "split mode %d: scratch for 64 heads %zu <= for 48 heads %zu", m, s64, s48);
        /* (48 vs 16 is not monotone in general: with g = 2 a 7-token prefill
         * fits one q tile and becomes a split row, with g = 6 it does not.) */
        cr_log_info("split mode %d: scratch 16 heads %zu, 48 heads %zu, 64 heads %zu", m, s16, s48, s64);
        if (modes[m] == ATTN_SPLIT_FIXED) {
            /* the DESIGN §1 arithmetic: the 2-piece partial of one decode row */
            const attn_reduction *r = NULL;
            const attn_region *rg = NULL;
            size_t nr = 0, ng = 0;
            cr_assert_eq(attn_plan_reductions(p64, &r, &nr, NULL), ATTN_OK);
            cr_assert_eq(attn_plan_regions(p64, &rg, &ng, NULL), ATTN_OK);
            cr_assert_gt(nr, 0);
            for (size_t i = 0; i < nr; i++)
                if (r[i].tok1 - r[i].tok0 == 1 && r[i].num_pieces == 2)
                    cr_assert_geq(rg[r[i].region_partial].size, 8192,
                                  "64-head reduction partial %zu < 2*8*128*4", rg[r[i].region_partial].size);
        }
        attn_plan_destroy(p48); attn_plan_destroy(p64); attn_plan_destroy(p16);
        attn_builder_destroy(b48); attn_builder_destroy(b64); attn_builder_destroy(b16);
        tu_batch_free(&t48); tu_batch_free(&t64); tu_batch_free(&t16);
    }
}

/* The sizing oracle: a layer with more heads than the plan exceeds some
 * region; fewer heads fit everywhere. */
Test(plan, layer_extents_oracle) {
    attn_split_mode modes[3] = {ATTN_SPLIT_FIXED, ATTN_SPLIT_OFF, ATTN_SPLIT_AUTO};
    for (int m = 0; m < 3; m++) {
        attn_plan *p;
        attn_builder *b;
        tu_batch tb;
        plan_bytes(48, modes[m], 3, &p, &b, &tb);
        const attn_region *rg = NULL;
        size_t ng = 0;
        cr_assert_eq(attn_plan_regions(p, &rg, &ng, NULL), ATTN_OK);
        size_t *ext = calloc(ng, sizeof *ext);
        attn_error err;
        int32_t heads[] = {64, 72, 56};
        for (int k = 0; k < 3; k++) {
            attn_layer_desc l = tu_layer(heads[k], -1);
            attn_status st = attn_plan_layer_extents(p, &l, 128, ext, ng, &err);
            cr_assert_eq(st, ATTN_OK, "extents for %d heads: %s (%s)", heads[k], attn_status_name(st),
                         err.message);
            size_t over = 0;
            for (size_t i = 0; i < ng; i++) over += ext[i] > rg[i].size;
            cr_assert_gt(over, 0, "split mode %d: a %d-head layer on a 48-head plan fits every region",
                         m, heads[k]);
            if (modes[m] == ATTN_SPLIT_FIXED) {
                /* the partial regions specifically must be reported too small */
                size_t over_partial = 0;
                for (size_t i = 0; i < ng; i++)
                    over_partial += rg[i].kind == ATTN_REGION_PARTIAL && ext[i] > rg[i].size;
                cr_assert_gt(over_partial, 0, "%d heads: no partial region reported too small", heads[k]);
            }
        }
        int32_t fewer[] = {48, 16, 8};
        for (int k = 0; k < 3; k++) {
            attn_layer_desc l = tu_layer(fewer[k], 7);
            cr_assert_eq(attn_plan_layer_extents(p, &l, 128, ext, ng, &err), ATTN_OK, "%s", err.message);
            size_t nonzero = 0;
            for (size_t i = 0; i < ng; i++) {
                cr_assert_leq(ext[i], rg[i].size, "%d heads: extent %zu > region %s %zu", fewer[k],
                              ext[i], rg[i].name, rg[i].size);
                nonzero += ext[i] > 0;
            }
            cr_assert_gt(nonzero, 0, "%d heads: every extent is 0", fewer[k]);
        }
        /* own layer: extents equal the sized regions for the per-thread Q region */
        attn_layer_desc own = tu_layer(48, -1);
        cr_assert_eq(attn_plan_layer_extents(p, &own, 128, ext, ng, &err), ATTN_OK);
        for (size_t i = 0; i < ng; i++) cr_assert_leq(ext[i], rg[i].size);
        free(ext);
        attn_plan_destroy(p);
        attn_builder_destroy(b);
        tu_batch_free(&tb);
    }
}

/* A single decode request with lots of keys: FIXED n gives exactly n pieces
 * for every n in 1..64, clamped to the visible keys (window 7 -> 7). */
Test(plan, fixed_split_counts_exact) {
    int32_t wins[] = {-1, 7, 1};
    for (int wi = 0; wi < 3; wi++)
        for (int32_t n = 1; n <= ATTN_MAX_SPLITS; n += (n < 10 ? 1 : 9)) {
            plan_params pp;
            memset(&pp, 0, sizeof pp);
            pp.hq = 32; pp.hkv = 1; pp.d = 64; pp.bs = 16; pp.window = wins[wi]; pp.causal = 1;
            pp.threads = 3; pp.split = ATTN_SPLIT_FIXED; pp.split_count = n; pp.n = 2;
            pp.od = (attn_dtype)(n % 3);
            pp.q_len[0] = 1; pp.kv_len[0] = 4097;
            pp.q_len[1] = 1; pp.kv_len[1] = 3;
            char d[400], tag[512];
            describe(&pp, d, sizeof d);
            snprintf(tag, sizeof tag, "fixed %d [%s]", n, d);
            attn_builder *b;
            tu_batch tb;
            attn_plan *p = build(&pp, &b, &tb, tag);
            check_plan(&pp, p, &tb, tag);
            attn_plan_destroy(p);
            attn_builder_destroy(b);
            tu_batch_free(&tb);
        }
}

/* The head-run policy (plan_size.c, head_run): the longest divisor of Hkv
 * that leaves 2 units per thread, or, when every unit costs the same (one
 * token per request, the same key range: `same`), a whole number of units
 * per thread; only on a table with tile_heads (avx2, the AVX-512 ones, and
 * their emulated twins: the policy is the plan's, not the CPU's, so every
 * table the build has checks it); the portable table runs every item
 * alone. */
Test(plan, decode_head_runs) {
    static const struct { int32_t reqs, threads, same, want; } cases[] = {
        {8, 2, 0, 8}, {2, 2, 0, 4}, {1, 2, 1, 4}, {1, 1, 1, 8}, {2, 2, 1, 8},
        {3, 2, 1, 4}, {3, 2, 0, 4}, {1, 2, 0, 4},
    };
    static const char *isas[] = {"avx2",       "avx512",         "avx512bf16", "amx",
                                 "avx512@emu", "avx512bf16@emu", "amx@sim",    "ref"};
    const char *avail[16];
    const int na = attn_isa_available(avail, 16);
    int tried = 0;
    for (size_t ii = 0; ii < sizeof isas / sizeof *isas; ii++)
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        int have = 0;
        for (int i = 0; i < na; i++) have |= !strcmp(avail[i], isas[ii]);
        if (!have) continue;
        tried += strcmp(isas[ii], "ref") != 0;
        const int32_t want = strcmp(isas[ii], "ref") ? cases[c].want : 1;
        attn_layer_desc l[1] = {tu_layer(32, -1)};
        attn_group_desc g = tu_group(l, 1, 8, 128, 16, cases[c].threads);
        g.isa = isas[ii];
        attn_error err;
        attn_builder *b = NULL;
        cr_assert_eq(attn_builder_create(&g, &b, &err), ATTN_OK, "%s", err.message);
        int32_t ql[8], kl[8];
        for (int r = 0; r < 8; r++) ql[r] = 1, kl[r] = cases[c].same ? 1000 : 1000 + 37 * r;
        tu_batch tb;
        cr_assert_eq(tu_batch_init(&tb, cases[c].reqs, ql, kl, 16, 1, 0), 0);
        attn_plan_opts o = {ATTN_SPLIT_OFF, 0, 0};
        attn_plan *p = NULL;
        cr_assert_eq(attn_builder_build(b, &tb.b, &o, &p, &err), ATTN_OK, "%s", err.message);
        attn_plan_info info;
        cr_assert_eq(attn_plan_get_info(p, &info, &err), ATTN_OK);
        cr_assert_eq(info.head_run, want,
                     "%s, %d requests (%s lengths), %d threads: head_run %d, want %d", isas[ii],
                     cases[c].reqs, cases[c].same ? "equal" : "unequal", cases[c].threads,
                     info.head_run, want);
        attn_plan_destroy(p);
        attn_builder_destroy(b);
        tu_batch_free(&tb);
    }
    cr_assert(tried > 0, "no table with decode runs in this build");
}

/* Items of a request with several multi-token tiles come head-major (each
 * thread then reads one KV head's growing prefix after another: plan.c,
 * pass 2), and single-token tiles (a last tile of one token, or every tile
 * when q_tile is 1) keep their heads adjacent for decode runs.  g 1
 * (q_tile 128 on the AVX-512 tables, 32 on ref), g 4, and g 128 (q_tile 1). */
Test(plan, prefill_items_head_major) {
    static const int32_t heads[][2] = {{32, 32}, {32, 8}, {256, 2}};
    for (size_t hi = 0; hi < sizeof heads / sizeof *heads; hi++)
        for (int32_t threads = 1; threads <= 2; threads++) {
            plan_params pp;
            memset(&pp, 0, sizeof pp);
            pp.hq = heads[hi][0], pp.hkv = heads[hi][1], pp.d = 64, pp.bs = 16;
            pp.window = -1, pp.causal = 1, pp.threads = threads, pp.split = ATTN_SPLIT_AUTO;
            pp.qd = pp.kvd = pp.od = ATTN_DTYPE_F32;
            pp.n = 4;
            const int32_t ql[4] = {300, 1, 257, 129}, kl[4] = {300, 500, 300, 129};
            for (int r = 0; r < 4; r++) pp.q_len[r] = ql[r], pp.kv_len[r] = kl[r];
            char tag[128];
            snprintf(tag, sizeof tag, "Hq %d Hkv %d threads %d", pp.hq, pp.hkv, threads);
            attn_builder *b = NULL;
            tu_batch tb;
            attn_plan *p = build(&pp, &b, &tb, tag);
            check_plan(&pp, p, &tb, tag);   /* decode runs included */
            const attn_work_item *it = NULL;
            size_t ni = 0;
            cr_assert_eq(attn_plan_items(p, &it, &ni, NULL), ATTN_OK);
            for (size_t i = 1; i < ni; i++) {
                const attn_work_item *a = &it[i - 1], *c = &it[i];
                if (a->req != c->req || a->tok1 - a->tok0 < 2 || c->tok1 - c->tok0 < 2) continue;
                /* two multi-token tiles of one request: (head, tile) increases */
                cr_assert(c->kv_head > a->kv_head || (c->kv_head == a->kv_head && c->tok0 > a->tok0),
                          "%s: item %zu (head %d, tokens %d..) after item %zu (head %d, tokens "
                          "%d..)", tag, i, c->kv_head, c->tok0, i - 1, a->kv_head, a->tok0);
            }
            /* every (request, KV head, token) once */
            size_t want = 0;
            for (int r = 0; r < 4; r++) want += (size_t)ql[r] * (size_t)pp.hkv;
            size_t got = 0;
            for (size_t i = 0; i < ni; i++)
                if (it[i].piece == 0) got += (size_t)(it[i].tok1 - it[i].tok0);
            cr_assert_eq(got, want, "%s: %zu (token, head) pairs, want %zu", tag, got, want);
            attn_plan_destroy(p);
            attn_builder_destroy(b);
            tu_batch_free(&tb);
        }
}

/* Tokens per prefill item on the AVX-512 tables: rows_target 128 rows,
 * lowered to a multiple of 16 rows (their lanes tiles hold 16 rows per
 * vector) while that keeps 64 or more.  g 6 (Laguna's 48 heads over 8):
 * 16 tokens, 96 rows, not 21 (126 rows, which only the general tile
 * takes); g 8: 16 (128); g 9: no multiple of 16 in 64 .. 126 rows, so
 * 14 (126); g 10: 8 (80); g 1: 128.  On the portable table rows_target
 * is 32 and any row count is taken: g 6 gets 5 tokens. */
Test(plan, q_tile_rows_multiple) {
    static const int32_t cases[][4] = {/* hq, hkv, tokens on avx512*, on ref */
                                       {48, 8, 16, 5}, {64, 8, 16, 4}, {36, 4, 14, 3},
                                       {40, 4, 8, 3},  {8, 8, 128, 32}};
    const char *names[8] = {0};
    const int n = attn_isa_available(names, 8);
    for (int k = 0; k < n; k++) {
        const int wide = strncmp(names[k], "avx512", 6) == 0;
        if (!wide && strcmp(names[k], "ref") != 0) continue;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            attn_layer_desc L = tu_layer(cases[c][0], -1);
            attn_group_desc g = tu_group(&L, 1, cases[c][1], 128, 16, 1);
            g.isa = names[k];
            attn_builder *b = NULL;
            attn_error err;
            cr_assert_eq(attn_builder_create(&g, &b, &err), ATTN_OK, "%s", err.message);
            tu_batch tb;
            const int32_t ql = 300, kl = 300;
            cr_assert_eq(tu_batch_init(&tb, 1, &ql, &kl, 16, 1, 0), 0);
            attn_plan *p = NULL;
            cr_assert_eq(attn_builder_build(b, &tb.b, NULL, &p, &err), ATTN_OK, "%s", err.message);
            attn_plan_info info;
            cr_assert_eq(attn_plan_get_info(p, &info, &err), ATTN_OK);
            cr_assert_eq(info.q_tile_tokens, cases[c][wide ? 2 : 3], "%s, Hq %d / Hkv %d: %d tokens",
                         names[k], cases[c][0], cases[c][1], info.q_tile_tokens);
            attn_plan_destroy(p);
            tu_batch_free(&tb);
            attn_builder_destroy(b);
        }
    }
}
