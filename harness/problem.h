/*
 * problem.h — a case made concrete: the engine descriptions (group, layers,
 * batch, tensors) and the buffers they point at (query per layer, paged K/V
 * cache, block table, ALiBi slopes, sinks), all derived deterministically
 * from the case and its seed.  Shared by the CLI, the tests and the fuzz
 * targets so that every consumer runs exactly the same inputs.
 */
#ifndef ATTN_PROBLEM_H
#define ATTN_PROBLEM_H

#include "case.h"
#include "ref.h"

typedef struct problem {
    attn_case c;                              /* copy of the case */
    attn_layer_desc layers[CASE_MAX_LAYERS];  /* names "layers.<i>" */
    float *alibi[CASE_MAX_LAYERS];            /* [num_heads] or NULL */
    float *sinks[CASE_MAX_LAYERS];            /* [num_heads] or NULL */
    attn_group_desc group;
    attn_batch batch;
    int32_t *qsl, *seq_lens, *block_table;
    int32_t num_tokens, bt_stride, num_blocks;
    void *q[CASE_MAX_LAYERS];                 /* [num_tokens][Hq_l][D] in q_dtype */
    void *k_cache, *v_cache;                  /* [num_blocks][Hkv][bs][D] in kv_dtype */
    size_t cache_elems;                       /* elements per cache */
    void *k_rows, *v_rows;                    /* the same K/V as slot-major rows
                                                 [num_blocks * bs][Hkv][D] (ref_input) */
    uint8_t req_causal[CASE_MAX_REQS];        /* c.causal per request (ref_input) */
    int materialized;                         /* 0: descriptions only (see below) */
    const char *unmaterialized_reason;        /* static text when materialized == 0
                                                 ("layer", "kv_len", "inputs exceed
                                                 max_bytes", ...), else NULL */
} problem;

/* Build descriptions and, when the case's shapes are valid and the inputs
 * stay under max_bytes in total, the buffers too (materialized = 1).  An
 * invalid case still gets its raw descriptions (so the engine can refuse
 * them) with materialized = 0.  Returns 0, or -1 with a reason in errbuf
 * when even the descriptions cannot be formed (allocation failure). */
int problem_init(problem *p, const attn_case *c, size_t max_bytes, char *errbuf, size_t errlen);
/* Descriptions and the real block table, but no query/cache buffers
 * (materialized = 0): all that building a plan needs, at a fraction of the
 * cost (the fast plan-only oracles use it). */
int problem_init_descriptions(problem *p, const attn_case *c, size_t max_bytes, char *errbuf,
                              size_t errlen);
void problem_free(problem *p);   /* safe on a zeroed or failed problem */

/* The fp64 reference (harness/ref.c) for layer l of a materialized problem:
 * out has problem_out_elems(p, l) doubles.  With lo and hi (the same
 * shape; both or neither) also the range each output may take under the
 * engine's fp32 rounding (ref_attention_range with cmp_error_model), for
 * cmp_compare.  Returns the reference's result (0, or -1). */
int problem_reference(const problem *p, int32_t l, double *out, double *lo, double *hi);
/* The same under the bf16-rounding model (cmp_error_model with q_dot and
 * p_dot bf16): for runs
 * whose builder reports bf16_rounding.  lo and hi are required. */
int problem_reference_bf16dot(const problem *p, int32_t l, double *out, double *lo, double *hi);
/* The reference's description of layer l of a materialized problem (what
 * problem_reference passes to ref.c), for callers that pick their own
 * error model. */
void problem_ref_input(const problem *p, int32_t l, ref_input *in);

/* Tensors for layer l with `out` as the output buffer. */
attn_tensors problem_tensors(const problem *p, int32_t l, void *out);
/* Elements of one layer's output (= num_tokens * Hq_l * D). */
size_t problem_out_elems(const problem *p, int32_t l);

/* Deterministic value stream (splitmix64) used for every generated value. */
uint64_t problem_rng_next(uint64_t *state);
/* Uniform in [-1, 1). */
double problem_rng_unit(uint64_t *state);

#endif /* ATTN_PROBLEM_H */
