/*
 * attnguard/engine.h — the adapter ABI: what a CPU attention engine
 * implements so that attnguard's oracles, fuzz targets, reports and
 * benchmarks can drive it.  Version AG_ENGINE_ABI_VERSION (5).
 *
 * Owns: the description types the harness hands to an engine (group,
 * layer, batch, run arguments, an allocator), what the engine hands back
 * (capabilities and limits, variants, plan information, a typed region
 * table, messages with a refusal kind), the table of entry points
 * (ag_engine) and the lookup of adapters by name; the element types and
 * their codec come from dtype.h beside it.  Clean as C11 and C++17; no
 * type of any engine appears here: this header is the only door between
 * the harness and an engine.  An adapter needs nothing else: the ABI's
 * helpers (names, sizes, codecs) are static inline here and in dtype.h,
 * so an adapter .so leaves no `ag_` symbol undefined (docs/engines.md,
 * "An adapter out of tree": the compile line, the installed kit).
 *
 * The life of one attention group, as a serving engine lives it:
 *
 *     e->open(options, &ctx, &msg)                   once per process
 *     e->create(ctx, &group, &grp, &msg)             once per attention group
 *     e->kv_cache_bytes(grp, num_blocks, &b, &msg)   the harness allocates K and V
 *     e->write_kv(grp, ...)                          new rows, by slot mapping
 *     e->plan(grp, &batch, &opts, &plan, &info, &msg)   once per batch
 *     for each layer l of the group:                 the harness allocates exactly
 *         e->run(plan, l, &args, &msg)               info.scratch_bytes, guarded
 *     e->plan_destroy(plan); e->destroy(grp); e->close(ctx)
 *
 * `plan` runs once for the whole group and `run` once per layer with that
 * layer's own head count: the split that made the Laguna bug possible (a
 * scratchpad sized from one head count, written with another), so a fuzzer
 * can reach it in any engine.
 *
 * Memory: the harness owns every buffer.  Query, KV caches, block table and
 * the other batch arrays are read-only while `run` executes (the harness may
 * mprotect them); `out` and the scratch are the only writable memory the
 * engine gets, the scratch at exactly the planned size, ending flush against
 * an inaccessible page, with poisoned gaps between the regions the engine
 * declares.  An engine whose work buffers are internal (it allocates them
 * itself) takes them from group.alloc when that is not NULL, so the harness
 * can guard them one level down.  An engine must not keep pointers to
 * harness buffers beyond one call.
 *
 * Errors: every entry point returns an ag_status.  AG_REFUSED is a valid
 * "no" to caller input (a mixed-head group, a block id outside the cache);
 * AG_UNSUPPORTED is an input the engine declares it cannot express (the
 * harness skips such cases and counts them); AG_INTERNAL is the engine's
 * own failure.  Beside the status, msg.refusal says in this ABI's neutral
 * vocabulary which kind of input was refused (the harness judges that
 * kind), msg.code keeps the engine's own name for it as text, and msg.text
 * names the offending value and where it came from.  `msg` may be NULL;
 * when not, it is always written.
 *
 * Optional entry points (variants, group_info, extents, plan_shape,
 * internal_needs, paths) are present exactly when they are not NULL; no
 * capability flag repeats them.  The table only grows at its end.
 */
#ifndef ATTNGUARD_ENGINE_H
#define ATTNGUARD_ENGINE_H

#include "dtype.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AG_ENGINE_ABI_VERSION 5 /* 3: ag_variant.twin; 4: ag_plan_info.run_macs,
                                   AG_CAP_SPIN_WAIT; 5: the block dtypes q8_0 .. iq4_nl */

typedef enum ag_status {
    AG_OK = 0,
    AG_REFUSED = 1,      /* caller input refused (msg.refusal says which kind) */
    AG_UNSUPPORTED = 2,  /* a feature the engine does not have */
    AG_INTERNAL = 3,     /* the engine failed (a bug; or out of memory: AG_R_RESOURCE) */
    AG_STATUS_COUNT
} ag_status;

/* ag_dtype, its traits and the reference codec of each layout: dtype.h. */

/* The kinds of refusal a harness judges.  An engine names the kind of the
 * first defect it met; AG_R_NONE says "not classified" (the harness then
 * judges only that a refusal came, not which).  A value beyond a limit the
 * engine declares (ag_caps) may be refused with the field's kind or with
 * AG_R_LIMIT. */
typedef enum ag_refusal {
    AG_R_NONE = 0,
    AG_R_MIXED_HEADS,    /* the group's layers disagree on the query-head count */
    AG_R_HEADS,          /* a head count below 1, or Hq not a multiple of Hkv */
    AG_R_HEAD_DIM,       /* head_dim below 1, or not a whole number of blocks of a block
                            kv_dtype (a multiple of AG_DTYPE_BLOCK) */
    AG_R_BLOCK_SIZE,     /* block_size below 1 */
    AG_R_WINDOW,         /* a window side below -1 */
    AG_R_LAYER,          /* soft cap, scale, ALiBi slope, sink or fp8 k/v scale: not finite,
                            negative, or zero where that has no meaning */
    AG_R_DTYPE,          /* a dtype outside ag_dtype */
    AG_R_THREADS,        /* num_threads below 1 */
    AG_R_OPTIONS,        /* group.options: a word whose key the engine knows with a value
                            its variants do not offer on this CPU */
    AG_R_PLAN_OPTION,    /* ag_plan_opts: a split mode or count outside the enum or range */
    AG_R_BATCH,          /* num_reqs, query_start_loc, q_len below 1, a causal flag not 0/1 */
    AG_R_LENGTH,         /* seq_len below q_len */
    AG_R_BLOCK_ID,       /* a block table entry outside the cache, or the stride too small */
    AG_R_SLOT,           /* write_kv: a slot outside the cache */
    AG_R_LIMIT,          /* beyond a limit the engine declares in ag_caps */
    AG_R_OVERFLOW,       /* a size the input implies overflows the engine's size type */
    AG_R_RESOURCE,       /* the environment: out of memory, or a plan over the engine's own
                            byte budget; never a finding */
    AG_R_MISMATCH,       /* run: a layer, tensor or batch other than the plan's */
    AG_R_SCRATCH,        /* run: scratch smaller than planned, or misaligned */
    AG_R_NULL,           /* a required pointer is NULL */
    AG_R_COUNT
} ag_refusal;

#define AG_MSG_CODE_LEN 48
#define AG_MSG_TEXT_LEN 320
#define AG_REGION_NAME_LEN 48

/* What an entry point says besides its status. */
typedef struct ag_msg {
    int32_t refusal;             /* ag_refusal when the status is not AG_OK, else AG_R_NONE */
    char code[AG_MSG_CODE_LEN];  /* the engine's own name for it ("ATTN_E_MIXED_HEADS",
                                    "GGML_ASSERT") or "" */
    char text[AG_MSG_TEXT_LEN];  /* names the offending value and where it came from */
} ag_msg;

/* ---- capabilities: what the engine computes ---- */
enum {
    AG_CAP_GQA = 1u << 0,            /* Hq a multiple of Hkv, Hq > Hkv */
    AG_CAP_WINDOW = 1u << 1,         /* windows with left == right (one W: W-1 keys each way;
                                        a causal row sees only k <= p anyway) */
    AG_CAP_WINDOW_LR = 1u << 2,      /* any (left, right) window */
    AG_CAP_SOFTCAP = 1u << 3,        /* logit soft cap */
    AG_CAP_ALIBI = 1u << 4,          /* ALiBi with any per-head slopes */
    AG_CAP_ALIBI_STANDARD = 1u << 5, /* ALiBi with the standard slope set only */
    AG_CAP_SINKS = 1u << 6,          /* one sink logit per query head */
    AG_CAP_SCALE = 1u << 7,          /* any finite positive scale */
    AG_CAP_PAGED = 1u << 8,          /* block tables in any physical order */
    AG_CAP_SHARED_BLOCKS = 1u << 9,  /* one physical block in several requests' tables */
    AG_CAP_NONCAUSAL = 1u << 10,     /* non-causal (encoder) requests */
    AG_CAP_MIXED_CAUSAL = 1u << 11,  /* causal and non-causal requests in one batch */
    AG_CAP_SPLIT_KV = 1u << 12,      /* honours ag_plan_opts.split */
    AG_CAP_REDZONE = 1u << 13,       /* the plan leaves ag_plan_opts.redzone between regions */
    AG_CAP_BITWISE = 1u << 14,       /* same input, same threads: bitwise the same output */
    AG_CAP_KV_SCALES = 1u << 15,     /* per-layer k_scale / v_scale on fp8 caches */
    AG_CAP_MIXED_HEADS = 1u << 16,   /* a group's layers may differ in query-head count: the
                                        plan serves each layer with its own (without it, such
                                        a group must be refused as AG_R_MIXED_HEADS) */
    AG_CAP_SPIN_WAIT = 1u << 17,     /* the engine's workers spin at their barriers (ggml's
                                        pool): with more threads than online cores a run
                                        waits for every thread to be scheduled at each one,
                                        so its time grows with threads / cores; the harness
                                        bounds and budgets such runs accordingly */
    AG_CAP_WIDE_ACC = 1u << 18,      /* where P.V's sums would overflow the declared acc
                                        type, the engine carries the row in a wider one, so
                                        its declared rounding holds there too: the harness
                                        judges those elements.  Without it they are left
                                        unjudged, counted as "declared accumulator limit" */
    AG_CAP_SCALE_ON_Q = 1u << 19,    /* the engine multiplies q by the scale before Q.K
                                        (vLLM's VEC kernels), so with a max_abs_logit the
                                        scaled q must stay below it too, soft cap or not: the
                                        harness skips inputs where scale * max|q| could not */
    AG_CAP_SOFTCAP_RANGE = 1u << 20  /* the engine's soft cap c * tanh(s / c) holds for
                                        |s| < AG_SOFTCAP_RANGE * c only (tanh formed from
                                        e^(2s/c), which overflows past it: vLLM's): the harness
                                        skips inputs whose bound on |s| could reach it */
};

/* See AG_CAP_SOFTCAP_RANGE: e^(2x) stays finite in fp32 up to x = 44. */
#define AG_SOFTCAP_RANGE 32.0

typedef struct ag_caps {
    uint32_t abi_version;      /* AG_ENGINE_ABI_VERSION the adapter was built for */
    uint32_t flags;            /* AG_CAP_* */
    uint32_t q_dtypes;         /* AG_DTYPE_BIT(...) sets, per tensor */
    uint32_t kv_dtypes;
    uint32_t out_dtypes;
    /* Limits, 0 = none.  A group or batch beyond a declared limit is input
     * the engine must refuse (AG_REFUSED, with the field's kind or
     * AG_R_LIMIT); the harness holds it to that. */
    int32_t max_heads;         /* query or KV heads of a layer */
    int32_t max_head_dim;
    int32_t max_block_size;
    int32_t max_threads;
    int32_t max_seq_len;       /* keys of a request, and each side of a window */
    int32_t max_splits;        /* ag_plan_opts.split_count */
    float max_alibi_slope;     /* |slope| */
    float max_abs_logit;       /* 0: no limit from q or the scale: the engine never lets
                                  the scale overflow, and computes Q.K of q rows whose
                                  largest |element| passes AG_NO_LIMIT_Q_HELD (2^32) on
                                  q brought down by a power of two, or on a wider path.
                                  It is judged on every row by its declared rounding
                                  (ag_precision) but where K alone would overflow fp32's
                                  Q.K: min(max|q|, 2^32) sum|k| at or past FLT_MAX,
                                  unjudged and counted ("declared logit limit").
                                  Else the engine holds <q, k> and, without a soft cap,
                                  scale * <q, k> in a type that overflows at this
                                  magnitude (FLT_MAX: fp32 without rescaling) and makes no
                                  promise for inputs that could reach it: the harness skips
                                  them, and rows whose max|q| sum|k| reaches it are
                                  unjudged and counted ("declared logit limit"), a
                                  documented limit, not a finding */
} ag_caps;

/* The largest q element an engine declaring max_abs_logit = 0 takes into
 * fp32's Q.K as it is (see there). */
#define AG_NO_LIMIT_Q_HELD 0x1p32f

/* ---- variants: every code path the engine offers on this CPU ---- */
typedef enum ag_variant_kind {
    AG_VARIANT_DEFAULT = 0,    /* the path group.options == NULL takes */
    AG_VARIANT_KERNELS,        /* another kernel table / CPU backend */
    AG_VARIANT_TUNING,         /* another tuning profile of the same kernels */
    AG_VARIANT_LAYOUT,         /* another mapping of the batch onto the engine */
    AG_VARIANT_PRECISION,      /* another rounding policy */
    AG_VARIANT_KIND_COUNT
} ag_variant_kind;

/* One code path, selected by group.options words.  The list's first entry
 * is the default; its words name it explicitly (may be "").  Together the
 * entries spell every word the engine accepts in group.options on this
 * CPU: a word "key=value" whose key appears in the list but not with that
 * value is refused (AG_R_OPTIONS); a key no entry uses belongs to another
 * engine. */
typedef struct ag_variant {
    const char *options;       /* space-separated "key=value" words; static or ctx-owned */
    int32_t kind;              /* ag_variant_kind */
    const char *twin;          /* NULL, or the options of another entry of the list whose
                                  outputs this variant's must equal bit for bit on every
                                  input (an emulation of that entry's kernels on another
                                  ISA): the harness runs both and reports any difference
                                  as a finding of its own ("emulation") */
} ag_variant;

/* How an engine rounds on purpose, so that the harness judges it by a
 * bound derived for that rounding (never by a looser fixed tolerance).
 * AG_F32 everywhere means fp32 arithmetic (or better) throughout. */
typedef struct ag_precision {
    ag_dtype q_dot;            /* q is rounded to this type before Q.K */
    ag_dtype p_dot;            /* softmax weights are rounded to this type before P.V */
    ag_dtype acc;              /* P.V accumulates in this type */
    int32_t q_raw;             /* 1: q is rounded to q_dot as given, before the scale and
                                  with no rescaling of the engine's own, so an element past
                                  q_dot's range is infinite there (ggml: q in K's type); the
                                  harness leaves such rows unjudged.  0: the engine keeps q
                                  within q_dot's range itself (attnguard scales huge rows by
                                  a power of two first), and is judged on them */
} ag_precision;

/* An allocator of the harness's, for engines whose work buffers are
 * internal: every block it returns ends flush against an inaccessible page
 * and every request is logged.  alloc may return NULL (out of memory). */
typedef struct ag_allocator {
    void *(*alloc)(void *ctx, size_t bytes, size_t align);
    void (*free)(void *ctx, void *ptr);
    void *ctx;
} ag_allocator;

/* ---- one attention group ----
 * Everything a group points at (layers, names, slopes, sinks, options,
 * the allocator) stays valid and unchanged from create until destroy. */
typedef struct ag_layer {
    const char *name;          /* for messages; NULL: "layers.<index>" */
    int32_t num_heads;         /* this layer's query heads */
    int32_t window_left;       /* -1: unbounded; else keys k >= p - window_left are visible */
    int32_t window_right;      /* -1: unbounded; else keys k <= p + window_right (non-causal) */
    float softcap;             /* 0: off */
    float scale;               /* 0: 1/sqrt(head_dim) */
    const float *alibi_slopes; /* NULL or [num_heads] */
    const float *sinks;        /* NULL or [num_heads] logits */
    float k_scale, v_scale;    /* fp8 caches: value = decode(byte) * scale, finite > 0 (0 is
                                  not "default": refuse it); other caches ignore them */
} ag_layer;

typedef struct ag_group {
    const ag_layer *layers;    /* [num_layers] */
    int32_t num_layers;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t block_size;        /* tokens per KV-cache block */
    ag_dtype q_dtype, kv_dtype, out_dtype;
    int32_t model_num_heads;   /* the model-wide count (a fallback for empty groups) */
    int32_t num_threads;
    const char *options;       /* engine words (see ag_variant); NULL: the default variant */
    const ag_allocator *alloc; /* NULL, or where internal work buffers must come from */
    /* NULL, or called by a thread of the engine at each of its
     * synchronisation points (hand-offs between threads: a unit of work
     * claimed or done, a barrier, a merge; `site` numbers them), from any
     * thread, while run executes.  The harness may delay the thread there
     * to shake out ordering bugs; an engine without threads of its own
     * ignores it. */
    void (*sync_hook)(void *ctx, int32_t site);
    void *sync_ctx;
} ag_group;

/* ---- one batch ---- */
typedef struct ag_batch {
    int32_t num_reqs;
    const int32_t *query_start_loc;  /* [num_reqs + 1], prefix sums of q_len >= 1 */
    const int32_t *seq_lens;         /* [num_reqs], keys incl. the new tokens, >= q_len */
    const uint8_t *causal;           /* [num_reqs] or NULL (every request causal); 1: causal
                                        (query i at seq_len - q_len + i), 0: non-causal
                                        (query i at position i) */
    const int32_t *block_table;      /* [num_reqs][block_table_stride] */
    int32_t block_table_stride;
    int32_t num_blocks;              /* physical blocks in each cache */
} ag_batch;

typedef enum ag_split { AG_SPLIT_AUTO = 0, AG_SPLIT_OFF = 1, AG_SPLIT_ON = 2, AG_SPLIT_FIXED = 3 }
    ag_split;

typedef struct ag_plan_opts {
    int32_t split;             /* ag_split: a hint, honoured with AG_CAP_SPLIT_KV */
    int32_t split_count;       /* AG_SPLIT_FIXED */
    size_t redzone;            /* bytes the harness wants between regions (AG_CAP_REDZONE) */
} ag_plan_opts;

/* What a scratch region holds.  The kinds Q .. SUM follow the split-KV
 * layout of the design (docs/design.md, section 1): with plan_shape the
 * harness derives each one's size from the design's formulas on its own. */
typedef enum ag_region_kind {
    AG_REGION_OTHER = 0,       /* engine-specific: bounds are checked, size is the engine's */
    AG_REGION_Q,               /* per thread: fp32 query rows */
    AG_REGION_ACC,             /* per thread: fp32 output accumulators */
    AG_REGION_STATE,           /* per thread: running max and sum per row */
    AG_REGION_SCORES,          /* per thread: fp32 logits of one KV tile */
    AG_REGION_KV,              /* per thread: one K and one V tile in fp32 */
    AG_REGION_FLAGS,           /* per reduction: one completion byte per piece */
    AG_REGION_PARTIAL,         /* per reduction: fp32 unnormalised outputs, per piece */
    AG_REGION_MAX,             /* per reduction: fp32 maxima, per piece and row */
    AG_REGION_SUM,             /* per reduction: fp32 sums, per piece and row */
    AG_REGION_KIND_COUNT
} ag_region_kind;

typedef enum ag_region_owner {
    AG_OWNER_PLAN = 0,         /* the whole plan */
    AG_OWNER_THREAD,           /* index = a thread of the plan's partition */
    AG_OWNER_REDUCTION         /* index = a reduction of the plan */
} ag_region_owner;

typedef struct ag_region {
    char name[AG_REGION_NAME_LEN];   /* for messages: "t1.scores", "r3.partial" */
    size_t offset;             /* from the scratch start; multiple of 8 */
    size_t size;               /* bytes the kernels may touch */
    int32_t kind;              /* ag_region_kind */
    int32_t owner;             /* ag_region_owner */
    int32_t index;             /* the owner's index */
} ag_region;

typedef struct ag_plan_info {
    size_t scratch_bytes;      /* exact size the harness allocates (may be 0) */
    size_t scratch_align;      /* power of two the scratch start must honour */
    const ag_region *regions;  /* NULL, or the layout: sorted by offset, valid while the
                                  plan lives */
    size_t num_regions;        /* 0: the scratch has no declared layout */
    /* Since ABI 4 (the harness zeroes the record before plan): the
     * multiply-adds one run of the plan's most costly layer makes the
     * engine do, where that is more than the batch's attention needs (ggml's
     * unified layout computes every query row of the batch against every
     * cell); 0: no more than that.  The harness's hang bound for a run
     * allows for it, and its fuzz targets run no plan beyond their budget. */
    double run_macs;
} ag_plan_info;

typedef struct ag_run_args {
    const void *q;             /* [num_tokens][layer heads][head_dim], q_dtype */
    const void *k_cache;       /* kv_cache_bytes each, written by write_kv */
    const void *v_cache;
    const ag_batch *batch;     /* the batch the plan was made for */
    int32_t num_tokens;        /* query_start_loc[num_reqs] */
    void *scratch;             /* exactly plan_info.scratch_bytes */
    size_t scratch_bytes;
    void *out;                 /* [num_tokens][layer heads][head_dim], out_dtype */
} ag_run_args;

/* The schedule facts behind a split-KV region table (the kinds Q .. SUM):
 * with them the harness derives what each region must hold from the
 * design's formulas, independently of the engine's own sizing code. */
typedef struct ag_plan_shape {
    int32_t thread_tokens;     /* most query tokens a thread's regions hold at once */
    int32_t kv_tile;           /* keys per kernel tile */
    size_t num_reductions;
    const int32_t *red_tokens; /* [num_reductions] query tokens each reduction merges */
    const int32_t *red_pieces; /* [num_reductions] pieces each reduction merges */
} ag_plan_shape;

/* What an engine says about a created group, for reports and `check`. */
typedef struct ag_group_info {
    char kernels[32];          /* e.g. "avx512bf16", "zen4" */
    char detail[96];           /* e.g. "tune=amd" */
    ag_precision precision;
} ag_group_info;

/* ---- the adapter ---- */
typedef struct ag_engine {
    uint32_t abi_version;      /* AG_ENGINE_ABI_VERSION */
    const char *name;          /* "attnguard", "ggml" */
    const char *summary;       /* one line for listings */

    /* Process-wide set-up (load libraries, read options).  options: the
     * engine's own "key=value" words or NULL.  May refuse (AG_UNSUPPORTED:
     * e.g. the library is not installed; msg says how to install it). */
    ag_status (*open)(const char *options, void **ctx, ag_msg *msg);
    void (*close)(void *ctx);
    void (*caps)(void *ctx, ag_caps *out);
    /* Optional: every code path this CPU runs, the default first (see
     * ag_variant); returns how many exist, writing at most cap.  NULL: one
     * default path and no option words. */
    int (*variants)(void *ctx, ag_variant *out, int cap);

    ag_status (*create)(void *ctx, const ag_group *group, void **grp, ag_msg *msg);
    void (*destroy)(void *grp);
    /* Optional (NULL: the harness holds the engine to fp32 arithmetic). */
    ag_status (*group_info)(void *grp, ag_group_info *out);

    /* Bytes of one cache (K or V) of num_blocks blocks in the engine's
     * private layout.  The layout may depend on the group's KV spec (KV
     * heads, head_dim, block size, dtype) only, never on options, threads
     * or layers: caches written through one group serve every group of
     * the same spec. */
    ag_status (*kv_cache_bytes)(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg);
    /* Store rows: k_rows, v_rows [num_tokens][num_kv_heads][head_dim] in the
     * group's kv_dtype (fp8: the codes; a block dtype: head_dim / 32 blocks
     * per head, ag_dtype_bytes); slot_mapping[i] = block *
     * block_size + offset, or -1 to skip row i. */
    ag_status (*write_kv)(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                          const void *k_rows, const void *v_rows, int32_t num_tokens,
                          const int64_t *slot_mapping, ag_msg *msg);

    ag_status (*plan)(void *grp, const ag_batch *batch, const ag_plan_opts *opts, void **plan,
                      ag_plan_info *info, ag_msg *msg);
    void (*plan_destroy)(void *plan);
    /* Optional: the bytes layer `layer` would touch in each region
     * (need[num_regions]; or need[0] = total scratch when the plan has no
     * regions), computed without running it. */
    ag_status (*extents)(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *msg);
    ag_status (*run)(void *plan, int32_t layer, const ag_run_args *args, ag_msg *msg);
    /* Optional: the schedule facts of a plan whose regions are of the
     * kinds Q .. SUM; arrays valid while the plan lives. */
    ag_status (*plan_shape)(void *plan, ag_plan_shape *out);
    /* Optional, for engines with internal work buffers (group.alloc): the
     * sizes of the buffers a run of `layer` must request, derived by the
     * adapter from the operation's documented shapes (not from the
     * engine's code): sizes[*count], at most cap written, *count the total.
     * The harness compares them with what the engine asked its allocator
     * for. */
    ag_status (*internal_needs)(void *plan, int32_t layer, size_t *sizes, size_t cap,
                                size_t *count, ag_msg *msg);
    /* Optional: the engine's own names of the code paths this plan's runs
     * take ("avx2/bf16", "decode-runs", "split-merge", "one_chunk", ...),
     * at most cap written, the count returned; strings static or owned by
     * the plan.  plan NULL: every path the engine can take on this machine
     * (static strings).  The harness counts them in its reach table, the
     * full list entered at zero: a path no fuzzing reaches is a blind spot
     * it can name. */
    int (*paths)(void *plan, const char **names, int cap);
} ag_engine;

/* A shared object that carries an adapter exports this symbol. */
#define AG_ENGINE_ENTRY "attnguard_engine"
typedef const ag_engine *(*ag_engine_entry_fn)(void);

/* The host's side, defined by the program that drives engines (attnguard's
 * CLI and fuzz targets: engines/registry.c), never by an adapter, which
 * calls none of them.  Adapters linked into the host, and lookup: `name` is
 * a built-in adapter's name, or a path to a shared object exporting
 * AG_ENGINE_ENTRY.  Returns NULL (with msg written) when there is none or
 * its table fails ag_engine_check (another ABI version: the message says
 * which version the adapter was built for and which the host speaks). */
const ag_engine *ag_engine_find(const char *name, ag_msg *msg);
/* Whether a table can be driven: built for this ABI version (read first: a
 * table of another version has another layout), with a name, a summary and
 * every entry point not marked optional above (open, close, caps, create,
 * destroy, kv_cache_bytes, write_kv, plan, plan_destroy, run).  0, or -1
 * with msg naming the field at fault and `name` (NULL: the table's own).
 * A table of this version cut short in its initializer has its missing
 * entries NULL, and is refused here with the first one's name. */
int ag_engine_check(const ag_engine *e, const char *name, ag_msg *msg);
/* Built-in adapter names; returns the count (names may be NULL). */
int ag_engine_list(const char **names, int cap);

/* ---- names of the ABI's enumerations, for messages, case files, reports ----
 * Header-only, as dtype.h (ag_dtype_name, ag_dtype_size, ag_dtype_block,
 * ag_dtype_bytes live there): an adapter built as a shared object calls
 * them with nothing of attnguard linked in.  A library would have to be
 * installed, named by attnguard.pc and kept at the ABI's version beside
 * every adapter; these are a few lookups in constant tables, so each user
 * compiles its own copy.  Values outside an enumeration get "?". */

static inline const char *ag_status_name(ag_status st) {   /* "AG_OK", ... */
    static const char *const k[] = {"AG_OK", "AG_REFUSED", "AG_UNSUPPORTED", "AG_INTERNAL"};
    AG_STATIC_ASSERT(sizeof k / sizeof k[0] == AG_STATUS_COUNT, "one name per ag_status");
    return (unsigned)st < AG_STATUS_COUNT ? k[st] : "AG_?";
}

/* The spelling case files use after `expect =` (docs/case-format.md);
 * index AG_R_COUNT is "?". */
static inline const char *const *ag_refusal_names(void) {
    static const char *const k[] = {
        "none",   "mixed_heads", "heads",   "head_dim",    "block_size", "window",  "layer",
        "dtype",  "threads",     "options", "plan_option", "batch",      "length",  "block_id",
        "slot",   "limit",       "overflow", "resource",   "mismatch",   "scratch", "null", "?",
    };
    AG_STATIC_ASSERT(sizeof k / sizeof k[0] == AG_R_COUNT + 1, "one name per ag_refusal");
    return k;
}

static inline const char *ag_refusal_name(ag_refusal r) {  /* "none", "mixed_heads", ... */
    return ag_refusal_names()[(unsigned)r < AG_R_COUNT ? (unsigned)r : (unsigned)AG_R_COUNT];
}

/* The kind named, or -1 (name NULL too). */
static inline int ag_refusal_parse(const char *name) {
    for (int i = 0; name && i < AG_R_COUNT; i++)
        if (strcmp(name, ag_refusal_names()[i]) == 0) return i;
    return -1;
}

static inline const char *ag_region_kind_name(ag_region_kind k) {   /* "other", "q", ... */
    static const char *const n[] = {"other",  "q",     "acc",     "state", "scores",
                                    "kv",     "flags", "partial", "max",   "sum"};
    AG_STATIC_ASSERT(sizeof n / sizeof n[0] == AG_REGION_KIND_COUNT, "one name per region kind");
    return (unsigned)k < AG_REGION_KIND_COUNT ? n[k] : "?";
}

static inline const char *ag_variant_kind_name(ag_variant_kind k) {  /* "default", ... */
    static const char *const n[] = {"default", "kernels", "tuning", "layout", "precision"};
    AG_STATIC_ASSERT(sizeof n / sizeof n[0] == AG_VARIANT_KIND_COUNT, "one name per variant kind");
    return (unsigned)k < AG_VARIANT_KIND_COUNT ? n[k] : "?";
}

#ifdef __cplusplus
}
#endif
#endif /* ATTNGUARD_ENGINE_H */
