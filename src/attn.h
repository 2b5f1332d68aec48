/*
 * attn.h — the public API of the attnguard attention engine.
 *
 * Owns: status codes, the per-call error detail, the descriptions a caller
 * fills in (group, layer, KV spec, batch, tensors), the opaque builder and
 * plan handles, the scratchpad region table, and the entry points.  Looking
 * inside a plan (its work items, reductions, summary, per-layer extents) is
 * attn_plan_inspect.h.  Everything else under src/ is private.
 *
 * Model of use (one attention group = the layers sharing one KV-cache spec):
 *
 *     attn_builder_create(&group, &b, &err);      once per group
 *     attn_builder_build(b, &batch, NULL, &p, &err);   once per batch
 *     attn_plan_scratch_size(p, &bytes, &err);    caller allocates scratch
 *     for each layer of the group:
 *         attn_run(p, &layer, &tensors, scratch, bytes, &err);
 *     attn_plan_destroy(p); ... attn_builder_destroy(b);
 *
 * Conventions shared by every function:
 *   - a status is returned; ATTN_OK is 0;
 *   - `err` may be NULL; when not NULL it is always written: status plus a
 *     message that names the offending value (empty message on success);
 *   - out-parameters are written only when ATTN_OK is returned;
 *   - nothing aborts, exits or prints because of caller input;
 *   - handles are not thread-safe to mutate, but a built plan may be run by
 *     several callers at once, each with its own scratchpad.
 *
 * Paged KV cache layout (both K and V, element type = kv.dtype):
 *     cache[num_blocks][num_kv_heads][block_size][head_dim]
 * i.e. one (block, kv head) pair is a contiguous block_size x head_dim tile,
 * which is what the decode and prefill kernels stream.  Token k of request r
 * lives in physical block block_table[r * stride + k / block_size], slot
 * k % block_size.  Query and output are [num_tokens][num_heads][head_dim].
 */
#ifndef ATTN_H
#define ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- limits (anything beyond is refused with a status, not clamped) ---- */
#define ATTN_MAX_HEADS      1024   /* query or KV heads per layer */
#define ATTN_MAX_HEAD_DIM   1024
#define ATTN_MAX_BLOCK_SIZE 4096
#define ATTN_MAX_THREADS    256
#define ATTN_MAX_LAYERS     4096
#define ATTN_MAX_SPLITS     64     /* KV pieces per split row */
#define ATTN_MAX_REQS       (1 << 20)
#define ATTN_MAX_SEQ_LEN    (1 << 28)
#define ATTN_MAX_REDZONE    (1u << 20)
#define ATTN_MAX_ALIBI_SLOPE 0x1p64 /* |slope| bound: slope x (k - p) stays far inside fp32 */
#define ATTN_ERROR_MSG_LEN  256
#define ATTN_REGION_NAME_LEN 40
#define ATTN_ALIGN          64     /* every scratch region starts 64-byte aligned */

typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_E_NULL_ARG,          /* a required pointer is NULL */
    ATTN_E_NO_MEMORY,         /* the allocator returned NULL */
    ATTN_E_OVERFLOW,          /* a size product overflows size_t */
    ATTN_E_MIXED_HEADS,       /* layers of one group disagree on num_heads */
    ATTN_E_BAD_HEADS,         /* head count <= 0, over limit, or Hq % Hkv != 0 */
    ATTN_E_BAD_HEAD_DIM,      /* head_dim <= 0 or over limit */
    ATTN_E_BAD_BLOCK_SIZE,    /* block_size <= 0 or over limit */
    ATTN_E_BAD_WINDOW,        /* window < -1 or == 0 */
    ATTN_E_BAD_LAYER,         /* softcap/scale/slope/sink not finite or negative */
    ATTN_E_BAD_DTYPE,         /* dtype outside attn_dtype */
    ATTN_E_BAD_THREADS,       /* num_threads outside 1..ATTN_MAX_THREADS */
    ATTN_E_BAD_BATCH,         /* num_reqs, query_start_loc or q_len */
    ATTN_E_BAD_SEQ_LEN,       /* seq_len < q_len or over limit */
    ATTN_E_BAD_BLOCK_TABLE,   /* stride too small, block id outside cache */
    ATTN_E_BAD_OPTION,        /* plan options (split mode, count, redzone) */
    ATTN_E_LAYER_MISMATCH,    /* run: layer differs from what the plan was built for */
    ATTN_E_TENSOR_MISMATCH,   /* run: tensor shapes/dtypes differ from the plan */
    ATTN_E_SCRATCH_TOO_SMALL, /* run: scratch_bytes < plan's scratchpad size */
    ATTN_E_SCRATCH_ALIGN,     /* run: scratch not ATTN_ALIGN-byte aligned */
    ATTN_E_BAD_SLOT,          /* reshape_and_cache: slot outside the cache */
    ATTN_E_BAD_ISA,           /* requested ISA unknown or not on this CPU */
    ATTN_E_INTERNAL,          /* an engine invariant failed: a bug, please report */
    ATTN_E_TOO_LARGE,         /* build: the plan's scratchpad or metadata would exceed
                                 attn_group_desc.max_plan_bytes */
    ATTN_STATUS_COUNT
} attn_status;

/* Static, never NULL: "ATTN_OK: success", ... ; unknown codes get a fixed text. */
const char *attn_strerror(attn_status status);
/* The enumerator's name ("ATTN_E_MIXED_HEADS"); unknown codes -> "ATTN_E_?". */
const char *attn_status_name(attn_status status);

/* Per-call error detail; never global.  Pass NULL if not wanted. */
typedef struct attn_error {
    attn_status status;
    char message[ATTN_ERROR_MSG_LEN];
} attn_error;

typedef enum attn_dtype {
    ATTN_DTYPE_F32 = 0,
    ATTN_DTYPE_BF16 = 1,
    ATTN_DTYPE_F16 = 2,
    ATTN_DTYPE_FP8_E4M3 = 3,  /* e4m3fn: 1-4-3, bias 7, no infinities, 0x7f/0xff NaN,
                                 max 448; KV cache only */
    ATTN_DTYPE_FP8_E5M2 = 4,  /* 1-5-2, bias 15, IEEE-like (infinities), max 57344;
                                 KV cache only */
    ATTN_DTYPE_COUNT
} attn_dtype;

/* "f32", "bf16", "f16", "fp8e4m3", "fp8e5m2"; NULL for values outside the enum. */
const char *attn_dtype_name(attn_dtype dtype);
/* Bytes per element; 0 for values outside the enum. */
size_t attn_dtype_size(attn_dtype dtype);

/* Optional allocator (all engine allocations go through it).  alloc may
 * return NULL: the engine then returns ATTN_E_NO_MEMORY and leaks nothing. */
typedef struct attn_allocator {
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} attn_allocator;

/* One attention layer.  The pointed-to arrays are read during
 * attn_builder_create (validation) and attn_run (use) only. */
/* How a builder's kernels may round (attn_group_desc.precision). */
typedef enum attn_precision {
    ATTN_PRECISION_DEFAULT = 0, /* a table may round q and the softmax weights to bf16
                                   where that is much faster (today: the avx512bf16
                                   table's bf16-KV prefill and fp8-KV decode under
                                   tune "amd");
                                   attn_builder_info.bf16_rounding says when, and
                                   docs/engine.md gives the error bound */
    ATTN_PRECISION_EXACT = 1,   /* every product and sum in fp32 or better, on any table */
    ATTN_PRECISION_COUNT
} attn_precision;

typedef struct attn_layer_desc {
    const char *name;          /* for messages; NULL -> "layers.<index>" */
    int32_t num_heads;         /* query heads Hq */
    int32_t window;            /* sliding window, shorthand: -1 = none, else W >= 1 keys
                                  incl. the current one: (left, right) = (W-1, 0) on
                                  causal requests, (W-1, W-1) on non-causal ones */
    float softcap;             /* 0 = off, else > 0: s = c * tanh(s / c) */
    float scale;               /* 0 = 1/sqrt(head_dim), else finite > 0 */
    const float *alibi_slopes; /* NULL or [num_heads], finite, |slope| <= ATTN_MAX_ALIBI_SLOPE */
    const float *sinks;        /* NULL or [num_heads] logits, finite */
    /* The window as an explicit pair (vLLM's sliding_window_left/right):
     * with window_pair = 1 (and window = -1), key k is visible to position
     * p when k >= p - window_left and k <= p + window_right, -1 meaning
     * unbounded on that side; causal requests see only k <= p besides.
     * window_pair = 0: the pair must be left (0, 0). */
    int32_t window_pair;       /* 0: the shorthand above; 1: window_left/right */
    int32_t window_left;       /* -1 or 0..ATTN_MAX_SEQ_LEN */
    int32_t window_right;      /* -1 or 0..ATTN_MAX_SEQ_LEN */
    /* fp8 KV caches (vLLM's k_scale / v_scale): a cached code stands for
     * fp8_to_f32(code) * scale.  0 means 1; else finite > 0.  Ignored for
     * other KV dtypes. */
    float k_scale, v_scale;
} attn_layer_desc;

/* The KV-cache spec the group's layers share. */
typedef struct attn_kv_desc {
    int32_t num_kv_heads;      /* Hkv, divides every layer's num_heads */
    int32_t head_dim;          /* D */
    int32_t block_size;        /* tokens per cache block */
    attn_dtype dtype;          /* K and V element type (any attn_dtype) */
} attn_kv_desc;

typedef struct attn_group_desc {
    const attn_layer_desc *layers; /* [num_layers]; may be NULL if num_layers == 0 */
    int32_t num_layers;
    attn_kv_desc kv;
    attn_dtype q_dtype;        /* query element type: f32, bf16 or f16 */
    attn_dtype out_dtype;      /* output element type: f32, bf16 or f16 */
    int32_t model_num_heads;   /* used ONLY when num_layers == 0 */
    int32_t num_threads;       /* OpenMP threads a plan is partitioned for */
    const char *isa;           /* NULL: $ATTN_ISA if set, else best on this CPU;
                                  "ref" | "avx2" | "avx512" | "avx512bf16" */
    const attn_allocator *allocator; /* NULL: malloc/free; copied */
    const char *tune;          /* NULL: $ATTN_TUNE if set, else by CPU vendor;
                                  "intel" | "amd": how the SIMD tables walk
                                  memory and, on "avx512bf16", whether bf16
                                  prefill and fp8 decode run on VDPBF16PS
                                  ("amd", which rounds:
                                  attn_builder_info.bf16_rounding).
                                  An unknown name is ATTN_E_BAD_ISA. */
    attn_precision precision;  /* ATTN_PRECISION_DEFAULT (0) or _EXACT; another value
                                  is ATTN_E_BAD_OPTION */
    size_t max_plan_bytes;     /* most bytes a plan's scratchpad, and separately its
                                  own metadata (work lists, region table, batch
                                  copies), may take: attn_builder_build refuses more
                                  with ATTN_E_TOO_LARGE, before allocating anything.
                                  0: a quarter of this machine's physical memory (no
                                  limit where that is unknown). */
    /* For testing: called by whichever thread reaches one of the executor's
     * synchronisation points (site: ATTN_SYNC_*), from inside its parallel
     * region; NULL (the default): none.  A harness may make the thread
     * wait or yield there, so that an ordering bug shows within minutes
     * instead of by luck.  Must be thread-safe; copied with the group. */
    void (*sync_hook)(void *ctx, int32_t site);
    void *sync_hook_ctx;
} attn_group_desc;

/* attn_group_desc.sync_hook's sites. */
enum {
    ATTN_SYNC_CLAIMED = 0,  /* a thread claimed a unit of work and is about to run it */
    ATTN_SYNC_RAN = 1,      /* it ran the unit (its pieces and flags are written) */
    ATTN_SYNC_BARRIER = 2,  /* it is about to wait at the barrier before the merges */
    ATTN_SYNC_MERGE = 3     /* it is about to merge a split row's pieces */
};

typedef struct attn_builder attn_builder;
typedef struct attn_plan attn_plan;

/* Validate the group and resolve, once, what its layers share:
 * num_heads (layers that disagree -> ATTN_E_MIXED_HEADS, message
 * "all layers in one attention group must share num_heads; got {48, 64}:
 * layers.0 = 48, layers.1 = 64", every layer's own count; no layers ->
 * model_num_heads) and the group
 * window (the one value all layers share, else -1).  The layer array is not
 * kept.  On success *out owns a builder; free with attn_builder_destroy. */
attn_status attn_builder_create(const attn_group_desc *group, attn_builder **out,
                                attn_error *err);
void attn_builder_destroy(attn_builder *builder);   /* NULL-safe */

typedef struct attn_builder_info {
    int32_t num_heads;         /* resolved from the layers */
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;
    int32_t window;            /* resolved group window (shorthand), -1 = not shared/none */
    int32_t num_layers;
    int32_t num_threads;
    attn_dtype q_dtype, kv_dtype, out_dtype;
    const char *isa;           /* static string, the selected kernel table */
    const char *tune;          /* static string, the tuning profile: "intel", "amd" */
    /* 1: this builder's runs round q and the softmax weights to bf16 on
     * some items: bf16-KV prefill and fp8-KV decode on the avx512bf16
     * table under tune "amd" (CPUs whose VDPBF16PS runs at the FMA rate:
     * the faster path for both: docs/perf-notes.md; each rounding
     * has relative error <= 2^-8; docs/engine.md, "Rounding", turns that
     * into a bound on the output).  0: every product and sum is fp32 or
     * better.  attn_group_desc.precision = ATTN_PRECISION_EXACT makes it
     * 0 on every table. */
    int32_t bf16_rounding;
    /* The resolved group window as a layer carries it: the shorthand in
     * `window` above, or window_pair = 1 and the pair every layer shares
     * (0, 0, 0 when the layers do not share one: unbounded). */
    int32_t window_pair, window_left, window_right;
    attn_precision precision;  /* as the group asked */
} attn_builder_info;

attn_status attn_builder_get_info(const attn_builder *builder, attn_builder_info *out,
                                  attn_error *err);

/* One batch.  Arrays are read during attn_builder_build only (the plan keeps
 * copies of what it needs). */
typedef struct attn_batch {
    int32_t num_reqs;                /* 1..ATTN_MAX_REQS */
    const int32_t *query_start_loc;  /* [num_reqs + 1]: 0, then strictly increasing */
    const int32_t *seq_lens;         /* [num_reqs]: keys incl. new tokens, >= q_len */
    const int32_t *block_table;      /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;      /* >= ceil(max seq_len / block_size) */
    int32_t num_blocks;              /* physical blocks in the cache */
    int32_t causal;                  /* 1 = decoder (causal), 0 = encoder / cross: every
                                        request's, unless req_causal is given */
    /* Causality per request (vLLM's per-request causal flag), or NULL.
     * Request r's query token i sits at position seq_len - q_len + i when
     * causal (chunked prefill and decode alike) and at i when not. */
    const uint8_t *req_causal;       /* [num_reqs]: 1 causal, 0 non-causal */
} attn_batch;

typedef enum attn_split_mode {
    ATTN_SPLIT_AUTO = 0,  /* split single-tile rows when threads would idle */
    ATTN_SPLIT_OFF,       /* never split */
    ATTN_SPLIT_ON,        /* split every single-tile row into max(2, threads) pieces */
    ATTN_SPLIT_FIXED      /* split every single-tile row into split_count pieces */
} attn_split_mode;

typedef struct attn_plan_opts {
    attn_split_mode split;
    int32_t split_count;      /* ATTN_SPLIT_FIXED only: 1..ATTN_MAX_SPLITS */
    size_t redzone;           /* bytes of gap between regions: 0 in production;
                                 a multiple of ATTN_ALIGN up to ATTN_MAX_REDZONE */
} attn_plan_opts;

/* Build the plan for one batch: work items, reductions, per-thread
 * partition and the scratchpad layout.  opts NULL = defaults (auto, 0).
 * A plan whose scratchpad, or whose own metadata, would take more than the
 * group's max_plan_bytes is refused with ATTN_E_TOO_LARGE before anything
 * is allocated.
 * A piece count is clamped to the keys the row can see (each piece has at
 * least one key).  On success *out owns a plan; free with attn_plan_destroy. */
attn_status attn_builder_build(const attn_builder *builder, const attn_batch *batch,
                               const attn_plan_opts *opts, attn_plan **out,
                               attn_error *err);
void attn_plan_destroy(attn_plan *plan);            /* NULL-safe */

/* ---- the scratchpad: an exact table of regions ---- */
typedef enum attn_region_kind {
    ATTN_REGION_Q = 0,     /* per thread: query rows converted to fp32, scaled */
    ATTN_REGION_ACC,       /* per thread: fp32 output accumulators */
    ATTN_REGION_STATE,     /* per thread: running max and sum per row */
    ATTN_REGION_SCORES,    /* per thread: logits/probabilities of one KV tile */
    ATTN_REGION_KV,        /* per thread: one KV tile converted/packed to fp32 */
    ATTN_REGION_FLAGS,     /* per reduction: one completion byte per piece */
    ATTN_REGION_PARTIAL,   /* per reduction: fp32 unnormalised outputs, per piece */
    ATTN_REGION_MAX,       /* per reduction: fp32 running max, per piece and row */
    ATTN_REGION_SUM,       /* per reduction: fp32 running sum, per piece and row */
    ATTN_REGION_KIND_COUNT
} attn_region_kind;

typedef enum attn_owner_kind {
    ATTN_OWNER_THREAD = 0,     /* owner = thread index in the plan's partition */
    ATTN_OWNER_REDUCTION       /* owner = reduction index */
} attn_owner_kind;

typedef struct attn_region {
    char name[ATTN_REGION_NAME_LEN]; /* e.g. "t1.scores", "r3.partial" */
    size_t offset;            /* from the scratchpad start, ATTN_ALIGN-aligned */
    size_t size;              /* exact bytes the kernels may touch */
    attn_region_kind kind;
    attn_owner_kind owner_kind;
    int32_t owner;
} attn_region;

/* Total bytes of scratchpad the plan needs: the end of the last region,
 * rounded up to ATTN_ALIGN.  The first region starts at offset 0; with a
 * redzone R > 0 at least R bytes separate consecutive regions (gaps only
 * between regions: redzones around the whole buffer are the caller's). */
attn_status attn_plan_scratch_size(const attn_plan *plan, size_t *bytes, attn_error *err);
/* The region table, sorted by offset; valid as long as the plan lives. */
attn_status attn_plan_regions(const attn_plan *plan, const attn_region **regions,
                              size_t *count, attn_error *err);

/* ---- running ---- */
typedef struct attn_tensors {
    const void *q;            /* [num_tokens][num_heads][head_dim], q_dtype */
    void *out;                /* same shape, out_dtype; must not alias q or the cache */
    const void *k_cache;      /* see the layout above, kv_dtype */
    const void *v_cache;
    int32_t num_tokens, num_heads, head_dim;
    int32_t num_blocks, num_kv_heads, block_size;
    attn_dtype q_dtype, kv_dtype, out_dtype;
} attn_tensors;

/* Run one layer of the plan's group over the plan's batch.  Refuses a layer
 * whose num_heads differs from the plan's (ATTN_E_LAYER_MISMATCH), tensors
 * whose shapes or dtypes differ (ATTN_E_TENSOR_MISMATCH), a scratchpad
 * smaller than attn_plan_scratch_size (ATTN_E_SCRATCH_TOO_SMALL) or not
 * ATTN_ALIGN-aligned.  Uses the plan's thread count (OpenMP).  The kernels
 * touch the scratchpad only inside the plan's regions.  Speed, not
 * correctness: the caches, q, out and the scratchpad run fastest on huge
 * pages (README, "Using the engine": a prefill reads one q row per token). */
attn_status attn_run(const attn_plan *plan, const attn_layer_desc *layer,
                     const attn_tensors *tensors, void *scratch, size_t scratch_bytes,
                     attn_error *err);

/* Store new K/V rows into the paged cache.  key/value: [num_tokens]
 * [kv.num_kv_heads][kv.head_dim] in kv.dtype (an fp8 cache's codes);
 * slot_mapping[i] = block * block_size + offset, or -1 to skip token i.
 * Every slot is validated before anything is written. */
attn_status attn_reshape_and_cache(const attn_kv_desc *kv, int32_t num_blocks,
                                   const void *key, const void *value,
                                   int32_t num_tokens, const int64_t *slot_mapping,
                                   void *k_cache, void *v_cache, attn_error *err);

/* The same with rows of another element type, converted into kv.dtype:
 * src_dtype is f32, bf16 or f16 (or kv.dtype itself: then a plain copy,
 * as above).  Into an fp8 cache each K row is divided by k_scale and each
 * V row by v_scale (0 means 1; else finite > 0; the layer's scales the
 * kernels multiply back, attn_layer_desc), the quotient rounded to fp32,
 * then to the code: round to nearest even, e4m3fn saturating at +-448
 * (inf too), NaN kept, e5m2 overflowing to +-inf.  Into a bf16/f16 cache
 * rows are rounded to nearest even and the scales are not used.  A
 * src_dtype outside these is ATTN_E_BAD_DTYPE, a bad scale ATTN_E_BAD_LAYER. */
attn_status attn_reshape_and_cache_from(const attn_kv_desc *kv, int32_t num_blocks,
                                        attn_dtype src_dtype, const void *key,
                                        const void *value, int32_t num_tokens,
                                        const int64_t *slot_mapping, float k_scale,
                                        float v_scale, void *k_cache, void *v_cache,
                                        attn_error *err);

/* ---- kernel selection ---- */
/* Names of the kernel tables usable on this CPU; returns count.  names may
 * be NULL to only count.  First the native tables, worst first: "ref", then
 * the SIMD tables, the default (best) one last among them.  Then the
 * emulated ones, if the build has them ("avx512@emu", "avx512bf16@emu":
 * the AVX-512 kernels on an emulation of AVX-512 over AVX2, usable on any
 * CPU with AVX2, FMA and F16C; the same results bit for bit as the native
 * table, many times slower; "amx@sim": the amx table's kernels on a
 * simulation of its AMX tiles, the same algorithm and rounding bound but
 * not the same bits, as the AMX unit's order of sums inside one tile
 * product is not documented), which run only when asked for by name. */
int attn_isa_available(const char **names, int cap);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_H */
