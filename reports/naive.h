/*
 * naive.h — the report's same-precision baseline: attention written the
 * plainest way a person would write it in the cell's precision (inputs read
 * from their dtype, fp32 arithmetic and accumulation, output rounded to the
 * dtype).  The differential report compares the engine's error with this
 * baseline's error: an engine within 2x of "what fp32 naturally gives" is
 * numerically healthy even where a fixed tolerance would be arguable.
 *
 * Owns: its own element decoding/rounding and its own masking rules (read
 * from DESIGN §2).  Shares no code with src/ (only the public types of
 * attn.h) nor with harness/ref.c, so a bug in either is not copied here.
 */
#ifndef ATTN_REPORT_NAIVE_H
#define ATTN_REPORT_NAIVE_H

#include "../src/attn.h"

typedef struct naive_input {
    int32_t num_reqs;
    const int32_t *query_start_loc;   /* [num_reqs + 1] */
    const int32_t *seq_lens;          /* [num_reqs] */
    const int32_t *block_table;       /* [num_reqs][block_table_stride] */
    int32_t block_table_stride, causal;
    int32_t num_heads, num_kv_heads, head_dim, block_size;
    int32_t window;                   /* -1 none */
    float softcap, scale;             /* 0 = off / 1/sqrt(head_dim) */
    const float *alibi_slopes, *sinks;   /* [num_heads] or NULL */
    const void *q;                    /* [tokens][Hq][D] in dtype q_dtype */
    const void *k_cache, *v_cache;    /* [blocks][Hkv][block_size][D] in kv_dtype */
    attn_dtype q_dtype, kv_dtype, out_dtype;
    int bf16_dots;                    /* 1: at the precision of an engine that
                                         reports bf16_rounding: q x scale and
                                         the softmax weights rounded to bf16 */
} naive_input;

/* Write out [tokens][Hq][D] in in->out_dtype.  Returns 0, -1 on bad input
 * or allocation failure.  Single-threaded; speed is not a goal. */
int naive_attention(const naive_input *in, void *out);

/* The baseline's own decoder of one element (f32, bf16, f16 -> float). */
float naive_load(const void *base, size_t i, attn_dtype dtype);

#endif /* ATTN_REPORT_NAIVE_H */
