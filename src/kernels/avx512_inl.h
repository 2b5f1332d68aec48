/*
 * avx512_inl.h — the AVX-512 primitives the AVX-512 tile drivers
 * share: avx512.c (the general flash-style tile),
 * avx512_decode.c (single-token items) and avx512_lanes.c
 * (fp32 prefill, rows in the lanes).  Include only from files compiled
 * with the avx512 -m flags (mk/isa.mk).
 *
 * Owns: the chunk and block geometry (AVX512_TILE, AVX512_NV, AVX512_QR,
 * AVX512_PR, AVX512_DV), the declaration of avx512.c's general driver
 * (which avx512bf16.c reuses), the vectorised exp and tanh, widening
 * loads, the 16x16 transpose, key row addresses in the paged cache, the
 * online softmax of a block of rows over one chunk, and the P.V
 * micro-kernel (instantiated per V dtype).  Everything is static inline: each driver gets its own copy, the
 * compiler keeps the dtype a constant inside the loops.
 */
#ifndef ATTN_KERNELS_AVX512_INL_H
#define ATTN_KERNELS_AVX512_INL_H

#include "kernels_decl.h"
#include "dtype.h"

#ifdef ATTN_EMU
#include "avx512_emu.h" /* the emulated tables (mk/isa.mk): SIMDe and what it lacks */
#else
#include <immintrin.h>
#endif
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------- reductions */

/* The sum and the maximum of a vector's 16 lanes in one fixed order:
 * halves added (or maxed) 256 then 128 bits wide, then lanes {2, 3} onto
 * {0, 1}, then lane 1 onto lane 0.  Why not _mm512_reduce_add_ps and
 * _mm512_reduce_max_ps: they are header functions, and gcc's header spells
 * them as this tree while clang's hands them to LLVM's vector reductions,
 * whose order of sums (and which operand a max of -0 and +0 or of a NaN
 * returns) is clang's choice.  The same source then gave other bits under
 * clang than under gcc, and the fuzz builds (clang) saw the avx512 table
 * disagree with its gcc-ordered emulation (corpus/cases/
 * huge-k-reduction-order.case).  The poison below keeps them out. */
static inline __m256 attn__hi256(__m512 a) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
}
static inline float attn__hsum16(__m512 a) {
    const __m256 t = _mm256_add_ps(attn__hi256(a), _mm512_castps512_ps256(a));
    const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, 0x4E)); /* lanes {2, 3, 0, 1} */
    return _mm_cvtss_f32(_mm_add_ss(t8, _mm_shuffle_ps(t8, t8, 0x11))); /* lane 0 + lane 1 */
}
static inline float attn__hmax16(__m512 a) {
    const __m256 t = _mm256_max_ps(attn__hi256(a), _mm512_castps512_ps256(a));
    const __m128 t6 = _mm_max_ps(_mm256_extractf128_ps(t, 1), _mm256_castps256_ps128(t));
    const __m128 t8 = _mm_max_ps(t6, _mm_shuffle_ps(t6, t6, 0x4E)); /* lanes {2, 3, 0, 1} */
    return _mm_cvtss_f32(_mm_max_ps(t8, _mm_shuffle_ps(t8, t8, 0x11))); /* {1, 0, 1, 0} */
}
#pragma GCC poison _mm512_reduce_add_ps _mm512_reduce_max_ps _mm512_reduce_min_ps
#pragma GCC poison _mm512_reduce_mul_ps _mm512_mask_reduce_add_ps _mm512_mask_reduce_max_ps

#define AVX512_TILE ATTN__AVX512_KV_TILE /* keys per chunk (the avx512 tables' kv_tile) */
#define AVX512_NV (AVX512_TILE / 16) /* zmm vectors per chunk of keys */
#define AVX512_QR 6     /* rows per Q.K block: 6 x 4 = 24 accumulators */
#define AVX512_PR 6     /* rows per P.V block: 6 x 4 = 24 accumulators */
#define AVX512_DV 4     /* output vectors (64 dims) per P.V pass */

/* INLINE and UNROLL: kernels.h */

/* The general (flash-style) tile driver of avx512.c, which the avx512bf16
 * table's pairs tile reuses with its own K packing and Q.K micro-kernel:
 * pack turns the chunk's n K rows (krow; kpf: the next chunk's rows to
 * prefetch, or NULL entries) into the work area; dots writes the raw dots
 * of rows [r0, r0 + R) (R <= AVX512_QR) with the chunk's keys,
 * s[r][AVX512_TILE]. */
typedef void (*attn__avx512_pack_fn)(const attn_tile_args *a, const void *const *krow,
                                     const void *const *kpf, int32_t n, void *work);
typedef void (*attn__avx512_dots_fn)(const attn_tile_args *a, int32_t r0, int32_t R,
                                     const void *work, float *s);
void attn__avx512_tile(const attn_tile_args *a, attn_dtype vdt, attn__avx512_pack_fn pack,
                       attn__avx512_dots_fn dots);

/* ------------------------------------------------------------ exp, tanh */

/* e^x for x <= 0 (every caller: s - max, m_old - m_new, -2|x| for tanh;
 * and x <= LANES_LAZY_LOGITS = 8 in the AMX tile, whose rows keep a
 * maximum up to 8 below the true one: the same reduction, with n <= 12),
 * vectorised.  Cody-Waite reduction x = n ln2 + r with a
 * two-part ln2 (ln2_hi has 9 significant bits, so n * ln2_hi is exact for
 * |n| < 2^15), |r| <= ln2/2, then the Cephes degree-6 minimax polynomial
 * for e^r and scalef by 2^n (which also produces correct subnormals).
 * Measured against a double-precision exp over every float in [-110, 0]
 * (the range the softmax uses: s - m <= 0): max error 1.26 ulp on normal
 * results (worst at x = -71.03), <= 0.78 of the subnormal spacing 2^-149
 * below FLT_MIN (scalef rounds once).  x is
 * clamped to -110 first: e^-110 < 2^-158 scales to exactly 0, so
 * exp(-inf) = 0 (masked keys) without a special case, and a NaN x (the
 * clamp returns its second operand) gives 0 too.  No upper clamp: no
 * caller passes x > 8 (an upper clamp at 88.7 cost one of ~15 ops). */
static inline __m512 attn__avx512_exp(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-110.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 r2 = _mm512_mul_ps(r, r);
    p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
}

/* tanh(x) = sign(x) (1 - t) / (1 + t), t = e^(-2|x|) in (0, 1]: no
 * overflow for any x, tanh(+-inf) = +-1.  Near 0 the subtraction 1 - t
 * would cost relative accuracy (|error| ~2^-23 absolute, which a huge soft
 * cap c turns into c * 2^-23 in c * tanh(s / c): the fuzzer found caps of
 * 1e27 that way), so |x| < 1/4 takes the odd Taylor polynomial to x^9,
 * whose truncation error is below 1e-8 relative there. */
INLINE __m512 tanh512(__m512 x) {
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    const __m512 ax = _mm512_andnot_ps(sign, x);
    const __m512 t = attn__avx512_exp(_mm512_mul_ps(ax, _mm512_set1_ps(-2.0f)));
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 y = _mm512_div_ps(_mm512_sub_ps(one, t), _mm512_add_ps(one, t));
    const __m512 big = _mm512_or_ps(y, _mm512_and_ps(x, sign));
    const __m512 x2 = _mm512_mul_ps(x, x);
    __m512 q = _mm512_set1_ps(62.0f / 2835.0f);
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-17.0f / 315.0f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(2.0f / 15.0f));
    q = _mm512_fmadd_ps(q, x2, _mm512_set1_ps(-1.0f / 3.0f));
    const __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(q, x2), x, x);
    const __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.25f), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(is_small, big, small);
}

/* ------------------------------------------------------------- helpers */

/* One software prefetch: non-temporal (NTA = 1) or to L2 (T1).  A branch
 * on a constant, because _mm_prefetch wants a literal hint. */
INLINE void prefetch_hint(const void *p, int NTA) {
    if (NTA)
        _mm_prefetch((const char *)p, _MM_HINT_NTA);
    else
        _mm_prefetch((const char *)p, _MM_HINT_T1);
}


static inline __mmask16 tail_mask(size_t left) {
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* 16 e4m3fn codes (b) -> fp32, bit for bit the scalar decoder of dtype.h,
 * by way of f16: the codes sign-extended to 16 bits (x), x << 7 masked to
 * the sign and bits 7..13 is an f16 of the same sign, exponent field e and
 * mantissa m<<7, which is the value times 2^-8 for every code (subnormal
 * codes too: f16 subnormals); VCVTPH2PS widens it exactly and one multiply
 * by 2^8 rebiases.  The NaN codes 0x7f / 0xff (x << 9 == 0xfe00) came out
 * as +-480 and take the quiet NaN's exponent and mantissa by one masked
 * OR.  Nine micro-ops per 16 codes (dtype.h's scalar decoder takes the
 * same route).  Why not the shorter recipe of the code at bits 20..26 of
 * an fp32 times 2^120 (7 operations): for the subnormal codes that fp32 is
 * subnormal, and a multiply with a subnormal operand takes a microcode
 * assist on some CPUs (Zen 5 among them), so the decode time would depend
 * on how many codes are subnormal (uniform [-1, 1) data has 1.5 %: one
 * vector of 16 in five); VCVTPH2PS takes f16 subnormals at full speed
 * (docs/perf-notes.md, "Figures moved out of source comments"). */
INLINE __m512 e4m3_16_by(__m128i b, int REBIAS, int NANS) {
    const __m256i x = _mm256_cvtepi8_epi16(b);
    const __m256i h = _mm256_and_si256(_mm256_slli_epi16(x, 7), _mm256_set1_epi16((short)0xbf80));
    __m512 v = _mm512_cvtph_ps(h);
    if (REBIAS) v = _mm512_mul_ps(v, _mm512_set1_ps(0x1p8f));
    if (!NANS) return v;
    const __mmask16 nan =
        _mm256_cmpeq_epi16_mask(_mm256_slli_epi16(x, 9), _mm256_set1_epi16((short)0xfe00));
    return _mm512_castsi512_ps(_mm512_mask_or_epi32(_mm512_castps_si512(v), nan, _mm512_castps_si512(v),
                                                    _mm512_set1_epi32(0x7ff00000)));
}
INLINE __m512 e4m3_16(__m128i b) { return e4m3_16_by(b, 1, 1); }

/* Two readings of e4m3 private to the decode tile (avx512_decode.c), as
 * dtype constants past the public ones so that the micro-kernels below
 * specialise on them like on any dtype: the code's value times 2^-8 (the
 * f16 above before its rebias; the tile multiplies q and the softmax
 * weights by 2^8 instead, so every product is the same real number and
 * rounds the same), with the NaN codes kept (E4M3S_NAN) or not looked at
 * (E4M3S: for keys the tile has checked hold none).  Three of the nine
 * micro-ops per 16 codes go with the NaN test, one with the rebias. */
#define ATTN__E4M3S ((attn_dtype)ATTN_DTYPE_COUNT)
#define ATTN__E4M3S_NAN ((attn_dtype)(ATTN_DTYPE_COUNT + 1))

/* Bytes per element of a dtype or of one of the readings above. */
INLINE size_t read_size(attn_dtype dt) { return dt >= ATTN_DTYPE_COUNT ? 1 : attn__dtype_size(dt); }

/* 32 packed bf16 (one 64-byte load) widened exactly, as the decode tile
 * reads them: the even elements (the low halves of the 32-bit lanes,
 * shifted up) and the odd ones (the high halves, as they are). */
INLINE __m512 bf16_even(__m512i w) { return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)); }
INLINE __m512 bf16_odd(__m512i w) {
    return _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32((int)0xffff0000u)));
}

/* 16 elements of dtype dt at p (lanes outside m read as 0) -> fp32. */
INLINE __m512 load16(attn_dtype dt, const void *p, __mmask16 m) {
    if (dt == ATTN_DTYPE_F32) return _mm512_maskz_loadu_ps(m, p);
    if (read_size(dt) == 1) {
        const __m128i b = m == 0xffff ? _mm_loadu_si128((const __m128i *)p) : _mm_maskz_loadu_epi8(m, p);
        if (dt == ATTN_DTYPE_FP8_E5M2) /* straight to 16-bit lanes */
            return _mm512_cvtph_ps(_mm256_slli_epi16(_mm256_cvtepu8_epi16(b), 8));
        if (dt == ATTN__E4M3S) return e4m3_16_by(b, 0, 0);
        if (dt == ATTN__E4M3S_NAN) return e4m3_16_by(b, 0, 1);
        return e4m3_16(b);
    }
    /* A masked 16-bit load is a load and an ALU micro-op, and it cannot
     * be folded into VCVTPH2PS; where the mask is all ones by construction
     * (a constant after inlining) a plain load folds and the conversion
     * costs one vector micro-op instead of three (docs/perf-notes.md,
     * "f16 decode: plain loads").  Either reads the same 32 bytes. */
    const __m256i h = __builtin_constant_p(m) && m == 0xffff ? _mm256_loadu_si256((const __m256i *)p)
                                                            : _mm256_maskz_loadu_epi16(m, p);
    if (dt == ATTN_DTYPE_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

/* In-register transpose of 16 rows of 16 32-bit lanes: r[j] becomes the
 * j-th column. */
INLINE void transpose16(__m512 r[16]) {
    __m512 t[16];
    UNROLL
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    UNROLL
    for (int i = 0; i < 4; i++) {
        r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    UNROLL
    for (int i = 0; i < 2; i++) {
        UNROLL
        for (int k = 0; k < 4; k++) {
            t[8 * i + k] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + k + 4], 0x88);
            t[8 * i + k + 4] = _mm512_shuffle_f32x4(r[8 * i + k], r[8 * i + k + 4], 0xDD);
        }
    }
    UNROLL
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xDD);
    }
}

/* ------------------------------------- decode: horizontal sums of dots */

/* (the decode tile, avx512_decode.c, and its dot-product path,
 * avx512bf16_dec8.c: 4 keys x 1 row of partial sums per block) */
/* Fold the 4 per-key accumulators of one row (lanes = partial sums) into
 * one vector: 128-bit lane L holds [S_L(k0), S_L(k1), S_L(k2), S_L(k3)],
 * S_L = the sum of lane L's 4 elements. */
INLINE __m512 fold4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
    const __m512 t01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
    const __m512 t23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
    return _mm512_add_ps(_mm512_shuffle_ps(t01, t23, 0x44), _mm512_shuffle_ps(t01, t23, 0xEE));
}

/* Four fold4 results of keys 0-3, 4-7, 8-11, 12-15 -> the 16 full sums in
 * key order. */
INLINE __m512 fold16(__m512 u0, __m512 u1, __m512 u2, __m512 u3) {
    const __m512 x1 = _mm512_add_ps(_mm512_shuffle_f32x4(u0, u1, 0x88),
                                    _mm512_shuffle_f32x4(u0, u1, 0xDD));
    const __m512 x2 = _mm512_add_ps(_mm512_shuffle_f32x4(u2, u3, 0x88),
                                    _mm512_shuffle_f32x4(u2, u3, 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(x1, x2, 0x88), _mm512_shuffle_f32x4(x1, x2, 0xDD));
}

/* Keys i0 .. i0 + 3 of a decode step's Q.K group (both decode Q.K
 * kernels): their K rows kr (past n: key n - 1 again, whose lanes the
 * softmax masks) and the rows pk to prefetch beside them, kpf's entries,
 * or the key's own row where there is nothing to prefetch (so the
 * prefetch needs no branch). */
INLINE void dec_group_rows(const void *const *krow, const void *const *kpf, int32_t i0, int32_t n,
                           const unsigned char **kr, const char **pk) {
    UNROLL
    for (int j = 0; j < 4; j++) {
        kr[j] = (const unsigned char *)krow[i0 + j < n ? i0 + j : n - 1];
        pk[j] = kpf && i0 + j < ATTN__AVX512_DEC_KEYS && kpf[i0 + j] ? (const char *)kpf[i0 + j]
                                                                      : (const char *)kr[j];
    }
}

/* The raw dots of R (<= 4) rows with keys [0, n) of a decode step, from
 * u[r][g] = fold4 of keys 4g .. 4g + 3, into s (row stride
 * ATTN__AVX512_DEC_KEYS).  Groups past n were not computed: they fold as
 * zeros (the softmax masks those keys). */
INLINE void fold_store(int R, __m512 (*u)[ATTN__AVX512_DEC_KEYS / 4], int32_t n, float *s) {
    for (int32_t i0 = 0; i0 < n; i0 += 16) {
        const int g4 = i0 / 4;
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m512 z = _mm512_setzero_ps();
            const __m512 u1 = i0 + 4 < n ? u[r][g4 + 1] : z;
            const __m512 u2 = i0 + 8 < n ? u[r][g4 + 2] : z;
            const __m512 u3 = i0 + 12 < n ? u[r][g4 + 3] : z;
            _mm512_store_ps(s + (size_t)r * ATTN__AVX512_DEC_KEYS + i0, fold16(u[r][g4], u1, u2, u3));
        }
    }
}

/* ------------------------------------------------------ key addresses */

/* K and V row addresses of keys [k, k + n): one block-table lookup per
 * block, consecutive slots of a block are row_bytes apart. */
static inline void attn__row_ptrs(const attn_tile_args *a, size_t es, size_t row_bytes, int32_t k, int32_t n,
                     const void **krow, const void **vrow) {
    const int32_t bs = a->block_size;
    int32_t b = k / bs, slot = k % bs;
    for (int32_t i = 0; i < n; b++, slot = 0) {
        const int32_t blk = a->blocks[b];
        ATTN_ASSERT(blk >= 0);
        const size_t off = ((size_t)blk * a->block_stride + a->head_offset) * es + (size_t)slot * row_bytes;
        const unsigned char *kb = (const unsigned char *)a->k_cache + off;
        const unsigned char *vb = (const unsigned char *)a->v_cache + off;
#ifndef ATTN_INJECT_read_past_block
        const int32_t run = bs - slot < n - i ? bs - slot : n - i;
#else
        /* INJECTED BUG (read_past_block): a block's run one key too long:
         * its last key is read from past the block's piece (the next
         * head's, or past the cache), and every later key one off. */
        const int32_t run = bs - slot + 1 < n - i ? bs - slot + 1 : n - i;
#endif
        /* 8 addresses per store: a scalar loop runs once per key of every
         * decode step and took a visible share of a 16-key step
         * (docs/perf-notes.md, "Figures moved out of source comments") */
        const __m512i step8 = _mm512_set1_epi64((long long)(8 * row_bytes));
        __m512i ko = _mm512_add_epi64(_mm512_set1_epi64((long long)(uintptr_t)kb),
                                      _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0),
                                                         _mm512_set1_epi64((long long)row_bytes)));
        const uintptr_t kv_gap = (uintptr_t)vb - (uintptr_t)kb; /* V's row = K's + this */
        __m512i vo = _mm512_add_epi64(ko, _mm512_set1_epi64((long long)kv_gap));
        int32_t j = 0;
        for (; j + 8 <= run; j += 8, i += 8) {
            _mm512_storeu_si512((void *)(krow + i), ko);
            _mm512_storeu_si512((void *)(vrow + i), vo);
            ko = _mm512_add_epi64(ko, step8);
            vo = _mm512_add_epi64(vo, step8);
        }
        for (; j < run; j++, i++) {
            krow[i] = kb + (size_t)j * row_bytes;
            vrow[i] = vb + (size_t)j * row_bytes;
        }
    }
}

/* A difference of logits held in 2^me units (kernels.h) back in logit
 * units: exact (scalef by a power of two), -inf where it leaves the fp32
 * range downward; the identity for me = 0. */
static inline __m512 to_logits(__m512 x, int32_t me) {
    return me ? _mm512_scalef_ps(x, _mm512_set1_ps((float)me)) : x;
}

/* x rounded to the nearest bf16 (ties to even), kept as fp32 (the low 16
 * bits zero): what VCVTNEPS2BF16 gives for finite x.  Only softmax weights
 * (finite, in [0, 1]) pass through it. */
INLINE __m512 round_bf16(__m512 x) {
    const __m512i b = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

/* ------------------------------------------------------ online softmax */

/* Prefetches the softmax issues on the side (the decode tile's share of a
 * step's prefetches, avx512_decode.c): n line addresses, `per` of
 * them at each row of each of its two passes, the rest at its end. */
typedef struct sm_pf {
    const char *const *line;
    int32_t n, next, per;
    int nta;
} sm_pf;

INLINE void sm_pf_issue(sm_pf *c, int32_t count) {
    if (!c) return;
    for (int32_t k = 0; k < count && c->next < c->n; k++, c->next++)
        prefetch_hint(c->line[c->next], c->nta);
}

/* The online softmax of R (<= 16) rows over one chunk of nvk x 16 keys.
 * Row r's raw dots s[r * ss + 0 ..) become weights, its keys [ilo[r],
 * ihi[r]) of the chunk being visible (exactly 0 weight elsewhere, over all
 * nvk vectors: P.V may read a wider range for other rows of its block);
 * jh[r] is its head within the KV head's group (ALiBi slope), kp0[r] = c0 -
 * p the ALiBi distance of the chunk's key 0.  m[r], l[r] are updated and
 * alpha[r] is the factor the row's accumulator must be scaled by.  A row
 * that sees nothing (or only -inf logits) gets all-zero weights and alpha
 * = 1: its state is untouched bit for bit.
 * The rows go together: their maxima and rescale factors through one
 * vector exp (no scalar expf per row), and their independent exp/sum
 * chains can overlap.  pc (or NULL): prefetches to issue on the way.
 * round: every weight rounded to bf16 (round_bf16) before l adds it, for
 * a P.V that multiplies bf16 weights (the decode tile's fp8 dot path):
 * the output stays an exact convex combination of the weights used. */
static inline void softmax_rows_pf(const attn_tile_args *a, int32_t R, int nvk, const int32_t *ilo,
                                   const int32_t *ihi, const int32_t *jh, const int64_t *kp0,
                                   float *s, size_t ss, float *m, float *l, float *alpha,
                                   sm_pf *pc, int round) {
    const int32_t me = attn__m_exp(a->qk_exp, a->softcap);
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    float mx[16] __attribute__((aligned(64)));
    for (int32_t r = R; r < 16; r++) mx[r] = -INFINITY; /* lanes past R: loaded, never live */
    /* A row that sees the whole chunk with plain logits (the bulk of a
     * long decode) needs no masks and no rewrite of its scores: its first
     * pass only takes the maximum. */
    const int plain = !(a->qk_exp && !me) && !(a->softcap > 0.0f) && !a->alibi;
    for (int32_t r = 0; r < R; r++) {
        float *sr = s + (size_t)r * ss;
        __m512 mv = ninf;
        sm_pf_issue(pc, pc ? pc->per : 0);
        if (plain && ilo[r] == 0 && ihi[r] == 16 * nvk) {
            for (int32_t v = 0; v < nvk; v++) mv = _mm512_max_ps(mv, _mm512_load_ps(sr + 16 * v));
            mx[r] = attn__hmax16(mv);
            continue;
        }
        for (int32_t v = ilo[r] / 16; v < (ihi[r] + 15) / 16; v++) {
            const __m512i idx = _mm512_add_epi32(iota, _mm512_set1_epi32(16 * v));
            const __mmask16 vis = _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(ilo[r])) &
                                  _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32(ihi[r]));
            __m512 t = _mm512_load_ps(sr + 16 * v);
            /* logits in 2^me units (kernels.h): scaled up by 2^qk_exp
             * only under a soft cap, which bounds them */
            if (a->qk_exp && !me) t = _mm512_scalef_ps(t, _mm512_set1_ps((float)a->qk_exp));
            if (a->softcap > 0.0f) {
                const __m512 c = _mm512_set1_ps(a->softcap);
                t = _mm512_mul_ps(c, tanh512(_mm512_div_ps(t, c)));
            }
            if (a->alibi) {
                /* (float)(k - p) as the portable kernel: exact below 2^24. */
                const __m512 dist = _mm512_cvtepi32_ps(
                    _mm512_add_epi32(idx, _mm512_set1_epi32((int32_t)kp0[r])));
                __m512 b = _mm512_mul_ps(_mm512_set1_ps(a->alibi[jh[r]]), dist);
                if (me) b = _mm512_scalef_ps(b, _mm512_set1_ps((float)-me));
                t = _mm512_add_ps(t, b);
            }
            t = _mm512_mask_blend_ps(vis, ninf, t);
            _mm512_store_ps(sr + 16 * v, t);
            mv = _mm512_max_ps(mv, t);
        }
        mx[r] = attn__hmax16(mv); /* -inf for a row that sees nothing */
    }
    /* new maxima and rescale factors of all rows at once */
    const __mmask16 lanes = (__mmask16)((1u << R) - 1u);
    const __m512 mo = _mm512_maskz_loadu_ps(lanes, m);
    const __m512 mc = _mm512_load_ps(mx);
    const __mmask16 live = _mm512_cmp_ps_mask(mc, ninf, _CMP_NEQ_OQ) & lanes;
    const __m512 mn = _mm512_mask_blend_ps(live, mo, _mm512_max_ps(mc, mo));
    /* m_old = -inf (a fresh row): exp clamps -inf to e^-110, which scales to
     * exactly 0; m_old = m_new: exactly 1 */
    _mm512_mask_storeu_ps(alpha, lanes,
                          _mm512_mask_blend_ps(live, _mm512_set1_ps(1.0f),
                                               attn__avx512_exp(to_logits(_mm512_sub_ps(mo, mn), me))));
    _mm512_store_ps(mx, mn);
    for (int32_t r = 0; r < R; r++) {
        float *sr = s + (size_t)r * ss;
        const int32_t v0 = ilo[r] / 16, v1 = (ihi[r] + 15) / 16;
        if (!((live >> r) & 1u)) { /* weights 0, state kept */
            for (int v = 0; v < nvk; v++) _mm512_store_ps(sr + 16 * v, _mm512_setzero_ps());
            continue;
        }
        const __m512 mr = _mm512_set1_ps(mx[r]);
        __m512 sum = _mm512_setzero_ps();
        sm_pf_issue(pc, pc ? pc->per : 0);
        if (ilo[r] == 0 && ihi[r] == 16 * nvk) { /* every lane visible */
            for (int32_t v = 0; v < nvk; v++) {
                __m512 w = attn__avx512_exp(to_logits(_mm512_sub_ps(_mm512_load_ps(sr + 16 * v), mr), me));
                if (round) w = round_bf16(w);
                sum = _mm512_add_ps(sum, w);
                _mm512_store_ps(sr + 16 * v, w);
            }
            l[r] = l[r] * alpha[r] + attn__hsum16(sum);
            m[r] = mx[r];
            continue;
        }
        for (int32_t v = 0; v < nvk; v++) {
            __m512 w = _mm512_setzero_ps();
            if (v >= v0 && v < v1) {
                const __m512i idx = _mm512_add_epi32(iota, _mm512_set1_epi32(16 * v));
                const __mmask16 vis = _mm512_cmpge_epi32_mask(idx, _mm512_set1_epi32(ilo[r])) &
                                      _mm512_cmplt_epi32_mask(idx, _mm512_set1_epi32(ihi[r]));
                /* masked lanes hold -inf: exp gives exactly 0, the mask makes sure */
                w = _mm512_maskz_mov_ps(
                    vis, attn__avx512_exp(to_logits(_mm512_sub_ps(_mm512_load_ps(sr + 16 * v), mr), me)));
                if (round) w = round_bf16(w);
                sum = _mm512_add_ps(sum, w);
            }
            _mm512_store_ps(sr + 16 * v, w);
        }
        l[r] = l[r] * alpha[r] + attn__hsum16(sum);
        m[r] = mx[r];
    }
    sm_pf_issue(pc, pc ? pc->n : 0); /* what rows that saw nothing left */
}

/* softmax_rows_pf with no prefetches on the side. */
static inline void softmax_rows(const attn_tile_args *a, int32_t R, int nvk, const int32_t *ilo,
                                const int32_t *ihi, const int32_t *jh, const int64_t *kp0,
                                float *s, size_t ss, float *m, float *l, float *alpha) {
    softmax_rows_pf(a, R, nvk, ilo, ihi, jh, kp0, s, ss, m, l, alpha, NULL, 0);
}

/* ------------------------------------------------------- P.V micro-kernel */

/* The prefetch target of P.V's key loop, shared by the passes over a
 * chunk's keys (pv_rows: 64 dims per pass; the decode tile's bf16 pairs:
 * 64 dims too).  The next chunk's V rows are walked in address order —
 * key by key, each row's parts in turn — across all npass passes: slot
 * t = pass x n + (i - ilo) of the n = ihi - ilo keys is part t % npass of
 * key ilo + t / npass, so with 2 passes (D 128) the loads of pass 0
 * prefetch the first half of the keys whole, pass 1 the second half.
 * Why not each pass its own
 * dims of every key (the loads' order): that asks DRAM for every other
 * 256-byte run of a block, then comes back for the gaps.  K keeps the
 * loads' order, which ran faster for K (why K and V differ is not known;
 * docs/perf-notes.md, "Prefetch order").  Items that widen V first
 * prefetch in the widening loop instead (avx512.c). */
typedef struct pv_pf {
    int32_t key;  /* the key whose part is next */
    int32_t part; /* 0 .. npass - 1 */
    int32_t npass;
} pv_pf;

INLINE pv_pf pv_pf_start(int32_t pass, int32_t npass, int32_t ilo, int32_t ihi) {
    const int64_t t = (int64_t)pass * (ihi - ilo);
    const pv_pf c = {ilo + (int32_t)(t / npass), (int32_t)(t % npass), npass};
    return c;
}

INLINE void pv_pf_next(pv_pf *c) {
    if (++c->part == c->npass) c->part = 0, c->key++;
}

/* acc[r][dofs .. dofs + 16*NVEC) = acc * alpha[r] + sum_i p[r][i] V[i][..]
 * for R rows, keys i in [ilo, ihi), p[r][i] at p[r * ps + i]; V rows of
 * dtype vdt (widened on the fly); the last vector is masked by tm.  6 rows
 * x 4 vectors = 24 accumulators; per key, 4 V loads feed 24 FMAs with p
 * broadcast.  vpf (or NULL): the next chunk's rows of the same keys, of
 * D x es bytes; this is pass `pass` of npass over the keys (see pv_pf). */
INLINE void avx512_pv_rows(int R, int NVEC, attn_dtype vdt, int NTA, float *acc, size_t D,
                           size_t dofs, const float *alpha, const float *p, size_t ps,
                           const void *const *vrow, const void *const *vpf, int32_t ilo,
                           int32_t ihi, __mmask16 tm, int32_t pass, int32_t npass) {
    const size_t es = read_size(vdt);
    const size_t part_bytes = 16 * AVX512_DV * es, row_bytes = D * es;
    pv_pf pc = pv_pf_start(pass, npass, ilo, ihi);
    __m512 c[AVX512_PR][AVX512_DV];
    UNROLL
    for (int r = 0; r < R; r++) {
        const __m512 al = _mm512_set1_ps(alpha[r]);
        const float *ar = acc + (size_t)r * D + dofs;
        UNROLL
        for (int v = 0; v < NVEC; v++)
            c[r][v] = _mm512_mul_ps(_mm512_maskz_loadu_ps(v == NVEC - 1 ? tm : 0xffff, ar + 16 * v),
                                    al);
    }
    /* V of a key first, then row by row (one p broadcast per row, NVEC
     * FMAs): more FMAs per cycle than the per-vector order
     * (docs/perf-notes.md, "Figures moved out of source comments").  The
     * prefetch test is hoisted out of the key loop (a target with nothing
     * to prefetch re-touches this key's V row). */
    for (int32_t i = ilo; i < ihi; i++) {
        const unsigned char *vr = (const unsigned char *)vrow[i] + dofs * es;
        if (vpf) {
            /* one part of a row of the next chunk: 64 bytes per prefetch */
            const char *pf = vpf[pc.key] ? (const char *)vpf[pc.key] + (size_t)pc.part * part_bytes
                                         : (const char *)vrow[i] + dofs * es;
            UNROLL
            for (int v = 0; v < AVX512_DV; v++)
                if ((16 * (size_t)v * es) % 64 == 0 && (size_t)pc.part * part_bytes + 16 * (size_t)v * es < row_bytes)
                    prefetch_hint(pf + 16 * (size_t)v * es, NTA);
            pv_pf_next(&pc);
        }
        __m512 x[AVX512_DV];
        UNROLL
        for (int v = 0; v < NVEC; v++)
            x[v] = load16(vdt, vr + 16 * (size_t)v * es, v == NVEC - 1 ? tm : 0xffff);
        UNROLL
        for (int r = 0; r < R; r++) {
            const __m512 b = _mm512_set1_ps(p[(size_t)r * ps + (size_t)i]);
            UNROLL
            for (int v = 0; v < NVEC; v++) c[r][v] = _mm512_fmadd_ps(b, x[v], c[r][v]);
        }
    }
    UNROLL
    for (int r = 0; r < R; r++) {
        float *ar = acc + (size_t)r * D + dofs;
        UNROLL
        for (int v = 0; v < NVEC; v++)
            _mm512_mask_storeu_ps(ar + 16 * v, v == NVEC - 1 ? tm : 0xffff, c[r][v]);
    }
}

#define AVX512_PV_CASE(T_, R_, N_)                                                        \
    case (R_) * 8 + (N_):                                                                 \
        avx512_pv_rows(R_, N_, T_, nta, acc, D, dofs, alpha, p, ps, vrow, vpf, ilo, ihi, tm, \
                       pass, npass);                                                      \
        break;
#define PV_CASES(T_)                                                                      \
    AVX512_PV_CASE(T_, 1, 1) AVX512_PV_CASE(T_, 1, 2) AVX512_PV_CASE(T_, 1, 3)            \
    AVX512_PV_CASE(T_, 1, 4) AVX512_PV_CASE(T_, 2, 1) AVX512_PV_CASE(T_, 2, 2)            \
    AVX512_PV_CASE(T_, 2, 3) AVX512_PV_CASE(T_, 2, 4) AVX512_PV_CASE(T_, 3, 1)            \
    AVX512_PV_CASE(T_, 3, 2) AVX512_PV_CASE(T_, 3, 3) AVX512_PV_CASE(T_, 3, 4)            \
    AVX512_PV_CASE(T_, 4, 1) AVX512_PV_CASE(T_, 4, 2) AVX512_PV_CASE(T_, 4, 3)            \
    AVX512_PV_CASE(T_, 4, 4) AVX512_PV_CASE(T_, 5, 1) AVX512_PV_CASE(T_, 5, 2)            \
    AVX512_PV_CASE(T_, 5, 3) AVX512_PV_CASE(T_, 5, 4) AVX512_PV_CASE(T_, 6, 1)            \
    AVX512_PV_CASE(T_, 6, 2) AVX512_PV_CASE(T_, 6, 3) AVX512_PV_CASE(T_, 6, 4)

/* One instantiation set per V dtype: the dtype must be a constant inside
 * the micro-kernel for the widening to inline. */
#define PV_BLOCK_FN(name_, T_, NTA_)                                                      \
    static inline void name_(int32_t R, float *acc, size_t D, const float *alpha, const float *p, \
                      size_t ps, const void *const *vrow, const void *const *vpf,          \
                      int32_t ilo, int32_t ihi) {                                          \
        const int nta = (NTA_); /* 1: NTA prefetches */                                   \
        const int32_t npass = (int32_t)((D + 16 * AVX512_DV - 1) / (16 * AVX512_DV));     \
        for (size_t dofs = 0; dofs < D; dofs += 16 * AVX512_DV) {                         \
            const int32_t pass = (int32_t)(dofs / (16 * AVX512_DV));                      \
            const size_t left = D - dofs;                                                 \
            const int nvec = (int)(left >= 16 * AVX512_DV ? AVX512_DV : (left + 15) / 16); \
            const __mmask16 tm = tail_mask(left - 16 * (size_t)(nvec - 1));               \
            switch (R * 8 + nvec) {                                                       \
                PV_CASES(T_)                                                              \
            default: break;                                                               \
            }                                                                             \
        }                                                                                 \
    }
PV_BLOCK_FN(pv_block_f32, ATTN_DTYPE_F32, 0)
PV_BLOCK_FN(pv_block_bf16, ATTN_DTYPE_BF16, 0)
PV_BLOCK_FN(pv_block_f16, ATTN_DTYPE_F16, 0)
PV_BLOCK_FN(pv_block_fp8e4m3, ATTN_DTYPE_FP8_E4M3, 0)
PV_BLOCK_FN(pv_block_fp8e5m2, ATTN_DTYPE_FP8_E5M2, 0)
/* the decode tile's NTA profile (avx512_decode.c) */
PV_BLOCK_FN(pv_block_f32_nta, ATTN_DTYPE_F32, 1)
PV_BLOCK_FN(pv_block_f16_nta, ATTN_DTYPE_F16, 1)
PV_BLOCK_FN(pv_block_fp8e4m3_nta, ATTN_DTYPE_FP8_E4M3, 1)
PV_BLOCK_FN(pv_block_fp8e5m2_nta, ATTN_DTYPE_FP8_E5M2, 1)
PV_BLOCK_FN(pv_block_e4m3s, ATTN__E4M3S, 0)
PV_BLOCK_FN(pv_block_e4m3s_nan, ATTN__E4M3S_NAN, 0)
PV_BLOCK_FN(pv_block_e4m3s_nta, ATTN__E4M3S, 1)
PV_BLOCK_FN(pv_block_e4m3s_nan_nta, ATTN__E4M3S_NAN, 1)

#endif /* ATTN_KERNELS_AVX512_INL_H */
