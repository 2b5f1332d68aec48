/*
 * bench/util_limits_avx2.c — the AVX2 + FMA table of util_limits_simd.h, for CPUs
 * without AVX-512: FMA chains, the DRAM read and the paged K/V walks with
 * 256-bit vectors (there is no bf16 dot instruction in this set).  Every
 * function carries its target attribute; util_limits.c calls them only on a
 * CPU with AVX2 and FMA.  Shaped like the AVX-512 twin (util_limits_avx512.c),
 * scaled to 16 ymm registers.
 */
#include "util_limits_simd.h"

#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))

/* 12 chains and the two constants fill 14 of the 16 ymm registers (24, as
 * the AVX-512 twin has, would spill).  Enough for the FMA peak of the
 * CPUs this path runs on: latency 4-5 cycles at two 256-bit FMAs a cycle
 * (Haswell .. Alder Lake, Zen 2/3) needs 8-10 in flight, Zen 1 (two
 * 128-bit halves, one 256-bit FMA a cycle) 5. */
#define CHAINS 12

#define A_(k) _mm256_set1_ps(1e-3f * (float)((k) + 1))
#define DECL_ACC()                                                                      \
    __m256 a0 = A_(0), a1 = A_(1), a2 = A_(2), a3 = A_(3), a4 = A_(4), a5 = A_(5),        \
           a6 = A_(6), a7 = A_(7), a8 = A_(8), a9 = A_(9), a10 = A_(10), a11 = A_(11)
#define ALL_ACC(OP) OP(a0) OP(a1) OP(a2) OP(a3) OP(a4) OP(a5) OP(a6) OP(a7) OP(a8) OP(a9) OP(a10) OP(a11)

T256 static float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

T256 static float fma_chains(long iters) {
    DECL_ACC();
    const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#define STEP(x) x = _mm256_fmadd_ps(x, b, c);
        ALL_ACC(STEP)
#undef STEP
    }
    __m256 s = _mm256_setzero_ps();
#define ADD(x) s = _mm256_add_ps(s, x);
    ALL_ACC(ADD)
#undef ADD
    return hsum(s);
}

/* Eight loads of 32 bytes per 64 floats into four sums; the prefetch as
 * in the AVX-512 twin (one T1 per line, pf bytes ahead). */
T256 static float read_sum(const float *buf, size_t a, size_t z, size_t pf) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = a; i + 64 <= z; i += 64) {
        if (pf && i * sizeof(float) + pf + 256 <= z * sizeof(float)) {
            const char *ahead = (const char *)(buf + i) + pf;
            _mm_prefetch(ahead, _MM_HINT_T1);
            _mm_prefetch(ahead + 64, _MM_HINT_T1);
            _mm_prefetch(ahead + 128, _MM_HINT_T1);
            _mm_prefetch(ahead + 192, _MM_HINT_T1);
        }
        s0 = _mm256_add_ps(s0, _mm256_load_ps(buf + i));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(buf + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(buf + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(buf + i + 24));
        s0 = _mm256_add_ps(s0, _mm256_load_ps(buf + i + 32));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(buf + i + 40));
        s2 = _mm256_add_ps(s2, _mm256_load_ps(buf + i + 48));
        s3 = _mm256_add_ps(s3, _mm256_load_ps(buf + i + 56));
    }
    return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* The walk of util_limits_simd.h: two 32-byte loads per line, nfma 256-bit
 * FMAs per line over 8 chains (the data alternating between the line's
 * halves); a += w c keeps the sums bounded (no denormals). */
T256 static inline __attribute__((always_inline)) float
walk(const unsigned char *K, const unsigned char *V, size_t base, size_t nb_req, size_t cb,
     size_t piece, const int nfma, const int nta) {
    const size_t blk = 8 * piece;
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    const __m256 c = _mm256_set1_ps(1e-3f);
    __m256 a[8];
    for (int i = 0; i < 8; i++) a[i] = _mm256_set1_ps((float)i);
    for (size_t b0 = 0; b0 < nb_req; b0 += cb)
        for (size_t h = 0; h < 8; h++) {
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
                        const __m256 w0 = _mm256_load_ps((const float *)(p + o));
                        const __m256 w1 = _mm256_load_ps((const float *)(p + o + 32));
                        if (kv) s1 = _mm256_add_ps(s1, _mm256_add_ps(w0, w1));
                        else s0 = _mm256_add_ps(s0, _mm256_add_ps(w0, w1));
#pragma GCC unroll 64
                        for (int g = 0; g < nfma; g++)
                            a[g % 8] = _mm256_fmadd_ps(g & 1 ? w1 : w0, c, a[g % 8]);
                    }
                }
            }
        }
    for (int i = 1; i < 8; i++) a[0] = _mm256_add_ps(a[0], a[i]);
    return hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), a[0]));
}

#define WALK(nfma_)                                                                            \
    T256 static float walk_##nfma_(const unsigned char *K, const unsigned char *V, size_t base, \
                                   size_t nb_req, size_t cb, size_t piece, int nta) {          \
        return nta ? walk(K, V, base, nb_req, cb, piece, nfma_, 1)                             \
                   : walk(K, V, base, nb_req, cb, piece, nfma_, 0);                            \
    }
WALK(0)
WALK(8)
WALK(16)
WALK(24)
WALK(32)

const limits_simd limits_simd_avx2 = {
    .isa = "AVX2",
    .lanes = 8,
    .chains = CHAINS,
    .fma = fma_chains,
    .dot = NULL,
    .read = read_sum,
    .walk = {walk_0, walk_8, walk_16, walk_24, walk_32},
};
