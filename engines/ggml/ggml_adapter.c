/*
 * engines/ggml/ggml_adapter.c — adapter 2: ggml's CPU flash attention
 * (ggml_flash_attn_ext) driven through attnguard's adapter ABI, the way
 * llama.cpp drives it (llama-graph.cpp build_attn_mha, llama-kv-cache.cpp
 * set_input_kq_mask).
 *
 * Mapping.  The cache is one array of num_blocks * block_size cells, each
 * [Hkv][D] (the adapter's private layout; write_kv stores rows by slot).
 * A batch becomes one ggml graph per layer and segment (ggml_streams.c:
 * the unified layout has one segment, the whole batch in one stream; the
 * streams layout one per run of requests with equal q_len, a stream per
 * request): q [rows][Hq][D] per stream, straight from the harness's q, and
 * a window of n_kv cells of K and V per stream, permuted to ggml's
 * [D][rows][heads][streams]; an f16 mask [streams][rows][n_kv] holds 0
 * where a query row may see a window cell (the cell holds key k of the
 * row's request: within its block table, k < seq_len, the causal or window
 * rule of docs/design.md §2) and -inf elsewhere, or k - p for ALiBi layers (ggml
 * multiplies the mask by the head's slope).  GQA is ggml's own broadcast,
 * soft cap and scale are op parameters, sinks an extra source.  The op's
 * output [D][Hq][rows][streams] is the harness's out rows of the segment.
 * ggml plans a work buffer per graph (ggml_graph_plan): it is the scratch,
 * the largest of the plan's graphs; run() hands ggml the harness's scratch
 * as cplan.work_data, for one graph after the other.
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
                 /* ggml_barrier spins (with a yield) until every worker arrives */
                 AG_CAP_SPIN_WAIT |
                 (lib->base.ggml_flash_attn_ext_add_sinks ? AG_CAP_SINKS : 0),
        .q_dtypes = AG_DTYPE_BIT(AG_F32),
        .kv_dtypes = AG_DTYPE_BIT(AG_F32) | AG_DTYPE_BIT(AG_F16) | AG_DTYPE_BIT(AG_BF16) |
                     /* llama.cpp's quantized caches (--cache-type-k/v) */
                     AG_DTYPE_BIT(AG_Q8_0) | AG_DTYPE_BIT(AG_Q4_0) | AG_DTYPE_BIT(AG_Q4_1) |
                     AG_DTYPE_BIT(AG_Q5_0) | AG_DTYPE_BIT(AG_Q5_1) | AG_DTYPE_BIT(AG_IQ4_NL),
        .out_dtypes = AG_DTYPE_BIT(AG_F32),
        .max_threads = GGML_MAX_N_THREADS,
        /* Logits are scale * <q, k> in float, the softmax's running maximum
         * taken after: an overflow is inf - inf = NaN (reports/findings/
         * ggml-005.md).  Declared so that fuzzing reports it once, there. */
        .max_abs_logit = FLT_MAX,
    };
}

/* The best-scoring CPU backend with the unified layout (what a group
 * without options gets) and with the streams layout, then every other CPU
 * backend this machine runs (unified), best score first. */
static int gg_variants(void *ctx, ag_variant *out, int cap) {
    const agg_lib *lib = ctx;
    const int n = lib->nvar + 1;
    for (int i = 0; out && i < n && i < cap; i++)
        out[i] = i == 0   ? (ag_variant){lib->words[AGG_LAYOUT_UNIFIED], AG_VARIANT_DEFAULT, NULL}
                 : i == 1 ? (ag_variant){lib->words[AGG_LAYOUT_STREAMS], AG_VARIANT_LAYOUT, NULL}
                          : (ag_variant){lib->var[i - 1].option, AG_VARIANT_KERNELS, NULL};
    return n;
}

static ag_status gg_create(void *ctx, const ag_group *group, void **grp, ag_msg *msg) {
    gg_group *g = calloc(1, sizeof *g);
    if (!g) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "group");
    g->lib = ctx;
    ag_status st = agg_group_options(ctx, group ? group->options : NULL, &g->v, &g->layout, msg);
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
    char lay[48] = "unified";
    if (g->layout == AGG_LAYOUT_STREAMS)
        snprintf(lay, sizeof lay, "streams (%ld of %ld plans unified)",
                 __atomic_load_n(&g->unified, __ATOMIC_RELAXED),
                 __atomic_load_n(&g->plans, __ATOMIC_RELAXED));
    snprintf(out->detail, sizeof out->detail, "ggml_flash_attn_ext %s, %d thr, %.40s", lay,
             g->threads, file ? file + 1 : g->v->path);
    /* q goes to K's dot type unscaled (q_to_vec_dot on the raw row): q_raw.
     * A block cache (always the row routine): every block K type's
     * vec_dot_type is q8_0 (q8_1 for q4_1 and q5_1: q8_0's rounding, plus
     * the block sum the model derives from the cache type), and V is
     * widened to f32 per row (to_float) and accumulated in f32. */
    const int blk = ag_dtype_block(g->kv) > 1;
    out->precision = (ag_precision){blk ? AG_Q8_0 : g->kv, AG_F32,
                                    g->kv == AG_F16 ? AG_F16 : AG_F32, 1};
    return AG_OK;
}

static const enum ggml_type kv_type[AG_DTYPE_COUNT] = {
    [AG_F32] = GGML_TYPE_F32,   [AG_F16] = GGML_TYPE_F16,   [AG_BF16] = GGML_TYPE_BF16,
    [AG_Q8_0] = GGML_TYPE_Q8_0, [AG_Q4_0] = GGML_TYPE_Q4_0, [AG_Q4_1] = GGML_TYPE_Q4_1,
    [AG_Q5_0] = GGML_TYPE_Q5_0, [AG_Q5_1] = GGML_TYPE_Q5_1, [AG_IQ4_NL] = GGML_TYPE_IQ4_NL};

/* The graph of layer l over segment S, as llama.cpp builds it
 * (build_attn_mha): streams in the fourth dimension. */
static void build_node(gg_plan *P, const gg_seg *S, int l, gg_node *n) {
    const gg_group *g = P->g;
    const agg_base *f = &g->lib->base;
    const gg_layer *L = g->nl ? &g->layers[l] : &(gg_layer){-1, -1, 1.0f, 0, 0, NULL, 0};
    n->q = f->ggml_new_tensor_4d(P->ctx, GGML_TYPE_F32, g->d, g->hq, S->rows, S->ns);
    n->k = f->ggml_new_tensor_4d(P->ctx, kv_type[g->kv], g->d, g->hkv, S->n_kv, S->ns);
    n->v = f->ggml_new_tensor_4d(P->ctx, kv_type[g->kv], g->d, g->hkv, S->n_kv, S->ns);
    n->qp = f->ggml_permute(P->ctx, n->q, 0, 2, 1, 3);
    n->kp = f->ggml_permute(P->ctx, n->k, 0, 2, 1, 3);
    n->vp = f->ggml_permute(P->ctx, n->v, 0, 2, 1, 3);
    /* The streams' windows are `stride` cells apart in the cache (they may
     * overlap, stride 0 included): set on the views the op reads, after
     * ggml_permute, whose view-size check assumes the contiguous layout. */
    if (S->ns > 1) n->kp->nb[3] = n->vp->nb[3] = (size_t)S->stride * ggc_row_bytes(g);
    n->mask = f->ggml_new_tensor_4d(P->ctx, GGML_TYPE_F16, S->n_kv, S->rows_pad, 1, S->ns);
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
    free(P->node);
    free(P->seg);
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

/* What one run makes ggml compute: per op, every query row of each stream
 * (S->rows x heads) against every cell of its window (S->n_kv), a dot and
 * a multiply-add of D each.  The unified layout's one stream holds the
 * whole batch, so it is rows x cells of all requests: more than the
 * batch's attention (ag_plan_info.run_macs). */
static double plan_macs(const gg_plan *P) {
    double m = 0;
    for (int s = 0; s < P->nseg; s++) {
        const gg_seg *S = &P->seg[s];
        m += 2.0 * S->rows * S->ns * P->g->hq * (double)S->n_kv * P->g->d;
    }
    return m;
}

static ag_status gg_plan_make(void *grp, const ag_batch *batch, const ag_plan_opts *opts,
                              void **plan, ag_plan_info *info, ag_msg *msg) {
    gg_group *g = grp;
    const agg_base *f = &g->lib->base;
    int32_t T, n_kv;
    ag_status st = ggc_batch(g, batch, &T, &n_kv, msg);
    if (st != AG_OK) return st;
    (void)opts; /* ggml splits the keys itself (one chunk per thread for a lone query row) */
    gg_plan *P = calloc(1, sizeof *P);
    if (!P) return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "plan");
    P->g = g, P->T = T, P->n_kv = n_kv, P->nnode = g->nl > 0 ? g->nl : 1;
    P->built = calloc((size_t)g->nmask, 1);
    if (!P->built || copy_batch(P, batch) != 0) {
        gg_plan_destroy(P);
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "mask flags or batch copy");
    }
    if ((st = ggs_segments(P, msg)) != AG_OK) {
        gg_plan_destroy(P);
        return st;
    }
    if (P->mask_cells > ((size_t)1 << 30) / (size_t)g->nmask) {
        agg_fail(msg, AG_UNSUPPORTED, AG_R_NONE, "GGML_TOO_LARGE", "%d mask(s) of %zu cells "
                 "exceed 2 GiB (%d rows, %d cells)", (int)g->nmask, P->mask_cells, (int)T,
                 (int)n_kv);
        gg_plan_destroy(P);
        return AG_UNSUPPORTED;
    }
    /* The masks wait for the first run that needs them: their size is
     * known (and bounded) here, and nothing in the plan depends on their
     * contents, so a plan that is never run (the harness's plan-only
     * checks of batches too large to compute) does not fill rows x cells
     * of f16 for nothing. */
    const size_t nodes = (size_t)P->nseg * (size_t)P->nnode;
    P->node = calloc(nodes, sizeof *P->node);
    if (!P->node) {
        gg_plan_destroy(P);
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "%zu graphs", nodes);
    }
    agg_catch caught;
    if (setjmp(caught.env)) {
        gg_plan_destroy(P);
        return agg_fail(msg, AG_INTERNAL, AG_R_NONE, "GGML_ASSERT", "%s", caught.text);
    }
    agg_catch_arm(g->lib, &caught);
    size_t mem = nodes * (10 * f->ggml_tensor_overhead() + f->ggml_graph_overhead_custom(16, false)) +
                 4096;
    P->ctx = f->ggml_init((struct ggml_init_params){mem, NULL, true});
    for (int k = 0; k < P->nseg; k++)
        for (int l = 0; l < P->nnode; l++) {
            gg_node *n = &P->node[(size_t)k * (size_t)P->nnode + (size_t)l];
            build_node(P, &P->seg[k], l, n);
            if (n->cp.work_size > P->work) P->work = n->cp.work_size;
        }
    agg_catch_disarm();
    if (g->layout == AGG_LAYOUT_STREAMS) {
        __atomic_add_fetch(&g->plans, 1, __ATOMIC_RELAXED);
        if (P->fell_back) __atomic_add_fetch(&g->unified, 1, __ATOMIC_RELAXED);
    }
#ifdef ATTN_INJECT_ggml_work_short
    /* INJECTED BUG (ggml_work_short): an adapter that drops the cache line
     * per thread ggml_graph_plan adds ("padding, never written"): ggml's
     * per-thread slices do use it, so the last thread runs off the end. */
    P->work = P->work > (size_t)64 * (size_t)g->threads ? P->work - (size_t)64 * (size_t)g->threads
                                                        : 0;
#endif
    *info = (ag_plan_info){.scratch_bytes = P->work, .scratch_align = 64,
                           .run_macs = plan_macs(P)};
    *plan = P;
    return AG_OK;
}

/* The work buffer layer l's graphs need: the largest of its segments'. */
static size_t layer_work(const gg_plan *P, int32_t l) {
    size_t w = 0;
    for (int k = 0; k < P->nseg; k++) {
        const size_t n = P->node[(size_t)k * (size_t)P->nnode + (size_t)l].cp.work_size;
        if (n > w) w = n;
    }
    return w;
}

static ag_status gg_extents(void *plan, int32_t layer, size_t *need, size_t count, ag_msg *msg) {
    const gg_plan *P = plan;
    if (layer < 0 || layer >= P->g->nl || !need || count < 1)
        return agg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "GGML_BAD_LAYER", "extents: layer %d of %d, count %zu",
                        (int)layer, (int)P->g->nl, count);
    need[0] = layer_work(P, layer);  /* ggml_graph_plan of this layer's own graphs */
    return AG_OK;
}

/* Layer `layer`'s graph over segment S, on the harness's buffers. */
static ag_status run_node(gg_plan *P, const gg_seg *S, gg_node *n, const ggml_fp16_t *mask,
                          const ag_run_args *a, ag_msg *msg) {
    const gg_group *g = P->g;
    const size_t qrow = (size_t)g->hq * (size_t)g->d * sizeof(float);
    const size_t cell = (size_t)S->c0 * ggc_row_bytes(g);
    n->mask->data = (void *)mask;
    n->q->data = n->qp->data = (char *)a->q + (size_t)S->t0 * qrow;
    n->k->data = n->kp->data = (char *)a->k_cache + cell;
    n->v->data = n->vp->data = (char *)a->v_cache + cell;
    n->out->data = (char *)a->out + (size_t)S->t0 * qrow;
    struct ggml_cplan cp = n->cp;
    cp.work_data = a->scratch;  /* the harness's scratch, never ggml's own allocation */
    cp.threadpool = agg_pool_get(g->v, cp.n_threads);
    enum ggml_status s = g->v->cpu.ggml_graph_compute(n->gf, &cp);
    agg_pool_put(g->v, cp.threadpool);
    if (s != GGML_STATUS_SUCCESS)
        return agg_fail(msg, AG_INTERNAL, AG_R_NONE, "GGML_STATUS", "ggml_graph_compute returned %d", (int)s);
    return AG_OK;
}

static ag_status gg_run(void *plan, int32_t layer, const ag_run_args *a, ag_msg *msg) {
    gg_plan *P = plan;
    if (layer < 0 || layer >= P->g->nl)
        return agg_fail(msg, AG_REFUSED, AG_R_MISMATCH, "GGML_BAD_LAYER", "run: layer %d outside 0..%d",
                        (int)layer, (int)P->g->nl - 1);
    if (!a || !a->q || !a->k_cache || !a->v_cache || !a->out || a->num_tokens != P->T)
        return agg_fail(msg, AG_REFUSED, AG_R_NULL, "GGML_BAD_ARGS",
                        "run: a buffer is NULL or num_tokens %d is not the plan's %d",
                        a ? (int)a->num_tokens : -1, (int)P->T);
    const size_t work = layer_work(P, layer);
    size_t need = work;
#ifdef ATTN_INJECT_ggml_work_short
    need = P->work;   /* the same belief in the check that would have caught it */
#endif
    if (work > 0 && (!a->scratch || a->scratch_bytes < need || (uintptr_t)a->scratch % 64 != 0))
        return agg_fail(msg, AG_REFUSED, AG_R_SCRATCH, "GGML_BAD_SCRATCH",
                        "run: scratch %zu bytes at %p; layer %d needs %zu, 64-byte aligned",
                        a->scratch_bytes, a->scratch, (int)layer, work);
    const int c = P->g->nl ? P->g->layers[layer].mask : 0;
    if (!P->masks && !(P->masks = malloc((size_t)P->g->nmask * P->mask_cells * sizeof(ggml_fp16_t))))
        return agg_fail(msg, AG_INTERNAL, AG_R_RESOURCE, "ENOMEM", "masks: %d x %zu cells",
                        (int)P->g->nmask, P->mask_cells);
    const ggml_fp16_t *m = P->masks + (size_t)c * P->mask_cells;
    if (!P->built[c]) {
        ggc_fill_mask(P, &P->b, c, P->masks + (size_t)c * P->mask_cells);
        P->built[c] = 1;
    }
    for (int k = 0; k < P->nseg; k++) {
        const gg_seg *S = &P->seg[k];
        ag_status st = run_node(P, S, &P->node[(size_t)k * (size_t)P->nnode + (size_t)layer],
                                m + S->mask_off, a, msg);
        if (st != AG_OK) return st;
    }
    return AG_OK;
}

static int gg_paths(void *plan, const char **names, int cap) {
    return ggp_paths(plan, names, cap);
}

static const ag_engine gg_engine = {
    .abi_version = AG_ENGINE_ABI_VERSION,
    .name = "ggml",
    .summary = "ggml's CPU flash attention (ggml_flash_attn_ext), node-llama-cpp's prebuilt backends",
    .open = gg_open, .close = gg_close, .caps = gg_caps, .variants = gg_variants,
    .create = gg_create, .destroy = gg_destroy, .group_info = gg_group_info,
    .kv_cache_bytes = ggc_kv_cache_bytes, .write_kv = ggc_write_kv,
    .plan = gg_plan_make, .plan_destroy = gg_plan_destroy, .extents = gg_extents, .run = gg_run,
    .paths = gg_paths,
};

/* The registry's getter (engines/engines.def); built as a shared object
 * the adapter exports AG_ENGINE_ENTRY as well. */
const ag_engine *ag_engine_ggml(void);
const ag_engine *ag_engine_ggml(void) { return &gg_engine; }

#ifdef AG_ENGINE_SHARED_OBJECT
const ag_engine *attnguard_engine(void) { return &gg_engine; }
#endif
