/*
 * ort_ref.c — owns what the harness's reference is fed for one
 * fuzz_ort_contract call (ort_judge.h): one request per batch entry, its
 * keys gathered from the past and the new rows (or the packed query), q
 * rows of the judged queries, the op's masking made a dense additive
 * mask, the window, soft cap, scale and sinks as the schema defines them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ort_judge.h"

/* Value i of an f32 or f16 buffer p, widened exactly. */
static double get_t(int et, const void *p, size_t i) {
    return ag_dtype_decode(p, i, et == ORTA_T_FLOAT ? AG_F32 : AG_F16);
}

/* What every op shares (fz_judged_ref): the soft cap and scale left out
 * (NaN) or 0 are the reference's "off" and "1/sqrt(D)"; a negative scale
 * is its magnitude here, its sign moved onto q by the builders. */
static void ref_common(fz_judged *J, const fcase *c, int64_t D) {
    fz_judged_ref(J, c->B, c->hq, c->hkv, D,
                  !isnan(c->a_softcap) && c->a_softcap > 0 ? c->a_softcap : 0,
                  !isnan(c->a_scale) && c->a_scale != 0 ? fabs((double)c->a_scale) : 0);
}

/* GQA: entry b has total length len[b]; its past is len[b] - S rows (none
 * in a first prompt, where rows s >= len[b] are right padding, not
 * judged); keys below the past come from past_key (BNSH), the rest from
 * key (BSNH) or the packed query; query s sits at position past + s. */
static int build_gqa(const call *K, fz_judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const int et = t[G_Q].et;
    const int64_t B = c->B, S = c->S, hq = c->hq, hkv = c->hkv, D = c->D;
    const int first = S == c->total;
    J->blk = ortc_max_len(c);
    if (fz_judged_alloc(J, B, B * S, hq, hkv, D, c->bias) != 0) return -1;
    const double sign = !isnan(c->a_scale) && c->a_scale < 0 ? -1.0 : 1.0;
    const int64_t qrow = t[G_Q].dim[2], qoff_k = hq * D, qoff_v = (hq + hkv) * D;
    int32_t tok = 0;
    for (int64_t b = 0; b < B; b++) {
        const int32_t tot = c->len[b], past = first ? 0 : tot - (int32_t)S;
        const int32_t ql = first ? tot : (int32_t)S;
        J->qsl[b] = tok, J->seq[b] = tot, J->bt[b] = (int32_t)b, J->causal[b] = 1;
        for (int64_t s = 0; s < S; s++) {
            J->tok_of[b * S + s] = s < ql ? tok + (int32_t)s : -1;
            if (s >= ql) continue;
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((tok + s) * hq + h) * D + d] =
                        (float)(sign * get_t(et, t[G_Q].p, (size_t)((b * S + s) * qrow + h * D + d)));
        }
        for (int32_t j = 0; j < tot; j++)
            for (int64_t h = 0; h < hkv; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((b * J->blk + j) * hkv + h) * D + d);
                    if (j < past) {
                        const size_t pi = (size_t)(((b * hkv + h) * t[G_PK].dim[2] + j) * D + d);
                        J->k[at] = (float)get_t(et, t[G_PK].p, pi);
                        J->v[at] = (float)get_t(et, t[G_PV].p, pi);
                    } else if (c->packed) {
                        const size_t row = (size_t)((b * S + (j - past)) * qrow);
                        J->k[at] = (float)get_t(et, t[G_Q].p, row + (size_t)(qoff_k + h * D + d));
                        J->v[at] = (float)get_t(et, t[G_Q].p, row + (size_t)(qoff_v + h * D + d));
                    } else {
                        const size_t ki = (size_t)((b * S + (j - past)) * hkv * D + h * D + d);
                        J->k[at] = (float)get_t(et, t[G_K].p, ki);
                        J->v[at] = (float)get_t(et, t[G_V].p, ki);
                    }
                }
        /* attention_bias (B or 1, N or 1, S, total): row s of the entry */
        for (int64_t s = 0; c->bias && s < ql; s++)
            for (int64_t h = 0; h < hq; h++)
                for (int32_t j = 0; j < J->blk; j++) {
                    const tens *m = &t[G_BIAS];
                    const int64_t mb = m->dim[0] == 1 ? 0 : b, mh = m->dim[1] == 1 ? 0 : h;
                    J->mask[((tok + s) * hq + h) * J->blk + j] =
                        j < tot ? (float)get_t(et, m->p, (size_t)(((mb * m->dim[1] + mh) * S + s) *
                                                                      m->dim[3] + j))
                                : -INFINITY;
                }
        tok += ql;
    }
    J->qsl[B] = J->ntok = tok;
    ref_common(J, c, D);
    if (c->a_window != NOATTR && c->a_window >= 1) J->in.window_left = (int32_t)(c->a_window - 1);
    if (c->sink || c->a_smooth == 1) {
        J->sinks = calloc((size_t)hq, sizeof(float));
        if (!J->sinks) return -1;
        for (int64_t h = 0; c->sink && h < hq; h++) J->sinks[h] = (float)get_t(et, t[G_SINK].p, (size_t)h);
        J->in.sinks = J->sinks;
    }
    return 0;
}

/* Attention: entry b is one non-causal request over all P + T keys (past
 * first), the spec's bias made dense: the mask (bool: false hides; float:
 * added) broadcast from the right, is_causal (offset P with a past,
 * nonpad - S with nonpad_kv_seqlen, else 0) and nonpad_kv_seqlen hiding
 * keys at and beyond it. */
static int build_att(const call *K, fz_judged *J) {
    const fcase *c = &K->c;
    const tens *t = K->t;
    const int et = t[A_Q].et;
    const int64_t B = c->B, S = c->S, hq = c->hq, hkv = c->hkv, D = c->D, P = c->P;
    const int64_t tot = c->P + c->T;
    J->blk = (int32_t)tot;
    if (fz_judged_alloc(J, B, B * S, hq, hkv, D, 1) != 0) return -1;
    const int r4 = c->rank4;
    for (int64_t b = 0; b < B; b++) {
        J->qsl[b] = (int32_t)(b * S), J->seq[b] = (int32_t)tot, J->bt[b] = (int32_t)b;
        for (int64_t s = 0; s < S; s++) {
            J->tok_of[b * S + s] = (int32_t)(b * S + s);
            for (int64_t h = 0; h < hq; h++)
                for (int64_t d = 0; d < D; d++)
                    J->q[((b * S + s) * hq + h) * D + d] = (float)get_t(
                        et, t[A_Q].p, (size_t)(r4 ? ((b * hq + h) * S + s) * D + d
                                                  : (b * S + s) * hq * D + h * D + d));
        }
        for (int64_t j = 0; j < tot; j++)
            for (int64_t h = 0; h < hkv; h++)
                for (int64_t d = 0; d < D; d++) {
                    const size_t at = (size_t)(((b * tot + j) * hkv + h) * D + d);
                    size_t ki;
                    const void *ks, *vs;
                    if (j < P) {
                        ki = (size_t)(((b * hkv + h) * P + j) * D + d);
                        ks = t[A_PK].p, vs = t[A_PV].p;
                    } else {
                        const int64_t jj = j - P;
                        ki = (size_t)(r4 ? ((b * hkv + h) * c->T + jj) * D + d
                                         : (b * c->T + jj) * hkv * D + h * D + d);
                        ks = t[A_K].p, vs = t[A_V].p;
                    }
                    J->k[at] = (float)get_t(et, ks, ki);
                    J->v[at] = (float)get_t(et, vs, ki);
                }
        const int causal = c->a_causal == 1;
        const int64_t off = c->past ? P : c->nonpad ? c->nonpad_v[b] - S : 0;
        const tens *m = &t[A_MASK];
        for (int64_t s = 0; s < S; s++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t j = 0; j < tot; j++) {
                    double w = 0;
                    if (c->mask) {
                        /* right-aligned broadcast onto (B, hq, S, tot) */
                        const int64_t full[4] = {b, h, s, j};
                        size_t idx = 0;
                        for (int d = 0; d < m->rank; d++) {
                            const int64_t ax = full[4 - m->rank + d];
                            idx = idx * (size_t)m->dim[d] + (size_t)(m->dim[d] == 1 ? 0 : ax);
                        }
                        if (c->mask == 1) w = ((const uint8_t *)m->p)[idx] ? 0 : -INFINITY;
                        else w = get_t(et, m->p, idx);
                    }
                    if (causal && j > s + off) w = -INFINITY;
                    if (c->nonpad && j >= c->nonpad_v[b]) w = -INFINITY;
                    J->mask[((b * S + s) * hq + h) * tot + j] = (float)w;
                }
    }
    J->qsl[B] = J->ntok = (int32_t)(B * S);
    ref_common(J, c, D);
    return 0;
}


int ortc_reference_of(const call *K, fz_judged *J) {
    memset(J, 0, sizeof *J);
    return K->c.op == OP_GQA ? build_gqa(K, J) : build_att(K, J);
}
