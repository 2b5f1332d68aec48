/*
 * table_amx.c — the "amx" kernel table: the avx512bf16 table with bf16
 * prefill on AMX tiles (amx.c), the CPU and OS check (which also asks
 * Linux for the tile state), and where the table rounds.  Portable C:
 * compiled without the -m flags, so the check runs on any CPU.  Needs the
 * avx512bf16 table (and through it the avx512 one).
 */
#include "kernels_decl.h"
#include "cpu.h"

#if defined(ATTN__X86) && !defined(ATTN_EMU) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#define AMX_ARCH_REQ_XCOMP_PERM 0x1023 /* arch_prctl: ask for an XSAVE feature */
#define AMX_XFEATURE_XTILEDATA 18
#endif

/* AMX-TILE and AMX-BF16 (CPUID leaf 7 EDX bits 24 and 22), the tile state
 * enabled by the OS (XCR0 bits 17 and 18), and on Linux the process's
 * permission to use it, granted once by arch_prctl (tile instructions
 * fault without it); plus everything the avx512bf16 table's check asks,
 * whose flags amx_FLAGS holds.  Elsewhere than Linux: not used. */
int attn__cpu_amx(void) {
#if defined(ATTN__X86) && defined(ATTN_EMU)
    return attn__cpu_x86_avx2(); /* emulated: the avx2 flags it is compiled with */
#elif defined(ATTN__X86) && defined(__linux__)
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        unsigned a, b, c, d;
        v = attn__cpu_avx512bf16() && __get_cpuid_count(7, 0, &a, &b, &c, &d) &&
            (d & (1u << 24)) && (d & (1u << 22));
        if (v) {
            unsigned lo, hi;
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            v = (lo & (3u << 17)) == (3u << 17) &&
                syscall(SYS_arch_prctl, AMX_ARCH_REQ_XCOMP_PERM, AMX_XFEATURE_XTILEDATA) == 0;
        }
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}

/* bf16 items: many rows (prefill) on the AMX tile where the builder lets
 * the table round q and the weights to bf16 and the tile takes them; the
 * avx512bf16 table's routes otherwise (decode, short items, exact
 * precision).  Why AMX: a TDPBF16PS does 16 x 16 x 32 multiply-adds where
 * an FMA does 16; on the Intel VM the tables were tuned on the bf16
 * prefill rows ran on fp32 FMAs at ~100 GFLOP/s a core while PyTorch's
 * AMX path ran at 236-303 (docs/perf-notes.md). */
void attn_tile_bf16__amx(const attn_tile_args *a) {
    if (a->round_ok && attn_lanes_fits__avx512bf16(a) && !attn_decode_fits__avx512(a)) {
        attn_lanes_bf16__amx(a);
        return;
    }
    attn_tile_bf16__avx512bf16(a);
}

/* Several bf16 heads at once: the decode tile when it takes every one of
 * them, else this table's tile one by one. */
void attn_tile_heads_bf16__amx(const attn_tile_args *a, int32_t n) {
    int fits = 1;
    for (int32_t h = 0; h < n; h++) fits &= attn_decode_fits__avx512(&a[h]);
    if (fits) {
        attn_decode_bf16__avx512(a, n);
        return;
    }
    for (int32_t h = 0; h < n; h++) attn_tile_bf16__amx(&a[h]);
}

/* bf16 caches round on any tuning profile (the AMX tile); the rest as
 * the avx512bf16 table rounds. */
static int amx_rounds(int32_t tune, attn_dtype kv) {
    return kv == ATTN_DTYPE_BF16 || attn__kernels_avx512bf16()->bf16_rounding(tune, kv);
}

/* The avx512bf16 table with the bf16 tile replaced, spelled out as a
 * constant for the reason table_avx512bf16.c gives; tests/test_isa.c
 * checks that every other entry equals the avx512bf16 table's. */
static const attn_kernels amx_table = {
#ifdef ATTN_EMU /* simulated, not emulated bit for bit: amx_tiles.h */
    .name = "amx@sim",
#else
    .name = "amx",
#endif
    .emulates = ATTN__TABLE_EMULATES("amx"),
    .rows_target = ATTN__AVX512_ROWS_TARGET,
    .rows_multiple = ATTN__AVX512_ROWS_MULTIPLE,
    .kv_tile = ATTN__AVX512_KV_TILE,
    .tile = {
        [ATTN_DTYPE_F32] = attn_tile_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_bf16__amx,
        [ATTN_DTYPE_F16] = attn_tile_f16__avx512,
        [ATTN_DTYPE_FP8_E4M3] = attn_tile_fp8e4m3__avx512bf16,
        [ATTN_DTYPE_FP8_E5M2] = attn_tile_fp8e5m2__avx512bf16,
    },
    .tile_heads = {
        [ATTN_DTYPE_F32] = attn_tile_heads_f32__avx512,
        [ATTN_DTYPE_BF16] = attn_tile_heads_bf16__amx,
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
    .bf16_rounding = amx_rounds,
};

const attn_kernels *attn__kernels_amx(void) { return &amx_table; }

/* The conversions the AMX tile's results depend on (kernels.h's test
 * hook): it rounds q and the weights with the avx512bf16 lanes tile's
 * packing (attn__q_pairs__avx512bf16, attn__p_pairs__avx512bf16 after its
 * softmax), so its paths are that table's. */
const attn__cvt_path *attn__cvt_amx(int *count) { return attn__cvt_avx512bf16(count); }
