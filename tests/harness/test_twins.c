/*
 * test_twins.c — the emulation oracle (ag_variant.twin): a variant that
 * declares a twin must give the twin's bytes on every input, and any
 * difference is a finding of its own.  The engine is attnguard's adapter
 * wrapped so that its portable table appears twice, "tune=amd" and
 * "tune=intel" (the portable kernels do not read the profile, so the two
 * agree on any CPU), the second declared the first's twin; the wrapper can
 * flip one bit of the second's output, which no tolerance would notice.
 */
#include <criterion/criterion.h>

#include "twrap.h"

#include "../../harness/host/engine_host.h"
#include "../../harness/judge/oracles.h"

#include <stdio.h>
#include <string.h>

static const ag_engine *g_real;
static ag_engine g_wrap;
static int g_flip; /* 1: the twin-declaring variant's outputs get one bit flipped */

/* Which groups and plans run the variant that declares a twin. */
#define SEEN 64
static struct {
    void *ptr;
    int twinned;
} g_seen[SEEN];
static int g_next;

static void remember(void *ptr, int twinned) {
    g_seen[g_next % SEEN].ptr = ptr;
    g_seen[g_next % SEEN].twinned = twinned;
    g_next++;
}
static int twinned(const void *ptr) {
    for (int i = g_next - 1; i >= 0 && i >= g_next - SEEN; i--)
        if (g_seen[i % SEEN].ptr == ptr) return g_seen[i % SEEN].twinned;
    return 0;
}

static int wrap_variants(void *ctx, ag_variant *out, int cap) {
    (void)ctx;
    static const ag_variant v[2] = {{"isa=ref tune=amd", AG_VARIANT_DEFAULT, NULL},
                                    {"isa=ref tune=intel", AG_VARIANT_KERNELS, "isa=ref tune=amd"}};
    for (int i = 0; i < 2 && i < cap; i++) out[i] = v[i];
    return 2;
}
static ag_status wrap_create(void *ctx, const ag_group *g, void **grp, ag_msg *msg) {
    const ag_status st = g_real->create(ctx, g, grp, msg);
    if (st == AG_OK) remember(*grp, g->options && strstr(g->options, "tune=intel") != NULL);
    return st;
}
static ag_status wrap_plan(void *grp, const ag_batch *b, const ag_plan_opts *o, void **plan,
                           ag_plan_info *info, ag_msg *msg) {
    const ag_status st = g_real->plan(grp, b, o, plan, info, msg);
    if (st == AG_OK) remember(*plan, twinned(grp));
    return st;
}
static ag_status wrap_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const ag_status st = g_real->run(plan, layer, a, msg);
    if (st == AG_OK && g_flip && twinned(plan)) ((unsigned char *)a->out)[0] ^= 1;
    return st;
}

/* The wrapped engine as the process's engine, and one shipped case. */
static void setup(case_spec *c) {
    g_real = twrap_start(&g_wrap, "twins");
    g_wrap.variants = wrap_variants;
    g_wrap.create = wrap_create;
    g_wrap.plan = wrap_plan;
    g_wrap.run = wrap_run;
    twrap_adopt(&g_wrap, "corpus/cases/d80.case", c);
}

Test(twins, faithful_twin_passes) {
    case_spec c;
    setup(&c);
    finding f;
    g_flip = 0;
    cr_assert_eq(check_case(&c, CHECK_ALL, &f), ORACLE_NONE, "%s", f.detail);
}

Test(twins, one_flipped_bit_is_an_emulation_finding) {
    case_spec c;
    setup(&c);
    finding f;
    g_flip = 1;
    /* every variant: the pair is compared whichever ran first */
    cr_assert_eq(check_case(&c, CHECK_ALL, &f), ORACLE_EMULATION, "%s: %s",
                 oracle_name(f.oracle), f.detail);
    cr_assert(strstr(f.detail, "emulated variant isa=ref tune=intel against its twin isa=ref "
                               "tune=amd") && strstr(f.detail, "differ bitwise"),
              "%s", f.detail);
    cr_assert_str_eq(oracle_name(ORACLE_EMULATION), "emulation");
    /* without the metamorphic tier the pair is not run: nothing else sees it */
    cr_assert_eq(check_case(&c, CHECK_PLAN | CHECK_RUN, &f), ORACLE_NONE, "%s", f.detail);
}
