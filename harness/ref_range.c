/*
 * ref_range.c — the range of a softmax average whose logits are known only
 * to intervals (ref_softmax_range, declared in ref.h).  The reference uses
 * it for rows where an fp32 engine's rounding of the logits can move the
 * output by more than any fixed tolerance (huge scales: ref.c).
 *
 * The quantity is r(w) = sum_k w_k v_k / (sum_k w_k + w_sink) with each
 * w_k in [e^a_k, e^b_k] and w_sink = e^sink fixed (0 without a sink); a
 * key whose interval is a point is as fixed as the sink.
 * Why sorting suffices: r is a ratio of two functions linear in w with a
 * positive denominator, so for a fixed target t, r(w) >= t iff
 * sum_k w_k (v_k - t) >= t w_sink; each term is maximised at w_k's upper
 * end when v_k > t and at its lower end when v_k < t.  At the maximum t*
 * the optimal w is therefore "high for the keys with the largest values,
 * low for the rest", one of the n + 1 splits of the keys sorted by v, and
 * every split is a feasible w.  So max_j r(split j) is the maximum; the
 * minimum is the same with v negated.
 *
 * Numerics: weights span any range of exponents (huge-scale logits differ
 * by 1e30), so each partial sum is kept as (shift m, sum of w e^-m): the
 * prefix (keys high) grows forward, the suffix (keys low) is stored per
 * position on the way back, and a split combines the two with the sink at
 * their common shift.  The largest term of a partial sum is 1 after its
 * shift, so no denominator underflows to 0.
 */
#include "ref.h"

#include <math.h>
#include <stdlib.h>

/* A partial sum of weights and weighted values, in units of e^m. */
typedef struct wsum {
    double m, num, den;
} wsum;

static const wsum k_empty = {-INFINITY, 0.0, 0.0};

static void wsum_add(wsum *s, double logit, double v) {
    if (logit > s->m) {
        const double f = exp(s->m - logit);   /* 0 for the empty sum */
        s->num = s->num * f + v;
        s->den = s->den * f + 1.0;
        s->m = logit;
    } else {
        const double w = exp(logit - s->m);
        s->num += w * v;
        s->den += w;
    }
}

/* e^(m - top) for a partial sum's shift; 0 for an empty one. */
static double rescale(double m, double top) {
    return m == -INFINITY ? 0.0 : exp(m - top);
}

static int by_v_desc(const void *x, const void *y) {
    const double a = ((const ref_range_key *)x)->v, b = ((const ref_range_key *)y)->v;
    return (a < b) - (a > b);
}

/* max over the n + 1 splits of keys (sorted here by v, descending), with
 * the fixed terms (the sink and keys whose interval is a point) added to
 * every split. */
static double range_max(ref_range_key *keys, int32_t n, wsum fixed) {
    qsort(keys, (size_t)n, sizeof *keys, by_v_desc);
    /* suffix [i, n) with every key at its lower end, stored in keys[i].s* */
    wsum s = k_empty;
    for (int32_t i = n - 1; i >= 0; i--) {
        wsum_add(&s, keys[i].a, keys[i].v);
        keys[i].sm = s.m;
        keys[i].sn = s.num;
        keys[i].sd = s.den;
    }
    wsum p = k_empty;   /* prefix [0, j) with every key at its upper end */
    double best = -INFINITY;
    for (int32_t j = 0; j <= n; j++) {
        const wsum sf = j < n ? (wsum){keys[j].sm, keys[j].sn, keys[j].sd} : k_empty;
        double top = p.m > sf.m ? p.m : sf.m;
        if (fixed.m > top) top = fixed.m;
        const double fp = rescale(p.m, top), fs = rescale(sf.m, top), ff = rescale(fixed.m, top);
        const double num = p.num * fp + sf.num * fs + fixed.num * ff;
        const double den = p.den * fp + sf.den * fs + fixed.den * ff;
        const double r = num / den;
        if (r > best) best = r;
        if (j < n) wsum_add(&p, keys[j].b, keys[j].v);
    }
    return best;
}

/* Move the keys that can matter to the front; returns their count.  A key
 * whose upper end lies 800 below the largest lower end (or the sink) has
 * weight < e^-800 next to that key's in every split: exactly 0 in double
 * (exp underflows below e^-745), so dropping it changes no bit of the
 * result; at huge scales it drops most keys. */
static int32_t keep_relevant(ref_range_key *keys, int32_t n, int has_sink, double sink) {
    double top = has_sink ? sink : -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (keys[i].a > top) top = keys[i].a;
    int32_t kept = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!(keys[i].b >= top - 800.0)) continue;
        const ref_range_key t = keys[kept];
        keys[kept++] = keys[i];
        keys[i] = t;
    }
    return kept;
}

void ref_softmax_range(ref_range_key *keys, int32_t n, int has_sink, double sink, double *lo,
                       double *hi) {
    n = keep_relevant(keys, n, has_sink, sink);
    /* Keys whose interval is a point weigh the same in every split: they
     * join the sink in one fixed sum, and only the others are sorted (at
     * huge scales under a cap, nearly every key saturates to a point). */
    wsum fixed = k_empty;
    if (has_sink) wsum_add(&fixed, sink, 0.0);
    int32_t nv = 0;
    for (int32_t i = 0; i < n; i++) {
        if (keys[i].a < keys[i].b) {
            const ref_range_key t = keys[nv];
            keys[nv++] = keys[i];
            keys[i] = t;
        } else {
            wsum_add(&fixed, keys[i].a, keys[i].v);
        }
    }
    *hi = range_max(keys, nv, fixed);
    for (int32_t i = 0; i < nv; i++) keys[i].v = -keys[i].v;
    fixed.num = -fixed.num;
    *lo = -range_max(keys, nv, fixed);
    for (int32_t i = 0; i < nv; i++) keys[i].v = -keys[i].v;
}
