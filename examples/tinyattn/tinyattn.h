/*
 * tinyattn.h — a small paged attention engine: f32 queries and outputs,
 * an f32 or f16 KV cache in blocks, GQA, windows, soft cap, ALiBi, sinks,
 * and split-KV decode whose partial results go to a caller's scratchpad.
 * It is attnguard's example of an engine that lives in someone else's
 * tree (examples/tinyattn/): nothing in tinyattn.h or tinyattn.c knows
 * attnguard; ta_adapter.c maps this API onto attnguard's ABI.
 *
 * The life of one attention group (the layers that share one KV cache):
 *
 *     ta_builder_create(&group, &b, &err)        once per group
 *     ta_cache_bytes(b, num_blocks, &bytes)      the caller allocates K and V
 *     ta_write_kv(b, ...)                        new rows, by slot
 *     ta_plan_create(b, &batch, &p, &err)        once per batch
 *     ta_plan_scratch_bytes(p)                   the caller allocates the scratch
 *     ta_forward(p, layer, ...)                  once per layer
 *
 * The builder fixes, for the whole group, how many query heads share one
 * KV head's reduction slot; each batch's scratch holds one slot per split
 * decode request and KV head.  Built with -DPLANTED_MODEL_HEADS=1 the
 * builder takes that count from the model-wide head count instead of the
 * group's layers (vLLM PR 51852's bug): a layer with more heads than the
 * model-wide count then writes past its slots.
 */
#ifndef TINYATTN_H
#define TINYATTN_H

#include <stddef.h>
#include <stdint.h>

typedef enum ta_status {
    TA_OK = 0,
    TA_E_ARG,          /* a required pointer is NULL */
    TA_E_HEADS,        /* a head count below 1, or query heads not a multiple of KV heads */
    TA_E_HEAD_DIM,     /* head_dim below 1 */
    TA_E_BLOCK_SIZE,   /* block_size below 1 */
    TA_E_WINDOW,       /* a window side below -1 */
    TA_E_LAYER,        /* scale, soft cap, slope or sink not finite; scale or cap negative */
    TA_E_KV_TYPE,      /* a cache type other than TA_KV_F32, TA_KV_F16 */
    TA_E_BATCH,        /* request count, query_start_loc or a causal flag */
    TA_E_SEQ_LEN,      /* a request with fewer keys than queries */
    TA_E_BLOCK,        /* a block id outside the cache, or a table too narrow */
    TA_E_SLOT,         /* ta_write_kv: a slot outside the cache */
    TA_E_SPLIT,        /* a split mode outside ta_split, or a piece count below 1 */
    TA_E_LIMIT,        /* beyond one of the TA_MAX_* limits */
    TA_E_OVERFLOW,     /* a size the input implies does not fit in size_t */
    TA_E_NOMEM,        /* out of memory */
    TA_E_LAYER_INDEX,  /* ta_forward: no such layer */
    TA_E_SCRATCH       /* ta_forward: a scratch smaller than the plan's, or misaligned */
} ta_status;

#define TA_MAX_HEADS 1024       /* query heads of a layer */
#define TA_MAX_HEAD_DIM 512
#define TA_MAX_BLOCK_SIZE 4096
#define TA_MAX_PIECES 64        /* split-KV pieces of one request */
#define TA_SCRATCH_ALIGN 64

typedef enum ta_kv_type { TA_KV_F32 = 0, TA_KV_F16 = 1 } ta_kv_type;

typedef struct ta_error {
    char text[240];             /* names the offending value and where it came from */
} ta_error;

typedef struct ta_layer {
    int32_t num_heads;          /* query heads */
    int32_t window_left;        /* -1: unbounded; else keys k >= p - window_left */
    int32_t window_right;       /* -1: unbounded; else keys k <= p + window_right */
    float scale;                /* 0: 1/sqrt(head_dim) */
    float softcap;              /* 0: off */
    const float *alibi_slopes;  /* NULL or [num_heads] */
    const float *sinks;         /* NULL or [num_heads] */
} ta_layer;

/* Arrays (layers, their slopes and sinks) must stay valid while the
 * builder lives. */
typedef struct ta_group {
    const ta_layer *layers;
    int32_t num_layers;         /* 0: an empty group, sized from model_num_heads */
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;
    ta_kv_type kv_type;
    int32_t model_num_heads;    /* the model-wide query-head count */
} ta_group;

typedef enum ta_split {
    TA_SPLIT_AUTO = 0,          /* decode requests of TA_SPLIT_AUTO_KEYS keys or more */
    TA_SPLIT_NEVER,
    TA_SPLIT_ALWAYS,            /* every decode request of two keys or more */
    TA_SPLIT_FIXED              /* every decode request, in `pieces` pieces (at most its keys) */
} ta_split;
#define TA_SPLIT_AUTO_KEYS 512
#define TA_PIECE_KEYS 256       /* AUTO and ALWAYS cut pieces of about this many keys */

/* Arrays must stay valid while a plan made from the batch lives. */
typedef struct ta_batch {
    int32_t num_reqs;
    const int32_t *query_start_loc;  /* [num_reqs + 1] */
    const int32_t *seq_lens;         /* [num_reqs] keys, including the new tokens */
    const uint8_t *causal;           /* [num_reqs] 1 causal, 0 not; NULL: all causal */
    const int32_t *block_table;      /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;
    int32_t num_blocks;              /* blocks in each cache */
    ta_split split;
    int32_t pieces;                  /* TA_SPLIT_FIXED */
} ta_batch;

typedef struct ta_builder ta_builder;
typedef struct ta_plan ta_plan;

ta_status ta_builder_create(const ta_group *g, ta_builder **out, ta_error *err);
void ta_builder_destroy(ta_builder *b);

/* Bytes of one cache (K or V): [num_blocks][num_kv_heads][block_size][head_dim]. */
ta_status ta_cache_bytes(const ta_builder *b, int32_t num_blocks, size_t *bytes, ta_error *err);
/* Rows [num_tokens][num_kv_heads][head_dim] in the cache type; slot =
 * block * block_size + offset, -1 skips the row.  Nothing is written when
 * any slot is outside the cache. */
ta_status ta_write_kv(const ta_builder *b, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slots, ta_error *err);

ta_status ta_plan_create(const ta_builder *b, const ta_batch *batch, ta_plan **out,
                         ta_error *err);
void ta_plan_destroy(ta_plan *p);
/* The scratch a ta_forward of this plan is given (the builder's sizing). */
size_t ta_plan_scratch_bytes(const ta_plan *p);
/* The bytes a ta_forward of a layer of `num_heads` query heads touches in
 * the scratch (the kernels' own layout for that count), without running it. */
ta_status ta_plan_layer_bytes(const ta_plan *p, int32_t num_heads, size_t *bytes, ta_error *err);
/* Decode requests the plan splits. */
int32_t ta_plan_split_requests(const ta_plan *p);

/* One layer of the group over the plan's batch: q and out
 * [tokens][num_heads][head_dim] f32, the caches as ta_write_kv left them,
 * a scratch of at least ta_plan_scratch_bytes, TA_SCRATCH_ALIGN-aligned. */
ta_status ta_forward(const ta_plan *p, int32_t layer, const float *q, const void *k_cache,
                     const void *v_cache, void *scratch, size_t scratch_bytes, float *out,
                     ta_error *err);

#endif /* TINYATTN_H */
