/*
 * test_wide_paths.c — what attnguard's adapter tells the harness of its
 * fp64 path (docs/engine.md, "Rows fp32 cannot carry"), through the ABI
 * alone: paths(NULL) lists every "wide/..." name at zero; a plan names
 * none before it runs and none after a run of ordinary rows; after a run
 * whose q rows are huge over an f32 cache it names the trigger that sent
 * them (huge-q), the features its layer had (sinks, GQA), the table and
 * the output dtype, and every name it gives is one paths(NULL) lists.
 * Then each shipped case written for the fp64 path (corpus/cases/wide-*,
 * huge-v-spike-sinks)
 * still reaches it by the test its comment names: a case that drifted off
 * it would guard nothing.
 *
 * Everything through include/attnguard/engine.h: no engine's header.
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/case/problem.h"
#include "../../include/attnguard/engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define D 8
#define HQ 4
#define HKV 2
#define KEYS 20

/* Whether paths() of plan (NULL: the engine's list) holds `name`. */
static int has_path(const ag_engine *e, void *plan, const char *name) {
    const char *names[128];
    const int n = e->paths(plan, names, 128);
    cr_assert(n >= 0 && n <= 128, "paths returned %d", n);
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

/* The number of "wide/..." names paths(plan) gives, each checked to be
 * one paths(NULL) lists. */
static int wide_names(const ag_engine *e, void *plan) {
    const char *names[32];
    const int n = e->paths(plan, names, 32);
    cr_assert(n > 0 && n <= 32, "paths(plan) returned %d", n);
    int w = 0;
    for (int i = 0; i < n; i++) {
        cr_assert(has_path(e, NULL, names[i]), "'%s' is not in paths(NULL)", names[i]);
        w += !strncmp(names[i], "wide/", 5);
    }
    return w;
}

/* One run of a decode row per KV head group over KEYS keys (K one-hot,
 * V ordinary, sinks on): q's first element per head is q_big, the rest
 * ordinary.  Returns the plan after the run, for paths(), and the group
 * and scratch for the caller to free. */
static void *run_once(const ag_engine *e, void *ctx, float q_big, void **grp_out,
                      void **scratch_out) {
    static const float sinks[HQ] = {0.5f, -1.0f, 0.0f, 2.0f};
    ag_layer L;
    memset(&L, 0, sizeof L);
    L.name = "layers.0";
    L.num_heads = HQ;
    L.window_left = L.window_right = -1;
    L.k_scale = L.v_scale = 1.0f;
    L.sinks = sinks;
    ag_group g;
    memset(&g, 0, sizeof g);
    g.layers = &L;
    g.num_layers = 1;
    g.num_kv_heads = HKV;
    g.head_dim = D;
    g.block_size = 16;
    g.q_dtype = g.kv_dtype = g.out_dtype = AG_F32;
    g.model_num_heads = HQ;
    g.num_threads = 1;
    ag_msg m;
    void *grp = NULL;
    cr_assert_eq(e->create(ctx, &g, &grp, &m), AG_OK, "%s", m.text);
    size_t bytes = 0;
    cr_assert_eq(e->kv_cache_bytes(grp, 2, &bytes, &m), AG_OK, "%s", m.text);
    void *kc = calloc(1, bytes), *vc = calloc(1, bytes);
    static float k[KEYS][HKV][D], v[KEYS][HKV][D];
    int64_t slots[KEYS];
    for (int t = 0; t < KEYS; t++) {
        slots[t] = t;
        for (int h = 0; h < HKV; h++)
            for (int d = 0; d < D; d++) {
                k[t][h][d] = d == 1 + (t + h) % (D - 1) ? 1.0f : 0.0f; /* never q's big one */
                v[t][h][d] = (float)((t * 7 + h * 3 + d) % 11) / 11.0f - 0.5f;
            }
    }
    cr_assert_eq(e->write_kv(grp, kc, vc, 2, k, v, KEYS, slots, &m), AG_OK, "%s", m.text);
    int32_t qsl[2] = {0, 1}, seq[1] = {KEYS}, bt[2] = {0, 1};
    ag_batch b = {1, qsl, seq, NULL, bt, 2, 2};
    ag_plan_opts po = {AG_SPLIT_OFF, 0, 0};
    ag_plan_info info;
    void *plan = NULL;
    cr_assert_eq(e->plan(grp, &b, &po, &plan, &info, &m), AG_OK, "%s", m.text);
    cr_assert_eq(wide_names(e, plan), 0, "a plan that never ran names the fp64 path");
    static float q[HQ * D], out[HQ * D];
    for (int h = 0; h < HQ; h++)
        for (int d = 0; d < D; d++) q[h * D + d] = d == 0 ? q_big : 0.25f * (float)(d - h);
    void *scratch = aligned_alloc(4096, (info.scratch_bytes + 4095) / 4096 * 4096 + 4096);
    ag_run_args a = {q, kc, vc, &b, 1, scratch, info.scratch_bytes, out};
    cr_assert_eq(e->run(plan, 0, &a, &m), AG_OK, "%s", m.text);
    for (int i = 0; i < HQ * D; i++) cr_assert(isfinite(out[i]), "out[%d] = %g", i, out[i]);
    free(kc), free(vc);
    *grp_out = grp;
    *scratch_out = scratch;
    return plan;
}

Test(wide_paths, named_after_runs) {
    ag_msg m;
    const ag_engine *e = ag_engine_find("attnguard", &m);
    cr_assert_not_null(e, "%s", m.text);
    cr_assert_not_null(e->paths, "attnguard's adapter names its paths");
    void *ctx = NULL;
    cr_assert_eq(e->open(NULL, &ctx, &m), AG_OK, "%s", m.text);
    /* every trigger and feature is listed at zero */
    static const char *const listed[] = {
        "wide/trigger=huge-q", "wide/trigger=alibi", "wide/trigger=state", "wide/trigger=acc",
        "wide/rows", "wide/softcap", "wide/alibi", "wide/sinks", "wide/window=one-side",
        "wide/window=both-sides",
        "wide/fp8-scales", "wide/gqa", "wide/split-merge", "wide/out=bf16"};
    for (size_t i = 0; i < sizeof listed / sizeof listed[0]; i++)
        cr_assert(has_path(e, NULL, listed[i]), "paths(NULL) lacks %s", listed[i]);

    /* ordinary rows stay on the tables' path: no wide/ name */
    void *grp, *scratch;
    void *plan = run_once(e, ctx, 1.5f, &grp, &scratch);
    cr_assert_eq(wide_names(e, plan), 0, "ordinary rows named the fp64 path");
    e->plan_destroy(plan);
    e->destroy(grp);
    free(scratch);

    /* q rows of 2^64 over an f32 cache: the huge-q test sends them */
    plan = run_once(e, ctx, 0x1p64f, &grp, &scratch);
    cr_assert_gt(wide_names(e, plan), 0);
    static const char *const want[] = {"wide/trigger=huge-q", "wide/rows", "wide/sinks",
                                       "wide/gqa", "wide/out=f32"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_assert(has_path(e, plan, want[i]), "after a huge-q run, paths(plan) lacks %s", want[i]);
    static const char *const not_there[] = {"wide/trigger=acc", "wide/softcap", "wide/alibi",
                                            "wide/window=one-side", "wide/window=both-sides",
                                            "wide/split-merge"};
    for (size_t i = 0; i < sizeof not_there / sizeof not_there[0]; i++)
        cr_assert(!has_path(e, plan, not_there[i]), "paths(plan) names %s, which the run lacked",
                  not_there[i]);
    /* the table: the plan's first path is "<isa>/<kv dtype>" */
    const char *names[32];
    cr_assert_gt(e->paths(plan, names, 32), 0);
    char isa[48];
    snprintf(isa, sizeof isa, "wide/%.*s", (int)strcspn(names[0], "/"), names[0]);
    cr_assert(has_path(e, plan, isa), "paths(plan) lacks %s", isa);
    e->plan_destroy(plan);
    e->destroy(grp);
    free(scratch);
    e->close(ctx);
}

/* The paths attnguard names after running every layer of the case at
 * `path` once (its own configuration, split as the case says), into
 * names[0..return). */
static int case_paths(const ag_engine *e, void *ctx, const char *path, char names[][40], int cap) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load(path, &c, err, sizeof err), 0, "%s: %s", path, err);
    problem p;
    cr_assert_eq(problem_init(&p, &c, (size_t)1 << 28, err, sizeof err), 0, "%s: %s", path, err);
    cr_assert(p.materialized, "%s: %s", path, p.unmaterialized_reason);
    ag_msg m;
    void *grp = NULL, *plan = NULL;
    cr_assert_eq(e->create(ctx, &p.group, &grp, &m), AG_OK, "%s: %s", path, m.text);
    size_t bytes = 0;
    cr_assert_eq(e->kv_cache_bytes(grp, p.num_blocks, &bytes, &m), AG_OK, "%s", m.text);
    void *kc = calloc(1, bytes), *vc = calloc(1, bytes);
    int64_t *slots = problem_identity_slots(&p);
    cr_assert(kc && vc && slots);
    cr_assert_eq(e->write_kv(grp, kc, vc, p.num_blocks, p.k_rows, p.v_rows,
                             p.num_blocks * p.group.block_size, slots, &m),
                 AG_OK, "%s: %s", path, m.text);
    ag_plan_opts po = {c.split, c.split_count, 0};
    ag_plan_info info;
    cr_assert_eq(e->plan(grp, &p.batch, &po, &plan, &info, &m), AG_OK, "%s: %s", path, m.text);
    void *scratch = aligned_alloc(4096, (info.scratch_bytes + 4095) / 4096 * 4096 + 4096);
    for (int32_t l = 0; l < p.group.num_layers; l++) {
        void *out = malloc(problem_out_elems(&p, l) * 4);
        ag_run_args a = {p.q[l], kc, vc, &p.batch, p.num_tokens, scratch, info.scratch_bytes, out};
        cr_assert_eq(e->run(plan, l, &a, &m), AG_OK, "%s: %s", path, m.text);
        free(out);
    }
    const char *got[32];
    const int n = e->paths(plan, got, 32);
    for (int i = 0; i < n && i < cap; i++) snprintf(names[i], 40, "%s", got[i]);
    e->plan_destroy(plan);
    e->destroy(grp);
    free(scratch), free(slots), free(kc), free(vc);
    problem_free(&p);
    return n < cap ? n : cap;
}

Test(wide_paths, shipped_cases_reach_it) {
    static const struct {
        const char *file, *want[3];
    } k_cases[] = {
        {"wide-q-spike-sinks", {"wide/trigger=huge-q", "wide/sinks", "wide/gqa"}},
        {"wide-q-spike-alibi", {"wide/trigger=huge-q", "wide/alibi", NULL}},
        {"wide-q-spike-softcap", {"wide/trigger=huge-q", "wide/softcap", "wide/scale"}},
        {"wide-q-spike-bf16", {"wide/trigger=huge-q", "wide/rows", NULL}},
        {"wide-huge-scale-alibi", {"wide/trigger=alibi", "wide/alibi", "wide/scale"}},
        {"wide-huge-scale-alibi-f16", {"wide/trigger=alibi", "wide/alibi", NULL}},
        {"huge-v-spike-sinks", {"wide/trigger=acc", "wide/sinks", NULL}},
    };
    ag_msg m;
    const ag_engine *e = ag_engine_find("attnguard", &m);
    cr_assert_not_null(e, "%s", m.text);
    void *ctx = NULL;
    cr_assert_eq(e->open(NULL, &ctx, &m), AG_OK, "%s", m.text);
    for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
        char path[128], names[32][40];
        snprintf(path, sizeof path, "corpus/cases/%s.case", k_cases[i].file);
        const int n = case_paths(e, ctx, path, names, 32);
        for (int w = 0; w < 3 && k_cases[i].want[w]; w++) {
            int found = 0;
            for (int j = 0; j < n; j++) found |= !strcmp(names[j], k_cases[i].want[w]);
            cr_assert(found, "%s: paths after its run lack %s", path, k_cases[i].want[w]);
        }
    }
    e->close(ctx);
}
