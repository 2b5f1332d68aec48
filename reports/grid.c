/*
 * grid.c — the differential correctness grid behind `make report`.
 *
 * Runs a seeded selection of a few hundred cells through every engine
 * given (--engines, through the adapter ABI: harness/session.h) side by
 * side and, for each (cell, engine), measures the engine's max abs / max
 * rel error against the fp64 reference (harness/ref.c, computed once per
 * cell) next to the error of a naive baseline that rounds as that engine
 * says it rounds (reports/naive.c, ag_group_info.precision).  A cell an
 * engine cannot express (engine_host_unsupported, or AG_UNSUPPORTED from
 * create/plan) is skipped for that engine and counted with the reason.
 * Writes one JSON document (reports/schema.json, "grid").
 *
 * Cells (reports/grid_cells.c): a crossed core of kv dtype x head_dim x
 * group x window and blocks for fp8 KV, mixed causality, (left, right)
 * windows, prefill on normal inputs and Laguna XS; every other dimension
 * dealt out, including each engine's variants (its kernel tables, tuning
 * profiles or CPU backends: engine_host.variants).  The grid, reference
 * included, stays under about two minutes per engine on two cores.
 *
 * Verdict per (cell, engine): the engine ran (AG_OK) and either every
 * element is within cmp_tolerance of the reference (under the rounding
 * model the engine declares), or its max abs AND max rel errors are each
 * at most 2x its own-precision baseline's.  NaN is never a pass.  The
 * baseline itself is checked first (at fp32 against the reference: a
 * baseline that drifted from DESIGN §2 would widen the 2x rule), and a
 * cell whose baseline disagrees is not judged but fails as a harness bug.
 *
 * Each run's engine part (create, plan, run) happens in a process of its
 * own (harness/host/isolate.h), under the hang bound `attnguard check`
 * uses: a fault, an abort or a hang of the engine fails that cell, with
 * the signal or the hang line as its message, and the grid goes on.
 *
 * Owns: the per-cell pipeline, the verdict and the JSON layout.  Does
 * not own the tolerances (harness/compare.c), the inputs
 * (harness/problem.c) or what an engine can express (harness/engine_host.c).
 *
 * Usage: report_grid [--out FILE] [--seed N] [--engines a,b]
 *                    [--variants v,w] [--cells origin,origin]
 *                    [--check-baseline] [--quiet]
 * Exit: 0 every judged cell passes, 1 some cell failed, 2 usage or setup.
 */
#include "../harness/case/case.h"
#include "../harness/judge/compare.h"
#include "../harness/host/engine_host.h"
#include "../harness/judge/oracles.h"
#include "../harness/case/problem.h"
#include "../harness/host/isolate.h"
#include "../harness/host/session.h"
#include "../harness/judge/schedule.h"
#include "../harness/util/json.h"
#include "grid_cells.h"
#include "naive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ENGINES 4
#define MAX_SKIP_REASONS 48
#define MAX_RESULTS 4096           /* judged or skipped (cell, engine, variant) runs */

typedef struct err_stats {
    double max_abs, max_rel, tol_use;   /* tol_use: max |e| / (atol + rtol |want|) */
    size_t nan_count;
} err_stats;

/* One (cell, engine, variant) that was judged. */
typedef struct result {
    int cell, engine;
    const char *variant;        /* the options string ("" = the engine's default) */
    ag_group_info gi;
    ag_status status;
    char code[AG_MSG_CODE_LEN];
    char message[AG_MSG_TEXT_LEN + 64];
    err_stats eng, base;
    cmp_tol tol;
    int within_tol, within_2x, pass;
    double engine_ms, total_ms;
    size_t scratch_bytes;
} result;

typedef struct skip_rec {
    int cell, engine;
    char reason[96];
} skip_rec;

typedef struct engine_run {
    engine_host h;
    const char *name;
    int n_var;                  /* variants used (after --variants) */
    const char *var[ENGINE_HOST_MAX_VARIANTS];
    int dealt[GRID_MAX_CELLS];       /* the variant index of each dealt cell */
    int cells, passed, skipped;
    double seconds;             /* everything for this engine except the shared reference */
    struct { char why[96]; int n; } reasons[MAX_SKIP_REASONS];
} engine_run;

/* ------------------------------------------------------------ utilities */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ measuring */

/* Errors of got against the exact ref (max_abs, max_rel), and the share
 * of the tolerance used (tol_use), measured from the nearest point of
 * [lo[i], hi[i]] (the range the engine's declared rounding allows). */
static void measure(const double *ref, const double *lo, const double *hi, const void *got,
                    ag_dtype dt, size_t n, cmp_tol tol, err_stats *st) {
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++) {
        const double g = cmp_elem_get(got, i, dt);
        const double e = fabs(g - ref[i]);
        if (isnan(e)) {
            st->nan_count++;
            continue;
        }
        const double want = lo ? (g < lo[i] ? lo[i] : g > hi[i] ? hi[i] : g) : ref[i];
        const double rel = e / fmax(fabs(ref[i]), 1e-6);
        const double use = fabs(g - want) / (tol.atol + tol.rtol * fabs(want));
        if (e > st->max_abs) st->max_abs = e;
        if (rel > st->max_rel) st->max_rel = rel;
        if (use > st->tol_use) st->tol_use = use;
    }
}

static void naive_from(const problem *p, const ag_precision *pr, naive_input *ni) {
    const case_spec *c = &p->c;
    const ag_layer *L = &p->layers[0];
    memset(ni, 0, sizeof *ni);
    ni->num_reqs = c->num_reqs;
    ni->query_start_loc = p->qsl;
    ni->seq_lens = p->seq_lens;
    ni->causal = p->causal;
    ni->block_table = p->block_table;
    ni->block_table_stride = p->bt_stride;
    ni->num_heads = L->num_heads;
    ni->num_kv_heads = c->num_kv_heads;
    ni->head_dim = c->head_dim;
    ni->block_size = c->block_size;
    ni->window_left = L->window_left;
    ni->window_right = L->window_right;
    ni->softcap = L->softcap;
    ni->scale = L->scale;
    ni->alibi_slopes = L->alibi_slopes;
    ni->sinks = L->sinks;
    ni->q = p->q[0];
    ni->k_rows = p->k_rows;
    ni->v_rows = p->v_rows;
    ni->q_dtype = c->q_dtype;
    ni->kv_dtype = c->kv_dtype;
    ni->out_dtype = c->out_dtype;
    ni->k_scale = L->k_scale;
    ni->v_scale = L->v_scale;
    ni->precision = *pr;
}

static void count_skip(engine_run *er, const char *why) {
    er->skipped++;
    for (int i = 0; i < MAX_SKIP_REASONS; i++) {
        if (er->reasons[i].n && strcmp(er->reasons[i].why, why) == 0) {
            er->reasons[i].n++;
            return;
        }
        if (!er->reasons[i].n) {
            snprintf(er->reasons[i].why, sizeof er->reasons[i].why, "%s", why);
            er->reasons[i].n = 1;
            return;
        }
    }
}

static void record_skip(skip_rec *s, engine_run *er, int ci, int engine, const char *why) {
    s->cell = ci;
    s->engine = engine;
    snprintf(s->reason, sizeof s->reason, "%s", why);
    count_skip(er, s->reason);
}

/* A cell's problem and what is computed once for it, whatever the number
 * of engines and variants: the fp64 reference, and the naive baseline's
 * errors for each precision an engine declared. */
#define MAX_BASELINES 4
typedef struct cell_ctx {
    const grid_cell *ce;
    case_spec c;
    problem p;
    oracle_ref ref;             /* under fp32 arithmetic */
    oracle_ref rref[MAX_BASELINES];   /* under the rounding models runs declared */
    int n_rref;
    int state;                  /* -1 not built yet, 1 built, 0 failed (err says why) */
    char err[256];
    double ref_cpu_ms;          /* CPU time of the problem and its reference */
    double naive_check;         /* max |naive at fp32 - reference| / the outputs' scale */
    struct {
        ag_precision pr;
        err_stats st;
    } base[MAX_BASELINES];
    int n_base;
} cell_ctx;

static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The baseline is only a yardstick if it computes DESIGN §2: at fp32
 * precision, with an f32 output, it must agree with the fp64 reference to
 * 1e-4 of the output's scale (fp32 rounding stays below 2e-5 of it on
 * these cells, ALiBi logits of ~500 at 1000 keys being the worst; a
 * masking, position or decoding slip moves outputs by far more, even a
 * window off by one at W = 512).  A disagreement fails the cell as a
 * harness bug instead of letting a wrong baseline widen the 2x rule.
 * 1 agrees, 0 not (err says by how much). */
static int check_naive(cell_ctx *x) {
    const size_t n = problem_out_elems(&x->p, 0);
    float *out = malloc(n * sizeof *out);
    naive_input ni;
    const ag_precision f32 = {AG_F32, AG_F32, AG_F32, 0};
    naive_from(&x->p, &f32, &ni);
    ni.out_dtype = AG_F32;
    if (!out || naive_attention(&ni, out) != 0) {
        free(out);
        snprintf(x->err, sizeof x->err, "the naive baseline refused the input (harness bug)");
        return 0;
    }
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(x->ref.val[i]));
        const double e = fabs((double)out[i] - x->ref.val[i]);
        worst = isnan(e) || e > worst ? (isnan(e) ? INFINITY : e) : worst;
    }
    free(out);
    x->naive_check = worst / fmax(scale, 1e-3);
    if (x->naive_check <= 1e-4) return 1;
    snprintf(x->err, sizeof x->err, "the naive baseline at fp32 differs from the fp64 reference "
             "by %.3g (outputs up to %.3g): harness bug, the cell is not judged", worst, scale);
    return 0;
}

static int cell_build(cell_ctx *x) {
    if (x->state >= 0) return x->state;
    const double t0 = cpu_ms();
    x->state = problem_init(&x->p, &x->c, (size_t)1 << 30, x->err, sizeof x->err) == 0 &&
               x->p.materialized;
    if (!x->state && x->p.unmaterialized_reason)
        snprintf(x->err, sizeof x->err, "problem: %s", x->p.unmaterialized_reason);
    const ag_precision f32 = {AG_F32, AG_F32, AG_F32, 0};
    if (x->state && oracle_reference(&x->p, 0, f32, NULL, &x->ref) != 0) {
        snprintf(x->err, sizeof x->err, "the reference refused the input");
        x->state = 0;
    }
    if (x->state) x->state = check_naive(x);
    x->ref_cpu_ms = cpu_ms() - t0;
    return x->state;
}

static void cell_free(cell_ctx *x) {
    oracle_ref_free(&x->ref);
    for (int i = 0; i < x->n_rref; i++) oracle_ref_free(&x->rref[i]);
    problem_free(&x->p);
}

/* The reference interval a run of precision pr is judged against (as
 * check.c judges it), computed once per precision; NULL on failure.  No
 * engine's caps (NULL): the cells are ordinary inputs, far from any declared
 * logit or accumulator limit. */
static const oracle_ref *ref_for(cell_ctx *x, const ag_precision *pr) {
    if (memcmp(&x->ref.prec, pr, sizeof *pr) == 0) return &x->ref;
    for (int i = 0; i < x->n_rref; i++)
        if (memcmp(&x->rref[i].prec, pr, sizeof *pr) == 0) return &x->rref[i];
    if (x->n_rref == MAX_BASELINES) return NULL;
    if (oracle_reference(&x->p, 0, *pr, NULL, &x->rref[x->n_rref]) != 0) return NULL;
    return &x->rref[x->n_rref++];
}

/* The naive baseline's errors at precision pr against the exact
 * reference (computed once per precision).  0, or -1. */
static int baseline(cell_ctx *x, const ag_precision *pr, cmp_tol tol, err_stats *st) {
    for (int i = 0; i < x->n_base; i++)
        if (memcmp(&x->base[i].pr, pr, sizeof *pr) == 0) {
            *st = x->base[i].st;
            return 0;
        }
    const size_t n = problem_out_elems(&x->p, 0);
    void *out = malloc(n * ag_dtype_size(x->c.out_dtype));
    naive_input ni;
    naive_from(&x->p, pr, &ni);
    if (!out || naive_attention(&ni, out) != 0) {
        free(out);
        return -1;
    }
    measure(x->ref.val, NULL, NULL, out, x->c.out_dtype, n, tol, st);
    free(out);
    if (x->n_base < MAX_BASELINES) {
        x->base[x->n_base].pr = *pr;
        x->base[x->n_base++].st = *st;
    }
    return 0;
}

/* What the engine's part of a run hands back from its process (memory
 * shared with it): how far it got and the engine's answers.  The output
 * itself is a shared buffer of its own. */
typedef struct engine_part {
    int unsupported;            /* AG_UNSUPPORTED from create or plan: a skip */
    char why[96];
    ag_status status;
    char code[AG_MSG_CODE_LEN];
    char message[AG_MSG_TEXT_LEN + 64];
    ag_group_info gi;
    size_t scratch_bytes;
    double engine_ms;
} engine_part;

typedef struct engine_job {
    engine_run *er;
    int v;
    const cell_ctx *x;
    engine_part *part;
    void *out;                  /* shared: problem_out_elems x out_dtype */
} engine_job;

/* In the run's own process: create, plan and run through the ABI, under
 * the hang watchdog with the bound `attnguard check` gives a run of this
 * size (judge/schedule.h), so that a hang ends this process, not the grid. */
static void engine_part_run(void *arg) {
    const engine_job *j = arg;
    engine_part *r = j->part;
    const case_spec *c = &j->x->c;
    session s;
    const ag_plan_opts po = {c->split, c->split_count, 0};
    if (session_open(&s, &j->er->h, &j->x->p, j->er->var[j->v], c->threads, &po, NULL, NULL) !=
        0) {
        r->status = s.status;
        r->unsupported = s.status == AG_UNSUPPORTED;
        snprintf(r->why, sizeof r->why, "%s: %.80s", s.stage, s.msg.code[0] ? s.msg.code : s.msg.text);
        snprintf(r->code, sizeof r->code, "%s", s.msg.code);
        snprintf(r->message, sizeof r->message, "%s: %s %s: %s", s.stage,
                 ag_status_name(s.status), s.msg.code, s.msg.text);
        return;
    }
    r->gi = s.gi;
    r->scratch_bytes = s.info.scratch_bytes;
    double bound = sched_bound_seconds(case_cost(c), c->threads);
    const double declared = sched_bound_declared(s.info.run_macs, c->threads,
                                                 (j->er->h.caps.flags & AG_CAP_SPIN_WAIT) != 0);
    if (declared > bound) bound = declared;
    char what[160];
    snprintf(what, sizeof what, "report_grid: run of %s %s", j->er->name,
             j->er->var[j->v][0] ? j->er->var[j->v] : "default");
    const double t0 = now_ms();
    sched_watch_arm(bound, what);
    session_run(&s, 0, NULL, j->out);
    sched_watch_disarm();
    r->engine_ms = now_ms() - t0;
    r->status = s.status;
    snprintf(r->code, sizeof r->code, "%s", s.msg.code);
    if (s.status != AG_OK)
        snprintf(r->message, sizeof r->message, "run: %s %s: %s", ag_status_name(s.status),
                 s.msg.code, s.msg.text);
    session_close(&s);
}

/* A run whose process died: a failed cell that says how (the hang oracle's
 * line when the watchdog ended it). */
static void engine_died(const isolate_end *end, result *res) {
    res->status = AG_INTERNAL;
    const char *hang = strstr(end->log, "attnguard: ORACLE hang: ");
    if (end->signal)
        snprintf(res->code, sizeof res->code, "signal %d", end->signal);
    else
        snprintf(res->code, sizeof res->code, "exit %d", end->status);
    if (hang) {
        hang += strlen("attnguard: ORACLE ");
        snprintf(res->message, sizeof res->message, "%.*s", (int)strcspn(hang, "\n"), hang);
    } else if (end->signal) {
        snprintf(res->message, sizeof res->message,
                 "the engine's process was killed by signal %d (%s)", end->signal,
                 strsignal(end->signal));
    } else {
        snprintf(res->message, sizeof res->message,
                 "the engine's process exited with status %d before its run was done",
                 end->status);
    }
    res->eng.nan_count = 1;   /* no output: nothing within any tolerance */
}

/* Engine er, variant v, on the cell's problem (one the engine can express
 * by its capabilities).  The engine's part runs in a process of its own
 * (harness/host/isolate.h): a fault, an abort or a hang there is this
 * cell's failure and the grid goes on.  Returns 1 judged (*res filled), 0
 * skipped (why: AG_UNSUPPORTED from create or plan). */
static int run_engine(engine_run *er, int v, cell_ctx *x, result *res, char *why,
                      size_t why_cap) {
    const double t_start = now_ms();
    const case_spec *c = &x->c;
    const problem *p = &x->p;
    memset(res, 0, sizeof *res);
    res->variant = er->var[v];
    res->tol = cmp_tolerance(c->out_dtype);
    const size_t n = problem_out_elems(p, 0), osz = ag_dtype_size(c->out_dtype);
    engine_part *part = isolate_shared(sizeof *part);
    void *out = isolate_shared(n * osz);
    if (!part || !out) {
        isolate_shared_free(part, sizeof *part);
        isolate_shared_free(out, n * osz);
        res->status = AG_INTERNAL;
        snprintf(res->message, sizeof res->message, "report_grid: out of memory");
        res->total_ms = now_ms() - t_start;
        return 1;
    }
    memset(out, 0xff, n * osz);   /* NaN in every dtype: unwritten elements show */
    engine_job job = {er, v, x, part, out};
    isolate_end end;
    char err[256];
    int judged = 1;
    if (isolate_run(engine_part_run, &job, 1, &end, err, sizeof err) != 0) {
        res->status = AG_INTERNAL;
        snprintf(res->message, sizeof res->message, "report_grid: %s", err);
        goto done;
    }
    if (!end.returned || end.status != 0) {
        engine_died(&end, res);
        isolate_end_free(&end);
        goto done;
    }
    isolate_end_free(&end);
    if (part->unsupported) {
        snprintf(why, why_cap, "%s", part->why);
        judged = 0;
        goto done;
    }
    res->gi = part->gi;
    res->scratch_bytes = part->scratch_bytes;
    res->engine_ms = part->engine_ms;
    res->status = part->status;
    snprintf(res->code, sizeof res->code, "%s", part->code);
    snprintf(res->message, sizeof res->message, "%s", part->message);
    if (part->status != AG_OK) goto done;
    const oracle_ref *view = ref_for(x, &part->gi.precision);
    if (!view || baseline(x, &part->gi.precision, res->tol, &res->base) != 0) {
        res->status = AG_INTERNAL;
        snprintf(res->message, sizeof res->message, "the rounding-model reference or the naive "
                 "baseline refused the input (harness bug)");
        goto done;
    }
    measure(view->val, view->lo, view->hi, out, c->out_dtype, n, res->tol, &res->eng);
    res->within_tol = res->eng.nan_count == 0 && res->eng.tol_use <= 1.0;
    /* "error" is both figures: max abs alone is dominated by the output
     * rounding of the largest elements and hides errors on small ones. */
    res->within_2x = res->eng.nan_count == 0 && res->eng.max_abs <= 2.0 * res->base.max_abs &&
                     res->eng.max_rel <= 2.0 * res->base.max_rel;
    res->pass = res->within_tol || res->within_2x;
    if (!res->pass)
        snprintf(res->message, sizeof res->message,
                 "max_abs %.3g / max_rel %.3g vs baseline %.3g / %.3g (limit 2x); "
                 "%.2f x tolerance%s", res->eng.max_abs, res->eng.max_rel, res->base.max_abs,
                 res->base.max_rel, res->eng.tol_use,
                 res->eng.nan_count ? " (NaN or unwritten elements)" : "");
done:
    isolate_shared_free(out, n * osz);
    isolate_shared_free(part, sizeof *part);
    res->total_ms = now_ms() - t_start;
    return judged;
}

/* ------------------------------------------------------------------ JSON */

/* Significant digits of the grid's errors and tolerances (json_num). */
#define GRID_DIGITS 6

static void json_err(FILE *f, const char *key, const err_stats *e) {
    fprintf(f, "\"%s\": {\"max_abs\": ", key);
    json_num(f, e->nan_count ? INFINITY : e->max_abs, GRID_DIGITS);
    fputs(", \"max_rel\": ", f);
    json_num(f, e->nan_count ? INFINITY : e->max_rel, GRID_DIGITS);
    fputs(", \"tol_use\": ", f);
    json_num(f, e->nan_count ? INFINITY : e->tol_use, GRID_DIGITS);
    fprintf(f, ", \"nan\": %zu}", e->nan_count);
}

static const char *dname(ag_dtype d) {
    const char *s = ag_dtype_name(d);
    return s ? s : "?";
}

static void json_cell(FILE *f, const grid_cell *ce, const grid_cell_info *ci, const result *r,
                      const engine_run *er) {
    const grid_group *gs = &grid_groups[ce->group];
    const ag_precision *pr = &r->gi.precision;
    fprintf(f, "    {\"id\": %d, \"origin\": \"%s\", \"engine_name\": ", ce->id, ce->origin);
    json_str(f, er->name);
    fputs(", \"variant\": ", f);
    json_str(f, r->variant[0] ? r->variant : "default");
    fputs(", \"isa\": ", f);
    json_str(f, r->gi.kernels[0] ? r->gi.kernels : "?");
    fputs(", \"detail\": ", f);
    json_str(f, r->gi.detail);
    fprintf(f, ",\n     \"dtype\": \"%s\", \"q_dtype\": \"%s\", \"out_dtype\": \"%s\", "
               "\"k_scale\": %g, \"v_scale\": %g, \"head_dim\": %d, \"group\": \"%s\", "
               "\"num_heads\": %d, \"num_kv_heads\": %d, \"window\": %d, \"window_left\": %d, "
               "\"window_right\": %d,\n     \"softcap\": %g, \"sinks\": %s, \"alibi\": %s, "
               "\"values\": \"%s\", \"causal\": \"%s\", \"causal_flags\": \"%s\", "
               "\"noncausal_positions_matter\": %s, \"mode\": \"%s\", \"split\": \"%s\", "
               "\"threads\": %d, \"block_size\": %d,\n",
            dname(ce->kv), dname(ce->q), dname(ce->out), (double)ce->k_scale,
            (double)ce->v_scale, (int)ce->head_dim, gs->label, (int)gs->heads, (int)gs->kv_heads,
            ce->wl >= 0 ? (int)ce->wl + 1 : -1, (int)ce->wl, (int)ce->wr, (double)ce->softcap,
            ce->sinks ? "true" : "false", ce->alibi ? "true" : "false",
            case_dist_name(ce->dist), grid_caus_names[ce->caus], ci->causal_flags,
            ci->nc_positions ? "true" : "false", grid_mode_names[ce->mode],
            grid_split_names[ce->split],
            (int)ce->threads, (int)ce->block_size);
    fprintf(f, "     \"requests\": \"%s\", \"num_tokens\": %d, \"pairs\": %lld, "
               "\"reference_cpu_ms\": %.1f, \"baseline_check\": ",
            ci->reqs, (int)ci->num_tokens, (long long)ci->pairs, ci->ref_ms);
    /* a NaN in the baseline or the reference: null, not inf */
    json_num(f, ci->naive_check, GRID_DIGITS);
    fprintf(f, ", \"scratch_bytes\": %zu, \"status\": \"%s\", \"code\": ", r->scratch_bytes,
            ag_status_name(r->status));
    json_str(f, r->code);
    fputs(",\n     ", f);
    json_err(f, "engine", &r->eng);
    fputs(",\n     ", f);
    json_err(f, "baseline", &r->base);
    fputs(",\n     \"tolerance\": {\"atol\": ", f);
    json_num(f, r->tol.atol, GRID_DIGITS);
    fputs(", \"rtol\": ", f);
    json_num(f, r->tol.rtol, GRID_DIGITS);
    fprintf(f, "}, \"within_tolerance\": %s, \"within_2x_baseline\": %s, \"pass\": %s, "
               "\"bf16_rounding\": %s,\n     \"precision\": {\"q_dot\": \"%s\", \"p_dot\": "
               "\"%s\", \"acc\": \"%s\"}, \"engine_ms\": %.3f, \"total_ms\": %.1f, "
               "\"message\": ",
            r->within_tol ? "true" : "false", r->within_2x ? "true" : "false",
            r->pass ? "true" : "false",
            pr->q_dot == AG_BF16 || pr->p_dot == AG_BF16 ? "true" : "false", dname(pr->q_dot),
            dname(pr->p_dot), dname(pr->acc), r->engine_ms, r->total_ms);
    json_str(f, r->message);
    fputc('}', f);
}

static void json_engine(FILE *f, const engine_run *er) {
    fputs("    {\"name\": ", f);
    json_str(f, er->name);
    fputs(", \"summary\": ", f);
    json_str(f, er->h.e->summary ? er->h.e->summary : "");
    fputs(", \"variants\": [", f);
    for (int i = 0; i < er->n_var; i++) {
        if (i) fputs(", ", f);
        json_str(f, er->var[i][0] ? er->var[i] : "default");
    }
    fprintf(f, "],\n     \"cells\": %d, \"passed\": %d, \"failed\": %d, \"skipped\": %d, "
               "\"elapsed_s\": %.2f, \"skip_reasons\": {",
            er->cells, er->passed, er->cells - er->passed, er->skipped, er->seconds);
    for (int i = 0; i < MAX_SKIP_REASONS && er->reasons[i].n; i++) {
        if (i) fputs(", ", f);
        json_str(f, er->reasons[i].why);
        fprintf(f, ": %d", er->reasons[i].n);
    }
    fputs("}}", f);
}

/* ----------------------------------------------------------------- main */

static void usage(void) {
    fputs("usage: report_grid [--out FILE] [--seed N] [--engines a,b] [--variants v,w]\n"
          "                   [--cells origin,origin] [--check-baseline] [--quiet]\n"
          "runs the differential grid through each engine (default: attnguard; a built-in\n"
          "adapter name or a path to an adapter object), judging each against the fp64\n"
          "reference and a baseline of its own precision, and writes JSON.  --variants keeps\n"
          "only the named engine variants (\"default\" for an engine's own choice, else its\n"
          "option strings, e.g. isa=avx2,tune=amd).  --check-baseline also builds the cells\n"
          "every engine skips, to check the naive baseline against the reference there;\n"
          "--cells keeps the blocks named (crossed, fp8, causality, window-lr,\n"
          "prefill-normal, laguna-xs).\n"
          "Exit 0 all judged cells pass, 1 a cell failed, 2 usage or setup error\n",
          stderr);
}

/* 1 when word is one of the comma-separated words of list. */
static int listed(const char *list, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

/* Keep the variants of er named in `list` (comma separated; NULL keeps all). */
static void pick_variants(engine_run *er, const char *list) {
    er->n_var = 0;
    for (int i = 0; i < er->h.n_variants; i++) {
        /* the default variant runs without options, as a group without them does */
        const char *v = i == 0 ? "" : er->h.variants[i].options;
        if (!list || listed(list, v[0] ? v : "default")) er->var[er->n_var++] = v;
    }
}

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int main(int argc, char **argv) {
    const char *out_path = NULL, *engines_arg = "attnguard", *variants_arg = NULL;
    const char *cells_arg = NULL;
    uint64_t seed = 20240601u;
    int quiet = 0, check_all = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_path = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--engines") == 0 && i + 1 < argc) engines_arg = argv[++i];
        else if (strcmp(argv[i], "--variants") == 0 && i + 1 < argc) variants_arg = argv[++i];
        else if (strcmp(argv[i], "--quiet") == 0) quiet = 1;
        else if (strcmp(argv[i], "--check-baseline") == 0) check_all = 1;
        else if (strcmp(argv[i], "--cells") == 0 && i + 1 < argc) cells_arg = argv[++i];
        else {
            usage();
            return 2;
        }
    }

    static engine_run ers[MAX_ENGINES];
    int n_eng = 0;
    static char names[256];
    snprintf(names, sizeof names, "%s", engines_arg);
    char *save = NULL;
    for (char *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (n_eng == MAX_ENGINES) {
            fprintf(stderr, "report_grid: at most %d engines\n", MAX_ENGINES);
            return 2;
        }
        engine_run *er = &ers[n_eng];
        char err[AG_MSG_TEXT_LEN + 64];
        if (engine_host_open(&er->h, t, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "report_grid: %s\n", err);
            return 2;
        }
        er->name = er->h.e->name;
        pick_variants(er, variants_arg);
        if (er->n_var == 0) {
            fprintf(stderr, "report_grid: engine %s has none of the variants '%s'; it has:",
                    er->name, variants_arg);
            for (int v = 0; v < er->h.n_variants; v++)
                fprintf(stderr, " %s", v ? er->h.variants[v].options : "default");
            fputc('\n', stderr);
            return 2;
        }
        n_eng++;
    }
    if (n_eng == 0) {
        usage();
        return 2;
    }

    static grid_cell cells[GRID_MAX_CELLS];
    const int n = grid_build_cells(cells, seed);
    int n_dealt = 0;
    while (n_dealt < n && !cells[n_dealt].every_variant) n_dealt++;
    for (int e = 0; e < n_eng; e++) {
        uint64_t rng = seed ^ name_hash(ers[e].name);
        grid_deal(ers[e].dealt, n_dealt, ers[e].n_var, &rng);
    }

    static result results[MAX_RESULTS];
    static skip_rec skips[MAX_RESULTS];
    static grid_cell_info infos[GRID_MAX_CELLS];
    int n_res = 0, n_skip = 0, passed = 0;
    double ref_cpu = 0, ref_wall = 0;
    int n_checked = 0, bad_baseline = 0;
    const double t_all = now_ms();
    for (int i = 0; i < n; i++) {
        static cell_ctx x;
        memset(&x, 0, sizeof x);
        x.ce = &cells[i];
        x.state = -1;
        if (cells_arg && !listed(cells_arg, x.ce->origin)) continue;
        grid_cell_case(x.ce, seed, &x.c);
        grid_describe(x.ce, &x.c, &infos[i]);
        for (int e = 0; e < n_eng; e++) {
            engine_run *er = &ers[e];
            char why[sizeof skips[0].reason];
            if (engine_host_unsupported(&er->h, &x.c, why, sizeof why)) {
                if (n_skip < MAX_RESULTS) record_skip(&skips[n_skip++], er, i, e, why);
                continue;
            }
            const int v0 = x.ce->every_variant ? 0 : er->dealt[i];
            const int v1 = x.ce->every_variant ? er->n_var : v0 + 1;
            for (int v = v0; v < v1 && n_res < MAX_RESULTS; v++) {
                result *r = &results[n_res];
                double t0 = now_ms();
                if (x.state < 0) {   /* built for the first run that needs it */
                    cell_build(&x);
                    const double t1 = now_ms();
                    ref_wall += t1 - t0;
                    t0 = t1;
                }
                if (!x.state) {
                    memset(r, 0, sizeof *r);
                    r->variant = er->var[v];
                    r->status = AG_INTERNAL;
                    snprintf(r->message, sizeof r->message, "%s", x.err);
                } else if (!run_engine(er, v, &x, r, why, sizeof why)) {
                    if (n_skip < MAX_RESULTS) record_skip(&skips[n_skip++], er, i, e, why);
                    er->seconds += (now_ms() - t0) / 1e3;
                    continue;
                }
                r->cell = i;
                r->engine = e;
                n_res++;
                er->cells++;
                er->passed += r->pass;
                passed += r->pass;
                er->seconds += (now_ms() - t0) / 1e3;
                if (!quiet && !r->pass)
                    fprintf(stderr, "report_grid: FAIL cell %d (%s) %s %s: %s\n", i, x.ce->origin,
                            er->name, r->variant[0] ? r->variant : "default", r->message);
            }
        }
        /* --check-baseline: every cell's baseline against the reference,
         * also where every engine skipped the cell (fp8, say) */
        if (check_all && x.state < 0) {
            const double tb = now_ms();
            cell_build(&x);
            ref_wall += now_ms() - tb;
        }
        if (x.state == 0 && strstr(x.err, "harness bug")) {
            bad_baseline++;
            fprintf(stderr, "report_grid: cell %d (%s): %s\n", i, x.ce->origin, x.err);
        }
        n_checked += x.state >= 0;
        /* the reference is shared: its time is nobody's engine time */
        infos[i].naive_check = x.state >= 0 ? x.naive_check : -1;
        infos[i].ref_ms = x.ref_cpu_ms;
        ref_cpu += x.ref_cpu_ms;
        if (x.state >= 0) cell_free(&x);
        if (!quiet && ((i + 1) % 50 == 0 || i + 1 == n))
            fprintf(stderr, "report_grid: %d/%d cells, %d judged runs, %d pass, %d skipped\n",
                    i + 1, n, n_res, passed, n_skip);
    }
    const double elapsed = (now_ms() - t_all) / 1e3;

    FILE *f = out_path ? fopen(out_path, "w") : stdout;
    if (!f) {
        perror(out_path);
        return 2;
    }
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fprintf(f, "{\n  \"tool\": \"report_grid\",\n  \"date\": \"%s\",\n  \"seed\": %llu,\n",
            date, (unsigned long long)seed);
    /* the kernel tables the judged runs reported, in order of appearance */
    fputs("  \"isas\": [", f);
    int n_isa = 0;
    for (int i = 0; i < n_res; i++) {
        const char *k = results[i].gi.kernels[0] ? results[i].gi.kernels : "?";
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(results[j].gi.kernels[0] ? results[j].gi.kernels : "?", k) == 0;
        if (seen) continue;
        if (n_isa++) fputs(", ", f);
        json_str(f, k);
    }
    fputs("],\n  \"engines\": [\n", f);
    for (int e = 0; e < n_eng; e++) {
        json_engine(f, &ers[e]);
        fputs(e + 1 < n_eng ? ",\n" : "\n", f);
    }
    fprintf(f, "  ],\n  \"criterion\": \"pass = status AG_OK and (every element within "
               "cmp_tolerance of the reference under the engine's declared rounding, or engine "
               "max_abs and max_rel both <= 2 x those of a naive baseline at the engine's own "
               "precision); NaN never passes\",\n");
    fprintf(f, "  \"elapsed_s\": %.2f,\n  \"reference_s\": %.2f,\n  \"reference_cpu_s\": %.2f,\n"
               "  \"baseline_checked\": %d,\n  \"baseline_check_failed\": %d,\n"
               "  \"num_cells\": %d,\n"
               "  \"passed\": %d,\n  \"failed\": %d,\n  \"num_skipped\": %d,\n  \"cells\": [\n",
            elapsed, ref_wall / 1e3, ref_cpu / 1e3, n_checked, bad_baseline, n_res, passed,
            n_res - passed, n_skip);
    for (int i = 0; i < n_res; i++) {
        const result *r = &results[i];
        json_cell(f, &cells[r->cell], &infos[r->cell], r, &ers[r->engine]);
        fputs(i + 1 < n_res ? ",\n" : "\n", f);
    }
    fputs("  ],\n  \"skipped\": [\n", f);
    for (int i = 0; i < n_skip; i++) {
        const skip_rec *s = &skips[i];
        const grid_cell *ce = &cells[s->cell];
        /* where the cell sits in the report's heat map, as json_cell writes it */
        fprintf(f, "    {\"id\": %d, \"origin\": \"%s\", \"dtype\": \"%s\", \"head_dim\": %d, "
                   "\"group\": \"%s\", \"window\": %d, \"engine_name\": ",
                s->cell, ce->origin, dname(ce->kv), (int)ce->head_dim, grid_groups[ce->group].label,
                ce->wl >= 0 ? (int)ce->wl + 1 : -1);
        json_str(f, ers[s->engine].name);
        fputs(", \"reason\": ", f);
        json_str(f, s->reason);
        fputs(i + 1 < n_skip ? "},\n" : "}\n", f);
    }
    fputs("  ]\n}\n", f);
    if (f != stdout && fclose(f) != 0) {
        perror(out_path);
        return 2;
    }
    for (int e = 0; e < n_eng; e++) {
        const engine_run *er = &ers[e];
        fprintf(stderr, "report_grid: %s: %d cells judged over %d variant%s, %d pass, %d fail, "
                        "%d skipped, %.1f s (+ %.1f s of shared reference, %.1f s CPU)\n",
                er->name, er->cells, er->n_var, er->n_var == 1 ? "" : "s", er->passed,
                er->cells - er->passed, er->skipped, er->seconds, ref_wall / 1e3, ref_cpu / 1e3);
        for (int i = 0; i < MAX_SKIP_REASONS && er->reasons[i].n; i++)
            fprintf(stderr, "report_grid:   skipped %4d: %s\n", er->reasons[i].n,
                    er->reasons[i].why);
    }
    if (check_all || bad_baseline)
        fprintf(stderr, "report_grid: the naive baseline checked against the reference on %d "
                        "cells, %d disagree\n", n_checked, bad_baseline);
    for (int e = 0; e < n_eng; e++) engine_host_close(&ers[e].h);
    return passed == n_res && !bad_baseline ? 0 : 1;
}
