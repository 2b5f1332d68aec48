/*
 * attn_plan_inspect.h — looking inside a built plan, for tests, tools and
 * the harness's sizing oracle: the work items and reductions the plan
 * holds, its summary, and the bytes a layer would touch in each region
 * (attn_plan_layer_extents).  None of it is needed to run attention: a
 * caller of the engine needs attn.h only (the region table stays there).
 * The same conventions as attn.h (status returned, err optional,
 * out-parameters written only on ATTN_OK).
 */
#ifndef ATTN_PLAN_INSPECT_H
#define ATTN_PLAN_INSPECT_H

#include "attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* For every region of the plan, the bytes the kernels would touch in it when
 * running `layer` with the given head count / dims (extents[i] for
 * region i, same order as attn_plan_regions).  Computed from the kernel-side
 * footprint without running anything; the harness compares it with the
 * sized region (the sizing oracle).  `extents` has room for `count` entries. */
attn_status attn_plan_layer_extents(const attn_plan *plan, const attn_layer_desc *layer,
                                    int32_t head_dim, size_t *extents, size_t count,
                                    attn_error *err);

/* ---- the plan's work, for tests and tools ---- */
typedef struct attn_work_item {
    int32_t req;          /* request index */
    int32_t kv_head;      /* all query heads of this KV head are processed together */
    int32_t tok0, tok1;   /* query rows [tok0, tok1) of the request (0 = first new token) */
    int32_t k0, k1;       /* key range [k0, k1) (masking narrows it per row) */
    int32_t piece;        /* 0..num_pieces-1 */
    int32_t num_pieces;   /* 1 = not split */
    int32_t reduction;    /* index into the reductions, -1 when not split */
    int32_t thread;       /* owner in the static partition: the thread that starts it
                           * (an idle thread may take it over: executor.c) */
} attn_work_item;

typedef struct attn_reduction {
    int32_t req, kv_head, tok0, tok1;
    int32_t num_pieces;
    int32_t thread;       /* which thread merges it */
    int32_t region_flags, region_partial, region_max, region_sum; /* region indices */
} attn_reduction;

typedef struct attn_plan_info {
    int32_t num_reqs, num_tokens, num_heads, num_kv_heads, head_dim;
    int32_t num_threads;
    int32_t q_tile_tokens;    /* query tokens per work item (prefill tiles) */
    int32_t head_run;         /* KV heads per decode run: that many consecutive heads'
                               * single-token, unsplit items of one token stay on one
                               * thread, adjacent in its list, and run together (1: none) */
    int32_t kv_tile;          /* keys per kernel tile */
    int32_t window;           /* group window used to bound KV ranges (the shorthand;
                               * window_pair etc. below for a pair) */
    int32_t causal;           /* the batch's causal flag */
    size_t num_items, num_reductions, num_regions;
    size_t scratch_bytes, redzone;
    size_t metadata_bytes;    /* what building the plan allocated for its own arrays
                               * (the figure max_plan_bytes limits) */
    int32_t window_pair, window_left, window_right; /* as attn_builder_info's */
    int32_t num_causal;       /* requests that are causal (req_causal, else causal) */
} attn_plan_info;

attn_status attn_plan_get_info(const attn_plan *plan, attn_plan_info *out, attn_error *err);
attn_status attn_plan_items(const attn_plan *plan, const attn_work_item **items,
                            size_t *count, attn_error *err);
attn_status attn_plan_reductions(const attn_plan *plan, const attn_reduction **reds,
                                 size_t *count, attn_error *err);

/* ---- rows fp32 could not carry (docs/engine.md, "Rows fp32 cannot carry") ----
 * What the plan's runs so far sent to the fp64 path (wide.c), counted in
 * stores of a tile's rows: which of needs_wide's tests sent them
 * ("trigger=..."), and which of the features the fp64 path applies again
 * the layer had.  The one list; its names are what an adapter reports. */
#define ATTN_WIDE_LIST(X)                                                                  \
    X(ATTN_WIDE_TRIG_HUGE_Q, "trigger=huge-q")   /* an f32/bf16 cache, q rows scaled down */ \
    X(ATTN_WIDE_TRIG_ALIBI, "trigger=alibi")     /* a bias could leave fp32 in 2^m_exp units */ \
    X(ATTN_WIDE_TRIG_STATE, "trigger=state")     /* m or l not finite, or no key seen */      \
    X(ATTN_WIDE_TRIG_ACC, "trigger=acc")         /* the accumulator holds an inf or a NaN */  \
    X(ATTN_WIDE_TRIG_V_SCALE, "trigger=tiny-v-scale") /* the store's factor would be subnormal */ \
    X(ATTN_WIDE_ROWS, "rows")                    /* any of them */                            \
    X(ATTN_WIDE_SOFTCAP, "softcap")                                                           \
    X(ATTN_WIDE_ALIBI, "alibi")                                                               \
    X(ATTN_WIDE_SINKS, "sinks")                                                               \
    X(ATTN_WIDE_WINDOW_ONE, "window=one-side")   /* a left or a right bound, not both */      \
    X(ATTN_WIDE_WINDOW_BOTH, "window=both-sides") /* left and right bounds (W: W-1 each) */   \
    X(ATTN_WIDE_FP8_SCALES, "fp8-scales")        /* an fp8 cache with a K or V scale != 1 */  \
    X(ATTN_WIDE_GQA, "gqa")                      /* more query heads than KV heads */         \
    X(ATTN_WIDE_SPLIT, "split-merge")            /* rows merged from split pieces */          \
    X(ATTN_WIDE_SCALE, "scale")                  /* a scale that is not 1 / sqrt(head_dim) */

#define ATTN_WIDE_ENUM(id, name) id,
typedef enum attn_wide_count { ATTN_WIDE_LIST(ATTN_WIDE_ENUM) ATTN_WIDE_COUNT } attn_wide_count;
#undef ATTN_WIDE_ENUM

/* The name of counter i of ATTN_WIDE_LIST ("trigger=acc", ...), NULL past it. */
const char *attn_wide_count_name(int32_t i);

/* The plan's counters, summed over its runs so far (zero for a new plan):
 * counts[i] for i < min(cap, ATTN_WIDE_COUNT).  Runs of a plan may be
 * concurrent with this call only if the caller accepts a count in flux. */
attn_status attn_plan_wide_counts(const attn_plan *plan, uint64_t *counts, size_t cap,
                                  attn_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_PLAN_INSPECT_H */
