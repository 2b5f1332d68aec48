/*
 * bench/util_limits_avx512.c — the AVX-512 table of util_limits_simd.h: FMA,
 * VDPBF16PS and AMX TDPBF16PS chains, the DRAM read and the paged K/V walks (loads only,
 * and with a decode row's arithmetic per element type) with 512-bit
 * vectors.  Every function carries its target attribute; util_limits.c calls
 * them only on a CPU with AVX-512F (the dot chains with AVX512-BF16, the tile
 * chains with AMX and the OS's permission).
 * Each loop is shaped so that the compiler can neither merge its chains
 * nor drop its loads; why each looks as it does: docs/perf-notes.md
 * ("Machine limits").
 */
#include "util_limits_simd.h"

#include <immintrin.h>

#define T512 __attribute__((target("avx512f")))
#define TBF16 __attribute__((target("avx512f,avx512bf16")))
#define TAMX __attribute__((target("amx-tile,amx-bf16")))

#define CHAINS 24

/* The 24 chains as named registers (an array would be spilled to the
 * stack unless fully unrolled, and then each FMA waits on a store);
 * distinct starting values: identical chains would be merged into one. */
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

T512 static float fma_chains(long iters) {
    DECL_ACC();
    const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; it++) {
#define STEP(x) x = _mm512_fmadd_ps(x, b, c);
        ALL_ACC(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define ADD(x) s = _mm512_add_ps(s, x);
    ALL_ACC(ADD)
#undef ADD
    return _mm512_reduce_add_ps(s);
}

TBF16 static float dot_chains(long iters) {
    DECL_ACC();
    const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
    const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
    for (long it = 0; it < iters; it++) {
#define STEP(x) x = _mm512_dpbf16_ps(x, a, b);
        ALL_ACC(STEP)
#undef STEP
    }
    __m512 s = _mm512_setzero_ps();
#define ADD(x) s = _mm512_add_ps(s, x);
    ALL_ACC(ADD)
#undef ADD
    return _mm512_reduce_add_ps(s);
}

typedef struct tile_cfg {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
} tile_cfg;

/* Every tile 16 rows of 64 bytes (palette 1), all eight zeroed; and the
 * end of a loop: accumulator 3 stored (what keeps the loop's work alive)
 * and the tile state released. */
TAMX static void tiles_begin(void) {
    tile_cfg cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
}
TAMX static float tiles_end(void) {
    float c[16 * 16];
    _tile_stored(3, c, 64);
    _tile_release();
    return c[0];
}

/* Six accumulator tiles each taking TDPBF16PS of the same two operand
 * tiles (16 rows of 64 bytes each): six independent chains, as many as
 * the eight tile registers leave beside the operands. */
#define TILE_CHAINS 6
TAMX static float tile_chains(long iters) {
    unsigned short ab[16 * 32];
    for (int i = 0; i < 16 * 32; i++) ab[i] = (unsigned short)(0x3a83 + (i & 7)); /* ~1e-3 */
    tiles_begin();
    _tile_loadd(6, ab, 64);
    _tile_loadd(7, ab, 64);
    for (long it = 0; it < iters; it++) {
        _tile_dpbf16ps(0, 6, 7);
        _tile_dpbf16ps(1, 6, 7);
        _tile_dpbf16ps(2, 6, 7);
        _tile_dpbf16ps(3, 6, 7);
        _tile_dpbf16ps(4, 6, 7);
        _tile_dpbf16ps(5, 6, 7);
    }
    return tiles_end();
}

/* The tile products of a blocked Q.K^T (or P.V) with the operand loads
 * they need: a 2 x 2 block, four accumulator tiles fed by two tiles of
 * each operand loaded from L1 every step (4 + 4: all eight tile
 * registers; no other split of them needs fewer loads per product: a
 * block of a x b products takes a b accumulators and a + b operand tiles,
 * and a + b over a b is smallest at 2 x 2).  The operands cycle through 16
 * KB, as a row's step walks its K and Q panels; the accumulators run on
 * (TDPBF16PS into a tile fresh from TILEZERO ran about twice as fast as
 * into one it had written: docs/perf-notes.md). */
#define TILE_OPS 2048 /* bf16 of a step's operands: two 16 x 32 tiles of each */
TAMX static float tile_step(long iters) {
    static _Thread_local unsigned short ops[4][TILE_OPS] __attribute__((aligned(64)));
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < TILE_OPS; i++) ops[k][i] = (unsigned short)(0x3a83 + ((i + k) & 7));
    tiles_begin();
    for (long it = 0; it < iters; it++) {
        const unsigned short *o = ops[it & 3];
        _tile_loadd(4, o, 64);
        _tile_loadd(5, o + 512, 64);
        _tile_loadd(6, o + 1024, 64);
        _tile_loadd(7, o + 1536, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    return tiles_end();
}

/* Four independent sums (one load each per 64 floats); the prefetch
 * distance is a run-time value on purpose: as a compile-time constant GCC
 * folded the prefetch and the loads onto one base register and the loop
 * ran no faster than plain loads (docs/perf-notes.md). */
T512 static float read_sum(const float *buf, size_t a, size_t z, size_t pf) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = a; i + 64 <= z; i += 64) {
        if (pf && i * sizeof(float) + pf + 256 <= z * sizeof(float)) {
            const char *ahead = (const char *)(buf + i) + pf;
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
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

/* The inner step of a register-blocked Q.K^T: per step d, 4 vectors of
 * packed keys loaded and 6 query elements broadcast, 24 FMAs into as many
 * accumulators (6 x 4 + 4 + 1 of the 32 registers: the shape with the fewest
 * loads per FMA that fits).  The operands (64 steps of 64 keys and 6
 * rows) stay in L1; kt x q products of 1e-3 x 0.5 keep the sums bounded. */
#define GR 6
#define GV 4
T512 static float gemm_step(long iters) {
    float kt[64 * GV * 16] __attribute__((aligned(64))), q[GR * 64];
    for (int i = 0; i < 64 * GV * 16; i++) kt[i] = 1e-3f * (float)(i % 7);
    for (int i = 0; i < GR * 64; i++) q[i] = 0.5f;
    __m512 c[GR][GV];
    for (int r = 0; r < GR; r++)
        for (int j = 0; j < GV; j++) c[r][j] = _mm512_setzero_ps();
    for (long it = 0; it < iters; it += 64)
        for (int d = 0; d < 64; d++) {
            __m512 k[GV];
#pragma GCC unroll 8
            for (int j = 0; j < GV; j++) k[j] = _mm512_load_ps(kt + (d * GV + j) * 16);
#pragma GCC unroll 8
            for (int r = 0; r < GR; r++) {
                const __m512 b = _mm512_set1_ps(q[r * 64 + d]);
#pragma GCC unroll 8
                for (int j = 0; j < GV; j++) c[r][j] = _mm512_fmadd_ps(b, k[j], c[r][j]);
            }
        }
    __m512 s = _mm512_setzero_ps();
    for (int r = 0; r < GR; r++)
        for (int j = 0; j < GV; j++) s = _mm512_add_ps(s, c[r][j]);
    return _mm512_reduce_add_ps(s);
}

/* One 64-byte line widened as element type el (util_limits.h's
 * limits_elem) by the shortest sequence AVX-512 has for it, each fp32
 * vector then taking LIMITS_ARITH_G FMAs into the 16 chains (at 4 cycles
 * per FMA, 8 chains would just keep both FMA ports busy and leave no
 * slack).  bf16: the even elements shifted up, the odd ones masked (one
 * operation per 16 elements, the order of the products is free); f16:
 * VCVTPH2PS; e5m2: the code is an f16's top byte; e4m3: sign-extended,
 * shifted and masked it is an f16 of the value times 2^-8 (the 2^8 folds
 * into the query).  a += w c: bounded sums, so no denormal (a microcode
 * assist) ever occurs.  el == -1: loads only, summed. */
#define G LIMITS_ARITH_G
#define HEADS(w, j)                                                                        \
    for (int h_ = 0; h_ < G; h_++)                                                         \
        a[((j) * G + h_) % 16] = _mm512_fmadd_ps((w), qd ? _mm512_load_ps(qd + h_ * 128 + 16 * (j)) : c, \
                                             a[((j) * G + h_) % 16]);

T512 static inline __attribute__((always_inline)) void line(const unsigned char *p, const int el,
                                                            __m512 *a, const float *qd, __m512 c,
                                                            __m512 *s) {
    if (el < 0) {
        *s = _mm512_add_ps(*s, _mm512_load_ps((const float *)p));
    } else if (el == 0) {
        HEADS(_mm512_load_ps((const float *)p), 0)
    } else if (el == 1 || el == 2) {
        const __m512i x = _mm512_load_si512((const void *)p);
        __m512 w0, w1;
        if (el == 1) {
            w0 = _mm512_cvtph_ps(_mm512_castsi512_si256(x));
            w1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(x, 1));
        } else {
            w0 = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
            w1 = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
        }
        HEADS(w0, 0)
        HEADS(w1, 1)
    } else {
        for (int j = 0; j < 4; j++) {
            const __m128i b = _mm_load_si128((const __m128i *)(p + 16 * j));
            __m256i h;
            if (el == 4) h = _mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8);
            else h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(b), 7),
                                      _mm256_set1_epi16((short)0xbf80));
            HEADS(_mm512_cvtph_ps(h), j)
        }
    }
}
#undef HEADS

T512 static inline __attribute__((always_inline)) float
walk(const unsigned char *K, const unsigned char *V, size_t base, size_t nb_req, size_t cb,
     size_t piece, const int el, const int nta) {
    const size_t blk = 8 * piece;
    __m512 s = _mm512_setzero_ps();
    const __m512 c = _mm512_set1_ps(1e-3f);
    __m512 a[16];
    for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
    /* the G query rows of a KV head (D 128), read by K's FMAs */
    float qrows[LIMITS_ARITH_G * 128] __attribute__((aligned(64)));
    for (int i = 0; i < LIMITS_ARITH_G * 128; i++) qrows[i] = 1e-3f;
    const size_t es = el == 0 ? 4 : el <= 2 ? 2 : 1, rowb = 128 * es;
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
                        /* K: each FMA takes its query element from L1 (the
                         * 4 x 128 query floats do not fit the registers
                         * beside the accumulators); V: the weight is one
                         * broadcast per key and row, in a register */
                        line(p + o, el, a, kv || el < 0 ? NULL : qrows + (o % rowb) / es, c, &s);
                    }
                }
            }
        }
    for (int i = 1; i < 16; i++) a[0] = _mm512_add_ps(a[0], a[i]);
    return _mm512_reduce_add_ps(_mm512_add_ps(s, a[0]));
}

#define WALK(name_, el_)                                                                       \
    T512 static float name_(const unsigned char *K, const unsigned char *V, size_t base,        \
                            size_t nb_req, size_t cb, size_t piece, int nta) {                 \
        return nta ? walk(K, V, base, nb_req, cb, piece, el_, 1)                               \
                   : walk(K, V, base, nb_req, cb, piece, el_, 0);                              \
    }
WALK(walk_plain, -1)
WALK(walk_f32, 0)
WALK(walk_f16, 1)
WALK(walk_bf16, 2)
WALK(walk_e4m3, 3)
WALK(walk_e5m2, 4)

const limits_simd limits_simd_avx512 = {
    .isa = "AVX-512",
    .lanes = 16,
    .chains = CHAINS,
    .fma = fma_chains,
    .dot = dot_chains,
    .tile = tile_chains,
    .tile_chains = TILE_CHAINS,
    .tile_step = tile_step,
    .read = read_sum,
    .gemm = gemm_step,
    .gemm_rows = GR,
    .gemm_vecs = GV,
    .walk = walk_plain,
    .arith = {walk_f32, walk_f16, walk_bf16, walk_e4m3, walk_e5m2},
};
