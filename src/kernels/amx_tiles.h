/*
 * amx_tiles.h — the AMX tile operations the amx table's kernels (amx.c)
 * use, in one geometry: every tile register 16 rows of 64 bytes.  Three
 * forms behind the same macros:
 *   - native: the instructions (amx_FLAGS, mk/isa.mk);
 *   - native under AddressSanitizer: each tile load and store first checks
 *     its 16 rows against ASan's shadow and reports a bad one as ASan
 *     reports any access (a TILELOADD/TILESTORED is not instrumented by the
 *     compiler: without this a tile reading past the work area would be
 *     invisible to the fuzzers, which is what they are for);
 *   - simulated (ATTN_EMU, the amx@sim table): eight tile registers of the
 *     calling thread in memory, TDPBF16PS in C by the SDM's rules (bf16
 *     inputs and the accumulator with subnormals read as zero, sums
 *     rounded to nearest even, subnormal results flushed to zero), each
 *     pair's two products (exact in fp32, or flushed where subnormal: as
 *     the silicon does) added first and that sum to the accumulator, pair
 *     after pair (tests/engine/test_emulation.c holds both to this), so
 *     that the tile's logic runs, and is judged against the reference, on
 *     CPUs without AMX.  Not bit for bit: the Xeon the table was written
 *     on agrees with that order for one pair per element and not for more
 *     (1 ulp apart in 6 % of the elements with 2 pairs, 60 % with 16;
 *     seven other orders and single roundings fit no better:
 *     docs/perf-notes.md, "bf16 prefill on AMX tiles"), hence "@sim", not
 *     "@emu", whose tables the harness holds to their twin's bytes.
 * Include only from files compiled with the amx -m flags (or emulated).
 */
#ifndef ATTN_KERNELS_AMX_TILES_H
#define ATTN_KERNELS_AMX_TILES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AMX_ROWS 16
#define AMX_COLSB 64

/* The tile configuration (palette 1) every tile of the table uses. */
typedef struct amx_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_config;

static inline void amx_config_init(amx_config *c) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 8; t++) c->colsb[t] = AMX_COLSB, c->rows[t] = AMX_ROWS;
}

#ifdef ATTN_EMU
/* ------------------------------------------------------------ emulated */
typedef struct amx_regs {
    unsigned char reg[8][AMX_ROWS][AMX_COLSB];
} amx_regs;
static _Thread_local amx_regs amx__r;

static inline float amx__bf16(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u; /* subnormal inputs read as zero */
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline float amx__ftz(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0) u &= 0x80000000u;
    memcpy(&x, &u, 4);
    return x;
}
static inline void amx__load(int t, const void *p, size_t stride) {
    for (int r = 0; r < AMX_ROWS; r++) memcpy(amx__r.reg[t][r], (const char *)p + r * stride, AMX_COLSB);
}
static inline void amx__store(int t, void *p, size_t stride) {
    for (int r = 0; r < AMX_ROWS; r++) memcpy((char *)p + r * stride, amx__r.reg[t][r], AMX_COLSB);
}
static inline void amx__dp(int c, int a, int b) {
    for (int m = 0; m < AMX_ROWS; m++) {
        float acc[16];
        memcpy(acc, amx__r.reg[c][m], 64);
        for (int k = 0; k < AMX_COLSB / 4; k++) {
            uint16_t x[2], y[32];
            memcpy(x, &amx__r.reg[a][m][4 * k], 4);
            memcpy(y, amx__r.reg[b][k], 64);
            for (int n = 0; n < 16; n++) {
                /* volatile: no fused multiply-add (the products are exact in
                 * fp32, the sums are rounded one by one) */
                volatile float p0 = amx__ftz(amx__bf16(x[0]) * amx__bf16(y[2 * n]));
                volatile float p1 = amx__ftz(amx__bf16(x[1]) * amx__bf16(y[2 * n + 1]));
                volatile float s = amx__ftz(p0 + p1);
                acc[n] = amx__ftz(amx__ftz(acc[n]) + s);
            }
        }
        memcpy(amx__r.reg[c][m], acc, 64);
    }
}
#define AMX_CONFIG(cfg) ((void)(cfg))
#define AMX_RELEASE() ((void)0)
#define AMX_ZERO(t) memset(amx__r.reg[(t)], 0, sizeof amx__r.reg[0])
#define AMX_LOAD(t, p, stride) amx__load((t), (p), (stride))
#define AMX_STORE(t, p, stride) amx__store((t), (p), (stride))
#define AMX_DP(c, a, b) amx__dp((c), (a), (b))

#else
/* -------------------------------------------------------------- native */
#include <immintrin.h>

#if defined(__SANITIZE_ADDRESS__)
#define AMX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AMX_ASAN 1
#endif
#endif

#ifdef AMX_ASAN
#include <sanitizer/asan_interface.h>
/* Report the first poisoned byte of a tile's 16 rows as ASan would a
 * 64-byte access there. */
__attribute__((noinline)) static void amx__check(const void *p, size_t stride, int is_write) {
    for (int r = 0; r < AMX_ROWS; r++) {
        void *row = (void *)((const char *)p + r * stride);
        void *bad = __asan_region_is_poisoned(row, AMX_COLSB);
        if (bad)
            __asan_report_error(__builtin_return_address(0), __builtin_frame_address(0),
                                __builtin_frame_address(0), bad, is_write, AMX_COLSB);
    }
}
#define AMX_LOAD(t, p, stride) (amx__check((p), (stride), 0), _tile_loadd(t, (p), (stride)))
#define AMX_STORE(t, p, stride) (amx__check((p), (stride), 1), _tile_stored(t, (p), (stride)))
#else
#define AMX_LOAD(t, p, stride) _tile_loadd(t, (p), (stride))
#define AMX_STORE(t, p, stride) _tile_stored(t, (p), (stride))
#endif
#define AMX_CONFIG(cfg) _tile_loadconfig(cfg)
#define AMX_RELEASE() _tile_release()
#define AMX_ZERO(t) _tile_zero(t)
#define AMX_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#endif

#endif /* ATTN_KERNELS_AMX_TILES_H */
