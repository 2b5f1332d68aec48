/*
 * engines/ggml/ggml_check.c — what the ggml adapter accepts: validates the
 * harness's group and batch descriptions before anything reaches ggml
 * (whose own checks are GGML_ASSERTs that abort the process), and turns a
 * group into the adapter's record (gg_group).
 *
 * ALiBi: ggml derives the slopes itself from one number, max_bias, and the
 * layer's head count (ggml_compute_forward_flash_attn_ext_f16_one_chunk:
 * m0 = 2^(-max_bias/n), m1 = 2^(-max_bias/2/n), n the largest power of two
 * <= heads; slope h = m0^(h+1), or m1^(2(h-n)+1) past n).  A layer's
 * slopes are accepted only when they are that set, bit for bit, for some
 * max_bias: ggml cannot take any other slopes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_group.h"

static const char *lname(const ag_group *in, int32_t l, char *buf, size_t cap) {
    if (in->layers[l].name) return in->layers[l].name;
    snprintf(buf, cap, "layers.%d", (int)l);
    return buf;
}

/* ggml's slope for head h, computed with ggml's float operations. */
static float ggml_slope(float max_bias, uint32_t n_head, uint32_t h) {
    const uint32_t nl = 1u << (uint32_t)floor(log2(n_head));
    const float m0 = powf(2.0f, -(max_bias) / nl);
    const float m1 = powf(2.0f, -(max_bias / 2.0f) / nl);
    return h < nl ? powf(m0, h + 1) : powf(m1, 2 * (h - nl) + 1);
}

/* The max_bias whose slope set equals s[0..hq) bit for bit, or 0 (then
 * *bad is the first head that differs from the nearest set). */
static float alibi_max_bias(const float *s, int32_t hq, int32_t *bad, float *want) {
    *bad = 0;
    *want = NAN;
    if (!(s[0] > 0.0f && s[0] < 1.0f)) return 0.0f;
    const uint32_t nl = 1u << (uint32_t)floor(log2((double)hq));
    float mb = (float)(-log2((double)s[0]) * nl);
    for (int i = 0; i < 8; i++) mb = nextafterf(mb, 0.0f);
    for (int i = 0; i < 17; i++, mb = nextafterf(mb, INFINITY)) {
        int32_t h = 0;
        while (h < hq && ggml_slope(mb, (uint32_t)hq, (uint32_t)h) == s[h]) h++;
        if (h == hq) return mb;
        if (h > *bad || isnan(*want)) {
            *bad = h;
            *want = ggml_slope(mb, (uint32_t)hq, (uint32_t)h);
        }
    }
    return 0.0f;
}

static ag_status check_layer(const ag_group *in, int32_t l, gg_group *g, ag_msg *msg) {
    const ag_layer *L = &in->layers[l];
    gg_layer *o = &g->layers[l];
    char nb[32];
    const char *n = lname(in, l, nb, sizeof nb);
    if (L->window_left < -1 || L->window_right < -1)
        return agg_fail(msg, AG_REFUSED, AG_R_WINDOW, "GGML_BAD_WINDOW", "%s: window (%d, %d): each >= -1", n,
                        (int)L->window_left, (int)L->window_right);
    if (!(L->softcap >= 0.0f) || !isfinite(L->softcap) || !(L->scale >= 0.0f) ||
        !isfinite(L->scale))
        return agg_fail(msg, AG_REFUSED, AG_R_LAYER, "GGML_BAD_SCALE",
                        "%s: softcap %g and scale %g must be finite and >= 0", n,
                        (double)L->softcap, (double)L->scale);
    /* k_scale / v_scale: the ABI has only fp8 caches read them, and ggml
     * has no fp8 type (create refuses an fp8 cache as unsupported; a block
     * cache carries its scales in its blocks), so whatever they hold is
     * ignored here. */
    o->wl = L->window_left;
    o->wr = L->window_right;
    o->softcap = L->softcap;
    o->scale = L->scale > 0.0f ? L->scale : 1.0f / sqrtf((float)g->d);
    if (L->alibi_slopes) {
        int32_t bad;
        float want;
        o->max_bias = alibi_max_bias(L->alibi_slopes, g->hq, &bad, &want);
        if (o->max_bias == 0.0f)
            return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_ALIBI_SLOPES",
                            "%s: alibi_slopes[%d] = %.9g is not ggml's slope set for %d heads "
                            "(nearest set has %.9g): ggml takes only max_bias", n, (int)bad,
                            (double)L->alibi_slopes[bad], (int)g->hq, (double)want);
    }
    if (L->sinks) {
        if (!g->lib->base.ggml_flash_attn_ext_add_sinks)
            return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_NO_SINKS",
                            "%s: sinks: this ggml has no ggml_flash_attn_ext_add_sinks", n);
        o->sinks = malloc((size_t)g->hq * sizeof(float));
        if (!o->sinks) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "%s: sinks copy", n);
        for (int32_t h = 0; h < g->hq; h++) {
            if (!isfinite(L->sinks[h]))
                return agg_fail(msg, AG_REFUSED, AG_R_LAYER, "GGML_BAD_SINK", "%s: sinks[%d] = %g", n,
                                (int)h, (double)L->sinks[h]);
            o->sinks[h] = L->sinks[h];
        }
    }
    gg_mask_class c = {o->wl, o->wr, L->alibi_slopes != NULL};
    for (o->mask = 0; o->mask < g->nmask; o->mask++)
        if (!memcmp(&g->cls[o->mask], &c, sizeof c)) break;
    if (o->mask == g->nmask) g->cls[g->nmask++] = c;
    return AG_OK;
}

/* All layers must share num_heads: ggml's work buffer grows with it. */
static ag_status check_heads(const ag_group *in, ag_msg *msg) {
    int32_t l = 1;
    while (l < in->num_layers && in->layers[l].num_heads == in->layers[0].num_heads) l++;
    if (l >= in->num_layers) return AG_OK;
    char list[AG_MSG_TEXT_LEN] = "", nb[32];
    for (int32_t i = 0; i < in->num_layers; i++) {
        size_t u = strlen(list);
        snprintf(list + u, sizeof list - u, "%s%s=%d", i ? ", " : "", lname(in, i, nb, sizeof nb),
                 (int)in->layers[i].num_heads);
    }
    return agg_fail(msg, AG_REFUSED, AG_R_MIXED_HEADS, "GGML_MIXED_HEADS",
                    "all layers of one group must share num_heads (ggml sizes its flash-attention "
                    "work buffer by it): %s", list);
}

ag_status ggc_group(const ag_group *in, gg_group *g, ag_msg *msg) {
    if (!in || in->num_layers < 0 || (in->num_layers > 0 && !in->layers))
        return agg_fail(msg, AG_REFUSED, AG_R_NULL, "GGML_BAD_GROUP", "group or group.layers missing");
    if (in->num_kv_heads < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_HEADS, "GGML_BAD_GROUP", "num_kv_heads = %d",
                        (int)in->num_kv_heads);
    if (in->head_dim < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_HEAD_DIM, "GGML_BAD_GROUP", "head_dim = %d",
                        (int)in->head_dim);
    if (in->block_size < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_BLOCK_SIZE, "GGML_BAD_GROUP", "block_size = %d",
                        (int)in->block_size);
    if (in->num_threads < 1 || in->num_threads > GGML_MAX_N_THREADS)
        return agg_fail(msg, AG_REFUSED, AG_R_THREADS, "GGML_BAD_GROUP",
                        "num_threads = %d, outside 1..%d", (int)in->num_threads,
                        GGML_MAX_N_THREADS);
    if ((unsigned)in->q_dtype >= AG_DTYPE_COUNT || (unsigned)in->kv_dtype >= AG_DTYPE_COUNT ||
        (unsigned)in->out_dtype >= AG_DTYPE_COUNT)
        return agg_fail(msg, AG_REFUSED, AG_R_DTYPE, "GGML_DTYPE",
                        "dtypes q %d, kv %d, out %d: outside ag_dtype", (int)in->q_dtype,
                        (int)in->kv_dtype, (int)in->out_dtype);
    if (in->q_dtype != AG_F32 || in->out_dtype != AG_F32)
        return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_DTYPE",
                        "q_dtype %s, out_dtype %s: ggml's CPU flash attention reads q and writes "
                        "out as f32 (AG_F32) only", ag_dtype_name(in->q_dtype),
                        ag_dtype_name(in->out_dtype));
    if (ag_dtype_is_fp8(in->kv_dtype))
        return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_DTYPE",
                        "kv_dtype %s: ggml has no fp8 type; the adapter maps f32, f16, bf16 "
                        "and the block caches q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl",
                        ag_dtype_name(in->kv_dtype));
    /* a block cache's rows are whole blocks: ggml asserts on any other row
     * length (ggml_new_tensor of a block type) */
    if (in->head_dim % ag_dtype_block(in->kv_dtype) != 0)
        return agg_fail(msg, AG_REFUSED, AG_R_HEAD_DIM, "GGML_BLOCK_ROW",
                        "head_dim = %d: a %s cache holds rows of whole %d-element blocks",
                        (int)in->head_dim, ag_dtype_name(in->kv_dtype),
                        ag_dtype_block(in->kv_dtype));
    ag_status st = check_heads(in, msg);
    if (st != AG_OK) return st;
    g->hq = in->num_layers > 0 ? in->layers[0].num_heads : in->model_num_heads;
    if (g->hq < 1 || g->hq % in->num_kv_heads != 0)
        return agg_fail(msg, AG_REFUSED, AG_R_HEADS, "GGML_BAD_HEADS",
                        "num_heads %d must be a positive multiple of num_kv_heads %d%s",
                        (int)g->hq, (int)in->num_kv_heads,
                        in->num_layers ? "" : " (model_num_heads of an empty group)");
    g->hkv = in->num_kv_heads;
    g->d = in->head_dim;
    g->bs = in->block_size;
    g->threads = in->num_threads;
    g->kv = in->kv_dtype;
    g->nl = in->num_layers;
    g->layers = calloc((size_t)(g->nl > 0 ? g->nl : 1), sizeof *g->layers);
    g->cls = calloc((size_t)(g->nl > 0 ? g->nl : 1), sizeof *g->cls);
    if (!g->layers || !g->cls) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group records");
    for (int32_t l = 0; l < g->nl; l++)
        if ((st = check_layer(in, l, g, msg)) != AG_OK) return st;
    if (g->nl == 0) g->cls[g->nmask++] = (gg_mask_class){-1, -1, 0};
    return AG_OK;
}

void ggc_group_free(gg_group *g) {
    for (int32_t l = 0; g->layers && l < g->nl; l++) free(g->layers[l].sinks);
    free(g->layers);
    free(g->cls);
}

static int any_alibi(const gg_group *g) {
    for (int32_t c = 0; c < g->nmask; c++)
        if (g->cls[c].alibi) return 1;
    return 0;
}

/* Largest |k - p| an f16 mask holds exactly (integers up to 2^11). */
#define GGC_ALIBI_MAX_DIST 2048

ag_status ggc_batch(const gg_group *g, const ag_batch *b, int32_t *T, int32_t *n_kv,
                    ag_msg *msg) {
    if (!b || b->num_reqs < 1 || !b->query_start_loc || !b->seq_lens || !b->block_table ||
        b->block_table_stride < 1 || b->num_blocks < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_BATCH, "GGML_BAD_BATCH",
                        "batch: num_reqs, block_table_stride, num_blocks >= 1 and its arrays "
                        "are required");
    if (b->query_start_loc[0] != 0)
        return agg_fail(msg, AG_REFUSED, AG_R_BATCH, "GGML_BAD_BATCH", "query_start_loc[0] = %d, not 0",
                        (int)b->query_start_loc[0]);
    unsigned char *seen = calloc((size_t)b->num_blocks, 1);
    if (!seen) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "block bitmap");
    ag_status st = AG_OK;
    int64_t maxb = -1;
    for (int32_t r = 0; r < b->num_reqs && st == AG_OK; r++) {
        int64_t q_len = (int64_t)b->query_start_loc[r + 1] - b->query_start_loc[r];
        int64_t seq = b->seq_lens[r], nblk = (seq + g->bs - 1) / g->bs;
        const int32_t *bt = b->block_table + (size_t)r * (size_t)b->block_table_stride;
        if (q_len < 1 || seq < q_len || (b->causal && b->causal[r] > 1))
            st = agg_fail(msg, AG_REFUSED, q_len >= 1 && seq < q_len ? AG_R_LENGTH : AG_R_BATCH,
                          "GGML_BAD_BATCH",
                          "request %d: q_len %lld, seq_len %lld, causal %d (need 1 <= q_len <= "
                          "seq_len, causal 0 or 1)", (int)r, (long long)q_len, (long long)seq,
                          b->causal ? b->causal[r] : 1);
        else if (nblk > b->block_table_stride)
            st = agg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "GGML_BAD_BATCH",
                          "request %d: seq_len %lld needs %lld blocks, block_table_stride %d",
                          (int)r, (long long)seq, (long long)nblk, (int)b->block_table_stride);
        else if (any_alibi(g) && seq - 1 > GGC_ALIBI_MAX_DIST)
            st = agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_ALIBI_RANGE",
                          "request %d: seq_len %lld: ALiBi distances up to %lld, f16 mask holds "
                          "|k - p| <= %d exactly", (int)r, (long long)seq, (long long)(seq - 1),
                          GGC_ALIBI_MAX_DIST);
        for (int64_t j = 0; j < nblk && st == AG_OK; j++) {
            if (bt[j] < 0 || bt[j] >= b->num_blocks)
                st = agg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "GGML_BAD_BLOCK",
                              "block_table[%d][%lld] = %d outside 0..%d", (int)r, (long long)j,
                              (int)bt[j], (int)b->num_blocks - 1);
            else if (seen[bt[j]] == (unsigned char)(r % 255 + 1))
                st = agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_BLOCK_TWICE",
                              "block_table[%d]: block %d twice; ggml's mask sees each cache cell "
                              "once per query row", (int)r, (int)bt[j]);
            else {
                seen[bt[j]] = (unsigned char)(r % 255 + 1);
                if (bt[j] > maxb) maxb = bt[j];
            }
        }
        /* the marks of request r must not look like r + 255's */
        if (r % 255 == 254) memset(seen, 0, (size_t)b->num_blocks);
    }
    free(seen);
    if (st != AG_OK) return st;
    int64_t cells = (maxb + 1) * (int64_t)g->bs;
    if (cells > INT32_MAX)
        return agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_TOO_LARGE", "%lld cache cells",
                        (long long)cells);
    *T = b->query_start_loc[b->num_reqs];
    *n_kv = (int32_t)cells;
    return AG_OK;
}
