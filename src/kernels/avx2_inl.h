/*
 * avx2_inl.h — the AVX2 + FMA + F16C primitives the avx2 table's tiles
 * share: avx2.c (the general flash-style tile, load_q and store) and
 * avx2_decode.c (single-token items).  Include only from files compiled
 * with the avx2 -m flags (mk/isa.mk).  No ISA file includes another's
 * header: what the avx2 files share lives here and nowhere else.
 *
 * Owns: the chunk geometry (AVX2_TILE keys, AVX2_NV vectors of them), the 8-lane exp
 * and tanh, the horizontal max and sum, tail lane masks, the widening of
 * 8 elements of any cache dtype (fp8 by way of f16), the power-of-two
 * multiply and the online softmax of one row over one chunk.  All static
 * inline: each tile keeps the dtype a constant inside its loops.
 */
#ifndef ATTN_KERNELS_AVX2_INL_H
#define ATTN_KERNELS_AVX2_INL_H

#include "kernels_decl.h"
#include "dtype.h"

#include <immintrin.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define AVX2_TILE ATTN__AVX2_KV_TILE /* keys per chunk (the table's kv_tile) */
#define AVX2_NV 4    /* ymm per 32 keys */

/* INLINE and UNROLL: kernels.h */

/* ------------------------------------------------------------ exp, tanh */

/* e^x, 8 lanes: the same Cody-Waite reduction and Cephes polynomial as the
 * avx512 twin (1.26 ulp max measured there for normal results; the
 * polynomial and reduction are identical), but 2^n is built in
 * the exponent field, so results below FLT_MIN's range are cut: x < -87.33
 * (e^x < 2^-126 ~ 1.2e-38) returns exactly 0.  That differs from expf only
 * by < 1.2e-38 absolute, and makes exp(-inf) = 0 without NaN. */
INLINE __m256 exp256(__m256 x) {
    const __m256 tiny = _mm256_cmp_ps(x, _mm256_set1_ps(-87.33f), _CMP_LT_OQ);
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.33f));
    x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    /* n in [-126, 127]: 2^n is a normal float */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n),
                                                         _mm256_set1_epi32(127)), 23);
    const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(tiny, y);
}

/* tanh via t = e^(-2|x|), and the odd polynomial for |x| < 1/4 (see the
 * avx512 twin for the error argument). */
INLINE __m256 tanh256(__m256 x) {
    const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 t = exp256(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 y = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
    const __m256 big = _mm256_or_ps(y, _mm256_and_ps(x, sign));
    const __m256 x2 = _mm256_mul_ps(x, x);
    __m256 q = _mm256_set1_ps(62.0f / 2835.0f);
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-17.0f / 315.0f));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(2.0f / 15.0f));
    q = _mm256_fmadd_ps(q, x2, _mm256_set1_ps(-1.0f / 3.0f));
    const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(q, x2), x, x);
    const __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.25f), _CMP_LT_OQ);
    return _mm256_blendv_ps(big, small, is_small);
}

INLINE float hmax256(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

INLINE float hsum256(__m256 v) {
    __m128 m = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_add_ps(m, _mm_movehl_ps(m, m));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* ------------------------------------------------------------- helpers */


/* Lane mask for the first `left` of 8 lanes (maskload/maskstore form). */
INLINE __m256i lanes(size_t left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int n = left >= 8 ? 8 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

/* 8 fp8 codes (b) -> fp32, bit for bit the scalar decoders of dtype.h,
 * both by way of f16 as the AVX-512 twin's (avx512_inl.h, e4m3_16):
 * e4m3fn's code sign-extended, shifted left 7 and masked is an f16 of the
 * value times 2^-8 (VCVTPH2PS widens it, one multiply rebiases), its NaN
 * codes (x << 9 == 0xfe00) take the quiet NaN; e5m2 is the top byte of
 * an f16. */
INLINE __m256 fp8_8(attn_dtype dt, __m128i b8) {
    if (dt == ATTN_DTYPE_FP8_E5M2) return _mm256_cvtph_ps(_mm_slli_epi16(_mm_cvtepu8_epi16(b8), 8));
    const __m128i x = _mm_cvtepi8_epi16(b8);
    const __m128i h = _mm_and_si128(_mm_slli_epi16(x, 7), _mm_set1_epi16((short)0xbf80));
    const __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(0x1p8f));
    const __m128i nan16 = _mm_cmpeq_epi16(_mm_slli_epi16(x, 9), _mm_set1_epi16((short)0xfe00));
    const __m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(nan16));
    return _mm256_or_ps(v, _mm256_and_ps(nan, _mm256_castsi256_ps(_mm256_set1_epi32(0x7ff00000))));
}

/* 8 elements of dt at p, `left` of them valid (the rest read as 0). */
INLINE __m256 load8(attn_dtype dt, const void *p, size_t left) {
    if (dt == ATTN_DTYPE_F32)
        return left >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, lanes(left));
    if (dt == ATTN_DTYPE_FP8_E4M3 || dt == ATTN_DTYPE_FP8_E5M2) {
        __m128i b;
        if (left >= 8) {
            b = _mm_loadl_epi64((const __m128i *)p);
        } else {
            uint8_t tmp[16] = {0}; /* AVX2 has no byte-masked load: stage the tail */
            memcpy(tmp, p, left);
            b = _mm_loadu_si128((const void *)tmp);
        }
        return fp8_8(dt, b);
    }
    __m128i h;
    if (left >= 8) {
        h = _mm_loadu_si128(p);
    } else {
        /* AVX2 has no 16-bit masked load: stage the tail. */
        uint16_t tmp[8] = {0};
        memcpy(tmp, p, left * sizeof(uint16_t));
        h = _mm_loadu_si128((const void *)tmp);
    }
    if (dt == ATTN_DTYPE_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

/* x 2^e for |e| <= 254, as two finite power-of-two factors (exact while
 * the result stays normal). */
INLINE __m256 pow2_mul(__m256 x, int32_t e) {
    const int32_t e1 = e > 127 ? 127 : e < -126 ? -126 : e;
    return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(ldexpf(1.0f, e1))),
                         _mm256_set1_ps(ldexpf(1.0f, e - e1)));
}

/* One row's softmax over a chunk of AVX2_TILE keys, its scores s[0 .. AVX2_TILE) raw
 * dots on entry and its weights on return (0 outside [ilo, ihi)); updates
 * the row's m and l and returns the factor its accumulator takes (see the
 * avx512 twin's softmax_row).  j: the row's head in the group (ALiBi);
 * kp0: the chunk's first key minus the row's position.
 * Logits and m in 2^me units (kernels.h). */
static inline float softmax_row(const attn_tile_args *a, int32_t j, int64_t kp0, int32_t ilo,
                         int32_t ihi, float *s, float *mrow, float *lrow) {
    const int32_t me = attn__m_exp(a->qk_exp, a->softcap);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 x[AVX2_NV], vis[AVX2_NV];
    __m256 mx = ninf;
    UNROLL
    for (int v = 0; v < AVX2_NV; v++) {
        const __m256i idx = _mm256_add_epi32(iota, _mm256_set1_epi32(8 * v));
        const __m256i ge = _mm256_cmpgt_epi32(idx, _mm256_set1_epi32(ilo - 1));
        const __m256i lt = _mm256_cmpgt_epi32(_mm256_set1_epi32(ihi), idx);
        vis[v] = _mm256_castsi256_ps(_mm256_and_si256(ge, lt));
        __m256 t = _mm256_load_ps(s + 8 * v);
        if (a->qk_exp && !me) t = pow2_mul(t, a->qk_exp); /* under a soft cap only */
        if (a->softcap > 0.0f) {
            const __m256 c = _mm256_set1_ps(a->softcap);
            t = _mm256_mul_ps(c, tanh256(_mm256_div_ps(t, c)));
        }
        if (a->alibi) {
            const __m256 dist =
                _mm256_cvtepi32_ps(_mm256_add_epi32(idx, _mm256_set1_epi32((int32_t)kp0)));
            __m256 b = _mm256_mul_ps(_mm256_set1_ps(a->alibi[j]), dist);
            if (me) b = pow2_mul(b, -me);
            t = _mm256_add_ps(t, b);
        }
        x[v] = _mm256_blendv_ps(ninf, t, vis[v]);
        mx = _mm256_max_ps(mx, x[v]);
    }
    const float mxs = hmax256(mx);
    if (mxs == -INFINITY) {
        UNROLL
        for (int v = 0; v < AVX2_NV; v++) _mm256_store_ps(s + 8 * v, _mm256_setzero_ps());
        return 1.0f;
    }
    const float m_old = *mrow;
    const float m_new = m_old > mxs ? m_old : mxs;
    float alpha = 1.0f;
    if (m_new != m_old)
        alpha = (m_old == -INFINITY) ? 0.0f : expf(me ? ldexpf(m_old - m_new, me) : m_old - m_new);
    const __m256 mn = _mm256_set1_ps(m_new);
    __m256 sum = _mm256_setzero_ps();
    UNROLL
    for (int v = 0; v < AVX2_NV; v++) {
        __m256 d = _mm256_sub_ps(x[v], mn);
        if (me) d = pow2_mul(d, me);
        const __m256 w = _mm256_and_ps(vis[v], exp256(d));
        sum = _mm256_add_ps(sum, w);
        _mm256_store_ps(s + 8 * v, w);
    }
    *lrow = *lrow * alpha + hsum256(sum);
    *mrow = m_new;
    return alpha;
}

#endif /* ATTN_KERNELS_AVX2_INL_H */
