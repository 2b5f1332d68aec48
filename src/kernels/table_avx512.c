/*
 * table_avx512.c — the "avx512" kernel table and its routers: which of
 * the table's tiles takes an item (decode: single-token items; lanes:
 * fp32 items of many rows; flash: the rest), the tile_heads entries that
 * hand a decode run to the decode tile, and the table's CPU check.
 * Portable C: compiled without the avx512 -m flags, so the check runs on
 * any CPU; the tiles it calls are in avx512.c, avx512_decode.c and
 * avx512_lanes.c.  The avx512bf16 table reuses these routers for its f32
 * and f16 entries.
 */
#include "kernels_decl.h"
#include "cpu.h"

/* rows_target 128: the rows of one prefill item share every K/V chunk,
 * so the item's rows set the flops per K/V byte streamed from L3/DRAM
 * (4 flops per row per key-dim, against 2 x D x es bytes per key), and
 * the per-core rate rose with them up to 128 rows (docs/perf-notes.md,
 * "Figures moved out of source comments").  At 128 the working set (Q and
 * ACC 64 KiB each at D = 128, scores 32 KiB, KV tile 64 KiB) still sits
 * in L2, and an L = 2048 prefill with g = 4 still yields 512 items for
 * the threads.
 * Decode items have rows = g regardless.  (The avx512bf16 table shares it:
 * kernels_decl.h.) */

/* Every feature the avx512 -m flags (mk/isa.mk) let the compiler use;
 * emulated, the avx2 flags the emulation is compiled with. */
int attn__cpu_avx512(void) {
#if defined(ATTN__X86) && defined(ATTN_EMU)
    return attn__cpu_x86_avx2();
#elif defined(ATTN__X86)
    return attn__cpu_x86_avx512();
#else
    return 0;
#endif
}

void attn_tile_f32__avx512(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_f32__avx512(a, 1);
        return;
    }
    if (attn_lanes_fits__avx512(a)) {
        attn_lanes_f32__avx512(a);
        return;
    }
    attn_flash_f32__avx512(a);
}
void attn_tile_bf16__avx512(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_bf16__avx512(a, 1);
        return;
    }
#ifndef ATTN_INJECT_bf16_lanes_unchecked
    if (attn_lanes_widen_fits__avx512(a)) {
#else
    /* INJECTED BUG (bf16_lanes_unchecked): every many-row bf16 item sent
     * to the widening lanes tile, whether its rows fit the lanes (a
     * multiple of 16, 32 .. 128) or not. */
    if (1) {
#endif
#ifndef ATTN_INJECT_bf16_lanes_as_f16
        attn_lanes_widen__avx512(a, ATTN_DTYPE_BF16);
#else
        /* INJECTED BUG (bf16_lanes_as_f16): the route names the wrong
         * cache dtype: bf16 K and V widened as f16. */
        attn_lanes_widen__avx512(a, ATTN_DTYPE_F16);
#endif
        return;
    }
    attn_flash_bf16__avx512(a);
}
void attn_tile_f16__avx512(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_f16__avx512(a, 1);
        return;
    }
    if (attn_lanes_widen_fits__avx512(a)) {
        attn_lanes_widen__avx512(a, ATTN_DTYPE_F16);
        return;
    }
    attn_flash_f16__avx512(a);
}
void attn_tile_fp8e4m3__avx512(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_fp8e4m3__avx512(a, 1);
        return;
    }
    if (attn_lanes_widen_fits__avx512(a)) {
        attn_lanes_widen__avx512(a, ATTN_DTYPE_FP8_E4M3);
        return;
    }
    attn_flash_fp8e4m3__avx512(a);
}
void attn_tile_fp8e5m2__avx512(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_fp8e5m2__avx512(a, 1);
        return;
    }
    if (attn_lanes_widen_fits__avx512(a)) {
        attn_lanes_widen__avx512(a, ATTN_DTYPE_FP8_E5M2);
        return;
    }
    attn_flash_fp8e5m2__avx512(a);
}

/* Several heads' items at once (kernels.h, attn_tile_heads_fn): the decode
 * tile walks them together when it takes every one of them, else they run
 * one by one through `one`, the table's tile for their KV dtype. */
static void heads(const attn_tile_args *a, int32_t n,
                  void (*decode)(const attn_tile_args *, int32_t), attn_tile_fn one) {
    int fits = 1;
    for (int32_t h = 0; h < n; h++) fits &= attn_decode_fits__avx512(&a[h]);
    if (fits) {
        decode(a, n);
        return;
    }
    for (int32_t h = 0; h < n; h++) one(&a[h]);
}
void attn_tile_heads_f32__avx512(const attn_tile_args *a, int32_t n) {
    heads(a, n, attn_decode_f32__avx512, attn_tile_f32__avx512);
}
void attn_tile_heads_bf16__avx512(const attn_tile_args *a, int32_t n) {
    heads(a, n, attn_decode_bf16__avx512, attn_tile_bf16__avx512);
}
void attn_tile_heads_f16__avx512(const attn_tile_args *a, int32_t n) {
    heads(a, n, attn_decode_f16__avx512, attn_tile_f16__avx512);
}
void attn_tile_heads_fp8e4m3__avx512(const attn_tile_args *a, int32_t n) {
    heads(a, n, attn_decode_fp8e4m3__avx512, attn_tile_fp8e4m3__avx512);
}
void attn_tile_heads_fp8e5m2__avx512(const attn_tile_args *a, int32_t n) {
    heads(a, n, attn_decode_fp8e5m2__avx512, attn_tile_fp8e5m2__avx512);
}

/* The portable table with the avx512 overrides.  Written as a constant
 * (not copied from *attn__kernels_ref() at first use) so that concurrent
 * first calls from several builders cannot race; the only entry taken from
 * the portable table is merge, and tests/test_isa.c checks that every ISA
 * table still points at the portable merge. */
static const attn_kernels avx512_table = {
    .name = ATTN__TABLE_NAME("avx512"),
    .emulates = ATTN__TABLE_EMULATES("avx512"),
    .rows_target = ATTN__AVX512_ROWS_TARGET,
    .rows_multiple = ATTN__AVX512_ROWS_MULTIPLE,
    .kv_tile = ATTN__AVX512_KV_TILE,
    .tile = {
        [ATTN_DTYPE_F32] = attn_tile_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_bf16__avx512,
        [ATTN_DTYPE_F16] = attn_tile_f16__avx512,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_fp8e4m3__avx512,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_fp8e5m2__avx512,
    },
    .tile_heads = {
        [ATTN_DTYPE_F32] = attn_tile_heads_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_heads_bf16__avx512,
        [ATTN_DTYPE_F16] = attn_tile_heads_f16__avx512,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_heads_fp8e4m3__avx512,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_heads_fp8e5m2__avx512,
    },
    .load_q = {
        [ATTN_DTYPE_F32] = attn_load_q_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_load_q_bf16__avx512,
        [ATTN_DTYPE_F16] = attn_load_q_f16__avx512,
    },
    .store = {
        [ATTN_DTYPE_F32] = attn_store_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_store_bf16__avx512,
        [ATTN_DTYPE_F16] = attn_store_f16__avx512,
    },
    .merge = attn_merge_f32__ref,
};

const attn_kernels *attn__kernels_avx512(void) { return &avx512_table; }
