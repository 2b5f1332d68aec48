/*
 * problem.h — a case made concrete: the adapter-ABI descriptions (group,
 * layers, batch) and the buffers they point at (query per layer, plain K/V
 * rows, block table, ALiBi slopes, sinks), all derived deterministically
 * from the case and its seed.  Shared by the CLI, the tests and the fuzz
 * targets so that every consumer runs exactly the same inputs.
 *
 * K and V live here in the harness's own plain layout, slot-major rows
 * [num_blocks * block_size][num_kv_heads][head_dim] in the KV dtype: the
 * reference reads them directly, and an engine gets them through its
 * adapter's write_kv (into whatever layout it keeps).
 */
#ifndef AG_PROBLEM_H
#define AG_PROBLEM_H

#include "case.h"

#define PROBLEM_SPARE_BLOCKS 3   /* physical blocks no request uses */

typedef struct problem {
    case_spec c;                              /* copy of the case */
    ag_layer layers[CASE_MAX_LAYERS];         /* names "layers.<i>" */
    char layer_names[CASE_MAX_LAYERS][12];
    float *alibi[CASE_MAX_LAYERS];            /* [num_heads] or NULL */
    float *sinks[CASE_MAX_LAYERS];            /* [num_heads] or NULL */
    ag_group group;
    ag_batch batch;
    int32_t *qsl, *seq_lens, *block_table;
    uint8_t *causal;
    int32_t num_tokens, bt_stride, num_blocks;
    void *q[CASE_MAX_LAYERS];                 /* [num_tokens][Hq_l][D] in q_dtype */
    void *k_rows, *v_rows;                    /* [num_blocks * block_size][Hkv][D], kv_dtype
                                                 (a block dtype: D / 32 blocks per head) */
    size_t row_elems;                         /* elements of k_rows (and of v_rows) */
    int materialized;                         /* 0: descriptions only (see below) */
    const char *unmaterialized_reason;        /* static text when materialized == 0
                                                 ("layers.<i>", "kv_len", "inputs exceed
                                                 max_bytes", ...), else NULL */
    size_t input_bytes;                       /* the inputs' bytes (q, K/V rows, block
                                                 table) once sized; SIZE_MAX when their
                                                 size overflows; 0 when not sized */
} problem;

/* Build descriptions and, when the case's shapes are valid and the inputs
 * stay under max_bytes in total, the buffers too (materialized = 1).  An
 * invalid case still gets its raw descriptions (so the engine can refuse
 * them) with materialized = 0.  Returns 0, or -1 with a reason in errbuf
 * when even the descriptions cannot be formed (allocation failure). */
int problem_init(problem *p, const case_spec *c, size_t max_bytes, char *errbuf,
                 size_t errlen);
/* Descriptions and the real block table, but no query/KV buffers
 * (materialized = 0): all that building a plan needs, at a fraction of the
 * cost (the fast plan-only oracles use it). */
int problem_init_descriptions(problem *p, const case_spec *c, size_t max_bytes, char *errbuf,
                              size_t errlen);
/* Every buffer of problem_init, all zeros: for callers that judge
 * statuses, not numbers (fuzz_api), the value generator's time saved. */
int problem_init_zeros(problem *p, const case_spec *c, size_t max_bytes, char *errbuf,
                       size_t errlen);
void problem_free(problem *p);   /* safe on a zeroed or failed problem */


/* Elements of one layer's output (= num_tokens * Hq_l * D); 0 if invalid. */
size_t problem_out_elems(const problem *p, int32_t l);
/* The slot mapping that stores every plain row at its own slot (i -> i),
 * for write_kv: [row count] int64, caller frees; NULL on no memory. */
int64_t *problem_identity_slots(const problem *p);


#endif /* AG_PROBLEM_H */
