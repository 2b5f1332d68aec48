/*
 * layout.c — the scratchpad: the ONE place that decides how many bytes each
 * region gets (attn__footprint), the layout of those regions into one
 * buffer (attn__layout_build), and the per-layer extents the sizing oracle
 * compares against them (attn_plan_layer_extents), computed by the very
 * same footprint function so sizing and checking cannot drift apart.
 *
 * Regions, in order: for each thread t of the partition, Q, ACC, STATE,
 * SCORES, KV (owner thread t); then for each reduction r, FLAGS, PARTIAL,
 * MAX, SUM (owner reduction r).  Each starts ATTN_ALIGN-aligned; with a
 * redzone R, at least R bytes separate consecutive regions.  The first
 * region starts at 0; the total is the end of the last region rounded up to
 * ATTN_ALIGN.  Nothing grows, nothing is rounded beyond alignment.
 */
#include "internal.h"

#include <string.h>

size_t attn__footprint(attn_region_kind kind, int32_t group_size, int32_t head_dim,
                       int32_t tokens, int32_t kv_tile, int32_t pieces, attn_dtype kv_dtype,
                       bool *overflow) {
    size_t rows, x = 0;
    bool ov = attn__mul((size_t)tokens, (size_t)group_size, &rows);
    const size_t f = sizeof(float);
    switch (kind) {
    case ATTN_REGION_Q:   /* [rows][D] fp32 */
    case ATTN_REGION_ACC: /* [rows][D] fp32 */
#ifdef ATTN_INJECT_region_row_short
        /* INJECTED BUG (region_row_short): the accumulators sized for one
         * row fewer than the item has. */
        if (kind == ATTN_REGION_ACC && rows > 0) rows--;
#endif
        ov |= attn__mul(rows, (size_t)head_dim, &x) || attn__mul(x, f, &x);
        break;
    case ATTN_REGION_STATE: /* m[rows], l[rows] */
        ov |= attn__mul(rows, 2 * f, &x);
        break;
    case ATTN_REGION_SCORES: /* [rows][kv_tile] */
        ov |= attn__mul(rows, (size_t)kv_tile, &x) || attn__mul(x, f, &x);
        break;
    case ATTN_REGION_KV: /* [2][kv_tile][D] fp32: the tiles widen K and V to fp32 here,
                          * whatever the cache's element type */
#ifndef ATTN_INJECT_fp8_tile_sizing
        (void)kv_dtype;
        ov |= attn__mul((size_t)kv_tile, (size_t)head_dim, &x) || attn__mul(x, 2 * f, &x);
#else
        /* INJECTED BUG (fp8_tile_sizing): the KV tiles sized with the
         * cache's element size (1 byte for fp8, 2 for bf16/f16) although
         * the tiles hold K and V converted to fp32. */
        ov |= attn__mul((size_t)kv_tile, (size_t)head_dim, &x) ||
              attn__mul(x, 2 * attn_dtype_size(kv_dtype), &x);
#endif
        break;
    case ATTN_REGION_FLAGS: /* one byte per piece */
        x = (size_t)pieces;
        break;
    case ATTN_REGION_PARTIAL: /* [pieces][rows][D] fp32: partials are always fp32 */
        ov |= attn__mul((size_t)pieces, rows, &x) || attn__mul(x, (size_t)head_dim, &x) ||
              attn__mul(x, f, &x);
        break;
    case ATTN_REGION_MAX: /* [pieces][rows] fp32 */
    case ATTN_REGION_SUM:
        ov |= attn__mul((size_t)pieces, rows, &x) || attn__mul(x, f, &x);
        break;
    default:
        ov = true;
        break;
    }
    if (ov) *overflow = true;
    return x;
}

bool attn__owner_bytes(attn_owner_kind owner, int32_t group_size, int32_t head_dim,
                       int32_t tokens, int32_t kv_tile, int32_t pieces, attn_dtype kv_dtype,
                       size_t redzone, size_t *out) {
    const int first = owner == ATTN_OWNER_THREAD ? ATTN_REGION_Q : ATTN_REGION_FLAGS;
    const int n = owner == ATTN_OWNER_THREAD ? ATTN__THREAD_REGIONS : 4;
    bool ov = false;
    size_t t = 0, x;
    for (int k = first; k < first + n; k++) {
        x = attn__footprint((attn_region_kind)k, group_size, head_dim, tokens, kv_tile, pieces,
                            kv_dtype, &ov);
        ov |= attn__align(x, &x) || attn__add(t, x, &t) || attn__add(t, redzone, &t);
    }
    *out = t;
    return ov;
}

static const char *const k_kind_name[ATTN_REGION_KIND_COUNT] = {
    "q", "acc", "state", "scores", "kv", "flags", "partial", "max", "sum",
};

/* Region geometry for the plan's own layer or for another layer (the
 * extents): only group_size and head_dim may differ. */
static size_t region_bytes(const attn_plan *p, const attn_region *r, int32_t group_size,
                           int32_t head_dim, bool *ov) {
    if (r->owner_kind == ATTN_OWNER_THREAD)
        return attn__footprint(r->kind, group_size, head_dim, p->row_groups, p->kv_tile, 0,
                               p->kv_dtype, ov);
    const attn_reduction *rd = &p->reds[r->owner];
    return attn__footprint(r->kind, group_size, head_dim, rd->tok1 - rd->tok0, p->kv_tile,
                           rd->num_pieces, p->kv_dtype, ov);
}

/* "<tag><ix>.<kind>" into dst (cap bytes, truncated like snprintf): a
 * plan names every region, thousands of them for a long batch, and
 * snprintf was a tenth of building such a plan. */
static void region_name(char *dst, size_t cap, char tag, size_t ix, const char *kind) {
    char digits[24];
    size_t nd = 0;
    do digits[nd++] = (char)('0' + ix % 10); while ((ix /= 10) != 0);
    size_t o = 0;
    if (o + 1 < cap) dst[o++] = tag;
    while (nd && o + 1 < cap) dst[o++] = digits[--nd];
    if (o + 1 < cap) dst[o++] = '.';
    while (*kind && o + 1 < cap) dst[o++] = *kind++;
    dst[o] = '\0';
}

attn_status attn__layout_build(attn_plan *p, attn_error *err) {
    size_t n_thread = (size_t)p->num_threads * ATTN__THREAD_REGIONS;
    size_t n = n_thread + p->num_reds * 4;
    p->regions = attn__alloc_array(&p->alloc, n, sizeof *p->regions);
    if (!p->regions)
        return attn__fail(err, ATTN_E_NO_MEMORY, "plan: allocation of %zu regions failed", n);
    memset(p->regions, 0, n * sizeof *p->regions);
    p->num_regions = n;
    p->thread_region0 = 0;

    for (int32_t t = 0; t < p->num_threads; t++)
        for (int k = 0; k < ATTN__THREAD_REGIONS; k++) {
            attn_region *r = &p->regions[(size_t)t * ATTN__THREAD_REGIONS + (size_t)k];
            r->kind = (attn_region_kind)(ATTN_REGION_Q + k);
            r->owner_kind = ATTN_OWNER_THREAD;
            r->owner = t;
            region_name(r->name, sizeof r->name, 't', (size_t)t, k_kind_name[r->kind]);
        }
    for (size_t i = 0; i < p->num_reds; i++) {
        attn_reduction *rd = &p->reds[i];
        for (int k = 0; k < 4; k++) {
            size_t ix = n_thread + i * 4 + (size_t)k;
            attn_region *r = &p->regions[ix];
            r->kind = (attn_region_kind)(ATTN_REGION_FLAGS + k);
            r->owner_kind = ATTN_OWNER_REDUCTION;
            r->owner = (int32_t)i;
            region_name(r->name, sizeof r->name, 'r', i, k_kind_name[r->kind]);
        }
        rd->region_flags = (int32_t)(n_thread + i * 4);
        rd->region_partial = rd->region_flags + 1;
        rd->region_max = rd->region_flags + 2;
        rd->region_sum = rd->region_flags + 3;
    }

    size_t off = 0;
    bool ov = false;
    for (size_t i = 0; i < n; i++) {
        attn_region *r = &p->regions[i];
        r->size = region_bytes(p, r, p->group_size, p->head_dim, &ov);
#ifdef ATTN_INJECT_out_dtype_sizing
        /* INJECTED BUG (out_dtype_sizing): partials sized with the output
         * element size (2 bytes for bf16/fp16) although written as fp32. */
        if (r->kind == ATTN_REGION_PARTIAL)
            r->size = r->size / sizeof(float) * attn_dtype_size(p->out_dtype);
#endif
        ov |= attn__align(off, &off);
        r->offset = off;
        ov |= attn__add(off, r->size, &off);
        if (i + 1 < n) ov |= attn__add(off, p->redzone, &off);
        if (ov) break;
    }
#ifdef ATTN_INJECT_split_flags_overlap
    /* INJECTED BUG (split_flags_overlap): a reduction's partial outputs are
     * placed at its completion flags' offset, so the two overlap. */
    for (size_t i = 0; i < p->num_reds; i++)
        p->regions[p->reds[i].region_partial].offset = p->regions[p->reds[i].region_flags].offset;
#endif
    ov |= attn__align(off, &off);
    if (ov)
        return attn__fail(err, ATTN_E_OVERFLOW,
                          "scratchpad size overflows size_t (%zu regions, %d threads)", n,
                          (int)p->num_threads);
    p->scratch_bytes = off;
    return ATTN_OK;
}

attn_status attn_plan_layer_extents(const attn_plan *p, const attn_layer_desc *layer,
                                    int32_t head_dim, size_t *extents, size_t count,
                                    attn_error *err) {
    if (!p || !layer || !extents)
        return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL",
                          !p ? "plan" : !layer ? "layer" : "extents");
    if (p->magic != ATTN_PLAN_MAGIC)
        return attn__fail(err, ATTN_E_INTERNAL, "plan handle is not a live plan");
    if (count < p->num_regions)
        return attn__fail(err, ATTN_E_BAD_OPTION, "count = %zu < %zu regions", count,
                          p->num_regions);
    if (layer->num_heads <= 0 || layer->num_heads > ATTN_MAX_HEADS ||
        layer->num_heads % p->num_kv_heads != 0)
        return attn__fail(err, ATTN_E_BAD_HEADS,
                          "layer num_heads = %d is not a positive multiple of num_kv_heads = %d",
                          (int)layer->num_heads, (int)p->num_kv_heads);
    if (head_dim <= 0 || head_dim > ATTN_MAX_HEAD_DIM)
        return attn__fail(err, ATTN_E_BAD_HEAD_DIM, "head_dim = %d outside 1..%d",
                          (int)head_dim, ATTN_MAX_HEAD_DIM);
    int32_t g = layer->num_heads / p->num_kv_heads;
    bool ov = false;
    for (size_t i = 0; i < p->num_regions; i++)
        extents[i] = region_bytes(p, &p->regions[i], g, head_dim, &ov);
    if (ov) return attn__fail(err, ATTN_E_OVERFLOW, "extents overflow size_t");
    attn__ok(err);
    return ATTN_OK;
}

/* Structural invariants of a built plan.  Each failure asserts (debug) and
 * makes the function return false (release), so attn_run can refuse to run
 * a corrupted plan with ATTN_E_INTERNAL instead of writing out of bounds. */
#define VERIFY(cond)             \
    do {                         \
        if (!(cond)) {           \
            ATTN_ASSERT(cond);   \
            return false;        \
        }                        \
    } while (0)

bool attn__plan_verify(const attn_plan *p) {
    VERIFY(p->magic == ATTN_PLAN_MAGIC);
    for (size_t i = 0; i < p->num_items; i++) {
        const attn_work_item *it = &p->items[i];
        VERIFY(it->req >= 0 && it->req < p->num_reqs);
        int32_t q_len = p->qsl[it->req + 1] - p->qsl[it->req];
        VERIFY(it->kv_head >= 0 && it->kv_head < p->num_kv_heads);
        VERIFY(it->tok0 >= 0 && it->tok0 < it->tok1 && it->tok1 <= q_len);
        VERIFY(it->tok1 - it->tok0 <= p->row_groups);
        VERIFY(it->k0 >= 0 && it->k0 < it->k1 && it->k1 <= p->seq_lens[it->req]);
        VERIFY(it->thread >= 0 && it->thread < p->num_threads);
        VERIFY(it->piece >= 0 && it->piece < it->num_pieces);
        if (it->num_pieces > 1) {
            VERIFY(it->reduction >= 0 && (size_t)it->reduction < p->num_reds);
            VERIFY(p->reds[it->reduction].num_pieces == it->num_pieces);
        } else {
            VERIFY(it->reduction == -1);
        }
    }
    /* a decode run's heads fit the thread regions (executor.c, run_heads) */
    VERIFY(p->head_run >= 1 && p->head_run <= p->row_groups &&
           p->num_kv_heads % p->head_run == 0);
    for (size_t i = 0; i < p->num_reds; i++) {
        const attn_reduction *rd = &p->reds[i];
        VERIFY(rd->thread >= 0 && rd->thread < p->num_threads);
        VERIFY(rd->num_pieces >= 2 && rd->num_pieces <= ATTN_MAX_SPLITS);
        VERIFY(rd->tok1 - rd->tok0 <= p->row_groups);
        const int32_t ix[4] = {rd->region_flags, rd->region_partial, rd->region_max,
                               rd->region_sum};
        for (int k = 0; k < 4; k++) {
            VERIFY(ix[k] >= 0 && (size_t)ix[k] < p->num_regions);
            const attn_region *r = &p->regions[ix[k]];
            VERIFY(r->kind == (attn_region_kind)(ATTN_REGION_FLAGS + k));
            VERIFY(r->owner_kind == ATTN_OWNER_REDUCTION && (size_t)r->owner == i);
        }
    }
    VERIFY(p->num_regions >= (size_t)p->num_threads * ATTN__THREAD_REGIONS);
    for (int32_t t = 0; t < p->num_threads; t++)
        for (int k = 0; k < ATTN__THREAD_REGIONS; k++) {
            const attn_region *r = &p->regions[p->thread_region0 +
                                               (size_t)t * ATTN__THREAD_REGIONS + (size_t)k];
            VERIFY(r->kind == (attn_region_kind)(ATTN_REGION_Q + k));
            VERIFY(r->owner_kind == ATTN_OWNER_THREAD && r->owner == t);
        }
    size_t end = 0;
    for (size_t i = 0; i < p->num_regions; i++) {
        const attn_region *r = &p->regions[i];
#ifndef ATTN_INJECT_split_flags_overlap /* the historical engine had no such check */
        VERIFY(r->offset % ATTN_ALIGN == 0 && r->offset >= end);
#endif
        VERIFY(r->size <= p->scratch_bytes && r->offset <= p->scratch_bytes - r->size);
        end = r->offset + r->size;
    }
    (void)end;
    return true;
}
