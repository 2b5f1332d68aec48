/*
 * kitmin.c — a minimal adapter built out of tree from the installed kit
 * only (tests/kit/run.sh copies this folder away from the source tree and
 * builds it with tests/kit/Makefile, which knows nothing but pkg-config):
 * the proof that an adapter needs no file and no symbol of attnguard's
 * build beyond the installed headers.
 *
 * The engine is the adapter itself: straight loops in double, one query
 * row at a time, the row's softmax weights in the harness's scratch (so
 * the guard after the scratch sees every write).  Every element type of
 * the ABI is decoded with the header-only codec (ag_dtype_decode), sizes
 * come from ag_dtype_bytes, messages name refusals with ag_refusal_name:
 * the helpers an adapter reaches for, none of which may leave an `ag_`
 * symbol undefined in the .so.  No variants, no regions, no extents.
 *
 * -DKITMIN_ABI_VERSION=N builds it claiming another ABI version (the host
 * must refuse it and say which).
 */
#include <attnguard/engine.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KITMIN_ABI_VERSION
#define KITMIN_ABI_VERSION AG_ENGINE_ABI_VERSION
#endif

#define ALL_DTYPES ((1u << AG_DTYPE_COUNT) - 1u)
#define OUT_DTYPES (AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_BF16) | AG_DTYPE_BIT(AG_F16))

typedef struct grp {
    ag_group g;              /* the caller's group; its arrays live until destroy */
    size_t row_bytes;        /* one cache cell: [Hkv][D] in kv_dtype */
} grp;

typedef struct plan {
    const grp *G;
    const ag_batch *batch;
    int32_t max_seq;
} plan;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static ag_status say(ag_msg *msg, ag_status st, ag_refusal r, const char *fmt, ...) {
    if (!msg) return st;
    msg->refusal = st == AG_OK ? AG_R_NONE : r;
    snprintf(msg->code, sizeof msg->code, "%s", st == AG_OK ? "" : ag_refusal_name(r));
    msg->text[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg->text, sizeof msg->text, fmt, ap);
        va_end(ap);
    }
    return st;
}

static ag_status k_open(const char *options, void **ctx, ag_msg *msg) {
    (void)options;
    *ctx = NULL;
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static void k_close(void *ctx) { (void)ctx; }

static void k_caps(void *ctx, ag_caps *out) {
    (void)ctx;
    memset(out, 0, sizeof *out);
    out->abi_version = KITMIN_ABI_VERSION;
    out->flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_WINDOW_LR | AG_CAP_SOFTCAP | AG_CAP_ALIBI |
                 AG_CAP_SINKS | AG_CAP_SCALE | AG_CAP_PAGED | AG_CAP_SHARED_BLOCKS |
                 AG_CAP_NONCAUSAL | AG_CAP_MIXED_CAUSAL | AG_CAP_BITWISE | AG_CAP_KV_SCALES;
    out->q_dtypes = OUT_DTYPES;
    out->kv_dtypes = ALL_DTYPES;
    out->out_dtypes = OUT_DTYPES;
}

static int finite_nonneg(float x) { return isfinite(x) && x >= 0; }

static ag_status check_layer(const ag_group *in, int32_t l, ag_msg *msg) {
    const ag_layer *L = &in->layers[l];
    if (L->num_heads < 1 || L->num_heads % in->num_kv_heads != 0)
        return say(msg, AG_REFUSED, AG_R_HEADS, "layers[%d].num_heads %d over %d KV heads",
                   (int)l, (int)L->num_heads, (int)in->num_kv_heads);
    if (L->num_heads != in->layers[0].num_heads)
        return say(msg, AG_REFUSED, AG_R_MIXED_HEADS, "layers[%d].num_heads %d, layers[0] %d",
                   (int)l, (int)L->num_heads, (int)in->layers[0].num_heads);
    if (L->window_left < -1 || L->window_right < -1)
        return say(msg, AG_REFUSED, AG_R_WINDOW, "layers[%d] window (%d, %d)", (int)l,
                   (int)L->window_left, (int)L->window_right);
    if (!finite_nonneg(L->softcap) || !finite_nonneg(L->scale))
        return say(msg, AG_REFUSED, AG_R_LAYER, "layers[%d] softcap %g, scale %g", (int)l,
                   (double)L->softcap, (double)L->scale);
    for (int32_t h = 0; h < L->num_heads; h++)
        if ((L->alibi_slopes && !isfinite(L->alibi_slopes[h])) ||
            (L->sinks && !isfinite(L->sinks[h])))
            return say(msg, AG_REFUSED, AG_R_LAYER, "layers[%d] head %d: slope or sink not finite",
                       (int)l, (int)h);
    if (ag_dtype_is_fp8(in->kv_dtype) &&
        !(isfinite(L->k_scale) && L->k_scale > 0 && isfinite(L->v_scale) && L->v_scale > 0))
        return say(msg, AG_REFUSED, AG_R_LAYER, "layers[%d] k_scale %g, v_scale %g", (int)l,
                   (double)L->k_scale, (double)L->v_scale);
    return AG_OK;
}

static ag_status k_create(void *ctx, const ag_group *in, void **out, ag_msg *msg) {
    (void)ctx;
    if (!in || !out || (in->num_layers > 0 && !in->layers))
        return say(msg, AG_REFUSED, AG_R_NULL, "create: group, layers or out is NULL");
    *out = NULL;
    if (in->num_layers < 0 || in->num_kv_heads < 1)
        return say(msg, AG_REFUSED, AG_R_HEADS, "num_layers %d, num_kv_heads %d",
                   (int)in->num_layers, (int)in->num_kv_heads);
    /* an empty group is valid: its head count is the model's */
    if (in->num_layers == 0 &&
        (in->model_num_heads < 1 || in->model_num_heads % in->num_kv_heads != 0))
        return say(msg, AG_REFUSED, AG_R_HEADS, "model_num_heads %d over %d KV heads (no layers)",
                   (int)in->model_num_heads, (int)in->num_kv_heads);
    if (!ag_dtype_name(in->kv_dtype) || (unsigned)in->q_dtype >= 32 ||
        (unsigned)in->out_dtype >= 32 || !(OUT_DTYPES & AG_DTYPE_BIT(in->q_dtype)) ||
        !(OUT_DTYPES & AG_DTYPE_BIT(in->out_dtype)))
        return say(msg, AG_REFUSED, AG_R_DTYPE, "dtypes q %d, kv %d, out %d", (int)in->q_dtype,
                   (int)in->kv_dtype, (int)in->out_dtype);
    if (in->head_dim < 1 || in->head_dim % ag_dtype_block(in->kv_dtype) != 0)
        return say(msg, AG_REFUSED, AG_R_HEAD_DIM, "head_dim %d with kv_dtype %s (blocks of %d)",
                   (int)in->head_dim, ag_dtype_name(in->kv_dtype), ag_dtype_block(in->kv_dtype));
    if (in->block_size < 1)
        return say(msg, AG_REFUSED, AG_R_BLOCK_SIZE, "block_size %d", (int)in->block_size);
    if (in->num_threads < 1)
        return say(msg, AG_REFUSED, AG_R_THREADS, "num_threads %d", (int)in->num_threads);
    if (in->options && in->options[0])
        return say(msg, AG_REFUSED, AG_R_OPTIONS, "options '%.200s': this engine has none",
                   in->options);
    for (int32_t l = 0; l < in->num_layers; l++) {
        const ag_status st = check_layer(in, l, msg);
        if (st != AG_OK) return st;
    }
    grp *G = calloc(1, sizeof *G);
    if (!G) return say(msg, AG_INTERNAL, AG_R_RESOURCE, "create: out of memory");
    G->g = *in;
    if (ag_dtype_bytes(in->kv_dtype, (size_t)in->num_kv_heads * (size_t)in->head_dim,
                       &G->row_bytes) != 0) {
        free(G);
        return say(msg, AG_REFUSED, AG_R_OVERFLOW, "a cache cell of %d x %d %s overflows",
                   (int)in->num_kv_heads, (int)in->head_dim, ag_dtype_name(in->kv_dtype));
    }
    *out = G;
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static void k_destroy(void *g) { free(g); }

static ag_status k_kv_cache_bytes(void *gp, int32_t num_blocks, size_t *bytes, ag_msg *msg) {
    const grp *G = gp;
    if (!bytes) return say(msg, AG_REFUSED, AG_R_NULL, "kv_cache_bytes: bytes is NULL");
    *bytes = 0;
    if (num_blocks < 1) return say(msg, AG_REFUSED, AG_R_BATCH, "num_blocks %d", (int)num_blocks);
    const size_t cells = (size_t)num_blocks * (size_t)G->g.block_size;
    if (cells > (size_t)-1 / G->row_bytes)
        return say(msg, AG_REFUSED, AG_R_OVERFLOW, "%zu cells of %zu bytes", cells, G->row_bytes);
    *bytes = cells * G->row_bytes;
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static ag_status k_write_kv(void *gp, void *k_cache, void *v_cache, int32_t num_blocks,
                            const void *k_rows, const void *v_rows, int32_t num_tokens,
                            const int64_t *slots, ag_msg *msg) {
    const grp *G = gp;
    if (!k_cache || !v_cache || !k_rows || !v_rows || !slots)
        return say(msg, AG_REFUSED, AG_R_NULL, "write_kv: a buffer is NULL");
    const int64_t cells = (int64_t)num_blocks * G->g.block_size;
    for (int32_t i = 0; i < num_tokens; i++)   /* all slots first: a refusal writes nothing */
        if (slots[i] < -1 || slots[i] >= cells)
            return say(msg, AG_REFUSED, AG_R_SLOT, "slot_mapping[%d] = %lld outside -1..%lld",
                       (int)i, (long long)slots[i], (long long)cells - 1);
    const size_t rb = G->row_bytes;
    for (int32_t i = 0; i < num_tokens; i++) {
        if (slots[i] < 0) continue;
        memcpy((char *)k_cache + (size_t)slots[i] * rb, (const char *)k_rows + (size_t)i * rb, rb);
        memcpy((char *)v_cache + (size_t)slots[i] * rb, (const char *)v_rows + (size_t)i * rb, rb);
    }
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static ag_status check_batch(const grp *G, const ag_batch *b, int32_t *max_seq, ag_msg *msg) {
    if (!b->query_start_loc || !b->seq_lens || !b->block_table)
        return say(msg, AG_REFUSED, AG_R_NULL, "batch: an array is NULL");
    if (b->num_reqs < 1 || b->query_start_loc[0] != 0)
        return say(msg, AG_REFUSED, AG_R_BATCH, "num_reqs %d, query_start_loc[0] %d",
                   (int)b->num_reqs, (int)b->query_start_loc[0]);
    *max_seq = 1;
    for (int32_t r = 0; r < b->num_reqs; r++) {
        const int32_t q_len = b->query_start_loc[r + 1] - b->query_start_loc[r];
        if (q_len < 1 || (b->causal && b->causal[r] > 1))
            return say(msg, AG_REFUSED, AG_R_BATCH, "request %d: q_len %d", (int)r, (int)q_len);
        if (b->seq_lens[r] < q_len)
            return say(msg, AG_REFUSED, AG_R_LENGTH, "seq_lens[%d] = %d below q_len %d", (int)r,
                       (int)b->seq_lens[r], (int)q_len);
        const int64_t nblk = ((int64_t)b->seq_lens[r] + G->g.block_size - 1) / G->g.block_size;
        if (nblk > b->block_table_stride)
            return say(msg, AG_REFUSED, AG_R_BLOCK_ID, "request %d needs %lld blocks, stride %d",
                       (int)r, (long long)nblk, (int)b->block_table_stride);
        for (int64_t k = 0; k < nblk; k++) {
            const size_t at = (size_t)r * (size_t)b->block_table_stride + (size_t)k;
            const int32_t id = b->block_table[at];
            if (id < 0 || id >= b->num_blocks)
                return say(msg, AG_REFUSED, AG_R_BLOCK_ID,
                           "block_table[%d][%lld] = %d outside 0..%d", (int)r, (long long)k,
                           (int)id, (int)b->num_blocks - 1);
        }
        if (b->seq_lens[r] > *max_seq) *max_seq = b->seq_lens[r];
    }
    return AG_OK;
}

static ag_status k_plan(void *gp, const ag_batch *b, const ag_plan_opts *opts, void **out,
                        ag_plan_info *info, ag_msg *msg) {
    (void)opts;
    const grp *G = gp;
    if (!b || !out || !info) return say(msg, AG_REFUSED, AG_R_NULL, "plan: batch, plan or info");
    *out = NULL;
    int32_t max_seq = 0;
    const ag_status st = check_batch(G, b, &max_seq, msg);
    if (st != AG_OK) return st;
    plan *P = calloc(1, sizeof *P);
    if (!P) return say(msg, AG_INTERNAL, AG_R_RESOURCE, "plan: out of memory");
    P->G = G;
    P->batch = b;
    P->max_seq = max_seq;
    info->scratch_bytes = (size_t)max_seq * sizeof(double);   /* one row's weights */
    info->scratch_align = sizeof(double);
    info->regions = NULL;
    info->num_regions = 0;
    *out = P;
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static void k_plan_destroy(void *p) { free(p); }

/* Element e of cache cell `cell`, KV head h. */
static double cache_at(const grp *G, const void *cache, size_t cell, int32_t h, int32_t e) {
    const size_t D = (size_t)G->g.head_dim;
    const char *row = (const char *)cache + cell * G->row_bytes;
    /* a cell is [Hkv][D] elements; head h's elements start at h * D, a
     * whole number of blocks for a block type (head_dim is) */
    return ag_dtype_decode(row, (size_t)h * D + (size_t)e, G->g.kv_dtype);
}

static void row(const plan *P, const ag_layer *L, const ag_run_args *a, int32_t r, int32_t t,
                int32_t h, double *w) {
    const grp *G = P->G;
    const ag_batch *b = P->batch;
    const int32_t D = G->g.head_dim, Hq = L->num_heads, kvh = h / (Hq / G->g.num_kv_heads);
    const int32_t t0 = b->query_start_loc[r], q_len = b->query_start_loc[r + 1] - t0;
    const int64_t seq = b->seq_lens[r];
    const int causal = !b->causal || b->causal[r];
    const int64_t p = causal ? seq - q_len + (t - t0) : (int64_t)(t - t0);
    const double scale = L->scale > 0 ? L->scale : 1.0 / sqrt((double)D);
    const int fp8 = ag_dtype_is_fp8(G->g.kv_dtype);
    const size_t qoff = ((size_t)t * (size_t)Hq + (size_t)h) * (size_t)D;
    double m = -INFINITY;
    for (int64_t k = 0; k < seq; k++) {
        w[k] = -INFINITY;
        if ((causal && k > p) || (L->window_left >= 0 && k < p - L->window_left) ||
            (L->window_right >= 0 && k > p + L->window_right))
            continue;
        const size_t cell = (size_t)b->block_table[(size_t)r * (size_t)b->block_table_stride +
                                                   (size_t)(k / G->g.block_size)] *
                                (size_t)G->g.block_size + (size_t)(k % G->g.block_size);
        double s = 0;
        for (int32_t e = 0; e < D; e++)
            s += ag_dtype_decode(a->q, qoff + (size_t)e, G->g.q_dtype) *
                 cache_at(G, a->k_cache, cell, kvh, e);
        s *= scale * (fp8 ? L->k_scale : 1.0);
        if (L->softcap > 0) s = L->softcap * tanh(s / L->softcap);
        if (L->alibi_slopes) s += L->alibi_slopes[h] * (double)(k - p);
        w[k] = s;
        if (s > m) m = s;
    }
    if (L->sinks && L->sinks[h] > m) m = L->sinks[h];
    double l = L->sinks ? exp(L->sinks[h] - m) : 0.0;
    for (int64_t k = 0; k < seq; k++) {
        w[k] = w[k] == -INFINITY ? 0.0 : exp(w[k] - m);
        l += w[k];
    }
    for (int32_t e = 0; e < D; e++) {
        double acc = 0;
        for (int64_t k = 0; k < seq; k++) {
            if (w[k] == 0) continue;
            const size_t cell = (size_t)b->block_table[(size_t)r * (size_t)b->block_table_stride +
                                                       (size_t)(k / G->g.block_size)] *
                                    (size_t)G->g.block_size + (size_t)(k % G->g.block_size);
            acc += w[k] * cache_at(G, a->v_cache, cell, kvh, e);
        }
        if (fp8) acc *= L->v_scale;
        ag_dtype_encode(a->out, qoff + (size_t)e, G->g.out_dtype, (float)(l > 0 ? acc / l : 0.0));
    }
}

static ag_status k_run(void *pp, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    const plan *P = pp;
    const grp *G = P->G;
    if (!a || !a->q || !a->k_cache || !a->v_cache || !a->out)
        return say(msg, AG_REFUSED, AG_R_NULL, "run: an argument is NULL");
    if (layer < 0 || layer >= G->g.num_layers || a->batch != P->batch)
        return say(msg, AG_REFUSED, AG_R_MISMATCH, "run: layer %d of %d, or another batch",
                   (int)layer, (int)G->g.num_layers);
    if (!a->scratch || a->scratch_bytes < (size_t)P->max_seq * sizeof(double))
        return say(msg, AG_REFUSED, AG_R_SCRATCH, "run: scratch of %zu bytes, planned %zu",
                   a->scratch_bytes, (size_t)P->max_seq * sizeof(double));
    const ag_layer *L = &G->g.layers[layer];
    const ag_batch *b = P->batch;
    for (int32_t r = 0; r < b->num_reqs; r++)
        for (int32_t t = b->query_start_loc[r]; t < b->query_start_loc[r + 1]; t++)
            for (int32_t h = 0; h < L->num_heads; h++) row(P, L, a, r, t, h, (double *)a->scratch);
    return say(msg, AG_OK, AG_R_NONE, NULL);
}

static const ag_engine k_engine = {
    .abi_version = KITMIN_ABI_VERSION,
    .name = "kitmin",
    .summary = "the kit test's minimal adapter: straight loops in double",
    .open = k_open,
    .close = k_close,
    .caps = k_caps,
    .create = k_create,
    .destroy = k_destroy,
    .kv_cache_bytes = k_kv_cache_bytes,
    .write_kv = k_write_kv,
    .plan = k_plan,
    .plan_destroy = k_plan_destroy,
    .run = k_run,
};

const ag_engine *attnguard_engine(void) { return &k_engine; }
