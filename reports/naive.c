/*
 * naive.c — the same-precision naive baseline of the differential report
 * (see naive.h).  Two passes per query row over the visible keys: logits
 * into a row buffer and their max, then exp-weights, their sum and the
 * weighted sum of V rows, all in float; one division and one rounding to
 * the output dtype at the end.
 *
 * Deliberately independent: decoding, rounding and masking are written
 * here again from DESIGN §2 instead of being borrowed from src/ or harness/.
 */
#include "naive.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float naive_load(const void *base, size_t i, attn_dtype dtype) {
    if (dtype == ATTN_DTYPE_F32) return ((const float *)base)[i];
    uint16_t h = ((const uint16_t *)base)[i];
    if (dtype == ATTN_DTYPE_BF16) {
        uint32_t w = (uint32_t)h << 16;
        float f;
        memcpy(&f, &w, sizeof f);
        return f;
    }
    if (dtype == ATTN_DTYPE_F16) {
        /* 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
        float mag;
        unsigned e = (h >> 10) & 31u, m = h & 1023u;
        if (e == 0) mag = ldexpf((float)m, -24);
        else if (e == 31) mag = m ? NAN : INFINITY;
        else mag = ldexpf((float)(m | 1024u), (int)e - 25);
        return (h & 0x8000u) ? -mag : mag;
    }
    return NAN;
}

/* float -> bf16, round to nearest even on the bit pattern. */
static uint16_t to_bf16(float f) {
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    if (isnan(f)) return 0x7fc0u;
    uint32_t lsb = (w >> 16) & 1u;
    w += 0x7fffu + lsb;
    return (uint16_t)(w >> 16);
}

/* f rounded to bf16, as a float. */
static float bf16_value(float f) {
    const uint32_t w = (uint32_t)to_bf16(f) << 16;
    float g;
    memcpy(&g, &w, sizeof g);
    return g;
}

/* float -> f16, round to nearest even; the rounding is done by rintf on a
 * value scaled so that one f16 ulp is 1.0 (exact power-of-two scaling). */
static uint16_t to_f16(float f) {
    uint16_t sign = signbit(f) ? 0x8000u : 0u;
    float a = fabsf(f);
    if (isnan(a)) return 0x7e00u;
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14f) return (uint16_t)(sign | (uint16_t)rintf(a * 0x1p24f));
    int e;
    (void)frexpf(a, &e);                       /* a in [2^(e-1), 2^e) */
    float ulp = ldexpf(1.0f, e - 1 - 10);
    float units = rintf(a / ulp);              /* 1024..2048 */
    int be = e - 1 + 15;
    if (units >= 2048.0f) { units = 1024.0f; be++; }
    if (be >= 31) return (uint16_t)(sign | 0x7c00u);
    return (uint16_t)(sign | (uint16_t)(be << 10) | (uint16_t)((unsigned)units - 1024u));
}

static void store(void *base, size_t i, attn_dtype dtype, float v) {
    if (dtype == ATTN_DTYPE_F32) ((float *)base)[i] = v;
    else if (dtype == ATTN_DTYPE_BF16) ((uint16_t *)base)[i] = to_bf16(v);
    else ((uint16_t *)base)[i] = to_f16(v);
}

/* DESIGN §2 visibility of key k from position p. */
static int sees(long k, long p, int32_t window, int32_t causal) {
    long lo = window > 0 ? p - (window - 1) : 0;
    long hi = p;
    if (!causal) hi = window > 0 ? p + (window - 1) : k;
    return k >= lo && k <= hi;
}

static size_t cache_index(const naive_input *in, int32_t r, long k, int32_t kvh, int32_t d) {
    int32_t blk = in->block_table[(size_t)r * (size_t)in->block_table_stride +
                                  (size_t)(k / in->block_size)];
    size_t slot = (size_t)(k % in->block_size);
    return (((size_t)blk * (size_t)in->num_kv_heads + (size_t)kvh) * (size_t)in->block_size +
            slot) * (size_t)in->head_dim + (size_t)d;
}

int naive_attention(const naive_input *in, void *out) {
    if (!in || !out || in->num_reqs < 1 || in->num_heads < 1 || in->num_kv_heads < 1 ||
        in->num_heads % in->num_kv_heads || in->head_dim < 1 || in->block_size < 1)
        return -1;
    const int32_t H = in->num_heads, D = in->head_dim, g = in->num_heads / in->num_kv_heads;
    const float scale = in->scale > 0 ? in->scale : 1.0f / sqrtf((float)D);
    int32_t max_seq = 1;
    for (int32_t r = 0; r < in->num_reqs; r++)
        if (in->seq_lens[r] > max_seq) max_seq = in->seq_lens[r];
    float *logit = malloc((size_t)max_seq * sizeof *logit);
    float *qrow = malloc((size_t)D * sizeof *qrow);
    float *acc = malloc((size_t)D * sizeof *acc);
    if (!logit || !qrow || !acc) {
        free(logit); free(qrow); free(acc);
        return -1;
    }
    for (int32_t r = 0; r < in->num_reqs; r++) {
        const int32_t t0 = in->query_start_loc[r], t1 = in->query_start_loc[r + 1];
        const long seq = in->seq_lens[r];
        for (int32_t t = t0; t < t1; t++) {
            const long p = seq - (t1 - t0) + (t - t0);
            for (int32_t h = 0; h < H; h++) {
                const int32_t kvh = h / g;
                const size_t qoff = ((size_t)t * (size_t)H + (size_t)h) * (size_t)D;
                for (int32_t d = 0; d < D; d++) qrow[d] = naive_load(in->q, qoff + (size_t)d, in->q_dtype);
                float m = -INFINITY;
                for (long k = 0; k < seq; k++) {
                    if (!sees(k, p, in->window, in->causal)) continue;
                    float s = 0.0f;
                    if (in->bf16_dots) { /* q x scale in bf16, then the dot */
                        for (int32_t d = 0; d < D; d++)
                            s += bf16_value(qrow[d] * scale) *
                                 naive_load(in->k_cache, cache_index(in, r, k, kvh, d), in->kv_dtype);
                    } else {
                        for (int32_t d = 0; d < D; d++)
                            s += qrow[d] * naive_load(in->k_cache, cache_index(in, r, k, kvh, d),
                                                      in->kv_dtype);
                        s *= scale;
                    }
                    if (in->softcap > 0) s = in->softcap * tanhf(s / in->softcap);
                    if (in->alibi_slopes) s += in->alibi_slopes[h] * (float)(k - p);
                    logit[k] = s;
                    if (s > m) m = s;
                }
                if (in->sinks && in->sinks[h] > m) m = in->sinks[h];
                float l = in->sinks ? expf(in->sinks[h] - m) : 0.0f;
                for (int32_t d = 0; d < D; d++) acc[d] = 0.0f;
                for (long k = 0; k < seq; k++) {
                    if (!sees(k, p, in->window, in->causal)) continue;
                    const float w = in->bf16_dots ? bf16_value(expf(logit[k] - m))
                                                  : expf(logit[k] - m);
                    l += w;
                    for (int32_t d = 0; d < D; d++)
                        acc[d] += w * naive_load(in->v_cache, cache_index(in, r, k, kvh, d),
                                                 in->kv_dtype);
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
