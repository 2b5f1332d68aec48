/*
 * engines/vllm/vllm_check.c — what the vllm adapter accepts (private to
 * it): validates the harness's group, options and batch before anything
 * reaches vLLM, and turns a group into the adapter's record (vg_group):
 * resolved scales and windows, private copies of slopes and sinks, the
 * implementation and the scheduler's head count.
 *
 * vLLM's ops check little of their input (a block id outside the cache is
 * read, not refused): every refusal the harness judges is made here first,
 * with the ABI's refusal kind.  What vLLM cannot express comes after every
 * refusal, as AG_UNSUPPORTED naming the limit, so a wrong input is refused
 * as wrong whatever else it asks for.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vllm_group.h"

static const char *lname(const ag_group *in, int32_t l, char *buf, size_t cap) {
    if (in->layers[l].name) return in->layers[l].name;
    snprintf(buf, cap, "layers.%d", (int)l);
    return buf;
}

/* group.options: impl=amx|vec|vec16 (absent: vLLM's own choice).  vLLM
 * calls it the ISA hint; the key is impl= because attnguard's own engine
 * owns isa= (a key names one engine's words across every case). */
static ag_status parse_group_options(const ag_group *in, vg_group *g, ag_msg *msg) {
    /* every word is impl=<name>: a bare or another word is refused, not
     * passed over (fuzz_plan's bad-input oracle found a bare 'impl'
     * accepted) */
    for (const char *p = in->options; p && *p;) {
        while (*p == ' ') p++;
        const size_t len = strcspn(p, " ");
        if (len && (len <= 5 || strncmp(p, "impl=", 5) != 0))
            return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                           "group option '%.*s': vllm's group options are impl=vec, impl=vec16 "
                           "and impl=amx", (int)(len < 40 ? len : 40), p);
        p += len;
    }
    char v[32];
    const int o = vg_option(in->options, "impl", v, sizeof v);
    g->isa_forced = 0;
    if (o == 2)
        return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS", "group option impl given twice");
    if (o == 0) return AG_OK;
    for (int i = 0; i < VG_ISA_COUNT; i++)
        if (!strcmp(v, vg_isa_name((vg_isa)i))) {
            g->isa = (vg_isa)i;
            g->isa_forced = 1;
        }
    if (!g->isa_forced)
        return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                       "group option impl=%s: vllm offers impl=vec, vec16%s", v,
                       g->lib->has_amx && g->lib->build == VG_BUILD_AVX512BF16 ? " and amx" : "");
    if (g->isa == VG_ISA_AMX && !(g->lib->has_amx && g->lib->build == VG_BUILD_AVX512BF16))
        return vg_fail(msg, AG_REFUSED, AG_R_OPTIONS, "VLLM_OPTIONS",
                       "group option impl=amx: not offered here (%s build, CPU %s AMX)",
                       vg_build_name(g->lib->build), g->lib->has_amx ? "with" : "without");
    return AG_OK;
}

static ag_status check_layer(const ag_group *in, int32_t l, ag_msg *msg) {
    const ag_layer *L = &in->layers[l];
    char nb[32];
    const char *n = lname(in, l, nb, sizeof nb);
    if (L->num_heads < 1 || L->num_heads % in->num_kv_heads != 0)
        return vg_fail(msg, AG_REFUSED, AG_R_HEADS, "VLLM_BAD_HEADS",
                       "%s: num_heads %d must be a positive multiple of num_kv_heads %d", n,
                       (int)L->num_heads, (int)in->num_kv_heads);
    if (L->window_left < -1 || L->window_right < -1)
        return vg_fail(msg, AG_REFUSED, AG_R_WINDOW, "VLLM_BAD_WINDOW",
                       "%s: window (%d, %d): each side >= -1", n, (int)L->window_left,
                       (int)L->window_right);
    if (!isfinite(L->softcap) || L->softcap < 0.0f || !isfinite(L->scale) || L->scale < 0.0f)
        return vg_fail(msg, AG_REFUSED, AG_R_LAYER, "VLLM_BAD_LAYER",
                       "%s: softcap %g and scale %g must be finite and >= 0", n,
                       (double)L->softcap, (double)L->scale);
    for (int32_t h = 0; L->sinks && h < L->num_heads; h++)
        if (!isfinite(L->sinks[h]))
            return vg_fail(msg, AG_REFUSED, AG_R_LAYER, "VLLM_BAD_SINK", "%s: sinks[%d] = %g", n,
                           (int)h, (double)L->sinks[h]);
    for (int32_t h = 0; L->alibi_slopes && h < L->num_heads; h++)
        if (!isfinite(L->alibi_slopes[h]))
            return vg_fail(msg, AG_REFUSED, AG_R_LAYER, "VLLM_BAD_ALIBI",
                           "%s: alibi_slopes[%d] = %g", n, (int)h, (double)L->alibi_slopes[h]);
    const int fp8 = ag_dtype_is_fp8(in->kv_dtype);
    if (fp8 && !(isfinite(L->k_scale) && L->k_scale > 0.0f && isfinite(L->v_scale) &&
                 L->v_scale > 0.0f))
        return vg_fail(msg, AG_REFUSED, AG_R_LAYER, "VLLM_BAD_KV_SCALE",
                       "%s: k_scale %g, v_scale %g: an fp8 cache needs both finite and > 0", n,
                       (double)L->k_scale, (double)L->v_scale);
    return AG_OK;
}

static ag_status check_refusals(const ag_group *in, ag_msg *msg) {
    if (in->num_layers > 0 && !in->layers)
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "group.layers is NULL");
    if (in->num_layers < 0)
        return vg_fail(msg, AG_REFUSED, AG_R_LAYER, "VLLM_BAD_GROUP", "num_layers %d",
                       (int)in->num_layers);
    if (in->num_kv_heads < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_HEADS, "VLLM_BAD_HEADS", "num_kv_heads %d",
                       (int)in->num_kv_heads);
    if (in->head_dim < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_HEAD_DIM, "VLLM_BAD_HEAD_DIM", "head_dim %d",
                       (int)in->head_dim);
    if (in->block_size < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BLOCK_SIZE, "VLLM_BAD_BLOCK_SIZE", "block_size %d",
                       (int)in->block_size);
    if (in->num_threads < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_THREADS, "VLLM_BAD_THREADS", "num_threads %d",
                       (int)in->num_threads);
    const ag_dtype d[3] = {in->q_dtype, in->kv_dtype, in->out_dtype};
    static const char *const what[3] = {"q_dtype", "kv_dtype", "out_dtype"};
    for (int i = 0; i < 3; i++)
        if ((unsigned)d[i] >= AG_DTYPE_COUNT)
            return vg_fail(msg, AG_REFUSED, AG_R_DTYPE, "VLLM_BAD_DTYPE", "%s %d: no such dtype",
                           what[i], (int)d[i]);
    for (int32_t l = 0; l < in->num_layers; l++) {
        ag_status st = check_layer(in, l, msg);
        if (st != AG_OK) return st;
    }
    if (in->num_layers == 0 &&
        (in->model_num_heads < 1 || in->model_num_heads % in->num_kv_heads != 0))
        return vg_fail(msg, AG_REFUSED, AG_R_HEADS, "VLLM_BAD_HEADS",
                       "model_num_heads %d of an empty group must be a positive multiple of "
                       "num_kv_heads %d", (int)in->model_num_heads, (int)in->num_kv_heads);
    return AG_OK;
}

/* vLLM's builder: the head count every layer shares, asserted (since PR
 * 51852), or the model-wide count (before it, and for a group with no
 * layers). */
static ag_status plan_heads(const ag_group *in, vg_group *g, ag_msg *msg) {
    if (in->num_layers == 0) {   /* checked by check_refusals */
        g->plan_heads = in->model_num_heads;
        return AG_OK;
    }
    /* heads=model hands the model-wide count to the scheduler, which
     * divides it by the KV heads: a count below them is a division by zero
     * in vLLM 0.32.0's scheduler (SIGFPE, found by fuzz_plan from an empty
     * corpus).  No model config carries such a count (its every layer's
     * heads are a multiple of the KV heads): unsupported, not judged. */
    if (g->lib->heads == VG_HEADS_MODEL && in->model_num_heads > 0 &&
        in->model_num_heads % in->num_kv_heads != 0)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_MODEL_HEADS",
                       "heads=model: model_num_heads %d is not a multiple of num_kv_heads %d "
                       "(vLLM's scheduler divides by it; no model's config has such a count)",
                       (int)in->model_num_heads, (int)in->num_kv_heads);
    if (g->lib->heads == VG_HEADS_MODEL && in->model_num_heads > 0) {
        /* as the builder before PR 51852 handed it on */
        g->plan_heads = in->model_num_heads;
        return AG_OK;
    }
    if (g->lib->heads == VG_HEADS_MODEL) {   /* no model count: the layers' */
        g->plan_heads = in->layers[0].num_heads;
        return AG_OK;
    }
    g->plan_heads = in->layers[0].num_heads;
    for (int32_t l = 1; l < in->num_layers; l++)
        if (in->layers[l].num_heads != g->plan_heads) {
            char a[32], b[32];
            return vg_fail(msg, AG_REFUSED, AG_R_MIXED_HEADS, "VLLM_MIXED_HEADS",
                           "all layers in one attention group must share num_heads; got {%d, "
                           "%d} for [%s, %s]", (int)g->plan_heads, (int)in->layers[l].num_heads,
                           lname(in, 0, a, sizeof a), lname(in, l, b, sizeof b));
        }
    return AG_OK;
}

/* The largest soft cap judged: vLLM's tanh loses the logit's low bits in
 * proportion to the cap (vllm-004), within the error model up to the caps
 * models use (Gemma 2: 50; Grok: 30). */
#define VG_SOFTCAP_JUDGED 64.0f

static int head_dim_built(int32_t d, vg_isa eff) {
    static const int32_t all[] = {32, 64, 96, 128, 160, 192, 224, 256, 512};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (d == all[i]) return 1;
    return eff == VG_ISA_VEC16 && (d == 48 || d == 80 || d == 112);
}

/* What vLLM's CPU attention cannot express (its dispatch and its Python
 * backend's limits), for a group that passed every refusal. */
static ag_status check_supported(const ag_group *in, vg_group *g, ag_msg *msg) {
    const int fp8 = ag_dtype_is_fp8(in->kv_dtype);
    if (in->q_dtype != in->out_dtype || ag_dtype_size(in->q_dtype) < 2)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_DTYPE",
                       "q %s, out %s: vLLM's CPU attention takes f32, bf16 or f16 q and writes "
                       "out in q's dtype", ag_dtype_name(in->q_dtype),
                       ag_dtype_name(in->out_dtype));
    if (!fp8 && in->kv_dtype != in->q_dtype)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_DTYPE",
                       "kv %s with q %s: vLLM's cache holds q's dtype or fp8 (e4m3, e5m2)",
                       ag_dtype_name(in->kv_dtype), ag_dtype_name(in->q_dtype));
    if (fp8 && g->lib->build == VG_BUILD_AVX2)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_FP8",
                       "an fp8 cache: vLLM's CPU attention needs AVX-512 or AMX for it (the "
                       "avx2 build has none)");
    if (fp8 && (in->head_dim % 32 != 0 || g->isa == VG_ISA_VEC16))
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_FP8",
                       "an fp8 cache with head_dim %d on %s: vLLM runs fp8 caches on amx and "
                       "vec, head_dim a multiple of 32", (int)in->head_dim, vg_isa_name(g->isa));
    const vg_isa eff = in->head_dim % 32 != 0 ? VG_ISA_VEC16 : g->isa;
    if (eff == VG_ISA_AMX && in->q_dtype != AG_BF16)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_AMX_DTYPE",
                       "q %s on amx: vLLM's AMX tiles take bf16 (its backend picks amx for "
                       "bf16 only; with f16 or f32 the op aborts the process: "
                       "reports/findings/vllm-003)", ag_dtype_name(in->q_dtype));
    if (!head_dim_built(in->head_dim, eff))
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_HEAD_DIM",
                       "head_dim %d: vLLM 0.32's CPU attention is built for 32, 64, 96, 128, "
                       "160, 192, 224, 256 and 512 (and 48, 80, 112 on vec16)",
                       (int)in->head_dim);
    const int32_t align = vg_model_block_align(g);
    if (in->block_size % align != 0)
        return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_BLOCK_SIZE",
                       "block_size %d: vLLM's %s kernels take multiples of %d",
                       (int)in->block_size, vg_isa_name(eff), (int)align);
    if (in->num_threads > 1024)
        return vg_fail(msg, AG_REFUSED, AG_R_LIMIT, "VLLM_THREADS",
                       "num_threads %d: vLLM's metadata holds at most 1024 threads",
                       (int)in->num_threads);
    for (int32_t l = 0; l < in->num_layers; l++) {
        const ag_layer *L = &in->layers[l];
        char nb[32];
        if (L->window_left != L->window_right)
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_WINDOW",
                           "%s: window (%d, %d): vLLM takes one sliding window, the same on "
                           "both sides", lname(in, l, nb, sizeof nb), (int)L->window_left,
                           (int)L->window_right);
        if (L->softcap > VG_SOFTCAP_JUDGED && !g->lib->judge_known)
            return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_SOFTCAP",
                           "%s: softcap %g: vLLM's soft cap errs by about cap * 2^-24 per logit "
                           "(reports/findings/vllm-004), so caps above %g are declined (known=judge runs them)",
                           lname(in, l, nb, sizeof nb), (double)L->softcap,
                           (double)VG_SOFTCAP_JUDGED);
    }
    return AG_OK;
}

static ag_status copy_layers(const ag_group *in, vg_group *g, ag_msg *msg) {
    g->layers = calloc((size_t)(g->nl > 0 ? g->nl : 1), sizeof *g->layers);
    if (!g->layers) return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "layer records");
    g->window = -2;
    for (int32_t l = 0; l < g->nl; l++) {
        const ag_layer *L = &in->layers[l];
        vg_layer *o = &g->layers[l];
        o->hq = L->num_heads;
        /* vLLM's window counts the current key: W = left + 1.  A window of
         * INT32_MAX keys back, which W cannot hold, sees every key of any
         * sequence an int32 length allows: no window */
        o->window = L->window_left >= 0 && L->window_left < INT32_MAX ? L->window_left + 1 : -1;
        o->scale = L->scale > 0.0f ? L->scale : 1.0f / sqrtf((float)g->d);
        o->softcap = L->softcap;
        o->k_scale = L->k_scale;
        o->v_scale = L->v_scale;
        const size_t bytes = (size_t)o->hq * sizeof(float);
        if (L->alibi_slopes && !(o->alibi = malloc(bytes)))
            return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "alibi slopes copy");
        if (L->sinks && !(o->sinks = malloc(bytes)))
            return vg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "sinks copy");
        if (o->alibi) memcpy(o->alibi, L->alibi_slopes, bytes);
        if (o->sinks) memcpy(o->sinks, L->sinks, bytes);
        /* vLLM's builder: the window all layers share, else none (each
         * layer's kernel still applies its own). */
        g->window = g->window == -2 || g->window == o->window ? o->window : -1;
    }
    if (g->window == -2) g->window = -1;
    return AG_OK;
}

ag_status vg_check_group(const ag_group *in, vg_group *g, ag_msg *msg) {
    if (!in) return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL", "group is NULL");
    ag_status st = check_refusals(in, msg);
    if (st == AG_OK) st = parse_group_options(in, g, msg);
    if (st == AG_OK) st = plan_heads(in, g, msg);
    if (st != AG_OK) return st;
    g->hkv = in->num_kv_heads;
    g->d = in->head_dim;
    g->bs = in->block_size;
    g->threads = in->num_threads;
    g->nl = in->num_layers;
    g->dt = in->q_dtype;
    g->kv_dt = in->kv_dtype;
    /* vLLM's own choice (its backend's _get_attn_isa): AMX for bf16 when
     * the CPU has it and blocks are multiples of 32, VEC16 for head dims
     * that are multiples of 16 only or blocks that are not multiples of 32,
     * else VEC. */
    if (!g->isa_forced) {
        const int amx = g->lib->has_amx && g->lib->build == VG_BUILD_AVX512BF16;
        if (in->head_dim % 32 != 0 && in->head_dim % 16 == 0) g->isa = VG_ISA_VEC16;
        else if (amx && in->q_dtype == AG_BF16 && in->block_size % 32 == 0) g->isa = VG_ISA_AMX;
        else if (in->block_size % 32 == 0) g->isa = VG_ISA_VEC;
        else g->isa = VG_ISA_VEC16;
    }
    st = check_supported(in, g, msg);
    if (st == AG_OK) st = copy_layers(in, g, msg);
    return st;
}

void vg_group_free(vg_group *g) {
    for (int32_t l = 0; g->layers && l < g->nl; l++) {
        free(g->layers[l].alibi);
        free(g->layers[l].sinks);
    }
    free(g->layers);
    g->layers = NULL;
}

static ag_status check_request(const vg_group *g, const ag_batch *b, int32_t r, ag_msg *msg) {
    const int64_t q_len = (int64_t)b->query_start_loc[r + 1] - b->query_start_loc[r];
    const int64_t seq = b->seq_lens[r];
    if (q_len < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BATCH",
                       "request %d: q_len %lld (query_start_loc %d..%d)", (int)r,
                       (long long)q_len, (int)b->query_start_loc[r],
                       (int)b->query_start_loc[r + 1]);
    if (seq < q_len)
        return vg_fail(msg, AG_REFUSED, AG_R_LENGTH, "VLLM_BAD_LENGTH",
                       "request %d: seq_len %lld below q_len %lld", (int)r, (long long)seq,
                       (long long)q_len);
    if (b->causal && b->causal[r] > 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BATCH",
                       "request %d: causal %d (0 or 1)", (int)r, (int)b->causal[r]);
    const int64_t nblk = (seq + g->bs - 1) / g->bs;
    if (nblk > b->block_table_stride)
        return vg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "VLLM_BAD_BLOCK",
                       "request %d: seq_len %lld needs %lld blocks, block_table_stride %d",
                       (int)r, (long long)seq, (long long)nblk, (int)b->block_table_stride);
    const int32_t *bt = b->block_table + (size_t)r * (size_t)b->block_table_stride;
    for (int64_t j = 0; j < nblk; j++)
        if (bt[j] < 0 || bt[j] >= b->num_blocks)
            return vg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "VLLM_BAD_BLOCK",
                           "block_table[%d][%lld] = %d outside 0..%d", (int)r, (long long)j,
                           (int)bt[j], (int)b->num_blocks - 1);
    return AG_OK;
}

ag_status vg_check_batch(const vg_group *g, const ag_batch *b, ag_msg *msg) {
    if (!b || !b->query_start_loc || !b->seq_lens || !b->block_table)
        return vg_fail(msg, AG_REFUSED, AG_R_NULL, "VLLM_NULL",
                       "batch, query_start_loc, seq_lens or block_table is NULL");
    if (b->num_reqs < 1 || b->num_blocks < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BATCH",
                       "num_reqs %d and num_blocks %d must be >= 1", (int)b->num_reqs,
                       (int)b->num_blocks);
    if (b->block_table_stride < 1)
        return vg_fail(msg, AG_REFUSED, AG_R_BLOCK_ID, "VLLM_BAD_BLOCK",
                       "block_table_stride %d", (int)b->block_table_stride);
    if (b->query_start_loc[0] != 0)
        return vg_fail(msg, AG_REFUSED, AG_R_BATCH, "VLLM_BAD_BATCH",
                       "query_start_loc[0] = %d, not 0", (int)b->query_start_loc[0]);
    for (int32_t r = 0; r < b->num_reqs; r++) {
        ag_status st = check_request(g, b, r, msg);
        if (st != AG_OK) return st;
    }
    /* vLLM places a non-causal request's queries at seq_len - q_len + i
     * (measured on 0.32.0 under a window, and under ALiBi with sinks, where
     * the shift is not absorbed by the softmax); the contract says i.  The
     * position matters only to a window or ALiBi, and the two agree when
     * q_len == seq_len: the only non-causal shape with either that vLLM's
     * own callers make (encoder-only layers). */
    for (int32_t r = 0; b->causal && r < b->num_reqs; r++) {
        const int32_t q_len = b->query_start_loc[r + 1] - b->query_start_loc[r];
        for (int32_t l = 0; !b->causal[r] && q_len < b->seq_lens[r] && l < g->nl; l++)
            if (g->layers[l].window >= 0 || g->layers[l].alibi)
                return vg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "VLLM_NONCAUSAL_POSITION",
                               "request %d is non-causal with q_len %d < seq_len %d under "
                               "layers.%d's %s: vLLM positions such queries at seq_len - "
                               "q_len + i, the contract at i", (int)r, (int)q_len,
                               (int)b->seq_lens[r], (int)l,
                               g->layers[l].window >= 0 ? "window" : "ALiBi");
    }
    return AG_OK;
}
