/*
 * internal.h — private definitions of the engine's plan side (builder,
 * plan, layout, executor, dispatch): the builder and plan structs,
 * error/overflow/allocation helpers.  Not installed, not part of the API;
 * tests may include it to inspect (or deliberately corrupt) a plan.
 *
 * Kernels never include it: they get what an item needs through
 * attn_tile_args (src/kernels/kernels.h) and must not depend on how the
 * plan is laid out.  mk/isa.mk compiles every src/kernels/ file with
 * ATTN_KERNEL_SIDE defined, which turns an include of this header there
 * into a compile error.
 */
#ifndef ATTN_INTERNAL_H
#define ATTN_INTERNAL_H

#ifdef ATTN_KERNEL_SIDE
#error "internal.h is the plan's side: a kernel file includes kernels_decl.h, dtype.h, mask.h"
#endif

#include "attn.h"
#include "attn_plan_inspect.h"
#include "kernels/kernels.h"

#include <stdarg.h>
#include <stdbool.h>

/* ---- errors ---- */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
attn_status attn__fail(attn_error *err, attn_status status, const char *fmt, ...);
void attn__ok(attn_error *err);

/* ---- overflow-checked size arithmetic: return true on overflow ---- */
static inline bool attn__mul(size_t a, size_t b, size_t *out) {
    return __builtin_mul_overflow(a, b, out);
}
static inline bool attn__add(size_t a, size_t b, size_t *out) {
    return __builtin_add_overflow(a, b, out);
}
/* Round up to ATTN_ALIGN; true on overflow. */
static inline bool attn__align(size_t a, size_t *out) {
    size_t t;
    if (attn__add(a, (size_t)ATTN_ALIGN - 1, &t)) return true;
    *out = t & ~((size_t)ATTN_ALIGN - 1);
    return false;
}

/* ---- allocation through the caller's allocator (or malloc) ---- */
void attn__default_allocator(attn_allocator *out);
void *attn__alloc(const attn_allocator *a, size_t bytes);             /* NULL on failure */
void *attn__alloc_array(const attn_allocator *a, size_t n, size_t elem); /* checked n*elem */
void attn__free(const attn_allocator *a, void *p);

/* ---- a layer's window as given (attn_layer_desc's four fields) ---- */
typedef struct attn__window {
    int32_t window, pair, left, right;
} attn__window;
/* True when a and b give every request the same (left, right) (mask.h). */
bool attn__same_window(const attn__window *a, const attn__window *b);

/* ---- the builder: everything resolved at creation ---- */
struct attn_builder {
    attn_allocator alloc;
    const attn_kernels *kern;
    int32_t tune;           /* ATTN__TUNE_* (kernels.h) */
    int32_t round_ok;       /* 0: ATTN_PRECISION_EXACT (attn_tile_args.round_ok) */
    int32_t num_heads;      /* shared by the group's layers */
    int32_t num_kv_heads;
    int32_t group_size;     /* num_heads / num_kv_heads */
    int32_t head_dim;
    int32_t block_size;
    attn__window win;       /* shared window, else none (-1, 0, 0, 0) */
    int32_t num_layers;
    int32_t num_threads;
    attn_dtype q_dtype, kv_dtype, out_dtype;
    size_t max_plan_bytes;  /* the group's limit, 0: the default */
    void (*sync_hook)(void *ctx, int32_t site);   /* attn_group_desc's, or NULL */
    void *sync_hook_ctx;
};

/* Most KV heads in one decode run (plan.c head_run, executor.c run_heads):
 * bounds the executor's argument array and the growth of the thread
 * regions (16 x g rows). */
#define ATTN__HEAD_RUN_MAX 16

/* Whether an item may be part of a decode run: one query token, unsplit
 * (the one spelling the plan's partition and the executor share). */
static inline int attn__run_item(const attn_work_item *it) {
    return it->tok1 - it->tok0 == 1 && it->num_pieces == 1;
}

#define ATTN_PLAN_MAGIC 0x6174706cu  /* "atpl": catches a destroyed/garbage handle early */

/* ---- the plan ---- */
struct attn_plan {
    uint32_t magic;
    attn_allocator alloc;
    const attn_kernels *kern;
    int32_t tune;           /* the builder's ATTN__TUNE_*, for the kernels */
    int32_t round_ok;       /* the builder's, for the kernels */
    void (*sync_hook)(void *ctx, int32_t site);   /* the builder's */
    void *sync_hook_ctx;

    /* geometry the plan was built for (copied from the builder) */
    int32_t num_heads, num_kv_heads, group_size, head_dim, block_size;
    attn__window win;       /* the group's window: bounds every item's key range */
    int32_t num_threads;
    attn_dtype q_dtype, kv_dtype, out_dtype;
    int32_t q_tile;         /* max query tokens per work item */
    int32_t kv_tile;        /* keys per kernel tile */
    /* Groups of g rows each thread's Q, ACC, STATE and SCORES regions hold:
     * the most tokens of any item, or more where a decode run of several
     * KV heads' single-token items shares them (head_run, plan.c). */
    int32_t row_groups;
    int32_t head_run;       /* KV heads per decode run (1: items run one by one) */

    /* batch (copies) */
    int32_t num_reqs, num_tokens, num_blocks, bt_stride, causal;
    int32_t *qsl;           /* [num_reqs + 1] */
    uint8_t *req_causal;    /* [num_reqs]: each request's causality, resolved */
    int32_t *seq_lens;      /* [num_reqs] */
    int32_t *block_table;   /* [num_reqs * bt_stride] */

    /* work */
    attn_work_item *items;  size_t num_items;
    attn_reduction *reds;   size_t num_reds;
    /* per-thread lists, CSR: thread t runs items[thread_items[i]] for
     * i in [item_start[t], item_start[t+1]) in that order; same for reds. */
    int32_t *thread_items;  size_t *item_start;
    int32_t *thread_reds;   size_t *red_start;

    /* scratchpad layout */
    attn_region *regions;   size_t num_regions;
    size_t thread_region0;  /* thread t's regions: thread_region0 + t*ATTN__THREAD_REGIONS + kind */
    size_t scratch_bytes;
    size_t redzone;
    size_t metadata_bytes;  /* what the build allocated (plan_size.c's count) */

    /* what its runs sent to the fp64 path (attn_plan_inspect.h's
     * ATTN_WIDE_LIST), added to atomically by executor.c's store_rows */
    uint64_t wide_counts[ATTN_WIDE_COUNT];
};

/* Per-thread regions, in this order, for every thread of the partition. */
#define ATTN__THREAD_REGIONS 5   /* Q, ACC, STATE, SCORES, KV */

/* ---- layout (src/layout.c): the ONE place that decides region sizes ----
 * Bytes the kernels touch in a region of `kind`, for a layer with
 * `group_size` query heads per KV head and `head_dim`, an item of `tokens`
 * query tokens, `kv_tile` keys per tile and `pieces` split pieces (reduction
 * regions only).  Used to size the plan AND to compute a layer's extents for
 * the sizing oracle, so the two can never drift apart.  Sets *overflow. */
size_t attn__footprint(attn_region_kind kind, int32_t group_size, int32_t head_dim,
                       int32_t tokens, int32_t kv_tile, int32_t pieces, attn_dtype kv_dtype,
                       bool *overflow);

/* The bytes the layout gives one owner's regions (a thread's
 * ATTN__THREAD_REGIONS or a reduction's 4): each region's footprint
 * rounded up to ATTN_ALIGN plus the redzone after it.  The scratchpad is
 * the sum over all owners minus one redzone.  True on overflow. */
bool attn__owner_bytes(attn_owner_kind owner, int32_t group_size, int32_t head_dim,
                       int32_t tokens, int32_t kv_tile, int32_t pieces, attn_dtype kv_dtype,
                       size_t redzone, size_t *out);

/* Lay out all regions of a plan whose items/reductions are final. */
attn_status attn__layout_build(attn_plan *plan, attn_error *err);

/* ---- the plan before it is built (src/plan_size.c) ---- */
typedef struct attn__plan_shape {
    int32_t q_tile;         /* query tokens per work item */
    uint64_t total_cost;    /* the batch's work, for the split decisions */
    size_t num_items, num_reds;
    int32_t head_run, row_groups; /* as struct attn_plan's */
    size_t scratch_bytes, metadata_bytes;
} attn__plan_shape;

/* The plan batch bt will get under opts (validated), worked out without
 * allocating; ATTN_E_TOO_LARGE when its scratchpad or metadata would
 * exceed the builder's max_plan_bytes (0: a quarter of physical memory). */
attn_status attn__plan_size(const attn_builder *b, const attn_batch *bt, const attn_plan_opts *o,
                            attn__plan_shape *out, attn_error *err);
/* Query tokens per work item of the builder's plans. */
int32_t attn__q_tile(const attn_builder *b);
/* Request r's share of the plan of shape s: its tiles of s->q_tile query
 * tokens, the first `multi` of which hold several tokens (the build walks
 * those head-major, the single-token rest tile-major), and the split
 * pieces of every tile (> 1 only for a request of one tile, which then
 * has a reduction per KV head).  attn__plan_size counts the plan's items
 * and reductions from these figures, and attn_builder_build makes exactly
 * those items from the same figures. */
typedef struct attn__req_figures {
    int32_t q_len, tiles, multi, pieces;
} attn__req_figures;
void attn__request_figures(const attn_builder *b, const attn_batch *bt, const attn_plan_opts *o,
                           const attn__plan_shape *s, int32_t r, attn__req_figures *out);
/* Union [lo, hi) of the keys the rows of tokens [t0, t1) of a request may
 * see under window w (the group's; docs/design.md §2, mask.h).  Visibility of
 * every row is an interval holding its own position, so the union over
 * consecutive rows is one too, and never empty. */
void attn__kv_range(int32_t seq_len, int32_t q_len, int32_t t0, int32_t t1, int32_t causal,
                    const attn__window *w, int32_t *lo, int32_t *hi);
/* Request r's causality: its req_causal entry, else the batch's flag. */
static inline int32_t attn__req_causal(const attn_batch *bt, int32_t r) {
    return bt->req_causal ? (int32_t)bt->req_causal[r] : bt->causal;
}

/* Debug check of the plan's structural invariants (ATTN_ASSERT inside);
 * returns false if one fails in a release build. */
bool attn__plan_verify(const attn_plan *plan);

/* Validate a KV-cache spec (heads, head_dim, block_size, dtype). */
attn_status attn__check_kv(const attn_kv_desc *kv, attn_error *err);

/* Validate a layer's own fields (heads, window, softcap, scale, slopes,
 * sinks; k_scale and v_scale on a cache of kv_dtype fp8). */
attn_status attn__check_layer(const attn_layer_desc *l, int32_t index, attn_dtype kv_dtype,
                              attn_error *err);

/* ---- kernel selection and tuning profile (src/dispatch.c) ---- */
attn_status attn__select_kernels(const char *isa, const attn_kernels **out, attn_error *err);
/* ATTN__TUNE_* (kernels.h) by name ("intel", "amd"), else $ATTN_TUNE, else
 * by CPU vendor. */
attn_status attn__select_tune(const char *name, int32_t *out, attn_error *err);
const char *attn__tune_name(int32_t tune);

/* ---- the fp64 path for rows fp32 cannot carry (src/wide.c) ---- */

/* Nonzero when one of x[0 .. n) is an infinity or a NaN, of either sign
 * and any payload (executor.c: its check of a row's accumulator). */
int attn__any_inf_nan(const float *x, size_t n);

typedef struct attn__wide {
    const attn_plan *p;
    const attn_layer_desc *layer;
    const attn_tensors *t;
    int32_t hq, g;                     /* the layer's query heads, per KV head */
    double scale;                      /* the layer's scale (x an fp8 cache's K scale) */
    float v_scale;                     /* an fp8 cache's V scale, else 1 */
    int32_t win_left[2], win_right[2]; /* the layer's window pair, [causal] (mask.h) */
} attn__wide;

/* The rows of (request req, tokens [tok0, tok0 + n_tok), kv_head's group)
 * over every key each sees, computed in fp64 from the tensors (row
 * convention of kernels.h): the normalised output rows, sinks and V scale
 * applied, into acc, and the neutral state m = 0, l = 1 into m and l, so
 * that the table's store (sinks NULL, m_exp 0, v_scale 1) writes them
 * unchanged.  For the executor only (executor.c, needs_wide). */
void attn__wide_rows(const attn__wide *w, int32_t req, int32_t tok0, int32_t n_tok,
                     int32_t kv_head, float *acc, float *m, float *l);

#endif /* ATTN_INTERNAL_H */
