/*
 * bench/util_limits.h — this machine's limits, measured in the same run as the
 * engine rows they judge (never looked up): the fp32 FMA peak, the bf16
 * dot (VDPBF16PS) peak where the CPU has the instruction, the DRAM read
 * bandwidth, and the paged K/V read ceilings of the decode layout with and
 * without arithmetic per line.  Measured with the widest vectors the CPU
 * has (AVX-512F, else AVX2 + FMA: util_limits_simd.h).  Every figure for 1 and
 * 2 threads ([1], [2]; [0] unused), wall-clock and per CPU-second granted
 * (process CPU time / (threads x wall)).
 */
#ifndef AG_BENCH_UTIL_LIMITS_H
#define AG_BENCH_UTIL_LIMITS_H

#include <stddef.h>

#define LIMITS_PAGED 3      /* f32 block 16, bf16 block 16, bf16 block 32 */
#define LIMITS_PAGED_FMA 4  /* bf16 block 16 with 8, 16, 24, 32 FMAs per line read */

typedef struct bench_limits {
    char isa[16];                           /* "AVX-512", "AVX2": the loops' vectors */
    int fma_lanes;                          /* fp32 lanes of one FMA of those loops */
    int has_dot;                            /* the CPU has VDPBF16PS (else bf16[] is 0) */
    double fma[3], bf16[3], dram[3];        /* GFLOP/s, GFLOP/s, GB/s */
    double fma_c[3], bf16_c[3], dram_c[3];  /* the same per CPU-second granted */
    double paged[LIMITS_PAGED][3];          /* GB/s */
    double paged_fma[LIMITS_PAGED_FMA][3];
    int paged_chunk[LIMITS_PAGED];          /* keys per step of the walk, as the engine's
                                               decode tile under the profile */
    int nta;                                /* the walks prefetch with NTA ("amd" profile) */
    char thp_mode[32];                      /* bench_thp_status with the buffer filled */
    long thp_mib;
    float *buf;                             /* the 2 GiB read buffer, kept for the limits
                                               measured next to each row */
    size_t buf_bytes;
} bench_limits;

extern const char *const limits_paged_name[LIMITS_PAGED];   /* "f32_bs16", ... */
extern const int limits_paged_fma_n[LIMITS_PAGED_FMA];      /* 8, 16, 24, 32 */

/* Measure every limit on 1 and 2 threads; `tune` is the engine's tuning
 * profile ("amd" or "intel"), whose decode walk the paged rows imitate.
 * read_pf: the prefetch distance of the DRAM read loop in bytes (1024 by
 * default: BENCH_READ_PF).  0, or -1 when the 2 GiB buffer cannot be had
 * or the CPU has neither AVX-512F nor AVX2 + FMA (L->isa "none"). */
int limits_measure(bench_limits *L, const char *tune, size_t read_pf);
void limits_free(bench_limits *L);

/* The loops' instruction set ("AVX-512", "AVX2", "none") and whether the
 * CPU has VDPBF16PS (AVX512-BF16). */
const char *limits_isa(void);
int limits_has_dot(void);

/* One measurement again (for the limit next to a row): GFLOP/s of the FMA
 * or VDPBF16PS chains (0 without AVX512-BF16), GB/s of the DRAM read over
 * L->buf (best of reps passes of each loop). */
double limits_fma_peak(int threads, long iters);
double limits_bf16_peak(int threads, long iters);
double limits_read_bw(const bench_limits *L, int threads, int reps);
/* GB/s of the paged K/V read (the paged rows above, no arithmetic) for a
 * cache of es-byte elements in blocks of bs keys, walked `chunk` keys per
 * step, over L->buf; 0 without the buffer.  The ceiling of a decode row of
 * that cache, measured next to it (run_fp8.c: the fp8 rounds). */
double limits_paged_read(const bench_limits *L, size_t es, int bs, int chunk, int threads, int reps);

#endif /* AG_BENCH_UTIL_LIMITS_H */
