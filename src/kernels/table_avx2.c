/*
 * table_avx2.c — the "avx2" kernel table, its routers (which of the
 * table's tiles takes an item: decode for single-token items the decode
 * tile fits, flash for the rest) and the tile_heads entries that hand a
 * decode run to the decode tile, and its CPU check.  Portable C: compiled
 * without the table's -m flags, so the check runs on any CPU; dispatch.c
 * uses the table only where it passes.  The tiles are in avx2.c (flash)
 * and avx2_decode.c.
 */
#include "kernels_decl.h"
#include "cpu.h"

/* rows_target 192: 32 of the flash tile's 6-row blocks.  Each chunk's K
 * transpose (and, for 16-bit and fp8 caches, its V widening) is paid once
 * per item, so the more rows share it the less it weighs; past 192 the
 * gain is within the machine's noise while fewer, larger items balance
 * worse on short prompts (docs/perf-notes.md, "Larger prefill items"). */
#define AVX2_ROWS_TARGET 192

/* Every feature the avx2 -m flags (mk/isa.mk) let the compiler use. */
int attn__cpu_avx2(void) {
#ifdef ATTN__X86
    return attn__cpu_x86_avx2();
#else
    return 0;
#endif
}

/* Per KV dtype: the router (one item) and the tile_heads entry (a decode
 * run: the decode tile walks the heads together when it takes every one of
 * them, else they run one by one through the router). */
#define AVX2_ROUTES(dt)                                                             \
    void attn_tile_##dt##__avx2(const attn_tile_args *a) {                         \
        if (attn_decode_fits__avx2(a))                                              \
            attn_decode_##dt##__avx2(a, 1);                                         \
        else                                                                        \
            attn_flash_##dt##__avx2(a);                                             \
    }                                                                               \
    void attn_tile_heads_##dt##__avx2(const attn_tile_args *a, int32_t n) {         \
        int fits = 1;                                                               \
        for (int32_t h = 0; h < n; h++) fits &= attn_decode_fits__avx2(&a[h]);      \
        if (fits) {                                                                 \
            attn_decode_##dt##__avx2(a, n);                                         \
            return;                                                                 \
        }                                                                           \
        for (int32_t h = 0; h < n; h++) attn_tile_##dt##__avx2(&a[h]);              \
    }
AVX2_ROUTES(f32)
AVX2_ROUTES(bf16)
AVX2_ROUTES(f16)
AVX2_ROUTES(fp8e4m3)
AVX2_ROUTES(fp8e5m2)

/* The portable table with the avx2 overrides, as a constant so that
 * concurrent first calls cannot race; merge is the portable one. */
static const attn_kernels avx2_table = {
    .name = "avx2",
    .rows_target = AVX2_ROWS_TARGET,
    .kv_tile = ATTN__AVX2_KV_TILE,
    .tile = {
        [ATTN_DTYPE_F32] = attn_tile_f32__avx2,
        [ATTN_DTYPE_BF16] = attn_tile_bf16__avx2,
        [ATTN_DTYPE_F16] = attn_tile_f16__avx2,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_fp8e4m3__avx2,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_fp8e5m2__avx2,
    },
    .tile_heads = {
        [ATTN_DTYPE_F32] = attn_tile_heads_f32__avx2,
        [ATTN_DTYPE_BF16] = attn_tile_heads_bf16__avx2,
        [ATTN_DTYPE_F16] = attn_tile_heads_f16__avx2,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_heads_fp8e4m3__avx2,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_heads_fp8e5m2__avx2,
    },
    .load_q = {
        [ATTN_DTYPE_F32] = attn_load_q_f32__avx2,
        [ATTN_DTYPE_BF16] = attn_load_q_bf16__avx2,
        [ATTN_DTYPE_F16] = attn_load_q_f16__avx2,
    },
    .store = {
        [ATTN_DTYPE_F32] = attn_store_f32__avx2,
        [ATTN_DTYPE_BF16] = attn_store_bf16__avx2,
        [ATTN_DTYPE_F16] = attn_store_f16__avx2,
    },
    .merge = attn_merge_f32__ref,
};

const attn_kernels *attn__kernels_avx2(void) { return &avx2_table; }
