/*
 * test_unsupported.c — AG_UNSUPPORTED is a skip from every entry point
 * (include/attnguard/engine.h, "Errors"): an engine that can tell only
 * from a layer's values that it cannot take them (vLLM's adapter, for the
 * scaled queries of finding vllm-007) answers it from run, and check
 * counts the case as skipped with the engine's words, never as a refusal
 * of a valid input.  AG_REFUSED from run stays bad-input.
 */
#include <criterion/criterion.h>

#include "twrap.h"

#include "../../harness/host/engine_host.h"
#include "../../harness/judge/oracles.h"

#include <stdio.h>
#include <string.h>

static ag_engine g_wrap;
static ag_status g_answer;

static ag_status answering_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    (void)plan, (void)layer, (void)a;
    memset(msg, 0, sizeof *msg);
    msg->refusal = g_answer == AG_REFUSED ? AG_R_MISMATCH : AG_R_NONE;
    snprintf(msg->code, sizeof msg->code, "NOT_THESE_VALUES");
    snprintf(msg->text, sizeof msg->text, "these query values are past what the engine takes");
    return g_answer;
}

static oracle_id check_with_run_answer(ag_status answer, finding *f) {
    twrap_start(&g_wrap, "run-answers");
    g_wrap.variants = NULL;
    g_wrap.run = answering_run;
    g_answer = answer;
    case_spec c;
    twrap_adopt(&g_wrap, "corpus/cases/f32q-decode.case", &c);
    return check_case(&c, CHECK_PLAN | CHECK_RUN | CHECK_INVARIANCE, f);
}

Test(unsupported, from_run_is_a_counted_skip, .timeout = 60) {
    finding f;
    const oracle_id r = check_with_run_answer(AG_UNSUPPORTED, &f);
    cr_assert_eq(r, ORACLE_NONE, "expected a skip, got %s: %s", oracle_name(r), f.detail);
    cr_assert(strstr(f.skipped, "past what the engine takes"), "the skip keeps the engine's words: '%s'",
              f.skipped);
}

Test(unsupported, refused_by_run_is_bad_input, .timeout = 60) {
    finding f;
    const oracle_id r = check_with_run_answer(AG_REFUSED, &f);
    cr_assert_eq(r, ORACLE_BAD_INPUT, "expected bad-input, got %s: %s", oracle_name(r), f.detail);
}
