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

/* Element conversions of the reference's own (no src/ code). */
double ref_load(const void *base, size_t index, attn_dtype dtype);

#endif /* ATTN_REF_H */
