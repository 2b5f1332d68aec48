/*
 * attnguard/dtype.h — the adapter ABI's element types: the enumeration,
 * one row of traits per type, and the reference encoding and decoding of
 * every layout the ABI documents (f32, bf16, f16, fp8 e4m3fn and e5m2,
 * the block types q8_0 .. iq4_nl).  Included by engine.h.
 *
 * Header-only on purpose: an adapter built as a shared object, the ABI's
 * own route, uses these with nothing of attnguard linked in (no `ag_`
 * symbol left undefined); the harness, its fuzz targets, reports and bench
 * read the same rows.  Static inline functions, the table inside one of
 * them; clean as C11 and C++17; needs libm (link with -lm).
 *
 * A new element type is one row of ag_dtype_traits_of's table plus its
 * codec cases below; docs/adding-a-dtype.md lists what else names a type.
 *
 * These are the ABI's definitions of the layouts, shared by the harness's
 * generator and its oracle; an engine's own conversions (attnguard's are
 * src/kernels/dtype.h) never come from here, so that a conversion bug
 * cannot hide in both.
 */
#ifndef ATTNGUARD_DTYPE_H
#define ATTNGUARD_DTYPE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#define AG_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define AG_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

typedef enum ag_dtype {
    AG_F32 = 0,
    AG_BF16 = 1,
    AG_F16 = 2,
    AG_FP8_E4M3 = 3,     /* e4m3fn: no infinities, 0x7f/0xff NaN, max 448 */
    AG_FP8_E5M2 = 4,     /* IEEE-like: infinities, max 57344 */
    /* Block types (KV caches, and an engine's declared q_dot): 32 elements
     * along head_dim share one f16 scale d (and an f16 offset m for the _1
     * types), stored in this order, little-endian, no padding.  A row of
     * head_dim elements is head_dim / 32 whole blocks: a head_dim that is
     * not a multiple of 32 cannot be expressed (AG_R_HEAD_DIM).  Element j
     * of a block, with n_j its stored integer:
     *   q8_0   d, int8 n[32]                         x = d n_j            34 bytes
     *   q4_0   d, u8 qs[16]                          x = d (n_j - 8)      18 bytes
     *   q4_1   d, m, u8 qs[16]                       x = d n_j + m        20 bytes
     *   q5_0   d, u8 qh[4], u8 qs[16]                x = d (n_j - 16)     22 bytes
     *   q5_1   d, m, u8 qh[4], u8 qs[16]             x = d n_j + m        24 bytes
     *   iq4_nl d, u8 qs[16]                          x = d T[n_j]         18 bytes
     * 4-bit fields: n_j is the low nibble of qs[j] for j < 16, the high
     * nibble of qs[j - 16] for j >= 16; the 5-bit types add bit j of the
     * little-endian 32-bit qh as n_j's bit 4.  T (iq4_nl's non-linear
     * levels) = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38,
     * 53, 69, 89, 113}.  These are ggml's layouts (llama.cpp's
     * --cache-type-k/v). */
    AG_Q8_0 = 5,
    AG_Q4_0 = 6,
    AG_Q4_1 = 7,
    AG_Q5_0 = 8,
    AG_Q5_1 = 9,
    AG_IQ4_NL = 10,
    AG_DTYPE_COUNT
} ag_dtype;

#define AG_DTYPE_BIT(d) (1u << (unsigned)(d))
#define AG_DTYPE_BLOCK 32      /* elements of one block of a block dtype */

/* What a type's elements are. */
typedef enum ag_dtype_kind {
    AG_KIND_FLOAT = 0,         /* a binary float with IEEE specials (f32, bf16, f16) */
    AG_KIND_FP8 = 1,           /* an 8-bit float of a KV cache: value = decode(code) times
                                  the layer's k_scale / v_scale (ag_layer) */
    AG_KIND_BLOCK = 2          /* AG_DTYPE_BLOCK elements sharing f16 scale (and offset) */
} ag_dtype_kind;

typedef struct ag_dtype_traits {
    const char *name;          /* the case format's and the messages' spelling */
    int32_t block;             /* elements per block: 1, or AG_DTYPE_BLOCK */
    int32_t block_bytes;       /* bytes of one block (of one element when block is 1) */
    int32_t kind;              /* ag_dtype_kind */
    int32_t mant_bits;         /* stored significand bits (a block type: its scale's, f16's) */
    int32_t emin;              /* exponent of the smallest normal (a block type: f16's) */
    int32_t has_inf;           /* 1: values past max round to infinity; 0: they saturate */
    int32_t levels;            /* a block type: the largest |n| of its levels (q8_0: 128,
                                  iq4_nl: 127, q4_0: 8, q5_0: 16, q4_1: 15, q5_1: 31); 0 else */
    double max;                /* the largest finite magnitude an element decodes to (a
                                  block type: from the largest f16 scale and offset) */
} ag_dtype_traits;

/* The row of d, or NULL outside the enumeration.  The one table of the
 * ABI's types: everything below reads it. */
static inline const ag_dtype_traits *ag_dtype_traits_of(ag_dtype d) {
    static const ag_dtype_traits k[] = {
        /* name       block  bytes kind           mant emin inf lev  max */
        {"f32", 1, 4, AG_KIND_FLOAT, 23, -126, 1, 0, 0x1.fffffep127},
        {"bf16", 1, 2, AG_KIND_FLOAT, 7, -126, 1, 0, 0x1.fep127},
        {"f16", 1, 2, AG_KIND_FLOAT, 10, -14, 1, 0, 65504.0},
        {"fp8e4m3", 1, 1, AG_KIND_FP8, 3, -6, 0, 0, 448.0},
        {"fp8e5m2", 1, 1, AG_KIND_FP8, 2, -14, 1, 0, 57344.0},
        {"q8_0", AG_DTYPE_BLOCK, 34, AG_KIND_BLOCK, 10, -14, 1, 128, 65504.0 * 128},
        {"q4_0", AG_DTYPE_BLOCK, 18, AG_KIND_BLOCK, 10, -14, 1, 8, 65504.0 * 8},
        {"q4_1", AG_DTYPE_BLOCK, 20, AG_KIND_BLOCK, 10, -14, 1, 15, 65504.0 * 16},
        {"q5_0", AG_DTYPE_BLOCK, 22, AG_KIND_BLOCK, 10, -14, 1, 16, 65504.0 * 16},
        {"q5_1", AG_DTYPE_BLOCK, 24, AG_KIND_BLOCK, 10, -14, 1, 31, 65504.0 * 32},
        {"iq4_nl", AG_DTYPE_BLOCK, 18, AG_KIND_BLOCK, 10, -14, 1, 127, 65504.0 * 127},
    };
    AG_STATIC_ASSERT(sizeof k / sizeof k[0] == AG_DTYPE_COUNT, "one traits row per ag_dtype");
    return (unsigned)d < AG_DTYPE_COUNT ? &k[d] : NULL;
}

/* "f32", "bf16", "f16", "fp8e4m3", "fp8e5m2", "q8_0", ...; NULL outside
 * the enumeration. */
static inline const char *ag_dtype_name(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t ? t->name : NULL;
}

/* Elements per block: AG_DTYPE_BLOCK for a block dtype, 1 for the others,
 * 0 outside the enumeration. */
static inline int ag_dtype_block(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t ? (int)t->block : 0;
}

/* Bytes per element; 0 outside the enumeration and for block dtypes. */
static inline size_t ag_dtype_size(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t && t->block == 1 ? (size_t)t->block_bytes : 0;
}

/* Bytes of n elements of d into *bytes (may be NULL): 0, or -1 (*bytes
 * 0) when d is outside the enumeration, n is not a whole number of d's
 * blocks, or the size overflows size_t. */
static inline int ag_dtype_bytes(ag_dtype d, size_t n, size_t *bytes) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    const size_t b = t ? (size_t)t->block : 1, bb = t ? (size_t)t->block_bytes : 0;
    const int ok = t && n % b == 0 && n / b <= (size_t)-1 / bb;
    if (bytes) *bytes = ok ? n / b * bb : 0;
    return ok ? 0 : -1;
}

static inline int ag_dtype_is_fp8(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t && t->kind == AG_KIND_FP8;
}

static inline int ag_dtype_is_block(ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    return t && t->kind == AG_KIND_BLOCK;
}

/* ------------------------------------------------------------ decoding
 * Exact: every value of these layouts is a double (and, but for the block
 * types, a float).  NaN codes decode to NaN with the code's sign. */

/* IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static inline double ag_decode_f16(uint16_t h) {
    const int ex = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (ex == 0) v = ldexp((double)mant, -24);               /* zero, subnormal */
    else if (ex == 31) v = mant ? NAN : INFINITY;
    else v = ldexp((double)(mant + 1024), ex - 25);          /* 1.m * 2^(ex - 15) */
    return (h >> 15) ? -v : v;
}

/* bf16: the top half of an IEEE single. */
static inline double ag_decode_bf16(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return (double)f;
}

/* e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities,
 * S.1111.111 is NaN, so exponent 15 is an ordinary binade (max 1.75 * 2^8). */
static inline double ag_decode_e4m3(uint8_t b) {
    const int ex = (b >> 3) & 0xf, mant = b & 0x7;
    double v;
    if (ex == 15 && mant == 7) v = NAN;
    else if (ex == 0) v = ldexp((double)mant, -9);           /* m/8 * 2^(1 - 7) */
    else v = ldexp((double)(mant + 8), ex - 10);             /* 1.m * 2^(ex - 7) */
    return (b >> 7) ? -v : v;
}

/* e5m2: 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE specials. */
static inline double ag_decode_e5m2(uint8_t b) {
    const int ex = (b >> 2) & 0x1f, mant = b & 0x3;
    double v;
    if (ex == 31) v = mant ? NAN : INFINITY;
    else if (ex == 0) v = ldexp((double)mant, -16);          /* m/4 * 2^(1 - 15) */
    else v = ldexp((double)(mant + 4), ex - 17);             /* 1.m * 2^(ex - 15) */
    return (b >> 7) ? -v : v;
}

/* The 4-bit field n_j of a block's 16 packed bytes qs (see ag_dtype). */
static inline int ag_block_nibble(const uint8_t *qs, int j) {
    return j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4;
}

/* Bit j of a block's little-endian 32-bit high-bit word qh. */
static inline int ag_block_high_bit(const uint8_t *qh, int j) { return (qh[j / 8] >> (j % 8)) & 1; }

/* The little-endian f16 at p. */
static inline double ag_decode_f16_at(const uint8_t *p) {
    return ag_decode_f16((uint16_t)(p[0] | (p[1] << 8)));
}

/* iq4_nl's non-linear levels T. */
static inline int ag_iq4_nl_level(int n) {
    static const int8_t k[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                 1,    13,   25,  38,  53,  69,  89,  113};
    return k[n & 15];
}

/* Element j (0 .. 31) of the block at b of block dtype t: d n (+ m),
 * exactly, as the layout defines it; NaN for a type that is not a block
 * type. */
static inline double ag_decode_block(const uint8_t *b, int j, ag_dtype t) {
    const double d = ag_decode_f16_at(b);
    switch (t) {
    case AG_Q8_0: return d * (double)(int8_t)b[2 + j];
    case AG_Q4_0: return d * (double)(ag_block_nibble(b + 2, j) - 8);
    case AG_Q4_1: return d * (double)ag_block_nibble(b + 4, j) + ag_decode_f16_at(b + 2);
    case AG_Q5_0:
        return d * (double)((ag_block_nibble(b + 6, j) | ag_block_high_bit(b + 2, j) << 4) - 16);
    case AG_Q5_1:
        return d * (double)(ag_block_nibble(b + 8, j) | ag_block_high_bit(b + 4, j) << 4) +
               ag_decode_f16_at(b + 2);
    case AG_IQ4_NL: return d * (double)ag_iq4_nl_level(ag_block_nibble(b + 2, j));
    default: return NAN;
    }
}

/* Element `index` of a buffer of dtype d (a block type: a run of whole
 * blocks, element i in block i / 32), exactly; fp8 without its scale.
 * NaN outside the enumeration. */
static inline double ag_dtype_decode(const void *base, size_t index, ag_dtype d) {
    switch (d) {
    case AG_F32: return (double)((const float *)base)[index];
    case AG_BF16: return ag_decode_bf16(((const uint16_t *)base)[index]);
    case AG_F16: return ag_decode_f16(((const uint16_t *)base)[index]);
    case AG_FP8_E4M3: return ag_decode_e4m3(((const uint8_t *)base)[index]);
    case AG_FP8_E5M2: return ag_decode_e5m2(((const uint8_t *)base)[index]);
    default: break;
    }
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    if (!t || t->kind != AG_KIND_BLOCK) return NAN;
    const uint8_t *b = (const uint8_t *)base + index / AG_DTYPE_BLOCK * (size_t)t->block_bytes;
    return ag_decode_block(b, (int)(index % AG_DTYPE_BLOCK), d);
}

/* ------------------------------------------------------------ encoding
 * Round to nearest, ties to even, subnormals kept. */

/* x rounded to d's precision and range: past the largest finite value,
 * +-infinity, or +-max for a type without infinities (e4m3fn saturates,
 * infinities included, as PyTorch's conversion does).  NaN and zeros
 * unchanged; f32 as well as the narrow types.  x unchanged for a block
 * type (its elements round by their block's scale: ag_block_quantize) and
 * outside the enumeration. */
static inline double ag_dtype_round(double x, ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    if (!t || t->kind == AG_KIND_BLOCK || isnan(x) || x == 0) return x;
    if (isinf(x)) return t->has_inf ? x : copysign(t->max, x);
    int e;
    (void)frexp(x, &e);                                      /* |x| in [2^(e-1), 2^e) */
    const int q = (e - 1 < t->emin ? t->emin : e - 1) - t->mant_bits;   /* quantum exponent */
    const double r = ldexp(nearbyint(ldexp(x, -q)), q);
    if (fabs(r) > t->max) return t->has_inf ? copysign(INFINITY, x) : copysign(t->max, x);
    return r;
}

/* float -> bf16 bits (NaN stays NaN, quiet, sign and top payload kept). */
static inline uint16_t ag_encode_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* float -> IEEE half bits, overflow to infinity (NaN: quiet, with its sign). */
static inline uint16_t ag_encode_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);   /* NaN */
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  /* >= 65520: rounds to inf */
    if (ax < 0x38800000u) {                                    /* below 2^-14: subnormal */
        /* in units of 2^-24, exact; adding and taking away 2^23 rounds to
         * an integer, to even (volatile: no reassociation) */
        volatile float v = fabsf(f) * 0x1p24f;
        const float r = (v + 0x1p23f) - 0x1p23f;
        return (uint16_t)(sign | (uint16_t)r);
    }
    /* normal: drop 13 mantissa bits to nearest even (a carry bumps the
     * exponent correctly), rebias 127 -> 15 */
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)((rounded >> 13) - (112u << 10)));
}

/* The code of x in an fp8 type d (AG_FP8_E4M3 or AG_FP8_E5M2), rounded by
 * ag_dtype_round: e4m3fn saturates at +-448; NaN is 0x7f (e4m3fn) or 0x7e
 * (e5m2), without its sign.  0 for another type. */
static inline uint8_t ag_encode_fp8(double x, ag_dtype d) {
    const ag_dtype_traits *t = ag_dtype_traits_of(d);
    if (!t || t->kind != AG_KIND_FP8) return 0;
    const double r = ag_dtype_round(x, d);
    if (isnan(r)) return d == AG_FP8_E4M3 ? 0x7f : 0x7e;
    const int mb = t->mant_bits, eb = 7 - mb, bias = (1 << (eb - 1)) - 1;
    const unsigned sign = signbit(r) ? 0x80u : 0u;
    const double a = fabs(r);
    if (isinf(a)) return (uint8_t)(sign | (((1u << eb) - 1) << mb));
    if (a == 0) return (uint8_t)sign;
    int e;
    const double m = frexp(a, &e);                          /* a = m 2^e, m in [0.5, 1) */
    const int be = e - 1 + bias;                            /* biased exponent if normal */
    if (be <= 0)                                            /* subnormal: k 2^(1-bias-mb) */
        return (uint8_t)(sign | (unsigned)ldexp(a, mb - 1 + bias));
    return (uint8_t)(sign | ((unsigned)be << mb) | (unsigned)ldexp(2 * m - 1, mb));
}

/* Store x into element i of a buffer of d, rounded as above (f32: as
 * given).  A block type has no single element to store: nothing is
 * written (ag_block_quantize writes whole blocks). */
static inline void ag_dtype_encode(void *buf, size_t i, ag_dtype d, float x) {
    switch (d) {
    case AG_F32: ((float *)buf)[i] = x; break;
    case AG_BF16: ((uint16_t *)buf)[i] = ag_encode_bf16(x); break;
    case AG_F16: ((uint16_t *)buf)[i] = ag_encode_f16(x); break;
    case AG_FP8_E4M3:
    case AG_FP8_E5M2: ((uint8_t *)buf)[i] = ag_encode_fp8((double)x, d); break;
    default: break;
    }
}

/* The little-endian f16 of x at p. */
static inline void ag_encode_f16_at(uint8_t *p, double x) {
    const uint16_t h = ag_encode_f16((float)x);
    p[0] = (uint8_t)(h & 0xffu);
    p[1] = (uint8_t)(h >> 8);
}

static inline void ag_block_put_nibble(uint8_t *qs, int j, int n) {
    if (j < 16) qs[j] = (uint8_t)((qs[j] & 0xf0u) | (unsigned)(n & 15));
    else qs[j - 16] = (uint8_t)((qs[j - 16] & 0x0fu) | (unsigned)(n & 15) << 4);
}

static inline void ag_block_put_high_bit(uint8_t *qh, int j, int bit) {
    if (bit) qh[j / 8] = (uint8_t)(qh[j / 8] | 1u << (j % 8));
}

/* x clamped to [lo, hi] as an int (NaN: lo). */
static inline int ag_clamp_level(double x, int lo, int hi) {
    if (!(x >= lo)) return lo;
    return x > hi ? hi : (int)x;
}

/* 32 finite values into one block of block dtype t, ag_dtype_bytes(t, 32)
 * bytes at b: a reference quantizer, not ggml's.  The scale is rounded to
 * f16 first, then every element to its nearest level of that scale.
 * Symmetric types take d from the element of largest magnitude, mapped to
 * the most negative level; the _1 types span [min, max] from an f16
 * offset.  A scale past f16's range is stored as 0.  Nothing is written
 * for a type that is not a block type. */
static inline void ag_block_quantize(uint8_t *b, const double *x, ag_dtype t) {
    const ag_dtype_traits *tr = ag_dtype_traits_of(t);
    if (!tr || tr->kind != AG_KIND_BLOCK) return;
    double mx = 0, lo = x[0], hi = x[0];
    for (int j = 0; j < AG_DTYPE_BLOCK; j++) {
        if (fabs(x[j]) > fabs(mx)) mx = x[j];
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    memset(b, 0, (size_t)tr->block_bytes);
    double d = 0, m = 0;
    switch (t) {
    case AG_Q8_0: d = ag_dtype_round((double)(float)(fabs(mx) / 127.0), AG_F16); break;
    case AG_Q4_0: d = ag_dtype_round((double)(float)(mx / -8.0), AG_F16); break;
    case AG_Q5_0: d = ag_dtype_round((double)(float)(mx / -16.0), AG_F16); break;
    case AG_IQ4_NL: d = ag_dtype_round((double)(float)(mx / -127.0), AG_F16); break;
    case AG_Q4_1:
    case AG_Q5_1:
        m = ag_dtype_round((double)(float)lo, AG_F16);
        d = ag_dtype_round((double)(float)((hi - m) / (t == AG_Q4_1 ? 15.0 : 31.0)), AG_F16);
        break;
    default: return;
    }
    if (!isfinite(d)) d = 0;
    ag_encode_f16_at(b, d);
    if (t == AG_Q4_1 || t == AG_Q5_1) ag_encode_f16_at(b + 2, m);
    for (int j = 0; j < AG_DTYPE_BLOCK; j++) {
        const double v = d != 0 ? (x[j] - m) / d : 0.0;
        switch (t) {
        case AG_Q8_0: b[2 + j] = (uint8_t)(int8_t)ag_clamp_level(nearbyint(v), -127, 127); break;
        case AG_Q4_0: ag_block_put_nibble(b + 2, j, ag_clamp_level(nearbyint(v) + 8, 0, 15)); break;
        case AG_Q4_1: ag_block_put_nibble(b + 4, j, ag_clamp_level(nearbyint(v), 0, 15)); break;
        case AG_Q5_0: {
            const int n = ag_clamp_level(nearbyint(v) + 16, 0, 31);
            ag_block_put_nibble(b + 6, j, n);
            ag_block_put_high_bit(b + 2, j, n >> 4);
            break;
        }
        case AG_Q5_1: {
            const int n = ag_clamp_level(nearbyint(v), 0, 31);
            ag_block_put_nibble(b + 8, j, n);
            ag_block_put_high_bit(b + 4, j, n >> 4);
            break;
        }
        case AG_IQ4_NL: {
            int best = 0;
            for (int k = 1; k < 16; k++)
                if (fabs(v - ag_iq4_nl_level(k)) < fabs(v - ag_iq4_nl_level(best))) best = k;
            ag_block_put_nibble(b + 2, j, best);
            break;
        }
        default: break;
        }
    }
}

#ifdef __cplusplus
}
#endif
#endif /* ATTNGUARD_DTYPE_H */
