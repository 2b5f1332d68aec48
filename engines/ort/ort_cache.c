/*
 * engines/ort/ort_cache.c — where the ort adapter keeps keys and values
 * between batches, and the element conversions between the harness's
 * types and ORT's.
 *
 * Layout: one array of num_blocks * block_size cells per cache, each cell
 * [Hkv][D] in the group's kv dtype, written by slot (block * block_size +
 * offset).  It depends on the KV spec only, as the ABI wants.  ORT never
 * sees it: run() gathers each request's cells through its block table into
 * the dense BNSH / BSNH tensors of the plan's regions (ort_run.c).
 */
#include <math.h>
#include <string.h>

#include "ort_group.h"

static size_t row_bytes(const og_group *g) {
    return (size_t)g->hkv * (size_t)g->d * og_dtype_size(g->kv_dt);
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

/* ---- element types ---- */
size_t og_dtype_size(ag_dtype d) {
    switch (d) {
    case AG_F32: return 4;
    case AG_F16: case AG_BF16: return 2;
    case AG_FP8_E4M3: case AG_FP8_E5M2: return 1;
    default: return 0;
    }
}

const char *og_dtype_name(ag_dtype d) {
    const char *n = ag_dtype_name(d);
    return n ? n : "?";
}

/* ---- element conversions ---- */
static float f16_to_f32(uint16_t h) {
    const uint32_t e = (h >> 10) & 31u, m = h & 1023u;
    float v;
    if (e == 31) v = m ? NAN : INFINITY;
    else v = e ? ldexpf((float)(m | 1024u), (int)e - 25) : ldexpf((float)m, -24);
    return (h & 0x8000u) ? -v : v;
}

/* Round to nearest even, overflow to infinity, subnormals kept. */
uint16_t og_f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);        /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);       /* rounds past 65504 */
    if (a < 0x38800000u) {                                          /* f16 subnormal or 0 */
        const float h = fabsf(f) * 0x1.0p24f;                       /* exact: a power of 2 */
        return (uint16_t)(sign | (uint32_t)lrintf(h));              /* lrintf: to even */
    }
    const uint32_t r = a - 0x38000000u + 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

static float bf16_to_f32(uint16_t h) {
    const uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);   /* NaN */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static float load(const void *src, ag_dtype t, size_t i) {
    if (t == AG_F32) return ((const float *)src)[i];
    const uint16_t h = ((const uint16_t *)src)[i];
    return t == AG_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

void og_convert(void *dst, ag_dtype to, const void *src, ag_dtype from, size_t n) {
    if (to == from) {
        memcpy(dst, src, n * og_dtype_size(to));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const float v = load(src, from, i);
        if (to == AG_F32) ((float *)dst)[i] = v;
        else ((uint16_t *)dst)[i] = to == AG_F16 ? og_f32_to_f16(v) : f32_to_bf16(v);
    }
}
