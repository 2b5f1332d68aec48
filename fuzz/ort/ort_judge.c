/*
 * ort_judge.c — owns fuzz_ort_contract's verdicts (ort_judge.h): the op's
 * output against the reference's range element by element (rows with no
 * visible key left open), present_key / present_value against the rows
 * they must copy, outputs ORT allocated against the schema's shape, and
 * the canaries after every Run.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness/judge/compare.h"
#include "ort_judge.h"
#include "ort_run.h"
#include "ort_stats.h"


/* Data of output slot o (ours, or the value ORT allocated, whose shape
 * must be the documented one: else a finding). */
static const void *out_data(const call *K, int o) {
    const tens *t = &K->t[K->nin + o];
    if (t->bind == BIND_OURS) return t->p;
    if (t->bind != BIND_ORT || !t->v) return NULL;
    void *p = NULL;
    OrtTensorTypeAndShapeInfo *ti = NULL;
    size_t rank = 0;
    int64_t dims[4] = {0, 0, 0, 0};
    if (ortc_lib->f.GetTensorMutableData(t->v, &p) || ortc_lib->f.GetTensorTypeAndShape(t->v, &ti) ||
        ortc_lib->f.GetDimensionsCount(ti, &rank) || rank != (size_t)t->rank ||
        ortc_lib->f.GetDimensions(ti, dims, rank) || memcmp(dims, t->dim, rank * sizeof dims[0])) {
        if (ti) ortc_lib->f.ReleaseTensorTypeAndShapeInfo(ti);
        finding f;
        oracle_found(&f, ORACLE_DIFFERENTIAL, "ORT's %s has rank %zu, dims [%lld %lld %lld %lld]; "
                     "the schema says rank %d [%lld %lld %lld %lld]", t->name, rank,
                     (long long)dims[0], (long long)dims[1], (long long)dims[2], (long long)dims[3],
                     t->rank, (long long)t->dim[0], (long long)t->dim[1], (long long)t->dim[2],
                     (long long)t->dim[3]);
        ortc_describe(K);
        oracle_fire(&f);
    }
    ortc_lib->f.ReleaseTensorTypeAndShapeInfo(ti);
    return p;
}

/* Rows the op leaves without any visible key (every key masked): the
 * spec's softmax is 0/0 there, the reference's row 0; not judged. */
static int row_open(const fz_judged *J, int32_t tok, int64_t h, const fcase *c) {
    if (!J->mask) return 0;
    const float *m = J->mask + ((int64_t)tok * c->hq + h) * J->blk;
    int32_t r = 0;
    while (r < c->B - 1 && J->qsl[r + 1] <= tok) r++;
    const int64_t seq = J->seq[r], p = J->causal[r] ? seq - (J->qsl[r + 1] - J->qsl[r]) +
                                                          (tok - J->qsl[r]) : 0;
    const int64_t wl = J->in.window_left;
    for (int64_t j = J->causal[r] && wl >= 0 && p - wl > 0 ? p - wl : 0;
         j < (J->causal[r] ? p + 1 : seq); j++)
        if (m[j] != -INFINITY) return 0;
    return 1;
}

/* Fires the differential oracle on `what` (after describing K): bad of n
 * elements outside their range, the worst w (got, want, its range). */
static void fire_diff(const call *K, const char *fmt_what, size_t bad, size_t n, size_t w,
                      double got, double want, double lo, double hi) {
    finding f;
    oracle_found(&f, ORACLE_DIFFERENTIAL, "%s: %zu of %zu elements outside the reference's "
                 "range; worst at element %zu: got %.9g want %.9g (ORT's rounding allows [%.9g, "
                 "%.9g])", fmt_what, bad, n, w, got, want, lo, hi);
    ortc_describe(K);
    oracle_fire(&f);
}

/* The op's output against the reference, element by element, in the
 * reference's [token][head][dim] order. */
static void judge_output(const call *K, fz_judged *J) {
    const fcase *c = &K->c;
    const int64_t hq = c->hq, D = c->D, S = c->S;
    const ag_dtype dt = c->f16 ? AG_F16 : AG_F32;
    const size_t es = c->f16 ? 2 : 4, n = (size_t)J->ntok * (size_t)(hq * D);
    const uint8_t *y = out_data(K, O_Y);
    if (!y || n == 0) return;
    uint8_t *got = malloc(n * es + 8);
    if (!got) abort();
    /* GQA: f32 logits and weights whatever T (MAPPING.md, Precision).
     * Attention with T = f16: the spec's Q.K MatMul is in T, and 1.30
     * rounds the logits to f16 on some paths (seen: D 24, 16 heads over 8,
     * |logit| ~ 1e3), which q_dot = f16 bounds (its relative term covers a
     * relative rounding of each logit); weights rounded to f16 before P.V. */
    const int att16 = c->op == OP_ATT && c->f16;
    const ag_precision prec = {att16 ? AG_F16 : AG_F32, att16 ? AG_F16 : AG_F32, AG_F32, 0};
    const ref_model md = cmp_error_model(prec, dt, dt, (int32_t)D);
    fz_range R;
    finding f;
    if (fz_range_of(&R, &J->in, md, n, &f) != 0) {
        ortc_describe(K);
        oracle_fire(&f);
    }
    double *val = R.val, *lo = R.lo, *hi = R.hi;
    const int r4 = c->op == OP_ATT && c->rank4;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t s = 0; s < S; s++) {
            const int32_t tok = J->tok_of[b * S + s];
            if (tok < 0) continue;
            for (int64_t h = 0; h < hq; h++) {
                const size_t src =
                    (size_t)(r4 ? ((b * hq + h) * S + s) * D : (b * S + s) * hq * D + h * D);
                const size_t dst = (size_t)((tok * hq + h) * D);
                memcpy(got + dst * es, y + src * es, (size_t)D * es);
                if (row_open(J, tok, h, c)) {
                    for (int64_t d = 0; d < D; d++) lo[dst + d] = -INFINITY, hi[dst + d] = INFINITY;
                    ortc_st.elems_unjudged += (unsigned long)D;
                }
            }
        }
    cmp_result res;
    if (!cmp_compare(val, lo, hi, got, dt, n, cmp_tolerance(dt), &res))
        fire_diff(K, c->op == OP_GQA ? "GroupQueryAttention output" : "Attention output Y",
                  res.bad, n, res.worst, cmp_elem_get(got, res.worst, dt), val[res.worst],
                  lo[res.worst], hi[res.worst]);
    ortc_st.elems += n;
    fz_range_free(&R);
    free(got);
}

/* present_key / present_value: the schema's copies.  Row j of entry b,
 * head h is the past's row j below the past length and the new key's row
 * j - past from there up to the entry's total length (rows beyond it are
 * unspecified); compared bit for bit. */
static void judge_present(const call *K, const fz_judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const size_t es = c->f16 ? 2 : 4;
    for (int w = 0; w < 2; w++) {
        const tens *pt = &t[K->nin + (w ? O_PV : O_PK)];
        if (!pt->name || pt->bind == BIND_NONE || pt->bind == BIND_UNDECLARED) continue;
        const uint8_t *pr = out_data(K, w ? O_PV : O_PK);
        const int64_t L = pt->dim[2], Dd = pt->dim[3];
        for (int64_t b = 0; b < c->B; b++) {
            const int first = c->op == OP_GQA && c->S == c->total;
            const int64_t tot = c->op == OP_GQA ? c->len[b] : c->P + c->T;
            const int64_t past = c->op == OP_GQA ? (first ? 0 : tot - c->S) : c->P;
            for (int64_t h = 0; h < c->hkv; h++)
                for (int64_t j = 0; j < tot && j < L; j++) {
                    const uint8_t *want;
                    if (j < past) {
                        const tens *src = &t[c->op == OP_GQA ? (w ? G_PV : G_PK) : (w ? A_PV : A_PK)];
                        want = (const uint8_t *)src->p +
                               (size_t)(((b * c->hkv + h) * src->dim[2] + j) * Dd) * es;
                    } else if (c->op == OP_GQA && c->packed) {
                        want = (const uint8_t *)t[G_Q].p +
                               (size_t)((b * c->S + j - past) * t[G_Q].dim[2] +
                                        (c->hq + (w ? c->hkv : 0)) * c->D + h * c->D) * es;
                    } else if (c->op == OP_GQA) {
                        want = (const uint8_t *)t[w ? G_V : G_K].p +
                               (size_t)((b * c->S + j - past) * c->hkv * c->D + h * c->D) * es;
                    } else {
                        const int64_t jj = j - past, T = c->T;
                        want = (const uint8_t *)t[w ? A_V : A_K].p +
                               (size_t)(c->rank4 ? ((b * c->hkv + h) * T + jj) * Dd
                                                 : (b * T + jj) * c->hkv * Dd + h * Dd) * es;
                    }
                    const uint8_t *got = pr + (size_t)(((b * c->hkv + h) * L + j) * Dd) * es;
                    if (memcmp(got, want, (size_t)Dd * es)) {
                        finding f;
                        oracle_found(&f, ORACLE_DIFFERENTIAL, "%s: entry %lld, kv head %lld, row "
                                     "%lld is not the %s row it must copy (past length %lld)",
                                     pt->name, (long long)b, (long long)h, (long long)j,
                                     j < past ? "past" : "new", (long long)past);
                        ortc_describe(K);
                        oracle_fire(&f);
                    }
                }
        }
        ortc_st.present_checked++;
    }
    (void)J;
}

void ortc_judge(const call *K) {
    fz_judged J;
    if (ortc_reference_of(K, &J) != 0) abort();
    judge_output(K, &J);
    judge_present(K, &J);
    if (K->t[K->nin + O_QK].name)
        fz_tally_folded(&ortc_st.unjudged, "the QK output (the reference computes outputs, not "
                                           "logits or weights)");
    ortc_st.judged++;
    fz_judged_free(&J);
}

void ortc_check_canaries(call *K) {
    char msg[400];
    finding f;
    for (int i = 0; i < SLOTS; i++) {
        guard_violation gv;
        if (!K->t[i].g.map || !guard_check(&K->t[i].g, &gv)) continue;
        char d[300];
        guard_format_violation(&gv, d, sizeof d);
        oracle_found(&f, i >= K->nin ? ORACLE_SCRATCH_BOUNDS : ORACLE_INPUT_BOUNDS,
                     "ORT wrote outside a buffer it was handed: %s", d);
        ortc_describe(K);
        oracle_fire(&f);
    }
    if (guard_alloc_check(&ortc_galloc, msg, sizeof msg)) {
        oracle_found(&f, ORACLE_SCRATCH_BOUNDS, "ORT wrote outside a buffer it allocated: %s", msg);
        ortc_describe(K);
        oracle_fire(&f);
    }
}
