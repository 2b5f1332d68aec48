/*
 * engines/ort/ort_check.c — what the ort adapter accepts: validates the
 * harness's group, options and batch descriptions before anything reaches
 * ORT, and turns a group into the adapter's record (og_group): resolved
 * scales, private copies of the sinks, layers sorted into the sessions
 * they share.
 *
 * ORT checks its inputs too, but only what its kernels need (and its
 * messages come back as AG_INTERNAL from Run): every refusal the harness
 * can judge is made here first, with the ABI's refusal kind.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_group.h"

static const char *lname(const ag_group *in, int32_t l, char *buf, size_t cap) {
    if (in->layers[l].name) return in->layers[l].name;
    snprintf(buf, cap, "layers.%d", (int)l);
    return buf;
}

ag_status og_parse_options(const char *options, og_op *op, int32_t *io, int32_t *rotary,
                           ag_msg *msg) {
    char v[64];
    *op = OG_GQA;
    *io = OG_IO_GQA_SHARED;
    *rotary = OG_ROT_NONE;
    /* keys[] NULL: words of other engines are not ours to refuse */
    static const char *const ours[] = {"op", "kv", "qkv", "rotary"};
    for (int k = 0; k < 4; k++)
        if (orta_option(options, ours[k], NULL, v, sizeof v) == 2)
            return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                             "group option %s given twice", ours[k]);
    int o = orta_option(options, "op", NULL, v, sizeof v);
    if (o == 1 && !strcmp(v, "attention")) *op = OG_ATTENTION;
    else if (o == 1 && strcmp(v, "gqa") != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option op=%s: ort offers op=gqa and op=attention", v);
    o = orta_option(options, "kv", NULL, v, sizeof v);
    if (o == 1 && *op == OG_ATTENTION)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option kv=%s: only op=gqa has past/present buffers", v);
    if (o == 1 && !strcmp(v, "separate")) *io = OG_IO_GQA_SEPARATE;
    else if (o == 1 && strcmp(v, "shared") != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option kv=%s: ort offers kv=shared and kv=separate", v);
    o = orta_option(options, "qkv", NULL, v, sizeof v);
    if (o == 1 && strcmp(v, "packed") != 0 && strcmp(v, "separate") != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option qkv=%s: ort offers qkv=separate and qkv=packed", v);
    if (o == 1 && !strcmp(v, "packed")) {
        if (*op == OG_ATTENTION)
            return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                             "group option qkv=packed: only op=gqa takes packed QKV");
        if (*io == OG_IO_GQA_SEPARATE)
            return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                             "group option qkv=packed: offered with kv=shared only");
        *io = OG_IO_GQA_PACKED;
    }
    o = orta_option(options, "rotary", NULL, v, sizeof v);
    if (o == 1 && !strcmp(v, "half")) *rotary = OG_ROT_HALF;
    else if (o == 1 && !strcmp(v, "interleaved")) *rotary = OG_ROT_INTERLEAVED;
    else if (o == 1 && strcmp(v, "none") != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option rotary=%s: ort offers rotary=none, half and interleaved",
                         v);
    if (*rotary != OG_ROT_NONE && *op == OG_ATTENTION)
        return orta_fail(msg, AG_REFUSED, AG_R_OPTIONS, "ORT_OPTIONS",
                         "group option rotary=%s: only op=gqa has a rotary step", v);
    if (*op == OG_ATTENTION) *io = OG_IO_ATT_CAUSAL;   /* per run: causal or mask */
    return AG_OK;
}

/* Sinks: all exactly 0 is GQA's smooth_softmax (an extra logit 0 in every
 * row's denominator); anything else goes in as the head_sink input. */
static ag_status layer_sinks(const ag_layer *L, og_group *g, og_layer *o, const char *n,
                             ag_msg *msg) {
    if (!L->sinks) return AG_OK;
    if (g->op == OG_ATTENTION)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_ATTENTION_SINKS",
                         "%s: sinks: ONNX's Attention op has no sink input (op=gqa has)", n);
    int all_zero = 1;
    for (int32_t h = 0; h < o->key.hq; h++)   /* -0.0 too: e^(-0 - m) is e^(0 - m) */
        all_zero &= L->sinks[h] == 0.0f;
    o->key.sink = all_zero ? OG_SINK_SMOOTH : OG_SINK_HEAD;
    if (all_zero) return AG_OK;
    o->sinks = malloc((size_t)o->key.hq * sizeof(float));
    o->sinks_h = malloc((size_t)o->key.hq * sizeof(uint16_t));
    if (!o->sinks || !o->sinks_h)
        return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "%s: sinks copy", n);
    memcpy(o->sinks, L->sinks, (size_t)o->key.hq * sizeof(float));
    for (int32_t h = 0; h < o->key.hq; h++) o->sinks_h[h] = ag_encode_f16(L->sinks[h]);
    return AG_OK;
}

/* Refusals only: what no engine could accept. */
static ag_status check_layer(const ag_group *in, int32_t l, int32_t hkv, ag_msg *msg) {
    const ag_layer *L = &in->layers[l];
    char nb[32];
    const char *n = lname(in, l, nb, sizeof nb);
    if (L->num_heads < 1 || L->num_heads % hkv != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_HEADS, "ORT_BAD_HEADS",
                         "%s: num_heads %d must be a positive multiple of num_kv_heads %d", n,
                         (int)L->num_heads, (int)hkv);
    if (L->window_left < -1 || L->window_right < -1)
        return orta_fail(msg, AG_REFUSED, AG_R_WINDOW, "ORT_BAD_WINDOW",
                         "%s: window (%d, %d): each side >= -1", n, (int)L->window_left,
                         (int)L->window_right);
    if (!isfinite(L->softcap) || L->softcap < 0.0f || !isfinite(L->scale) || L->scale < 0.0f)
        return orta_fail(msg, AG_REFUSED, AG_R_LAYER, "ORT_BAD_LAYER",
                         "%s: softcap %g and scale %g must be finite and >= 0", n,
                         (double)L->softcap, (double)L->scale);
    for (int32_t h = 0; L->sinks && h < L->num_heads; h++)
        if (!isfinite(L->sinks[h]))
            return orta_fail(msg, AG_REFUSED, AG_R_LAYER, "ORT_BAD_SINK", "%s: sinks[%d] = %g",
                             n, (int)h, (double)L->sinks[h]);
    /* k_scale / v_scale belong to fp8 caches, which the adapter does not
     * take (AG_UNSUPPORTED below), so they are not read. */
    return AG_OK;
}

/* A valid layer onto ORT's attributes, or AG_UNSUPPORTED. */
static ag_status map_layer(const ag_group *in, int32_t l, og_group *g, ag_msg *msg) {
    const ag_layer *L = &in->layers[l];
    og_layer *o = &g->layers[l];
    char nb[32];
    const char *n = lname(in, l, nb, sizeof nb);
    if (L->alibi_slopes)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_ALIBI",
                         "%s: alibi_slopes: the adapter maps no ALiBi (GQA's attention_bias "
                         "input could carry it: not mapped yet)", n);
    /* Every request is causal (the batch check sends the others away as
     * unsupported), so window_right hides no key that causality does not
     * already hide, and (left, right) is the key count left + 1: ORT 1.30's
     * local_window_size counts the current key (keys p - W + 1 .. p; an
     * older ORT CPU kernel kept W + 1 keys: MAPPING.md).  A left side no
     * sequence can reach is no window at all. */
    const int32_t window = L->window_left >= 0 && L->window_left < INT32_MAX - 1
                               ? L->window_left + 1 : -1;
    o->key = (og_key){
        .hq = L->num_heads,
        .window = window,
        .scale = L->scale > 0.0f ? L->scale : 1.0f / sqrtf((float)g->d),
        .softcap = L->softcap,
        .sink = OG_SINK_NONE,
    };
    ag_status st = layer_sinks(L, g, o, n, msg);
    if (st != AG_OK) return st;
    for (o->sess = 0; o->sess < g->nsess; o->sess++)
        if (!memcmp(&g->sess[o->sess].key, &o->key, sizeof o->key)) break;
    if (o->sess == g->nsess) g->sess[g->nsess++].key = o->key;
    if (o->key.hq > g->hq_max) g->hq_max = o->key.hq;
    return AG_OK;
}

static ag_status check_dtypes(const ag_group *in, int unsupported, ag_msg *msg) {
    const ag_dtype d[3] = {in->q_dtype, in->kv_dtype, in->out_dtype};
    static const char *const what[3] = {"q_dtype", "kv_dtype", "out_dtype"};
    for (int i = 0; i < 3; i++) {
        if (!unsupported && (unsigned)d[i] >= AG_DTYPE_COUNT)
            return orta_fail(msg, AG_REFUSED, AG_R_DTYPE, "ORT_BAD_DTYPE", "%s %d: no such dtype",
                             what[i], (int)d[i]);
        if (unsupported && ag_dtype_is_fp8(d[i]))
            return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_DTYPE",
                             "%s %s: ORT's CPU attention has no fp8 tensors", what[i],
                             og_dtype_name(d[i]));
        if (unsupported && ag_dtype_block(d[i]) > 1)
            return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_DTYPE",
                             "%s %s: ORT's CPU attention has no quantized (block) tensors; "
                             "its KV cache is f32 or f16", what[i], og_dtype_name(d[i]));
    }
    return AG_OK;
}

/* Every refusal first (the group is wrong), then what ORT cannot do. */
static ag_status check_input(const ag_group *in, ag_msg *msg) {
    if (!in || (in->num_layers > 0 && !in->layers))
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL", "group or group.layers is NULL");
    if (in->num_layers < 0)
        return orta_fail(msg, AG_REFUSED, AG_R_LAYER, "ORT_BAD_GROUP", "num_layers %d",
                         (int)in->num_layers);
    if (in->num_kv_heads < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_HEADS, "ORT_BAD_HEADS", "num_kv_heads %d",
                         (int)in->num_kv_heads);
    if (in->head_dim < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_HEAD_DIM, "ORT_BAD_HEAD_DIM", "head_dim %d",
                         (int)in->head_dim);
    if (in->block_size < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BLOCK_SIZE, "ORT_BAD_BLOCK_SIZE", "block_size %d",
                         (int)in->block_size);
    if (in->num_threads < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_THREADS, "ORT_BAD_THREADS", "num_threads %d",
                         (int)in->num_threads);
    ag_status st = check_dtypes(in, 0, msg);
    for (int32_t l = 0; l < in->num_layers && st == AG_OK; l++)
        st = check_layer(in, l, in->num_kv_heads, msg);
    if (st == AG_OK && in->num_layers == 0 &&
        (in->model_num_heads < 1 || in->model_num_heads % in->num_kv_heads != 0))
        st = orta_fail(msg, AG_REFUSED, AG_R_HEADS, "ORT_BAD_HEADS",
                       "model_num_heads %d of an empty group must be a positive multiple of "
                       "num_kv_heads %d", (int)in->model_num_heads, (int)in->num_kv_heads);
    return st;
}

/* 1 when every layer's sinks are f16 values.  GQA takes head_sink in T, so
 * an f16 node would round a sink that is not, a rounding the group's
 * dtypes do not imply; such a group runs as f32 instead (its f16 tensors
 * widen exactly). */
static int sinks_are_f16(const ag_group *in) {
    for (int32_t l = 0; l < in->num_layers; l++) {
        const ag_layer *L = &in->layers[l];
        for (int32_t h = 0; L->sinks && h < L->num_heads; h++) {
            const uint16_t half = ag_encode_f16(L->sinks[h]);
            float back;
            og_convert(&back, AG_F32, &half, AG_F16, 1);
            if (back != L->sinks[h]) return 0;
        }
    }
    return 1;
}

ag_status og_check_group(const ag_group *in, og_group *g, ag_msg *msg) {
    ag_status st = check_input(in, msg);
    if (st == AG_OK) st = check_dtypes(in, 1, msg);
    if (st != AG_OK) return st;
    if (in->head_dim % 8 != 0 && g->op == OG_GQA)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_HEAD_DIM",
                         "head_dim %d: GroupQueryAttention wants a multiple of 8",
                         (int)in->head_dim);
    if (in->head_dim % 16 != 0 && g->rotary != OG_ROT_NONE)
        return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_ROTARY_HEAD_DIM",
                         "head_dim %d: GroupQueryAttention's rotary step wants a multiple of 16",
                         (int)in->head_dim);
    g->hkv = in->num_kv_heads;
    g->d = in->head_dim;
    g->bs = in->block_size;
    g->threads = in->num_threads;
    g->q_dt = in->q_dtype, g->kv_dt = in->kv_dtype, g->out_dt = in->out_dtype;
    /* ORT's f16 kernels when q, K/V and out (and the sinks) are all f16; every other mix is
     * widened to f32 exactly (f16 and bf16 values are all f32 values), so
     * no rounding happens that the dtypes do not already imply: an f16
     * node would round an f32 output to f16.  ORT 1.30 has no bf16 CPU
     * kernel for either op. */
    g->t_dt = g->q_dt == AG_F16 && g->kv_dt == AG_F16 && g->out_dt == AG_F16 &&
                      sinks_are_f16(in) ? AG_F16 : AG_F32;
    g->nl = in->num_layers;
    g->alloc = in->alloc;
    g->hq_max = in->num_layers == 0 ? in->model_num_heads : 0;
    const size_t n = (size_t)(g->nl > 0 ? g->nl : 1);
    g->layers = calloc(n, sizeof *g->layers);
    g->sess = calloc(n, sizeof *g->sess);
    if (!g->layers || !g->sess)
        return orta_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group records");
    for (int32_t l = 0; l < g->nl && st == AG_OK; l++) st = map_layer(in, l, g, msg);
    return st;
}

void og_group_free(og_group *g) {
    for (int32_t l = 0; g->layers && l < g->nl; l++) {
        free(g->layers[l].sinks);
        free(g->layers[l].sinks_h);
    }
    free(g->layers);
    free(g->sess);
}

static ag_status check_request(const og_group *g, const ag_batch *b, int32_t r, ag_msg *msg) {
    const int64_t q_len = (int64_t)b->query_start_loc[r + 1] - b->query_start_loc[r];
    const int64_t seq = b->seq_lens[r];
    if (q_len < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_BATCH",
                         "request %d: q_len %lld (query_start_loc %d..%d)", (int)r,
                         (long long)q_len, (int)b->query_start_loc[r],
                         (int)b->query_start_loc[r + 1]);
    if (seq < q_len)
        return orta_fail(msg, AG_REFUSED, AG_R_LENGTH, "ORT_BAD_LENGTH",
                         "request %d: seq_len %lld below q_len %lld", (int)r, (long long)seq,
                         (long long)q_len);
    if (b->causal && b->causal[r] > 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_BATCH",
                         "request %d: causal %d (0 or 1)", (int)r, (int)b->causal[r]);
    const int64_t nblk = (seq + g->bs - 1) / g->bs;
    if (nblk > b->block_table_stride)
        return orta_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "ORT_BAD_BLOCK",
                         "request %d: seq_len %lld needs %lld blocks, block_table_stride %d",
                         (int)r, (long long)seq, (long long)nblk, (int)b->block_table_stride);
    const int32_t *bt = b->block_table + (size_t)r * (size_t)b->block_table_stride;
    for (int64_t j = 0; j < nblk; j++)
        if (bt[j] < 0 || bt[j] >= b->num_blocks)
            return orta_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "ORT_BAD_BLOCK",
                             "block_table[%d][%lld] = %d outside 0..%d", (int)r, (long long)j,
                             (int)bt[j], (int)b->num_blocks - 1);
    return AG_OK;
}

ag_status og_check_batch(const og_group *g, const ag_batch *b, ag_msg *msg) {
    if (!b || !b->query_start_loc || !b->seq_lens || !b->block_table)
        return orta_fail(msg, AG_REFUSED, AG_R_NULL, "ORT_NULL",
                         "batch, query_start_loc, seq_lens or block_table is NULL");
    if (b->num_reqs < 1 || b->num_blocks < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_BATCH",
                         "num_reqs %d and num_blocks %d must be >= 1", (int)b->num_reqs,
                         (int)b->num_blocks);
    if (b->block_table_stride < 1)
        return orta_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "ORT_BAD_BLOCK",
                         "block_table_stride %d", (int)b->block_table_stride);
    if (b->query_start_loc[0] != 0)
        return orta_fail(msg, AG_REFUSED, AG_R_BATCH, "ORT_BAD_BATCH",
                         "query_start_loc[0] = %d, not 0", (int)b->query_start_loc[0]);
    for (int32_t r = 0; r < b->num_reqs; r++) {
        ag_status st = check_request(g, b, r, msg);
        if (st != AG_OK) return st;
    }
    /* What ORT cannot express comes after every refusal: a batch that is
     * wrong is refused as wrong, whatever else it asks for. */
    for (int32_t r = 0; b->causal && r < b->num_reqs; r++)
        if (b->causal[r] == 0)
            return orta_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "ORT_NONCAUSAL",
                             "request %d is non-causal: %s", (int)r,
                             g->op == OG_GQA ? "GroupQueryAttention is causal only"
                                             : "the adapter maps causal requests only");
    return AG_OK;
}
