/*
 * ref.c — the portable reference kernels and the "ref" kernel table.
 *
 * Owns: attn_tile_<dt>__ref (masked, soft-capped, ALiBi'd online-softmax
 * attention of one work item over a key range of the paged cache),
 * attn_load_q_<dt>__ref (query rows -> scaled fp32), attn_store_<dt>__ref
 * (normalise with optional sinks, convert, store), attn_merge_f32__ref
 * (log-sum-exp merge of split partials).  The "ref" table that lists them
 * is table_ref.c.
 *
 * These are plain scalar C: every ISA twin is held to them, so they favour
 * being obviously right over being fast.  All arithmetic and all softmax
 * state are fp32; bf16/f16 only exist at the load/store boundary
 * (conversions in dtype.h, round-to-nearest-even).
 *
 * Kernels never allocate, print, create threads or read outside what their
 * arguments point at.  ATTN_ASSERT guards only what the plan guarantees
 * (ranges, block ids); data values (inf/NaN in inputs) are never asserted.
 */
#include "kernels_decl.h"
#include "cvt_gen.h"
#include "dtype.h"
#include "mask.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>


/* ---------------------------------------------------------------- helpers */

/* Store one fp32 value as dt, RNE. */
static inline void from_f32(attn_dtype dt, void *base, size_t idx, float v) {
    switch (dt) {
    case ATTN_DTYPE_F32: ((float *)base)[idx] = v; break;
    case ATTN_DTYPE_BF16: ((uint16_t *)base)[idx] = attn__f32_to_bf16(v); break;
    case ATTN_DTYPE_F16: ((uint16_t *)base)[idx] = attn__f32_to_f16(v); break;
    default: break;
    }
}

/* --------------------------------------------------------------- load_q */

static inline uint32_t ref_load_q(attn_dtype dt, const void *src, size_t token_stride,
                                  int32_t n_tok, int32_t g, int32_t head_dim, float scale,
                                  float *dst) {
    size_t width = (size_t)g * (size_t)head_dim; /* one token's group of heads */
    uint32_t mb = 0;
    for (int32_t t = 0; t < n_tok; t++) {
        float *d = dst + (size_t)t * width;
        attn__row_f32(dt, src, (size_t)t * token_stride, (int32_t)width, d);
        /* Scale after converting: q*scale is rounded once in fp32, the same
         * value every twin must produce. */
        for (size_t i = 0; i < width; i++) {
            d[i] *= scale;
            uint32_t b;
            memcpy(&b, &d[i], sizeof b);
            b &= 0x7fffffffu;
            if (b <= 0x7f800000u && b > mb) mb = b; /* (NaN: above inf's pattern) */
        }
    }
    return mb;
}

uint32_t attn_load_q_f32__ref(const void *src, size_t token_stride, int32_t n_tok, int32_t g,
                          int32_t head_dim, float scale, float *dst) {
    return ref_load_q(ATTN_DTYPE_F32, src, token_stride, n_tok, g, head_dim, scale, dst);
}
uint32_t attn_load_q_bf16__ref(const void *src, size_t token_stride, int32_t n_tok, int32_t g,
                           int32_t head_dim, float scale, float *dst) {
    return ref_load_q(ATTN_DTYPE_BF16, src, token_stride, n_tok, g, head_dim, scale, dst);
}
uint32_t attn_load_q_f16__ref(const void *src, size_t token_stride, int32_t n_tok, int32_t g,
                          int32_t head_dim, float scale, float *dst) {
    return ref_load_q(ATTN_DTYPE_F16, src, token_stride, n_tok, g, head_dim, scale, dst);
}

/* ----------------------------------------------------------------- tile */

/* Gather keys [c0, c0 + n) of K and V through the block table into the kv
 * work area, fp32: K row i at kv[i*D], V row i at kv[(kv_tile + i)*D]. */
static inline void gather(attn_dtype dt, const attn_tile_args *a, int32_t c0, int32_t n) {
    const size_t D = (size_t)a->head_dim;
    float *kdst = a->kv;
    float *vdst = a->kv + (size_t)a->kv_tile * D;
    for (int32_t i = 0; i < n; i++) {
        int32_t k = c0 + i;
        int32_t blk = a->blocks[k / a->block_size];
        int32_t slot = k % a->block_size;
        ATTN_ASSERT(blk >= 0);
        size_t off = (size_t)blk * a->block_stride + a->head_offset + (size_t)slot * D;
        attn__row_f32(dt, a->k_cache, off, a->head_dim, kdst + (size_t)i * D);
        attn__row_f32(dt, a->v_cache, off, a->head_dim, vdst + (size_t)i * D);
    }
}

/* A difference of two logits in 2^me units, back in logit units (exact:
 * a power of two; -inf where it leaves the fp32 range downward). */
static inline float units(float x, int32_t me) { return me ? ldexpf(x, me) : x; }

static inline void ref_tile(attn_dtype dt, const attn_tile_args *a) {
    const int32_t g = a->g;
    const size_t D = (size_t)a->head_dim;
    const size_t T = (size_t)a->kv_tile;
    const int32_t me = attn__m_exp(a->qk_exp, a->softcap);

    ATTN_ASSERT(a->n_tok >= 1 && g >= 1 && a->head_dim >= 1);
    ATTN_ASSERT(a->kv_tile >= 1 && a->block_size >= 1);
    ATTN_ASSERT(0 <= a->k0 && a->k0 < a->k1 && a->k1 <= a->seq_len);
    ATTN_ASSERT(a->pos0 >= 0 && (int64_t)a->pos0 + a->n_tok <= a->seq_len);

    /* k1 and the key limit come from mask.h (the plan's values, see there). */
    const int32_t k1 = attn__tile_end(a->k1, a->seq_len, a->causal, a->block_size);
    const int32_t key_limit = attn__key_limit(a->seq_len, a->causal, a->block_size);
    for (int32_t c0 = a->k0; c0 < k1; c0 += a->kv_tile) {
        const int32_t n = (k1 - c0 < a->kv_tile) ? k1 - c0 : a->kv_tile;
        const int64_t c1 = (int64_t)c0 + n;

        /* Skip the chunk entirely (no gather) when no row sees any of it:
         * window-bounded ranges and split pieces make this common. */
        int any = 0;
        for (int32_t t = 0; t < a->n_tok && !any; t++) {
            int64_t lo, hi;
            attn__row_interval((int64_t)a->pos0 + t, key_limit, a->causal,
                               a->window_left, a->window_right, &lo, &hi);
            if (lo < c1 && hi > c0 && lo < hi) any = 1;
        }
        if (!any) continue;

        gather(dt, a, c0, n);
        const float *kt = a->kv;
        const float *vt = a->kv + T * D;

        for (int32_t t = 0; t < a->n_tok; t++) {
            const int64_t p = (int64_t)a->pos0 + t;
            int64_t lo, hi;
            attn__row_interval(p, key_limit, a->causal, a->window_left, a->window_right, &lo, &hi);
            /* The interval is the same for the g heads of a token; a token
             * that sees nothing of this chunk leaves its rows untouched, so
             * no row ever evaluates exp(-inf - -inf). */
            if (!(lo < c1 && hi > c0 && lo < hi)) continue;

            for (int32_t j = 0; j < g; j++) {
                const size_t r = (size_t)t * (size_t)g + (size_t)j;
                const float *q = a->q + r * D;
                float *s = a->scores + r * T;
                float mx = -INFINITY;

                for (int32_t i = 0; i < n; i++) {
                    const int64_t k = (int64_t)c0 + i;
                    /* The mask, explicitly per key: invisible keys get a
                     * -inf logit and so weight exp(-inf - m) = 0 below. */
                    if (k < lo || k >= hi) {
                        s[i] = -INFINITY;
                        continue;
                    }
                    const float *kr = kt + (size_t)i * D;
                    float dot = 0.0f;
                    for (size_t d = 0; d < D; d++) dot += q[d] * kr[d];
                    /* logits in 2^me units (kernels.h): scaled up by
                     * 2^qk_exp only under a soft cap, which bounds them */
                    if (a->qk_exp && !me) dot = ldexpf(dot, a->qk_exp);
                    if (a->softcap > 0.0f) dot = a->softcap * tanhf(dot / a->softcap);
                    if (a->alibi) {
                        const float b = a->alibi[j] * (float)(k - p);
                        dot += me ? ldexpf(b, -me) : b;
                    }
                    s[i] = dot;
                    if (dot > mx) mx = dot;
                }
                /* Only reachable with no visible key (or -inf logits from
                 * non-finite inputs): keep the state, never make NaN. */
                if (mx == -INFINITY) continue;

                float *acc = a->acc + r * D;
                const float m_old = a->m[r];
                const float m_new = m_old > mx ? m_old : mx;
                if (m_new != m_old) {
                    /* Fresh row (m_old = -inf): alpha = 0, and acc/l are 0. */
                    const float alpha = (m_old == -INFINITY) ? 0.0f : expf(units(m_old - m_new, me));
                    for (size_t d = 0; d < D; d++) acc[d] *= alpha;
                    a->l[r] *= alpha;
                }
                float sum = 0.0f;
                for (int32_t i = 0; i < n; i++) {
                    if (s[i] == -INFINITY) continue; /* masked: weight exactly 0 */
                    const float w = expf(units(s[i] - m_new, me));
                    s[i] = w; /* visible entries now hold the unnormalised weights */
                    sum += w;
                    const float *vr = vt + (size_t)i * D;
                    for (size_t d = 0; d < D; d++) acc[d] += w * vr[d];
                }
                a->l[r] += sum;
                a->m[r] = m_new;
            }
        }
    }
}

void attn_tile_f32__ref(const attn_tile_args *a) { ref_tile(ATTN_DTYPE_F32, a); }
void attn_tile_bf16__ref(const attn_tile_args *a) { ref_tile(ATTN_DTYPE_BF16, a); }
void attn_tile_f16__ref(const attn_tile_args *a) { ref_tile(ATTN_DTYPE_F16, a); }
void attn_tile_fp8e4m3__ref(const attn_tile_args *a) { ref_tile(ATTN_DTYPE_FP8_E4M3, a); }
void attn_tile_fp8e5m2__ref(const attn_tile_args *a) { ref_tile(ATTN_DTYPE_FP8_E5M2, a); }

/* ---------------------------------------------------------------- store */

static inline void ref_store(attn_dtype dt, const float *acc, const float *m, const float *l,
                             int32_t n_tok, int32_t g, int32_t head_dim, const float *sinks,
                             int32_t m_exp, float v_scale, void *dst, size_t token_stride) {
    const size_t D = (size_t)head_dim;
    for (int32_t t = 0; t < n_tok; t++) {
        for (int32_t j = 0; j < g; j++) {
            const size_t r = (size_t)t * (size_t)g + (size_t)j;
            const size_t o = (size_t)t * token_stride + (size_t)j * D;
            int zero;
            /* one rounding for alpha / L, then one multiply per element */
            const float f = attn__store_factor(m[r], l[r], sinks != NULL, sinks ? sinks[j] : 0.0f,
                                               m_exp, v_scale, &zero);
            const float *ar = acc + r * D;
            for (size_t d = 0; d < D; d++) from_f32(dt, dst, o + d, zero ? 0.0f : ar[d] * f);
        }
    }
}

void attn_store_f32__ref(const float *acc, const float *m, const float *l, int32_t n_tok,
                         int32_t g, int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,
                         size_t token_stride) {
    ref_store(ATTN_DTYPE_F32, acc, m, l, n_tok, g, head_dim, sinks, m_exp, v_scale, dst, token_stride);
}
void attn_store_bf16__ref(const float *acc, const float *m, const float *l, int32_t n_tok,
                          int32_t g, int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,
                          size_t token_stride) {
    ref_store(ATTN_DTYPE_BF16, acc, m, l, n_tok, g, head_dim, sinks, m_exp, v_scale, dst, token_stride);
}
void attn_store_f16__ref(const float *acc, const float *m, const float *l, int32_t n_tok,
                         int32_t g, int32_t head_dim, const float *sinks, int32_t m_exp, float v_scale, void *dst,
                         size_t token_stride) {
    ref_store(ATTN_DTYPE_F16, acc, m, l, n_tok, g, head_dim, sinks, m_exp, v_scale, dst, token_stride);
}

/* ---------------------------------------------------------------- merge */

void attn_merge_f32__ref(const float *partial, const float *pm, const float *pl,
                         int32_t pieces, int32_t rows, int32_t head_dim, int32_t m_exp,
                         float *acc, float *m, float *l) {
    const size_t D = (size_t)head_dim;
    const size_t R = (size_t)rows;
    ATTN_ASSERT(pieces >= 1 && rows >= 1 && head_dim >= 1);
    for (size_t r = 0; r < R; r++) {
        float M = -INFINITY;
        for (int32_t i = 0; i < pieces; i++) {
            const float mi = pm[(size_t)i * R + r];
            if (mi > M) M = mi;
        }
        float *ar = acc + r * D;
        if (M == -INFINITY) {
            /* Every piece saw nothing (e.g. a piece wholly outside this
             * row's window): neutral state, whatever the partials hold. */
            for (size_t d = 0; d < D; d++) ar[d] = 0.0f;
            m[r] = -INFINITY;
            l[r] = 0.0f;
            continue;
        }
        /* The first contributing piece initialises acc instead of adding to
         * zeros; pieces with m_i = -inf are skipped, so their (possibly
         * stale) partial rows are never read.  Writing m/l last keeps this
         * correct even if acc/m/l alias piece 0's slots. */
        float L = 0.0f;
        int first = 1;
        for (int32_t i = 0; i < pieces; i++) {
            const float mi = pm[(size_t)i * R + r];
            if (mi == -INFINITY) continue;
#ifndef ATTN_INJECT_merge_scale
            const float w = expf(units(mi - M, m_exp));
#else
            /* INJECTED BUG (merge_scale): the first piece is merged without
             * its rescale factor e^(m_0 - M). */
            const float w = first ? 1.0f : expf(units(mi - M, m_exp));
#endif
            const float *pr = partial + ((size_t)i * R + r) * D;
            if (first) {
                for (size_t d = 0; d < D; d++) ar[d] = w * pr[d];
                first = 0;
            } else {
                for (size_t d = 0; d < D; d++) ar[d] += w * pr[d];
            }
            L += w * pl[(size_t)i * R + r];
        }
        m[r] = M;
        l[r] = L;
    }
}

/* ------------------------------------------------- conversions (test hook) */

/* The kernels' own conversions over a whole run (cvt_gen.h, step 0): the
 * gather's row widener and the store's rounding. */
static inline void ref_cvt_to_f32(attn_dtype dt, const unsigned char *s, float *d, size_t left) {
    attn__row_f32(dt, s, 0, (int32_t)left, d);
}
static inline void ref_cvt_from_f32(attn_dtype dt, const float *s, unsigned char *d, size_t left) {
    for (size_t i = 0; i < left; i++) from_f32(dt, d, i, s[i]);
}
ATTN__CVT_TO(ref_cvt_bf16_f32, ATTN_DTYPE_BF16, 0, ref_cvt_to_f32)
ATTN__CVT_TO(ref_cvt_f16_f32, ATTN_DTYPE_F16, 0, ref_cvt_to_f32)
ATTN__CVT_TO(ref_cvt_e4m3_f32, ATTN_DTYPE_FP8_E4M3, 0, ref_cvt_to_f32)
ATTN__CVT_TO(ref_cvt_e5m2_f32, ATTN_DTYPE_FP8_E5M2, 0, ref_cvt_to_f32)
ATTN__CVT_FROM(ref_cvt_f32_bf16, ATTN_DTYPE_BF16, 0, ref_cvt_from_f32)
ATTN__CVT_FROM(ref_cvt_f32_f16, ATTN_DTYPE_F16, 0, ref_cvt_from_f32)
/* the KV writer's (reshape.c), element by element as it writes */
static void ref_cvt_f32_e4m3(const void *s, void *d, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = attn__f32_to_fp8e4m3(((const float *)s)[i]);
}
static void ref_cvt_f32_e5m2(const void *s, void *d, size_t n) {
    for (size_t i = 0; i < n; i++) ((uint8_t *)d)[i] = attn__f32_to_fp8e5m2(((const float *)s)[i]);
}

static const attn__cvt_path ref_cvt[] = {
    {"gather bf16", ATTN_DTYPE_BF16, 1, 0, ref_cvt_bf16_f32},
    {"gather f16", ATTN_DTYPE_F16, 1, 0, ref_cvt_f16_f32},
    {"gather fp8e4m3", ATTN_DTYPE_FP8_E4M3, 1, 0, ref_cvt_e4m3_f32},
    {"gather fp8e5m2", ATTN_DTYPE_FP8_E5M2, 1, 0, ref_cvt_e5m2_f32},
    {"store bf16", ATTN_DTYPE_BF16, 0, 0, ref_cvt_f32_bf16},
    {"store f16", ATTN_DTYPE_F16, 0, 0, ref_cvt_f32_f16},
    {"kv writer fp8e4m3", ATTN_DTYPE_FP8_E4M3, 0, 0, ref_cvt_f32_e4m3},
    {"kv writer fp8e5m2", ATTN_DTYPE_FP8_E5M2, 0, 0, ref_cvt_f32_e5m2},
};

const attn__cvt_path *attn__cvt_ref(int *count) {
    *count = (int)(sizeof ref_cvt / sizeof ref_cvt[0]);
    return ref_cvt;
}
