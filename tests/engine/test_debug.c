/*
 * test_debug.c — death tests: an engine invariant that fails at run time.
 *
 * A valid plan is built, then corrupted through internal.h (the plan struct
 * is private but tests may include it) so that it violates an invariant the
 * builder guarantees, and attn_run is called with otherwise valid input.
 *
 * Assumed engine behaviour: attn_run checks the plan with
 * attn__plan_verify(plan) before running any kernel.  In an ATTN_DEBUG build
 * (make DEBUG=1: library and tests both get -DATTN_DEBUG) the failed
 * ATTN_ASSERT calls attn__assert_fail, which aborts -> the test expects
 * SIGABRT.  In a release build the check returns false and attn_run returns
 * ATTN_E_INTERNAL without running kernels (and without writing the output),
 * never crashing, even though the corrupted item would read past the
 * request's keys / outside the thread partition.
 *
 * Corruptions: (1) an item's k1 beyond its request's seq_len; (2) an item's
 * thread outside the plan's partition; (3) an item's request index out of
 * range; (4) a reduction region index out of range; (5) the plan's
 * scratch_bytes smaller than the end of its last region.
 *
 * And in an ATTN_DEBUG build only, the SIMD tables' general tiles called
 * directly with work areas no plan of theirs passes (fewer keys than the
 * table's kv_tile, a scores area off its alignment): each asserts what
 * its plans guarantee and aborts, where it once fell back to the portable
 * table's tile in silence.  (A release build compiles the check out, so
 * these tests are not built there.)
 */
#include <criterion/criterion.h>

#include "../../src/attn.h"
#include "../../src/internal.h"
#include "../../src/kernels/kernels_decl.h"
#include "../tutil.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

typedef struct dctx {
    attn_builder *b;
    attn_plan *p;
    tu_batch tb;
    attn_layer_desc layer;
    float *q, *out, *kc, *vc;
    void *scratch;
    size_t bytes;
    attn_tensors t;
} dctx;

enum { HQ = 8, HKV = 2, D = 32, BS = 16 };

static void setup(dctx *c) {
    memset(c, 0, sizeof *c);
    c->layer = tu_layer(HQ, -1);
    attn_group_desc g = tu_group(&c->layer, 1, HKV, D, BS, 2);
    attn_error err;
    cr_assert_eq(attn_builder_create(&g, &c->b, &err), ATTN_OK, "%s", err.message);
    int32_t q[2] = {1, 3}, kv[2] = {100, 40};
    cr_assert_eq(tu_batch_init(&c->tb, 2, q, kv, BS, 1, 7), 0);
    attn_plan_opts o = {ATTN_SPLIT_FIXED, 3, 0};
    cr_assert_eq(attn_builder_build(c->b, &c->tb.b, &o, &c->p, &err), ATTN_OK, "%s", err.message);
    cr_assert_eq(attn_plan_scratch_size(c->p, &c->bytes, NULL), ATTN_OK);
    c->scratch = tu_aligned(c->bytes);
    size_t qn = (size_t)c->tb.num_tokens * HQ * D, cn = (size_t)c->tb.b.num_blocks * HKV * BS * D;
    c->q = calloc(qn, 4);
    c->out = calloc(qn, 4);
    c->kc = calloc(cn, 4);
    c->vc = calloc(cn, 4);
    attn_tensors t = {c->q, c->out, c->kc, c->vc, c->tb.num_tokens, HQ, D, c->tb.b.num_blocks, HKV, BS,
                      ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F32};
    c->t = t;
    /* the uncorrupted plan runs */
    cr_assert_eq(attn_run(c->p, &c->layer, &c->t, c->scratch, c->bytes, &err), ATTN_OK, "%s", err.message);
    cr_assert_eq(c->p->magic, ATTN_PLAN_MAGIC, "plan struct layout differs from internal.h");
    cr_assert_gt(c->p->num_items, 0);
    cr_assert_gt(c->p->num_reds, 0, "FIXED 3 on a 100-key decode row should give a reduction");
}

static void teardown(dctx *c) {
    attn_plan_destroy(c->p);
    attn_builder_destroy(c->b);
    tu_batch_free(&c->tb);
    free(c->scratch); free(c->q); free(c->out); free(c->kc); free(c->vc);
}

static void expect_internal(dctx *c, const char *what) {
    attn_error err;
    memset(c->out, 0x5a, (size_t)c->tb.num_tokens * HQ * D * 4);
    attn_status st = attn_run(c->p, &c->layer, &c->t, c->scratch, c->bytes, &err);
#ifdef ATTN_DEBUG
    teardown(c);
    cr_assert_fail("%s: ATTN_DEBUG build returned %s instead of aborting", what, attn_status_name(st));
#else
    cr_assert_eq(st, ATTN_E_INTERNAL, "%s: corrupted plan ran: %s, want ATTN_E_INTERNAL (%s)", what,
                 attn_status_name(st), err.message);
    cr_assert_eq(err.status, ATTN_E_INTERNAL);
    cr_assert_neq(err.message[0], '\0', "%s: empty message", what);
    const unsigned char *o = (const unsigned char *)c->out;
    for (size_t i = 0; i < (size_t)c->tb.num_tokens * HQ * D * 4; i++)
        cr_assert_eq(o[i], 0x5a, "%s: output written by a refused run", what);
    teardown(c);
#endif
}

/* Index of an item of request `req`. */
static size_t item_of(const dctx *c, int32_t req) {
    for (size_t i = 0; i < c->p->num_items; i++)
        if (c->p->items[i].req == req) return i;
    cr_assert_fail("no item for request %d", req);
    return 0;
}

#ifdef ATTN_DEBUG
#define DEATH .signal = SIGABRT
#else
#define DEATH .signal = 0
#endif

Test(debug, item_k1_beyond_seq_len, DEATH) {
    dctx c;
    setup(&c);
    size_t i = item_of(&c, 1);   /* request 1 has 40 keys */
    c.p->items[i].k1 = 40 + 5 * BS;
    expect_internal(&c, "item k1 beyond seq_len");
}

Test(debug, item_thread_out_of_range, DEATH) {
    dctx c;
    setup(&c);
    c.p->items[0].thread = c.p->num_threads + 3;
    expect_internal(&c, "item thread out of range");
}

Test(debug, item_req_out_of_range, DEATH) {
    dctx c;
    setup(&c);
    c.p->items[0].req = c.p->num_reqs;
    expect_internal(&c, "item request out of range");
}

Test(debug, reduction_region_out_of_range, DEATH) {
    dctx c;
    setup(&c);
    c.p->reds[0].region_partial = (int32_t)c.p->num_regions + 1;
    expect_internal(&c, "reduction region index out of range");
}

Test(debug, scratch_bytes_below_last_region, DEATH) {
    dctx c;
    setup(&c);
    const attn_region *last = &c.p->regions[c.p->num_regions - 1];
    c.p->scratch_bytes = last->offset;   /* the last region now ends past the scratchpad */
    c.bytes = c.p->scratch_bytes;
    expect_internal(&c, "scratch_bytes below the end of the last region");
}

#ifdef ATTN_DEBUG
/* Table t's f32 tile on a 4-token item of g 2 (the general tile: neither
 * the decode nor the lanes tile takes it) over 64 keys, with work areas of
 * kv_tile keys whose scores area starts `off` floats into an aligned
 * buffer; the buffers themselves hold a whole 64-key tile, so nothing is
 * read or written out of bounds whether the tile asserts or not. */
static void tile_with_work(const attn_kernels *t, int32_t kv_tile, size_t off) {
    enum { TN = 4, TG = 2, TD = 32, TBS = 16, TSEQ = 64, TROWS = TN * TG, TKEYS = 64 };
    float *q = tu_aligned(TROWS * TD * 4), *acc = tu_aligned(TROWS * TD * 4);
    float *m = tu_aligned(TROWS * 4), *l = tu_aligned(TROWS * 4);
    float *scores = tu_aligned((TROWS * TKEYS + 16) * 4), *kv = tu_aligned(2 * TKEYS * TD * 4);
    float *k = tu_aligned(TSEQ * TD * 4), *v = tu_aligned(TSEQ * TD * 4);
    const int32_t blocks[TSEQ / TBS] = {0, 1, 2, 3};
    cr_assert(q && acc && m && l && scores && kv && k && v);
    for (int r = 0; r < TROWS; r++) m[r] = -INFINITY;
    attn_tile_args a;
    memset(&a, 0, sizeof a);
    a.n_tok = TN, a.g = TG, a.head_dim = TD, a.q = q, a.pos0 = TSEQ - TN, a.seq_len = TSEQ;
    a.window_left = a.window_right = -1;
    a.k_cache = k, a.v_cache = v, a.block_stride = (size_t)TBS * TD, a.blocks = blocks;
    a.block_size = TBS, a.k0 = 0, a.k1 = TSEQ, a.kv_tile = kv_tile;
    a.acc = acc, a.m = m, a.l = l, a.scores = scores + off, a.kv = kv;
    t->tile[ATTN_DTYPE_F32](&a);
    free(q), free(acc), free(m), free(l), free(scores), free(kv), free(k), free(v);
    cr_assert_fail("%s: the tile ran on work areas of %d keys, scores %zu floats off its "
                   "alignment, instead of aborting", t->name, (int)kv_tile, off);
}

#ifdef ATTN_HAVE_AVX2
Test(debug, avx2_tile_work_areas_below_its_kv_tile, .signal = SIGABRT) {
    if (!attn__cpu_avx2()) TU_SKIP("this CPU cannot run the avx2 table");
    tile_with_work(attn__kernels_avx2(), attn__kernels_avx2()->kv_tile / 2, 0);
}
Test(debug, avx2_tile_scores_off_alignment, .signal = SIGABRT) {
    if (!attn__cpu_avx2()) TU_SKIP("this CPU cannot run the avx2 table");
    tile_with_work(attn__kernels_avx2(), attn__kernels_avx2()->kv_tile, 4);
}
#endif
#ifdef ATTN_HAVE_AVX512
Test(debug, avx512_tile_work_areas_below_its_kv_tile, .signal = SIGABRT) {
    if (!attn__cpu_avx512()) TU_SKIP("this CPU cannot run the avx512 table");
    tile_with_work(attn__kernels_avx512(), attn__kernels_avx512()->kv_tile / 2, 0);
}
Test(debug, avx512_tile_scores_off_alignment, .signal = SIGABRT) {
    if (!attn__cpu_avx512()) TU_SKIP("this CPU cannot run the avx512 table");
    tile_with_work(attn__kernels_avx512(), attn__kernels_avx512()->kv_tile, 4);
}
#endif
#endif /* ATTN_DEBUG */
