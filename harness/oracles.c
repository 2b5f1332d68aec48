/*
 * oracles.c — the six oracles of DESIGN §4 and check_case, which runs them
 * on one case: bad input and the mixed-heads refusal (judged by the defect
 * model in defects.c), the
 * sizing comparison (without kernels), guarded runs (scratch bounds) checked
 * against the reference (differential), and the metamorphic runs (split
 * off/on/fixed, another thread count, physically permuted blocks, a
 * bitwise rerun).
 *
 * Owns: what counts as a finding and how it is worded and fired.  Does not
 * own the tolerances (compare.c), the inputs (problem.c), the reference
 * (ref.c) or the guarded memory (guard.c).  Knows nothing of src/ beyond
 * attn.h: the defect model (defects.c) is written from the public contract, not
 * from the engine's validation code, so that a validation bug cannot hide
 * in both.
 *
 * Cost: every input of the fuzz target comes through here, so nothing is
 * kept across calls (a stale buffer could hide a bug) but nothing is done
 * twice either: one problem, one reference per layer, one guarded copy of
 * each input, one output guard reused by every run (all layers of a valid
 * group have the same output shape), one scratch guard per plan.
 */
#include "oracles.h"
#include "guard.h"
#include "ref.h"
#include "../src/attn_plan_inspect.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- names */

static const char *const k_oracle_names[ORACLE_COUNT] = {
    "none", "scratch-bounds", "sizing", "mixed-heads", "differential", "invariance", "bad-input",
};

const char *oracle_name(oracle_id id) {
    if ((unsigned)id >= ORACLE_COUNT) return "?";
    return k_oracle_names[id];
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static oracle_id found(finding *f, oracle_id id, const char *fmt, ...) {
    f->oracle = id;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
    return id;
}

static oracle_id clean(finding *f) {
    f->oracle = ORACLE_NONE;
    f->detail[0] = '\0';
    return ORACLE_NONE;
}

/* The references of layers [0, nl) into ref: plain (oracle_reference),
 * or under the bf16-rounding model (bf16: oracle_reference_bf16dot).  0:
 * all computed; -2: no memory (nothing to judge); -1: a layer refused,
 * which the defect model calls valid, and *res is that finding. */
static int reference_layers(const problem *p, int32_t nl, int bf16, oracle_ref *ref, finding *f,
                            oracle_id *res) {
    for (int32_t l = 0; l < nl; l++) {
        const int rr =
            bf16 ? oracle_reference_bf16dot(p, l, &ref[l]) : oracle_reference(p, l, &ref[l]);
        if (rr == -2) return -2;
        if (rr != 0) {
            *res = found(f, ORACLE_BAD_INPUT,
                         "the %sreference refused layers.%d of a case the defect model calls "
                         "valid (harness bug)", bf16 ? "bf16-rounding " : "", (int)l);
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- firing */

/* One frame per oracle so crash deduplication tells them apart.  The
 * distinct volatile stores keep the compiler from folding them into one. */
static volatile int g_fired;

#define FIRE_FN(fn, code)                                   \
    __attribute__((noinline, noreturn)) static void fn(void) { \
        g_fired = code;                                     \
        abort();                                            \
    }
FIRE_FN(oracle_fire_scratch_bounds, 1)
FIRE_FN(oracle_fire_sizing, 2)
FIRE_FN(oracle_fire_mixed_heads, 3)
FIRE_FN(oracle_fire_differential, 4)
FIRE_FN(oracle_fire_invariance, 5)
FIRE_FN(oracle_fire_bad_input, 6)
FIRE_FN(oracle_fire_unknown, 7)
#undef FIRE_FN

void oracle_fire(const finding *f) {
    oracle_id id = f ? f->oracle : ORACLE_COUNT;
    fprintf(stderr, "attnguard: ORACLE %s: %s\n", oracle_name(id), f ? f->detail : "(no finding)");
    fflush(stderr);
    switch (id) {
    case ORACLE_SCRATCH_BOUNDS: oracle_fire_scratch_bounds();
    case ORACLE_SIZING: oracle_fire_sizing();
    case ORACLE_MIXED_HEADS: oracle_fire_mixed_heads();
    case ORACLE_DIFFERENTIAL: oracle_fire_differential();
    case ORACLE_INVARIANCE: oracle_fire_invariance();
    case ORACLE_BAD_INPUT: oracle_fire_bad_input();
    default: oracle_fire_unknown();
    }
}

oracle_id oracle_check_expect(const attn_case *c, const case_defects *d, finding *f) {
    if (c->expect == ATTN_OK || d->unexpressible) return clean(f);
    if (oracle_defects_allow(d, DEFECT_CREATE | DEFECT_BUILD, c->expect)) return clean(f);
    char list[600];
    oracle_defects_format(d, DEFECT_CREATE | DEFECT_BUILD, list, sizeof list);
    return found(f, ORACLE_BAD_INPUT,
                 "case '%s' expects %s, which none of its defects deserves: the case is wrong; "
                 "defects %s", c->name, attn_status_name(c->expect), list);
}

oracle_id oracle_check_status(const case_defects *d, defect_stage stage, attn_status got,
                              const char *msg, int handed_out, finding *f) {
    char list[600];
    const char *where = stage == DEFECT_CREATE ? "attn_builder_create" : "attn_builder_build";
    if (!msg) msg = "";
    if (got == ATTN_E_NO_MEMORY) return clean(f);   /* the environment, not the engine */
    if (got != ATTN_OK && handed_out)
        return found(f, d->mixed && stage == DEFECT_CREATE ? ORACLE_MIXED_HEADS : ORACLE_BAD_INPUT,
                     "%s returned %s but wrote its out-parameter (a handle was handed back)",
                     where, attn_status_name(got));
    if (stage == DEFECT_CREATE && d->mixed) {
        /* The engine validates each layer's own fields (and the KV spec,
         * dtypes, threads) before agreement: any of those statuses is as
         * good as the dedicated one. */
        if (got == ATTN_E_MIXED_HEADS || (got != ATTN_OK && oracle_defects_allow(d, stage, got)))
            return clean(f);
        oracle_defects_format(d, stage, list, sizeof list);
        if (got == ATTN_OK)
            return found(f, ORACLE_MIXED_HEADS,
                         "a group whose layers disagree on num_heads was accepted (a builder "
                         "was created); want ATTN_E_MIXED_HEADS; defects %s", list);
        return found(f, ORACLE_MIXED_HEADS,
                     "a mixed group was refused with %s (\"%s\"), want ATTN_E_MIXED_HEADS or one "
                     "of %s", attn_status_name(got), msg, list);
    }
    int any = 0;
    for (int i = 0; i < d->n; i++) any |= (d->d[i].stage == stage);
    if (got == ATTN_OK) {
        if (!any) return clean(f);
        oracle_defects_format(d, stage, list, sizeof list);
        return found(f, ORACLE_BAD_INPUT, "%s accepted a defective input: %s", where, list);
    }
    if (any && oracle_defects_allow(d, stage, got)) return clean(f);
    oracle_defects_format(d, stage, list, sizeof list);
    if (got == ATTN_E_INTERNAL)
        return found(f, ORACLE_BAD_INPUT, "%s returned ATTN_E_INTERNAL (\"%s\"); defects %s",
                     where, msg, list);
    if (!any)
        return found(f, ORACLE_BAD_INPUT, "%s refused a valid input with %s (\"%s\")", where,
                     attn_status_name(got), msg);
    return found(f, ORACLE_BAD_INPUT, "%s returned %s (\"%s\"), not listed for the defects %s",
                 where, attn_status_name(got), msg, list);
}

/* ---------------------------------------------------------------- sizing */

oracle_id oracle_check_sizing(const attn_plan *plan, const attn_layer_desc *layers,
                              int32_t num_layers, int32_t head_dim, finding *f) {
    attn_error err;
    const attn_region *reg = NULL;
    size_t n = 0, bytes = 0;
    attn_plan_info info;
    memset(&info, 0, sizeof info);
    attn_status st;
    if ((st = attn_plan_regions(plan, &reg, &n, &err)) || (st = attn_plan_scratch_size(plan, &bytes, &err)) ||
        (st = attn_plan_get_info(plan, &info, &err)))
        return found(f, ORACLE_SIZING, "the plan's accessors failed: %s: %s",
                     attn_status_name(st), err.message);
    /* The table itself: sorted, aligned, disjoint, inside the scratchpad. */
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (reg[i].offset % ATTN_ALIGN || reg[i].offset < end || reg[i].offset > bytes ||
            reg[i].size > bytes - reg[i].offset)
            return found(f, ORACLE_SIZING,
                         "region %s (offset %zu, size %zu) is misaligned, overlaps its "
                         "predecessor (which ends at %zu) or leaves the scratchpad of %zu bytes",
                         reg[i].name, reg[i].offset, reg[i].size, end, bytes);
        end = reg[i].offset + reg[i].size;
    }
    if (n == 0) return clean(f);
    size_t *ext = malloc(n * sizeof *ext);
    if (!ext) return clean(f);
    oracle_id res = ORACLE_NONE;
    clean(f);
    for (int32_t l = 0; l < num_layers && res == ORACLE_NONE; l++) {
        const attn_layer_desc *L = &layers[l];
        st = attn_plan_layer_extents(plan, L, head_dim, ext, n, &err);
        if (st != ATTN_OK) {
            res = found(f, ORACLE_SIZING,
                        "attn_plan_layer_extents refused %s (%d heads; plan has %d): %s: %s",
                        L->name ? L->name : "layer", (int)L->num_heads, (int)info.num_heads,
                        attn_status_name(st), err.message);
            break;
        }
        size_t first = n, short_count = 0;
        for (size_t i = 0; i < n; i++)
            if (ext[i] > reg[i].size) {
                if (first == n) first = i;
                short_count++;
            }
        if (first < n)
            res = found(f, ORACLE_SIZING,
                        "%s (%d heads) needs %zu bytes in region %s but the plan (built for %d "
                        "heads, %d KV heads, head_dim %d) sized %zu (%zu short); %zu of %zu "
                        "regions too small", L->name ? L->name : "layer", (int)L->num_heads,
                        ext[first], reg[first].name, (int)info.num_heads,
                        (int)info.num_kv_heads, (int)info.head_dim, reg[first].size,
                        ext[first] - reg[first].size, short_count, n);
    }
    free(ext);
    return res;
}

/* ------------------------------------------------------ differential etc. */

int oracle_reference(const problem *p, int32_t l, oracle_ref *r) {
    memset(r, 0, sizeof *r);
    const size_t n = problem_out_elems(p, l), bytes = (n ? n : 1) * sizeof(double);
    r->val = malloc(bytes);
    r->lo = malloc(bytes);
    r->hi = malloc(bytes);
    if (!r->val || !r->lo || !r->hi) {
        oracle_ref_free(r);
        return -2;
    }
    if (problem_reference(p, l, r->val, r->lo, r->hi) != 0) {
        oracle_ref_free(r);
        return -1;
    }
    return 0;
}

int oracle_reference_bf16dot(const problem *p, int32_t l, oracle_ref *r) {
    if (r->rlo) return 0;
    const size_t n = problem_out_elems(p, l), bytes = (n ? n : 1) * sizeof(double);
    double *val = malloc(bytes), *lo = malloc(bytes), *hi = malloc(bytes);
    if (!val || !lo || !hi) {
        free(val), free(lo), free(hi);
        return -2;
    }
    if (problem_reference_bf16dot(p, l, val, lo, hi) != 0) {
        free(val), free(lo), free(hi);
        return -1;
    }
    free(val); /* the same exact outputs as r->val */
    r->rlo = lo;
    r->rhi = hi;
    return 0;
}

oracle_ref oracle_ref_view(const oracle_ref *r, int rounded) {
    oracle_ref v = {r->val, rounded ? r->rlo : r->lo, rounded ? r->rhi : r->hi, NULL, NULL,
                    rounded};
    return v;
}

void oracle_ref_free(oracle_ref *r) {
    free(r->val);
    free(r->lo);
    free(r->hi);
    free(r->rlo);
    free(r->rhi);
    memset(r, 0, sizeof *r);
}

/* "token 5 (req 1, row 2) head 3 dim 17" of element index i of layer l. */
static void elem_where(const problem *p, int32_t l, size_t i, char *buf, size_t cap) {
    size_t D = (size_t)p->c.head_dim, H = (size_t)p->c.layers[l].num_heads;
    size_t tok = i / (H * D);
    int32_t r = 0;
    while (r + 1 < p->c.num_reqs && (size_t)p->qsl[r + 1] <= tok) r++;
    snprintf(buf, cap, "element %zu = token %zu (req %d, row %zu of q_len %d, kv_len %d) head %zu "
                       "dim %zu", i, tok, (int)r, tok - (size_t)p->qsl[r], (int)p->c.q_len[r],
             (int)p->c.kv_len[r], (i / D) % H, i % D);
}

oracle_id oracle_check_differential(const problem *p, int32_t l, const void *got,
                                    const oracle_ref *ref, finding *f) {
    const attn_case *c = &p->c;
    size_t n = problem_out_elems(p, l);
    attn_tol tol = attn_tolerance(c->q_dtype, c->kv_dtype, c->out_dtype);
    attn_cmp r;
    if (attn_compare(ref->val, ref->lo, ref->hi, got, c->out_dtype, n, tol, &r)) return clean(f);
    char where[160], range[96] = "";
    elem_where(p, l, r.worst, where, sizeof where);
    if (ref->lo[r.worst] < ref->hi[r.worst])
        snprintf(range, sizeof range, " (%srounding allows [%.9g, %.9g])",
                 ref->rounded ? "bf16 " : "", ref->lo[r.worst], ref->hi[r.worst]);
    return found(f, ORACLE_DIFFERENTIAL,
                 "layers.%d (%d heads, window %d, %s out): %zu of %zu elements outside atol=%g "
                 "rtol=%g; max_abs=%.3g max_rel=%.3g; worst %s: got %.9g want %.9g%s",
                 (int)l, (int)c->layers[l].num_heads, (int)c->layers[l].window,
                 attn_dtype_name(c->out_dtype), r.bad, n, tol.atol, tol.rtol, r.max_abs,
                 r.max_rel, where, attn_elem_get(got, r.worst, c->out_dtype), ref->val[r.worst],
                 range);
}

oracle_id oracle_check_agree(const problem *p, int32_t l, const void *base, const void *other,
                             const oracle_ref *ref, int bitwise, const char *what, finding *f) {
    const attn_case *c = &p->c;
    size_t n = problem_out_elems(p, l), es = attn_dtype_size(c->out_dtype);
    char where[160];
    if (bitwise) {
        const unsigned char *a = base, *b = other;
        for (size_t i = 0; i < n * es; i++)
            if (a[i] != b[i]) {
                size_t e = i / es;
                elem_where(p, l, e, where, sizeof where);
                return found(f, ORACLE_INVARIANCE,
                             "layers.%d: %s: outputs differ bitwise; first at %s: %.9g vs %.9g",
                             (int)l, what, where, attn_elem_get(base, e, c->out_dtype),
                             attn_elem_get(other, e, c->out_dtype));
            }
        return clean(f);
    }
    attn_tol tol = attn_tolerance(c->q_dtype, c->kv_dtype, c->out_dtype);
    tol.atol *= 2;
    tol.rtol *= 2;
    size_t worst = 0, bad = 0;
    double max_abs = 0, worst_ex = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double a = attn_elem_get(base, i, c->out_dtype), b = attn_elem_get(other, i, c->out_dtype);
        /* an undetermined element: `other` against the nearest end of its range */
        if (ref && ref->lo && ref->lo[i] < ref->hi[i])
            a = b < ref->lo[i] ? ref->lo[i] : b > ref->hi[i] ? ref->hi[i] : b;
        double dd = fabs(a - b), ex = dd - (tol.atol + tol.rtol * fabs(a));
        if (isnan(dd)) ex = dd = INFINITY;
        if (dd > max_abs) max_abs = dd;
        if (ex > 0) bad++;
        if (ex > worst_ex) {
            worst_ex = ex;
            worst = i;
        }
    }
    if (!bad) return clean(f);
    elem_where(p, l, worst, where, sizeof where);
    return found(f, ORACLE_INVARIANCE,
                 "layers.%d: %s: %zu of %zu elements differ beyond 2x(atol=%g rtol=%g); "
                 "max_abs=%.3g; worst %s: %.9g vs %.9g", (int)l, what, bad, n, tol.atol / 2,
                 tol.rtol / 2, max_abs, where, attn_elem_get(base, worst, c->out_dtype),
                 attn_elem_get(other, worst, c->out_dtype));
}

/* ------------------------------------------------------------ guarded runs */

/* Guarded, read-only copies of what the kernels read. */
typedef struct run_inputs {
    guard q[CASE_MAX_LAYERS];
    guard k, v;
    attn_batch batch;
    int32_t *bt;            /* owned block table (permuted inputs) or NULL */
} run_inputs;

typedef struct run_ctx {
    const problem *p;
    unsigned what;
    run_inputs in;          /* the problem's inputs */
    run_inputs perm;        /* the same logical KV in permuted physical blocks */
    guard out;              /* one output guard for every run (same shape) */
    size_t out_bytes;
    oracle_ref ref[CASE_MAX_LAYERS];
    unsigned char *base[CASE_MAX_LAYERS];   /* outputs of the case's own config */
    const char *base_isa;   /* kernel table the case's own config ran with */
    int base_rounded;       /* ... and whether it rounds to bf16 (bf16_rounding) */
    const char *base_tune;  /* ... and its tuning profile */
} run_ctx;

static void inputs_free(run_inputs *in) {
    for (int l = 0; l < CASE_MAX_LAYERS; l++) guard_free(&in->q[l]);
    guard_free(&in->k);
    guard_free(&in->v);
    free(in->bt);
    memset(in, 0, sizeof *in);
}

static int guard_copy_ro(guard *g, const char *label, const void *src, size_t bytes) {
    if (guard_init_buffer(g, label, bytes) != 0) return -1;
    if (bytes) memcpy(g->buf, src, bytes);
    guard_arm(g);
    return guard_set_readonly(g, 1);
}

/* q for every layer and the K/V caches, optionally with the cache blocks
 * moved to permuted physical ids (block_table mapped accordingly). */
static int inputs_init(run_inputs *in, const problem *p, int permute) {
    const attn_case *c = &p->c;
    memset(in, 0, sizeof *in);
    size_t es_kv = attn_dtype_size(c->kv_dtype), es_q = attn_dtype_size(c->q_dtype);
    size_t cache_bytes = p->cache_elems * es_kv;
    in->batch = p->batch;
    if (!permute) {
        for (int32_t l = 0; l < c->num_layers; l++)
            if (guard_copy_ro(&in->q[l], "q", p->q[l], problem_out_elems(p, l) * es_q)) goto fail;
        if (guard_copy_ro(&in->k, "k_cache", p->k_cache, cache_bytes) ||
            guard_copy_ro(&in->v, "v_cache", p->v_cache, cache_bytes))
            goto fail;
        return 0;
    }
    /* Only K/V and the table move; q is shared with the unpermuted inputs. */
    const int32_t nb = p->num_blocks;
    const size_t tile = cache_bytes / (size_t)nb;
    const size_t cells = (size_t)c->num_reqs * (size_t)p->bt_stride;
    int32_t *perm = malloc((size_t)nb * sizeof *perm);
    in->bt = malloc(cells * sizeof *in->bt);
    if (!perm || !in->bt || guard_init_buffer(&in->k, "k_cache", cache_bytes) ||
        guard_init_buffer(&in->v, "v_cache", cache_bytes)) {
        free(perm);
        goto fail;
    }
    uint64_t s = c->seed ^ 0x7065726d75746521ull;
    for (int32_t i = 0; i < nb; i++) perm[i] = i;
    for (int32_t i = nb - 1; i > 0; i--) {
        int32_t j = (int32_t)(problem_rng_next(&s) % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    if (nb > 1 && perm[0] == 0) {   /* make sure block 0 moves at least */
        int32_t t = perm[0];
        perm[0] = perm[1];
        perm[1] = t;
    }
    for (int32_t b = 0; b < nb; b++) {
        memcpy(in->k.buf + (size_t)perm[b] * tile, (const unsigned char *)p->k_cache + (size_t)b * tile, tile);
        memcpy(in->v.buf + (size_t)perm[b] * tile, (const unsigned char *)p->v_cache + (size_t)b * tile, tile);
    }
    for (size_t i = 0; i < cells; i++) in->bt[i] = perm[p->block_table[i]];
    free(perm);
    in->batch.block_table = in->bt;
    guard_arm(&in->k);
    guard_arm(&in->v);
    if (guard_set_readonly(&in->k, 1) || guard_set_readonly(&in->v, 1)) goto fail;
    return 0;
fail:
    inputs_free(in);
    return -1;
}

enum cfg_role { ROLE_BASE, ROLE_VARIANT, ROLE_BITWISE };

typedef struct run_cfg {
    int32_t threads;
    attn_plan_opts opts;
    int permuted;
    enum cfg_role role;
    unsigned char junk;     /* fill of every scratch region before each run */
    const char *what;       /* for messages */
    const char *isa;        /* NULL: the case's own kernel table */
    const char *tune;       /* NULL: the case's own tuning profile */
} run_cfg;

static oracle_id check_guard(guard *g, const char *what, int32_t l, finding *f) {
    guard_violation v;
    if (!guard_check(g, &v)) return clean(f);
    char d[400];
    guard_format_violation(&v, d, sizeof d);
    return found(f, ORACLE_SCRATCH_BOUNDS, "%s; layers.%d, %s", d, (int)l, what);
}

/* Build a plan for `cf`, run every layer in guarded memory, then judge the
 * outputs for the config's role. */
static oracle_id run_config(run_ctx *x, const run_cfg *cf, finding *f) {
    const problem *p = x->p;
    const attn_case *c = &p->c;
    const run_inputs *in = cf->permuted ? &x->perm : &x->in;
    attn_group_desc grp = p->group;
    grp.num_threads = cf->threads;
    if (cf->isa) grp.isa = cf->isa;
    if (cf->tune) grp.tune = cf->tune;
    attn_builder *b = NULL;
    attn_plan *plan = NULL;
    attn_error err;
    guard sg;
    memset(&sg, 0, sizeof sg);
    oracle_id res = clean(f);

    attn_status st = attn_builder_create(&grp, &b, &err);
    if (st == ATTN_E_NO_MEMORY) return clean(f);
    if (st != ATTN_OK)
        return found(f, ORACLE_BAD_INPUT, "%s: attn_builder_create refused a valid group: %s: %s",
                     cf->what, attn_status_name(st), err.message);
    attn_builder_info bi;
    memset(&bi, 0, sizeof bi);
    attn_builder_get_info(b, &bi, NULL);
    if (cf->role == ROLE_BASE)
        x->base_isa = bi.isa, x->base_rounded = bi.bf16_rounding, x->base_tune = bi.tune;
    /* a run that rounds to bf16 (or is compared with one that did) is
     * judged under the bf16-rounding model */
    const int rounded = bi.bf16_rounding || (cf->role != ROLE_BASE && x->base_rounded);
    if (rounded && reference_layers(p, c->num_layers, 1, x->ref, f, &res) != 0)
        goto out_builder; /* no memory (nothing to judge), or res says why */
    st = attn_builder_build(b, &in->batch, &cf->opts, &plan, &err);
    if (st != ATTN_OK) {
        if (st != ATTN_E_NO_MEMORY)
            res = found(f, ORACLE_BAD_INPUT,
                        "%s: attn_builder_build refused a valid batch: %s: %s", cf->what,
                        attn_status_name(st), err.message);
        goto out_builder;
    }
    const attn_region *reg;
    size_t nreg, bytes;
    if ((st = attn_plan_regions(plan, &reg, &nreg, &err)) ||
        (st = attn_plan_scratch_size(plan, &bytes, &err))) {
        res = found(f, ORACLE_SIZING, "%s: plan accessors failed: %s", cf->what, err.message);
        goto out_plan;
    }
    if (guard_init_regions(&sg, "scratch", reg, nreg, bytes) != 0) {
        /* A malformed table is a sizing finding; a failed mmap is nobody's. */
        res = oracle_check_sizing(plan, p->layers, 0, c->head_dim, f);
        goto out_plan;
    }

    for (int32_t l = 0; l < c->num_layers && res == ORACLE_NONE; l++) {
        guard_fill_regions(&sg, cf->junk);
        guard_arm(&sg);
        guard_fill_regions(&x->out, 0xFF);   /* NaN: an unwritten element fails */
        guard_arm(&x->out);
        attn_tensors t = problem_tensors(p, l, x->out.buf);
        t.q = x->in.q[l].buf;
        t.k_cache = in->k.buf;
        t.v_cache = in->v.buf;
        st = attn_run(plan, &p->layers[l], &t, sg.buf, bytes, &err);
        /* Bounds first: a write outside the regions explains anything else. */
        if ((res = check_guard(&sg, cf->what, l, f)) || (res = check_guard(&x->out, cf->what, l, f)))
            break;
        if (st != ATTN_OK) {
            res = found(f, ORACLE_BAD_INPUT, "%s: attn_run refused layers.%d of a valid case: %s: %s",
                        cf->what, (int)l, attn_status_name(st), err.message);
            break;
        }
        const oracle_ref view = oracle_ref_view(&x->ref[l], rounded);
        switch (cf->role) {
        case ROLE_BASE:
            res = oracle_check_differential(p, l, x->out.buf, &view, f);
            if (!res && x->base[l]) memcpy(x->base[l], x->out.buf, x->out_bytes);
            break;
        case ROLE_VARIANT:
            res = oracle_check_agree(p, l, x->base[l], x->out.buf, &view, 0, cf->what, f);
            break;
        case ROLE_BITWISE:
            res = oracle_check_agree(p, l, x->base[l], x->out.buf, NULL, 1, cf->what, f);
            break;
        }
    }
    guard_free(&sg);
out_plan:
    attn_plan_destroy(plan);
out_builder:
    attn_builder_destroy(b);
    return res;
}

static const char *split_name(attn_split_mode m) {
    switch (m) {
    case ATTN_SPLIT_AUTO: return "auto";
    case ATTN_SPLIT_OFF: return "off";
    case ATTN_SPLIT_ON: return "on";
    case ATTN_SPLIT_FIXED: return "fixed";
    default: return "?";
    }
}

static oracle_id check_runs(const problem *p, unsigned what, finding *f) {
    const attn_case *c = &p->c;
    run_ctx x;
    memset(&x, 0, sizeof x);
    x.p = p;
    x.what = what;
    oracle_id res = ORACLE_NONE;
    clean(f);
    if (c->num_layers < 1) return res;
    x.out_bytes = problem_out_elems(p, 0) * attn_dtype_size(c->out_dtype);
    if (inputs_init(&x.in, p, 0) != 0 || guard_init_buffer(&x.out, "out", x.out_bytes) != 0)
        goto done;   /* no memory: nothing to judge */
    if (reference_layers(p, c->num_layers, 0, x.ref, f, &res) != 0)
        goto done; /* no memory (nothing to judge), or res says why */
    for (int32_t l = 0; l < c->num_layers; l++) {
        if (what & CHECK_INVARIANCE) {
            x.base[l] = malloc(x.out_bytes ? x.out_bytes : 1);
            if (!x.base[l]) goto done;
        }
    }

    char desc[96];
    snprintf(desc, sizeof desc, "case config (split %s, threads %d)", split_name(c->split),
             (int)c->threads);
    run_cfg base = {c->threads, {c->split, c->split_count, GUARD_REDZONE}, 0, ROLE_BASE, 0xFF, desc, NULL, NULL};
    if ((res = run_config(&x, &base, f))) goto done;
    if (!(what & CHECK_INVARIANCE)) goto done;

    if (inputs_init(&x.perm, p, 1) != 0) goto done;
    int32_t alt_threads = c->threads == 1 ? 3 : 1;
    char tdesc[64];
    snprintf(tdesc, sizeof tdesc, "threads %d vs %d", (int)alt_threads, (int)c->threads);
    /* isa, tune NULL: the case's own kernel table and tuning profile */
    const run_cfg variants[] = {
        {c->threads, {ATTN_SPLIT_OFF, 0, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF,
         "split off vs case config", NULL, NULL},
        {c->threads, {ATTN_SPLIT_ON, 0, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF,
         "split on vs case config", NULL, NULL},
        {c->threads, {ATTN_SPLIT_FIXED, 3, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF,
         "split fixed 3 vs case config", NULL, NULL},
        {alt_threads, {c->split, c->split_count, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF, tdesc,
         NULL, NULL},
        {c->threads, {c->split, c->split_count, GUARD_REDZONE}, 1, ROLE_VARIANT, 0xFF,
         "permuted physical blocks vs case config", NULL, NULL},
        /* Same input, same threads, other junk in the scratch regions: a
         * read of scratch nobody wrote shows up as a bitwise difference. */
        {c->threads, {c->split, c->split_count, GUARD_REDZONE}, 0, ROLE_BITWISE, 0x3C,
         "rerun with the same input and threads", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        const run_cfg *v = &variants[i];
        /* a variant equal to the case's own config adds nothing */
        if (v->role == ROLE_VARIANT && !v->permuted && v->threads == c->threads &&
            v->opts.split == c->split &&
            (v->opts.split != ATTN_SPLIT_FIXED || v->opts.split_count == c->split_count))
            continue;
        if ((res = run_config(&x, v, f))) break;
    }
    /* Every kernel twin usable here must agree with the one the case ran
     * with (STYLE: the fuzzers run every twin). */
    const char *isas[8];
    int n_isa = res ? 0 : attn_isa_available(isas, 8);
    for (int i = 0; i < n_isa && i < 8 && !res; i++) {
        if (x.base_isa && strcmp(isas[i], x.base_isa) == 0) continue;
        char idesc[64];
        snprintf(idesc, sizeof idesc, "isa %s vs %s", isas[i], x.base_isa ? x.base_isa : "?");
        run_cfg v = {c->threads, {c->split, c->split_count, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF,
                     idesc, isas[i], NULL};
        res = run_config(&x, &v, f);
    }
    /* ... and under the other tuning profile (the decode tile's memory
     * walk, bf16 prefill on VDPBF16PS), which this CPU would not pick */
    if (!res && x.base_tune) {
        const char *other = strcmp(x.base_tune, "amd") == 0 ? "intel" : "amd";
        char tdesc2[64];
        snprintf(tdesc2, sizeof tdesc2, "tune %s vs %s", other, x.base_tune);
        run_cfg v = {c->threads, {c->split, c->split_count, GUARD_REDZONE}, 0, ROLE_VARIANT, 0xFF,
                     tdesc2, NULL, other};
        res = run_config(&x, &v, f);
    }
done:
    for (int l = 0; l < CASE_MAX_LAYERS; l++) {
        oracle_ref_free(&x.ref[l]);
        free(x.base[l]);
    }
    guard_free(&x.out);
    inputs_free(&x.perm);
    inputs_free(&x.in);
    return res;
}

/* ------------------------------------------------------------- check_case */

oracle_id check_case(const attn_case *c, unsigned what, finding *f) {
    finding scratch_f;
    if (!f) f = &scratch_f;
    clean(f);
    if (!c) return ORACLE_NONE;
    guard_install_fault_handler();

    case_defects d;
    oracle_case_defects(c, &d);
    if (d.unexpressible) return ORACLE_NONE;
    oracle_id res;
    if ((res = oracle_check_expect(c, &d, f))) return res;

    problem p;
    char msg[256];
    const int run = (what & (CHECK_RUN | CHECK_INVARIANCE)) != 0;
    if ((run ? problem_init(&p, c, ORACLE_MAX_BYTES, msg, sizeof msg)
             : problem_init_descriptions(&p, c, ORACLE_MAX_BYTES, msg, sizeof msg)) != 0)
        return clean(f);

    attn_builder *b = NULL;
    attn_plan *plan = NULL;
    attn_error err;
    memset(&err, 0, sizeof err);
    attn_status st = attn_builder_create(&p.group, &b, &err);
    res = oracle_check_status(&d, DEFECT_CREATE, st, err.message, st != ATTN_OK && b, f);
    if (st != ATTN_OK) b = NULL;   /* never free what was not handed out */
    if (res || st != ATTN_OK) goto out;

    /* problem.c replaces a block table beyond its input cap by a
     * one-column stand-in; the engine's verdict on that says nothing. */
    if (p.unmaterialized_reason && strstr(p.unmaterialized_reason, "block table")) goto out;

    attn_plan_opts po = {c->split, c->split_count, 0};
    st = attn_builder_build(b, &p.batch, &po, &plan, &err);
    res = oracle_check_status(&d, DEFECT_BUILD, st, err.message, st != ATTN_OK && plan, f);
    if (st != ATTN_OK) plan = NULL;
    if (res || st != ATTN_OK) goto out;

    if ((what & CHECK_PLAN) &&
        (res = oracle_check_sizing(plan, p.layers, p.group.num_layers, c->head_dim, f)))
        goto out;
    attn_plan_destroy(plan);
    plan = NULL;

    /* Sizing again with every single-tile row split: the case's own policy
     * often plans no reduction at all, and reduction slots are where the
     * historical sizing bugs lived (found by the mutant campaign: a bug in
     * the partials' sizing escaped the plan-only target).  Cheap: no kernels. */
    if ((what & CHECK_PLAN) && c->split != ATTN_SPLIT_ON) {
        attn_plan_opts on = {ATTN_SPLIT_ON, 0, 0};
        if (attn_builder_build(b, &p.batch, &on, &plan, &err) != ATTN_OK) {
            res = found(f, ORACLE_BAD_INPUT,
                        "the batch planned with split %d but was refused with split on: %s: %s",
                        (int)c->split, attn_status_name(err.status), err.message);
            plan = NULL;
            goto out;
        }
        if ((res = oracle_check_sizing(plan, p.layers, p.group.num_layers, c->head_dim, f)))
            goto out;
        attn_plan_destroy(plan);
        plan = NULL;
    }
    attn_builder_destroy(b);
    b = NULL;

    if ((what & (CHECK_RUN | CHECK_INVARIANCE)) && p.materialized)
        res = check_runs(&p, what | CHECK_RUN, f);

out:
    attn_plan_destroy(plan);
    attn_builder_destroy(b);
    problem_free(&p);
    return res;
}
