/*
 * test_every_plan_sized.c — check sizes every plan it makes before running
 * it: the metamorphic configurations (split off, a fixed split, other
 * threads, permuted blocks) plan anew, and an engine's extents must hold
 * for those plans too, found by the sizing oracle at plan time.  The
 * engine is attnguard's adapter wrapped so that its extents claim one
 * byte more than region 0 holds, for plans made with a fixed split only:
 * the plan pass (the case's own split, and split on) sees nothing wrong,
 * and the kernels write no further than the real need, so only a sizing
 * check of the fixed-split run's own plan can find it.
 */
#include <criterion/criterion.h>

#include "twrap.h"

#include "../../harness/host/engine_host.h"
#include "../../harness/judge/oracles.h"

#include <string.h>

static const ag_engine *g_real;
static ag_engine g_wrap;
static void *g_fixed[64];    /* live plans made with AG_SPLIT_FIXED */
static size_t g_region0;     /* region 0's size in the last such plan */

static ag_status fixed_plan(void *grp, const ag_batch *b, const ag_plan_opts *o, void **plan,
                            ag_plan_info *info, ag_msg *msg) {
    const ag_status st = g_real->plan(grp, b, o, plan, info, msg);
    if (st == AG_OK && o && o->split == AG_SPLIT_FIXED && info->num_regions)
        for (int i = 0; i < 64; i++)
            if (!g_fixed[i]) {
                g_fixed[i] = *plan;
                g_region0 = info->regions[0].size;
                break;
            }
    return st;
}

static void fixed_plan_destroy(void *plan) {
    for (int i = 0; i < 64; i++)
        if (g_fixed[i] == plan) g_fixed[i] = NULL;
    g_real->plan_destroy(plan);
}

static ag_status claim_more(void *plan, int32_t layer, size_t *need, size_t n, ag_msg *msg) {
    const ag_status st = g_real->extents(plan, layer, need, n, msg);
    for (int i = 0; st == AG_OK && n && i < 64; i++)
        if (g_fixed[i] == plan) need[0] = g_region0 + 1;
    return st;
}

Test(every_plan_sized, a_fixed_split_plan_short_of_its_extents_is_sizing, .timeout = 60) {
    g_real = twrap_start(&g_wrap, "fixed-split-short");
    cr_assert(g_real->extents, "attnguard's adapter states extents");
    g_wrap.variants = NULL;
    g_wrap.plan = fixed_plan;
    g_wrap.plan_destroy = fixed_plan_destroy;
    g_wrap.extents = claim_more;
    case_spec c;
    twrap_adopt(&g_wrap, "corpus/cases/f32q-decode-split.case", &c);
    cr_assert_neq((int)c.split, AG_SPLIT_FIXED, "the case's own split must not be the fixed one");
    finding f;
    const oracle_id r = check_case(&c, CHECK_PLAN | CHECK_RUN | CHECK_INVARIANCE, &f);
    cr_assert_eq(r, ORACLE_SIZING, "expected sizing, got %s: %s", oracle_name(r), f.detail);
    cr_assert(strstr(f.detail, "split fixed 3: "), "the finding names the run's configuration: %s",
              f.detail);
}

/* An engine that lacks split schedules for some groups answers
 * AG_UNSUPPORTED to split on (vLLM's adapter does, for the inputs of its
 * written-up finding vllm-001): that is a capability it lacks, not a
 * refusal of a valid input, so check's extra sizing pass with split on
 * leaves it and the case still runs.  A refusal (AG_REFUSED) there stays a
 * bad-input finding. */
static ag_status g_split_on_answer;

static ag_status no_split_on(void *grp, const ag_batch *b, const ag_plan_opts *o, void **plan,
                             ag_plan_info *info, ag_msg *msg) {
    if (o && o->split == AG_SPLIT_ON) {
        *plan = NULL;
        memset(msg, 0, sizeof *msg);
        msg->refusal = g_split_on_answer == AG_REFUSED ? AG_R_PLAN_OPTION : AG_R_NONE;
        snprintf(msg->code, sizeof msg->code, "NO_SPLIT");
        snprintf(msg->text, sizeof msg->text, "no split schedules here");
        return g_split_on_answer;
    }
    return g_real->plan(grp, b, o, plan, info, msg);
}

static oracle_id check_with_split_on_answer(ag_status answer, finding *f) {
    g_real = twrap_start(&g_wrap, "no-split-on");
    g_wrap.variants = NULL;
    g_wrap.plan = no_split_on;
    g_split_on_answer = answer;
    case_spec c;
    twrap_adopt(&g_wrap, "corpus/cases/f32q-decode.case", &c);
    c.split = AG_SPLIT_OFF;
    return check_case(&c, CHECK_PLAN, f);
}

Test(every_plan_sized, split_on_unsupported_is_not_bad_input, .timeout = 60) {
    finding f;
    const oracle_id r = check_with_split_on_answer(AG_UNSUPPORTED, &f);
    cr_assert_eq(r, ORACLE_NONE, "expected no finding, got %s: %s", oracle_name(r), f.detail);
}

Test(every_plan_sized, split_on_refused_is_bad_input, .timeout = 60) {
    finding f;
    const oracle_id r = check_with_split_on_answer(AG_REFUSED, &f);
    cr_assert_eq(r, ORACLE_BAD_INPUT, "expected bad-input, got %s: %s", oracle_name(r), f.detail);
}
