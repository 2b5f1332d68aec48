/*
 * dtype.h — scalar element conversions used by the kernels.
 *
 * Owns: bf16 <-> fp32 and IEEE binary16 (f16) <-> fp32, as static inline
 * functions on raw uint16_t bit patterns.  Portable C11: bit casts go through
 * memcpy (no union punning, no pointer aliasing), so there is no undefined
 * behaviour and compilers still fold them to register moves.
 *
 * Rounding: fp32 -> bf16/f16 is round-to-nearest, ties-to-even (what the
 * hardware converters VCVTNEPS2BF16 / VCVTPS2PH with imm 0 do, so the SIMD
 * twins can be held bit-exact to these).  NaN stays NaN and becomes quiet
 * (sign and the top payload bits kept); infinities stay infinities; f16
 * handles subnormals in both directions and overflows to +-inf.
 *
 * Widening (bf16/f16/fp8 -> fp32) is exact; an fp8 NaN becomes an fp32
 * NaN with its sign, the fp8 mantissa as the top mantissa bits and the
 * quiet bit set (the rule the f16 widening follows).
 *
 * fp32 -> fp8 (the KV writer only): round to nearest even; e4m3fn
 * saturates (|x| >= 448 and +-inf become +-448, the conversion vLLM's
 * fp8 KV writers use), NaN becomes 0x7f with the sign; e5m2 is IEEE-like
 * (overflow to +-inf), NaN stays NaN with its top payload bits and the
 * quiet bit set.
 *
 * Also owns the element size of each dtype (attn__dtype_size, inline so
 * that kernels specialised on a constant dtype see a constant size; the
 * public attn_dtype_size() returns the same).
 */
#ifndef ATTN_DTYPE_H
#define ATTN_DTYPE_H

#include "../attn.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bytes per element; 0 for a value outside the enum. */
static inline size_t attn__dtype_size(attn_dtype dtype) {
    switch (dtype) {
    case ATTN_DTYPE_F32: return 4;
    case ATTN_DTYPE_BF16: return 2;
    case ATTN_DTYPE_F16: return 2;
    case ATTN_DTYPE_FP8_E4M3: return 1;
    case ATTN_DTYPE_FP8_E5M2: return 1;
    default: return 0;
    }
}

/* An fp8 type: its elements are codes times the layer's k/v scale. */
static inline int attn__dtype_is_fp8(attn_dtype dtype) {
    return dtype == ATTN_DTYPE_FP8_E4M3 || dtype == ATTN_DTYPE_FP8_E5M2;
}

static inline uint32_t attn__f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float attn__bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- bf16: the top 16 bits of an fp32 ---- */

static inline float attn__bf16_to_f32(uint16_t h) {
    return attn__bits_f32((uint32_t)h << 16);
}

static inline uint16_t attn__f32_to_bf16(float f) {
    uint32_t u = attn__f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        /* NaN: truncating could clear every remaining mantissa bit (and turn
         * it into inf); setting the quiet bit keeps it a (quiet) NaN. */
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    /* RNE: add 0x7fff plus the lowest kept bit, then truncate.  A carry out
     * of the mantissa correctly bumps the exponent (up to inf for values at
     * or above the bf16 rounding threshold); inf itself is unchanged. */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- f16: IEEE 754 binary16, 1-5-10 ---- */

static inline float attn__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24, exact in fp32 (man < 2^10) */
        float v = (float)man * 5.9604644775390625e-8f;
        return attn__bits_f32(attn__f32_bits(v) | sign);
    }
    if (exp == 31) /* inf, or NaN forced quiet with its payload kept */
        return attn__bits_f32(sign | 0x7f800000u | (man ? 0x00400000u | (man << 13) : 0u));
    return attn__bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

static inline uint16_t attn__f32_to_f16(float f) {
    uint32_t u = attn__f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t ax = u & 0x7fffffffu;
    if (ax >= 0x7f800000u) {
        if (ax > 0x7f800000u) /* NaN: quiet, top payload bits kept */
            return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
        return (uint16_t)(sign | 0x7c00u);
    }
    /* 65520 = halfway between 65504 (max f16) and 2^16: the tie rounds to
     * the even neighbour, which is 2^16 = inf, so everything from here up
     * overflows. */
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        /* |f| < 2^-14: f16 subnormal (or zero); result = round(|f| / 2^-24).
         * |f| = m * 2^(e - 150) with the implicit bit, so |f| / 2^-24 =
         * m >> (126 - e). */
        uint32_t e = ax >> 23;
        if (e < 102) /* |f| < 2^-25: rounds to zero (shift would be > 24) */
            return sign;
        uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u)))
            r++; /* may carry into 0x400 = smallest normal: still correct */
        return (uint16_t)(sign | r);
    }
    /* normal: rebias the exponent, keep 10 mantissa bits, RNE on the 13
     * dropped ones; a mantissa carry bumps the exponent (never past 30,
     * the overflow case was handled above). */
    uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3ffu);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

/* ---- fp8 e4m3fn: 1-4-3, bias 7, no infinities, S.1111.111 NaN ---- */

static inline float attn__fp8e4m3_to_f32(uint8_t b) {
    const uint32_t sign = (uint32_t)(b & 0x80u) << 24, em = b & 0x7fu;
    if (em == 0x7fu) return attn__bits_f32(sign | 0x7ff00000u); /* quiet, mantissa 111 kept */
    /* em << 7 (with the sign at bit 15) is an f16 with exponent field e
     * and mantissa m << 7: the value times 2^-8 for normal and subnormal
     * codes alike (f16 subnormals); one exact multiply by 2^8 rebiases.
     * (Not an fp32 subnormal times 2^120: a multiply with a subnormal
     * operand is slow on some CPUs; the SIMD twins take this route too.) */
    return attn__f16_to_f32((uint16_t)((uint32_t)(b & 0x80u) << 8 | em << 7)) * 0x1p8f;
}

static inline uint8_t attn__f32_to_fp8e4m3(float f) {
    const uint32_t u = attn__f32_bits(f), ax = u & 0x7fffffffu;
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (ax > 0x7f800000u) return (uint8_t)(sign | 0x7fu);   /* NaN */
    if (ax >= 0x43e00000u) return (uint8_t)(sign | 0x7eu);  /* |f| >= 448, inf: saturate */
    const uint32_t e = ax >> 23;
    if (e < 121) {
        /* |f| < 2^-6: a subnormal m * 2^-9 (m = 8 is the smallest normal);
         * |f| / 2^-9 = mant >> (141 - e).  Below 2^-10 it rounds to 0
         * (2^-10 itself is the tie, and 0 is even). */
        if (e < 117) return sign;
        const uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 141u - e; /* 21..24 */
        uint32_t r = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint8_t)(sign | r);
    }
    /* normal: rebias, keep 3 mantissa bits, RNE on the 20 dropped; below
     * 448 a carry never passes 0x7e */
    uint32_t h = ((e - 120u) << 3) | ((ax >> 20) & 7u);
    const uint32_t rem = ax & 0xfffffu;
    if (rem > 0x80000u || (rem == 0x80000u && (h & 1u))) h++;
    return (uint8_t)(sign | h);
}

/* ---- fp8 e5m2: 1-5-2, bias 15: the top byte of an f16 ---- */

static inline float attn__fp8e5m2_to_f32(uint8_t b) {
    return attn__f16_to_f32((uint16_t)((uint16_t)b << 8));
}

static inline uint8_t attn__f32_to_fp8e5m2(float f) {
    const uint32_t u = attn__f32_bits(f), ax = u & 0x7fffffffu;
    const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    if (ax > 0x7f800000u) /* NaN: quiet, top payload bit kept */
        return (uint8_t)(sign | 0x7eu | ((ax >> 21) & 1u));
    /* 61440 = halfway between 57344 (max e5m2) and 2^16: the tie rounds to
     * the even neighbour 2^16 = inf, so everything from here up (and inf)
     * overflows */
    if (ax >= 0x47700000u) return (uint8_t)(sign | 0x7cu);
    const uint32_t e = ax >> 23;
    if (e < 113) {
        /* |f| < 2^-14: a subnormal m * 2^-16; |f| / 2^-16 = mant >> (134 - e) */
        if (e < 110) return sign;
        const uint32_t mant = (ax & 0x7fffffu) | 0x800000u, shift = 134u - e; /* 22..24 */
        uint32_t r = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint8_t)(sign | r);
    }
    uint32_t h = ((e - 112u) << 2) | ((ax >> 21) & 3u);
    const uint32_t rem = ax & 0x1fffffu;
    if (rem > 0x100000u || (rem == 0x100000u && (h & 1u))) h++; /* may carry to inf: right */
    return (uint8_t)(sign | h);
}

/* Element i of a row of dtype dt at base, widened to fp32 (any dtype). */
static inline float attn__elem_f32(attn_dtype dt, const void *base, size_t i) {
    switch (dt) {
    case ATTN_DTYPE_F32: return ((const float *)base)[i];
    case ATTN_DTYPE_BF16: return attn__bf16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_F16: return attn__f16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_FP8_E4M3: return attn__fp8e4m3_to_f32(((const uint8_t *)base)[i]);
    case ATTN_DTYPE_FP8_E5M2: return attn__fp8e5m2_to_f32(((const uint8_t *)base)[i]);
    default: return 0.0f;
    }
}

/* Convert n elements of type dt starting at element `off` of `base` to fp32.
 * Called with a constant dt from each typed kernel, so it inlines to one
 * straight loop per dtype (the portable kernels; the executor's fp64
 * path, src/wide.c, with its dtype looked at once per row). */
static inline void attn__row_f32(attn_dtype dt, const void *base, size_t off, int32_t n,
                                 float *dst) {
    switch (dt) {
    case ATTN_DTYPE_F32: {
        const float *s = (const float *)base + off;
        for (int32_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case ATTN_DTYPE_BF16: {
        const uint16_t *s = (const uint16_t *)base + off;
        for (int32_t i = 0; i < n; i++) dst[i] = attn__bf16_to_f32(s[i]);
        break;
    }
    case ATTN_DTYPE_F16: {
        const uint16_t *s = (const uint16_t *)base + off;
        for (int32_t i = 0; i < n; i++) dst[i] = attn__f16_to_f32(s[i]);
        break;
    }
    case ATTN_DTYPE_FP8_E4M3: {
        const uint8_t *s = (const uint8_t *)base + off;
        for (int32_t i = 0; i < n; i++) dst[i] = attn__fp8e4m3_to_f32(s[i]);
        break;
    }
    case ATTN_DTYPE_FP8_E5M2: {
        const uint8_t *s = (const uint8_t *)base + off;
        for (int32_t i = 0; i < n; i++) dst[i] = attn__fp8e5m2_to_f32(s[i]);
        break;
    }
    default:
        break;
    }
}

#endif /* ATTN_DTYPE_H */
