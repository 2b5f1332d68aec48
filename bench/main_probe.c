/*
 * bench/main_probe.c — `make probe`, a program of its own (it shares no
 * file with the benchmark): micro-probes of the CPU facts the AVX-512
 * kernels were shaped around, so that what docs/perf-notes.md records
 * about them can be re-measured on any machine.  Every figure is a ratio
 * against a loop measured in the same run, or nanoseconds of wall time; no
 * clock frequency is assumed.
 *
 *   probe vec  what 512-bit loads cost next to FMAs: register-only FMA
 *              loops against the same FMAs with loads beside them or as
 *              memory operands, and the fp32 prefill tile's Q.K^T step
 *              (24 FMAs, 4 row-vector loads, 6 key broadcasts) with the
 *              broadcasts separate or folded into the FMAs
 *   probe amx  what an AMX burst shaped like the bf16 decode tile's Q.K of
 *              one 64-key chunk (4 x [4 tile loads + 4 TDPBF16PS], one
 *              tile store) costs after a gap of FMA-only work: the tile
 *              unit's cost depends on how long it sat idle
 *
 * The instruction mixes are inline assembly, so the compiler can neither
 * merge the FMA chains nor fold or drop the loads.  Not part of the
 * engine; nothing here is a test (timings never are).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <immintrin.h>
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e9 * (double)t.tv_sec + (double)t.tv_nsec;
}

static float buf[16384] __attribute__((aligned(4096)));

#define ZCLOB                                                                                  \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",    \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19",        \
        "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",        \
        "xmm29", "xmm30", "xmm31", "memory"
/* 16 independent accumulators (zmm0-15): enough to cover the FMA latency
 * at full rate; the multiplicands stay in zmm30/zmm31 */
#define F(c) "vfmadd231ps %%zmm30, %%zmm31, %%zmm" #c "\n\t"
#define F16 F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)
#define L(o, r) "vmovaps " #o "(%0), %%zmm" #r "\n\t"
#define L4 L(0, 16) L(64, 17) L(128, 18) L(192, 19)
#define L8 L4 L(256, 20) L(320, 21) L(384, 22) L(448, 23)
#define L16 L8 L(512, 16) L(576, 17) L(640, 18) L(704, 19) L(768, 20) L(832, 21) L(896, 22) L(960, 23)
#define FM(o, c) "vfmadd231ps " #o "(%0), %%zmm31, %%zmm" #c "\n\t"

enum { V_FMA, V_L4, V_L8, V_L16, V_LONLY, V_FMEM, V_QK_REG, V_QK_MEM, V_QK_FMA, V_COUNT };

/* The fp32 prefill tile's Q.K^T step: 4 row vectors of Qt (zmm24-27) x 6
 * keys, 24 accumulators.  B(o) broadcasts key o/4; Q(k, c0) are its 4 FMAs
 * into accumulators c0 .. c0+3 with the key in zmm28; QM folds the
 * broadcast into each FMA as a {1to16} memory operand. */
#define QL "vmovaps (%0), %%zmm24\n\t vmovaps 64(%0), %%zmm25\n\t vmovaps 128(%0), %%zmm26\n\t vmovaps 192(%0), %%zmm27\n\t"
#define B(o) "vbroadcastss " #o "(%1), %%zmm28\n\t"
#define Q4(a, b, c, d)                                                                          \
    "vfmadd231ps %%zmm28, %%zmm24, %%zmm" #a "\n\t vfmadd231ps %%zmm28, %%zmm25, %%zmm" #b      \
    "\n\t vfmadd231ps %%zmm28, %%zmm26, %%zmm" #c "\n\t vfmadd231ps %%zmm28, %%zmm27, %%zmm" #d "\n\t"
#define QM4(o, a, b, c, d)                                                                      \
    "vfmadd231ps " #o "(%1)%{1to16%}, %%zmm24, %%zmm" #a "\n\t vfmadd231ps " #o                \
    "(%1)%{1to16%}, %%zmm25, %%zmm" #b "\n\t vfmadd231ps " #o "(%1)%{1to16%}, %%zmm26, %%zmm" #c \
    "\n\t vfmadd231ps " #o "(%1)%{1to16%}, %%zmm27, %%zmm" #d "\n\t"
#define QR4(a, b, c, d)                                                                         \
    "vfmadd231ps %%zmm29, %%zmm24, %%zmm" #a "\n\t vfmadd231ps %%zmm29, %%zmm25, %%zmm" #b      \
    "\n\t vfmadd231ps %%zmm29, %%zmm26, %%zmm" #c "\n\t vfmadd231ps %%zmm29, %%zmm27, %%zmm" #d "\n\t"

/* ns per iteration of mix k over n iterations (loads cycle through 32 KiB
 * of buf, which stays in L1) */
/* The AVX-512 asm below names zmm16-31 in its clobbers, which a compiler
 * accepts only where AVX-512F is enabled: these functions enable it
 * themselves, so the file builds for any x86-64 target, and main() calls
 * them only on a CPU that has it. */
#define TZMM __attribute__((target("avx512f")))

TZMM static double vec_ns(int k, long n) {
    const double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        const float *p = buf + (size_t)(i & 7) * 1024, *kb = buf + 8192 + (size_t)(i & 7) * 8;
        switch (k) {
        case V_FMA: __asm__ volatile(F16 ::"r"(p) : ZCLOB); break;
        case V_L4: __asm__ volatile(L4 F16 ::"r"(p) : ZCLOB); break;
        case V_L8: __asm__ volatile(L8 F16 ::"r"(p) : ZCLOB); break;
        case V_L16: __asm__ volatile(L16 F16 ::"r"(p) : ZCLOB); break;
        case V_LONLY: __asm__ volatile(L16 ::"r"(p) : ZCLOB); break;
        case V_FMEM:
            __asm__ volatile(FM(0, 0) FM(64, 1) FM(128, 2) FM(192, 3) FM(256, 4) FM(320, 5)
                                 FM(384, 6) FM(448, 7) FM(512, 8) FM(576, 9) FM(640, 10)
                                     FM(704, 11) FM(768, 12) FM(832, 13) FM(896, 14) FM(960, 15)
                             ::"r"(p) : ZCLOB);
            break;
        case V_QK_REG:
            __asm__ volatile(QL B(0) Q4(0, 1, 2, 3) B(4) Q4(4, 5, 6, 7) B(8) Q4(8, 9, 10, 11)
                                 B(12) Q4(12, 13, 14, 15) B(16) Q4(16, 17, 18, 19)
                                     B(20) Q4(20, 21, 22, 23) ::"r"(p),
                             "r"(kb) : ZCLOB);
            break;
        case V_QK_MEM:
            __asm__ volatile(QL QM4(0, 0, 1, 2, 3) QM4(4, 4, 5, 6, 7) QM4(8, 8, 9, 10, 11)
                                 QM4(12, 12, 13, 14, 15) QM4(16, 16, 17, 18, 19)
                                     QM4(20, 20, 21, 22, 23) ::"r"(p),
                             "r"(kb) : ZCLOB);
            break;
        case V_QK_FMA: /* the same 24 FMAs, every operand in registers */
            __asm__ volatile(QR4(0, 1, 2, 3) QR4(4, 5, 6, 7) QR4(8, 9, 10, 11) QR4(12, 13, 14, 15)
                                 QR4(16, 17, 18, 19) QR4(20, 21, 22, 23) ::"r"(p),
                             "r"(kb) : ZCLOB);
            break;
        }
    }
    return (now_ns() - t0) / (double)n;
}

/* best of 5 */
static double vec_best(int k) {
    double b = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t = vec_ns(k, 4000000);
        if (t < b) b = t;
    }
    return b;
}

static int probe_vec(void) {
    double t[V_COUNT];
    for (int k = 0; k < V_COUNT; k++) t[k] = vec_best(k);
    printf("vec: time per step, relative to the same FMAs with every operand in registers\n");
    printf("  %-48s 1.00  (%.2f ns)\n", "16 FMAs", t[V_FMA]);
    printf("  %-48s %.2f\n", "16 FMAs +  4 zmm loads beside them", t[V_L4] / t[V_FMA]);
    printf("  %-48s %.2f\n", "16 FMAs +  8 zmm loads beside them", t[V_L8] / t[V_FMA]);
    printf("  %-48s %.2f\n", "16 FMAs + 16 zmm loads beside them", t[V_L16] / t[V_FMA]);
    printf("  %-48s %.2f\n", "16 FMAs, each with a zmm memory operand", t[V_FMEM] / t[V_FMA]);
    printf("  %-48s %.2f\n", "16 zmm loads alone", t[V_LONLY] / t[V_FMA]);
    printf("  %-48s 1.00  (%.2f ns)\n", "prefill Q.K^T step: 24 FMAs", t[V_QK_FMA]);
    printf("  %-48s %.2f\n", "  + 4 row loads, 6 separate key broadcasts", t[V_QK_REG] / t[V_QK_FMA]);
    printf("  %-48s %.2f\n", "  + 4 row loads, broadcasts as {1to16} operands", t[V_QK_MEM] / t[V_QK_FMA]);
    return 0;
}

/* ---------------------------------------------------------------- AMX */

typedef struct {
    uint8_t palette, start;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_cfg;

/* CPUID AMX-TILE and AMX-BF16, the OS's XSAVE state for tiles, and the
 * process's permission to use them (Linux: arch_prctl). */
static const char *amx_unavailable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)))
        return "the CPU has no AMX-TILE/AMX-BF16";
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return "no OSXSAVE";
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return "the OS does not enable the tile state";
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */))
        return "arch_prctl(ARCH_REQ_XCOMP_PERM) refused";
    return NULL;
}

/* One burst: the decode tile's Q.K of 64 keys x 128 bf16 dims (keys 256
 * bytes apart, in L1) against 4 slices of q in tiles 3-6, result stored. */
__attribute__((target("amx-tile,amx-bf16"))) static void amx_burst(const char *k, float *out) {
    for (int g = 0; g < 4; g++, k += 16 * 256) {
        _tile_zero(0);
        _tile_loadd(1, k, 256);
        _tile_dpbf16ps(0, 1, 3);
        _tile_loadd(2, k + 64, 256);
        _tile_dpbf16ps(0, 2, 4);
        _tile_loadd(1, k + 128, 256);
        _tile_dpbf16ps(0, 1, 5);
        _tile_loadd(2, k + 192, 256);
        _tile_dpbf16ps(0, 2, 6);
        _tile_stored(0, out + 128 * g, 32);
    }
}

/* gap: n steps of 16 register-only FMAs (no memory traffic) */
TZMM static void fma_gap(long n) {
    for (long i = 0; i < n; i++) __asm__ volatile(F16 ::: ZCLOB);
}

__attribute__((target("amx-tile,amx-bf16"))) static int probe_amx(void) {
    const char *why = amx_unavailable();
    if (why) {
        printf("amx: not measured: %s\n", why);
        return 0;
    }
    tile_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.colsb[0] = 32, cfg.rows[0] = 16;            /* C: 16 keys x 8 fp32 */
    cfg.colsb[1] = cfg.colsb[2] = 64;               /* A: 16 keys x 32 bf16 */
    cfg.rows[1] = cfg.rows[2] = 16;
    for (int t = 3; t < 7; t++) cfg.colsb[t] = 32, cfg.rows[t] = 16; /* B: q */
    _tile_loadconfig(&cfg);
    uint16_t *kb = (uint16_t *)buf; /* 64 keys x 128 bf16 = 16 KiB, in L1 */
    for (int i = 0; i < 64 * 128; i++) kb[i] = (uint16_t)(0x3c00 + i % 13);
    static uint16_t q[4][16 * 16] __attribute__((aligned(64)));
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < 256; i++) q[s][i] = (uint16_t)(0x3c80 + i % 7);
    _tile_loadd(3, q[0], 32);
    _tile_loadd(4, q[1], 32);
    _tile_loadd(5, q[2], 32);
    _tile_loadd(6, q[3], 32);
    static float out[512] __attribute__((aligned(64)));

    /* back to back: the tile unit never idles */
    const int nb = 200000;
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        const double t0 = now_ns();
        for (int i = 0; i < nb; i++) amx_burst((const char *)kb, out);
        const double t = (now_ns() - t0) / nb;
        if (t < best) best = t;
    }
    printf("amx: one 64-key Q.K burst (16 TDPBF16PS), time beyond the FMA gap before it\n");
    printf("  %-28s %7.1f ns\n", "back to back", best);
    /* after gaps of FMA-only work: burst cost = (gap + burst) - gap */
    const long gaps[] = {16, 64, 128, 256, 512, 1024, 4096};
    for (size_t g = 0; g < sizeof gaps / sizeof gaps[0]; g++) {
        const long steps = gaps[g];
        const int n = (int)(40000000 / (steps * 16 + 2000));
        double bg = 1e30, bb = 1e30;
        for (int r = 0; r < 5; r++) {
            double t0 = now_ns();
            for (int i = 0; i < n; i++) fma_gap(steps);
            const double tg = (now_ns() - t0) / n;
            t0 = now_ns();
            for (int i = 0; i < n; i++) {
                fma_gap(steps);
                amx_burst((const char *)kb, out);
            }
            const double tb = (now_ns() - t0) / n;
            if (tg < bg) bg = tg;
            if (tb < bb) bb = tb;
        }
        char label[64];
        snprintf(label, sizeof label, "after %.0f ns of FMAs", bg);
        printf("  %-28s %7.1f ns\n", label, bb - bg);
    }
    _tile_release();
    return 0;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    int vec = !strcmp(what, "vec") || !strcmp(what, "all");
    int amx = !strcmp(what, "amx") || !strcmp(what, "all");
    if (!vec && !amx) {
        fprintf(stderr, "usage: %s [vec|amx|all]\n", argv[0]);
        return 2;
    }
    if (!__builtin_cpu_supports("avx512f")) {
        /* every probe is AVX-512 code (AMX's gaps are zmm FMAs) */
        printf("vec, amx: not measured: this CPU has no AVX-512F (the probes are AVX-512 "
               "code)\n");
        return 0;
    }
    if (vec) probe_vec();
    if (amx) probe_amx();
    return 0;
}
