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

#include "util_limits.h"

#include <stddef.h>

/* One request's walk of the paged K/V read (util_limits.c, walk_bw): its
 * nb_req blocks of `piece` bytes per head, `cb` blocks a step, the 8 heads
 * in turn, K then V, the next step prefetched (NTA when nta, else T1).
 * The plain walk only loads; the arithmetic walks also do, per 64-byte
 * line, what a decode row must do with it: widen its elements to fp32 by
 * the shortest sequence the instruction set has for the element type, and
 * LIMITS_ARITH_G FMAs per fp32 vector (one per query head sharing the KV
 * head).  Returns a sum that keeps the loads alive. */
typedef float (*limits_walk_fn)(const unsigned char *K, const unsigned char *V, size_t base,
                                size_t nb_req, size_t cb, size_t piece, int nta);

typedef struct limits_simd {
    const char *isa;        /* "AVX-512", "AVX2" */
    int lanes;              /* fp32 lanes of one vector FMA */
    int chains;             /* independent FMA chains of `fma` (and `dot`) */
    /* `chains` FMA chains of `iters` steps: 2 * lanes flops each step */
    float (*fma)(long iters);
    /* VDPBF16PS chains: 4 * lanes flops each step; NULL where the table
     * has none (util_limits.c also asks the CPU before calling it) */
    float (*dot)(long iters);
    /* AMX TDPBF16PS chains: `tile_chains` accumulator tiles, each
     * 16 x 16 x 32 x 2 flops a step; NULL where the table has none
     * (util_limits.c also asks the CPU and the OS before calling it) */
    float (*tile)(long iters);
    int tile_chains;
    /* `iters` steps of a 2 x 2 block of TDPBF16PS with its four operand
     * tiles loaded from L1 each step (the AMX product step: 4 x 16 x 16 x
     * 32 x 2 flops a step); NULL where `tile` is */
    float (*tile_step)(long iters);
    /* the sum of buf[a .. z) (a, z multiples of 64 floats), with a T1
     * prefetch pf bytes ahead when pf > 0 */
    float (*read)(const float *buf, size_t a, size_t z, size_t pf);
    /* `iters` steps of a register-blocked product's inner step, all in L1:
     * gemm_rows broadcast query elements times gemm_vecs vectors of keys
     * into gemm_rows x gemm_vecs accumulators (the most the register file
     * holds beside its operands); 2 * lanes flops per FMA */
    float (*gemm)(long iters);
    int gemm_rows, gemm_vecs;
    limits_walk_fn walk;                  /* loads only */
    limits_walk_fn arith[LIMITS_ELEMS];   /* by limits_elem: widen + G FMAs per vector */
} limits_simd;

extern const limits_simd limits_simd_avx512, limits_simd_avx2;

#endif /* AG_BENCH_UTIL_LIMITS_SIMD_H */
