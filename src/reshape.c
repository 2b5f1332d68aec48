/*
 * reshape.c — attn_reshape_and_cache: stores new K/V rows into the paged
 * cache by slot mapping.  Validates every slot before writing any, so a bad
 * mapping leaves the cache untouched.
 */
#include "internal.h"

#include <string.h>

attn_status attn_reshape_and_cache(const attn_kv_desc *kv, int32_t num_blocks, const void *key,
                                   const void *value, int32_t num_tokens,
                                   const int64_t *slot_mapping, void *k_cache, void *v_cache,
                                   attn_error *err) {
    if (!kv || !key || !value || !slot_mapping || !k_cache || !v_cache)
        return attn__fail(err, ATTN_E_NULL_ARG, "%s is NULL",
                          !kv ? "kv" : !key ? "key" : !value ? "value"
                          : !slot_mapping ? "slot_mapping" : !k_cache ? "k_cache" : "v_cache");
    attn_status st = attn__check_kv(kv, err);
    if (st) return st;
    size_t es = attn_dtype_size(kv->dtype);
    if (num_blocks < 1)
        return attn__fail(err, ATTN_E_BAD_BLOCK_TABLE, "num_blocks = %d (must be >= 1)",
                          (int)num_blocks);
    if (num_tokens < 0)
        return attn__fail(err, ATTN_E_BAD_BATCH, "num_tokens = %d (must be >= 0)", (int)num_tokens);
    size_t row, slots, x;
    if (attn__mul((size_t)kv->num_kv_heads, (size_t)kv->head_dim, &row) ||
        attn__mul((size_t)num_blocks, (size_t)kv->block_size, &slots) ||
        attn__mul(slots, row, &x) || attn__mul(x, es, &x) ||
        attn__mul((size_t)num_tokens, row, &x) || attn__mul(x, es, &x))
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
    for (int32_t i = 0; i < num_tokens; i++) {
        int64_t s = slot_mapping[i];
        if (s < 0) continue;
        size_t blk = (size_t)s / bs, off = (size_t)s % bs;
        for (size_t h = 0; h < H; h++) {
            size_t dst = ((blk * H + h) * bs + off) * D * es;
            size_t src = ((size_t)i * H + h) * D * es;
            memcpy((unsigned char *)k_cache + dst, (const unsigned char *)key + src, D * es);
            memcpy((unsigned char *)v_cache + dst, (const unsigned char *)value + src, D * es);
        }
    }
    attn__ok(err);
    return ATTN_OK;
}
