/*
 * test_ref_range.c — the reference's intervals (harness/judge/ref_range.c,
 * ref_attention_range, cmp_error_model and the interval rule of
 * cmp_compare) on the shipped cases and the range machinery.
 *
 * Covers: ref_softmax_range against brute force over every vertex of the
 * weight box (with and without a sink, point to 1e30-wide intervals, keys
 * that may vanish); point intervals give the plain softmax average; on
 * every shipped ordinary case the intervals hold the exact output and stay
 * narrow enough that the hunted bugs show (a window one key too wide, a
 * global layer windowed, a padding key leaking: each fails cmp_compare);
 * the fuzzer's cancelling-dot case gets a wide interval on exactly its row
 * that holds both the exact output and the one the SIMD tables compute,
 * and cmp_compare passes the second only with it; the differential and
 * invariance oracles judge that element by it; the bf16-rounding model's
 * intervals hold the outputs its rounding can produce, pushed to their
 * extremes, and would not without its weight term.
 */
#include <criterion/criterion.h>

#include "../../harness/case/case.h"
#include "../../harness/judge/compare.h"
#include "../../harness/judge/oracles.h"
#include "../../harness/case/problem.h"
#include "../../harness/judge/ref_problem.h"
#include "../../harness/judge/ref_range.h"

#include <float.h>
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
        /* every seventh trial a key that may vanish (weight 0 at its low
         * end), never the only weight of the row */
        if (trial % 7 == 3 && (n > 1 || has_sink)) keys[n - 1].a = -INFINITY;
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

/* ref_near_records against its definition, key by key: i > j counts when
 * no i' in [j, i) has s_i' >= s_i + t; over ties, monotone runs, random
 * logits, and tolerances from 0 up. */
Test(ref_range, near_records_match_their_definition) {
    double s[64];
    int32_t R[64], stack[65], cnt[65];
    for (int trial = 0; trial < 400; trial++) {
        const int n = 1 + trial % 64;
        const double t = trial % 4 == 0 ? 0.0 : trial % 4 == 1 ? 1e-9 : 0.3 * urand();
        for (int i = 0; i < n; i++) {
            switch (trial % 5) {
            case 0: s[i] = 1.0; break;                         /* all tied */
            case 1: s[i] = 0.01 * i; break;                    /* rising */
            case 2: s[i] = -0.01 * i; break;                   /* falling */
            case 3: s[i] = (double)(int)(4 * urand()); break;  /* few values */
            default: s[i] = urand(); break;
            }
        }
        const int32_t rmax = ref_near_records(s, n, t, R, stack, cnt);
        int32_t want_max = 0;
        for (int j = 0; j < n; j++) {
            int32_t want = 0;
            for (int i = j + 1; i < n; i++) {
                int beaten = 0;
                for (int k = j; k < i && !beaten; k++) beaten = s[k] >= s[i] + t;
                want += !beaten;
            }
            cr_assert_eq(R[j], want, "trial %d (n %d, t %g): R[%d] = %d, want %d", trial, n, t,
                         j, R[j], want);
            if (want > want_max) want_max = want;
        }
        cr_assert_eq(rmax, want_max);
    }
}

/* The reference and its fp32-model intervals of layer l of p. */
static int f32_ranges(const problem *p, int32_t l, double *val, double *lo, double *hi) {
    ref_input in;
    ref_input_of_problem(p, l, &in);
    const ag_precision f32 = {AG_F32, AG_F32, AG_F32, 0};
    return ref_attention_range(&in, cmp_error_model(f32, in.q_dtype, in.kv_dtype, in.head_dim),
                               val, lo, hi);
}

/* The layer's reference with intervals (fp32 model); returns the number of
 * elements whose interval is wider than `wide`. */
static size_t ranges_of(const case_spec *c, double wide, double **val, double **lo, double **hi,
                        problem *p) {
    char msg[256];
    cr_assert_eq(problem_init(p, c, (size_t)1 << 30, msg, sizeof msg), 0, "%s", msg);
    cr_assert(p->materialized, "%s: %s", c->name, p->unmaterialized_reason);
    const size_t n = problem_out_elems(p, 0);
    *val = malloc(n * sizeof(double));
    *lo = malloc(n * sizeof(double));
    *hi = malloc(n * sizeof(double));
    cr_assert(*val && *lo && *hi);
    cr_assert_eq(f32_ranges(p, 0, *val, *lo, *hi), 0, "%s: reference refused", c->name);
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        cr_assert((*lo)[i] <= (*val)[i] && (*val)[i] <= (*hi)[i],
                  "%s element %zu: %.17g outside [%.17g, %.17g]", c->name, i, (*val)[i],
                  (*lo)[i], (*hi)[i]);
        count += (*hi)[i] - (*lo)[i] > wide;
    }
    return count;
}

/* The exact output of layer l with the input changed as a hunted bug
 * changes it, as the f32 an engine with that bug would store. */
static float *bugged(ref_input in, size_t n) {
    double *out = malloc(n * sizeof(double));
    float *f = malloc(n * sizeof(float));
    cr_assert(out && f);
    cr_assert_eq(ref_attention(&in, out), 0);
    for (size_t i = 0; i < n; i++) f[i] = (float)out[i];
    free(out);
    return f;
}

/* The intervals do not give the tight check away: on every shipped
 * ordinary case they hold the exact output, no element is unjudged, and
 * the outputs of the hunted bugs (the window one key too wide, a global
 * layer windowed, a key past seq_len leaking into non-causal rows) fall
 * outside them, judged by cmp_compare as an f32 output would be. */
Test(ref_range, ordinary_cases_keep_the_tight_check, .timeout = 240) {
    glob_t g;
    cr_assert_eq(glob("corpus/cases/*.case", 0, NULL, &g), 0, "run from the repository root");
    int seen = 0, bugs = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (strstr(g.gl_pathv[i], "/huge-")) continue;
        case_spec c;
        char err[256];
        cr_assert_eq(case_load(g.gl_pathv[i], &c, err, sizeof err), 0, "%s", err);
        if (c.expect != AG_R_NONE) continue;
        /* not ordinary: the dtype's extremes against subnormal K, where a
         * bf16 cache's flush (kflush) may move whole rows */
        if (c.values[CASE_T_Q].dist == CASE_DIST_EXTREME &&
            c.values[CASE_T_K].dist == CASE_DIST_DENORMAL)
            continue;
        /* nor K near the cache's maximum: logits past fp32's range, whose
         * interval may be unbounded (docs/engine.md, "Rows fp32 cannot
         * carry") */
        if (c.values[CASE_T_K].dist == CASE_DIST_EXTREME) continue;
        problem p;
        cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, err, sizeof err), 0, "%s", err);
        cr_assert(p.materialized, "%s: %s", g.gl_pathv[i], p.unmaterialized_reason);
        const ag_precision f32 = {AG_F32, AG_F32, AG_F32, 0};
        const cmp_tol tol = cmp_tolerance(AG_F32);
        for (int32_t l = 0; l < c.num_layers; l++) {
            const size_t n = problem_out_elems(&p, l);
            double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
            double *hi = malloc(n * sizeof(double));
            cr_assert(val && lo && hi);
            ref_input in;
            ref_input_of_problem(&p, l, &in);
            const ref_model md = cmp_error_model(f32, in.q_dtype, in.kv_dtype, in.head_dim);
            cr_assert_eq(ref_attention_range(&in, md, val, lo, hi), 0);
            for (size_t j = 0; j < n; j++)
                cr_assert(lo[j] <= val[j] && val[j] <= hi[j] && isfinite(hi[j] - lo[j]),
                          "%s layers.%d element %zu: %.17g outside [%.17g, %.17g]",
                          g.gl_pathv[i], (int)l, j, val[j], lo[j], hi[j]);
            /* one hunted bug per layer, as its shape allows */
            ref_input b = in;
            int32_t seq_pad[CASE_MAX_REQS];
            const char *what;
            if (!in.causal[0]) {
                for (int32_t r = 0; r < c.num_reqs; r++) seq_pad[r] = in.seq_lens[r] + 1;
                b.seq_lens = seq_pad;
                what = "padding key leaking";
            } else if (in.window_left >= 0) {
                b.window_left = in.window_left + 1;
                what = "window one key too wide";
            } else {
                b.window_left = 7;
                what = "global layer windowed";
            }
            float *got = bugged(b, n);
            cmp_result r;
            const int ok = cmp_compare(val, lo, hi, got, AG_F32, n, tol, &r);
            /* a bug that changes no row (every row within the window) is
             * no test: only count the layers where the outputs moved */
            int moved = 0;
            for (size_t j = 0; j < n && !moved; j++)
                moved = (double)got[j] != (double)(float)val[j];
            if (moved) {
                cr_assert(!ok, "%s layers.%d: the %s passes (max excess at %zu)", g.gl_pathv[i],
                          (int)l, what, r.worst);
                bugs++;
            }
            free(got);
            free(val);
            free(lo);
            free(hi);
            seen++;
        }
        problem_free(&p);
    }
    globfree(&g);
    cr_assert(seen >= 15, "only %d layers checked", seen);
    cr_assert(bugs >= 10, "only %d layers had a bug to catch", bugs);
}

/* x as the nearest float at or above it (an interval's lower end stored
 * by an f32 engine without leaving the interval). */
static float float_up(double x) {
    float f = (float)x;
    if ((double)f < x) f = nextafterf(f, INFINITY);
    return f;
}

/* corpus/cases/huge-scale-cancel.case: the fuzzer's cancelling dot. */
static case_spec cancel_case(void) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load("corpus/cases/huge-scale-cancel.case", &c, err, sizeof err), 0, "%s",
                 err);
    return c;
}

/* The fuzzer's case: the elements of one row get a wide interval (the
 * rest stay narrow); it holds the exact output and the SIMD tables'
 * 0.1443; cmp_compare passes that value only with the interval and still
 * fails a value below it. */
Test(ref_range, cancelling_dot_gets_a_range, .timeout = 60) {
    case_spec c = cancel_case();
    problem p;
    double *val, *lo, *hi;
    const size_t wide = ranges_of(&c, 1e-3, &val, &lo, &hi, &p);
    cr_assert(wide >= 1 && wide <= 2, "%zu elements got a wide interval", wide);
    const size_t H = (size_t)c.layers[0].num_heads, D = (size_t)c.head_dim;
    const size_t at = (21 * H + 29) * D;   /* token 21, head 29, dim 0 */
    cr_assert(lo[at] < 0.1444 && hi[at] > 0.2020, "[%.9g, %.9g]", lo[at], hi[at]);

    const size_t n = problem_out_elems(&p, 0);
    float *got = malloc(n * sizeof *got);
    cr_assert(got);
    for (size_t i = 0; i < n; i++) got[i] = (float)val[i];
    const cmp_tol tol = cmp_tolerance(AG_F32);
    cmp_result r;
    got[at] = float_up(lo[at]);
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

/* The oracles on that case: the differential names the interval, and two
 * runs may differ inside it (invariance) but not beyond it. */
Test(ref_range, oracles_use_the_range, .timeout = 60) {
    case_spec c = cancel_case();
    char err[256];
    c.out_dtype = AG_F32;   /* exact values in the output buffers */
    problem p;
    cr_assert_eq(problem_init(&p, &c, (size_t)1 << 30, err, sizeof err), 0, "%s", err);
    oracle_ref ref;
    cr_assert_eq(oracle_reference(&p, 0, (ag_precision){AG_F32, AG_F32, AG_F32, 0}, NULL, &ref), 0);
    const size_t n = problem_out_elems(&p, 0);
    const size_t at = (21 * (size_t)c.layers[0].num_heads + 29) * (size_t)c.head_dim;
    cr_assert(ref.hi[at] - ref.lo[at] > 1e-3);
    float *base = malloc(n * sizeof *base), *other = malloc(n * sizeof *other);
    cr_assert(base && other);
    for (size_t i = 0; i < n; i++) base[i] = other[i] = (float)ref.val[i];
    finding f;
    other[at] = float_up(ref.lo[at]);   /* the other end of the range */
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

/* RNE into bf16 errs by up to 2^-8 relative (half a step of 2^-7 at 1),
 * not 2^-9: the model's figure. */
Test(ref_range, bf16_rounding_unit_is_2_to_the_minus_8) {
    double worst = 0;
    for (uint32_t m = 0; m < (1u << 16); m++) {
        const uint32_t bits = 0x3f800000u | (m << 7) | 0x40u;   /* 1 + m 2^-16 + 2^-17 */
        float x;
        memcpy(&x, &bits, 4);
        const double e = fabs(bf16_rne(x) - (double)x) / (double)x;
        if (e > worst) worst = e;
    }
    cr_assert(worst > 0x1.fcp-9 && worst <= 0x1.0p-8, "worst %.6g", worst);
    const ag_precision bf = {AG_BF16, AG_BF16, AG_F32, 0};
    const ref_model md = cmp_error_model(bf, AG_F32, AG_BF16, 64);
    cr_assert(md.wrel >= -log1p(-0x1.0p-8) && md.rel >= 0x1.0p-8);
}

/* The most and least element d of row (t, h) can become under the
 * rounding a model describes: q x scale rounded to fp32 and then (round_q)
 * to bf16, every weight multiplied by 1 + eps with |eps| = weps pushed the
 * way that moves element d furthest (up: eps > 0 where v > o).  Causal
 * rows of request 0, K/V read from the plain rows through the table. */
static void emulate_row(const ref_input *in, int32_t t, int32_t h, int32_t d, double o,
                        int round_q, double weps, double *lo, double *hi) {
    const int32_t D = in->head_dim, g = in->num_heads / in->num_kv_heads, kvh = h / g;
    const int32_t seq = in->seq_lens[0], q_len = in->query_start_loc[1];
    const int64_t p = seq - q_len + t;
    const double scale = in->scale > 0 ? in->scale : 1.0 / sqrt((double)D);
    double logit[512];
    cr_assert(seq <= 512);
    double m = in->sinks ? in->sinks[h] : -INFINITY;
    for (int32_t k = 0; k < seq; k++) {
        logit[k] = -INFINITY;
        if (k > p) continue; /* DESIGN §2 (causal rows here) */
        if (in->window_left >= 0 && k < p - in->window_left) continue;
        const size_t row = (size_t)in->block_table[k / in->block_size] * (size_t)in->block_size +
                           (size_t)(k % in->block_size);
        const size_t kb = (row * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)D;
        double x = 0;
        for (int32_t e = 0; e < D; e++) {
            const size_t qi = ((size_t)t * (size_t)in->num_heads + (size_t)h) * (size_t)D;
            const double q = ag_dtype_decode(in->q, qi + (size_t)e, in->q_dtype);
            const double qs = round_q ? bf16_rne((float)(q * scale)) : (double)(float)(q * scale);
            x += qs * ag_dtype_decode(in->k_rows, kb + (size_t)e, in->kv_dtype);
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
            const size_t row = (size_t)in->block_table[k / in->block_size] *
                                   (size_t)in->block_size + (size_t)(k % in->block_size);
            const size_t vb = (row * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)D;
            const double v = ag_dtype_decode(in->v_rows, vb + (size_t)d, in->kv_dtype);
            const double eps = ((v > o) == (dir == 1) ? 1 : -1) * weps;
            const double w = exp(logit[k] - m) * (1 + eps);
            num += w * v;
            den += w;
        }
        if (dir) *hi = num / den;
        else *lo = num / den;
    }
}

/* Each bf16 rounding model's intervals hold every output its rounding can
 * produce, pushed to its extremes, over causal and windowed rows, soft
 * cap, ALiBi and sinks, and are not vacuous (narrower than 0.05 here):
 * {bf16, bf16} (attnguard's VDPBF16PS tile) holds q and weights rounded;
 * {f32, bf16} weights rounded only, {bf16, f32} q rounded only.  Each
 * term has teeth: the fp32 model lets the pushed outputs of either
 * rounding escape. */
Test(ref_range, bf16_models_hold_the_rounded_softmax, .timeout = 60) {
    static const struct {
        ag_precision prec;
        int round_q;
        double weps;
    } models[] = {{{AG_BF16, AG_BF16, AG_F32, 0}, 1, 0x1.0p-8},
                  {{AG_F32, AG_BF16, AG_F32, 0}, 0, 0x1.0p-8},
                  {{AG_BF16, AG_F32, AG_F32, 0}, 1, 0.0}};
    int escaped[3] = {0, 0, 0};
    for (int v = 0; v < 4; v++) {
        case_spec c;
        case_default(&c);
        snprintf(c.name, sizeof c.name, "bf16-model-%d", v);
        c.num_layers = 1;
        c.layers[0].num_heads = 4;
        c.layers[0].window = v == 1 ? 9 : -1;
        c.layers[0].softcap = v == 2 ? 5.0f : 0.0f;
        c.layers[0].alibi = v == 3 ? CASE_SRC_STANDARD : CASE_SRC_NONE;
        c.layers[0].sinks = v >= 2 ? CASE_SRC_STANDARD : CASE_SRC_NONE;
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
        ref_input_of_problem(&p, 0, &in);
        const size_t n = problem_out_elems(&p, 0);
        double *val = malloc(n * sizeof(double)), *lo = malloc(n * sizeof(double));
        double *hi = malloc(n * sizeof(double)), *lo0 = malloc(n * sizeof(double));
        double *hi0 = malloc(n * sizeof(double));
        cr_assert(val && lo && hi && lo0 && hi0);
        const ag_precision f32 = {AG_F32, AG_F32, AG_F32, 0};
        cr_assert_eq(ref_attention_range(&in, cmp_error_model(f32, in.q_dtype, in.kv_dtype,
                                                              in.head_dim), val, lo0, hi0), 0);
        for (int m = 0; m < 3; m++) {
            const ref_model e = cmp_error_model(models[m].prec, in.q_dtype, in.kv_dtype,
                                                in.head_dim);
            cr_assert_eq(ref_attention_range(&in, e, val, lo, hi), 0);
            for (size_t i = 0; i < n; i++) {
                const int32_t D = c.head_dim, H = 4;
                const int32_t d = (int32_t)(i % (size_t)D);
                const int32_t h = (int32_t)((i / (size_t)D) % (size_t)H);
                const int32_t t = (int32_t)(i / (size_t)D / (size_t)H);
                double elo, ehi;
                emulate_row(&in, t, h, d, val[i], models[m].round_q, models[m].weps, &elo, &ehi);
                cr_assert(lo[i] - 1e-12 <= elo && ehi <= hi[i] + 1e-12,
                          "%s model %d element %zu: rounded outputs [%.9g, %.9g] outside "
                          "[%.9g, %.9g]", c.name, m, i, elo, ehi, lo[i], hi[i]);
                cr_assert(hi[i] - lo[i] < 0.05, "%s model %d element %zu: range %.3g wide",
                          c.name, m, i, hi[i] - lo[i]);
                escaped[m] += elo < lo0[i] - 1e-12 || ehi > hi0[i] + 1e-12;
            }
        }
        free(val), free(lo), free(hi), free(lo0), free(hi0);
        problem_free(&p);
    }
    for (int m = 0; m < 3; m++)
        cr_assert(escaped[m] > 0, "model %d: the pushed outputs fit the fp32 model", m);
}

/* ------------------------------------------- what an engine declares */

/* Layer 0 of a shipped case, under the fp32 model with `caps`' limits:
 * the reference (r, owned by the caller) and how many elements it left
 * open for reason w. */
static uint64_t open_for(const char *path, const ag_caps *caps, ref_why w, problem *p,
                         oracle_ref *r) {
    case_spec c;
    char err[256];
    cr_assert_eq(case_load(path, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(problem_init(p, &c, (size_t)1 << 30, err, sizeof err), 0, "%s", err);
    cr_assert(p->materialized, "%s", path);
    cr_assert_eq(oracle_reference(p, 0, (ag_precision){AG_F32, AG_F32, AG_F32, 0}, caps, r), 0);
    uint64_t all = 0;
    for (int i = 0; i < REF_WHY_COUNT; i++) all += r->why.elems[i];
    size_t open = 0, n = problem_out_elems(p, 0);
    for (size_t i = 0; i < n; i++) open += r->lo[i] == -INFINITY && r->hi[i] == INFINITY;
    cr_assert_eq(all, (uint64_t)open, "%s: %llu counted, %zu open", path,
                 (unsigned long long)all, open);
    cr_assert_leq(r->why.rows, r->why.rows_all);
    return r->why.elems[w];
}

/* The excuse follows the declaration: an engine with a logit limit
 * (FLT_MAX, an fp32 engine) leaves rows whose <q, k> passes it open and
 * counted; one that declares none (max_abs_logit 0) is judged on them,
 * and an output off by a tenth there fails. */
Test(ref_range, declared_logit_limit_decides_the_excuse, .timeout = 60) {
    const char *path = "corpus/cases/huge-dot-past-fp32.case";
    problem p;
    oracle_ref r;
    const ag_caps fp32 = {.max_abs_logit = FLT_MAX}, none = {.max_abs_logit = 0};
    const uint64_t excused = open_for(path, &fp32, REF_WHY_LOGIT_LIMIT, &p, &r);
    cr_assert_gt(excused, 0, "no row past FLT_MAX: the case no longer tests the excuse");
    cr_assert_gt(r.why.rows_why[REF_WHY_LOGIT_LIMIT], 0);
    oracle_ref_free(&r);
    problem_free(&p);
    cr_assert_eq(open_for(path, NULL, REF_WHY_LOGIT_LIMIT, &p, &r), excused, "NULL caps: fp32's");
    oracle_ref_free(&r);
    problem_free(&p);

    cr_assert_eq(open_for(path, &none, REF_WHY_LOGIT_LIMIT, &p, &r), 0);
    cr_assert_eq(r.why.rows, 0, "every row judged");
    const size_t n = problem_out_elems(&p, 0);
    float *got = malloc(n * sizeof *got);
    cr_assert(got);
    for (size_t i = 0; i < n; i++) got[i] = (float)r.val[i];
    finding f;
    cr_assert_eq(oracle_check_differential(&p, 0, got, &r, NULL, &f), ORACLE_NONE, "%s", f.detail);
    got[n / 2] = (float)(r.val[n / 2] + 0.1);
    cr_assert_eq(oracle_check_differential(&p, 0, got, &r, NULL, &f), ORACLE_DIFFERENTIAL);
    free(got);
    oracle_ref_free(&r);
    problem_free(&p);
}

/* The accumulator's excuse likewise: open and counted without
 * AG_CAP_WIDE_ACC, judged with it, where an overflowed (infinite) element
 * fails. */
Test(ref_range, declared_wide_acc_decides_the_excuse, .timeout = 60) {
    const char *path = "corpus/cases/huge-v-spike-sinks.case";
    problem p;
    oracle_ref r;
    const ag_caps plain = {.max_abs_logit = 0}, wide = {.flags = AG_CAP_WIDE_ACC};
    cr_assert_gt(open_for(path, &plain, REF_WHY_ACC_LIMIT, &p, &r), 0);
    oracle_ref_free(&r);
    problem_free(&p);
    cr_assert_eq(open_for(path, &wide, REF_WHY_ACC_LIMIT, &p, &r), 0);
    const size_t n = problem_out_elems(&p, 0);
    float *got = malloc(n * sizeof *got);
    cr_assert(got);
    size_t big = 0;
    for (size_t i = 0; i < n; i++) {
        got[i] = (float)r.val[i];
        if (fabs(r.val[i]) > fabs(r.val[big])) big = i;
    }
    finding f;
    cr_assert_eq(oracle_check_differential(&p, 0, got, &r, NULL, &f), ORACLE_NONE, "%s", f.detail);
    got[big] = r.val[big] > 0 ? INFINITY : -INFINITY;
    cr_assert_eq(oracle_check_differential(&p, 0, got, &r, NULL, &f), ORACLE_DIFFERENTIAL);
    free(got);
    oracle_ref_free(&r);
    problem_free(&p);
}

/* Every reason has a name, and the list ends where the enum does. */
Test(ref_range, unjudged_reasons_are_named) {
    for (int32_t w = 0; w < REF_WHY_COUNT; w++) cr_assert(ref_why_name(w) && ref_why_name(w)[0]);
    cr_assert_null(ref_why_name(REF_WHY_COUNT));
    cr_assert_null(ref_why_name(-1));
}
