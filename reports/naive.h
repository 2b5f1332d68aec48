/*
 * naive.h — the report's same-precision baseline: attention written the
 * plainest way a person would write it, in the precision an engine says it
 * computes in (ag_group_info.precision): q rounded to q_dot before Q.K, the
 * softmax weights rounded to p_dot before P.V, P.V accumulated in acc,
 * everything else in fp32, one rounding to the output dtype at the end.
 * The differential report compares each engine's error with the error of
 * this baseline at that engine's own precision: an engine within 2x of
 * "what its arithmetic naturally gives" is numerically healthy even where a
 * fixed tolerance would be arguable.
 *
 * Owns: its own element decoding and rounding (f32, bf16, f16, fp8 e4m3fn,
 * fp8 e5m2) and its own masking rules, read from DESIGN §2 (per-request
 * causality, a non-causal query at position i, (left, right) windows, fp8
 * K/V times k_scale / v_scale).  Shares no code with src/ nor with
 * harness/ref.c, so a bug in either is not copied here; only the adapter
 * ABI's public types describe its inputs.
 */
#ifndef AG_REPORT_NAIVE_H
#define AG_REPORT_NAIVE_H

#include "../include/attnguard/engine.h"

#include <stddef.h>
#include <stdint.h>

typedef struct naive_input {
    int32_t num_reqs;
    const int32_t *query_start_loc;   /* [num_reqs + 1] */
    const int32_t *seq_lens;          /* [num_reqs] */
    const uint8_t *causal;            /* [num_reqs]: 1 causal, 0 non-causal */
    const int32_t *block_table;       /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;
    int32_t num_heads, num_kv_heads, head_dim, block_size;
    int32_t window_left, window_right;/* -1 unbounded */
    float softcap, scale;             /* 0 = off / 1/sqrt(head_dim) */
    const float *alibi_slopes, *sinks;/* [num_heads] or NULL */
    const void *q;                    /* [tokens][num_heads][head_dim] in q_dtype */
    const void *k_rows, *v_rows;      /* slot-major rows [blocks * block_size][Hkv][D]:
                                         token k of request r is row
                                         block_table[r][k / bs] * bs + k % bs */
    ag_dtype q_dtype, kv_dtype, out_dtype;
    float k_scale, v_scale;           /* fp8 KV: value = decode(code) * scale; else ignored */
    ag_precision precision;           /* q_dot, p_dot, acc: AG_F32 = no rounding */
} naive_input;

/* Write out [tokens][num_heads][head_dim] in in->out_dtype.  Returns 0, or
 * -1 on an inconsistent input (a count < 1, heads not a multiple of the KV
 * heads, a dtype outside the ABI) or allocation failure.  Single-threaded;
 * speed is not a goal. */
int naive_attention(const naive_input *in, void *out);

#endif /* AG_REPORT_NAIVE_H */
