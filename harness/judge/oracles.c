/*
 * oracles.c — the oracles of docs/design.md §5 as functions over what one engine
 * said and wrote: bad input and the mixed-heads refusal (judged by the
 * defect model, harness/case/validity.c), sizing (the plan's region table
 * and each layer's needs, without kernels), the differential comparison
 * with the reference, the agreement of two runs, and how a finding is
 * worded and fired.  check.c runs them on a case.
 *
 * Owns: what counts as a finding and how it is worded and fired.  Does not
 * own the tolerances (compare.c), the inputs (problem.c), the reference
 * (ref.c), the guarded memory (guard.c) or the order of the runs (check.c).
 * Knows engines only through the adapter ABI: the defect model is written
 * from the public contract, not from any engine's validation code, so that
 * a validation bug cannot hide in both.
 */
#include "oracles.h"
#include "guard.h"
#include "sizing_model.h"
#include "ref_problem.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- names */

static const char *const k_oracle_names[] = {
    "none", "scratch-bounds", "sizing", "mixed-heads", "differential", "invariance", "bad-input",
    "input-bounds", "engine-check", "hang", "cache-write", "emulation",
};
_Static_assert(sizeof k_oracle_names / sizeof k_oracle_names[0] == ORACLE_COUNT,
               "one name per oracle_id");

const char *oracle_name(oracle_id id) {
    if ((unsigned)id >= ORACLE_COUNT) return "?";
    return k_oracle_names[id];
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
oracle_id oracle_found(finding *f, oracle_id id, const char *fmt, ...) {
    f->oracle = id;
    f->skipped[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->detail, sizeof f->detail, fmt, ap);
    va_end(ap);
    return id;
}

oracle_id oracle_clean(finding *f) {
    f->oracle = ORACLE_NONE;
    f->detail[0] = '\0';
    f->skipped[0] = '\0';
    return ORACLE_NONE;
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
FIRE_FN(oracle_fire_input_bounds, 7)
FIRE_FN(oracle_fire_engine_check, 8)
FIRE_FN(oracle_fire_hang, 10)
FIRE_FN(oracle_fire_unknown, 9)
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
    case ORACLE_INPUT_BOUNDS: oracle_fire_input_bounds();
    case ORACLE_ENGINE_CHECK: oracle_fire_engine_check();
    case ORACLE_HANG: oracle_fire_hang();
    default: oracle_fire_unknown();
    }
}

oracle_id oracle_check_expect(const case_spec *c, const case_defects *d, finding *f) {
    if (c->expect == AG_R_NONE || d->unexpressible) return oracle_clean(f);
    if (validity_allows(d, DEFECT_CREATE | DEFECT_PLAN, c->expect)) return oracle_clean(f);
    char list[600];
    validity_format(d, DEFECT_CREATE | DEFECT_PLAN, list, sizeof list);
    return oracle_found(f, ORACLE_BAD_INPUT,
                 "case '%s' expects %s, which none of its defects deserves: the case is wrong; "
                 "defects %s", c->name, ag_refusal_name((ag_refusal)c->expect), list);
}

int oracle_resource_limit(ag_status st, const ag_msg *msg) {
    return msg && (st == AG_INTERNAL || st == AG_REFUSED) && msg->refusal == AG_R_RESOURCE;
}

/* "mixed_heads (ATTN_E_MIXED_HEADS)": the kind an answer named, and the
 * engine's own code for it. */
static const char *answer_name(ag_status got, const ag_msg *msg, char *buf, size_t cap) {
    const char *code = msg ? msg->code : "";
    if (!msg || msg->refusal == AG_R_NONE)
        snprintf(buf, cap, "%s%s%s%s", ag_status_name(got), code[0] ? " (" : "", code,
                 code[0] ? ")" : "");
    else
        snprintf(buf, cap, "%s%s%s%s", ag_refusal_name((ag_refusal)msg->refusal),
                 code[0] ? " (" : "", code, code[0] ? ")" : "");
    return buf;
}

oracle_id oracle_check_status(const case_defects *d, defect_stage stage, ag_status got,
                              const ag_msg *msg, uint32_t caps, int handed_out, finding *f) {
    const int32_t kind = msg ? msg->refusal : AG_R_NONE;
    const int exact = kind != AG_R_NONE;
    char list[600], said[AG_MSG_CODE_LEN + 48];
    const char *where = stage == DEFECT_CREATE ? "create" : "plan";
    const char *text = msg ? msg->text : "";
    answer_name(got, msg, said, sizeof said);
    const int refused = got == AG_REFUSED || got == AG_UNSUPPORTED;
    oracle_clean(f);
    if (oracle_resource_limit(got, msg)) return ORACLE_NONE;   /* the environment */
    if (got != AG_OK && handed_out)
        return oracle_found(f, d->mixed && stage == DEFECT_CREATE ? ORACLE_MIXED_HEADS : ORACLE_BAD_INPUT,
                     "%s returned %s but wrote its out-parameter (a handle was handed back)",
                     where, ag_status_name(got));
    /* A defect that does not bind this engine (a split option for one that
     * ignores the hint) allows either answer; an accepted input is then
     * judged on what the engine computes. */
    int any = 0, loose = 0;
    for (int i = 0; i < d->n; i++) {
        if (d->d[i].stage != stage) continue;
        if ((caps & d->d[i].binds) == d->d[i].binds) any = 1;
        else loose = 1;
    }
    if (stage == DEFECT_CREATE && d->mixed) {
        /* An engine may validate each layer's own fields (and the KV spec,
         * dtypes, threads) before agreement: any of those statuses is as
         * good as the dedicated one. */
        if (refused && (!exact || validity_allows(d, stage, kind))) return ORACLE_NONE;
        validity_format(d, stage, list, sizeof list);
        if (got == AG_OK)
            return oracle_found(f, ORACLE_MIXED_HEADS,
                         "a group whose layers disagree on num_heads was accepted (create "
                         "succeeded); want a refusal (mixed_heads); defects %s", list);
        return oracle_found(f, ORACLE_MIXED_HEADS,
                     "a mixed group was answered %s (\"%s\"), want a refusal as mixed_heads or "
                     "as one of %s", said, text, list);
    }
    if (got == AG_OK) {
        if (!any) return ORACLE_NONE;
        validity_format(d, stage, list, sizeof list);
        return oracle_found(f, ORACLE_BAD_INPUT, "%s accepted a defective input: %s", where, list);
    }
    validity_format(d, stage, list, sizeof list);
    if (got == AG_INTERNAL)
        return oracle_found(f, ORACLE_BAD_INPUT, "%s failed inside the engine: %s (\"%s\"); "
                            "defects %s", where, said, text, list);
    if (!any) {
        if (loose) return ORACLE_NONE;
        if (got == AG_UNSUPPORTED) {
            snprintf(f->skipped, sizeof f->skipped, "%.190s", text[0] ? text : "unsupported");
            return ORACLE_NONE;
        }
        return oracle_found(f, ORACLE_BAD_INPUT, "%s refused a valid input as %s (\"%s\")", where,
                            said, text);
    }
    if (!exact || validity_allows(d, stage, kind)) return ORACLE_NONE;
    return oracle_found(f, ORACLE_BAD_INPUT, "%s refused as %s (\"%s\"), which answers none of "
                        "the defects %s", where, said, text, list);
}

/* ---------------------------------------------------------------- sizing */

oracle_id oracle_check_sizing(const engine_host *E, void *plan, const ag_plan_info *info,
                              const problem *p, finding *f) {
    const ag_region *reg = info->regions;
    const size_t n = info->num_regions, bytes = info->scratch_bytes;
    oracle_clean(f);
    if (n && !reg)
        return oracle_found(f, ORACLE_SIZING, "the plan declares %zu regions but no table", n);
    /* The table itself: sorted, aligned, disjoint, inside the scratchpad. */
    size_t end = 0;
    for (size_t i = 0; i < n; i++) {
        if (reg[i].offset % 8 || reg[i].offset < end || reg[i].offset > bytes ||
            reg[i].size > bytes - reg[i].offset)
            return oracle_found(f, ORACLE_SIZING,
                         "region %s (offset %zu, size %zu) is misaligned, overlaps its "
                         "predecessor (which ends at %zu) or leaves the scratchpad of %zu bytes",
                         reg[i].name, reg[i].offset, reg[i].size, end, bytes);
        end = reg[i].offset + reg[i].size;
    }
    /* The harness's own derivation of every region's needs, per layer. */
    ag_plan_shape sh;
    if (n && E->e->plan_shape &&
        E->e->plan_shape(plan, &sh) == AG_OK) {
        const int32_t hkv = p->group.num_kv_heads;
        for (int32_t l = 0; l < p->group.num_layers; l++) {
            const ag_layer *L = &p->layers[l];
            if (hkv < 1 || L->num_heads % hkv) continue;
            for (size_t i = 0; i < n; i++) {
                size_t need;
                if (sizing_model_need(&sh, &reg[i], L->num_heads / hkv, p->group.head_dim,
                                      &need) != 0 || need <= reg[i].size)
                    continue;
                return oracle_found(f, ORACLE_SIZING,
                             "%s (%d heads, head_dim %d) needs %zu bytes in region %s by the "
                             "design's formula (%d tokens per thread, kv_tile %d), but the plan "
                             "sized %zu (%zu short)", L->name, (int)L->num_heads,
                             (int)p->group.head_dim, need, reg[i].name, (int)sh.thread_tokens,
                             (int)sh.kv_tile, reg[i].size, need - reg[i].size);
            }
        }
    }
    if (!E->e->extents) return ORACLE_NONE;
    /* Without a table the engine states one need: the whole scratch. */
    const size_t m = n ? n : 1;
    size_t *ext = malloc(m * sizeof *ext);
    if (!ext) return ORACLE_NONE;
    oracle_id res = ORACLE_NONE;
    for (int32_t l = 0; l < p->group.num_layers && res == ORACLE_NONE; l++) {
        const ag_layer *L = &p->layers[l];
        ag_msg msg;
        ag_status st = E->e->extents(plan, l, ext, m, &msg);
        if (st != AG_OK) {
            res = oracle_found(f, ORACLE_SIZING, "the engine could not state what %s (%d heads) needs: "
                        "%s %s: %s", L->name, (int)L->num_heads, ag_status_name(st), msg.code,
                        msg.text);
            break;
        }
        size_t first = m, short_count = 0;
        for (size_t i = 0; i < m; i++)
            if (ext[i] > (n ? reg[i].size : bytes)) {
                if (first == m) first = i;
                short_count++;
            }
        if (first < m)
            res = oracle_found(f, ORACLE_SIZING,
                        "%s (%d heads) needs %zu bytes in region %s but the plan (built for the "
                        "group: %d KV heads, head_dim %d, model_num_heads %d) sized %zu (%zu "
                        "short); %zu of %zu regions too small",
                        L->name, (int)L->num_heads, ext[first], n ? reg[first].name : "scratch",
                        (int)p->group.num_kv_heads, (int)p->group.head_dim,
                        (int)p->group.model_num_heads, n ? reg[first].size : bytes,
                        ext[first] - (n ? reg[first].size : bytes), short_count, m);
    }
    free(ext);
    return res;
}

/* ------------------------------------------------------ differential etc. */

int oracle_reference(const problem *p, int32_t l, ag_precision prec, const ag_caps *caps,
                     oracle_ref *r) {
    memset(r, 0, sizeof *r);
    r->prec = prec;
    const size_t n = problem_out_elems(p, l), bytes = (n ? n : 1) * sizeof(double);
    r->val = malloc(bytes);
    r->lo = malloc(bytes);
    r->hi = malloc(bytes);
    if (!r->val || !r->lo || !r->hi) {
        oracle_ref_free(r);
        return -2;
    }
    ref_input in;
    ref_input_of_problem(p, l, &in);
    if (ref_attention_range_why(&in, cmp_engine_model(prec, caps, in.q_dtype, in.kv_dtype,
                                                      in.head_dim),
                                r->val, r->lo, r->hi, &r->why) != 0) {
        oracle_ref_free(r);
        r->prec = prec;
        return -1;
    }
    return 0;
}

void oracle_ref_free(oracle_ref *r) {
    free(r->val);
    free(r->lo);
    free(r->hi);
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
                                    const oracle_ref *ref, cmp_result *stats, finding *f) {
    const case_spec *c = &p->c;
    size_t n = problem_out_elems(p, l);
    cmp_tol tol = cmp_tolerance(c->out_dtype);
    cmp_result r;
    const int pass = cmp_compare(ref->val, ref->lo, ref->hi, got, c->out_dtype, n, tol, &r);
    if (stats) *stats = r;
    if (pass) return oracle_clean(f);
    char where[160], range[160] = "";
    elem_where(p, l, r.worst, where, sizeof where);
    const ag_precision *pr = &ref->prec;
    const int rounding = pr->q_dot != AG_F32 || pr->p_dot != AG_F32 || pr->acc != AG_F32;
    if (ref->lo[r.worst] < ref->hi[r.worst])
        snprintf(range, sizeof range, " (the engine's rounding%s%s%s%s%s%s allows [%.9g, %.9g])",
                 rounding ? ": q " : "", rounding ? ag_dtype_name(pr->q_dot) : "",
                 rounding ? ", weights " : "", rounding ? ag_dtype_name(pr->p_dot) : "",
                 rounding ? ", acc " : "", rounding ? ag_dtype_name(pr->acc) : "",
                 ref->lo[r.worst], ref->hi[r.worst]);
    int32_t wl = -1, wr = -1;
    if (l < p->group.num_layers) wl = p->layers[l].window_left, wr = p->layers[l].window_right;
    return oracle_found(f, ORACLE_DIFFERENTIAL,
                 "layers.%d (%d heads, window (%d, %d), %s out): %zu of %zu elements outside "
                 "the reference's interval by more than atol=%g rtol=%g; distance %.3g; worst "
                 "%s: got %.9g want %.9g%s",
                 (int)l, (int)c->layers[l].num_heads, (int)wl, (int)wr,
                 ag_dtype_name(c->out_dtype), r.bad, n, tol.atol, tol.rtol, r.max_abs, where,
                 cmp_elem_get(got, r.worst, c->out_dtype), ref->val[r.worst], range);
}

oracle_id oracle_check_agree(const problem *p, int32_t l, const void *base, const void *other,
                             const oracle_ref *ref, int bitwise, const char *what, finding *f) {
    const case_spec *c = &p->c;
    size_t n = problem_out_elems(p, l), es = ag_dtype_size(c->out_dtype);
    char where[160];
    if (bitwise) {
        const unsigned char *a = base, *b = other;
        for (size_t i = 0; i < n * es; i++)
            if (a[i] != b[i]) {
                size_t e = i / es;
                elem_where(p, l, e, where, sizeof where);
                return oracle_found(f, ORACLE_INVARIANCE,
                             "layers.%d: %s: outputs differ bitwise; first at %s: %.9g vs %.9g",
                             (int)l, what, where, cmp_elem_get(base, e, c->out_dtype),
                             cmp_elem_get(other, e, c->out_dtype));
            }
        return oracle_clean(f);
    }
    cmp_tol tol = cmp_tolerance(c->out_dtype);
    tol.atol *= 2;
    tol.rtol *= 2;
    size_t worst = 0, bad = 0;
    double max_abs = 0, worst_ex = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double a = cmp_elem_get(base, i, c->out_dtype);
        const double b = cmp_elem_get(other, i, c->out_dtype);
        /* `other` against base, or against the nearest end of the interval
         * the reference allows, whichever is nearer */
        if (ref && ref->lo && ref->lo[i] < ref->hi[i]) {
            const double e = b < ref->lo[i] ? ref->lo[i] : b > ref->hi[i] ? ref->hi[i] : b;
            if (fabs(e - b) < fabs(a - b)) a = e;
        }
        double dd = fabs(a - b), ex = dd - (tol.atol + tol.rtol * fabs(a));
        if (isnan(dd)) ex = dd = INFINITY;
        if (dd > max_abs) max_abs = dd;
        if (ex > 0) bad++;
        if (ex > worst_ex) {
            worst_ex = ex;
            worst = i;
        }
    }
    if (!bad) return oracle_clean(f);
    elem_where(p, l, worst, where, sizeof where);
    return oracle_found(f, ORACLE_INVARIANCE,
                 "layers.%d: %s: %zu of %zu elements differ beyond 2x(atol=%g rtol=%g); "
                 "max_abs=%.3g; worst %s: %.9g vs %.9g", (int)l, what, bad, n, tol.atol / 2,
                 tol.rtol / 2, max_abs, where, cmp_elem_get(base, worst, c->out_dtype),
                 cmp_elem_get(other, worst, c->out_dtype));
}

