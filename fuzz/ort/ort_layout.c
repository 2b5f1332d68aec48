/*
 * ort_layout.c — owns the tensors of fuzz_ort_contract's call (ort_case.h):
 * from a decoded case, each input and output slot's name, element type,
 * rank and dims in the op's schema order, how each output is bound, and
 * the case's relation applied to them (a dim one off, a slot left out, a
 * length beyond a capacity).  Shapes only: the buffers are
 * ort_buffers.c's.
 */
#include <stdint.h>

#include "ort_case.h"

size_t ortc_et_size(int et) {
    return et == ORTA_T_FLOAT || et == ORTA_T_INT32 ? 4 : et == ORTA_T_INT64 ? 8
         : et == ORTA_T_BOOL ? 1 : 2;
}

/* Elements of t, or SIZE_MAX when the product overflows or a dim is negative. */
size_t ortc_elems(const tens *t) {
    size_t n = 1;
    for (int i = 0; i < t->rank; i++)
        if (t->dim[i] < 0 || __builtin_mul_overflow(n, (size_t)t->dim[i], &n)) return SIZE_MAX;
    return n;
}

/* Names slot t and gives it type et and the first `rank` of d0..d3 as
 * dims (a name of NULL leaves the slot out of the call). */
static void set(tens *t, const char *name, int et, int rank, int64_t d0, int64_t d1, int64_t d2,
                int64_t d3) {
    t->name = name, t->et = et, t->rank = rank;
    t->dim[0] = d0, t->dim[1] = d1, t->dim[2] = d2, t->dim[3] = d3;
}

/* The GQA tensors of case c, with relation c->rel applied to them. */
static void layout_gqa(call *K) {
    fcase *c = &K->c;
    tens *t = K->t;
    const int et = c->f16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const unsigned v = c->relv;
    int64_t qh = c->hq * c->D, kh = c->hkv * c->D, krows = c->S;
    if (c->rel == R_Q_HIDDEN) qh += v % 2 ? 8 : -8;
    if (c->rel == R_KV_HIDDEN) kh = v % 3 == 0 ? kh - 8 : v % 3 == 1 ? kh + c->D : kh + 8;
    if (c->rel == R_KEY_ROWS) krows += v % 2 ? 1 : -1;
    if (c->rel == R_ZERO_BIG) {
        /* nothing to touch, products beyond 2^32 */
        c->B = 0, c->S = v % 2 ? 65536 : 1, c->M = (int64_t)1 << (20 + v % 11), c->total =
            (int32_t)(c->M > INT32_MAX ? INT32_MAX : c->M);
        c->shared = c->past = 1, c->pres_bind = BIND_OURS, krows = c->S;
    }
    if (c->packed) set(&t[G_Q], "query", et, 3, c->B, c->S, qh + 2 * kh, 0);
    else {
        set(&t[G_Q], "query", et, 3, c->B, c->S, qh, 0);
        set(&t[G_K], "key", et, 3, c->B, krows, kh, 0);
        set(&t[G_V], "value", et, 3, c->B, krows, kh, 0);
    }
    const int64_t plen = c->shared ? c->M : c->P;
    if (c->past) {
        set(&t[G_PK], "past_key", et, 4, c->B, c->hkv, plen, c->D);
        set(&t[G_PV], "past_value", et, 4, c->B, c->hkv, plen, c->D);
        if (c->rel == R_PAST_DIMS) {
            const int w = (int)(v % 4);
            if (w == 0) t[G_PV].dim[2] = plen + 1;
            else if (w == 1) t[G_PK].dim[1] = c->hkv + 1;
            else if (w == 2) t[G_PK].dim[3] = c->D + 8;
            else t[G_PV].dim[0] = c->B + 1;
        }
        if (c->rel == R_PAST_ONE) t[G_PV].name = NULL;
        if (c->rel == R_PAST_SHORT && !c->shared && plen > 0)
            t[G_PK].dim[2] = t[G_PV].dim[2] = plen - 1 - (int64_t)(v % (unsigned)plen);
    }
    int64_t seqn = c->B;
    int srank = 1;
    if (c->rel == R_SEQ_SHAPE) {
        srank = v % 4 == 3 ? 0 : 1;
        seqn = v % 4 == 0 ? c->B - 1 : v % 4 == 1 ? c->B + 1 : c->B;
        if (v % 4 == 2) srank = 2;
    }
    set(&t[G_SEQ], "seqlens_k", ORTA_T_INT32, srank, seqn, 1, 0, 0);
    int trank = 0;
    int64_t tn = 1;
    if (c->rel == R_TOTAL_SHAPE) trank = 1 + (int)(v % 2), tn = v % 4 < 2 ? 1 : 2;
    set(&t[G_TOT], "total_sequence_length", ORTA_T_INT32, trank, tn, 1, 0, 0);
    if (c->cos) {
        /* rows: every position used (ORT checks them against
         * total_sequence_length), not the capacity: filling 2^24 rows
         * costs seconds */
        int64_t rows = c->total > ortc_max_len(c) ? c->total : ortc_max_len(c), cols = c->D / 2;
        if (c->rel == R_COS_ROWS) {
            if (v % 2) rows = ortc_max_len(c) > 1 ? ortc_max_len(c) - 1 : 0;
            else cols = c->D / 2 + 8;
        }
        set(&t[G_COS], "cos_cache", et, 2, rows, cols, 0, 0);
        set(&t[G_SIN], "sin_cache", et, 2, rows, cols, 0, 0);
    }
    if (c->bias) {
        int64_t *m = c->mdim;
        if (c->rel == R_BIAS_SHAPE) {
            const int w = (int)(v % 4);
            if (w == 0) m[3] = m[3] > 1 ? m[3] - 1 : 2;
            else if (w == 1) m[3] += 1;
            else if (w == 2) m[2] += 1;
            else m[0] = c->B + 1;
        }
        set(&t[G_BIAS], "attention_bias", et, 4, m[0], m[1], m[2], m[3]);
    }
    if (c->sink) {
        int64_t n = c->hq;
        if (c->rel == R_SINK_LEN) n += v % 2 ? 1 : -1;
        set(&t[G_SINK], "head_sink", et, 1, n, 0, 0, 0);
    }
    /* outputs */
    tens *o = t + G_NIN;
    set(&o[O_Y], "output", et, 3, c->B, c->S, c->hq * c->D, 0);
    if (c->pres_bind != BIND_UNDECLARED) {
        int64_t plen_out = c->shared ? c->M : (c->total > plen ? c->total : plen);
        if (c->rel == R_PRES_LEN && !c->shared) plen_out += v % 2 ? 1 : -1;
        set(&o[O_PK], "present_key", et, 4, c->B, c->hkv, plen_out, c->D);
        set(&o[O_PV], "present_value", et, 4, c->B, c->hkv, plen_out, c->D);
        o[O_PK].bind = o[O_PV].bind = c->pres_bind;
    }
    K->pk_alias = c->shared && c->past;
    if (c->a_qk != NOATTR && c->a_qk != 0) {
        int64_t tl = c->total;   /* (B, N, S, total_sequence_length), the schema's */
        if (c->rel == R_QK_LEN) tl += v % 2 ? 1 : -1;
        set(&o[O_QK], "output_qk", et, 4, c->B, c->hq, c->S, tl);
        o[O_QK].bind = c->qk_bind;
    }
    /* relations on the values */
    const int32_t cap = (int32_t)(c->shared ? (c->M > INT32_MAX ? INT32_MAX : c->M)
                                            : o[O_PK].name ? o[O_PK].dim[2] : c->total);
    const int64_t b = c->B > 0 ? (int64_t)(v / 4 % (unsigned)c->B) : 0;
    if (c->rel == R_SEQ_OVER_CAP && c->B > 0) {
        const int64_t over = (int64_t)cap + 1 + (int64_t)(v % 3) * 7;
        c->len[b] = over > INT32_MAX ? INT32_MAX : (int32_t)over;
    }
    if (c->rel == R_SEQ_NEG && c->B > 0) c->len[b] = v % 3 == 0 ? 0 : v % 3 == 1 ? -1 : INT32_MIN + 1;
    if (c->rel == R_SEQ_HUGE && c->B > 0) c->len[b] = v % 2 ? INT32_MAX : (1 << 30) + 1;
    if (c->rel == R_SEQ_BELOW_S && c->B > 0) c->len[b] = (int32_t)c->S - 1 - (int32_t)(v % 2);
    if (c->rel == R_SEQ_OVER_TOTAL && c->B > 0) c->len[b] = c->total + 1;
    if (c->rel == R_TOTAL_OFF) {
        static const int32_t d[] = {1, -1, 0, -1000, INT32_MAX};
        const int32_t w = d[v % 5];
        c->total = w == 0 ? 0 : w == INT32_MAX ? INT32_MAX : w == -1000 ? -1 : c->total + w;
    }
}

/* The Attention tensors of case c, with relation c->rel applied. */
static void layout_att(call *K) {
    fcase *c = &K->c;
    tens *t = K->t;
    const int et = c->f16 ? ORTA_T_FLOAT16 : ORTA_T_FLOAT;
    const unsigned v = c->relv;
    int64_t krows = c->T, vrows = c->T, kh = c->hkv * c->D, qh = c->hq * c->D;
    if (c->rel == R_V_ROWS) vrows += v % 2 ? 1 : -1;
    if (c->rel == R_KV_HIDDEN && !c->rank4) kh += v % 2 ? 1 : -1;
    if (c->rel == R_Q_HIDDEN && !c->rank4) qh += v % 2 ? 1 : c->D;
    if (c->rel == R_ZERO_BIG) c->B = 0, c->S = 65536, krows = vrows = c->T = 65536, c->mask = 0;
    if (c->rank4) {
        set(&t[A_Q], "Q", et, 4, c->B, c->hq, c->S, c->D);
        set(&t[A_K], "K", et, 4, c->B, c->hkv, krows, c->D);
        set(&t[A_V], "V", et, 4, c->B, c->hkv, vrows, c->Dv);
    } else {
        set(&t[A_Q], "Q", et, 3, c->B, c->S, qh, 0);
        set(&t[A_K], "K", et, 3, c->B, krows, kh, 0);
        set(&t[A_V], "V", et, 3, c->B, vrows, c->hkv * c->Dv, 0);
    }
    if (c->past) {
        set(&t[A_PK], "past_key", et, 4, c->B, c->hkv, c->P, c->D);
        set(&t[A_PV], "past_value", et, 4, c->B, c->hkv, c->P, c->Dv);
        if (c->rel == R_PAST_DIMS) {
            if (v % 3 == 0) t[A_PV].dim[2] = c->P + 1;
            else if (v % 3 == 1) t[A_PK].dim[1] = c->hkv + 1;
            else t[A_PK].dim[3] = c->D + 1;
        }
        if (c->rel == R_PAST_ONE) t[A_PV].name = NULL;
    }
    if (c->mask) {
        int64_t *m = c->mdim;
        if (c->rel == R_MASK_LAST) m[3] += v % 2 ? 1 : -1;
        if (c->rel == R_MASK_DIM) m[4 - c->mrank + (int)(v % (unsigned)c->mrank)] += 1 + (int64_t)(v % 2);
        set(&t[A_MASK], "attn_mask", c->mask == 1 ? ORTA_T_BOOL : et, c->mrank,
            m[4 - c->mrank], m[5 - c->mrank], c->mrank > 2 ? m[6 - c->mrank] : 0,
            c->mrank > 3 ? m[3] : 0);
    }
    if (c->rel == R_NONPAD_PAST && c->past) c->nonpad = 1;
    if (c->nonpad) {
        int64_t n = c->B;
        if (c->rel == R_NONPAD_LEN) n += v % 2 ? 1 : -1;
        set(&t[A_NONPAD], "nonpad_kv_seqlen", ORTA_T_INT64, 1, n, 0, 0, 0);
        if (c->rel == R_NONPAD_BAD && c->B > 0) {
            static const int64_t bad[] = {-1, 0, (int64_t)1 << 31, ((int64_t)1 << 32) + 1,
                                          INT64_MAX, INT64_MIN};
            const int64_t w = bad[v % 6];
            c->nonpad_v[v / 8 % (unsigned)c->B] = w == 0 ? c->T + 1 : w;
        }
    }
    tens *o = t + A_NIN;
    if (c->rank4) set(&o[O_Y], "Y", et, 4, c->B, c->hq, c->S, c->Dv);
    else set(&o[O_Y], "Y", et, 3, c->B, c->S, c->hq * c->Dv, 0);
    const int64_t tot = c->P + c->T;
    if (c->pres_bind != BIND_UNDECLARED && (c->past || c->pres_bind != BIND_NONE)) {
        const int64_t pl = tot + (c->rel == R_PRES_LEN ? (v % 2 ? 1 : -1) : 0);
        set(&o[O_PK], "present_key", et, 4, c->B, c->hkv, pl, c->D);
        set(&o[O_PV], "present_value", et, 4, c->B, c->hkv, pl, c->Dv);
        o[O_PK].bind = o[O_PV].bind = c->pres_bind;
    }
    if (c->a_qk != NOATTR) {
        const int64_t tl = tot + (c->rel == R_QK_LEN ? (v % 2 ? 1 : -1) : 0);
        set(&o[O_QK], "qk_matmul_output", et, 4, c->B, c->hq, c->S, tl);
        o[O_QK].bind = c->qk_bind;
    }
}

void ortc_layout(call *K) {
    if (K->c.op == OP_GQA) layout_gqa(K);
    else layout_att(K);
}
