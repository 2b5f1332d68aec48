/*
 * grid.c — the differential correctness grid behind `make report`.
 *
 * Runs a seeded selection of a few hundred cells over the engine's
 * dimensions (ISA x dtype x head_dim x GQA group x window x soft cap x
 * sinks x decode/prefill/mixed x split policy x threads x block size) and,
 * for each cell, measures the engine's max abs / max rel error against the
 * fp64 reference (harness/ref.c) next to the error of a same-precision
 * naive baseline (reports/naive.c).  Writes one JSON document.
 *
 * Selection: dtype x head_dim x group x window is crossed in full (216
 * combinations); every other dimension is dealt out from a seeded, balanced
 * permutation, so each of its values lands in many cells and in varied
 * company.  A few hand-built cells add the literal Laguna XS groups (48 and
 * 64 query heads over 8 KV heads, D 128, bf16) per ISA.  Sequence lengths
 * shrink with the cost of a key (heads x head_dim) so the whole grid,
 * reference included, stays well under two minutes on two cores.
 *
 * Verdict per cell: the engine ran (ATTN_OK) and either every element is
 * within cmp_tolerance, or its max abs AND max rel errors are each at most
 * 2x the baseline's.
 * NaN is never a pass.
 *
 * Owns: the cell selection, the per-cell pipeline and the JSON layout
 * (documented in reports/schema.json under "grid").  Does not own the
 * tolerances (harness/compare.c) or the inputs (harness/problem.c).
 *
 * Usage: report_grid [--out FILE] [--seed N] [--cells-per-combo N]
 *                    [--isa a,b] [--quiet]
 * Exit: 0 all cells pass, 1 some cell failed, 2 usage or setup error.
 */
#include "../harness/case.h"
#include "../harness/compare.h"
#include "../harness/problem.h"
#include "naive.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ISAS 8
#define MAX_CELLS 2048

/* ----------------------------------------------------------- dimensions */

typedef struct group_spec {
    const char *label;
    int32_t heads, kv_heads;
} group_spec;

static const attn_dtype dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_BF16, ATTN_DTYPE_F16};
static const int32_t head_dims[] = {64, 80, 128, 256};
/* GQA ratios 1, 4, 6, 8 (MQA) and the two Laguna XS layer kinds, each its
 * own attention group (the engine refuses a group that mixes them). */
static const group_spec groups[] = {
    {"mha-8/8", 8, 8},          {"gqa-16/4", 16, 4},          {"gqa-12/2", 12, 2},
    {"mqa-8/1", 8, 1},          {"laguna-48/8", 48, 8},       {"laguna-64/8", 64, 8},
};
static const int32_t windows[] = {-1, 7, 512};
static const float softcaps[] = {0.0f, 0.5f, 50.0f};
static const char *const modes[] = {"decode", "prefill", "mixed"};
static const attn_split_mode splits[] = {ATTN_SPLIT_AUTO, ATTN_SPLIT_OFF, ATTN_SPLIT_ON,
                                         ATTN_SPLIT_FIXED};
static const char *const split_names[] = {"auto", "off", "on", "fixed3"};
static const int32_t thread_counts[] = {1, 2, 3};
static const int32_t block_sizes[] = {16, 32, 7};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef struct cell {
    int id;
    const char *isa;
    attn_dtype dtype;
    int32_t head_dim, window, threads, block_size;
    int group, mode, split, sinks;
    float softcap;
    const char *origin;   /* "crossed" or "laguna-xs" */
} cell;

typedef struct err_stats {
    double max_abs, max_rel, tol_use;   /* tol_use: max |e| / (atol + rtol |ref|) */
    size_t nan_count;
} err_stats;

typedef struct cell_result {
    attn_status status;
    char message[ATTN_ERROR_MSG_LEN];
    err_stats engine, naive;
    cmp_tol tol;
    int within_tol, within_2x, pass;
    int bf16_rounding;          /* the builder rounds (attn_builder_info) */
    int32_t num_reqs, num_tokens;
    int64_t pairs;              /* (query row, visible key) pairs per head */
    double engine_ms, total_ms;
    size_t scratch_bytes;
    char reqs[160];             /* "q/kv,q/kv,..." */
} cell_result;

/* ------------------------------------------------------------ utilities */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint64_t mix(uint64_t *s) { return problem_rng_next(s); }

/* A balanced assignment: perm of 0..n-1 mapped to n_values buckets. */
static void balanced(int *out, int n, int n_values, uint64_t *rng) {
    for (int i = 0; i < n; i++) out[i] = i % n_values;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(mix(rng) % (uint64_t)(i + 1));
        int t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
}

static int32_t clampi(int64_t v, int64_t lo, int64_t hi) {
    return (int32_t)(v < lo ? lo : (v > hi ? hi : v));
}

/* ------------------------------------------------------------- batches */

/* Fill the requests of a cell's case; lengths follow the key budget. */
static void make_batch(const cell *ce, case_spec *c, uint64_t *rng) {
    const group_spec *gs = &groups[ce->group];
    /* ~2e7 multiply-adds per pass of the reference at 2*Hq*D per pair */
    int64_t budget = 20000000 / ((int64_t)gs->heads * ce->head_dim);
    if (budget < 1500) budget = 1500;
    if (budget > 40000) budget = 40000;
    int n = 0;
    const char *mode = modes[ce->mode];
    if (strcmp(mode, "decode") == 0) {
        int32_t l1 = clampi(budget / 2, 64, 1000);
        if (ce->window == 512 && l1 < 530) l1 = 530;   /* make the window bite */
        c->q_len[n] = 1; c->kv_len[n++] = l1;
        c->q_len[n] = 1; c->kv_len[n++] = 1 + (int32_t)(mix(rng) % (uint64_t)(l1 / 3 + 1));
        c->q_len[n] = 1; c->kv_len[n++] = 1;
    } else if (strcmp(mode, "prefill") == 0) {
        int32_t l1 = clampi((int64_t)sqrt((double)budget * 1.5), 8, 300);
        c->q_len[n] = l1; c->kv_len[n++] = l1;
        int32_t l2 = 1 + (int32_t)(mix(rng) % 40u);
        c->q_len[n] = l2; c->kv_len[n++] = l2;
    } else {
        /* chunked prefill continuing a long context, a decode, a fresh prefill */
        int32_t k = clampi(budget / 6, 40, 700);
        if (ce->window == 512 && k < 530) k = 530;
        int32_t chunk = clampi(budget / (3 * (int64_t)k), 2, 64);
        c->q_len[n] = chunk; c->kv_len[n++] = k;
        c->q_len[n] = 1; c->kv_len[n++] = clampi(budget / 3, 32, 800);
        int32_t fresh = clampi((int64_t)sqrt((double)budget / 3.0), 4, 100);
        c->q_len[n] = fresh; c->kv_len[n++] = fresh;
        c->q_len[n] = 1; c->kv_len[n++] = 1 + (int32_t)(mix(rng) % 200u);
    }
    c->num_reqs = n;
}

static void cell_case(const cell *ce, uint64_t seed, case_spec *c) {
    case_default(c);
    const group_spec *gs = &groups[ce->group];
    snprintf(c->name, sizeof c->name, "grid-%d", ce->id);
    c->num_layers = 1;
    memset(&c->layers[0], 0, sizeof c->layers[0]);
    c->layers[0].num_heads = gs->heads;
    c->layers[0].window = ce->window;
    c->layers[0].softcap = ce->softcap;
    c->layers[0].sinks = (uint8_t)ce->sinks;
    c->model_num_heads = gs->heads;
    c->num_kv_heads = gs->kv_heads;
    c->head_dim = ce->head_dim;
    c->block_size = ce->block_size;
    c->q_dtype = c->kv_dtype = c->out_dtype = ce->dtype;
    c->causal = 1;
    c->blocks = (case_blocks)(ce->id % 2 ? CASE_BLOCKS_SHUFFLED : CASE_BLOCKS_CONTIGUOUS);
    c->threads = ce->threads;
    c->split = splits[ce->split];
    c->split_count = 3;
    c->seed = seed * 1000003u + (uint64_t)ce->id;
    c->expect = ATTN_OK;
    snprintf(c->isa, sizeof c->isa, "%s", ce->isa);
    uint64_t rng = c->seed ^ 0x5eedu;
    make_batch(ce, c, &rng);
}

/* ------------------------------------------------------------ measuring */

/* Errors of got against the exact ref (max_abs, max_rel), and the share
 * of the tolerance used (tol_use), measured where lo and hi are given from
 * the nearest point of [lo[i], hi[i]] (the bf16-rounding model's range). */
static void measure(const double *ref, const double *lo, const double *hi, const void *got,
                    attn_dtype dt, size_t n, cmp_tol tol, err_stats *st) {
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

static int run_cell(const cell *ce, uint64_t seed, cell_result *res) {
    memset(res, 0, sizeof *res);
    double t_start = now_ms();
    case_spec c;
    cell_case(ce, seed, &c);
    res->num_reqs = c.num_reqs;
    size_t used = 0;
    for (int32_t r = 0; r < c.num_reqs && used + 24 < sizeof res->reqs; r++) {
        used += (size_t)snprintf(res->reqs + used, sizeof res->reqs - used, "%s%d/%d",
                                 r ? "," : "", (int)c.q_len[r], (int)c.kv_len[r]);
        int64_t lo = (int64_t)c.kv_len[r] - c.q_len[r];
        for (int32_t i = 0; i < c.q_len[r]; i++) {
            int64_t vis = lo + i + 1;
            if (ce->window > 0 && vis > ce->window) vis = ce->window;
            res->pairs += vis;
        }
    }

    problem p;
    char errbuf[256];
    attn_builder *b = NULL;
    attn_plan *plan = NULL;
    void *scratch = NULL, *out = NULL, *base = NULL;
    double *ref = NULL, *lo = NULL, *hi = NULL;
    attn_error err;
    memset(&err, 0, sizeof err);

    if (problem_init(&p, &c, (size_t)1 << 30, errbuf, sizeof errbuf) != 0 || !p.materialized) {
        snprintf(res->message, sizeof res->message, "problem: %.200s",
                 p.unmaterialized_reason ? p.unmaterialized_reason : errbuf);
        res->status = ATTN_E_INTERNAL;
        return 0;
    }
    res->num_tokens = p.num_tokens;
    res->tol = cmp_tolerance(c.q_dtype, c.kv_dtype, c.out_dtype);
    const size_t n = problem_out_elems(&p, 0), osz = attn_dtype_size(c.out_dtype);

    attn_plan_opts po = {c.split, c.split_count, 0};
    res->status = attn_builder_create(&p.group, &b, &err);
    if (res->status == ATTN_OK) {
        attn_builder_info bi;
        memset(&bi, 0, sizeof bi);
        attn_builder_get_info(b, &bi, NULL);
        res->bf16_rounding = bi.bf16_rounding;
        res->status = attn_builder_build(b, &p.batch, &po, &plan, &err);
    }
    if (res->status == ATTN_OK) res->status = attn_plan_scratch_size(plan, &res->scratch_bytes, &err);
    if (res->status != ATTN_OK) {
        snprintf(res->message, sizeof res->message, "%s: %.200s",
                 attn_status_name(res->status), err.message);
        goto done;
    }
    size_t sbytes = (res->scratch_bytes + ATTN_ALIGN - 1) / ATTN_ALIGN * ATTN_ALIGN;
    scratch = aligned_alloc(ATTN_ALIGN, sbytes ? sbytes : ATTN_ALIGN);
    out = malloc(n * osz);
    base = malloc(n * osz);
    ref = malloc(n * sizeof *ref);
    if (!scratch || !out || !base || !ref) {
        res->status = ATTN_E_NO_MEMORY;
        snprintf(res->message, sizeof res->message, "report_grid: out of memory");
        goto done;
    }
    memset(out, 0xff, n * osz);   /* NaN in every dtype: unwritten elements show */

    attn_tensors t = problem_tensors(&p, 0, out);
    double t0 = now_ms();
    res->status = attn_run(plan, &p.layers[0], &t, scratch, res->scratch_bytes, &err);
    res->engine_ms = now_ms() - t0;
    if (res->status != ATTN_OK) {
        snprintf(res->message, sizeof res->message, "%s: %.200s",
                 attn_status_name(res->status), err.message);
        goto done;
    }

    /* a builder that rounds to bf16 is judged against the ranges of that
     * model (harness/compare.c) and beside a baseline that rounds alike */
    if (res->bf16_rounding) {
        lo = malloc(n * sizeof *lo);
        hi = malloc(n * sizeof *hi);
        if (!lo || !hi) {
            res->status = ATTN_E_NO_MEMORY;
            snprintf(res->message, sizeof res->message, "report_grid: out of memory");
            goto done;
        }
    }
    if ((res->bf16_rounding ? problem_reference_bf16dot(&p, 0, ref, lo, hi)
                            : problem_reference(&p, 0, ref, NULL, NULL)) != 0) {
        res->status = ATTN_E_INTERNAL;
        snprintf(res->message, sizeof res->message, "the reference refused the input");
        goto done;
    }

    naive_input ni;
    memset(&ni, 0, sizeof ni);
    ni.num_reqs = c.num_reqs;
    ni.query_start_loc = p.qsl;
    ni.seq_lens = p.seq_lens;
    ni.block_table = p.block_table;
    ni.block_table_stride = p.bt_stride;
    ni.causal = c.causal;
    ni.num_heads = c.layers[0].num_heads;
    ni.num_kv_heads = c.num_kv_heads;
    ni.head_dim = c.head_dim;
    ni.block_size = c.block_size;
    ni.window = c.layers[0].window;
    ni.softcap = c.layers[0].softcap;
    ni.scale = c.layers[0].scale;
    ni.sinks = p.layers[0].sinks;
    ni.alibi_slopes = p.layers[0].alibi_slopes;
    ni.q = p.q[0];
    ni.k_cache = p.k_cache;
    ni.v_cache = p.v_cache;
    ni.q_dtype = c.q_dtype;
    ni.kv_dtype = c.kv_dtype;
    ni.out_dtype = c.out_dtype;
    ni.bf16_dots = res->bf16_rounding;
    if (naive_attention(&ni, base) != 0) {
        res->status = ATTN_E_INTERNAL;
        snprintf(res->message, sizeof res->message, "the naive baseline failed");
        goto done;
    }

    measure(ref, lo, hi, out, c.out_dtype, n, res->tol, &res->engine);
    measure(ref, NULL, NULL, base, c.out_dtype, n, res->tol, &res->naive);
    res->within_tol = res->engine.nan_count == 0 && res->engine.tol_use <= 1.0;
    /* "error" is both figures: max abs alone is dominated by the output
     * rounding of the largest elements and hides errors on small ones. */
    res->within_2x = res->engine.nan_count == 0 &&
                     res->engine.max_abs <= 2.0 * res->naive.max_abs &&
                     res->engine.max_rel <= 2.0 * res->naive.max_rel;
    res->pass = res->within_tol || res->within_2x;
    if (!res->pass)
        snprintf(res->message, sizeof res->message,
                 "max_abs %.3g / max_rel %.3g vs baseline %.3g / %.3g (limit 2x); "
                 "%.2f x tolerance", res->engine.max_abs, res->engine.max_rel,
                 res->naive.max_abs, res->naive.max_rel, res->engine.tol_use);
done:
    free(ref);
    free(lo);
    free(hi);
    free(base);
    free(out);
    free(scratch);
    attn_plan_destroy(plan);
    attn_builder_destroy(b);
    problem_free(&p);
    res->total_ms = now_ms() - t_start;
    return res->pass;
}

/* ------------------------------------------------------------------ JSON */

static void json_num(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

static void json_err(FILE *f, const char *key, const err_stats *e) {
    fprintf(f, "\"%s\": {\"max_abs\": ", key);
    json_num(f, e->nan_count ? INFINITY : e->max_abs);
    fputs(", \"max_rel\": ", f);
    json_num(f, e->nan_count ? INFINITY : e->max_rel);
    fputs(", \"tol_use\": ", f);
    json_num(f, e->nan_count ? INFINITY : e->tol_use);
    fprintf(f, ", \"nan\": %zu}", e->nan_count);
}

static void json_cell(FILE *f, const cell *ce, const cell_result *r) {
    const group_spec *gs = &groups[ce->group];
    fprintf(f, "    {\"id\": %d, \"origin\": \"%s\", \"isa\": ", ce->id, ce->origin);
    json_str(f, ce->isa);
    fprintf(f, ", \"dtype\": \"%s\", \"head_dim\": %d, \"group\": \"%s\", \"num_heads\": %d, "
               "\"num_kv_heads\": %d, \"window\": %d, \"softcap\": %g, \"sinks\": %s, "
               "\"mode\": \"%s\", \"split\": \"%s\", \"threads\": %d, \"block_size\": %d,\n",
            attn_dtype_name(ce->dtype), (int)ce->head_dim, gs->label, (int)gs->heads,
            (int)gs->kv_heads, (int)ce->window, (double)ce->softcap,
            ce->sinks ? "true" : "false", modes[ce->mode], split_names[ce->split],
            (int)ce->threads, (int)ce->block_size);
    fprintf(f, "     \"requests\": \"%s\", \"num_tokens\": %d, \"pairs\": %lld, "
               "\"scratch_bytes\": %zu, \"status\": \"%s\",\n     ",
            r->reqs, (int)r->num_tokens, (long long)r->pairs, r->scratch_bytes,
            attn_status_name(r->status));
    json_err(f, "engine", &r->engine);
    fputs(",\n     ", f);
    json_err(f, "baseline", &r->naive);
    fputs(",\n     \"tolerance\": {\"atol\": ", f);
    json_num(f, r->tol.atol);
    fputs(", \"rtol\": ", f);
    json_num(f, r->tol.rtol);
    fprintf(f, "}, \"within_tolerance\": %s, \"within_2x_baseline\": %s, \"pass\": %s, "
               "\"bf16_rounding\": %s, \"engine_ms\": %.3f, \"total_ms\": %.1f, \"message\": ",
            r->within_tol ? "true" : "false", r->within_2x ? "true" : "false",
            r->pass ? "true" : "false", r->bf16_rounding ? "true" : "false", r->engine_ms,
            r->total_ms);
    json_str(f, r->message);
    fputc('}', f);
}

/* --------------------------------------------------------------- cells */

static int build_cells(cell *cells, const char *const *isas, int n_isa, uint64_t seed) {
    const int n_cross = N_OF(dtypes) * N_OF(head_dims) * N_OF(groups) * N_OF(windows);
    static int a_isa[MAX_CELLS], a_cap[MAX_CELLS], a_sink[MAX_CELLS], a_mode[MAX_CELLS],
        a_split[MAX_CELLS], a_thr[MAX_CELLS], a_bs[MAX_CELLS];
    uint64_t rng = seed ^ 0xa77e1d5ull;
    balanced(a_isa, n_cross, n_isa, &rng);
    balanced(a_cap, n_cross, N_OF(softcaps), &rng);
    balanced(a_sink, n_cross, 2, &rng);
    balanced(a_mode, n_cross, N_OF(modes), &rng);
    balanced(a_split, n_cross, N_OF(splits), &rng);
    balanced(a_thr, n_cross, N_OF(thread_counts), &rng);
    balanced(a_bs, n_cross, N_OF(block_sizes), &rng);
    int n = 0;
    for (int di = 0; di < N_OF(dtypes); di++)
        for (int hi = 0; hi < N_OF(head_dims); hi++)
            for (int gi = 0; gi < N_OF(groups); gi++)
                for (int wi = 0; wi < N_OF(windows); wi++) {
                    cell *ce = &cells[n];
                    ce->id = n;
                    ce->origin = "crossed";
                    ce->dtype = dtypes[di];
                    ce->head_dim = head_dims[hi];
                    ce->group = gi;
                    ce->window = windows[wi];
                    ce->isa = isas[a_isa[n]];
                    ce->softcap = softcaps[a_cap[n]];
                    ce->sinks = a_sink[n];
                    ce->mode = a_mode[n];
                    ce->split = a_split[n];
                    ce->threads = thread_counts[a_thr[n]];
                    ce->block_size = block_sizes[a_bs[n]];
                    n++;
                }
    /* Laguna XS as served: full layers (48 heads, no window) and sliding
     * layers (64 heads, window 512) as two groups, bf16, D 128, 8 KV heads,
     * a mixed batch, split on, both cores -- on every ISA. */
    for (int ii = 0; ii < n_isa; ii++)
        for (int k = 0; k < 4; k++) {
            cell *ce = &cells[n];
            memset(ce, 0, sizeof *ce);
            ce->id = n;
            ce->origin = "laguna-xs";
            ce->isa = isas[ii];
            ce->dtype = ATTN_DTYPE_BF16;
            ce->head_dim = 128;
            ce->group = (k % 2) ? 5 : 4;
            ce->window = (k % 2) ? 512 : -1;
            ce->mode = k < 2 ? 2 : 0;           /* mixed, then pure decode */
            ce->split = k < 2 ? 2 : 0;          /* on, then auto */
            ce->threads = 2;
            ce->block_size = 16;
            n++;
        }
    return n;
}

/* ----------------------------------------------------------------- main */

static void usage(void) {
    fputs("usage: report_grid [--out FILE] [--seed N] [--isa a,b] [--quiet]\n"
          "runs the differential grid (engine vs fp64 reference vs same-precision\n"
          "naive baseline) and writes JSON; exit 0 all pass, 1 a cell failed\n",
          stderr);
}

int main(int argc, char **argv) {
    const char *out_path = NULL, *isa_arg = NULL;
    uint64_t seed = 20240601u;
    int quiet = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) out_path = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc) isa_arg = argv[++i];
        else if (strcmp(argv[i], "--quiet") == 0) quiet = 1;
        else {
            usage();
            return 2;
        }
    }

    const char *avail[MAX_ISAS];
    int n_avail = attn_isa_available(avail, MAX_ISAS);
    if (n_avail > MAX_ISAS) n_avail = MAX_ISAS;
    const char *isas[MAX_ISAS];
    int n_isa = 0;
    static char isa_buf[128];
    if (isa_arg) {
        snprintf(isa_buf, sizeof isa_buf, "%s", isa_arg);
        for (char *tok = strtok(isa_buf, ","); tok && n_isa < MAX_ISAS; tok = strtok(NULL, ","))
            isas[n_isa++] = tok;
    } else {
        for (int i = 0; i < n_avail; i++) isas[n_isa++] = avail[i];
    }
    if (n_isa == 0) {
        fputs("report_grid: no ISA available\n", stderr);
        return 2;
    }

    static cell cells[MAX_CELLS];
    static cell_result results[MAX_CELLS];
    int n = build_cells(cells, isas, n_isa, seed);

    FILE *f = out_path ? fopen(out_path, "w") : stdout;
    if (!f) {
        perror(out_path);
        return 2;
    }
    double t0 = now_ms();
    int passed = 0;
    for (int i = 0; i < n; i++) {
        passed += run_cell(&cells[i], seed, &results[i]);
        if (!quiet && (!results[i].pass || (i + 1) % 50 == 0 || i + 1 == n))
            fprintf(stderr, "report_grid: %d/%d cells, %d pass%s%s\n", i + 1, n, passed,
                    results[i].pass ? "" : "  FAIL: ", results[i].pass ? "" : results[i].message);
    }
    double elapsed = (now_ms() - t0) / 1e3;

    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    fprintf(f, "{\n  \"tool\": \"report_grid\",\n  \"date\": \"%s\",\n  \"seed\": %llu,\n",
            date, (unsigned long long)seed);
    fputs("  \"isas\": [", f);
    for (int i = 0; i < n_isa; i++) {
        if (i) fputs(", ", f);
        json_str(f, isas[i]);
    }
    fprintf(f, "],\n  \"criterion\": \"pass = status ok and (every element within cmp_tolerance"
               " or engine max_abs and max_rel both <= 2 x the baseline's); NaN never passes\",\n");
    fprintf(f, "  \"elapsed_s\": %.2f,\n  \"num_cells\": %d,\n  \"passed\": %d,\n"
               "  \"failed\": %d,\n  \"cells\": [\n",
            elapsed, n, passed, n - passed);
    for (int i = 0; i < n; i++) {
        json_cell(f, &cells[i], &results[i]);
        fputs(i + 1 < n ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    if (f != stdout && fclose(f) != 0) {
        perror(out_path);
        return 2;
    }
    fprintf(stderr, "report_grid: %d cells (%d ISA%s), %d pass, %d fail, %.1f s\n", n, n_isa,
            n_isa == 1 ? "" : "s", passed, n - passed, elapsed);
    return passed == n ? 0 : 1;
}
