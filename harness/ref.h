/*
 * ref.h — the naive reference: DESIGN §2 in double precision, straight
 * loops, gathering K/V through the block table.  Shares no code with src/
 * (its inputs are described with the adapter ABI's dtypes).
 */
#ifndef ATTN_REF_H
#define ATTN_REF_H

#include "../include/attnguard/engine.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ref_input {
    int32_t num_reqs;
    const int32_t *query_start_loc;   /* [num_reqs + 1] */
    const int32_t *seq_lens;          /* [num_reqs] */
    const uint8_t *causal;            /* [num_reqs]: 1 causal (query i at p = seq_len - q_len + i),
                                         0 non-causal (p = i) */
    const int32_t *block_table;       /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;
    int32_t num_blocks;               /* physical blocks; every block id must be < num_blocks */
    int32_t num_heads, num_kv_heads, head_dim, block_size;
    int32_t window_left, window_right;/* -1 unbounded; visible: p - left <= k <= p + right, and
                                         k <= p for causal requests, k < seq_len always */
    double softcap, scale;            /* 0 = off / 0 = 1/sqrt(head_dim) */
    const float *alibi_slopes;        /* [num_heads] or NULL: s += slope_h * (k - p) */
    const float *sinks;               /* [num_heads] or NULL */
    const void *q; ag_dtype q_dtype;  /* [tokens][num_heads][head_dim] */
    const void *k_rows, *v_rows;      /* the harness's plain layout, slot-major rows
                                         [num_blocks * block_size][num_kv_heads][head_dim]: token k
                                         of request r is row block_table[r][k / bs] * bs + k % bs */
    ag_dtype kv_dtype;
    double k_scale, v_scale;          /* fp8: value = decode(code) * scale; else 1 */
} ref_input;

/* out: [tokens][Hq][D] doubles.  Rows with no visible key (cannot happen
 * for valid input) are 0.  Returns 0, -1 on inconsistent input. */
int ref_attention(const ref_input *in, double *out);

/* How far a finite-precision engine's logit may lie from the exact one
 * (chosen by compare.c, cmp_logit_error).  With ms = scale * sum_d |q_d k_d|
 * for key k: its logit before the soft cap, x = scale * <q, k>, is off by
 * at most rel * ms (any summation order), typically by about typ * ms.
 * A row is judged against its exact value while logits moved by their
 * typical rounding can move none of its elements by more than point_max
 * (a bound for moves of any size: ref.c, row_range); otherwise it gets the
 * range its elements may take. */
typedef struct ref_logit_err {
    double rel;
    double typ;
    double point_max;
    /* > 0: an engine that also moves every weight by a factor within
     * e^(+-wabs) (bf16-rounded weights: compare.c, cmp_bf16_dot_error).
     * Then no row keeps its point: each element gets o +- the bound below
     * with logits anywhere within their worst case (rel x ms through the
     * cap, then +- wabs), or, where that bound is not finite, the exact
     * range over the same intervals. */
    double wabs;
} ref_logit_err;

/* ref_attention, plus the range each output may take under err: for a row
 * that the test above does not clear, lo/hi are the least and
 * greatest values the softmax average can take, element by element, with
 * each logit anywhere in its interval (x +- rel * ms, then the soft cap,
 * which maps intervals to intervals, then ALiBi); the exact out lies
 * inside.  Every other row gets lo = hi = out.  lo and hi have out's
 * shape.  Returns 0, -1 on inconsistent input or no memory. */
int ref_attention_range(const ref_input *in, ref_logit_err err, double *out, double *lo,
                        double *hi);

/* The least and greatest value of
 *     sum_k w_k v_k / (sum_k w_k + [sink] e^sink),  w_k = e^s_k, a_k <= s_k <= b_k,
 * over n >= 1 keys (ref_range.c).  Exact up to double rounding: a ratio
 * of this kind is extremal where every key sits at an end of its interval,
 * high for the keys whose value exceeds the optimum and low for the rest,
 * so sorting by v and trying each split finds it.  The keys are reordered;
 * their a, b and v are kept. */
typedef struct ref_range_key {
    double a, b, v;         /* the caller's: logit interval and value */
    double sm, sn, sd;      /* scratch (a partial sum kept per position) */
} ref_range_key;
void ref_softmax_range(ref_range_key *keys, int32_t n, int has_sink, double sink, double *lo,
                       double *hi);

/* Element conversions of the reference's own (no src/ code). */
double ref_load(const void *base, size_t index, ag_dtype dtype);

#endif /* ATTN_REF_H */
