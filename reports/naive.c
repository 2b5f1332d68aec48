/*
 * naive.c — the same-precision naive baseline of the differential report
 * (see naive.h).  Two passes per query row over the visible keys: logits
 * into a row buffer and their max, then the weights, their sum and the
 * weighted sum of V rows; one division and one rounding to the output
 * dtype at the end.  Where the engine declares a rounding (q_dot, p_dot,
 * acc other than f32) the baseline rounds at the same three points.
 *
 * Deliberately independent: decoding, rounding and masking are written
 * here again from DESIGN §2 instead of being borrowed from src/ or harness/.
 */
#include "naive.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ formats */

/* A binary float format: mantissa bits (without the hidden one), the
 * least normal exponent, the largest finite value, and whether values
 * beyond it round to infinity (else they saturate: e4m3fn has none). */
typedef struct fmt {
    int mbits, emin;
    double max;
    int has_inf;
} fmt;

static const fmt *fmt_of(ag_dtype dt) {
    static const fmt k[AG_DTYPE_COUNT] = {
        [AG_F32] = {23, -126, FLT_MAX, 1},
        [AG_BF16] = {7, -126, 0x1.fep127, 1},
        [AG_F16] = {10, -14, 65504.0, 1},
        [AG_FP8_E4M3] = {3, -6, 448.0, 0},
        [AG_FP8_E5M2] = {2, -14, 57344.0, 1},
    };
    return (unsigned)dt < AG_DTYPE_COUNT ? &k[dt] : NULL;
}

/* x rounded to nearest even into the format (subnormals kept). */
static double round_fmt(double x, const fmt *f) {
    if (x == 0 || !isfinite(x)) return x;
    const double a = fabs(x);
    int e;
    (void)frexp(a, &e);                        /* a in [2^(e-1), 2^e) */
    const int ex = e - 1 < f->emin ? f->emin : e - 1;
    const double ulp = ldexp(1.0, ex - f->mbits);
    double r = rint(a / ulp) * ulp;            /* a / ulp is exact: a power of two */
    if (r > f->max) r = f->has_inf ? INFINITY : f->max;
    return copysign(r, x);
}

/* x rounded to dt, as a float (f32: unchanged). */
static float round_to(ag_dtype dt, float x) {
    return dt == AG_F32 ? x : (float)round_fmt(x, fmt_of(dt));
}

/* Element i of a buffer of dtype dt, decoded from its bits. */
static float load(const void *base, size_t i, ag_dtype dt) {
    switch (dt) {
    case AG_F32:
        return ((const float *)base)[i];
    case AG_BF16: {
        const uint32_t w = (uint32_t)((const uint16_t *)base)[i] << 16;
        float f;
        memcpy(&f, &w, sizeof f);
        return f;
    }
    case AG_F16: {   /* 1 sign, 5 exponent (bias 15), 10 mantissa bits */
        const unsigned h = ((const uint16_t *)base)[i], e = (h >> 10) & 31u, m = h & 1023u;
        const float mag = e == 0 ? ldexpf((float)m, -24)
                          : e == 31 ? (m ? NAN : INFINITY)
                                    : ldexpf((float)(m | 1024u), (int)e - 25);
        return (h & 0x8000u) ? -mag : mag;
    }
    case AG_FP8_E4M3: {   /* 1, 4 (bias 7), 3; no infinity, S.1111.111 is NaN */
        const unsigned b = ((const uint8_t *)base)[i], e = (b >> 3) & 15u, m = b & 7u;
        const float mag = e == 0 ? ldexpf((float)m, -9)
                          : (e == 15 && m == 7) ? NAN
                                                : ldexpf((float)(m | 8u), (int)e - 10);
        return (b & 0x80u) ? -mag : mag;
    }
    case AG_FP8_E5M2: {   /* 1, 5 (bias 15), 2; IEEE-like */
        const unsigned b = ((const uint8_t *)base)[i], e = (b >> 2) & 31u, m = b & 3u;
        const float mag = e == 0 ? ldexpf((float)m, -16)
                          : e == 31 ? (m ? NAN : INFINITY)
                                    : ldexpf((float)(m | 4u), (int)e - 17);
        return (b & 0x80u) ? -mag : mag;
    }
    default:
        return NAN;
    }
}

/* v (already representable in f16) as f16 bits. */
static uint16_t f16_bits(double v) {
    const uint16_t sign = signbit(v) ? 0x8000u : 0u;
    const double a = fabs(v);
    if (isnan(v)) return 0x7e00u;
    if (isinf(v)) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14) return (uint16_t)(sign | (uint16_t)(a * 0x1p24));
    int e;
    (void)frexp(a, &e);
    const unsigned mant = (unsigned)((a / ldexp(1.0, e - 1) - 1.0) * 1024.0);
    return (uint16_t)(sign | (unsigned)(e - 1 + 15) << 10 | mant);
}

/* Store v rounded to nearest even into element i of an output buffer. */
static void store(void *base, size_t i, ag_dtype dt, float v) {
    if (dt == AG_F32) {
        ((float *)base)[i] = v;
    } else if (dt == AG_BF16) {
        const float r = isnan(v) ? NAN : round_to(AG_BF16, v);
        uint32_t w;
        memcpy(&w, &r, sizeof w);
        ((uint16_t *)base)[i] = isnan(v) ? 0x7fc0u : (uint16_t)(w >> 16);
    } else {
        ((uint16_t *)base)[i] = f16_bits(round_fmt(v, fmt_of(AG_F16)));
    }
}

/* ------------------------------------------------------------ masking */

/* DESIGN §2: key k (< seq_len, the caller's loop) is visible from
 * position p when a causal row has k <= p, and k lies in [p - left,
 * p + right] for the bounds that are set. */
static int visible(long k, long p, int causal, int32_t left, int32_t right) {
    if (causal && k > p) return 0;
    if (left >= 0 && k < p - left) return 0;
    if (right >= 0 && k > p + right) return 0;
    return 1;
}

/* The first element of token k's row for KV head kvh, request r. */
static size_t row_at(const naive_input *in, int32_t r, long k, int32_t kvh) {
    const size_t blk = (size_t)in->block_table[(size_t)r * (size_t)in->block_table_stride +
                                               (size_t)(k / in->block_size)];
    const size_t row = blk * (size_t)in->block_size + (size_t)(k % in->block_size);
    return (row * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)in->head_dim;
}

static int is_fp8(ag_dtype dt) { return dt == AG_FP8_E4M3 || dt == AG_FP8_E5M2; }

static int valid(const naive_input *in) {
    const ag_precision *pr = &in->precision;
    return in->num_reqs >= 1 && in->num_heads >= 1 && in->num_kv_heads >= 1 &&
           in->num_heads % in->num_kv_heads == 0 && in->head_dim >= 1 && in->block_size >= 1 &&
           in->query_start_loc && in->seq_lens && in->causal && in->block_table && in->q &&
           in->k_rows && in->v_rows && fmt_of(in->q_dtype) && fmt_of(in->kv_dtype) &&
           (in->out_dtype == AG_F32 || in->out_dtype == AG_BF16 || in->out_dtype == AG_F16) &&
           fmt_of(pr->q_dot) && fmt_of(pr->p_dot) && fmt_of(pr->acc) &&
           (!is_fp8(in->kv_dtype) || (in->k_scale > 0 && in->v_scale > 0));
}

/* ------------------------------------------------------------ attention */

int naive_attention(const naive_input *in, void *out) {
    if (!in || !out || !valid(in)) return -1;
    const int32_t H = in->num_heads, D = in->head_dim, g = in->num_heads / in->num_kv_heads;
    const float scale = in->scale > 0 ? in->scale : 1.0f / sqrtf((float)D);
    const int fp8 = is_fp8(in->kv_dtype);
    const float ks = fp8 ? in->k_scale : 1.0f, vs = fp8 ? in->v_scale : 1.0f;
    const ag_precision pr = in->precision;
    int32_t max_seq = 1;
    for (int32_t r = 0; r < in->num_reqs; r++)
        if (in->seq_lens[r] > max_seq) max_seq = in->seq_lens[r];
    float *logit = malloc((size_t)max_seq * sizeof *logit);
    float *qrow = malloc((size_t)D * sizeof *qrow);
    float *acc = malloc((size_t)D * sizeof *acc);
    if (!logit || !qrow || !acc) {
        free(logit), free(qrow), free(acc);
        return -1;
    }
    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int32_t t0 = in->query_start_loc[r], t1 = in->query_start_loc[r + 1];
        const long seq = in->seq_lens[r];
        const int causal = in->causal[r] != 0;
        for (int32_t t = t0; t < t1; t++) {
            /* causal: the query's own position; non-causal: its index */
            const long p = causal ? seq - (t1 - t0) + (t - t0) : (long)(t - t0);
            for (int32_t h = 0; h < H; h++) {
                const int32_t kvh = h / g;
                const size_t qoff = ((size_t)t * (size_t)H + (size_t)h) * (size_t)D;
                for (int32_t d = 0; d < D; d++)
                    qrow[d] = round_to(pr.q_dot, load(in->q, qoff + (size_t)d, in->q_dtype));
                float m = -INFINITY;
                for (long k = 0; k < seq; k++) {
                    if (!visible(k, p, causal, in->window_left, in->window_right)) continue;
                    const size_t kr = row_at(in, r, k, kvh);
                    float s = 0.0f;
                    for (int32_t d = 0; d < D; d++)
                        s += qrow[d] * (load(in->k_rows, kr + (size_t)d, in->kv_dtype) * ks);
                    s *= scale;
                    if (in->softcap > 0) s = in->softcap * tanhf(s / in->softcap);
                    if (in->alibi_slopes) s += in->alibi_slopes[h] * (float)(k - p);
                    logit[k] = s;
                    if (s > m) m = s;
                }
                if (in->sinks && in->sinks[h] > m) m = in->sinks[h];
                float l = in->sinks ? expf(in->sinks[h] - m) : 0.0f;
                for (int32_t d = 0; d < D; d++) acc[d] = 0.0f;
                for (long k = 0; k < seq; k++) {
                    if (!visible(k, p, causal, in->window_left, in->window_right)) continue;
                    const float w = round_to(pr.p_dot, expf(logit[k] - m));
                    const size_t vr = row_at(in, r, k, kvh);
                    l += w;
                    for (int32_t d = 0; d < D; d++)
                        acc[d] = round_to(pr.acc, acc[d] + w * (load(in->v_rows, vr + (size_t)d,
                                                                     in->kv_dtype) * vs));
                }
                for (int32_t d = 0; d < D; d++)
                    store(out, qoff + (size_t)d, in->out_dtype, l > 0 ? acc[d] / l : 0.0f);
            }
        }
    }
    free(logit);
    free(qrow);
    free(acc);
    return 0;
}
