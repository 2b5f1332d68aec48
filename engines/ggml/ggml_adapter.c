/*
 * engines/ggml/ggml_adapter.c — adapter 2: ggml's CPU flash attention
 * (ggml_flash_attn_ext) driven through attnguard's adapter ABI, the way
 * llama.cpp drives it (llama-graph.cpp build_attn_mha, llama-kv-cache.cpp
 * set_input_kq_mask).
 *
 * Mapping.  The cache is one array of num_blocks * block_size cells, each
 * [Hkv][D] (the adapter's private layout; write_kv stores rows by slot).
 * A batch becomes one ggml graph per layer: q [T][Hq][D] and the first
 * n_kv cells of K and V, permuted to ggml's [D][rows][heads]; an f16 mask
 * [T rows][n_kv] holds 0 where query row t may see cell c (the cell holds
 * key k of t's request: within its block table, k < seq_len, the causal or
 * window rule of docs/design.md §2) and -inf elsewhere, or k - p for ALiBi layers
 * (ggml multiplies the mask by the head's slope).  GQA is ggml's own
 * broadcast, soft cap and scale are op parameters, sinks an extra source.
 * ggml plans a work buffer per graph (ggml_graph_plan): it is the scratch;
 * run() hands ggml the harness's scratch as cplan.work_data.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_group.h"

static ag_status gg_open(const char *options, void **ctx, ag_msg *msg) {
    return agg_load(options, (agg_lib **)ctx, msg);
}

static void gg_close(void *ctx) { agg_unload(ctx); }

static void gg_caps(void *ctx, ag_caps *out) {
    const agg_lib *lib = ctx;
    *out = (ag_caps){
        .abi_version = AG_ENGINE_ABI_VERSION,
        .flags = AG_CAP_GQA | AG_CAP_WINDOW | AG_CAP_WINDOW_LR | AG_CAP_SOFTCAP |
                 AG_CAP_ALIBI_STANDARD | AG_CAP_SCALE | AG_CAP_PAGED | AG_CAP_SHARED_BLOCKS |
                 AG_CAP_NONCAUSAL | AG_CAP_MIXED_CAUSAL | AG_CAP_BITWISE |
                 (lib->base.ggml_flash_attn_ext_add_sinks ? AG_CAP_SINKS : 0),
        .q_dtypes = AG_DTYPE_BIT(AG_F32),
        .kv_dtypes = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16) | AG_DTYPE_BIT(AG_BF16),
        .out_dtypes = AG_DTYPE_BIT(AG_F32),
        .max_threads = GGML_MAX_N_THREADS,
        /* Logits are scale * <q, k> in float, the softmax's running maximum
         * taken after: an overflow is inf - inf = NaN (reports/findings/
         * ggml-005.md).  Declared so that fuzzing reports it once, there. */
        .max_abs_logit = FLT_MAX,
    };
}

/* Every CPU backend this machine runs, best score first (the one a group
 * without options gets). */
static int gg_variants(void *ctx, ag_variant *out, int cap) {
    const agg_lib *lib = ctx;
    for (int i = 0; out && i < lib->nvar && i < cap; i++)
        out[i] = (ag_variant){lib->var[i].option, i == 0 ? AG_VARIANT_DEFAULT : AG_VARIANT_KERNELS};
    return lib->nvar;
}

static ag_status gg_create(void *ctx, const ag_group *group, void **grp, ag_msg *msg) {
    gg_group *g = calloc(1, sizeof *g);
    if (!g) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group");
    g->lib = ctx;
    ag_status st = agg_group_variant(ctx, group ? group->options : NULL, &g->v, msg);
    if (st == AG_OK) st = ggc_group(group, g, msg);
    if (st != AG_OK) {
        ggc_group_free(g);
        free(g);
        return st;
    }
    *grp = g;
    return AG_OK;
}

static void gg_destroy(void *grp) {
    if (grp) ggc_group_free(grp);
    free(grp);
}

static ag_status gg_group_info(void *grp, ag_group_info *out) {
    const gg_group *g = grp;
    /* one_chunk path (fewer than 64 query rows, every bf16 cache): q is
     * converted to K's vec_dot type, an f16 V is accumulated in f16
     * (ggml_vec_mad_f16), whatever the requested precision; the tiled path
     * (>= 64 rows, f32/f16 caches) is f32 throughout.  The worse is declared. */
    memset(out, 0, sizeof *out);
    snprintf(out->kernels, sizeof out->kernels, "%s", g->v->name);
    const char *file = strrchr(g->v->path, '/');
    snprintf(out->detail, sizeof out->detail, "ggml_flash_attn_ext, %d threads, %.48s",
             g->threads, file ? file + 1 : g->v->path);
    out->precision = (ag_precision){g->kv, AG_F32, g->kv == AG_F16 ? AG_F16 : AG_F32};
    return AG_OK;
}

static const enum ggml_type kv_type[] = {[AG_F32] = GGML_TYPE_F32, [AG_F16] = GGML_TYPE_F16,
                                         [AG_BF16] = GGML_TYPE_BF16};

/* One layer's graph, as llama.cpp builds it (build_attn_mha). */
static void build_node(gg_plan *P, int l, gg_node *n) {
    const gg_group *g = P->g;
    const agg_base *f = &g->lib->base;
    const gg_layer *L = g->nl ? &g->layers[l] : &(gg_layer){-1, -1, 1.0f, 0, 0, NULL, 0};
    n->q = f->ggml_new_tensor_4d(P->ctx, GGML_TYPE_F32, g->d, g->hq, P->T, 1);
    n->k = f->ggml_new_tensor_4d(P->ctx, kv_type[g->kv], g->d, g->hkv, P->n_kv, 1);
    n->v = f->ggml_new_tensor_4d(P->ctx, kv_type[g->kv], g->d, g->hkv, P->n_kv, 1);
    n->qp = f->ggml_permute(P->ctx, n->q, 0, 2, 1, 3);
    n->kp = f->ggml_permute(P->ctx, n->k, 0, 2, 1, 3);
    n->vp = f->ggml_permute(P->ctx, n->v, 0, 2, 1, 3);
    n->mask = f->ggml_new_tensor_4d(P->ctx, GGML_TYPE_F16, P->n_kv, P->T_pad, 1, 1);
    n->out = f->ggml_flash_attn_ext(P->ctx, n->qp, n->kp, n->vp, n->mask, L->scale, L->max_bias,
                                    L->softcap);
    if (L->sinks) {
        struct ggml_tensor *s = f->ggml_new_tensor_1d(P->ctx, GGML_TYPE_F32, g->hq);
        s->data = L->sinks;
        f->ggml_flash_attn_ext_add_sinks(n->out, s);
    }
    if (f->ggml_prec_set_acc) f->ggml_prec_set_acc(n->out, GGML_PREC_F32);
    n->gf = f->ggml_new_graph_custom(P->ctx, 16, false);
    f->ggml_build_forward_expand(n->gf, n->out);
    n->cp = g->v->cpu.ggml_graph_plan(n->gf, g->threads, NULL);
}

static void gg_plan_destroy(void *plan) {
    gg_plan *P = plan;
    if (!P) return;
    if (P->ctx) P->g->lib->base.ggml_free(P->ctx);
    free(P->masks);
    free(P->built);
    free(P->b_mem);
    free(P);
}

/* A private copy of the batch ggc_batch validated, for the masks that the
 * runs build later: they never read the caller's arrays again. */
static int copy_batch(gg_plan *P, const ag_batch *b) {
    const size_t nr = (size_t)b->num_reqs;
    size_t bt, words, bytes;
    if (__builtin_mul_overflow(nr, (size_t)b->block_table_stride, &bt) ||
        __builtin_add_overflow(bt, 2 * nr + 1, &words) ||
        __builtin_mul_overflow(words, sizeof(int32_t), &bytes) ||
        __builtin_add_overflow(bytes, nr, &bytes))
        return -1;
    int32_t *m = malloc(bytes);
    if (!m) return -1;
    P->b_mem = m;
    P->b = *b;
    memcpy(m, b->query_start_loc, (nr + 1) * sizeof(int32_t));
    P->b.query_start_loc = m;
    memcpy(m + nr + 1, b->seq_lens, nr * sizeof(int32_t));
    P->b.seq_lens = m + nr + 1;
    memcpy(m + 2 * nr + 1, b->block_table, bt * sizeof(int32_t));
    P->b.block_table = m + 2 * nr + 1;
    if (b->causal) {
        uint8_t *c = (uint8_t *)(m + 2 * nr + 1 + bt);
        memcpy(c, b->causal, nr);
        P->b.causal = c;
    }
    return 0;
}

static ag_status gg_plan_make(void *grp, const ag_batch *batch, const ag_plan_opts *opts,
                              void **plan, ag_plan_info *info, ag_msg *msg) {
    gg_group *g = grp;
    const agg_base *f = &g->lib->base;
    int32_t T, n_kv;
    ag_status st = ggc_batch(g, batch, &T, &n_kv, msg);
    if (st != AG_OK) return st;
    (void)opts; /* ggml splits the keys itself (one chunk per thread for a lone query row) */
    const int nnode = g->nl > 0 ? g->nl : 1;
    gg_plan *P = calloc(1, sizeof *P + (size_t)nnode * sizeof(gg_node));
    if (!P) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "plan");
    P->g = g, P->T = T, P->T_pad = T, P->n_kv = n_kv, P->nnode = nnode;
#ifdef GGML_KQ_MASK_PAD /* older ggml reads mask rows up to this padding */
    P->T_pad = GGML_PAD(T, GGML_KQ_MASK_PAD);
#endif
    const size_t cells = (size_t)P->T_pad * (size_t)n_kv;
    if (cells > ((size_t)1 << 30) / (size_t)g->nmask) {
        agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_TOO_LARGE", "%d mask(s) of %d rows x %d cells "
                 "exceed 2 GiB", (int)g->nmask, (int)P->T_pad, (int)n_kv);
        gg_plan_destroy(P);
        return AG_UNSUPPORTED;
    }
    /* The masks wait for the first run that needs them: their size is
     * known (and bounded) here, and nothing in the plan depends on their
     * contents, so a plan that is never run (the harness's plan-only
     * checks of batches too large to compute) does not fill rows x cells
     * of f16 for nothing. */
    P->built = calloc((size_t)g->nmask, 1);
    if (!P->built || copy_batch(P, batch) != 0) {
        gg_plan_destroy(P);
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "mask flags or batch copy");
    }
    agg_catch caught;
    if (setjmp(caught.env)) {
        gg_plan_destroy(P);
        return agg_fail(msg, AG_INTERNAL, AG_R_NONE, "GGML_ASSERT", "%s", caught.text);
    }
    agg_catch_arm(g->lib, &caught);
    size_t mem = (size_t)nnode * (10 * f->ggml_tensor_overhead() +
                                  f->ggml_graph_overhead_custom(16, false)) + 4096;
    P->ctx = f->ggml_init((struct ggml_init_params){mem, NULL, true});
    for (int l = 0; l < nnode; l++) {
        build_node(P, l, &P->node[l]);
        if (P->node[l].cp.work_size > P->work) P->work = P->node[l].cp.work_size;
    }
    agg_catch_disarm();
#ifdef ATTN_INJECT_ggml_work_short
    /* INJECTED BUG (ggml_work_short): an adapter that drops the cache line
     * per thread ggml_graph_plan adds ("padding, never written"): ggml's
     * per-thread slices do use it, so the last thread runs off the end. */
    P->work = P->work > (size_t)64 * (size_t)g->threads ? P->work - (size_t)64 * (size_t)g->threads
                                                        : 0;
#endif
    *info = (ag_plan_info){.scratch_bytes = P->work, .scratch_align = 64};
    *plan = P;
    return AG_OK;
}

static ag_status gg_extents(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *msg) {
    const gg_plan *P = plan;
    if (layer < 0 || layer >= P->g->nl || !need || count < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "GGML_BAD_LAYER", "extents: layer %d of %d, count %zu",
                        (int)layer, (int)P->g->nl, count);
    need[0] = P->node[layer].cp.work_size;  /* ggml_graph_plan of this layer's own graph */
    return AG_OK;
}

static ag_status gg_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    gg_plan *P = plan;
    if (layer < 0 || layer >= P->g->nl)
        return agg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "GGML_BAD_LAYER", "run: layer %d outside 0..%d",
                        (int)layer, (int)P->g->nl - 1);
    gg_node *n = &P->node[layer];
    if (!a || !a->q || !a->k_cache || !a->v_cache || !a->out || a->num_tokens != P->T)
        return agg_fail(msg, AG_REFUSED, AG_R_NULL, "GGML_BAD_ARGS",
                        "run: a buffer is NULL or num_tokens %d is not the plan's %d",
                        a ? (int)a->num_tokens : -1, (int)P->T);
    size_t need = n->cp.work_size;
#ifdef ATTN_INJECT_ggml_work_short
    need = P->work;   /* the same belief in the check that would have caught it */
#endif
    if (n->cp.work_size > 0 && (!a->scratch || a->scratch_bytes < need ||
                                (uintptr_t)a->scratch % 64 != 0))
        return agg_fail(msg, AG_REFUSED, AG_R_SCRATCH, "GGML_BAD_SCRATCH",
                        "run: scratch %zu bytes at %p; layer %d needs %zu, 64-byte aligned",
                        a->scratch_bytes, a->scratch, (int)layer, n->cp.work_size);
    const int c = P->g->nl ? P->g->layers[layer].mask : 0;
    const size_t cells = (size_t)P->T_pad * (size_t)P->n_kv;
    if (!P->masks && !(P->masks = malloc((size_t)P->g->nmask * cells * sizeof(ggml_fp16_t))))
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "masks: %d x %zu cells", (int)P->g->nmask, cells);
    if (!P->built[c]) {
        ggc_fill_mask(P, &P->b, c, P->masks + (size_t)c * cells);
        P->built[c] = 1;
    }
    n->mask->data = P->masks + (size_t)c * cells;
    n->q->data = n->qp->data = (void *)a->q;
    n->k->data = n->kp->data = (void *)a->k_cache;
    n->v->data = n->vp->data = (void *)a->v_cache;
    n->out->data = a->out;
    struct ggml_cplan cp = n->cp;
    cp.work_data = a->scratch;  /* the harness's scratch, never ggml's own allocation */
    cp.threadpool = agg_pool_get(P->g->v, cp.n_threads);
    enum ggml_status s = P->g->v->cpu.ggml_graph_compute(n->gf, &cp);
    agg_pool_put(P->g->v, cp.threadpool);
    if (s != GGML_STATUS_SUCCESS)
        return agg_fail(msg, AG_INTERNAL, AG_R_NONE, "GGML_STATUS", "ggml_graph_compute returned %d", (int)s);
    return AG_OK;
}

static const ag_engine gg_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "ggml",
    .summary = "ggml's CPU flash attention (ggml_flash_attn_ext), node-llama-cpp's prebuilt backends",
    .open = gg_open, .close = gg_close, .caps = gg_caps, .variants = gg_variants,
    .create = gg_create, .destroy = gg_destroy, .group_info = gg_group_info,
    .kv_cache_bytes = ggc_kv_cache_bytes, .write_kv = ggc_write_kv,
    .plan = gg_plan_make, .plan_destroy = gg_plan_destroy, .extents = gg_extents, .run = gg_run,
};

/* The registry's getter (engines/engines.def); built as a shared object
 * the adapter exports AG_ENGINE_ENTRY as well. */
const ag_engine *ag_engine_ggml(void);
const ag_engine *ag_engine_ggml(void) { return &gg_engine; }

#ifdef AG_ENGINE_SHARED_OBJECT
const ag_engine *attnguard_engine(void) { return &gg_engine; }
#endif
