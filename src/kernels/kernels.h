/*
 * kernels.h — the kernel interface: argument structs, function-pointer
 * types, the per-ISA kernel table type, the softmax-state helpers every
 * twin shares, and the engine invariant assertion.  Both sides include it:
 * the kernels (src/kernels/) and the engine that calls them (executor,
 * plan, dispatch).  It must never see the plan: kernels get everything
 * through their arguments (src/internal.h, the plan's side, refuses to be
 * included from a kernel file).
 *
 * Tiers (BLIS-style): the executor (src/executor.c) owns loops over work
 * items, OpenMP and scratch addressing; kernels own the arithmetic of one
 * item and never create threads, allocate, or look outside what their
 * arguments point at.  Every ISA's table starts from the portable one
 * (src/kernels/table_ref.c) and overrides only what it has; the prototypes
 * of every table's kernels are in src/kernels/kernels_decl.h.
 *
 * Naming: <op>_<dtype>__<isa>, e.g. attn_tile_bf16__ref, attn_tile_f32__avx512;
 * each fast kernel has a portable twin of the same signature.
 *
 * Row convention inside one work item: rows = n_tok * g, row index
 * t * g + j is query token t (of the item) and query head j of the KV head's
 * group (global head kv_head * g + j).
 */
#ifndef ATTN_KERNELS_H
#define ATTN_KERNELS_H

#include "../attn.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ---- assertions: only for what the engine itself guaranteed ----
 * ATTN_DEBUG builds abort on a failed invariant (so a death test can see it);
 * release builds compile the check out.  Never used on caller input. */
#ifdef ATTN_DEBUG
#define ATTN_ASSERT(cond) ((cond) ? (void)0 : attn__assert_fail(#cond, __FILE__, __LINE__))
#else
#define ATTN_ASSERT(cond) ((void)0)
#endif
#if defined(__GNUC__)
__attribute__((noreturn))
#endif
void attn__assert_fail(const char *expr, const char *file, int line);

/* One work item's attention over the key range [k0, k1): updates the
 * online-softmax state (acc, m, l) of every row.  Visibility per row
 * (docs/design.md §2, mask.h), with p = pos0 + t: 0 <= k < seq_len, causal rows k <= p,
 * and k >= p - window_left, k <= p + window_right for the bounds that are
 * not -1.
 * Keys of [k0, k1) not visible to a row are masked (contribute nothing);
 * a row that sees none of them keeps its state unchanged (m = -inf, l = 0,
 * acc = 0 if it was fresh): never NaN.
 * Logit: s = 2^qk_exp * <q_row, K[k]> (q is pre-scaled; qk_exp is 0 except
 * for huge scales or huge q, and scales above 1 on f32 and bf16 caches:
 * see executor.c); if softcap > 0 s = c*tanh(s/c); if
 * alibi, s += alibi[j] * (k - p).
 * State units: the running max m is kept in units of 2^E logits, E =
 * attn__m_exp(qk_exp, softcap) (below), and the weights are
 * e^((s' - m) 2^E) for s' = s / 2^E: without a soft cap to bound them,
 * 2^qk_exp * dot overflows fp32 for huge scales, while s' (the dot product
 * plus the ALiBi term / 2^E) does not.  E = 0 for every ordinary input,
 * where this is the plain online softmax.
 * The caller initialises fresh state (acc 0, m -inf, l 0) before the first
 * call of an item; several calls over consecutive key ranges compose.
 * Preconditions (guaranteed by the plan, which validated the block table at
 * build time; kernels assert what they can): 0 <= k0 < k1 <= seq_len, every
 * block id of blocks[k0/bs .. (k1-1)/bs] inside the cache, rows <= the rows
 * the scratch areas were sized for, kv_tile the table's own (a plan sizes
 * the work areas for the table it runs) and every work area
 * ATTN_ALIGN-aligned.  A tile never hands an item it cannot take to
 * another table: which tile takes an item is its table's routers' choice. */
typedef struct attn_tile_args {
    int32_t n_tok, g, head_dim;
    float *q;                /* [rows][head_dim] fp32, already multiplied by scale; a tile
                              * may reuse it as work space once it has read it */
    int32_t pos0;            /* position of the item's token 0 */
    int32_t seq_len;         /* keys of the request */
    int32_t causal;
    int32_t window_left;     /* -1 = unbounded (mask.h) */
    int32_t window_right;    /* -1 = unbounded */
    float softcap;           /* 0 = off */
    int32_t qk_exp;          /* logits are 2^qk_exp x the dot products; 0..254, 0 normally */
    const float *alibi;      /* [g] slopes of this KV head's query heads, or NULL */
    const void *k_cache, *v_cache; /* cache base (kv dtype) */
    size_t block_stride;     /* elements from block b to b+1: Hkv * bs * D */
    size_t head_offset;      /* elements from a block's start to this KV head: kv_head * bs * D */
    const int32_t *blocks;   /* the request's block-table row */
    int32_t block_size;
    int32_t k0, k1;
    int32_t kv_tile;         /* keys per tile: scores/kv work areas hold this many */
    float *acc;              /* [rows][head_dim], in/out */
    float *m;                /* [rows] running max, in/out */
    float *l;                /* [rows] running sum, in/out */
    float *scores;           /* work: [rows][kv_tile] */
    float *kv;               /* work: [2][kv_tile][head_dim] */
    /* Prefetch hint: the item this thread runs next (its block-table row,
     * head offset and key range, all validated by the plan like this
     * item's), or next_blocks = NULL.  A kernel may only prefetch from it:
     * the first lines of the next item are then on their way while this
     * one finishes, instead of every item starting on a DRAM miss. */
    const int32_t *next_blocks;
    size_t next_head_offset;
    int32_t next_k0, next_k1;
    int32_t tune;            /* ATTN__TUNE_* (below): the plan's tuning profile */
    int32_t round_ok;        /* 1: the tile may round q and the weights to bf16 where the
                              * table decided that pays (attn_precision DEFAULT); 0:
                              * fp32 products and sums only (EXACT) */
} attn_tile_args;

typedef void (*attn_tile_fn)(const attn_tile_args *a);

/* Several items at once: the same as tile(&a[h]) for h = 0 .. n-1, in any
 * interleaving of their work.  The executor passes only single-token,
 * unsplit items of one request that differ in nothing but their KV head
 * (consecutive heads, ascending) and their own q, acc, m, l and alibi
 * (disjoint for every h).  Why: in the paged layout the pieces of one
 * block's KV heads are adjacent, so walking the heads chunk by chunk reads
 * long contiguous runs where one head at a time strides over the others'
 * pieces (docs/perf-notes.md, "Decode runs").  A table
 * without it leaves the entry NULL, and the plan then keeps its items
 * apart (plan.c, decode_run). */
typedef void (*attn_tile_heads_fn)(const attn_tile_args *a, int32_t n);

/* Load the item's query rows into fp32 and multiply by scale.
 * src points at token 0, head 0 of the group; token t's g*head_dim
 * contiguous elements start at src + t * token_stride (elements).
 * Returns the largest |element| written as its fp32 bit pattern, NaNs
 * counted as 0: the executor's normalisation of huge q (executor.c,
 * normalise_q) would otherwise read every row again. */
typedef uint32_t (*attn_load_q_fn)(const void *src, size_t token_stride, int32_t n_tok,
                               int32_t g, int32_t head_dim, float scale, float *dst);

/* Normalise and store: out_row = v_scale * acc * e^(m - M) / (l * e^(m - M)
 * + [sink] e^(sink - M)), M = max(m, sink), with m in units of 2^m_exp
 * logits (see the tile contract; attn__store_factor computes the factor).
 * v_scale: the fp8 cache's V scale (1 for other caches): V enters P.V as
 * its decoded codes, and out is linear in V.  A row with nothing visible
 * and no sink stores zeros.  sinks: [g] logits of this group's heads, or
 * NULL.  dst addressing as for load_q. */
typedef void (*attn_store_fn)(const float *acc, const float *m, const float *l,
                              int32_t n_tok, int32_t g, int32_t head_dim,
                              const float *sinks, int32_t m_exp, float v_scale, void *dst,
                              size_t token_stride);

/* Merge `pieces` split partials by log-sum-exp into (acc, m, l):
 *   M = max_i m_i; acc = sum_i e^(m_i - M) acc_i; l = sum_i e^(m_i - M) l_i,
 * the differences m_i - M scaled by 2^m_exp (the pieces' state units).
 * partial: [pieces][rows][D], pm/pl: [pieces][rows].  Pieces with
 * m_i = -inf contribute nothing; if every m_i = -inf the result is the
 * neutral state (acc 0, m -inf, l 0).  Sinks are applied by the store. */
/* (The output may alias piece 0 of the partials.) */
typedef void (*attn_merge_fn)(const float *partial, const float *pm, const float *pl,
                              int32_t pieces, int32_t rows, int32_t head_dim, int32_t m_exp,
                              float *acc, float *m, float *l);

/* The units of the softmax state: a tile's m (and the store's and merge's)
 * is in 2^E logits, E = qk_exp when no soft cap bounds the logits, else 0
 * (a soft cap's logits are finite: c tanh(2^qk_exp dot / c)). */
static inline int32_t attn__m_exp(int32_t qk_exp, float softcap) {
    return softcap > 0.0f ? 0 : qk_exp;
}

/* The store's per-row factor v_scale alpha / L (see attn_store_fn), the
 * one spelling every ISA's store uses: m, l the row's state in 2^m_exp
 * units, sink its logit (has_sink 0: none).  *zero: the row stores zeros
 * (nothing visible and no sink, or an all-zero sum).  For m_exp = 0 this
 * is exactly M = max(m, sink), alpha = e^(m - M), L = l alpha + e^(sink -
 * M); v_scale 1 leaves alpha / L as it is. */
static inline float attn__store_factor(float m, float l, int has_sink, float sink,
                                       int32_t m_exp, float v_scale, int *zero) {
    if (m_exp && has_sink) {
        /* The sink in 2^m_exp units leaves fp32's range when the state's
         * logits are far below 2^m_exp (a huge scale over a tiny K:
         * m_exp near 250 while m is ordinary): in fp64 it stays exact,
         * and so do the differences scaled back
         * (corpus/cases/huge-scale-sinks-tiny-k.case).  The same
         * formula; the fp32 one below is kept for the rows without the
         * sink, bit for bit. */
        const double sd = ldexp((double)sink, -m_exp), md = (double)m;
        const double Md = md > sd ? md : sd;
        const double ad = (m == -INFINITY) ? 0.0 : exp(ldexp(md - Md, m_exp));
        const double Ld = (double)l * ad + exp(ldexp(sd - Md, m_exp));
        *zero = (Ld == 0.0);
        return *zero ? 0.0f : (float)(ad / Ld * (double)v_scale);
    }
    const float s = has_sink ? (m_exp ? ldexpf(sink, -m_exp) : sink) : -INFINITY;
    const float M = m > s ? m : s;
    /* m = -inf means nothing was visible: acc is 0 and l is 0, and
     * exp(m - M) must not be evaluated as exp(-inf - -inf). */
    const float alpha = (m == -INFINITY) ? 0.0f : expf(m_exp ? ldexpf(m - M, m_exp) : m - M);
    const float L = l * alpha + (has_sink ? expf(m_exp ? ldexpf(s - M, m_exp) : s - M) : 0.0f);
    *zero = (M == -INFINITY || L == 0.0f);
    return *zero ? 0.0f : alpha / L * v_scale;
}

typedef struct attn_kernels {
    const char *name;          /* "ref", "avx2", "avx512", "avx512bf16", "avx512@emu", ... */
    const char *emulates;      /* NULL: native.  Else the table whose kernels this one runs
                                  on an emulation of their ISA (mk/isa.mk, EMU_TABLES):
                                  the same results bit for bit, never chosen by default */
    int32_t rows_target;       /* preferred rows (tokens * g) per work item */
    int32_t rows_multiple;     /* rows per item its fastest multi-row tile needs a
                                  multiple of (0 or 1: any count) */
    int32_t kv_tile;           /* keys per tile */
    attn_tile_fn tile[ATTN_DTYPE_COUNT];      /* indexed by KV dtype */
    attn_tile_heads_fn tile_heads[ATTN_DTYPE_COUNT]; /* by KV dtype; NULL: none */
    attn_load_q_fn load_q[ATTN_DTYPE_COUNT];  /* indexed by query dtype */
    attn_store_fn store[ATTN_DTYPE_COUNT];    /* indexed by output dtype */
    attn_merge_fn merge;
    /* 1 when this table, under tuning profile `tune` and with round_ok,
     * rounds q and the softmax weights to bf16 for some items of a cache
     * of dtype kv; NULL: never */
    int (*bf16_rounding)(int32_t tune, attn_dtype kv);
} attn_kernels;

/* A test hook (tests/test_convert.c), never called by the engine: one
 * element conversion a table's kernels perform, run over n contiguous
 * elements with the very inline code the kernels use (their full vectors
 * and their masked tails).  Each table's kernel file lists its paths
 * (attn__cvt_<isa>, kernels_decl.h); the test holds every path, bit for
 * bit, to a model of round to nearest even written in the test. */
typedef struct attn__cvt_path {
    const char *name;        /* "load16 fp8e4m3", "store8 bf16", ... */
    attn_dtype narrow;       /* the element type converted from or to */
    int to_f32;              /* 1: narrow -> fp32; 0: fp32 -> narrow */
    int flags;               /* ATTN__CVT_* */
    void (*run)(const void *src, void *dst, size_t n);
} attn__cvt_path;
enum {
    ATTN__CVT_DAZ = 1,       /* fp32 subnormal inputs read as zero (VCVTNE2PS2BF16) */
    ATTN__CVT_FINITE = 2,    /* finite inputs only: the kernels never pass others */
    ATTN__CVT_AS_F32 = 4     /* the rounded value comes back widened to fp32 */
};

/* The tuning profile (dispatch.c, attn__select_tune): the SIMD tables'
 * choices that depend on the CPU family more than on its feature flags,
 * resolved once per builder (attn_group_desc.tune, else $ATTN_TUNE, else
 * the CPU vendor) and handed to every tile in attn_tile_args.tune.  AMD:
 * the decode tile's NTA prefetches and short chunks (avx512_decode.c),
 * bf16 prefill on VDPBF16PS (avx512bf16_lanes.c) and fp8 decode on it
 * (avx512bf16_dec8.c), both of which round q and the weights to bf16.  INTEL (and every other vendor): prefetches to
 * L2, 64-key bf16 decode chunks, bf16 prefill on fp32 FMAs (exact). */
enum { ATTN__TUNE_INTEL = 1, ATTN__TUNE_AMD = 2 };

/* For the SIMD twins' register-blocked micro-kernels.  INLINE: their
 * shape parameters (rows, keys, vectors per block) must be constants where
 * they are used.  UNROLL: the loops over those parameters must be fully
 * unrolled, or the compiler keeps the accumulator arrays in memory (a
 * load and a store around every FMA).  GCC and clang spell that
 * differently, and clang accepts GCC's spelling but leaves these loops
 * rolled, so each compiler gets its own (docs/perf-notes.md, "Compilers").
 * Except in clang's AddressSanitizer builds (the fuzz targets and the
 * mutant campaign's builds): there the loops stay rolled, and must be
 * asked to, because clang left to its own heuristics unrolls them anyway
 * and instrumenting the unrolled blocks multiplies each kernel file's
 * compile time (docs/perf-notes.md, "Compile-time switches removed").
 * Those builds check memory accesses, which unrolling does not change. */
#define INLINE static inline __attribute__((always_inline))
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNROLL _Pragma("nounroll")
#else
#define UNROLL _Pragma("clang loop unroll(full)")
#endif
#elif defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16")
#endif

#endif /* ATTN_KERNELS_H */
