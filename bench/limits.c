/*
 * bench/limits.c — see limits.h.  The measurement loops are AVX-512 code
 * built with -O3 -march=native (mk/bench.mk); each is shaped so that the
 * compiler can neither merge its chains nor drop its loads.  Why each loop
 * looks as it does, and what it measured on the project machines:
 * docs/perf-notes.md ("Machine limits").
 */
#include "limits.h"
#include "util.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const limits_paged_name[LIMITS_PAGED] = {"f32_bs16", "bf16_bs16", "bf16_bs32"};
const int limits_paged_fma_n[LIMITS_PAGED_FMA] = {8, 16, 24, 32};

static volatile float g_sink; /* keeps the loops' results alive */

#define CHAINS 24

/* The 24 chains as named registers (an array would be spilled to the
 * stack unless fully unrolled, and then each FMA waits on a store). */
/* distinct starting values: identical chains would be merged into one */
#define A_(k) _mm512_set1_ps(1e-3f * (float)((k) + 1))
#define DECL_ACC()                                                                      \
    __m512 a0 = A_(0), a1 = A_(1), a2 = A_(2), a3 = A_(3), a4 = A_(4), a5 = A_(5),        \
           a6 = A_(6), a7 = A_(7), a8 = A_(8), a9 = A_(9), a10 = A_(10), a11 = A_(11),    \
           a12 = A_(12), a13 = A_(13), a14 = A_(14), a15 = A_(15), a16 = A_(16),          \
           a17 = A_(17), a18 = A_(18), a19 = A_(19), a20 = A_(20), a21 = A_(21),          \
           a22 = A_(22), a23 = A_(23)
#define ALL_ACC(OP)                                                                    \
    OP(a0) OP(a1) OP(a2) OP(a3) OP(a4) OP(a5) OP(a6) OP(a7) OP(a8) OP(a9) OP(a10)     \
    OP(a11) OP(a12) OP(a13) OP(a14) OP(a15) OP(a16) OP(a17) OP(a18) OP(a19) OP(a20)   \
    OP(a21) OP(a22) OP(a23)

/* GFLOP/s of `threads` threads each running CHAINS independent FMA chains
 * for `iters` iterations (2 flops per lane per FMA). */
double limits_fma_peak(int threads, long iters) {
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
        DECL_ACC();
        const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
#pragma omp barrier
#pragma omp master
        t0 = bench_now();
        for (long it = 0; it < iters; it++) {
#define STEP(x) x = _mm512_fmadd_ps(x, b, c);
            ALL_ACC(STEP)
#undef STEP
        }
        __m512 s = _mm512_setzero_ps();
#define ADD(x) s = _mm512_add_ps(s, x);
        ALL_ACC(ADD)
#undef ADD
#pragma omp barrier
#pragma omp master
        t1 = bench_now();
#pragma omp critical
        g_sink += _mm512_reduce_add_ps(s);
    }
    return (double)threads * (double)iters * CHAINS * 16 * 2 / (t1 - t0) * 1e-9;
}

#ifdef __AVX512BF16__
/* GFLOP/s of VDPBF16PS chains: 16 lanes x 2 products x 2 flops each. */
double limits_bf16_peak(int threads, long iters) {
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
        DECL_ACC();
        const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
        const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
#pragma omp barrier
#pragma omp master
        t0 = bench_now();
        for (long it = 0; it < iters; it++) {
#define STEP(x) x = _mm512_dpbf16_ps(x, a, b);
            ALL_ACC(STEP)
#undef STEP
        }
        __m512 s = _mm512_setzero_ps();
#define ADD(x) s = _mm512_add_ps(s, x);
        ALL_ACC(ADD)
#undef ADD
#pragma omp barrier
#pragma omp master
        t1 = bench_now();
#pragma omp critical
        g_sink += _mm512_reduce_add_ps(s);
    }
    return (double)threads * (double)iters * CHAINS * 16 * 4 / (t1 - t0) * 1e-9;
}
#else
double limits_bf16_peak(int threads, long iters) {
    (void)threads, (void)iters;
    return 0;
}
#endif

/* GB/s reading `bytes` (already touched) with `threads` threads, best of
 * `reps` passes of each of two loops: plain loads (the hardware prefetcher
 * alone), and the same loads with a T1 software prefetch g_read_pf bytes
 * ahead.  The limit is the faster: a limit that a better read loop beats
 * would flatter every decode percentage.  The distance is a run-time value
 * on purpose: as a compile-time constant GCC folded the prefetch and the
 * loads onto one base register and the loop ran no faster than plain
 * loads (docs/perf-notes.md). */
static size_t g_read_pf = 1024;

static double read_bw(const float *buf, size_t bytes, int threads, int reps) {
    const size_t n = bytes / sizeof(float);
    double best = 0;
    for (int r = 0; r < 2 * reps; r++) {
        const int pf = r >= reps;
        double t0 = bench_now();
        float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
        {
            const int nt = omp_get_num_threads(), id = omp_get_thread_num();
            const size_t a = n / (size_t)nt * (size_t)id;
            const size_t z = id == nt - 1 ? n : n / (size_t)nt * (size_t)(id + 1);
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            for (size_t i = a; i + 64 <= z; i += 64) {
                if (pf && i * sizeof(float) + g_read_pf + 256 <= z * sizeof(float)) {
                    const char *ahead = (const char *)(buf + i) + g_read_pf;
                    _mm_prefetch(ahead, _MM_HINT_T1);
                    _mm_prefetch(ahead + 64, _MM_HINT_T1);
                    _mm_prefetch(ahead + 128, _MM_HINT_T1);
                    _mm_prefetch(ahead + 192, _MM_HINT_T1);
                }
                s0 = _mm512_add_ps(s0, _mm512_load_ps(buf + i));
                s1 = _mm512_add_ps(s1, _mm512_load_ps(buf + i + 16));
                s2 = _mm512_add_ps(s2, _mm512_load_ps(buf + i + 32));
                s3 = _mm512_add_ps(s3, _mm512_load_ps(buf + i + 48));
            }
            total += _mm512_reduce_add_ps(
                _mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
        }
        const double gbs = (double)bytes / (bench_now() - t0) * 1e-9;
        g_sink += total;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* One request's walk of the paged read below: its K and V pieces as
 * decode streams them, a chunk's K pieces of one head, then its V pieces,
 * the 8 heads in turn, with a prefetch of the next (head, chunk) step's
 * lines, one per line read (NTA under the engine's "amd" tuning profile,
 * else T1: the decode tile's hints).  nfma FMAs per line read, spread over 16
 * independent chains (a constant at every call, so the loop unrolls away),
 * stand for a kernel's arithmetic: at the FMA peak they take nfma / 2
 * cycles. */
static inline __attribute__((always_inline)) float paged_walk(const unsigned char *K,
                                                              const unsigned char *V, size_t base,
                                                              size_t nb_req, size_t cb,
                                                              size_t piece, const int nfma,
                                                              const int nta) {
    const size_t blk = 8 * piece;
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    /* 16 chains: at 4 cycles per FMA, 8 would just keep both FMA ports
     * busy and leave no slack; distinct starting values, or the compiler
     * merges chains that see the same operations */
    const __m512 c = _mm512_set1_ps(1e-3f);
    __m512 a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
    for (size_t b0 = 0; b0 < nb_req; b0 += cb)
        for (size_t h = 0; h < 8; h++) {
            /* the next step: the next head's chunk, or head 0's next chunk */
            const size_t nb0 = h + 1 < 8 ? b0 : b0 + cb, nh = (h + 1) % 8;
            const int pf = nb0 < nb_req;
            for (int kv = 0; kv < 2; kv++) {
                const unsigned char *x = kv ? V : K;
                for (size_t b = b0; b < b0 + cb; b++) {
                    const unsigned char *p = x + base + b * blk + h * piece;
                    const unsigned char *q = x + base + (nb0 + b - b0) * blk + nh * piece;
                    for (size_t o = 0; o < piece; o += 64) {
                        if (pf && nta) _mm_prefetch((const char *)q + o, _MM_HINT_NTA);
                        else if (pf) _mm_prefetch((const char *)q + o, _MM_HINT_T1);
                        const __m512 w = _mm512_load_ps((const float *)(p + o));
                        if (kv) s1 = _mm512_add_ps(s1, w);
                        else s0 = _mm512_add_ps(s0, w);
                        /* a += w c: bounded sums of the data, so no
                         * denormal (a microcode assist) ever occurs */
#pragma GCC unroll 64
                        for (int g = 0; g < nfma; g++) a[g % 16] = _mm512_fmadd_ps(w, c, a[g % 16]);
                    }
                }
            }
        }
    for (int i = 1; i < 16; i++) a[0] = _mm512_add_ps(a[0], a[i]);
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), a[0]));
}

typedef float (*paged_walk_fn)(const unsigned char *K, const unsigned char *V, size_t base,
                               size_t nb_req, size_t cb, size_t piece);
/* 1: the walks prefetch with NTA (limits_measure sets it from the profile) */
static int g_walk_nta;
#define PAGED_WALK(nfma_)                                                                      \
    static float paged_walk_##nfma_(const unsigned char *K, const unsigned char *V,          \
                                    size_t base, size_t nb_req, size_t cb, size_t piece) {   \
        return g_walk_nta ? paged_walk(K, V, base, nb_req, cb, piece, nfma_, 1)              \
                          : paged_walk(K, V, base, nb_req, cb, piece, nfma_, 0);             \
    }
PAGED_WALK(0)
PAGED_WALK(8)
PAGED_WALK(16)
PAGED_WALK(24)
PAGED_WALK(32)

/* GB/s reading K and V (the two halves of buf) in the engine's paged
 * layout, as decode streams them (paged_walk): per request, in chunks of
 * `chunk` keys (the decode tile's under the profile), the 8 KV heads'
 * pieces in turn (a decode run, kernels_avx512_decode.c).  Requests of
 * 4096 keys, Hkv 8, split statically over the threads; best of `reps`
 * passes.  With walk = paged_walk_0 this is the ceiling of the access
 * pattern itself: the pieces are short (the hardware streamer restarts at
 * every one), and those of one step are Hkv pieces apart.  With FMAs per
 * line it is the ceiling for a kernel that does that much arithmetic per
 * line it reads. */
static double paged_read_bw(const unsigned char *buf, size_t bytes, size_t es, int bs,
                            int chunk, int threads, int reps, paged_walk_fn walk) {
    const size_t piece = (size_t)bs * 128 * es, blk = 8 * piece, half = bytes / 2;
    const size_t nb_req = 4096 / (size_t)bs, reqs = half / (blk * nb_req);
    const size_t cb = (size_t)chunk / (size_t)bs; /* blocks per chunk */
    const unsigned char *K = buf, *V = buf + half;
    double best = 0;
    for (int r = 0; r < reps; r++) {
        const double t0 = bench_now();
        float total = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(+ : total)
        for (size_t req = 0; req < reqs; req++)
            total += walk(K, V, req * nb_req * blk, nb_req, cb, piece);
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
                                  threads, reps, paged_walk_0)
                  : 0;
}

int limits_measure(bench_limits *L, const char *tune, size_t read_pf) {
    memset(L, 0, sizeof *L);
    g_read_pf = read_pf ? read_pf : 1024;
    L->nta = g_walk_nta = tune && strcmp(tune, "amd") == 0;
    /* the decode tile's chunk per dtype and profile: "intel" 32 keys for
     * fp32 caches and 64 for bf16, "amd" 16 and 32 */
    L->paged_chunk[0] = L->nta ? 16 : 32;
    L->paged_chunk[1] = L->paged_chunk[2] = L->nta ? 32 : 64;
    double c0, w0;
#define SHARE(t) ((bench_cpu_now() - c0) / ((bench_now() - w0) * (t)))
    for (int t = 1; t <= 2; t++) {
        limits_fma_peak(t, 2000000); /* warm up clocks */
        /* a peak is the best of 3 runs: on a shared machine noise only
         * ever lowers it, which would flatter every ratio */
        for (int rep = 0; rep < 3; rep++) {
            c0 = bench_cpu_now(), w0 = bench_now();
            const double f = limits_fma_peak(t, 20000000);
            if (f > L->fma[t]) L->fma[t] = f, L->fma_c[t] = f / SHARE(t);
            c0 = bench_cpu_now(), w0 = bench_now();
            const double b = limits_bf16_peak(t, 20000000);
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
                                           3, paged_walk_0);
    static const paged_walk_fn fw[LIMITS_PAGED_FMA] = {paged_walk_8, paged_walk_16,
                                                       paged_walk_24, paged_walk_32};
    for (int k = 0; k < LIMITS_PAGED_FMA; k++)
        for (int t = 1; t <= 2; t++)
            L->paged_fma[k][t] = paged_read_bw(b, L->buf_bytes, 2, 16, L->paged_chunk[1], t, 3,
                                               fw[k]);
    return 0;
}

void limits_free(bench_limits *L) {
    free(L->buf);
    L->buf = NULL;
}
