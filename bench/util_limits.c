/*
 * bench/util_limits.c — see util_limits.h.  Owns the measurements' threads, clocks
 * and repetitions; the loops themselves are per instruction set
 * (util_limits_simd.h: AVX-512 in util_limits_avx512.c, AVX2 + FMA in
 * util_limits_avx2.c), chosen at run time by what the CPU has.  Why each loop
 * looks as it does, and what it measured on the project machines:
 * docs/perf-notes.md ("Machine limits").
 */
#include "util_limits.h"
#include "util_limits_simd.h"
#include "util_host.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

const char *const limits_elem_name[LIMITS_ELEMS] = {"f32", "f16", "bf16", "fp8e4m3", "fp8e5m2"};

static volatile float g_sink; /* keeps the loops' results alive */

/* The loops of this CPU's instruction set: AVX-512F, else AVX2 + FMA,
 * else none (every limit then reads 0).  A run that forces the engine's
 * avx2 table (ATTN_ISA=avx2) on a CPU with AVX-512 is measured against
 * the AVX2 loops: the target is a share of what that instruction set can
 * do on this machine, not of what the wider one can. */
static const limits_simd *simd(void) {
    static const limits_simd *s;
    static int done;
    if (!done) {
        __builtin_cpu_init();
        const char *isa = getenv("ATTN_ISA");
        /* the AVX2 loops widen f16 with F16C, which every x86 CPU with
         * AVX2 and FMA has (it came a generation earlier on both vendors;
         * clang 14 has no "f16c" name for __builtin_cpu_supports) */
        const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        const int force2 = isa && strcmp(isa, "avx2") == 0;
        s = __builtin_cpu_supports("avx512f") && !force2 ? &limits_simd_avx512
            : avx2 ? &limits_simd_avx2
                   : NULL;
        done = 1;
    }
    return s;
}

const char *limits_isa(void) { return simd() ? simd()->isa : "none"; }

int limits_has_dot(void) {
    return simd() && simd()->dot && __builtin_cpu_supports("avx512bf16");
}

/* AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), the tile
 * state enabled by the OS (XCR0 bits 17 and 18) and, on Linux, this
 * process's permission to use it (arch_prctl ARCH_REQ_XCOMP_PERM for
 * XTILEDATA, 18; tile instructions fault without it).  The bench asks for
 * itself: the ceiling is the machine's, whatever the engine checks. */
int limits_has_amx(void) {
    static int cached = -1;
    if (cached >= 0) return cached;
    cached = 0;
#if defined(__x86_64__) && defined(__linux__)
    unsigned a, b, c, d;
    if (!simd() || !simd()->tile || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) ||
        !(d & (1u << 22)))
        return cached;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    cached = (lo & (3u << 17)) == (3u << 17) && syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#endif
    return cached;
}

/* Flops per second of `threads` threads each running the table's chains
 * (kind 0: FMA, 1: VDPBF16PS, 3: TDPBF16PS) or its product step (kind 2;
 * on tiles, kind 4) for `iters` steps, timed from a barrier to a barrier. */
static double chains_peak(int threads, long iters, int kind) {
    const limits_simd *S = simd();
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
#pragma omp barrier
#pragma omp master
        t0 = bench_now();
        const float s = kind == 4   ? S->tile_step(iters)
                        : kind == 3 ? S->tile(iters)
                        : kind == 2 ? S->gemm(iters)
                        : kind      ? S->dot(iters)
                                    : S->fma(iters);
#pragma omp barrier
#pragma omp master
        t1 = bench_now();
#pragma omp critical
        g_sink += s;
    }
    const double per = kind == 4   ? 4.0 * 16 * 16 * 32 * 2
                       : kind == 3 ? (double)S->tile_chains * 16 * 16 * 32 * 2
                       : kind == 2 ? (double)S->gemm_rows * S->gemm_vecs * S->lanes * 2
                                   : (double)S->chains * S->lanes * (kind ? 4 : 2);
    return (double)threads * (double)iters * per / (t1 - t0);
}

/* GFLOP/s of the FMA chains (2 flops per lane per FMA). */
double limits_fma_peak(int threads, long iters) {
    return simd() ? chains_peak(threads, iters, 0) * 1e-9 : 0;
}

/* GFLOP/s of the register-blocked product step in L1 (util_limits_simd.h:
 * gemm). */
double limits_gemm_peak(int threads, long iters) {
    return simd() ? chains_peak(threads, iters, 2) * 1e-9 : 0;
}

void limits_gemm_shape(int *rows, int *vecs) {
    *rows = simd() ? simd()->gemm_rows : 0;
    *vecs = simd() ? simd()->gemm_vecs : 0;
}

/* GFLOP/s of TDPBF16PS chains; a step of 6 tile products takes ~100
 * cycles where one of the FMA chains takes 6-12, hence iters / 16. */
double limits_amx_peak(int threads, long iters) {
    return limits_has_amx() ? chains_peak(threads, iters / 16 > 0 ? iters / 16 : 1, 3) * 1e-9 : 0;
}

/* GFLOP/s of the tile product step in L1 (util_limits_simd.h: tile_step),
 * iters / 16 steps as the chains above. */
double limits_amx_step(int threads, long iters) {
    return limits_has_amx() ? chains_peak(threads, iters / 16 > 0 ? iters / 16 : 1, 4) * 1e-9 : 0;
}

/* GFLOP/s of VDPBF16PS chains (2 products, 4 flops per lane); 0 on a CPU
 * without the instruction. */
double limits_bf16_peak(int threads, long iters) {
    return limits_has_dot() ? chains_peak(threads, iters, 1) * 1e-9 : 0;
}

/* GB/s reading `bytes` (already touched) with `threads` threads, best of
 * `reps` passes of each of two loops: plain loads (the hardware prefetcher
 * alone), and the same loads with a T1 software prefetch g_read_pf bytes
 * ahead.  The limit is the faster: a limit that a better read loop beats
 * would flatter every decode percentage. */
static size_t g_read_pf = 1024;

static double read_bw(const float *buf, size_t bytes, int threads, int reps) {
    const limits_simd *S = simd();
    const size_t n = bytes / sizeof(float);
    double best = 0;
    for (int r = 0; S && r < 2 * reps; r++) {
        const size_t pf = r >= reps ? g_read_pf : 0;
        double t0 = bench_now();
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            const int nt = omp_get_num_threads(), id = omp_get_thread_num();
            const size_t a = n / (size_t)nt * (size_t)id;
            const size_t z = id == nt - 1 ? n : n / (size_t)nt * (size_t)(id + 1);
            total += S->read(buf, a, z, pf);
        }
        const double gbs = (double)bytes / (bench_now() - t0) * 1e-9;
        g_sink += total;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* 1: the walks prefetch with NTA (limits_measure sets it from the profile) */
static int g_walk_nta;

/* GB/s reading K and V (the two halves of buf[0 .. bytes)) in the engine's
 * paged layout, as decode streams them (util_limits_simd.h's walks): per
 * request, in chunks of `chunk` keys (the decode tile's), the 8 KV heads'
 * pieces in turn.  Requests of 4096 keys, Hkv 8, split statically over
 * the threads; with fewer requests than threads each request's blocks are
 * split too, as the engine splits a lone request's keys.  Best of `reps`
 * passes.  The plain walk is the ceiling of the access pattern itself: the
 * pieces are short (the hardware streamer restarts at every one), and
 * those of one step are Hkv pieces apart.  An arithmetic walk is the
 * ceiling for a kernel that does the row's arithmetic and nothing else. */
static double walk_bw(const unsigned char *buf, size_t bytes, size_t es, int bs, int chunk,
                      int threads, int reps, limits_walk_fn fn) {
    const size_t piece = (size_t)bs * 128 * es, blk = 8 * piece, half = bytes / 2;
    const size_t nb_req = 4096 / (size_t)bs, reqs = half / (blk * nb_req);
    const size_t cb = (size_t)chunk / (size_t)bs; /* blocks per chunk */
    if (!fn || reqs == 0 || cb == 0) return 0;
    /* parts per request: as many as it takes to give every thread one,
     * each a whole number of chunks */
    size_t parts = reqs >= (size_t)threads ? 1 : ((size_t)threads + reqs - 1) / reqs;
    while (parts > 1 && (nb_req % (parts * cb)) != 0) parts--;
    const size_t nb_part = nb_req / parts, units = reqs * parts;
    const unsigned char *K = buf, *V = buf + half;
    const int nta = g_walk_nta;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = bench_now();
        float total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (size_t u = 0; u < units; u++)
            total += fn(K, V, (u / parts * nb_req + u % parts * nb_part) * blk, nb_part, cb, piece,
                        nta);
        const double gbs = (double)(reqs * nb_req * blk * 2) / (bench_now() - t0) * 1e-9;
        g_sink += total;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* Parallel fill with values in [-1, 1): 2 GiB would take seconds on one
 * thread. */
static void fill_f32(float *buf, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t blk = 0; blk < (n + 4095) / 4096; blk++) {
        uint64_t s = 0x2545f4914f6cdd1dull ^ (blk * 0x9e3779b97f4a7c15ull);
        const size_t a = blk * 4096, z = a + 4096 < n ? a + 4096 : n;
        for (size_t i = a; i < z; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            buf[i] = (float)((double)(s >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        }
    }
}

double limits_read_bw(const bench_limits *L, int threads, int reps) {
    return L->buf ? read_bw(L->buf, L->buf_bytes, threads, reps) : 0;
}

double limits_read_span(const bench_limits *L, size_t bytes, int threads, int reps) {
    if (!L->buf || bytes > L->buf_bytes) return 0;
    return read_bw(L->buf, bytes & ~(size_t)255, threads, reps);
}

int limits_chunk(const bench_limits *L, size_t es) {
    /* With AVX-512 "intel" walks 32 keys for fp32 caches and 64 for 16-bit
     * ones, "amd" 16 and 32; fp8 (the tile's dot path and its exact twin)
     * twice the 16-bit chunk; the AVX2 tile 32 keys for every cache. */
    if (L->fma_lanes == 8) return 32;
    const int c16 = L->nta ? 32 : 64;
    return es == 4 ? c16 / 2 : es == 2 ? c16 : 64;
}

double limits_walk(const bench_limits *L, size_t bytes, size_t es, int bs, int el, int threads,
                   int reps) {
    const limits_simd *S = simd();
    if (!S || !L->buf || bytes > L->buf_bytes || el >= LIMITS_ELEMS) return 0;
    return walk_bw((const unsigned char *)L->buf, bytes, es, bs, limits_chunk(L, es), threads,
                   reps, el < 0 ? S->walk : S->arith[el]);
}

int limits_measure(bench_limits *L, const char *tune, size_t read_pf, int amx_path) {
    memset(L, 0, sizeof *L);
    snprintf(L->isa, sizeof L->isa, "%s", limits_isa());
    L->has_dot = limits_has_dot();
    L->has_amx = limits_has_amx();
    L->amx_path = L->has_amx && amx_path;
    L->fma_lanes = simd() ? simd()->lanes : 0;
    limits_gemm_shape(&L->gemm_rows, &L->gemm_vecs);
    if (!simd()) return -1;
    g_read_pf = read_pf ? read_pf : 1024;
    L->nta = g_walk_nta = L->fma_lanes == 16 && tune && strcmp(tune, "amd") == 0;
    double c0, w0;
#define SHARE(t) ((bench_cpu_now() - c0) / ((bench_now() - w0) * (t)))
    /* steps per peak run: 24 AVX-512 chains at two FMAs a cycle and 12
     * AVX2 chains at one to two take 6-12 cycles a step alike */
    const long iters = 20000000;
    for (int t = 1; t <= 2; t++) {
        limits_fma_peak(t, iters / 10); /* warm up clocks */
        /* a peak is the best of 3 runs: on a shared machine noise only
         * ever lowers it, which would flatter every ratio */
        for (int rep = 0; rep < 3; rep++) {
            c0 = bench_cpu_now(), w0 = bench_now();
            const double f = limits_fma_peak(t, iters);
            if (f > L->fma[t]) L->fma[t] = f, L->fma_c[t] = f / SHARE(t);
            const double g = limits_gemm_peak(t, iters);
            if (g > L->gemm[t]) L->gemm[t] = g;
            if (!L->has_dot) continue;
            c0 = bench_cpu_now(), w0 = bench_now();
            const double b = limits_bf16_peak(t, iters);
            if (b > L->bf16[t]) L->bf16[t] = b, L->bf16_c[t] = b / SHARE(t);
            if (!L->has_amx) continue;
            c0 = bench_cpu_now(), w0 = bench_now();
            const double x = limits_amx_peak(t, iters);
            if (x > L->amx[t]) L->amx[t] = x, L->amx_c[t] = x / SHARE(t);
            const double y = limits_amx_step(t, iters);
            if (y > L->amx_step[t]) L->amx_step[t] = y;
        }
    }
    L->buf_bytes = (size_t)2 << 30;
    L->buf = bench_big_alloc(L->buf_bytes, 64);
    if (!L->buf) return -1;
    fill_f32(L->buf, L->buf_bytes / 4);
    bench_thp_status(L->thp_mode, sizeof L->thp_mode, &L->thp_mib);
    for (int t = 1; t <= 2; t++) {
        c0 = bench_cpu_now(), w0 = bench_now();
        L->dram[t] = read_bw(L->buf, L->buf_bytes, t, 3);
        /* read_bw keeps the best pass; the share is the whole sweep's */
        L->dram_c[t] = L->dram[t] / SHARE(t);
    }
#undef SHARE
    return 0;
}

void limits_free(bench_limits *L) {
    free(L->buf);
    L->buf = NULL;
}
