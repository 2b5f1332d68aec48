/*
 * test_ref_range.c — the reference's ranges for rows that an fp32 engine's
 * rounding leaves undetermined (harness/ref_range.c, ref_attention_range,
 * cmp_logit_error and the range rule of cmp_compare).
 *
 * Covers: ref_softmax_range against brute force over every vertex of the
 * weight box (with and without a sink, point to 1e30-wide intervals);
 * point intervals give the plain softmax average; every shipped ordinary
 * case keeps a single point per element (the tight check is not given
 * away); the fuzzer's cancelling-dot case gets a range that holds both the
 * exact output and the one the SIMD tables compute, and cmp_compare
 * passes the second only with the range; the differential and invariance
 * oracles judge that element by its range; the bf16-rounding model's
 * ranges (cmp_bf16_dot_error) hold the outputs its rounding can produce,
 * pushed to their extremes, and would not without its weight term.
 */
#include <criterion/criterion.h>

#include "../harness/case.h"
#include "../harness/compare.h"
#include "../harness/oracles.h"
#include "../harness/problem.h"
#include "../harness/ref.h"

#include <glob.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double urand(void) {   /* [0, 1) */
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* max and min of the ratio over all 2^n vertices, logits shifted by the
 * vertex's own maximum (n <= 12). */
static void brute(const ref_range_key *k, int n, int has_sink, double sink, double *lo,
                  double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        double m = has_sink ? sink : -INFINITY;
        for (int i = 0; i < n; i++) {
            const double s = (mask >> i) & 1u ? k[i].b : k[i].a;
            if (s > m) m = s;
        }
        double num = 0, den = has_sink ? exp(sink - m) : 0;
        for (int i = 0; i < n; i++) {
            const double w = exp(((mask >> i) & 1u ? k[i].b : k[i].a) - m);
            num += w * k[i].v;
            den += w;
        }
        const double r = num / den;
        if (r < *lo) *lo = r;
        if (r > *hi) *hi = r;
    }
}

Test(ref_range, matches_brute_force_over_vertices) {
    ref_range_key keys[10], copy[10];
    for (int trial = 0; trial < 3000; trial++) {
        const int n = 1 + trial % 10;
        const int has_sink = trial % 3 == 0;
        /* interval widths from point-like to 1e30 (huge-scale logits);
         * centres 1000s apart in every fifth trial, so that keys e^-800
         * below the rest are dropped */
        const double width = trial % 4 == 0 ? 1e30 : pow(10.0, -6.0 + 8.0 * urand());
        const double spread = trial % 5 == 1 ? 4000.0 : 8.0;
        const double sink = 4.0 * urand() - 2.0;
        for (int i = 0; i < n; i++) {
            /* every other key a point in every third trial (a fixed term) */
            const double c = spread * (urand() - 0.5);
            const double w = trial % 3 == 2 && i % 2 ? 0.0 : width * urand();
            keys[i].a = c - w;
            keys[i].b = c + w;
            keys[i].v = 2.0 * urand() - 1.0;
        }
        memcpy(copy, keys, sizeof keys);
        double lo, hi, blo, bhi;
        ref_softmax_range(keys, n, has_sink, sink, &lo, &hi);
        brute(copy, n, has_sink, sink, &blo, &bhi);
        cr_assert(fabs(lo - blo) <= 1e-12 && fabs(hi - bhi) <= 1e-12,
                  "trial %d (n %d, sink %d, width %g): range [%.17g, %.17g], vertices [%.17g, "
                  "%.17g]", trial, n, has_sink, width, lo, hi, blo, bhi);
        /* the keys are reordered, but each keeps its own a, b and v */
        for (int i = 0; i < n; i++) {
            int found = 0;
            for (int j = 0; j < n && !found; j++)
                found = keys[j].a == copy[i].a && keys[j].b == copy[i].b && keys[j].v == copy[i].v;
            cr_assert(found, "trial %d: key %d changed", trial, i);
        }
    }
}

Test(ref_range, point_intervals_give_the_softmax_average) {
    ref_range_key keys[7];
    const double sink = 0.3;
    double num = 0, den = exp(sink);
    for (int i = 0; i < 7; i++) {
        keys[i].a = keys[i].b = 0.5 * i - 1.0;
        keys[i].v = (i % 3) - 0.7;
        num += exp(keys[i].a) * keys[i].v;
        den += exp(keys[i].a);
    }
    double lo, hi;
    ref_softmax_range(keys, 7, 1, sink, &lo, &hi);
    cr_assert(fabs(lo - num / den) < 1e-15 && fabs(hi - num / den) < 1e-15,
              "[%.17g, %.17g] vs %.17g", lo, hi, num / den);
}

/* The layer's reference with ranges: returns the number of elements whose
 * range is wider than a point. */
static size_t ranges_of(const case_spec *c, double **val, double **lo, double **hi,
                        problem *p) {
    char msg[256];
    cr_assert_eq(problem_init(p, c, (size_t)1 << 30, msg, sizeof msg), 0, "%s", msg);
    cr_assert(p->materialized, "%s: %s", c->name, p->unmaterialized_reason);
    const size_t n = problem_out_elems(p, 0);
    *val = malloc(n * sizeof(double));
    *lo = malloc(n * sizeof(double));
    *hi = malloc(n * sizeof(double));
    cr_assert(*val && *lo && *hi);
        ref_input in;
    problem_ref_input(p, 0, &in);
    cr_assert_eq(ref_attention_range(&in, cmp_logit_error(c->kv_dtype, c->head_dim), *val, *lo, *hi),
                 0, "%s: reference refused", c->name);
    size_t wide = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert((*lo)[i] <= (*val)[i] && (*val)[i] <= (*hi)[i],
                  "%s element %zu: %.17g outside [%.17g, %.17g]", c->name, i, (*val)[i],
                  (*lo)[i], (*hi)[i]);
        wide += (*lo)[i] < (*hi)[i];
    }
    return wide;
}

/* Ranges must not leak into ordinary inputs: there the differential oracle
 * keeps its tight point check (compare.c explains why it must).  With a
 * margin: no range even at a threshold 16x lower (4x with bf16 KV, whose
 * two-term q split rounds more). */
Test(ref_range, ordinary_cases_keep_points, .timeout = 120) {
    glob_t g;
    cr_assert_eq(glob("corpus/cases/*.case", 0, NULL, &g), 0, "run from the repository root");
    int seen = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (strstr(g.gl_pathv[i], "/huge-")) continue;
        case_spec c;
        char err[256];
        cr_assert_eq(case_load(g.gl_pathv[i], &c, err, sizeof err), 0, "%s", err);
        if (c.expect != ATTN_OK) continue;
        problem p;
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, err, sizeof err), 0, "%s", err);
        cr_assert(p.materialized, "%s: %s", g.gl_pathv[i], p.unmaterialized_reason);
        ref_logit_err e = cmp_logit_error(c.kv_dtype, c.head_dim);
        e.point_max /= c.kv_dtype == AG_BF16 ? 4 : 16;
        for (int32_t l = 0; l < c.num_layers; l++) {
            const size_t n = problem_out_elems(&p, l);
            double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
            double *hi = malloc(n * sizeof(double));
            cr_assert(val && lo && hi);
            ref_input in;
            problem_ref_input(&p, l, &in);
            cr_assert_eq(ref_attention_range(&in, e, val, lo, hi), 0);
            size_t wide = 0;
            for (size_t j = 0; j < n; j++) wide += lo[j] < hi[j];
            cr_assert_eq(wide, 0, "%s layers.%d: %zu elements got a range", g.gl_pathv[i], (int)l,
                         wide);
            free(val);
            free(lo);
            free(hi);
            seen++;
        }
        problem_free(&p);
    }
    globfree(&g);
    cr_assert(seen >= 15, "only %d layers checked", seen);
}

/* corpus/cases/huge-scale-cancel.case: the fuzzer's cancelling dot. */
static case_spec cancel_case(void) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load("corpus/cases/huge-scale-cancel.case", &c, err, sizeof err), 0, "%s",
                 err);
    return c;
}

/* The fuzzer's case: one element pair gets a range; it holds the exact
 * output and the SIMD tables' 0.1443; cmp_compare passes that value only
 * with the range and still fails a value below it. */
Test(ref_range, cancelling_dot_gets_a_range, .timeout = 60) {
    case_spec c = cancel_case();
    problem p;
    double *val, *lo, *hi;
    const size_t wide = ranges_of(&c, &val, &lo, &hi, &p);
    cr_assert(wide >= 1 && wide <= 2, "%zu elements got a range", wide);
    const size_t H = (size_t)c.layers[0].num_heads, D = (size_t)c.head_dim;
    const size_t at = (21 * H + 29) * D;   /* token 21, head 29, dim 0 */
    cr_assert(lo[at] < 0.1444 && hi[at] > 0.2020, "[%.9g, %.9g]", lo[at], hi[at]);

    const size_t n = problem_out_elems(&p, 0);
    float *got = malloc(n * sizeof *got);
    cr_assert(got);
    for (size_t i = 0; i < n; i++) got[i] = (float)val[i];
    const cmp_tol tol = cmp_tolerance(AG_F32, AG_F32, AG_F32);
    cmp_result r;
    got[at] = (float)lo[at];
    cr_assert(cmp_compare(val, lo, hi, got, AG_F32, n, tol, &r), "bad %zu", r.bad);
    cr_assert(!cmp_compare(val, NULL, NULL, got, AG_F32, n, tol, &r));
    got[at] = (float)(lo[at] - 1e-3);
    cr_assert(!cmp_compare(val, lo, hi, got, AG_F32, n, tol, &r));
    cr_assert_eq(r.worst, at);
    free(got);
    free(val);
    free(lo);
    free(hi);
    problem_free(&p);
}

/* The oracles on that case: the differential names the range, and two runs
 * may differ inside it (invariance) but not beyond it. */
Test(ref_range, oracles_use_the_range, .timeout = 60) {
    case_spec c = cancel_case();
    char err[256];
    c.out_dtype = AG_F32;   /* exact values in the output buffers */
    problem p;
    cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, err, sizeof err), 0, "%s", err);
    oracle_ref ref;
    cr_assert_eq(oracle_reference(&p, 0, &ref), 0);
    const size_t n = problem_out_elems(&p, 0);
    const size_t at = (21 * (size_t)c.layers[0].num_heads + 29) * (size_t)c.head_dim;
    cr_assert(ref.lo[at] < ref.hi[at]);
    float *base = malloc(n * sizeof *base), *other = malloc(n * sizeof *other);
    cr_assert(base && other);
    for (size_t i = 0; i < n; i++) base[i] = other[i] = (float)ref.val[i];
    finding f;
    other[at] = (float)ref.lo[at];   /* the other end of the range */
    cr_assert_eq(oracle_check_differential(&p, 0, other, &ref, NULL, &f), ORACLE_NONE, "%s", f.detail);
    cr_assert_eq(oracle_check_agree(&p, 0, base, other, &ref, 0, "isa x", &f), ORACLE_NONE, "%s",
                 f.detail);
    cr_assert_eq(oracle_check_agree(&p, 0, base, other, NULL, 0, "isa x", &f), ORACLE_INVARIANCE);
    other[at] = (float)(ref.lo[at] - 0.01);
    cr_assert_eq(oracle_check_agree(&p, 0, base, other, &ref, 0, "isa x", &f), ORACLE_INVARIANCE);
    cr_assert_eq(oracle_check_differential(&p, 0, other, &ref, NULL, &f), ORACLE_DIFFERENTIAL);
    cr_assert(strstr(f.detail, "rounding allows ["), "%s", f.detail);
    free(base);
    free(other);
    oracle_ref_free(&ref);
    problem_free(&p);
}

/* ------------------------------------------- the bf16-rounding model */

/* x rounded to bf16 (nearest, ties to even), as a double. */
static double bf16_rne(float x) {
    uint32_t b;
    memcpy(&b, &x, 4);
    b = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
    float y;
    memcpy(&y, &b, 4);
    return (double)y;
}

/* The most and least element d of row (t, h) can become under the
 * rounding the model describes: q x scale rounded to fp32 and then to
 * bf16, every weight multiplied by 1 + eps with |eps| = 2^-9 pushed the
 * way that moves element d furthest (up: eps > 0 where v > o). */
static void emulate_row(const ref_input *in, int32_t t, int32_t h, int32_t d, double o,
                        double *lo, double *hi) {
    const int32_t D = in->head_dim, g = in->num_heads / in->num_kv_heads, kvh = h / g;
    const int32_t seq = in->seq_lens[0], q_len = in->query_start_loc[1];
    const int64_t p = seq - q_len + t;
    const double scale = in->scale > 0 ? in->scale : 1.0 / sqrt((double)D);
    double logit[512];
    cr_assert(seq <= 512);
    double m = in->sinks ? in->sinks[h] : -INFINITY;
    for (int32_t k = 0; k < seq; k++) {
        logit[k] = -INFINITY;
        if (in->causal[0] && k > p) continue; /* DESIGN §2 (causal rows here) */
        if (in->window_left >= 0 && k < p - in->window_left) continue;
        const size_t slot = (size_t)in->block_table[k / in->block_size] * (size_t)in->block_size +
                            (size_t)(k % in->block_size);
        const size_t kb = (slot * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)D;
        double x = 0;
        for (int32_t e = 0; e < D; e++) {
            const double q = ref_load(in->q, ((size_t)t * (size_t)in->num_heads + (size_t)h) * (size_t)D + (size_t)e, in->q_dtype);
            x += bf16_rne((float)(q * scale)) * ref_load(in->k_rows, kb + (size_t)e, in->kv_dtype);
        }
        if (in->softcap > 0) x = in->softcap * tanh(x / in->softcap);
        if (in->alibi_slopes) x += (double)in->alibi_slopes[h] * (double)(k - p);
        logit[k] = x;
        if (x > m) m = x;
    }
    for (int dir = 0; dir < 2; dir++) {
        double num = 0, den = in->sinks ? exp(in->sinks[h] - m) : 0;
        for (int32_t k = 0; k < seq; k++) {
            if (logit[k] == -INFINITY) continue;
            const size_t slot = (size_t)in->block_table[k / in->block_size] *
                                    (size_t)in->block_size + (size_t)(k % in->block_size);
            const size_t vb = (slot * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)D;
            const double v = ref_load(in->v_rows, vb + (size_t)d, in->kv_dtype);
            const double eps = ((v > o) == (dir == 1) ? 1 : -1) * 0x1.0p-9;
            const double w = exp(logit[k] - m) * (1 + eps);
            num += w * v;
            den += w;
        }
        if (dir) *hi = num / den;
        else *lo = num / den;
    }
}

/* The bf16-rounding model's ranges (cmp_bf16_dot_error) hold every
 * output the modelled rounding can produce, pushed to its extremes, over
 * causal and windowed rows, soft cap, ALiBi and sinks; and they are not
 * vacuous (narrower than 0.05 here).  The check has teeth: without the
 * weight term (wabs = 0) the pushed outputs escape the ranges. */
Test(ref_range, bf16_model_holds_the_rounded_softmax, .timeout = 60) {
    int escaped_without_wabs = 0;
    for (int v = 0; v < 4; v++) {
        case_spec c;
        case_default(&c);
        snprintf(c.name, sizeof c.name, "bf16-model-%d", v);
        c.num_layers = 1;
        c.layers[0].num_heads = 4;
        c.layers[0].window = v == 1 ? 9 : -1;
        c.layers[0].softcap = v == 2 ? 5.0f : 0.0f;
        c.layers[0].alibi = v == 3;
        c.layers[0].sinks = v >= 2;
        c.model_num_heads = 4;
        c.num_kv_heads = 2;
        c.head_dim = 32;
        c.block_size = 16;
        c.q_dtype = AG_F32;
        c.kv_dtype = AG_BF16;
        c.out_dtype = AG_F32;
        c.num_reqs = 1;
        c.q_len[0] = 3;
        c.kv_len[0] = v == 0 ? 3 : 70;
        c.seed = 0xbf16u + (uint64_t)v;
        problem p;
        char msg[256];
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 28, msg, sizeof msg), 0, "%s", msg);
        cr_assert(p.materialized, "%s", p.unmaterialized_reason);
        ref_input in;
        problem_ref_input(&p, 0, &in);
        const size_t n = problem_out_elems(&p, 0);
        double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
        double *hi = malloc(n * sizeof(double)), *lo0 = malloc(n * sizeof(double));
        double *hi0 = malloc(n * sizeof(double));
        cr_assert(val && lo && hi && lo0 && hi0);
        ref_logit_err e = cmp_bf16_dot_error(c.head_dim);
        cr_assert_eq(ref_attention_range(&in, e, val, lo, hi), 0);
        e.wabs = 0;
        e.point_max = 0;
        cr_assert_eq(ref_attention_range(&in, e, val, lo0, hi0), 0);
        for (size_t i = 0; i < n; i++) {
            const int32_t D = c.head_dim, H = 4;
            const int32_t d = (int32_t)(i % (size_t)D), h = (int32_t)((i / (size_t)D) % (size_t)H);
            const int32_t t = (int32_t)(i / (size_t)D / (size_t)H);
            double elo, ehi;
            emulate_row(&in, t, h, d, val[i], &elo, &ehi);
            cr_assert(lo[i] - 1e-12 <= elo && ehi <= hi[i] + 1e-12,
                      "%s element %zu: rounded outputs [%.9g, %.9g] outside [%.9g, %.9g]", c.name,
                      i, elo, ehi, lo[i], hi[i]);
            cr_assert(hi[i] - lo[i] < 0.05, "%s element %zu: range %.3g wide", c.name, i,
                      hi[i] - lo[i]);
            escaped_without_wabs += elo < lo0[i] - 1e-12 || ehi > hi0[i] + 1e-12;
        }
        free(val), free(lo), free(hi), free(lo0), free(hi0);
        problem_free(&p);
    }
    cr_assert(escaped_without_wabs > 0, "the pushed outputs fit even without the weight term");
}
