/*
 * engines/ort/ort_cache.c — where the ort adapter keeps keys and values
 * between batches, and the element conversions between the harness's
 * types and ORT's (by the ABI's codec, include/attnguard/dtype.h).
 *
 * Layout: one array of num_blocks * block_size cells per cache, each cell
 * [Hkv][D] in the group's kv dtype, written by slot (block * block_size +
 * offset).  It depends on the KV spec only, as the ABI wants.  ORT never
 * sees it: run() gathers each request's cells through its block table into
 * the dense BNSH / BSNH tensors of the plan's regions (ort_run.c).
 */
#include <string.h>

#include "ort_group.h"

static size_t row_bytes(const og_group *g) {
    return (size_t)g->hkv * (size_t)g->d * ag_dtype_size(g->kv_dt);
}

ag_status og_kv_cache_bytes(void *grp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const og_group *g = grp;
    if (!bytes) return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "kv_cache_bytes: bytes");
    if (num_blocks < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_BLOCKS",
                         "kv_cache_bytes: num_blocks %d", (int)num_blocks);
    size_t cells, b;
    if (__builtin_mul_overflow((size_t)num_blocks, (size_t)g->bs, &cells) ||
        __builtin_mul_overflow(cells, row_bytes(g), &b))
        return orta_fail(msg, AG_REFUSED, AG_R_OVERFLOW, "ORT_OVERFLOW",
                         "kv_cache_bytes: %d blocks of %d cells of %zu bytes", (int)num_blocks,
                         (int)g->bs, row_bytes(g));
    *bytes = b;
    return orta_ok(msg);
}

ag_status og_write_kv(void *grp, void *k_cache, void *v_cache, int32_t num_blocks,
                      const void *k_rows, const void *v_rows, int32_t num_tokens,
                      const int64_t *slot_mapping, ag_msg *msg) {
    const og_group *g = grp;
    const size_t rb = row_bytes(g);
    if (!k_cache || !v_cache || !k_rows || !v_rows || !slot_mapping)
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "write_kv: a buffer is NULL");
    if (num_tokens < 0 || num_blocks < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_ARGS",
                         "write_kv: num_tokens %d, num_blocks %d", (int)num_tokens,
                         (int)num_blocks);
    const int64_t cells = (int64_t)num_blocks * g->bs;
    /* every slot first: a refused call writes nothing */
    for (int32_t i = 0; i < num_tokens; i++)
        if (slot_mapping[i] < -1 || slot_mapping[i] >= cells)
            return orta_fail(msg, AG_REFUSED, AG_R_SLOT, "ORT_BAD_SLOT",
                             "slot_mapping[%d] = %lld outside -1..%lld", (int)i,
                             (long long)slot_mapping[i], (long long)cells - 1);
    for (int32_t i = 0; i < num_tokens; i++) {
        const int64_t s = slot_mapping[i];
        if (s < 0) continue;
        memcpy((char *)k_cache + (size_t)s * rb, (const char *)k_rows + (size_t)i * rb, rb);
        memcpy((char *)v_cache + (size_t)s * rb, (const char *)v_rows + (size_t)i * rb, rb);
    }
    return orta_ok(msg);
}

/* ---- element types: the ABI's (include/attnguard/dtype.h) ---- */
const char *og_dtype_name(ag_dtype d) {
    const char *n = ag_dtype_name(d);
    return n ? n : "?";
}

/* n elements of type `from` (f32, f16 or bf16) into type `to`: widened
 * exactly, narrowed to nearest even. */
void og_convert(void *dst, ag_dtype to, const void *src, ag_dtype from, size_t n) {
    if (to == from) {
        memcpy(dst, src, n * ag_dtype_size(to));
        return;
    }
    for (size_t i = 0; i < n; i++)
        ag_dtype_encode(dst, i, to, (float)ag_dtype_decode(src, i, from));
}
