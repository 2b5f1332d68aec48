/*
 * ref_range.h — ref_range.c's interface: what ref.c hands it for one
 * query row (the row's exact logits and output, and the decoded K/V of
 * its request and KV head), the bounds it gives back, and the exact range
 * of a softmax-weighted sum under logit intervals.  Private to the
 * reference (ref.c) and its tests; the reference's API is ref.h.
 */
#ifndef ATTN_REF_RANGE_H
#define ATTN_REF_RANGE_H

#include "ref.h"

/* Per (request, KV head): K and V decoded to double, and per key what the
 * bounds need (ref_kv_stats fills k1, k2, kbad and ksub). */
typedef struct ref_kv {
    int32_t seq, head_dim;
    const double *kt;        /* [head_dim][seq]: K transposed, kt[d * seq + k] */
    const double *v;         /* [seq][head_dim]: V rows */
    double *k1, *k2;         /* [seq]: sum_d |k_d| and ||k||_2 */
    unsigned char *kbad;     /* [seq]: 1: K row at/above the fp32 limit, 2: not finite */
    unsigned char *ksub;     /* [seq]: K row has elements in (0, 2^-126) */
} ref_kv;

/* One query row (query head h at position p) and its visible keys
 * k0 .. k0 + n - 1 of kv (a contiguous range: ref.c, visible_range; with a
 * mask, kv holds only the row's visible keys and k0 is 0). */
typedef struct ref_row {
    const ref_input *in;
    const ref_kv *kv;
    int32_t h;
    int64_t p, k0, n;
    const double *q;         /* [head_dim] decoded q */
    double scale;            /* the resolved scale */
    const double *x;         /* [n] scale * <q, k> (before the cap) */
    const double *s;         /* [n] final logits (after the cap and the bias) */
    const double *bias;      /* [n] the additive term (ALiBi's or the mask's), or NULL */
    double m;                /* max of s and the sink */
    double denom;            /* sum of e^(s - m), the sink's included (P.V pass) */
    int has_sink;
    double sink;             /* the sink's logit (when has_sink) */
    const double *o;         /* [head_dim] exact output (P.V pass) */
} ref_row;

/* Workspace of the bounds for rows of up to max_seq keys (ref_range.c). */
typedef struct ref_ws ref_ws;
ref_ws *ref_ws_alloc(int32_t max_seq);
void ref_ws_free(ref_ws *ws);
/* The arrays of kv that ref_kv_stats fills live in ws. */
void ref_kv_bind(ref_ws *ws, ref_kv *kv);
void ref_kv_stats(const ref_model *model, ref_kv *kv);
/* R[j] for j < n: the keys i > j whose logit s_i (each known to +-t/2)
 * may beat every logit in [j, i), i.e. no i' in [j, i) has s_i' >= s_i + t:
 * how often an ascending walk that holds key j's term may rescale it.
 * stack and cnt: scratch of n + 1 entries.  Returns max R.  O(n log n). */
int32_t ref_near_records(const double *s, int64_t n, double t, int32_t *R, int32_t *stack,
                         int32_t *cnt);
/* A row's bound in two steps around ref.c's P.V pass.  ref_row_keys, once
 * the logits are known (o and denom not read): the per-key coefficients
 * G[n] for which the P.V pass must also keep, per d, bb = sum_k G_k
 * |v_kd|, M = max_k |v_kd| and P = max over j of |sum_{k <= j} w_k v_kd|
 * (w_k = e^(s_k - m), keys in ascending order), or NULL when the row needs
 * no such sums.  ref_row_finish, with o and denom: lo/hi ([head_dim]); bb,
 * M and P as kept (read only when ref_row_keys returned G). */
const double *ref_row_keys(const ref_row *row, const ref_model *model, ref_ws *ws);
void ref_row_finish(const ref_row *row, const ref_model *model, ref_ws *ws, const double *bb,
                    const double *M, const double *P, double *lo, double *hi);
/* After ref_row_finish: the row's unjudged elements by reason, added to
 * *why (NULL: nothing). */
void ref_row_tally(const ref_ws *ws, ref_unjudged *why);

/* The least and greatest value of
 *     sum_k w_k v_k / (sum_k w_k + [sink] e^sink),  w_k = e^s_k, a_k <= s_k <= b_k,
 * over n >= 1 keys.  Exact up to double rounding: a ratio
 * of this kind is extremal where every key sits at an end of its interval,
 * high for the keys whose value exceeds the optimum and low for the rest,
 * so sorting by v and trying each split finds it.  a_k may be -inf (the
 * key may vanish).  The keys are reordered; their a, b and v are kept. */
typedef struct ref_range_key {
    double a, b, v;         /* the caller's: logit interval and value */
    double sm, sn, sd;      /* scratch (a partial sum kept per position) */
} ref_range_key;
void ref_softmax_range(ref_range_key *keys, int32_t n, int has_sink, double sink, double *lo,
                       double *hi);

#endif /* ATTN_REF_RANGE_H */
