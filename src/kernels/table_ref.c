/*
 * table_ref.c — the "ref" kernel table: the portable kernels of ref.c and
 * the tile sizes the plan sizes the work areas from.  Always compiled; the
 * table every SIMD table starts from (each overrides what it has and keeps
 * the portable merge).
 */
#include "kernels_decl.h"

/* Tile sizes of the ref table (the plan reads them from the table and sizes
 * the SCORES and KV regions from kv_tile, so they are the kernels' choice):
 *
 * - kv_tile 64: one chunk converts 2 x 64 x D fp32 K/V rows; at the common
 *   D = 128 that is 64 KiB, which stays in L2 on every x86 core while the
 *   rows of the item stream over it.  64 is a multiple of the usual block
 *   sizes (16, 32, 64), so a chunk spans whole blocks, and it amortises the
 *   per-chunk rescale of the accumulators (one exp per row per 64 keys).
 *   It is also the natural width for the AVX-512 twins (4 x 16 lanes).
 * - rows_target 32: tokens x g per item.  32 rows x D = 128 of fp32 Q plus
 *   ACC is 32 KiB and the [32][64] score tile 8 KiB, so an item's whole
 *   working set besides K/V sits in L1/L2; with GQA g = 8 that is 4 prefill
 *   tokens per item, enough K/V reuse without starving threads of items.
 */
#define REF_ROWS_TARGET 32
#define REF_KV_TILE 64

static const attn_kernels ref_table = {
    .name = "ref",
    .rows_target = REF_ROWS_TARGET,
    .kv_tile = REF_KV_TILE,
    .tile = {
        [ATTN_DTYPE_F32] = attn_tile_f32__ref,
        [ATTN_DTYPE_BF16] = attn_tile_bf16__ref,
        [ATTN_DTYPE_F16] = attn_tile_f16__ref,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_fp8e4m3__ref,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_fp8e5m2__ref,
    },
    .load_q = {
        [ATTN_DTYPE_F32] = attn_load_q_f32__ref,
        [ATTN_DTYPE_BF16] = attn_load_q_bf16__ref,
        [ATTN_DTYPE_F16] = attn_load_q_f16__ref,
    },
    .store = {
        [ATTN_DTYPE_F32] = attn_store_f32__ref,
        [ATTN_DTYPE_BF16] = attn_store_bf16__ref,
        [ATTN_DTYPE_F16] = attn_store_f16__ref,
    },
    .merge = attn_merge_f32__ref,
};

const attn_kernels *attn__kernels_ref(void) { return &ref_table; }
