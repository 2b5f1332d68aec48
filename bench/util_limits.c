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

const char *const limits_paged_name[LIMITS_PAGED] = {"f32_bs16", "bf16_bs16", "bf16_bs32"};
const int limits_paged_fma_n[LIMITS_PAGED_FMA] = {8, 16, 24, 32};

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

/* Flops per second of `threads` threads each running the table's chains
 * (dot: the VDPBF16PS ones) for `iters` steps, timed from a barrier to a
 * barrier. */
static double chains_peak(int threads, long iters, int dot) {
    const limits_simd *S = simd();
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
#pragma omp barrier
#pragma omp master
        t0 = bench_now();
        const float s = dot ? S->dot(iters) : S->fma(iters);
#pragma omp barrier
#pragma omp master
        t1 = bench_now();
#pragma omp critical
        g_sink += s;
    }
    return (double)threads * (double)iters * S->chains * S->lanes * (dot ? 4 : 2) / (t1 - t0);
}

/* GFLOP/s of the FMA chains (2 flops per lane per FMA). */
double limits_fma_peak(int threads, long iters) {
    return simd() ? chains_peak(threads, iters, 0) * 1e-9 : 0;
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

/* GB/s reading K and V (the two halves of buf) in the engine's paged
 * layout, as decode streams them (util_limits_simd.h's walk): per request, in
 * chunks of `chunk` keys (the decode tile's), the 8 KV heads' pieces in
 * turn.  Requests of 4096 keys, Hkv 8, split statically over the threads;
 * best of `reps` passes.  With walk 0 (no FMAs) this is the ceiling of the
 * access pattern itself: the pieces are short (the hardware streamer
 * restarts at every one), and those of one step are Hkv pieces apart.
 * With FMAs per line it is the ceiling for a kernel that does that much
 * arithmetic per line it reads. */
static double paged_read_bw(const unsigned char *buf, size_t bytes, size_t es, int bs,
                            int chunk, int threads, int reps, int walk) {
    const limits_simd *S = simd();
    if (!S) return 0;
    const limits_walk_fn fn = S->walk[walk];
    const size_t piece = (size_t)bs * 128 * es, blk = 8 * piece, half = bytes / 2;
    const size_t nb_req = 4096 / (size_t)bs, reqs = half / (blk * nb_req);
    const size_t cb = (size_t)chunk / (size_t)bs; /* blocks per chunk */
    const unsigned char *K = buf, *V = buf + half;
    const int nta = g_walk_nta;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = bench_now();
        float total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (size_t req = 0; req < reqs; req++)
            total += fn(K, V, req * nb_req * blk, nb_req, cb, piece, nta);
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

double limits_paged_read(const bench_limits *L, size_t es, int bs, int chunk, int threads,
                         int reps) {
    return L->buf ? paged_read_bw((const unsigned char *)L->buf, L->buf_bytes, es, bs, chunk,
                                  threads, reps, 0)
                  : 0;
}

int limits_measure(bench_limits *L, const char *tune, size_t read_pf) {
    memset(L, 0, sizeof *L);
    snprintf(L->isa, sizeof L->isa, "%s", limits_isa());
    L->has_dot = limits_has_dot();
    L->fma_lanes = simd() ? simd()->lanes : 0;
    if (!simd()) return -1;
    g_read_pf = read_pf ? read_pf : 1024;
    /* The decode tile's chunk per dtype and profile: with AVX-512 "intel"
     * walks 32 keys for fp32 caches and 64 for bf16 (T1 prefetch), "amd" 16
     * and 32 (NTA); the AVX2 tile is 32 keys for every cache, T1. */
    const int avx2 = L->fma_lanes == 8;
    L->nta = g_walk_nta = !avx2 && tune && strcmp(tune, "amd") == 0;
    L->paged_chunk[0] = avx2 ? 32 : L->nta ? 16 : 32;
    L->paged_chunk[1] = L->paged_chunk[2] = avx2 ? 32 : L->nta ? 32 : 64;
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
            if (!L->has_dot) continue;
            c0 = bench_cpu_now(), w0 = bench_now();
            const double b = limits_bf16_peak(t, iters);
            if (b > L->bf16[t]) L->bf16[t] = b, L->bf16_c[t] = b / SHARE(t);
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
    static const size_t es[LIMITS_PAGED] = {4, 2, 2};
    static const int bs[LIMITS_PAGED] = {16, 16, 32};
    const unsigned char *b = (const unsigned char *)L->buf;
    for (int k = 0; k < LIMITS_PAGED; k++)
        for (int t = 1; t <= 2; t++)
            L->paged[k][t] = paged_read_bw(b, L->buf_bytes, es[k], bs[k], L->paged_chunk[k], t,
                                           3, 0);
    for (int k = 0; k < LIMITS_PAGED_FMA; k++)
        for (int t = 1; t <= 2; t++)
            L->paged_fma[k][t] = paged_read_bw(b, L->buf_bytes, 2, 16, L->paged_chunk[1], t, 3,
                                               k + 1);
    return 0;
}

void limits_free(bench_limits *L) {
    free(L->buf);
    L->buf = NULL;
}
