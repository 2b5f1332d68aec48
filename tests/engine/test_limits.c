/*
 * test_limits.c — the plan's byte limit (attn_group_desc.max_plan_bytes).
 *
 * A plan whose scratchpad, or whose own metadata, would take more bytes
 * than the limit is refused with ATTN_E_TOO_LARGE, a message naming both
 * figures, and not one allocation made by the build; the figures the limit
 * is held to are the built plan's own (attn_plan_info.scratch_bytes and
 * metadata_bytes) over seeded random batches, so the refusal happens
 * exactly one byte below them; the default limit (a quarter of physical
 * memory) refuses a plan of 64 GiB of split partials.
 *
 * Bugs this catches: a limit checked after the allocations it was meant
 * to prevent, an estimate that drifts from the layout (a limit one byte
 * below the plan's size that still builds, or one at its size refused),
 * metadata left out of the check, a default that never refuses.
 */
#include <criterion/criterion.h>

#include "../../src/attn.h"
#include "../../src/attn_plan_inspect.h"
#include "../tutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct lim_case {
    int32_t hq, hkv, d, bs, threads, window;
    attn_split_mode split;
    int32_t split_count;
    size_t redzone;
    int32_t n, q_len[8], kv_len[8];
    int32_t causal;
    const char *isa; /* NULL: the CPU's default table */
} lim_case;

static lim_case random_case(uint64_t *s) {
    static const int32_t hkv[] = {1, 2, 4, 8};
    static const int32_t ds[] = {16, 64, 80, 128};
    lim_case c;
    memset(&c, 0, sizeof c);
    c.hkv = hkv[tu_range(s, 0, 3)];
    c.hq = c.hkv * tu_range(s, 1, 8);
    c.d = ds[tu_range(s, 0, 3)];
    c.bs = tu_range(s, 0, 1) ? 16 : 48;
    c.threads = tu_range(s, 1, 6);
    c.window = tu_range(s, 0, 2) ? -1 : tu_range(s, 1, 300);
    c.split = (attn_split_mode)tu_range(s, 0, 3);
    c.split_count = tu_range(s, 1, 9);
    c.redzone = 64 * (size_t)tu_range(s, 0, 2);
    c.causal = tu_range(s, 0, 3) != 0;
    c.n = tu_range(s, 1, 8);
    for (int32_t r = 0; r < c.n; r++) {
        c.q_len[r] = tu_range(s, 0, 2) ? 1 : tu_range(s, 1, 150);
        c.kv_len[r] = c.q_len[r] + tu_range(s, 0, 700);
    }
    return c;
}

/* Build c's plan under limit `max` through a counting allocator; returns
 * the status, fills info on success, and the allocations the build made
 * (the builder's own are not counted). */
static attn_status build_limited(const lim_case *c, size_t max, attn_plan_info *info,
                                 long *build_allocs, attn_error *err) {
    tu_counter cnt;
    memset(&cnt, 0, sizeof cnt);
    attn_allocator al = tu_counting_allocator(&cnt);
    attn_layer_desc l = tu_layer(c->hq, c->window);
    attn_group_desc g = tu_group(&l, 1, c->hkv, c->d, c->bs, c->threads);
    g.allocator = &al;
    g.max_plan_bytes = max;
    if (c->isa) g.isa = c->isa;
    attn_builder *b = NULL;
    cr_assert_eq(attn_builder_create(&g, &b, err), ATTN_OK, "%s", err->message);
    tu_batch tb;
    cr_assert_eq(tu_batch_init(&tb, c->n, c->q_len, c->kv_len, c->bs, c->causal, 0), 0);
    attn_plan_opts o = {c->split, c->split_count, c->redzone};
    attn_plan *p = NULL;
    const long before = cnt.calls;
    const attn_status st = attn_builder_build(b, &tb.b, &o, &p, err);
    *build_allocs = cnt.calls - before;
    if (st == ATTN_OK) cr_assert_eq(attn_plan_get_info(p, info, NULL), ATTN_OK);
    attn_plan_destroy(p);
    attn_builder_destroy(b);
    tu_batch_free(&tb);
    cr_assert_eq(cnt.live, 0, "leaked %ld allocations", cnt.live);
    return st;
}

Test(limits, refused_one_byte_below_the_plan) {
    uint64_t s = 0x11a17u;
    for (int i = 0; i < 200; i++) {
        const lim_case c = random_case(&s);
        attn_error err;
        attn_plan_info info;
        long allocs;
        cr_assert_eq(build_limited(&c, 0, &info, &allocs, &err), ATTN_OK, "case %d: %s", i,
                     err.message);
        const size_t need = info.scratch_bytes > info.metadata_bytes ? info.scratch_bytes
                                                                     : info.metadata_bytes;
        cr_assert(info.metadata_bytes > 0 && info.scratch_bytes > 0);
        attn_plan_info again;
        cr_assert_eq(build_limited(&c, need, &again, &allocs, &err), ATTN_OK,
                     "case %d: limit %zu = the plan's own size refused: %s", i, need, err.message);
        cr_assert_eq(again.scratch_bytes, info.scratch_bytes);
        cr_assert_eq(again.metadata_bytes, info.metadata_bytes);
        cr_assert_eq(build_limited(&c, need - 1, &again, &allocs, &err), ATTN_E_TOO_LARGE,
                     "case %d: limit %zu, one byte below scratch %zu / metadata %zu, built", i,
                     need - 1, info.scratch_bytes, info.metadata_bytes);
        cr_assert_eq(allocs, 0, "case %d: the refused build allocated %ld times", i, allocs);
        char want[64], lim[64];
        snprintf(want, sizeof want, "take %zu bytes", need);
        snprintf(lim, sizeof lim, "limit of %zu (max_plan_bytes)", need - 1);
        cr_assert(strstr(err.message, want) && strstr(err.message, lim), "case %d: %s", i,
                  err.message);
        cr_assert(strstr(err.message, info.scratch_bytes >= info.metadata_bytes ? "scratchpad"
                                                                                : "metadata"),
                  "case %d: %s", i, err.message);
    }
}

/* Many small decode requests on one thread: little scratch, much metadata.
 * On the portable table: the scratch is sized from the table's kv_tile
 * and rows, which the CPU's default table chooses, and this test's premise
 * must not depend on the CPU (a table with twice the kv_tile broke it). */
Test(limits, metadata_counts) {
    lim_case c;
    memset(&c, 0, sizeof c);
    c.isa = "ref";
    c.hq = 8, c.hkv = 8, c.d = 16, c.bs = 16, c.threads = 1, c.window = -1;
    c.split = ATTN_SPLIT_FIXED, c.split_count = 8, c.causal = 1, c.n = 8;
    for (int32_t r = 0; r < c.n; r++) c.q_len[r] = 1, c.kv_len[r] = 100;
    attn_error err;
    attn_plan_info info;
    long allocs;
    cr_assert_eq(build_limited(&c, 0, &info, &allocs, &err), ATTN_OK, "%s", err.message);
    cr_assert(info.metadata_bytes > info.scratch_bytes, "scratch %zu, metadata %zu",
              info.scratch_bytes, info.metadata_bytes);
    cr_assert_eq(build_limited(&c, info.scratch_bytes, &info, &allocs, &err), ATTN_E_TOO_LARGE);
    cr_assert(strstr(err.message, "metadata (512 work items, 64 reductions)"), "%s", err.message);
    cr_assert_eq(allocs, 0);
}

/* 8 requests of 32 tokens, 1024 KV heads of dim 1024, split in 64: the
 * partials alone are 8 x 1024 x 64 x 32 x 1024 x 4 bytes = 64 GiB. */
Test(limits, default_is_a_quarter_of_memory) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) TU_SKIP("this system does not say how much memory it has");
    const double quarter = (double)pages * (double)page / 4;
    if (quarter >= 64.0 * (1 << 30))
        TU_SKIP("a quarter of this machine's memory (%.0f GiB) holds the 64 GiB plan",
                quarter / (1 << 30));
    lim_case c;
    memset(&c, 0, sizeof c);
    c.hq = 1024, c.hkv = 1024, c.d = 1024, c.bs = 16, c.threads = 1, c.window = -1;
    c.split = ATTN_SPLIT_FIXED, c.split_count = 64, c.causal = 1, c.n = 8;
    for (int32_t r = 0; r < c.n; r++) c.q_len[r] = 32, c.kv_len[r] = 256;
    attn_error err;
    attn_plan_info info;
    long allocs;
    cr_assert_eq(build_limited(&c, 0, &info, &allocs, &err), ATTN_E_TOO_LARGE);
    cr_assert(strstr(err.message, "scratchpad") && strstr(err.message, "a quarter of physical memory"),
              "%s", err.message);
    cr_assert_eq(allocs, 0, "the refused build allocated %ld times", allocs);
}
