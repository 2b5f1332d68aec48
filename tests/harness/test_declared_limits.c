/*
 * test_declared_limits.c — rules of check_case about what an engine
 * declares, each on attnguard's adapter wrapped so the rule is reachable:
 *
 *  - a variant that lacks what a case needs (create answers
 *    AG_UNSUPPORTED) hands the primary run to the next variant, on the
 *    case's own threads: the case is skipped only when no variant takes it
 *    (vLLM's impl=vec cannot take a block size of 16 that its default runs);
 *  - an engine that scales q before Q.K (AG_CAP_SCALE_ON_Q) with a declared
 *    max_abs_logit is not run on inputs whose scale * max|q| could pass it,
 *    soft cap or not (vLLM's VEC kernels turn such a q into infinities);
 *  - an engine whose soft cap holds only for |s| < AG_SOFTCAP_RANGE * c
 *    (AG_CAP_SOFTCAP_RANGE, vLLM's: reports/findings/vllm-004) is not run
 *    on inputs whose bound on |s| could reach it.
 */
#include <criterion/criterion.h>

#include "../../harness/host/engine_host.h"
#include "../../harness/judge/oracles.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

static const ag_engine *g_real;
static ag_engine g_wrap;
static int g_first_threads;   /* num_threads of the first group taken after a refusal */
static int g_refused;

static int two_variants(void *ctx, ag_variant *out, int cap) {
    (void)ctx;
    static const ag_variant v[2] = {{"isa=ref", AG_VARIANT_DEFAULT, NULL},
                                    {"isa=ref tune=intel", AG_VARIANT_KERNELS, NULL}};
    for (int i = 0; i < 2 && i < cap; i++) out[i] = v[i];
    return 2;
}

/* The second variant lacks everything. */
static ag_status picky_create(void *ctx, const ag_group *g, void **grp, ag_msg *msg) {
    if (g->options && strstr(g->options, "tune=intel")) {
        snprintf(msg->text, sizeof msg->text, "tune=intel lacks this case");
        msg->refusal = AG_R_NONE;
        g_refused = 1;
        return AG_UNSUPPORTED;
    }
    const ag_status st = g_real->create(ctx, g, grp, msg);
    /* the run that follows the refused primary one */
    if (st == AG_OK && g_refused && !g_first_threads) g_first_threads = g->num_threads;
    return st;
}

static void wrap(void) {
    ag_msg msg;
    g_real = ag_engine_find("attnguard", &msg);
    cr_assert(g_real, "%s", msg.text);
    g_wrap = *g_real;
    g_wrap.name = "variant-primary";
    g_wrap.variants = two_variants;
    g_wrap.create = picky_create;
    g_refused = 0;
    g_first_threads = 0;
}

Test(variant_primary, an_unsupported_seed_variant_hands_over_the_primary_run) {
    wrap();
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    case_spec c;
    cr_assert_eq(case_load("corpus/cases/d80.case", &c, err, sizeof err), 0, "%s", err);
    c.seed = 1;   /* the seed picks variant 1, the one that lacks the case */
    c.threads = 2;
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert_str_empty(f.skipped, "skipped although the default variant takes it: %s",
                        f.skipped);
    cr_assert_eq(g_first_threads, 2, "the primary run got %d threads, the case has 2",
                 g_first_threads);
}

Test(variant_primary, a_case_no_variant_takes_is_skipped_with_the_first_reason) {
    wrap();
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    case_spec c;
    cr_assert_eq(case_load("corpus/cases/d80.case", &c, err, sizeof err), 0, "%s", err);
    snprintf(c.options, sizeof c.options, "isa=ref tune=intel");   /* the case names it */
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert(strstr(f.skipped, "tune=intel lacks this case"), "skip reason: '%s'", f.skipped);
}

static uint32_t g_extra_flags;
static void scaled_caps(void *ctx, ag_caps *out) {
    g_real->caps(ctx, out);
    out->flags |= g_extra_flags;
    out->max_abs_logit = FLT_MAX;
}

/* One layer, scale 1e38 under a soft cap of 50, q elements of order 10: the
 * scaled logits are capped, but scale * q is far past FLT_MAX. */
static void scaled_case(case_spec *c) {
    char err[256];
    const char *text = "name = scaled-q\nmodel_num_heads = 2\nkv_heads = 2\nhead_dim = 32\n"
                       "block_size = 16\ndtype = f32\ncausal = 1\nthreads = 1\nsplit = off\n"
                       "seed = 3\nblocks = contiguous\nrequests = 1x5\nq_values = uniform 8\n"
                       "layer.0 = heads=2 window=none softcap=50 scale=1e38\n";
    cr_assert_eq(case_parse(text, c, err, sizeof err), 0, "%s", err);
}

static void adopt_scaled(uint32_t flags, case_spec *c) {
    wrap();
    g_wrap.create = g_real->create;
    g_wrap.variants = g_real->variants;
    g_wrap.caps = scaled_caps;
    g_extra_flags = flags;
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    scaled_case(c);
}

Test(variant_primary, scale_on_q_skips_a_scaled_q_past_the_declared_limit) {
    case_spec c;
    adopt_scaled(AG_CAP_SCALE_ON_Q, &c);
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert(strstr(f.skipped, "max_abs_logit"), "not skipped: '%s'", f.skipped);
}

/* the same engine without the declaration is run (and attnguard passes) */
Test(variant_primary, without_scale_on_q_the_capped_case_runs) {
    case_spec c;
    adopt_scaled(0, &c);
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert_str_empty(f.skipped, "skipped without the declaration: %s", f.skipped);
}

/* scale 200, D 32, q and K within 1: |s| could reach 6400 = 128 caps of 50 */
static void capped_case(case_spec *c) {
    char err[256];
    const char *text = "name = capped\nmodel_num_heads = 2\nkv_heads = 2\nhead_dim = 32\n"
                       "block_size = 16\ndtype = f32\ncausal = 1\nthreads = 1\nsplit = off\n"
                       "seed = 3\nblocks = contiguous\nrequests = 1x5\n"
                       "layer.0 = heads=2 window=none softcap=50 scale=200\n";
    cr_assert_eq(case_parse(text, c, err, sizeof err), 0, "%s", err);
}

Test(variant_primary, softcap_range_skips_logits_past_its_range) {
    case_spec c;
    adopt_scaled(AG_CAP_SOFTCAP_RANGE, &c);
    capped_case(&c);
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert(strstr(f.skipped, "softcap range"), "not skipped: '%s'", f.skipped);
}

Test(variant_primary, without_softcap_range_the_capped_case_runs) {
    case_spec c;
    adopt_scaled(0, &c);
    capped_case(&c);
    finding f;
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert_str_empty(f.skipped, "skipped without the declaration: %s", f.skipped);
}
