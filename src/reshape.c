/*
 * reshape.c — attn_reshape_and_cache(_from): stores new K/V rows into the
 * paged cache by slot mapping, converting them into the cache's element
 * type on the way when they come in another (f32/bf16/f16 rows into an
 * fp8, bf16 or f16 cache).  Validates every slot before writing any, so a
 * bad mapping leaves the cache untouched.
 */
#include "internal.h"
#include "kernels/dtype.h"

#include <math.h>
#include <string.h>

/* n elements of src (dtype sd) into dst (dtype dd), dividing by `scale`
 * first for an fp8 destination (vLLM's fp8 KV writers: the quotient in
 * fp32, then rounded to the code, RNE; e4m3fn saturating, dtype.h). */
static void convert_row(attn_dtype dd, void *dst, attn_dtype sd, const void *src, size_t n,
                        float scale) {
    for (size_t i = 0; i < n; i++) {
        float x = attn__elem_f32(sd, src, i);
        if (attn__dtype_is_fp8(dd) && scale != 1.0f) x /= scale;
        switch (dd) {
        case ATTN_DTYPE_F32: ((float *)dst)[i] = x; break;
        case ATTN_DTYPE_BF16: ((uint16_t *)dst)[i] = attn__f32_to_bf16(x); break;
        case ATTN_DTYPE_F16: ((uint16_t *)dst)[i] = attn__f32_to_f16(x); break;
        case ATTN_DTYPE_FP8_E4M3: ((uint8_t *)dst)[i] = attn__f32_to_fp8e4m3(x); break;
        case ATTN_DTYPE_FP8_E5M2: ((uint8_t *)dst)[i] = attn__f32_to_fp8e5m2(x); break;
        default: break;
        }
    }
}

attn_status attn_reshape_and_cache_from(const attn_kv_desc *kv, int32_t num_blocks,
                                        attn_dtype src_dtype, const void *key, const void *value,
                                        int32_t num_tokens, const int64_t *slot_mapping,
                                        float k_scale, float v_scale, void *k_cache,
                                        void *v_cache, attn_error *err) {
    if (!kv || !key || !value || !slot_mapping || !k_cache || !v_cache)
        return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL",
                          !kv ? "kv" : !key ? "key" : !value ? "value"
                          : !slot_mapping ? "slot_mapping" : !k_cache ? "k_cache" : "v_cache");
    attn_status st = attn__check_kv(kv, err);
    if (st) return st;
    if ((unsigned)src_dtype >= ATTN_DTYPE_COUNT ||
        (attn__dtype_is_fp8(src_dtype) && src_dtype != kv->dtype))
        return attn__fail(err, ATTN_E_BAD_DTYPE,
                          "src_dtype = %d: rows come as f32, bf16, f16 or as the cache's own "
                          "dtype (%s)", (int)src_dtype, attn_dtype_name(kv->dtype));
    const float sc[2] = {k_scale, v_scale};
    for (int k = 0; k < 2; k++)
        if (!isfinite(sc[k]) || sc[k] < 0.0f)
            return attn__fail(err, ATTN_E_BAD_LAYER,
                              "%s = %g (must be 0 for 1, or finite > 0)", k ? "v_scale" : "k_scale",
                              (double)sc[k]);
    const size_t es = attn_dtype_size(kv->dtype), ses = attn_dtype_size(src_dtype);
    if (num_blocks < 1)
        return attn__fail(err, ATTN_E_BAD_BLOCK_TABLE, "num_blocks = %d (must be >= 1)",
                          (int)num_blocks);
    if (num_tokens < 0)
        return attn__fail(err, ATTN_E_BAD_BATCH, "num_tokens = %d (must be >= 0)", (int)num_tokens);
    size_t row, slots, x;
    if (attn__mul((size_t)kv->num_kv_heads, (size_t)kv->head_dim, &row) ||
        attn__mul((size_t)num_blocks, (size_t)kv->block_size, &slots) ||
        attn__mul(slots, row, &x) || attn__mul(x, es, &x) ||
        attn__mul((size_t)num_tokens, row, &x) || attn__mul(x, ses, &x))
        return attn__fail(err, ATTN_E_OVERFLOW, "cache or K/V rows overflow size_t");
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t s = slot_mapping[i];
        if (s < -1 || (s >= 0 && (uint64_t)s >= (uint64_t)slots))
            return attn__fail(err, ATTN_E_BAD_SLOT,
                              "slot_mapping[%d] = %lld outside -1..%zu", (int)i, (long long)s,
                              slots - 1);
    }
    const size_t D = (size_t)kv->head_dim, H = (size_t)kv->num_kv_heads,
                 bs = (size_t)kv->block_size;
    const int same = src_dtype == kv->dtype;
    const float ks = k_scale > 0.0f ? k_scale : 1.0f, vs = v_scale > 0.0f ? v_scale : 1.0f;
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t s = slot_mapping[i];
        if (s < 0) continue;
        size_t blk = (size_t)s / bs, off = (size_t)s % bs;
        for (size_t h = 0; h < H; h++) {
            unsigned char *kd = (unsigned char *)k_cache + ((blk * H + h) * bs + off) * D * es;
            unsigned char *vd = (unsigned char *)v_cache + ((blk * H + h) * bs + off) * D * es;
            const size_t src = ((size_t)i * H + h) * D * ses;
            const unsigned char *kr = (const unsigned char *)key + src;
            const unsigned char *vr = (const unsigned char *)value + src;
            if (same) { /* the cache's own codes: a copy, no scale */
                memcpy(kd, kr, D * es);
                memcpy(vd, vr, D * es);
            } else {
                convert_row(kv->dtype, kd, src_dtype, kr, D, ks);
                convert_row(kv->dtype, vd, src_dtype, vr, D, vs);
            }
        }
    }
    attn__ok(err);
    return ATTN_OK;
}

attn_status attn_reshape_and_cache(const attn_kv_desc *kv, int32_t num_blocks, const void *key,
                                   const void *value, int32_t num_tokens,
                                   const int64_t *slot_mapping, void *k_cache, void *v_cache,
                                   attn_error *err) {
    return attn_reshape_and_cache_from(kv, num_blocks, kv ? kv->dtype : ATTN_DTYPE_F32, key,
                                       value, num_tokens, slot_mapping, 1.0f, 1.0f, k_cache,
                                       v_cache, err);
}
