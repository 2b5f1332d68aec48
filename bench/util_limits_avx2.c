/*
 * bench/util_limits_avx2.c — the AVX2 + FMA table of util_limits_simd.h, for CPUs
 * without AVX-512: FMA chains, the DRAM read and the paged K/V walks (loads
 * only, and with a decode row's arithmetic) with 256-bit vectors (there is no bf16 dot instruction in this set).  Every
 * function carries its target attribute; util_limits.c calls them only on a
 * CPU with AVX2 and FMA.  Shaped like the AVX-512 twin (util_limits_avx512.c),
 * scaled to 16 ymm registers.
 */
#include "util_limits_simd.h"

#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))
#define T256F __attribute__((target("avx2,fma,f16c")))

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

/* The inner step of a register-blocked Q.K^T: per step d, 3 vectors of
 * packed keys loaded and 4 query elements broadcast, 12 FMAs into as many
 * accumulators (4 x 3 + 3 + 1 of the 16 registers: the shape with the fewest
 * loads per FMA that fits).  The operands (64 steps of 24 keys and 4
 * rows) stay in L1; kt x q products of 1e-3 x 0.5 keep the sums bounded. */
#define GR 4
#define GV 3
T256 static float gemm_step(long iters) {
    float kt[64 * GV * 8] __attribute__((aligned(64))), q[GR * 64];
    for (int i = 0; i < 64 * GV * 8; i++) kt[i] = 1e-3f * (float)(i % 7);
    for (int i = 0; i < GR * 64; i++) q[i] = 0.5f;
    __m256 c[GR][GV];
    for (int r = 0; r < GR; r++)
        for (int j = 0; j < GV; j++) c[r][j] = _mm256_setzero_ps();
    for (long it = 0; it < iters; it += 64)
        for (int d = 0; d < 64; d++) {
            __m256 k[GV];
#pragma GCC unroll 8
            for (int j = 0; j < GV; j++) k[j] = _mm256_load_ps(kt + (d * GV + j) * 8);
#pragma GCC unroll 8
            for (int r = 0; r < GR; r++) {
                const __m256 b = _mm256_set1_ps(q[r * 64 + d]);
#pragma GCC unroll 8
                for (int j = 0; j < GV; j++) c[r][j] = _mm256_fmadd_ps(b, k[j], c[r][j]);
            }
        }
    __m256 s = _mm256_setzero_ps();
    for (int r = 0; r < GR; r++)
        for (int j = 0; j < GV; j++) s = _mm256_add_ps(s, c[r][j]);
    return hsum(s);
}

/* One 64-byte line widened as element type el (limits_elem) by the
 * shortest sequence AVX2 + F16C has for it, each fp32 vector then taking
 * LIMITS_ARITH_G FMAs into 8 chains; the sequences are the AVX-512 twin's
 * on 256-bit vectors (e4m3 and e5m2 via f16, bf16 even/odd).  el == -1:
 * two 32-byte loads, summed. */
#define G LIMITS_ARITH_G
#define HEADS(w, j)                                                                        \
    for (int h_ = 0; h_ < G; h_++)                                                         \
        a[((j) * G + h_) % 8] = _mm256_fmadd_ps((w), qd ? _mm256_load_ps(qd + h_ * 128 + 8 * (j)) : c, \
                                             a[((j) * G + h_) % 8]);

T256F static inline __attribute__((always_inline)) void line(const unsigned char *p, const int el,
                                                             __m256 *a, const float *qd, __m256 c,
                                                             __m256 *s) {
    if (el < 0) {
        *s = _mm256_add_ps(*s, _mm256_add_ps(_mm256_load_ps((const float *)p),
                                             _mm256_load_ps((const float *)(p + 32))));
    } else if (el == 0) {
        HEADS(_mm256_load_ps((const float *)p), 0)
        HEADS(_mm256_load_ps((const float *)(p + 32)), 1)
    } else if (el == 1) {
        for (int j = 0; j < 4; j++)
            HEADS(_mm256_cvtph_ps(_mm_load_si128((const __m128i *)(p + 16 * j))), j)
    } else if (el == 2) {
        for (int j = 0; j < 2; j++) {
            const __m256i x = _mm256_load_si256((const __m256i *)(p + 32 * j));
            HEADS(_mm256_castsi256_ps(_mm256_slli_epi32(x, 16)), 2 * j)
            HEADS(_mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u))),
                  2 * j + 1)
        }
    } else {
        for (int j = 0; j < 4; j++) {
            const __m128i b = _mm_load_si128((const __m128i *)(p + 16 * j));
            __m256i h;
            if (el == 4) h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8);
            else h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7),
                                      _mm256_set1_epi16((short)0xbf80));
            HEADS(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), 2 * j)
            HEADS(_mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)), 2 * j + 1)
        }
    }
}
#undef HEADS

T256F static inline __attribute__((always_inline)) float
walk(const unsigned char *K, const unsigned char *V, size_t base, size_t nb_req, size_t cb,
     size_t piece, const int el, const int nta) {
    const size_t blk = 8 * piece;
    __m256 s = _mm256_setzero_ps();
    const __m256 c = _mm256_set1_ps(1e-3f);
    __m256 a[8];
    for (int i = 0; i < 8; i++) a[i] = _mm256_set1_ps((float)i);
    /* the G query rows of a KV head (D 128), read by K's FMAs */
    float qrows[LIMITS_ARITH_G * 128] __attribute__((aligned(64)));
    for (int i = 0; i < LIMITS_ARITH_G * 128; i++) qrows[i] = 1e-3f;
    const size_t es = el == 0 ? 4 : el <= 2 ? 2 : 1, rowb = 128 * es;
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
                        /* K: each FMA takes its query element from L1 (the
                         * 4 x 128 query floats do not fit the registers
                         * beside the accumulators); V: the weight is one
                         * broadcast per key and row, in a register */
                        line(p + o, el, a, kv || el < 0 ? NULL : qrows + (o % rowb) / es, c, &s);
                    }
                }
            }
        }
    for (int i = 1; i < 8; i++) a[0] = _mm256_add_ps(a[0], a[i]);
    return hsum(_mm256_add_ps(s, a[0]));
}

#define WALK(name_, el_)                                                                       \
    T256F static float name_(const unsigned char *K, const unsigned char *V, size_t base,       \
                             size_t nb_req, size_t cb, size_t piece, int nta) {                \
        return nta ? walk(K, V, base, nb_req, cb, piece, el_, 1)                               \
                   : walk(K, V, base, nb_req, cb, piece, el_, 0);                              \
    }
WALK(walk_plain, -1)
WALK(walk_f32, 0)
WALK(walk_f16, 1)
WALK(walk_bf16, 2)
WALK(walk_e4m3, 3)
WALK(walk_e5m2, 4)

const limits_simd limits_simd_avx2 = {
    .isa = "AVX2",
    .lanes = 8,
    .chains = CHAINS,
    .fma = fma_chains,
    .dot = NULL,
    .read = read_sum,
    .gemm = gemm_step,
    .gemm_rows = GR,
    .gemm_vecs = GV,
    .walk = walk_plain,
    .arith = {walk_f32, walk_f16, walk_bf16, walk_e4m3, walk_e5m2},
};
