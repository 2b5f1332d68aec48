/*
 * ref_range.c — the interval each output element of the reference may
 * take under an engine's rounding (ref_attention_range; the model's
 * figures are compare.c's, the derivation is docs/tolerances.md).
 *
 * Owns: ref_row_keys / ref_row_finish (per row: which elements are
 * unjudged, the closed-form bound of ordinary rows, the exact range of
 * rows whose logits are too uncertain for it) and ref_softmax_range (that
 * exact range).
 *
 * The exact range: r(w) = sum_k w_k v_k / (sum_k w_k + w_sink) with each
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
#include "ref_range.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A partial sum of weights and weighted values, in units of e^m. */
typedef struct wsum {
    double m, num, den;
} wsum;

static const wsum k_empty = {-INFINITY, 0.0, 0.0};

static void wsum_add(wsum *s, double logit, double v) {
    if (logit == -INFINITY) return;   /* a vanished weight adds nothing */
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

/* ------------------------------------------------------------ the bounds */

/* What a row's bound needs beyond ref_row, computed once per row. */
typedef struct row_terms {
    double Emax;     /* largest logit error (after the cap, ALiBi, the add) */
    int32_t Rmax;
    double ds;       /* the sink weight's own error (log) */
    double cOmax, cLmax;
    double cA;       /* relative error of O's accumulation steps (adds, rescales,
                        merges: 2n + 6 of them) on their partial sums */
    double HL, Lmin; /* the closed form's coefficient of |o| and least L */
    double slack;    /* errors that do not scale with the weights, in the engine's
                        units (its largest weight is 1): the sums' accabs and V's
                        vflush */
    double alpha;    /* the weights' absolute errors wabs, per unit of
                        (largest |v| + |output|) */
} row_terms;

enum { ROW_CLOSED, ROW_EXACT, ROW_UNJUDGED };

struct ref_ws {
    double *k1, *k2;          /* per key of the request (ref_kv_stats) */
    unsigned char *kbad, *ksub;
    double *e, *Ep, *E, *G;   /* per visible key of a row */
    int32_t *R, *stack, *cnt;
    ref_range_key *keys;
    row_terms rt;             /* the row between ref_row_keys and ref_row_finish */
    int mode;
    ref_why why;              /* ROW_UNJUDGED: the reason */
    uint32_t open[REF_WHY_COUNT];  /* the row's unjudged elements by reason */
};

#define REF_WHY_NAME(id, name) name,
static const char *const why_names[REF_WHY_COUNT] = {REF_UNJUDGED_LIST(REF_WHY_NAME)};
#undef REF_WHY_NAME

const char *ref_why_name(int32_t w) {
    return w >= 0 && w < REF_WHY_COUNT ? why_names[w] : NULL;
}

void ref_row_tally(const ref_ws *ws, ref_unjudged *why) {
    if (!why) return;
    uint32_t any = 0;
    for (int i = 0; i < REF_WHY_COUNT; i++) {
        why->elems[i] += ws->open[i];
        why->rows_why[i] += ws->open[i] > 0;
        any += ws->open[i];
    }
    why->rows += any > 0;
    why->rows_all++;
}

void ref_ws_free(ref_ws *ws) {
    if (!ws) return;
    free(ws->k1), free(ws->k2), free(ws->kbad), free(ws->ksub);
    free(ws->e), free(ws->Ep), free(ws->E), free(ws->G);
    free(ws->R), free(ws->stack), free(ws->cnt), free(ws->keys);
    free(ws);
}

ref_ws *ref_ws_alloc(int32_t max_seq) {
    ref_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return NULL;
    const size_t n = (size_t)max_seq + 1;
    ws->k1 = malloc(n * sizeof(double));
    ws->k2 = malloc(n * sizeof(double));
    ws->kbad = malloc(n);
    ws->ksub = malloc(n);
    ws->e = malloc(n * sizeof(double));
    ws->Ep = malloc(n * sizeof(double));
    ws->E = malloc(n * sizeof(double));
    ws->G = malloc(n * sizeof(double));
    ws->R = malloc(n * sizeof(int32_t));
    ws->stack = malloc(n * sizeof(int32_t));
    ws->cnt = malloc(n * sizeof(int32_t));
    ws->keys = malloc(n * sizeof(ref_range_key));
    if (!ws->k1 || !ws->k2 || !ws->kbad || !ws->ksub || !ws->e || !ws->Ep || !ws->E ||
        !ws->G || !ws->R || !ws->stack || !ws->cnt || !ws->keys) {
        ref_ws_free(ws);
        return NULL;
    }
    return ws;
}

void ref_kv_bind(ref_ws *ws, ref_kv *kv) {
    kv->k1 = ws->k1;
    kv->k2 = ws->k2;
    kv->kbad = ws->kbad;
    kv->ksub = ws->ksub;
}

void ref_kv_stats(const ref_model *model, ref_kv *kv) {
    const size_t seq = (size_t)kv->seq;
    for (size_t k = 0; k < seq; k++) {
        double s1 = 0, s2 = 0, mx = 0;
        int tiny = 0;
        for (int32_t d = 0; d < kv->head_dim; d++) {
            const double a = fabs(kv->kt[(size_t)d * seq + k]);
            s1 += a;
            s2 += a * a;
            if (!(a <= mx)) mx = a;   /* NaN sticks */
            tiny |= a > 0 && a < 0x1.0p-126;
        }
        kv->k1[k] = s1;
        kv->k2[k] = sqrt(s2);
        kv->ksub[k] = (unsigned char)tiny;
        /* a decoded value fp32 cannot hold is infinite in every fp32
         * engine: the key's logit is not defined there */
        kv->kbad[k] = mx < model->fmax ? 0 : mx < INFINITY ? 1 : 2;   /* 2: inf or NaN */
    }
}

/* R[j] bounds how often the accumulator holding key j's term is rescaled
 * by a new running maximum.  Assumption (docs/tolerances.md): an engine
 * visits keys in ascending position within each contiguous split, so a
 * rescale after j comes from a key i > j whose computed logit beats every
 * computed one in [j, i): with logits known to +-t/2, no i' in [j, i) has
 * s_i' >= s_i + t.  With L(i) the nearest i' < i with s_i' >= s_i + t (a
 * non-increasing stack, binary searched), i counts for j iff L(i) < j, so
 * R[j] = #{i : L(i) <= j - 1} - (j + 1) (every i <= j has L(i) < j). */
int32_t ref_near_records(const double *s, int64_t n, double t, int32_t *R, int32_t *stack,
                         int32_t *cnt) {
    int64_t top = 0;
    for (int64_t i = 0; i <= n; i++) cnt[i] = 0;
    for (int64_t i = 0; i < n; i++) {
        const double v = s[i] + t;
        int64_t lo = 0, hi = top;   /* the stack's s do not increase: the last one >= v */
        while (lo < hi) {
            const int64_t mid = (lo + hi) / 2;
            if (s[stack[mid]] >= v) lo = mid + 1;
            else hi = mid;
        }
        cnt[lo > 0 ? stack[lo - 1] + 1 : 0]++;   /* cnt[L(i) + 1] */
        while (top > 0 && s[stack[top - 1]] < s[i]) top--;
        stack[top++] = (int32_t)i;
    }
    int64_t pref = cnt[0];
    int32_t rmax = 0;
    for (int64_t j = 0; j < n; j++) {
        R[j] = (int32_t)(pref - (j + 1));
        if (R[j] > rmax) rmax = R[j];
        pref += cnt[j + 1];
    }
    return rmax;
}

/* Element d of the row left open, for reason w. */
static void open_elem(ref_ws *ws, ref_why w, double *lo, double *hi) {
    *lo = -INFINITY;
    *hi = INFINITY;
    ws->open[w]++;
}

static void unjudged(ref_ws *ws, ref_why w, double *lo, double *hi, int32_t D) {
    for (int32_t d = 0; d < D; d++) open_elem(ws, w, lo + d, hi + d);
}

/* The additive term of visible key j of the row (ALiBi's or the mask's). */
static double row_bias(const ref_row *row, int64_t j) { return row->bias ? row->bias[j] : 0.0; }

/* The additive part of an element's bound: rt->slack plus the weights'
 * absolute errors, (n + 1) wabs (|v_k - out| <= M + |out| each) over the
 * engine's sum L >= 1 - cL (its largest weight is exactly 1), through the
 * sums' rounding. */
static double additive(const row_terms *rt, double M, double mag) {
    return rt->slack + rt->alpha * (M + mag) * (1 + rt->cOmax);
}

/* The exact range (ref_softmax_range) over each key's log-weight interval,
 * widened by the sums' rounding and the additive terms: for rows whose
 * weights the closed form cannot bound tightly. */
static void row_exact_range(const ref_row *row, const ref_model *md, ref_ws *ws,
                            const row_terms *rt, double *lo, double *hi) {
    const ref_input *in = row->in;
    const int32_t D = in->head_dim;
    const int64_t n = row->n;
    const double c = in->softcap, u = md->u;
    for (int64_t j = 0; j < n; j++) {
        double a = row->x[j] - ws->e[j], b = row->x[j] + ws->e[j];
        if (c > 0) {
            a = c * tanh(a / c);
            b = c * tanh(b / c);
        }
        const double bias = row_bias(row, j);
        const double post = u * (3 * fabs(row->s[j] - row->m) + 6 * rt->Emax) +
                            md->uexp * (ws->R[j] + 3);
        /* the sink's own error moves onto the keys (only ratios count) */
        const double w = ws->Ep[j] + post + md->wrel + rt->ds;
        ws->E[j] = a + bias - w;   /* ref_softmax_range reorders keys: keep the */
        ws->G[j] = b + bias + w;   /* intervals in E and G */
    }
    for (int32_t d = 0; d < D; d++) {
        double M = 0;
        int bad = 0;
        for (int64_t j = 0; j < n; j++) {
            const double v = row->kv->v[(size_t)(row->k0 + j) * (size_t)D + (size_t)d];
            ws->keys[j].a = ws->E[j];
            ws->keys[j].b = ws->G[j];
            ws->keys[j].v = v;
            bad |= !isfinite(v);
            if (fabs(v) > M) M = fabs(v);
        }
        if (bad) {
            open_elem(ws, REF_WHY_NONFINITE, lo + d, hi + d);
            continue;
        }
        if (!((double)(n + 2) * M * exp(md->wrel) * (1 + rt->cOmax) < md->accmax)) {
            open_elem(ws, REF_WHY_ACC_LIMIT, lo + d, hi + d);
            continue;
        }
        double rlo, rhi;
        ref_softmax_range(ws->keys, (int32_t)n, row->has_sink, row->sink, &rlo, &rhi);
        if (!(rlo <= rhi)) {
            open_elem(ws, REF_WHY_MODEL, lo + d, hi + d);
            continue;
        }
        /* O = sum w v (1 + theta_k), |theta_k| <= cO; L within (1 +- cL) of
         * its exact sum of positive terms; an L of unrounded weights differs
         * from one of rounded weights by a factor e^(+-wrel) */
        const double mag = fmax(fabs(rlo), fabs(rhi));
        double sl = (rt->cOmax * M + rt->cLmax * mag) / (1 - rt->cLmax) + mag * expm1(md->wrel) +
                    additive(rt, M, mag);
        sl = (sl + 2 * u * (mag + sl)) * (1 + 0x1.0p-20) + md->accabs;
        lo[d] = rlo - sl;
        hi[d] = rhi + sl;
    }
}

/*
 * The closed form (docs/tolerances.md, "The interval of a row"), in units
 * of e^m, m the exact max: each weight w_k = e^(s_k - m) reaches the sums
 * as w_k e^(+-d_k) (logit error, exp, rescales, the p_dot rounding), and
 * the sums add relative errors cO_k (O) and cL_k (L) per term.  Because
 * sum_k w_k (v_k - o) - o w_sink = 0 exactly, the output moves by at most
 *   [sum_k (D_k + w'_k c1) |v_k| + (O's accumulation) + |o| (sum_k (D_k +
 *   w'_k cL_k) + D_sink)] / (least possible L),
 *   D_k = w_k (e^d_k - 1), w'_k = w_k e^d_k,
 * whether the engine's L sums the rounded weights or the exact ones, for
 * moves of any size; then the additive terms (additive) and the final
 * division (2 roundings).  ref_row_keys computes the per-key part (G_k =
 * D_k + w'_k c1), ref.c's P.V pass the sums over V, ref_row_finish the
 * rest.
 */
const double *ref_row_keys(const ref_row *row, const ref_model *md, ref_ws *ws) {
    const ref_input *in = row->in;
    const ref_kv *kv = row->kv;
    const int32_t D = in->head_dim;
    const int64_t n = row->n, k0 = row->k0;
    const double u = md->u, scale = row->scale, sc = scale > 1 ? scale : 1;
    const double c = in->softcap;
    row_terms *rt = &ws->rt;
    memset(rt, 0, sizeof *rt);
    memset(ws->open, 0, sizeof ws->open);
    ws->mode = ROW_UNJUDGED;

    /* q: finite, and inside the q_dot type's range (else every engine of
     * that precision overflows on this row) */
    double q1 = 0, q2 = 0, qm = 0;
    for (int32_t d = 0; d < D; d++) {
        const double a = fabs(row->q[d]);
        q1 += a;
        q2 += a * a;
        if (!(a <= qm)) qm = a;
    }
    q2 = sqrt(q2);
    if (!(qm < INFINITY) || !isfinite(row->m)) {
        ws->why = REF_WHY_NONFINITE;
        return NULL;
    }
    if (!((md->q_unscaled ? qm : qm * sc) < md->qmax)) {
        ws->why = REF_WHY_CONVERSION;
        return NULL;
    }

    /* per key: the logit error before the cap (e: the dot product, and
     * the fp32 steps x / cap or the scale's rounding), mapped through the
     * cap (increasing: intervals to intervals), then the steps after it
     * (the cap's tanh and product, slope * (k - p), the add): E in all */
    for (int64_t j = 0; j < n; j++) {
        const int64_t k = k0 + j;
        if (kv->kbad[k] || !isfinite(row->s[j])) {
            ws->why = kv->kbad[k] == 1 ? REF_WHY_CONVERSION : REF_WHY_NONFINITE;
            return NULL;
        }
        /* the dot of the stored q and K itself past what the engine declares
         * it can hold (caps.max_abs_logit; FLT_MAX for an fp32 engine with
         * no rescaling: no summation order is safe there); an engine that
         * declares no limit is judged (docs/tolerances.md) */
        if (!(fmin(qm, md->q_held) * kv->k1[k] < md->logit_max)) {
            ws->why = REF_WHY_LOGIT_LIMIT;
            return NULL;
        }
        const double x = row->x[j], ms = scale * q2 * kv->k2[k];
        /* K elements below fp32's normal range may be flushed (or rounded,
         * decoded from fp8) in the engine: only keys that have them */
        const double kf = kv->ksub[k] ? md->kflush * scale * q1 : 0.0;
        /* products flushed by the dot instruction: D of them at most, each
         * below pflush in the units q was brought to (the scale's power of
         * two, <= 2 sc) */
        const double pf = md->pflush * 2.0 * sc * (double)D;
        const double e = (md->rel * ms +
                          (md->qabs * sc + (md->kflush + md->qblock) * scale * qm) * kv->k1[k] +
                          kf + pf) * (1 + 0x1.0p-10) + 2 * u * fabs(x);
        const double bias = row_bias(row, j);
        double cap_move = e, after = u * (2 * fabs(bias) + fabs(row->s[j]));
        if (c > 0) {
            const double sx = c * tanh(x / c);
            cap_move = fmax(c * tanh((x + e) / c) - sx, sx - c * tanh((x - e) / c));
            after += (md->uexp + u) * fabs(sx);
        }
        ws->e[j] = e;
        ws->Ep[j] = after;
        ws->E[j] = cap_move + after;
        if (!(ws->E[j] <= rt->Emax)) rt->Emax = ws->E[j];
    }
    rt->Rmax = ref_near_records(row->s, n, 2 * rt->Emax, ws->R, ws->stack, ws->cnt);

    /* per key: D_k, w'_k and the coefficient G_k = D_k + w'_k c1 of |v_k|
     * (c1: the term's own roundings, product and V decode); cO_k, cL_k:
     * every rounding on the term's way, for L and for the growth of O
     * (n + 2 adds, sink and split merges included, R + 3 rescales, its own) */
    const double lacc = log1p(md->uacc), l32 = log1p(u), c1 = expm1(3 * lacc);
    double Dsum = 0, HL = 0, Wmin = 0, CL = 0;
    for (int64_t j = 0; j < n; j++) {
        const double post = u * (3 * fabs(row->s[j] - row->m) + 6 * rt->Emax) +
                            md->uexp * (ws->R[j] + 3);
        const double dk = ws->E[j] + post + md->wrel;
        const double w = exp(row->s[j] - row->m);
        const double Dk = w * expm1(dk), wp = w * exp(dk);
        const double N = (double)n + ws->R[j] + 8;
        const double cO = expm1(N * lacc), cL = expm1(N * l32);
        ws->G[j] = Dk + wp * c1;
        Dsum += Dk;
        HL += Dk + wp * cL;
        CL += wp * cL;
        Wmin += w * exp(-dk);
        if (cO > rt->cOmax) rt->cOmax = cO;
        if (cL > rt->cLmax) rt->cLmax = cL;
    }
    /* O's accumulation steps: n adds (into splits, and merging them), at
     * most one rescale per key or split, the sink's add and rescale */
    rt->cA = expm1((2.0 * (double)n + 6) * lacc);
    if (row->has_sink) {
        const double w = exp(row->sink - row->m);
        rt->ds = u * (3 * fabs(row->sink - row->m) + 6 * rt->Emax) +
                 md->uexp * (rt->Rmax + 3) + md->wrel;
        const double cL = expm1(((double)n + rt->Rmax + 8) * l32);
        const double Ds = w * expm1(rt->ds), wp = w * exp(rt->ds);
        Dsum += Ds;
        HL += Ds + wp * cL;
        CL += wp * cL;
        Wmin += w * exp(-rt->ds);
    }
    /* in the engine's units: 2n + Rmax + 12 roundings of O may each lose
     * accabs, each V element vflush; (n + 1) weights wabs each */
    rt->alpha = (double)(n + 1) * md->wabs;
    if (!(rt->cLmax < 0.5) || !(rt->alpha < 0.25)) {
        ws->why = REF_WHY_MODEL;
        return NULL;
    }
    rt->slack = ((2.0 * (double)n + rt->Rmax + 12) * md->accabs + md->vflush) / (1 - rt->cLmax);
    rt->alpha /= 1 - rt->alpha;
    rt->HL = HL;
    rt->Lmin = Wmin - CL;
    /* weights uncertain by more than 1/8 of the sum: the closed form is
     * loose there (it grows like e^d), the exact range is not */
    ws->mode = Dsum <= 0.125 * Wmin && rt->Lmin > 0 ? ROW_CLOSED : ROW_EXACT;
    return ws->mode == ROW_CLOSED ? ws->G : NULL;
}

void ref_row_finish(const ref_row *row, const ref_model *md, ref_ws *ws, const double *bb,
                    const double *M, const double *P, double *lo, double *hi) {
    const int32_t D = row->in->head_dim;
    const row_terms *rt = &ws->rt;
    const double u = md->u;
    if (ws->mode == ROW_UNJUDGED || !isfinite(row->denom)) {
        unjudged(ws, ws->mode == ROW_UNJUDGED ? ws->why : REF_WHY_NONFINITE, lo, hi, D);
        return;
    }
    if (ws->mode == ROW_EXACT) {
        row_exact_range(row, md, ws, rt, lo, hi);
        return;
    }
    for (int32_t d = 0; d < D; d++) {
        const double o = row->o[d];
        /* the unnormalised O holds up to (n + 2) M in the engine's units:
         * where acc cannot, the declared precision overflows */
        if (!isfinite(bb[d]) || !isfinite(o)) {
            open_elem(ws, REF_WHY_NONFINITE, lo + d, hi + d);
            continue;
        }
        if (!((double)(row->n + 2) * M[d] * exp(md->wrel) * (1 + rt->cOmax) < md->accmax)) {
            open_elem(ws, REF_WHY_ACC_LIMIT, lo + d, hi + d);
            continue;
        }
        /* O's accumulation steps round partial sums over contiguous keys
         * (keys ascending within each split): each is a difference of two
         * prefix sums, at most 2 P, plus what the weights' errors add (bb) */
        const double accum = rt->cA * (2 * P[d] + bb[d]);
        double B = (bb[d] + accum + fabs(o) * rt->HL) / rt->Lmin;
        B += additive(rt, M[d], fabs(o) + B);
        B = (B + 2 * u * (fabs(o) + B)) * (1 + 0x1.0p-20) + md->accabs;
        lo[d] = o - B;
        hi[d] = o + B;
    }
}
