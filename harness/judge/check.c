/*
 * check.c — check_case: one case through the harness's engine and every
 * applicable oracle.  The defect model and the engine's answers to create
 * and plan (bad input, mixed heads), the plan's region table and each
 * layer's needs (sizing), then guarded runs of every layer compared with
 * the fp64 reference (scratch bounds, differential), with every code path
 * the engine offers (its variants) as the primary path, and for some inputs
 * the metamorphic runs (split off/on/fixed, another thread count, permuted
 * physical blocks, a bitwise rerun with other junk in the scratch).
 *
 * Memory: every buffer the engine reads or writes is guarded (guard.c) and
 * placed as the case says (its last byte, or its first, against an
 * inaccessible page): q, the engine's K/V caches, the batch arrays, slopes
 * and sinks (all read-only while the engine runs), the output and the
 * scratch (exactly the planned size, redzones between declared regions).
 *
 * Cost: every input of the fuzz targets comes through here.  Nothing is
 * kept across calls (a stale buffer could hide a bug) but nothing is done
 * twice either: one problem, one reference per layer and error model, one
 * set of guarded inputs, one output guard for every run.
 */
#include "guard.h"
#include "guard_alloc.h"
#include "oracles.h"
#include "schedule.h"
#include "ref.h"
#include "../case/rng.h"
#include "../host/session.h"
#include "sizing_model.h"

#include <math.h>
#include <stdarg.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Distinct rounding models one input's runs may declare (fp32, and what
 * the variants round to); a run beyond them reuses the fp32 model's
 * points, which is stricter, never looser. */
#define CHECK_MODELS 4


static oracle_id skip(finding *f, const char *why) {
    oracle_clean(f);
    snprintf(f->skipped, sizeof f->skipped, "%.190s", why);
    return ORACLE_NONE;
}

/* Keeps the first reason a run did not happen (finding.not_run), and the
 * case key it comes from (CASE_KEY_COUNT: none in particular). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void not_run_at(finding *f, case_key key, const char *fmt, ...) {
    if (f->not_run[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->not_run, sizeof f->not_run, fmt, ap);
    va_end(ap);
    f->not_run_key = key;
}
#define not_run(f, ...) not_run_at((f), CASE_KEY_COUNT, __VA_ARGS__)

/* ------------------------------------------------------------ inputs */

/* Guarded, read-only copies of what the engine reads (K/V excepted: each
 * run writes them through its own group, see run_config). */
typedef struct run_inputs {
    guard q[CASE_MAX_LAYERS];
    guard slopes[CASE_MAX_LAYERS], sinks[CASE_MAX_LAYERS];
    guard qsl, seq, causal, bt;
    ag_layer layers[CASE_MAX_LAYERS];   /* pointing at the guarded slopes and sinks */
    ag_batch batch;
    int64_t *slots;                     /* problem row i -> the engine's slot */
    guard k, v;                         /* the engine's caches, written by the first run's
                                           group (the ABI: the layout depends only on the
                                           KV spec, never on options or threads) */
    int caches;                         /* 1 once k and v hold the rows */
} run_inputs;

static void inputs_free(run_inputs *in) {
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        guard_free(&in->q[l]);
        guard_free(&in->slopes[l]);
        guard_free(&in->sinks[l]);
    }
    guard_free(&in->qsl);
    guard_free(&in->seq);
    guard_free(&in->causal);
    guard_free(&in->bt);
    guard_free(&in->k);
    guard_free(&in->v);
    free(in->slots);
    memset(in, 0, sizeof *in);
}

static int copy_ro(guard *g, const char *label, const void *src, size_t bytes, int head) {
    if (guard_init_placed(g, label, bytes, head) != 0) return -1;
    g->oracle = oracle_name(ORACLE_INPUT_BOUNDS);
    if (bytes) memcpy(g->buf, src, bytes);
    guard_arm(g);
    return guard_set_readonly(g, 1);
}

/* The problem's inputs in guarded memory; with permute, the cache blocks
 * move to permuted physical ids (slot mapping and block table alike). */
static int inputs_init(run_inputs *in, const problem *p, int permute) {
    const case_spec *c = &p->c;
    const int head = c->place == CASE_PLACE_HEAD;
    memset(in, 0, sizeof *in);
    const size_t nr = (size_t)c->num_reqs, cells = nr * (size_t)p->bt_stride;
    const int32_t nb = p->num_blocks, bs = c->block_size;
    int32_t *perm = malloc((size_t)nb * sizeof *perm);
    int32_t *bt = malloc(cells * sizeof *bt);
    in->slots = malloc((size_t)nb * (size_t)bs * sizeof *in->slots);
    if (!perm || !bt || !in->slots) goto fail_tmp;
    for (int32_t i = 0; i < nb; i++) perm[i] = i;
    if (permute) {
        uint64_t s = c->seed ^ 0x7065726d75746521ull;
        for (int32_t i = nb - 1; i > 0; i--) {
            int32_t j = (int32_t)(rng_next(&s) % (uint64_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        if (nb > 1 && perm[0] == 0) {   /* make sure block 0 moves at least */
            perm[0] = perm[1];
            perm[1] = 0;
        }
    }
    for (size_t i = 0; i < cells; i++) bt[i] = perm[p->block_table[i]];
    for (int64_t i = 0; i < (int64_t)nb * bs; i++)
        in->slots[i] = (int64_t)perm[i / bs] * bs + i % bs;
    for (int32_t l = 0; l < c->num_layers; l++) {
        const size_t qb = problem_out_elems(p, l) * ag_dtype_size(c->q_dtype);
        if (copy_ro(&in->q[l], "q", p->q[l], qb, head)) goto fail_tmp;
        in->layers[l] = p->layers[l];
        const size_t hb = (size_t)p->layers[l].num_heads * sizeof(float);
        if (p->layers[l].alibi_slopes) {
            if (copy_ro(&in->slopes[l], "alibi_slopes", p->layers[l].alibi_slopes, hb, head))
                goto fail_tmp;
            in->layers[l].alibi_slopes = (const float *)in->slopes[l].buf;
        }
        if (p->layers[l].sinks) {
            if (copy_ro(&in->sinks[l], "sinks", p->layers[l].sinks, hb, head)) goto fail_tmp;
            in->layers[l].sinks = (const float *)in->sinks[l].buf;
        }
    }
    if (copy_ro(&in->qsl, "query_start_loc", p->qsl, (nr + 1) * sizeof(int32_t), head) ||
        copy_ro(&in->seq, "seq_lens", p->seq_lens, nr * sizeof(int32_t), head) ||
        copy_ro(&in->causal, "causal", p->causal, nr, head) ||
        copy_ro(&in->bt, "block_table", bt, cells * sizeof(int32_t), head))
        goto fail_tmp;
    in->batch = p->batch;
    in->batch.query_start_loc = (const int32_t *)in->qsl.buf;
    in->batch.seq_lens = (const int32_t *)in->seq.buf;
    in->batch.causal = in->causal.buf;
    in->batch.block_table = (const int32_t *)in->bt.buf;
    free(perm);
    free(bt);
    return 0;
fail_tmp:
    free(perm);
    free(bt);
    inputs_free(in);
    return -1;
}

/* ---------------------------------------------------------------- runs */

enum cfg_role { ROLE_PRIMARY, ROLE_VARIANT, ROLE_BITWISE };

typedef struct run_cfg {
    int32_t threads;
    int variant;            /* the engine variant it runs (-1: the case's own options) */
    ag_plan_opts opts;
    int permuted;
    enum cfg_role role;
    unsigned char junk;     /* fill of every scratch region before each run */
    const char *options;    /* the group's engine options */
    const char *what;       /* for messages */
    int twin;               /* TWIN_KEEP: keep the outputs (a native run whose emulation
                               follows); TWIN_MATCH: they must equal the kept ones bit for
                               bit (ag_variant.twin); 0: neither */
} run_cfg;
enum { TWIN_KEEP = 1, TWIN_MATCH = 2 };

typedef struct run_ctx {
    const problem *p;
    const engine_host *E;
    run_inputs in;          /* the problem's inputs */
    run_inputs perm;        /* the same logical KV in permuted physical blocks */
    guard out;              /* the output guard, sized for the layer that runs (out_for) */
    int32_t out_layer;      /* the layer it is sized for (-1: none yet) */
    guard_allocator alloc;  /* the engine's internal buffers, when it takes them from us */
    size_t out_bytes[CASE_MAX_LAYERS];   /* each layer's output: its own head count */
    /* per layer, the reference under each rounding model a run declared */
    oracle_ref ref[CASE_MAX_LAYERS][CHECK_MODELS];
    unsigned char *base[CASE_MAX_LAYERS];   /* outputs of the first primary run */
    unsigned char *twin[CASE_MAX_LAYERS];   /* outputs of the last TWIN_KEEP run */
    int have_base;
    const char *base_options;               /* the options that run used */
    check_report *rep;                      /* may be NULL */
    sched_perturb perturb;                  /* with CHECK_PERTURB: the runs' delays */
    int perturbed;
    double bound_s;                         /* the watchdog's bound for one run */
} run_ctx;

static oracle_id check_guard(guard *g, const char *what, int32_t l, finding *f) {
    guard_violation v;
    if (!guard_check(g, &v)) return oracle_clean(f);
    char d[400];
    guard_format_violation(&v, d, sizeof d);
    if (l < 0) return oracle_found(f, ORACLE_SCRATCH_BOUNDS, "%s; write_kv, %s", d, what);
    return oracle_found(f, ORACLE_SCRATCH_BOUNDS, "%s; layers.%d, %s", d, (int)l, what);
}

/* The engine's K and V caches for group `grp`, written from the problem's
 * rows through write_kv and then made read-only.  1: the engine refused
 * (*res says why, or nothing when it ran out of memory), -1 no memory. */
static int caches_init(run_ctx *x, void *grp, run_inputs *in, const char *what, finding *f,
                       oracle_id *res) {
    guard *k = &in->k, *v = &in->v;
    if (in->caches) return 0;
    const problem *p = x->p;
    const ag_engine *e = x->E->e;
    const int head = p->c.place == CASE_PLACE_HEAD;
    ag_msg msg;
    size_t bytes = 0;
    ag_status st = e->kv_cache_bytes(grp, p->num_blocks, &bytes, &msg);
    if (st != AG_OK) {
        *res = oracle_found(f, ORACLE_BAD_INPUT, "%s: kv_cache_bytes refused %d blocks of a valid case: "
                     "%s %s: %s", what, (int)p->num_blocks, ag_status_name(st), msg.code,
                     msg.text);
        return 1;
    }
    if (guard_init_placed(k, "k_cache", bytes, head) || guard_init_placed(v, "v_cache", bytes, head))
        return -1;
    k->oracle = v->oracle = oracle_name(ORACLE_INPUT_BOUNDS);
    guard_arm(k);
    guard_arm(v);
    st = session_write_rows(e, grp, k->buf, v->buf, p, in->slots, &msg);
    if (st != AG_OK) {
        *res = oracle_found(f, ORACLE_BAD_INPUT, "%s: write_kv refused the rows of a valid case: %s %s: "
                     "%s", what, ag_status_name(st), msg.code, msg.text);
        return 1;
    }
    if ((*res = check_guard(k, what, -1, f)) || (*res = check_guard(v, what, -1, f))) return 1;
    if (guard_set_readonly(k, 1) || guard_set_readonly(v, 1)) return -1;
    in->caches = 1;
    return 0;
}

/* An engine's internal buffers after running layer l (those it took from
 * the harness's allocator): no canary broken (scratch-bounds), and when it
 * states what the run needs (internal_needs), a request at least that large
 * for each (sizing). */
static oracle_id check_internal(run_ctx *x, void *plan, int32_t l, ag_status st, const char *what,
                                finding *f) {
    char d[600];
    if (guard_alloc_check(&x->alloc, d, sizeof d))
        return oracle_found(f, ORACLE_SCRATCH_BOUNDS, "%s; layers.%d, %s", d, (int)l, what);
    const ag_engine *e = x->E->e;
    if (!e->internal_needs || st != AG_OK) return oracle_clean(f);
    size_t n = 0, *needs = NULL;
    ag_msg m;
    ag_status ns = e->internal_needs(plan, l, NULL, 0, &n, &m);   /* how many */
    if (ns == AG_OK && n && !(needs = malloc(n * sizeof *needs))) return oracle_clean(f);
    if (ns == AG_OK && n) ns = e->internal_needs(plan, l, needs, n, &n, &m);
    oracle_id res = oracle_clean(f);
    if (ns == AG_UNSUPPORTED) {   /* it cannot say here: nothing to judge */
    } else if (ns != AG_OK)
        res = oracle_found(f, ORACLE_SIZING, "%s: the engine could not state what layers.%d "
                           "needs internally: %s: %s", what, (int)l, m.code, m.text);
    else if (guard_alloc_judge(&x->alloc, needs, n, d, sizeof d) == 1)
        res = oracle_found(f, ORACLE_SIZING, "%s: layers.%d: %s", what, (int)l, d);
    free(needs);
    return res;
}

/* How far into region i the kernels wrote: one past the last byte that no
 * longer holds the junk fill (0: nothing written; a kernel that happened to
 * write the fill byte itself makes this an underestimate, never an over). */
static size_t written_extent(const guard *g, size_t i, unsigned char junk) {
    const unsigned char *b = g->buf + g->regions[i].offset;
    size_t n = g->regions[i].size;
    while (n && b[n - 1] == junk) n--;
    return n;
}

/* The kernels' real footprint in every region after running layer l,
 * against what the engine's extents() claims the layer needs and what the
 * design's formulas give (sizing_model.c): a kernel that writes past either
 * claim means the claim is wrong, and with it every plan-only sizing check
 * that trusts it. */
static oracle_id check_written(run_ctx *x, void *plan, const guard *sg, int32_t l,
                               unsigned char junk, const char *what, finding *f) {
    const engine_host *E = x->E;
    const problem *p = x->p;
    const size_t n = sg->num_regions;
    size_t *ext = NULL;
    if (E->e->extents && n) {
        ext = malloc(n * sizeof *ext);
        ag_msg m;
        if (ext && E->e->extents(plan, l, ext, n, &m) != AG_OK) {
            free(ext);
            ext = NULL;
        }
    }
    ag_plan_shape sh;
    const int have_shape = E->e->plan_shape && E->e->plan_shape(plan, &sh) == AG_OK;
    const int32_t hkv = p->group.num_kv_heads, g = hkv > 0 ? p->layers[l].num_heads / hkv : 0;
    oracle_id res = oracle_clean(f);
    for (size_t i = 0; i < n && !res; i++) {
        const size_t w = written_extent(sg, i, junk);
        size_t need;
        if (ext && w > ext[i])
            res = oracle_found(f, ORACLE_SIZING, "%s: layers.%d wrote %zu bytes into region %s, but the "
                        "engine's extents say it needs %zu: its plan-only sizing check cannot be "
                        "trusted", what, (int)l, w, sg->regions[i].name, ext[i]);
        else if (have_shape && sizing_model_need(&sh, &sg->regions[i], g, p->group.head_dim,
                                                 &need) == 0 && w > need)
            res = oracle_found(f, ORACLE_SIZING, "%s: layers.%d wrote %zu bytes into region %s, more "
                        "than the design's formula gives (%zu)", what, (int)l, w,
                        sg->regions[i].name, need);
    }
    free(ext);
    return res;
}

static int same_prec(const ag_precision *a, const ag_precision *b) {
    return a->q_dot == b->q_dot && a->p_dot == b->p_dot && a->acc == b->acc;
}

/* The reference of layer l under the rounding model `prec` (computed on
 * first use, then kept for the input's other runs).  0 with *out set, or
 * -1 (no memory, or the reference refused: *res says which). */
static int ref_for(run_ctx *x, int32_t l, ag_precision prec, const oracle_ref **out, finding *f,
                   oracle_id *res) {
    oracle_ref *slot = x->ref[l];
    int i = 0;
    for (; i < CHECK_MODELS && slot[i].val; i++)
        if (same_prec(&slot[i].prec, &prec)) {
            *out = &slot[i];
            return 0;
        }
    if (i == CHECK_MODELS) {
        *out = &slot[0];
        return 0;
    }
    const int rr = oracle_reference(x->p, l, prec, &x->E->caps, &slot[i]);
    if (rr == -1)
        *res = oracle_found(f, ORACLE_BAD_INPUT, "the reference refused layers.%d of a case the defect "
                     "model calls valid (harness bug)", (int)l);
    if (rr) return -1;
    *out = &slot[i];
    return 0;
}

/* The output guard sized exactly for layer l's output: layers of a group
 * an engine plans with each layer's own head count (AG_CAP_MIXED_HEADS)
 * write outputs of different sizes.  0, or -1 without memory. */
static int out_for(run_ctx *x, int32_t l) {
    if (x->out_layer >= 0 && x->out_bytes[x->out_layer] == x->out_bytes[l]) {
        x->out_layer = l;
        return 0;
    }
    if (x->out_layer >= 0) guard_free(&x->out);
    x->out_layer = -1;
    if (guard_init_placed(&x->out, "out", x->out_bytes[l], x->p->c.place == CASE_PLACE_HEAD) != 0)
        return -1;
    x->out.oracle = oracle_name(ORACLE_SCRATCH_BOUNDS);
    x->out_layer = l;
    return 0;
}

/* The fuzz targets' budget for one run (check_set_run_budget): 0, none. */
static uint64_t g_run_budget;

/* Most threads per online core a spinning engine runs with under a budget:
 * beyond it each of its barriers waits for every thread to be scheduled,
 * which is all the run then measures (ggml at 38 threads on 2 cores timed
 * out the fuzzer's 25 s on one decode token over 64 layers). */
#define SPIN_MAX_THREADS_PER_CORE 4

void check_set_run_budget(uint64_t macs) { g_run_budget = macs; }

/* `attnguard check`'s compute budget (check_set_work_limit): 0, none. */
static uint64_t g_work_limit;

void check_set_work_limit(uint64_t macs) { g_work_limit = macs; }

/* Whether a plan is past the budget: its declared multiply-adds, or its
 * threads for an engine that spins at its barriers. */
static int run_over_budget(double run_macs, int32_t threads, int spin) {
    if (!g_run_budget) return 0;
    if (run_macs > (double)g_run_budget) return 1;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return spin && cores > 0 && threads > SPIN_MAX_THREADS_PER_CORE * cores;
}

static void plan_paths(const engine_host *E, void *plan, const ag_plan_info *info,
                       check_report *rep);

/* Create a group for `cf`, write its caches, plan, run every layer in
 * guarded memory, and judge each output for the config's role. */
static oracle_id run_config(run_ctx *x, const run_cfg *cf, finding *f) {
    const problem *p = x->p;
    const case_spec *c = &p->c;
    const ag_engine *e = x->E->e;
    run_inputs *in = cf->permuted ? &x->perm : &x->in;
    ag_group grp_desc = p->group;
    grp_desc.layers = in->layers;
    grp_desc.num_threads = cf->threads;
    grp_desc.options = cf->options;
    grp_desc.alloc = &x->alloc.abi;
    if (x->perturbed && cf->threads > 1) {
        grp_desc.sync_hook = sched_perturb_hook;
        grp_desc.sync_ctx = &x->perturb;
    }
    void *grp = NULL, *plan = NULL;
    ag_msg msg;
    guard sg;
    memset(&sg, 0, sizeof sg);
    oracle_id res = oracle_clean(f);

    ag_status st = e->create(x->E->ctx, &grp_desc, &grp, &msg);
    if (oracle_resource_limit(st, &msg)) {
        not_run(f, "%s: create answered %s (%s)", cf->what, msg.code, msg.text);
        return oracle_clean(f);
    }
    if (st == AG_UNSUPPORTED) return skip(f, msg.text);
    if (st != AG_OK)
        return oracle_found(f, ORACLE_BAD_INPUT, "%s: create refused a valid group: %s %s: %s", cf->what,
                     ag_status_name(st), msg.code, msg.text);
    ag_group_info gi;
    memset(&gi, 0, sizeof gi);
    /* an engine that says nothing of its rounding is held to fp32 (AG_F32 = 0) */
    if (e->group_info && e->group_info(grp, &gi) != AG_OK) memset(&gi, 0, sizeof gi);
    check_report *rep = cf->role == ROLE_PRIMARY && !x->have_base ? x->rep : NULL;
    if (rep) {
        snprintf(rep->kernels, sizeof rep->kernels, "%s", gi.kernels);
        snprintf(rep->detail, sizeof rep->detail, "%s", gi.detail);
        rep->precision = gi.precision;
    }
    if (x->rep) {
        x->rep->runs++;
        if (cf->role == ROLE_PRIMARY && cf->variant >= 0 && cf->variant < 32)
            x->rep->variants_run |= 1u << cf->variant;
    }
    int rc = caches_init(x, grp, in, cf->what, f, &res);
    if (rc < 0) not_run(f, "%s: no memory for the guarded caches", cf->what);
    if (rc) goto out_group;   /* -1: no memory, nothing to judge */
    ag_plan_info info;
    memset(&info, 0, sizeof info);
    st = e->plan(grp, &in->batch, &cf->opts, &plan, &info, &msg);
    if (st != AG_OK) {
        if (st == AG_UNSUPPORTED) skip(f, msg.text);
        else if (oracle_resource_limit(st, &msg))
            not_run(f, "%s: plan answered %s (%s)", cf->what, msg.code, msg.text);
        else
            res = oracle_found(f, ORACLE_BAD_INPUT, "%s: plan refused a valid batch: %s %s: %s",
                        cf->what, ag_status_name(st), msg.code, msg.text);
        plan = NULL;
        goto out_group;
    }
    if (rep) {
        rep->scratch_bytes = info.scratch_bytes;
        rep->num_regions = info.num_regions;
    }
    /* Every plan is sized before any of its layers runs or is skipped over
     * budget, not only the case's own and split-on ones of the plan pass:
     * the other configurations (split off, a fixed split, other threads)
     * plan anew, and an engine that states its needs (extents, plan_shape)
     * is then held to them there too, at plan time, by the oracle that
     * names them, rather than by the guard page its run would meet. */
    if ((res = oracle_check_sizing(x->E, plan, &info, p, f))) {
        char d[sizeof f->detail];
        snprintf(d, sizeof d, "%s", f->detail);
        res = oracle_found(f, res, "%s: %s", cf->what, d);
        goto out_plan;
    }
    /* The engine's own cost of a run (ag_plan_info.run_macs, and its
     * threads per core when it spins at its barriers): the watchdog allows
     * for it, and a fuzz budget (check_set_run_budget) runs no plan beyond
     * itself: its plan oracles above have run. */
    const int spin = (x->E->caps.flags & AG_CAP_SPIN_WAIT) != 0;
    double bound_s = x->bound_s;
    if (info.run_macs > 0 || spin) {
        const double b = sched_bound_declared(info.run_macs, cf->threads, spin);
        if (b > bound_s) bound_s = b;
    }
    /* what the engine declares beyond the case's own work, over check's
     * budget: planned (its plan oracles have run), not run */
    const double declared = info.run_macs * (double)c->num_layers;
    if (g_work_limit && declared > (double)g_work_limit) {
        not_run(f, "%s: the engine's plan declares %.3g multiply-adds a layer (ag_plan_info."
                "run_macs), %.3g for the %d layers, over the compute budget of %llu", cf->what,
                info.run_macs, declared, (int)c->num_layers, (unsigned long long)g_work_limit);
        if (x->rep) x->rep->runs--;
        goto out_plan;
    }
    if (run_over_budget(info.run_macs, cf->threads, spin)) {
        if (x->rep) {   /* planned, not run */
            x->rep->over_budget++;
            x->rep->runs--;
        }
        goto out_plan;
    }
    if (guard_init_regions(&sg, "scratch", info.regions, info.num_regions, info.scratch_bytes,
                           info.scratch_align) == 0) {
        sg.oracle = oracle_name(ORACLE_SCRATCH_BOUNDS);
    } else {
        /* A malformed table is a sizing finding; a failed mmap is nobody's. */
        res = oracle_check_sizing(x->E, plan, &info, p, f);
        goto out_plan;
    }

    for (int32_t l = 0; l < c->num_layers && res == ORACLE_NONE; l++) {
        if (out_for(x, l) != 0) break;   /* no memory: nothing more to judge */
        guard_fill_regions(&sg, cf->junk);
        guard_arm(&sg);
        guard_fill_regions(&x->out, 0xFF);   /* NaN: an unwritten element fails */
        guard_arm(&x->out);
        ag_run_args a;
        memset(&a, 0, sizeof a);
        a.q = in->q[l].buf;
        a.k_cache = in->k.buf;
        a.v_cache = in->v.buf;
        a.batch = &in->batch;
        a.num_tokens = p->num_tokens;
        a.scratch = sg.buf;
        a.scratch_bytes = info.scratch_bytes;
        a.out = x->out.buf;
        guard_alloc_mark(&x->alloc);
        char watch[160];
        snprintf(watch, sizeof watch, "%s: run of layers.%d (%d threads%s)", cf->what, (int)l,
                 (int)cf->threads, grp_desc.sync_hook ? ", perturbed" : "");
        sched_watch_arm(bound_s, watch);
        st = e->run(plan, l, &a, &msg);
        sched_watch_disarm();
        /* Bounds first: a write outside the regions explains anything else. */
        if ((res = check_guard(&sg, cf->what, l, f)) || (res = check_guard(&x->out, cf->what, l, f)) ||
            (res = check_internal(x, plan, l, st, cf->what, f)))
            break;
        if (info.num_regions && (res = check_written(x, plan, &sg, l, cf->junk, cf->what, f)))
            break;
        if (oracle_resource_limit(st, &msg)) {   /* nothing to judge */
            not_run(f, "%s: run of layers.%d answered %s (%s)", cf->what, (int)l, msg.code,
                    msg.text);
            break;
        }
        if (st == AG_INTERNAL) {
            res = oracle_found(f, ORACLE_ENGINE_CHECK, "%s: the engine's own check failed running "
                        "layers.%d: %s: %s", cf->what, (int)l, msg.code, msg.text);
            break;
        }
        if (st == AG_UNSUPPORTED) {   /* values it cannot take, only the run sees them */
            skip(f, msg.text);
            break;
        }
        if (st != AG_OK) {
            res = oracle_found(f, ORACLE_BAD_INPUT, "%s: run refused layers.%d of a valid case: %s %s: %s",
                        cf->what, (int)l, ag_status_name(st), msg.code, msg.text);
            break;
        }
        const oracle_ref *view;
        if (ref_for(x, l, gi.precision, &view, f, &res)) break;
        if (cf->twin == TWIN_MATCH) {
            if ((res = oracle_check_agree(p, l, x->twin[l], x->out.buf, NULL, 1, cf->what, f))) {
                char d[sizeof f->detail];
                snprintf(d, sizeof d, "%s", f->detail);
                res = oracle_found(f, ORACLE_EMULATION, "%s", d);
            }
            continue;
        }
        if (cf->role == ROLE_BITWISE) {
            if (x->have_base)
                res = oracle_check_agree(p, l, x->base[l], x->out.buf, NULL, 1, cf->what, f);
            continue;
        }
        res = oracle_check_differential(p, l, x->out.buf, view,
                                        rep ? &rep->layers[l].cmp : NULL, f);
        if (rep) {
            rep->layers[l].judged = 1;
            rep->layers[l].why = view->why;
        }
        if (res && cf->role == ROLE_VARIANT) {
            /* the same comparison, named for the variant that broke it */
            char d[sizeof f->detail];
            snprintf(d, sizeof d, "%s", f->detail);
            res = oracle_found(f, ORACLE_INVARIANCE, "%s (the case's own configuration passed): %s",
                        cf->what, d);
        }
        if (!res && cf->role == ROLE_PRIMARY && x->base[l] && !x->have_base)
            memcpy(x->base[l], x->out.buf, x->out_bytes[l]);
        if (!res && cf->twin == TWIN_KEEP) memcpy(x->twin[l], x->out.buf, x->out_bytes[l]);
    }
    /* the paths the runs took: an engine names some only once it ran
     * (attnguard's fp64 path, wide/...) */
    if (rep) plan_paths(x->E, plan, &info, rep);
    if (!res && !f->skipped[0] && cf->role == ROLE_PRIMARY && !x->have_base) {
        x->have_base = 1;
        x->base_options = cf->options;
    }
    guard_free(&sg);
out_plan:
    e->plan_destroy(plan);
out_group:
    e->destroy(grp);
    /* the blocks the engine freed with its group, checked as they came back */
    char d[400];
    if (!res && guard_alloc_check(&x->alloc, d, sizeof d))
        res = oracle_found(f, ORACLE_SCRATCH_BOUNDS, "%s; %s, freed with the group", d, cf->what);
    return res;
}

static const char *split_name(int32_t m) {
    switch (m) {
    case AG_SPLIT_AUTO: return "auto";
    case AG_SPLIT_OFF: return "off";
    case AG_SPLIT_ON: return "on";
    case AG_SPLIT_FIXED: return "fixed";
    default: return "?";
    }
}

/* The index of the variant whose options are `options`, else -1. */
static int variant_index(const engine_host *E, const char *options) {
    for (int i = 0; options && i < E->n_variants; i++)
        if (E->variants[i].options && strcmp(E->variants[i].options, options) == 0) return i;
    return -1;
}

/* Each variant with a twin (an emulation of the twin's kernels) against
 * that twin: the twin runs first and keeps its outputs, then the variant,
 * on the case's threads, must give the same bytes.  Every pair with
 * CHECK_EVERY_VARIANT, else the pair of the variant that ran as the
 * primary path (`primary`, -1: none). */
static oracle_id check_twins(run_ctx *x, unsigned what, int primary, finding *f) {
    const engine_host *E = x->E;
    const case_spec *c = &x->p->c;
    const ag_plan_opts own = {c->split, c->split_count, GUARD_REDZONE};
    oracle_id res = ORACLE_NONE;
    for (int i = 0; i < E->n_variants && !res; i++) {
        const int j = variant_index(E, E->variants[i].twin);
        if (j < 0 || j == i) continue;
        if (!(what & CHECK_EVERY_VARIANT) && primary != i && primary != j) continue;
        char d_keep[160], d_match[160];
        snprintf(d_keep, sizeof d_keep, "twin %s (of %s)", E->variants[j].options,
                 E->variants[i].options);
        snprintf(d_match, sizeof d_match, "emulated variant %s against its twin %s",
                 E->variants[i].options, E->variants[j].options);
        const run_cfg keep = {c->threads, j, own, 0, ROLE_VARIANT, 0xFF, E->variants[j].options,
                              d_keep, TWIN_KEEP};
        const run_cfg match = {c->threads, i, own, 0, ROLE_VARIANT, 0xFF, E->variants[i].options,
                               d_match, TWIN_MATCH};
        res = run_config(x, &keep, f);
        if (!res && !f->skipped[0]) res = run_config(x, &match, f);
        if (!res) f->skipped[0] = '\0';   /* a variant's skip is not the case's */
    }
    return res;
}

/* The metamorphic runs of check_runs (split off, on, fixed 3, another
 * thread count, permuted blocks, the bitwise rerun): its table has this
 * many rows, and check_work_estimate counts them all. */
#define CHECK_METAMORPHIC_RUNS 6

static uint64_t sat_mul_u64(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* An upper bound of check_runs' work, from what it would run on E: the
 * primary runs (one variant, or each with CHECK_EVERY_VARIANT), two more
 * per emulated twin pair, the metamorphic table; each run and each
 * reference model one pass of Q.K and one of P.V over the case. */
void check_work_estimate(const case_spec *c, const engine_host *E, unsigned what,
                         check_work *w) {
    memset(w, 0, sizeof *w);
    if (!c || !E || !(what & (CHECK_RUN | CHECK_INVARIANCE)) || c->num_layers < 1) return;
    const int n = E->n_variants > 1 && !c->options[0] ? E->n_variants : 1;
    int runs = (what & CHECK_EVERY_VARIANT) ? n : 1;
    if (what & CHECK_INVARIANCE) {
        for (int i = 0; i < E->n_variants; i++)
            if (E->variants[i].twin) runs += 2;
        runs += CHECK_METAMORPHIC_RUNS;
    }
    w->runs = runs;
    w->models = runs < CHECK_MODELS ? runs : CHECK_MODELS;
    const uint64_t pass = sat_mul_u64(case_cost(c), 2);
    w->engine = sat_mul_u64(pass, (uint64_t)runs);
    w->reference = sat_mul_u64(pass, (uint64_t)w->models);
}

static oracle_id check_runs(const problem *p, const engine_host *E, unsigned what, finding *f,
                            check_report *rep) {
    const case_spec *c = &p->c;
    const uint32_t caps = E->caps.flags;
    run_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.E = E;
    x.rep = rep;
    oracle_id res = oracle_clean(f);
    if (c->num_layers < 1) return res;
    for (int32_t l = 0; l < c->num_layers; l++)
        x.out_bytes[l] = problem_out_elems(p, l) * ag_dtype_size(c->out_dtype);
    x.out_layer = -1;
    x.perturbed = (what & CHECK_PERTURB) != 0;
    x.perturb.seed = c->seed ^ 0x7065727475726221ull;
    x.bound_s = sched_bound_seconds(case_cost(c), c->threads);
    if (guard_alloc_init(&x.alloc) != 0) return res;
    if (inputs_init(&x.in, p, 0) != 0) goto done;   /* no memory: nothing to judge */
    for (int32_t l = 0; l < c->num_layers; l++) {
        x.base[l] = malloc(x.out_bytes[l] ? x.out_bytes[l] : 1);
        x.twin[l] = malloc(x.out_bytes[l] ? x.out_bytes[l] : 1);
        if (!x.base[l] || !x.twin[l]) goto done;
    }
    const ag_plan_opts own = {c->split, c->split_count, GUARD_REDZONE};

    /* The primary path: the case's own options, or one engine variant
     * chosen by the seed (so a stream of inputs visits every code path),
     * or with CHECK_EVERY_VARIANT all of them from that one on.  Only the
     * first variant run uses the case's thread count; the others sweep the
     * variants' kernels on one thread.  The thread split is the plan's and
     * is the same for every variant, and the threads variant below checks
     * it once more; but a run on a worker pool costs a wake-up and, on a
     * loaded machine, barrier spins while a worker waits for a core (ggml:
     * 13 variants at 2-4 threads cost most of fuzz_attention's time). */
    int primary = -1;   /* the variant of the first primary run */
    if (c->options[0] || E->n_variants <= 1) {
        primary = c->options[0] ? variant_index(E, c->options) : 0;
        run_cfg base = {c->threads, c->options[0] ? -1 : 0, own, 0, ROLE_PRIMARY, 0xFF,
                        c->options[0] ? c->options : NULL, "case config", 0};
        res = run_config(&x, &base, f);
    } else {
        /* The seed's variant first; one that lacks what the case needs
         * (a kernel table without the case's dtype, a layout without its
         * block size) hands the primary run to the next, so a case is
         * skipped only when no variant takes it. */
        const int n = E->n_variants;
        const int k = (what & CHECK_EVERY_VARIANT) ? n : 1;
        const int first = (int)(c->seed % (uint64_t)n);
        int ran = 0;
        char why[sizeof f->skipped] = "";
        for (int j = 0; j < n && !res && (j < k || !ran); j++) {
            const int i = (first + j) % n;
            const int32_t threads = ran ? 1 : c->threads;
            /* the default variant runs with no options, as production does */
            const char *opt = i == 0 ? NULL : E->variants[i].options;
            char desc[96];
            snprintf(desc, sizeof desc, "case config, %s%s%s", opt ? "variant " : "",
                     opt ? opt : "default variant", threads != c->threads ? ", 1 thread" : "");
            run_cfg v = {threads, i, own, 0, ROLE_PRIMARY, 0xFF, opt, desc, 0};
            res = run_config(&x, &v, f);
            if (!res && f->skipped[0]) {
                if (!why[0]) snprintf(why, sizeof why, "%s", f->skipped);
                f->skipped[0] = '\0';
                continue;
            }
            if (!ran) primary = i;
            ran = 1;
        }
        if (!res && !ran) snprintf(f->skipped, sizeof f->skipped, "%s", why);
    }
    if (res || f->skipped[0] || !(what & CHECK_INVARIANCE)) goto done;
    if ((res = check_twins(&x, what, primary, f))) goto done;

    if ((caps & AG_CAP_PAGED) && inputs_init(&x.perm, p, 1) != 0) goto done;
    const char *opt = c->options[0] ? c->options : NULL;
    int32_t alt_threads = c->threads == 1 ? 3 : 1;
    char tdesc[64];
    snprintf(tdesc, sizeof tdesc, "threads %d (case: %d)", (int)alt_threads, (int)c->threads);
    const run_cfg variants[] = {
        {c->threads, -1, {AG_SPLIT_OFF, 0, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF, opt, "split off", 0},
        {c->threads, -1, {AG_SPLIT_ON, 0, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF, opt, "split on", 0},
        {c->threads, -1, {AG_SPLIT_FIXED, 3, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF, opt,
         "split fixed 3", 0},
        {alt_threads, -1, own, 0, ROLE_VARIANT, 0xFF, opt, tdesc, 0},
        {c->threads, -1, own, 1, ROLE_VARIANT, 0xFF, opt, "permuted physical blocks", 0},
        /* Same input, same threads, other junk in the scratch regions: a
         * read of scratch nobody wrote shows up as a bitwise difference. */
        {c->threads, -1, own, 0, ROLE_BITWISE, 0x3C, opt, "rerun with the same input and threads", 0},
    };
    _Static_assert(sizeof variants / sizeof variants[0] == CHECK_METAMORPHIC_RUNS,
                   "check_work_estimate counts these runs");
    for (size_t i = 0; i < sizeof variants / sizeof variants[0] && !res; i++) {
        const run_cfg *v = &variants[i];
        if (i < 3) {   /* the split variants */
            if (!(caps & AG_CAP_SPLIT_KV)) continue;
            if (v->opts.split == (int32_t)c->split &&
                (v->opts.split != AG_SPLIT_FIXED || v->opts.split_count == c->split_count))
                continue;   /* the case's own config: adds nothing */
        }
        if (v->permuted && !(caps & AG_CAP_PAGED)) continue;
        if (v->role == ROLE_BITWISE && (!(caps & AG_CAP_BITWISE) || !x.have_base)) continue;
        run_cfg vv = *v;
        if (vv.role == ROLE_BITWISE) vv.options = x.base_options;   /* the same code path */
        res = run_config(&x, &vv, f);
        if (!res) f->skipped[0] = '\0';   /* a variant's skip is not the case's */
    }
done:
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        for (int i = 0; i < CHECK_MODELS; i++) oracle_ref_free(&x.ref[l][i]);
        free(x.base[l]);
        free(x.twin[l]);
    }
    if (x.out_layer >= 0) guard_free(&x.out);
    inputs_free(&x.perm);
    inputs_free(&x.in);
    guard_alloc_destroy(&x.alloc);
    return res;
}

/* ------------------------------------------------------------- check_case */

/* What the reach table counts of a plan: split-merge regions, and the
 * engine's own names of its code paths. */
static void plan_paths(const engine_host *E, void *plan, const ag_plan_info *info,
                       check_report *rep) {
    rep->regions_described |= info->num_regions > 0 && info->regions;
    for (size_t i = 0; i < info->num_regions && info->regions; i++)
        rep->split_planned |= info->regions[i].kind == AG_REGION_PARTIAL;
    if (!E->e->paths) return;
    const char *names[CHECK_MAX_PATHS];
    const int n = E->e->paths(plan, names, CHECK_MAX_PATHS);
    rep->n_paths = n < CHECK_MAX_PATHS ? n : CHECK_MAX_PATHS;
    for (int i = 0; i < rep->n_paths; i++)
        snprintf(rep->paths[i], sizeof rep->paths[i], "%s", names[i] ? names[i] : "?");
}

/* The window pair every layer shares, else (-1, -1) (docs/design.md §3). */
static void group_window(const problem *p, int32_t *left, int32_t *right) {
    *left = *right = -1;
    for (int32_t l = 0; l < p->group.num_layers; l++)
        if (p->layers[l].window_left != p->layers[0].window_left ||
            p->layers[l].window_right != p->layers[0].window_right)
            return;
    if (p->group.num_layers > 0) {
        *left = p->layers[0].window_left;
        *right = p->layers[0].window_right;
    }
}

/* The largest |logit| (scale * <q, k>, or <q, k> itself when the scale is
 * below 1 or a soft cap bounds the scaled one) any layer of a materialized
 * problem could form, as an upper bound: scale * D * max|q| * max|k|; and,
 * for an engine that scales q first (AG_CAP_SCALE_ON_Q), scale * max|q|.
 * *softcap_ratio gets the largest bound on |s| / c of a soft-capped layer
 * (AG_CAP_SOFTCAP_RANGE).  Used against an engine's declared max_abs_logit only, so a bound, not the
 * exact maximum, is what's needed. */
static double max_logit_bound(const problem *p, int scale_on_q, double *softcap_ratio) {
    const case_spec *c = &p->c;
    const ag_dtype kd = c->kv_dtype;
    double kmax = 0;
    for (size_t i = 0; i < p->row_elems; i++) {
        const double a = fabs(ag_dtype_decode(p->k_rows, i, kd));
        if (a > kmax) kmax = a;
    }
    double worst = 0;
    for (int32_t l = 0; l < p->group.num_layers; l++) {
        const ag_layer *L = &p->layers[l];
        const size_t nq = (size_t)p->num_tokens * (size_t)L->num_heads * (size_t)c->head_dim;
        double qmax = 0;
        for (size_t i = 0; i < nq; i++) {
            const double a = fabs(ag_dtype_decode(p->q[l], i, c->q_dtype));
            if (a > qmax) qmax = a;
        }
        double scale = L->scale != 0 ? fabs((double)L->scale) : 1 / sqrt((double)c->head_dim);
        if (ag_dtype_is_fp8(kd)) scale *= fabs((double)L->k_scale);
        /* A soft cap saturates an infinite scaled logit to +-cap (tanh), so
         * there only <q, k> itself must stay finite. */
        /* an engine that scales q first holds scale * q before any cap */
        const double scaled_q = scale_on_q ? qmax * scale : 0;
        if (L->softcap > 0) {   /* the capped logit's input, against the cap */
            const double r = (double)c->head_dim * qmax * kmax * scale / (double)L->softcap;
            if (r > *softcap_ratio || r != r) *softcap_ratio = r;
            scale = 1;
        }
        const double b = (double)c->head_dim * qmax * kmax * (scale > 1 ? scale : 1);
        if (b > worst || b != b) worst = b;
        if (scaled_q > worst || scaled_q != scaled_q) worst = scaled_q;
    }
    return worst;
}

oracle_id check_case(const case_spec *c, unsigned what, finding *f) {
    return check_case_report(c, what, f, NULL);
}

oracle_id check_case_report(const case_spec *c, unsigned what, finding *f, check_report *rep) {
    finding scratch_f;
    if (!f) f = &scratch_f;
    oracle_clean(f);
    f->not_run[0] = '\0';
    f->not_run_key = CASE_KEY_COUNT;
    if (rep) {
        memset(rep, 0, sizeof *rep);
        rep->refused_create = rep->refused_plan = -1;
    }
    if (!c) return ORACLE_NONE;
    guard_install_fault_handler();
    char err[AG_MSG_TEXT_LEN + 64];
    const engine_host *E = engine_host_current(err, sizeof err);
    if (!E) return skip(f, err);
    const ag_engine *e = E->e;
    if (rep) snprintf(rep->engine, sizeof rep->engine, "%s", e->name);

    case_defects d;
    const validity_engine ve = engine_host_validity(E);
    validity_defects(c, &ve, &d);
    if (d.unexpressible) return ORACLE_NONE;
    oracle_id res;
    case_spec lifted;
    if (c->expect != AG_R_NONE && !validity_allows(&d, DEFECT_CREATE | DEFECT_PLAN, c->expect)) {
        /* a refusal this engine's declarations lift (a mixed group for one
         * that plans each layer with its own count): with no other defect
         * the case is a valid one for this engine and runs as such (the
         * only cases that give such an engine a mixed group); else it is
         * not a case for it */
        ag_caps strict = E->caps;
        strict.flags = 0;
        const validity_engine vs = {&strict, E->variants, E->n_variants};
        case_defects ds;
        validity_defects(c, &vs, &ds);
        if (validity_allows(&ds, DEFECT_CREATE | DEFECT_PLAN, c->expect)) {
            if (d.n == 0) {
                lifted = *c;
                lifted.expect = AG_R_NONE;
                c = &lifted;
            } else {
                char why[128];
                snprintf(why, sizeof why, "the %s refusal the case expects (its declarations "
                         "take such input)", ag_refusal_name((ag_refusal)c->expect));
                return skip(f, why);
            }
        }
    }
    if ((res = oracle_check_expect(c, &d, f))) return res;
    /* A case that needs what the engine lacks is skipped even when it is
     * also defective: an engine may stop at the feature it cannot express
     * before it reaches the defect, and that says nothing either way. */
    char why[128];
    if (engine_host_unsupported(E, c, why, sizeof why)) return skip(f, why);

    problem p;
    char msg[256];
    /* inputs only for a case this engine must run (a defective one is
     * judged on its refusal alone) */
    const int run = (what & (CHECK_RUN | CHECK_INVARIANCE)) != 0 && d.n == 0;
    if ((run ? problem_init(&p, c, ORACLE_MAX_BYTES, msg, sizeof msg)
             : problem_init_descriptions(&p, c, ORACLE_MAX_BYTES, msg, sizeof msg)) != 0) {
        oracle_clean(f);
        not_run(f, "%s", msg);
        return ORACLE_NONE;
    }
    if (rep) {
        rep->num_layers = p.group.num_layers;
        for (int32_t l = 0; l < p.group.num_layers; l++) {
            rep->layers[l].window_left = p.layers[l].window_left;
            rep->layers[l].window_right = p.layers[l].window_right;
        }
        group_window(&p, &rep->group_window_left, &rep->group_window_right);
    }

    void *grp = NULL, *plan = NULL;
    ag_msg m;
    memset(&m, 0, sizeof m);
    ag_status st = e->create(E->ctx, &p.group, &grp, &m);
    if (rep && st != AG_OK) rep->refused_create = m.refusal;
    res = oracle_check_status(&d, DEFECT_CREATE, st, &m, E->caps.flags, st != AG_OK && grp, f);
    if (oracle_resource_limit(st, &m)) not_run(f, "create answered %s (%s)", m.code, m.text);
    if (st != AG_OK) grp = NULL;   /* never free what was not handed out */
    if (res || st != AG_OK) goto out;

    /* problem.c replaces a block table beyond its input cap by a
     * one-column stand-in; the engine's verdict on that says nothing. */
    if (p.unmaterialized_reason && strstr(p.unmaterialized_reason, "block table")) {
        not_run_at(f, CASE_KEY_REQUESTS, "%s (over the harness's cap of %zu bytes of inputs)",
                   p.unmaterialized_reason, (size_t)ORACLE_MAX_BYTES);
        goto out;
    }

    ag_plan_opts po = {c->split, c->split_count, 0};
    ag_plan_info info;
    memset(&info, 0, sizeof info);
    st = e->plan(grp, &p.batch, &po, &plan, &info, &m);
    if (rep && st != AG_OK) rep->refused_plan = m.refusal;
    res = oracle_check_status(&d, DEFECT_PLAN, st, &m, E->caps.flags, st != AG_OK && plan, f);
    if (rep && st == AG_OK) plan_paths(E, plan, &info, rep);
    if (oracle_resource_limit(st, &m)) not_run(f, "plan answered %s (%s)", m.code, m.text);
    if (st != AG_OK) plan = NULL;
    if (res || st != AG_OK) goto out;

    if ((what & CHECK_PLAN) && (res = oracle_check_sizing(E, plan, &info, &p, f))) goto out;
    e->plan_destroy(plan);
    plan = NULL;

    /* Sizing again with every single-tile row split: the case's own policy
     * often plans no reduction at all, and reduction slots are where the
     * historical sizing bugs lived.  Cheap: no kernels. */
    if ((what & CHECK_PLAN) && (int32_t)c->split != AG_SPLIT_ON && (E->caps.flags & AG_CAP_SPLIT_KV)) {
        ag_plan_opts on = {AG_SPLIT_ON, 0, 0};
        st = e->plan(grp, &p.batch, &on, &plan, &info, &m);
        if (st == AG_UNSUPPORTED) {
            /* a split schedule this engine lacks for this batch (vLLM's,
             * where it would meet a written-up finding): nothing to size */
            plan = NULL;
        } else if (st != AG_OK) {
            plan = NULL;
            if (!oracle_resource_limit(st, &m))
                res = oracle_found(f, ORACLE_BAD_INPUT,
                            "the batch planned with split %s but was refused with split on: "
                            "%s %s: %s", split_name(c->split), ag_status_name(st), m.code, m.text);
            goto out;
        } else {
            if ((res = oracle_check_sizing(E, plan, &info, &p, f))) goto out;
            e->plan_destroy(plan);
            plan = NULL;
        }
    }
    e->destroy(grp);
    grp = NULL;

    if ((what & (CHECK_RUN | CHECK_INVARIANCE)) && !p.materialized)
    {
        /* the bytes come from the requests' lengths (times heads and
         * head_dim): they are what to shorten */
        if (p.input_bytes)
            not_run_at(f, CASE_KEY_REQUESTS, "inputs not formed: q, the K/V rows and the "
                       "block table need %s%zu bytes, over the harness's cap of %zu bytes "
                       "(ORACLE_MAX_BYTES)", p.input_bytes == SIZE_MAX ? "more than " : "",
                       p.input_bytes, (size_t)ORACLE_MAX_BYTES);
        else
            not_run(f, "inputs not formed: %s (the harness's cap: %zu bytes)",
                    p.unmaterialized_reason ? p.unmaterialized_reason : "?",
                    (size_t)ORACLE_MAX_BYTES);
    }
    if ((what & (CHECK_RUN | CHECK_INVARIANCE)) && p.materialized) {
        double ratio = 0;
        const double bound =
            max_logit_bound(&p, (E->caps.flags & AG_CAP_SCALE_ON_Q) != 0, &ratio);
        if (E->caps.max_abs_logit > 0 && !(bound < (double)E->caps.max_abs_logit)) {
            /* one text per engine, so the skip summary counts them as one reason */
            char w[128];
            snprintf(w, sizeof w, "max_abs_logit (logits that could pass %.3g)",
                     (double)E->caps.max_abs_logit);
            res = skip(f, w);
        } else if ((E->caps.flags & AG_CAP_SOFTCAP_RANGE) && !(ratio < AG_SOFTCAP_RANGE)) {
            char w[128];
            snprintf(w, sizeof w, "softcap range (soft-capped logits that could pass %g x the cap)",
                     AG_SOFTCAP_RANGE);
            res = skip(f, w);
        } else {
            res = check_runs(&p, E, what | CHECK_RUN, f, rep);
        }
    }

out:
    if (plan) e->plan_destroy(plan);
    if (grp) e->destroy(grp);
    problem_free(&p);
    return res;
}
