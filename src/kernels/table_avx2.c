/*
 * table_avx2.c — the "avx2" kernel table (the kernels of avx2.c) and its
 * CPU check.  Portable C: compiled without the table's -m flags, so the
 * check runs on any CPU; dispatch.c uses the table only where it passes.
 */
#include "kernels_decl.h"
#include "cpu.h"

/* rows_target 32: enough rows to amortise the K transpose of a chunk.
 * Not tuned: the tuning was done on machines that run the avx512 tables
 * (which set their own value, 128: table_avx512.c); the avx2 table is
 * held to correctness. */
#define AVX2_ROWS_TARGET 32

/* Every feature the avx2 -m flags (mk/isa.mk) let the compiler use. */
int attn__cpu_avx2(void) {
#ifdef ATTN__X86
    return attn__cpu_x86_avx2();
#else
    return 0;
#endif
}

/* The portable table with avx2.c's overrides, as a constant so that
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
