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
 * Widening (bf16/f16 -> fp32) is exact.
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
    default: return 0;
    }
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

#endif /* ATTN_DTYPE_H */
