/*
 * table_avx512bf16.c — the "avx512bf16" kernel table: the avx512 table
 * (its routers for f32 and f16, its load_q and store) with its own bf16
 * routing over the bf16 tiles on VDPBF16PS, the CPU check, and whether the
 * table rounds (attn_kernels.bf16_rounding).  Portable C: compiled without
 * the -m flags, so the check runs on any CPU.  Needs the avx512 table.
 */
#include "kernels_decl.h"
#include "cpu.h"

/* bf16 items with many rows (prefill): on the AMD tuning profile, those
 * that fit take the lanes tile (avx512bf16_lanes.c), both products on
 * VDPBF16PS with q and the weights rounded to bf16: where VDPBF16PS
 * retires at the rate of FMA (Zen 5), each does twice an FMA's work.
 * Elsewhere (the INTEL profile, and items the lanes tile does not take)
 * items with more rows than DP_MAX_ROWS take the avx512 table's tiles on
 * fp32 FMAs, as that table routes them: the widening lanes tile where it
 * fits (rows in the lanes, K and V widened chunk by chunk: 10-14 % faster
 * than the flash tile on the Intel VM's bf16 prefill rows), else the flash
 * tile.  Where VDPBF16PS retires half the flops of an FMA (as on the Intel
 * VM the tables were first tuned on), the pairs tile with Q split in two
 * terms costs twice the FMA path's instructions at half the rate per
 * flop.
 * Single-token items take the avx512 decode tile (avx512_decode.c): it
 * needs no packing at all and widens bf16 K exactly with one AND and one
 * shift per 32 elements.  What remains for the pairs tile (avx512bf16.c)
 * are short multi-token items (a few query tokens of a small GQA group),
 * where packing bf16 pairs needs half the transposes of the fp32 pack.
 * The figures behind each route: docs/perf-notes.md ("Zen 5 VM", and
 * "Figures moved out of source comments"). */
#define DP_MAX_ROWS 8

/* Every feature the avx512bf16 -m flags (mk/isa.mk) let the compiler use
 * (VBMI for the fp8 decode path: every CPU with AVX512_BF16 but Cooper
 * Lake has it; that one takes the avx512 table). */
int attn__cpu_avx512bf16(void) {
#if defined(ATTN__X86) && defined(ATTN_EMU)
    return attn__cpu_x86_avx2(); /* emulated: the avx2 flags it is compiled with */
#elif defined(ATTN__X86)
    return attn__cpu_x86_avx512() && __builtin_cpu_supports("avx512bf16") &&
           __builtin_cpu_supports("avx512vbmi");
#else
    return 0;
#endif
}

void attn_tile_bf16__avx512bf16(const attn_tile_args *a) {
    if (attn_decode_fits__avx512(a)) {
        attn_decode_bf16__avx512(a, 1);
        return;
    }
    if (a->round_ok && a->tune == ATTN__TUNE_AMD && attn_lanes_fits__avx512bf16(a)) {
        attn_lanes_bf16__avx512bf16(a);
        return;
    }
    if (a->n_tok * a->g > DP_MAX_ROWS) { /* fp32 FMAs, as the avx512 table routes it */
        attn_tile_bf16__avx512(a);
        return;
    }
    attn_pairs_bf16__avx512bf16(a);
}

/* Several bf16 heads at once: the decode tile when it takes every one of
 * them (as the avx512 table's), else this table's tile one by one. */
void attn_tile_heads_bf16__avx512bf16(const attn_tile_args *a, int32_t n) {
    int fits = 1;
    for (int32_t h = 0; h < n; h++) fits &= attn_decode_fits__avx512(&a[h]);
    if (fits) {
        attn_decode_bf16__avx512(a, n);
        return;
    }
    for (int32_t h = 0; h < n; h++) attn_tile_bf16__avx512bf16(&a[h]);
}

/* fp8 single-token items: the decode tile's dot-product path
 * (avx512bf16_dec8.c: K and V codes as exact bf16 images, q and the
 * weights rounded to bf16) where the builder allows rounding, on the AMD
 * profile, whose NTA walk that path shares (why: docs/perf-notes.md,
 * "Night of 2026-12-01: fp8 decode on VDPBF16PS"). */
static int dec8(const attn_tile_args *a) {
    return a->round_ok && a->tune == ATTN__TUNE_AMD && attn_decode_fits__avx512(a);
}
#define FP8_ROUTERS(T_)                                                                 \
    void attn_tile_##T_##__avx512bf16(const attn_tile_args *a) {                        \
        if (dec8(a))                                                                    \
            attn_decode_##T_##__avx512bf16(a, 1);                                       \
        else                                                                            \
            attn_tile_##T_##__avx512(a);                                                \
    }                                                                                   \
    void attn_tile_heads_##T_##__avx512bf16(const attn_tile_args *a, int32_t n) {       \
        int fits = 1;                                                                   \
        for (int32_t h = 0; h < n; h++) fits &= dec8(&a[h]);                            \
        if (fits)                                                                       \
            attn_decode_##T_##__avx512bf16(a, n);                                       \
        else                                                                            \
            attn_tile_heads_##T_##__avx512(a, n);                                       \
    }
FP8_ROUTERS(fp8e4m3)
FP8_ROUTERS(fp8e5m2)

/* Whether items of a kv cache take a rounding tile (as the routers above
 * route them, when the builder allows rounding at all:
 * attn_tile_args.round_ok): bf16 prefill, fp8 decode. */
static int rounds_bf16(int32_t tune, attn_dtype kv) {
    return tune == ATTN__TUNE_AMD && (kv == ATTN_DTYPE_BF16 || kv == ATTN_DTYPE_FP8_E4M3 ||
                                      kv == ATTN_DTYPE_FP8_E5M2);
}

/* The avx512 table with the bf16 tile replaced.  Spelled out as a constant
 * (a first-use copy of *attn__kernels_avx512() would race between
 * concurrent builders); tests/test_isa.c checks that every entry other
 * than name, tile[bf16] and tile_heads[bf16] equals the avx512 table's. */
static const attn_kernels avx512bf16_table = {
    .name = ATTN__TABLE_NAME("avx512bf16"),
    .emulates = ATTN__TABLE_EMULATES("avx512bf16"),
    .rows_target = ATTN__AVX512_ROWS_TARGET, /* avx512's: same driver, same trade-off */
    .rows_multiple = ATTN__AVX512_ROWS_MULTIPLE,
    .kv_tile = ATTN__AVX512_KV_TILE,
    .tile = {
        [ATTN_DTYPE_F32] = attn_tile_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_bf16__avx512bf16,
        [ATTN_DTYPE_F16] = attn_tile_f16__avx512,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_fp8e4m3__avx512bf16,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_fp8e5m2__avx512bf16,
    },
    .tile_heads = {
        [ATTN_DTYPE_F32] = attn_tile_heads_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_heads_bf16__avx512bf16,
        [ATTN_DTYPE_F16] = attn_tile_heads_f16__avx512,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_heads_fp8e4m3__avx512bf16,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_heads_fp8e5m2__avx512bf16,
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
    .bf16_rounding = rounds_bf16,
};

const attn_kernels *attn__kernels_avx512bf16(void) { return &avx512bf16_table; }
