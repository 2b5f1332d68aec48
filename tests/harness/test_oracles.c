/*
 * test_oracles.c — the guard (harness/judge/guard.c) and the oracles
 * (harness/judge/oracles.c).
 *
 * Covers: a write one byte past a region, a few bytes into the tail gap and
 * into the front redzone is found by the canary scan with the right region,
 * offset and distance; a clean run reports clean, also after re-arming; the
 * rear PROT_NONE page really faults; addresses are described by region;
 * check_case finds nothing on valid small cases, on a mixed group and on a
 * correctly refused case with the normal engine; and every oracle CAN fire
 * when fed crafted inputs: a plan built for fewer heads than a layer
 * (sizing), a perturbed output (differential), two outputs that differ
 * (invariance), a wrong expected status or a false refusal (bad input), an
 * accepted mixed group (mixed heads), and oracle_fire aborts.
 *
 * Writes into redzones go through a function ASan does not instrument, so
 * the canary path is tested under AddressSanitizer too (where ASan would
 * otherwise stop the test at the write itself).
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/case/problem.h"
#include "../../harness/judge/guard.h"
#include "../../harness/judge/oracles.h"
#include "../../harness/judge/sizing_model.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#if defined(__clang__) || defined(__GNUC__)
#define NO_ASAN __attribute__((no_sanitize_address, noinline))
#else
#define NO_ASAN
#endif

/* A store the sanitizer does not see: the canary must catch it alone. */
NO_ASAN static void raw_store(unsigned char *p, unsigned char v) {
    *(volatile unsigned char *)p = v;
}

/* Two regions laid out like a plan with redzone 64: r0 [0,100), gap to
 * 192, r1 [192, 256), tail gap to 320. */
static void two_regions(guard *g) {
    ag_region r[2];
    memset(r, 0, sizeof r);
    snprintf(r[0].name, sizeof r[0].name, "r0.partial");
    r[0].offset = 0;
    r[0].size = 100;
    snprintf(r[1].name, sizeof r[1].name, "r0.max");
    r[1].offset = 192;
    r[1].size = 64;
    cr_assert_eq(guard_init_regions(g, "scratch", r, 2, 320, 64), 0);
    cr_assert_eq((uintptr_t)g->buf % 64, 0);
    cr_assert_eq(g->size, 320);
}

Test(guard, one_byte_past_region_is_found) {
    guard g;
    two_regions(&g);
    guard_fill_regions(&g, 0x11);
    guard_arm(&g);
    raw_store(g.buf + 100, 0);
    guard_violation v;
    cr_assert_eq(guard_check(&g, &v), 1);
    cr_assert_str_eq(v.label, "scratch");
    cr_assert_str_eq(v.region, "r0.partial");
    cr_assert_eq(v.offset, 100);
    cr_assert_eq(v.region_size, 100);
    cr_assert_eq(v.past_end, 0);
    cr_assert_eq(v.bytes, 1);
    cr_assert_eq(v.before_start, 0);
    char line[256];
    guard_format_violation(&v, line, sizeof line);
    cr_assert(strstr(line, "r0.partial") && strstr(line, "offset 100"), "%s", line);
    guard_free(&g);
}

Test(guard, tail_gap_reports_distance) {
    guard g;
    two_regions(&g);
    guard_arm(&g);
    raw_store(g.buf + 260, 0x42);
    raw_store(g.buf + 261, 0x43);
    guard_violation v;
    cr_assert_eq(guard_check(&g, &v), 1);
    cr_assert_str_eq(v.region, "r0.max");
    cr_assert_eq(v.offset, 260);
    cr_assert_eq(v.past_end, 4);
    cr_assert_eq(v.region_size, 64);
    cr_assert_eq(v.bytes, 2);
    guard_free(&g);
}

Test(guard, front_redzone_write_is_found) {
    guard g;
    two_regions(&g);
    guard_arm(&g);
    raw_store(g.buf - 10, 0);
    guard_violation v;
    cr_assert_eq(guard_check(&g, &v), 1);
    cr_assert_eq(v.before_start, 10);
    cr_assert_str_eq(v.region, "");
    guard_free(&g);
}

Test(guard, clean_run_is_clean_and_rearm_restores) {
    guard g;
    two_regions(&g);
    guard_arm(&g);
    /* the kernels may write every byte of every region */
    memset(g.buf, 0x77, 100);
    memset(g.buf + 192, 0x77, 64);
    guard_violation v;
    cr_assert_eq(guard_check(&g, &v), 0);
    raw_store(g.buf + 150, 1);
    cr_assert_eq(guard_check(&g, &v), 1);
    guard_arm(&g);
    cr_assert_eq(guard_check(&g, &v), 0);
    guard_free(&g);
}

Test(guard, plain_buffer_tail_and_readonly) {
    guard g;
    cr_assert_eq(guard_init_buffer(&g, "out", 36), 0);
    cr_assert_eq(g.size, 64);
    cr_assert_eq(g.num_regions, 1);
    cr_assert_eq(g.regions[0].size, 36);
    guard_arm(&g);
    raw_store(g.buf + 36, 9);
    guard_violation v;
    cr_assert_eq(guard_check(&g, &v), 1);
    cr_assert_str_eq(v.region, "out");
    cr_assert_eq(v.past_end, 0);
    guard_arm(&g);
    cr_assert_eq(guard_set_readonly(&g, 1), 0);
    cr_assert_eq(g.readonly, 1);
    cr_assert_eq(guard_set_readonly(&g, 0), 0);
    g.buf[0] = 1;   /* writable again */
    guard_free(&g);
}

Test(guard, describe_addr_names_region) {
    guard g;
    two_regions(&g);
    char d[256];
    cr_assert_eq(guard_describe_addr(g.buf + 130, d, sizeof d), 1);
    cr_assert(strstr(d, "scratch: offset 130, 30 bytes past the end of region r0.partial (size 100)"),
              "%s", d);
    cr_assert_eq(guard_describe_addr(g.buf + 200, d, sizeof d), 1);
    cr_assert(strstr(d, "inside region r0.max"), "%s", d);
    cr_assert_eq(guard_describe_addr(g.buf + g.size, d, sizeof d), 1);
    cr_assert(strstr(d, "PROT_NONE"), "%s", d);
    int local;
    cr_assert_eq(guard_describe_addr(&local, d, sizeof d), 0);
    guard_free(&g);
    cr_assert_eq(guard_describe_addr(g.buf, d, sizeof d), 0);
}

/* The rear page faults.  ASan turns a SEGV into a report and exit(1), so
 * hand SIGSEGV back to the default action first. */
Test(guard, rear_page_faults, .signal = SIGSEGV) {
    guard g;
    cr_assert_eq(guard_init_buffer(&g, "out", 64), 0);
    signal(SIGSEGV, SIG_DFL);
    raw_store(g.buf + 64, 1);
    cr_assert_fail("the write past the buffer did not fault");
}

/* ------------------------------------------------------------ check_case */

static case_spec small_case(void) {
    case_spec c;
    case_default(&c);
    c.layers[0].num_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 32;
    c.block_size = 16;
    c.kv_len[0] = 40;
    return c;
}

/* The defect model's view of an engine with typical limits (the split
 * count's among them) and no option words. */
static const ag_caps caps_typical = {.max_heads = 1024, .max_head_dim = 1024,
                                     .max_block_size = 4096, .max_threads = 256,
                                     .max_seq_len = 1 << 28, .max_splits = 64};
static const validity_engine caps_view = {&caps_typical, NULL, 0};

static void expect_none(const case_spec *c, unsigned what) {
    finding f;
    oracle_id id = check_case(c, what, &f);
    cr_assert_eq(id, ORACLE_NONE, "%s: %s: %s", c->name, oracle_name(id), f.detail);
    cr_assert_eq(f.oracle, ORACLE_NONE);
}

Test(check_case, valid_small_cases_are_clean) {
    case_spec c = small_case();
    expect_none(&c, CHECK_ALL);

    /* decode + chunked prefill, two threads, forced splits, shuffled blocks */
    c = small_case();
    c.num_reqs = 3;
    c.q_len[0] = 1; c.kv_len[0] = 70;
    c.q_len[1] = 5; c.kv_len[1] = 33;
    c.q_len[2] = 1; c.kv_len[2] = 2;
    c.threads = 2;
    c.split = AG_SPLIT_FIXED;
    c.split_count = 4;
    c.blocks = CASE_BLOCKS_SHUFFLED;
    expect_none(&c, CHECK_ALL);

    /* bf16 in, f16 out, window, softcap, sinks, alibi, two layers */
    c = small_case();
    c.num_layers = 2;
    c.layers[1] = c.layers[0];
    c.layers[0].window = 7;
    c.layers[1].softcap = 20.0f;
    c.layers[1].sinks = 1;
    c.layers[0].alibi = 1;
    c.q_dtype = c.kv_dtype = AG_BF16;
    c.out_dtype = AG_F16;
    c.split = AG_SPLIT_ON;
    c.threads = 3;
    expect_none(&c, CHECK_ALL);

    /* encoder (non-causal) with a window, repeated blocks */
    c = small_case();
    c.causal[0] = c.causal[1] = 0;
    c.num_reqs = 2;
    c.q_len[0] = 9; c.kv_len[0] = 9;
    c.q_len[1] = 3; c.kv_len[1] = 20;
    c.layers[0].window = 4;
    c.blocks = CASE_BLOCKS_REPEATED;
    expect_none(&c, CHECK_PLAN | CHECK_RUN);
}

Test(check_case, refusals_by_the_normal_engine_are_clean) {
    /* mixed heads: refused with the dedicated status, nothing planned */
    case_spec c = small_case();
    c.num_layers = 2;
    c.layers[1] = c.layers[0];
    c.layers[1].num_heads = 8;
    c.expect = AG_R_MIXED_HEADS;
    expect_none(&c, CHECK_ALL);
    c.expect = AG_R_NONE;   /* expect is optional: the model still knows */
    expect_none(&c, CHECK_ALL);

    c = small_case();
    c.layers[0].window = 0;
    c.expect = AG_R_WINDOW;
    expect_none(&c, CHECK_ALL);

    c = small_case();
    c.kv_len[0] = 0;
    c.q_len[0] = 1;
    expect_none(&c, CHECK_ALL);

    /* several defects at once: any listed status will do */
    c = small_case();
    c.head_dim = 0;
    c.threads = 0;
    c.num_reqs = 0;
    expect_none(&c, CHECK_ALL);
}

Test(check_case, wrong_expect_is_bad_input) {
    case_spec c = small_case();
    c.layers[0].window = 0;
    c.expect = AG_R_HEADS;   /* the defect is the window */
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN, &f), ORACLE_BAD_INPUT);
    cr_assert(strstr(f.detail, "expects heads") && strstr(f.detail, "window ("), "%s",
              f.detail);

    c = small_case();
    c.expect = AG_R_LENGTH;  /* a valid case expecting a refusal */
    cr_assert_eq(check_case(&c, CHECK_PLAN, &f), ORACLE_BAD_INPUT);
}

/* ------------------------------------------------- the oracles can fire */

Test(oracles, defect_model_lists_statuses) {
    case_spec c = small_case();
    case_defects d;
    validity_defects(&c, &caps_view, &d);
    cr_assert_eq(d.n, 0);
    c.layers[0].num_heads = 5;   /* not a multiple of 2 KV heads */
    c.q_len[0] = 0;
    c.split = AG_SPLIT_FIXED;
    c.split_count = 99;
    validity_defects(&c, &caps_view, &d);
    cr_assert(validity_allows(&d, DEFECT_CREATE, AG_R_HEADS));
    cr_assert(validity_allows(&d, DEFECT_PLAN, AG_R_BATCH));
    cr_assert(validity_allows(&d, DEFECT_PLAN, AG_R_PLAN_OPTION));
    cr_assert(!validity_allows(&d, DEFECT_CREATE, AG_R_BATCH));
    cr_assert(!d.mixed);
}

/* More defects than the list holds: 64 layers whose head counts do not
 * divide the KV heads, and one late layer with a bad soft cap.  An engine
 * that checks each layer's fields before the head counts answers that
 * layer's AG_R_LAYER first; it must be listed (fuzz_plan found the
 * list full of AG_R_HEADS at 48). */
Test(oracles, defect_model_lists_every_kind) {
    case_spec c = small_case();
    c.num_layers = CASE_MAX_LAYERS;
    for (int32_t l = 0; l < c.num_layers; l++) {
        c.layers[l] = c.layers[0];
        c.layers[l].num_heads = 9; /* 2 KV heads */
        c.layers[l].window = 0;    /* two defects a layer: more than the list holds */
    }
    c.layers[CASE_MAX_LAYERS - 3].softcap = -1.0f;
    case_defects d;
    validity_defects(&c, &caps_view, &d);
    cr_assert_geq(d.n, 2);
    cr_assert(validity_allows(&d, DEFECT_CREATE, AG_R_HEADS));
    cr_assert(validity_allows(&d, DEFECT_CREATE, AG_R_WINDOW));
    cr_assert(validity_allows(&d, DEFECT_CREATE, AG_R_LAYER));
    cr_assert(!validity_allows(&d, DEFECT_CREATE, AG_R_BATCH));
}

/* One stage's answer from an engine that names its refusals: `kind` with
 * status `as` (AG_REFUSED for a refusal, AG_INTERNAL for a failure),
 * judged by the oracle for an engine honouring the split hint. */
#define K_OK (-1)        /* the stage succeeded */
#define K_INTERNAL (-2)  /* the engine failed (no refusal kind) */
static oracle_id chk(const case_defects *d, defect_stage stage, int kind, int handed,
                     finding *f) {
    ag_msg m;
    memset(&m, 0, sizeof m);
    ag_status as = AG_OK;
    if (kind != K_OK) {
        m.refusal = kind == K_INTERNAL ? AG_R_NONE : kind;
        snprintf(m.code, sizeof m.code, "ENGINE_CODE");
        snprintf(m.text, sizeof m.text, "x");
        as = kind == K_INTERNAL || kind == AG_R_RESOURCE ? AG_INTERNAL : AG_REFUSED;
    }
    return oracle_check_status(d, stage, as, &m, AG_CAP_SPLIT_KV, handed, f);
}

Test(oracles, status_checks_fire) {
    case_spec c = small_case();
    case_defects d;
    finding f;
    validity_defects(&c, &caps_view, &d);
    /* a refusal of a valid case */
    cr_assert_eq(chk(&d, DEFECT_CREATE, AG_R_WINDOW, 0, &f), ORACLE_BAD_INPUT);
    cr_assert(strstr(f.detail, "refused a valid input"), "%s", f.detail);
    cr_assert_eq(chk(&d, DEFECT_PLAN, K_INTERNAL, 0, &f), ORACLE_BAD_INPUT);
    cr_assert_eq(chk(&d, DEFECT_PLAN, K_OK, 0, &f), ORACLE_NONE);
    cr_assert_eq(chk(&d, DEFECT_PLAN, AG_R_RESOURCE, 0, &f), ORACLE_NONE);

    /* a defective batch accepted */
    c.kv_len[0] = 0;
    validity_defects(&c, &caps_view, &d);
    cr_assert_eq(chk(&d, DEFECT_CREATE, K_OK, 0, &f), ORACLE_NONE);
    cr_assert_eq(chk(&d, DEFECT_PLAN, K_OK, 0, &f), ORACLE_BAD_INPUT);
    cr_assert_eq(chk(&d, DEFECT_PLAN, AG_R_LENGTH, 0, &f), ORACLE_NONE);
    cr_assert_eq(chk(&d, DEFECT_PLAN, AG_R_HEADS, 0, &f), ORACLE_BAD_INPUT);
    /* refused, but the handle was written anyway */
    cr_assert_eq(chk(&d, DEFECT_PLAN, AG_R_LENGTH, 1, &f), ORACLE_BAD_INPUT);
}

/* An engine that does not name its refusals (AG_R_NONE) is judged on
 * refusing, not on which refusal; AG_UNSUPPORTED for a valid input is a
 * skip, never a pass of a defective one. */
Test(oracles, status_checks_without_codes) {
    case_spec c = small_case();
    case_defects d;
    finding f;
    ag_msg m;
    memset(&m, 0, sizeof m);
    snprintf(m.code, sizeof m.code, "GGML_SOMETHING");
    validity_defects(&c, &caps_view, &d);
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_REFUSED, &m, 0, 0, &f),
                 ORACLE_BAD_INPUT);
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_UNSUPPORTED, &m, 0, 0, &f),
                 ORACLE_NONE);
    cr_assert(f.skipped[0], "a valid input the engine cannot express is a skip");
    c.kv_len[0] = 0;
    validity_defects(&c, &caps_view, &d);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_REFUSED, &m, 0, 0, &f), ORACLE_NONE);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_UNSUPPORTED, &m, 0, 0, &f),
                 ORACLE_NONE);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_OK, &m, 0, 0, &f), ORACLE_BAD_INPUT);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_INTERNAL, &m, 0, 0, &f),
                 ORACLE_BAD_INPUT);
}

Test(oracles, mixed_heads_fires_when_accepted) {
    case_spec c = small_case();
    c.num_layers = 2;
    c.layers[1] = c.layers[0];
    c.layers[0].num_heads = 48;
    c.layers[1].num_heads = 64;
    c.num_kv_heads = 8;
    case_defects d;
    finding f;
    validity_defects(&c, &caps_view, &d);
    cr_assert(d.mixed);
    cr_assert_eq(chk(&d, DEFECT_CREATE, K_OK, 0, &f), ORACLE_MIXED_HEADS);
    cr_assert(strstr(f.detail, "48") && strstr(f.detail, "64"), "%s", f.detail);
    cr_assert_eq(chk(&d, DEFECT_CREATE, AG_R_MIXED_HEADS, 0, &f), ORACLE_NONE);
    cr_assert_eq(chk(&d, DEFECT_CREATE, AG_R_WINDOW, 0, &f), ORACLE_MIXED_HEADS);
    cr_assert_eq(chk(&d, DEFECT_CREATE, AG_R_MIXED_HEADS, 1, &f), ORACLE_MIXED_HEADS);
    /* a layer's own defect may be reported before the disagreement */
    c.layers[1].window = 0;
    validity_defects(&c, &caps_view, &d);
    cr_assert_eq(chk(&d, DEFECT_CREATE, AG_R_WINDOW, 0, &f), ORACLE_NONE);
}

/* The seed bug at the adapter level, as docs/design.md section 1 works it
 * out: a plan whose split-KV slot is sized for the model-wide 48 heads
 * (g = 6 per KV head, two pieces, head_dim 128) and a layer run with its
 * own 64 (g = 8).  A fake
 * engine states the plan's typed regions, its schedule facts and, for the
 * second path, extents computed for the layer's own head count. */
typedef struct seedbug {
    ag_region reg[9];
    int32_t red_tokens[1], red_pieces[1];
} seedbug;

static ag_status sb_shape(void *plan, ag_plan_shape *out) {
    seedbug *x = plan;
    out->thread_tokens = 1;
    out->kv_tile = 16;
    out->num_reductions = 1;
    out->red_tokens = x->red_tokens;
    out->red_pieces = x->red_pieces;
    return AG_OK;
}

/* what layer `layer` writes: the design's formula with its own head count */
static ag_status sb_extents(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *m) {
    seedbug *x = plan;
    (void)m;
    ag_plan_shape sh;
    sb_shape(plan, &sh);
    const int32_t g = layer == 0 ? 6 : 8;
    for (size_t i = 0; i < count; i++)
        if (sizing_model_need(&sh, &x->reg[i], g, 128, &need[i]) != 0) need[i] = 0;
    return AG_OK;
}

Test(oracles, sizing_fires_for_plan_with_fewer_heads) {
    seedbug x;
    memset(&x, 0, sizeof x);
    x.red_tokens[0] = 1;
    x.red_pieces[0] = 2;
    static const int32_t kinds[9] = {AG_REGION_Q,     AG_REGION_ACC,     AG_REGION_STATE,
                                     AG_REGION_SCORES, AG_REGION_KV,     AG_REGION_FLAGS,
                                     AG_REGION_PARTIAL, AG_REGION_MAX,   AG_REGION_SUM};
    ag_plan_shape sh;
    sb_shape(&x, &sh);
    size_t off = 0;
    for (int i = 0; i < 9; i++) {
        ag_region *r = &x.reg[i];
        r->kind = kinds[i];
        r->owner = i < 5 ? AG_OWNER_THREAD : AG_OWNER_REDUCTION;
        snprintf(r->name, sizeof r->name, "%s%d.%s", i < 5 ? "t" : "r", 0,
                 ag_region_kind_name((ag_region_kind)r->kind));
        /* the reduction slots sized for g = 6, the threads' for 8 */
        cr_assert_eq(sizing_model_need(&sh, r, i < 5 ? 8 : 6, 128, &r->size), 0);
        r->offset = off;
        off += (r->size + 63) / 64 * 64;
    }
    /* design section 1: the partials of one slot, 6144 bytes for g = 6 */
    cr_assert_eq(x.reg[6].size, 6144);
    ag_plan_info info = {off, 64, x.reg, 9, 0};
    ag_engine fake;
    memset(&fake, 0, sizeof fake);
    fake.name = "seedbug";
    fake.plan_shape = sb_shape;
    engine_host E;
    memset(&E, 0, sizeof E);
    E.e = &fake;

    case_spec c = small_case();
    c.num_kv_heads = 8;
    c.head_dim = 128;
    c.layers[0].num_heads = 48;
    problem p;
    char msg[128];
    finding f;
    for (int path = 0; path < 2; path++) {   /* the design's formula, then extents */
        fake.plan_shape = path == 0 ? sb_shape : NULL;
        fake.extents = path == 1 ? sb_extents : NULL;
        c.num_layers = 1;
        cr_assert_eq(problem_init_descriptions(&p, &c, ORACLE_MAX_BYTES, msg, sizeof msg), 0);
        cr_assert_eq(oracle_check_sizing(&E, &x, &info, &p, &f), ORACLE_NONE, "%s", f.detail);
        problem_free(&p);
        c.num_layers = 2;
        c.layers[1] = c.layers[0];
        c.layers[1].num_heads = 64;
        cr_assert_eq(problem_init_descriptions(&p, &c, ORACLE_MAX_BYTES, msg, sizeof msg), 0);
        cr_assert_eq(oracle_check_sizing(&E, &x, &info, &p, &f), ORACLE_SIZING);
        cr_assert(strstr(f.detail, "layers.1 (64 heads") && strstr(f.detail, "needs 8192") &&
                      strstr(f.detail, "r0.partial"),
                  "%s", f.detail);
        problem_free(&p);
    }
    /* a region table that overlaps is a sizing finding of its own */
    x.reg[1].offset = x.reg[0].offset;
    c.num_layers = 1;
    cr_assert_eq(problem_init_descriptions(&p, &c, ORACLE_MAX_BYTES, msg, sizeof msg), 0);
    cr_assert_eq(oracle_check_sizing(&E, &x, &info, &p, &f), ORACLE_SIZING);
    cr_assert(strstr(f.detail, "overlaps"), "%s", f.detail);
    problem_free(&p);
}

Test(oracles, differential_and_invariance_fire) {
    case_spec c = small_case();
    c.num_reqs = 2;
    c.q_len[1] = 3;
    c.kv_len[1] = 12;
    problem p;
    char msg[128];
    cr_assert_eq(problem_init(&p, &c, ORACLE_MAX_BYTES, msg, sizeof msg), 0, "%s", msg);
    cr_assert(p.materialized);
    size_t n = problem_out_elems(&p, 0);
    oracle_ref ref;
    float *got = malloc(n * sizeof *got), *other = malloc(n * sizeof *other);
    cr_assert(got && other);
    cr_assert_eq(oracle_reference(&p, 0, (ag_precision){AG_F32, AG_F32, AG_F32, 0}, NULL, &ref), 0);
    for (size_t i = 0; i < n; i++) got[i] = (float)ref.val[i];
    finding f;
    cr_assert_eq(oracle_check_differential(&p, 0, got, &ref, NULL, &f), ORACLE_NONE, "%s", f.detail);

    /* token 2 = request 1, row 1; head 3, dim 5 */
    size_t at = (2 * 4 + 3) * 32 + 5;
    got[at] += 1e-3f;
    cr_assert_eq(oracle_check_differential(&p, 0, got, &ref, NULL, &f), ORACLE_DIFFERENTIAL);
    cr_assert(strstr(f.detail, "token 2 (req 1, row 1") && strstr(f.detail, "head 3 dim 5"), "%s",
              f.detail);

    memcpy(other, got, n * sizeof *got);
    cr_assert_eq(oracle_check_agree(&p, 0, got, other, NULL, 1, "rerun", &f), ORACLE_NONE);
    other[7] = nextafterf(other[7], 2.0f);   /* one ulp: within tolerance, not bitwise */
    cr_assert_eq(oracle_check_agree(&p, 0, got, other, &ref, 0, "split on", &f), ORACLE_NONE);
    cr_assert_eq(oracle_check_agree(&p, 0, got, other, NULL, 1, "rerun", &f), ORACLE_INVARIANCE);
    other[9] += 0.01f;
    cr_assert_eq(oracle_check_agree(&p, 0, got, other, &ref, 0, "split on", &f), ORACLE_INVARIANCE);
    cr_assert(strstr(f.detail, "split on"), "%s", f.detail);
    oracle_ref_free(&ref);
    free(got);
    free(other);
    problem_free(&p);
}

Test(oracles, names) {
    cr_assert_str_eq(oracle_name(ORACLE_NONE), "none");
    cr_assert_str_eq(oracle_name(ORACLE_SCRATCH_BOUNDS), "scratch-bounds");
    cr_assert_str_eq(oracle_name(ORACLE_SIZING), "sizing");
    cr_assert_str_eq(oracle_name(ORACLE_MIXED_HEADS), "mixed-heads");
    cr_assert_str_eq(oracle_name(ORACLE_DIFFERENTIAL), "differential");
    cr_assert_str_eq(oracle_name(ORACLE_INVARIANCE), "invariance");
    cr_assert_str_eq(oracle_name(ORACLE_BAD_INPUT), "bad-input");
}

Test(oracles, fire_aborts, .signal = SIGABRT) {
    finding f;
    f.oracle = ORACLE_SIZING;
    snprintf(f.detail, sizeof f.detail, "test");
    oracle_fire(&f);
}

/* A defect binds only the engines it is meant for: a value past a limit
 * binds the engine that declares that limit (and may be refused as the
 * field or as AG_R_LIMIT), a split option an engine that honours the hint.
 * Another engine may accept such an input. */
Test(oracles, defects_bind_by_declaration) {
    case_spec c = small_case();
    case_defects d;
    finding f;
    ag_msg m;
    memset(&m, 0, sizeof m);
    const ag_caps lim = {.max_head_dim = 256};
    const validity_engine limited = {&lim, NULL, 0}, open_ended = {NULL, NULL, 0};
    c.head_dim = 257;
    validity_defects(&c, &limited, &d);
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_OK, &m, 0, 0, &f), ORACLE_BAD_INPUT);
    m.refusal = AG_R_LIMIT;
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_REFUSED, &m, 0, 0, &f), ORACLE_NONE);
    m.refusal = AG_R_HEAD_DIM;
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_REFUSED, &m, 0, 0, &f), ORACLE_NONE);
    m.refusal = AG_R_THREADS;
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_REFUSED, &m, 0, 0, &f),
                 ORACLE_BAD_INPUT);
    m.refusal = AG_R_NONE;
    validity_defects(&c, &open_ended, &d);
    cr_assert_eq(d.n, 0, "no limit declared: head_dim 257 is valid");
    c.head_dim = 0;   /* below any engine's contract */
    validity_defects(&c, &open_ended, &d);
    cr_assert_eq(oracle_check_status(&d, DEFECT_CREATE, AG_OK, &m, 0, 0, &f), ORACLE_BAD_INPUT);

    c = small_case();
    c.split = 77;
    validity_defects(&c, &open_ended, &d);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_OK, &m, AG_CAP_SPLIT_KV, 0, &f),
                 ORACLE_BAD_INPUT);
    cr_assert_eq(oracle_check_status(&d, DEFECT_PLAN, AG_OK, &m, 0, 0, &f), ORACLE_NONE);
}

/* Engine options: a word whose key the engine's variants use but whose
 * value they do not is a defect (refused as options); a key no variant
 * uses belongs to another engine (the case is skipped, not judged). */
Test(oracles, options_by_the_variant_list) {
    const ag_variant v[3] = {{"isa=wide tune=a", AG_VARIANT_DEFAULT, NULL},
                             {"isa=narrow", AG_VARIANT_KERNELS, NULL},
                             {"tune=b", AG_VARIANT_TUNING, NULL}};
    const validity_engine e = {NULL, v, 3};
    case_spec c = small_case();
    case_defects d;
    char why[64];
    snprintf(c.options, sizeof c.options, "isa=narrow tune=a");
    validity_defects(&c, &e, &d);
    cr_assert_eq(d.n, 0);
    cr_assert(!validity_foreign_options(&c, &e, why, sizeof why));
    snprintf(c.options, sizeof c.options, "isa=huge");
    validity_defects(&c, &e, &d);
    cr_assert(d.n == 1 && d.d[0].kind == AG_R_OPTIONS && d.d[0].key == CASE_KEY_OPTIONS);
    snprintf(c.options, sizeof c.options, "cpu=zen4");
    validity_defects(&c, &e, &d);
    cr_assert_eq(d.n, 0, "another engine's word is not a defect of this one");
    cr_assert(validity_foreign_options(&c, &e, why, sizeof why));
    cr_assert(strstr(why, "cpu=zen4"), "%s", why);
}
