/*
 * avx512_emu.h — the AVX-512 intrinsics of the emulated tables
 * (avx512@emu, avx512bf16@emu).  mk/isa.mk compiles the avx512 kernel
 * files a second time with ATTN_EMU and the host's AVX2, FMA and F16C
 * flags; avx512_inl.h then includes this header instead of <immintrin.h>.
 * The kernels keep their _mm512_* spelling.
 *
 * Owns: the include of SIMDe (Debian's libsimde-dev) with its native
 * aliases, and the intrinsics the kernels use where SIMDe is absent or
 * does not do what the hardware does.  Each is written from the
 * instruction's definition in Intel's SDM, not from SIMDe's code:
 *
 *   - masked loads and stores: lane by lane, touching only the lanes
 *     whose mask bit is set.  The hardware suppresses faults on masked-off
 *     lanes; an emulation that loads the whole vector and blends would
 *     read past a guard page (a false alarm) and could cover a real
 *     over-read with its own.  Per-lane accesses also let AddressSanitizer
 *     see exactly the lanes the kernel asked for.
 *   - VDPBF16PS: per lane two fused multiply-adds, the odd pair first,
 *     every input (the accumulator too) with subnormals read as zero,
 *     subnormal results flushed to zero, round to nearest even.  SIMDe
 *     0.7.4's version sums the products in another order and keeps
 *     subnormals.
 *   - VSCALEFPS: a * 2^floor(b) rounded once, subnormals kept, with the
 *     SDM's special cases; SIMDe 0.7.4 overflows or underflows 2^floor(b)
 *     on its own and flushes subnormal inputs.
 *   - VCVTNE2PS2BF16: round to nearest even, subnormal inputs read as
 *     zero, NaN quietened with its sign and top payload bits.
 *   - conversions with a 256-bit twin of the same per-element definition
 *     (VCVTPH2PS, VCVTPS2PH, VCVTDQ2PS): the host's instruction per half.
 *   - _mm512_reduce_max_epu32, a sequence in the compiler's header, not
 *     an instruction: gcc 12's order (upper half op lower half, then the
 *     pairs {2,3} and {1,0}).  The float sums and maxima are not the
 *     header's in any build: avx512_inl.h spells its own (attn__hsum16).
 *
 * Everything else is SIMDe's.  How each difference is tested, and what an
 * emulated table cannot show: docs/adding-an-isa.md, "Without AVX-512".
 */
#ifndef ATTN_KERNELS_AVX512_EMU_H
#define ATTN_KERNELS_AVX512_EMU_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include "dtype.h" /* attn__f32_bits, attn__bits_f32 */

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A vector's lanes as a plain array and back (memcpy: no type punning,
 * and the compiler turns it into register moves). */
#define EMU_LANES(T, n, name, v) \
    T name[n];                   \
    memcpy(name, &(v), sizeof name)
#define EMU_VEC(VT, name) \
    ({                    \
        VT r_;            \
        memcpy(&r_, name, sizeof r_); \
        r_;               \
    })


/* ---- masked loads and stores: only the lanes the mask selects ---- */

#define EMU_MASKZ_LOAD(fn, VT, ET, n, MT)                          \
    static inline VT fn(MT k, const void *p) {                     \
        ET lane[n];                                                \
        const unsigned char *b = (const unsigned char *)p;         \
        for (int i = 0; i < (n); i++) {                            \
            lane[i] = 0;                                           \
            if ((k >> i) & 1) memcpy(&lane[i], b + i * sizeof(ET), sizeof(ET)); \
        }                                                          \
        return EMU_VEC(VT, lane);                                  \
    }
#define EMU_MASK_STORE(fn, VT, ET, n, MT)                          \
    static inline void fn(void *p, MT k, VT v) {                   \
        EMU_LANES(ET, n, lane, v);                                 \
        unsigned char *b = (unsigned char *)p;                     \
        for (int i = 0; i < (n); i++)                              \
            if ((k >> i) & 1) memcpy(b + i * sizeof(ET), &lane[i], sizeof(ET)); \
    }
EMU_MASKZ_LOAD(attn_emu_mm512_maskz_loadu_ps, simde__m512, float, 16, simde__mmask16)
EMU_MASKZ_LOAD(attn_emu_mm512_maskz_loadu_epi8, simde__m512i, uint8_t, 64, simde__mmask64)
EMU_MASKZ_LOAD(attn_emu_mm512_maskz_loadu_epi16, simde__m512i, uint16_t, 32, simde__mmask32)
EMU_MASKZ_LOAD(attn_emu_mm256_maskz_loadu_epi16, simde__m256i, uint16_t, 16, simde__mmask16)
EMU_MASKZ_LOAD(attn_emu_mm_maskz_loadu_epi8, simde__m128i, uint8_t, 16, simde__mmask16)
EMU_MASK_STORE(attn_emu_mm512_mask_storeu_ps, simde__m512, float, 16, simde__mmask16)
EMU_MASK_STORE(attn_emu_mm512_mask_storeu_epi32, simde__m512i, uint32_t, 16, simde__mmask16)
EMU_MASK_STORE(attn_emu_mm512_mask_storeu_epi16, simde__m512i, uint16_t, 32, simde__mmask32)
EMU_MASK_STORE(attn_emu_mm256_mask_storeu_epi16, simde__m256i, uint16_t, 16, simde__mmask16)
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps attn_emu_mm512_maskz_loadu_ps
#undef _mm512_maskz_loadu_epi8
#define _mm512_maskz_loadu_epi8 attn_emu_mm512_maskz_loadu_epi8
#undef _mm512_maskz_loadu_epi16
#define _mm512_maskz_loadu_epi16 attn_emu_mm512_maskz_loadu_epi16
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16 attn_emu_mm256_maskz_loadu_epi16
#undef _mm_maskz_loadu_epi8
#define _mm_maskz_loadu_epi8 attn_emu_mm_maskz_loadu_epi8
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps attn_emu_mm512_mask_storeu_ps
#undef _mm512_mask_storeu_epi32
#define _mm512_mask_storeu_epi32 attn_emu_mm512_mask_storeu_epi32
#undef _mm512_mask_storeu_epi16
#define _mm512_mask_storeu_epi16 attn_emu_mm512_mask_storeu_epi16
#undef _mm256_mask_storeu_epi16
#define _mm256_mask_storeu_epi16 attn_emu_mm256_mask_storeu_epi16

/* ---- compares into masks ---- */

#define EMU_CMP(fn, VT, ET, n, MT, op)                             \
    static inline MT fn(VT a, VT b) {                              \
        EMU_LANES(ET, n, x, a);                                    \
        EMU_LANES(ET, n, y, b);                                    \
        MT k = 0;                                                  \
        for (int i = 0; i < (n); i++) k |= (MT)((MT)(x[i] op y[i]) << i); \
        return k;                                                  \
    }
EMU_CMP(attn_emu_mm512_cmplt_epi32_mask, simde__m512i, int32_t, 16, simde__mmask16, <)
EMU_CMP(attn_emu_mm512_cmpgt_epu32_mask, simde__m512i, uint32_t, 16, simde__mmask16, >)
EMU_CMP(attn_emu_mm256_cmpeq_epi16_mask, simde__m256i, uint16_t, 16, simde__mmask16, ==)
#undef _mm512_cmplt_epi32_mask
#define _mm512_cmplt_epi32_mask attn_emu_mm512_cmplt_epi32_mask
#undef _mm512_cmpgt_epu32_mask
#define _mm512_cmpgt_epu32_mask attn_emu_mm512_cmpgt_epu32_mask
#undef _mm256_cmpeq_epi16_mask
#define _mm256_cmpeq_epi16_mask attn_emu_mm256_cmpeq_epi16_mask

/* ---- integer widening and narrowing ---- */

static inline simde__m512i attn_emu_mm512_cvtepu16_epi32(simde__m256i a) {
    EMU_LANES(uint16_t, 16, x, a);
    uint32_t r[16];
    for (int i = 0; i < 16; i++) r[i] = x[i];
    return EMU_VEC(simde__m512i, r);
}
/* VPMOVDW: each lane's low 16 bits (truncation, no saturation) */
static inline simde__m256i attn_emu_mm512_cvtepi32_epi16(simde__m512i a) {
    EMU_LANES(uint32_t, 16, x, a);
    uint16_t r[16];
    for (int i = 0; i < 16; i++) r[i] = (uint16_t)x[i];
    return EMU_VEC(simde__m256i, r);
}
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32 attn_emu_mm512_cvtepu16_epi32
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16 attn_emu_mm512_cvtepi32_epi16

/* ---- conversions on the host's 256-bit instructions, half by half ---- */

static inline simde__m512 emu_join_ps(__m256 lo, __m256 hi) {
    float r[16];
    _mm256_storeu_ps(r, lo);
    _mm256_storeu_ps(r + 8, hi);
    return EMU_VEC(simde__m512, r);
}
static inline simde__m512 attn_emu_mm512_cvtph_ps(simde__m256i a) {
    EMU_LANES(uint16_t, 16, h, a);
    return emu_join_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h)),
                       _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + 8))));
}
static inline simde__m512 attn_emu_mm512_cvtepi32_ps(simde__m512i a) {
    EMU_LANES(int32_t, 16, x, a);
    return emu_join_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)x)),
                       _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(x + 8))));
}
/* imm is the rounding control: a constant, as the instruction needs */
#define attn_emu_mm512_cvtps_ph(a, imm)                                                 \
    ({                                                                                  \
        EMU_LANES(float, 16, f_, a);                                                    \
        uint16_t h_[16];                                                                \
        _mm_storeu_si128((__m128i *)h_, _mm256_cvtps_ph(_mm256_loadu_ps(f_), (imm)));   \
        _mm_storeu_si128((__m128i *)(h_ + 8), _mm256_cvtps_ph(_mm256_loadu_ps(f_ + 8), (imm))); \
        EMU_VEC(simde__m256i, h_);                                                      \
    })
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps attn_emu_mm512_cvtph_ps
#undef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps attn_emu_mm512_cvtepi32_ps
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph attn_emu_mm512_cvtps_ph

/* ---- 128-bit lane shuffles (VSHUFF32X4, VSHUFI32X4, VSHUFI64X2) ---- */

/* result lanes 0, 1 from a, 2, 3 from b, each picked by two bits of imm */
static inline simde__m512i emu_shuf128(simde__m512i a, simde__m512i b, int imm) {
    EMU_LANES(uint32_t, 16, x, a);
    EMU_LANES(uint32_t, 16, y, b);
    uint32_t r[16];
    for (int l = 0; l < 4; l++)
        memcpy(r + 4 * l, (l < 2 ? x : y) + 4 * ((imm >> (2 * l)) & 3), 16);
    return EMU_VEC(simde__m512i, r);
}
#undef _mm512_shuffle_i32x4
#define _mm512_shuffle_i32x4(a, b, imm) emu_shuf128((a), (b), (imm))
#undef _mm512_shuffle_i64x2
#define _mm512_shuffle_i64x2(a, b, imm) emu_shuf128((a), (b), (imm))
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) \
    simde_mm512_castsi512_ps(emu_shuf128(simde_mm512_castps_si512(a), simde_mm512_castps_si512(b), (imm)))

/* ---- the integer reduction, in gcc 12's order ---- */
static inline uint32_t attn_emu_mm512_reduce_max_epu32(simde__m512i a) {
    EMU_LANES(uint32_t, 16, x, a);
    uint32_t t[8];
    _mm256_storeu_si256((__m256i *)t, _mm256_max_epu32(_mm256_loadu_si256((const __m256i *)(x + 8)),
                                                       _mm256_loadu_si256((const __m256i *)x)));
    const __m128i t6 = _mm_max_epu32(_mm_loadu_si128((const __m128i *)(t + 4)),
                                     _mm_loadu_si128((const __m128i *)t));
    const __m128i t8 = _mm_max_epu32(t6, _mm_shuffle_epi32(t6, 0x4E));
    return (uint32_t)_mm_cvtsi128_si32(_mm_max_epu32(t8, _mm_shuffle_epi32(t8, 0x11)));
}
#undef _mm512_reduce_max_epu32
#define _mm512_reduce_max_epu32 attn_emu_mm512_reduce_max_epu32

/* ---- VSCALEFPS: a * 2^floor(b), rounded once ---- */
/* Under the MXCSR the engine runs with (round to nearest even, no DAZ, no
 * FTZ).  SIMDe 0.7.4 computes a * exp2(floor(b)) with subnormal a and b
 * flushed: 2^floor(b) overflows to inf past 2^127 or underflows to 0
 * below 2^-149 even where a * 2^floor(b) is finite (the kernels scale
 * logits by 2^m_exp and back, m_exp up to about 250), and a subnormal a
 * comes back 0.  The special cases follow the SDM's table for VSCALEFPS
 * (QNaN_Indefinite for 0 * 2^+inf and inf * 2^-inf; a quiet NaN times
 * 2^+-inf is not a NaN). */
static inline float emu_scalef1(float a, float b) {
    const uint32_t ua = attn__f32_bits(a), ub = attn__f32_bits(b);
    const int b_inf = (ub & 0x7fffffffu) == 0x7f800000u;
    if ((ua & 0x7fffffffu) > 0x7f800000u) {
        /* a quiet NaN scaled by 2^+inf is +inf, by 2^-inf +0 (the table's
         * row for QNaN; seen on Zen 5 too) */
        if ((ua & 0x00400000u) && b_inf) return attn__bits_f32(ub >> 31 ? 0u : 0x7f800000u);
        return attn__bits_f32(ua | 0x00400000u); /* QNaN(a) */
    }
    if ((ub & 0x7fffffffu) > 0x7f800000u) return attn__bits_f32(ub | 0x00400000u); /* QNaN(b) */
    const int a_zero = (ua & 0x7fffffffu) == 0, a_inf = (ua & 0x7fffffffu) == 0x7f800000u;
    if (b_inf) {
        const int up = !(ub >> 31);
        if (up ? a_zero : a_inf) return attn__bits_f32(0xffc00000u); /* QNaN_Indefinite */
        return attn__bits_f32((ua & 0x80000000u) | (up ? 0x7f800000u : 0u));
    }
    if (a_zero || a_inf) return a;
    /* floor(b) beyond +-400 scales any finite a past the format's range */
    const float n = floorf(b);
    return ldexpf(a, n > 400.0f ? 400 : n < -400.0f ? -400 : (int)n);
}
static inline simde__m512 attn_emu_mm512_scalef_ps(simde__m512 a, simde__m512 b) {
    EMU_LANES(float, 16, x, a);
    EMU_LANES(float, 16, y, b);
    for (int i = 0; i < 16; i++) x[i] = emu_scalef1(x[i], y[i]);
    return EMU_VEC(simde__m512, x);
}
#undef _mm512_scalef_ps
#define _mm512_scalef_ps attn_emu_mm512_scalef_ps

/* ---- bf16: VCVTNE2PS2BF16 and VDPBF16PS, as the SDM defines them ---- */

/* subnormal -> zero of the same sign (the instructions' DAZ and FTZ) */
static inline float emu_daz(float f) {
    const uint32_t u = attn__f32_bits(f);
    return (u & 0x7f800000u) == 0 ? attn__bits_f32(u & 0x80000000u) : f;
}
static inline uint16_t emu_to_bf16(float f) {
    const uint32_t u = attn__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    if ((u & 0x7f800000u) == 0) return (uint16_t)((u >> 16) & 0x8000);      /* DAZ */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);                /* nearest even */
}
/* lanes 0-15 from b, 16-31 from a */
static inline simde__m512bh attn_emu_mm512_cvtne2ps_pbh(simde__m512 a, simde__m512 b) {
    EMU_LANES(float, 16, x, a);
    EMU_LANES(float, 16, y, b);
    uint16_t r[32];
    for (int i = 0; i < 16; i++) {
        r[i] = emu_to_bf16(y[i]);
        r[16 + i] = emu_to_bf16(x[i]);
    }
    return EMU_VEC(simde__m512bh, r);
}
static inline simde__m512 attn_emu_mm512_dpbf16_ps(simde__m512 src, simde__m512bh a,
                                                   simde__m512bh b) {
    EMU_LANES(float, 16, acc, src);
    EMU_LANES(uint16_t, 32, x, a);
    EMU_LANES(uint16_t, 32, y, b);
    for (int i = 0; i < 16; i++) {
        const float xo = emu_daz(attn__bits_f32((uint32_t)x[2 * i + 1] << 16));
        const float yo = emu_daz(attn__bits_f32((uint32_t)y[2 * i + 1] << 16));
        const float xe = emu_daz(attn__bits_f32((uint32_t)x[2 * i] << 16));
        const float ye = emu_daz(attn__bits_f32((uint32_t)y[2 * i] << 16));
        const float t = emu_daz(_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(xo), _mm_set_ss(yo),
                                                             _mm_set_ss(emu_daz(acc[i])))));
        acc[i] = emu_daz(_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(xe), _mm_set_ss(ye),
                                                    _mm_set_ss(t))));
    }
    return EMU_VEC(simde__m512, acc);
}
#undef _mm512_cvtne2ps_pbh
#define _mm512_cvtne2ps_pbh attn_emu_mm512_cvtne2ps_pbh
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps attn_emu_mm512_dpbf16_ps

#endif /* ATTN_KERNELS_AVX512_EMU_H */
