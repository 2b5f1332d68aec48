/*
 * ref.h — the naive reference: DESIGN §2 in double precision, straight
 * loops, gathering K/V through the block table.  Shares no code with src/
 * (it uses only the public types of attn.h to describe its inputs).
 */
#ifndef ATTN_REF_H
#define ATTN_REF_H

#include "../src/attn.h"

typedef struct ref_input {
    int32_t num_reqs;
    const int32_t *query_start_loc, *seq_lens, *block_table;
    int32_t block_table_stride, causal;
    int32_t num_heads, num_kv_heads, head_dim, block_size;
    int32_t window;                 /* -1 none */
    double softcap;                 /* 0 off */
    double scale;                   /* 0 = 1/sqrt(head_dim) */
    const float *alibi_slopes;      /* [num_heads] or NULL */
    const float *sinks;             /* [num_heads] or NULL */
    const void *q; attn_dtype q_dtype;                 /* [tokens][Hq][D] */
    const void *k_cache, *v_cache; attn_dtype kv_dtype; /* [blocks][Hkv][bs][D] */
    int32_t num_blocks;             /* physical blocks in the cache; 0 = do not
                                       check block ids (added by the harness) */
} ref_input;

/* out: [tokens][Hq][D] doubles.  Rows with no visible key (cannot happen
 * for valid input) are 0.  Returns 0, -1 on inconsistent input. */
int ref_attention(const ref_input *in, double *out);

/* How far a finite-precision engine's logit may lie from the exact one
 * (chosen by compare.c, attn_logit_error).  With ms = scale * sum_d |q_d k_d|
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
     * e^(+-wabs) (bf16-rounded weights: compare.c, attn_bf16_dot_error).
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
double ref_load(const void *base, size_t index, attn_dtype dtype);

#endif /* ATTN_REF_H */
