/*
 * bench/util_limits_simd.h — the measurement loops of bench/util_limits.c, one
 * table per instruction set (util_limits_avx512.c, util_limits_avx2.c): one
 * thread's share of each loop.  Each loop is compiled for its instruction
 * set with target attributes, so `make all` builds the benchmark on any
 * x86-64 compiler target, and util_limits.c picks the table at run time by what
 * the CPU has (AVX-512F, else AVX2 + FMA).  The OpenMP regions, clocks and
 * sums stay in util_limits.c: clang does not carry a function's target
 * attribute into the parallel regions it outlines.
 */
#ifndef AG_BENCH_UTIL_LIMITS_SIMD_H
#define AG_BENCH_UTIL_LIMITS_SIMD_H

#include <stddef.h>

/* One request's walk of the paged K/V read (util_limits.c, paged_read_bw): its
 * nb_req blocks of `piece` bytes per head, `cb` blocks a step, the 8 heads
 * in turn, K then V, the next step prefetched (NTA when nta, else T1),
 * with a fixed number of FMAs per 64-byte line read.  Returns a sum that
 * keeps the loads alive. */
typedef float (*limits_walk_fn)(const unsigned char *K, const unsigned char *V, size_t base,
                                size_t nb_req, size_t cb, size_t piece, int nta);

#define LIMITS_WALKS 5   /* 0, 8, 16, 24 and 32 FMAs per line read */

typedef struct limits_simd {
    const char *isa;        /* "AVX-512", "AVX2" */
    int lanes;              /* fp32 lanes of one vector FMA */
    int chains;             /* independent FMA chains of `fma` (and `dot`) */
    /* `chains` FMA chains of `iters` steps: 2 * lanes flops each step */
    float (*fma)(long iters);
    /* VDPBF16PS chains: 4 * lanes flops each step; NULL where the table
     * has none (util_limits.c also asks the CPU before calling it) */
    float (*dot)(long iters);
    /* the sum of buf[a .. z) (a, z multiples of 64 floats), with a T1
     * prefetch pf bytes ahead when pf > 0 */
    float (*read)(const float *buf, size_t a, size_t z, size_t pf);
    limits_walk_fn walk[LIMITS_WALKS];
} limits_simd;

extern const limits_simd limits_simd_avx512, limits_simd_avx2;

#endif /* AG_BENCH_UTIL_LIMITS_SIMD_H */
