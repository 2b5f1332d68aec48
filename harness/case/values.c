/*
 * values.c — draws tensor values per distribution and rounds them into
 * their dtype.  The rounding and the block quantizer are the ABI's
 * reference codec (include/attnguard/dtype.h), sharing nothing with src/,
 * so that an engine conversion bug cannot hide in both.
 */
#include "values.h"
#include "rng.h"

#include <math.h>

/* The range and precision values are drawn at: the type's own (its
 * traits row: significand bits incl. the implicit one, the exponent of the
 * smallest normal, the largest finite value), but for the block types,
 * drawn at their scale's (f16's) precision up to the largest magnitude a
 * block's symmetric levels reach from an f16 scale (q8_0 and iq4_nl: 127,
 * not q8_0's lone -128), and for the _1 types within f16's own range (so
 * their f16 offset, the block's minimum, stays finite). */
typedef struct fmt {
    int prec;
    int emin;
    double max;
} fmt;

static fmt fmt_of(ag_dtype dt) {
    const ag_dtype_traits *t = ag_dtype_traits_of(dt);
    if (!t) t = ag_dtype_traits_of(AG_F32);
    fmt f = {t->mant_bits + 1, t->emin, t->max};
    switch (dt) {
    case AG_Q8_0: case AG_IQ4_NL: f.max = 65504.0 * 127.0; break;
    case AG_Q4_1: case AG_Q5_1: f.max = 65504.0; break;
    default: break;
    }
    return f;
}

double values_dtype_max(ag_dtype dt) { return fmt_of(dt).max; }

double values_dtype_tiny(ag_dtype dt) {
    fmt f = fmt_of(dt);
    return ldexp(1.0, f.emin - (f.prec - 1));
}

/* Values are rounded to fp32 first, then to the narrow type (as the
 * shipped cases and fuzz findings were made: their values stay put), by
 * the ABI's reference encoding (include/attnguard/dtype.h). */
void values_store(void *buf, size_t i, ag_dtype dt, double x) {
    ag_dtype_encode(buf, i, dt, (float)x);
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
                ((uint16_t *)buf)[i] = ag_encode_bf16((float)(amp * rng_unit(&state)));
            return;
        case AG_F16:
            for (size_t i = 0; i < n; i++)
                ((uint16_t *)buf)[i] = ag_encode_f16((float)(amp * rng_unit(&state)));
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
                ag_block_quantize((uint8_t *)buf + i / AG_DTYPE_BLOCK * bb, xs, dt);
        }
    }
}
