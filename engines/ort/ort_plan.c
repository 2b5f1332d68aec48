/*
 * engines/ort/ort_plan.c — a batch cut into the shape classes ORT runs
 * in one call each, and the scratch layout (region table) those calls
 * read and write: the dense K/V tensors gathered from the paged cache,
 * staged queries and outputs, lengths and masks.  Also `extents` (what one
 * layer touches in each region).  ORT's own internal buffers are not here:
 * they come from the group's allocator (ort_alloc.c; sizes in ort_needs.c).
 *
 * Classes (og_cls_kind): ORT's GQA runs one batch of equal query length
 * with any pasts (decode: q_len 1), or one batch of first prompts (no
 * past, right-padded to the longest), and a chunk of prefill with a past
 * only one request at a time.  The same classes serve the Attention op.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_group.h"

#define OG_ALIGN 64

static int32_t q_len(const ag_batch *b, int32_t r) {
    return b->query_start_loc[r + 1] - b->query_start_loc[r];
}

static int kind_of(const ag_batch *b, int32_t r) {
    if (q_len(b, r) == 1) return OG_DECODE;
    return b->seq_lens[r] == q_len(b, r) ? OG_PROMPT : OG_CHUNK;
}

/* A private copy of the validated batch: runs never read the caller's
 * arrays beyond the one they are given for q, caches and out. */
static int copy_batch(og_plan *P, const ag_batch *b) {
    const size_t nr = (size_t)b->num_reqs;
    size_t bt, words, bytes;
    if (__builtin_mul_overflow(nr, (size_t)b->block_table_stride, &bt) ||
        __builtin_add_overflow(bt, 2 * nr + 1, &words) ||
        __builtin_mul_overflow(words, sizeof(int32_t), &bytes))
        return -1;
    int32_t *m = malloc(bytes);
    P->req = malloc(nr * sizeof(int32_t));
    P->cls = calloc(nr, sizeof(og_class));   /* at most one class per request */
    if (!m || !P->req || !P->cls) {
        free(m);
        return -1;
    }
    P->b_mem = m;
    P->b = *b;
    memcpy(m, b->query_start_loc, (nr + 1) * sizeof(int32_t));
    memcpy(m + nr + 1, b->seq_lens, nr * sizeof(int32_t));
    memcpy(m + 2 * nr + 1, b->block_table, bt * sizeof(int32_t));
    P->b.query_start_loc = m;
    P->b.seq_lens = m + nr + 1;
    P->b.block_table = m + 2 * nr + 1;
    P->b.causal = NULL;   /* validated: every request causal */
    return 0;
}

/* One class of the requests of kind k (every one, or request `only`);
 * nothing when none is of that kind. */
static void add_class(og_plan *P, int k, int32_t only) {
    const ag_batch *b = &P->b;
    og_class c = {.kind = k};
    for (int32_t i = 0; i < P->ncls; i++) c.first += P->cls[i].nreq;
    for (int32_t r = 0; r < b->num_reqs; r++) {
        if (kind_of(b, r) != k || (only >= 0 && r != only)) continue;
        const int32_t ql = q_len(b, r), sl = b->seq_lens[r];
        P->req[c.first + c.nreq++] = r;
        if (ql > c.S) c.S = ql;
        if (sl > c.T) c.T = sl;
        if (sl - ql > c.P) c.P = sl - ql;
    }
    if (c.nreq > 0) P->cls[P->ncls++] = c;   /* at most num_reqs classes: cls has room */
}

/* Some member has fewer query rows than the class (rows padded). */
static int padded(const og_plan *P, const og_class *c) {
    for (int32_t i = 0; i < c->nreq; i++)
        if (q_len(&P->b, P->req[c->first + i]) != c->S) return 1;
    return 0;
}

/* q and out in place: the members are consecutive requests whose every
 * query row is real (no padding) and already in ORT's element type. */
static int is_direct(const og_plan *P, const og_class *c) {
    const og_group *g = P->g;
    /* the rotary step turns the staged q back first: never the caller's */
    if (g->q_dt != g->t_dt || g->out_dt != g->t_dt || padded(P, c) || g->rotary) return 0;
    for (int32_t i = 1; i < c->nreq; i++)
        if (P->req[c->first + i] != P->req[c->first + i - 1] + 1) return 0;
    return 1;
}

int og_masked(const og_plan *P, const og_class *c, int32_t layer) {
    if (P->g->op != OG_ATTENTION) return 0;
    /* is_causal with nonpad_kv_seqlen places query row s at keys - S + s:
     * right for every member exactly when none is padded */
    if (padded(P, c)) return 1;
    if (layer >= 0) return P->g->layers[layer].key.window >= 0;
    for (int32_t l = 0; l < P->g->nl; l++)
        if (P->g->layers[l].key.window >= 0) return 1;
    return 0;
}

/* a * b into *out; 1 when it overflows (int, so that flags add up). */
static int mulz(size_t a, size_t b, size_t *out) { return __builtin_mul_overflow(a, b, out) ? 1 : 0; }

/* Bytes of each region of class c for `layer` (-1: the largest any layer
 * needs); 0: the region is absent.  Returns -1 on overflow.  Counts of
 * requests, rows and heads are int32, so their pairwise products cannot
 * overflow 64 bits; the checks are on the byte sizes. */
static int class_sizes(const og_plan *P, const og_class *c, int32_t layer,
                       size_t sz[OG_R_COUNT]) {
    const og_group *g = P->g;
    const int32_t hq = layer >= 0 ? g->layers[layer].key.hq : g->hq_max;
    const size_t es = ag_dtype_size(g->t_dt), B = (size_t)c->nreq, S = (size_t)c->S;
    const size_t T = (size_t)c->T, hkv = (size_t)g->hkv;
    const int gqa = g->op == OG_GQA, sep = gqa && g->io == OG_IO_GQA_SEPARATE;
    size_t qrow, kvrow, past = 0, pres = 0;
    int bad = mulz((size_t)hq * (size_t)g->d, es, &qrow) + mulz(hkv * (size_t)g->d, es, &kvrow);
    memset(sz, 0, OG_R_COUNT * sizeof(size_t));
    if (!is_direct(P, c)) bad += mulz(B * S, qrow, &sz[OG_R_Q]);
    sz[OG_R_OUT] = sz[OG_R_Q];
    bad += mulz(B * (gqa ? S : T), kvrow, &sz[OG_R_K]);
    sz[OG_R_V] = sz[OG_R_K];
    if (gqa) {   /* shared: one buffer of T rows; separate: P past rows, T present rows */
#ifndef ATTN_INJECT_ort_kv_region_short
        bad += mulz(B * (sep ? (size_t)c->P : T), kvrow, &past);
#else
        /* INJECTED BUG (ort_kv_region_short): a row short per request, as
         * if the buffer held the past without the token being added */
        bad += mulz(B * (sep ? (size_t)c->P : T - 1), kvrow, &past);
#endif
        if (sep) bad += mulz(B * T, kvrow, &pres);
        sz[OG_R_LENS] = (B + 1) * sizeof(int32_t);
        /* packed: each row's q then K then V heads, what the query input
         * carries (q staged and the new rows gathered as above first) */
        /* rotary: the cos and sin caches, a row per position up to T */
        if (g->rotary != OG_ROT_NONE) {
            bad += mulz(T * (size_t)(g->d / 2), es, &sz[OG_R_COS]);
            sz[OG_R_SIN] = sz[OG_R_COS];
        }
        if (g->io == OG_IO_GQA_PACKED) {
            size_t row = 0;
            bad += __builtin_add_overflow(qrow, 2 * kvrow, &row);
            bad += mulz(B * S, row, &sz[OG_R_QKV]);
        }
    } else {
        sz[OG_R_LENS] = B * sizeof(int64_t);
        if (og_masked(P, c, layer)) bad += mulz(B * S, T, &sz[OG_R_MASK]);
    }
    sz[OG_R_PAST_K] = sz[OG_R_PAST_V] = past;
    sz[OG_R_PRES_K] = sz[OG_R_PRES_V] = pres;
    return bad ? -1 : 0;
}

static const char *const k_region[OG_R_COUNT] = {"q",      "k",      "v",    "past_k",
                                                 "past_v", "pres_k", "pres_v", "out",
                                                 "mask",   "lens",   "qkv",    "cos",
                                                 "sin"};

/* Offsets of every class's regions, and the region table; `redzone`
 * bytes (the harness's ag_plan_opts.redzone, a multiple of OG_ALIGN or
 * rounded up to one) between regions, so that an access running off one
 * lands in a gap the harness's guard watches, not in the next region. */
static int layout(og_plan *P, size_t redzone) {
    size_t off = 0, n = 0;
    P->regions = calloc((size_t)P->ncls * OG_R_COUNT, sizeof(ag_region));
    if (!P->regions) return -1;
    for (int32_t i = 0; i < P->ncls; i++) {
        og_class *c = &P->cls[i];
        c->M = P->g->op == OG_GQA && P->g->io == OG_IO_GQA_SEPARATE ? c->P : c->T;
        c->direct = is_direct(P, c);
        if (class_sizes(P, c, -1, c->size) != 0) return -1;
        for (int r = 0; r < OG_R_COUNT; r++) {
            c->off[r] = SIZE_MAX;
            if (c->size[r] == 0) continue;
            ag_region *R = &P->regions[n++];
            snprintf(R->name, sizeof R->name, "c%d.%s", (int)i, k_region[r]);
            c->off[r] = R->offset = off;
            R->size = c->size[r];
            R->kind = AG_REGION_OTHER;
            R->owner = AG_OWNER_PLAN;
            if (__builtin_add_overflow(off, c->size[r] + OG_ALIGN - 1, &off) ||
                __builtin_add_overflow(off, redzone, &off))
                return -1;
            off &= ~(size_t)(OG_ALIGN - 1);
        }
    }
    P->nregions = n;
    P->scratch = off;
    return 0;
}

void og_plan_destroy(void *plan) {
    og_plan *P = plan;
    if (!P) return;
    free(P->b_mem);
    free(P->req);
    free(P->cls);
    free(P->regions);
    free(P);
}

ag_status og_plan_make(void *grp, const ag_batch *batch, const ag_plan_opts *opts, void **plan,
                       ag_plan_info *info, ag_msg *msg) {
    og_group *g = grp;
    if (!plan || !info) return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "plan: NULL out");
    ag_status st = og_check_batch(g, batch, msg);
    if (st != AG_OK) return st;
    /* ORT decides its own threading: no split to honour; a redzone the
     * harness asks for goes between the regions (AG_CAP_REDZONE) */
    const size_t redzone = opts && opts->redzone <= ((size_t)1 << 20) ? opts->redzone : 0;
    og_plan *P = calloc(1, sizeof *P);
    if (!P || copy_batch(P, batch) != 0) {
        og_plan_destroy(P);
        return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "plan: batch copy");
    }
    P->g = g;
    P->T = batch->query_start_loc[batch->num_reqs];
    add_class(P, OG_DECODE, -1);
    add_class(P, OG_PROMPT, -1);
    for (int32_t r = 0; r < P->b.num_reqs; r++)
        if (kind_of(&P->b, r) == OG_CHUNK) add_class(P, OG_CHUNK, r);
    if (layout(P, redzone) != 0) {
        og_plan_destroy(P);
        return orta_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "ORT_OVERFLOW",
                         "plan: the scratch for %d requests overflows size_t",
                         (int)batch->num_reqs);
    }
    *info = (ag_plan_info){.scratch_bytes = P->scratch, .scratch_align = OG_ALIGN,
                           .regions = P->regions, .num_regions = P->nregions};
    *plan = P;
    return orta_ok(msg);
}

ag_status og_extents(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *msg) {
    const og_plan *P = plan;
    if (!need) return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "extents: need");
    if (layer < 0 || layer >= P->g->nl)
        return orta_fail(msg, AG_REFUSED, AG_R_MISMATCH, "ORT_BAD_LAYER",
                         "extents: layer %d of %d", (int)layer, (int)P->g->nl);
    if (count < (P->nregions ? P->nregions : 1))
        return orta_fail(msg, AG_REFUSED, AG_R_MISMATCH, "ORT_BAD_ARGS",
                         "extents: room for %zu, the plan has %zu regions", count, P->nregions);
    if (P->nregions == 0) need[0] = 0;
    size_t n = 0;
    for (int32_t i = 0; i < P->ncls; i++) {
        const og_class *c = &P->cls[i];
        size_t sz[OG_R_COUNT];
        class_sizes(P, c, layer, sz);   /* each <= the plan's own: no overflow */
        for (int r = 0; r < OG_R_COUNT; r++)
            if (c->size[r]) need[n++] = sz[r];
    }
    return orta_ok(msg);
}
