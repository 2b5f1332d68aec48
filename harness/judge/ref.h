/*
 * ref.h — the naive reference: docs/design.md §2 in double precision, straight
 * loops, gathering K/V through the block table, and the interval each
 * output element may take under an engine's declared rounding.  Shares
 * no code with src/ (it uses only ag_dtype of the adapter ABI).
 */
#ifndef ATTN_REF_H
#define ATTN_REF_H

#include <stddef.h>
#include <stdint.h>

#include "../../include/attnguard/engine.h"

typedef struct ref_input {
    int32_t num_reqs;
    const int32_t *query_start_loc;   /* [num_reqs + 1], prefix sums, q_len >= 1 */
    const int32_t *seq_lens;          /* [num_reqs], >= q_len (>= 0 for a non-causal request:
                                         cross attention may have more queries than keys) */
    const uint8_t *causal;            /* [num_reqs]: 1 causal (query i at seq_len - q_len + i),
                                         0 non-causal (query i at position i) */
    const int32_t *block_table;       /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;
    int32_t num_blocks;               /* physical blocks; every block id used is < num_blocks */
    int32_t num_heads, num_kv_heads, head_dim, block_size;
    int32_t window_left, window_right;/* -1 unbounded; visible: p - left <= k <= p + right,
                                         and k <= p for causal requests, k < seq_len always */
    double softcap, scale;            /* 0 = off / 0 = 1/sqrt(head_dim) */
    const float *alibi_slopes;        /* [num_heads] or NULL: s += slope_h * (k - p) */
    const float *sinks;               /* [num_heads] or NULL */
    const void *q; ag_dtype q_dtype;  /* [tokens][num_heads][head_dim] */
    const void *k_rows, *v_rows;      /* slot-major rows [num_blocks * block_size]
                                         [num_kv_heads][head_dim]: token k of request r is row
                                         block_table[r][k / bs] * bs + k % bs */
    ag_dtype kv_dtype;
    double k_scale, v_scale;          /* fp8 KV: value = decode(code) * scale; ignored (1)
                                         for other dtypes */
    /* An explicit additive mask (an engine op's own input: ggml's, ONNX's),
     * or NULL.  Key k (< seq_len) of query token t, head h gets
     * mask[t * mask_tstride + h * mask_hstride + k]: -inf hides the key
     * (besides the window and causal rules above), a finite value is added
     * to the logit after the soft cap, times the head's ALiBi slope when
     * mask_times_slope (then in place of ALiBi's slope * (k - p)).  A row
     * that sees no key is 0 (its sink alone weighs nothing). */
    const float *mask;
    int64_t mask_tstride, mask_hstride;
    int mask_times_slope;
} ref_input;

/* out: [tokens][num_heads][head_dim] doubles, the exact attention of §2
 * for the decoded inputs (fp8 times its scale).  Returns 0, or -1 on
 * inconsistent input (a NULL array, a count or window out of range, q_len
 * < 1, seq_len < q_len for a causal request, a block id outside [0,
 * num_blocks), a size that overflows) or no memory; out is then
 * unspecified.  A row that sees no key is 0. */
int ref_attention(const ref_input *in, double *out);

/* How an engine may round (filled by compare.c, cmp_error_model; every
 * figure is derived there and in docs/tolerances.md).  Per key, with
 * ms = scale ||q||_2 ||k||_2 (>= scale sum_d |q_d k_d|), sc = max(scale, 1),
 * qm = max_d |q_d| and |.|_1 the sum of magnitudes, the logit before the
 * cap, x = scale <q, k>, is off by at most
 *     rel ms + (qabs sc + kflush scale qm) |k|_1 + kflush scale |q|_1,
 * the last term only for keys with elements in (0, 2^-126).
 * Each exp is within a factor e^(+-uexp); each weight, rounded to the
 * p_dot type, within a factor e^(+-wrel) or wabs of the running max;
 * V elements within vflush; the P.V sums round by uacc per step
 * (absolutely by accabs) and overflow at accmax; everything else is fp32
 * (unit u). */
typedef struct ref_model {
    double rel, qabs, kflush;
    double qblock;   /* q rounded to a block type (q_dot q8_0): each element moves by at
                        most qblock times its block's largest |element| (<= qm), plus
                        qabs: the logit by qblock scale qm |k|_1 more */
    double qmax;     /* |q_d| sc (|q_d| when q_unscaled) at or above this overflows the
                        q_dot type: row unjudged */
    int q_unscaled;  /* the engine rounds q to q_dot before the scale (ag_precision.q_raw) */
    double pflush;   /* a product of q_dot and K below this may come out 0 (bf16 dot
                        instructions flush their denormal results): per term, in units of
                        the scale's power of two, at most 2 sc */
    double uexp, wrel, wabs, vflush;
    double uacc, accabs, accmax;   /* accmax: P.V's sums overflow there (INFINITY: the
                                      engine carries such rows wider, AG_CAP_WIDE_ACC) */
    double logit_max;  /* min(max_d |q_d|, q_held) |k|_1 at or above this is past the
                          engine's declared limit (cmp_engine_model): row unjudged */
    double q_held;     /* INFINITY, or AG_NO_LIMIT_Q_HELD for an engine that declares
                          max_abs_logit 0 (it takes larger q rows down itself) */
    double u;        /* fp32 unit roundoff, 2^-24 */
    double fmax;     /* fp32 overflow threshold: a decoded K/V value at or above it
                        is infinite in every fp32 engine */
} ref_model;

/* ref_attention, plus lo/hi (out's shape): the interval every value an
 * engine rounding as `model` describes can produce, before the final
 * conversion to the output dtype (compare.c adds that).  An element gets
 * lo = -inf, hi = +inf (unjudged) where such an engine may overflow or a
 * NaN/inf input reaches it.  Ordinary rows get out +- a closed-form bound
 * (ref_range.c); rows whose weights may move by more than 1/8 of their
 * sum (huge scales) get the exact range over their logit intervals.
 * Returns 0, -1 as ref_attention. */
int ref_attention_range(const ref_input *in, ref_model model, double *out, double *lo,
                        double *hi);

/* Why an element was left unjudged: one list, the counters and the names
 * the check and the fuzz summaries print both come from it. */
#define REF_UNJUDGED_LIST(X)                                                                \
    X(REF_WHY_LOGIT_LIMIT, "declared logit limit")     /* past caps.max_abs_logit */       \
    X(REF_WHY_ACC_LIMIT, "declared accumulator limit") /* acc could overflow, and the   \
                                                          engine does not declare       \
                                                          AG_CAP_WIDE_ACC */            \
    X(REF_WHY_CONVERSION, "conversion")  /* q past its q_dot type, or a decoded K or V    \
                                            (fp8 times its scale) at fp32's limit */     \
    X(REF_WHY_NONFINITE, "non-finite input")                                             \
    X(REF_WHY_MODEL, "beyond the error model") /* the declared roundings leave the row's \
                                                  weights no usable bound */
#define REF_WHY_ENUM(id, name) id,
typedef enum ref_why { REF_UNJUDGED_LIST(REF_WHY_ENUM) REF_WHY_COUNT } ref_why;
#undef REF_WHY_ENUM

/* The name of reason w ("declared logit limit", ...), NULL outside the list. */
const char *ref_why_name(int32_t w);

/* Unjudged elements and rows per reason.  A row counts once under each
 * reason that left any of its elements open; rows counts it once in all. */
typedef struct ref_unjudged {
    uint64_t elems[REF_WHY_COUNT];
    uint64_t rows_why[REF_WHY_COUNT];
    uint64_t rows;        /* rows with any element unjudged */
    uint64_t rows_all;    /* rows judged or not (with at least one key) */
} ref_unjudged;

/* ref_attention_range that also adds its unjudged elements and rows, by
 * reason, to *why (not cleared; NULL: not counted). */
int ref_attention_range_why(const ref_input *in, ref_model model, double *out, double *lo,
                            double *hi, ref_unjudged *why);

/* The reference decodes every element with the ABI's codec,
 * ag_dtype_decode (include/attnguard/dtype.h). */

#endif /* ATTN_REF_H */
