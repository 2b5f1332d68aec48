/*
 * bench/util_limits.h — this machine's limits, measured in the same run as the
 * engine rows they judge (never looked up): the fp32 FMA peak, the bf16
 * dot (VDPBF16PS) peak where the CPU has the instruction, the DRAM read
 * bandwidth, and the loops a decode row's own ceiling is measured with
 * (bench/run_ceiling.c): the read of a row's footprint, the walk of its
 * paged layout, and that walk with the row's arithmetic per line.  Measured with the widest vectors the CPU
 * has (AVX-512F, else AVX2 + FMA: util_limits_simd.h).  Every figure for 1 and
 * 2 threads ([1], [2]; [0] unused), wall-clock and per CPU-second granted
 * (process CPU time / (threads x wall)).
 */
#ifndef AG_BENCH_UTIL_LIMITS_H
#define AG_BENCH_UTIL_LIMITS_H

#include <stddef.h>

/* The element types of the arithmetic walks: what a decode row widens. */
typedef enum limits_elem { LIMITS_F32, LIMITS_F16, LIMITS_BF16, LIMITS_E4M3, LIMITS_E5M2 } limits_elem;
#define LIMITS_ELEMS 5
extern const char *const limits_elem_name[LIMITS_ELEMS];   /* "f32", ... */

/* FMAs per fp32 vector in the arithmetic walks: the query heads per KV
 * head of the bench's decode rows (Hq 32, Hkv 8). */
#define LIMITS_ARITH_G 4

typedef struct bench_limits {
    char isa[16];                           /* "AVX-512", "AVX2": the loops' vectors */
    int fma_lanes;                          /* fp32 lanes of one FMA of those loops */
    int has_dot;                            /* the CPU has VDPBF16PS (else bf16[] is 0) */
    int has_amx;                            /* the CPU and OS run AMX-BF16 (else amx[] is 0) */
    int amx_path;                           /* the engine's table computes bf16 prefill on
                                               AMX tiles (attnguard's "amx"): its peak is
                                               the bf16 prefill rows' */
    double amx[3], amx_c[3];                /* GFLOP/s of TDPBF16PS chains, and per CPU-s */
    double amx_step[3];                     /* GFLOP/s: limits_amx_step */
    double fma[3], bf16[3], dram[3];        /* GFLOP/s, GFLOP/s, GB/s */
    double gemm[3];                         /* GFLOP/s: limits_gemm_peak */
    int gemm_rows, gemm_vecs;
    double fma_c[3], bf16_c[3], dram_c[3];  /* the same per CPU-second granted */
    int nta;                                /* the walks prefetch with NTA ("amd" profile) */
    char thp_mode[32];                      /* bench_thp_status with the buffer filled */
    long thp_mib;
    float *buf;                             /* the 2 GiB read buffer, kept for the limits
                                               measured next to each row */
    size_t buf_bytes;
} bench_limits;

/* Measure every limit on 1 and 2 threads; `tune` is the engine's tuning
 * profile ("amd" or "intel"), whose decode walk the walks imitate.
 * read_pf: the prefetch distance of the DRAM read loop in bytes (1024 by
 * default: BENCH_READ_PF).  0, or -1 when the 2 GiB buffer cannot be had
 * or the CPU has neither AVX-512F nor AVX2 + FMA (L->isa "none"). */
int limits_measure(bench_limits *L, const char *tune, size_t read_pf, int amx_path);
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
/* GFLOP/s of TDPBF16PS chains (iters steps of tile_chains products); 0
 * without AMX-BF16 or the OS's permission. */
double limits_amx_peak(int threads, long iters);
/* GFLOP/s of the tile products of a register-blocked Q.K^T with the tile
 * loads they need, in L1 (a 2 x 2 block: the fewest loads per product the
 * eight tiles allow); 0 as limits_amx_peak. */
double limits_amx_step(int threads, long iters);
int limits_has_amx(void);
/* GFLOP/s of the inner step of a register-blocked Q.K^T with its operands
 * in L1 (the shape with the fewest loads per FMA the register file
 * allows): the FMA peak as a product reaches it.  limits_gemm_shape: its
 * rows x vectors. */
double limits_gemm_peak(int threads, long iters);
void limits_gemm_shape(int *rows, int *vecs);
double limits_read_bw(const bench_limits *L, int threads, int reps);
/* GB/s reading the first `bytes` of L->buf (a multiple of 256), best of
 * reps passes: the whole buffer is the DRAM read; a decode row's footprint
 * read again and again is what its caches allow a hot row. */
double limits_read_span(const bench_limits *L, size_t bytes, int threads, int reps);

/* Keys per step of the engine's decode tile for es-byte elements under
 * L's profile and instruction set (the walks below imitate it). */
int limits_chunk(const bench_limits *L, size_t es);

/* GB/s of the paged K/V walk over the first `bytes` of L->buf (K the first
 * half, V the second; requests of 4096 keys, Hkv 8, D 128) for a cache of
 * es-byte elements in blocks of bs keys, limits_chunk keys a step; el < 0:
 * loads only (the access pattern's ceiling), else with the arithmetic of
 * element type el per line (limits_elem; es must be its size).  Requests
 * are split over the threads, and when there are fewer requests than
 * threads each request's keys are.  Best of reps passes; 0 without the
 * buffer or a loop. */
double limits_walk(const bench_limits *L, size_t bytes, size_t es, int bs, int el, int threads,
                   int reps);

#endif /* AG_BENCH_UTIL_LIMITS_H */
