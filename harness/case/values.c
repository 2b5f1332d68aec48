/*
 * values.c — draws tensor values per distribution and rounds them into
 * their dtype.  The rounding here is the harness's own (a double rounded
 * once with nearbyint at the target's precision), sharing nothing with
 * src/, so that an engine conversion bug cannot hide in both.
 */
#include "values.h"
#include "problem.h"
#include "rng.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Target formats: significand bits incl. the implicit one, the exponent of
 * the smallest normal, the largest finite value, infinities or not. */
typedef struct fmt {
    int prec;
    int emin;
    double max;
    int has_inf;
} fmt;

static fmt fmt_of(ag_dtype dt) {
    switch (dt) {
    case AG_BF16: return (fmt){8, -126, 0x1.fep127, 1};
    case AG_F16: return (fmt){11, -14, 65504.0, 1};
    case AG_FP8_E4M3: return (fmt){4, -6, 448.0, 0};
    case AG_FP8_E5M2: return (fmt){3, -14, 57344.0, 1};
    /* block types: values are drawn at the scale's (f16's) precision and
     * range, up to the largest magnitude a block's levels reach from an f16
     * scale (an _1 type's offset is an f16 itself) */
    case AG_Q8_0: case AG_IQ4_NL: return (fmt){11, -14, 65504.0 * 127.0, 1};
    case AG_Q4_0: return (fmt){11, -14, 65504.0 * 8.0, 1};
    case AG_Q5_0: return (fmt){11, -14, 65504.0 * 16.0, 1};
    case AG_Q4_1: case AG_Q5_1: return (fmt){11, -14, 65504.0, 1};
    default: return (fmt){24, -126, (double)FLT_MAX, 1};
    }
}

double values_dtype_max(ag_dtype dt) { return fmt_of(dt).max; }

double values_dtype_tiny(ag_dtype dt) {
    fmt f = fmt_of(dt);
    return ldexp(1.0, f.emin - (f.prec - 1));
}

/* x rounded to nearest even at f's precision (subnormals included);
 * beyond max: +-inf, or +-max for formats without infinities. */
static double round_to(double x, fmt f) {
    if (isnan(x) || x == 0) return x;
    int e;
    frexp(x, &e);                       /* |x| in [2^(e-1), 2^e) */
    int q = (e - 1 < f.emin ? f.emin : e - 1) - (f.prec - 1);   /* quantum exponent */
    double r = ldexp(nearbyint(ldexp(x, -q)), q);
    if (fabs(r) > f.max) {
        /* the rounding boundary: halfway between max and the next step */
        if (!f.has_inf) return copysign(f.max, x);
        return copysign(INFINITY, x);
    }
    return r;
}

/* Bits of a rounded value in an 8-bit or 16-bit minifloat (no NaN input). */
static unsigned encode_small(double r, int ebits, int mbits, int bias, int has_inf) {
    unsigned sign = signbit(r) ? 1u << (ebits + mbits) : 0;
    double a = fabs(r);
    if (isinf(a)) return sign | (((1u << ebits) - 1) << mbits);
    if (a == 0) return sign;
    (void)has_inf;
    int e;
    double m = frexp(a, &e);            /* a = m 2^e, m in [0.5, 1) */
    int be = e - 1 + bias;              /* biased exponent if normal */
    if (be <= 0)                        /* subnormal: a = k 2^(1 - bias - mbits) */
        return sign | (unsigned)ldexp(a, mbits - 1 + bias);
    unsigned frac = (unsigned)ldexp(2 * m - 1, mbits);
    return sign | ((unsigned)be << mbits) | frac;
}

/* float -> bf16 bits, round to nearest even (NaN kept quiet). */
static uint16_t bf16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* float -> IEEE half bits, round to nearest even, subnormals and overflow
 * to infinity included. */
static uint16_t f16_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return sign | 0x7e00u;          /* NaN */
    if (ax >= 0x477ff000u) return sign | 0x7c00u;         /* >= 65520: rounds to inf */
    if (ax < 0x38800000u) {                               /* below 2^-14: subnormal */
        volatile float v = fabsf(f) * 0x1p24f;            /* in units of 2^-24, exact */
        const float r = (v + 0x1p23f) - 0x1p23f;          /* round to nearest even */
        return sign | (uint16_t)r;
    }
    /* normal: drop 13 mantissa bits to nearest even (a carry bumps the
     * exponent correctly), rebias 127 -> 15 */
    const uint32_t rounded = ax + 0xfffu + ((ax >> 13) & 1u);
    return sign | (uint16_t)((rounded >> 13) - (112u << 10));
}

/* Values are rounded to fp32 first, then to the narrow type (as the
 * shipped cases and fuzz findings were made: their values stay put). */
void values_store(void *buf, size_t i, ag_dtype dt, double x) {
    const float f = (float)x;
    switch (dt) {
    case AG_F32: ((float *)buf)[i] = f; break;
    case AG_BF16: ((uint16_t *)buf)[i] = bf16_bits(f); break;
    case AG_F16: ((uint16_t *)buf)[i] = f16_bits(f); break;
    case AG_FP8_E4M3:
    case AG_FP8_E5M2: {
        const double r = round_to((double)f, fmt_of(dt));
        ((uint8_t *)buf)[i] = dt == AG_FP8_E4M3
                                  ? (isnan(r) ? 0x7f : (uint8_t)encode_small(r, 4, 3, 7, 0))
                                  : (isnan(r) ? 0x7e : (uint8_t)encode_small(r, 5, 2, 15, 1));
        break;
    }
    default: break;
    }
}

/* ------------------------------------------------------- block types */

static void put_f16(uint8_t *p, double x) {
    const uint16_t h = f16_bits((float)x);
    p[0] = (uint8_t)(h & 0xffu);
    p[1] = (uint8_t)(h >> 8);
}

/* x rounded to f16 (the value a scale stored as f16 holds). */
static double as_f16(double x) { return round_to((double)(float)x, fmt_of(AG_F16)); }

static int clampi(double x, int lo, int hi) {
    if (!(x >= lo)) return lo;   /* NaN too */
    return x > hi ? hi : (int)x;
}

/* 4-bit field j of a block's packed bytes (engine.h, ag_dtype). */
static void put_nibble(uint8_t *qs, int j, int n) {
    if (j < 16) qs[j] = (uint8_t)((qs[j] & 0xf0u) | (unsigned)(n & 15));
    else qs[j - 16] = (uint8_t)((qs[j - 16] & 0x0fu) | (unsigned)(n & 15) << 4);
}

static void put_high(uint8_t *qh, int j, int bit) {
    if (bit) qh[j / 8] = (uint8_t)(qh[j / 8] | 1u << (j % 8));
}

/* 32 finite values into one block of dt (the harness's own quantizer:
 * the scale rounded to f16 first, then every element to its nearest
 * level of that scale).  Symmetric types take d from the element of
 * largest magnitude, mapped to the most negative level; _1 types span
 * [min, max] from an f16 offset. */
static void quantize_block(uint8_t *b, const double *x, ag_dtype dt) {
    static const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};
    double mx = 0, lo = x[0], hi = x[0];
    for (int j = 0; j < AG_DTYPE_BLOCK; j++) {
        if (fabs(x[j]) > fabs(mx)) mx = x[j];
        if (x[j] < lo) lo = x[j];
        if (x[j] > hi) hi = x[j];
    }
    size_t bb = 0;
    (void)ag_dtype_bytes(dt, AG_DTYPE_BLOCK, &bb);
    memset(b, 0, bb);
    double d, m = 0;
    switch (dt) {
    case AG_Q8_0: d = as_f16(fabs(mx) / 127.0); break;
    case AG_Q4_0: d = as_f16(mx / -8.0); break;
    case AG_Q5_0: d = as_f16(mx / -16.0); break;
    case AG_IQ4_NL: d = as_f16(mx / -127.0); break;
    case AG_Q4_1: m = as_f16(lo), d = as_f16((hi - m) / 15.0); break;
    case AG_Q5_1: m = as_f16(lo), d = as_f16((hi - m) / 31.0); break;
    default: return;
    }
    if (!isfinite(d)) d = 0;   /* values stay finite: a scale past f16 is not drawn */
    put_f16(b, d);
    if (dt == AG_Q4_1 || dt == AG_Q5_1) put_f16(b + 2, m);
    for (int j = 0; j < AG_DTYPE_BLOCK; j++) {
        const double t = d != 0 ? (x[j] - m) / d : 0.0;
        switch (dt) {
        case AG_Q8_0: b[2 + j] = (uint8_t)(int8_t)clampi(nearbyint(t), -127, 127); break;
        case AG_Q4_0: put_nibble(b + 2, j, clampi(nearbyint(t) + 8, 0, 15)); break;
        case AG_Q4_1: put_nibble(b + 4, j, clampi(nearbyint(t), 0, 15)); break;
        case AG_Q5_0: {
            const int n = clampi(nearbyint(t) + 16, 0, 31);
            put_nibble(b + 6, j, n);
            put_high(b + 2, j, n >> 4);
            break;
        }
        case AG_Q5_1: {
            const int n = clampi(nearbyint(t), 0, 31);
            put_nibble(b + 8, j, n);
            put_high(b + 4, j, n >> 4);
            break;
        }
        case AG_IQ4_NL: {
            int best = 0;
            for (int k = 1; k < 16; k++)
                if (fabs(t - levels[k]) < fabs(t - levels[best])) best = k;
            put_nibble(b + 2, j, best);
            break;
        }
        default: break;
        }
    }
}

/* Standard normal from two uniforms (Box-Muller). */
static double normal(uint64_t *s) {
    double u1 = ((double)(rng_next(s) >> 11) + 0.5) * 0x1.0p-53;
    double u2 = (double)(rng_next(s) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

void values_fill(void *buf, size_t n, size_t row, ag_dtype dt, const case_values *v,
                 uint64_t state) {
    const fmt f = fmt_of(dt);
    double amp = v && v->amp > 0 && isfinite(v->amp) ? (double)v->amp : 1.0;
    if (amp > f.max) amp = f.max;
    const int dist = v ? v->dist : CASE_DIST_UNIFORM;
    if (row == 0) row = 1;
    if (dist == CASE_DIST_UNIFORM) {
        /* the common case, one loop per dtype (the switch per element was
         * a tenth of fuzz_attention's time) */
        switch (dt) {
        case AG_F32:
            for (size_t i = 0; i < n; i++) ((float *)buf)[i] = (float)(amp * rng_unit(&state));
            return;
        case AG_BF16:
            for (size_t i = 0; i < n; i++)
                ((uint16_t *)buf)[i] = bf16_bits((float)(amp * rng_unit(&state)));
            return;
        case AG_F16:
            for (size_t i = 0; i < n; i++)
                ((uint16_t *)buf)[i] = f16_bits((float)(amp * rng_unit(&state)));
            return;
        default: break;
        }
    }
    /* a block type: values gathered per block of 32 and quantized (n is a
     * whole number of blocks; a partial last block is not written) */
    const int blk = ag_dtype_block(dt) > 1;
    size_t bb = 0;
    (void)ag_dtype_bytes(dt, AG_DTYPE_BLOCK, &bb);
    double xs[AG_DTYPE_BLOCK];
    double row_val = 0;
    size_t hot = 0;
    for (size_t i = 0; i < n; i++) {
        const size_t j = i % row;
        double x;
        switch (dist) {
        case CASE_DIST_NORMAL: x = amp * normal(&state); break;
        case CASE_DIST_HEAVY:
            x = amp * rng_unit(&state);
            if ((rng_next(&state) & 63u) == 0) x *= 4096.0;   /* a rare outlier */
            break;
        case CASE_DIST_CONST_ROW:
            if (j == 0) row_val = amp * rng_unit(&state);
            x = row_val;
            break;
        case CASE_DIST_ONE_HOT:
            if (j == 0) hot = (size_t)(rng_next(&state) % row);
            x = j == hot ? ((rng_next(&state) & 1u) ? amp : -amp) : 0.0;
            break;
        case CASE_DIST_DENORMAL: {
            /* k x the smallest subnormal, k below 2^(prec-1): every subnormal */
            const uint64_t span = (uint64_t)1 << (f.prec - 1);
            const uint64_t r = rng_next(&state);
            x = (double)(1 + (r >> 1) % (span - 1)) * values_dtype_tiny(dt);
            if (r & 1u) x = -x;
            break;
        }
        case CASE_DIST_SPIKE:
            /* one element of amp among ordinary ones: with amp between 2^32
             * and the excuse (max|q| sum|k| < FLT_MAX) a q row takes the
             * engine's fp64 path while it is judged; K or V rows near the
             * overflow edge overflow in one element, at any position */
            if (j == 0) hot = (size_t)(rng_next(&state) % row);
            x = j == hot ? ((rng_next(&state) & 1u) ? amp : -amp) : rng_unit(&state);
            break;
        case CASE_DIST_EXTREME: {
            const uint64_t r = rng_next(&state);
            x = (r & 3u) == 0 ? ((r & 4u) ? f.max : -f.max) : amp * rng_unit(&state);
            break;
        }
        default: x = amp * rng_unit(&state); break;
        }
        if (fabs(x) > f.max) x = copysign(f.max, x);   /* values stay finite */
        if (!blk) {
            values_store(buf, i, dt, x);
        } else {
            xs[i % AG_DTYPE_BLOCK] = (double)(float)x;
            if (i % AG_DTYPE_BLOCK == AG_DTYPE_BLOCK - 1)
                quantize_block((uint8_t *)buf + i / AG_DTYPE_BLOCK * bb, xs, dt);
        }
    }
}
