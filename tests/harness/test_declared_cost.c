/*
 * test_declared_cost.c — an engine's own cost of a run (ag_plan_info.
 * run_macs, ABI 4): the watchdog allows for it, so a run that takes as
 * long as the engine said is no hang, while the same run without the
 * declaration is one; and under a fuzz budget (check_set_run_budget) a
 * plan that declares more is not run at all.  The engine is attnguard's
 * adapter wrapped so that its runs sleep and its plans declare a cost.
 */
#include <criterion/criterion.h>

#include "../../harness/host/engine_host.h"
#include "../../harness/judge/oracles.h"

#include <signal.h>
#include <string.h>
#include <time.h>

static const ag_engine *g_real;
static ag_engine g_wrap;
static double g_declare;   /* run_macs each plan declares */
static int g_runs;         /* runs that reached the wrapped engine */

static ag_status slow_plan(void *grp, const ag_batch *b, const ag_plan_opts *o, void **plan,
                           ag_plan_info *info, ag_msg *msg) {
    const ag_status st = g_real->plan(grp, b, o, plan, info, msg);
    if (st == AG_OK) info->run_macs = g_declare;
    return st;
}

/* 2.5 s per run: past the 2 s the watchdog gives a small case's run. */
static ag_status slow_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    g_runs++;
    const struct timespec ts = {2, 500000000L};
    nanosleep(&ts, NULL);
    return g_real->run(plan, layer, a, msg);
}

static void setup(case_spec *c, double declare) {
    ag_msg msg;
    g_real = ag_engine_find("attnguard", &msg);
    cr_assert(g_real, "%s", msg.text);
    g_wrap = *g_real;
    g_wrap.name = "declared-cost";
    g_wrap.variants = NULL;   /* one path: the case runs once per configuration */
    g_wrap.plan = slow_plan;
    g_wrap.run = slow_run;
    g_declare = declare;
    g_runs = 0;
    char err[256];
    cr_assert_eq(engine_host_adopt(&g_wrap, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(case_load("corpus/cases/f32q-decode.case", c, err, sizeof err), 0, "%s", err);
    c->num_layers = 1;   /* one slow run */
}

/* Without the declaration the slow run is past its bound: the watchdog
 * names the hang and aborts (which is how it reports, from its thread). */
Test(declared_cost, an_undeclared_slow_run_is_a_hang, .signal = SIGABRT, .timeout = 60) {
    case_spec c;
    setup(&c, 0);
    finding f;
    check_case(&c, CHECK_PLAN | CHECK_RUN, &f);
}

/* 2 s + 5 ns per declared multiply-add: 1e9 of them allow 7 s. */
Test(declared_cost, a_declared_cost_raises_the_bound, .timeout = 60) {
    case_spec c;
    setup(&c, 1e9);
    finding f;
    const oracle_id r = check_case(&c, CHECK_PLAN | CHECK_RUN, &f);
    cr_assert_eq(r, ORACLE_NONE, "%s", f.detail);
    cr_assert_gt(g_runs, 0, "the slow run never ran");
}

Test(declared_cost, a_budget_runs_no_plan_beyond_it, .timeout = 60) {
    case_spec c;
    setup(&c, 1e9);
    check_set_run_budget(1u << 20);
    finding f;
    check_report rep;
    const oracle_id r = check_case_report(&c, CHECK_PLAN | CHECK_RUN, &f, &rep);
    check_set_run_budget(0);
    cr_assert_eq(r, ORACLE_NONE, "%s", f.detail);
    cr_assert_eq(g_runs, 0, "%d runs of a plan over the budget", g_runs);
    cr_assert_gt(rep.over_budget, 0, "the skipped configuration was not counted");
}
